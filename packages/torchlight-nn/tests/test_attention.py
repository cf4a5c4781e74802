"""scaled_dot_product_attention, MultiheadAttention and the Transformer modules against numpy.

The references below re-derive the maths from the published definitions (Vaswani et al.; PyTorch's
documented mask conventions) in float64 numpy, from the modules' own parameters.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import torchlight as tl
import torchlight.nn as nn
import torchlight.nn.functional as F


def np_softmax(x):
    x = x - x.max(-1, keepdims=True)
    e = np.exp(x)
    return e / e.sum(-1, keepdims=True)


def np_sdpa(q, k, v, add_mask=None, scale=None):
    scale = 1 / np.sqrt(q.shape[-1]) if scale is None else scale
    s = q @ np.swapaxes(k, -1, -2) * scale
    if add_mask is not None:
        s = s + add_mask
    return np_softmax(s) @ v


def np_mha(m, q, k, v, add_mask=None):
    """Sequence-first (L, N, E) reference from the module's parameters; returns (out, weights (N,H,L,S))."""
    E, H = m.embed_dim, m.num_heads
    hd = E // H
    if m.in_proj_weight is not None:
        wq, wk, wv = np.split(A(m.in_proj_weight), 3)
    else:
        wq, wk, wv = A(m.q_proj_weight), A(m.k_proj_weight), A(m.v_proj_weight)
    bq, bk, bv = np.split(A(m.in_proj_bias), 3)
    Q, K, V = q @ wq.T + bq, k @ wk.T + bk, v @ wv.T + bv
    L, N, _ = Q.shape
    S = K.shape[0]

    def heads(t, n):
        return t.reshape(n, N, H, hd).transpose(1, 2, 0, 3)

    Q, K, V = heads(Q, L), heads(K, S), heads(V, S)
    s = Q @ K.transpose(0, 1, 3, 2) / np.sqrt(hd)
    if add_mask is not None:
        s = s + add_mask
    w = np_softmax(s)
    o = (w @ V).transpose(2, 0, 1, 3).reshape(L, N, E)
    return o @ A(m.out_proj.weight).T + A(m.out_proj.bias), w


def np_layer_norm(x, ln):
    mu = x.mean(-1, keepdims=True)
    var = x.var(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + ln.eps) * A(ln.weight) + A(ln.bias)


def np_linear(x, lin):
    return x @ A(lin.weight).T + A(lin.bias)


def A(t):
    return t.detach().numpy()


def T(a, grad=False):
    return tl.tensor(a, dtype=tl.float64, requires_grad=grad)


# --- F.scaled_dot_product_attention -----------------------------------------------------------
@pytest.mark.parametrize("shape", [((2, 3, 4, 5), (2, 3, 6, 5)), ((4, 5), (6, 5))])
def test_sdpa_values_and_masks(shape):
    rng = np.random.default_rng(0)
    qs, ks = shape
    q, k = rng.standard_normal(qs), rng.standard_normal(ks)
    v = rng.standard_normal(ks[:-1] + (3,))
    np.testing.assert_allclose(
        F.scaled_dot_product_attention(T(q), T(k), T(v)).numpy(), np_sdpa(q, k, v), atol=1e-12
    )
    # bool mask: True = keep; float mask: added
    L, S = qs[-2], ks[-2]
    keep = rng.random((L, S)) > 0.3
    keep[:, 0] = True
    add = np.where(keep, 0.0, -np.inf)
    out = F.scaled_dot_product_attention(T(q), T(k), T(v), attn_mask=tl.tensor(keep))
    np.testing.assert_allclose(A(out), np_sdpa(q, k, v, add), atol=1e-12)
    fmask = rng.standard_normal((L, S))
    out = F.scaled_dot_product_attention(T(q), T(k), T(v), attn_mask=T(fmask), scale=0.3)
    np.testing.assert_allclose(A(out), np_sdpa(q, k, v, fmask, scale=0.3), atol=1e-12)
    causal = np.where(np.tril(np.ones((L, S), bool)), 0.0, -np.inf)
    out = F.scaled_dot_product_attention(T(q), T(k), T(v), is_causal=True)
    np.testing.assert_allclose(A(out), np_sdpa(q, k, v, causal), atol=1e-12)


