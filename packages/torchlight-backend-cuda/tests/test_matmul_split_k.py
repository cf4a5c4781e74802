"""Split-K: a product with few output tiles and a long ``k`` runs as slices of ``k`` summed after
(``_matmul.split_k``); its result must be the product's, for every operand layout."""

import numpy as np
import pytest

import torchlight as tl
from torchlight.backends.cuda import _matmul
from torchlight.backends.cuda.spec import SPEC

pytestmark = pytest.mark.skipif(
    not SPEC.is_available(), reason=f"cuda backend unavailable here: {SPEC.why_unavailable()}"
)


def test_split_k_rule_by_hand():
    # (tiles, k, bk, target) -> slices: the fewest divisors of k reaching the target blocks,
    # each slice >= MIN_SPLIT_STEPS * bk = 256 long here
    assert _matmul.MIN_SPLIT_STEPS * 16 == 256
    assert _matmul.split_k(36, 16384, 16, 528) == 16  # ceil(528/36) = 15 -> next divisor 16
    assert _matmul.split_k(144, 16384, 16, 528) == 4
    assert _matmul.split_k(12, 16384, 16, 528) == 64  # wants 44; at most 16384 / 256 = 64
    assert _matmul.split_k(528, 16384, 16, 528) == 1  # enough tiles
    assert _matmul.split_k(1, 300, 16, 528) == 1  # k too short to cut
    assert _matmul.split_k(1, 0, 16, 528) == 1
    assert _matmul.split_k(2, 768, 16, 528) == 3  # at most 3 slices of 256
    assert _matmul.split_k(2, 7 * 256, 16, 528) == 7  # a prime count of slices is fine
    assert _matmul.split_k(2, 256 * 5 + 3, 16, 528) == 1  # 1283: no divisor in [2, 5]


def _split_slices(n, kk, m):
    from torchlight.backends.cuda.backend import MATMUL_TILE, SPLIT_K_BLOCKS

    BM, BN, BK, _, _ = MATMUL_TILE
    return _matmul.split_k(-(-n // BM) * -(-m // BN), kk, BK, SPLIT_K_BLOCKS)


def _shortest_slice():
    from torchlight.backends.cuda.backend import MATMUL_TILE

    return _matmul.MIN_SPLIT_STEPS * MATMUL_TILE[2]  # 128 on the simulator, 256 on a GPU


@pytest.mark.parametrize("layout", ["NN", "TN", "NT", "TT"])
@pytest.mark.parametrize("slices", [2, 3])
def test_split_products_match_float64(layout, slices):
    n, m, kk = 12, 10, slices * _shortest_slice()
    assert _split_slices(n, kk, m) > 1  # the case under test does split
    rng = np.random.default_rng(kk + sum(map(ord, layout)))
    a = rng.standard_normal((n, kk) if layout[0] == "N" else (kk, n)).astype(np.float32)
    b = rng.standard_normal((kk, m) if layout[1] == "N" else (m, kk)).astype(np.float32)
    ta, tb = tl.tensor(a, device="cuda"), tl.tensor(b, device="cuda")
    ta = ta if layout[0] == "N" else ta.T  # a transposed view: the weight gradient's g^T
    tb = tb if layout[1] == "N" else tb.T
    want = ta.numpy().astype(np.float64) @ tb.numpy().astype(np.float64)
    got = (ta @ tb).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


def test_split_product_of_sliced_operands():
    kk = 2 * _shortest_slice()
    rng = np.random.default_rng(3)
    big_a = rng.standard_normal((20, kk + 7)).astype(np.float32)
    big_b = rng.standard_normal((kk + 3, 9)).astype(np.float32)
    a = tl.tensor(big_a, device="cuda")[5:17, 7:]  # offset, row stride kk + 7
    b = tl.tensor(big_b, device="cuda")[3:, 1:8]
    assert _split_slices(12, kk, 7) > 1
    out = a @ b
    want = big_a[5:17, 7:].astype(np.float64) @ big_b[3:, 1:8].astype(np.float64)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


def test_split_gradient_of_a_linear_layer():
    # the weight gradient g^T @ x is the product split-K is for: few tiles, a long k
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2 * _shortest_slice(), 6)).astype(np.float32)
    w = rng.standard_normal((5, 6)).astype(np.float32)
    tx = tl.tensor(x, device="cuda")
    tw = tl.tensor(w, device="cuda", requires_grad=True)
    assert _split_slices(5, x.shape[0], 6) > 1  # the weight gradient's product is split
    (tx @ tw.T).sum().backward()
    # d/dW sum(x W^T) = 1^T x for every row of W
    want = np.tile(x.astype(np.float64).sum(0), (5, 1))
    np.testing.assert_allclose(tw.grad.numpy(), want, rtol=1e-4, atol=1e-3)


def test_split_k_docstring_examples_run():
    import doctest

    result = doctest.testmod(_matmul, report=True)
    assert result.attempted > 0 and result.failed == 0
