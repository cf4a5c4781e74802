"""``torchlight.save``/``load`` (module ``torchlight.serialization``): state dicts round-trip,
whole objects are refused with a message that says what to save instead."""

import doctest

import numpy as np
import pytest

import torchlight as tl

nn = pytest.importorskip("torchlight.nn")


def test_state_dict_round_trip_through_the_module_path(tmp_path):
    import torchlight.serialization as ser

    assert tl.save is ser.save and tl.load is ser.load
    model = nn.Linear(3, 2)
    path = tmp_path / "model.pt"
    tl.save(model.state_dict(), path)
    fresh = nn.Linear(3, 2)
    fresh.load_state_dict(tl.load(path, map_location=tl.device("cpu"), weights_only=True))
    for k, v in model.state_dict().items():
        np.testing.assert_array_equal(fresh.state_dict()[k].numpy(), v.numpy())


def test_whole_objects_are_refused(tmp_path):
    model = nn.Linear(3, 2)
    with pytest.raises(
        nn.checkpoint.CheckpointError, match=r"torchlight\.save\(model\.state_dict\(\), path\)"
    ):
        tl.save(model, tmp_path / "m.pt")
    opt = tl.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(nn.checkpoint.CheckpointError, match=r"optimizer\.state_dict\(\)"):
        tl.save(opt, tmp_path / "o.pt")
    assert not (tmp_path / "m.pt").exists()


def test_serialization_docstring_examples_run():
    import torchlight.serialization as ser

    assert doctest.testmod(ser, optionflags=doctest.ELLIPSIS).failed == 0
