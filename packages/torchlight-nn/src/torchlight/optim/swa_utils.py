"""Weight averaging (``torch.optim.swa_utils``): stochastic weight averaging and EMA models.

* :class:`AveragedModel` keeps a copy of a model whose parameters are an average of the
  trained model's over time: by default the running mean ``p̄ ← p̄ + (p − p̄)/(n + 1)`` (SWA,
  Izmailov et al.), or any ``avg_fn(p̄, p, n)`` / ``multi_avg_fn(p̄s, ps, n)``, e.g. the
  exponential moving average ``p̄ ← decay·p̄ + (1 − decay)·p`` of :func:`get_ema_multi_avg_fn`.
* :class:`SWALR` anneals each group's learning rate from its current value to ``swa_lr`` over
  ``anneal_epochs`` steps (cosine ``(1 − cos πt)/2`` or linear ``t``) and then holds it.
* :func:`update_bn` recomputes BatchNorm running statistics for the averaged weights with one
  pass over the data (cumulative averages, ``momentum=None``).
"""

from __future__ import annotations

import copy
import math

import torchlight as tl
from torchlight import nn

from .lr_scheduler import LRScheduler
from .optimizer import _lerp_

__all__ = ["AveragedModel", "SWALR", "update_bn", "get_ema_multi_avg_fn", "get_ema_avg_fn"]


def get_ema_multi_avg_fn(decay=0.999):
    """``multi_avg_fn`` for an exponential moving average with the given ``decay``.

    >>> from torchlight.optim.swa_utils import get_ema_multi_avg_fn
    >>> ema = get_ema_multi_avg_fn(0.9)
    >>> avg, cur = [tl.zeros(2)], [tl.ones(2)]
    >>> ema(avg, cur, 1); [round(v, 4) for v in avg[0].tolist()]
    [0.1, 0.1]
    """

    def ema_update(ema_param_list, current_param_list, _num_averaged):
        with tl.no_grad():
            for p_ema, p_model in zip(ema_param_list, current_param_list):
                _lerp_(p_ema, p_model.detach(), 1 - decay)

    return ema_update


def get_ema_avg_fn(decay=0.999):
    """``avg_fn`` (one tensor at a time) for an exponential moving average.

    >>> from torchlight.optim.swa_utils import get_ema_avg_fn
    >>> round(get_ema_avg_fn(0.5)(tl.tensor(0.0), tl.tensor(1.0), 3).item(), 4)
    0.5
    """

    def ema_update(ema_param, current_param, num_averaged):
        return decay * ema_param + (1 - decay) * current_param

    return ema_update


class AveragedModel(nn.Module):
    """``AveragedModel(model, device=None, avg_fn=None, multi_avg_fn=None, use_buffers=False)``:
    a deep copy of ``model`` (as ``.module``) whose ``update_parameters(model)`` folds the
    current weights into the average; calling it runs ``module``. ``n_averaged`` counts the
    updates. Without ``use_buffers`` the buffers are copied from ``model`` on each update (then
    use :func:`update_bn`); with it they are averaged like the parameters.

    >>> from torchlight.optim.swa_utils import AveragedModel
    >>> model = nn.Linear(2, 1)
    >>> swa = AveragedModel(model)
    >>> with tl.no_grad():
    ...     _ = model.bias.fill_(0.0); swa.update_parameters(model)
    ...     _ = model.bias.fill_(1.0); swa.update_parameters(model)
    >>> swa.module.bias.tolist(), swa.n_averaged.item()
    ([0.5], 2)
    """

    def __init__(self, model, device=None, avg_fn=None, multi_avg_fn=None, use_buffers=False):
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise ValueError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = copy.deepcopy(model)
        if device is not None:
            self.module.to(device)
        self.register_buffer("n_averaged", tl.tensor(0))
        self.avg_fn, self.multi_avg_fn, self.use_buffers = avg_fn, multi_avg_fn, use_buffers

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def _tensors(self, model):
        return list(model.parameters()) + (list(model.buffers()) if self.use_buffers else [])

    def update_parameters(self, model):
        """Fold ``model``'s current parameters (and buffers with ``use_buffers``) into the average."""
        mine, theirs = self._tensors(self.module), self._tensors(model)
        n = int(self.n_averaged.item())
        with tl.no_grad():
            if n == 0:
                for p_avg, p in zip(mine, theirs):
                    p_avg.detach().copy_(p.detach().to(p_avg.device))
            elif self.multi_avg_fn is not None:
                self.multi_avg_fn(
                    [p.detach() for p in mine],
                    [p.detach().to(a.device) for a, p in zip(mine, theirs)],
                    self.n_averaged,
                )
            else:
                for p_avg, p in zip(mine, theirs):
                    p_model = p.detach().to(p_avg.device)
                    if not p_avg.dtype.is_floating_point:
                        p_avg.detach().copy_(p_model)  # counters such as num_batches_tracked
                    elif self.avg_fn is not None:
                        p_avg.detach().copy_(self.avg_fn(p_avg.detach(), p_model, self.n_averaged))
                    else:
                        p_avg.detach().add_((p_model - p_avg.detach()) * (1.0 / (n + 1)))
            if not self.use_buffers:
                for b_avg, b in zip(self.module.buffers(), model.buffers()):
                    b_avg.detach().copy_(b.detach().to(b_avg.device))
        self.n_averaged = self.n_averaged + 1


