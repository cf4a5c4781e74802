"""torchlight.backends.numba: a parallel CPU-JIT backend (distribution ``torchlight-backend-numba``).

Select it with ``device="numba"``. Importing this package (and its entry point, ``.spec``) does
not import numba; the kernels compile on first use and are cached on disk (``cache=True``).
``NumbaBackend`` is resolved lazily so ``import torchlight`` stays fast. The backend lists the
``"compile"`` capability: ``torchlight.jit`` replays fuse elementwise chains into generated
kernels (``numba_source(chain)`` shows one).
"""

__all__ = ["NumbaBackend", "SPEC", "numba_source"]


def __getattr__(name):
    if name == "NumbaBackend":
        from .backend import NumbaBackend

        return NumbaBackend
    if name == "numba_source":  # the fused-kernel source for a torchlight.jit ElementwiseChain
        from ._fusion import numba_source

        return numba_source
    if name == "SPEC":
        from .spec import SPEC

        return SPEC
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
