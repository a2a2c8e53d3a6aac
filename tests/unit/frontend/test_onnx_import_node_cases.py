"""Import every onnx node test case whose ops are all in the op table; the result types must agree
with the shapes of the reference outputs. Unsupported cases must fail for a known reason."""

import re
import warnings

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from minimlir.frontend._onnx_ops import OP_TABLE
from minimlir.frontend.onnx_import import UnsupportedModelError, import_onnx, numpy_dtype_of

# Why a case may be rejected (anything else fails the test).
KNOWN_GAPS = re.compile(
    r"dtype (u?int(2|4|8|16|32|64)|bfloat16|float8\w*|float4\w*|string)|cast to \w+"
    r"|3-D kernel|AveragePool with dilations|training mode|training_mode|the Indices output"
    r"|mode 'wrap'|graph input is not a tensor|constant_value must be a constant"
    r"|sequence / optional values"
)


def _cases():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from onnx.backend.test.case.node import collect_testcases

        cases = collect_testcases(None)
    return [
        c
        for c in cases
        if c.model.graph.node and {n.op_type for n in c.model.graph.node} <= set(OP_TABLE)
    ]


def _to_array(a):
    return numpy_helper.to_array(a) if isinstance(a, onnx.TensorProto) else np.asarray(a)


def _freeze(case) -> onnx.ModelProto:
    """Integer graph inputs used as parameters (axes, shapes, pads: a node input >= 1) become
    initializers holding the test's values, as a backend's `prepare` with known inputs would."""
    m = onnx.ModelProto()
    m.CopyFrom(case.model)
    inputs = case.data_sets[0][0]
    names = {i.name for i in m.graph.input}
    params = {
        i
        for node in m.graph.node
        for k, i in enumerate(node.input)
        if i in names and (k >= 1 or node.op_type in ("ConstantOfShape", "Range"))
    }
    # float parameters: Resize's roi and scales, Upsample's scales, OneHot's depth
    float_params = {i for node in m.graph.node if node.op_type in ("Resize", "Upsample")
                    for i in node.input[1:] if i in names}
    float_params |= {node.input[1] for node in m.graph.node if node.op_type == "OneHot" and node.input[1] in names}
    # MelWeightMatrix: every operand is a parameter (OnnxBackend's ALL_OPERANDS), the edges are floats
    float_params |= {i for node in m.graph.node if node.op_type == "MelWeightMatrix" for i in node.input if i in names}
    # If's condition, Loop's trip count / condition: the graph inputs behind them, as OnnxBackend does
    from minimlir.frontend.onnx_backend import parameter_inputs
    from minimlir.frontend.onnx_import import _node_label

    control = {_node_label(node, k) for k, node in enumerate(m.graph.node) if node.op_type in ("If", "Loop")}
    float_params |= set(parameter_inputs(m, control)) if control else set()
    keep = []
    for vi, array in zip(list(m.graph.input), inputs):
        if vi.name in float_params or (
                vi.name in params and vi.type.tensor_type.elem_type in (onnx.TensorProto.INT64, onnx.TensorProto.INT32)):
            m.graph.initializer.append(numpy_helper.from_array(_to_array(array), vi.name))
        else:
            keep.append(vi)
    del m.graph.input[:]
    m.graph.input.extend(keep)
    return m


CASES = _cases()


def test_enough_cases_collected():
    assert len(CASES) > 500


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_node_case(case):
    try:
        module, _ = import_onnx(_freeze(case), embed_weights=True)
    except UnsupportedModelError as e:
        for p in e.problems:
            assert KNOWN_GAPS.search(p.reason), (p.op_type, p.opset, p.reason)
        return
    fn = module.body.block.first_op
    outputs = fn.function_type.outputs.data
    expected = case.data_sets[0][1]
    assert len(outputs) == len(expected)
    for t, ref in zip(outputs, expected):
        ref = _to_array(ref)
        shape = list(t.get_shape())
        assert len(shape) == ref.ndim, (t, ref.shape)
        assert all(d < 0 or d == r for d, r in zip(shape, ref.shape)), (t, ref.shape)
        assert numpy_dtype_of(t.get_element_type()) == ref.dtype, (t, ref.dtype)
