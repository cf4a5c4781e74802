"""The Transformer of "Attention Is All You Need", as PyTorch's ``nn.Transformer*`` modules.

An encoder layer is self-attention followed by a position-wise feed-forward block
``linear2(dropout(activation(linear1(x))))``, each wrapped in a residual connection and a
LayerNorm. Post-norm (the default, ``norm_first=False``)::

    x = norm1(x + dropout1(self_attn(x, x, x)))
    x = norm2(x + dropout2(ff(x)))

pre-norm (``norm_first=True``)::

    x = x + dropout1(self_attn(norm1(x), ...))
    x = x + dropout2(ff(norm2(x)))

A decoder layer adds cross-attention over the encoder output (``memory``) between the two, with
``norm2``/``dropout2`` and the feed-forward block moving to ``norm3``/``dropout3``. Submodule
names (``self_attn``, ``multihead_attn``, ``linear1``, ``dropout``, ``linear2``, ``norm1``...,
``layers.0...``, ``encoder.norm``) are PyTorch's, so state dicts map one to one.
"""

import copy
import math

import torchlight as tl

from . import functional as F
from .attention import MultiheadAttention
from .container import ModuleList
from .linear import Dropout, Linear
from .module import Module
from .normalization import LayerNorm

__all__ = [
    "TransformerEncoderLayer",
    "TransformerEncoder",
    "TransformerDecoderLayer",
    "TransformerDecoder",
    "Transformer",
]

_ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu}


def _activation(activation):
    if isinstance(activation, str):
        if activation not in _ACTIVATIONS:
            raise ValueError(
                f"activation should be 'relu' or 'gelu' (or a callable), not {activation!r}"
            )
        return _ACTIVATIONS[activation]
    if not callable(activation):
        raise TypeError(
            f"activation must be 'relu', 'gelu' or a callable, got {type(activation).__name__}"
        )
    return activation


def _clones(module, n):
    return ModuleList([copy.deepcopy(module) for _ in range(n)])


class _Layer(Module):
    """What the encoder and decoder layers share: self-attention, the feed-forward block, the
    norms and dropouts, and the residual wiring of each sublayer (pre- or post-norm)."""

    _sublayers: int  # 2 for the encoder layer (self-attention, feed-forward), 3 for the decoder

    def __init__(
        self,
        d_model,
        nhead,
        dim_feedforward=2048,
        dropout=0.1,
        activation="relu",
        layer_norm_eps=1e-5,
        batch_first=False,
        norm_first=False,
        bias=True,
        device=None,
        dtype=None,
    ):
        super().__init__()
        n_sublayers = self._sublayers
        kw = dict(device=device, dtype=dtype)
        attn_kw = dict(dropout=dropout, bias=bias, batch_first=batch_first, **kw)
        # registered in PyTorch's order, so parameters() lists them as PyTorch does
        self.self_attn = MultiheadAttention(d_model, nhead, **attn_kw)
        if n_sublayers == 3:  # the decoder's cross-attention
            self.multihead_attn = MultiheadAttention(d_model, nhead, **attn_kw)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
        self.norm_first = norm_first
        for i in range(1, n_sublayers + 1):
            setattr(self, f"norm{i}", LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw))
        for i in range(1, n_sublayers + 1):
            setattr(self, f"dropout{i}", Dropout(dropout))
        self.activation = _activation(activation)

    def _residual(self, x, norm, block):
        """One sublayer with its residual connection: ``x + block(norm(x))`` with ``norm_first``,
        else ``norm(x + block(x))``."""
        if self.norm_first:
            return x + block(norm(x))
        return norm(x + block(x))

    @staticmethod
    def _attend(attn, drop, x, mem, attn_mask, key_padding_mask, is_causal):
        out = attn(
            x,
            mem,
            mem,
            attn_mask=attn_mask,
            key_padding_mask=key_padding_mask,
            need_weights=False,
            is_causal=is_causal,
        )[0]
        return drop(out)

    def _ff_block(self, x, drop):
        return drop(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class TransformerEncoderLayer(_Layer):
    """``TransformerEncoderLayer(d_model, nhead, dim_feedforward=2048, dropout=0.1, activation='relu',
    layer_norm_eps=1e-5, batch_first=False, norm_first=False, bias=True)``.

    ``forward(src, src_mask=None, src_key_padding_mask=None, is_causal=False)``: ``src`` is
    ``(S, N, E)`` (``(N, S, E)`` with ``batch_first``, or unbatched ``(S, E)``), output has the
    same shape. Masks follow :class:`MultiheadAttention` (bool ``True`` = not allowed).

    >>> layer = nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16, batch_first=True)
    >>> layer(tl.randn(3, 5, 8)).shape
    (3, 5, 8)
    """

    _sublayers = 2

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal=False):
        def self_attention(x):
            return self._attend(
                self.self_attn, self.dropout1, x, x, src_mask, src_key_padding_mask, is_causal
            )

        x = self._residual(src, self.norm1, self_attention)
        return self._residual(x, self.norm2, lambda x: self._ff_block(x, self.dropout2))


