"""``Module``: the tree that holds parameters, buffers and child modules.

A model is a tree of modules. Each node keeps three ordered registries, filled by plain attribute
assignment (``Module.__setattr__`` looks at the value's type):

* ``_parameters`` — :class:`Parameter` values (``self.weight = Parameter(...)``),
* ``_buffers`` — tensors registered with :meth:`register_buffer` (running statistics, masks),
  persistent ones belong to ``state_dict()``, non-persistent ones do not,
* ``_modules`` — child ``Module`` values (``self.fc = Linear(...)``).

Everything recursive (``named_parameters``, ``state_dict``, ``train``, ``to``) walks that tree and
names entries with dotted paths (``encoder.layers.0.weight``), PyTorch's naming, so a PyTorch
state dict exported as numpy arrays loads unchanged.
"""

import copy
from collections import OrderedDict

import torchlight as tl
from torchlight import Tensor

from .parameter import Buffer, Parameter
from .registered import MISSING, Registered, learn, lookup
from .state import IncompatibleKeys, StateDictError, load_checked

__all__ = ["Module", "StateDictError", "IncompatibleKeys"]


class Module:
    """Base class of every layer and model. Subclasses call ``super().__init__()`` first and
    define ``forward``; calling the module runs the forward pre-hooks, ``forward`` and the forward
    hooks.

    Assigning a :class:`Parameter`, a ``Module`` or a :class:`Buffer` to an attribute registers it,
    so :meth:`parameters`, :meth:`state_dict`, :meth:`to` and :meth:`train` reach it.

    >>> class MLP(nn.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.hidden = nn.Linear(4, 8)
    ...         self.out = nn.Linear(8, 2)
    ...     def forward(self, x):
    ...         return self.out(self.hidden(x).relu())
    >>> net = MLP()
    >>> net(tl.randn(5, 4)).shape
    (5, 2)
    >>> [name for name, _ in net.named_parameters()]
    ['hidden.weight', 'hidden.bias', 'out.weight', 'out.bias']
    """

    training: bool

    def __init__(self):
        # object.__setattr__ bypasses our own __setattr__, which needs these dicts to exist.
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_non_persistent", set())
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "_forward_hooks", OrderedDict())
        object.__setattr__(self, "_forward_pre_hooks", OrderedDict())

    def forward(self, *args, **kwargs):
        """The computation of the module: what ``module(*args)`` runs (after the forward pre-hooks,
        before the forward hooks). Every subclass defines it; call the module, not ``forward``, so that
        hooks run.

        >>> class Affine(nn.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.scale = nn.Parameter(tl.tensor(2.0))
        ...     def forward(self, x):
        ...         return self.scale * x + 1
        >>> Affine()(tl.tensor([1.0, 2.0]))
        tensor([3., 5.], grad_fn=...)
        """
        raise NotImplementedError(f"{type(self).__name__} does not define forward()")

    def __call__(self, *args, **kwargs):
        for hook in self._forward_pre_hooks.values():
            res = hook(self, args)
            if res is not None:
                args = res if isinstance(res, tuple) else (res,)
        out = self.forward(*args, **kwargs)
        for hook in self._forward_hooks.values():
            res = hook(self, args, out)
            if res is not None:
                out = res
        return out

    def register_forward_hook(self, hook):
        """``hook(module, args, output)`` after forward; a non-None return replaces the output.
        Returns a handle whose ``remove()`` unregisters it."""
        return _Handle(self._forward_hooks, hook)

    def register_forward_pre_hook(self, hook):
        """``hook(module, args)`` before forward; a non-None return replaces the args."""
        return _Handle(self._forward_pre_hooks, hook)

    # --- registration ------------------------------------------------------------------------
    def _check_init(self, what):
        if "_parameters" not in self.__dict__:
            raise AttributeError(
                f"cannot assign {what} before Module.__init__() call (call super().__init__() first)"
            )

    def register_parameter(self, name, param):
        """Register ``param`` (a :class:`~torchlight.nn.Parameter`, or ``None`` for an absent one such as
        a disabled bias) under ``name``. Same as assigning ``self.name = param``; useful when the name
        is computed.
        """
        self._check_init("parameters")
        _check_name(self, name, "parameter")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(
                f"cannot assign {type(param).__name__} as parameter {name!r} (torchlight.nn.Parameter or None required)"
            )
        self._parameters[name] = param

    def register_buffer(self, name, tensor, persistent=True):
        """Register ``tensor`` (or None) as buffer ``name``; ``persistent=False`` keeps it out of
        ``state_dict()`` (e.g. a cached mask that can be recomputed)."""
        self._check_init("buffers")
        _check_name(self, name, "buffer")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(
                f"cannot assign {type(tensor).__name__} as buffer {name!r} (Tensor or None required)"
            )
        if isinstance(tensor, Buffer):
            tensor = tensor.as_tensor()
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent.discard(name)
        else:
            self._non_persistent.add(name)

    def add_module(self, name, module):
        """Register ``module`` as a child under ``name`` (also ``register_module``); same as
        ``self.name = module`` for a computed name. Its parameters then appear in :meth:`parameters`
        and :meth:`state_dict` under ``"name."``.
        """
        self._check_init("child modules")
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        if not isinstance(name, str) or "." in name or name == "":
            raise KeyError(f"module name must be a non-empty string without '.', got {name!r}")
        self._modules[name] = module

    register_module = add_module

    def __setattr__(self, name, value):
        params = self.__dict__.get("_parameters")
        if isinstance(value, Parameter):
            self._check_init("parameters")
            self._forget(name)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(
                    f"cannot assign {type(value).__name__} as parameter {name!r} (torchlight.nn.Parameter or None required)"
                )
            params[name] = None
        elif isinstance(value, Module):
            self._check_init("child modules")
            self._forget(name)
            self._modules[name] = value
        elif self.__dict__.get("_modules") is not None and name in self._modules:
            if value is not None:
                raise TypeError(
                    f"cannot assign {type(value).__name__} as child module {name!r} (Module or None required)"
                )
            self._modules[name] = None
        elif isinstance(value, Buffer):
            self._check_init("buffers")
            self._forget(name)
            self.register_buffer(name, value, value.__dict__.get("persistent", True))
        elif self.__dict__.get("_buffers") is not None and name in self._buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(
                    f"cannot assign {type(value).__name__} as buffer {name!r} (Tensor or None required)"
                )
            self._buffers[name] = value
        else:
            object.__setattr__(self, name, value)

    def _forget(self, name):
        """Remove ``name`` from every registry and the instance dict (it is being re-registered)."""
        self.__dict__.pop(name, None)
        for reg in (self._parameters, self._buffers, self._modules):
            reg.pop(name, None)
        self._non_persistent.discard(name)

    def __getattr__(self, name):
        # Only called when normal lookup fails, i.e. for registered entries (and before
        # __init__, while unpickling or copying). Each layer's call reads its parameters and
        # submodules this way, so the class learns a shortcut for the name (registered.py):
        # later reads skip the failed lookup that brings them here.
        value = lookup(self.__dict__, name)
        if value is MISSING:
            raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")
        cls = type(self)
        if cls is not Module:
            learn(cls, name, Module.__getattr__)
        return value

    def __delattr__(self, name):
        for reg in (self._parameters, self._buffers, self._modules):
            if name in reg:
                del reg[name]
                self._non_persistent.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self):
        # a shortcut the class learned (registered.py) names an entry of some instance, which
        # this one may not have
        own = set(self._parameters) | set(self._buffers) | set(self._modules)
        cls = type(self)
        names = {n for n in super().__dir__() if n in own or not _shortcut(cls, n)}
        return sorted(names | own)

    # --- traversal ---------------------------------------------------------------------------
    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        """``(dotted_name, module)`` for this module (name ``''``) and every descendant, pre-order."""
        if memo is None:
            memo = set()
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, child in self._modules.items():
            if child is None:
                continue
            yield from child.named_modules(
                memo, f"{prefix}.{name}" if prefix else name, remove_duplicate
            )

    def modules(self):
        """Iterate over this module and all its descendants (each once), depth first.

        >>> net = nn.Sequential(nn.Linear(2, 3), nn.ReLU())
        >>> [type(m).__name__ for m in net.modules()]
        ['Sequential', 'Linear', 'ReLU']
        """
        for _, m in self.named_modules():
            yield m

    def named_children(self):
        """Iterate over ``(name, module)`` of the direct children (not grandchildren)."""
        seen = set()
        for name, child in self._modules.items():
            if child is not None and id(child) not in seen:
                seen.add(id(child))
                yield name, child

    def children(self):
        """Iterate over the direct child modules (see :meth:`named_children`)."""
        for _, c in self.named_children():
            yield c

    def _named_members(self, registry, prefix, recurse, remove_duplicate=True):
        seen = set()
        mods = self.named_modules(prefix=prefix) if recurse else [(prefix, self)]
        for mod_prefix, mod in mods:
            for name, value in getattr(mod, registry).items():
                if value is None or (remove_duplicate and id(value) in seen):
                    continue
                seen.add(id(value))
                yield (f"{mod_prefix}.{name}" if mod_prefix else name), value

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        """``(dotted_name, parameter)`` pairs; a parameter shared by two modules appears once."""
        return self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse=True):
        """Iterate over the parameters of this module and (with ``recurse=True``) of its descendants,
        each once: what an optimizer is given.

        >>> sum(p.numel() for p in nn.Linear(3, 2).parameters())
        8
        """
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        """Iterate over ``(dotted name, tensor)`` of the buffers (state that is saved but not trained,
        such as BatchNorm's running statistics), ``prefix``-ed.
        """
        return self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse=True):
        """Iterate over the buffers of this module and its descendants (see :meth:`named_buffers`)."""
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def get_submodule(self, target):
        """The descendant module at dotted path ``target`` (``""`` is the module itself); raises
        ``AttributeError`` naming the missing part.

        >>> net = nn.Sequential(nn.Linear(2, 3), nn.ReLU())
        >>> net.get_submodule("0")
        Linear(in_features=2, out_features=3, bias=True)
        """
        mod = self
        for part in target.split(".") if target else []:
            if part not in mod._modules:
                raise AttributeError(
                    f"{type(mod).__name__} has no submodule {part!r} (looking up {target!r})"
                )
            mod = mod._modules[part]
        return mod

    def get_parameter(self, target):
        """The parameter at dotted path ``target`` (``"0.weight"``)."""
        path, _, name = target.rpartition(".")
        mod = self.get_submodule(path)
        if name not in mod._parameters:
            raise AttributeError(
                f"{type(mod).__name__} has no parameter {name!r} (looking up {target!r})"
            )
        return mod._parameters[name]

    def num_parameters(self, only_trainable=False):
        """Total number of elements over the (unique) parameters."""
        return sum(p.numel() for p in self.parameters() if p.requires_grad or not only_trainable)

    # --- modes and gradients -----------------------------------------------------------------
    def train(self, mode=True):
        """Put this module and every descendant in training mode (``mode=True``) or evaluation mode;
        returns ``self``. The mode changes what :class:`~torchlight.nn.Dropout` and
        :class:`~torchlight.nn.BatchNorm1d` do.
        """
        if not isinstance(mode, bool):
            raise TypeError(f"train(mode) expects a bool, got {type(mode).__name__}")
        for m in self.modules():
            object.__setattr__(m, "training", mode)
        return self

    def eval(self):
        """Evaluation mode: ``self.train(False)`` (dropout off, batch norm uses running statistics).
        Returns ``self``. Gradients are still recorded: use :func:`torchlight.no_grad` for that.

        >>> net = nn.Dropout(0.5).eval()
        >>> net.training
        False
        """
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        """Set ``requires_grad`` on every parameter (``False`` freezes the module); returns ``self``."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        """Reset gradients: drop them (``None``, the default) or fill them with zeros."""
        for p in self.parameters():
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                # A fresh zero tensor rather than zero_() in place: after backward(create_graph=True)
                # torchlight-tensor 0.1.0 may hand several leaves the *same* gradient tensor.
                p.grad = tl.zeros_like(p.grad.detach())

    def apply(self, fn):
        """Call ``fn(module)`` on every child (recursively) and then on this module; returns self."""
        for child in self.children():
            child.apply(fn)
        fn(self)
        return self

    # --- device and dtype --------------------------------------------------------------------
    def _apply(self, fn):
        """Replace every parameter's and buffer's data by ``fn(data)`` *in place*: parameter
        objects keep their identity, so an optimizer built before ``.to()`` still holds them."""
        with tl.no_grad():
            for m in self.modules():
                for p in m._parameters.values():
                    if p is None:
                        continue
                    new = fn(p.detach())
                    if new._td is not p._td:
                        p._td, p.backend, p.dtype = new._td, new.backend, new.dtype
                        p._version = [0]
                        if p.grad is not None:
                            p.grad = fn(p.grad.detach())
                for name, b in m._buffers.items():
                    if b is not None:
                        m._buffers[name] = fn(b)
        return self

    def to(self, *args, dtype=None, device=None):
        """``to(device)``, ``to(dtype)`` or both; a dtype applies to floating tensors only
        (``num_batches_tracked`` stays int64). Returns self."""
        for a in args:
            if isinstance(a, tl.dtype) or (
                isinstance(a, str) and a in ("float32", "float64", "float", "double")
            ):
                dtype = a
            else:
                device = a
        target = None if dtype is None else _as_dtype(dtype)
        if target is not None and not target.is_floating_point:
            raise TypeError(f"Module.to only accepts floating point dtypes, got {target}")

        def convert(t):
            out = t
            if device is not None:
                out = out.to(device)
            if target is not None and out.dtype.is_floating_point and out.dtype is not target:
                out = out.to(target)
            return out

        return self._apply(convert)

    def float(self):
        """Convert every floating-point parameter and buffer to ``float32``; returns ``self``."""
        return self.to(tl.float32)

    def double(self):
        """Convert every floating-point parameter and buffer to ``float64`` (as :func:`torchlight.gradcheck`
        wants); returns ``self``.
        """
        return self.to(tl.float64)

    def cpu(self):
        """Move every parameter and buffer to the ``"cpu"`` backend; returns ``self``."""
        return self.to("cpu")

    def cuda(self, device=None):
        """``to("cuda")`` (``device`` an int picks ``"cuda:<device>"``); raises when no CUDA
        backend is usable."""
        if device is None:
            return self.to("cuda")
        return self.to(f"cuda:{device}" if isinstance(device, int) else device)

    # --- state dict --------------------------------------------------------------------------
    def state_dict(self, destination=None, prefix="", keep_vars=False):
        """Ordered ``name -> tensor`` for every parameter and persistent buffer, dotted names.

        Values are detached tensors sharing storage with the module (``keep_vars=True`` returns
        the parameters themselves); ``np.asarray(v)`` or ``v.numpy()`` converts each one.
        """
        if destination is None:
            destination = OrderedDict()
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent:
                destination[prefix + name] = b if keep_vars else b.detach()
        for name, child in self._modules.items():
            if child is not None:
                child.state_dict(destination, prefix + name + ".", keep_vars)
        return destination

    def load_state_dict(self, state_dict, strict=True, assign=False):
        """Copy values (tensors or numpy arrays) into the parameters and persistent buffers.

        Shape mismatches always raise; with ``strict=True`` (the default) missing and unexpected
        keys raise as well. The error lists every problem by name. Returns
        ``IncompatibleKeys(missing_keys, unexpected_keys)``. Nothing is written unless all
        checks pass, so a failed load leaves the module unchanged. ``assign`` (PyTorch's option to
        adopt the given tensors instead of copying) is accepted; values are always copied, which
        gives the same parameters.
        """
        return load_checked(self, state_dict, strict)

    def __deepcopy__(self, memo):
        # copy.deepcopy of a Tensor (torchlight-tensor 0.1.0) also copies its backend object,
        # and tensors on two backend objects refuse to combine ("different devices"). Seeding
        # the memo with the backends makes every copied tensor share the original backend.
        for t in list(self.parameters()) + list(self.buffers()):
            memo.setdefault(id(t.backend), t.backend)
            if t.grad is not None:
                memo.setdefault(id(t.grad.backend), t.grad.backend)
        new = type(self).__new__(type(self))
        memo[id(self)] = new
        for key, value in self.__dict__.items():
            object.__setattr__(new, key, copy.deepcopy(value, memo))
        return new

    # --- printing ----------------------------------------------------------------------------
    def extra_repr(self):
        """The constructor arguments shown inside ``Name(...)``; layers override this."""
        return ""

    def __repr__(self):
        lines = []
        extra = self.extra_repr()
        if extra:
            lines = extra.split("\n")
        for name, child in self._modules.items():
            child_repr = repr(child).replace("\n", "\n  ")
            lines.append(f"({name}): {child_repr}")
        main = type(self).__name__ + "("
        if lines:
            if len(lines) == 1 and not self._modules:
                main += lines[0]
            else:
                main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"


def _shortcut(cls, name):
    return isinstance(getattr(cls, name, None), Registered)


class _Handle:
    """What ``register_*_hook`` returns: ``handle.remove()`` unregisters the hook."""

    _next = 0

    def __init__(self, registry, hook):
        _Handle._next += 1
        self.id, self.registry = _Handle._next, registry
        registry[self.id] = hook

    def remove(self):
        self.registry.pop(self.id, None)


def _check_name(module, name, what):
    if not isinstance(name, str):
        raise TypeError(f"{what} name must be a string, got {type(name).__name__}")
    if "." in name or name == "":
        raise KeyError(f"{what} name must be non-empty and cannot contain '.', got {name!r}")
    if name in module.__dict__ and name not in ("training",):
        raise KeyError(f"attribute {name!r} already exists")


def _as_dtype(dtype):
    from torchlight.tensor.dtypes import as_dtype

    return as_dtype(dtype)
