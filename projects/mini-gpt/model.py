"""A decoder-only transformer (GPT) written from Q, K and V with torchlight.

Everything the model does is spelled out here: causal multi-head self-attention is a reshape, a
transpose, two batched matmuls, a ``masked_fill(-inf)`` and a softmax; there is no attention module
underneath. The blocks are pre-LayerNorm (``x + attn(ln(x))``, ``x + mlp(ln(x))``), the MLP is
``Linear -> GELU -> Linear`` with a 4x hidden width, positions are learned embeddings, and the output
projection can share its weight with the token embedding ("weight tying").

Shapes: ``B`` batch, ``T`` time (tokens), ``C`` channels (``n_embd``), ``H`` heads, ``D = C / H``.

Generation (:func:`generate`) can use a key/value cache: every layer keeps the keys and values of
the tokens it has already seen, so each new token costs one position instead of a full forward
over the context. :func:`generate` with ``use_cache=False`` recomputes everything and gives the
same logits (``tests-integration/test_mini_gpt.py`` checks it).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

import torchlight as tl
from torchlight import nn

__all__ = ["GPTConfig", "GPT", "KVCache", "generate", "count_parameters"]


@dataclass
class GPTConfig:
    """The model's shape. ``vocab_size`` comes from the tokenizer."""

    vocab_size: int = 65
    block_size: int = 128  # longest context (number of learned positions)
    n_layer: int = 4
    n_head: int = 4
    n_embd: int = 128
    dropout: float = 0.1
    bias: bool = True  # biases in the Linear layers
    tie_weights: bool = True  # output projection = token embedding matrix (transposed)
    gelu: str = "tanh"  # "tanh" (GPT-2's approximation) or "none" (exact erf GELU)

    def __post_init__(self):
        if self.n_embd % self.n_head:
            raise ValueError(f"n_embd={self.n_embd} must be divisible by n_head={self.n_head}")

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> GPTConfig:
        names = cls.__dataclass_fields__
        return cls(**{k: v for k, v in d.items() if k in names})


class LayerKV:
    """The cached keys and values of one attention layer, each ``(B, H, T_past, D)``."""

    __slots__ = ("k", "v")

    def __init__(self):
        self.k = None
        self.v = None


class KVCache:
    """One :class:`LayerKV` per block, and how many positions are already cached."""

    def __init__(self, n_layer: int):
        self.layers = [LayerKV() for _ in range(n_layer)]
        self.length = 0

    def reset(self):
        for layer in self.layers:
            layer.k = layer.v = None
        self.length = 0


class CausalSelfAttention(nn.Module):
    """Multi-head self-attention where position ``t`` only sees positions ``<= t``."""

    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.n_head, self.n_embd = cfg.n_head, cfg.n_embd
        self.c_attn = nn.Linear(cfg.n_embd, 3 * cfg.n_embd, bias=cfg.bias)  # Q, K, V in one matmul
        self.c_proj = nn.Linear(cfg.n_embd, cfg.n_embd, bias=cfg.bias)
        self.attn_dropout = nn.Dropout(cfg.dropout)
        self.resid_dropout = nn.Dropout(cfg.dropout)
        # mask[i, j] is True where query i must NOT see key j (j > i): the strict upper triangle.
        future = np.triu(np.ones((cfg.block_size, cfg.block_size), dtype=bool), k=1)
        self.register_buffer("mask", tl.tensor(future), persistent=False)

    def forward(self, x, cache: LayerKV | None = None, past: int = 0):
        B, T, C = x.shape
        H, D = self.n_head, C // self.n_head
        q, k, v = self.c_attn(x).split(C, dim=-1)  # 3 x (B, T, C)
        # (B, T, C) -> (B, H, T, D), views: each head's (T, D) matrix has unit-stride columns,
        # so the numba backend hands it to BLAS in place (row stride 3C as leading dimension) and
        # the numpy backend packs it once inside matmul (measured: numba step 3-5 ms faster than
        # with .contiguous() copies here; numpy's unchanged)
        q = q.reshape(B, T, H, D).transpose(1, 2)
        k = k.reshape(B, T, H, D).transpose(1, 2)
        v = v.reshape(B, T, H, D).transpose(1, 2)
        if cache is not None:
            if cache.k is not None:  # the keys/values of earlier positions come from the cache
                k = tl.cat([cache.k, k], dim=2)
                v = tl.cat([cache.v, v], dim=2)
            cache.k, cache.v = k, v
        S = k.shape[2]  # number of keys: past + T
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(D))  # (B, H, T, S)
        if T > 1:  # query i sits at absolute position past + i; hide the keys after it
            att = att.masked_fill(self.mask[past : past + T, :S], float("-inf"))
        # (a single new token is the last position: it may see every key, nothing to mask)
        att = self.attn_dropout(att.softmax(dim=-1))
        y = att @ v  # (B, H, T, D)
        y = y.transpose(1, 2).reshape(B, T, C)  # heads side by side again
        return self.resid_dropout(self.c_proj(y))


