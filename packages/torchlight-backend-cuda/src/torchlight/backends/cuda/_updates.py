"""Fused optimizer updates on the GPU: one Adam/AdamW, Adagrad or SGD step of a contiguous
parameter per launch.

One thread per element in a grid-stride loop reads ``p``, ``g``, ``m``, ``v`` once and writes
``p``, ``m``, ``v`` once (formula: ``torchlight.tensor.functions.updates``), instead of the
composite's dozen launches per parameter. The arithmetic runs in the parameter's own precision
(``acc``; float64 on a GPU can be 32-64× slower than float32), with the hyperparameters cast
to it once per thread.
"""

import math

from numba import cuda

__all__ = ["adam_kernel", "adagrad_kernel", "sgd_kernel"]


def adam_kernel(acc):
    """The kernel for parameters of float type ``acc`` (see numba backend ``_updates.py`` for the
    meaning of ``sign``, ``decay``, ``l2``, ``w1``)."""

    @cuda.jit
    def k(p, po, g, go, m, mo, v, vo, n, sign, decay, l2, w1, beta2, eps, step_size, bc2_sqrt):
        sign, decay, l2, w1 = acc(sign), acc(decay), acc(l2), acc(w1)
        beta2, eps, step_size, bc2_sqrt = acc(beta2), acc(eps), acc(step_size), acc(bc2_sqrt)
        one = acc(1.0)
        i = cuda.grid(1)
        stride = cuda.gridsize(1)
        while i < n:
            gi = sign * g[go + i]
            pi = p[po + i]
            gi = gi + l2 * pi
            pi = pi * decay
            mi = m[mo + i]
            if w1 < acc(0.5):  # m.lerp_(g, w1), PyTorch's two-sided formula
                mi = mi + (gi - mi) * w1
            else:
                mi = gi - (gi - mi) * (one - w1)
            vi = v[vo + i] * beta2 + gi * gi * (one - beta2)
            m[mo + i] = mi
            v[vo + i] = vi
            p[po + i] = pi - step_size * (mi / (math.sqrt(vi) / bc2_sqrt + eps))
            i += stride

    return k


def adagrad_kernel(acc):
    """The Adagrad kernel for parameters of float type ``acc`` (``clr`` the decayed learning
    rate, ``l2`` = λ)."""

    @cuda.jit
    def k(p, po, g, go, s, so, n, clr, l2, eps):
        clr, l2, eps = acc(clr), acc(l2), acc(eps)
        i = cuda.grid(1)
        stride = cuda.gridsize(1)
        while i < n:
            pi = p[po + i]
            gi = g[go + i] + l2 * pi
            si = s[so + i] + gi * gi
            s[so + i] = si
            p[po + i] = pi - clr * (gi / (math.sqrt(si) + eps))
            i += stride

    return k


def sgd_kernel(acc):
    """The SGD kernel for parameters of float type ``acc`` (see the numba backend's
    ``sgd_kernel`` for the arguments; ``first`` and ``nesterov`` are 0 or 1)."""

    @cuda.jit
    def k(p, po, g, go, b, bo, n, sign, l2, momentum, w, first, nesterov, neg_lr):
        sign, l2, momentum, w, neg_lr = acc(sign), acc(l2), acc(momentum), acc(w), acc(neg_lr)
        zero = acc(0.0)
        i = cuda.grid(1)
        stride = cuda.gridsize(1)
        while i < n:
            pi = p[po + i]
            gi = sign * g[go + i]
            if l2 != zero:
                gi = gi + pi * l2
            if momentum != zero:
                if first:
                    bi = gi
                else:
                    bi = b[bo + i] * momentum + gi * w
                b[bo + i] = bi
                if nesterov:
                    gi = gi + bi * momentum
                else:
                    gi = bi
            p[po + i] = pi + gi * neg_lr
            i += stride

    return k
