"""Summing the gradients that reach one variable along several paths.

The multivariate chain rule sums :math:`\\partial L/\\partial x` over every use of ``x``. Written
as ``acc + g`` per use, each use allocates a new buffer of ``x``'s size; a variable used many
times (a weight shared by every step of a loop, a sequence read one step at a time) pays an
allocation per use. :class:`GradientSums` holds the pending gradients of one backward pass and
sums them so that only the first sum allocates: that sum is a fresh value nobody else holds (an
*own* buffer), and the later gradients are added into it in place.

A backward whose gradient is zero outside a part of its input (``x[i]``, ``x[:, t]``, a piece
of ``split``) may return a :class:`PartialGradient` instead of the dense gradient: the zeros are
then never written when the variable has other gradients too, because the part is added into
the sum's buffer where it belongs; only a variable whose sole gradient is partial gets the dense
form built (zeros, then the part copied in, what the backward would have returned). Iterating
over a sequence ``for x_t in x`` thus costs one buffer for ``x``'s gradient, not one per step.
A node whose Function sets ``partial_grad = True`` is handed such a sole partial gradient as it
is, not built: ``x[i]``'s backward turns the gradient of ``x[i][j]`` into that of ``x[i, j]``
(no zeros of ``x[i]``'s size built in between). Two partial gradients of one variable may also
be joined unbuilt (:meth:`PartialGradient.merge`): a linear layer used at every step of a loop
sums its weight's gradients as one product over all steps.

Nothing is done in place under ``create_graph=True``: there the sums are recorded ops of the
graph, which in-place updates would corrupt.
"""

__all__ = ["PartialGradient", "GradientSums"]


class PartialGradient:
    """The protocol of a gradient that is zero outside a part of its variable.

    A backward may return one in place of a dense gradient (only outside ``create_graph``; the
    engine passes one on only to the backward of a Function that sets ``partial_grad = True``,
    never to ``accumulate_grad``). Subclasses define:

    - :meth:`dense`: the whole gradient, a fresh value of the variable's shape;
    - :meth:`add_into`: add the part into ``buffer`` (a gradient of the variable's shape that the
      engine owns), in place, and return the sum (``buffer`` itself, or a new value where an
      in-place add cannot keep the result exact);
    - :meth:`merge` (optional): join another gradient of the same variable into this one without
      computing either (the default joins nothing).
    """

    __slots__ = ()

    def dense(self):
        """The gradient as a fresh dense value (zeros outside the part)."""
        raise NotImplementedError

    def add_into(self, buffer):
        """``buffer + self``, written into ``buffer`` where possible; returns the sum."""
        raise NotImplementedError

    def merge(self, other):
        """``self + other`` still unbuilt (``self``, extended, or a new partial gradient), or
        ``None`` when the two cannot be joined; the engine then builds the sum. May take over
        ``self``: the engine makes one partial gradient per variable and use."""
        return None


def _dense(g):
    return g.dense() if isinstance(g, PartialGradient) else g


def _add_own(acc, g):
    """``acc + g`` for an ``acc`` the engine owns: in place unless that would change the sum's
    shape or dtype (a broadcast or a promotion), where it is a new value (then owned too)."""
    if isinstance(g, PartialGradient):
        return g.add_into(acc)
    if getattr(acc, "shape", None) == getattr(g, "shape", None) and getattr(
        acc, "dtype", None
    ) is getattr(g, "dtype", None):
        acc += g  # a variable without __iadd__ (a float, a Scalar) rebinds to acc + g
        return acc
    return acc + g


class GradientSums:
    """The pending gradients of one backward pass, keyed by variable (see the module docstring).

    ``add(var, g)`` sums ``g`` into ``var``'s pending gradient; ``pop(var)`` hands the total over
    (dense), or ``None`` when nothing reached ``var``. ``in_place=False`` (``create_graph``) sums
    out of place.
    """

    __slots__ = ("_sums", "_own", "_in_place")

    def __init__(self, in_place: bool):
        self._sums: dict = {}
        self._own: set[int] = set()  # keys whose sum is a buffer the engine made itself
        self._in_place = in_place

    def add(self, var, g) -> None:
        """Sum ``g`` (a gradient of ``var``, dense or partial) into ``var``'s pending gradient."""
        key = id(var)
        sums = self._sums
        acc = sums.get(key)
        if acc is None:
            sums[key] = g
        elif not self._in_place:
            sums[key] = _dense(acc) + _dense(g)
        elif key in self._own:
            sums[key] = _add_own(acc, g)
        else:
            # the first sum: build a buffer nobody else holds (``acc`` and ``g`` may be shared,
            # e.g. an add's gradient goes to both of its inputs), add into it from now on
            if isinstance(acc, PartialGradient):
                joined = acc.merge(g)
                if joined is not None:  # still unbuilt: nothing owned yet
                    sums[key] = joined
                    return
                sums[key] = _add_own(acc.dense(), g)
            elif isinstance(g, PartialGradient):
                sums[key] = _add_own(g.dense(), acc)
            else:
                sums[key] = acc + g
            self._own.add(key)

    def pop(self, var, partial_ok: bool = False):
        """The total gradient of ``var``, removed from the pending ones; ``None`` if none. Dense,
        unless ``partial_ok`` (the backward of ``var``'s node takes a :class:`PartialGradient`
        as it is) and the only gradient that reached ``var`` was partial."""
        key = id(var)
        g = self._sums.pop(key, None)
        if g is None:
            return None
        self._own.discard(key)  # handed on: a backward may pass it to its inputs as it is
        return g.dense() if not partial_ok and isinstance(g, PartialGradient) else g
