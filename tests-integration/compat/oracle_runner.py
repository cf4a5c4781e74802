"""Run a PyTorch program under torchlight or under PyTorch, recording its losses (test-side only).

    python oracle_runner.py --framework torchlight --record out.json --weights w.npz PROGRAM ARGS...
    python oracle_runner.py --framework torch      --record out.json --weights w.npz PROGRAM ARGS...

Under ``torchlight`` the ``torch`` aliases of :mod:`torchlight.compat` are installed first. In
both runs:

* the value of every 0-d tensor on which ``.backward()`` is called is recorded, in order, and
  written to ``--record`` (JSON) when the program ends;
* at the k-th construction of an optimizer, the parameters it was given are, in order, saved to
  ``--weights`` as ``opt{k}_{i}`` (torchlight run) or loaded from it (torch run), so both
  frameworks train from the same initial weights. The torchlight run goes first.

This is the test suite's instrument, not part of the entry point: it patches
``Tensor.backward`` and ``Optimizer.__init__`` of whichever framework is running.
"""

import argparse
import json
import os
import runpy
import sys

import numpy as np


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--framework", choices=["torchlight", "torch"], required=True)
    parser.add_argument("--record", required=True)
    parser.add_argument("--weights", required=True)
    parser.add_argument("program")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    opts = parser.parse_args()

    if opts.framework == "torchlight":
        from torchlight import compat

        compat.install()
    import torch

    losses = []
    saved = {}
    built = [0]
    original_backward = torch.Tensor.backward
    original_init = torch.optim.Optimizer.__init__

    def backward(self, *args, **kwargs):
        if self.dim() == 0:
            losses.append(float(self.detach().cpu().item()))
        return original_backward(self, *args, **kwargs)

    def optimizer_init(self, params, *args, **kwargs):
        original_init(self, params, *args, **kwargs)
        if getattr(self, "_oracle_seen", False):  # a subclass calling the base __init__ twice
            return
        self._oracle_seen = True
        k = built[0]
        built[0] += 1
        group_params = [p for group in self.param_groups for p in group["params"]]
        if opts.framework == "torchlight":
            for i, p in enumerate(group_params):
                saved[f"opt{k}_{i}"] = p.detach().cpu().numpy().copy()
            np.savez(opts.weights, **saved)
        else:
            stored = np.load(opts.weights)
            with torch.no_grad():
                for i, p in enumerate(group_params):
                    value = stored[f"opt{k}_{i}"]
                    if tuple(value.shape) != tuple(p.shape):
                        raise SystemExit(
                            f"oracle: parameter {i} of optimizer {k} has shape "
                            f"{tuple(p.shape)} here and {value.shape} in {opts.weights}"
                        )
                    p.copy_(torch.from_numpy(value))

    torch.Tensor.backward = backward
    torch.optim.Optimizer.__init__ = optimizer_init
    sys.argv = [opts.program, *opts.args]
    sys.path[0] = os.path.dirname(os.path.abspath(opts.program))
    try:
        runpy.run_path(opts.program, run_name="__main__")
    finally:
        with open(opts.record, "w") as f:
            json.dump({"losses": losses, "optimizers": built[0]}, f)


if __name__ == "__main__":
    main()
