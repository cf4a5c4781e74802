"""Loss functions (functional form and modules), PyTorch's definitions and reductions.

Every loss first computes a per-element loss ``ℓ`` and then reduces it with ``reduction``:
``'mean'`` (the default), ``'sum'`` or ``'none'``. Per-element definitions (``x`` input,
``y`` target, ``d = x - y``):

* ``mse_loss``: ``d²``; ``l1_loss``: ``|d|``;
  ``smooth_l1_loss(β)``: ``0.5 d²/β`` if ``|d| < β`` else ``|d| - 0.5β``;
  ``huber_loss(δ)``: ``0.5 d²`` if ``|d| <= δ`` else ``δ(|d| - 0.5δ)``.
* ``nll_loss`` on log-probabilities ``(N, C, d1, ...)`` and class indices ``(N, d1, ...)``:
  ``ℓ_i = -w[y_i] · x[i, y_i]``; entries whose target is ``ignore_index`` are dropped, and
  ``'mean'`` divides by ``Σ_i w[y_i]`` over the kept entries (a *weighted* mean).
* ``cross_entropy = nll_loss(log_softmax(x, dim=1))``. With ``label_smoothing = ε`` the target
  becomes ``(1 - ε)·onehot + ε/C``, i.e. ``ℓ = (1 - ε)·nll + (ε/C)·Σ_c -w_c log p_c``.
  Targets may also be class *probabilities* (same shape as the input): ``ℓ = -Σ_c w_c y_c log p_c``,
  and ``'mean'`` divides by the number of samples.
* ``binary_cross_entropy`` on probabilities: ``-w (y log x + (1 - y) log(1 - x))`` with each log
  clamped at ``-100`` (so ``x = 0`` gives a large finite loss, as in PyTorch).
* ``binary_cross_entropy_with_logits``: with ``l = 1 + (pos_weight - 1) y``,
  ``ℓ = (1 - y) x + l · softplus(-x)``; softplus is evaluated as ``max(-x, 0) + log1p(exp(-|x|))``
  so logits of ±1e4 give exact, finite losses and gradients.
* ``kl_div(x, y)`` with ``x = log q``: ``y (log y - x)`` (``0`` where ``y = 0``), or
  ``exp(y) (y - x)`` with ``log_target=True``; ``'batchmean'`` divides the sum by ``N``.
"""

import functools
import warnings

import numpy as np

import torchlight as tl
from torchlight import Tensor
from torchlight.jit import is_recording
from torchlight.tensor.extension import (
    TensorData,
    cross_entropy_rows,
    host_memory,
    index_range,
    nll_rows,
    ones_cached,
    set_index_range,
    wrap,
)

from .module import Module

__all__ = [
    "mse_loss",
    "l1_loss",
    "smooth_l1_loss",
    "huber_loss",
    "nll_loss",
    "cross_entropy",
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "kl_div",
    "MSELoss",
    "L1Loss",
    "SmoothL1Loss",
    "HuberLoss",
    "NLLLoss",
    "CrossEntropyLoss",
    "BCELoss",
    "BCEWithLogitsLoss",
    "KLDivLoss",
]

_REDUCTIONS = ("mean", "sum", "none")


def _reduce(loss, reduction):
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError(
        f"{reduction!r} is not a valid value for reduction (use 'mean', 'sum' or 'none')"
    )


def legacy_reduction_args(fn):
    """Let ``fn`` (a loss function or a loss module's ``__init__``) also take PyTorch's deprecated
    ``size_average=`` / ``reduce=`` keywords, translated as PyTorch does: ``reduce=False`` →
    ``'none'``, else ``size_average=False`` → ``'sum'``, else ``'mean'`` (with a warning)."""

    @functools.wraps(fn)
    def wrapper(*args, size_average=None, reduce=None, **kwargs):
        if size_average is not None or reduce is not None:
            size_average = True if size_average is None else size_average
            reduce = True if reduce is None else reduce
            reduction = ("mean" if size_average else "sum") if reduce else "none"
            warnings.warn(
                f"size_average and reduce args will be deprecated, please use reduction='{reduction}' "
                "instead.",
                UserWarning,
                stacklevel=2,
            )
            kwargs["reduction"] = reduction
        return fn(*args, **kwargs)

    return wrapper


