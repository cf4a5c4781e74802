from collections import OrderedDict, namedtuple

import numpy as np
import pytest

import torchlight as tl
from torchlight.data import CollateError, default_collate, default_convert


def test_python_numbers_follow_pytorch():
    ints = default_collate([1, 2, 3])
    assert ints.dtype == tl.int64 and ints.shape == (3,) and ints.tolist() == [1, 2, 3]
    floats = default_collate([1.5, 2.0])
    assert floats.dtype == tl.float64 and floats.tolist() == [1.5, 2.0]
    bools = default_collate([True, False])
    assert bools.dtype == tl.bool and bools.tolist() == [True, False]
    mixed = default_collate([1, 2.5])  # the dtype follows all elements: no silent truncation
    assert mixed.dtype == tl.float64 and mixed.tolist() == [1.0, 2.5]


def test_tensors_are_stacked():
    batch = default_collate([tl.tensor([1.0, 2.0]), tl.tensor([3.0, 4.0])])
    assert batch.shape == (2, 2) and batch.dtype == tl.float32
    assert batch.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    scalars = default_collate([tl.tensor(1), tl.tensor(2)])
    assert scalars.shape == (2,) and scalars.dtype == tl.int64


def test_numpy_arrays_and_scalars():
    batch = default_collate([np.ones((2, 3), np.float32), np.zeros((2, 3), np.float32)])
    assert isinstance(batch, tl.Tensor) and batch.shape == (2, 2, 3) and batch.dtype == tl.float32
    assert default_collate([np.arange(2, dtype=np.int32)] * 3).dtype == tl.int64
    s = default_collate([np.float64(1.0), np.float64(2.0)])
    assert s.dtype == tl.float64 and s.shape == (2,)
    assert default_collate([np.int64(4), np.int64(5)]).tolist() == [4, 5]


def test_strings_stay_lists():
    assert default_collate(["a", "bc"]) == ["a", "bc"]
    assert default_collate([b"x", b"y"]) == [b"x", b"y"]


def test_nested_structures():
    samples = [
        ({"img": tl.tensor([float(i)] * 2), "meta": {"id": i, "tag": f"t{i}"}}, i % 2)
        for i in range(3)
    ]
    batch = default_collate(samples)
    assert isinstance(batch, list) and len(batch) == 2  # tuples become lists, as in PyTorch
    features, labels = batch
    assert features["img"].shape == (3, 2)
    assert features["meta"]["id"].tolist() == [0, 1, 2]
    assert features["meta"]["tag"] == ["t0", "t1", "t2"]
    assert labels.dtype == tl.int64 and labels.tolist() == [0, 1, 0]


def test_lists_namedtuples_and_mapping_types_are_preserved():
    Point = namedtuple("Point", "x y")
    p = default_collate([Point(1, 2.0), Point(3, 4.0)])
    assert isinstance(p, Point) and p.x.tolist() == [1, 3] and p.y.dtype == tl.float64
    lists = default_collate([[1, 2], [3, 4], [5, 6]])
    assert isinstance(lists, list) and [t.tolist() for t in lists] == [[1, 3, 5], [2, 4, 6]]
    od = default_collate([OrderedDict(b=1, a=2), OrderedDict(b=3, a=4)])
    assert isinstance(od, OrderedDict) and list(od) == ["b", "a"]


def test_shape_mismatch_names_both_shapes_and_the_fix():
    with pytest.raises(CollateError, match=r"\(2,\).*\(3,\).*PadCollate"):
        default_collate([tl.zeros((2,)), tl.zeros((3,))])
    with pytest.raises(CollateError, match="different shapes"):
        default_collate([np.zeros(2), np.zeros(3)])


def test_structure_mismatches():
    with pytest.raises(CollateError, match="equal size"):
        default_collate([(1, 2), (1, 2, 3)])
    with pytest.raises(CollateError, match="same keys"):
        default_collate([{"a": 1}, {"b": 1}])
    with pytest.raises(CollateError, match="mixes"):
        default_collate([1, "a"])
    with pytest.raises(CollateError, match="mixes tensors"):
        default_collate([tl.zeros((1,)), 1.0])


@pytest.mark.parametrize("bad", [[None, None], [object()], [np.array(["a"])]])
def test_unsupported_types(bad):
    with pytest.raises(CollateError) as info:
        default_collate(bad)
    assert isinstance(info.value, TypeError)


def test_empty_or_non_list_batch():
    with pytest.raises(CollateError):
        default_collate([])
    with pytest.raises(CollateError):
        default_collate("abc")


def test_default_convert():
    out = default_convert({"a": np.arange(3), "b": (np.float32(1.5), "s"), "c": 3})
    assert isinstance(out["a"], tl.Tensor) and out["a"].dtype == tl.int64
    assert isinstance(out["b"], list) and isinstance(out["b"][0], tl.Tensor) and out["b"][1] == "s"
    assert out["c"] == 3
    t = tl.zeros((2,))
    assert default_convert(t) is t
    assert default_convert([np.zeros(1)])[0].shape == (1,)