def test_sdpa_non_contiguous_gqa_and_errors():
    rng = np.random.default_rng(1)
    q = rng.standard_normal((2, 4, 3, 5))
    k = rng.standard_normal((2, 2, 6, 5))
    v = rng.standard_normal((2, 2, 6, 5))
    out = F.scaled_dot_product_attention(T(q), T(k), T(v), enable_gqa=True)
    np.testing.assert_allclose(
        A(out), np_sdpa(q, np.repeat(k, 2, 1), np.repeat(v, 2, 1)), atol=1e-12
    )
    qt = T(q.transpose(0, 2, 1, 3).copy()).transpose(1, 2)  # a strided view
    assert not qt.is_contiguous()
    np.testing.assert_allclose(
        F.scaled_dot_product_attention(
            qt, T(k[:, :1].repeat(4, 1)), T(v[:, :1].repeat(4, 1))
        ).numpy(),
        np_sdpa(q, k[:, :1].repeat(4, 1), v[:, :1].repeat(4, 1)),
        atol=1e-12,
    )
    with pytest.raises(ValueError, match="either attn_mask or is_causal"):
        F.scaled_dot_product_attention(
            T(q), T(q), T(q), attn_mask=tl.ones(3, 3, dtype=tl.bool), is_causal=True
        )
    with pytest.raises(tl.ShapeError):
        F.scaled_dot_product_attention(T(q), T(k[..., :4]), T(v))


def test_sdpa_gradcheck():
    rng = np.random.default_rng(2)
    q, k, v = (T(rng.standard_normal(s), True) for s in ((2, 3, 4), (2, 5, 4), (2, 5, 3)))
    mask = tl.tensor(np.tril(np.ones((3, 5), bool), 1))
    assert tl.gradcheck(
        lambda a, b, c: F.scaled_dot_product_attention(a, b, c, attn_mask=mask), (q, k, v)
    )


def test_sdpa_causal_gradcheck_and_its_mask_is_built_once(monkeypatch):
    """``is_causal``: the gradient against finite differences (L != S: the top-left aligned
    mask), and the mask is built at the first call of a size only."""
    rng = np.random.default_rng(6)
    q, k, v = (T(rng.standard_normal(s), True) for s in ((2, 3, 4), (2, 5, 4), (2, 5, 3)))
    assert tl.gradcheck(
        lambda a, b, c: F.scaled_dot_product_attention(a, b, c, is_causal=True), (q, k, v)
    )
    built = []
    original = tl.Tensor.tril
    monkeypatch.setattr(tl.Tensor, "tril", lambda self, *a: built.append(1) or original(self, *a))
    x = T(rng.standard_normal((1, 11, 4)))
    first = F.scaled_dot_product_attention(x, x, x, is_causal=True)
    again = F.scaled_dot_product_attention(x, x, x, is_causal=True)
    assert built == [1]
    causal = np.where(np.tril(np.ones((11, 11), bool)), 0.0, -np.inf)
    for out in (first, again):
        np.testing.assert_allclose(A(out), np_sdpa(A(x), A(x), A(x), causal), atol=1e-12)


def test_sdpa_causal_in_a_captured_step():
    """The shared causal mask does not break a captured step (two recordings must allocate
    alike: a mask first built while recording must not be old storage to the second)."""
    w = T(np.random.default_rng(7).standard_normal((4, 4)))

    def step(x):
        h = x @ w
        return F.scaled_dot_product_attention(h, h, h, is_causal=True).sum()

    captured = tl.jit.capture_step(step, warmup=0)
    x = T(np.random.default_rng(8).standard_normal((2, 13, 4)))
    for _ in range(4):
        got = captured(x)
    assert captured.state == "captured"
    np.testing.assert_allclose(got.item(), step(x).item(), rtol=1e-12)


