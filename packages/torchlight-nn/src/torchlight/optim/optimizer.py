"""``Optimizer``: parameter groups, per-parameter state, ``zero_grad`` and exact-resume state dicts.

A subclass supplies ``defaults`` (the hyper-parameters every group gets unless it overrides them)
and ``_update_group(group)``, which updates each parameter of one group in place. The base class
runs that under ``torchlight.no_grad()`` (parameters are leaves that require grad, and in-place
ops on them are only legal with grad mode off) and counts the steps, so a learning-rate scheduler
can warn when it is stepped before the optimizer.

``state_dict()`` follows PyTorch's layout, so a checkpoint resumes training exactly::

    {"state": {0: {"step": 3, "exp_avg": Tensor, ...}, 1: {...}},
     "param_groups": [{"lr": 0.001, "betas": (0.9, 0.999), ..., "params": [0, 1]}]}

Parameters are numbered 0, 1, 2, ... in group order; a parameter that never had a gradient has
no entry in ``state``.
"""

from __future__ import annotations

import functools
from collections import defaultdict

import numpy as np

import torchlight as tl
from torchlight import Tensor, TorchlightError
from torchlight.jit import Live, capturing, count_up, guard
from torchlight.tensor.extension import tensor_data

__all__ = ["Optimizer", "OptimizerError", "required"]


class OptimizerError(TorchlightError, ValueError):
    """A bad hyper-parameter, parameter list or optimizer state dict."""


class _Required:
    """Marks a hyper-parameter that has no default (SGD's ``lr`` in older PyTorch)."""

    def __repr__(self):
        return "<required parameter>"


required = _Required()


