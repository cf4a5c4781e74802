"""PyTorch's everyday non-op surface: devices, typed tensors, ``Tensor.type``/``new_*``/format,
sampling, the accelerator queries, amp/autocast, inference mode, and host-memory backends."""

import pickle
import warnings

import numpy as np
import pytest

import torchlight as tl
from torchlight.tensor.backend.numpy import NumpyBackend
from torchlight.tensor.backend.protocol import BackendSpec

# --- devices -------------------------------------------------------------------------------------


def test_device_parsing_str_repr_equality_hash():
    d = tl.device("cuda:0")
    assert (d.type, d.index, str(d), repr(d)) == (
        "cuda",
        0,
        "cuda:0",
        "device(type='cuda', index=0)",
    )
    assert tl.device("numba", 0) == d.__class__("numba:0")
    assert tl.device("cpu").index is None and str(tl.device("cpu")) == "cpu"
    assert tl.device(tl.device("cpu")) == "cpu" == tl.device("cpu")
    # one device per backend: no index means index 0
    assert tl.device("cuda") == tl.device("cuda:0") and tl.device("cuda") == "cuda:0"
    assert tl.device("cuda") != "cpu" and tl.device("cuda") != tl.device("numba")
    assert tl.device("cuda:1") != "cuda"
    assert len({tl.device("cpu"), tl.device("cpu"), "x"}) == 2
    assert hash(tl.device("cuda")) == hash(tl.device("cuda:0"))
    assert pickle.loads(pickle.dumps(d)) == d
    with pytest.raises(AttributeError):
        d.type = "cpu"


@pytest.mark.parametrize("bad", ["cuda:x", ":0", "cuda:-1", 3])
def test_device_rejects_bad_spellings(bad):
    with pytest.raises(tl.BackendError):
        tl.device(bad)


def test_device_objects_are_accepted_wherever_names_are():
    cpu = tl.device("cpu")
    for t in (
        tl.zeros(2, device=cpu),
        tl.ones(2, device="cpu:0"),
        tl.arange(3, device=cpu),
        tl.tensor([1.0], device=cpu),
        tl.randn(2, device=cpu),
        tl.full((2,), 1.0, device=cpu),
    ):
        assert t.device == "cpu" and t.device == cpu
        assert isinstance(t.device, tl.device)
    x = tl.ones(2)
    assert x.to(cpu) is x and x.to(device=cpu) is x and x.to("cpu:0") is x
    with pytest.raises(tl.BackendError, match="one device"):
        tl.zeros(1, device="cpu:1")


def test_device_as_a_context_manager_sets_the_default(fresh_registry):
    tl.register_backend("hosttwin", _HostTwin())
    with tl.device("hosttwin"):
        assert tl.zeros(1).device == "hosttwin"
        with tl.device("cpu"):
            assert tl.zeros(1).device == "cpu"
        assert tl.ones(1).device == "hosttwin"
    assert tl.zeros(1).device == "cpu" and tl.get_default_device() == "cpu"


def test_tensor_device_pickles_and_reprs_as_before():
    x = tl.ones(2)
    y = pickle.loads(pickle.dumps(x))
    assert y.device == "cpu" and y.tolist() == [1.0, 1.0]
    assert repr(x) == "tensor([1., 1.])"


# --- typed tensors, type(), new_*, format ----------------------------------------------------------


def test_typed_tensor_constructors_and_isinstance():
    assert tl.LongTensor([1, 2]).dtype == tl.int64
    assert tl.FloatTensor([1, 2]).tolist() == [1.0, 2.0]
    assert tl.DoubleTensor(2, 3).shape == (2, 3) and tl.DoubleTensor(2, 3).dtype == tl.float64
    assert tl.BoolTensor([1, 0]).tolist() == [True, False]
    assert tl.IntTensor([5]).dtype == tl.int64
    assert tl.FloatTensor().shape == (0,)
    assert isinstance(tl.ones(1), tl.FloatTensor) and not isinstance(tl.ones(1), tl.LongTensor)
    assert isinstance(tl.arange(2), tl.LongTensor) and not isinstance([1], tl.LongTensor)


def test_legacy_tensor_constructor():
    assert tl.Tensor(2, 3).shape == (2, 3) and tl.Tensor(2, 3).dtype == tl.float32
    t = tl.Tensor([1, 2])
    assert t.dtype == tl.float32 and t.tolist() == [1.0, 2.0]
    assert tl.Tensor([1, 2], dtype=tl.int64).dtype == tl.int64
    assert tl.Tensor().shape == (0,)
    assert isinstance(t, tl.Tensor)