class SWALR(LRScheduler):
    """``SWALR(optimizer, swa_lr, anneal_epochs=10, anneal_strategy='cos')``: anneal every group's
    learning rate to ``swa_lr`` (one value or one per group), then keep it.

    >>> from torchlight.optim.swa_utils import SWALR
    >>> opt = tl.optim.SGD([tl.zeros(1, requires_grad=True)], lr=1.0)
    >>> sched = SWALR(opt, swa_lr=0.1, anneal_epochs=3, anneal_strategy="linear")
    >>> lrs = [sched.get_last_lr()[0]]
    >>> for _ in range(4):
    ...     opt.step(); sched.step(); lrs.append(round(sched.get_last_lr()[0], 4))
    >>> lrs
    [1.0, 0.7, 0.4, 0.1, 0.1]
    """

    def __init__(self, optimizer, swa_lr, anneal_epochs=10, anneal_strategy="cos", last_epoch=-1):
        for group, lr in zip(optimizer.param_groups, _per_group(optimizer, swa_lr)):
            group["swa_lr"] = lr
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(
                f"anneal_strategy must by one of 'cos' or 'linear', instead got {anneal_strategy}"
            )
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_strategy, self.anneal_epochs = anneal_strategy, anneal_epochs
        super().__init__(optimizer, last_epoch)

    def _anneal(self, t):
        return (1 - math.cos(math.pi * t)) / 2 if self.anneal_strategy == "cos" else t

    @staticmethod
    def _initial_lr(lr, swa_lr, alpha):
        # the lr the annealing started from, recovered from the current one (it is chainable)
        return swa_lr if alpha == 1 else (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self):
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_alpha = self._anneal(max(0.0, min(1.0, (step - 1) / max(1, self.anneal_epochs))))
        groups = self.optimizer.param_groups
        prev_lrs = [self._initial_lr(g["lr"], g["swa_lr"], prev_alpha) for g in groups]
        alpha = self._anneal(max(0.0, min(1.0, step / max(1, self.anneal_epochs))))
        return [g["swa_lr"] * alpha + lr * (1 - alpha) for g, lr in zip(groups, prev_lrs)]


def _per_group(optimizer, value):
    if isinstance(value, (list, tuple)):
        if len(value) != len(optimizer.param_groups):
            raise ValueError(
                f"swa_lr must have the same length as optimizer.param_groups: swa_lr has {len(value)}, "
                f"optimizer.param_groups has {len(optimizer.param_groups)}"
            )
        return list(value)
    return [value] * len(optimizer.param_groups)


def update_bn(loader, model, device=None):
    """Recompute the running statistics of every BatchNorm in ``model`` with one pass over
    ``loader`` (batches, or ``(input, ...)`` tuples whose first item is fed to the model).

    >>> from torchlight.optim.swa_utils import update_bn
    >>> net = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3))
    >>> update_bn([tl.randn(8, 2) for _ in range(3)], net)
    >>> net[1].num_batches_tracked.item()
    3
    """
    norms = [
        m
        for m in model.modules()
        if isinstance(m, nn.modules.batchnorm.BatchNorm1d)
        or isinstance(m, nn.modules.batchnorm.BatchNorm2d)
    ]
    if not norms:
        return
    momenta = {}
    for m in norms:
        m.reset_running_stats()
        momenta[m] = m.momentum
        m.momentum = None
    was_training = model.training
    model.train()
    with tl.no_grad():
        for batch in loader:
            x = batch[0] if isinstance(batch, (list, tuple)) else batch
            if device is not None:
                x = x.to(device)
            model(x)
    for m, momentum in momenta.items():
        m.momentum = momentum
    model.train(was_training)
