"""The adversarial cases: bad inputs that must end in a clear torchlight error or a right answer.

Run as a child process by ``test_adversarial.py`` — ``python cases.py DEVICE GROUP`` — so that a
crash (a segfault in a kernel) kills the child, not the test run. The child runs every case of
the group and prints one JSON line ``{case: "pass" | "fail: why"}``. A case passes when torchlight
either returns what a numpy oracle says or raises a :class:`torchlight.TorchlightError` of the
expected class; any other exception (numpy's bare ``IndexError``, a ``ValueError`` from deep
inside) is a failure, as is silent garbage.

Groups: ``issue`` (each reproduction of the bounds/replay/numerics issue), ``index`` (hypothesis:
out-of-range, negative and aliased indices for every op that indexes by data, passed directly or
written behind the core's back), ``numerics`` (NaN/Inf through losses, softmax and reductions),
``edge`` (empty and 0-d tensors), ``mixed`` (mixed devices and dtypes).

"Behind the core's back" (:func:`write_behind`): after the core has recorded an index tensor's
bounds, a value is written into its storage without a version bump — through ``.numpy()`` where
that is a shared view (cpu, numba), into device memory otherwise. Only the kernels' own bounds
checks stand between that value and memory outside the buffers.
"""

import json
import math
import os
import re
import sys
import traceback

import numpy as np

DEVICE = sys.argv[1] if __name__ == "__main__" else "cpu"
if DEVICE == "cuda":  # the simulator must be chosen before numba is imported
    os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import torchlight as tl  # noqa: E402
import torchlight.nn as nn  # noqa: E402
import torchlight.nn.functional as F  # noqa: E402

# the simulator interprets every GPU thread in Python: fewer examples there
EXAMPLES = 6 if DEVICE == "cuda" else 25
SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)
OTHER = {"cpu": "numba", "numba": "cpu", "cuda": "cpu"}


# --- helpers ---------------------------------------------------------------------------------
def expect(cls, match, call):
    """Run ``call`` (and read its result back: an asynchronous device reports at the next read);
    it must raise ``cls`` — a torchlight error — with a message matching ``match``."""
    try:
        out = call()
        for t in out if isinstance(out, (tuple, list)) else (out,):
            if isinstance(t, tl.Tensor):
                t.detach().to_numpy()
    except cls as exc:
        assert isinstance(exc, tl.TorchlightError), (
            f"{type(exc).__name__} is not a torchlight error"
        )
        assert re.search(match, str(exc)), f"message {str(exc)!r} does not match {match!r}"
        return exc
    raise AssertionError(f"no {cls.__name__} raised (expected one matching {match!r})")


def close(got, want, tol=1e-5):
    got = got.detach().to_numpy() if isinstance(got, tl.Tensor) else np.asarray(got)
    np.testing.assert_allclose(
        got.astype(np.float64), np.asarray(want, np.float64), rtol=tol, atol=tol
    )


def write_behind(t, pos, value):
    """Write ``value`` at flat position ``pos`` of the contiguous ``t`` without torchlight seeing."""
    st_ = t._td.storage
    if isinstance(st_, np.ndarray):
        st_[t._td.offset + pos] = value
    else:  # device memory
        p = t._td.offset + pos
        st_[p : p + 1].copy_to_device(np.array([value], st_.dtype))


def stale_index(values, pos, bad):
    """An int64 tensor whose bounds the core has recorded (from ``values``), then ``bad`` written."""
    t = tl.tensor(values, device=DEVICE)
    write_behind(t, pos, bad)
    return t


def T(a, dtype=None, **kw):
    return tl.tensor(np.asarray(a), dtype=dtype, device=DEVICE, **kw)


# --- group "issue": every reproduction named in the issue --------------------------------------
def issue_index_select_numpy_view():
    i = T([0, 1, 2])
    if DEVICE == "cuda":  # .numpy() is a host copy there: write device memory instead
        write_behind(i, 0, 10**9)
    else:
        i.numpy()[0] = 10**9
    expect(
        tl.TensorIndexError, "1000000000", lambda: tl.randn(4, 3, device=DEVICE).index_select(0, i)
    )


