"""Error messages a user acts on: they name the shapes, indices, sizes, dtypes and devices involved.

Every torchlight error derives from ``TorchlightError`` and from the built-in a PyTorch user
would catch (``ValueError``, ``IndexError``, ``TypeError``, ``RuntimeError``).
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import torchlight as tl
from torchlight.tensor.backend.numpy import NumpyBackend


def test_error_hierarchy():
    assert issubclass(tl.ShapeError, tl.TorchlightError) and issubclass(tl.ShapeError, ValueError)
    assert issubclass(tl.TensorIndexError, IndexError)
    assert issubclass(tl.DTypeError, TypeError)
    assert issubclass(tl.BackendError, RuntimeError)
    assert issubclass(tl.DeviceUnavailableError, tl.BackendError)
    assert issubclass(tl.AutogradError, tl.TorchlightError)


# --- shapes ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "make, shapes",
    [
        (lambda: tl.ones(2, 3) + tl.ones(4), ["(2, 3)", "(4,)"]),
        (lambda: tl.ones(2, 3) * tl.ones(3, 2), ["(2, 3)", "(3, 2)"]),
        (lambda: tl.ones(5, 1, 3) - tl.ones(2, 4), ["(5, 1, 3)", "(2, 4)"]),
        (lambda: tl.maximum(tl.ones(2), tl.ones(3)), ["(2,)", "(3,)"]),
        (lambda: tl.where(tl.ones(2) > 0, tl.ones(3), 0.0), ["(2,)", "(3,)"]),
        (lambda: tl.ones(2, 3) < tl.ones(2, 2), ["(2, 3)", "(2, 2)"]),
        (lambda: tl.ones(2, 3) @ tl.ones(4, 5), ["(2, 3)", "(4, 5)"]),
        (lambda: tl.ones(3) @ tl.ones(4), ["(3,)", "(4,)"]),
        (lambda: tl.ones(2, 2, 3) @ tl.ones(3, 3, 2), ["(2, 2, 3)", "(3, 3, 2)"]),
        (lambda: tl.matmul(tl.ones(2, 5), tl.ones(3)), ["(2, 5)", "(3,)"]),
        (lambda: tl.ones(2, 3).reshape(4), ["(2, 3)", "(4,)"]),
        (lambda: tl.ones(2, 3).T.view(6), ["(3, 2)", "(6,)"]),
        (lambda: tl.ones(2, 3).expand(4, 3), ["(2, 3)", "(4, 3)"]),
        (lambda: tl.cat([tl.ones(2, 3), tl.ones(3, 2)]), ["(2, 3)", "(3, 2)"]),
        (lambda: tl.stack([tl.ones(2), tl.ones(3)]), ["(2,)", "(3,)"]),
    ],
)
def test_shape_errors_name_both_shapes(make, shapes):
    with pytest.raises(tl.ShapeError) as info:
        make()
    for s in shapes:
        assert s in str(info.value), f"{s} missing from: {info.value}"


def test_inplace_broadcast_mismatch_names_shapes():
    x = tl.ones(2, 3)
    with pytest.raises(tl.ShapeError, match=re.escape("(2, 3)")):
        x.add_(tl.ones(4, 2, 3))


def test_dim_out_of_range():
    # an IndexError, as in PyTorch, naming the valid range and the dim given
    with pytest.raises(
        tl.TensorIndexError, match=re.escape("expected to be in range of [-1, 0], but got 2")
    ):
        tl.ones(3).sum(2)
    with pytest.raises(IndexError):
        tl.ones(2, 3).softmax(3)


# --- indices ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "make, index, size",
    [
        (lambda x: x[5], 5, 4),
        (lambda x: x[-5], -5, 4),
        (lambda x: x[:, 3], 3, 3),
        (lambda x: x[1, -4], -4, 3),
        (lambda x: x[tl.tensor([0, 7])], 7, 4),
        (lambda x: x[tl.tensor([0, -6])], -6, 4),
        (lambda x: x[:, tl.tensor([3])], 3, 3),
        (lambda x: x[[0, 9]], 9, 4),
        (lambda x: x.index_select(1, tl.tensor([0, 3])), 3, 3),
        (lambda x: x.gather(1, tl.tensor([[0, 5]])), 5, 3),
        (lambda x: x.scatter_add(0, tl.tensor([[4, 0, 0]]), tl.ones(1, 3)), 4, 4),
        (lambda x: tl.embedding(tl.tensor([0, 6]), x), 6, 4),
    ],
)
def test_out_of_range_index_names_index_and_size(make, index, size):
    x = tl.ones(4, 3)
    with pytest.raises(tl.TensorIndexError) as info:
        make(x)
    msg = str(info.value)
    assert re.search(rf"(?<![\d-]){index}(?!\d)", msg), f"index {index} missing from: {msg}"
    assert f"size {size}" in msg, f"size {size} missing from: {msg}"


def test_too_many_indices_and_bad_masks():
    x = tl.ones(3)
    with pytest.raises(tl.TensorIndexError, match="too many indices"):
        x[0, 0]
    with pytest.raises(tl.TensorIndexError, match=re.escape("(2,)")):
        x[tl.tensor([True, False])]
    with pytest.raises(tl.TensorIndexError):
        x[..., ...]


@pytest.mark.parametrize("dtype", [tl.float32, tl.float64])
@pytest.mark.parametrize(
    "make",
    [
        lambda x, i: x[i],
        lambda x, i: x[:, i],
        lambda x, i: x.index_select(0, i),
        lambda x, i: x.gather(0, i.reshape(1, 2)),
        lambda x, i: x.scatter_add(0, i.reshape(1, 2), tl.ones(1, 2)),
        lambda x, i: tl.embedding(i, x),
    ],
)
def test_float_index_names_the_dtype(make, dtype):
    x = tl.ones(3, 2)
    i = tl.tensor([0.0, 1.0], dtype=dtype)
    with pytest.raises(tl.DTypeError, match=dtype.name):
        make(x, i)


def test_unsupported_index_types():
    x = tl.ones(3)
    with pytest.raises(tl.DTypeError):
        x[1.5]
    with pytest.raises(tl.DTypeError):
        x["a"]
    with pytest.raises(tl.DTypeError, match="float"):
        x[np.array([0.5])]
    with pytest.raises(tl.DTypeError, match="bool"):
        x.masked_fill(tl.tensor([1, 0, 1]), 0.0)
    with pytest.raises(tl.DTypeError):
        tl.where(tl.tensor([1.0, 0.0, 1.0]), x, x)


# --- truth value, conversions ------------------------------------------------------------------


def test_bool_of_multi_element_tensor_raises():
    with pytest.raises(tl.TorchlightError, match="ambiguous"):
        bool(tl.tensor([1.0, 2.0]))
    with pytest.raises(tl.TorchlightError, match="ambiguous"):
        if tl.ones(2, 2) > 0:
            pass
    with pytest.raises(ValueError):  # like numpy/PyTorch, catchable as a ValueError/RuntimeError
        bool(tl.ones(3))
    assert bool(tl.tensor([[2.0]])) is True and bool(tl.tensor(0)) is False
    with pytest.raises(tl.TorchlightError, match=re.escape("(3,)")):
        tl.ones(3).item()
    with pytest.raises(tl.DTypeError):
        [0, 1][tl.tensor(1.0)]  # __index__ of a float tensor
    assert [0, 1][tl.tensor(1)] == 1
    with pytest.raises(TypeError):
        len(tl.tensor(1.0))


def test_dtype_errors():
    with pytest.raises(tl.DTypeError, match="float32, float64, int64 and bool"):
        tl.tensor([1.0], dtype="complex64")
    with pytest.raises(tl.DTypeError):
        tl.tensor(["a", "b"])
    with pytest.raises(tl.DTypeError, match="int64"):
        tl.tensor([1, 2]).requires_grad_()
    with pytest.raises(tl.ShapeError, match="ragged"):
        tl.tensor([[1.0, 2.0], [3.0]])
    with pytest.raises(tl.DTypeError):
        tl.ones(2) + "a"


@pytest.mark.parametrize(
    "write",
    [
        lambda x, v: x.__setitem__(slice(1, None), v),
        lambda x, v: x.__setitem__(0, v),
        lambda x, v: x.fill_(v),
    ],
    ids=["x[1:] = v", "x[0] = v", "x.fill_(v)"],
)
def test_a_number_an_integer_tensor_cannot_hold_raises_and_writes_nothing(write):
    x = tl.tensor([5, 6, 7])
    for value in (2**63, -(2**63) - 1, float("inf"), float("nan")):
        with pytest.raises(tl.DTypeError, match="without overflow.*-9223372036854775808"):
            write(x, value)
        assert x.tolist() == [5, 6, 7]
    write(x, 2**63 - 1)  # the extremes fit
    assert 2**63 - 1 in x.tolist()
    write(x, -2.7)  # a float that fits is truncated toward zero, as in PyTorch
    assert -2 in x.tolist() and -3 not in x.tolist()
    y, b = tl.zeros(2), tl.zeros(2, dtype=tl.bool)
    write(y, float("inf"))  # a float tensor holds inf and NaN; a bool tensor any truth value
    write(b, 5)
    assert np.isinf(y.numpy()).any() and b.numpy().any()


# --- devices and backends -----------------------------------------------------------------------


def test_unknown_device_lists_what_is_installed():
    with pytest.raises(tl.BackendError) as info:
        tl.zeros(2, device="nonexistent")
    msg = str(info.value)
    assert "nonexistent" in msg and "numpy (available)" in msg
    with pytest.raises(tl.BackendError, match="numpy"):
        tl.tensor([1.0]).to("nonexistent")
    with pytest.raises(tl.BackendError, match="numpy"):
        tl.set_default_device("nonexistent")
    assert tl.zeros(1).device == "cpu"  # the failed call changed nothing


def test_torchlight_device_env_nonexistent(monkeypatch):
    monkeypatch.setenv("TORCHLIGHT_DEVICE", "nonexistent")
    tl.set_default_device(None)  # forget the cached default so the env is read again
    with pytest.raises(tl.BackendError) as info:
        tl.zeros(1)
    assert "nonexistent" in str(info.value) and "numpy" in str(info.value)
    assert tl.zeros(1, device="cpu").device == "cpu"  # an explicit device still works


def test_torchlight_device_env_nonexistent_in_a_fresh_process():
    env = dict(os.environ, TORCHLIGHT_DEVICE="nonexistent")
    code = "import torchlight as tl\ntl.zeros(1)"
    r = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert r.returncode != 0
    assert (
        "BackendError" in r.stderr and "nonexistent" in r.stderr and "numpy (available)" in r.stderr
    )
    # `import torchlight` itself must not fail because of the variable
    r = subprocess.run(
        [sys.executable, "-c", "import torchlight"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr


class _OtherCpu(NumpyBackend):
    """A second backend (a numpy backend under another name) to mix devices with. It does not
    declare ``host_memory``, so it stands for a device whose data the cpu cannot read directly."""

    name = "othercpu"
    device = "othercpu"
    capabilities = NumpyBackend.capabilities - {"host_memory"}


def test_mixing_backends_raises(fresh_registry):
    tl.register_backend("othercpu", _OtherCpu())
    a = tl.ones(2)
    b = tl.ones(2, device="othercpu")
    assert b.device == "othercpu"
    i = tl.tensor([0, 1], device="othercpu")
    m = tl.ones(2, 3)
    for op in (
        lambda: a + b,
        lambda: b * a,
        lambda: tl.where(a > 0, a, b),
        lambda: tl.cat([a, b]),
        lambda: a @ b,
        lambda: tl.maximum(a, b),
        lambda: a.masked_fill(b > 0, 0.0),
        lambda: m.index_select(0, i),
        lambda: m.gather(1, i.reshape(1, 2)),
        lambda: m.scatter_add(1, tl.tensor([[0, 1]]), tl.ones(1, 2, device="othercpu")),
        lambda: tl.embedding(i, m),
        lambda: tl.layer_norm(m, 3, tl.ones(3, device="othercpu")),
    ):
        with pytest.raises(tl.BackendError) as info:
            op()
        assert "cpu" in str(info.value) and "othercpu" in str(info.value)
    np.testing.assert_array_equal((a + b.to("cpu")).numpy(), [2.0, 2.0])


def test_inplace_op_with_an_operand_on_another_backend_raises(fresh_registry):
    tl.register_backend("othercpu", _OtherCpu())
    a = tl.ones(2)
    with pytest.raises(tl.BackendError, match="othercpu"):
        a.add_(tl.ones(2, device="othercpu"))


def test_python_m_torchlight_reports_backends():
    main = Path(tl.__file__).with_name("__main__.py")
    if not main.exists():
        pytest.skip("python -m torchlight does not exist yet")
    r = subprocess.run(
        [sys.executable, "-m", "torchlight"], capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0, r.stderr
    assert "torchlight-tensor" in r.stdout
    assert re.search(r"numpy\s+available", r.stdout)
