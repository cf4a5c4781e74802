"""The same program under torchlight and under PyTorch, from the same weights: the losses agree.

Skipped unless PyTorch is importable (it is never a torchlight dependency). The programs here
take their data from fixed text or arithmetic, not from the random number generator, so once
:mod:`oracle_runner` has given both runs the same initial parameters, every recorded loss (the
0-d tensors ``.backward()`` was called on) must agree: the first to 1e-5 relative, the rest to
1e-3 relative (float32 rounding compounds over the steps).
"""

import importlib.util
import os
import subprocess
import sys

import numpy as np
import pytest
from compat_helpers import PROGRAMS, check_finite, parse_losses, run_oracle
from test_programs import PROGRAMS as SUITE

# each test starts PyTorch in a subprocess (15-30 s of import alone on a busy 2-core machine)
pytestmark = [
    pytest.mark.skipif(
        importlib.util.find_spec("torch") is None, reason="PyTorch is not installed"
    ),
    pytest.mark.slow,
    pytest.mark.oracle,
]


# program -> its small settings; each must record at least ``min_steps`` losses
ORACLE = {
    "pos_tagger.py": ["--epochs", 5],
    "ngram_embeddings.py": ["--epochs", 2, "--limit", 30, "--hidden", 32],
    "bow_classifier.py": ["--epochs", 5],
    "bilstm_crf.py": ["--epochs", 3],
    "custom_function.py": ["--steps", 40, "--points", 200, "--print-every", 10],
}


def _run(framework, program, args, tmp_path):
    return run_oracle(framework, PROGRAMS / program, args, tmp_path)


@pytest.mark.parametrize("program", sorted(ORACLE))
def test_losses_agree_with_pytorch(program, tmp_path):
    ours = _run("torchlight", program, ORACLE[program], tmp_path)
    theirs = _run("torch", program, ORACLE[program], tmp_path)
    assert ours["optimizers"] == theirs["optimizers"]
    a, b = np.array(ours["losses"]), np.array(theirs["losses"])
    assert len(a) == len(b) and len(a) >= 5, (len(a), len(b))
    np.testing.assert_allclose(a[0], b[0], rtol=1e-5, err_msg=f"{program}: first loss")
    np.testing.assert_allclose(a, b, rtol=1e-3, err_msg=f"{program}: losses over {len(a)} steps")


@pytest.mark.parametrize("name", sorted(SUITE))
def test_every_suite_program_is_a_pytorch_program(name, tmp_path):
    """The premise of the suite: each program runs as it is under PyTorch itself, with the
    settings test_programs.py gives it, and prints finite losses."""
    prog = SUITE[name]
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MPLBACKEND="Agg")
    env.pop("TORCHLIGHT_DEVICE", None)
    if prog.setup is not None:
        prog.setup(tmp_path)
    result = subprocess.run(
        [sys.executable, str(PROGRAMS / prog.script), *map(str, prog.args)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, (
        f"{prog.script} under PyTorch exited {result.returncode}:\n{result.stderr[-3000:]}"
    )
    check_finite(parse_losses(result.stdout))