class TransformerDecoderLayer(_Layer):
    """``TransformerDecoderLayer(d_model, nhead, dim_feedforward=2048, dropout=0.1, activation='relu',
    layer_norm_eps=1e-5, batch_first=False, norm_first=False, bias=True)``.

    ``forward(tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
    memory_key_padding_mask=None, tgt_is_causal=False, memory_is_causal=False)``: self-attention
    over ``tgt (T, N, E)``, then cross-attention from ``tgt`` to ``memory (S, N, E)``, then the
    feed-forward block; the output is shaped like ``tgt``.

    >>> layer = nn.TransformerDecoderLayer(d_model=8, nhead=2, dim_feedforward=16)
    >>> layer(tl.randn(4, 2, 8), tl.randn(6, 2, 8)).shape
    (4, 2, 8)
    """

    _sublayers = 3

    def forward(
        self,
        tgt,
        memory,
        tgt_mask=None,
        memory_mask=None,
        tgt_key_padding_mask=None,
        memory_key_padding_mask=None,
        tgt_is_causal=False,
        memory_is_causal=False,
    ):
        def self_attention(x):
            return self._attend(
                self.self_attn, self.dropout1, x, x, tgt_mask, tgt_key_padding_mask, tgt_is_causal
            )

        def cross_attention(x):
            return self._attend(
                self.multihead_attn,
                self.dropout2,
                x,
                memory,
                memory_mask,
                memory_key_padding_mask,
                memory_is_causal,
            )

        x = self._residual(tgt, self.norm1, self_attention)
        x = self._residual(x, self.norm2, cross_attention)
        return self._residual(x, self.norm3, lambda x: self._ff_block(x, self.dropout3))


class TransformerEncoder(Module):
    """``TransformerEncoder(encoder_layer, num_layers, norm=None)``: ``num_layers`` deep copies of
    ``encoder_layer`` (as ``layers.0``, ``layers.1``, ...) applied in turn, then ``norm`` if given.

    ``forward(src, mask=None, src_key_padding_mask=None, is_causal=None)``.

    >>> enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16), num_layers=2)
    >>> enc(tl.randn(5, 3, 8)).shape
    (5, 3, 8)
    """

    def __init__(
        self, encoder_layer, num_layers, norm=None, enable_nested_tensor=True, mask_check=True
    ):
        super().__init__()
        self.layers = _clones(encoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=None):
        x = src
        for layer in self.layers:
            x = layer(
                x,
                src_mask=mask,
                src_key_padding_mask=src_key_padding_mask,
                is_causal=bool(is_causal),
            )
        return x if self.norm is None else self.norm(x)


