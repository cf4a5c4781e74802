"""Where the GPT training step's memory goes: what torchlight's autograd graph keeps alive after
the forward pass, beside what PyTorch saves for backward.

Run: ``python tests-integration/benchmarks/profile_gpt_memory.py [--device cpu|numba]``. The model
and batch are ``bench_memory.py``'s (``bench_backends.py``'s GPT step). After one warm-up step,
one more forward pass builds the graph, and the buffers it holds are counted:

* torchlight: the graph is walked from the loss through every ``History`` (the node each
  computed tensor keeps: the function, its context, and its inputs, which are leaves or the
  nodes of computed inputs). Each numpy buffer (a view counts as its base array) that is not a
  parameter is counted once, as **saved** when some context holds it for backward
  (``save_for_backward`` or a context attribute) and as **held only as an input** when nothing
  but a ``History.inputs`` reference keeps it (a leaf that is not a parameter, such as the
  batch): a buffer that backward never reads. Before the graph linked nodes instead of tensors,
  every intermediate was held this way.
* PyTorch (when importable): the bytes of every distinct non-parameter storage passed to
  ``torch.autograd.graph.saved_tensors_hooks`` during the same forward pass, i.e. all PyTorch
  keeps for backward.

This is a diagnostic: it reads torchlight's autograd internals (``Tensor._history``,
``Context._saved``, ``TensorData.storage``) and so follows them when they change. The RSS after
each phase of a steady step is printed too.
"""

from __future__ import annotations

import argparse
import collections
import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_memory  # noqa: E402

MIB = 2**20
#: a Context's own bookkeeping attributes; any other attribute is something the op stored
CONTEXT_OWN = frozenset(("needs_input_grad", "_saved", "_versions", "_freed"))


@dataclass
class Buffer:
    """One numpy buffer the graph holds: its size, the op and shape of the first tensor seen on it,
    and whether some context saved it for backward."""

    nbytes: int
    producer: str
    shape: tuple
    saved: bool = False


def owner(array: np.ndarray) -> np.ndarray:
    """The array that owns ``array``'s memory (a view's base, followed to the end)."""
    while isinstance(array.base, np.ndarray):
        array = array.base
    return array