def issue_index_select_stale_bounds():
    i = stale_index([0, 1, 2], 0, 10**9)
    expect(
        tl.TensorIndexError, "1000000000", lambda: tl.randn(4, 3, device=DEVICE).index_select(0, i)
    )


def issue_cross_entropy_target():
    t = stale_index([0, 1], 0, 10**9)
    x = tl.randn(2, 3, device=DEVICE, requires_grad=True)
    expect(tl.TensorIndexError, "1000000000", lambda: F.cross_entropy(x, t))


def issue_scatter_add_write():
    i = stale_index([[0, 1]], 0, 10**9)
    x = tl.zeros(3, 2, device=DEVICE)
    expect(
        tl.TensorIndexError, "1000000000", lambda: x.scatter_add(0, i, tl.ones(1, 2, device=DEVICE))
    )
    assert np.all(x.to_numpy() == 0), "scatter_add changed its input"


def issue_scatter_add_negative_write():
    i = stale_index([[0, 1]], 1, -(10**9))
    expect(
        tl.TensorIndexError,
        "-1000000000",
        lambda: tl.zeros(3, 2, device=DEVICE).scatter_add(0, i, tl.ones(1, 2, device=DEVICE)),
    )


def issue_embedding_backward_stale():
    emb = nn.Embedding(5, 3).to(DEVICE)
    i = T([[0, 1], [2, 3]])
    out = emb(i)
    write_behind(i, 1, 10**9)  # after the forward: only the backward's put_add sees it
    expect(tl.TensorIndexError, "1000000000", lambda: (out.sum().backward(), emb.weight.grad)[1])


def issue_replay_embedding():
    emb = nn.Embedding(5, 3).to(DEVICE)
    tape = tl.jit.trace(lambda i: emb(i), T([[0, 1], [2, 3]]))
    expect(tl.TensorIndexError, "1000000000", lambda: tape(T([[0, 10**9], [2, 3]])))
    close(tape(T([[4, 1], [2, 3]])), emb.weight.to_numpy()[[[4, 1], [2, 3]]])


def issue_replay_gather():
    x = tl.randn(4, 5, device=DEVICE)
    tape = tl.jit.trace(lambda i: x.gather(1, i), T([[0, 1]] * 4))
    expect(tl.TensorIndexError, "1000000000", lambda: tape(T([[0, 10**9]] * 4)))


def issue_replay_cross_entropy():
    tape = tl.jit.trace(
        lambda z, t: F.cross_entropy(z, t), tl.randn(3, 4, device=DEVICE), T([0, 1, 2])
    )
    expect(
        tl.TensorIndexError,
        "1000000",
        lambda: tape(tl.randn(3, 4, device=DEVICE), T([0, 10**6, 2])),
    )
    z = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    got = tape(T(z), T([0, -100, 2])).item()  # ignore_index still works on replay
    lse = np.log(np.exp(z.astype(np.float64)).sum(1))
    assert math.isclose(got, ((lse[0] - z[0, 0]) + (lse[2] - z[2, 2])) / 2, rel_tol=1e-5)


def issue_cross_entropy_float32_extremes():
    x = T([[1e30, -1e30, 0], [3e38, 3e38, 3e38]], requires_grad=True)
    loss = F.cross_entropy(x, T([0, 0]), reduction="none")
    close(loss, [0.0, math.log(3)], 1e-6)
    loss.sum().backward()
    close(x.grad, [[0, 0, 0], [-2 / 3, 1 / 3, 1 / 3]], 1e-6)


def issue_cross_entropy_empty_batch():
    for red, want in (("mean", math.nan), ("sum", 0.0)):
        x = tl.zeros(0, 3, device=DEVICE, requires_grad=True)
        loss = F.cross_entropy(x, tl.zeros(0, dtype=tl.int64, device=DEVICE), reduction=red)
        v = loss.item()
        assert math.isnan(v) if math.isnan(want) else v == want, f"{red}: {v}"
        loss.backward()
        assert x.grad.shape == (0, 3)
    none = F.cross_entropy(
        tl.zeros(0, 3, device=DEVICE), tl.zeros(0, dtype=tl.int64, device=DEVICE), reduction="none"
    )
    assert none.shape == (0,)


