"""More PyTorch schedulers: ``CosineAnnealingWarmRestarts``, ``CyclicLR``, ``PolynomialLR``,
``ChainedScheduler`` (re-exported by :mod:`torchlight.optim.lr_scheduler`, where programs import
them from).

* ``PolynomialLR``: ``lr = base_lr · (1 − min(t, total_iters)/total_iters)^power``.
* ``CosineAnnealingWarmRestarts`` (SGDR, Loshchilov & Hutter): within a cycle of length ``T_i``,
  ``lr = eta_min + (base_lr − eta_min)·(1 + cos(π·T_cur/T_i))/2``; at the end of a cycle
  ``T_cur`` restarts at 0 and ``T_i ← T_i·T_mult``. ``step(epoch)`` accepts fractional epochs.
* ``CyclicLR`` (Smith): with cycle length ``up + down``, ``cycle = floor(1 + t/(up + down))``,
  ``x = 1 + t/(up + down) − cycle``, the position in the cycle ``f = x/r`` rising (``x <= r``,
  ``r = up/(up + down)``) or ``(x − 1)/(r − 1)`` falling, and
  ``lr = base_lr + (max_lr − base_lr)·f·scale``, ``scale`` = 1 (``triangular``),
  ``1/2^(cycle−1)`` (``triangular2``) or ``gamma^t`` (``exp_range``). Momentum (or Adam's β1)
  cycles the opposite way between ``max_momentum`` and ``base_momentum``.
"""

from __future__ import annotations

import math

from .lr_scheduler import LRScheduler, _format_param
from .optimizer import Optimizer

__all__ = ["PolynomialLR", "CosineAnnealingWarmRestarts", "CyclicLR", "ChainedScheduler"]


class PolynomialLR(LRScheduler):
    """``PolynomialLR(optimizer, total_iters=5, power=1.0)``: polynomial decay to 0 at ``total_iters``.

    >>> import torchlight.optim as optim
    >>> opt = optim.SGD([tl.zeros(1, requires_grad=True)], lr=1.0)
    >>> sched = optim.lr_scheduler.PolynomialLR(opt, total_iters=4, power=2.0)
    >>> lrs = []
    >>> for _ in range(5):
    ...     opt.step(); sched.step(); lrs.append(sched.get_last_lr()[0])
    >>> lrs
    [0.5625, 0.25, 0.0625, 0.0, 0.0]
    """

    def __init__(self, optimizer, total_iters=5, power=1.0, last_epoch=-1):
        self.total_iters, self.power = total_iters, power
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        e = self.last_epoch
        if self._is_initial or e == 0 or e > self.total_iters:
            return self._current_lrs()
        factor = ((1.0 - e / self.total_iters) / (1.0 - (e - 1) / self.total_iters)) ** self.power
        return [g["lr"] * factor for g in self.optimizer.param_groups]

    def _get_closed_form_lr(self):
        e = min(self.total_iters, self.last_epoch)
        return [b * (1.0 - e / self.total_iters) ** self.power for b in self.base_lrs]


