"""Adding a plain unary graph op is one change in one place: the op class, declaring its ONNX name
and its element function (dialects/_graph_more.py `_unary`, or any `_UnaryOp` subclass with ONNX /
MATH_OP). Its fusion kind (elementwise), legalization and ONNX import follow from the class."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from xdsl.dialects import math
from xdsl.dialects.builtin import TensorType, f32
from xdsl.utils.test_value import create_ssa_value

from minimlir.dialects import graph
from minimlir.dialects._fusion import OpPattern, fusion_kind
from minimlir.dialects._graph_more import _unary
from minimlir.frontend import UnsupportedModelError, _onnx_unary, compile
from minimlir.frontend._onnx_ops import OP_TABLE
from minimlir.passes.graph.legalize.unary import legalization_of

# The one change: this line (in dialects/_graph_more.py for a real op, with the op added to MORE_OPS).
Expm1Op = _unary("Expm1Op", "graph.expm1_example", "Elementwise exp(x) - 1.", math.ExpM1Op, "Expm1Example")


def test_the_new_op_fuses_legalizes_and_imports():
    op = Expm1Op(create_ssa_value(TensorType(f32, [4])))
    assert fusion_kind(op) == OpPattern.ELEMWISE  # inherited from _UnaryOp
    assert type(legalization_of(op)).__name__ == "LegalizeDeclaredUnary"
    _onnx_unary.register_declared()
    assert OP_TABLE["Expm1Example"].emit.__doc__ == "Expm1Example(x) -> graph.expm1_example x"


def _model(op_type: str, x: np.ndarray) -> onnx.ModelProto:
    node = helper.make_node(op_type, ["x"], ["y"])
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(x.shape))])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def test_declared_ops_compile_and_match_numpy():
    x = np.linspace(-0.9, 0.9, 24, dtype=np.float32).reshape(4, 6)
    for op_type, ref in [("Sin", np.sin), ("Atanh", np.arctanh), ("Round", np.round)]:
        cls = next(c for c in _onnx_unary.declared_onnx_unary_ops() if c.ONNX == op_type)
        assert cls.MATH_OP is not None and issubclass(cls, graph._UnaryOp)
        (y,) = compile(_model(op_type, x), cache=False)(x)
        np.testing.assert_allclose(y, ref(x), rtol=1e-6, atol=1e-6)


def test_a_float_only_op_refuses_ints_with_a_reason():
    node = helper.make_node("Sin", ["x"], ["y"])
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.INT32, [3])],
                          [helper.make_tensor_value_info("y", TensorProto.INT32, [3])])
    with pytest.raises(UnsupportedModelError, match="Sin of i32"):
        compile(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), cache=False)


def test_a_declared_op_is_in_no_class_keyed_legalization_table():
    from minimlir.passes.graph.legalize import _load_legalizations
    from minimlir.passes.graph.legalize import elementwise
    from minimlir.passes.graph.legalize.unary import declared_unary_ops

    _load_legalizations()
    declared = set(declared_unary_ops())
    assert {graph.TanhOp, graph.ExpOp, graph.LogOp, graph.SqrtOp, graph.RsqrtOp, graph.ErfOp, graph.FloorOp,
            graph.CeilOp} <= declared
    assert not declared & set(elementwise._UNARY)  # the op's MATH_OP is the one place
    # what is left in the table has an element function of more than one math op
    assert all(cls.MATH_OP is None for cls in elementwise._UNARY)