def _check_pair(input, target, name):
    if not isinstance(target, Tensor):
        target = tl.tensor(target, dtype=input.dtype, device=input.device)
    if target.shape != input.shape:
        warnings.warn(
            f"{name}: using a target size {target.shape} that is different to the input size "
            f"{input.shape}; the two are broadcast, which is likely not what you want"
        )
    return target


@legacy_reduction_args
def mse_loss(input, target, reduction="mean"):
    r"""Mean squared error :math:`\ell_i = (x_i - y_i)^2`, reduced by ``reduction``
    (``"mean"``, ``"sum"`` or ``"none"``). ``input`` and ``target`` should have the same shape (a
    differing shape is broadcast, with a warning).

    >>> F.mse_loss(tl.tensor([1.0, 2.0]), tl.tensor([1.0, 4.0]))
    tensor(2.)
    """
    target = _check_pair(input, target, "mse_loss")
    return _reduce((input - target).square(), reduction)  # one op, saving d once, not d * d


@legacy_reduction_args
def l1_loss(input, target, reduction="mean"):
    r"""Mean absolute error :math:`\ell_i = |x_i - y_i|`, reduced by ``reduction``.

    >>> F.l1_loss(tl.tensor([1.0, 2.0]), tl.tensor([1.0, 4.0]))
    tensor(1.)
    """
    target = _check_pair(input, target, "l1_loss")
    return _reduce((input - target).abs(), reduction)


@legacy_reduction_args
def smooth_l1_loss(input, target, reduction="mean", beta=1.0):
    r"""Smooth L1 loss: quadratic near zero, linear beyond ``beta``:

    .. math:: \ell_i = \begin{cases} 0.5\,d_i^2/\beta & d_i < \beta \\ d_i - 0.5\beta & \text{otherwise}\end{cases},
       \qquad d_i = |x_i - y_i|

    reduced by ``reduction``. ``beta=0`` is the L1 loss.

    >>> F.smooth_l1_loss(tl.tensor([0.0, 0.0]), tl.tensor([0.5, 3.0]), reduction="none")
    tensor([0.125, 2.5  ])
    """
    target = _check_pair(input, target, "smooth_l1_loss")
    if beta < 0:
        raise ValueError(f"smooth_l1_loss does not support negative values for beta, got {beta}")
    d = (input - target).abs()
    if beta == 0:
        return _reduce(d, reduction)
    return _reduce(tl.where(d < beta, d * d * (0.5 / beta), d - 0.5 * beta), reduction)


@legacy_reduction_args
def huber_loss(input, target, reduction="mean", delta=1.0):
    r"""Huber loss: :math:`0.5\,d_i^2` for :math:`d_i = |x_i - y_i| \le \delta`, else
    :math:`\delta(d_i - 0.5\delta)`; reduced by ``reduction``. Equals ``delta * smooth_l1_loss`` with
    ``beta=delta``.

    >>> F.huber_loss(tl.tensor([0.0, 0.0]), tl.tensor([0.5, 3.0]), reduction="none")
    tensor([0.125, 2.5  ])
    """
    target = _check_pair(input, target, "huber_loss")
    d = (input - target).abs()
    return _reduce(tl.where(d <= delta, d * d * 0.5, (d - 0.5 * delta) * delta), reduction)


def _classes_last(x):
    """``(N, C, d1, ...) → (N·d1·..., C)``; a 1-D ``(C,)`` input is one sample."""
    if x.ndim == 2:
        return x
    if x.ndim == 1:
        return x.unsqueeze(0)
    if x.ndim > 2:
        x = x.permute(0, *range(2, x.ndim), 1)
    return x.reshape(-1, x.shape[-1])