class TransformerDecoder(Module):
    """``TransformerDecoder(decoder_layer, num_layers, norm=None)``: ``num_layers`` deep copies of
    ``decoder_layer`` applied in turn (each attending to the same ``memory``), then ``norm``.

    ``forward(tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
    memory_key_padding_mask=None, tgt_is_causal=None, memory_is_causal=False)``.

    >>> dec = nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2, 16), num_layers=2)
    >>> dec(tl.randn(4, 3, 8), tl.randn(6, 3, 8)).shape
    (4, 3, 8)
    """

    def __init__(self, decoder_layer, num_layers, norm=None):
        super().__init__()
        self.layers = _clones(decoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm

    def forward(
        self,
        tgt,
        memory,
        tgt_mask=None,
        memory_mask=None,
        tgt_key_padding_mask=None,
        memory_key_padding_mask=None,
        tgt_is_causal=None,
        memory_is_causal=False,
    ):
        x = tgt
        for layer in self.layers:
            x = layer(
                x,
                memory,
                tgt_mask=tgt_mask,
                memory_mask=memory_mask,
                tgt_key_padding_mask=tgt_key_padding_mask,
                memory_key_padding_mask=memory_key_padding_mask,
                tgt_is_causal=bool(tgt_is_causal),
                memory_is_causal=memory_is_causal,
            )
        return x if self.norm is None else self.norm(x)


class Transformer(Module):
    """``Transformer(d_model=512, nhead=8, num_encoder_layers=6, num_decoder_layers=6,
    dim_feedforward=2048, dropout=0.1, activation='relu', custom_encoder=None,
    custom_decoder=None, layer_norm_eps=1e-5, batch_first=False, norm_first=False, bias=True)``.

    ``forward(src, tgt, src_mask=None, tgt_mask=None, memory_mask=None, src_key_padding_mask=None,
    tgt_key_padding_mask=None, memory_key_padding_mask=None, src_is_causal=None,
    tgt_is_causal=None, memory_is_causal=False)``: ``memory = encoder(src)``, then
    ``decoder(tgt, memory)``. ``src (S, N, E)``, ``tgt (T, N, E)`` → ``(T, N, E)`` (batch first
    with ``batch_first``). Every parameter with more than one dim is Xavier-uniform initialised,
    as in PyTorch. The encoder and decoder end with a LayerNorm (``encoder.norm``, ``decoder.norm``).

    >>> model = nn.Transformer(d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=16)
    >>> model(tl.randn(6, 2, 8), tl.randn(4, 2, 8), tgt_mask=model.generate_square_subsequent_mask(4)).shape
    (4, 2, 8)
    """

    def __init__(
        self,
        d_model=512,
        nhead=8,
        num_encoder_layers=6,
        num_decoder_layers=6,
        dim_feedforward=2048,
        dropout=0.1,
        activation="relu",
        custom_encoder=None,
        custom_decoder=None,
        layer_norm_eps=1e-5,
        batch_first=False,
        norm_first=False,
        bias=True,
        device=None,
        dtype=None,
    ):
        super().__init__()
        kw = dict(
            dim_feedforward=dim_feedforward,
            dropout=dropout,
            activation=activation,
            layer_norm_eps=layer_norm_eps,
            batch_first=batch_first,
            norm_first=norm_first,
            bias=bias,
            device=device,
            dtype=dtype,
        )
        norm_kw = dict(eps=layer_norm_eps, bias=bias, device=device, dtype=dtype)
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            self.encoder = TransformerEncoder(
                TransformerEncoderLayer(d_model, nhead, **kw),
                num_encoder_layers,
                LayerNorm(d_model, **norm_kw),
            )
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            self.decoder = TransformerDecoder(
                TransformerDecoderLayer(d_model, nhead, **kw),
                num_decoder_layers,
                LayerNorm(d_model, **norm_kw),
            )
        self.d_model, self.nhead, self.batch_first = d_model, nhead, batch_first
        self._reset_parameters()

    def _reset_parameters(self):
        from .init import xavier_uniform_

        for p in self.parameters():
            if p.ndim > 1:
                xavier_uniform_(p)

    def forward(
        self,
        src,
        tgt,
        src_mask=None,
        tgt_mask=None,
        memory_mask=None,
        src_key_padding_mask=None,
        tgt_key_padding_mask=None,
        memory_key_padding_mask=None,
        src_is_causal=None,
        tgt_is_causal=None,
        memory_is_causal=False,
    ):
        batch_dim = 0 if self.batch_first else 1
        if src.ndim == 3 and tgt.ndim == 3 and src.shape[batch_dim] != tgt.shape[batch_dim]:
            raise tl.ShapeError(
                f"the batch number of src and tgt must be equal, got {src.shape} and {tgt.shape}"
            )
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise tl.ShapeError(
                f"the feature number of src and tgt must be equal to d_model ({self.d_model}), "
                f"got {src.shape[-1]} and {tgt.shape[-1]}"
            )
        memory = self.encoder(
            src, mask=src_mask, src_key_padding_mask=src_key_padding_mask, is_causal=src_is_causal
        )
        return self.decoder(
            tgt,
            memory,
            tgt_mask=tgt_mask,
            memory_mask=memory_mask,
            tgt_key_padding_mask=tgt_key_padding_mask,
            memory_key_padding_mask=memory_key_padding_mask,
            tgt_is_causal=tgt_is_causal,
            memory_is_causal=memory_is_causal,
        )

    @staticmethod
    def generate_square_subsequent_mask(sz, device=None, dtype=None):
        """The ``(sz, sz)`` float causal mask: ``0`` on and below the diagonal, ``-inf`` above
        (position ``i`` may attend to positions ``j <= i`` only).

        >>> nn.Transformer.generate_square_subsequent_mask(3).tolist()
        [[0.0, -inf, -inf], [0.0, 0.0, -inf], [0.0, 0.0, 0.0]]
        """
        dtype = tl.float32 if dtype is None else dtype
        return tl.full((sz, sz), -math.inf, dtype=dtype, device=device).triu(1)