def issue_cat_zero_dim():
    expect(
        tl.ShapeError,
        "zero-dimensional",
        lambda: tl.cat([tl.tensor(1.0, device=DEVICE), tl.tensor(2.0, device=DEVICE)]),
    )


def issue_empty_too_big():
    expect(tl.OutOfMemoryError, "1099511627776", lambda: tl.empty(2**40, 2**40, device=DEVICE))
    expect(tl.OutOfMemoryError, "1073741824", lambda: tl.zeros(2**30, 2**30, 2**3, device=DEVICE))


# --- group "index": hypothesis over every op that indexes by data -----------------------------
def _idx_values(n, size):
    """Index arrays mixing valid, negative, just-out-of-range, huge and repeated (aliased) values."""
    value = st.one_of(
        st.integers(-size, size - 1),
        st.integers(-size - 3, size + 3),
        st.sampled_from([10**9, -(10**9), 2**62]),
    )
    return st.lists(value, min_size=n, max_size=n)


def _valid(vals, size, negatives=True):
    lo = -size if negatives else 0
    return all(lo <= v < size for v in vals)


def _behind_or_direct(vals, size, stale):
    """The index tensor: built from ``vals`` directly, or valid first and ``vals`` written behind."""
    if not stale:
        return T(vals, tl.int64)
    t = T([v % size for v in vals], tl.int64)  # the bounds of these valid values are on record
    for k, v in enumerate(vals):
        write_behind(t, k, v)
    return t


@SETTINGS
@given(st.integers(1, 5), st.integers(0, 6), st.data(), st.booleans())
def index_index_select(size, n, data, stale):
    vals = data.draw(_idx_values(n, size))
    x = np.arange(size * 3, dtype=np.float32).reshape(size, 3)
    i = _behind_or_direct(vals, size, stale)
    ok = _valid(vals, size, negatives=False)  # PyTorch's index_select takes no negative index
    if ok:
        xt = T(x, requires_grad=True)
        out = xt.index_select(0, i)
        close(out, x[np.asarray(vals, np.int64)] if vals else np.zeros((0, 3)))
        out.sum().backward()  # put_add: repeated (aliased) indices accumulate
        want = np.zeros_like(x)
        np.add.at(want, np.asarray(vals, np.int64) % size, 1.0)
        close(xt.grad, want)
    else:
        expect(tl.TensorIndexError, "out of range", lambda: T(x).index_select(0, i))


@SETTINGS
@given(st.integers(1, 5), st.data(), st.booleans())
def index_gather_scatter(size, data, stale):
    vals = data.draw(_idx_values(6, size))
    x = np.arange(2 * size, dtype=np.float32).reshape(2, size)
    i = _behind_or_direct(vals, size, stale).reshape(2, 3)
    iv = np.asarray(vals, np.int64).reshape(2, 3)
    if _valid(vals, size, negatives=False):  # as in PyTorch, no negative index
        close(T(x).gather(1, i), np.take_along_axis(x, iv % size, 1))
        src = np.ones((2, 3), np.float32)
        want = x.copy()
        np.add.at(want, (np.arange(2)[:, None], iv % size), src)
        close(T(x).scatter_add(1, i, T(src)), want)
        xt = T(x)
        close(xt.scatter_add(1, i, xt[:, :1].expand(2, 3)), _scatter_alias(x, iv % size))
    else:
        expect(tl.TensorIndexError, "out of range", lambda: T(x).gather(1, i))
        expect(
            tl.TensorIndexError,
            "out of range",
            lambda: T(x).scatter_add(1, i, tl.ones(2, 3, device=DEVICE)),
        )


def _scatter_alias(x, iv):
    """x.scatter_add(1, iv, src) where src is a broadcast view of x itself (aliased operands)."""
    src = np.broadcast_to(x[:, :1], (2, 3))
    want = x.copy()
    np.add.at(want, (np.arange(2)[:, None], iv), src)
    return want