def _target_info(input, target, weight, ignore_index, name):
    """Validate class-index targets; return ``(safe_index, w_t)``: flat tensors where
    ``w_t[i] = weight[y_i]`` (1 without weights) and 0 for ignored entries; ``w_t`` is ``None``
    when every target counts once (then a weighted mean is the plain mean, and the losses'
    kernels take no weights)."""
    if target.dtype is not tl.int64:
        raise tl.DTypeError(
            f"{name}: class-index targets must be int64, got {target.dtype} (use .long())"
        )
    c = input.shape[0] if input.ndim == 1 else input.shape[1]
    expected = () if input.ndim == 1 else input.shape[:1] + input.shape[2:]
    if target.shape != expected:
        raise tl.ShapeError(
            f"{name}: input of shape {input.shape} needs a target of shape {expected}, got {target.shape}"
        )
    # Computed on the target's device: a GPU training step reads nothing back to check targets.
    t = target if target.ndim == 1 else target.reshape(-1)
    lo, hi = index_range(t)
    if (
        weight is None
        and 0 <= lo
        and hi < c
        and not lo <= ignore_index <= hi
        and not is_recording()
    ):
        # the common case: every target is a class and none is ignored, known from the recorded
        # range alone, so no op is spent on masks and weights
        return t, None
    # Values outside [0, C) are fine if ignored. The range alone shows it when what overhangs
    # [0, C) is the one value ignore_index (-1 below, the usual mask; C above); otherwise check
    # exactly (on the device, so that one flag crosses to the host).
    exact = (lo < 0 and not lo == ignore_index == -1) or (hi >= c and not hi == ignore_index == c)
    if weight is None and host_memory(t.backend) and not is_recording():
        safe, w_t = _host_mask(t, c, ignore_index, exact, input.dtype, name)
    else:
        valid = t != ignore_index
        if exact:
            bad = valid & ((t < 0) | (t >= c))
            if bad.any().item():
                raise _out_of_bounds(name, int(t.to_numpy()[bad.to_numpy()][0]), c)
        safe = tl.where(valid, t, 0)
        w_t = valid.to(input.dtype)
    set_index_range(safe, 0, max(min(hi, c - 1), 0))
    if weight is not None:
        if weight.shape != (c,):
            raise tl.ShapeError(f"{name}: weight must have shape ({c},), got {weight.shape}")
        w_t = w_t * weight.detach().to(input.dtype).index_select(0, safe)
    return safe, w_t


def _out_of_bounds(name, target, c):
    return tl.TensorIndexError(f"{name}: Target {target} is out of bounds for {c} classes")


def _host_mask(t, c, ignore_index, exact, dtype, name):
    """:func:`_target_info`'s safe targets and weights in numpy, for targets in host memory
    (outside a recording, which must replay the mask's ops): the same tensors, without three
    device ops. ``exact``: check each kept target against ``[0, c)``."""
    tn = t.numpy()
    valid = tn != ignore_index
    if exact:
        bad = valid & ((tn < 0) | (tn >= c))
        if bad.any():
            raise _out_of_bounds(name, int(tn[bad][0]), c)
    return _on(np.where(valid, tn, 0), t, t.dtype), _on(valid.astype(dtype.np), t, dtype)


def _on(array, like, dtype):
    """A tensor of the host array ``array`` (of ``dtype``) on ``like``'s host-memory backend."""
    backend = like.backend
    return wrap(TensorData(backend.from_numpy(array), array.shape), backend, dtype)


