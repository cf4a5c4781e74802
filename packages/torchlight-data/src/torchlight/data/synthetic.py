"""A zoo of 2-D binary classification sets for smoke tests, tutorials and decision-boundary plots.

Each generator takes ``n`` (points) and ``seed`` and returns a
:class:`~torchlight.data.TensorDataset` of ``X`` (float32, shape ``(n, 2)``) and ``y`` (int64,
shape ``(n,)``, labels 0/1). ``ds.tensors`` gives ``(X, y)`` back for full-batch training; for a
loss that wants float targets use ``y.float()``-style conversion at the call site. The numpy arrays
come from :func:`make_arrays` (no tensors involved), which is what plotting code usually wants.

The sets, from easiest to hardest for a small MLP (points in the unit square unless noted):

===========  ==================================================================================
``simple``   label 1 left of ``x0 = 0.5`` (linearly separable)
``diag``     label 1 below the anti-diagonal ``x0 + x1 = 0.5`` (linearly separable, ~1/8 positive)
``split``    label 1 in the two outer bands ``x0 < 0.2`` or ``x0 > 0.8`` (needs two cuts)
``xor``      label 1 in the top-left and bottom-right quadrants
``circle``   label 1 outside a circle of radius ``sqrt(0.1)`` around the centre
``spiral``   two interleaved spirals, one per class, in ``[0, 1]^2`` (half the points each)
``moons``    two interleaving half-moons (as scikit-learn's), Gaussian noise ``noise``
===========  ==================================================================================

The same ``(name, n, seed)`` always gives the same points, on every platform (numpy's PCG64).
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "NAMES",
    "make_arrays",
    "make",
    "simple",
    "diag",
    "split",
    "xor",
    "circle",
    "spiral",
    "moons",
]

NAMES = ("simple", "diag", "split", "xor", "circle", "spiral", "moons")


def _unit_square(n: int, rng: np.random.Generator) -> np.ndarray:
    return rng.random((n, 2))


def _simple(n, rng, noise):
    x = _unit_square(n, rng)
    return x, x[:, 0] < 0.5


def _diag(n, rng, noise):
    x = _unit_square(n, rng)
    return x, x[:, 0] + x[:, 1] < 0.5


def _split(n, rng, noise):
    x = _unit_square(n, rng)
    return x, (x[:, 0] < 0.2) | (x[:, 0] > 0.8)


def _xor(n, rng, noise):
    x = _unit_square(n, rng)
    return x, (x[:, 0] < 0.5) != (x[:, 1] < 0.5)


def _circle(n, rng, noise):
    x = _unit_square(n, rng)
    c = x - 0.5
    return x, (c * c).sum(axis=1) > 0.1


def _spiral(n, rng, noise):
    # Class 0 winds out from the centre; class 1 is the same curve rotated by pi. The radius grows
    # with the angle, so neighbouring arms alternate classes: a deliberately non-convex problem.
    n0 = n // 2
    n1 = n - n0
    t0 = rng.random(n0) * 3 * np.pi + 0.5
    t1 = rng.random(n1) * 3 * np.pi + 0.5

    def arm(t, phase):
        r = t / (3 * np.pi + 0.5) * 0.45
        return np.stack([0.5 + r * np.cos(t + phase), 0.5 + r * np.sin(t + phase)], axis=1)

    x = np.concatenate([arm(t0, 0.0), arm(t1, np.pi)])
    x = x + rng.normal(0.0, noise, size=x.shape)
    y = np.concatenate([np.zeros(n0, bool), np.ones(n1, bool)])
    return x, y


def _moons(n, rng, noise):
    n0 = n // 2
    n1 = n - n0
    a = rng.random(n0) * np.pi
    b = rng.random(n1) * np.pi
    upper = np.stack([np.cos(a), np.sin(a)], axis=1)
    lower = np.stack([1.0 - np.cos(b), 0.5 - np.sin(b)], axis=1)
    x = np.concatenate([upper, lower]) + rng.normal(0.0, noise, size=(n, 2))
    y = np.concatenate([np.zeros(n0, bool), np.ones(n1, bool)])
    return x, y


_GENERATORS = {
    "simple": _simple,
    "diag": _diag,
    "split": _split,
    "xor": _xor,
    "circle": _circle,
    "spiral": _spiral,
    "moons": _moons,
}
_DEFAULT_NOISE = {"spiral": 0.0, "moons": 0.1}


def make_arrays(name: str, n: int = 100, seed: int = 0, noise: float | None = None):
    """``(X, y)`` as numpy arrays: float32 ``(n, 2)`` points and int64 ``(n,)`` labels.

    ``noise`` (standard deviation of Gaussian jitter) applies to ``spiral`` (default 0) and
    ``moons`` (default 0.1); the unit-square sets are noise-free by construction.
    Points are shuffled, so a prefix of the set is a fair sample of both classes.

    >>> from torchlight.data import synthetic
    >>> X, y = synthetic.make_arrays("xor", 8, seed=0)
    >>> X.shape, X.dtype, y.dtype
    ((8, 2), dtype('float32'), dtype('int64'))
    """
    if name not in _GENERATORS:
        raise ValueError(f"unknown synthetic dataset {name!r}; choose one of {', '.join(NAMES)}")
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 1:
        raise ValueError(f"n must be a positive int, got {n!r}")
    if noise is None:
        noise = _DEFAULT_NOISE.get(name, 0.0)
    if noise < 0:
        raise ValueError(f"noise must be non-negative, got {noise}")
    rng = np.random.default_rng(seed)
    x, y = _GENERATORS[name](int(n), rng, float(noise))
    order = rng.permutation(len(x))  # interleave the classes of spiral/moons
    return x[order].astype(np.float32), y[order].astype(np.int64)


def make(name: str, n: int = 100, seed: int = 0, noise: float | None = None):
    """The named set as a :class:`~torchlight.data.TensorDataset` ``(X, y)``.

    >>> from torchlight.data import synthetic
    >>> ds = synthetic.make("moons", 100, seed=0)
    >>> len(ds), ds[0][0].shape
    (100, (2,))
    """
    import torchlight as tl

    from .dataset import TensorDataset

    x, y = make_arrays(name, n, seed, noise)
    return TensorDataset(tl.from_numpy(x), tl.from_numpy(y))


def simple(n: int = 100, seed: int = 0):
    """Linearly separable: label 1 where ``x0 < 0.5``.

    >>> from torchlight.data import synthetic
    >>> x, label = synthetic.simple(50)[0]
    >>> int(label) == int(x[0] < 0.5)
    True
    """
    return make("simple", n, seed)


def diag(n: int = 100, seed: int = 0):
    """Linearly separable along a diagonal: label 1 where ``x0 + x1 < 0.5``.

    >>> from torchlight.data import synthetic
    >>> x, label = synthetic.diag(50)[0]
    >>> int(label) == int(x[0] + x[1] < 0.5)
    True
    """
    return make("diag", n, seed)


def split(n: int = 100, seed: int = 0):
    """Two outer bands: label 1 where ``x0 < 0.2`` or ``x0 > 0.8``.

    >>> from torchlight.data import synthetic
    >>> len(synthetic.split(20))
    20
    """
    return make("split", n, seed)


def xor(n: int = 100, seed: int = 0):
    """Label 1 in the top-left and bottom-right quadrants (not linearly separable).

    >>> from torchlight.data import synthetic
    >>> x, label = synthetic.xor(4, seed=0)[0]
    >>> x.shape, label.dtype
    ((2,), torchlight.int64)
    """
    return make("xor", n, seed)


def circle(n: int = 100, seed: int = 0):
    """Label 1 outside the circle ``|x - (0.5, 0.5)|^2 = 0.1``.

    >>> from torchlight.data import synthetic
    >>> len(synthetic.circle(30))
    30
    """
    return make("circle", n, seed)


def spiral(n: int = 100, seed: int = 0, noise: float = 0.0):
    """Two interleaved spirals, half the points each.

    >>> from torchlight.data import synthetic
    >>> ds = synthetic.spiral(6)
    >>> sorted(int(ds[i][1]) for i in range(6))
    [0, 0, 0, 1, 1, 1]
    """
    return make("spiral", n, seed, noise)


def moons(n: int = 100, seed: int = 0, noise: float = 0.1):
    """Two interleaving half-moons, half the points each, with Gaussian ``noise``.

    >>> from torchlight.data import synthetic
    >>> ds = synthetic.moons(200, noise=0.05)
    >>> sum(int(ds[i][1]) for i in range(200))
    100
    """
    return make("moons", n, seed, noise)
