"""The kit's tests of the optional fused capabilities: ``softmax``, ``logsumexp``, ``layernorm``, ``cross_entropy``,
``adam``, ``gru_cell``, ``lstm_cell``, ``random``.

A mixin of :class:`~torchlight.testing.BackendConformance` (which supplies ``be``, ``P`` and
``_need``); each test skips when the backend does not declare the capability. References are
float64 numpy: ``softmax = exp(x - lse)``, layer norm's two-pass statistics and its backward
``dx = r (ĝ - mean ĝ - x̂ mean(ĝ x̂))``, and for cross-entropy ``ℓ_i = w_i (lse_i - x[i, t_i])``
with gradient ``g_i w_i (softmax(x_i) - onehot(t_i))``; the recurrent cells against float64
re-derivations of PyTorch's GRU/LSTM gate equations and their chain rule (``_ref_gru``, ``_ref_lstm``).
Inputs include rows of ±1e4 (a kernel that forgets to subtract the max overflows), rows at the float32
limit (±3e38: a kernel that saves ``lse = m + log s`` loses ``log s`` there), one-element rows, empty
batches and every layout.
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from .catalog import FLOAT, sample
from .strategies import LAYOUTS, OUT_LAYOUTS, empty_view, make_view, outside_untouched, read

__all__ = ["FusedConformance"]


def _rng(*key) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def _f64(x):
    return x.astype(np.float64) if x.dtype.kind == "f" else x


class FusedConformance:
    """Fused-capability tests; mixed into ``BackendConformance``."""

    # --- fused capabilities: softmax -------------------------------------------------------
    def _softmax_inputs(self, dtype):
        R, C = self.P.rows
        rng = _rng("softmax", dtype)
        yield "normal", sample(rng, (R, C), dtype), LAYOUTS
        big = rng.uniform(-1e4, 1e4, size=(R, C)).astype(dtype)
        big[0] = 1e4
        big[1, :] = -1e4
        big[2, 0] = 1e4
        yield "large", big, ("contiguous", "permuted")
        yield "3d", sample(rng, self.P.shape, dtype), ("contiguous", "sliced", "permuted")
        yield "one", sample(rng, (R, 1), dtype), ("contiguous",)
        yield "empty-rows", sample(rng, (0, C), dtype), ("contiguous",)

    @pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
    @pytest.mark.parametrize("dtype", FLOAT)
    def test_softmax(self, dtype, log):
        """Capability ``softmax``: the fused (log-)softmax matches the numpy reference on every layout."""
        self._need("softmax")
        be = self.be
        for name, x, lays in self._softmax_inputs(dtype):
            for dim in range(x.ndim) if name != "empty-rows" else (1,):
                for lay in lays:
                    a, xv = make_view(be, x, lay)
                    out = empty_view(be, x.shape, dtype)
                    be.softmax(a, dim, out, log)
                    want = _ref_softmax(_f64(xv), dim, log)
                    got = read(be, out)
                    what = f"{'log_' if log else ''}softmax {dtype} {name} dim={dim} in={lay}"
                    assert np.all(np.isfinite(got)), what
                    rtol = 1e-5 if dtype == "float32" else 1e-12
                    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol / 10, err_msg=what)
                    if not log:  # tiny probabilities too, relatively (float32 normal range)
                        tiny = want > 1e-30
                        np.testing.assert_allclose(
                            got[tiny], want[tiny], rtol=10 * rtol, err_msg=what + " (tiny values)"
                        )

    @pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
    @pytest.mark.parametrize("dtype", FLOAT)
    def test_softmax_backward(self, dtype, log):
        """Capability ``softmax``: its backward matches the analytic gradient."""
        self._need("softmax")
        be = self.be
        for name, x, _ in self._softmax_inputs(dtype):
            for dim in range(x.ndim) if name != "empty-rows" else (1,):
                for lay in LAYOUTS if name == "normal" else ("contiguous",):
                    y = _ref_softmax(_f64(x), dim, log).astype(dtype)
                    g, gv = make_view(be, sample(_rng("g", name, dim, lay), x.shape, dtype), lay)
                    out = empty_view(be, x.shape, dtype)
                    be.softmax_backward(make_view(be, y)[0], g, dim, out, log)
                    y64, g64 = _f64(y), _f64(gv)
                    if log:
                        want = g64 - np.exp(y64) * g64.sum(axis=dim, keepdims=True)
                    else:
                        want = y64 * (g64 - (g64 * y64).sum(axis=dim, keepdims=True))
                    what = (
                        f"{'log_' if log else ''}softmax_backward {dtype} {name} dim={dim} g={lay}"
                    )
                    tol = 1e-5 if dtype == "float32" else 1e-12
                    np.testing.assert_allclose(
                        read(be, out), want, rtol=tol, atol=tol, err_msg=what
                    )

    # --- fused capabilities: logsumexp -----------------------------------------------------
    @pytest.mark.parametrize("dtype", FLOAT)
    def test_logsumexp(self, dtype):
        """Capability ``logsumexp``: ``m + log Σ exp(x - m)`` along each dim matches the float64
        reference on every layout, rows of ±1e4 included, and slices holding ±inf or NaN give
        PyTorch's -inf / +inf / NaN."""
        self._need("logsumexp")
        be = self.be
        for name, x, lays in self._softmax_inputs(dtype):
            if name == "empty-rows":
                continue
            for dim in range(x.ndim):
                for lay in lays:
                    a, xv = make_view(be, x, lay)
                    kept = tuple(1 if d == dim else n for d, n in enumerate(x.shape))
                    out = empty_view(be, kept, dtype)
                    be.logsumexp(a, dim, out)
                    x64 = _f64(xv)
                    m = x64.max(axis=dim, keepdims=True)
                    want = m + np.log(np.exp(x64 - m).sum(axis=dim, keepdims=True))
                    what = f"logsumexp {dtype} {name} dim={dim} in={lay}"
                    tol = 1e-6 if dtype == "float32" else 1e-13
                    np.testing.assert_allclose(read(be, out), want, rtol=tol, err_msg=what)
        inf, nan = np.inf, np.nan
        x = np.array(
            [
                [-inf, -inf, -inf],
                [inf, 1.0, -inf],
                [nan, 1.0, 2.0],
                [inf, inf, 0.0],
                [-inf, 0.0, 0.0],
            ],
            dtype=dtype,
        )
        out = empty_view(be, (5, 1), dtype)
        be.logsumexp(make_view(be, x)[0], 1, out)
        want = np.array([[-inf], [inf], [nan], [inf], [np.log(2.0)]])
        np.testing.assert_allclose(read(be, out), want, rtol=1e-6, err_msg="logsumexp ±inf/NaN")

    # --- fused capabilities: layer norm ----------------------------------------------------
    def _layernorm_inputs(self, dtype):
        R, C = self.P.rows
        rng = _rng("layernorm", dtype)
        yield "normal", sample(rng, (R, C), dtype), LAYOUTS, 0
        yield "3d", sample(rng, (2, R // 2 or 1, C), dtype), ("contiguous", "permuted", "sliced"), 0
        yield (
            "offset-1e4",
            (1e4 + rng.standard_normal((R, C))).astype(dtype),
            ("contiguous", "sliced"),
            1e-2,
        )
        yield "scale-1e3", (1e3 * rng.standard_normal((R, C))).astype(dtype), ("contiguous",), 0
        const = np.full((R, C), 3.0, dtype=dtype)
        yield "constant", const, ("contiguous",), 0
        yield "one", sample(rng, (R, 1), dtype), ("contiguous",), 0

    @pytest.mark.parametrize("affine", [True, False], ids=["affine", "plain"])
    @pytest.mark.parametrize("dtype", FLOAT)
    def test_layernorm(self, dtype, affine):
        """Capability ``layernorm``: output, mean and rstd match numpy, with and without affine parameters."""
        self._need("layernorm")
        be = self.be
        eps = 1e-5
        for name, x, lays, extra in self._layernorm_inputs(dtype):
            C = x.shape[-1]
            rng = _rng("lnw", name)
            w = sample(rng, (C,), dtype) if affine else None
            b = sample(rng, (C,), dtype) if affine else None
            for lay in lays:
                xt, xv = make_view(be, x, lay)
                stat = x.shape[:-1] + (1,)
                out, mean, rstd = (
                    empty_view(be, x.shape, dtype),
                    empty_view(be, stat, dtype),
                    empty_view(be, stat, dtype),
                )
                be.layernorm(
                    xt,
                    None if w is None else make_view(be, w, "offset")[0],
                    None if b is None else make_view(be, b)[0],
                    eps,
                    out,
                    mean,
                    rstd,
                )
                y, mu, r = _ref_layernorm(_f64(xv), w, b, eps)
                what = f"layernorm {dtype} {name} in={lay} affine={affine}"
                tol = (2e-5 if dtype == "float32" else 1e-11) + extra
                np.testing.assert_allclose(read(be, out), y, rtol=tol, atol=tol, err_msg=what)
                np.testing.assert_allclose(
                    read(be, mean), mu, rtol=tol, atol=tol, err_msg=what + " (mean)"
                )
                np.testing.assert_allclose(
                    read(be, rstd),
                    r,
                    rtol=tol + (1e-3 if name == "offset-1e4" else 0),
                    atol=tol,
                    err_msg=what + " (rstd)",
                )

    @pytest.mark.parametrize("affine", [True, False], ids=["affine", "plain"])
    @pytest.mark.parametrize("dtype", FLOAT)
    def test_layernorm_backward(self, dtype, affine):
        """Capability ``layernorm``: ``dx``, ``dw`` and ``db`` match the analytic gradients."""
        self._need("layernorm")
        be = self.be
        eps = 1e-5
        for name, x, lays, extra in self._layernorm_inputs(dtype):
            C = x.shape[-1]
            rng = _rng("lnb", name, dtype)
            w = sample(rng, (C,), dtype) if affine else None
            g = sample(rng, x.shape, dtype)
            _, mu, r = _ref_layernorm(_f64(x), None, None, eps)
            mu, r = mu.astype(dtype), r.astype(dtype)
            for lay in lays:
                xt, xv = make_view(be, x, lay)
                dx = empty_view(be, x.shape, dtype)
                dw = empty_view(be, (C,), dtype) if affine else None
                db = empty_view(be, (C,), dtype) if affine else None
                be.layernorm_backward(
                    make_view(be, g)[0],
                    xt,
                    None if w is None else make_view(be, w)[0],
                    make_view(be, mu)[0],
                    make_view(be, r)[0],
                    dx,
                    dw,
                    db,
                )
                want_dx, want_dw, want_db = _ref_layernorm_backward(
                    _f64(g), _f64(xv), w, _f64(mu), _f64(r)
                )
                what = f"layernorm_backward {dtype} {name} in={lay} affine={affine}"
                scale = max(1.0, float(np.abs(_f64(r)).max()))
                tol = (5e-5 if dtype == "float32" else 1e-10) + extra
                np.testing.assert_allclose(
                    read(be, dx), want_dx, rtol=tol, atol=tol * scale, err_msg=what + " (dx)"
                )
                if affine:
                    np.testing.assert_allclose(
                        read(be, dw),
                        want_dw,
                        rtol=tol,
                        atol=tol * x.shape[0] * 10,
                        err_msg=what + " (dw)",
                    )
                    np.testing.assert_allclose(
                        read(be, db),
                        want_db,
                        rtol=tol,
                        atol=tol * x.shape[0],
                        err_msg=what + " (db)",
                    )

    # --- fused capabilities: cross-entropy ---------------------------------------------------
    def _cross_entropy_inputs(self, dtype):
        R, C = self.P.rows
        rng = _rng("xent", dtype)
        yield "normal", sample(rng, (R, C), dtype), LAYOUTS
        big = rng.uniform(-1e4, 1e4, size=(R, C)).astype(dtype)
        big[0] = 1e4
        big[1, :] = -1e4
        yield "large", big, ("contiguous", "permuted")
        # float32's extremes: a row of equal maxima and a row of ±1e30 (PyTorch is exact on both)
        huge = rng.uniform(-1.0, 1.0, size=(R, C)).astype(dtype)
        huge[1] = 3e38  # rows 1 and 2: every third row, from 0, has weight 0
        huge[2, 0], huge[2, 1:] = 1e30, -1e30
        yield "float32-limit", huge, ("contiguous",)
        yield "one-class", sample(rng, (R, 1), dtype), ("contiguous", "sliced")
        yield "empty", sample(rng, (0, C), dtype), ("contiguous",)

    @staticmethod
    def _cross_entropy_targets(x, rng):
        """Targets and per-row weights (every third row dropped with weight 0)."""
        n, c = x.shape
        t = rng.integers(0, c, size=n).astype(np.int64)
        w = rng.uniform(0.5, 2.0, size=n).astype(x.dtype)
        w[::3] = 0
        return t, w

    @staticmethod
    def _cross_entropy_ref(x, t, w):
        """``(m, logs, loss)`` in float64: the row max, ``log Σ exp(x - m)`` and the weighted loss."""
        n = x.shape[0]
        x64 = _f64(x)
        m = x64.max(axis=1, keepdims=True) if n else np.zeros((0, 1))
        logs = np.log(np.exp(x64 - m).sum(axis=1, keepdims=True))[:, 0]
        loss = np.where(w != 0, _f64(w) * ((m[:, 0] - x64[np.arange(n), t]) + logs), 0.0)
        return m[:, 0], logs, loss

    @pytest.mark.parametrize("dtype", FLOAT)
    def test_cross_entropy(self, dtype):
        """Capability ``cross_entropy``: per-row losses and logsumexp match numpy, zero on weight-0 rows."""
        self._need("cross_entropy")
        be = self.be
        for name, x, lays in self._cross_entropy_inputs(dtype):
            t, w = self._cross_entropy_targets(x, _rng("xent-t", name, dtype))
            # the loss is a difference of logits: its error scales with their magnitude, except
            # that (m - x_t) is exact when x_t is the max (the float32-limit rows)
            scale = (
                max(1.0, float(np.abs(_f64(x)).max(initial=0.0)))
                if name != "float32-limit"
                else 1.0
            )
            tol = 1e-6 if dtype == "float32" else 1e-13
            for k, lay in enumerate(lays):
                xt, xv = make_view(be, x, lay)  # a broadcast x repeats its first row
                _, want_logs, want_loss = self._cross_entropy_ref(xv, t, w)
                out_lay = OUT_LAYOUTS[k % len(OUT_LAYOUTS)]
                loss, logs = (
                    empty_view(be, (x.shape[0],), dtype, out_lay),
                    empty_view(be, (x.shape[0],), dtype),
                )
                be.cross_entropy(
                    xt, make_view(be, t, "offset")[0], make_view(be, w, "sliced")[0], loss, logs
                )
                what = f"cross_entropy {dtype} {name} x={lay} loss={out_lay}"
                np.testing.assert_allclose(
                    read(be, logs), want_logs, rtol=tol, atol=tol, err_msg=what + " (logs)"
                )
                got = read(be, loss)
                if name == "float32-limit":  # only rows whose target is the max are exact there
                    exact = _f64(xv)[np.arange(x.shape[0]), t] == _f64(xv).max(axis=1)
                    got, want_loss = got[exact], want_loss[exact]
                np.testing.assert_allclose(
                    got, want_loss, rtol=10 * tol, atol=10 * tol * scale, err_msg=what
                )
                assert np.all(read(be, loss)[w == 0] == 0), (
                    what + ": rows of weight 0 must give exactly 0"
                )

    @pytest.mark.parametrize("dtype", FLOAT)
    def test_cross_entropy_backward(self, dtype):
        """Capability ``cross_entropy``: ``dx`` matches ``g·w·(softmax - onehot)``."""
        self._need("cross_entropy")
        be = self.be
        for name, x, lays in self._cross_entropy_inputs(dtype):
            rng = _rng("xent-b", name, dtype)
            t, w = self._cross_entropy_targets(x, rng)
            g = sample(rng, (x.shape[0],), dtype)
            tol = 1e-5 if dtype == "float32" else 1e-12
            for k, lay in enumerate(lays):
                xt, xv = make_view(be, x, lay)
                m, logs, _ = self._cross_entropy_ref(xv, t, w)
                logs = logs.astype(dtype)  # what the kernel is given
                want = np.exp((_f64(xv) - m[:, None]) - _f64(logs)[:, None])
                want[np.arange(x.shape[0]), t] -= 1
                want *= (_f64(g) * _f64(w))[:, None]
                out_lay = OUT_LAYOUTS[k % len(OUT_LAYOUTS)]
                dx = empty_view(be, x.shape, dtype, out_lay)
                be.cross_entropy_backward(
                    xt,
                    make_view(be, t)[0],
                    make_view(be, w)[0],
                    make_view(be, logs, "offset")[0],
                    make_view(be, g, "sliced")[0],
                    dx,
                )
                what = f"cross_entropy_backward {dtype} {name} x={lay} dx={out_lay}"
                got = read(be, dx)
                np.testing.assert_allclose(got, want, rtol=tol, atol=tol, err_msg=what)
                assert np.all(got[w == 0] == 0), what + ": rows of weight 0 must give exactly 0"

    # --- fused capabilities: adam ----------------------------------------------------------
    @pytest.mark.parametrize("dtype", FLOAT)
    @pytest.mark.parametrize(
        "decoupled, weight_decay, maximize, beta1",
        [
            (True, 0.1, False, 0.9),
            (False, 0.1, False, 0.9),
            (False, 0.0, True, 0.9),
            (True, 0.0, False, 0.3),
        ],
        ids=["adamw", "adam-l2", "maximize", "beta1<0.5"],
    )
    def test_adam_step(self, dtype, decoupled, weight_decay, maximize, beta1):
        """Three steps in place on contiguous (and offset) views against the float64 formula
        of ``torchlight.tensor.functions.updates``; storage around the views stays untouched."""
        self._need("adam")
        be = self.be
        rng = _rng("adam", dtype, decoupled, weight_decay, maximize, beta1)
        shape = self.P.shape
        lr, beta2, eps = 0.01, 0.99, 1e-8
        p0, m0 = sample(rng, shape, dtype), sample(rng, shape, dtype) * 0.1
        v0 = np.abs(sample(rng, shape, dtype)) * 0.01
        want = [_f64(p0), _f64(m0), _f64(v0)]
        views = [
            make_view(be, a, lay)[0]
            for a, lay in ((p0, "offset"), (m0, "contiguous"), (v0, "offset"))
        ]
        tol = 2e-6 if dtype == "float32" else 1e-13
        for step in (1, 2, 3):
            g = sample(rng, shape, dtype)
            be.adam_step(
                *views[:1],
                make_view(be, g, "offset")[0],
                *views[1:],
                beta1=beta1,
                beta2=beta2,
                eps=eps,
                decay=1 - lr * weight_decay if decoupled else 1.0,
                l2=0.0 if decoupled else weight_decay,
                maximize=maximize,
                step_size=lr / (1 - beta1**step),
                bias_correction2_sqrt=(1 - beta2**step) ** 0.5,
            )
            p, m, v = want
            gg = -_f64(g) if maximize else _f64(g)
            if decoupled:
                p = p * (1 - lr * weight_decay)
            else:
                gg = gg + weight_decay * p
            m = m + (1 - beta1) * (gg - m)
            v = beta2 * v + (1 - beta2) * gg * gg
            p = p - lr / (1 - beta1**step) * m / (np.sqrt(v) / (1 - beta2**step) ** 0.5 + eps)
            want = [p, m, v]
            _check_update(
                be,
                views,
                want,
                ("param", "exp_avg", "exp_avg_sq"),
                tol,
                f"adam_step {dtype} step {step}",
            )
        for view in views:
            assert outside_untouched(be, view, dtype), "adam_step wrote outside its views"

    # --- fused capabilities: adagrad -------------------------------------------------------
    @pytest.mark.parametrize("dtype", FLOAT)
    @pytest.mark.parametrize("weight_decay", [0.0, 0.1], ids=["plain", "l2"])
    def test_adagrad_step(self, dtype, weight_decay):
        """Three steps in place on offset and contiguous views against the float64 formula of
        ``torchlight.tensor.functions.updates`` (a decaying ``clr``); storage around the views
        stays untouched."""
        self._need("adagrad")
        be = self.be
        rng = _rng("adagrad", dtype, weight_decay)
        shape = self.P.shape
        eps = 1e-10
        p0 = sample(rng, shape, dtype)
        s0 = np.abs(sample(rng, shape, dtype)) * 0.1  # initial_accumulator_value > 0 included
        want = [_f64(p0), _f64(s0)]
        views = [make_view(be, p0, "offset")[0], make_view(be, s0, "contiguous")[0]]
        tol = 2e-6 if dtype == "float32" else 1e-13
        for step in (1, 2, 3):
            clr = 0.05 / (1 + (step - 1) * 0.5)
            g = sample(rng, shape, dtype)
            be.adagrad_step(
                views[0], make_view(be, g, "offset")[0], views[1], clr=clr, l2=weight_decay, eps=eps
            )
            p, acc = want
            gg = _f64(g) + weight_decay * p
            acc = acc + gg * gg
            p = p - clr * gg / (np.sqrt(acc) + eps)
            want = [p, acc]
            _check_update(
                be, views, want, ("param", "sum"), tol, f"adagrad_step {dtype} step {step}"
            )
        for view in views:
            assert outside_untouched(be, view, dtype), "adagrad_step wrote outside its views"

    # --- fused capabilities: sgd -----------------------------------------------------------
    @pytest.mark.parametrize("dtype", FLOAT)
    @pytest.mark.parametrize(
        "momentum, dampening, weight_decay, nesterov, maximize",
        [
            (0.0, 0.0, 0.0, False, False),
            (0.0, 0.0, 0.1, False, True),
            (0.9, 0.0, 0.0, False, False),
            (0.8, 0.3, 0.1, False, False),
            (0.9, 0.0, 0.01, True, True),
        ],
        ids=["plain", "l2-maximize", "momentum", "dampening-l2", "nesterov"],
    )
    def test_sgd_step(self, dtype, momentum, dampening, weight_decay, nesterov, maximize):
        """Three steps in place on offset and contiguous views against the float64 formula of
        ``torchlight.tensor.functions.updates``, the first step setting a new momentum buffer
        (its content, garbage here, must not be read); storage around the views stays
        untouched."""
        self._need("sgd")
        be = self.be
        rng = _rng("sgd", dtype, momentum, dampening, weight_decay, nesterov, maximize)
        shape = self.P.shape
        lr = 0.05
        p0 = sample(rng, shape, dtype)
        views = [make_view(be, p0, "offset")[0]]
        want = [_f64(p0)]
        if momentum:
            junk = np.full(shape, np.nan, dtype)  # a new buffer is written before it is read
            views.append(make_view(be, junk, "contiguous")[0])
            want.append(None)
        tol = 2e-6 if dtype == "float32" else 1e-13
        for step in (1, 2, 3):
            g = sample(rng, shape, dtype)
            be.sgd_step(
                views[0],
                make_view(be, g, "offset")[0],
                views[1] if momentum else None,
                lr=lr,
                momentum=momentum,
                dampening=dampening,
                l2=weight_decay,
                nesterov=nesterov,
                maximize=maximize,
                first=step == 1,
            )
            p = want[0]
            gg = -_f64(g) if maximize else _f64(g)
            gg = gg + weight_decay * p
            if momentum:
                buf = gg if step == 1 else momentum * want[1] + (1 - dampening) * gg
                gg = gg + momentum * buf if nesterov else buf
                want = [p - lr * gg, buf]
            else:
                want = [p - lr * gg]
            _check_update(
                be,
                views,
                want,
                ("param", "momentum_buffer")[: len(views)],
                tol,
                f"sgd_step {dtype} step {step}",
            )
        for view in views:
            assert outside_untouched(be, view, dtype), "sgd_step wrote outside its views"

    # --- fused capabilities: recurrent cells -------------------------------------------------
    def _cell_inputs(self, gates, dtype):
        """(name, gi, gh, state, layouts): pre-activations (N, gates·H) and a state (N, H);
        "saturated" has pre-activations of ±60 (σ's e^x overflows in float32 past ~88 if
        computed naively on the wrong side)."""
        n, hid = self.P.rows[0], 5
        rng = _rng("cell", gates, dtype)
        yield (
            "normal",
            sample(rng, (n, gates * hid), dtype),
            sample(rng, (n, gates * hid), dtype),
            sample(rng, (n, hid), dtype),
            LAYOUTS,
        )
        big = rng.choice([-60.0, 60.0], size=(n, gates * hid)).astype(dtype)
        yield (
            "saturated",
            big,
            -big[::-1].copy(),
            sample(rng, (n, hid), dtype),
            ("contiguous", "permuted"),
        )
        yield (
            "one-unit",
            sample(rng, (1, gates), dtype),
            sample(rng, (1, gates), dtype),
            sample(rng, (1, 1), dtype),
            ("contiguous", "offset"),
        )
        yield (
            "empty",
            np.zeros((0, gates * hid), dtype),
            np.zeros((0, gates * hid), dtype),
            np.zeros((0, hid), dtype),
            ("contiguous",),
        )

    @pytest.mark.parametrize("dtype", FLOAT)
    def test_gru_cell(self, dtype):
        """Kit: ``gru_cell`` matches a float64 numpy re-derivation of the GRU gates on every input
        layout."""
        self._need("gru_cell")
        be = self.be
        for name, gi, gh, h, lays in self._cell_inputs(3, dtype):
            n, hid = h.shape
            for k, lay in enumerate(lays):
                a, giv = make_view(be, gi, lay)
                b, ghv = make_view(be, gh, lays[(k + 1) % len(lays)])
                c, hv = make_view(be, h, lays[(k + 2) % len(lays)])
                out_lay = "offset" if k % 2 else "contiguous"
                out, ws = (
                    empty_view(be, (n, hid), dtype, out_lay),
                    empty_view(be, (n, 4 * hid), dtype, out_lay),
                )
                be.gru_cell(a, b, c, out, ws)
                want, want_ws = _ref_gru(_f64(giv), _f64(ghv), _f64(hv))
                what = f"gru_cell {dtype} {name} gi={lay}"
                tol = 2e-6 if dtype == "float32" else 1e-13
                np.testing.assert_allclose(read(be, out), want, rtol=tol, atol=tol, err_msg=what)
                np.testing.assert_allclose(
                    read(be, ws), want_ws, rtol=tol, atol=tol, err_msg=what + " (ws)"
                )
                assert outside_untouched(be, out, dtype) and outside_untouched(be, ws, dtype), what

    @pytest.mark.parametrize("dtype", FLOAT)
    def test_gru_cell_backward(self, dtype):
        """Kit: ``gru_cell_backward`` matches the numpy re-derivation of the GRU cell's gradients."""
        self._need("gru_cell")
        be = self.be
        for name, gi, gh, h, lays in self._cell_inputs(3, dtype):
            n, hid = h.shape
            g = sample(_rng("gru-g", name, dtype), (n, hid), dtype)
            ws = _ref_gru(_f64(gi), _f64(gh), _f64(h))[1].astype(dtype)  # what the forward saved
            for lay in lays:
                c, hv = make_view(be, h, lay)
                dgi, dgh = empty_view(be, (n, 3 * hid), dtype), empty_view(be, (n, 3 * hid), dtype)
                dh = empty_view(be, (n, hid), dtype)
                be.gru_cell_backward(
                    make_view(be, g)[0], c, make_view(be, ws, "offset")[0], dgi, dgh, dh
                )
                want = _ref_gru_backward(_f64(g), _f64(hv), _f64(ws))
                what = f"gru_cell_backward {dtype} {name} h={lay}"
                tol = 2e-6 if dtype == "float32" else 1e-13
                for label, got, ref in zip(("dgi", "dgh", "dh"), (dgi, dgh, dh), want):
                    np.testing.assert_allclose(
                        read(be, got), ref, rtol=tol, atol=tol, err_msg=f"{what} ({label})"
                    )

    @pytest.mark.parametrize("dtype", FLOAT)
    def test_lstm_cell(self, dtype):
        """Kit: ``lstm_cell`` matches a float64 numpy re-derivation of the LSTM gates on every input
        layout."""
        self._need("lstm_cell")
        be = self.be
        for name, gi, gh, c0, lays in self._cell_inputs(4, dtype):
            n, hid = c0.shape
            for k, lay in enumerate(lays):
                a, giv = make_view(be, gi, lay)
                b, ghv = make_view(be, gh, lays[(k + 1) % len(lays)])
                c, cv = make_view(be, c0, lays[(k + 2) % len(lays)])
                out_lay = ("contiguous", "offset", "rows")[k % 3]
                out, ws = (
                    _halves_view(be, (2, n, hid), dtype, out_lay),
                    empty_view(be, (n, 5 * hid), dtype, "offset" if k % 2 else "contiguous"),
                )
                be.lstm_cell(a, b, c, out, ws)
                want, want_ws = _ref_lstm(_f64(giv), _f64(ghv), _f64(cv))
                what = f"lstm_cell {dtype} {name} gi={lay}"
                tol = 2e-6 if dtype == "float32" else 1e-13
                np.testing.assert_allclose(read(be, out), want, rtol=tol, atol=tol, err_msg=what)
                np.testing.assert_allclose(
                    read(be, ws), want_ws, rtol=tol, atol=tol, err_msg=what + " (ws)"
                )
                assert outside_untouched(be, out, dtype) and outside_untouched(be, ws, dtype), what

    @pytest.mark.parametrize("dtype", FLOAT)
    def test_lstm_cell_backward(self, dtype):
        """Kit: ``lstm_cell_backward`` matches the numpy re-derivation of the LSTM cell's gradients."""
        self._need("lstm_cell")
        be = self.be
        for name, gi, gh, c0, lays in self._cell_inputs(4, dtype):
            n, hid = c0.shape
            g = sample(_rng("lstm-g", name, dtype), (2, n, hid), dtype)
            ws = _ref_lstm(_f64(gi), _f64(gh), _f64(c0))[1].astype(dtype)
            for k, lay in enumerate(lays):
                c, cv = make_view(be, c0, lay)
                dgates, dc = empty_view(be, (n, 4 * hid), dtype), empty_view(be, (n, hid), dtype)
                gv = _halves_view(be, g.shape, dtype, "rows" if k % 2 else "contiguous")
                be.map("copy", make_view(be, g)[0], gv)
                be.lstm_cell_backward(gv, c, make_view(be, ws, "offset")[0], dgates, dc)
                want = _ref_lstm_backward(_f64(g), _f64(cv), _f64(ws))
                what = f"lstm_cell_backward {dtype} {name} c={lay}"
                tol = 2e-6 if dtype == "float32" else 1e-13
                for label, got, ref in zip(("dgates", "dc"), (dgates, dc), want):
                    np.testing.assert_allclose(
                        read(be, got), ref, rtol=tol, atol=tol, err_msg=f"{what} ({label})"
                    )

    # --- capability: random fills ----------------------------------------------------------
    @pytest.mark.parametrize("kind", ["uniform", "normal"])
    @pytest.mark.parametrize("dtype", FLOAT)
    def test_random_fill(self, dtype, kind):
        """``random_(out, kind, seed, k)``: a function of (seed, k) — equal for equal keys,
        different for another k or seed — with the moments of U[0, 1) / N(0, 1), written only
        inside ``out`` (an offset view)."""
        self._need("random")
        be = self.be
        n = 2048

        def fill(seed, k):
            out = empty_view(be, (n,), dtype, "offset")
            be.random_(out, kind, seed, k)
            assert outside_untouched(be, out, dtype), f"random_ {kind} wrote outside its view"
            return read(be, out)

        a, a2, b, c = fill(5, 0), fill(5, 0), fill(5, 1), fill(6, 0)
        np.testing.assert_array_equal(a, a2, err_msg="random_ is not a function of (seed, k)")
        assert (a != b).mean() > 0.99 and (a != c).mean() > 0.99, (
            "another k or seed must give other numbers"
        )
        assert a.dtype == np.dtype(dtype) and len(np.unique(a)) > 0.99 * n
        x = _f64(np.concatenate([a, b, c]))
        m = x.size
        if kind == "uniform":
            assert x.min() >= 0.0 and x.max() < 1.0
            assert abs(x.mean() - 0.5) < 5 * np.sqrt(1 / 12 / m) and abs(x.var() - 1 / 12) < 0.005
        else:
            assert abs(x.mean()) < 5 / np.sqrt(m) and abs(x.var() - 1) < 0.06


def _halves_view(be, shape, dtype, layout):
    """An LSTM cell's ``(2, N, H)`` ``[h; c]`` view: ``layout`` as :func:`empty_view`, or
    ``"rows"``: the first N rows of each half of a ``(2, N + 2, H)`` buffer (the halves are not
    adjacent), as a packed batch's step writes when only some sequences have it."""
    if layout != "rows":
        return empty_view(be, shape, dtype, layout)
    two, n, hid = shape
    return empty_view(be, (two, n + 2, hid), dtype).slice(1, 0, n, 1)


def _sig64(x):
    return 0.5 * (
        1.0 + np.tanh(0.5 * x)
    )  # σ(x) = (1 + tanh(x/2))/2: no overflow, independent of the kernels' form


def _ref_gru(gi, gh, h):
    """h' and the saved [r, z, n, gh_n] from PyTorch's GRU equations."""
    i_r, i_z, i_n = np.split(gi, 3, axis=1)
    h_r, h_z, h_n = np.split(gh, 3, axis=1)
    r, z = _sig64(i_r + h_r), _sig64(i_z + h_z)
    n = np.tanh(i_n + r * h_n)
    return (1 - z) * n + z * h, np.concatenate([r, z, n, h_n], axis=1)


def _ref_gru_backward(g, h, ws):
    r, z, n, h_n = np.split(ws, 4, axis=1)
    d_n = g * (1 - z)  # h' = (1 - z) n + z h
    d_z = g * (h - n)
    d_an = d_n * (1 - n**2)  # n = tanh(a_n),  a_n = i_n + r h_n
    d_ar = d_an * h_n * r * (1 - r)  # r = σ(a_r)
    d_az = d_z * z * (1 - z)
    dgi = np.concatenate([d_ar, d_az, d_an], axis=1)
    dgh = np.concatenate([d_ar, d_az, d_an * r], axis=1)
    return dgi, dgh, g * z


def _ref_lstm(gi, gh, c):
    """[h'; c'] (2, N, H) and the saved [i, f, g, o, tanh c'] from PyTorch's LSTM equations."""
    a_i, a_f, a_g, a_o = np.split(gi + gh, 4, axis=1)
    i, f, g, o = _sig64(a_i), _sig64(a_f), np.tanh(a_g), _sig64(a_o)
    c1 = f * c + i * g
    return np.stack([o * np.tanh(c1), c1]), np.concatenate([i, f, g, o, np.tanh(c1)], axis=1)


def _ref_lstm_backward(grad, c, ws):
    i, f, g, o, tc = np.split(ws, 5, axis=1)
    gh, gc = grad
    dc1 = gc + gh * o * (1 - tc**2)  # h' = o tanh(c'),  c' = f c + i g
    da = np.concatenate(
        [dc1 * g * i * (1 - i), dc1 * c * f * (1 - f), dc1 * i * (1 - g**2), gh * tc * o * (1 - o)],
        axis=1,
    )
    return da, dc1 * f


def _ref_softmax(x, dim, log):
    if x.size == 0:
        return x
    s = x - x.max(axis=dim, keepdims=True)
    lse = np.log(np.exp(s).sum(axis=dim, keepdims=True))
    return s - lse if log else np.exp(s - lse)


def _ref_layernorm(x, w, b, eps):
    mu = x.mean(axis=-1, keepdims=True)
    xc = x - mu
    r = 1.0 / np.sqrt((xc * xc).mean(axis=-1, keepdims=True) + eps)
    y = xc * r
    if w is not None:
        y = y * _f64(w)
    if b is not None:
        y = y + _f64(b)
    return y, mu, r


def _ref_layernorm_backward(g, x, w, mu, r):
    xhat = (x - mu) * r
    gh = g * _f64(w) if w is not None else g
    dx = r * (
        gh - gh.mean(axis=-1, keepdims=True) - xhat * (gh * xhat).mean(axis=-1, keepdims=True)
    )
    lead = tuple(range(g.ndim - 1))
    return dx, (g * xhat).sum(axis=lead), g.sum(axis=lead)


def _check_update(be, views, want, names, tol, what):
    """Each view of a fused update's state equals its float64 reference."""
    for name, view, ref in zip(names, views, want):
        np.testing.assert_allclose(
            read(be, view), ref, rtol=tol, atol=tol, err_msg=f"{what}: {name}"
        )