def test_type_strings_and_conversions():
    x = tl.tensor([1.7, -2.2])
    assert x.type() == "torch.FloatTensor"
    assert tl.arange(2).type() == "torch.LongTensor"
    assert x.double().type() == "torch.DoubleTensor" and (x > 0).type() == "torch.BoolTensor"
    assert x.type("torch.LongTensor").tolist() == [1, -2]
    assert x.type("torchlight.DoubleTensor").dtype == tl.float64
    assert x.type(tl.float64).dtype == tl.float64 and x.type(tl.LongTensor).dtype == tl.int64
    assert x.type("float64").dtype == tl.float64
    with pytest.raises(tl.DTypeError, match="unknown tensor type"):
        x.type("torch.HalfishTensor")


def test_new_factories_inherit_dtype_and_device():
    x = tl.ones(2, dtype=tl.float64)
    for t, shape, value in (
        (x.new_zeros(2, 3), (2, 3), 0.0),
        (x.new_ones((3,)), (3,), 1.0),
        (x.new_full((2,), 4.5), (2,), 4.5),
    ):
        assert t.dtype == tl.float64 and t.device == x.device and t.shape == shape
        assert np.all(t.numpy() == value)
    assert x.new_empty(4).shape == (4,) and x.new_empty(4).dtype == tl.float64
    assert x.new_tensor([1, 2]).dtype == tl.float64 and x.new_tensor([1, 2]).tolist() == [1.0, 2.0]
    assert x.new_zeros(2, dtype=tl.int64).dtype == tl.int64
    assert x.new_ones(2, requires_grad=True).requires_grad


def test_format_zero_dim_and_others():
    assert format(tl.tensor(3.14159), ".2f") == "3.14"
    assert f"{tl.tensor(7):04d}" == "0007"
    assert f"{tl.tensor([1.0, 2.0])}" == str(tl.tensor([1.0, 2.0]))
    with pytest.raises(TypeError):
        format(tl.tensor([1.0, 2.0]), ".2f")


def test_metadata_aliases():
    x = tl.ones(2, 3)
    assert x.ndimension() == 2 and x.nelement() == 6 and not x.is_cuda and x.is_cpu
    assert x.int().dtype == tl.int64 and x.stride(-1) == 1


def test_half_precision_names_exist_but_refuse_use():
    assert repr(tl.float16) == "torchlight.float16" and tl.half is tl.float16
    assert repr(tl.bfloat16) == "torchlight.bfloat16"
    for make in (
        lambda: tl.zeros(2, dtype=tl.float16),
        lambda: tl.ones(2).half(),
        lambda: tl.ones(2).to(tl.bfloat16),
        lambda: tl.ones(2).bfloat16(),
        lambda: tl.ones(2).to("float16"),
    ):
        with pytest.raises(tl.DTypeError, match="does not compute in"):
            make()
    # float16 *data* still loads, as float32
    assert tl.tensor(np.ones(2, np.float16)).dtype == tl.float32


def test_default_dtype_float64_reaches_every_float_default():
    assert tl.get_default_dtype() == tl.float32
    tl.set_default_dtype(tl.float64)
    try:
        assert tl.get_default_dtype() == tl.float64
        for t in (
            tl.zeros(2),
            tl.ones(2),
            tl.empty(2),
            tl.full((2,), 1.5),
            tl.tensor([0.5]),
            tl.tensor(2.0),
            tl.rand(2),
            tl.randn(2),
            tl.arange(0.0, 1.0, 0.5),
            tl.linspace(0, 1, 3),
            tl.logspace(0, 1, 2),
            tl.eye(2),
            tl.arange(3).mean(),
            tl.arange(3).exp(),
            tl.arange(3) / 2,
            tl.where(tl.tensor([True]), 1.0, 2.0),
        ):
            assert t.dtype == tl.float64, t
        assert tl.tensor(np.ones(2, np.float32)).dtype == tl.float32  # arrays keep their dtype
        assert tl.ones(2).float().dtype == tl.float32 and tl.arange(2).dtype == tl.int64
        assert "dtype" not in repr(tl.ones(1)) and "dtype=torchlight.float32" in repr(
            tl.ones(1).float()
        )
        with pytest.raises(tl.DTypeError):
            tl.set_default_dtype(tl.int64)
    finally:
        tl.set_default_dtype(tl.float32)
    assert tl.zeros(1).dtype == tl.float32


# --- sampling ------------------------------------------------------------------------------------


