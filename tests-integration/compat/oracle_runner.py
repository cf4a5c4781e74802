"""Run a PyTorch program under torchlight or under PyTorch, recording its losses (test-side only).

    python oracle_runner.py --framework torchlight --record out.json --weights w.npz PROGRAM ARGS...
    python oracle_runner.py --framework torch      --record out.json --weights w.npz PROGRAM ARGS...

Under ``torchlight`` the ``torch`` aliases of :mod:`torchlight.compat` are installed first. In
both runs:

* the value of every one-element tensor on which ``.backward()`` is called is recorded, in order, and
  written to ``--record`` (JSON) when the program ends;
* at the k-th construction of an optimizer, the parameters it was given are, in order, saved to
  ``--weights`` as ``opt{k}_{i}`` (torchlight run) or loaded from it (torch run), so both
  frameworks train from the same initial weights. A program that builds no optimizer (one that
  updates ``param.data`` by hand) gets the same at its first call of a module: the parameters of
  every module bound to one of its global names are saved as ``<name>.<parameter>``, or loaded;
* the random draws the program makes are recorded, or replayed (oracle_draws.py), in
  ``draws.npz`` beside ``--weights``.

The torchlight run goes first.

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
    from oracle_draws import Draws

    draws_path = os.path.join(os.path.dirname(opts.weights) or ".", "draws.npz")
    draws = Draws(opts.framework, draws_path, os.path.dirname(os.path.abspath(opts.program)))
    draws.install(torch)
    losses = []
    saved = {}
    built = [0]
    original_backward = torch.Tensor.backward
    original_init = torch.optim.Optimizer.__init__
    original_call = torch.nn.Module.__call__
    shared_globals = []

    def backward(self, *args, **kwargs):
        if self.numel() == 1:  # a loss: 0-d, or (1,) as the BiLSTM-CRF tutorial's
            losses.append(float(self.detach().cpu().reshape(-1)[0].item()))
        return original_backward(self, *args, **kwargs)

    def optimizer_init(self, params, *args, **kwargs):
        original_init(self, params, *args, **kwargs)
        if getattr(self, "_oracle_seen", False):  # a subclass calling the base __init__ twice
            return
        self._oracle_seen = True
        k = built[0]
        built[0] += 1
        group_params = [p for group in self.param_groups for p in group["params"]]
        share({f"opt{k}_{i}": p for i, p in enumerate(group_params)})

    def module_call(self, *args, **kwargs):
        if not shared_globals:
            shared_globals.append(True)
            program = vars(sys.modules["__main__"])
            share(
                {
                    f"{name}.{key}": p
                    for name, value in list(program.items())
                    if isinstance(value, torch.nn.Module)
                    for key, p in value.named_parameters()
                }
            )
        return original_call(self, *args, **kwargs)

    def share(params: dict) -> None:
        """Save ``params`` (the torchlight run) or load them (the torch run) by key."""
        if opts.framework == "torchlight":
            for key, p in params.items():
                saved[key] = p.detach().cpu().numpy().copy()
            np.savez(opts.weights, **saved)
            return
        with np.load(opts.weights) as stored, torch.no_grad():
            for key, p in params.items():
                value = stored[key]
                if tuple(value.shape) != tuple(p.shape):
                    raise SystemExit(
                        f"oracle: parameter {key} has shape {tuple(p.shape)} here and "
                        f"{value.shape} in {opts.weights}"
                    )
                p.copy_(torch.from_numpy(value))

    torch.Tensor.backward = backward
    torch.optim.Optimizer.__init__ = optimizer_init
    torch.nn.Module.__call__ = module_call
    sys.argv = [opts.program, *opts.args]
    sys.path[0] = os.path.dirname(os.path.abspath(opts.program))
    try:
        runpy.run_path(opts.program, run_name="__main__")
    finally:
        draws.save()
        with open(opts.record, "w") as f:
            json.dump({"losses": losses, "optimizers": built[0]}, f)


if __name__ == "__main__":
    main()