class CosineAnnealingWarmRestarts(LRScheduler):
    """``CosineAnnealingWarmRestarts(optimizer, T_0, T_mult=1, eta_min=0.0)``: cosine annealing
    restarted every ``T_i`` epochs (``T_0``, then ``T_0·T_mult``, ...).

    >>> import torchlight.optim as optim
    >>> opt = optim.SGD([tl.zeros(1, requires_grad=True)], lr=1.0)
    >>> sched = optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=2)
    >>> lrs = [sched.get_last_lr()[0]]
    >>> for _ in range(4):
    ...     opt.step(); sched.step(); lrs.append(round(sched.get_last_lr()[0], 4))
    >>> lrs
    [1.0, 0.5, 1.0, 0.5, 1.0]
    """

    def __init__(self, optimizer, T_0, T_mult=1, eta_min=0.0, last_epoch=-1):
        if T_0 <= 0 or not isinstance(T_0, int):
            raise ValueError(f"Expected positive integer T_0, but got {T_0}")
        if T_mult < 1 or not isinstance(T_mult, int):
            raise ValueError(f"Expected integer T_mult >= 1, but got {T_mult}")
        self.T_0, self.T_i, self.T_mult, self.eta_min = T_0, T_0, T_mult, eta_min
        self.T_cur = last_epoch
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        c = (1 + math.cos(math.pi * self.T_cur / self.T_i)) / 2
        return [self.eta_min + (b - self.eta_min) * c for b in self.base_lrs]

    def step(self, epoch=None):
        """Advance one epoch, or jump to ``epoch`` (which may be fractional: ``epoch + i/iters``)."""
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur += 1
            if self.T_cur >= self.T_i:
                self.T_cur -= self.T_i
                self.T_i *= self.T_mult
        else:
            if epoch < 0:
                raise ValueError(f"Expected non-negative epoch, but got {epoch}")
            if epoch >= self.T_0:
                if self.T_mult == 1:
                    self.T_cur = epoch % self.T_0
                else:
                    n = int(math.log(epoch / self.T_0 * (self.T_mult - 1) + 1, self.T_mult))
                    self.T_cur = epoch - self.T_0 * (self.T_mult**n - 1) / (self.T_mult - 1)
                    self.T_i = self.T_0 * self.T_mult**n
            else:
                self.T_i, self.T_cur = self.T_0, epoch
        self.last_epoch = math.floor(epoch)
        self._step_count += 1
        for group, lr in zip(self.optimizer.param_groups, self.get_lr()):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]


_CYCLIC_MODES = {
    "triangular": (lambda x: 1.0, "cycle"),
    "triangular2": (lambda x: 1 / (2.0 ** (x - 1)), "cycle"),
}


class CyclicLR(LRScheduler):
    """``CyclicLR(optimizer, base_lr, max_lr, step_size_up=2000, step_size_down=None,
    mode='triangular', gamma=1.0, scale_fn=None, scale_mode='cycle', cycle_momentum=True,
    base_momentum=0.8, max_momentum=0.9)``; step it once per batch.

    >>> import torchlight.optim as optim
    >>> opt = optim.SGD([tl.zeros(1, requires_grad=True)], lr=0.1, momentum=0.9)
    >>> sched = optim.lr_scheduler.CyclicLR(opt, base_lr=0.0, max_lr=1.0, step_size_up=2)
    >>> lrs = [sched.get_last_lr()[0]]
    >>> for _ in range(4):
    ...     opt.step(); sched.step(); lrs.append(sched.get_last_lr()[0])
    >>> lrs
    [0.0, 0.5, 1.0, 0.5, 0.0]
    """

    def __init__(
        self,
        optimizer,
        base_lr,
        max_lr,
        step_size_up=2000,
        step_size_down=None,
        mode="triangular",
        gamma=1.0,
        scale_fn=None,
        scale_mode="cycle",
        cycle_momentum=True,
        base_momentum=0.8,
        max_momentum=0.9,
        last_epoch=-1,
    ):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        base_lrs = _format_param("base_lr", optimizer, base_lr)
        if last_epoch == -1:
            for lr, group in zip(base_lrs, optimizer.param_groups):
                group["lr"] = group["initial_lr"] = lr
        self.max_lrs = _format_param("max_lr", optimizer, max_lr)
        up = float(step_size_up)
        down = float(step_size_down) if step_size_down is not None else up
        self.total_size = up + down
        self.step_ratio = up / self.total_size
        if mode not in ("triangular", "triangular2", "exp_range") and scale_fn is None:
            raise ValueError("mode is invalid and scale_fn is None")
        self.mode, self.gamma = mode, gamma
        self._scale_fn_custom = scale_fn
        if scale_fn is None:
            self.scale_mode = "iterations" if mode == "exp_range" else "cycle"
        else:
            self.scale_mode = scale_mode
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise ValueError(
                    "optimizer must support momentum or beta1 with `cycle_momentum` enabled"
                )
            self.use_beta1 = "betas" in optimizer.defaults
            self.base_momentums = _format_param("base_momentum", optimizer, base_momentum)
            self.max_momentums = _format_param("max_momentum", optimizer, max_momentum)
            if last_epoch == -1:
                for m, group in zip(self.max_momentums, optimizer.param_groups):
                    self._set_momentum(group, m)
        super().__init__(optimizer, last_epoch)
        self.base_lrs = base_lrs

    _transient = ("optimizer", "_scale_fn_custom")

    def _set_momentum(self, group, m):
        if self.use_beta1:
            group["betas"] = (m, *group["betas"][1:])
        else:
            group["momentum"] = m

    def scale_fn(self, x):
        """The amplitude factor of cycle ``x`` (or of iteration ``x`` in ``'iterations'`` mode)."""
        if self._scale_fn_custom is not None:
            return self._scale_fn_custom(x)
        if self.mode == "exp_range":
            return self.gamma**x
        return _CYCLIC_MODES[self.mode][0](x)

    def get_lr(self):
        e = self.last_epoch
        cycle = math.floor(1 + e / self.total_size)
        x = 1.0 + e / self.total_size - cycle
        f = x / self.step_ratio if x <= self.step_ratio else (x - 1) / (self.step_ratio - 1)
        scale = self.scale_fn(cycle if self.scale_mode == "cycle" else e)
        base_lrs = getattr(self, "base_lrs", None) or [
            g["initial_lr"] for g in self.optimizer.param_groups
        ]
        lrs = [b + (m - b) * f * scale for b, m in zip(base_lrs, self.max_lrs)]
        if self.cycle_momentum:
            for group, bm, mm in zip(
                self.optimizer.param_groups, self.base_momentums, self.max_momentums
            ):
                self._set_momentum(group, mm - (mm - bm) * f * scale)
        return lrs


