"""Spatial transformers (Jaderberg et al.): ``F.affine_grid`` and ``F.grid_sample``.

Coordinates are normalised: ``−1`` and ``+1`` are the left/top and right/bottom edges. With
``align_corners=True`` they are the *centres* of the corner pixels (pixel ``j`` of ``W`` sits at
``−1 + 2j/(W − 1)``); with ``False`` (the default) they are the outer edges of the corner pixels
(pixel ``j`` at ``(2j + 1)/W − 1``).

* ``affine_grid(θ, (N, C, H, W))``: the sampling position of every output pixel,
  ``[x', y'] = θ · [x, y, 1]`` over the normalised output coordinates, ``(N, H, W, 2)``.
* ``grid_sample(input, grid)``: reads ``input`` at those positions. ``bilinear`` blends the four
  neighbouring pixels with weights ``(1 − fx)(1 − fy)``, ``fx(1 − fy)``, ... (``fx`` the
  fractional part), which is differentiable in both the input and the grid; ``nearest`` rounds.
  ``padding_mode='zeros'`` reads 0 outside the image, ``'border'`` clamps to the edge pixels.
"""

import numpy as np

import torchlight as tl

__all__ = ["affine_grid", "grid_sample"]


def _base_coords(n, align_corners):
    if align_corners:
        return np.linspace(-1.0, 1.0, n) if n > 1 else np.zeros(1)
    return (2.0 * np.arange(n) + 1.0) / n - 1.0


def affine_grid(theta, size, align_corners=None):
    """``(N, H, W, 2)`` sampling grid of the 2-D affine maps ``theta (N, 2, 3)`` for an output of
    ``size = (N, C, H, W)``.

    >>> identity = tl.tensor([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]])
    >>> F.affine_grid(identity, (1, 1, 1, 2), align_corners=False).tolist()
    [[[[-0.5, 0.0], [0.5, 0.0]]]]
    """
    if len(size) != 4:
        raise NotImplementedError(
            f"affine_grid: only 2-D sizes (N, C, H, W) are supported, got {tuple(size)}"
        )
    n, _, h, w = size
    if tuple(theta.shape) != (n, 2, 3):
        raise tl.ShapeError(
            f"affine_grid: expected theta of shape {(n, 2, 3)} for size {tuple(size)}, got {theta.shape}"
        )
    xs, ys = _base_coords(w, bool(align_corners)), _base_coords(h, bool(align_corners))
    base = np.stack(
        [np.tile(xs, h), np.repeat(ys, w), np.ones(h * w)], 1
    )  # (H·W, 3), rows [x, y, 1]
    base = tl.tensor(base, dtype=theta.dtype, device=theta.device)
    return (base @ theta.transpose(1, 2)).reshape(n, h, w, 2)


def _unnormalize(coord, size, align_corners):
    if align_corners:
        return (coord + 1) * ((size - 1) / 2)
    return ((coord + 1) * size - 1) / 2


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """Sample ``input (N, C, H, W)`` at ``grid (N, Ho, Wo, 2)`` (``[..., 0]`` is x, ``[..., 1]`` y)
    → ``(N, C, Ho, Wo)``; see the module docstring.

    >>> img = tl.arange(4.0).reshape(1, 1, 2, 2)
    >>> F.grid_sample(img, tl.zeros(1, 1, 1, 2), align_corners=True).item()   # the centre: the mean
    1.5
    """
    if mode not in ("bilinear", "nearest"):
        raise NotImplementedError(
            f"grid_sample: mode {mode!r} is not supported (use 'bilinear' or 'nearest')"
        )
    if padding_mode not in ("zeros", "border"):
        raise NotImplementedError(
            f"grid_sample: padding_mode {padding_mode!r} is not supported (use 'zeros' or 'border')"
        )
    if input.ndim != 4 or grid.ndim != 4 or grid.shape[-1] != 2 or grid.shape[0] != input.shape[0]:
        raise tl.ShapeError(
            f"grid_sample: expected input (N, C, H, W) and grid (N, Ho, Wo, 2), got {input.shape} "
            f"and {grid.shape}"
        )
    n, c, h, w = input.shape
    ho, wo = grid.shape[1:3]
    ix = _unnormalize(grid[..., 0], w, bool(align_corners)).reshape(n, 1, ho * wo)
    iy = _unnormalize(grid[..., 1], h, bool(align_corners)).reshape(n, 1, ho * wo)
    if padding_mode == "border":
        ix, iy = ix.clamp(0.0, w - 1.0), iy.clamp(0.0, h - 1.0)
    flat = input.reshape(n, c, h * w)

    def read(xi, yi):  # xi, yi: integer-valued numpy (N, 1, P); zero outside the image
        inside = (xi >= 0) & (xi < w) & (yi >= 0) & (yi < h)
        idx = np.where(inside, yi * w + xi, 0).astype(np.int64)
        idx_t = tl.tensor(np.broadcast_to(idx, (n, c, idx.shape[-1])).copy(), device=input.device)
        values = flat.gather(2, idx_t)
        return values * tl.tensor(inside, dtype=input.dtype, device=input.device)

    if mode == "nearest":
        # round half to even, as PyTorch's nearbyint
        out = read(np.rint(ix.detach().numpy()), np.rint(iy.detach().numpy()))
        return out.reshape(n, c, ho, wo)
    x0 = np.floor(ix.detach().numpy())
    y0 = np.floor(iy.detach().numpy())
    fx = ix - tl.tensor(x0, dtype=input.dtype, device=input.device)
    fy = iy - tl.tensor(y0, dtype=input.dtype, device=input.device)
    out = (
        read(x0, y0) * ((1 - fx) * (1 - fy))
        + read(x0 + 1, y0) * (fx * (1 - fy))
        + read(x0, y0 + 1) * ((1 - fx) * fy)
        + read(x0 + 1, y0 + 1) * (fx * fy)
    )
    return out.reshape(n, c, ho, wo)