def buffers_in(value):
    """The owning numpy arrays inside ``value``: a tensor's storage, an array, or containers."""
    import torchlight as tl  # noqa: PLC0415

    if isinstance(value, tl.Tensor):
        storage = value._td.storage
        if isinstance(storage, np.ndarray):
            yield owner(storage)
    elif isinstance(value, np.ndarray):
        yield owner(value)
    elif isinstance(value, (tuple, list)):
        for v in value:
            yield from buffers_in(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from buffers_in(v)


def op_name(history) -> str:
    """The name of the autograd function that made a tensor (its class name)."""
    fn = history.fn
    return fn.__name__ if isinstance(fn, type) else type(fn).__name__


def graph_buffers(root, parameters=()) -> dict:
    """``id(buffer) -> Buffer`` for every non-parameter buffer that ``root``'s graph keeps alive
    (``root``'s own buffer left out: the caller holds it)."""
    import torchlight as tl  # noqa: PLC0415

    skip = {id(b) for p in parameters for b in buffers_in(p)}
    skip.update(id(b) for b in buffers_in(root))
    nodes, seen, stack = [], set(), [root]  # tensors (the root, leaves) and History nodes
    while stack:
        v = stack.pop()
        if id(v) not in seen:
            seen.add(id(v))
            nodes.append(v)
            if v._history is not None:
                stack.extend(
                    x for x in v._history.inputs if isinstance(x, (tl.Tensor, tl.autograd.History))
                )
    found: dict[int, Buffer] = {}
    for t in nodes:  # first every tensor of the graph, so a buffer is named after its tensor
        if isinstance(t, tl.Tensor):
            producer = "leaf" if t._history is None else op_name(t._history)
            for b in buffers_in(t):
                if id(b) not in skip and id(b) not in found:
                    found[id(b)] = Buffer(b.nbytes, producer, tuple(t.shape))
    for v in nodes:  # then what the contexts keep, named after the tensor that holds it
        hist = v._history
        if hist is None:
            continue
        kept = list(hist.ctx._saved)
        kept += [x for k, x in vars(hist.ctx).items() if k not in CONTEXT_OWN]
        for item in kept:
            if isinstance(item, tl.Tensor):
                made_by = "leaf" if item._history is None else op_name(item._history)
                name, shape = made_by, tuple(item.shape)
            else:  # an array the op made and kept
                name, shape = f"{op_name(hist)} (own array)", None
            for b in buffers_in(item):
                if id(b) in skip:
                    continue
                if id(b) not in found:
                    found[id(b)] = Buffer(b.nbytes, name, shape or b.shape)
                found[id(b)].saved = True
    return found


def summary(buffers: dict) -> dict:
    """Bytes saved for backward, bytes held only as inputs, and both by (producer, shape)."""
    by = {True: collections.Counter(), False: collections.Counter()}
    for b in buffers.values():
        by[b.saved][(b.producer, b.shape)] += b.nbytes
    return {
        "saved": sum(by[True].values()),
        "held_only": sum(by[False].values()),
        "saved_by": by[True],
        "held_only_by": by[False],
    }


def torch_saved_bytes(forward, parameters) -> tuple[int, collections.Counter]:
    """Bytes of the distinct non-parameter storages PyTorch saves during ``forward()``."""
    import torch  # noqa: PLC0415

    skip = {p.untyped_storage().data_ptr() for p in parameters}
    seen: dict[int, int] = {}
    by_shape = collections.Counter()

    def pack(t):
        storage = t.untyped_storage()
        ptr = storage.data_ptr()
        if ptr not in skip and ptr not in seen:
            seen[ptr] = storage.nbytes()
            by_shape[tuple(t.shape)] += storage.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = forward()
    del loss
    return sum(seen.values()), by_shape


def phase_rss(forward, opt) -> dict:
    """RSS (MiB) after each phase of one step, and the peak over it (``VmHWM`` reset first)."""
    rss = {}
    bench_memory.reset_peak()
    rss["before"] = bench_memory.proc_status_kib("VmRSS") / 1024
    loss = forward()
    rss["after forward"] = bench_memory.proc_status_kib("VmRSS") / 1024
    opt.zero_grad()
    loss.backward()
    rss["after backward"] = bench_memory.proc_status_kib("VmRSS") / 1024
    opt.step()
    del loss
    rss["after step"] = bench_memory.proc_status_kib("VmRSS") / 1024
    rss["peak"] = bench_memory.proc_status_kib("VmHWM") / 1024
    return rss


def warm_step(forward, opt) -> None:
    """One training step, so that later figures leave out first-use costs."""
    loss = forward()
    opt.zero_grad()
    loss.backward()
    opt.step()


def _top(counter, n=8) -> str:
    return "\n".join(f"    {k}: {v / MIB:.2f} MiB" for k, v in counter.most_common(n))


def main(argv=None) -> None:
    """Print PyTorch's saved bytes (when importable) and torchlight's graph accounting."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--device", default="cpu", choices=["cpu", "numba"])
    args = p.parse_args(argv)
    if importlib.util.find_spec("torch") is not None:
        forward, opt = bench_memory.build_torch()
        params = [q for g in opt.param_groups for q in g["params"]]
        warm_step(forward, opt)
        total, by_shape = torch_saved_bytes(forward, params)
        print(f"PyTorch: saved for backward {total / MIB:.1f} MiB; by shape:\n{_top(by_shape)}")
        print("  RSS by phase (MiB):", {k: round(v, 1) for k, v in phase_rss(forward, opt).items()})
    forward, opt = bench_memory.build_torchlight(args.device)
    params = [q for g in opt.param_groups for q in g["params"]]
    warm_step(forward, opt)
    loss = forward()
    s = summary(graph_buffers(loss, params))
    del loss
    print(
        f"torchlight ({args.device}): graph holds {(s['saved'] + s['held_only']) / MIB:.1f} MiB: "
        f"saved for backward {s['saved'] / MIB:.1f} MiB, held only as inputs "
        f"{s['held_only'] / MIB:.1f} MiB"
    )
    print(f"  saved, by producing op and shape:\n{_top(s['saved_by'])}")
    print(f"  held only as inputs, by producing op and shape:\n{_top(s['held_only_by'])}")
    print("  RSS by phase (MiB):", {k: round(v, 1) for k, v in phase_rss(forward, opt).items()})


if __name__ == "__main__":
    main()
