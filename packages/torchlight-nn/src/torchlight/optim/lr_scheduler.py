"""Learning-rate schedulers with PyTorch's semantics and step timing.

Constructing a scheduler *is* epoch 0: it records ``initial_lr`` in every param group (once — a
second scheduler on the same optimizer shares it), sets the epoch-0 learning rate and leaves
``last_epoch == 0``. Each ``scheduler.step()`` — called after ``optimizer.step()`` — moves to the
next epoch. ``get_last_lr()`` is what the optimizer uses now.

Like PyTorch, ``get_lr()`` is *chainable*: it computes the next learning rate from the current
``group["lr"]`` (so two schedulers on one optimizer compose), and ``step(epoch)`` (deprecated)
uses the closed-form formula where one exists. ``state_dict()`` holds everything but the
optimizer (and lambdas), in plain Python types, so :func:`torchlight.save` can store it.
"""

from __future__ import annotations

import math
import types
import warnings
from bisect import bisect_right
from collections import Counter

from .optimizer import Optimizer

__all__ = [
    "LRScheduler",
    "_LRScheduler",
    "LambdaLR",
    "MultiplicativeLR",
    "StepLR",
    "MultiStepLR",
    "ConstantLR",
    "LinearLR",
    "ExponentialLR",
    "CosineAnnealingLR",
    "SequentialLR",
    "OneCycleLR",
    "ReduceLROnPlateau",
    "PolynomialLR",
    "CosineAnnealingWarmRestarts",
    "CyclicLR",
    "ChainedScheduler",
]

_EPOCH_DEPRECATION = (
    "the epoch parameter in `scheduler.step()` is deprecated (as in PyTorch): call "
    "`scheduler.step()` once per epoch/iteration instead"
)


def _format_param(name, optimizer, value):
    """One value per param group: a scalar is broadcast, a list must match the group count."""
    if isinstance(value, (list, tuple)):
        if len(value) != len(optimizer.param_groups):
            raise ValueError(
                f"expected {len(optimizer.param_groups)} values for {name}, got {len(value)}"
            )
        return list(value)
    return [value] * len(optimizer.param_groups)


