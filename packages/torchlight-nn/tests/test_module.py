"""Parameter, Module registration/traversal, modes, to(), state_dict round trips and errors, repr."""

import copy

import numpy as np
import pytest

import torchlight as tl
import torchlight.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 3))
        self.bn = nn.BatchNorm1d(3)
        self.head = nn.Linear(3, 1)
        self.scale = nn.Parameter(tl.ones(1))
        self.register_buffer("mask", tl.ones(3), persistent=False)
        self.register_buffer("count", tl.zeros(()))

    def forward(self, x):
        return self.head(self.bn(self.encoder(x)) * self.mask) * self.scale


def test_parameter_is_a_tensor_sharing_storage():
    t = tl.zeros(2, 3)
    p = nn.Parameter(t)
    assert isinstance(p, tl.Tensor) and isinstance(p, nn.Parameter)
    assert p.requires_grad and p.is_leaf and p.shape == (2, 3)
    with tl.no_grad():
        p.fill_(2.0)
    assert t.numpy()[0, 0] == 2.0  # same storage, like torch.nn.Parameter(t)
    y = p * 2 + 1
    assert type(y) is tl.Tensor
    y.sum().backward()
    np.testing.assert_allclose(p.grad.numpy(), 2.0)
    assert repr(p).startswith("Parameter containing:\ntensor(")
    assert not nn.Parameter(tl.zeros(1), requires_grad=False).requires_grad
    with pytest.raises(tl.DTypeError):
        nn.Parameter(tl.zeros(2, dtype=tl.int64))
    nonleaf = tl.randn(2, requires_grad=True) * 2
    assert nn.Parameter(nonleaf).is_leaf
    q = copy.deepcopy(p)
    assert isinstance(q, nn.Parameter) and q._td.storage is not p._td.storage


def test_registration_and_traversal():
    net = Net()
    names = [n for n, _ in net.named_parameters()]
    assert names == [
        "scale",
        "encoder.0.weight",
        "encoder.0.bias",
        "encoder.2.weight",
        "encoder.2.bias",
        "bn.weight",
        "bn.bias",
        "head.weight",
        "head.bias",
    ]
    assert [n for n, _ in net.named_buffers()] == [
        "mask",
        "count",
        "bn.running_mean",
        "bn.running_var",
        "bn.num_batches_tracked",
    ]
    assert [n for n, _ in net.named_modules()] == [
        "",
        "encoder",
        "encoder.0",
        "encoder.1",
        "encoder.2",
        "bn",
        "head",
    ]
    assert [type(c).__name__ for c in net.children()] == ["Sequential", "BatchNorm1d", "Linear"]
    assert len(list(net.modules())) == 7
    assert net.num_parameters() == 1 + 9 + 12 + 6 + 4
    assert len(list(net.parameters(recurse=False))) == 1
    assert net.get_submodule("encoder.2") is net.encoder[2]
    assert net.get_parameter("head.bias") is net.head.bias


def test_shared_parameters_are_listed_once():
    lin = nn.Linear(2, 2)
    seq = nn.Sequential(lin, lin)
    assert len(list(seq.parameters())) == 2
    assert [n for n, _ in seq.named_parameters()] == ["0.weight", "0.bias"]


def test_setattr_rules():
    m = nn.Module()
    m.w = nn.Parameter(tl.zeros(1))
    m.w = None
    assert m.w is None and "w" in m._parameters
    with pytest.raises(TypeError, match="cannot assign"):
        m.w = tl.zeros(1)
    m.child = nn.Linear(1, 1)
    del m.child
    assert "child" not in m._modules
    m.buf = nn.Buffer(tl.zeros(2), persistent=False)
    assert "buf" in m._buffers and "buf" not in m.state_dict()

    class Bad(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(tl.zeros(1))

    with pytest.raises(AttributeError, match="before Module.__init__"):
        Bad()
    with pytest.raises(AttributeError, match="no attribute 'missing'"):
        m.missing


def test_train_eval_zero_grad_requires_grad_apply():
    net = Net()
    assert net.eval() is net and not net.training and not net.encoder[0].training
    assert net.train() is net and net.bn.training
    net.eval()
    net(tl.randn(4, 2)).sum().backward()
    assert all(p.grad is not None for p in net.parameters())
    net.zero_grad(set_to_none=False)
    assert all(np.all(p.grad.numpy() == 0) for p in net.parameters())
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())
    assert net.requires_grad_(False) is net and not any(p.requires_grad for p in net.parameters())
    seen = []
    assert net.apply(lambda m: seen.append(type(m).__name__)) is net
    assert seen[-1] == "Net" and seen[0] == "Linear"


def test_to_dtype_keeps_parameter_identity():
    net = Net()
    params = list(net.parameters())
    assert net.to(tl.float64) is net
    assert [id(p) for p in net.parameters()] == [id(p) for p in params]
    assert all(p.dtype is tl.float64 for p in net.parameters())
    assert net.bn.running_mean.dtype is tl.float64 and net.bn.num_batches_tracked.dtype is tl.int64
    out = net.eval()(tl.randn(2, 2, dtype=tl.float64))
    assert out.dtype is tl.float64
    assert net.to("cpu") is net
    with pytest.raises(TypeError):
        net.to(tl.int64)