class ChainedScheduler(LRScheduler):
    """``ChainedScheduler(schedulers, optimizer=None)``: every ``step()`` steps all of them in
    order, so their (chainable) effects multiply.

    >>> import torchlight.optim as optim
    >>> from torchlight.optim.lr_scheduler import ChainedScheduler, ConstantLR, ExponentialLR
    >>> opt = optim.SGD([tl.zeros(1, requires_grad=True)], lr=1.0)
    >>> sched = ChainedScheduler([ConstantLR(opt, factor=0.5, total_iters=2), ExponentialLR(opt, gamma=0.5)])
    >>> lrs = [sched.get_last_lr()[0]]
    >>> for _ in range(3):
    ...     opt.step(); sched.step(); lrs.append(sched.get_last_lr()[0])
    >>> lrs
    [0.5, 0.25, 0.25, 0.125]
    """

    _transient = ("optimizer", "_schedulers")

    def __init__(self, schedulers, optimizer=None):
        schedulers = list(schedulers)
        if not schedulers:
            raise ValueError("ChainedScheduler expects at least one scheduler")
        optimizer = optimizer or schedulers[0].optimizer
        for i, s in enumerate(schedulers):
            if getattr(s, "optimizer", None) is not optimizer:
                raise ValueError(
                    f"ChainedScheduler: scheduler {i} ({type(s).__name__}) belongs to another optimizer"
                )
        self._schedulers, self.optimizer = schedulers, optimizer
        self._last_lr = [g["lr"] for g in optimizer.param_groups]

    def step(self, epoch=None):
        for s in self._schedulers:
            s.step()
        self._last_lr = [g["lr"] for g in self.optimizer.param_groups]

    def state_dict(self):
        state = super().state_dict()
        state["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return state

    def load_state_dict(self, state_dict):
        state_dict = dict(state_dict)
        for s, sd in zip(self._schedulers, state_dict.pop("_schedulers")):
            s.load_state_dict(sd)
        super().load_state_dict(state_dict)