@SETTINGS
@given(st.integers(1, 4), st.data(), st.booleans())
def index_getitem_setitem(size, data, stale):
    vals = data.draw(_idx_values(3, size))
    x = np.arange(size * 2, dtype=np.float32).reshape(size, 2)
    i = _behind_or_direct(vals, size, stale)
    # x[idx] reads its index back to the host and checks it there: a value written behind the
    # core's back is seen, and negatives count from the end, as in PyTorch
    if _valid(vals, size, negatives=True):
        iv = np.asarray(vals, np.int64)
        close(T(x)[i], x[iv])
        y = T(x)
        y[i] = 7.0
        want = x.copy()
        want[iv] = 7.0
        close(y, want)
    else:
        expect(tl.TensorIndexError, "out of range", lambda: T(x)[i])
        y = T(x)
        expect(tl.TensorIndexError, "out of range", lambda: y.__setitem__(i, 7.0))
        close(y, x)  # nothing written


@SETTINGS
@given(st.integers(1, 5), st.data(), st.booleans(), st.booleans())
def index_embedding_and_losses(classes, data, stale, replay):
    vals = data.draw(_idx_values(4, classes))
    ok = _valid(vals, classes, negatives=False)
    logits = np.linspace(-2, 2, 4 * classes, dtype=np.float32).reshape(4, classes)
    t = _behind_or_direct(vals, classes, stale)
    w = np.linspace(-1, 1, classes * 2, dtype=np.float32).reshape(classes, 2)
    emb = nn.Embedding(classes, 2).to(DEVICE)
    emb.weight.data = T(w)
    if replay:
        ce = tl.jit.trace(lambda z, y: F.cross_entropy(z, y), T(logits), T([0] * 4))
        em = tl.jit.trace(lambda y: emb(y), T([0] * 4))
    else:

        def ce(z, y):
            return F.cross_entropy(z, y)

        def em(y):
            return emb(y)

    if ok:
        tv = np.asarray(vals)
        lse = np.log(np.exp(logits.astype(np.float64)).sum(1))
        close(ce(T(logits), t), np.mean(lse - logits[np.arange(4), tv]))
        close(em(t), w[tv])
        close(F.one_hot(t, classes), np.eye(classes, dtype=np.int64)[tv])
        close(F.nll_loss(T(logits), t), -np.mean(logits[np.arange(4), tv]))
    else:
        expect(tl.TensorIndexError, "out of (range|bounds)", lambda: ce(T(logits), t))
        expect(
            tl.TensorIndexError, "out of (range|bounds)|class values", lambda: F.one_hot(t, classes)
        )
        expect(tl.TensorIndexError, "out of (range|bounds)", lambda: F.nll_loss(T(logits), t))
        expect(tl.TensorIndexError, "out of range", lambda: em(t))  # negatives too, as PyTorch


# --- group "numerics": NaN and Inf ------------------------------------------------------------
_special = st.sampled_from(
    [0.0, 1.0, -3.5, 1e30, -1e30, 3e38, -3e38, math.inf, -math.inf, math.nan]
)


@SETTINGS
@given(st.lists(_special, min_size=6, max_size=6), st.integers(0, 2), st.integers(0, 2))
def numerics_cross_entropy(vals, t0, t1):
    """Cross-entropy of rows with NaN/Inf: torchlight and a float64 oracle agree (NaN for NaN)."""
    x = np.asarray(vals, np.float32).reshape(2, 3)
    t = np.array([t0, t1])
    x64 = x.astype(np.float64)
    with np.errstate(all="ignore"):  # PyTorch's formula: shift by the max, or by 0 if it is ±inf
        m = x64.max(1, keepdims=True)
        shift = np.where(np.isinf(m), 0.0, m)
        logs = np.log(np.exp(x64 - shift).sum(1))
        want = (shift[:, 0] - x64[np.arange(2), t]) + logs
    got = F.cross_entropy(T(x), T(t), reduction="none").to_numpy().astype(np.float64)
    for g, wv, row in zip(got, want, x64):
        if np.isnan(wv):
            assert np.isnan(g), f"{row}: {g}, expected NaN"
        elif np.isinf(wv):
            assert g == wv, f"{row}: {g} != {wv}"
        else:
            assert math.isclose(g, wv, rel_tol=1e-5, abs_tol=1e-5), f"{row}: {g} != {wv}"


