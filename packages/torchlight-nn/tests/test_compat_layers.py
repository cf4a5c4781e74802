"""The everyday torch.nn names added for compatibility, against numpy formulas and finite differences."""

import math
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import torchlight as tl
import torchlight.nn as nn
import torchlight.nn.functional as F
from torchlight.nn.utils.rnn import pad_sequence, unpad_sequence


def A(t):
    return t.detach().numpy()


def T(a, grad=False):
    return tl.tensor(np.asarray(a, dtype=np.float64), requires_grad=grad)


_erf = np.vectorize(math.erf)
SELU_A, SELU_S = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946


def _np_softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def np_softplus(x):
    return np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x)))


ACTIVATIONS = [
    (F.elu, nn.ELU(), lambda x: np.where(x > 0, x, np.expm1(np.minimum(x, 0)))),
    (
        lambda x: F.elu(x, 0.3),
        nn.ELU(0.3),
        lambda x: np.where(x > 0, x, 0.3 * np.expm1(np.minimum(x, 0))),
    ),
    (F.selu, nn.SELU(), lambda x: SELU_S * np.where(x > 0, x, SELU_A * np.expm1(np.minimum(x, 0)))),
    (
        lambda x: F.celu(x, 2.0),
        nn.CELU(2.0),
        lambda x: np.maximum(0, x) + np.minimum(0, 2 * np.expm1(x / 2)),
    ),
    (F.mish, nn.Mish(), lambda x: x * np.tanh(np_softplus(x))),
    (F.hardtanh, nn.Hardtanh(), lambda x: np.clip(x, -1, 1)),
    (lambda x: F.hardtanh(x, -2, 0.5), nn.Hardtanh(-2, 0.5), lambda x: np.clip(x, -2, 0.5)),
    (F.relu6, nn.ReLU6(), lambda x: np.clip(x, 0, 6)),
    (F.hardsigmoid, nn.Hardsigmoid(), lambda x: np.clip(x + 3, 0, 6) / 6),
    (F.hardswish, nn.Hardswish(), lambda x: x * np.clip(x + 3, 0, 6) / 6),
    (F.softsign, nn.Softsign(), lambda x: x / (1 + np.abs(x))),
    (F.logsigmoid, nn.LogSigmoid(), lambda x: -np_softplus(-x)),
    (
        lambda x: F.threshold(x, 0.5, -3.0),
        nn.Threshold(0.5, -3.0),
        lambda x: np.where(x > 0.5, x, -3.0),
    ),
    (lambda x: F.softmin(x, -1), nn.Softmin(-1), lambda x: _np_softmax(-x)),
    (lambda x: F.glu(x, -1), nn.GLU(), lambda x: x[..., :2] / (1 + np.exp(-x[..., 2:]))),
]


@pytest.mark.parametrize(
    "fn, module, ref",
    ACTIVATIONS,
    ids=[type(m).__name__ + str(i) for i, (_, m, _) in enumerate(ACTIVATIONS)],
)
def test_activation_values_and_gradients(fn, module, ref):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 4)) * 4
    x[0, :] = [-800.0, 800.0, 2.9, -2.9]  # far tails stay finite; near the kinks of the hard ones
    np.testing.assert_allclose(A(fn(T(x))), ref(x), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(A(module(T(x))), ref(x), rtol=1e-12, atol=1e-12)
    xt = T(x, True)
    fn(xt).sum().backward()
    assert np.isfinite(A(xt.grad)).all()
    smooth = T(
        rng.uniform(0.2, 0.8, (2, 4)) * rng.choice([-1, 1], (2, 4))
        + rng.choice([-4.5, 0, 4.5], (2, 4)),
        True,
    )
    assert tl.gradcheck(fn, (smooth,))


def test_prelu_per_channel_and_noncontiguous():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3, 5))
    m = nn.PReLU(3, init=0.1).double()
    with tl.no_grad():
        m.weight.copy_(T([0.1, 0.2, 0.3]))
    want = np.where(x > 0, x, x * np.array([0.1, 0.2, 0.3])[:, None])
    np.testing.assert_allclose(A(m(T(x))), want, atol=1e-12)
    xt = T(x.transpose(0, 2, 1).copy()).transpose(1, 2)
    assert not xt.is_contiguous()
    np.testing.assert_allclose(A(m(xt)), want, atol=1e-12)
    assert list(m.state_dict()) == ["weight"] and nn.PReLU().weight.tolist() == [0.25]
    w = T([0.1, 0.2, 0.3], True)
    assert tl.gradcheck(lambda a, b: F.prelu(a, b), (T(x + 0.05 * np.sign(x), True), w))
    with pytest.raises(tl.ShapeError):
        F.prelu(T(x), T([0.1, 0.2]))


