"""The real-GPU check of torchlight-backend-cuda: conformance on the device, then benchmarks.

Run on a machine with an NVIDIA GPU (no network needed once the wheels are there)::

    # from the repository root, nothing of torchlight installed:
    python tests-integration/gpu_check.py --out gpu_check.json
    # or through nox (installs the distributions editable + numba-cuda[cu12]):
    nox -s gpu -- --out gpu_check.json

Steps, each recorded in one JSON file (``--out``, default ``gpu_check.json``):

1. environment: GPU name, compute capability, driver/runtime, versions;
2. the conformance kit on the device (``packages/torchlight-backend-cuda/tests/test_conformance_cuda.py``,
   in a pytest subprocess, ``small`` profile) plus the transfer-count tests — needs pytest and hypothesis;
3. matmul 4096x4096 float32 on the cuda backend, GFLOP/s (and PyTorch's when torch has CUDA);
4. the GPT training step (vocab 65, 6 layers, 6 heads, width 384, context 256, batch 64; AdamW):
   tokens/s on the cuda backend — ``projects/mini-gpt/model.py`` when it exists, else a small
   transformer from ``torchlight.nn`` — beside PyTorch CUDA eager when torch is present;
5. the LSTM language-model step (PyTorch's word_language_model: 2-layer LSTM 200/200, vocabulary
   10000, bptt 35, batch 20, dropout 0.2, SGD + clip_grad_norm_ 0.25): the fused LSTM cell
   kernels and dropout masks drawn on the device, with host<->device transfers per step, beside
   PyTorch CUDA eager (cuDNN) when torch is present.

The first step of each model is timed on its own (``first_step_seconds_incl_compile``): compile
time on a fresh machine, the load from numba-cuda's disk cache on a second run.

Runs from the source tree: when ``import torchlight`` fails, every ``packages/*/src`` folder goes
on ``sys.path`` (and on ``PYTHONPATH`` for the pytest subprocess), and when the ``cuda`` entry
point is missing (no installed metadata) the backend is registered programmatically with
``tl.register_backend("cuda", SPEC)``. It needs numpy, numba, numba-cuda with its NVVM/NVRTC
wheels (``numba-cuda[cu12]`` or ``[cu13]``, matching the driver), and pytest + hypothesis for step 2.
The whole check is budgeted to finish in under 5 minutes (``--budget``); a step that would not
fit is recorded as skipped.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC_DIRS = [str(p) for p in sorted((ROOT / "packages").glob("*/src"))]


# --- making torchlight importable from the source tree -------------------------------------
def ensure_torchlight():
    try:
        import torchlight  # noqa: F401
    except ImportError:
        sys.path[:0] = SRC_DIRS
        os.environ["PYTHONPATH"] = os.pathsep.join(SRC_DIRS + [os.environ.get("PYTHONPATH", "")])
    import torchlight as tl
    from torchlight.tensor.backend import registry

    registry._discover()
    if "cuda" not in registry._specs:  # no installed entry points: register the spec by hand
        from torchlight.backends.cuda.spec import SPEC

        tl.register_backend("cuda", SPEC)
    return tl


def pytest_configure(config):  # used as a pytest plugin (-p gpu_check) by the subprocess
    ensure_torchlight()


# --- steps ---------------------------------------------------------------------------------
def environment():
    info = {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
    }
    try:
        import numba
        import numpy
        from numba import cuda

        info.update(numpy=numpy.__version__, numba=numba.__version__)
        try:
            from importlib.metadata import version

            info["numba_cuda"] = version("numba-cuda")
        except Exception:
            pass
        dev = cuda.get_current_device()
        name = dev.name.decode() if isinstance(dev.name, bytes) else str(dev.name)
        info.update(
            gpu=name,
            compute_capability=list(dev.compute_capability),
            multiprocessors=dev.MULTIPROCESSOR_COUNT,
        )
        try:
            info["driver_version"] = list(cuda.cudadrv.driver.driver.get_version())
            info["runtime_version"] = list(cuda.runtime.get_version())
        except Exception:
            pass
    except Exception as exc:
        info["error"] = f"{type(exc).__name__}: {exc}"
    return info


def run_conformance(timeout):
    try:
        import hypothesis  # noqa: F401
        import pytest  # noqa: F401
    except ImportError as exc:
        return {
            "status": "skipped",
            "reason": f"{exc.name} is not installed (pip install pytest hypothesis)",
        }
    tests = ROOT / "packages" / "torchlight-backend-cuda" / "tests"
    env = dict(os.environ)
    if CONFORMANCE_K is None:
        env.pop("NUMBA_ENABLE_CUDASIM", None)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(Path(__file__).parent), *SRC_DIRS, env.get("PYTHONPATH", "")]
    )
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "-p",
        "gpu_check",
        "--import-mode=importlib",
        str(tests / "test_conformance_cuda.py"),
        str(tests / "test_transfers.py"),
    ]
    if CONFORMANCE_K:
        cmd += ["-k", CONFORMANCE_K]
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(
            cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired as exc:
        tail = (exc.stdout or b"")[-3000:]
        return {
            "status": "timeout",
            "seconds": timeout,
            "tail": tail.decode(errors="replace") if isinstance(tail, bytes) else tail,
        }
    summary = [
        ln
        for ln in proc.stdout.splitlines()
        if " passed" in ln or " failed" in ln or " error" in ln
    ]
    return {
        "status": "passed" if proc.returncode == 0 else "failed",
        "returncode": proc.returncode,
        "summary": summary[-1] if summary else "",
        "seconds": round(time.perf_counter() - t0, 1),
        "tail": proc.stdout[-4000:] if proc.returncode else "",
    }


def _sync():
    from numba import cuda

    cuda.synchronize()


def bench_matmul(tl, n=None, reps=5):
    import numpy as np

    n = n or MATMUL_N
    rng = np.random.default_rng(0)
    a = tl.tensor(rng.standard_normal((n, n), dtype=np.float32), device="cuda")
    b = tl.tensor(rng.standard_normal((n, n), dtype=np.float32), device="cuda")
    t0 = time.perf_counter()
    c = a @ b
    _sync()
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    for _ in range(reps):
        c = a @ b
    _sync()
    dt = (time.perf_counter() - t0) / reps
    # spot-check a few entries against float64 on the host
    rows = [0, n // 2, n - 1]
    want = a.numpy()[rows].astype(np.float64) @ b.numpy().astype(np.float64)
    err = float(np.max(np.abs(c.numpy()[rows] - want)) / (np.max(np.abs(want)) + 1e-30))
    out = {
        "n": n,
        "seconds": dt,
        "gflops": 2 * n**3 / dt / 1e9,
        "first_call_seconds": first,
        "max_rel_err_vs_float64": err,
    }
    try:
        import torch

        if torch.cuda.is_available():
            ta = torch.randn(n, n, device="cuda")
            tb = torch.randn(n, n, device="cuda")
            torch.backends.cuda.matmul.allow_tf32 = False
            ta @ tb
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(reps):
                ta @ tb
            torch.cuda.synchronize()
            tdt = (time.perf_counter() - t0) / reps
            out["torch_gflops_fp32_no_tf32"] = 2 * n**3 / tdt / 1e9
    except ImportError:
        out["torch"] = "not installed"
    return out


GPT_SHAPE = dict(vocab_size=65, n_layer=6, n_head=6, n_embd=384, block_size=256)
BATCH = 64
MATMUL_N = 4096
CONFORMANCE_K = None  # a -k expression (only --tiny sets one)
LSTM_SHAPE = dict(vocab=10000, emb=200, hidden=200, layers=2, bptt=35, batch=20, dropout=0.2)


def _gpt_model(tl):
    """projects/mini-gpt's GPT when it is there, else a small pre-LN transformer from torchlight.nn."""
    model_py = ROOT / "projects" / "mini-gpt" / "model.py"
    if model_py.exists():
        import importlib.util

        spec = importlib.util.spec_from_file_location("mini_gpt_model", model_py)
        mod = importlib.util.module_from_spec(spec)
        sys.modules["mini_gpt_model"] = mod
        spec.loader.exec_module(mod)
        cfg = mod.GPTConfig(dropout=0.0, **GPT_SHAPE)
        model = mod.GPT(cfg)

        def loss_of(m, x, y):
            return m(x, y)[1]

        groups = model.param_groups(0.1)
        return model, loss_of, groups, "projects/mini-gpt/model.py"
    return _fallback_transformer(tl)