def test_sdpa_dropout_keeps_expectation_scale():
    q = tl.zeros(1, 1, 2000, 4, dtype=tl.float64)  # uniform weights 1/4 each
    v = tl.ones(1, 1, 4, 1, dtype=tl.float64)
    tl.manual_seed(0)
    out = F.scaled_dot_product_attention(
        q, tl.zeros(1, 1, 4, 4, dtype=tl.float64), v, dropout_p=0.5
    ).numpy()
    vals = set(np.round(out.ravel() * 2, 9))  # each kept weight is 1/4 · 2 = 1/2
    assert vals <= {0.0, 1.0, 2.0, 3.0, 4.0}
    assert abs(out.mean() - 1.0) < 0.05


# --- MultiheadAttention ---------------------------------------------------------------------------
def test_mha_parameter_names_shapes_and_init():
    m = nn.MultiheadAttention(8, 2)
    sd = m.state_dict()
    assert list(sd) == ["in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"]
    assert sd["in_proj_weight"].shape == (24, 8) and sd["in_proj_bias"].shape == (24,)
    assert np.all(sd["in_proj_bias"].numpy() == 0) and np.all(sd["out_proj.bias"].numpy() == 0)
    bound = np.sqrt(6 / (8 + 24))  # xavier_uniform_ on the (3E, E) matrix
    assert np.abs(sd["in_proj_weight"].numpy()).max() <= bound
    m2 = nn.MultiheadAttention(8, 2, kdim=5, vdim=3, bias=False)
    assert sorted(m2.state_dict()) == [
        "k_proj_weight",
        "out_proj.weight",
        "q_proj_weight",
        "v_proj_weight",
    ]
    assert m2.k_proj_weight.shape == (8, 5) and m2.v_proj_weight.shape == (8, 3)
    # a state dict from another instance loads strictly
    assert m.load_state_dict(nn.MultiheadAttention(8, 2).state_dict()) is not None
    with pytest.raises(ValueError, match="divisible"):
        nn.MultiheadAttention(10, 3)


@pytest.mark.parametrize("batch_first", [False, True])
def test_mha_forward_against_numpy(batch_first):
    rng = np.random.default_rng(3)
    L, S, N, E, H = 4, 6, 3, 8, 2
    m = nn.MultiheadAttention(E, H, batch_first=batch_first).double()
    with tl.no_grad():
        m.in_proj_bias.copy_(T(rng.standard_normal(3 * E)))
        m.out_proj.bias.copy_(T(rng.standard_normal(E)))
    q, k, v = (
        rng.standard_normal((L, N, E)),
        rng.standard_normal((S, N, E)),
        rng.standard_normal((S, N, E)),
    )
    bt = (lambda a: T(a.transpose(1, 0, 2))) if batch_first else T
    # attn_mask (bool, True = blocked) and key_padding_mask (bool)
    blocked = rng.random((L, S)) > 0.7
    blocked[:, 0] = False
    pad = np.zeros((N, S), bool)
    pad[1, 4:] = True
    add = (
        np.where(blocked, -np.inf, 0.0)[None, None] + np.where(pad, -np.inf, 0.0)[:, None, None, :]
    )
    out, w = m(bt(q), bt(k), bt(v), key_padding_mask=tl.tensor(pad), attn_mask=tl.tensor(blocked))
    ref_out, ref_w = np_mha(m, q, k, v, add)
    got = A(out).transpose(1, 0, 2) if batch_first else A(out)
    np.testing.assert_allclose(got, ref_out, atol=1e-12)
    np.testing.assert_allclose(A(w), ref_w.mean(1), atol=1e-12)
    assert np.all(A(w)[1, :, 4:] == 0)
    # per-head weights, float masks, (N·H, L, S) masks
    fmask = rng.standard_normal((N * H, L, S))
    out, w = m(bt(q), bt(k), bt(v), attn_mask=T(fmask), average_attn_weights=False)
    ref_out, ref_w = np_mha(m, q, k, v, fmask.reshape(N, H, L, S))
    np.testing.assert_allclose(A(w), ref_w, atol=1e-12)
    _, none = m(bt(q), bt(k), bt(v), need_weights=False)
    assert none is None