@settings(deadline=None, max_examples=30)
@given(
    n=st.integers(1, 3),
    groups=st.sampled_from([1, 2, 4]),
    spatial=st.lists(st.integers(1, 3), max_size=2),
)
def test_group_norm_against_numpy(n, groups, spatial):
    rng = np.random.default_rng(n * 10 + groups)
    c = 4
    x = rng.standard_normal((n, c, *spatial))
    w, b = rng.standard_normal(c), rng.standard_normal(c)
    xg = x.reshape(n, groups, -1)
    ref = ((xg - xg.mean(-1, keepdims=True)) / np.sqrt(xg.var(-1, keepdims=True) + 1e-5)).reshape(
        x.shape
    )
    shape = (c,) + (1,) * len(spatial)
    ref = ref * w.reshape(shape) + b.reshape(shape)
    np.testing.assert_allclose(A(F.group_norm(T(x), groups, T(w), T(b))), ref, atol=1e-10)
    gn = nn.GroupNorm(groups, c).double()
    with tl.no_grad():
        gn.weight.copy_(T(w))
        gn.bias.copy_(T(b))
    np.testing.assert_allclose(A(gn(T(x))), ref, atol=1e-10)


def test_group_norm_gradcheck_and_errors():
    rng = np.random.default_rng(2)
    args = (
        T(rng.standard_normal((2, 4, 3)), True),
        T(rng.standard_normal(4), True),
        T(rng.standard_normal(4), True),
    )
    assert tl.gradcheck(lambda x, w, b: F.group_norm(x, 2, w, b), args)
    with pytest.raises(ValueError, match="divisible"):
        nn.GroupNorm(3, 4)
    assert sorted(nn.GroupNorm(2, 4).state_dict()) == ["bias", "weight"]
    assert nn.GroupNorm(2, 4, affine=False).state_dict() == {}


def test_rms_norm():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3, 4))
    w = rng.standard_normal(4)
    ref = x / np.sqrt((x * x).mean(-1, keepdims=True) + np.finfo(np.float64).eps) * w
    np.testing.assert_allclose(A(F.rms_norm(T(x), (4,), T(w))), ref, atol=1e-12)
    ref2 = x / np.sqrt((x * x).mean((-2, -1), keepdims=True) + 1e-3)
    np.testing.assert_allclose(
        A(nn.RMSNorm([3, 4], eps=1e-3, elementwise_affine=False)(T(x))), ref2, atol=1e-12
    )
    assert tl.gradcheck(lambda a, b: F.rms_norm(a, 4, b, 1e-6), (T(x, True), T(w, True)))
    assert list(nn.RMSNorm(4).state_dict()) == ["weight"]


def test_cosine_similarity_and_pairwise_distance():
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal((5, 3)), rng.standard_normal((5, 3))
    cos = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    np.testing.assert_allclose(A(F.cosine_similarity(T(a), T(b))), cos, atol=1e-12)
    np.testing.assert_allclose(
        A(nn.CosineSimilarity(dim=0)(T(a), T(b))),
        (a * b).sum(0) / (np.linalg.norm(a, axis=0) * np.linalg.norm(b, axis=0)),
        atol=1e-12,
    )
    np.testing.assert_allclose(
        A(F.cosine_similarity(T(a), T(b[:1]))),
        (a @ b[0]) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b[0])),
        atol=1e-12,
    )  # broadcasting
    assert A(F.cosine_similarity(tl.zeros(1, 3, dtype=tl.float64), T(b[:1])))[0] == 0.0
    for p in (1.0, 2.0, 3.0, math.inf):
        want = np.linalg.norm(a - b + 1e-6, ord=p, axis=1)
        np.testing.assert_allclose(A(nn.PairwiseDistance(p=p)(T(a), T(b))), want, atol=1e-12)
    assert nn.PairwiseDistance(keepdim=True)(T(a), T(b)).shape == (5, 1)
    assert tl.gradcheck(lambda x, y: F.cosine_similarity(x, y), (T(a, True), T(b, True)))


