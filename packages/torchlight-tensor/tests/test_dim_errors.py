"""Out-of-range dimensions raise ``TensorIndexError`` (an ``IndexError``, as in PyTorch) with
PyTorch's wording, from every op that takes a dim.

``DIM_OPS`` lists every public op with a dim-like parameter; ``test_every_dim_taking_op_is_listed``
derives that set from the signatures of ``Tensor`` and ``torchlight.tensor.functional`` and
fails when a new dim-taking op is not listed here.
"""

import inspect
import re

import pytest

import torchlight as tl
from torchlight.tensor import functional

X = (2, 3)  # every case runs on a 2-d tensor: valid dims are [-2, 1]


def _x():
    return tl.arange(6).reshape(X).float()


def _i():
    return tl.zeros(X, dtype=tl.int64)


# op name -> f(x, d): calls the op on the (2, 3) tensor x with dim d
DIM_OPS = {
    "Tensor.size": lambda x, d: x.size(d),
    "Tensor.stride": lambda x, d: x.stride(d),
    "Tensor.sum": lambda x, d: x.sum(d),
    "Tensor.mean": lambda x, d: x.mean(d),
    "Tensor.var": lambda x, d: x.var(d),
    "Tensor.std": lambda x, d: x.std(d),
    "Tensor.max": lambda x, d: x.max(d),
    "Tensor.min": lambda x, d: x.min(d),
    "Tensor.amax": lambda x, d: x.amax(d),
    "Tensor.amin": lambda x, d: x.amin(d),
    "Tensor.argmax": lambda x, d: x.argmax(d),
    "Tensor.argmin": lambda x, d: x.argmin(d),
    "Tensor.prod": lambda x, d: x.prod(d),
    "Tensor.logsumexp": lambda x, d: x.logsumexp(d),
    "Tensor.all": lambda x, d: x.all(d),
    "Tensor.any": lambda x, d: x.any(d),
    "Tensor.softmax": lambda x, d: x.softmax(d),
    "Tensor.log_softmax": lambda x, d: x.log_softmax(d),
    "Tensor.transpose": lambda x, d: x.transpose(0, d),
    "Tensor.permute": lambda x, d: x.permute(0, d),
    "Tensor.squeeze": lambda x, d: x.squeeze(d),
    "Tensor.unsqueeze": lambda x, d: x.unsqueeze(d + (1 if d > 0 else -1)),  # [-3, 2] is valid
    "Tensor.flatten": lambda x, d: x.flatten(0, d),
    "Tensor.unflatten": lambda x, d: x.unflatten(d, (1, 3)),
    "Tensor.unfold": lambda x, d: x.unfold(d, 1, 1),
    "Tensor.narrow": lambda x, d: x.narrow(d, 0, 1),
    "Tensor.split": lambda x, d: x.split(1, d),
    "Tensor.chunk": lambda x, d: x.chunk(2, d),
    "Tensor.index_select": lambda x, d: x.index_select(d, tl.tensor([0])),
    "Tensor.gather": lambda x, d: x.gather(d, _i()),
    "Tensor.scatter_add": lambda x, d: x.scatter_add(d, _i(), x),
    "Tensor.scatter": lambda x, d: x.scatter(d, _i(), 1.0),
    "Tensor.scatter_": lambda x, d: x.scatter_(d, _i(), x),
    "Tensor.topk": lambda x, d: x.topk(1, d),
    "Tensor.sort": lambda x, d: x.sort(d),
    "Tensor.argsort": lambda x, d: x.argsort(d),
    "Tensor.cumsum": lambda x, d: x.cumsum(d),
    "Tensor.roll": lambda x, d: x.roll(1, d),
    "Tensor.flip": lambda x, d: x.flip(d),
    "Tensor.repeat_interleave": lambda x, d: x.repeat_interleave(2, d),
    "Tensor.unbind": lambda x, d: x.unbind(d),
    "Tensor.select": lambda x, d: x.select(d, 0),
    "Tensor.norm": lambda x, d: x.norm(dim=d),
    "functional.sum": lambda x, d: tl.sum(x, d),
    "functional.mean": lambda x, d: tl.mean(x, d),
    "functional.var": lambda x, d: tl.var(x, d),
    "functional.std": lambda x, d: tl.std(x, d),
    "functional.max": lambda x, d: tl.max(x, d),
    "functional.min": lambda x, d: tl.min(x, d),
    "functional.amax": lambda x, d: tl.amax(x, d),
    "functional.amin": lambda x, d: tl.amin(x, d),
    "functional.argmax": lambda x, d: tl.argmax(x, d),
    "functional.argmin": lambda x, d: tl.argmin(x, d),
    "functional.prod": lambda x, d: tl.prod(x, d),
    "functional.logsumexp": lambda x, d: tl.logsumexp(x, d),
    "functional.softmax": lambda x, d: tl.softmax(x, d),
    "functional.log_softmax": lambda x, d: tl.log_softmax(x, d),
    "functional.cat": lambda x, d: tl.cat([x, x], d),
    "functional.stack": lambda x, d: tl.stack([x, x], d + (1 if d > 0 else -1)),  # [-3, 2] is valid
    "functional.split": lambda x, d: tl.split(x, 1, d),
    "functional.chunk": lambda x, d: tl.chunk(x, 2, d),
    "functional.gather": lambda x, d: tl.gather(x, d, _i()),
    "functional.scatter_add": lambda x, d: tl.scatter_add(x, d, _i(), x),
    "functional.scatter": lambda x, d: tl.scatter(x, d, _i(), x),
    "functional.index_select": lambda x, d: tl.index_select(x, d, tl.tensor([0])),
    "functional.flatten": lambda x, d: tl.flatten(x, d),
    "functional.transpose": lambda x, d: tl.transpose(x, d, 0),
    "functional.permute": lambda x, d: tl.permute(x, (d, 0)),
    "functional.squeeze": lambda x, d: tl.squeeze(x, d),
    "functional.unsqueeze": lambda x, d: tl.unsqueeze(x, d + (1 if d > 0 else -1)),
    "functional.narrow": lambda x, d: tl.narrow(x, d, 0, 1),
    "functional.topk": lambda x, d: tl.topk(x, 1, d),
    "functional.sort": lambda x, d: tl.sort(x, d),
    "functional.argsort": lambda x, d: tl.argsort(x, d),
    "functional.cumsum": lambda x, d: tl.cumsum(x, d),
    "functional.roll": lambda x, d: tl.roll(x, 1, d),
    "functional.flip": lambda x, d: tl.flip(x, (d,)),
    "functional.repeat_interleave": lambda x, d: tl.repeat_interleave(x, 2, d),
    "functional.unbind": lambda x, d: tl.unbind(x, d),
    "functional.select": lambda x, d: tl.select(x, d, 0),
    "functional.norm": lambda x, d: tl.norm(x, dim=d),
    "functional.var_mean": lambda x, d: tl.var_mean(x, d),
    "functional.std_mean": lambda x, d: tl.std_mean(x, d),
}