class LRScheduler:
    """Base class: subclasses implement ``get_lr()`` (chainable) and optionally
    ``_get_closed_form_lr()``."""

    _transient: tuple[str, ...] = ("optimizer",)

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(
                        f"param 'initial_lr' is not specified in param_groups[{i}] when resuming a "
                        "scheduler with last_epoch >= 0; load the optimizer's state dict first"
                    )
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self._initial_step()

    def _initial_step(self) -> None:
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    # --- the schedule ------------------------------------------------------------------------
    def get_lr(self) -> list:
        """The learning rate of each parameter group for the current ``last_epoch`` (one float per
        group): what a subclass defines to make a schedule. :meth:`step` writes these values into the
        optimizer's groups.
        """
        raise NotImplementedError(f"{type(self).__name__} must implement get_lr()")

    def get_last_lr(self) -> list:
        """The learning rates this scheduler set last (one per param group)."""
        return list(self._last_lr)

    def step(self, epoch: int | None = None) -> None:
        """Advance the schedule one epoch (or one batch, for per-batch schedules) and set each
        group's ``lr``; call it after ``optimizer.step()``.

        >>> w = nn.Parameter(tl.zeros(1))
        >>> opt = tl.optim.SGD([w], lr=1.0)
        >>> sched = tl.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
        >>> lrs = []
        >>> for epoch in range(5):
        ...     opt.step()
        ...     sched.step()
        ...     lrs.append(sched.get_last_lr()[0])
        >>> lrs
        [1.0, 0.5, 0.5, 0.25, 0.25]
        """
        if self._step_count == 1 and not self._is_initial:
            opt = self.optimizer
            if type(opt).step is Optimizer.step and getattr(opt, "_opt_step_count", 1) == 0:
                warnings.warn(
                    "Detected call of `lr_scheduler.step()` before `optimizer.step()`; call them "
                    "in the opposite order, or the first value of the schedule is skipped",
                    UserWarning,
                    stacklevel=2,
                )
        self._step_count += 1
        if epoch is not None:
            warnings.warn(_EPOCH_DEPRECATION, UserWarning, stacklevel=2)
        self._update_lr(epoch)

    def _update_lr(self, epoch: int | None = None) -> None:
        if epoch is None:
            self.last_epoch += 1
            values = self.get_lr()
        else:
            self.last_epoch = epoch
            closed = getattr(self, "_get_closed_form_lr", None)
            values = closed() if closed is not None else self.get_lr()
        for group, lr in zip(self.optimizer.param_groups, values):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def _current_lrs(self) -> list:
        return [group["lr"] for group in self.optimizer.param_groups]

    # --- state -------------------------------------------------------------------------------
    def state_dict(self) -> dict:
        """Every attribute but the optimizer (plain Python values: ints, floats, lists, ...)."""
        return {k: v for k, v in self.__dict__.items() if k not in self._transient}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore the schedule from :meth:`state_dict` (e.g. when resuming a training run from a
        checkpoint).
        """
        self.__dict__.update(state_dict)

    def __repr__(self):
        return f"{type(self).__name__}(last_epoch={self.last_epoch}, last_lr={self._last_lr})"


_LRScheduler = LRScheduler
"""The base class's name before PyTorch 2.0 (``torch.optim.lr_scheduler._LRScheduler``), still
subclassed by many custom schedulers."""


class LambdaLR(LRScheduler):
    """``lr = base_lr · lr_lambda(epoch)`` (one function, or one per param group).

    >>> from torchlight.optim.lr_scheduler import LambdaLR
    >>> opt = tl.optim.SGD([nn.Parameter(tl.zeros(1))], lr=1.0)
    >>> sched = LambdaLR(opt, lambda epoch: 1 / (epoch + 1))
    >>> lrs = []
    >>> for epoch in range(5):
    ...     lrs.append(round(sched.get_last_lr()[0], 4))
    ...     opt.step()
    ...     sched.step()
    >>> lrs
    [1.0, 0.5, 0.3333, 0.25, 0.2]
    """

    _transient = ("optimizer", "lr_lambdas")

    def __init__(self, optimizer, lr_lambda, last_epoch=-1):
        if isinstance(lr_lambda, (list, tuple)):
            if len(lr_lambda) != len(optimizer.param_groups):
                raise ValueError(
                    f"expected {len(optimizer.param_groups)} lr_lambdas, got {len(lr_lambda)}"
                )
            self.lr_lambdas = list(lr_lambda)
        else:
            self.lr_lambdas = [lr_lambda] * len(optimizer.param_groups)
        super().__init__(optimizer, last_epoch)

    def state_dict(self):
        # Plain functions are not saved; callable objects save their attributes (as PyTorch).
        state = super().state_dict()
        state["lr_lambdas"] = [
            None if isinstance(fn, types.FunctionType) else dict(getattr(fn, "__dict__", {}))
            for fn in self.lr_lambdas
        ]
        return state

    def load_state_dict(self, state_dict):
        state_dict = dict(state_dict)
        lambdas = state_dict.pop("lr_lambdas", None) or []
        super().load_state_dict(state_dict)
        for fn, saved in zip(self.lr_lambdas, lambdas):
            if saved is not None:
                fn.__dict__.update(saved)

    def get_lr(self):
        return [base * fn(self.last_epoch) for fn, base in zip(self.lr_lambdas, self.base_lrs)]


class MultiplicativeLR(LambdaLR):
    """``lr ← lr · lr_lambda(epoch)`` at every step after the first.

    >>> from torchlight.optim.lr_scheduler import MultiplicativeLR
    >>> opt = tl.optim.SGD([nn.Parameter(tl.zeros(1))], lr=1.0)
    >>> sched = MultiplicativeLR(opt, lambda epoch: 0.9)
    >>> lrs = []
    >>> for epoch in range(5):
    ...     lrs.append(round(sched.get_last_lr()[0], 4))
    ...     opt.step()
    ...     sched.step()
    >>> lrs
    [1.0, 0.9, 0.81, 0.729, 0.6561]
    """

    def get_lr(self):
        if self.last_epoch > 0 and not self._is_initial:
            return [
                g["lr"] * fn(self.last_epoch)
                for fn, g in zip(self.lr_lambdas, self.optimizer.param_groups)
            ]
        return self._current_lrs()


class StepLR(LRScheduler):
    """``lr = base_lr · gamma^(epoch // step_size)``.

    >>> from torchlight.optim.lr_scheduler import StepLR
    >>> opt = tl.optim.SGD([nn.Parameter(tl.zeros(1))], lr=1.0)
    >>> sched = StepLR(opt, step_size=2, gamma=0.1)
    >>> lrs = []
    >>> for epoch in range(5):
    ...     lrs.append(round(sched.get_last_lr()[0], 4))
    ...     opt.step()
    ...     sched.step()
    >>> lrs
    [1.0, 1.0, 0.1, 0.1, 0.01]
    """

    def __init__(self, optimizer, step_size, gamma=0.1, last_epoch=-1):
        if int(step_size) <= 0:
            raise ValueError(f"step_size must be a positive integer, got {step_size}")
        self.step_size = int(step_size)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return self._current_lrs()
        return [g["lr"] * self.gamma for g in self.optimizer.param_groups]

    def _get_closed_form_lr(self):
        return [b * self.gamma ** (self.last_epoch // self.step_size) for b in self.base_lrs]


class MultiStepLR(LRScheduler):
    """``lr = base_lr · gamma^(number of milestones <= epoch)``.

    >>> from torchlight.optim.lr_scheduler import MultiStepLR
    >>> opt = tl.optim.SGD([nn.Parameter(tl.zeros(1))], lr=1.0)
    >>> sched = MultiStepLR(opt, milestones=[1, 3], gamma=0.1)
    >>> lrs = []
    >>> for epoch in range(5):
    ...     lrs.append(round(sched.get_last_lr()[0], 4))
    ...     opt.step()
    ...     sched.step()
    >>> lrs
    [1.0, 0.1, 0.1, 0.01, 0.01]
    """

    def __init__(self, optimizer, milestones, gamma=0.1, last_epoch=-1):
        self.milestones = Counter(int(m) for m in milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        if self.last_epoch not in self.milestones:
            return self._current_lrs()
        return [
            g["lr"] * self.gamma ** self.milestones[self.last_epoch]
            for g in self.optimizer.param_groups
        ]

    def _get_closed_form_lr(self):
        ms = sorted(self.milestones.elements())
        return [b * self.gamma ** bisect_right(ms, self.last_epoch) for b in self.base_lrs]

    def state_dict(self):
        state = super().state_dict()
        state["milestones"] = {int(k): int(v) for k, v in self.milestones.items()}
        return state

    def load_state_dict(self, state_dict):
        super().load_state_dict(state_dict)
        self.milestones = Counter({int(k): int(v) for k, v in dict(self.milestones).items()})


class ConstantLR(LRScheduler):
    """``lr = base_lr · factor`` until ``total_iters``, then ``base_lr``.

    >>> from torchlight.optim.lr_scheduler import ConstantLR
    >>> opt = tl.optim.SGD([nn.Parameter(tl.zeros(1))], lr=1.0)
    >>> sched = ConstantLR(opt, factor=0.5, total_iters=2)
    >>> lrs = []
    >>> for epoch in range(5):
    ...     lrs.append(round(sched.get_last_lr()[0], 4))
    ...     opt.step()
    ...     sched.step()
    >>> lrs
    [0.5, 0.5, 1.0, 1.0, 1.0]
    """

    def __init__(self, optimizer, factor=1.0 / 3, total_iters=5, last_epoch=-1):
        if factor > 1.0 or factor < 0:
            raise ValueError("constant factor must be in [0, 1]")
        self.factor = factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        if self.last_epoch == 0:
            return [g["lr"] * self.factor for g in self.optimizer.param_groups]
        if self.last_epoch != self.total_iters:
            return self._current_lrs()
        return [g["lr"] * (1.0 / self.factor) for g in self.optimizer.param_groups]

    def _get_closed_form_lr(self):
        f = self.factor + (self.last_epoch >= self.total_iters) * (1 - self.factor)
        return [b * f for b in self.base_lrs]


class LinearLR(LRScheduler):
    """``lr = base_lr · (start + (end − start) · min(epoch, total_iters) / total_iters)``.

    >>> from torchlight.optim.lr_scheduler import LinearLR
    >>> opt = tl.optim.SGD([nn.Parameter(tl.zeros(1))], lr=1.0)
    >>> sched = LinearLR(opt, start_factor=0.25, total_iters=3)
    >>> lrs = []
    >>> for epoch in range(5):
    ...     lrs.append(round(sched.get_last_lr()[0], 4))
    ...     opt.step()
    ...     sched.step()
    >>> lrs
    [0.25, 0.5, 0.75, 1.0, 1.0]
    """

    def __init__(
        self, optimizer, start_factor=1.0 / 3, end_factor=1.0, total_iters=5, last_epoch=-1
    ):
        if start_factor > 1.0 or start_factor <= 0:
            raise ValueError("starting multiplicative factor must be in (0, 1]")
        if end_factor > 1.0 or end_factor < 0:
            raise ValueError("ending multiplicative factor must be in [0, 1]")
        self.start_factor = start_factor
        self.end_factor = end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        if self.last_epoch == 0:
            return [g["lr"] * self.start_factor for g in self.optimizer.param_groups]
        if self._is_initial or self.last_epoch > self.total_iters:
            return self._current_lrs()
        d = self.end_factor - self.start_factor
        scale = 1.0 + d / (self.total_iters * self.start_factor + (self.last_epoch - 1) * d)
        return [g["lr"] * scale for g in self.optimizer.param_groups]

    def _get_closed_form_lr(self):
        frac = min(self.total_iters, self.last_epoch) / self.total_iters
        return [
            b * (self.start_factor + (self.end_factor - self.start_factor) * frac)
            for b in self.base_lrs
        ]


class ExponentialLR(LRScheduler):
    """``lr = base_lr · gamma^epoch``.

    >>> from torchlight.optim.lr_scheduler import ExponentialLR
    >>> opt = tl.optim.SGD([nn.Parameter(tl.zeros(1))], lr=1.0)
    >>> sched = ExponentialLR(opt, gamma=0.5)
    >>> lrs = []
    >>> for epoch in range(5):
    ...     lrs.append(round(sched.get_last_lr()[0], 4))
    ...     opt.step()
    ...     sched.step()
    >>> lrs
    [1.0, 0.5, 0.25, 0.125, 0.0625]
    """

    def __init__(self, optimizer, gamma, last_epoch=-1):
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        if self._is_initial:
            return self._current_lrs()
        return [g["lr"] * self.gamma for g in self.optimizer.param_groups]

    def _get_closed_form_lr(self):
        return [b * self.gamma**self.last_epoch for b in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """``lr = eta_min + (base_lr − eta_min)·(1 + cos(π·epoch/T_max))/2`` (SGDR without restarts;
    past ``T_max`` the cosine continues, as in PyTorch).

    >>> from torchlight.optim.lr_scheduler import CosineAnnealingLR
    >>> opt = tl.optim.SGD([nn.Parameter(tl.zeros(1))], lr=1.0)
    >>> sched = CosineAnnealingLR(opt, T_max=4)
    >>> lrs = []
    >>> for epoch in range(5):
    ...     lrs.append(round(sched.get_last_lr()[0], 4))
    ...     opt.step()
    ...     sched.step()
    >>> lrs
    [1.0, 0.8536, 0.5, 0.1464, 0.0]
    """

    def __init__(self, optimizer, T_max, eta_min=0.0, last_epoch=-1):
        if T_max <= 0:
            raise ValueError(f"T_max must be positive, got {T_max}")
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        T, eta_min, e = self.T_max, self.eta_min, self.last_epoch
        if self._is_initial:
            return self._current_lrs()
        if self._step_count == 1 and e > 0:
            return [
                eta_min + (b - eta_min) * (1 + math.cos(e * math.pi / T)) / 2 for b in self.base_lrs
            ]
        if (e - 1 - T) % (2 * T) == 0:
            return [
                g["lr"] + (b - eta_min) * (1 - math.cos(math.pi / T)) / 2
                for b, g in zip(self.base_lrs, self.optimizer.param_groups)
            ]
        ratio = (1 + math.cos(math.pi * e / T)) / (1 + math.cos(math.pi * (e - 1) / T))
        return [ratio * (g["lr"] - eta_min) + eta_min for g in self.optimizer.param_groups]

    def _get_closed_form_lr(self):
        c = (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
        return [self.eta_min + (b - self.eta_min) * c for b in self.base_lrs]


class SequentialLR(LRScheduler):
    """Run ``schedulers[i]`` from ``milestones[i-1]`` on (e.g. a LinearLR warmup, then cosine).

    At a milestone the next scheduler restarts at its own epoch 0 (closed form), so a cosine
    after a warmup starts from the base learning rate.

    >>> from torchlight.optim.lr_scheduler import ExponentialLR, LinearLR, SequentialLR
    >>> opt = tl.optim.SGD([nn.Parameter(tl.zeros(1))], lr=1.0)
    >>> sched = SequentialLR(opt, [LinearLR(opt, start_factor=0.5, total_iters=2),
    ...                              ExponentialLR(opt, gamma=0.5)], milestones=[2])
    >>> lrs = []
    >>> for epoch in range(5):
    ...     lrs.append(round(sched.get_last_lr()[0], 4))
    ...     opt.step()
    ...     sched.step()
    >>> lrs
    [0.5, 0.75, 1.0, 0.5, 0.25]
    """

    _transient = ("optimizer", "_schedulers")

    def __init__(self, optimizer, schedulers, milestones, last_epoch=-1):
        schedulers = list(schedulers)
        if len(schedulers) < 1:
            raise ValueError("SequentialLR expects at least one scheduler")
        for i, s in enumerate(schedulers):
            if isinstance(s, ReduceLROnPlateau):
                raise ValueError(f"SequentialLR does not support ReduceLROnPlateau (index {i})")
            if getattr(s, "optimizer", None) is not optimizer:
                raise ValueError(
                    f"SequentialLR: scheduler {i} ({type(s).__name__}) belongs to another optimizer"
                )
        milestones = [int(m) for m in milestones]
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(
                f"SequentialLR needs one milestone fewer than schedulers, got {len(schedulers)} "
                f"schedulers and {len(milestones)} milestones"
            )
        if milestones != sorted(milestones):
            raise ValueError(f"SequentialLR milestones must be increasing, got {milestones}")
        self._schedulers = schedulers
        self._milestones = milestones
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        for group in optimizer.param_groups:
            group["lr"] = group["initial_lr"]
        for s in schedulers:  # undo the initial step each scheduler took when it was built
            s.last_epoch -= 1
        idx = bisect_right(milestones, 0)
        schedulers[idx]._initial_step()
        self._last_lr = schedulers[idx].get_last_lr()
        self._step_count = 1
        self._is_initial = False

    def step(self, epoch=None):
        """Advance the active scheduler; at each milestone hand over to the next one."""
        if epoch is not None:
            raise TypeError("SequentialLR.step() takes no epoch")
        self.last_epoch += 1
        idx = bisect_right(self._milestones, self.last_epoch)
        scheduler = self._schedulers[idx]
        if idx > 0 and self._milestones[idx - 1] == self.last_epoch:
            scheduler._update_lr(0)
        else:
            scheduler.step()
        self._last_lr = scheduler.get_last_lr()

    def state_dict(self):
        state = super().state_dict()
        state["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return state

    def load_state_dict(self, state_dict):
        """Restore this scheduler and each of the schedulers it chains from :meth:`state_dict`."""
        state_dict = dict(state_dict)
        subs = state_dict.pop("_schedulers")
        if len(subs) != len(self._schedulers):
            raise ValueError(
                f"SequentialLR state has {len(subs)} schedulers, this one has {len(self._schedulers)}"
            )
        super().load_state_dict(state_dict)
        for s, sd in zip(self._schedulers, subs):
            s.load_state_dict(sd)


class OneCycleLR(LRScheduler):
    """The 1cycle policy (Smith & Topin): warm up from ``max_lr/div_factor`` to ``max_lr`` over
    ``pct_start`` of ``total_steps``, then anneal to ``initial_lr/final_div_factor``; momentum
    (or Adam's β1) cycles the other way. Step it once per batch.

    >>> from torchlight.optim.lr_scheduler import OneCycleLR
    >>> opt = tl.optim.SGD([nn.Parameter(tl.zeros(1))], lr=1.0)
    >>> sched = OneCycleLR(opt, max_lr=1.0, total_steps=5)
    >>> lrs = []
    >>> for epoch in range(5):
    ...     lrs.append(round(sched.get_last_lr()[0], 4))
    ...     opt.step()
    ...     sched.step()
    >>> lrs
    [0.04, 0.9505, 0.6113, 0.1883, 0.0]
    """

    def __init__(
        self,
        optimizer,
        max_lr,
        total_steps=None,
        epochs=None,
        steps_per_epoch=None,
        pct_start=0.3,
        anneal_strategy="cos",
        cycle_momentum=True,
        base_momentum=0.85,
        max_momentum=0.95,
        div_factor=25.0,
        final_div_factor=1e4,
        three_phase=False,
        last_epoch=-1,
    ):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        if total_steps is not None:
            if not isinstance(total_steps, int) or total_steps <= 0:
                raise ValueError(f"expected a positive integer total_steps, got {total_steps}")
            self.total_steps = total_steps
        elif epochs is not None and steps_per_epoch is not None:
            if not isinstance(epochs, int) or epochs <= 0:
                raise ValueError(f"expected a positive integer epochs, got {epochs}")
            if not isinstance(steps_per_epoch, int) or steps_per_epoch <= 0:
                raise ValueError(
                    f"expected a positive integer steps_per_epoch, got {steps_per_epoch}"
                )
            self.total_steps = epochs * steps_per_epoch
        else:
            raise ValueError("you must define either total_steps OR (epochs AND steps_per_epoch)")
        if not isinstance(pct_start, float) or not 0 <= pct_start <= 1:
            raise ValueError(f"expected a float pct_start between 0 and 1, got {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be 'cos' or 'linear', got {anneal_strategy!r}")
        self.anneal_strategy = anneal_strategy
        n = self.total_steps
        if three_phase:
            self._schedule_phases = [
                {
                    "end_step": float(pct_start * n) - 1,
                    "start_lr": "initial_lr",
                    "end_lr": "max_lr",
                    "start_momentum": "max_momentum",
                    "end_momentum": "base_momentum",
                },
                {
                    "end_step": float(2 * pct_start * n) - 2,
                    "start_lr": "max_lr",
                    "end_lr": "initial_lr",
                    "start_momentum": "base_momentum",
                    "end_momentum": "max_momentum",
                },
                {
                    "end_step": n - 1,
                    "start_lr": "initial_lr",
                    "end_lr": "min_lr",
                    "start_momentum": "max_momentum",
                    "end_momentum": "max_momentum",
                },
            ]
        else:
            self._schedule_phases = [
                {
                    "end_step": float(pct_start * n) - 1,
                    "start_lr": "initial_lr",
                    "end_lr": "max_lr",
                    "start_momentum": "max_momentum",
                    "end_momentum": "base_momentum",
                },
                {
                    "end_step": n - 1,
                    "start_lr": "max_lr",
                    "end_lr": "min_lr",
                    "start_momentum": "base_momentum",
                    "end_momentum": "max_momentum",
                },
            ]
        max_lrs = _format_param("max_lr", optimizer, max_lr)
        if last_epoch == -1:
            for m, group in zip(max_lrs, optimizer.param_groups):
                group["initial_lr"] = m / div_factor
                group["max_lr"] = m
                group["min_lr"] = group["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise ValueError(
                    "optimizer must support momentum or beta1 with `cycle_momentum` enabled"
                )
            self.use_beta1 = "betas" in optimizer.defaults
            max_ms = _format_param("max_momentum", optimizer, max_momentum)
            base_ms = _format_param("base_momentum", optimizer, base_momentum)
            if last_epoch == -1:
                for mm, bm, group in zip(max_ms, base_ms, optimizer.param_groups):
                    if self.use_beta1:
                        group["betas"] = (mm, *group["betas"][1:])
                    else:
                        group["momentum"] = mm
                    group["max_momentum"] = mm
                    group["base_momentum"] = bm
        super().__init__(optimizer, last_epoch)

    def _anneal(self, start, end, pct):
        if self.anneal_strategy == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def get_lr(self):
        step_num = self.last_epoch
        if step_num > self.total_steps:
            raise ValueError(
                f"Tried to step {step_num} times. The specified number of total steps is {self.total_steps}"
            )
        lrs = []
        last = len(self._schedule_phases) - 1
        for group in self.optimizer.param_groups:
            start_step = 0.0
            for i, phase in enumerate(self._schedule_phases):
                end_step = phase["end_step"]
                if step_num <= end_step or i == last:
                    pct = (step_num - start_step) / (end_step - start_step)
                    lr = self._anneal(group[phase["start_lr"]], group[phase["end_lr"]], pct)
                    if self.cycle_momentum:
                        mom = self._anneal(
                            group[phase["start_momentum"]], group[phase["end_momentum"]], pct
                        )
                    break
                start_step = end_step
            lrs.append(lr)
            if self.cycle_momentum:
                if self.use_beta1:
                    group["betas"] = (mom, *group["betas"][1:])
                else:
                    group["momentum"] = mom
        return lrs


class ReduceLROnPlateau(LRScheduler):
    """Multiply the lr by ``factor`` when a metric has not improved for ``patience`` epochs.

    ``step(metric)`` once per epoch. Improvement means ``a < best·(1 − threshold)`` (min/rel),
    ``a < best − threshold`` (min/abs), ``a > best·(1 + threshold)`` (max/rel) or
    ``a > best + threshold`` (max/abs). After a reduction, ``cooldown`` epochs are ignored.
    A reduction smaller than ``eps`` is skipped; the lr never goes below ``min_lr``.
    """

    def __init__(
        self,
        optimizer,
        mode="min",
        factor=0.1,
        patience=10,
        threshold=1e-4,
        threshold_mode="rel",
        cooldown=0,
        min_lr=0.0,
        eps=1e-8,
    ):
        if factor >= 1.0:
            raise ValueError("Factor should be < 1.0.")
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.factor = factor
        self.optimizer = optimizer
        if isinstance(min_lr, (list, tuple)):
            if len(min_lr) != len(optimizer.param_groups):
                raise ValueError(
                    f"expected {len(optimizer.param_groups)} min_lrs, got {len(min_lr)}"
                )
            self.default_min_lr = None
            self.min_lrs = list(min_lr)
        else:
            self.default_min_lr = min_lr
            self.min_lrs = [min_lr] * len(optimizer.param_groups)
        self.patience = patience
        self.cooldown = cooldown
        self.eps = eps
        self.last_epoch = 0
        self._step_count = 0
        self._is_initial = False
        self._last_lr = self._current_lrs()
        self._init_is_better(mode, threshold, threshold_mode)
        self._reset()

    def _reset(self):
        self.best = self.mode_worse
        self.cooldown_counter = 0
        self.num_bad_epochs = 0

    def _init_is_better(self, mode, threshold, threshold_mode):
        if mode not in ("min", "max"):
            raise ValueError(f"mode {mode!r} is unknown (use 'min' or 'max')")
        if threshold_mode not in ("rel", "abs"):
            raise ValueError(f"threshold mode {threshold_mode!r} is unknown (use 'rel' or 'abs')")
        self.mode_worse = math.inf if mode == "min" else -math.inf
        self.mode = mode
        self.threshold = threshold
        self.threshold_mode = threshold_mode

    def is_better(self, a, best):
        """Whether metric value ``a`` improves on ``best`` by more than ``threshold`` (relative or
        absolute, for ``mode`` ``"min"`` or ``"max"``).
        """
        if self.mode == "min" and self.threshold_mode == "rel":
            return a < best * (1.0 - self.threshold)
        if self.mode == "min":
            return a < best - self.threshold
        if self.threshold_mode == "rel":
            return a > best * (self.threshold + 1.0)
        return a > best + self.threshold

    @property
    def in_cooldown(self):
        """``True`` during the ``cooldown`` epochs that follow a reduction (bad epochs are not
        counted then).
        """
        return self.cooldown_counter > 0

    def step(self, metrics, epoch=None):
        """Record this epoch's ``metrics`` (the validation loss, say); after ``patience`` epochs without
        improvement multiply every group's lr by ``factor`` (not below ``min_lr``).

        >>> w = nn.Parameter(tl.zeros(1))
        >>> opt = tl.optim.SGD([w], lr=1.0)
        >>> sched = tl.optim.lr_scheduler.ReduceLROnPlateau(opt, patience=1)
        >>> for loss in [1.0, 1.0, 1.0]:
        ...     sched.step(loss)
        >>> sched.get_last_lr()
        [0.1]
        """
        current = float(metrics)
        if epoch is None:
            epoch = self.last_epoch + 1
        else:
            warnings.warn(_EPOCH_DEPRECATION, UserWarning, stacklevel=2)
        self.last_epoch = epoch
        self._step_count += 1
        if self.is_better(current, self.best):
            self.best = current
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1
        if self.in_cooldown:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0  # bad epochs in cooldown do not count
        if self.num_bad_epochs > self.patience:
            self._reduce_lr()
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = self._current_lrs()

    def _reduce_lr(self):
        if len(self.optimizer.param_groups) != len(self.min_lrs):
            if self.default_min_lr is None:
                raise RuntimeError(
                    f"the optimizer has {len(self.optimizer.param_groups)} param groups but "
                    f"ReduceLROnPlateau was given {len(self.min_lrs)} min_lrs"
                )
            self.min_lrs = [self.default_min_lr] * len(self.optimizer.param_groups)
        for i, group in enumerate(self.optimizer.param_groups):
            old_lr = float(group["lr"])
            new_lr = max(old_lr * self.factor, self.min_lrs[i])
            if old_lr - new_lr > self.eps:
                group["lr"] = new_lr

    def load_state_dict(self, state_dict):
        """Restore the scheduler's counters and best value from :meth:`state_dict`."""
        super().load_state_dict(state_dict)
        self._init_is_better(self.mode, self.threshold, self.threshold_mode)


# Defined in their own module (which needs LRScheduler from this one) and imported last, so that
# ``torchlight.optim.lr_scheduler.CyclicLR`` is where PyTorch programs look for it.
from .cyclic_schedulers import (  # noqa: E402
    ChainedScheduler,
    CosineAnnealingWarmRestarts,
    CyclicLR,
    PolynomialLR,
)