def test_mha_kdim_vdim_unbatched_and_causal():
    rng = np.random.default_rng(4)
    m = nn.MultiheadAttention(6, 3, kdim=4, vdim=5).double()
    q, k, v = (
        rng.standard_normal((3, 1, 6)),
        rng.standard_normal((7, 1, 4)),
        rng.standard_normal((7, 1, 5)),
    )
    out, w = m(T(q[:, 0]), T(k[:, 0]), T(v[:, 0]))  # unbatched (L, E)
    ref_out, ref_w = np_mha(m, q, k, v)
    np.testing.assert_allclose(A(out), ref_out[:, 0], atol=1e-12)
    np.testing.assert_allclose(A(w), ref_w.mean(1)[0], atol=1e-12)
    sq = nn.MultiheadAttention(6, 2).double()
    x = rng.standard_normal((4, 2, 6))
    mask = nn.Transformer.generate_square_subsequent_mask(4, dtype=tl.float64)
    out, _ = sq(T(x), T(x), T(x), attn_mask=mask, is_causal=True)
    np.testing.assert_allclose(A(out), np_mha(sq, x, x, x, mask.numpy())[0], atol=1e-12)
    with pytest.raises(ValueError, match="is_causal"):
        sq(T(x), T(x), T(x), is_causal=True)


def test_mha_gradcheck():
    rng = np.random.default_rng(5)
    x = T(rng.standard_normal((3, 2, 4)), True)
    w_in, b_in, w_out, b_out = (
        T(rng.standard_normal(s), True) for s in ((12, 4), (12,), (4, 4), (4,))
    )
    pad = tl.tensor(np.array([[False, False, True], [False, False, False]]))
    blocked = tl.tensor(
        np.array([[False, True, False], [False, False, True], [False, False, False]])
    )

    def f(x, w_in, b_in, w_out, b_out):
        return F.multi_head_attention_forward(
            x,
            x,
            x,
            4,
            2,
            w_in,
            b_in,
            None,
            None,
            False,
            0.0,
            w_out,
            b_out,
            key_padding_mask=pad,
            attn_mask=blocked,
        )[0]

    assert tl.gradcheck(f, (x, w_in, b_in, w_out, b_out))
    # through the module: gradients reach every parameter
    m = nn.MultiheadAttention(4, 2, batch_first=True).double()
    xb = x.transpose(0, 1)
    m(xb, xb, xb, key_padding_mask=pad)[0].square().sum().backward()
    assert all(p.grad is not None and np.isfinite(A(p.grad)).all() for p in m.parameters())


# --- Transformer ------------------------------------------------------------------------------
def np_encoder_layer(layer, x, add_mask=None, act=lambda z: np.maximum(z, 0)):
    def sa(y):
        return np_mha(layer.self_attn, y, y, y, add_mask)[0]

    def ff(y):
        return np_linear(act(np_linear(y, layer.linear1)), layer.linear2)

    if layer.norm_first:
        x = x + sa(np_layer_norm(x, layer.norm1))
        return x + ff(np_layer_norm(x, layer.norm2))
    x = np_layer_norm(x + sa(x), layer.norm1)
    return np_layer_norm(x + ff(x), layer.norm2)


def np_decoder_layer(layer, x, mem, tgt_add=None):
    def ff(y):
        return np_linear(np.maximum(np_linear(y, layer.linear1), 0), layer.linear2)

    def sa(y):
        return np_mha(layer.self_attn, y, y, y, tgt_add)[0]

    def ca(y):
        return np_mha(layer.multihead_attn, y, mem, mem)[0]

    if layer.norm_first:
        x = x + sa(np_layer_norm(x, layer.norm1))
        x = x + ca(np_layer_norm(x, layer.norm2))
        return x + ff(np_layer_norm(x, layer.norm3))
    x = np_layer_norm(x + sa(x), layer.norm1)
    x = np_layer_norm(x + ca(x), layer.norm2)
    return np_layer_norm(x + ff(x), layer.norm3)