# dim-like parameter names in signatures
_DIM_PARAMS = {"dim", "dims", "dim0", "dim1", "d0", "d1", "start_dim", "end_dim", "dimension"}
# ops whose dim-like parameter is not a tensor dimension to normalise
_NOT_DIM_OPS = {
    "Tensor.where",  # no dim
}


@pytest.mark.parametrize("name", sorted(DIM_OPS))
@pytest.mark.parametrize("bad", [5, -3])
def test_out_of_range_dim_raises_index_error(name, bad):
    with pytest.raises(tl.TensorIndexError) as info:
        DIM_OPS[name](_x(), bad)
    assert isinstance(info.value, IndexError)
    assert "Dimension out of range" in str(info.value)


@pytest.mark.parametrize("name", sorted(DIM_OPS))
def test_in_range_dims_work(name):
    DIM_OPS[name](_x(), 1)
    DIM_OPS[name](_x(), -1)


def test_message_is_pytorchs():
    with pytest.raises(
        IndexError,
        match=re.escape("Dimension out of range (expected to be in range of [-2, 1], but got 5)"),
    ):
        tl.ones(2, 3).sum(dim=5)
    with pytest.raises(
        IndexError, match=re.escape("(expected to be in range of [-2, 1], but got 5)")
    ):
        tl.ones(3).unsqueeze(5)
    with pytest.raises(
        IndexError, match=re.escape("(expected to be in range of [-1, 0], but got 1)")
    ):
        tl.tensor(1.0).sum(1)  # a 0-d tensor accepts 0 and -1, as in PyTorch
    assert tl.tensor(1.0).sum(0).item() == 1.0


def _dim_taking_public_ops():
    found = set()
    for name, member in inspect.getmembers(tl.Tensor):
        if name.startswith("_") or not callable(member):
            continue
        try:
            params = inspect.signature(member).parameters
        except (TypeError, ValueError):
            continue
        if _DIM_PARAMS & set(params):
            found.add(f"Tensor.{name}")
    for name in functional.__all__:
        params = inspect.signature(getattr(functional, name)).parameters
        if _DIM_PARAMS & set(params):
            found.add(f"functional.{name}")
    return found - _NOT_DIM_OPS


def test_every_dim_taking_op_is_listed():
    missing = sorted(_dim_taking_public_ops() - set(DIM_OPS))
    assert not missing, (
        f"public ops that take a dim but have no out-of-range case in DIM_OPS: {missing}"
    )
