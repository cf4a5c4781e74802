"""``GraphBuilder``: the ONNX graph under construction — nodes, initializers and names.

The op table (:mod:`torchlight.onnx.ops`) writes nodes through this builder only. It hides three
things an op translation should not care about:

* **names**: every ONNX value gets a unique, readable name (``matmul_12``, ``h.0.attn.c_attn.weight``),
* **constants**: ``const(array)`` stores a numpy array as an initializer and returns its name,
* **the opset**: reductions and LayerNormalization changed form between opsets 13 and 18;
  ``reduce`` and ``opset`` let a translation pick the right form.

**Dynamic sizes.** The tape records concrete shapes. The exporter knows which dims of every
value change with the sizes named in ``dynamic_axes`` (it traces twice, with different sizes,
and compares), and shape-valued inputs (Reshape, Expand, Slice) are written so that those dims
are read from the data at run time rather than baked in (``Value.dyn``, ``g.out_dyn``).
"""

import numpy as np

from .errors import OnnxExportError

__all__ = ["GraphBuilder", "Value", "onnx_dtype"]

MIN_OPSET = 13  # Unsqueeze/Squeeze/ReduceSum take axes as inputs, Softmax is per-axis
INT64_MAX = np.iinfo(np.int64).max  # "to the end" in Slice


def onnx_dtype(dtype):
    """The ``TensorProto`` element type of a torchlight dtype."""
    from onnx import TensorProto

    table = {
        "float32": TensorProto.FLOAT,
        "float64": TensorProto.DOUBLE,
        "int64": TensorProto.INT64,
        "bool": TensorProto.BOOL,
    }
    return table[dtype.name]


class Value:
    """An ONNX value as a translation sees it: its name, traced shape and dtype, and which of
    its dims are dynamic (change size at run time)."""

    __slots__ = ("name", "shape", "dtype", "dyn")

    def __init__(self, name, shape, dtype, dyn=frozenset()):
        self.name = name
        self.shape = tuple(shape)
        self.dtype = dtype
        self.dyn = frozenset(dyn)

    @property
    def ndim(self):
        """The number of dimensions of the value (``len(shape)``)."""
        return len(self.shape)

    def __repr__(self):
        return f"Value({self.name} {self.shape} {self.dtype.name})"


class GraphBuilder:
    """Collects ONNX nodes and initializers; see the module docstring."""

    def __init__(self, opset):
        if opset < MIN_OPSET:
            raise OnnxExportError(
                f"opset_version {opset} is too old; torchlight exports opset {MIN_OPSET} or newer"
            )
        self.opset = opset
        self.nodes = []
        self.initializers = []
        self.out_dyn = frozenset()  # the dynamic dims of the op being translated
        self.matmul_only = frozenset()  # tape slots only matrix products read (exporter.py)
        self.out_slot = None  # the tape slot of the op being translated
        self._used = set()
        self._consts = {}

    # --- names ---------------------------------------------------------------------------------
    def fresh(self, base):
        """A name not used yet, derived from ``base``."""
        name, k = base, 1
        while name in self._used:
            name = f"{base}_{k}"
            k += 1
        self._used.add(name)
        return name

    def reserve(self, name):
        """Claim ``name`` for a graph input or output as given by the user; raises
        :class:`OnnxExportError` when it is already taken (ONNX names must be unique)."""
        if name in self._used:
            raise OnnxExportError(
                f"the name {name!r} is used twice in the exported graph; pass distinct names"
            )
        self._used.add(name)
        return name

    # --- graph pieces --------------------------------------------------------------------------
    def node(self, op_type, inputs, n_outputs=1, name=None, **attrs):
        """Append ``op_type(inputs)``; returns its output name (a list when ``n_outputs > 1``).
        An input given as ``None`` is an omitted optional input (ONNX's empty name)."""
        from onnx import helper

        outputs = [self.fresh(name or op_type.lower()) for _ in range(n_outputs)]
        ins = ["" if i is None else i for i in inputs]
        self.nodes.append(helper.make_node(op_type, ins, outputs, **attrs))
        return outputs[0] if n_outputs == 1 else outputs

    def const(self, array, name="const"):
        """An initializer holding ``array`` (identical small constants are stored once)."""
        from onnx import numpy_helper

        arr = np.asarray(array)
        key = (arr.dtype.str, arr.shape, arr.tobytes()) if arr.size <= 64 else None
        if key is not None and key in self._consts:
            return self._consts[key]
        cname = self.fresh(name)
        self.initializers.append(numpy_helper.from_array(arr, cname))
        if key is not None:
            self._consts[key] = cname
        return cname

    def ints(self, values, name="shape"):
        """A 1-D int64 initializer (shapes, axes, pads)."""
        return self.const(np.asarray(list(values), dtype=np.int64), name)

    def scalar(self, value, dtype, name="scalar"):
        """A 0-d initializer of a torchlight dtype (matches the other operand's element type)."""
        return self.const(np.asarray(value, dtype=dtype.np), name)

    # --- opset-dependent forms -----------------------------------------------------------------
    def reduce(self, op_type, x, axes, keepdims, name=None):
        """``ReduceSum``/``ReduceMax``/... over ``axes``: axes are an input from opset 13 for
        ReduceSum and from opset 18 for the others, an attribute before."""
        axes = [int(a) for a in axes]
        if op_type == "ReduceSum" or self.opset >= 18:
            return self.node(
                op_type, [x, self.ints(axes, "axes")], keepdims=int(keepdims), name=name
            )
        return self.node(op_type, [x], axes=axes, keepdims=int(keepdims), name=name)

    # --- dynamic sizes -------------------------------------------------------------------------
    def reshape_target(self, x, out_shape, out_dyn):
        """The ``shape`` input of a Reshape of ``x`` to ``out_shape`` (traced sizes) whose dims
        ``out_dyn`` are dynamic: a dynamic dim that stays where the input had it is ``0`` (copy
        the input's size), one other dynamic dim is ``-1`` (inferred: a merge such as
        ``(B, T) -> (B·T,)`` or a split back), every static dim its traced size."""
        target = [int(n) for n in out_shape]
        inferred = [
            k
            for k in sorted(out_dyn)
            if not (k < x.ndim and k in x.dyn and x.shape[k] == out_shape[k])
        ]
        for k in out_dyn:
            if k not in inferred:
                target[k] = 0
        if len(inferred) > 1:
            raise OnnxExportError(
                f"a reshape from {x.shape} to {tuple(out_shape)} moves {len(inferred)} dynamic sizes; "
                "ONNX Reshape can infer only one. Make fewer axes dynamic"
            )
        if inferred:
            target[inferred[0]] = -1
        return target
