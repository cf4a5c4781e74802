"""``torchlight.Size``: the type of ``tensor.size()``, a tuple of ints (PyTorch's ``torch.Size``).

It *is* a tuple (compares equal to one, indexes, unpacks) with ``numel()`` added. ``tensor.shape``
stays a plain tuple: it is read on every op inside torchlight, and a tuple subclass built per
read would cost time on every one; ``x.size()`` is the spelling that returns a ``Size``.
"""

__all__ = ["Size"]


class Size(tuple):
    """A tensor's sizes: ``tl.Size([2, 3])``, ``x.size()``.

    >>> import torchlight as tl
    >>> s = tl.ones(2, 3).size()
    >>> s, s == (2, 3), s.numel(), isinstance(s, tuple)
    (torchlight.Size([2, 3]), True, 6, True)
    """

    __slots__ = ()

    def numel(self) -> int:
        """The number of elements a tensor of this size holds (1 for ``Size([])``)."""
        n = 1
        for s in self:
            n *= s
        return n

    def __repr__(self):
        return f"torchlight.Size({list(self)})"

    def __getitem__(self, item):
        out = tuple.__getitem__(self, item)
        return Size(out) if isinstance(item, slice) else out

    def __add__(self, other):
        return Size(tuple.__add__(self, tuple(other)))
