"""The kit's bounds-safety tests: every primitive that indexes by data, fed indices out of range.

The contract (``torchlight.tensor.backend.bounds``): ``take``, ``put_add``, ``gather``,
``scatter_add`` and the target of ``cross_entropy`` and ``nll`` never touch memory outside their buffers,
whatever the index holds, and an index outside ``[0, size)`` raises ``TensorIndexError`` naming
the primitive and the value — at the call, or, for a device that runs asynchronously, at the
next device→host copy (so each case reads its output inside the ``raises`` block). Each output
lives inside a larger buffer filled with the sentinel; after the error every element outside the
view must still hold it (an out-of-range write would have landed there or further away), and
the source operands must be unchanged. Finally, one valid call after the errors must succeed:
a backend's error state is cleared once reported.

A mixin of :class:`~torchlight.testing.BackendConformance`, which supplies ``be``, ``P`` and
``_need``.
"""

from __future__ import annotations

import numpy as np
import pytest

from torchlight.tensor.errors import TensorIndexError

from .catalog import sample
from .fused import _rng
from .strategies import empty_view, make_view, outside_untouched, read

__all__ = ["BoundsConformance", "bad_indices"]


def bad_indices(size):
    """Values just outside ``[0, size)``, far outside, and negative (the core would have turned a
    negative index into a positive one: a backend must refuse it)."""
    return (size, size + 7, -1, -size - 1, 10**9, -(10**9), 2**62)


