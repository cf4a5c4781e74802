"""PyTorch's ``torch.backends.cuda.matmul`` and ``torch.backends.cudnn`` switches: PyTorch's
defaults (as PyTorch 2.x documents them), assignable, unknown names refused, reachable as
attributes under the compat aliases without importing them, and without effect on results."""

import subprocess
import sys

import numpy as np
import pytest

import torchlight as tl
from torchlight.backends import cudnn
from torchlight.backends.cuda import flags
from torchlight.backends.cuda.flags import MatmulFlags


def test_matmul_defaults_and_assignment():
    m = MatmulFlags()
    assert m.allow_tf32 is False
    assert m.allow_fp16_reduced_precision_reduction is True
    assert m.allow_bf16_reduced_precision_reduction is True
    m.allow_tf32 = True
    assert m.allow_tf32 is True and "allow_tf32=True" in repr(m)
    with pytest.raises(AttributeError):
        m.allow_tf64 = True  # a misspelt switch is an error, not a silent new attribute


def test_package_attribute_is_the_process_wide_instance():
    import torchlight.backends.cuda as cuda_pkg

    assert cuda_pkg.matmul is flags.matmul
    assert isinstance(flags.matmul, MatmulFlags)


def test_cudnn_reports_no_cudnn_with_pytorch_defaults():
    assert cudnn.is_available() is False
    assert cudnn.version() is None
    assert (cudnn.enabled, cudnn.benchmark, cudnn.deterministic, cudnn.allow_tf32) == (
        True,
        False,
        False,
        True,
    )


def test_allow_tf32_changes_no_result():
    rng = np.random.default_rng(0)
    a, b = (
        rng.standard_normal((5, 7), dtype=np.float32),
        rng.standard_normal((7, 3), dtype=np.float32),
    )
    before = (tl.tensor(a) @ tl.tensor(b)).numpy()
    saved = flags.matmul.allow_tf32
    try:
        flags.matmul.allow_tf32 = True
        after = (tl.tensor(a) @ tl.tensor(b)).numpy()
    finally:
        flags.matmul.allow_tf32 = saved
    np.testing.assert_array_equal(before, after)
    np.testing.assert_allclose(after, a @ b, rtol=1e-5, atol=1e-6)


def test_reachable_as_attributes_under_the_aliases(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text(
        "import torch\n"
        "torch.backends.cuda.matmul.allow_tf32 = True\n"
        "torch.backends.cudnn.allow_tf32 = True\n"
        "torch.backends.cudnn.benchmark = True\n"
        "print(torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.is_available())\n"
    )
    out = subprocess.run(
        [sys.executable, "-m", "torchlight.compat", str(script)],
        capture_output=True,
        text=True,
        env={"TORCHLIGHT_DEVICE": "cpu", "PATH": "/usr/bin:/bin", "OPENBLAS_NUM_THREADS": "1"},
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "False"]


@pytest.mark.parametrize("module", [cudnn, flags])
def test_docstring_examples_run(module):
    import doctest

    result = doctest.testmod(module, report=True)
    assert result.attempted > 0 and result.failed == 0