def _randomise(module, rng):
    with tl.no_grad():
        for p in module.parameters():
            p.copy_(T(rng.standard_normal(p.shape) * 0.3))


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_layer_against_numpy(norm_first):
    rng = np.random.default_rng(6)
    layer = (
        nn.TransformerEncoderLayer(8, 2, dim_feedforward=12, dropout=0.1, norm_first=norm_first)
        .double()
        .eval()
    )
    _randomise(layer, rng)
    x = rng.standard_normal((5, 3, 8))
    mask = nn.Transformer.generate_square_subsequent_mask(5, dtype=tl.float64)
    out = layer(T(x), src_mask=mask)
    np.testing.assert_allclose(A(out), np_encoder_layer(layer, x, mask.numpy()), atol=1e-10)
    gelu = nn.TransformerEncoderLayer(8, 2, 12, 0.0, activation="gelu", batch_first=True).double()
    _randomise(gelu, rng)
    from math import erf

    np_gelu = np.vectorize(lambda z: 0.5 * z * (1 + erf(z / np.sqrt(2))))
    out = gelu(T(x.transpose(1, 0, 2)))
    np.testing.assert_allclose(
        A(out).transpose(1, 0, 2), np_encoder_layer(gelu, x, act=np_gelu), atol=1e-10
    )
    assert [n for n, _ in layer.named_children()] == [
        "self_attn",
        "linear1",
        "dropout",
        "linear2",
        "norm1",
        "norm2",
        "dropout1",
        "dropout2",
    ]


def test_encoder_decoder_transformer_against_numpy():
    rng = np.random.default_rng(7)
    model = nn.Transformer(
        d_model=8,
        nhead=2,
        num_encoder_layers=2,
        num_decoder_layers=2,
        dim_feedforward=12,
        dropout=0.0,
    ).double()
    _randomise(model, rng)
    src, tgt = rng.standard_normal((6, 2, 8)), rng.standard_normal((4, 2, 8))
    tmask = model.generate_square_subsequent_mask(4, dtype=tl.float64)
    out = model(T(src), T(tgt), tgt_mask=tmask)
    mem = src
    for layer in model.encoder.layers:
        mem = np_encoder_layer(layer, mem)
    mem = np_layer_norm(mem, model.encoder.norm)
    x = tgt
    for layer in model.decoder.layers:
        x = np_decoder_layer(layer, x, mem, tmask.numpy())
    np.testing.assert_allclose(A(out), np_layer_norm(x, model.decoder.norm), atol=1e-10)
    names = list(model.state_dict())
    assert (
        "decoder.layers.1.multihead_attn.in_proj_weight" in names and "encoder.norm.weight" in names
    )
    assert "decoder.layers.0.norm3.bias" in names
    with pytest.raises(tl.ShapeError, match="batch number"):
        model(T(src), T(tgt[:, :1]))


def test_decoder_layer_norm_first_key_padding_and_backward():
    rng = np.random.default_rng(8)
    layer = nn.TransformerDecoderLayer(8, 2, 12, dropout=0.0, norm_first=True).double()
    _randomise(layer, rng)
    x, mem = rng.standard_normal((3, 2, 8)), rng.standard_normal((5, 2, 8))
    np.testing.assert_allclose(A(layer(T(x), T(mem))), np_decoder_layer(layer, x, mem), atol=1e-10)
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 12, 0.0), 2).double()
    pad = tl.tensor(np.array([[False] * 5, [False, False, False, True, True]]))
    xt = T(rng.standard_normal((5, 2, 8)), True)
    out = enc(xt, src_key_padding_mask=pad)
    # a padded key position has no effect on the outputs
    x2 = xt.detach().numpy().copy()
    x2[3:, 1] += 10.0
    out2 = enc(T(x2), src_key_padding_mask=pad)
    np.testing.assert_allclose(A(out2)[:3, 1], out.detach().numpy()[:3, 1], atol=1e-10)
    out.sum().backward()
    assert all(p.grad is not None for p in enc.parameters())
    assert enc.layers[0] is not enc.layers[1]
    assert tl.gradcheck(
        lambda a: enc(a, src_key_padding_mask=pad), (T(rng.standard_normal((5, 2, 8)), True),)
    )


