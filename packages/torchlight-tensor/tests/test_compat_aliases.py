"""torchlight.compat: the torch -> torchlight alias table, the meta-path finder and the runner.

Each test installs the aliases and removes them again (the ``aliases`` fixture), so no test sees
``torch`` in ``sys.modules`` afterwards. Tests that need torchlight-nn / -data skip without them.
"""

import importlib
import os
import subprocess
import sys
import textwrap

import pytest

import torchlight as tl
from torchlight import compat
from torchlight.compat import ALIASES, resolve


@pytest.fixture
def aliases():
    if "torch" in sys.modules and not sys.modules["torch"].__name__.startswith("torchlight"):
        pytest.skip("a real PyTorch is imported in this process")
    compat.install()
    yield
    compat.uninstall()


def test_resolve_longest_prefix_keeps_the_rest_of_the_name():
    assert resolve("torch") == "torchlight"
    assert resolve("torch.nn") == "torchlight.nn"
    assert resolve("torch.nn.modules.linear") == "torchlight.nn.modules.linear"
    assert resolve("torch.utils.data") == "torchlight.data"
    assert resolve("torch.utils.data.sampler") == "torchlight.data.sampler"
    assert resolve("torch.utils") is None  # a namespace: no torchlight module of its own
    assert resolve("torchvision") is None  # a prefix on a dot boundary only
    assert resolve("torchlight.nn") is None


def test_the_longest_matching_entry_wins(monkeypatch):
    monkeypatch.setitem(ALIASES, "torch.utils.data.special", "torchlight.elsewhere")
    assert resolve("torch.utils.data.special.part") == "torchlight.elsewhere.part"
    assert (
        resolve("torch.utils.data.specialist") == "torchlight.data.specialist"
    )  # dot boundaries only


def test_every_table_entry_is_a_torch_name_and_a_torchlight_name():
    for alias, target in ALIASES.items():
        assert alias == "torch" or alias.startswith("torch.")
        assert target == "torchlight" or target.startswith("torchlight.")


def test_import_torch_is_torchlight_itself(aliases):
    import torch

    assert torch is tl
    assert torch.tensor([1.0, 2.0]).sum().item() == 3.0


def test_submodules_are_the_same_objects(aliases):
    pytest.importorskip("torchlight.nn")
    pytest.importorskip("torchlight.data")
    import torch.nn as nn
    import torch.nn.functional as F
    import torch.optim as optim
    from torch.utils.data import DataLoader

    import torchlight.data
    import torchlight.nn
    import torchlight.optim

    assert nn is torchlight.nn and F is torchlight.nn.functional and optim is torchlight.optim
    assert DataLoader is torchlight.data.DataLoader
    assert sys.modules["torch.utils.data"] is torchlight.data
    # attribute access through the namespace module works as in PyTorch
    import torch

    assert torch.utils.data is torchlight.data


def test_target_keeps_its_own_spec_and_name(aliases):
    pytest.importorskip("torchlight.nn")
    import torch.nn.functional

    import torchlight.nn.functional as F

    assert torch.nn.functional is F
    assert F.__name__ == "torchlight.nn.functional"
    assert F.__spec__.name == "torchlight.nn.functional"


def test_missing_counterpart_is_an_import_error_naming_both_modules(aliases):
    with pytest.raises(ImportError) as info:
        importlib.import_module("torch.utils.cpp_extension")
    msg = str(info.value)
    assert "torch.utils.cpp_extension" in msg and "torchlight.utils.cpp_extension" in msg
    assert "no counterpart" in msg
    with pytest.raises(ImportError, match="torch.no_such_module"):
        importlib.import_module("torch.no_such_module")


def test_from_import_of_a_missing_name_is_the_usual_import_error(aliases):
    with pytest.raises(ImportError, match="no_such_name"):
        exec("from torch import no_such_name", {})


def test_uninstall_removes_hook_modules_and_parent_attributes(aliases):
    import torch.utils  # noqa: F401 - the namespace sets torchlight.utils while installed

    assert getattr(tl, "utils", None) is sys.modules["torch.utils"]
    compat.uninstall()
    assert not compat.is_installed()
    assert not any(n == "torch" or n.startswith("torch.") for n in sys.modules)
    assert not hasattr(tl, "utils")
    assert not any(isinstance(f, compat.TorchAliasFinder) for f in sys.meta_path)
    compat.install()  # the fixture uninstalls again


def test_install_is_idempotent_and_first_on_the_meta_path(aliases):
    assert compat.install() is compat.install()
    assert isinstance(sys.meta_path[0], compat.TorchAliasFinder)
    assert sum(isinstance(f, compat.TorchAliasFinder) for f in sys.meta_path) == 1