def test_parameter_list_and_dict():
    pl = nn.ParameterList([tl.zeros(2), nn.Parameter(tl.ones(3))])
    pl.append(tl.ones(1))
    pl += [tl.zeros(4)]
    assert [tuple(p.shape) for p in pl] == [(2,), (3,), (1,), (4,)]
    assert all(isinstance(p, nn.Parameter) and p.requires_grad for p in pl)
    assert list(pl.state_dict()) == ["0", "1", "2", "3"] and pl[-1].shape == (4,)
    pl[0] = tl.full((2,), 5.0)
    assert pl[0].tolist() == [5.0, 5.0]

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.scales = nn.ParameterDict({"a": tl.ones(2), "b": tl.zeros(3)})
            self.biases = nn.ParameterList([tl.zeros(2)])

    m = Model()
    assert sorted(n for n, _ in m.named_parameters()) == ["biases.0", "scales.a", "scales.b"]
    m.scales["c"] = tl.ones(1)
    assert list(m.scales) == ["a", "b", "c"] and "c" in m.scales and len(m.scales) == 3
    assert m.scales.pop("c").shape == (1,) and "c" not in m.scales
    m.scales.update([("d", tl.ones(2))])
    assert set(dict(m.scales.items())) == {"a", "b", "d"}
    sd = m.state_dict()
    m2 = Model()
    m2.scales["d"] = tl.zeros(2)
    m2.load_state_dict(sd)
    assert m2.scales["d"].tolist() == [1.0, 1.0]


def test_data_parallel_and_lazy_ddp(monkeypatch):
    lin = nn.Linear(3, 2)
    dp = nn.DataParallel(lin, device_ids=[0])
    x = tl.randn(4, 3)
    assert dp.module is lin and np.array_equal(A(dp(x)), A(lin(x)))
    assert sorted(dp.state_dict()) == ["module.bias", "module.weight"]
    with pytest.raises(TypeError):
        nn.DataParallel(lambda v: v)
    import torchlight.nn.parallel as parallel

    ddp_cls = parallel.DistributedDataParallel
    from torchlight.distributed import DistributedDataParallel

    assert ddp_cls is DistributedDataParallel
    # importing torchlight.nn (and nn.parallel) does not import torchlight-distributed
    code = (
        "import sys, torchlight.nn, torchlight.nn.parallel; "
        "print(any(m.startswith('torchlight.distributed') for m in sys.modules))"
    )
    assert (
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip()
        == "False"
    )
    monkeypatch.delitem(parallel.__dict__, "DistributedDataParallel")
    monkeypatch.setitem(sys.modules, "torchlight.distributed.ddp", None)
    with pytest.raises(ImportError, match="torchlight-distributed"):
        parallel.DistributedDataParallel


def test_nn_modules_import_paths():
    from torchlight.nn.modules.activation import MultiheadAttention, ReLU
    from torchlight.nn.modules.batchnorm import BatchNorm1d
    from torchlight.nn.modules.container import Sequential
    from torchlight.nn.modules.linear import Linear
    from torchlight.nn.modules.loss import CrossEntropyLoss
    from torchlight.nn.modules.module import Module
    from torchlight.nn.modules.sparse import Embedding

    assert (
        Module,
        Linear,
        ReLU,
        Sequential,
        CrossEntropyLoss,
        Embedding,
        BatchNorm1d,
        MultiheadAttention,
    ) == (
        nn.Module,
        nn.Linear,
        nn.ReLU,
        nn.Sequential,
        nn.CrossEntropyLoss,
        nn.Embedding,
        nn.BatchNorm1d,
        nn.MultiheadAttention,
    )
    classes = [n for n in nn.modules.__all__ if isinstance(getattr(nn.modules, n), type)]
    assert len(classes) > 60
    for name in classes:
        if name == "NonDynamicallyQuantizableLinear":  # torch.nn does not export it either
            assert issubclass(nn.modules.NonDynamicallyQuantizableLinear, nn.Linear)
            continue
        assert getattr(nn.modules, name) is getattr(nn, name)