def _fallback_transformer(tl):
    import numpy as np

    nn = tl.nn
    V, L, H, C, T = (
        GPT_SHAPE[k] for k in ("vocab_size", "n_layer", "n_head", "n_embd", "block_size")
    )
    D = C // H

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(C), nn.LayerNorm(C)
            self.qkv, self.proj = nn.Linear(C, 3 * C), nn.Linear(C, C)
            self.fc, self.out = nn.Linear(C, 4 * C), nn.Linear(4 * C, C)
            self.register_buffer(
                "mask", tl.tensor(np.triu(np.ones((T, T), dtype=bool), k=1)), persistent=False
            )

        def forward(self, x):
            B, T_, _ = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(C, dim=-1)
            q, k, v = (t.reshape(B, T_, H, D).transpose(1, 2).contiguous() for t in (q, k, v))
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(D))
            att = att.masked_fill(self.mask[:T_, :T_], float("-inf")).softmax(-1)
            x = x + self.proj((att @ v).transpose(1, 2).reshape(B, T_, C))
            return x + self.out(self.fc(self.ln2(x)).gelu())

    class Tiny(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(V, C), nn.Embedding(T, C)
            self.blocks = nn.ModuleList([Block() for _ in range(L)])
            self.ln = nn.LayerNorm(C)

        def forward(self, idx):
            x = self.wte(idx) + self.wpe.weight[: idx.shape[1]]
            for b in self.blocks:
                x = b(x)
            return self.ln(x) @ self.wte.weight.T

    model = Tiny()

    def loss_of(m, x, y):
        logits = m(x)
        return nn.functional.cross_entropy(logits.reshape(-1, V), y.reshape(-1))

    return model, loss_of, model.parameters(), "torchlight.nn fallback transformer"


def bench_gpt(tl, steps, deadline):
    import numpy as np

    from torchlight.backends.cuda import transfers

    model, loss_of, groups, source = _gpt_model(tl)
    model.to("cuda")
    opt = tl.optim.AdamW(groups, lr=3e-4)
    rng = np.random.default_rng(0)
    T, V = GPT_SHAPE["block_size"], GPT_SHAPE["vocab_size"]
    data = rng.integers(0, V, size=(BATCH, T + 1))
    x = tl.tensor(data[:, :-1], device="cuda")
    y = tl.tensor(data[:, 1:], device="cuda")

    def step():
        opt.zero_grad()
        loss = loss_of(model, x, y)
        loss.backward()
        opt.step()
        return loss

    t0 = time.perf_counter()
    first_loss = step().item()  # compiles every kernel the step needs
    first = time.perf_counter() - t0
    out = {
        "model": source,
        "batch": BATCH,
        **GPT_SHAPE,
        "first_step_seconds_incl_compile": first,
        "first_loss": first_loss,
    }
    with transfers.counting() as c:
        step()
        _sync()
    out["transfers_per_step"] = c.snapshot()
    done, t0 = 0, time.perf_counter()
    while done < steps and time.perf_counter() < deadline:
        loss = step()
        done += 1
    last = loss.item() if done else float("nan")
    dt = time.perf_counter() - t0
    if done:
        out.update(
            steps_timed=done,
            seconds_per_step=dt / done,
            tokens_per_s=BATCH * T * done / dt,
            last_loss=last,
        )
    else:
        out["steps_timed"] = 0
    return out


def bench_torch_gpt(steps):
    try:
        import torch
    except ImportError:
        return {"status": "skipped", "reason": "torch is not installed"}
    if not torch.cuda.is_available():
        return {"status": "skipped", "reason": "torch has no CUDA device"}
    import torch.nn as tnn
    import torch.nn.functional as F

    V, L, H, C, T = (
        GPT_SHAPE[k] for k in ("vocab_size", "n_layer", "n_head", "n_embd", "block_size")
    )

    class Block(tnn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = tnn.LayerNorm(C), tnn.LayerNorm(C)
            self.qkv, self.proj = tnn.Linear(C, 3 * C), tnn.Linear(C, C)
            self.fc, self.out = tnn.Linear(C, 4 * C), tnn.Linear(4 * C, C)
            self.register_buffer(
                "mask", torch.triu(torch.ones(T, T, dtype=torch.bool), 1), persistent=False
            )

        def forward(self, x):
            B, T_, _ = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(C, dim=-1)
            q, k, v = (t.view(B, T_, H, C // H).transpose(1, 2) for t in (q, k, v))
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(C // H))  # eager, no flash attention
            att = att.masked_fill(self.mask[:T_, :T_], float("-inf")).softmax(-1)
            x = x + self.proj((att @ v).transpose(1, 2).reshape(B, T_, C))
            return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))

    class GPT(tnn.Module):
        def __init__(self):
            super().__init__()
            self.wte, self.wpe = tnn.Embedding(V, C), tnn.Embedding(T, C)
            self.blocks = tnn.ModuleList([Block() for _ in range(L)])
            self.ln = tnn.LayerNorm(C)

        def forward(self, idx):
            x = self.wte(idx) + self.wpe.weight[: idx.shape[1]]
            for b in self.blocks:
                x = b(x)
            return self.ln(x) @ self.wte.weight.T

    torch.backends.cuda.matmul.allow_tf32 = False
    model = GPT().cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    idx = torch.randint(0, V, (BATCH, T + 1), device="cuda")
    x, y = idx[:, :-1], idx[:, 1:]

    def step():
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x).reshape(-1, V), y.reshape(-1))
        loss.backward()
        opt.step()
        return loss

    for _ in range(2):
        step()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    return {
        "status": "ok",
        "torch": torch.__version__,
        "fp32_no_tf32": True,
        "seconds_per_step": dt / steps,
        "tokens_per_s": BATCH * T * steps / dt,
    }


def bench_lstm(tl, steps, deadline):
    import numpy as np

    from torchlight import nn
    from torchlight.backends.cuda import transfers

    V, E, H, L, T, B, p = (
        LSTM_SHAPE[k] for k in ("vocab", "emb", "hidden", "layers", "bptt", "batch", "dropout")
    )

    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.drop, self.encoder = nn.Dropout(p), nn.Embedding(V, E)
            self.rnn, self.decoder = nn.LSTM(E, H, L, dropout=p), nn.Linear(H, V)

        def forward(self, x, h):
            out, h = self.rnn(self.drop(self.encoder(x)), h)
            return self.decoder(self.drop(out)), h

    tl.manual_seed(0)
    model = LM().to("cuda")
    model.train()
    opt = tl.optim.SGD(model.parameters(), lr=20.0)
    rng = np.random.default_rng(0)
    x = tl.tensor(rng.integers(0, V, size=(T, B)), device="cuda")
    y = tl.tensor(rng.integers(0, V, size=(T * B,)), device="cuda")
    state = {"h": None}

    def step():
        h = state["h"]
        if h is not None:
            h = (h[0].detach(), h[1].detach())
        opt.zero_grad()
        out, h = model(x, h)
        loss = nn.functional.cross_entropy(out.reshape(-1, V), y)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 0.25)
        opt.step()
        state["h"] = h
        return loss

    t0 = time.perf_counter()
    first_loss = step().item()
    out = {
        **LSTM_SHAPE,
        "first_step_seconds_incl_compile": time.perf_counter() - t0,
        "first_loss": first_loss,
        "fused_cell": "lstm_cell" in model.decoder.weight.backend.capabilities,
    }
    with transfers.counting() as c:
        step()
        _sync()
    out["transfers_per_step"] = c.snapshot()
    done, t0 = 0, time.perf_counter()
    while done < steps and time.perf_counter() < deadline:
        loss = step()
        done += 1
    last = loss.item() if done else float("nan")
    dt = time.perf_counter() - t0
    if done:
        out.update(
            steps_timed=done,
            seconds_per_step=dt / done,
            tokens_per_s=T * B * done / dt,
            last_loss=last,
        )
    return out