def test_install_refuses_when_real_torch_is_imported(monkeypatch):
    import types

    monkeypatch.setitem(sys.modules, "torch", types.ModuleType("torch"))
    with pytest.raises(ImportError, match="already imported"):
        compat.install()
    assert not compat.is_installed()


def _run(args, tmp_path, **env):
    environ = {k: v for k, v in os.environ.items() if k != "TORCHLIGHT_DEVICE"}
    environ.update(env)
    return subprocess.run(
        [sys.executable, "-m", "torchlight.compat", *args],
        cwd=tmp_path,
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_runner_runs_the_script_as_main_with_argv_and_its_folder_on_the_path(tmp_path):
    (tmp_path / "helper.py").write_text("VALUE = 41\n")
    script = tmp_path / "prog.py"
    script.write_text(
        textwrap.dedent("""
        import sys
        import torch
        from helper import VALUE
        x = torch.ones(3) * 2
        print(__name__, sys.argv[1:], torch.__name__, x.sum().item() + VALUE - 6, x.device)
        sys.exit(int(sys.argv[-1]))
    """)
    )
    sub = tmp_path / "elsewhere"
    sub.mkdir()
    r = _run([str(script), "--flag", "0"], sub)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["__main__", "['--flag',", "'0']", "torchlight", "41.0", "cpu"]
    r = _run([str(script), "3"], sub)  # the program's exit status is the process's
    assert r.returncode == 3


def test_runner_takes_the_device_from_torchlight_device(tmp_path):
    (tmp_path / "dev.py").write_text("import torch\nprint(torch.zeros(1).device)\n")
    r = _run(["dev.py"], tmp_path, TORCHLIGHT_DEVICE="nonexistent")
    assert r.returncode != 0 and "nonexistent" in r.stderr


def test_runner_runs_a_module_with_dash_m(tmp_path):
    (tmp_path / "modprog.py").write_text(
        "import sys, torch\nprint(__name__, sys.argv[1:], torch.__name__)\n"
    )
    r = _run(["-m", "modprog", "x"], tmp_path, PYTHONPATH=str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["__main__", "['x']", "torchlight"]


def test_runner_usage_errors(tmp_path):
    r = _run([], tmp_path)
    assert r.returncode == 2 and "usage" in r.stderr
    r = _run(["missing.py"], tmp_path)
    assert r.returncode == 2 and "missing.py" in r.stderr
    r = _run(["--help"], tmp_path)
    assert r.returncode == 0 and "TORCHLIGHT_DEVICE" in r.stdout


def test_runner_spawned_children_recreate_main_with_the_aliases(tmp_path):
    # multiprocessing's spawn (how DataLoader starts workers) re-creates __main__ in the child;
    # the function below lives in the script and imports torch there too
    (tmp_path / "pool.py").write_text(
        textwrap.dedent("""
        import multiprocessing
        import os
        import torch

        def norm(n):
            return torch.arange(n, dtype=torch.float32).pow(2).sum().item()

        # one small os.write is atomic on a pipe: the children's lines cannot interleave
        os.write(1, f"body {__name__}\\n".encode())
        if __name__ == "__main__":
            pool = multiprocessing.get_context("spawn").Pool(2)
            results = pool.map(norm, [2, 3, 4])
            # close + join, not the context manager's terminate: a child still importing (a slow
            # machine) would be killed before it printed its line
            pool.close()
            pool.join()
            print("results", results)
    """)
    )
    r = _run(["pool.py"], tmp_path)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "body __main__" and lines[-1] == "results [1.0, 5.0, 14.0]"
    assert lines.count("body __mp_main__") == 2  # each child ran the module body, not the guard
    assert "RuntimeWarning" not in r.stderr


def test_alias_into_a_distribution_that_is_not_installed_names_it(tmp_path):
    # a finder that hides torchlight.nn stands in for torchlight-nn not being installed
    code = textwrap.dedent("""
        import sys
        class Hide:
            def find_spec(self, name, path=None, target=None):
                if name == "torchlight.nn" or name.startswith("torchlight.nn."):
                    raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        sys.meta_path.insert(0, Hide())
        from torchlight import compat
        compat.install()
        try:
            import torch.nn.functional
        except ImportError as exc:
            print(exc)
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "torch.nn is aliased to torchlight.nn" in r.stdout
    assert "'torchlight-nn'" in r.stdout and "not installed" in r.stdout


@pytest.mark.parametrize("alias", sorted(ALIASES))
def test_every_alias_target_exists_when_its_distribution_is_installed(alias):
    from torchlight.compat.aliases import _distribution_of

    target = ALIASES[alias]
    found = _distribution_of(target)
    if found is not None:
        pytest.importorskip(found[0], reason=f"needs the distribution {found[1]}")
    module = importlib.import_module(target)
    assert module.__name__ == target