def test_pad_sequence_values_sides_and_gradient():
    rng = np.random.default_rng(5)
    seqs = [rng.standard_normal((n, 2)) for n in (3, 1, 2)]
    out = pad_sequence([T(s) for s in seqs], batch_first=True, padding_value=-1.0)
    want = np.full((3, 3, 2), -1.0)
    for i, s in enumerate(seqs):
        want[i, : len(s)] = s
    np.testing.assert_array_equal(A(out), want)
    np.testing.assert_array_equal(
        A(pad_sequence([T(s) for s in seqs])),
        want.transpose(1, 0, 2) * (want != -1).transpose(1, 0, 2),
    )
    left = pad_sequence([T(s) for s in seqs], batch_first=True, padding_side="left")
    np.testing.assert_array_equal(A(left)[1, 2], seqs[1][0])
    np.testing.assert_array_equal(A(left)[1, :2], 0.0)
    ts = [T(s, True) for s in seqs]
    (pad_sequence(ts, batch_first=True) * 2).sum().backward()
    assert all(np.array_equal(A(t.grad), np.full(t.shape, 2.0)) for t in ts)
    back = unpad_sequence(out, [3, 1, 2], batch_first=True)
    assert all(np.array_equal(A(b), s) for b, s in zip(back, seqs))
    with pytest.raises(tl.ShapeError):
        pad_sequence([T(np.zeros((2, 3))), T(np.zeros((2, 4)))])


def test_rnn_module_flatten_parameters_and_module_methods():
    m = nn.Sequential(nn.Linear(2, 3), nn.GELU(approximate="tanh"), nn.Linear(3, 1))
    m.requires_grad_(False)
    assert not any(p.requires_grad for p in m.parameters())
    assert m.get_submodule("2") is m[2] and [n for n, _ in m.named_modules()] == ["", "0", "1", "2"]
    m.register_buffer("steps", tl.zeros(1), persistent=False)
    assert "steps" not in m.state_dict()


@pytest.mark.parametrize("norm_type", [2.0, 1.0, math.inf])
def test_embedding_max_norm_renormalises_looked_up_rows(norm_type):
    rng = np.random.default_rng(6)
    w0 = rng.standard_normal((6, 4)) * 3
    emb = nn.Embedding(6, 4, max_norm=1.5, norm_type=norm_type).double()
    with tl.no_grad():
        emb.weight.copy_(T(w0))
    idx = tl.tensor(np.array([[0, 2], [2, 5]]))
    out = emb(idx)
    norms = np.linalg.norm(w0, ord=norm_type, axis=1)
    want = w0.copy()
    for r in (0, 2, 5):
        if norms[r] > 1.5:
            want[r] = w0[r] * 1.5 / (norms[r] + 1e-7)
    np.testing.assert_allclose(
        A(emb.weight), want, rtol=1e-12
    )  # untouched rows 1, 3, 4 keep their norm
    np.testing.assert_allclose(A(out), want[A(idx)], rtol=1e-12)
    out.sum().backward()
    assert emb.weight.grad is not None
    with pytest.raises(NotImplementedError):
        nn.Embedding(3, 2, sparse=True)
    pre = nn.Embedding.from_pretrained(T(w0), max_norm=1.0)
    assert pre.max_norm == 1.0 and not pre.weight.requires_grad


def test_module_cuda_and_load_state_dict_assign():
    m = nn.Linear(2, 2)
    if "cuda" not in tl.available_backends():
        with pytest.raises(tl.TorchlightError):
            m.cuda()
    src = nn.Linear(2, 2)
    m.load_state_dict(src.state_dict(), assign=True)
    assert np.array_equal(A(m.weight), A(src.weight))


def test_bilinear_and_softmax2d():
    rng = np.random.default_rng(7)
    m = nn.Bilinear(3, 4, 2).double()
    x1, x2 = rng.standard_normal((2, 5, 3)), rng.standard_normal((2, 5, 4))
    want = np.einsum("...i,kij,...j->...k", x1, A(m.weight), x2) + A(m.bias)
    np.testing.assert_allclose(A(m(T(x1), T(x2))), want, atol=1e-12)
    assert np.abs(A(m.weight)).max() <= 1 / math.sqrt(3) and sorted(m.state_dict()) == [
        "bias",
        "weight",
    ]
    w = T(rng.standard_normal((2, 3, 4)), True)
    assert tl.gradcheck(lambda a, b, c: F.bilinear(a, b, c), (T(x1[0], True), T(x2[0], True), w))
    x = rng.standard_normal((2, 3, 4, 5))
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(A(nn.Softmax2d()(T(x))), e / e.sum(1, keepdims=True), atol=1e-12)
    with pytest.raises(tl.ShapeError):
        nn.Softmax2d()(T(x[0, 0]))