def bench_torch_lstm(steps):
    try:
        import torch
    except ImportError:
        return {"status": "skipped", "reason": "torch is not installed"}
    if not torch.cuda.is_available():
        return {"status": "skipped", "reason": "torch has no CUDA device"}
    tnn = torch.nn
    V, E, H, L, T, B, p = (
        LSTM_SHAPE[k] for k in ("vocab", "emb", "hidden", "layers", "bptt", "batch", "dropout")
    )

    class LM(tnn.Module):
        def __init__(self):
            super().__init__()
            self.drop, self.encoder = tnn.Dropout(p), tnn.Embedding(V, E)
            self.rnn, self.decoder = tnn.LSTM(E, H, L, dropout=p), tnn.Linear(H, V)

        def forward(self, x, h):
            out, h = self.rnn(self.drop(self.encoder(x)), h)
            return self.decoder(self.drop(out)), h

    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    model = LM().cuda().train()
    opt = torch.optim.SGD(model.parameters(), lr=20.0)
    x = torch.randint(0, V, (T, B), device="cuda")
    y = torch.randint(0, V, (T * B,), device="cuda")
    state = {"h": None}

    def step():
        h = state["h"]
        if h is not None:
            h = (h[0].detach(), h[1].detach())
        opt.zero_grad()
        out, h = model(x, h)
        loss = tnn.functional.cross_entropy(out.reshape(-1, V), y)
        loss.backward()
        tnn.utils.clip_grad_norm_(model.parameters(), 0.25)
        opt.step()
        state["h"] = h
        return loss

    step()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    return {
        "status": "ok",
        "torch": torch.__version__,
        "fp32_no_tf32": True,
        "cudnn": torch.backends.cudnn.is_available(),
        "seconds_per_step": dt / steps,
        "tokens_per_s": T * B * steps / dt,
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="gpu_check.json")
    ap.add_argument("--budget", type=float, default=285.0, help="seconds for the whole check")
    ap.add_argument("--skip-conformance", action="store_true")
    ap.add_argument("--steps", type=int, default=10, help="timed GPT steps (after a warm-up step)")
    ap.add_argument(
        "--tiny",
        action="store_true",
        help="dry run of this script with toy sizes (allowed under NUMBA_ENABLE_CUDASIM=1)",
    )
    args = ap.parse_args(argv)
    start = time.perf_counter()
    deadline = start + args.budget
    global BATCH, MATMUL_N, CONFORMANCE_K
    if args.tiny:
        GPT_SHAPE.update(vocab_size=65, n_layer=1, n_head=2, n_embd=16, block_size=8)
        BATCH, MATMUL_N, args.steps = 2, 64, min(args.steps, 2)
        LSTM_SHAPE.update(vocab=50, emb=8, hidden=8, layers=2, bptt=4, batch=2)
        CONFORMANCE_K = (
            "test_protocol_surface or test_map and exp-float32 or test_matmul and float32"
        )
    else:
        os.environ.pop("NUMBA_ENABLE_CUDASIM", None)
    report = {"check": "torchlight-backend-cuda gpu_check", "results": {}}

    def save():
        report["elapsed_seconds"] = round(time.perf_counter() - start, 1)
        Path(args.out).write_text(json.dumps(report, indent=2, default=str))

    tl = ensure_torchlight()
    from torchlight.backends.cuda.spec import SPEC

    report["environment"] = environment()
    if not SPEC.is_available():
        report["error"] = f"cuda backend unavailable: {SPEC.why_unavailable()}"
        save()
        print(report["error"], file=sys.stderr)
        return 2
    res = report["results"]
    steps = [
        (
            "conformance",
            lambda: (
                {"status": "skipped", "reason": "--skip-conformance"}
                if args.skip_conformance
                else run_conformance(
                    timeout=max(30.0, min(150.0, deadline - time.perf_counter() - 120))
                )
            ),
        ),
        (f"matmul_{MATMUL_N}", lambda: bench_matmul(tl)),
        ("gpt_train_step_torchlight_cuda", lambda: bench_gpt(tl, args.steps, deadline - 60)),
        ("gpt_train_step_torch_cuda_eager", lambda: bench_torch_gpt(args.steps)),
        ("lstm_lm_train_step_torchlight_cuda", lambda: bench_lstm(tl, args.steps, deadline - 15)),
        ("lstm_lm_train_step_torch_cuda_eager", lambda: bench_torch_lstm(args.steps)),
    ]
    for name, fn in steps:
        if time.perf_counter() > deadline - 10:
            res[name] = {"status": "skipped", "reason": "time budget spent"}
            continue
        t0 = time.perf_counter()
        try:
            res[name] = fn()
        except Exception as exc:  # record and go on: one failing step must not hide the others
            import traceback

            res[name] = {
                "status": "error",
                "error": f"{type(exc).__name__}: {exc}",
                "traceback": traceback.format_exc()[-3000:],
            }
        res[name].setdefault("step_seconds", round(time.perf_counter() - t0, 1))
        save()
        print(f"[gpu_check] {name}: {json.dumps(res[name], default=str)[:300]}", flush=True)
    save()
    print(f"[gpu_check] wrote {args.out} in {report['elapsed_seconds']} s")
    conf = res.get("conformance", {}).get("status")
    return 0 if conf in ("passed", "skipped") else 1


if __name__ == "__main__":
    sys.exit(main())
