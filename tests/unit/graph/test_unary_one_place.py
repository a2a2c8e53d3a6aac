"""Adding a unary graph op is one change in one place: the op class. It declares its element function
(`element`, or `MATH_OP`), its ONNX name and float attributes (`ONNX`, `ONNX_ATTRS`), and inherits
its fusion kind (ELEMWISE); graph-legalize, graph-infer-dims, the reference interpreter and the ONNX
importer follow from the class (passes/graph/legalize/unary.py, frontend/_onnx_unary.py).

`CeluExampleOp` below is such a class, declared here and nowhere else: the tests parse and print it,
import it from an ONNX node, legalize, interpret and compile it, and compare with NumPy. Its ONNX op
type is made up ("TestCelu", default domain): the importer refuses custom domains as a whole, and a
real ONNX op type without an importer would be imported by this class in every later test of the
process.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from xdsl.dialects import func
from xdsl.dialects.builtin import Float64Type, FloatAttr, ModuleOp, TensorType, f64, i64
from xdsl.irdl import irdl_op_definition, prop_def
from xdsl.parser import Parser
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.test_value import create_ssa_value

from minimlir.compiler.context import make_context
from minimlir.compiler.interpreter import interpret_kernels
from minimlir.dialects import elementfn as ef
from minimlir.dialects import graph, loop
from minimlir.dialects._fusion import OpPattern, fusion_kind
from minimlir.frontend import UnsupportedModelError, _onnx_unary, compile
from minimlir.frontend._onnx_ops import OP_TABLE
from minimlir.frontend.onnx_import import import_onnx
from minimlir.passes.graph.infer_dims import GraphInferDimsPass
from minimlir.passes.graph.legalize import GraphLegalizePass, _load_legalizations, elementwise
from minimlir.passes.graph.legalize.unary import LegalizeUnary, legalization_of


# ---- the one change: this class (defined in dialects/, it is in the graph dialect too) ---------
@irdl_op_definition
class CeluExampleOp(graph._UnaryOp):
    """Elementwise max(0, x) + min(0, alpha * (exp(x / alpha) - 1)) (as ONNX Celu)."""

    name = "graph.test_celu"
    ONNX: ClassVar = "TestCelu"
    ONNX_ATTRS: ClassVar = {"alpha": 1.0}

    alpha = prop_def(FloatAttr[Float64Type])
    assembly_format = "$input `alpha` $alpha attr-dict `:` type($result)"

    def __init__(self, input, alpha: float = 1.0):
        super().__init__(input, {"alpha": FloatAttr(alpha, f64)})

    def element(self, b, x):
        a = ef.fconst(b, self.alpha.value.data, x)
        neg = b.min(ef.fconst(b, 0.0, x), b.mul(a, ef.expm1(b, b.div(x, a))))
        return b.add(ef.relu(b, x), neg)
# ------------------------------------------------------------------------------------------------


def celu(x: np.ndarray, alpha: float) -> np.ndarray:
    return np.maximum(x, 0) + np.minimum(0, alpha * np.expm1(x / alpha))


TEXT = """\
func.func @f(%x: tensor<?x6xf32>) -> tensor<?x6xf32> {
  %y = graph.test_celu %x alpha 5.000000e-01 : tensor<?x6xf32>
  func.return %y : tensor<?x6xf32>
}"""


@pytest.fixture
def declared():
    """The importer's emitters, with TestCelu's (registered as for any op class defined late)."""
    _onnx_unary.register_declared()
    yield OP_TABLE["TestCelu"]
    del OP_TABLE["TestCelu"]


def _parse(text: str) -> ModuleOp:
    ctx = make_context()
    ctx.load_op(CeluExampleOp)
    return Parser(ctx, text).parse_module()


def _model(nodes, elem=TensorProto.FLOAT, outputs=("y",)) -> onnx.ModelProto:
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", elem, ["batch", 6])],
                          [helper.make_tensor_value_info(o, elem, ["batch", 6]) for o in outputs])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def test_the_new_op_parses_prints_and_verifies():
    module = _parse(TEXT)
    module.verify()
    (y,) = [o for o in module.walk() if isinstance(o, CeluExampleOp)]
    assert y.alpha.value.data == 0.5 and fusion_kind(y) == OpPattern.ELEMWISE  # inherited
    assert str(module) == str(_parse(str(module)))  # round-trips
    assert "%y = graph.test_celu %x alpha 5.000000e-01 : tensor<?x6xf32>" in str(module)
    bad = CeluExampleOp(create_ssa_value(TensorType(i64, [3])))
    with pytest.raises(VerifyException, match="input element type must be a float type, got i64"):
        bad.verify_()


def test_the_new_op_legalizes_infers_dims_and_interprets():
    module = _parse(TEXT)
    GraphInferDimsPass().apply(make_context(), module)
    (y,) = [o for o in module.walk() if isinstance(o, CeluExampleOp)]
    assert "graph.dims" in y.attributes  # its result dims follow from its legalization's shape rule
    assert isinstance(legalization_of(y), LegalizeUnary)
    GraphLegalizePass().apply(make_context(), module)
    module.verify()
    (kernel,) = [o for o in module.ops if isinstance(o, func.FuncOp) and loop.is_kernel(o)]
    assert kernel.sym_name.data == "test_celu_0"
    body = [o.name for o in kernel.walk()]
    assert "math.expm1" in body and "arith.minimumf" in body
    x = np.linspace(-3, 2, 12, dtype=np.float32).reshape(2, 6)
    (out,) = interpret_kernels(module, "f", [x])
    np.testing.assert_allclose(out, celu(x, 0.5), rtol=1e-6, atol=1e-6)


def test_the_new_op_imports_from_onnx_compiles_and_matches_numpy(declared):
    assert declared.emit.__doc__ == "TestCelu(x, alpha=1.0) -> graph.test_celu x {alpha}"
    nodes = [helper.make_node("TestCelu", ["x"], ["y"], alpha=0.5), helper.make_node("TestCelu", ["x"], ["d"]),
             helper.make_node("Relu", ["d"], ["z"])]  # default alpha; fused with the next op
    model = _model(nodes, outputs=("y", "z"))
    text = str(import_onnx(model)[0])
    assert 'graph.test_celu %x alpha 5.000000e-01 {graph.dims = ["batch"]} : tensor<?x6xf32>' in text
    assert 'graph.test_celu %x alpha 1.000000e+00 {graph.dims = ["batch"]} : tensor<?x6xf32>' in text  # ONNX default
    m = compile(model, cache=False)
    x = np.linspace(-4, 3, 18, dtype=np.float32).reshape(3, 6)
    y, z = m(x)
    np.testing.assert_allclose(y, celu(x, 0.5), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(z, np.maximum(celu(x, 1.0), 0), rtol=1e-5, atol=1e-6)
    with pytest.raises(UnsupportedModelError, match="TestCelu of i32"):  # ELEMENT_KIND "float"
        compile(_model([helper.make_node("TestCelu", ["x"], ["y"])], TensorProto.INT32), cache=False)


def test_declared_ops_compile_and_match_numpy():
    x = np.linspace(-0.9, 0.9, 24, dtype=np.float32).reshape(4, 6)
    for op_type, ref in [("Sin", np.sin), ("Atanh", np.arctanh), ("Round", np.round)]:
        cls = next(c for c in _onnx_unary.declared_onnx_unary_ops() if c.ONNX == op_type)
        assert cls.MATH_OP is not None and issubclass(cls, graph._UnaryOp)
        (y,) = compile(_model([helper.make_node(op_type, ["x"], ["y"])]), cache=False)(x)
        np.testing.assert_allclose(y, ref(x), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("op_type, elem, attrs", [
    ("Sin", TensorProto.INT32, {}),
    # these four were imported by hand and failed as "internal error: the imported module does not
    # verify: input element type must be a float type, got i32"
    ("Sigmoid", TensorProto.INT32, {}),
    ("LeakyRelu", TensorProto.INT32, {"alpha": 0.1}),
    ("Gelu", TensorProto.INT32, {}),
    ("Not", TensorProto.FLOAT, {}),
])
def test_an_op_of_the_wrong_element_type_is_refused_with_a_reason(op_type, elem, attrs):
    t = {TensorProto.INT32: "i32", TensorProto.FLOAT: "f32"}[elem]
    g = helper.make_graph([helper.make_node(op_type, ["x"], ["y"], **attrs)], "g",
                          [helper.make_tensor_value_info("x", elem, [3])],
                          [helper.make_tensor_value_info("y", elem, [3])])
    with pytest.raises(UnsupportedModelError, match=f"{op_type} of {t}"):
        compile(helper.make_model(g, opset_imports=[helper.make_opsetid("", 20)]), cache=False)


def test_every_unary_op_legalizes_and_imports_from_its_class(declared):
    _load_legalizations()
    assert not hasattr(elementwise, "_UNARY") and not hasattr(elementwise, "LegalizeUnary")
    classes = graph.unary_op_classes()
    assert {graph.ReluOp, graph.GeluOp, graph.ClipOp, graph.SinOp, graph.HardSigmoidOp} <= set(classes)
    for cls in classes:
        op = cls.__new__(cls)  # (legalization_of looks at the class only)
        assert isinstance(legalization_of(op), LegalizeUnary), cls.name
        assert cls.MATH_OP is not None or cls.element is not graph._UnaryOp.element, cls.name
        if cls.ONNX is not None:  # imported from the declaration, never by hand as well
            assert getattr(OP_TABLE[cls.ONNX].emit, "declared_by", None) is cls, cls.name
    hand = {"Clip": graph.ClipOp, "Gelu": graph.GeluOp}  # imported by hand, and they say why
    for op_type, cls in hand.items():
        assert cls.ONNX is None and "By hand" in OP_TABLE[op_type].emit.__doc__


def test_declared_attributes_and_folds():
    assert graph.SeluOp.ONNX_ATTRS == {"alpha": 1.67326319217681884765625, "gamma": 1.05070102214813232421875}
    nodes = [helper.make_node("Constant", [], ["k"], value=onnx.numpy_helper.from_array(np.array([-2, 3], np.int64))),
             helper.make_node("Neg", ["k"], ["nk"]), helper.make_node("Abs", ["nk"], ["ak"]),
             helper.make_node("Reshape", ["x", "ak"], ["y"])]  # needs Abs(Neg(k)) at import time
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    (y,) = compile(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), cache=False)(x)
    np.testing.assert_array_equal(y, x.reshape(2, 3))


def test_every_unary_op_of_the_dialects_package_is_in_the_graph_dialect():
    ours = [c for c in graph.unary_op_classes() if c.__module__.startswith("minimlir.dialects.")]
    assert len(ours) >= 35 and CeluExampleOp not in ours
    assert set(ours) <= set(graph.Graph.operations)
