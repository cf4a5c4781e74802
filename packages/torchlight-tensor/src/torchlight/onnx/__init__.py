"""``torchlight.onnx``: export a model to `ONNX <https://onnx.ai>`_, PyTorch's ``torch.onnx`` API.

::

    import torchlight.onnx
    torchlight.onnx.export(model, (x,), "model.onnx",
                           input_names=["x"], output_names=["logits"],
                           dynamic_axes={"x": {0: "batch"}, "logits": {0: "batch"}})

The exported file runs in onnxruntime or any ONNX runtime. Export is built on the jit tracer
(:func:`torchlight.jit.trace`): the graph holds the ops that ran for the example arguments,
with the limits of a trace (no data-dependent control flow). Writing the file needs the
``onnx`` package (``pip install 'torchlight-tensor[onnx]'``); importing this module does not.
"""

from .errors import OnnxExportError
from .exporter import export

__all__ = ["export", "OnnxExportError"]
