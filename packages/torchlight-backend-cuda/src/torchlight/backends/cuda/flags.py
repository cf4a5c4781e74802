"""PyTorch's ``torch.backends.cuda.matmul`` switches: permissions for reduced-precision matmuls.

PyTorch lets a program allow TensorFloat-32 (``allow_tf32``) or reduced-precision accumulation of
float16/bfloat16 products in cuBLAS matmuls. They are permissions, not requests: a matmul that
keeps full float32 precision satisfies every setting. This backend's matmul kernels compute in the
tensor's own dtype with float32 accumulation and never use TF32, so the switches are recorded
(a program may read back what it set) and change no result.
"""

__all__ = ["MatmulFlags", "matmul"]


class MatmulFlags:
    """The settable switches of ``torch.backends.cuda.matmul``, with PyTorch's defaults.

    ``allow_tf32`` (default ``False``): matmuls may round float32 inputs to TF32.
    ``allow_fp16_reduced_precision_reduction`` and ``allow_bf16_reduced_precision_reduction``
    (default ``True``): float16/bfloat16 matmuls may accumulate in reduced precision. Setting a
    name that is not one of these raises ``AttributeError``, as PyTorch does.

    >>> from torchlight.backends.cuda.flags import MatmulFlags
    >>> m = MatmulFlags()
    >>> m.allow_tf32
    False
    >>> m.allow_tf32 = True
    >>> m.allow_tf32
    True
    """

    __slots__ = (
        "allow_tf32",
        "allow_fp16_reduced_precision_reduction",
        "allow_bf16_reduced_precision_reduction",
    )

    def __init__(self):
        self.allow_tf32 = False
        self.allow_fp16_reduced_precision_reduction = True
        self.allow_bf16_reduced_precision_reduction = True

    def __repr__(self):
        settings = ", ".join(f"{name}={getattr(self, name)}" for name in self.__slots__)
        return f"MatmulFlags({settings})"


#: The process-wide switches, ``torch.backends.cuda.matmul``.
matmul = MatmulFlags()
