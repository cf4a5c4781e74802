"""Attention: ``scaled_dot_product_attention`` and ``MultiheadAttention``, PyTorch's semantics.

Scaled dot-product attention of queries ``Q: (..., L, E)`` over keys ``K: (..., S, E)`` and
values ``V: (..., S, Ev)``::

    A = softmax(Q Kᵀ · scale + M)        scale = 1/sqrt(E) unless given
    out = A V                            (..., L, Ev)

where ``M`` is the additive mask: ``0`` where attending is allowed and ``-inf`` where it is not.
The two mask conventions differ between the two entry points, exactly as in PyTorch:

* ``F.scaled_dot_product_attention``: a bool ``attn_mask`` is ``True`` where a query *may*
  attend (keep);
* ``MultiheadAttention``: a bool ``attn_mask`` / ``key_padding_mask`` is ``True`` where a query
  may *not* attend (masked out).

A float mask is added to the scores in both. ``MultiheadAttention`` projects its inputs into
``num_heads`` heads of ``head_dim = embed_dim / num_heads`` features, attends in each head, and
projects the concatenated heads back with ``out_proj``; its parameter names
(``in_proj_weight``, ``in_proj_bias``, ``out_proj.weight``, ``out_proj.bias``, or
``q_proj_weight``/``k_proj_weight``/``v_proj_weight`` when ``kdim``/``vdim`` differ from
``embed_dim``) are PyTorch's, so its state dicts load in both directions.
"""

import math

import torchlight as tl
from torchlight.tensor.dispatch import constant_cached

from . import functional as F
from . import init
from .linear import Linear
from .module import Module
from .parameter import Parameter

__all__ = ["scaled_dot_product_attention", "multi_head_attention_forward", "MultiheadAttention"]


def _as_additive(mask, dtype, keep_value):
    """A float mask to add to the scores: ``-inf`` where a bool mask equals ``not keep_value``."""
    if mask is None:
        return None
    if mask.dtype is tl.bool:
        blocked = mask.logical_not() if keep_value else mask
        return tl.zeros(*mask.shape, dtype=dtype, device=mask.device).masked_fill(
            blocked, -math.inf
        )
    if not mask.dtype.is_floating_point:
        raise tl.DTypeError(f"attention masks must be bool or floating point, got {mask.dtype}")
    return mask.to(dtype)


def scaled_dot_product_attention(
    query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False
):
    """``softmax(Q Kᵀ · scale + mask) V`` over the last two dims.

    Shapes: ``query (..., Hq, L, E)``, ``key (..., H, S, E)``, ``value (..., H, S, Ev)`` →
    ``(..., Hq, L, Ev)``; the leading dims broadcast. ``attn_mask`` broadcasts to
    ``(..., L, S)``: bool ``True`` = this query may attend to this key, float = added to the
    scores. ``is_causal=True`` uses the lower-triangular mask ``j <= i`` instead (top-left
    aligned when ``L != S``) and cannot be combined with ``attn_mask``. ``scale`` defaults to
    ``1/sqrt(E)``. ``dropout_p`` zeroes attention weights (scaled by ``1/(1-p)``) whenever it is
    non-zero: pass ``0.0`` at evaluation. ``enable_gqa=True`` lets ``Hq`` be a multiple of ``H``
    (grouped-query attention: each key/value head serves ``Hq/H`` query heads).

    >>> q = tl.ones(1, 2, 3, 4); k = tl.ones(1, 2, 5, 4); v = tl.arange(5.0).reshape(1, 1, 5, 1).expand(1, 2, 5, 1)
    >>> F.scaled_dot_product_attention(q, k, v).shape
    (1, 2, 3, 1)
    >>> round(F.scaled_dot_product_attention(q, k, v, is_causal=True)[0, 0, 1, 0].item(), 4)
    0.5
    """
    L, S, E = query.shape[-2], key.shape[-2], query.shape[-1]
    if key.shape[-1] != E:
        raise tl.ShapeError(
            f"scaled_dot_product_attention: query has {E} features, key {key.shape[-1]}"
        )
    if value.shape[-2] != S:
        raise tl.ShapeError(
            f"scaled_dot_product_attention: key has {S} positions, value {value.shape[-2]}"
        )
    if is_causal and attn_mask is not None:
        raise ValueError(
            "scaled_dot_product_attention: pass either attn_mask or is_causal=True, not both"
        )
    if enable_gqa and query.ndim >= 3 and key.shape[-3] != query.shape[-3]:
        key, value = _repeat_heads(key, query.shape[-3]), _repeat_heads(value, query.shape[-3])
    scale = 1.0 / math.sqrt(E) if scale is None else scale
    scores = (query @ key.transpose(-2, -1)) * scale
    if is_causal:
        scores = scores + _causal_bias(L, S, scores)
    elif attn_mask is not None:
        scores = scores + _as_additive(attn_mask, scores.dtype, keep_value=True)
    weights = scores.softmax(-1)
    if dropout_p > 0.0:
        weights = F.dropout(weights, dropout_p, True)
    return weights @ value


