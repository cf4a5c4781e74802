"""Backend contract, discovery and selection."""

from .protocol import API_VERSION, MAP_OPS, REDUCE_OPS, ZIP_OPS, Backend, BackendSpec
from .registry import (
    available_backends,
    backend_status,
    get_backend,
    get_default_device,
    register_backend,
    set_default_device,
)
from .threads import get_num_threads, set_num_threads

__all__ = [
    "API_VERSION",
    "MAP_OPS",
    "REDUCE_OPS",
    "ZIP_OPS",
    "Backend",
    "BackendSpec",
    "available_backends",
    "backend_status",
    "get_backend",
    "get_default_device",
    "get_num_threads",
    "register_backend",
    "set_default_device",
    "set_num_threads",
]
