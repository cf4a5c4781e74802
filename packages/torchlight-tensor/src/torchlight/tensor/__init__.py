"""torchlight.tensor: strided tensors, differentiable ops, the backend contract."""

from . import dtypes
from .backend import get_backend, register_backend
from .tensor import Tensor, where

__all__ = ["Tensor", "dtypes", "get_backend", "register_backend", "where"]
