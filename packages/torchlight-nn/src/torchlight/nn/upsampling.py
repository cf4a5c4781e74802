"""Resizing: ``F.interpolate``, ``nn.Upsample``, ``F.pixel_shuffle`` / ``nn.PixelShuffle``.

Every mode of ``interpolate`` here is separable and linear in the input, so each spatial dim is
resized by one matrix ``M: (out, in)`` (``y = M x`` along that dim), built once in numpy from
PyTorch's source-index rule for output index ``i`` (``scale = in/out``, or ``1/scale_factor``
when a scale factor is given):

* ``nearest``:        ``src = min(floor(i · scale), in − 1)``
* ``nearest-exact``:  ``src = min(floor((i + ½) · scale), in − 1)``
* ``linear``/``bilinear``, ``align_corners=False``: ``s = max((i + ½) · scale − ½, 0)``,
  blend ``x[floor s]`` and ``x[floor s + 1]`` (clamped) with weights ``1 − (s − floor s)``, ``s − floor s``
* ``align_corners=True``: ``s = i · (in − 1)/(out − 1)``, blended the same way.

Gradients are the transposed matrices, through autograd's matmul.
"""

import math

import numpy as np

import torchlight as tl

from .module import Module

__all__ = [
    "interpolate",
    "upsample",
    "pixel_shuffle",
    "pixel_unshuffle",
    "Upsample",
    "PixelShuffle",
    "PixelUnshuffle",
]

_MODES = {"nearest": 1, "nearest-exact": 1, "linear": 1, "bilinear": 2}


def _resize_matrix(n_in, n_out, mode, align_corners, scale):
    m = np.zeros((n_out, n_in))
    i = np.arange(n_out, dtype=np.float64)
    if mode in ("nearest", "nearest-exact"):
        shift = 0.5 if mode == "nearest-exact" else 0.0
        src = np.minimum(np.floor((i + shift) * scale).astype(np.int64), n_in - 1)
        m[np.arange(n_out), src] = 1.0
        return m
    if align_corners:
        s = i * ((n_in - 1) / (n_out - 1) if n_out > 1 else 0.0)
    else:
        s = np.maximum((i + 0.5) * scale - 0.5, 0.0)
    i0 = np.minimum(np.floor(s).astype(np.int64), n_in - 1)
    i1 = np.minimum(i0 + 1, n_in - 1)
    w1 = s - i0
    np.add.at(m, (np.arange(n_out), i0), 1.0 - w1)
    np.add.at(m, (np.arange(n_out), i1), w1)
    return m


def interpolate(
    input,
    size=None,
    scale_factor=None,
    mode="nearest",
    align_corners=None,
    recompute_scale_factor=None,
    antialias=False,
):
    """Resize the spatial dims of ``(N, C, *S)`` to ``size`` or ``floor(S · scale_factor)``.

    ``mode``: ``'nearest'``, ``'nearest-exact'``, ``'linear'`` (3-D input) or ``'bilinear'``
    (4-D input); ``align_corners`` only for the linear modes (default False). See the module
    docstring for the index rules.

    >>> x = tl.tensor([[[[1.0, 2.0], [3.0, 4.0]]]])
    >>> F.interpolate(x, scale_factor=2, mode="bilinear")[0, 0, 0].tolist()
    [1.0, 1.25, 1.75, 2.0]
    >>> F.interpolate(x, size=(3, 3), mode="nearest")[0, 0].tolist()
    [[1.0, 1.0, 2.0], [1.0, 1.0, 2.0], [3.0, 3.0, 4.0]]
    """
    if mode not in _MODES:
        raise NotImplementedError(
            f"interpolate: mode {mode!r} is not supported (use one of {sorted(_MODES)})"
        )
    if antialias:
        raise NotImplementedError("interpolate: antialias=True is not supported")
    nd = input.ndim - 2
    if nd < 1 or (_MODES[mode] == 2 and nd != 2) or (mode == "linear" and nd != 1):
        raise tl.ShapeError(
            f"interpolate: mode {mode!r} does not accept input of shape {input.shape}"
        )
    if align_corners is not None and mode.startswith("nearest"):
        raise ValueError(
            "align_corners option can only be set with the interpolating modes: linear | bilinear"
        )
    if (size is None) == (scale_factor is None):
        raise ValueError("interpolate: pass exactly one of size or scale_factor")
    spatial = input.shape[2:]
    if size is not None:
        out = (size,) * nd if isinstance(size, int) else tuple(size)
        scales = [s_in / s_out for s_in, s_out in zip(spatial, out)]
    else:
        factors = (
            (scale_factor,) * nd if isinstance(scale_factor, (int, float)) else tuple(scale_factor)
        )
        out = tuple(int(math.floor(s * f)) for s, f in zip(spatial, factors))
        scales = (
            [s_in / s_out for s_in, s_out in zip(spatial, out)]
            if recompute_scale_factor
            else [1.0 / f for f in factors]
        )
    if len(out) != nd:
        raise ValueError(f"interpolate: size/scale_factor must give {nd} values, got {out}")
    y = input
    for i in range(nd):
        if out[i] == spatial[i] and scales[i] == 1.0:
            continue
        m = _resize_matrix(spatial[i], out[i], mode, bool(align_corners), scales[i])
        mt = tl.tensor(m.T, dtype=input.dtype, device=input.device)  # (in, out)
        dim = 2 + i
        y = (y.transpose(dim, -1) @ mt).transpose(dim, -1)
    return y


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """The older name of :func:`interpolate`.

    >>> F.upsample(tl.ones(1, 1, 2), scale_factor=2).shape
    (1, 1, 4)
    """
    return interpolate(input, size, scale_factor, mode, align_corners)


