"""ONNX control flow with a compile-time decision (frontend/_onnx_control_flow.py), each against
onnxruntime: If with a constant (folded) condition inlines its branch; Loop with a constant trip
count / condition is unrolled (carried state, scan outputs, early exit); Scan sums along an axis
in both directions. Runtime conditions are refused with a reason naming the op."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from minimlir.frontend.onnx_import import UnsupportedModelError, import_onnx

from test_onnx_ops_more import _model, _vi, check_against_ort

F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
_rng = np.random.default_rng(1414)


def _branch(name, nodes, out, shape=None):
    return helper.make_graph(nodes, name, [], [_vi(out, F, shape)])


def _if_model(cond_nodes):
    then_g = _branch("then", [helper.make_node("Add", ["x", "x"], ["t"])], "t", [2, 3])
    else_g = _branch("else", [helper.make_node("Neg", ["x"], ["e"])], "e", [2, 3])
    nodes = cond_nodes + [helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g)]
    return _model(nodes, [_vi("x", F, [2, 3])], [_vi("y", F, [2, 3])], 17)


@pytest.mark.parametrize("value", [True, False])
def test_if_constant_condition(value):
    """The condition is folded from a Shape comparison (Shape(x)[0] == 2) or is a Constant: the
    taken branch is inlined, the other is not imported."""
    dims = [helper.make_node("Shape", ["x"], ["s"]),
            helper.make_node("Constant", [], ["i"], value=helper.make_tensor("i", I64, [], [0])),
            helper.make_node("Gather", ["s", "i"], ["d"]),
            helper.make_node("Constant", [], ["k"], value=helper.make_tensor("k", I64, [], [2 if value else 5])),
            helper.make_node("Equal", ["d", "k"], ["c"])]
    model = _if_model(dims)
    module, _ = import_onnx(model)
    names = {op.name for op in module.walk()}
    assert ("graph.neg" in names) != value
    check_against_ort(model, [{"x": _rng.standard_normal((2, 3)).astype(np.float32)}])


def test_if_runtime_condition_selects():
    """A condition that is a graph input: both branches are compiled, each output is
    Where(cond, then, else); both condition values against onnxruntime, one compiled model."""
    model = _model([helper.make_node("If", ["c"], ["y"],
                                     then_branch=_branch("then", [helper.make_node("Add", ["x", "x"], ["t"])], "t"),
                                     else_branch=_branch("else", [helper.make_node("Neg", ["x"], ["e"])], "e"))],
                   [_vi("x", F, [2]), _vi("c", B, [])], [_vi("y", F, [2])], 17)
    module, _ = import_onnx(model)
    assert "graph.where" in {op.name for op in module.walk()}
    x = np.array([1.5, -2.0], np.float32)
    check_against_ort(model, [{"x": x, "c": np.array(True)}, {"x": x, "c": np.array(False)}])


def test_if_runtime_condition_refusals():
    """Both branches run, so a branch that may fault when not taken (integer Div), or whose outputs
    differ in shape from the other's, is refused with a reason naming the variant."""
    inits = [helper.make_tensor("k", I64, [2], [3, 4])]
    div = _model([helper.make_node("If", ["c"], ["y"],
                                   then_branch=helper.make_graph([helper.make_node("Div", ["k", "d"], ["t"])], "then",
                                                                 [], [_vi("t", I64, [2])]),
                                   else_branch=helper.make_graph([helper.make_node("Identity", ["k"], ["e"])], "else",
                                                                 [], [_vi("e", I64, [2])]))],
                 [_vi("d", I64, [2]), _vi("c", B, [])], [_vi("y", I64, [2])], 17, inits)
    with pytest.raises(UnsupportedModelError, match="condition is computed at run time.*integer division may fault"):
        import_onnx(div)
    shapes = _model([helper.make_node("If", ["c"], ["y"],
                                      then_branch=_branch("then", [helper.make_node("Identity", ["x"], ["t"])], "t"),
                                      else_branch=_branch("else", [helper.make_node("Identity", ["k"], ["e"])], "e"))],
                    [_vi("x", F, [3]), _vi("c", B, [])], [_vi("y", F, None)], 17,
                    [helper.make_tensor("k", F, [2], [1.0, 2.0])])
    with pytest.raises(UnsupportedModelError, match="output 0 has shape 3 in then_branch and 2 in else_branch"):
        import_onnx(shapes)


