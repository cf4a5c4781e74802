"""The ``>>>`` examples in the docstrings of the PyTorch-compatibility modules run and give
what they show (run with the standard doctest runner: pytest's own ``--doctest-modules``
import rebinds ``torchlight.tensor`` to the subpackage, which shadows ``tl.tensor``)."""

import doctest
import importlib

import pytest

import torchlight as tl

MODULES = [
    "torchlight.tensor.device",
    "torchlight.tensor.sampling",
    "torchlight.tensor.functions.sorting",
    "torchlight.tensor.functions.reorder",
    "torchlight.tensor.functions.linalg",
    "torchlight.tensor.functions.closeness",
    "torchlight.tensor.functional",
    "torchlight.tensor.dtypes",
    "torchlight.tensor.factories",
    "torchlight.tensor.tensor",
    "torchlight.cuda",
    "torchlight.cuda.amp",
    "torchlight.amp.grad_scaler",
    "torchlight.amp.autocast_mode",
    "torchlight.accelerator",
    "torchlight.autograd.grad_mode",
    "torchlight.compiler",
    "torchlight.tensor.functions.rounding",
    "torchlight.tensor.functions.index",
    "torchlight.tensor.functions.gathering",
    "torchlight.tensor.functions.activation",
    "torchlight.tensor.conveniences",
    "torchlight.tensor.size",
    "torchlight.tensor.random",
    "torchlight.tensor.functions.special",
    "torchlight.tensorboard",
    "torchlight.tensorboard.records",
    "torchlight.tensorboard.event_proto",
    "torchlight.tensorboard.writer",
    "torchlight.tensor.printing",
]
FLAGS = doctest.ELLIPSIS | doctest.IGNORE_EXCEPTION_DETAIL


def _globs():
    """What the docs build's doctest setup gives every example (docs/conf.py): ``tl``, ``np``,
    and ``nn`` / ``F`` when torchlight-nn is installed."""
    import numpy as np

    globs = {"tl": tl, "np": np}
    try:
        import torchlight.nn as nn
        import torchlight.nn.functional as F
    except ImportError:
        return globs
    return {**globs, "nn": nn, "F": F}


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    import numpy as np

    module = importlib.import_module(name)
    globs = _globs()
    if "nn" not in globs and any(
        "nn." in (t.docstring or "") or "F." in (t.docstring or "")
        for t in doctest.DocTestFinder().find(module)
    ):
        pytest.skip("some examples use torchlight.nn (the distribution torchlight-nn)")
    tl.manual_seed(0)
    with np.printoptions(precision=4, suppress=True):
        result = doctest.testmod(module, optionflags=FLAGS, report=True, extraglobs=globs)
    assert result.failed == 0


@pytest.mark.parametrize(
    "cls", [tl.FloatTensor, tl.DoubleTensor, tl.LongTensor, tl.IntTensor, tl.BoolTensor]
)
def test_typed_tensor_docstring_examples_run(cls):
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    for test in doctest.DocTestFinder().find(cls, cls.__name__, globs={}):
        runner.run(test)
    assert runner.failures == 0 and runner.tries > 0
