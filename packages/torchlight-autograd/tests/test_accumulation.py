"""GradientSums: path sums in place only into buffers the engine made, partial gradients."""

import pytest

from torchlight.autograd import Function, PartialGradient, Scalar
from torchlight.autograd.accumulation import GradientSums


class Box:
    """A mutable gradient that records whether it was updated in place (``+=``)."""

    def __init__(self, v):
        self.v = v
        self.inplace = 0

    def __add__(self, other):
        if isinstance(self.v, list):
            return Box([a + b for a, b in zip(self.v, other.v)])
        return Box(self.v + other.v)

    def __iadd__(self, other):
        if isinstance(self.v, list):
            self.v[:] = [a + b for a, b in zip(self.v, other.v)]
        else:
            self.v += other.v
        self.inplace += 1
        return self


class Part(PartialGradient):
    """A gradient that is ``v`` at position ``i`` of a length-``n`` list, zero elsewhere."""

    def __init__(self, n, i, v):
        self.n, self.i, self.v = n, i, v

    def dense(self):
        out = Box([0.0] * self.n)
        out.v[self.i] = self.v
        return out

    def add_into(self, buffer):
        buffer.v[self.i] += self.v
        return buffer


class Var:
    pass


def test_first_sum_is_new_later_sums_are_in_place():
    sums, x = GradientSums(in_place=True), Var()
    shared = [Box(1.0), Box(2.0), Box(4.0)]
    for b in shared:
        sums.add(x, b)
    total = sums.pop(x)
    assert total.v == 7.0
    # the gradients handed in are never touched: another variable may hold the same objects
    assert [b.v for b in shared] == [1.0, 2.0, 4.0] and all(b.inplace == 0 for b in shared)
    assert total.inplace == 1  # the third went into the buffer the first sum made
    assert sums.pop(x) is None


def test_a_popped_sum_is_not_updated_again():
    # once handed to a backward, a sum may be passed on as it is to an input: no longer the
    # engine's to update
    sums, x, y = GradientSums(in_place=True), Var(), Var()
    sums.add(x, Box(1.0))
    sums.add(x, Box(2.0))
    total = sums.pop(x)
    sums.add(y, total)
    sums.add(y, Box(10.0))
    assert total.v == 3.0
    assert sums.pop(y).v == 13.0


def test_partial_gradients_sum_into_one_buffer():
    sums, x = GradientSums(in_place=True), Var()
    for i in range(4):
        sums.add(x, Part(4, i, float(i + 1)))
    assert sums.pop(x).v == [1.0, 2.0, 3.0, 4.0]


def test_partial_after_dense_does_not_touch_the_dense_one():
    sums, x = GradientSums(in_place=True), Var()
    dense = Box([1.0, 1.0])
    sums.add(x, dense)
    sums.add(x, Part(2, 1, 5.0))
    assert sums.pop(x).v == [1.0, 6.0]
    assert dense.v == [1.0, 1.0] and dense.inplace == 0


def test_a_lone_partial_gradient_is_handed_on_dense():
    sums, x = GradientSums(in_place=True), Var()
    sums.add(x, Part(3, 2, 7.0))
    g = sums.pop(x)
    assert isinstance(g, Box) and g.v == [0.0, 0.0, 7.0]


def test_out_of_place_mode_never_updates():
    sums, x = GradientSums(in_place=False), Var()
    boxes = [Box([1.0, 0.0]), Box([2.0, 0.0]), Box([3.0, 0.0])]
    for b in boxes:
        sums.add(x, b)
    sums.add(x, Part(2, 1, 4.0))
    total = sums.pop(x)
    assert total.v == [6.0, 4.0] and total.inplace == 0
    assert [b.v for b in boxes] == [[1.0, 0.0], [2.0, 0.0], [3.0, 0.0]]


def test_floats_and_scalars_sum_as_before():
    # a gradient without __iadd__ (float, Scalar) rebinds: the engine stays generic
    x = Scalar(1.5, requires_grad=True)
    y = x * x + x * 3.0 + x
    y.backward()
    assert x.grad == pytest.approx(2 * 1.5 + 3.0 + 1.0, rel=1e-12)


def test_engine_hands_a_backward_a_dense_sum_of_partials():
    seen = []

    class Pick(Function):
        """y = x[i] for a 'vector' x held as a Python list in a Scalar-like leaf."""

        @staticmethod
        def forward(ctx, x, i):
            ctx.i = i
            return Scalar(x.data[i])

        @staticmethod
        def backward(ctx, g):
            return Part(3, ctx.i, g.data if isinstance(g, Scalar) else g), None

    class VecLeaf:
        def __init__(self, data):
            self.data = data
            self.requires_grad = True
            self._history = None
            self.grad = None

        def accumulate_grad(self, g):
            seen.append(g)
            self.grad = g.v

    x = VecLeaf([1.0, 2.0, 3.0])
    a = Pick.apply(x, 0)
    b = Pick.apply(x, 2)
    c = Pick.apply(x, 0)
    (a * 2.0 + b * 5.0 + c).backward()
    assert x.grad == [3.0, 0.0, 5.0]
    assert len(seen) == 1 and isinstance(seen[0], Box)


class Terms(PartialGradient):
    """A sum of numbers kept as its terms: ``merge`` joins them unbuilt (up to ``cap`` terms)."""

    cap = 3

    def __init__(self, *terms):
        self.terms = list(terms)
        self.built = 0

    def merge(self, other):
        if not isinstance(other, Terms) or len(self.terms) + len(other.terms) > self.cap:
            return None
        self.terms += other.terms
        return self

    def dense(self):
        self.built += 1
        return Box(float(sum(self.terms)))

    def add_into(self, buffer):
        buffer += self.dense()
        return buffer


def test_mergeable_partial_gradients_are_joined_unbuilt():
    sums, x = GradientSums(in_place=True), Var()
    first = Terms(1.0)
    sums.add(x, first)
    for v in (2.0, 4.0):
        sums.add(x, Terms(v))
    total = sums.pop(x, partial_ok=True)
    assert total is first and total.terms == [1.0, 2.0, 4.0] and total.built == 0


def test_past_what_merge_takes_the_sum_is_built_and_owned():
    sums, x = GradientSums(in_place=True), Var()
    parts = [Terms(float(v)) for v in (1, 2, 4, 8, 16)]
    for p in parts:
        sums.add(x, p)
    total = sums.pop(x)
    assert isinstance(total, Box) and total.v == 31.0
    # the 4th was refused: the three joined ones built into a buffer the engine owns, then the
    # 4th and the 5th added into it in place
    assert total.inplace == 2 and parts[0].built == 1


def test_merge_is_not_asked_outside_in_place_sums():
    sums, x = GradientSums(in_place=False), Var()
    sums.add(x, Terms(1.0))
    sums.add(x, Terms(2.0))
    total = sums.pop(x)
    assert isinstance(total, Box) and total.v == 3.0