class MLP(nn.Module):
    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.c_fc = nn.Linear(cfg.n_embd, 4 * cfg.n_embd, bias=cfg.bias)
        self.c_proj = nn.Linear(4 * cfg.n_embd, cfg.n_embd, bias=cfg.bias)
        self.dropout = nn.Dropout(cfg.dropout)
        self.approximate = cfg.gelu

    def forward(self, x):
        return self.dropout(self.c_proj(self.c_fc(x).gelu(approximate=self.approximate)))


class Block(nn.Module):
    """Pre-LayerNorm transformer block: ``x + attn(ln_1(x))`` then ``x + mlp(ln_2(x))``."""

    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.ln_1 = nn.LayerNorm(cfg.n_embd)
        self.attn = CausalSelfAttention(cfg)
        self.ln_2 = nn.LayerNorm(cfg.n_embd)
        self.mlp = MLP(cfg)

    def forward(self, x, cache: LayerKV | None = None, past: int = 0):
        x = x + self.attn(self.ln_1(x), cache, past)
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    """Token + position embeddings, ``n_layer`` blocks, a final LayerNorm and the vocabulary head."""

    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.config = cfg
        self.wte = nn.Embedding(cfg.vocab_size, cfg.n_embd)  # token embeddings
        self.wpe = nn.Embedding(cfg.block_size, cfg.n_embd)  # learned position embeddings
        self.drop = nn.Dropout(cfg.dropout)
        self.h = nn.ModuleList([Block(cfg) for _ in range(cfg.n_layer)])
        self.ln_f = nn.LayerNorm(cfg.n_embd)
        # With tying, the head is the embedding matrix itself (logits = x @ wte.weight^T), so
        # there is no second parameter to register, save or keep in sync.
        self.lm_head = (
            None if cfg.tie_weights else nn.Linear(cfg.n_embd, cfg.vocab_size, bias=False)
        )
        self._init_weights()

    def _init_weights(self):
        """GPT-2's initialisation: N(0, 0.02) for matrices and embeddings, zero biases, and the
        projections that write into the residual stream scaled by 1/sqrt(2 * n_layer)."""
        resid_std = 0.02 / math.sqrt(2 * self.config.n_layer)
        with tl.no_grad():
            for name, m in self.named_modules():
                if isinstance(m, nn.Linear):
                    m.weight.normal_(0.0, resid_std if name.endswith("c_proj") else 0.02)
                    if m.bias is not None:
                        m.bias.zero_()
                elif isinstance(m, nn.Embedding):
                    m.weight.normal_(0.0, 0.02)
                # LayerNorm keeps its default: gain 1, bias 0

    def forward(self, idx, targets=None, cache: KVCache | None = None):
        """``idx`` (B, T) int64 → logits (B, T, vocab); with ``targets`` also the mean cross-entropy.

        With a ``cache``, ``idx`` holds only the new tokens: they sit at positions
        ``cache.length ...`` and attend to everything cached before them.
        """
        B, T = idx.shape
        past = cache.length if cache is not None else 0
        if past + T > self.config.block_size:
            raise ValueError(
                f"sequence of {past + T} tokens is longer than block_size={self.config.block_size}"
            )
        pos = self.wpe.weight[past : past + T]  # (T, C), broadcast over the batch
        x = self.drop(self.wte(idx) + pos)
        for i, block in enumerate(self.h):
            x = block(x, None if cache is None else cache.layers[i], past)
        x = self.ln_f(x)
        logits = x @ self.wte.weight.T if self.lm_head is None else self.lm_head(x)
        if cache is not None:
            cache.length = past + T
        if targets is None:
            return logits, None
        V = logits.shape[-1]
        loss = nn.functional.cross_entropy(logits.reshape(B * T, V), targets.reshape(B * T))
        return logits, loss

    def param_groups(self, weight_decay: float):
        """AdamW groups: decay the matrices (and embeddings), never biases or LayerNorm gains."""
        decay, no_decay = [], []
        for _, p in self.named_parameters():
            (decay if p.ndim >= 2 else no_decay).append(p)
        return [
            {"params": decay, "weight_decay": weight_decay},
            {"params": no_decay, "weight_decay": 0.0},
        ]


