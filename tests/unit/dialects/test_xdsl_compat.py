"""The parser work-arounds in dialects/_xdsl_compat.py."""

import math

from xdsl.context import Context
from xdsl.dialects.builtin import Builtin
from xdsl.dialects.func import Func
from xdsl.parser import Parser

from minimlir.dialects import graph


def _constants(text: str) -> list[list[float]]:
    ctx = Context()
    for d in (Builtin, Func, graph.Graph):
        ctx.load_dialect(d)
    module = Parser(ctx, text).parse_module()
    return [
        [v for v in op.value.get_values()]
        for op in module.walk()
        if isinstance(op, graph.ConstantOp)
    ]


def test_hex_float_literals_are_bit_patterns():
    (f32, f16, f64) = _constants(
        """
        %a = graph.constant dense<[0xFF800000, 0x7F800000, 0x7FC00000, 0x3FC00000]> : tensor<4xf32>
        %b = graph.constant dense<0xFC00> : tensor<f16>
        %c = graph.constant dense<0xFFF0000000000000> : tensor<f64>
        """
    )
    assert f32[0] == -math.inf and f32[1] == math.inf and math.isnan(f32[2]) and f32[3] == 1.5
    assert f16 == [-math.inf]
    assert f64 == [-math.inf]


def test_printed_non_finite_constant_round_trips():
    from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, TensorType, f32

    attr = DenseIntOrFPElementsAttr.from_list(TensorType(f32, [2]), [-math.inf, 2.0])
    text = str(graph.ConstantOp(attr))
    assert "0x" in text.lower()
    (values,) = _constants(text)
    assert values == [-math.inf, 2.0]


def test_integer_hex_literals_unchanged():
    ctx = Context()
    for d in (Builtin, Func, graph.Graph):
        ctx.load_dialect(d)
    module = Parser(ctx, "%a = graph.constant dense<0x10> : tensor<i64>").parse_module()
    (op,) = [o for o in module.walk() if isinstance(o, graph.ConstantOp)]
    assert list(op.value.get_values()) == [16]


# --- vector comparisons and selects ---------------------------------------------------------------

import pytest  # noqa: E402
from xdsl.dialects import arith  # noqa: E402
from xdsl.dialects.builtin import VectorType, f32, i1, i64  # noqa: E402
from xdsl.utils.exceptions import VerifyException  # noqa: E402
from xdsl.utils.test_value import create_ssa_value  # noqa: E402


def test_vector_compares_give_vector_of_i1_and_verify():
    vi, vf = create_ssa_value(VectorType(i64, [8])), create_ssa_value(VectorType(f32, [8]))
    ci, cf = arith.CmpiOp(vi, vi, "slt"), arith.CmpfOp(vf, vf, "olt")
    for c in (ci, cf):
        assert c.result.type == VectorType(i1, [8])
        c.verify()
    arith.SelectOp(cf.result, vf, vf).verify()
    assert arith.CmpiOp(create_ssa_value(i64), create_ssa_value(i64), "eq").result.type == i1


def test_select_condition_must_still_be_boolean():
    vf = create_ssa_value(VectorType(f32, [8]))
    with pytest.raises(VerifyException):
        arith.SelectOp(create_ssa_value(i64), vf, vf).verify()


def test_vectorized_mask_kernel_verifies_after_every_pass(monkeypatch):
    """The default pipeline vectorizes `ids < 0` and `where`: the IR verifies after each pass."""
    from minimlir.frontend import compile

    monkeypatch.setenv("MINIMLIR_VERIFY_EACH", "1")
    monkeypatch.setenv("MINIMLIR_COMPILE_JOBS", "1")
    src = """
    func.func @main(%ids: tensor<?x?xi64>) -> tensor<?x?xi64> {
      %n = graph.constant dense<97> : tensor<i64>
      %z = graph.constant dense<0> : tensor<i64>
      %neg = graph.lt %ids, %z : (tensor<?x?xi64>, tensor<i64>) -> tensor<?x?xi1>
      %w = graph.add %ids, %n : (tensor<?x?xi64>, tensor<i64>) -> tensor<?x?xi64>
      %r = graph.where %neg, %w, %ids : (tensor<?x?xi1>, tensor<?x?xi64>, tensor<?x?xi64>) -> tensor<?x?xi64>
      func.return %r : tensor<?x?xi64>
    }
    """
    import numpy as np

    prog = compile(src, cache=False)
    ids = np.arange(-20, 20, dtype=np.int64).reshape(2, 20)
    np.testing.assert_array_equal(prog(ids)[0], np.where(ids < 0, ids + 97, ids))
