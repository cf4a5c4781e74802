"""The launcher's command line, and importing without MPI."""

import subprocess
import sys
import textwrap

import pytest

from torchlight.distributed import run


def test_command_mpich_and_hostfile():
    cmd = run.build_command(
        4,
        ["train.py", "--steps", "3"],
        mpiexec="/x/mpiexec",
        hostfile="hosts",
        flavour="mpich",
        python="/py",
    )
    assert cmd == [
        "/x/mpiexec",
        "-n",
        "4",
        "-f",
        "hosts",
        "/py",
        "-m",
        "mpi4py",
        "train.py",
        "--steps",
        "3",
    ]


def test_command_openmpi(monkeypatch):
    monkeypatch.setattr(run.os, "geteuid", lambda: 0, raising=False)
    monkeypatch.setattr(run.os, "cpu_count", lambda: 2)
    cmd = run.build_command(
        4, ["-m", "pkg.train"], mpiexec="mpirun", flavour="openmpi", python="py"
    )
    assert cmd == [
        "mpirun",
        "--allow-run-as-root",
        "--oversubscribe",
        "-n",
        "4",
        "py",
        "-m",
        "mpi4py",
        "-m",
        "pkg.train",
    ]
    cmd = run.build_command(
        2, ["t.py"], mpiexec="mpirun", hostfile="h", flavour="openmpi", python="py"
    )
    assert cmd[:5] == ["mpirun", "--allow-run-as-root", "-n", "2", "--hostfile"]


def test_dry_run_prints_the_command(capsys, monkeypatch):
    monkeypatch.setattr(run, "find_mpiexec", lambda explicit=None: "/opt/mpi/bin/mpiexec")
    monkeypatch.setattr(run, "mpi_flavour", lambda m: "mpich")
    assert run.main(["-n", "3", "--dry-run", "script.py", "-n", "5", "--lr", "1e-3"]) == 0
    out = capsys.readouterr().out.split()
    assert out[:3] == ["/opt/mpi/bin/mpiexec", "-n", "3"]
    assert out[-5:] == ["script.py", "-n", "5", "--lr", "1e-3"]


def test_no_mpiexec_is_a_clear_error(capsys, monkeypatch):
    monkeypatch.setattr(run, "find_mpiexec", lambda explicit=None: None)
    assert run.main(["-n", "2", "script.py"]) == 127
    assert "pip install mpich" in capsys.readouterr().err


def test_import_without_mpi():
    """``import torchlight.distributed`` works without mpi4py; using MPI says what to install."""
    code = textwrap.dedent("""
        import sys
        sys.modules["mpi4py"] = None  # as if mpi4py were not installed
        import torchlight.distributed as dist
        from torchlight.distributed import DistributedSampler
        assert not dist.is_available() and not dist.is_initialized()
        assert len(DistributedSampler(range(10), num_replicas=2, rank=0)) == 5
        try:
            dist.init()
        except dist.DistributedError as exc:
            assert "pip install" in str(exc), exc
            print("clear error")
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "clear error" in out.stdout


@pytest.mark.parametrize("argv", [["-n", "0", "x.py"], ["-n", "2"]])
def test_bad_launcher_arguments(argv, monkeypatch):
    monkeypatch.setattr(run, "find_mpiexec", lambda explicit=None: "/bin/true")
    assert run.main(argv) == 2


@pytest.mark.parametrize("method", ["spawn", "forkserver"])
def test_init_refuses_in_a_multiprocessing_child(tmp_path, method):
    """A DataLoader worker (from the fork server, or spawned) must never start MPI: it inherits
    the rank's MPI environment. init() there raises a DistributedError saying to guard the
    script."""
    script = tmp_path / "child.py"
    script.write_text(
        textwrap.dedent("""
        import multiprocessing as mp
        import torchlight.distributed as dist

        def target(q):
            try:
                dist.init()
                q.put("started MPI")
            except dist.DistributedError as exc:
                q.put("refused" if "__main__" in str(exc) else str(exc))

        if __name__ == "__main__":
            ctx = mp.get_context("METHOD")
            q = ctx.Queue()
            p = ctx.Process(target=target, args=(q,))
            p.start()
            print(q.get(timeout=60))
            p.join()
    """).replace("METHOD", method)
    )
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=90)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "refused", out.stdout + out.stderr


@pytest.mark.parametrize("flavour", ["mpich", "openmpi"])
def test_timeout_option_sets_every_ranks_collective_timeout(monkeypatch, flavour):
    from torchlight.distributed import deadline

    seen = {}

    def call(cmd, env):
        seen.update(cmd=cmd, env=env)
        return 0

    monkeypatch.setattr(run, "find_mpiexec", lambda explicit=None: "/opt/mpi/bin/mpiexec")
    monkeypatch.setattr(run, "mpi_flavour", lambda m: flavour)
    monkeypatch.setattr(run.subprocess, "call", call)
    assert run.main(["-n", "2", "--timeout", "90", "train.py"]) == 0
    assert seen["env"][deadline.ENV_VAR] == "90"
    assert (["-x", deadline.ENV_VAR] == seen["cmd"][-6:-4]) == (flavour == "openmpi"), seen["cmd"]
    assert run.main(["-n", "2", "--timeout", "-1", "train.py"]) == 2
