"""Forward values of the PyTorch-compatibility ops against numpy, on contiguous and on
non-contiguous (transposed, step-sliced) inputs. Gradients are in test_gradcheck.py."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from tltensor_helpers import Maker, shapes

import torchlight as tl

LAYOUTS = ("contiguous", "permuted", "sliced")


def _pair(shape, layout, seed=0, kind="float"):
    arr, t = Maker(seed, kind=kind).build(shape, layout)
    return np.array(arr), t


# --- ordering ------------------------------------------------------------------------------------


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_matches_numpy(layout, dim, descending):
    a, t = _pair((4, 5), layout)
    v, i = t.sort(dim, descending=descending)
    want = np.sort(a, axis=dim)
    if descending:
        want = np.flip(want, axis=dim)
    np.testing.assert_array_equal(v.numpy(), want)
    np.testing.assert_array_equal(np.take_along_axis(a, i.numpy(), axis=dim), want)
    np.testing.assert_array_equal(t.argsort(dim, descending=descending).numpy(), i.numpy())
    assert i.dtype == tl.int64


def test_sort_is_stable_both_ways_and_puts_nan_last():
    t = tl.tensor([2, 1, 2, 1, 3])
    assert t.sort(stable=True).indices.tolist() == [1, 3, 0, 2, 4]
    assert t.sort(descending=True, stable=True).indices.tolist() == [4, 0, 2, 1, 3]
    assert tl.tensor([1.0, float("nan"), 0.0]).sort().indices.tolist() == [2, 0, 1]
    assert tl.tensor([True, False]).sort().values.tolist() == [False, True]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("largest", [True, False])
def test_topk_matches_numpy(layout, largest):
    a, t = _pair((3, 6), layout, seed=1)
    r = t.topk(4, dim=1, largest=largest)
    values, indices = r  # unpackable
    assert r.values is values and r.indices is indices
    order = np.argsort(-a if largest else a, axis=1)[:, :4]
    np.testing.assert_array_equal(indices.numpy(), order)
    np.testing.assert_array_equal(values.numpy(), np.take_along_axis(a, order, axis=1))
    r0 = tl.topk(t, 2, dim=0)
    np.testing.assert_array_equal(r0.values.numpy(), -np.sort(-a, axis=0)[:2])


def test_topk_k_out_of_range_and_edge_cases():
    with pytest.raises(tl.TensorIndexError, match="k=4"):
        tl.ones(3).topk(4)
    assert tl.ones(3).topk(0).values.shape == (0,)
    assert tl.tensor(2.0).topk(1).values.item() == 2.0


def test_topk_gradient_reaches_the_selected_elements():
    x = tl.tensor([1.0, 5.0, 3.0, 4.0], requires_grad=True)
    x.topk(2).values.sum().backward()
    assert x.grad.tolist() == [0.0, 1.0, 0.0, 1.0]


# --- reordering ----------------------------------------------------------------------------------


@pytest.mark.parametrize("layout", LAYOUTS)
def test_roll_flip_cumsum_match_numpy(layout):
    a, t = _pair((3, 4), layout, seed=2)
    np.testing.assert_array_equal(t.roll(1, 1).numpy(), np.roll(a, 1, 1))
    np.testing.assert_array_equal(t.roll(-5).numpy(), np.roll(a, -5))
    np.testing.assert_array_equal(t.roll((1, -1), (0, 1)).numpy(), np.roll(a, (1, -1), (0, 1)))
    np.testing.assert_array_equal(t.flip(0).numpy(), np.flip(a, 0))
    np.testing.assert_array_equal(tl.flip(t, (0, 1)).numpy(), np.flip(a, (0, 1)))
    np.testing.assert_allclose(t.cumsum(1).numpy(), np.cumsum(a, 1), rtol=1e-12)
    np.testing.assert_allclose(tl.cumsum(t, 0).numpy(), np.cumsum(a, 0), rtol=1e-12)


def test_cumsum_integers_are_exact():
    t = tl.tensor([2**40, 1, 2, 3])
    assert t.cumsum(0).tolist() == np.cumsum([2**40, 1, 2, 3]).tolist()
    assert tl.tensor([True, True, False]).cumsum(0).tolist() == [1, 2, 2]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_repeat_interleave_unbind_select_match_numpy(layout):
    a, t = _pair((2, 3), layout, seed=3)
    np.testing.assert_array_equal(t.repeat_interleave(2).numpy(), np.repeat(a, 2))
    np.testing.assert_array_equal(t.repeat_interleave(2, dim=1).numpy(), np.repeat(a, 2, axis=1))
    np.testing.assert_array_equal(
        t.repeat_interleave(tl.tensor([0, 3]), dim=0).numpy(), np.repeat(a, [0, 3], axis=0)
    )
    for k, s in enumerate(t.unbind(1)):
        np.testing.assert_array_equal(s.numpy(), a[:, k])
    np.testing.assert_array_equal(t.select(0, -1).numpy(), a[-1])


# --- products ------------------------------------------------------------------------------------


@pytest.mark.parametrize("layout", LAYOUTS)
def test_mm_bmm_dot_outer_match_numpy(layout):
    a, t = _pair((3, 4), layout, seed=4)
    b, u = _pair((4, 2), layout, seed=5)
    np.testing.assert_allclose(tl.mm(t, u).numpy(), a @ b, rtol=1e-12)
    np.testing.assert_allclose(t.mm(u).numpy(), a @ b, rtol=1e-12)
    a3, t3 = _pair((2, 3, 4), layout, seed=6)
    b3, u3 = _pair((2, 4, 5), layout, seed=7)
    np.testing.assert_allclose(tl.bmm(t3, u3).numpy(), a3 @ b3, rtol=1e-12)
    np.testing.assert_allclose(tl.dot(t[0], u[:, 0]).item(), a[0] @ b[:, 0], rtol=1e-12)
    np.testing.assert_allclose(tl.outer(t[0], u[0]).numpy(), np.outer(a[0], b[0]), rtol=1e-12)


@pytest.mark.parametrize(
    "a_shape, b_shape, fn",
    [
        ((2, 3), (3, 4), "bmm"),
        ((2, 2, 3), (2, 3, 4), "mm"),
        ((3,), (3, 4), "mm"),
        ((2, 2, 3), (3, 3, 4), "bmm"),
        ((2, 2, 3), (1, 3, 4), "bmm"),  # bmm does not broadcast
    ],
)
def test_mm_bmm_reject_wrong_ranks(a_shape, b_shape, fn):
    with pytest.raises(tl.ShapeError, match=fn):
        getattr(tl.ones(*a_shape), fn)(tl.ones(*b_shape))


def test_diag_matches_numpy():
    v = np.array([1.0, 2.0, 3.0])
    for k in (-1, 0, 2):
        np.testing.assert_array_equal(tl.diag(tl.tensor(v), k).numpy(), np.diag(v, k))
    m = np.arange(12.0).reshape(3, 4)
    for k in (-2, 0, 1, 3):
        np.testing.assert_array_equal(tl.tensor(m).diag(k).numpy(), np.diag(m, k))
    np.testing.assert_array_equal(tl.tensor(m).T.diag().numpy(), np.diag(m.T))


@pytest.mark.parametrize(
    "eq, shapes",
    [
        ("ij,jk->ik", [(2, 3), (3, 4)]),
        ("bij,bjk->bik", [(2, 2, 3), (2, 3, 4)]),
        ("bhqd,bhkd->bhqk", [(2, 2, 3, 4), (2, 2, 5, 4)]),
        ("i,j->ij", [(3,), (4,)]),
        ("ij->j", [(3, 4)]),
        ("ij", [(3, 4)]),
        ("ji", [(3, 4)]),
        ("...ij,...jk->...ik", [(2, 3, 4), (4, 5)]),
        ("i,i", [(5,), (5,)]),
        ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
    ],
)
def test_einsum_matches_numpy(eq, shapes):
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s) for s in shapes]
    tensors = [
        tl.tensor(a).transpose(0, -1).contiguous().transpose(0, -1) for a in arrays
    ]  # strided
    np.testing.assert_allclose(
        tl.einsum(eq, *tensors).numpy(), np.einsum(eq, *arrays), rtol=1e-10, atol=1e-12
    )


def test_einsum_rejects_a_repeated_index_and_unknown_outputs():
    with pytest.raises(tl.ShapeError, match="repeated"):
        tl.einsum("ii->i", tl.ones(2, 2))
    with pytest.raises(tl.ShapeError, match="output"):
        tl.einsum("ij->ik", tl.ones(2, 2))
    with pytest.raises(tl.ShapeError, match="operands"):
        tl.einsum("ij,jk->ik", tl.ones(2, 2))


@pytest.mark.parametrize("p", ["fro", 1, 2, 3, float("inf")])
def test_norm_matches_numpy(p):
    a, t = _pair((3, 4), "permuted", seed=8)
    ord_ = 2 if p == "fro" else p
    np.testing.assert_allclose(t.norm(p).item(), np.linalg.norm(a.reshape(-1), ord_), rtol=1e-12)
    np.testing.assert_allclose(
        tl.norm(t, p, dim=1).numpy(), np.linalg.norm(a, ord_, axis=1), rtol=1e-12
    )


# --- comparisons ---------------------------------------------------------------------------------


def test_isclose_allclose_equal_match_numpy():
    a = np.array([1.0, 2.0, np.inf, -np.inf, np.nan, 1e-9])
    b = np.array([1.0 + 1e-7, 2.1, np.inf, np.inf, np.nan, 0.0])
    np.testing.assert_array_equal(tl.isclose(tl.tensor(a), tl.tensor(b)).numpy(), np.isclose(a, b))
    np.testing.assert_array_equal(
        tl.tensor(a).isclose(tl.tensor(b), equal_nan=True).numpy(), np.isclose(a, b, equal_nan=True)
    )
    assert tl.allclose(tl.ones(3), tl.ones(3) + 1e-9) and not tl.allclose(
        tl.ones(3), tl.ones(3) * 2
    )
    assert tl.equal(tl.tensor([1, 2]), tl.tensor([1, 2]))
    assert not tl.equal(tl.tensor([1, 2]), tl.tensor([1, 3]))
    assert not tl.equal(tl.ones(2), tl.ones(3))


# --- functional spellings ------------------------------------------------------------------------


def test_functional_spellings_match_methods():
    a, t = _pair((2, 3, 4), "sliced", seed=9)
    np.testing.assert_allclose(tl.pow(t, 2).numpy(), a**2)
    np.testing.assert_allclose(tl.pow(2.0, t).numpy(), 2.0**a, rtol=1e-12)
    assert tl.flatten(t, 1).shape == (2, 12)
    assert tl.reshape(t, (6, 4)).shape == (6, 4)
    np.testing.assert_array_equal(tl.transpose(t, 0, 2).numpy(), a.transpose(2, 1, 0))
    np.testing.assert_array_equal(tl.permute(t, (1, 2, 0)).numpy(), a.transpose(1, 2, 0))
    assert tl.squeeze(tl.unsqueeze(t, 1)).shape == (2, 3, 4)
    np.testing.assert_array_equal(tl.narrow(t, 2, 1, 2).numpy(), a[:, :, 1:3])
    np.testing.assert_array_equal(tl.t(t[0]).numpy(), a[0].T)
    np.testing.assert_array_equal(tl.clip(t, -1, 1).numpy(), np.clip(a, -1, 1))
    np.testing.assert_array_equal(tl.neg(t).numpy(), -a)
    np.testing.assert_array_equal(tl.square(t).numpy(), a * a)
    np.testing.assert_array_equal(tl.sign(t).numpy(), np.sign(a))
    assert tl.numel(t) == 24 and tl.is_tensor(t) and not tl.is_tensor(a)
    assert tl.is_floating_point(t) and not tl.is_floating_point(tl.arange(2))
    np.testing.assert_allclose(tl.logspace(0, 3, 4, base=2.0).numpy(), [1, 2, 4, 8])


# --- scatter, selection, rounding ------------------------------------------------------------------


@pytest.mark.parametrize("layout", LAYOUTS)
def test_scatter_matches_numpy(layout):
    a, t = _pair((3, 4), layout, seed=10)
    idx = np.array([[3, 0], [1, 2], [0, 0]])
    src = np.arange(6.0).reshape(3, 2) + 10
    want = a.copy()
    np.put_along_axis(want, idx, src, axis=1)
    want[2, 0] = 14.5  # index 0 twice in row 2: torchlight writes their mean (PyTorch: unspecified)
    np.testing.assert_allclose(t.scatter(1, tl.tensor(idx), tl.tensor(src)).numpy(), want)
    onehot = tl.zeros(2, 4).scatter_(1, tl.tensor([[1], [3]]), 1.0)
    np.testing.assert_array_equal(onehot.numpy(), np.eye(4)[[1, 3]])
    ints = tl.arange(4).scatter(0, tl.tensor([2]), 2**40 + 1)
    assert ints.tolist() == [0, 1, 2**40 + 1, 3] and ints.dtype == tl.int64


def test_nonzero_argwhere_masked_select_match_numpy():
    a = np.array([[0.0, 1.5, 0.0], [2.0, 0.0, -1.0]])
    t = tl.tensor(a).T.contiguous().T  # a strided view
    np.testing.assert_array_equal(t.nonzero().numpy(), np.argwhere(a))
    np.testing.assert_array_equal(tl.argwhere(t).numpy(), np.argwhere(a))
    for got, want in zip(t.nonzero(as_tuple=True), np.nonzero(a)):
        np.testing.assert_array_equal(got.numpy(), want)
    assert tl.tensor(0.0).nonzero().shape == (0, 0) and tl.tensor(2.0).nonzero().shape == (1, 0)
    np.testing.assert_array_equal(tl.masked_select(t, t > 0).numpy(), a[a > 0])
    np.testing.assert_array_equal(
        t.masked_select(tl.tensor([True, False, True])).numpy(), a[:, [0, 2]].reshape(-1)
    )


@pytest.mark.parametrize("layout", LAYOUTS)
def test_rounding_matches_numpy(layout):
    a, t = _pair((3, 4), layout, seed=11)
    a, t = a * 3, t * 3
    for name in ("floor", "ceil", "trunc", "round"):
        np.testing.assert_array_equal(getattr(t, name)().numpy(), getattr(np, name)(a))
        np.testing.assert_array_equal(getattr(tl, name)(t).numpy(), getattr(np, name)(a))
    np.testing.assert_array_equal(t.round(decimals=2).numpy(), np.round(a, 2))
    assert tl.tensor([0.5, 1.5, 2.5]).round().tolist() == [0.0, 2.0, 2.0]  # half to even
    assert tl.arange(3).floor().tolist() == [0, 1, 2]


def test_rounding_has_a_zero_gradient():
    x = tl.tensor([0.3, 1.7], requires_grad=True)
    (x.floor() + x.round() + x.ceil() + x.trunc()).sum().backward()
    assert x.grad.tolist() == [0.0, 0.0]


def test_integer_division_and_remainder_are_exact_and_pythonic():
    a = np.array([7, -7, 2**62 + 1, 0])
    b = np.array([2, 2, 3, -5])
    ta, tb = tl.tensor(a), tl.tensor(b)
    np.testing.assert_array_equal((ta // tb).numpy(), a // b)
    np.testing.assert_array_equal((ta % tb).numpy(), a % b)
    np.testing.assert_array_equal((ta // 3).numpy(), a // 3)
    np.testing.assert_array_equal((100 // tb).numpy(), 100 // b)
    np.testing.assert_array_equal((100 % tb).numpy(), 100 % b)
    assert tl.div(ta, tb, rounding_mode="trunc").tolist() == [3, -3, (2**62 + 1) // 3, 0]  # exact
    np.testing.assert_allclose(tl.div(ta, tb).numpy(), a / b)
    with pytest.raises(ZeroDivisionError):
        ta // tl.tensor([1, 0, 1, 1])


@pytest.mark.parametrize(
    "fn, ref",
    [
        (lambda x: x // 2, lambda v: np.floor_divide(v, 2)),
        (lambda x: x % 3, lambda v: np.remainder(v, 3)),
        (tl.floor, np.floor),
        (tl.ceil, np.ceil),
        (tl.round, np.round),
        (tl.trunc, np.trunc),
        (lambda x: tl.div(x, 2, rounding_mode="floor"), lambda v: np.floor_divide(v, 2)),
        (lambda x: tl.div(x, 2, rounding_mode="trunc"), lambda v: np.trunc(v / 2)),
    ],
)
@pytest.mark.parametrize("value", [5, 5.5, -7.25])
def test_rounding_ops_keep_a_0d_tensor_0d(fn, ref, value):
    """numpy hands these results back as scalars; they must stay 0-d, as in PyTorch (they came
    back with shape (1,))."""
    out = fn(tl.tensor(value))
    assert out.shape == ()
    assert out.item() == ref(value)


def test_float_floor_divide_and_remainder_match_numpy():
    a, t = _pair((2, 3), "permuted", seed=12)
    np.testing.assert_allclose((t // 0.7).numpy(), np.floor_divide(a, 0.7))
    np.testing.assert_allclose((t % 0.7).numpy(), np.remainder(a, 0.7), atol=1e-12)
    np.testing.assert_allclose(tl.remainder(t, -0.7).numpy(), np.remainder(a, -0.7), atol=1e-12)
    np.testing.assert_allclose(tl.div(t, 0.7, rounding_mode="floor").numpy(), np.floor(a / 0.7))
    with pytest.raises(ValueError, match="rounding_mode"):
        tl.div(t, 2, rounding_mode="up")


def test_float32_matmul_precision_is_recorded():
    tl.set_float32_matmul_precision("medium")
    try:
        assert tl.get_float32_matmul_precision() == "medium"
    finally:
        tl.set_float32_matmul_precision("highest")
    with pytest.raises(tl.DTypeError):
        tl.set_float32_matmul_precision("fast")


def test_to_accepts_pytorch_keywords():
    x = tl.ones(2)
    assert x.to("cpu", non_blocking=True) is x
    y = x.to(x, copy=True)
    assert y is not x and y.tolist() == [1.0, 1.0]
    assert x.to(tl.arange(2)).dtype == tl.int64


@pytest.mark.parametrize("indexing", ["ij", "xy"])
def test_meshgrid_matches_numpy(indexing):
    xs = [np.arange(2.0), np.arange(3.0) * 10, np.arange(4.0) * 100]
    ts = [tl.tensor(x) for x in xs]
    for got, want in zip(tl.meshgrid(*ts, indexing=indexing), np.meshgrid(*xs, indexing=indexing)):
        np.testing.assert_array_equal(got.numpy(), want)
    for got, want in zip(
        tl.meshgrid(ts[:2], indexing=indexing), np.meshgrid(*xs[:2], indexing=indexing)
    ):
        np.testing.assert_array_equal(got.numpy(), want)


def test_small_tensor_queries():
    x = tl.tensor([-1.0, 0.5, 2.0])
    assert x.clamp_min(0).tolist() == [0.0, 0.5, 2.0] and x.clamp_max(1).tolist() == [
        -1.0,
        0.5,
        1.0,
    ]
    assert not x.is_complex() and x.get_device() == -1
    assert x.pin_memory() is x and not x.is_pinned()
    assert tl.int32 is tl.int64 and tl.int is tl.int64


@given(
    shape=shapes(1, 4), layout=st.sampled_from(LAYOUTS), seed=st.integers(0, 2**16), data=st.data()
)
def test_reordering_ops_match_numpy_on_random_shapes(shape, layout, seed, data):
    a, t = _pair(shape, layout, seed=seed, kind="ties")  # ties: the sort must stay stable
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    np.testing.assert_array_equal(
        t.sort(dim, stable=True).indices.numpy(), np.argsort(a, dim, kind="stable")
    )
    np.testing.assert_array_equal(t.sort(dim).values.numpy(), np.sort(a, dim))
    k = data.draw(st.integers(0, shape[dim]))
    np.testing.assert_array_equal(
        t.topk(k, dim).values.numpy(), np.take(-np.sort(-a, dim), range(k), dim)
    )
    shift = data.draw(st.integers(-5, 5))
    np.testing.assert_array_equal(t.roll(shift, dim).numpy(), np.roll(a, shift, dim))
    np.testing.assert_array_equal(t.roll(shift).numpy(), np.roll(a, shift))
    np.testing.assert_array_equal(t.flip(dim).numpy(), np.flip(a, dim))
    np.testing.assert_allclose(t.cumsum(dim).numpy(), np.cumsum(a, dim), rtol=1e-12, atol=1e-12)
    reps = data.draw(st.integers(0, 3))
    np.testing.assert_array_equal(t.repeat_interleave(reps, dim).numpy(), np.repeat(a, reps, dim))


def test_special_functions_match_numpy():
    import math

    a = np.array([1e-12, -1e-9, 1e-5, 0.5, -0.7, 3.0])
    t = tl.tensor(a).reshape(2, 3).T.contiguous().T.reshape(-1)
    np.testing.assert_allclose(tl.log1p(t).numpy(), np.log1p(a), rtol=1e-15)
    np.testing.assert_allclose(tl.expm1(t).numpy(), np.expm1(a), rtol=1e-15)
    p = np.abs(a) + 0.1
    np.testing.assert_allclose(tl.log2(tl.tensor(p)).numpy(), np.log2(p), rtol=1e-14)
    np.testing.assert_allclose(tl.log10(tl.tensor(p)).numpy(), np.log10(p), rtol=1e-14)
    np.testing.assert_allclose(tl.exp2(t).numpy(), np.exp2(a), rtol=1e-14)
    np.testing.assert_allclose(tl.erf(t).numpy(), [math.erf(v) for v in a], rtol=1e-14)
    b, u = _pair((3, 4), "sliced", seed=13)
    v, m = tl.var_mean(u, 1)
    np.testing.assert_allclose(v.numpy(), b.var(1, ddof=1), rtol=1e-12)
    np.testing.assert_allclose(m.numpy(), b.mean(1), rtol=1e-12)
    s, m = tl.std_mean(u)
    np.testing.assert_allclose(s.item(), b.std(ddof=1), rtol=1e-12)


def test_inplace_unary_ops_match_their_out_of_place_versions():
    a, t = _pair((2, 3), "permuted", seed=14)
    for name in ("exp", "sqrt", "abs", "sigmoid", "tanh", "relu", "neg", "log"):
        x = tl.tensor(np.abs(a) + 0.1) if name in ("sqrt", "log") else tl.tensor(a)
        want = getattr(x, name)().numpy().copy()
        out = getattr(x, name + "_")()
        assert out is x
        np.testing.assert_allclose(x.numpy(), want, rtol=1e-15)
    x = t.clone()
    x.pow_(2)
    np.testing.assert_allclose(x.numpy(), a**2)
    view = tl.zeros(2, 3)[:, 1]  # writes through a strided view reach the base
    base = view._base
    view.neg_().exp_()
    assert base[:, 1].tolist() == [1.0, 1.0]
    with pytest.raises(tl.AutogradError):
        tl.ones(2, requires_grad=True).exp_()