def test_multinomial_is_reproducible_and_follows_the_weights():
    w = tl.tensor([[1.0, 0.0, 3.0], [0.0, 1.0, 0.0]])
    tl.manual_seed(5)
    a = tl.multinomial(w, 2000, replacement=True)
    tl.manual_seed(5)
    b = w.multinomial(2000, replacement=True)
    assert a.tolist() == b.tolist() and a.shape == (2, 2000) and a.dtype == tl.int64
    counts = np.bincount(a.numpy()[0], minlength=3) / 2000
    np.testing.assert_allclose(counts, [0.25, 0.0, 0.75], atol=0.04)  # 4 sigma of a binomial
    assert set(a.numpy()[1].tolist()) == {1}


def test_multinomial_without_replacement_draws_distinct_categories():
    tl.manual_seed(0)
    w = tl.ones(3, 5).T.contiguous().T  # non-contiguous rows
    s = tl.multinomial(w, 5)
    for row in s.numpy():
        assert sorted(row.tolist()) == [0, 1, 2, 3, 4]
    with pytest.raises(tl.ShapeError, match="without replacement"):
        tl.multinomial(tl.ones(3), 4)
    with pytest.raises(tl.ShapeError, match="positive weights"):
        tl.multinomial(tl.tensor([1.0, 0.0, 0.0]), 2)
    with pytest.raises(tl.ShapeError, match="non-negative"):
        tl.multinomial(tl.tensor([1.0, -1.0]), 1)


def test_randperm_and_bernoulli():
    tl.manual_seed(1)
    p = tl.randperm(50)
    tl.manual_seed(1)
    assert p.tolist() == tl.randperm(50).tolist() and sorted(p.tolist()) == list(range(50))
    g = tl.Generator(3)
    assert tl.randperm(10, generator=g).dtype == tl.int64
    probs = tl.full((4000,), 0.3)
    draws = tl.bernoulli(probs)
    assert draws.dtype == tl.float32 and set(np.unique(draws.numpy())) <= {0.0, 1.0}
    assert abs(draws.mean().item() - 0.3) < 0.03
    assert tl.ones(3).bernoulli_(0.0).tolist() == [0.0, 0.0, 0.0]
    assert tl.zeros(3).bernoulli(p=1.0).tolist() == [1.0, 1.0, 1.0]


# --- accelerator queries, amp, inference mode ------------------------------------------------------


def test_cuda_queries_without_a_cuda_backend(fresh_registry):
    fresh_registry._discovered = True  # nothing installed but cpu
    fresh_registry._specs["numpy"] = BackendSpec("numpy", NumpyBackend)
    assert tl.cuda.is_available() is False and tl.cuda.device_count() == 0
    assert tl.cuda.is_bf16_supported() is False
    tl.cuda.synchronize()  # nothing can be queued: a no-op
    with pytest.raises(tl.BackendError):
        tl.cuda.current_device()
    with pytest.raises(tl.BackendError):
        tl.cuda.get_device_name()
    assert tl.accelerator.is_available() is False and tl.accelerator.current_accelerator() is None


class _FakeGpu(NumpyBackend):
    name = "cuda"
    device = "cuda"
    capabilities = NumpyBackend.capabilities - {"host_memory"}
    device_name = "Fake GPU"
    synced = 0

    def synchronize(self):
        _FakeGpu.synced += 1


def test_cuda_queries_with_a_usable_cuda_backend(fresh_registry):
    fresh_registry._discovered = True
    fresh_registry._specs["numpy"] = BackendSpec("numpy", NumpyBackend)
    tl.register_backend("cuda", BackendSpec("cuda", _FakeGpu))
    assert tl.cuda.is_available() and tl.cuda.device_count() == 1 and tl.cuda.current_device() == 0
    assert tl.cuda.get_device_name() == "Fake GPU" and tl.cuda.get_device_name(0) == "Fake GPU"
    tl.cuda.synchronize()
    assert _FakeGpu.synced == 1
    assert tl.accelerator.is_available() and tl.accelerator.current_accelerator() == "cuda"
    assert tl.ones(2).cuda().device == "cuda" and tl.ones(2).cuda().is_cuda


def test_cuda_unusable_backend_is_not_available(fresh_registry):
    fresh_registry._discovered = True
    tl.register_backend("cuda", BackendSpec("cuda", _FakeGpu, available=lambda: (False, "no GPU")))
    assert tl.cuda.is_available() is False and tl.cuda.device_count() == 0


def test_cuda_manual_seed_seeds_the_shared_generator():
    tl.cuda.manual_seed(11)
    a = tl.rand(3).tolist()
    tl.cuda.manual_seed_all(11)
    assert tl.rand(3).tolist() == a
    tl.manual_seed(11)
    assert tl.rand(3).tolist() == a