@SETTINGS
@given(st.lists(_special, min_size=6, max_size=6))
def numerics_softmax_and_reductions(vals):
    x = np.asarray(vals, np.float32).reshape(2, 3)
    xt = T(x)
    with np.errstate(all="ignore"):
        want_sum = x.astype(np.float64).sum(1)
        want_max = x.max(1)
        scale = np.abs(x.astype(np.float64)).sum(1)
    got_sum = xt.sum(1).to_numpy()
    for g, w, sc in zip(got_sum, want_sum, scale):
        if np.isnan(w) or np.isinf(w):  # NaN in, or inf of one sign: float32 agrees exactly
            assert (np.isnan(g) and np.isnan(w)) or g == w, f"sum {g} != {w}"
        elif not np.isinf(g):  # finite terms may overflow float32 (3e38 + 3e38): inf is right then
            assert abs(g - w) <= 1e-6 * sc, f"sum {g} != {w}"
    got_max = xt.amax(1).to_numpy()
    for g, w in zip(got_max, want_max):
        assert (np.isnan(g) and np.isnan(w)) or g == w, f"max {g} != {w}"
    p = xt.softmax(1).to_numpy()
    finite_rows = np.isfinite(x).all(1)
    assert np.allclose(p[finite_rows].sum(1), 1.0, atol=1e-5)


# --- group "edge": empty and 0-d tensors -------------------------------------------------------
_shapes = st.lists(st.integers(0, 3), min_size=0, max_size=3).map(tuple)


def _agree(ours, theirs):
    """``ours`` (a callable on torchlight) matches ``theirs`` (on numpy): same values, or numpy
    fails and torchlight raises a torchlight error (never a foreign exception)."""
    try:
        with np.errstate(all="ignore"):
            want = theirs()
    except Exception:
        try:
            got = ours()
            if isinstance(got, tl.Tensor):
                got.to_numpy()
        except tl.TorchlightError:
            return
        raise AssertionError(
            "numpy refuses this input, torchlight did not raise a torchlight error"
        ) from None
    got = ours()
    g = got.to_numpy() if isinstance(got, tl.Tensor) else np.asarray(got)
    np.testing.assert_allclose(
        g.astype(np.float64), np.asarray(want, np.float64), rtol=1e-5, atol=1e-6
    )


@SETTINGS
@given(_shapes)
def edge_reductions(shape):
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    xt = T(x)
    _agree(lambda: xt.sum(), lambda: x.sum())
    _agree(lambda: xt.mean(), lambda: x.mean() if x.size else np.float32("nan"))
    _agree(lambda: xt.amax(), lambda: x.max())
    _agree(lambda: xt.argmax(), lambda: x.argmax())
    if x.ndim:
        _agree(lambda: xt.sum(0), lambda: x.sum(0))
        _agree(lambda: xt.amax(-1), lambda: x.max(-1))
        _agree(
            lambda: xt.softmax(-1),
            lambda: (
                np.exp(x - x.max(-1, keepdims=True))
                / np.exp(x - x.max(-1, keepdims=True)).sum(-1, keepdims=True)
                if x.size
                else x
            ),
        )


@SETTINGS
@given(_shapes, st.integers(0, 3))
def edge_indexing_and_shapes(shape, k):
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    xt = T(x)
    if x.ndim:
        idx = np.zeros(0, np.int64)
        _agree(lambda: xt.index_select(0, T(idx, tl.int64)), lambda: x[idx])
        _agree(lambda: tl.cat([xt, xt], 0), lambda: np.concatenate([x, x], 0))
        _agree(lambda: xt.reshape(-1), lambda: x.reshape(-1))
    else:
        expect(tl.ShapeError, "zero-dimensional", lambda: tl.cat([xt, xt]))
        _agree(lambda: xt.item(), lambda: x.item())
    _agree(
        lambda: xt @ xt if x.ndim == 2 and shape[0] == shape[1] else xt + 1,
        lambda: x @ x if x.ndim == 2 and shape[0] == shape[1] else x + 1,
    )
    _agree(
        lambda: tl.zeros(*shape, k, device=DEVICE).sum(-1), lambda: np.zeros(shape + (k,)).sum(-1)
    )