def test_generate_square_subsequent_mask_and_flatten_parameters():
    m = nn.Transformer.generate_square_subsequent_mask(4).numpy()
    np.testing.assert_array_equal(m, np.triu(np.full((4, 4), -np.inf), 1))
    for cls in (nn.LSTM, nn.GRU, nn.RNN):
        assert cls(3, 4).flatten_parameters() is None


@pytest.mark.parametrize("nonlinearity", ["tanh", "relu"])
def test_rnn_against_numpy(nonlinearity):
    rng = np.random.default_rng(9)
    rnn = nn.RNN(3, 4, num_layers=2, nonlinearity=nonlinearity, batch_first=True).double()
    x = rng.standard_normal((2, 5, 3))
    out, hn = rnn(T(x))
    act = np.tanh if nonlinearity == "tanh" else (lambda z: np.maximum(z, 0))
    layer_in, finals = x, []
    for layer in range(2):
        w_ih, w_hh = A(getattr(rnn, f"weight_ih_l{layer}")), A(getattr(rnn, f"weight_hh_l{layer}"))
        b = A(getattr(rnn, f"bias_ih_l{layer}")) + A(getattr(rnn, f"bias_hh_l{layer}"))
        h, seq = np.zeros((2, 4)), []
        for t in range(5):
            h = act(layer_in[:, t] @ w_ih.T + h @ w_hh.T + b)
            seq.append(h)
        layer_in = np.stack(seq, 1)
        finals.append(h)
    np.testing.assert_allclose(A(out), layer_in, atol=1e-12)
    np.testing.assert_allclose(A(hn), np.stack(finals), atol=1e-12)
    cell = nn.RNNCell(3, 4, nonlinearity=nonlinearity).double()
    h = cell(T(x[:, 0]))
    ref = act(x[:, 0] @ A(cell.weight_ih).T + A(cell.bias_ih) + A(cell.bias_hh))
    np.testing.assert_allclose(A(h), ref, atol=1e-12)
    with pytest.raises(ValueError, match="nonlinearity"):
        nn.RNN(3, 4, nonlinearity="sigmoid")


@settings(deadline=None, max_examples=30)
@given(
    lead=st.lists(st.integers(1, 3), max_size=2),
    L=st.integers(1, 5),
    S=st.integers(1, 5),
    E=st.integers(1, 4),
    Ev=st.integers(1, 3),
    causal=st.booleans(),
)
def test_sdpa_shapes_property(lead, L, S, E, Ev, causal):
    rng = np.random.default_rng(len(lead) * 1000 + L * 100 + S * 10 + E)
    q, k = rng.standard_normal((*lead, L, E)), rng.standard_normal((*lead, S, E))
    v = rng.standard_normal((*lead, S, Ev))
    mask = np.where(np.tril(np.ones((L, S), bool)), 0.0, -np.inf) if causal else None
    got = F.scaled_dot_product_attention(T(q), T(k), T(v), is_causal=causal)
    assert got.shape == (*lead, L, Ev)
    np.testing.assert_allclose(A(got), np_sdpa(q, k, v, mask), atol=1e-12)


def test_decoder_layer_gradcheck():
    rng = np.random.default_rng(10)
    layer = nn.TransformerDecoderLayer(4, 2, 6, dropout=0.0).double()
    tgt_mask = nn.Transformer.generate_square_subsequent_mask(3, dtype=tl.float64)
    args = (T(rng.standard_normal((3, 1, 4)), True), T(rng.standard_normal((2, 1, 4)), True))
    assert tl.gradcheck(lambda t, m: layer(t, m, tgt_mask=tgt_mask), args)
