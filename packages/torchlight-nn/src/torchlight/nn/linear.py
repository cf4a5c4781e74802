"""Basic layers: ``Linear``, ``Identity``, ``Flatten``, ``Unflatten``, ``Embedding``, ``Dropout``.

``Linear(in, out)`` computes ``y = x Wᵀ + b`` with ``W: (out, in)``. PyTorch's default
initialisation, reproduced here, is ``kaiming_uniform_(W, a=sqrt(5))`` — which works out to
``W ~ U(-1/sqrt(in), 1/sqrt(in))`` — and ``b ~ U(-1/sqrt(in), 1/sqrt(in))``.

``Embedding(num, dim)`` is a lookup table initialised ``N(0, 1)``; with ``padding_idx`` that row
starts at zero and never receives a gradient (so it stays zero under any optimizer). With
``max_norm``, every row a forward looks up whose ``norm_type``-norm exceeds ``max_norm`` is first
rescaled in place to norm ``max_norm`` (PyTorch's renormalisation, outside autograd).
"""

import math

import torchlight as tl

from . import functional as F
from . import init
from .module import Module
from .parameter import Parameter

__all__ = [
    "Identity",
    "Linear",
    "Bilinear",
    "Flatten",
    "Unflatten",
    "Embedding",
    "Dropout",
    "Dropout1d",
    "Dropout2d",
]


class Identity(Module):
    """Returns its input; accepts and ignores any constructor arguments (as PyTorch's does).

    >>> nn.Identity(54, unused="ignored")(tl.tensor([1.0, 2.0]))
    tensor([1., 2.])
    """

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input


