"""The class-level shortcut to registered entries (``torchlight.nn.registered``): reading
``module.name`` returns what PyTorch's rule returns, before and after the class learns it."""

import copy
import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import torchlight as tl
import torchlight.nn as nn
from torchlight.nn.registered import Registered

NAMES = ("p", "q", "child", "buf")


def expected(m, name):
    """PyTorch's rule, read off the module's state: the instance ``__dict__``, then the
    parameters, child modules and buffers; ``AttributeError`` when none holds the name."""
    d = m.__dict__
    if name in d:
        return d[name]
    for reg in ("_parameters", "_modules", "_buffers"):
        if name in d[reg]:
            return d[reg][name]
    raise AttributeError(name)


def fresh_class():
    class Holder(nn.Module):
        pass

    return Holder


def test_a_read_teaches_the_class_and_later_reads_follow_the_registry():
    lin = nn.Linear(2, 3)
    assert lin.weight is lin._parameters["weight"]
    assert isinstance(nn.Linear.__dict__["weight"], Registered)
    replaced = nn.Parameter(tl.ones(3, 2))
    lin._parameters["weight"] = replaced  # written behind __setattr__'s back
    assert lin.weight is replaced
    lin.weight = nn.Parameter(tl.zeros(3, 2))
    assert lin.weight is lin._parameters["weight"] and lin.weight.sum().item() == 0.0
    del lin._parameters["weight"]
    with pytest.raises(AttributeError, match="'Linear' object has no attribute 'weight'"):
        lin.weight  # noqa: B018
    assert not hasattr(lin, "weight")


def test_another_instance_without_the_name_raises_the_usual_error_and_hides_it_from_dir():
    Holder = fresh_class()
    a, b = Holder(), Holder()
    a.p = nn.Parameter(tl.ones(1))
    assert a.p is a._parameters["p"]  # the class learns "p"
    assert isinstance(Holder.__dict__["p"], Registered)
    with pytest.raises(AttributeError, match="'Holder' object has no attribute 'p'"):
        b.p  # noqa: B018
    assert "p" in dir(a) and "p" not in dir(b)


def test_a_plain_attribute_on_the_instance_wins_as_before():
    # what weight_norm does: the registered weight is removed and a computed tensor set instead
    lin = nn.Linear(2, 2)
    lin.weight  # noqa: B018 -- the class learns "weight"
    computed = tl.full((2, 2), 5.0)
    del lin._parameters["weight"]
    lin.weight = computed
    assert lin.weight is computed
    assert lin(tl.ones(1, 2)).tolist()[0] == pytest.approx((10.0 + lin.bias).tolist())


def test_buffers_and_children_are_read_the_same_way():
    Holder = fresh_class()
    h = Holder()
    h.register_buffer("buf", tl.arange(3))
    h.child = nn.Linear(1, 1)
    assert h.buf is h._buffers["buf"] and h.child is h._modules["child"]
    h.register_buffer("buf", None)
    h.child = None
    assert h.buf is None and h.child is None


def test_a_class_with_its_own_getattr_and_module_itself_learn_nothing():
    class Custom(nn.Module):
        def __getattr__(self, name):
            if name == "alias":
                return self.p
            return super().__getattr__(name)

    c = Custom()
    c.p = nn.Parameter(tl.ones(1))
    assert c.alias is c._parameters["p"]
    assert "p" not in Custom.__dict__
    plain = nn.Module()
    plain.register_parameter("only_here", nn.Parameter(tl.ones(1)))
    assert plain.only_here is plain._parameters["only_here"]
    assert "only_here" not in nn.Module.__dict__


def test_copies_and_pickles_read_their_own_entries():
    lin = nn.Linear(2, 3)
    lin.weight  # noqa: B018
    for other in (copy.deepcopy(lin), pickle.loads(pickle.dumps(lin))):
        assert other.weight is other._parameters["weight"]
        assert other.weight is not lin.weight
        assert other.weight.tolist() == lin.weight.tolist()


OPS = st.lists(
    st.tuples(
        st.integers(0, 1),  # which instance
        st.sampled_from(("param", "buffer", "child", "plain", "none", "del", "del_registry")),
        st.sampled_from(NAMES),
    ),
    max_size=25,
)


@settings(max_examples=150, deadline=None)
@given(OPS)
def test_any_sequence_of_writes_reads_back_as_pytorchs_rule_says(ops):
    Holder = fresh_class()
    mods = [Holder(), Holder()]
    for which, op, name in ops:
        m = mods[which]
        try:
            if op == "param":
                m.__setattr__(name, nn.Parameter(tl.ones(1)))
            elif op == "buffer":
                m.register_buffer(name, tl.zeros(1))
            elif op == "child":
                m.__setattr__(name, nn.Identity())
            elif op == "plain":
                m.__setattr__(name, 7)
            elif op == "none":
                m.__setattr__(name, None)
            elif op == "del":
                m.__delattr__(name)
            else:
                for reg in (m._parameters, m._modules, m._buffers):
                    reg.pop(name, None)
        except (AttributeError, TypeError, KeyError):
            pass  # refused writes (a plain value over a parameter...) change nothing
        for each in mods:
            for n in NAMES:
                try:
                    want = expected(each, n)
                except AttributeError:
                    with pytest.raises(AttributeError):
                        getattr(each, n)
                else:
                    assert getattr(each, n) is want
