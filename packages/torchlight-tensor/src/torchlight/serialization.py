"""``torchlight.save`` / ``torchlight.load``: checkpoints without pickle.

What can be saved: tensors, numbers, strings, ``None`` and dicts/lists/tuples of them — in
particular ``model.state_dict()`` and ``optimizer.state_dict()``. The file is an ``.npz`` archive
with a JSON manifest (written by ``torchlight.nn.checkpoint``, in the torchlight-nn
distribution), so loading a file never runs code from it. A whole object (a module, an
optimizer) is refused with a ``CheckpointError``: PyTorch pickles it, which ties the file to
the program's classes and makes loading run code; save its ``state_dict()``, and to restore,
build the object and call ``load_state_dict``.
"""

__all__ = ["save", "load"]


def _checkpoint():
    import torchlight

    return torchlight.__getattr__("nn").checkpoint


def save(obj, f, **kwargs):
    """Write ``obj`` (tensors and containers of them) to the path or binary file ``f``.

    >>> import os, tempfile, torchlight as tl
    >>> path = os.path.join(tempfile.mkdtemp(), "w.pt")
    >>> tl.save({"w": tl.ones(2)}, path)
    >>> tl.load(path)["w"].tolist()
    [1.0, 1.0]
    """
    checkpoint = _checkpoint()
    state_dict = getattr(obj, "state_dict", None)
    if callable(state_dict):
        kind = type(obj).__name__
        name = (
            "model" if hasattr(obj, "forward") else "optimizer" if hasattr(obj, "step") else "obj"
        )
        raise checkpoint.CheckpointError(
            f"torchlight.save does not save whole objects (got a {kind}): checkpoints hold data, "
            f"never pickled code. Save its state instead: torchlight.save({name}.state_dict(), path), "
            f"and restore with {name}.load_state_dict(torchlight.load(path))"
        )
    return checkpoint.save(obj, f, **kwargs)


def load(f, map_location=None, weights_only=None):
    """Read what :func:`save` wrote. Tensors come back on the device they were saved from, or
    on ``map_location`` (a device name or :class:`~torchlight.device`) when given.
    ``weights_only`` is accepted for PyTorch compatibility: a torchlight checkpoint only ever
    holds data.

    >>> import os, tempfile, torchlight as tl
    >>> path = os.path.join(tempfile.mkdtemp(), "t.pt")
    >>> tl.save([tl.arange(3)], path)
    >>> tl.load(path, map_location="cpu")[0].tolist()
    [0, 1, 2]
    """
    if map_location is not None and not isinstance(map_location, str):
        map_location = str(map_location)
    return _checkpoint().load(f, map_location=map_location)