class Linear(Module):
    r"""``Linear(in_features, out_features, bias=True)``: ``y = x Wᵀ + b`` over the last dim.

    The affine map :math:`y = xW^\top + b`. ``weight`` is ``(out_features, in_features)`` and
    ``bias`` ``(out_features,)``, both drawn from :math:`U(-1/\sqrt{\text{in}}, 1/\sqrt{\text{in}})`.

    Shape: input ``(*, in_features)``, output ``(*, out_features)`` (any leading dimensions).

    >>> layer = nn.Linear(3, 2)
    >>> layer(tl.randn(5, 3)).shape, layer.weight.shape
    ((5, 2), (2, 3))
    """

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.weight = Parameter(tl.empty(out_features, in_features, dtype=dtype, device=device))
        if bias:
            self.bias = Parameter(tl.empty(out_features, dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        r"""Re-draw the parameters as PyTorch does: ``weight`` from Kaiming-uniform with
        :math:`a = \sqrt5`, i.e. :math:`U(-1/\sqrt{\text{in}}, 1/\sqrt{\text{in}})`, and ``bias`` from the
        same range.
        """
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init.calculate_fan_in_and_fan_out(self.weight)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input):
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class Bilinear(Module):
    """``Bilinear(in1_features, in2_features, out_features, bias=True)``:
    ``y_k = x1ᵀ W_k x2 + b_k`` with ``W: (out, in1, in2)``; inputs ``(*, in1)`` and ``(*, in2)``.
    Weight and bias start as ``U(−1/sqrt(in1), 1/sqrt(in1))``, as in PyTorch.

    >>> nn.Bilinear(3, 4, 2)(tl.randn(5, 3), tl.randn(5, 4)).shape
    (5, 2)
    """

    def __init__(
        self, in1_features, in2_features, out_features, bias=True, device=None, dtype=None
    ):
        super().__init__()
        self.in1_features, self.in2_features, self.out_features = (
            in1_features,
            in2_features,
            out_features,
        )
        self.weight = Parameter(
            tl.empty(out_features, in1_features, in2_features, dtype=dtype, device=device)
        )
        if bias:
            self.bias = Parameter(tl.empty(out_features, dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        r"""Re-draw ``weight`` and ``bias`` from :math:`U(-1/\sqrt{\text{in1}}, 1/\sqrt{\text{in1}})`, as in PyTorch."""
        bound = 1 / math.sqrt(self.in1_features)
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1, input2):
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self):
        return (
            f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
            f"out_features={self.out_features}, bias={self.bias is not None}"
        )


class Flatten(Module):
    """Flatten dims ``start_dim..end_dim`` (default: all but the batch dim).

    Shape: ``(N, *dims)`` to ``(N, prod(dims))`` with the defaults.

    >>> nn.Flatten()(tl.zeros(2, 3, 4)).shape
    (2, 12)
    """

    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, input):
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self):
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Expand dim ``dim`` into ``unflattened_size``.

    >>> nn.Unflatten(1, (3, 4))(tl.zeros(2, 12)).shape
    (2, 3, 4)
    """

    def __init__(self, dim, unflattened_size):
        super().__init__()
        self.dim, self.unflattened_size = dim, tuple(unflattened_size)

    def forward(self, input):
        return input.unflatten(self.dim, self.unflattened_size)

    def extra_repr(self):
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


class Embedding(Module):
    r"""``Embedding(num_embeddings, embedding_dim, padding_idx=None, max_norm=None, norm_type=2.0)``:
    ``weight[input]``.

    A lookup table: row ``i`` of ``weight`` (``(num_embeddings, embedding_dim)``, drawn from
    :math:`\mathcal N(0, 1)`) is the vector of index ``i``; the row ``padding_idx`` is zero and gets no
    gradient.

    Shape: input of any shape ``S`` holding ``int64`` indices, output ``S + (embedding_dim,)``.

    >>> emb = nn.Embedding(10, 3, max_norm=1.0)
    >>> out = emb(tl.tensor([[1, 2], [4, 9]]))
    >>> out.shape, bool((emb.weight[1].detach() ** 2).sum().sqrt() <= 1.0 + 1e-6)
    ((2, 2, 3), True)
    """

    def __init__(
        self,
        num_embeddings,
        embedding_dim,
        padding_idx=None,
        max_norm=None,
        norm_type=2.0,
        scale_grad_by_freq=False,
        sparse=False,
        _weight=None,
        _freeze=False,
        device=None,
        dtype=None,
    ):
        super().__init__()
        if scale_grad_by_freq or sparse:
            raise NotImplementedError(
                "Embedding: scale_grad_by_freq and sparse gradients are not supported"
            )
        self.max_norm, self.norm_type = max_norm, norm_type
        self.scale_grad_by_freq, self.sparse = scale_grad_by_freq, sparse
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise ValueError(
                    f"padding_idx {padding_idx} must be within num_embeddings ({num_embeddings})"
                )
            padding_idx %= num_embeddings
        self.num_embeddings, self.embedding_dim, self.padding_idx = (
            num_embeddings,
            embedding_dim,
            padding_idx,
        )
        if _weight is None:
            self.weight = Parameter(
                tl.empty(num_embeddings, embedding_dim, dtype=dtype, device=device),
                requires_grad=not _freeze,
            )
            self.reset_parameters()
        else:
            if tuple(_weight.shape) != (num_embeddings, embedding_dim):
                raise tl.ShapeError(
                    f"Embedding: _weight has shape {_weight.shape}, expected {(num_embeddings, embedding_dim)}"
                )
            self.weight = Parameter(_weight, requires_grad=not _freeze)

    def reset_parameters(self):
        r"""Re-draw ``weight`` from :math:`\mathcal N(0, 1)`, with the ``padding_idx`` row zeroed."""
        init.normal_(self.weight)
        if self.padding_idx is not None:
            with tl.no_grad():
                self.weight[self.padding_idx] = 0.0

    @classmethod
    def from_pretrained(
        cls,
        embeddings,
        freeze=True,
        padding_idx=None,
        max_norm=None,
        norm_type=2.0,
        scale_grad_by_freq=False,
        sparse=False,
    ):
        """An embedding whose weight is ``embeddings`` (2-D), frozen by default."""
        if embeddings.ndim != 2:
            raise tl.ShapeError(
                f"Embeddings parameter is expected to be 2-dimensional, got shape {embeddings.shape}"
            )
        rows, cols = embeddings.shape
        return cls(
            rows,
            cols,
            padding_idx=padding_idx,
            max_norm=max_norm,
            norm_type=norm_type,
            scale_grad_by_freq=scale_grad_by_freq,
            sparse=sparse,
            _weight=embeddings.detach(),
            _freeze=freeze,
        )

    def forward(self, input):
        return F.embedding(input, self.weight, self.padding_idx, self.max_norm, self.norm_type)

    def extra_repr(self):
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        return s + (f", padding_idx={self.padding_idx}" if self.padding_idx is not None else "")


class Dropout(Module):
    """Inverted dropout with probability ``p`` in training mode; the identity in eval mode.

    In training each element is zeroed with probability ``p`` and the survivors are multiplied by
    :math:`1/(1-p)`, so the expected value is unchanged.

    Shape: any, output as input.

    >>> drop = nn.Dropout(0.5)
    >>> sorted(set(drop(tl.ones(100)).tolist()))
    [0.0, 2.0]
    >>> drop.eval()(tl.ones(3))
    tensor([1., 1., 1.])
    """

    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p, self.inplace = p, inplace

    def forward(self, input):
        return F.dropout(input, self.p, self.training)

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"


class Dropout1d(Dropout):
    """``Dropout1d(p=0.5)``: drops whole channels of ``(N, C, L)`` input in training mode.

    >>> nn.Dropout1d(0.2).eval()(tl.ones(2, 3, 4)).shape
    (2, 3, 4)
    """

    def forward(self, input):
        return F.dropout1d(input, self.p, self.training)


class Dropout2d(Dropout):
    """``Dropout2d(p=0.5)``: drops whole channels of ``(N, C, H, W)`` input in training mode.

    >>> nn.Dropout2d(0.2).eval()(tl.ones(2, 3, 4, 4)).shape
    (2, 3, 4, 4)
    """

    def forward(self, input):
        return F.dropout2d(input, self.p, self.training)