class _Opt:
    def __init__(self):
        self.steps = 0

    def step(self, closure=None):
        self.steps += 1
        return "stepped"


def test_grad_scaler_is_an_exact_no_op():
    for scaler in (tl.amp.GradScaler(enabled=False), tl.cuda.amp.GradScaler(enabled=False)):
        loss = tl.tensor(3.0, requires_grad=True)
        assert scaler.scale(loss) is loss and not scaler.is_enabled()
        opt = _Opt()
        scaler.unscale_(opt)
        assert scaler.step(opt) == "stepped" and opt.steps == 1
        scaler.update()
        assert scaler.get_scale() == 1.0 and scaler.state_dict() == {}
        scaler.load_state_dict({})
    with pytest.warns(UserWarning, match="loss scaling is disabled"):
        s = tl.amp.GradScaler("cuda")
    assert not s.is_enabled() and s.scale(loss) is loss


def test_autocast_no_op_cases_and_clear_errors(fresh_registry):
    fresh_registry._discovered = True
    fresh_registry._specs["numpy"] = BackendSpec("numpy", NumpyBackend)
    x = tl.ones(2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with tl.autocast("cpu", enabled=False):
            assert (x * 2).dtype == tl.float32
        with tl.amp.autocast("cpu", dtype=tl.float32):
            assert (x * 2).dtype == tl.float32
        with tl.autocast(device_type="cuda", enabled=False):
            pass

    @tl.autocast("cpu", dtype=tl.float32)
    def f(t):
        return t + 1

    assert f(x).tolist() == [2.0, 2.0]
    with pytest.raises(tl.DTypeError, match="bfloat16"):
        tl.autocast("cpu")
    with pytest.raises(tl.DTypeError, match="float16"):
        tl.autocast("cpu", dtype=tl.float16)
    # no usable cuda here: PyTorch's behaviour, a warning and a disabled region
    with pytest.warns(UserWarning, match="autocast is disabled"):
        with tl.cuda.amp.autocast():
            assert (x * 2).dtype == tl.float32
    tl.register_backend("cuda", BackendSpec("cuda", _FakeGpu))
    with pytest.raises(tl.DTypeError, match="float16"):
        tl.autocast("cuda")


def test_inference_mode_context_and_decorators():
    x = tl.ones(2, requires_grad=True)
    with tl.inference_mode():
        assert tl.is_inference_mode_enabled() and not tl.is_grad_enabled()
        assert not (x * 2).requires_grad
    assert tl.is_grad_enabled() and not tl.is_inference_mode_enabled()
    with tl.inference_mode(False):
        assert (x * 2).requires_grad and not tl.is_inference_mode_enabled()

    @tl.inference_mode
    def bare(t):
        return t * 2

    @tl.inference_mode()
    def called(t):
        return t * 2

    assert not bare(x).requires_grad and not called(x).requires_grad and tl.is_grad_enabled()


# --- host-memory backends --------------------------------------------------------------------------


class _HostTwin(NumpyBackend):
    """Another host-memory backend (numpy kernels under another name), standing in for numba."""

    name = "hosttwin"
    device = "hosttwin"


def test_cpu_and_another_host_memory_backend_combine_on_the_other(fresh_registry):
    tl.register_backend("hosttwin", _HostTwin())
    a = tl.tensor([1.0, 2.0])
    b = tl.tensor([10.0, 20.0], device="hosttwin")
    m = tl.ones(2, 2, device="hosttwin")
    for out, want in (
        (a + b, [11.0, 22.0]),
        (b * a, [10.0, 40.0]),
        (tl.cat([a, b]), [1, 2, 10, 20]),
        (tl.where(a > 1, a, b), [10.0, 2.0]),
        (a @ m, [3.0, 3.0]),
        (tl.maximum(a, b), [10, 20]),
    ):
        assert out.device == "hosttwin"
        assert out.tolist() == want
    a.add_(b)  # in place: stays on a's device
    assert a.device == "cpu" and a.tolist() == [11.0, 22.0]
    # gradients flow across
    w = tl.ones(2, device="hosttwin", requires_grad=True)
    (tl.tensor([3.0, 4.0]) * w).sum().backward()
    assert w.grad.tolist() == [3.0, 4.0]


def test_from_numpy_follows_a_host_memory_default_device(fresh_registry):
    tl.register_backend("hosttwin", _HostTwin())
    arr = np.arange(3.0)
    assert tl.from_numpy(arr).device == "cpu"
    tl.set_default_device(tl.device("hosttwin"))
    try:
        t = tl.from_numpy(arr)
        assert t.device == "hosttwin"
        arr[0] = 9.0  # still zero-copy
        assert t.tolist() == [9.0, 1.0, 2.0]
        assert tl.tensor(arr).device == "hosttwin"
    finally:
        tl.set_default_device(None)


def test_from_numpy_of_a_memmap_shares_its_memory_as_a_plain_array(tmp_path):
    path = tmp_path / "ids.bin"
    np.arange(6, dtype=np.int64).tofile(path)
    mm = np.memmap(path, dtype=np.int64, mode="r+")
    t = tl.from_numpy(mm[2:5])
    assert type(t._td.storage) is np.ndarray  # numpy's memmap hooks would run in every op
    assert t.tolist() == [2, 3, 4] and (t + 1).tolist() == [3, 4, 5]
    mm[3] = 40  # still the file's memory
    assert t.tolist() == [2, 40, 4]
    del t, mm


def test_from_numpy_stays_on_cpu_when_the_default_device_is_not_host_memory(fresh_registry):
    tl.register_backend("cuda", _FakeGpu())
    tl.set_default_device("cuda")
    try:
        assert tl.from_numpy(np.ones(2)).device == "cpu"
        assert tl.zeros(2).device == "cuda"
    finally:
        tl.set_default_device(None)


def test_compile_returns_the_model_itself():
    def f(x):
        return x * 3

    assert tl.compile(f) is f and tl.compile(f, mode="max-autotune", fullgraph=True) is f
    assert tl.compile()(f) is f
    with pytest.raises(TypeError):
        tl.compile(3)


def test_size_is_a_tuple_with_numel():
    x = tl.ones(2, 3, 4).permute(2, 0, 1)
    s = x.size()
    assert isinstance(s, tl.Size) and isinstance(s, tuple) and s == (4, 2, 3) and s == x.shape
    assert s.numel() == 24 == x.numel() and tl.Size([]).numel() == 1
    assert s[1:] == (2, 3) and isinstance(s[1:], tl.Size) and s[0] == 4
    assert repr(tl.Size([2, 3])) == "torchlight.Size([2, 3])"
    assert tl.zeros(s).shape == (4, 2, 3) and x.size(-1) == 3


def test_finfo_iinfo_match_numpy():
    for dt, npd in ((tl.float32, np.float32), (tl.float64, np.float64)):
        f, n = tl.finfo(dt), np.finfo(npd)
        assert (f.eps, f.max, f.min, f.tiny, f.bits) == (
            float(n.eps),
            float(n.max),
            float(n.min),
            float(n.tiny),
            n.bits,
        )
    assert tl.finfo().bits == 32
    i = tl.iinfo(tl.int64)
    assert (i.min, i.max, i.bits) == (-(2**63), 2**63 - 1, 64)
    with pytest.raises(tl.DTypeError):
        tl.finfo(tl.int64)
    with pytest.raises(tl.DTypeError):
        tl.iinfo(tl.float32)


def test_generator_accepts_a_device():
    g = tl.Generator(device="cpu").manual_seed(3)
    h = tl.Generator(device=tl.device("cpu")).manual_seed(3)
    assert tl.rand(3, generator=g).tolist() == tl.rand(3, generator=h).tolist()
    assert tl.Generator(7).initial_seed() == 7


def test_cuda_memory_calls_without_cuda(fresh_registry):
    fresh_registry._discovered = True
    fresh_registry._specs["numpy"] = BackendSpec("numpy", NumpyBackend)
    tl.cuda.empty_cache()  # nothing held: a no-op
    with pytest.raises(tl.BackendError):
        tl.cuda.set_device(0)


def test_ops_on_a_subclass_return_the_subclass_unless_it_names_plain_results():
    """PyTorch's rule: an op on a ``Tensor`` subclass instance returns that subclass; a subclass
    that sets ``_results_as`` (``nn.Parameter``, ``nn.Buffer``) gets that class instead."""

    class Tagged(tl.Tensor):
        __slots__ = ()

    class Plain(tl.Tensor):
        __slots__ = ()
        _results_as = tl.Tensor

    for cls, expect in ((Tagged, Tagged), (Plain, tl.Tensor)):
        x = cls([1.0, 2.0])
        assert type(x) is cls
        y = (x * 2 + 1).sum()
        assert type(y) is expect and type(x.detach()) is expect and type(x[0]) is expect
        assert y.item() == 8.0
    # mixed operands: the first tensor operand's class (PyTorch would pick the subclass)
    z = tl.ones(2) + Tagged([1.0, 1.0])
    assert type(z) is tl.Tensor and z.tolist() == [2.0, 2.0]