class Optimizer:
    """Base class of every optimizer (PyTorch's ``torch.optim.Optimizer``).

    ``params`` is an iterable of tensors, or of dicts each holding ``"params"`` plus any
    hyper-parameters that override ``defaults`` for that group.

    The training loop every optimizer serves:

    >>> model = nn.Linear(2, 1)
    >>> opt = tl.optim.SGD(model.parameters(), lr=0.1)
    >>> x, y = tl.randn(16, 2), tl.randn(16, 1)
    >>> for step in range(3):
    ...     opt.zero_grad()
    ...     loss = F.mse_loss(model(x), y)
    ...     loss.backward()
    ...     opt.step()
    >>> len(opt.param_groups), opt.param_groups[0]["lr"]
    (1, 0.1)
    """

    def __init__(self, params, defaults: dict):
        self.defaults = dict(defaults)
        # parameter tensor (hashed by identity) -> dict of its state, as PyTorch's defaultdict
        self.state: defaultdict = defaultdict(dict)
        self.param_groups: list[dict] = []
        self._opt_step_count = 0
        if isinstance(params, Tensor):
            raise OptimizerError(
                "params must be an iterable of tensors or of dicts, got a single Tensor; "
                "pass [tensor] or model.parameters()"
            )
        param_groups = list(params)
        if not param_groups:
            raise OptimizerError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for group in param_groups:
            self.add_param_group(group)

    # --- groups ----------------------------------------------------------------------------
    def add_param_group(self, param_group: dict) -> None:
        """Add a group (``{"params": [...], "lr": ..., ...}``); missing options come from defaults."""
        if not isinstance(param_group, dict):
            raise OptimizerError(f"a param group must be a dict, got {type(param_group).__name__}")
        params = param_group["params"] if "params" in param_group else None
        if params is None:
            raise OptimizerError("a param group needs a 'params' entry")
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, (set, frozenset)):
            raise OptimizerError(
                "optimizer parameters must be an ordered collection (a set's order changes "
                "between runs, which would break state dicts); use a list"
            )
        else:
            params = list(params)
        for i, p in enumerate(params):
            if not isinstance(p, Tensor):
                raise OptimizerError(
                    f"optimizer can only optimize Tensors, but parameter {i} of the group is a "
                    f"{type(p).__name__}"
                )
            if not p.is_leaf:
                raise OptimizerError(
                    f"can't optimize a non-leaf Tensor (parameter {i} of the group has a grad_fn)"
                )
            if not p.dtype.is_floating_point:
                raise OptimizerError(
                    f"can only optimize floating point tensors, parameter {i} is {p.dtype}"
                )
        group = dict(param_group)
        group["params"] = params
        for name, default in self.defaults.items():
            if default is required and name not in group:
                raise OptimizerError(
                    f"parameter group didn't specify a value of required optimization parameter {name}"
                )
            group.setdefault(name, default)

        seen = {id(p) for p in params}
        if len(seen) != len(params):
            raise OptimizerError("a parameter group contains the same parameter more than once")
        for other in self.param_groups:
            if any(id(p) in seen for p in other["params"]):
                raise OptimizerError("some parameters appear in more than one parameter group")
        self._check_group(group)
        self.param_groups.append(group)

    def _check_group(self, group: dict) -> None:
        """Validate one group's hyper-parameters (subclasses extend)."""
        lr = group.get("lr")
        if lr is not None and lr is not required and float(lr) < 0.0:
            raise OptimizerError(f"invalid learning rate: {lr} (must be >= 0)")
        wd = group.get("weight_decay")
        if wd is not None and float(wd) < 0.0:
            raise OptimizerError(f"invalid weight_decay value: {wd} (must be >= 0)")

    # --- gradients -------------------------------------------------------------------------
    def zero_grad(self, set_to_none: bool = True) -> None:
        """Forget the gradients: ``p.grad = None`` (default), or zero them in place."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    if p.grad.grad_fn is not None:
                        p.grad = p.grad.detach()
                    with tl.no_grad():
                        p.grad.zero_()

    # --- stepping --------------------------------------------------------------------------
    def step(self, closure=None):
        """One update of every parameter that has a gradient. ``closure`` re-evaluates the loss
        (it runs with grad enabled) and its result is returned."""
        loss = None
        if closure is not None:
            with tl.enable_grad():
                loss = closure()
        live = capturing()
        if live:  # a replay must not miss a changed setting, or new parameters
            name = type(self).__name__
            guard(self._hyper_parameters, f"{name}'s hyper-parameters")
            guard(self._param_storages, f"the memory of {name}'s parameters (reassigned .data?)")
        with tl.no_grad():
            for i, group in enumerate(self.param_groups):
                self._update_group(_live_group(group, i) if live else group)
        count_up(self.__dict__, "_opt_step_count")
        return loss

    def _hyper_parameters(self) -> list:
        """The settings a captured step bakes in: those that are not plain numbers (numbers are
        passed live, see ``_live_group``)."""
        return [
            {k: v for k, v in g.items() if k != "params" and not _plain_number(v)}
            for g in self.param_groups
        ]

    def _param_storages(self) -> list:
        return [id(tensor_data(p).storage) for g in self.param_groups for p in g["params"]]

    def _update_group(self, group: dict) -> None:
        raise NotImplementedError(f"{type(self).__name__} must implement _update_group")

    def _params_with_grad(self, group):
        for p in group["params"]:
            if p.grad is not None:
                yield p, p.grad

    def _steps(self, group, **initial):
        """Each parameter of ``group`` that has a gradient, as ``(p, grad, state, step)``, for
        the update rules that keep per-parameter state: ``grad`` is negated when the group
        maximizes, and ``state["step"]`` is counted up — from 0 on first use, when each
        ``initial`` entry starts the state (a value, or a callable of ``p`` for a buffer like
        ``tl.zeros_like``). ``step`` is the new count, live inside a captured step: numbers
        computed from it are computed again on each replay (``state["step"]`` read as an int
        would be frozen at the captured value)."""
        for p, grad in self._params_with_grad(group):
            if group["maximize"]:
                grad = -grad
            state = self.state.setdefault(p, {})
            if not state:
                state["step"] = 0
                for name, start in initial.items():
                    state[name] = start(p) if callable(start) else start
            yield p, grad, state, count_up(state, "step")

    # --- state dicts -----------------------------------------------------------------------
    def state_dict(self) -> dict:
        """``{"state": {index: {...}}, "param_groups": [{..., "params": [indices]}]}``.

        The state tensors are the optimizer's own (not copies), as in PyTorch; serialise them
        (``torchlight.save``) or clone them before stepping again if you need a snapshot.
        """
        index: dict[int, int] = {}
        groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            ids = []
            for p in group["params"]:
                index.setdefault(id(p), len(index))
                ids.append(index[id(p)])
            packed["params"] = ids
            groups.append(packed)
        state = {}
        for group in self.param_groups:
            for p in group["params"]:
                if p in self.state:
                    state[index[id(p)]] = dict(self.state[p])
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore what :meth:`state_dict` returned (from this optimizer class, same parameters).

        Tensors are copied and moved to each parameter's dtype and device; the step counter
        stays an integer. Mismatched groups, parameter counts or state shapes raise
        :class:`OptimizerError` naming the group or parameter.
        """
        if (
            not isinstance(state_dict, dict)
            or "state" not in state_dict
            or "param_groups" not in state_dict
        ):
            raise OptimizerError(
                "optimizer state dict must be a dict with 'state' and 'param_groups' entries"
            )
        saved_groups = list(state_dict["param_groups"])
        if len(saved_groups) != len(self.param_groups):
            raise OptimizerError(
                f"loaded state dict has {len(saved_groups)} parameter groups, the optimizer has "
                f"{len(self.param_groups)}"
            )
        id_map: dict[int, Tensor] = {}
        for gi, (group, saved) in enumerate(zip(self.param_groups, saved_groups)):
            saved_ids = list(saved.get("params", ()))
            if len(saved_ids) != len(group["params"]):
                raise OptimizerError(
                    f"parameter group {gi} of the loaded state dict has {len(saved_ids)} "
                    f"parameters, the optimizer's group has {len(group['params'])}"
                )
            for i, p in zip(saved_ids, group["params"]):
                id_map[int(i)] = p

        new_state: defaultdict = defaultdict(dict)
        for key, pstate in dict(state_dict["state"]).items():
            try:
                idx = int(key)
            except (TypeError, ValueError):
                raise OptimizerError(
                    f"optimizer state is keyed by parameter index, got key {key!r}"
                ) from None
            if idx not in id_map:
                raise OptimizerError(
                    f"loaded state dict has state for parameter index {idx}, which is not in any "
                    f"parameter group (indices 0..{len(id_map) - 1})"
                )
            param = id_map[idx]
            new_state[param] = {
                name: self._cast_state(param, idx, name, value)
                for name, value in dict(pstate).items()
            }

        new_groups = []
        for group, saved in zip(self.param_groups, saved_groups):
            ng = {k: v for k, v in group.items() if k != "params"}
            ng.update(
                {
                    k: (tuple(v) if isinstance(v, list) and isinstance(group.get(k), tuple) else v)
                    for k, v in saved.items()
                    if k != "params"
                }
            )
            ng["params"] = group["params"]
            new_groups.append(ng)
        self.state = new_state
        self.param_groups = new_groups

    def _cast_state(self, param: Tensor, idx: int, name: str, value):
        if name == "step":
            return int(value.item() if isinstance(value, Tensor) else value)
        if isinstance(value, np.ndarray):
            value = tl.tensor(value)
        if isinstance(value, Tensor):
            # per-element state must match its parameter; 0-d tensors are per-parameter scalars
            if value.ndim and value.shape != param.shape:
                raise OptimizerError(
                    f"state {name!r} of parameter {idx} has shape {tuple(value.shape)}, the "
                    f"parameter has shape {tuple(param.shape)}"
                )
            with tl.no_grad():
                out = tl.tensor(value.to_numpy(), dtype=param.dtype, device=param.device)
            return out
        return value

    def __repr__(self):
        lines = [f"{type(self).__name__} ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            for key in sorted(k for k in group if k != "params"):
                lines.append(f"    {key}: {group[key]}")
        lines.append(")")
        return "\n".join(lines)


def _plain_number(v) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)


def _live_group(group: dict, index: int) -> dict:
    """``group`` for an update recorded by ``torchlight.jit.capture_step``: each plain-number
    setting (``lr``, ``weight_decay``, ``momentum``, ...) becomes a live number that a replay reads
    from the real group, so a learning-rate schedule reaches kernels that take it as an argument
    (the fused Adam update); where the update turns it into a constant, the capture guards it."""
    out = dict(group)
    for k, v in group.items():
        if _plain_number(v):
            out[k] = Live(functools.partial(group.__getitem__, k), f"param_groups[{index}][{k!r}]")
    return out


def _lerp_(t: Tensor, end: Tensor, weight: float) -> Tensor:
    """``t.lerp_(end, weight)`` with PyTorch's two-sided formula (exact at ``weight`` 0 and 1)."""
    if weight < 0.5:
        return t.add_((end - t).mul_(weight))
    return t.copy_(end - (end - t).mul_(1.0 - weight))
