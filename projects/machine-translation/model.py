"""GRU encoder-decoder with Luong attention, written with PyTorch's layers.

Encoder: embedding → dropout → bidirectional ``nn.GRU`` over the batch packed by length
(``pack_padded_sequence``), so each sentence's recurrence sees its own words only: the forward
direction's final state is the one after its last word, and the backward direction starts at
that word.
Where the backend has the fused GRU cell, each direction is one autograd node over the whole
sequence (every step a matmul and one pass over the gates, on the sentences that have it).

Decoder (Luong et al. 2015, global attention, no input feeding)::

    h_t  = GRU(emb(y_{t-1}), h_{t-1})                 h_0 = tanh(W_b [h_fwd; h_bwd])
    a_t  = softmax(score(h_t, e_s)) over real source positions (padding masked to -1e9)
    c_t  = Σ_s a_ts e_s
    h̃_t  = tanh(W_c [c_t; h_t])
    p_t  = softmax(W_o dropout(h̃_t))

    score: "dot"      h_t · k_s   with k_s = e_s (unidirectional) or e_fwd,s + e_bwd,s (bidirectional)
           "general"  h_t · W_a e_s   (W_a e_s is computed once per batch, as keys)

Without input feeding the decoder GRU does not depend on the attention, so with teacher forcing
the decoder's ``nn.GRU`` runs over the whole target in one call and the attention, the output
layer and the loss are each one batched op over all steps. The output layer and the loss are
computed only on the real (non-padding) target positions. When a batch is not teacher-forced (scheduled sampling), the
decoder runs step by step and feeds back its own argmax.

Evaluation: :meth:`Seq2Seq.greedy` and :meth:`Seq2Seq.beam_search` decode whole batches.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

import torchlight as tl
import torchlight.nn as nn
import torchlight.nn.functional as F
from torchlight.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

PAD, UNK, SOS, EOS = 0, 1, 2, 3
_NEG = -1e9


@dataclass
class ModelConfig:
    src_vocab: int
    tgt_vocab: int
    emb: int = 256
    hidden: int = 256
    bidirectional: bool = True
    attention: str = "general"  # "general" or "dot"
    dropout: float = 0.2

    def to_dict(self):
        return asdict(self)


class Encoder(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        self.embedding = nn.Embedding(cfg.src_vocab, cfg.emb, padding_idx=PAD)
        self.dropout = nn.Dropout(cfg.dropout)
        self.rnn = nn.GRU(cfg.emb, cfg.hidden, bidirectional=cfg.bidirectional)

    def forward(self, src):
        """``src`` int64 ``(S, N)`` → outputs ``(S, N, D·H)`` (zero at padding) and final states
        ``(D, N, H)``."""
        lengths = (src.numpy() != PAD).sum(0)
        x = self.dropout(self.embedding(src))  # (S, N, E)
        packed = pack_padded_sequence(x, lengths, enforce_sorted=False)
        out, h = self.rnn(packed)
        return pad_packed_sequence(out, total_length=src.shape[0])[0], h


class Decoder(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        H, D = cfg.hidden, 2 if cfg.bidirectional else 1
        self.embedding = nn.Embedding(cfg.tgt_vocab, cfg.emb, padding_idx=PAD)
        self.dropout = nn.Dropout(cfg.dropout)
        self.bridge = nn.Linear(D * H, H)  # encoder final states → h_0
        self.rnn = nn.GRU(cfg.emb, H)
        if cfg.attention == "general":
            self.attn = nn.Linear(D * H, H, bias=False)  # W_a
        elif cfg.attention != "dot":
            raise ValueError(f"attention must be 'general' or 'dot', got {cfg.attention!r}")
        self.combine = nn.Linear(D * H + H, H)  # W_c
        self.out = nn.Linear(H, cfg.tgt_vocab)  # W_o

    # --- shared pieces --------------------------------------------------------------------------
    def init_state(self, enc_out, enc_h, src_pad):
        """Everything the decoder needs from the encoder, batch-major: keys ``(N, H, S)``
        (already transposed), values ``(N, S, D·H)``, the additive mask ``(N, 1, S)`` and h_0."""
        H = self.cfg.hidden
        values = enc_out.transpose(0, 1)  # (N, S, D·H)
        if self.cfg.attention == "general":
            keys = self.attn(values)
        elif self.cfg.bidirectional:
            keys = values[..., :H] + values[..., H:]
        else:
            keys = values
        keys_t = keys.transpose(1, 2)  # (N, H, S)
        mask = tl.tensor(
            np.where(src_pad.T[:, None, :], _NEG, 0.0).astype(np.float32), device=enc_out.device
        )
        h0 = self.bridge(tl.cat([enc_h[d] for d in range(enc_h.shape[0])], -1)).tanh()
        return keys_t, values, mask, h0

    def attend(self, q, keys_t, values, mask):
        """``q (N, T, H)`` → attentional states ``h̃ (N, T, H)`` and weights ``(N, T, S)``."""
        scores = q @ keys_t + mask
        weights = scores.softmax(-1)
        ctx = weights @ values
        return self.combine(tl.cat([ctx, q], -1)).tanh(), weights

    # --- teacher forcing: the whole target at once ----------------------------------------------
    def forward_teacher(self, dec_in, state):
        """``dec_in (T, N)`` → ``h̃ (N, T, H)``. A sentence's steps past its end are computed
        too (the GRU looks only backwards, so they change nothing before them) and never reach
        the loss."""
        keys_t, values, mask, h = state
        seq, _ = self.rnn(self.dropout(self.embedding(dec_in)), h.unsqueeze(0))  # (T, N, H)
        ht, _ = self.attend(seq.transpose(0, 1), keys_t, values, mask)
        return ht

    # --- one step (free running, greedy, beam) --------------------------------------------------
    def step(self, y_prev, h, state):
        """``y_prev (N,)`` int64, ``h (N, H)`` → logits ``(N, V)``, new ``h``, attention ``(N, S)``."""
        keys_t, values, mask, _ = state
        x = self.dropout(self.embedding(y_prev)).unsqueeze(0)  # one step: (1, N, E)
        h = self.rnn(x, h.unsqueeze(0))[1][0]
        ht, weights = self.attend(h.unsqueeze(1), keys_t, values, mask)
        logits = self.out(self.dropout(ht[:, 0]))
        return logits, h, weights[:, 0]


class Seq2Seq(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        self.encoder = Encoder(cfg)
        self.decoder = Decoder(cfg)

    def encode(self, src_np):
        src = tl.tensor(src_np)
        enc_out, enc_h = self.encoder(src)
        return self.decoder.init_state(enc_out, enc_h, src_np == PAD)

    def loss(self, batch, teacher_forcing: bool = True):
        """Mean cross-entropy over the real target tokens of ``batch`` (padding never enters the
        output layer, the loss, or the attention)."""
        state = self.encode(batch.src)
        tgt = batch.tgt  # (T, N)
        real = np.flatnonzero(tgt.T.reshape(-1) != PAD)  # batch-major positions of real tokens
        target = tgt.T.reshape(-1)[real]
        rows = tl.tensor(real)
        if teacher_forcing:
            ht = self.decoder.forward_teacher(tl.tensor(batch.dec_in), state)  # (N, T, H)
            ht = ht.reshape(-1, self.cfg.hidden).index_select(0, rows)
            logits = self.decoder.out(self.decoder.dropout(ht))
        else:
            h = state[3]
            y = tl.tensor(batch.dec_in[0])
            steps = []
            for _t in range(tgt.shape[0]):
                logits_t, h, _ = self.decoder.step(y, h, state)
                steps.append(logits_t)
                y = tl.tensor(logits_t.detach().numpy().argmax(-1).astype(np.int64))
            logits = tl.stack(steps, 1).reshape(-1, self.cfg.tgt_vocab).index_select(0, rows)
        return F.cross_entropy(logits, tl.tensor(target))  # the backend's fused kernel

    # --- decoding -------------------------------------------------------------------------------
    def greedy(self, src_np, max_len: int = 30, return_attention: bool = False):
        """Greedy decoding of ``src (S, N)``: a list of N id lists, each ending with EOS unless
        ``max_len`` was reached (and the attention weights ``(N, T, S)`` when asked)."""
        with tl.no_grad():
            state = self.encode(src_np)
            N = src_np.shape[1]
            h = state[3]
            y = np.full(N, SOS, dtype=np.int64)
            out = np.full((N, max_len), PAD, dtype=np.int64)
            done = np.zeros(N, dtype=bool)
            attn = []
            for t in range(max_len):
                logits, h, w = self.decoder.step(tl.tensor(y), h, state)
                y = logits.numpy().argmax(-1).astype(np.int64)
                y[done] = PAD
                out[:, t] = y
                if return_attention:
                    attn.append(w.numpy())
                done |= y == EOS
                if done.all():
                    break
        seqs = [_cut(row) for row in out]
        if return_attention:
            return seqs, np.stack(attn, 1)
        return seqs

    def beam_search(self, src_np, beam: int = 4, max_len: int = 30, alpha: float = 1.0):
        """Batched beam search: ``beam`` hypotheses per sentence, finished ones (EOS) carried with a
        frozen score; the winner maximises ``log p / length**alpha``."""
        with tl.no_grad():
            keys_t, values, mask, h = self.encode(src_np)
            N, K = src_np.shape[1], beam
            V = self.cfg.tgt_vocab
            rep = tl.tensor(np.repeat(np.arange(N), K))
            state = (
                keys_t.index_select(0, rep),
                values.index_select(0, rep),
                mask.index_select(0, rep),
                None,
            )
            h = h.index_select(0, rep)  # (N·K, H)
            scores = np.full((N, K), -np.inf, dtype=np.float64)
            scores[:, 0] = 0.0
            tokens = np.zeros((N, K, 0), dtype=np.int64)
            lengths = np.zeros((N, K), dtype=np.int64)
            finished = np.zeros((N, K), dtype=bool)
            y = np.full(N * K, SOS, dtype=np.int64)
            base = (np.arange(N) * K)[:, None]
            for _t in range(max_len):
                logits, h, _ = self.decoder.step(tl.tensor(y), h, state)
                logp = logits.log_softmax(-1).numpy().astype(np.float64).reshape(N, K, V)
                # a finished hypothesis only extends with PAD, at no cost
                logp[finished] = -np.inf
                logp[finished, PAD] = 0.0
                cand = (scores[:, :, None] + logp).reshape(N, K * V)
                top = np.argpartition(-cand, K, axis=1)[:, :K]
                top_scores = np.take_along_axis(cand, top, 1)
                order = np.argsort(-top_scores, axis=1)
                top = np.take_along_axis(top, order, 1)
                scores = np.take_along_axis(top_scores, order, 1)
                src_beam, tok = top // V, top % V
                tokens = np.concatenate(
                    [np.take_along_axis(tokens, src_beam[:, :, None], 1), tok[:, :, None]], 2
                )
                prev_fin = np.take_along_axis(finished, src_beam, 1)
                lengths = np.take_along_axis(lengths, src_beam, 1) + (~prev_fin)
                finished = prev_fin | (tok == EOS)
                h = h.index_select(0, tl.tensor((base + src_beam).reshape(-1)))
                y = tok.reshape(-1)
                if finished.all():
                    break
            norm = scores / np.maximum(lengths, 1) ** alpha
            # prefer finished hypotheses; an unfinished one only when none finished
            norm = np.where(finished, norm, norm - 1e6)
            best = norm.argmax(1)
        return [_cut(tokens[i, best[i]]) for i in range(N)]


def _cut(row):
    """Ids up to and including the first EOS, padding dropped."""
    out = []
    for i in row:
        i = int(i)
        if i == PAD:
            continue
        out.append(i)
        if i == EOS:
            break
    return out


def count_parameters(model):
    return sum(p.numel() for p in model.parameters())