def _causal_bias(L, S, like):
    """The additive causal mask ``(L, S)`` in ``like``'s dtype and device: 0 where key ``j <= i``
    for query ``i``, ``-inf`` above the diagonal (PyTorch's reference adds it the same way).
    Built once per size, dtype and device and then shared: four ops fewer per call."""

    def build():
        keep = tl.ones(L, S, dtype=tl.bool, device=like.device).tril()
        return tl.zeros(L, S, dtype=like.dtype, device=like.device).masked_fill(
            keep.logical_not(), -math.inf
        )

    return constant_cached(("causal_bias", L, S), like.dtype, like.backend, like, build)


def _repeat_heads(t, heads):
    h = t.shape[-3]
    if heads % h:
        raise tl.ShapeError(
            f"scaled_dot_product_attention: {heads} query heads are not a multiple of {h} key heads"
        )
    lead, rest = t.shape[:-3], t.shape[-2:]
    return t.unsqueeze(-3).expand(*lead, h, heads // h, *rest).reshape(*lead, heads, *rest)


def multi_head_attention_forward(
    query,
    key,
    value,
    embed_dim_to_check,
    num_heads,
    in_proj_weight,
    in_proj_bias,
    bias_k,
    bias_v,
    add_zero_attn,
    dropout_p,
    out_proj_weight,
    out_proj_bias,
    training=True,
    key_padding_mask=None,
    need_weights=True,
    attn_mask=None,
    use_separate_proj_weight=False,
    q_proj_weight=None,
    k_proj_weight=None,
    v_proj_weight=None,
    static_k=None,
    static_v=None,
    average_attn_weights=True,
    is_causal=False,
):
    """PyTorch's ``F.multi_head_attention_forward``: the maths of :class:`MultiheadAttention` on
    sequence-first inputs.

    ``query (L, N, E)``, ``key (S, N, Ek)``, ``value (S, N, Ev)`` → ``(out (L, N, E), weights)``
    where ``weights`` is ``(N, L, S)`` averaged over heads, ``(N, H, L, S)`` with
    ``average_attn_weights=False``, or ``None`` without ``need_weights``. Bool masks are ``True``
    where attention is *not* allowed; ``attn_mask`` is ``(L, S)`` or ``(N·H, L, S)``,
    ``key_padding_mask`` is ``(N, S)``. With ``use_separate_proj_weight`` the projections are
    ``q/k/v_proj_weight`` instead of ``in_proj_weight``. ``bias_k``/``bias_v``/``static_k``/
    ``static_v`` must be ``None`` and ``add_zero_attn`` False (those options are not supported).

    >>> x = tl.randn(3, 2, 4)
    >>> out, w = F.multi_head_attention_forward(x, x, x, 4, 2, tl.randn(12, 4), tl.zeros(12), None, None, False,
    ...                                         0.0, tl.randn(4, 4), tl.zeros(4))
    >>> out.shape, w.shape
    ((3, 2, 4), (2, 3, 3))
    """
    if (
        bias_k is not None
        or bias_v is not None
        or add_zero_attn
        or static_k is not None
        or static_v is not None
    ):
        raise NotImplementedError(
            "multi_head_attention_forward: bias_k/bias_v, add_zero_attn and static_k/static_v "
            "are not supported"
        )
    if query.shape[-1] != embed_dim_to_check:
        raise tl.ShapeError(
            f"was expecting embedding dimension of {embed_dim_to_check}, but got {query.shape[-1]}"
        )
    if is_causal and attn_mask is None:
        raise ValueError(
            "multi_head_attention_forward: is_causal is a hint; pass the causal attn_mask as well"
        )
    if use_separate_proj_weight:
        in_proj_weight = None
    return _mha_forward(
        query,
        key,
        value,
        num_heads,
        in_proj_weight,
        in_proj_bias,
        out_proj_weight,
        out_proj_bias,
        dropout_p,
        training,
        key_padding_mask,
        need_weights,
        attn_mask,
        average_attn_weights,
        q_proj_weight,
        k_proj_weight,
        v_proj_weight,
    )


def _mha_forward(
    query,
    key,
    value,
    num_heads,
    in_proj_weight,
    in_proj_bias,
    out_proj_weight,
    out_proj_bias,
    dropout_p=0.0,
    training=True,
    key_padding_mask=None,
    need_weights=True,
    attn_mask=None,
    average_attn_weights=True,
    q_proj_weight=None,
    k_proj_weight=None,
    v_proj_weight=None,
):
    # shapes and mask conventions: see multi_head_attention_forward
    L, N, E = query.shape
    S = key.shape[0]
    if E % num_heads:
        raise ValueError(f"embed_dim ({E}) must be divisible by num_heads ({num_heads})")
    hd = E // num_heads
    if in_proj_weight is not None:
        wq, wk, wv = in_proj_weight.chunk(3, 0)
    else:
        wq, wk, wv = q_proj_weight, k_proj_weight, v_proj_weight
    bq, bk, bv = (None, None, None) if in_proj_bias is None else in_proj_bias.chunk(3, 0)
    q, k, v = F.linear(query, wq, bq), F.linear(key, wk, bk), F.linear(value, wv, bv)

    def heads(t, length):  # (T, N, E) -> (N, H, T, hd)
        return t.reshape(length, N, num_heads, hd).permute(1, 2, 0, 3)

    q, k, v = heads(q, L), heads(k, S), heads(v, S)
    scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))  # (N, H, L, S)
    mask = _as_additive(attn_mask, scores.dtype, keep_value=False)
    if mask is not None:
        if mask.ndim == 3:
            if tuple(mask.shape) != (N * num_heads, L, S):
                raise tl.ShapeError(
                    f"attn_mask should have shape {(N * num_heads, L, S)}, got {mask.shape}"
                )
            mask = mask.reshape(N, num_heads, L, S)
        elif tuple(mask.shape) != (L, S):
            raise tl.ShapeError(f"attn_mask should have shape {(L, S)}, got {mask.shape}")
        scores = scores + mask
    if key_padding_mask is not None:
        if tuple(key_padding_mask.shape) != (N, S):
            raise tl.ShapeError(
                f"key_padding_mask should have shape {(N, S)}, got {key_padding_mask.shape}"
            )
        pad = _as_additive(key_padding_mask, scores.dtype, keep_value=False)
        scores = scores + pad.reshape(N, 1, 1, S)
    weights = scores.softmax(-1)
    if training and dropout_p > 0.0:
        weights = F.dropout(weights, dropout_p, True)
    out = (weights @ v).permute(2, 0, 1, 3).reshape(L, N, E)
    out = F.linear(out, out_proj_weight, out_proj_bias)
    if not need_weights:
        return out, None
    return out, (weights.mean(1) if average_attn_weights else weights)


