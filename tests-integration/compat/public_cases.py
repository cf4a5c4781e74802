"""The verbatim public programs of the compatibility suite: one folder each under ``public/``.

A folder holds the program's files exactly as published (a comment header above the original
first line names the repository, path, commit and license; nothing else is changed), the
license text (``LICENSE``) and ``case.py``, which says how the suite runs it:

``SCRIPT``     the file to run (the run's folder is a copy of the case folder, so sibling
               modules and files the program opens by relative path are found)
``ARGS``       its own command-line flags that make it small (default none)
``setup``      optional ``setup(folder)``: writes the data files the program reads
``losses``     optional ``losses(stdout) -> list[float]``: the training losses it printed
               (default: every ``loss <value>`` spelling, see compat_helpers.parse_losses)
``EXPECT``     ``"decrease"`` (the last loss is below the first) or ``"finite"``
``SLOW``       True when a cpu run takes more than ~20 s
``ORACLE``     True when it also runs under PyTorch 2.13 with the same flags: then, from the
               same initial weights and random draws (oracle_runner.py, oracle_draws.py), its
               losses must agree with PyTorch's (test_public_losses_agree_with_pytorch)
``ORACLE_STEPS`` how many of the recorded losses are compared (default all): for a program whose
               training amplifies rounding, the steps before PyTorch's own losses part from
               those of a run nudged by one float32 ulp (oracle_sensitivity.py measures it);
               past torchlight's recorded draws the PyTorch run then keeps its own
``setup_for_torch`` optional ``setup_for_torch(folder)``: rewrites the data files for the
               PyTorch run where PyTorch cannot read torchlight's (default: setup's serve both)
``TIMEOUT``    seconds before the run is abandoned (default 600)
``VARIANTS``   optional ``{suffix: extra flags}``: one case per entry, named ``<folder>_<suffix>``,
               run with ``ARGS`` plus its flags (one copy of a program, several ways to run it)
``ENV``        environment variables the runs need, e.g. ``{"PYTHONHASHSEED": "0"}`` for a
               program that numbers its vocabulary by iterating over a set of strings, whose
               order otherwise changes from one process to the next (default none)
``STEPS``      the flags in ``ARGS`` whose value is its number of training steps, e.g.
               ``["--max_iters", "--lr_decay_iters"]`` (every one is set to the same count):
               ``benchmarks/bench_compat.py`` runs it with N and 2N steps to time one step.
               Default none: the program has no such flag and is timed as a whole run
"""

import importlib.util
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from compat_helpers import parse_losses, run_oracle
from oracle_draws import PAST_RECORD_ENV

PUBLIC = Path(__file__).parent / "public"


@dataclass
class Case:
    name: str
    folder: Path
    script: str
    args: list = field(default_factory=list)
    setup: Callable | None = None
    losses: Callable = lambda stdout: parse_losses(stdout).get("loss", [])
    expect: str = "decrease"
    slow: bool = False
    oracle: bool = False
    oracle_steps: int | None = None
    setup_for_torch: Callable | None = None
    timeout: float = 600
    env: dict = field(default_factory=dict)
    steps: list = field(default_factory=list)

    def run_oracle(self, framework: str, run_dir: Path) -> dict:
        """This case's script under ``framework`` in ``run_dir`` (prepared), through
        oracle_runner.py: the record of compat_helpers.run_oracle."""
        env = dict(self.env)
        if self.oracle_steps is not None:  # the runs may part past the compared losses
            env[PAST_RECORD_ENV] = "own"
        return run_oracle(framework, run_dir / self.script, self.args, run_dir, self.timeout, env)

    def run_both(self, run_dir: Path) -> tuple:
        """Prepare ``run_dir``, run torchlight (which records the weights and draws), give
        PyTorch its data files, run PyTorch: ``(torchlight record, PyTorch record)``."""
        self.prepare(run_dir)
        ours = self.run_oracle("torchlight", run_dir)
        if self.setup_for_torch is not None:
            self.setup_for_torch(run_dir)
        return ours, self.run_oracle("torch", run_dir)

    def prepare(self, run_dir: Path) -> Path:
        """Copy the case into ``run_dir``, write its data, return the script's path there."""
        for item in self.folder.iterdir():
            if item.name in ("case.py", "__pycache__"):
                continue
            target = run_dir / item.name
            if item.is_dir():
                shutil.copytree(item, target)
            else:
                shutil.copy2(item, target)
        if self.setup is not None:
            self.setup(run_dir)
        return run_dir / self.script


def load_cases() -> dict[str, Case]:
    """Every ``public/<name>/case.py``, by folder name (``<name>_<variant>`` for each of its
    ``VARIANTS``)."""
    cases = {}
    for path in sorted(PUBLIC.glob("*/case.py")):
        spec = importlib.util.spec_from_file_location(f"public_case_{path.parent.name}", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        args = [str(a) for a in getattr(mod, "ARGS", [])]
        variants = getattr(mod, "VARIANTS", {"": []})
        for suffix, extra in variants.items():
            case = Case(
                name=f"{path.parent.name}_{suffix}" if suffix else path.parent.name,
                folder=path.parent,
                script=mod.SCRIPT,
                args=args + [str(a) for a in extra],
                setup=getattr(mod, "setup", None),
                expect=getattr(mod, "EXPECT", "decrease"),
                slow=getattr(mod, "SLOW", False),
                oracle=getattr(mod, "ORACLE", False),
                oracle_steps=getattr(mod, "ORACLE_STEPS", None),
                setup_for_torch=getattr(mod, "setup_for_torch", None),
                timeout=getattr(mod, "TIMEOUT", 600),
                env=dict(getattr(mod, "ENV", {})),
                steps=list(getattr(mod, "STEPS", [])),
            )
            if hasattr(mod, "losses"):
                case.losses = mod.losses
            cases[case.name] = case
    return cases