@legacy_reduction_args
def nll_loss(input, target, weight=None, ignore_index=-100, reduction="mean"):
    r"""Negative log-likelihood of class indices; ``input`` holds log-probabilities.

    :math:`\ell_n = -w_{y_n} x_{n, y_n}`, averaged over the total weight of the counted targets
    (``reduction="mean"``). Shapes as :class:`~torchlight.nn.NLLLoss`.

    >>> logp = tl.log_softmax(tl.tensor([[2.0, 0.0], [0.0, 2.0]]), dim=1)
    >>> F.nll_loss(logp, tl.tensor([0, 1]))
    tensor(0.1269)
    """
    if reduction not in _REDUCTIONS:
        _reduce(None, reduction)
    info = _target_info(input, target, weight, ignore_index, "nll_loss")
    return _nll(_classes_last(input), *info, target.shape, reduction)


def _nll(rows, safe, w_t, shape, reduction):
    """``-w_t · rows[i, safe_i]`` reduced: NLL of validated targets over (N, C) log-probabilities."""
    return _shaped(nll_rows(rows, safe, w_t, reduction), shape, reduction)


def _shaped(loss, shape, reduction):
    """A row loss node's result: reduced already, or its rows back in the target's ``shape``."""
    return loss.reshape(shape) if reduction == "none" else loss


