"""``torchlight.device``: the name of where a tensor's data lives, as ``torch.device`` spells it.

A device is a *type* (a backend name: ``"cpu"``, ``"cuda"``, any installed backend) and an optional
*index*. Every torchlight backend drives exactly one device, so ``"cuda"`` and ``"cuda:0"`` name
the same place and compare equal (in PyTorch ``"cuda"`` means "the current cuda device", which
is index 0 unless changed). Devices compare equal to their string spelling, so code written
when ``tensor.device`` was a plain string (``x.device == "cpu"``) keeps working.
"""

from .errors import BackendError

__all__ = ["device", "as_device_name", "device_named", "active_device"]


class device:
    """Where a tensor lives: ``device("cuda:0")``, ``device("cuda", 0)``, ``device("cpu")``.

    ``.type`` is the backend name and ``.index`` the device number (``None`` when not given).
    Accepted wherever a device string is (factories' ``device=``, ``Tensor.to``, ``Module.to``).

    >>> import torchlight as tl
    >>> d = tl.device("cpu")
    >>> d.type, d.index, str(d)
    ('cpu', None, 'cpu')
    >>> tl.device("cuda:0") == tl.device("cuda", 0) == "cuda:0"
    True
    >>> tl.zeros(2, device=d).device == "cpu"
    True
    >>> with tl.device("cpu"):
    ...     tl.zeros(1).device
    device(type='cpu')
    """

    __slots__ = ("type", "index")

    def __init__(self, type, index=None):  # noqa: A002 - PyTorch's parameter name
        if isinstance(type, device):
            if index is not None:
                raise BackendError(
                    f"device(): cannot give an index with a device object ({type!r})"
                )
            type, index = type.type, type.index
        if not isinstance(type, str):
            raise BackendError(
                f"device(): expected a string such as 'cpu' or 'cuda:0', got {type!r}"
            )
        if ":" in type:
            if index is not None:
                raise BackendError(
                    f"device(): {type!r} already names an index; do not pass index={index}"
                )
            type, _, idx = type.partition(":")
            if not idx.isdigit():
                raise BackendError(
                    f"device(): invalid device string {type + ':' + idx!r}; expected 'type' or 'type:index'"
                )
            index = int(idx)
        if not type:
            raise BackendError(
                "device(): the device type is empty; expected e.g. 'cpu' or 'cuda' (`python -m torchlight` lists the installed backends)"
            )
        if index is not None:
            index = int(index)
            if index < 0:
                raise BackendError(f"device(): device index must be >= 0, got {index}")
        object.__setattr__(self, "type", type)
        object.__setattr__(self, "index", index)

    def __setattr__(self, name, value):
        raise AttributeError("torchlight.device is immutable")

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self):
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __eq__(self, other):
        if isinstance(other, str):
            try:
                other = device(other)
            except BackendError:
                return False
        if not isinstance(other, device):
            return NotImplemented
        # one device per backend: a missing index means index 0
        return self.type == other.type and (self.index or 0) == (other.index or 0)

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self):
        return hash(self.type)

    def __reduce__(self):
        return (device, (str(self),))

    def __enter__(self):
        """``with tl.device("cuda"):`` makes it the default device of new tensors inside (the
        innermost block wins over :func:`torchlight.set_default_device`)."""
        _ACTIVE.append(str(self))
        return self

    def __exit__(self, *exc):
        _ACTIVE.pop()
        return False


# the devices of the active ``with device(...)`` blocks, innermost last (read by the registry)
_ACTIVE: list[str] = []


def active_device():
    """The device name of the innermost active ``with torchlight.device(...)`` block, or None."""
    return _ACTIVE[-1] if _ACTIVE else None


def as_device_name(dev):
    """A device argument (string or :class:`device`) as the backend name it selects.

    Index 0 (or none) is the only index a backend has; a larger index is refused, so a program
    written for several GPUs fails loudly instead of silently sharing one.
    """
    d = dev if isinstance(dev, device) else device(dev)
    if d.index:
        raise BackendError(
            f"device {str(d)!r}: torchlight's backends each drive one device, so the only index is 0; "
            f"use {d.type!r} (or '{d.type}:0')"
        )
    return d.type


_NAMED: dict[str, device] = {}


def device_named(name):
    """The (shared, immutable) :class:`device` for a backend's device name: ``tensor.device`` is
    read on hot paths, so it is not parsed again on every call."""
    d = _NAMED.get(name)
    if d is None:
        d = _NAMED[name] = device(name)
    return d