def count_parameters(model) -> int:
    return sum(p.numel() for p in model.parameters())


# ---- generation -----------------------------------------------------------------------------------


def _sample_from(
    logits: np.ndarray, temperature: float, top_k: int | None, rng: np.random.Generator
) -> int:
    """One token from a row of logits: temperature, keep the ``top_k`` largest, softmax, draw."""
    if temperature <= 0:
        return int(np.argmax(logits))
    z = logits.astype(np.float64) / temperature
    if top_k is not None and top_k < z.size:
        kth = np.partition(z, -top_k)[-top_k]
        z = np.where(z < kth, -np.inf, z)
    p = np.exp(z - z.max())
    p /= p.sum()
    return int(rng.choice(z.size, p=p))


def generate(
    model: GPT,
    prompt,
    max_new_tokens: int,
    temperature: float = 1.0,
    top_k: int | None = None,
    use_cache: bool = True,
    seed: int = 0,
    keep: int | None = None,
    return_logits: bool = False,
):
    """Continue ``prompt`` (a list of token ids) by ``max_new_tokens`` sampled tokens.

    The model sees a *window* of the sequence that starts at some token and grows by one per step.
    When the window reaches ``block_size`` it is moved forward so that it holds the last ``keep``
    tokens (default ``block_size // 2``): the KV cache is rebuilt from those tokens with one
    forward pass, and the following ``block_size - keep`` tokens cost one position each.
    ``use_cache=False`` runs a full forward over the same window at every step, so both give the
    same logits; only the speed differs.

    Returns the new token ids, and with ``return_logits=True`` also the (steps, vocab) logits that
    each token was drawn from.
    """
    block = model.config.block_size
    keep = block // 2 if keep is None else keep
    if not 0 < keep < block:
        raise ValueError(f"keep must be in (0, block_size={block}), got {keep}")
    rng = np.random.default_rng(seed)
    seq = [int(t) for t in prompt] or [0]
    start = max(0, len(seq) - block)  # the window is seq[start:]
    cache = KVCache(model.config.n_layer) if use_cache else None
    new, all_logits = [], []
    device = model.wte.weight.device
    was_training = model.training
    model.eval()
    try:
        with tl.no_grad():
            for _ in range(max_new_tokens):
                if len(seq) - start > block:
                    start = len(seq) - keep  # slide: keep the last `keep` tokens
                    if cache is not None:
                        cache.reset()
                # with a cache only the tokens not cached yet go through the model
                window = seq[start + cache.length :] if cache is not None else seq[start:]
                idx = tl.tensor(np.asarray([window], dtype=np.int64), device=device)
                logits, _ = model(idx, cache=cache)
                row = logits[0, -1].to_numpy()
                tok = _sample_from(row, temperature, top_k, rng)
                seq.append(tok)
                new.append(tok)
                if return_logits:
                    all_logits.append(row)
    finally:
        model.train(was_training)
    return (new, np.stack(all_logits)) if return_logits else new