def test_loop_carried_state_and_scan_outputs():
    """Loop M=4: acc = acc + x * i (carried), scan output acc at each step (stacked on axis 0)."""
    body = helper.make_graph(
        [helper.make_node("Cast", ["i"], ["fi"], to=F),
         helper.make_node("Mul", ["x", "fi"], ["xi"]),
         helper.make_node("Add", ["acc_in", "xi"], ["acc_out"]),
         helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Identity", ["acc_out"], ["scan"])],
        "body", [_vi("i", I64, []), _vi("cond_in", B, []), _vi("acc_in", F, [3])],
        [_vi("cond_out", B, []), _vi("acc_out", F, [3]), _vi("scan", F, [3])])
    inits = [helper.make_tensor("M", I64, [], [4]), helper.make_tensor("c0", B, [], [True])]
    model = _model([helper.make_node("Loop", ["M", "c0", "a0"], ["acc", "steps"], body=body)],
                   [_vi("x", F, [3]), _vi("a0", F, [3])], [_vi("acc", F, [3]), _vi("steps", F, [4, 3])], 17, inits)
    feeds = {"x": _rng.standard_normal(3).astype(np.float32), "a0": _rng.standard_normal(3).astype(np.float32)}
    check_against_ort(model, [feeds])


def test_loop_early_exit_on_constant_condition():
    """Loop with M=10 whose body condition is i < 2 (constant per unrolled copy): 3 iterations."""
    body = helper.make_graph(
        [helper.make_node("Constant", [], ["two"], value=helper.make_tensor("two", I64, [], [2])),
         helper.make_node("Less", ["i", "two"], ["cond_out"]),
         helper.make_node("Mul", ["acc_in", "x"], ["acc_out"])],
        "body", [_vi("i", I64, []), _vi("cond_in", B, []), _vi("acc_in", F, [2])],
        [_vi("cond_out", B, []), _vi("acc_out", F, [2])])
    inits = [helper.make_tensor("M", I64, [], [10])]
    model = _model([helper.make_node("Loop", ["M", "", "a0"], ["acc"], body=body)],
                   [_vi("x", F, [2]), _vi("a0", F, [2])], [_vi("acc", F, [2])], 17, inits)
    feeds = {"x": np.array([1.5, -2.0], np.float32), "a0": np.array([1.0, 0.5], np.float32)}
    check_against_ort(model, [feeds])


@pytest.mark.parametrize("direction", [0, 1])
def test_scan_sum(direction):
    """Scan (opset 16): running sum over axis 1 of a [2, 4, 3] input (scan_input_axes=[1]); scan
    output stacked on axis 0; both directions."""
    body = helper.make_graph(
        [helper.make_node("Add", ["s_in", "x_t"], ["s_out"]),
         helper.make_node("Identity", ["s_out"], ["y_t"])],
        "body", [_vi("s_in", F, [2, 3]), _vi("x_t", F, [2, 3])], [_vi("s_out", F, [2, 3]), _vi("y_t", F, [2, 3])])
    node = helper.make_node("Scan", ["s0", "x"], ["s", "ys"], body=body, num_scan_inputs=1,
                            scan_input_axes=[1], scan_input_directions=[direction],
                            scan_output_directions=[direction])
    model = _model([node], [_vi("s0", F, [2, 3]), _vi("x", F, [2, 4, 3])],
                   [_vi("s", F, [2, 3]), _vi("ys", F, [4, 2, 3])], 16)
    feeds = {"s0": _rng.standard_normal((2, 3)).astype(np.float32),
             "x": _rng.standard_normal((2, 4, 3)).astype(np.float32)}
    check_against_ort(model, [feeds], rtol=1e-6)


def test_loop_runtime_trip_count_refused():
    body = helper.make_graph([helper.make_node("Identity", ["cond_in"], ["cond_out"]),
                              helper.make_node("Identity", ["a"], ["b"])],
                             "body", [_vi("i", I64, []), _vi("cond_in", B, []), _vi("a", F, [2])],
                             [_vi("cond_out", B, []), _vi("b", F, [2])])
    model = _model([helper.make_node("Loop", ["M", "", "a0"], ["y"], body=body)],
                   [_vi("M", I64, []), _vi("a0", F, [2])], [_vi("y", F, [2])], 17)
    with pytest.raises(UnsupportedModelError, match="Loop: the trip count is computed at run time"):
        import_onnx(model)


def test_scan8_batched_sum_reverse():
    """Scan-8 (opset 8): a leading batch axis on every input, the scan on axis 1, `directions`;
    unrolled per batch row. Running sum in reverse over [2, 3, 2]."""
    body = helper.make_graph(
        [helper.make_node("Add", ["s_in", "x_t"], ["s_out"]),
         helper.make_node("Identity", ["s_out"], ["y_t"])],
        "body", [_vi("s_in", F, [2]), _vi("x_t", F, [2])], [_vi("s_out", F, [2]), _vi("y_t", F, [2])])
    node = helper.make_node("Scan", ["", "s0", "x"], ["s", "ys"], body=body, num_scan_inputs=1, directions=[1])
    model = _model([node], [_vi("s0", F, [2, 2]), _vi("x", F, [2, 3, 2])],
                   [_vi("s", F, [2, 2]), _vi("ys", F, [2, 3, 2])], 8)
    feeds = {"s0": _rng.standard_normal((2, 2)).astype(np.float32),
             "x": _rng.standard_normal((2, 3, 2)).astype(np.float32)}
    check_against_ort(model, [feeds], rtol=1e-6)


def test_backend_specializes_on_condition_and_trip_count():
    """The graph inputs behind If's condition and Loop's trip count / condition are the inputs
    OnnxBackend specializes on (not the Loop's carried data)."""
    from minimlir.frontend.onnx_backend import parameter_inputs

    body = helper.make_graph([helper.make_node("Identity", ["cond_in"], ["cond_out"]),
                              helper.make_node("Add", ["a", "a"], ["b"])],
                             "body", [_vi("i", I64, []), _vi("cond_in", B, []), _vi("a", F, [2])],
                             [_vi("cond_out", B, []), _vi("b", F, [2])])
    then_g = _branch("then", [helper.make_node("Identity", ["y"], ["t"])], "t")
    else_g = _branch("else", [helper.make_node("Neg", ["y"], ["e"])], "e")
    model = _model([helper.make_node("Loop", ["M", "c0", "a0"], ["y"], body=body, name="L"),
                    helper.make_node("If", ["c"], ["z"], then_branch=then_g, else_branch=else_g, name="I")],
                   [_vi("M", I64, []), _vi("c0", B, []), _vi("a0", F, [2]), _vi("c", B, [])],
                   [_vi("z", F, [2])], 17)
    assert parameter_inputs(model, {"L", "I"}) == ["M", "c0", "c"]


@pytest.mark.parametrize("align", [0, 1])
def test_affine_grid_function_body_with_if(align):
    """AffineGrid imports as its ONNX function body, whose If (on align_corners) reads the body's
    values: the expansion renames them inside the branches too."""
    inits = [helper.make_tensor("size", I64, [4], [2, 1, 3, 4])]
    model = _model([helper.make_node("AffineGrid", ["theta", "size"], ["grid"], align_corners=align)],
                   [_vi("theta", F, [2, 2, 3])], [_vi("grid", F, [2, 3, 4, 2])], 20, inits)
    check_against_ort(model, [{"theta": _rng.standard_normal((2, 2, 3)).astype(np.float32)}], atol=1e-6)


def test_loop_trip_count_folded_from_float_constants():
    """Range's expanded body: M = Cast(Relu(Ceil((limit - start) / delta))) from float constants
    (scalar ops the emitters keep as graph ops) is folded at import time and the loop unrolled."""
    body = helper.make_graph([helper.make_node("Identity", ["cond_in"], ["cond_out"]),
                              helper.make_node("Add", ["a", "d"], ["b"]),
                              helper.make_node("Identity", ["a"], ["s"])],
                             "body", [_vi("i", I64, []), _vi("cond_in", B, []), _vi("a", F, [])],
                             [_vi("cond_out", B, []), _vi("b", F, []), _vi("s", F, [])])
    inits = [helper.make_tensor("start", F, [], [1.0]), helper.make_tensor("limit", F, [], [5.5]),
             helper.make_tensor("d", F, [], [2.0])]
    nodes = [helper.make_node("Sub", ["limit", "start"], ["diff"]),
             helper.make_node("Div", ["diff", "d"], ["q"]),
             helper.make_node("Ceil", ["q"], ["c"]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("Cast", ["r"], ["M"], to=I64),
             helper.make_node("Loop", ["M", "", "start"], ["last", "ys"], body=body),
             helper.make_node("Add", ["ys", "x"], ["y"])]
    model = _model(nodes, [_vi("x", F, [3])], [_vi("y", F, [3])], 17, inits)
    check_against_ort(model, [{"x": np.array([0.5, -1.0, 2.0], np.float32)}])


def test_branch_reading_a_refused_value_is_not_a_second_problem():
    """A branch that reads (by name) the output of a refused node is skipped like any consumer:
    the refused node is the only problem, not also "input ... is not defined" in the If."""
    then_g = _branch("then", [helper.make_node("Neg", ["u"], ["t"])], "t")
    else_g = _branch("else", [helper.make_node("Identity", ["x"], ["e"])], "e")
    inits = [helper.make_tensor("c", B, [], [True])]
    model = _model([helper.make_node("StringNormalizer", ["x"], ["u"]),
                    helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g)],
                   [_vi("x", F, [2])], [_vi("y", F, [2])], 17, inits)
    with pytest.raises(UnsupportedModelError) as info:
        import_onnx(model)
    assert [p.op_type for p in info.value.problems] == ["StringNormalizer"]


def test_branch_folds_ops_on_small_constants():
    """In a body, a node on small constants only (a Split of a constant shape, as in AffineGrid's
    body) is folded, so the shapes that depend on it stay static: Reshape to Split's pieces, then a
    Squeeze without axes (refused on dynamic dims). A folded 0-d result stays 0-d."""
    then_g = helper.make_graph(
        [helper.make_node("Split", ["k"], ["a", "b"], axis=0, num_outputs=2),
         helper.make_node("Concat", ["a", "b"], ["shape"], axis=0),
         helper.make_node("Reshape", ["x", "shape"], ["r"]),
         helper.make_node("Squeeze", ["r"], ["sq"]),
         helper.make_node("ReduceSum", ["k"], ["s0"], keepdims=0),
         helper.make_node("Cast", ["s0"], ["sf"], to=F),
         helper.make_node("Add", ["sq", "sf"], ["t"])],
        "then", [], [_vi("t", F, [2])])
    else_g = _branch("else", [helper.make_node("Neg", ["x"], ["e"])], "e", [2])
    inits = [helper.make_tensor("k", I64, [2], [2, 1]), helper.make_tensor("c", B, [], [True])]
    model = _model([helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g)],
                   [_vi("x", F, [2])], [_vi("y", F, [2])], 18, inits)
    check_against_ort(model, [{"x": np.array([1.5, -2.0], np.float32)}])
