"""Containers: ``Sequential``, ``ModuleList``, ``ModuleDict``, ``ParameterList``, ``ParameterDict``.

Their children are registered under string keys (``"0"``, ``"1"``, ... for the sequences), so
parameter names come out as PyTorch's: ``Sequential(Linear, ReLU, Linear)`` has ``0.weight``,
``0.bias``, ``2.weight``, ``2.bias``.
"""

from collections import OrderedDict

from .module import Module
from .parameter import Parameter

__all__ = ["Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"]


def _index(i, n, what):
    if not -n <= i < n:
        raise IndexError(f"index {i} is out of range for {what} of length {n}")
    return i % n


class Sequential(Module):
    """``Sequential(m1, m2, ...)`` or ``Sequential(OrderedDict(name=module))``: feeds each
    module's output to the next.

    >>> net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    >>> net(tl.randn(5, 4)).shape
    (5, 2)
    >>> net[0]
    Linear(in_features=4, out_features=8, bias=True)
    """

    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], (dict, OrderedDict)):
            for name, module in args[0].items():
                self.add_module(name, module)
        else:
            for idx, module in enumerate(args):
                self.add_module(str(idx), module)

    def forward(self, input):
        """Feed ``input`` through each child in order; the output of one is the input of the next."""
        for module in self._modules.values():
            input = module(input)
        return input

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return Sequential(OrderedDict(list(self._modules.items())[idx]))
        keys = list(self._modules)
        return self._modules[keys[_index(idx, len(keys), "Sequential")]]

    def __setitem__(self, idx, module):
        keys = list(self._modules)
        self.add_module(keys[_index(idx, len(keys), "Sequential")], module)

    def __delitem__(self, idx):
        keys = list(self._modules)
        targets = (
            keys[idx] if isinstance(idx, slice) else [keys[_index(idx, len(keys), "Sequential")]]
        )
        for k in targets:
            del self._modules[k]

    def append(self, module):
        """Add ``module`` at the end; returns ``self``."""
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules):
        """Add each module of ``modules`` at the end, in order; returns ``self``."""
        for m in modules:
            self.append(m)
        return self

    def insert(self, index, module):
        """Insert ``module`` before position ``index`` (negative counts from the end); returns ``self``."""
        mods = list(self._modules.values())
        mods.insert(index if index >= 0 else len(mods) + index, module)
        self._modules.clear()
        for i, m in enumerate(mods):
            self.add_module(str(i), m)
        return self


class ModuleList(Module):
    """A list of modules whose parameters are registered (a plain list would hide them).

    >>> layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])
    >>> len(layers), len(list(layers.parameters()))
    (3, 6)
    """

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return ModuleList(list(self._modules.values())[idx])
        return self._modules[str(_index(idx, len(self), "ModuleList"))]

    def __setitem__(self, idx, module):
        self.add_module(str(_index(idx, len(self), "ModuleList")), module)

    def __delitem__(self, idx):
        mods = list(self._modules.values())
        del mods[idx]
        self._modules.clear()
        for i, m in enumerate(mods):
            self.add_module(str(i), m)

    def __iadd__(self, modules):
        return self.extend(modules)

    def append(self, module):
        """Add ``module`` at the end; returns ``self``."""
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules):
        """Add each module of ``modules`` at the end; returns ``self``."""
        for m in modules:
            self.append(m)
        return self

    def insert(self, index, module):
        """Insert ``module`` before position ``index``."""
        mods = list(self._modules.values())
        mods.insert(index, module)
        self._modules.clear()
        for i, m in enumerate(mods):
            self.add_module(str(i), m)

    def forward(self, *args, **kwargs):
        """Not callable: a ``ModuleList`` only holds modules; iterate over it in the owner's
        ``forward``.
        """
        raise NotImplementedError(
            "ModuleList has no forward(); iterate over it and call the modules"
        )