class MultiheadAttention(Module):
    """``MultiheadAttention(embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False,
    add_zero_attn=False, kdim=None, vdim=None, batch_first=False)``.

    ``forward(query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
    average_attn_weights=True, is_causal=False) -> (attn_output, attn_weights)``.

    Inputs are ``(L, N, E)`` / ``(S, N, kdim)`` / ``(S, N, vdim)`` (``(N, L, E)`` ... with
    ``batch_first``; unbatched ``(L, E)`` also works). Each head ``h`` computes
    ``softmax(Q_h K_hᵀ / sqrt(head_dim) + M) V_h`` with ``Q = query W_qᵀ + b_q`` (etc.), and
    ``attn_output = concat_h(...) W_oᵀ + b_o``. Bool masks are ``True`` where attention is *not*
    allowed; float masks are added. ``is_causal`` is a hint that ``attn_mask`` is the causal
    mask (it must still be given, as in PyTorch). Dropout on the attention weights applies in
    training mode only. Initialisation as PyTorch: Xavier-uniform projections, zero biases.

    >>> mha = nn.MultiheadAttention(8, 2, batch_first=True)
    >>> x = tl.randn(3, 5, 8)
    >>> out, w = mha(x, x, x)
    >>> out.shape, w.shape
    ((3, 5, 8), (3, 5, 5))
    >>> sorted(k for k in mha.state_dict())
    ['in_proj_bias', 'in_proj_weight', 'out_proj.bias', 'out_proj.weight']
    """

    def __init__(
        self,
        embed_dim,
        num_heads,
        dropout=0.0,
        bias=True,
        add_bias_kv=False,
        add_zero_attn=False,
        kdim=None,
        vdim=None,
        batch_first=False,
        device=None,
        dtype=None,
    ):
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(
                f"embed_dim and num_heads must be greater than 0, got {embed_dim} and {num_heads}"
            )
        if embed_dim % num_heads:
            raise ValueError(
                f"embed_dim ({embed_dim}) must be divisible by num_heads ({num_heads})"
            )
        if add_bias_kv or add_zero_attn:
            raise NotImplementedError(
                "MultiheadAttention: add_bias_kv and add_zero_attn are not supported"
            )
        self.embed_dim, self.num_heads, self.dropout = embed_dim, num_heads, dropout
        self.kdim = embed_dim if kdim is None else kdim
        self.vdim = embed_dim if vdim is None else vdim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.head_dim = embed_dim // num_heads
        self.batch_first = batch_first

        def empty(*shape):
            return Parameter(tl.empty(*shape, dtype=dtype, device=device))

        if self._qkv_same_embed_dim:
            self.in_proj_weight = empty(3 * embed_dim, embed_dim)
            for name in ("q_proj_weight", "k_proj_weight", "v_proj_weight"):
                self.register_parameter(name, None)
        else:
            self.q_proj_weight = empty(embed_dim, embed_dim)
            self.k_proj_weight = empty(embed_dim, self.kdim)
            self.v_proj_weight = empty(embed_dim, self.vdim)
            self.register_parameter("in_proj_weight", None)
        if bias:
            self.in_proj_bias = empty(3 * embed_dim)
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = Linear(embed_dim, embed_dim, bias=bias, device=device, dtype=dtype)
        self._reset_parameters()

    def _reset_parameters(self):
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            for w in (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight):
                init.xavier_uniform_(w)
        if self.in_proj_bias is not None:
            init.zeros_(self.in_proj_bias)
            init.zeros_(self.out_proj.bias)

    def forward(
        self,
        query,
        key,
        value,
        key_padding_mask=None,
        need_weights=True,
        attn_mask=None,
        average_attn_weights=True,
        is_causal=False,
    ):
        if is_causal and attn_mask is None:
            raise ValueError(
                "MultiheadAttention: is_causal is a hint that attn_mask is causal; pass attn_mask "
                "as well (e.g. nn.Transformer.generate_square_subsequent_mask(L))"
            )
        batched = query.ndim == 3
        if not batched:
            if query.ndim != 2:
                raise tl.ShapeError(
                    f"MultiheadAttention: query must be 2-D or 3-D, got shape {query.shape}"
                )
            query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
            if key_padding_mask is not None:
                key_padding_mask = key_padding_mask.unsqueeze(0)
        elif self.batch_first:
            query, key, value = query.transpose(0, 1), key.transpose(0, 1), value.transpose(0, 1)
        if query.shape[-1] != self.embed_dim:
            raise tl.ShapeError(
                f"MultiheadAttention: expected query with {self.embed_dim} features, got {query.shape[-1]}"
            )
        if key.shape[:2] != value.shape[:2]:
            raise tl.ShapeError(
                f"MultiheadAttention: key {key.shape} and value {value.shape} must share sequence and batch dims"
            )
        out, weights = _mha_forward(
            query,
            key,
            value,
            self.num_heads,
            self.in_proj_weight,
            self.in_proj_bias,
            self.out_proj.weight,
            self.out_proj.bias,
            self.dropout,
            self.training,
            key_padding_mask,
            need_weights,
            attn_mask,
            average_attn_weights,
            self.q_proj_weight,
            self.k_proj_weight,
            self.v_proj_weight,
        )
        if not batched:
            out = out.squeeze(1)
            weights = None if weights is None else weights.squeeze(0)
        elif self.batch_first:
            out = out.transpose(0, 1)
        return out, weights

    def extra_repr(self):
        s = f"embed_dim={self.embed_dim}, num_heads={self.num_heads}"
        if self.dropout:
            s += f", dropout={self.dropout}"
        return s + (", batch_first=True" if self.batch_first else "")
