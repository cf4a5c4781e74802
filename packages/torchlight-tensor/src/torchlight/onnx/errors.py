"""The exception :func:`torchlight.onnx.export` raises for a model it cannot write as ONNX."""

from torchlight.autograd.errors import TorchlightError

__all__ = ["OnnxExportError"]


class OnnxExportError(TorchlightError, RuntimeError):
    """A traced op has no ONNX translation, or the model's shapes cannot be expressed in ONNX.

    The message names the op and what to change (export a submodule, fix a size, raise the
    opset version).
    """