def test_state_dict_round_trip_through_numpy():
    tl.manual_seed(0)
    a, b = Net(), Net()
    a.train()(tl.randn(8, 2))  # move the running statistics away from their init
    sd = a.state_dict()
    assert list(sd) == [
        "scale",
        "count",
        "encoder.0.weight",
        "encoder.0.bias",
        "encoder.2.weight",
        "encoder.2.bias",
        "bn.weight",
        "bn.bias",
        "bn.running_mean",
        "bn.running_var",
        "bn.num_batches_tracked",
        "head.weight",
        "head.bias",
    ]
    assert "mask" not in sd  # non-persistent buffer
    exported = {k: np.asarray(v) for k, v in sd.items()}  # what a PyTorch user would export
    res = b.load_state_dict(exported)
    assert res.missing_keys == [] and res.unexpected_keys == []
    for k, v in b.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), exported[k])
    assert b.bn.num_batches_tracked.item() == 1
    x = tl.randn(3, 2)
    np.testing.assert_array_equal(a.eval()(x).detach().numpy(), b.eval()(x).detach().numpy())
    # state_dict values share storage with the module (like PyTorch), but are detached
    assert not sd["head.weight"].requires_grad


def test_load_state_dict_errors_name_every_problem():
    net = Net()
    sd = {k: v.to_numpy() for k, v in net.state_dict().items()}
    del sd["head.bias"]
    sd["extra.weight"] = np.zeros(2)
    sd["encoder.0.weight"] = np.zeros((2, 3))
    before = net.encoder[2].weight.detach().to_numpy()
    sd["encoder.2.weight"] = np.ones((3, 3))
    with pytest.raises(nn.StateDictError) as info:
        net.load_state_dict(sd)
    msg = str(info.value)
    assert 'Missing key(s) in state_dict: "head.bias"' in msg
    assert 'Unexpected key(s) in state_dict: "extra.weight"' in msg
    assert (
        "size mismatch for encoder.0.weight: copying a param with shape (2, 3) from checkpoint, the shape in current model is (3, 2)"
        in msg
    )
    assert isinstance(info.value, RuntimeError)
    np.testing.assert_array_equal(
        net.encoder[2].weight.detach().numpy(), before
    )  # nothing half-loaded
    sd["encoder.0.weight"] = np.zeros((3, 2))
    res = net.load_state_dict(sd, strict=False)
    assert res.missing_keys == ["head.bias"] and res.unexpected_keys == ["extra.weight"]
    np.testing.assert_array_equal(net.encoder[2].weight.detach().numpy(), 1.0)
    sd["encoder.0.weight"] = np.zeros((4, 2))
    with pytest.raises(nn.StateDictError, match="size mismatch for encoder.0.weight"):
        net.load_state_dict(sd, strict=False)


def test_forward_hooks():
    lin = nn.Linear(2, 2)
    calls = []
    h1 = lin.register_forward_pre_hook(lambda m, args: calls.append("pre"))
    h2 = lin.register_forward_hook(lambda m, args, out: out * 0)
    assert np.all(lin(tl.randn(1, 2)).detach().numpy() == 0) and calls == ["pre"]
    h1.remove()
    h2.remove()
    assert not np.all(lin(tl.ones(1, 2)).detach().numpy() == 0)


def test_nested_repr():
    net = Net()
    assert repr(net) == (
        "Net(\n"
        "  (encoder): Sequential(\n"
        "    (0): Linear(in_features=2, out_features=3, bias=True)\n"
        "    (1): ReLU()\n"
        "    (2): Linear(in_features=3, out_features=3, bias=True)\n"
        "  )\n"
        "  (bn): BatchNorm1d(3, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)\n"
        "  (head): Linear(in_features=3, out_features=1, bias=True)\n"
        ")"
    )


def test_containers():
    seq = nn.Sequential(nn.Linear(2, 4), nn.Tanh(), nn.Linear(4, 1))
    assert len(seq) == 3 and isinstance(seq[-1], nn.Linear)
    assert len(seq[:2]) == 2 and seq(tl.randn(5, 2)).shape == (5, 1)
    seq.append(nn.Sigmoid())
    assert [n for n, _ in seq.named_children()][-1] == "3"
    from collections import OrderedDict

    named = nn.Sequential(OrderedDict(fc=nn.Linear(2, 2), act=nn.ReLU()))
    assert [n for n, _ in named.named_parameters()] == ["fc.weight", "fc.bias"]
    ml = nn.ModuleList([nn.Linear(1, 1) for _ in range(3)])
    ml.append(nn.Linear(1, 2))
    ml.insert(0, nn.Identity())
    assert len(ml) == 5 and isinstance(ml[0], nn.Identity)
    assert [n for n, _ in ml.named_parameters()][:2] == ["1.weight", "1.bias"]
    del ml[0]
    assert isinstance(ml[0], nn.Linear) and len(ml) == 4
    md = nn.ModuleDict({"a": nn.Linear(1, 1), "b": nn.ReLU()})
    md["c"] = nn.Linear(1, 3)
    assert list(md) == ["a", "b", "c"] and "c" in md and len(md) == 3
    assert [n for n, _ in md.named_parameters()] == ["a.weight", "a.bias", "c.weight", "c.bias"]
    with pytest.raises(IndexError):
        seq[10]


def test_deepcopy_gives_an_independent_working_module():
    net = Net()
    twin = copy.deepcopy(net)
    x = tl.randn(4, 2)
    np.testing.assert_array_equal(net.eval()(x).detach().numpy(), twin.eval()(x).detach().numpy())
    with tl.no_grad():
        twin.head.bias.fill_(5.0)
    assert net.head.bias.detach().numpy()[0] != 5.0
    assert twin.head.bias.backend is net.head.bias.backend  # tensors from both still combine
    (twin.head.weight + net.head.weight).sum()
    assert twin.encoder[0].weight is not net.encoder[0].weight
    assert isinstance(twin.encoder[0].weight, nn.Parameter)
