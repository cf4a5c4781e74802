"""Shared strategies and oracles for torchlight-tensor's tests (imported by the test modules).

The central helper is :func:`build`: it makes a numpy array and a torchlight tensor holding the
same values *through the same layout change* — a permutation, a stepped (and negatively indexed)
slice, a stride-0 broadcast, an offset into a larger buffer — done once with numpy and once with
torchlight. The numpy side is the oracle; the torchlight side is a genuinely non-contiguous view,
so every op is exercised on strides, offsets and broadcasts, not only on packed buffers.
"""

import math

import numpy as np
from hypothesis import strategies as st

import torchlight as tl

LAYOUTS = ("contiguous", "permuted", "sliced", "expanded", "offset", "permuted_sliced")
# layouts a leaf tensor can have for gradcheck: writing one element must change one value only,
# so stride-0 (expanded) views are built inside the checked function instead
LEAF_LAYOUTS = ("contiguous", "permuted", "sliced", "offset", "permuted_sliced")

FLOATS = (np.float32, np.float64)


def tol(dtype):
    """(rtol, atol) for comparing a result of ``dtype`` with a float64 oracle."""
    if np.dtype(dtype) == np.float32:
        return 2e-5, 2e-6
    return 1e-11, 1e-13


def assert_close(actual, expected, dtype=None, rtol=None, atol=None, scale=1.0):
    """``actual`` (tensor or array) equals ``expected`` (array) in value, shape and dtype."""
    a = actual.to_numpy() if isinstance(actual, tl.Tensor) else np.asarray(actual)
    e = np.asarray(expected)
    assert a.shape == e.shape, f"shape {a.shape} != expected {e.shape}"
    if dtype is not None:
        assert a.dtype == np.dtype(dtype), f"dtype {a.dtype} != expected {np.dtype(dtype)}"
    if a.dtype.kind in "biu" and e.dtype.kind in "biu":
        np.testing.assert_array_equal(a, e)
        return
    r, t = tol(a.dtype if a.dtype.kind == "f" else np.float64)
    rtol = r if rtol is None else rtol
    atol = t * scale if atol is None else atol
    np.testing.assert_allclose(a, e, rtol=rtol, atol=atol, equal_nan=True)


def prod(shape):
    return math.prod(shape)


# --- strategies ---------------------------------------------------------------------------------
def shapes(min_dims=0, max_dims=4, min_side=1, max_side=4):
    return st.lists(st.integers(min_side, max_side), min_size=min_dims, max_size=max_dims).map(
        tuple
    )


def broadcastable_pair(draw, min_dims=0, max_dims=4, max_side=4):
    """Two shapes that broadcast: drop leading dims and set some sides to 1 in either one."""
    full = draw(shapes(min_dims, max_dims, 1, max_side))
    out = []
    for _ in range(2):
        lead = draw(st.integers(0, len(full)))
        s = list(full[lead:])
        for k in range(len(s)):
            if draw(st.booleans()) and draw(st.booleans()):
                s[k] = 1
        out.append(tuple(s))
    return out[0], out[1]


class Maker:
    """Builds (numpy oracle, torchlight tensor) pairs with a chosen layout from a seeded rng."""

    def __init__(self, seed, dtype=np.float64, low=-3.0, high=3.0, kind="float"):
        self.rng = np.random.default_rng(seed)
        self.dtype = np.dtype(dtype)
        self.low, self.high, self.kind = low, high, kind

    def values(self, shape):
        shape = tuple(shape)
        if self.kind == "bool":
            return self.rng.random(shape) < 0.5
        if self.kind == "int":
            return self.rng.integers(int(self.low), int(self.high) + 1, size=shape).astype(np.int64)
        v = self.rng.uniform(self.low, self.high, size=shape)
        if self.kind == "positive":
            v = np.abs(v) + 0.25
        elif self.kind == "nonzero":
            v = np.where(np.abs(v) < 0.25, 0.25 + np.abs(v), v)
        elif self.kind == "ties":  # few distinct values, so max/min/argmax see ties
            v = np.round(v)
        return v.astype(self.dtype)

    def build(self, shape, layout, requires_grad=False):
        """(array, tensor) with equal values; the tensor is a view of the requested layout."""
        shape = tuple(shape)
        n = len(shape)
        rng = self.rng
        if layout == "permuted" and n >= 2:
            perm = [int(p) for p in rng.permutation(n)]
            if perm == sorted(perm):
                perm = perm[::-1]
            base_shape = [0] * n
            for i, p in enumerate(perm):
                base_shape[p] = shape[i]
            base = self.values(base_shape)
            a, t = base.transpose(perm), tl.tensor(base).permute(*perm)
        elif layout == "sliced" and n >= 1:
            idx, base_shape = [], []
            for s in shape:
                start, step = int(rng.integers(0, 3)), int(rng.integers(1, 4))
                length = start + step * (s - 1) + 1 + int(rng.integers(0, 3))
                if rng.random() < 0.5:  # the same selection written with a negative start
                    idx.append(
                        slice(
                            start - length,
                            start + step * s - length if start + step * s < length else None,
                            step,
                        )
                    )
                else:
                    idx.append(slice(start, start + step * s, step))
                base_shape.append(length)
            base = self.values(base_shape)
            a, t = base[tuple(idx)], tl.tensor(base)[tuple(idx)]
        elif layout == "permuted_sliced" and n >= 2:
            a0, t0 = self.build(shape[::-1], "sliced")
            a, t = a0.T, t0.T
        elif layout == "expanded" and n >= 1:
            small = [1 if rng.random() < 0.5 else s for s in shape]
            if rng.random() < 0.3:  # leading dims that expand creates
                small = small[int(rng.integers(1, n + 1)) :]
            base = self.values(small)
            a, t = np.broadcast_to(base, shape), tl.tensor(base).expand(*shape)
        elif layout == "offset":
            k = int(rng.integers(1, 4))
            flat = self.values((prod(shape) + k + int(rng.integers(0, 3)),))
            a = flat[k : k + prod(shape)].reshape(shape)
            t = tl.tensor(flat)[k : k + prod(shape)].view(*shape) if shape else tl.tensor(flat)[k]
        else:
            base = self.values(shape)
            a, t = base, tl.tensor(base)
        assert t.shape == a.shape, (layout, t.shape, a.shape)
        if requires_grad:
            t = t.detach().requires_grad_(True)
        return a, t


def layout_is_view(t):
    """The tensor does not own a packed buffer of exactly its elements."""
    return not t.is_contiguous() or t.storage_offset() != 0 or t._td.storage.size != t.numel()


def np_erf(x):
    return np.vectorize(math.erf, otypes=[np.float64])(x)


def np_softmax(x, axis):
    m = x.max(axis=axis, keepdims=True)
    e = np.exp(x - m)
    return e / e.sum(axis=axis, keepdims=True)


def np_log_softmax(x, axis):
    m = x.max(axis=axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))


def installed(name: str) -> bool:
    """Whether the distribution ``name`` is installed (its metadata, not whether it imports)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        version(name)
    except PackageNotFoundError:
        return False
    return True


def needs(name: str) -> str:
    """The skip reason for a test that needs the distribution ``name``."""
    return f"needs the distribution {name} (pip install {name})"


def require_distribution(name: str) -> None:
    """Skip the calling test module when the distribution ``name`` is not installed (``nox -s
    minimal`` installs only autograd and tensor). Only absence skips: an installed distribution that
    fails to import is an error, never a skip."""
    import pytest

    if not installed(name):
        pytest.skip(needs(name), allow_module_level=True)
