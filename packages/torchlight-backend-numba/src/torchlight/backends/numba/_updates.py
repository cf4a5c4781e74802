"""Fused optimizer updates: one Adam/AdamW, Adagrad or SGD step of a contiguous parameter in
one ``prange`` pass.

The composite update is ~a dozen elementwise ops per parameter, each a pass over memory and a
trip through torchlight's Python dispatch; here each element is read once, updated in
registers and written once (formula: ``torchlight.tensor.functions.updates``). The arithmetic
runs in float64 — the hyperparameters are float64 scalars — and rounds once on the store, so a
float32 result is within an ulp or two of the composite's op-by-op float32 rounding.
"""

import math

from numba import prange

from ._jit import kernel

__all__ = ["adam_kernel", "adagrad_kernel", "sgd_kernel"]


@kernel
def adam_kernel(
    p, po, g, go, m, mo, v, vo, n, sign, decay, l2, w1, beta2, eps, step_size, bc2_sqrt
):
    """``p``, ``g``, ``m``, ``v``: storages with the parameter's ``n`` values from their offsets.

    ``sign`` −1 maximises; ``decay`` = 1 − lr·λ (AdamW) or 1; ``l2`` = λ (Adam) or 0;
    ``w1`` = 1 − β1, the lerp weight of the first moment.
    """
    # Sliced first: indexed as p[po + i], a possibly negative index, each access carried a
    # wraparound check that kept LLVM from vectorising the loop (200k values 1.09 -> 0.26 ms).
    # One statement per slice: numba 0.68's parallel build of a tuple assignment of slices
    # wrote into copies (the parameters were left unchanged), a bug the serial build lacks.
    ps = p[po : po + n]
    gs = g[go : go + n]
    ms = m[mo : mo + n]
    vs = v[vo : vo + n]
    for i in prange(n):
        gi = sign * gs[i]
        pi = ps[i]
        gi = gi + l2 * pi
        pi = pi * decay
        mi = ms[i]
        if w1 < 0.5:  # m.lerp_(g, w1): PyTorch's two-sided formula, exact at both ends
            mi = mi + (gi - mi) * w1
        else:
            mi = gi - (gi - mi) * (1.0 - w1)
        vi = vs[i] * beta2 + gi * gi * (1.0 - beta2)
        ms[i] = mi
        vs[i] = vi
        ps[i] = pi - step_size * (mi / (math.sqrt(vi) / bc2_sqrt + eps))


@kernel
def adagrad_kernel(p, po, g, go, s, so, n, clr, l2, eps):
    """``p``, ``g``, ``s``: storages with the parameter's ``n`` values from their offsets;
    ``clr`` the decayed learning rate, ``l2`` = λ."""
    ps = p[po : po + n]  # sliced first, one statement each: see adam_kernel
    gs = g[go : go + n]
    ss = s[so : so + n]
    for i in prange(n):
        pi = ps[i]
        gi = gs[i] + l2 * pi
        si = ss[i] + gi * gi
        ss[i] = si
        ps[i] = pi - clr * (gi / (math.sqrt(si) + eps))


@kernel
def sgd_kernel(p, po, g, go, b, bo, n, sign, l2, momentum, w, first, nesterov, neg_lr):
    """``p``, ``g``, ``b``: storages with the parameter's ``n`` values from their offsets; ``b``
    the momentum buffer, read and written only when ``momentum`` is not 0 (without one the
    caller passes ``p`` again). ``sign`` −1 maximises; ``w`` = 1 − dampening; ``first``: the
    buffer takes the gradient; ``neg_lr`` = −lr (the composite's ``p.add_(g, alpha=-lr)``)."""
    ps = p[po : po + n]  # sliced first, one statement each: see adam_kernel
    gs = g[go : go + n]
    bs = b[bo : bo + n]
    for i in prange(n):
        pi = ps[i]
        gi = sign * gs[i]
        if l2 != 0.0:  # 0·p would turn an inf parameter's gradient into NaN
            gi = gi + pi * l2
        if momentum != 0.0:
            if first:
                bi = gi
            else:
                bi = bs[i] * momentum + gi * w
            bs[i] = bi
            gi = gi + bi * momentum if nesterov else bi
        ps[i] = pi + gi * neg_lr