class ModuleDict(Module):
    """An ordered dict of modules, registered under their keys.

    >>> heads = nn.ModuleDict({"cls": nn.Linear(8, 3), "reg": nn.Linear(8, 1)})
    >>> heads["reg"](tl.zeros(2, 8)).shape
    (2, 1)
    """

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key):
        return self._modules[key]

    def __setitem__(self, key, module):
        self.add_module(key, module)

    def __delitem__(self, key):
        del self._modules[key]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, key):
        return key in self._modules

    def keys(self):
        """The names of the modules, in insertion order."""
        return self._modules.keys()

    def values(self):
        """The modules, in insertion order."""
        return self._modules.values()

    def items(self):
        """``(name, module)`` pairs, in insertion order."""
        return self._modules.items()

    def pop(self, key):
        """Remove the module ``key`` and return it."""
        return self._modules.pop(key)

    def clear(self):
        """Remove every module."""
        self._modules.clear()

    def update(self, modules):
        """Add or replace modules from a mapping or an iterable of ``(name, module)`` pairs."""
        items = modules.items() if hasattr(modules, "items") else modules
        for key, module in items:
            self[key] = module

    def forward(self, *args, **kwargs):
        """Not callable: a ``ModuleDict`` only holds modules; index it in the owner's ``forward``."""
        raise NotImplementedError("ModuleDict has no forward(); index it and call the modules")


def _as_parameter(value):
    # PyTorch wraps plain tensors (and array-likes) into Parameters on insertion.
    return value if isinstance(value, Parameter) else Parameter(value)


class ParameterList(Module):
    """A list of parameters registered under ``"0"``, ``"1"``, ... (so optimizers and state
    dicts see them); plain tensors are wrapped in :class:`Parameter` on insertion.

    >>> pl = nn.ParameterList([tl.zeros(2), tl.ones(3)])
    >>> _ = pl.append(tl.ones(1)); len(pl), [tuple(p.shape) for p in pl]
    (3, [(2,), (3,), (1,)])
    >>> list(pl.state_dict())
    ['0', '1', '2']
    """

    def __init__(self, values=None):
        super().__init__()
        if values is not None:
            self.extend(values)

    def __len__(self):
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters.values())

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return ParameterList(list(self._parameters.values())[idx])
        return self._parameters[str(_index(idx, len(self), "ParameterList"))]

    def __setitem__(self, idx, value):
        self.register_parameter(str(_index(idx, len(self), "ParameterList")), _as_parameter(value))

    def append(self, value):
        """Add ``value`` (a tensor is wrapped in :class:`Parameter`) at the end; returns ``self``."""
        self.register_parameter(str(len(self)), _as_parameter(value))
        return self

    def extend(self, values):
        """Add each of ``values`` at the end, in order; returns ``self``."""
        for v in values:
            self.append(v)
        return self

    def __iadd__(self, values):
        return self.extend(values)

    def extra_repr(self):
        return "\n".join(
            f"({i}): Parameter containing: {tuple(p.shape)} {p.dtype}" for i, p in enumerate(self)
        )


class ParameterDict(Module):
    """A dict of parameters registered under their keys; plain tensors are wrapped in
    :class:`Parameter` on insertion.

    >>> pd = nn.ParameterDict({"scale": tl.ones(2)})
    >>> pd["shift"] = tl.zeros(2)
    >>> sorted(pd.keys()), "scale" in pd
    (['scale', 'shift'], True)
    """

    def __init__(self, parameters=None):
        super().__init__()
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key):
        return self._parameters[key]

    def __setitem__(self, key, value):
        self.register_parameter(key, _as_parameter(value))

    def __delitem__(self, key):
        del self._parameters[key]

    def __contains__(self, key):
        return key in self._parameters

    def __len__(self):
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters)

    def keys(self):
        """The names of the parameters, in insertion order."""
        return self._parameters.keys()

    def values(self):
        """The parameters, in insertion order."""
        return self._parameters.values()

    def items(self):
        """``(name, parameter)`` pairs, in insertion order."""
        return self._parameters.items()

    def get(self, key, default=None):
        """The parameter ``key``, or ``default`` when there is none."""
        return self._parameters.get(key, default)

    def pop(self, key):
        """Remove the parameter ``key`` and return it."""
        return self._parameters.pop(key)

    def update(self, parameters):
        """Add or replace parameters from a mapping or an iterable of ``(name, tensor)`` pairs (tensors
        are wrapped in :class:`Parameter`).
        """
        items = parameters.items() if hasattr(parameters, "items") else parameters
        for key, value in items:
            self[key] = value

    def extra_repr(self):
        return "\n".join(
            f"({k}): Parameter containing: {tuple(p.shape)} {p.dtype}" for k, p in self.items()
        )