@legacy_reduction_args
def cross_entropy(
    input, target, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0
):
    r"""Softmax cross-entropy over dim 1 (dim 0 for a 1-D input) with class indices or probabilities.

    With class indices ``target`` (``int64``, shape ``(N)``):
    :math:`\ell_n = -w_{y_n}\log\operatorname{softmax}(x_n)_{y_n}`; with probabilities ``target`` (the
    input's shape): :math:`\ell_n = -\sum_c w_c\, t_{n,c}\log\operatorname{softmax}(x_n)_c`. See
    :class:`~torchlight.nn.CrossEntropyLoss` for ``weight``, ``ignore_index``,
    ``label_smoothing`` and the shapes.

    >>> logits = tl.tensor([[2.0, 0.0], [0.0, 2.0]])
    >>> F.cross_entropy(logits, tl.tensor([0, 1]))
    tensor(0.1269)
    >>> F.cross_entropy(logits[:1], tl.tensor([[0.5, 0.5]]))
    tensor(1.1269)
    """
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"label_smoothing must be between 0.0 and 1.0, got {label_smoothing}")
    if reduction not in _REDUCTIONS:
        _reduce(None, reduction)
    cdim = 0 if input.ndim == 1 else 1
    c = input.shape[cdim]
    if target.dtype.is_floating_point:  # class probabilities
        logp = input.log_softmax(cdim)
        if target.shape != input.shape:
            raise tl.ShapeError(
                f"cross_entropy: probability targets must have the input's shape {input.shape}, got {target.shape}"
            )
        if label_smoothing > 0:
            target = target * (1.0 - label_smoothing) + label_smoothing / c
        prod = logp * target
        if weight is not None:
            prod = prod * weight.detach().reshape((c,) + (1,) * (input.ndim - cdim - 1))
        if reduction == "none":
            return -prod.sum(cdim)
        if reduction == "sum":
            return -prod.sum()
        return -prod.sum() / (input.numel() // c)
    safe, w_t = _target_info(input, target, weight, ignore_index, "cross_entropy")
    if label_smoothing == 0:  # the fused kernel: no N×C log-probabilities kept for backward
        loss = cross_entropy_rows(_classes_last(input), safe, w_t, reduction)
        return _shaped(loss, target.shape, reduction)
    rows = _classes_last(input.log_softmax(cdim))
    nll = _nll(rows, safe, w_t, target.shape, reduction)
    if w_t is None:  # every target counts once
        w_t = ones_cached(safe.shape, input.dtype, input.backend, input)
    if weight is not None:
        rows = rows * weight.detach().to(input.dtype)
    valid = (w_t != 0) if weight is None else (target.reshape(-1) != ignore_index)  # on the device
    smooth = -rows.sum(1) * valid.to(input.dtype)
    if reduction == "none":
        smooth = smooth.reshape(target.shape)
    elif reduction == "sum":
        smooth = smooth.sum()
    else:
        smooth = smooth.sum() / w_t.sum()
    return nll * (1.0 - label_smoothing) + smooth * (label_smoothing / c)


def _log_clamped(x):
    # log(x) clamped at -100 without a NaN gradient at x == 0 (log's backward would divide by 0).
    pos = x > 0
    return x.where(pos, 1.0).log().where(pos, -100.0).clamp(min=-100.0)


@legacy_reduction_args
def binary_cross_entropy(input, target, weight=None, reduction="mean"):
    r"""Binary cross-entropy between probabilities ``input`` (in :math:`[0, 1]`) and ``target``:

    .. math:: \ell_i = -w_i\,[\,y_i \log x_i + (1 - y_i)\log(1 - x_i)\,]

    with each log clamped at -100 (so a probability of exactly 0 or 1 gives a finite loss, as in
    PyTorch); reduced by ``reduction``. Same shapes for ``input`` and ``target``. For raw scores use
    :func:`binary_cross_entropy_with_logits`, which is stabler.

    >>> F.binary_cross_entropy(tl.tensor([0.5, 0.9]), tl.tensor([1.0, 1.0]))
    tensor(0.3993)
    """
    if target.shape != input.shape:
        raise ValueError(
            f"Using a target size ({target.shape}) that is different to the input size ({input.shape}) is deprecated. "
            "Please ensure they have the same size."
        )
    # two scalars cross to the host, not the whole input (it may live on a GPU)
    if input.numel() and (input.detach().min().item() < 0 or input.detach().max().item() > 1):
        raise ValueError(
            "binary_cross_entropy: all elements of input should be between 0 and 1 (use binary_cross_entropy_with_logits for logits)"
        )
    loss = -(target * _log_clamped(input) + (1.0 - target) * _log_clamped(1.0 - input))
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


@legacy_reduction_args
def binary_cross_entropy_with_logits(input, target, weight=None, reduction="mean", pos_weight=None):
    r"""Binary cross-entropy on logits: ``binary_cross_entropy(sigmoid(input), target)`` computed
    stably as

    .. math:: \ell_i = w_i\,[\,(1 - y_i)\,x_i + p_i\,\operatorname{softplus}(-x_i)\,],\qquad
       p_i = 1 + (\text{pos\_weight} - 1)\,y_i

    (``pos_weight`` weighs the positive examples, one value per class); reduced by ``reduction``.

    >>> F.binary_cross_entropy_with_logits(tl.tensor([0.0]), tl.tensor([1.0]))
    tensor(0.6931)
    """
    if target.shape != input.shape:
        raise ValueError(
            f"Target size ({target.shape}) must be the same as input size ({input.shape})"
        )
    # softplus(-x) via the backend's stable kernel (threshold=None: see functional.softplus)
    sp = (-input).softplus(1.0, None)
    if pos_weight is not None:
        log_weight = (pos_weight - 1.0) * target + 1.0
        loss = (1.0 - target) * input + log_weight * sp
    else:
        loss = (1.0 - target) * input + sp
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


@legacy_reduction_args
def kl_div(input, target, reduction="mean", log_target=False):
    r"""KL(target ‖ q) pointwise with ``input = log q``; see the module docstring.

    :math:`\ell_i = y_i(\log y_i - x_i)` for ``input`` :math:`x = \log q` and ``target`` :math:`y`;
    ``reduction="batchmean"`` gives :math:`\mathrm{KL}(y\,\|\,q)` per sample.

    >>> p = tl.tensor([[0.5, 0.5]])
    >>> q = tl.tensor([[0.25, 0.75]])
    >>> F.kl_div(q.log(), p, reduction="batchmean")
    tensor(0.1438)
    """
    if log_target:
        loss = target.exp() * (target - input)
    else:
        pos = target > 0
        log_t = target.where(pos, 1.0).log()  # log 1 = 0 where target == 0, so that term vanishes
        loss = target * (log_t - input)
    if reduction == "batchmean":
        return loss.sum() / (input.shape[0] if input.ndim else 1)
    return _reduce(loss, reduction)


class _Loss(Module):
    @legacy_reduction_args
    def __init__(self, reduction="mean"):
        super().__init__()
        if reduction not in _REDUCTIONS + (("batchmean",) if isinstance(self, KLDivLoss) else ()):
            _reduce(None, reduction)
        self.reduction = reduction

    def extra_repr(self):
        return f"reduction={self.reduction!r}" if self.reduction != "mean" else ""


class _WeightedLoss(_Loss):
    @legacy_reduction_args
    def __init__(self, weight=None, reduction="mean"):
        super().__init__(reduction)
        self.register_buffer("weight", weight)  # a buffer, like PyTorch: it is in state_dict


class MSELoss(_Loss):
    r"""Mean squared error between ``input`` and ``target``: :math:`\ell_i = (x_i - y_i)^2`, then
    ``reduction`` (``"mean"``, ``"sum"`` or ``"none"``). See :func:`~torchlight.nn.functional.mse_loss`.

    Shapes: ``input`` and ``target`` of the same shape; a 0-d output, or the input's shape with
    ``"none"``.

    >>> nn.MSELoss()(tl.tensor([1.0, 2.0]), tl.tensor([1.0, 4.0]))
    tensor(2.)
    """

    def forward(self, input, target):
        return mse_loss(input, target, self.reduction)


class L1Loss(_Loss):
    """Mean absolute error :math:`|x_i - y_i|`, then ``reduction``. Shapes as :class:`MSELoss`.

    >>> nn.L1Loss(reduction="sum")(tl.tensor([1.0, 2.0]), tl.tensor([1.0, 4.0]))
    tensor(2.)
    """

    def forward(self, input, target):
        return l1_loss(input, target, self.reduction)


class SmoothL1Loss(_Loss):
    """Smooth L1 loss (quadratic below ``beta``, linear above); see
    :func:`~torchlight.nn.functional.smooth_l1_loss`. Shapes as :class:`MSELoss`.

    >>> nn.SmoothL1Loss()(tl.tensor([0.0]), tl.tensor([3.0]))
    tensor(2.5)
    """

    @legacy_reduction_args
    def __init__(self, reduction="mean", beta=1.0):
        super().__init__(reduction)
        self.beta = beta

    def forward(self, input, target):
        return smooth_l1_loss(input, target, self.reduction, self.beta)


class HuberLoss(_Loss):
    """Huber loss (quadratic below ``delta``, linear above); see
    :func:`~torchlight.nn.functional.huber_loss`. Shapes as :class:`MSELoss`.

    >>> nn.HuberLoss(delta=2.0)(tl.tensor([0.0]), tl.tensor([3.0]))
    tensor(4.)
    """

    @legacy_reduction_args
    def __init__(self, reduction="mean", delta=1.0):
        super().__init__(reduction)
        self.delta = delta

    def forward(self, input, target):
        return huber_loss(input, target, self.reduction, self.delta)


class NLLLoss(_WeightedLoss):
    r"""Negative log-likelihood of class indices, for log-probabilities (the output of
    :class:`LogSoftmax`): :math:`\ell_n = -w_{y_n}\,x_{n, y_n}`. With ``"mean"`` the sum is divided by
    the total weight of the targets that count; targets equal to ``ignore_index`` contribute nothing.

    Shapes: ``input`` ``(N, C)`` (or ``(N, C, d1, ...)``, or ``(C,)``), ``target`` ``(N)`` (or
    ``(N, d1, ...)``, or ``()``) of ``int64`` class indices in ``[0, C)``; ``weight`` ``(C,)``.

    >>> logp = tl.log_softmax(tl.tensor([[2.0, 0.0], [0.0, 2.0]]), dim=1)
    >>> nn.NLLLoss()(logp, tl.tensor([0, 1]))
    tensor(0.1269)
    """

    @legacy_reduction_args
    def __init__(self, weight=None, ignore_index=-100, reduction="mean"):
        super().__init__(weight, reduction)
        self.ignore_index = ignore_index

    def forward(self, input, target):
        return nll_loss(input, target, self.weight, self.ignore_index, self.reduction)


class CrossEntropyLoss(_WeightedLoss):
    r"""Cross-entropy of raw scores (logits) and class indices: ``NLLLoss`` of ``log_softmax(input)``,

    .. math:: \ell_n = -w_{y_n}\log\frac{e^{x_{n, y_n}}}{\sum_c e^{x_{n, c}}}

    ``label_smoothing`` :math:`\varepsilon` mixes the one-hot target with the uniform distribution
    (:math:`(1-\varepsilon)` on the class, :math:`\varepsilon/C` everywhere). ``weight``,
    ``ignore_index`` and ``reduction`` as in :class:`NLLLoss`.

    Shapes: ``input`` ``(N, C)`` or ``(N, C, d1, ...)`` (e.g. a language model's
    ``(B, V, T)``), ``target`` ``(N)`` or ``(N, d1, ...)`` of ``int64`` indices.

    >>> loss = nn.CrossEntropyLoss()
    >>> loss(tl.tensor([[2.0, 0.0], [0.0, 2.0]]), tl.tensor([0, 1]))
    tensor(0.1269)
    """

    @legacy_reduction_args
    def __init__(self, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
        super().__init__(weight, reduction)
        self.ignore_index, self.label_smoothing = ignore_index, label_smoothing

    def forward(self, input, target):
        return cross_entropy(
            input, target, self.weight, self.ignore_index, self.reduction, self.label_smoothing
        )


class BCELoss(_WeightedLoss):
    """Binary cross-entropy of probabilities (after a :class:`Sigmoid`); see
    :func:`~torchlight.nn.functional.binary_cross_entropy`. ``weight`` rescales each element.

    Shapes: ``input`` and ``target`` of the same shape, values in :math:`[0, 1]`.

    >>> nn.BCELoss()(tl.tensor([0.5]), tl.tensor([1.0]))
    tensor(0.6931)
    """

    def forward(self, input, target):
        return binary_cross_entropy(input, target, self.weight, self.reduction)


class BCEWithLogitsLoss(_Loss):
    """A :class:`Sigmoid` and :class:`BCELoss` in one, computed stably from logits; see
    :func:`~torchlight.nn.functional.binary_cross_entropy_with_logits` (``pos_weight`` weighs
    positives, per class).

    Shapes: ``input`` and ``target`` of the same shape.

    >>> nn.BCEWithLogitsLoss()(tl.tensor([0.0, 0.0]), tl.tensor([1.0, 0.0]))
    tensor(0.6931)
    """

    @legacy_reduction_args
    def __init__(self, weight=None, reduction="mean", pos_weight=None):
        super().__init__(reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input, target):
        return binary_cross_entropy_with_logits(
            input, target, self.weight, self.reduction, self.pos_weight
        )


class KLDivLoss(_Loss):
    r"""Kullback-Leibler divergence :math:`\ell_i = y_i(\log y_i - x_i)` where ``input`` :math:`x` holds
    *log*-probabilities and ``target`` :math:`y` probabilities (or log-probabilities with
    ``log_target=True``). ``reduction="batchmean"`` divides the sum by the batch size, which is the
    mathematical KL divergence; ``"mean"`` divides by the number of elements.

    >>> p = tl.tensor([[0.5, 0.5]])
    >>> nn.KLDivLoss(reduction="batchmean")(p.log(), p)
    tensor(0.)
    """

    @legacy_reduction_args
    def __init__(self, reduction="mean", log_target=False):
        super().__init__(reduction)
        self.log_target = log_target

    def forward(self, input, target):
        return kl_div(input, target, self.reduction, self.log_target)