def pixel_shuffle(input, upscale_factor):
    """``(*, C·r², H, W)`` → ``(*, C, H·r, W·r)``: channel ``c·r² + i·r + j`` becomes the pixel
    ``(h·r + i, w·r + j)`` of channel ``c`` (sub-pixel convolution, Shi et al.).

    >>> F.pixel_shuffle(tl.arange(4.0).reshape(1, 4, 1, 1), 2)[0, 0].tolist()
    [[0.0, 1.0], [2.0, 3.0]]
    """
    r = upscale_factor
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise tl.ShapeError(
            f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square "
            f"of upscale_factor, but input.size(-3)={c} is not divisible by {r * r}"
        )
    x = input.reshape(*lead, c // (r * r), r, r, h, w)
    k = len(lead)
    x = x.permute(*range(k), k, k + 3, k + 1, k + 4, k + 2)  # (*, C, H, r, W, r)
    return x.reshape(*lead, c // (r * r), h * r, w * r)


def pixel_unshuffle(input, downscale_factor):
    """The inverse of :func:`pixel_shuffle`: ``(*, C, H·r, W·r)`` → ``(*, C·r², H, W)``.

    >>> x = tl.arange(16.0).reshape(1, 1, 4, 4)
    >>> bool((F.pixel_shuffle(F.pixel_unshuffle(x, 2), 2) == x).all())
    True
    """
    r = downscale_factor
    *lead, c, hr, wr = input.shape
    if hr % r or wr % r:
        raise tl.ShapeError(f"pixel_unshuffle: spatial size {(hr, wr)} is not divisible by {r}")
    h, w = hr // r, wr // r
    x = input.reshape(*lead, c, h, r, w, r)
    k = len(lead)
    x = x.permute(*range(k), k, k + 2, k + 4, k + 1, k + 3)  # (*, C, r, r, H, W)
    return x.reshape(*lead, c * r * r, h, w)


class Upsample(Module):
    """``Upsample(size=None, scale_factor=None, mode='nearest', align_corners=None)``: :func:`interpolate`.

    >>> nn.Upsample(scale_factor=2)(tl.ones(1, 3, 4, 4)).shape
    (1, 3, 8, 8)
    """

    def __init__(
        self,
        size=None,
        scale_factor=None,
        mode="nearest",
        align_corners=None,
        recompute_scale_factor=None,
    ):
        super().__init__()
        self.size, self.scale_factor, self.mode = size, scale_factor, mode
        self.align_corners, self.recompute_scale_factor = align_corners, recompute_scale_factor

    def forward(self, input):
        return interpolate(
            input,
            self.size,
            self.scale_factor,
            self.mode,
            self.align_corners,
            self.recompute_scale_factor,
        )

    def extra_repr(self):
        what = f"size={self.size}" if self.size is not None else f"scale_factor={self.scale_factor}"
        return f"{what}, mode={self.mode!r}"


class PixelShuffle(Module):
    """``PixelShuffle(upscale_factor)``: :func:`pixel_shuffle`.

    >>> nn.PixelShuffle(3)(tl.ones(1, 9, 4, 4)).shape
    (1, 1, 12, 12)
    """

    def __init__(self, upscale_factor):
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input):
        return pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self):
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """``PixelUnshuffle(downscale_factor)``: :func:`pixel_unshuffle`.

    >>> nn.PixelUnshuffle(2)(tl.ones(1, 1, 4, 4)).shape
    (1, 4, 2, 2)
    """

    def __init__(self, downscale_factor):
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input):
        return pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self):
        return f"downscale_factor={self.downscale_factor}"