# --- group "mixed": devices and dtypes ---------------------------------------------------------
# Two backends that keep storage in host memory (cpu, numba) combine without a copy, on the
# non-reference one (docs/developer/design-decisions.md); any other pair must refuse clearly.
HOST_MEMORY = {"cpu", "numba"}


def mixed_devices():
    other = OTHER[DEVICE]
    x = tl.randn(3, 2, device=DEVICE)
    xn = x.to_numpy()
    i = tl.tensor([0, 2], device=other)
    # (op, numpy oracle, whether the result must be on numba: elementwise ops and cat run on the
    # non-reference backend; an index op runs where the indexed tensor lives)
    cases = [
        (lambda: x.index_select(0, i), lambda: xn[[0, 2]], False),
        (
            lambda: x.gather(0, i.reshape(2, 1).expand(2, 2)),
            lambda: xn[[[0, 0], [2, 2]], [[0, 1], [0, 1]]],
            False,
        ),
        (lambda: x + tl.ones(3, 2, device=other), lambda: xn + 1, True),
        (
            lambda: tl.cat([x, tl.ones(1, 2, device=other)]),
            lambda: np.concatenate([xn, np.ones((1, 2))]),
            True,
        ),
    ]
    for ours, want, on_numba in cases:
        if {DEVICE, other} <= HOST_MEMORY:
            got = ours()
            assert not on_numba or str(got.device) == "numba", f"cpu x numba ran on {got.device}"
            close(got, want())
        else:
            expect(tl.BackendError, "different devices", ours)
    if not {DEVICE, other} <= HOST_MEMORY:
        expect(
            tl.BackendError,
            "different devices",
            lambda: F.cross_entropy(x, tl.tensor([0, 1, 1], device=other)),
        )


def mixed_dtypes():
    x = tl.randn(3, 2, device=DEVICE)
    expect(tl.DTypeError, "int64", lambda: x.index_select(0, T([0.0, 1.0])))
    expect(tl.DTypeError, "int64", lambda: x.gather(0, T([[0.0, 1.0]])))
    expect(tl.DTypeError, "int64", lambda: x.index_select(0, T([True, False])))
    expect(tl.DTypeError, "int64", lambda: F.cross_entropy(x, T([True, False, True])))
    expect(tl.DTypeError, "int|bool", lambda: x[T([0.5])])
    close(x.to(tl.float64) + T([1, 2]), x.to_numpy().astype(np.float64) + [1, 2])  # promotion


GROUPS = {
    "issue": [
        issue_index_select_numpy_view,
        issue_index_select_stale_bounds,
        issue_cross_entropy_target,
        issue_scatter_add_write,
        issue_scatter_add_negative_write,
        issue_embedding_backward_stale,
        issue_replay_embedding,
        issue_replay_gather,
        issue_replay_cross_entropy,
        issue_cross_entropy_float32_extremes,
        issue_cross_entropy_empty_batch,
        issue_cat_zero_dim,
        issue_empty_too_big,
    ],
    "index": [
        index_index_select,
        index_gather_scatter,
        index_getitem_setitem,
        index_embedding_and_losses,
    ],
    "numerics": [numerics_cross_entropy, numerics_softmax_and_reductions],
    "edge": [edge_reductions, edge_indexing_and_shapes],
    "mixed": [mixed_devices, mixed_dtypes],
}


def run_group(group):
    results = {}
    for case in GROUPS[group]:
        try:
            case()
            results[case.__name__] = "pass"
        except BaseException as exc:  # noqa: BLE001 - every failure is reported, by name
            tb = traceback.format_exception(exc)
            results[case.__name__] = (
                f"fail: {type(exc).__name__}: {str(exc)[:1500]}\n{''.join(tb[-3:])[-1500:]}"
            )
    return results


if __name__ == "__main__":
    tl.set_default_device("cpu")
    print(json.dumps(run_group(sys.argv[2])), flush=True)