class BoundsConformance:
    """Out-of-range indices for each indexing primitive, in each dtype the kit indexes."""

    def _expect_index_error(self, op, bad, args, *outs):
        """``be.<op>(*args)`` must raise, by the time ``outs`` are read back."""
        be = self.be
        with pytest.raises(TensorIndexError, match=rf"{op}: index {bad} is out of range"):
            getattr(be, op)(*args)
            for o in outs:  # an asynchronous device reports at the next device->host copy
                read(be, o)

    @pytest.mark.parametrize("dtype", ["float32", "int64"])
    def test_take_rejects_out_of_range(self, dtype):
        """``take`` raises ``TensorIndexError`` for each of :func:`bad_indices` (just past the end, far out, negative), writes nothing outside ``out``
        and leaves the input untouched.
        """
        be = self.be
        shape = self.P.shape
        for dim in range(len(shape)):
            for k, bad in enumerate(bad_indices(shape[dim])):
                rng = _rng("take-oob", dtype, dim, k)
                a, av = make_view(be, sample(rng, shape, dtype), "offset")
                idx, _ = make_view(be, np.array([0, bad, shape[dim] - 1], np.int64), "sliced")
                out = empty_view(be, shape[:dim] + (3,) + shape[dim + 1 :], dtype, "sliced")
                self._expect_index_error("take", bad, (a, dim, idx, out), out)
                assert outside_untouched(be, out, dtype), (
                    f"take dim={dim} index={bad}: wrote outside out"
                )
                np.testing.assert_array_equal(read(be, a), av)
        self._valid_call_after_errors()

    @pytest.mark.parametrize("dtype", ["float32", "int64"])
    def test_put_add_rejects_out_of_range(self, dtype):
        """``put_add`` raises ``TensorIndexError`` for each of :func:`bad_indices` (just past the end, far out, negative) and writes nothing outside
        ``out``.
        """
        be = self.be
        shape = self.P.shape
        for dim in range(len(shape)):
            for k, bad in enumerate(bad_indices(shape[dim])):
                rng = _rng("put_add-oob", dtype, dim, k)
                out = empty_view(be, shape, dtype, "sliced")
                idx, _ = make_view(be, np.array([bad, 0], np.int64), "offset")
                src, _ = make_view(
                    be, sample(rng, shape[:dim] + (2,) + shape[dim + 1 :], dtype), "permuted"
                )
                self._expect_index_error("put_add", bad, (out, dim, idx, src), out)
                assert outside_untouched(be, out, dtype), (
                    f"put_add dim={dim} index={bad}: wrote outside out"
                )
        self._valid_call_after_errors()

    @pytest.mark.parametrize("dtype", ["float32", "int64"])
    def test_gather_rejects_out_of_range(self, dtype):
        """``gather`` raises ``TensorIndexError`` for each of :func:`bad_indices` (just past the end, far out, negative), writes nothing outside ``out``
        and leaves the input untouched.
        """
        be = self.be
        shape = self.P.shape
        for dim in range(len(shape)):
            for k, bad in enumerate(bad_indices(shape[dim])):
                rng = _rng("gather-oob", dtype, dim, k)
                a, av = make_view(be, sample(rng, shape, dtype), "permuted")
                iv = rng.integers(0, shape[dim], size=shape)
                iv.reshape(-1)[-1] = bad  # the last element: after every valid one in any order
                idx, _ = make_view(be, iv, "offset")
                out = empty_view(be, shape, dtype, "sliced")
                self._expect_index_error("gather", bad, (a, dim, idx, out), out)
                assert outside_untouched(be, out, dtype), (
                    f"gather dim={dim} index={bad}: wrote outside out"
                )
                np.testing.assert_array_equal(read(be, a), av)
        self._valid_call_after_errors()

    @pytest.mark.parametrize("dtype", ["float32", "int64"])
    def test_scatter_add_rejects_out_of_range(self, dtype):
        """``scatter_add`` raises ``TensorIndexError`` for each of :func:`bad_indices` (just past the end, far out, negative) and writes nothing
        outside ``out``.
        """
        be = self.be
        shape = self.P.shape
        for dim in range(len(shape)):
            for k, bad in enumerate(bad_indices(shape[dim])):
                rng = _rng("scatter-oob", dtype, dim, k)
                out = empty_view(be, shape, dtype, "offset")
                iv = rng.integers(0, shape[dim], size=shape)
                iv.reshape(-1)[0] = bad
                idx, _ = make_view(be, iv, "sliced")
                src, _ = make_view(be, sample(rng, shape, dtype), "contiguous")
                self._expect_index_error("scatter_add", bad, (out, dim, idx, src), out)
                assert outside_untouched(be, out, dtype), (
                    f"scatter_add dim={dim} index={bad}: wrote outside out"
                )
        self._valid_call_after_errors()

    def _rows_with_a_bad_target(self, key, dtype, k, bad):
        """Rows ``(R, C)`` of ``dtype`` as a permuted view, their values, and a strided target
        view of classes with ``bad`` in the middle row (a loss's inputs)."""
        R, C = self.P.rows
        rng = _rng(key, dtype, k)
        x, xv = make_view(self.be, sample(rng, (R, C), dtype), "permuted")
        tv = rng.integers(0, C, size=R)
        tv[R // 2] = bad
        t, _ = make_view(self.be, tv, "sliced")
        return x, xv, t

    @pytest.mark.parametrize("dtype", ["float32", "float64"])
    def test_cross_entropy_rejects_out_of_range_targets(self, dtype):
        """Capability ``cross_entropy``: a target outside ``[0, C)`` makes the forward and the backward
        raise ``TensorIndexError`` without writing outside their output buffers.
        """
        self._need("cross_entropy")
        be = self.be
        R, C = self.P.rows
        for k, bad in enumerate(bad_indices(C)):
            x, xv, t = self._rows_with_a_bad_target("xent-oob", dtype, k, bad)
            w, _ = make_view(be, np.ones(R, dtype))
            loss, logs = (
                empty_view(be, (R,), dtype, "sliced"),
                empty_view(be, (R,), dtype, "offset"),
            )
            self._expect_index_error("cross_entropy", bad, (x, t, w, loss, logs), loss, logs)
            assert outside_untouched(be, loss, dtype) and outside_untouched(be, logs, dtype)
            logs, _ = make_view(be, np.zeros(R, dtype))
            g, _ = make_view(be, np.ones(R, dtype))
            dx = empty_view(be, (R, C), dtype, "sliced")
            self._expect_index_error("cross_entropy_backward", bad, (x, t, w, logs, g, dx), dx)
            assert outside_untouched(be, dx, dtype), (
                f"cross_entropy_backward target={bad}: wrote outside dx"
            )
            np.testing.assert_array_equal(read(be, x), xv)
        self._valid_call_after_errors()

    @pytest.mark.parametrize("dtype", ["float32", "float64"])
    def test_nll_rejects_out_of_range_targets(self, dtype):
        """Capability ``nll``: a target outside ``[0, C)`` makes the call raise
        ``TensorIndexError`` without writing outside ``out`` or changing the log-probabilities.
        """
        self._need("nll")
        be = self.be
        R, C = self.P.rows
        for k, bad in enumerate(bad_indices(C)):
            x, xv, t = self._rows_with_a_bad_target("nll-oob", dtype, k, bad)
            out = empty_view(be, (), dtype, "offset")
            self._expect_index_error("nll", bad, (x, t, out, -float(R)), out)
            assert outside_untouched(be, out, dtype), f"nll target={bad}: wrote outside out"
            np.testing.assert_array_equal(read(be, x), xv)
        self._valid_call_after_errors()

    def _valid_call_after_errors(self):
        """A reported error leaves nothing behind: the next valid primitive runs and reads back."""
        be = self.be
        a, av = make_view(be, np.arange(6, dtype=np.float32).reshape(2, 3))
        idx, _ = make_view(be, np.array([2, 0], np.int64))
        out = empty_view(be, (2, 2), "float32")
        be.take(a, 1, idx, out)
        np.testing.assert_array_equal(read(be, out), av[:, [2, 0]])
