"""The ``>>>`` examples in the docstrings of the PyTorch-compatibility modules run and print what
they claim (doctest, with ``tl``, ``nn``, ``F`` and the module's own names in scope)."""

import doctest
import importlib

import pytest

import torchlight as tl
import torchlight.nn as nn
import torchlight.nn.functional as F

MODULES = [
    "torchlight.nn.attention",
    "torchlight.nn.transformer",
    "torchlight.nn.rnn",
    "torchlight.nn.rnn_cell",
    "torchlight.nn.activation",
    "torchlight.nn.functional",
    "torchlight.nn.normalization",
    "torchlight.nn.container",
    "torchlight.nn.distance",
    "torchlight.nn.parallel",
    "torchlight.nn.parallel.data_parallel",
    "torchlight.nn.modules",
    "torchlight.nn.conv_transpose",
    "torchlight.nn.upsampling",
    "torchlight.nn.padding",
    "torchlight.nn.linear",
    "torchlight.nn.margin_loss",
    "torchlight.nn.fold",
    "torchlight.nn.pooling",
    "torchlight.nn.padding",
    "torchlight.nn.embedding_bag",
    "torchlight.nn.sampling_grid",
    "torchlight.nn.utils.rnn",
    "torchlight.nn.utils.weight_norm",
    "torchlight.nn.utils.spectral_norm",
    "torchlight.optim.adadelta",
    "torchlight.optim.adamax",
    "torchlight.optim.nadam",
    "torchlight.optim.radam",
    "torchlight.optim.lbfgs",
    "torchlight.optim.cyclic_schedulers",
    "torchlight.optim.swa_utils",
    "torchlight.distributions",
    "torchlight.distributions.distribution",
    "torchlight.distributions.normal",
    "torchlight.distributions.uniform",
    "torchlight.distributions.categorical",
    "torchlight.distributions.bernoulli",
    "torchlight.distributions.kl",
    "torchlight.distributions.independent",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    mod = importlib.import_module(name)
    globs = {"tl": tl, "nn": nn, "F": F}
    globs.update({k: getattr(mod, k) for k in getattr(mod, "__all__", []) if hasattr(mod, k)})
    tl.manual_seed(0)
    result = doctest.testmod(
        mod, extraglobs=globs, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    )
    assert result.failed == 0
    assert result.attempted > 0
