"""The "add an op" checklist (docs/contributing.md), checked: every op of the backend contract is
implemented by the numpy backend, compiled into the scalar op tables that JIT backends share,
described in the conformance catalog, differentiable ops have a gradcheck case, and the ops
fusion may hand a compiler are contract ops. Forgetting one place fails here, not in a user's
program."""

import importlib.util
from pathlib import Path

import pytest

from torchlight.jit.fusion import FUSABLE_MAP, FUSABLE_ZIP
from torchlight.tensor.backend import numpy_ops
from torchlight.tensor.backend.protocol import MAP_OPS, REDUCE_OPS, ZIP_OPS
from torchlight.tensor.backend.scalar_ops import CMP_CODES, MAP_CODES, ZIP_CODES


def _gradcheck_registry():
    spec = importlib.util.spec_from_file_location(
        "_gc", Path(__file__).with_name("test_gradcheck.py")
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.CASES, mod.NOT_DIFFERENTIABLE


def test_numpy_backend_implements_every_contract_op():
    assert set(numpy_ops.MAP) == set(MAP_OPS)
    assert set(numpy_ops.ZIP) == set(ZIP_OPS)
    assert set(numpy_ops.REDUCE) | {"argmax", "argmin"} == set(REDUCE_OPS)


def test_scalar_op_tables_cover_every_elementwise_op():
    assert set(MAP_CODES) == set(MAP_OPS)
    assert set(ZIP_CODES) | set(CMP_CODES) == set(ZIP_OPS)


def test_catalog_describes_every_contract_op():
    catalog = pytest.importorskip("torchlight.testing.catalog")
    assert set(catalog.MAP_CATALOG) == set(MAP_OPS)
    assert set(catalog.ZIP_CATALOG) == set(ZIP_OPS)
    assert set(catalog.REDUCE_CATALOG) == set(REDUCE_OPS)


def test_every_back_op_is_the_derivative_of_a_map_op():
    for op in ZIP_OPS:
        if op.endswith("_back"):
            assert op[: -len("_back")] in MAP_OPS, op


# contract map ops that are not Tensor methods of the same name, each with where it surfaces
NOT_A_METHOD = {
    "copy": "Tensor.clone / .to(dtype) / .contiguous()",
    "gelu_tanh": "Tensor.gelu(approximate='tanh')",
}


def test_every_public_map_op_has_a_gradcheck_case():
    import torchlight as tl

    cases, not_differentiable = _gradcheck_registry()
    for op in MAP_OPS:
        if op in NOT_A_METHOD:
            assert not hasattr(tl.Tensor, op), (
                f"{op} is a Tensor method now: drop it from NOT_A_METHOD"
            )
            continue
        assert hasattr(tl.Tensor, op), (
            f"contract op {op!r} is neither a Tensor method nor in NOT_A_METHOD"
        )
        assert f"Tensor.{op}" in cases or op in not_differentiable, (
            f"Tensor.{op}: no gradcheck case"
        )


def test_fusable_ops_are_contract_ops():
    assert set(FUSABLE_MAP) <= set(MAP_OPS) and set(FUSABLE_ZIP) <= set(ZIP_OPS)


def test_onnx_export_translates_every_map_op():
    from torchlight.onnx import ops

    assert set(MAP_OPS) <= set(ops._UNARY) | set(ops._COMPOSITE)
