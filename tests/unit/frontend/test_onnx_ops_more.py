"""ONNX ops of the operator-coverage work (issue 14), each against onnxruntime: compiled once with
the default pipeline (scheduled: parallel loops and vectors where legal), run at two sizes of its
dynamic dims, in the opset versions the onnx node tests exercise. The node cases themselves run
in test_conformance_sample.py (one per op) and in `benchmarks/conformance.py`."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from minimlir.frontend import compile as mini_compile
from minimlir.frontend.onnx_import import import_onnx

F, D, H = TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16
I64, I32, B = TensorProto.INT64, TensorProto.INT32, TensorProto.BOOL


def _model(nodes, inputs, outputs, opset, inits=()) -> onnx.ModelProto:
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def _vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def check_against_ort(model: onnx.ModelProto, feeds_list, graph_ops=(), rtol=1e-6, atol=0.0):
    """Compile once; every feed dict matches onnxruntime (dtype, shape, values)."""
    module, _ = import_onnx(model)
    names = {op.name for op in module.walk()}
    for name in graph_ops:
        assert name in names, f"{name} not in the imported module"
    compiled = mini_compile(model, cache=False)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for feeds in feeds_list:
        refs = sess.run(None, feeds)
        outs = compiled(*feeds.values())
        outs = list(outs) if isinstance(outs, list | tuple) else [outs]
        assert len(outs) == len(refs)
        for out, ref in zip(outs, refs):
            out = np.asarray(out)
            assert out.shape == ref.shape and out.dtype == ref.dtype, (out.shape, ref.shape, out.dtype, ref.dtype)
            if ref.dtype.kind in "biu":
                np.testing.assert_array_equal(out, ref)
            else:
                np.testing.assert_allclose(out, ref, rtol=rtol, atol=atol)


_rng = np.random.default_rng(14)


def _f32(*shape):
    return _rng.standard_normal(shape).astype(np.float32)


# --------------------------------------------------------------------------------------------
# GreaterOrEqual / LessOrEqual


@pytest.mark.parametrize("opset", [12, 16])
@pytest.mark.parametrize("op,graph_op", [("GreaterOrEqual", "graph.ge"), ("LessOrEqual", "graph.le")])
def test_greater_less_or_equal_broadcast_dynamic(op, graph_op, opset):
    m = _model([helper.make_node(op, ["a", "b"], ["y"])],
               [_vi("a", F, ["n", 4]), _vi("b", F, [4])], [_vi("y", B, ["n", 4])], opset)
    b = np.array([0.0, -1.0, 1.0, 0.5], np.float32)
    feeds = []
    for n in (1, 6):
        a = np.round(_f32(n, 4) * 2) / 2  # many exact ties with b
        feeds.append({"a": a, "b": b})
    check_against_ort(m, feeds, [graph_op])


@pytest.mark.parametrize("elem,dtype", [(I64, np.int64), (I32, np.int32)])
def test_greater_or_equal_integers(elem, dtype):
    m = _model([helper.make_node("GreaterOrEqual", ["a", "b"], ["y"])],
               [_vi("a", elem, ["n"]), _vi("b", elem, ["n"])], [_vi("y", B, ["n"])], 16)
    feeds = [{"a": np.array(a, dtype), "b": np.array(b, dtype)} for a, b in
             (([-3, 0, 5], [-3, 1, 4]), ([7] * 9, list(range(9))))]
    check_against_ort(m, feeds)


# --------------------------------------------------------------------------------------------
# IsNaN / IsInf


_SPECIAL = np.array([0.0, -0.0, 1.5, np.nan, np.inf, -np.inf, -2.0, np.nan, 3.4e38, -np.inf, 1e-45], np.float32)


@pytest.mark.parametrize("opset", [9, 13, 20])
@pytest.mark.parametrize("elem,dtype", [(F, np.float32), (H, np.float16), (D, np.float64)])
def test_isnan(opset, elem, dtype):
    if opset < 13 and elem == H:
        pytest.skip("onnxruntime registers float16 IsNaN from opset 13")
    m = _model([helper.make_node("IsNaN", ["x"], ["y"])], [_vi("x", elem, ["n"])], [_vi("y", B, ["n"])], opset)
    check_against_ort(m, [{"x": _SPECIAL.astype(dtype)}, {"x": _SPECIAL[:4].astype(dtype)}], ["graph.not"])


@pytest.mark.parametrize("opset", [10, 20])
@pytest.mark.parametrize("pos,neg", [(1, 1), (1, 0), (0, 1), (0, 0)])
def test_isinf(opset, pos, neg):
    m = _model([helper.make_node("IsInf", ["x"], ["y"], detect_positive=pos, detect_negative=neg)],
               [_vi("x", F, ["a", "b"])], [_vi("y", B, ["a", "b"])], opset)
    x = _SPECIAL[:10].reshape(2, 5)
    check_against_ort(m, [{"x": x}, {"x": np.tile(x, (3, 2))}])


# --------------------------------------------------------------------------------------------
# GatherElements


@pytest.mark.parametrize("opset", [11, 13])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_gather_elements_dynamic_with_negative_indices(opset, axis):
    m = _model([helper.make_node("GatherElements", ["x", "i"], ["y"], axis=axis)],
               [_vi("x", F, ["n", "m"]), _vi("i", I64, ["p", "q"])], [_vi("y", F, ["p", "q"])], opset)
    feeds = []
    for n, mm, p, q in ((3, 4, 2, 3), (5, 7, 5, 2)):
        x = _f32(n, mm)
        size = (n, mm)[axis]
        i = _rng.integers(-size, size, (p, q)).astype(np.int64)
        feeds.append({"x": x, "i": i})
    check_against_ort(m, feeds, ["graph.gather_elements"])


def test_gather_elements_int32_indices_3d_int_data():
    m = _model([helper.make_node("GatherElements", ["x", "i"], ["y"], axis=1)],
               [_vi("x", I64, ["b", 5, 3]), _vi("i", I32, ["b", 2, 3])], [_vi("y", I64, ["b", 2, 3])], 13)
    feeds = [{"x": _rng.integers(-100, 100, (b, 5, 3)), "i": _rng.integers(-5, 5, (b, 2, 3)).astype(np.int32)}
             for b in (1, 4)]
    check_against_ort(m, feeds)


# --------------------------------------------------------------------------------------------
# GatherND


@pytest.mark.parametrize("opset", [11, 12, 13])
def test_gather_nd_dynamic(opset):
    m = _model([helper.make_node("GatherND", ["x", "i"], ["y"])],
               [_vi("x", F, ["n", "m", 3]), _vi("i", I64, ["k", 2])], [_vi("y", F, ["k", 3])], opset)
    feeds = []
    for n, mm, k in ((2, 3, 4), (6, 5, 1)):
        i = np.stack([_rng.integers(-n, n, k), _rng.integers(-mm, mm, k)], -1).astype(np.int64)
        feeds.append({"x": _f32(n, mm, 3), "i": i})
    check_against_ort(m, feeds, ["graph.gather_nd"])


@pytest.mark.parametrize("opset", [12, 13])
def test_gather_nd_batch_dims(opset):
    """batch_dims=1 with a dynamic batch: the pattern of picking one token per sequence."""
    m = _model([helper.make_node("GatherND", ["x", "i"], ["y"], batch_dims=1)],
               [_vi("x", F, ["b", "s", 4]), _vi("i", I64, ["b", 1])], [_vi("y", F, ["b", 4])], opset)
    feeds = []
    for b, s in ((2, 5), (3, 9)):
        feeds.append({"x": _f32(b, s, 4), "i": _rng.integers(-s, s, (b, 1)).astype(np.int64)})
    check_against_ort(m, feeds)


def test_gather_nd_full_depth_int32_data():
    m = _model([helper.make_node("GatherND", ["x", "i"], ["y"])],
               [_vi("x", I32, [3, 4]), _vi("i", I64, ["a", "b", 2])], [_vi("y", I32, ["a", "b"])], 13)
    feeds = [{"x": np.arange(12, dtype=np.int32).reshape(3, 4),
              "i": np.stack([_rng.integers(0, 3, (a, b)), _rng.integers(-4, 4, (a, b))], -1).astype(np.int64)}
             for a, b in ((1, 1), (3, 5))]
    check_against_ort(m, feeds)


# --------------------------------------------------------------------------------------------
# CumSum


@pytest.mark.parametrize("opset,exclusive,reverse,axis", [
    (14, 0, 0, 1), (14, 1, 0, 1), (14, 0, 1, 1), (14, 1, 1, -1), (14, 0, 0, 0), (14, 1, 1, 0), (11, 1, 0, -2)])
def test_cumsum_dynamic(opset, exclusive, reverse, axis):
    m = _model([helper.make_node("CumSum", ["x", "axis"], ["y"], exclusive=exclusive, reverse=reverse)],
               [_vi("x", F, ["n", "m"])], [_vi("y", F, ["n", "m"])], opset,
               inits=[helper.make_tensor("axis", I64, [], [axis])])
    # 64-wide lines: wide enough that the default schedule would vectorize a wrong (parallel) scan
    check_against_ort(m, [{"x": _f32(3, 64)}, {"x": _f32(70, 5)}], ["graph.cumsum"], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("elem,dtype", [(I64, np.int64), (I32, np.int32), (D, np.float64)])
def test_cumsum_types_and_empty_axis(elem, dtype):
    m = _model([helper.make_node("CumSum", ["x", "axis"], ["y"], reverse=1)],
               [_vi("x", elem, [2, "n"]), _vi("axis", I32, [1])], [_vi("y", elem, [2, "n"])], 14)
    m.graph.input.pop()
    m.graph.initializer.append(helper.make_tensor("axis", I32, [1], [1]))
    feeds = [{"x": (np.arange(2 * n) - 3).reshape(2, n).astype(dtype)} for n in (1, 9, 0)]
    check_against_ort(m, feeds)


def test_cumsum_gpt2_position_ids():
    """GPT-2's dynamo export: position ids from the attention mask, cumsum(mask) * mask - 1."""
    nodes = [
        helper.make_node("Cast", ["mask"], ["m"], to=I64),
        helper.make_node("CumSum", ["m", "axis"], ["c"]),
        helper.make_node("Mul", ["c", "m"], ["cm"]),
        helper.make_node("Sub", ["cm", "one"], ["y"]),
    ]
    m = _model(nodes, [_vi("mask", F, ["b", "s"])], [_vi("y", I64, ["b", "s"])], 18,
               inits=[helper.make_tensor("axis", I64, [], [1]), helper.make_tensor("one", I64, [], [1])])
    feeds = [{"mask": (_rng.random((b, s)) > 0.3).astype(np.float32)} for b, s in ((1, 7), (3, 33))]
    check_against_ort(m, feeds)


# --------------------------------------------------------------------------------------------
# unsigned integers


_U8 = np.array([0, 1, 127, 128, 200, 255, 3, 250], np.uint8)
_U8_B = np.array([1, 255, 128, 127, 100, 2, 3, 5], np.uint8)


@pytest.mark.parametrize("op,out", [("Add", "same"), ("Sub", "same"), ("Mul", "same"), ("Div", "same"),
                                    ("Max", "same"), ("Min", "same"), ("Mod", "same"), ("Greater", B),
                                    ("Less", B), ("Equal", B), ("GreaterOrEqual", B), ("LessOrEqual", B)])
@pytest.mark.parametrize("elem,dtype", [(TensorProto.UINT8, np.uint8), (TensorProto.UINT32, np.uint32)])
def test_unsigned_binary(op, out, elem, dtype):
    """Values >= 2**(w-1) compare, divide and take max/min as unsigned (signed ops get them wrong)."""
    m = _model([helper.make_node(op, ["a", "b"], ["y"])], [_vi("a", elem, ["n"]), _vi("b", elem, ["n"])],
               [_vi("y", elem if out == "same" else out, ["n"])], 17)
    shift = 24 if dtype == np.uint32 else 0
    a, b = _U8.astype(dtype) << shift, _U8_B.astype(dtype) << shift
    b = np.maximum(b, 1)  # no division by zero
    check_against_ort(m, [{"a": a, "b": b}, {"a": np.tile(a, 5), "b": np.tile(b, 5)}])


def test_unsigned_casts_and_sign():
    m = _model([helper.make_node("Cast", ["a"], ["f"], to=F),
                helper.make_node("Cast", ["a"], ["i"], to=I64),
                helper.make_node("Cast", ["a"], ["s"], to=TensorProto.INT8),
                helper.make_node("Sign", ["a"], ["g"]),
                helper.make_node("Cast", ["x"], ["u"], to=TensorProto.UINT8),
                helper.make_node("Cast", ["x"], ["w"], to=TensorProto.UINT16)],
               [_vi("a", TensorProto.UINT8, ["n"]), _vi("x", F, ["n"])],
               [_vi("f", F, ["n"]), _vi("i", I64, ["n"]), _vi("s", TensorProto.INT8, ["n"]),
                _vi("g", TensorProto.UINT8, ["n"]), _vi("u", TensorProto.UINT8, ["n"]),
                _vi("w", TensorProto.UINT16, ["n"])], 17)
    x = np.array([0.0, 1.5, 127.0, 128.0, 200.9, 255.0, 3.0, 250.0], np.float32)
    check_against_ort(m, [{"a": _U8, "x": x}, {"a": _U8[:3], "x": x[:3]}])


def test_uint8_image_preprocessing():
    """A uint8 NCHW image -> float, normalized, then a ReduceMax over pixels (vectorized kernels)."""
    m = _model([helper.make_node("Cast", ["img"], ["f"], to=F),
                helper.make_node("Div", ["f", "scale"], ["y"]),
                helper.make_node("ReduceMax", ["img"], ["mx"], axes=[2, 3], keepdims=0)],
               [_vi("img", TensorProto.UINT8, ["n", 3, "h", "w"])],
               [_vi("y", F, ["n", 3, "h", "w"]), _vi("mx", TensorProto.UINT8, ["n", 3])], 13,
               inits=[helper.make_tensor("scale", F, [], [255.0])])
    feeds = [{"img": _rng.integers(0, 256, (n, 3, h, w)).astype(np.uint8)} for n, h, w in ((1, 4, 33), (2, 17, 8))]
    check_against_ort(m, feeds)


# --------------------------------------------------------------------------------------------
# function ops (expanded into their ONNX function body)


def test_function_ops_expand_and_match():
    """Celu (opset 12 body), RMSNormalization and Mish have no emitter: they import as their body."""
    from minimlir.frontend.onnx_import import check_support

    nodes = [helper.make_node("Celu", ["x"], ["c"], alpha=0.7),
             helper.make_node("RMSNormalization", ["c", "scale"], ["r"], axis=-1, epsilon=1e-5),
             helper.make_node("Mish", ["r"], ["y"])]
    m = _model(nodes, [_vi("x", F, ["b", "s", 8])], [_vi("y", F, ["b", "s", 8])], 23,
               inits=[helper.make_tensor("scale", F, [8], np.linspace(0.5, 1.5, 8).tolist())])
    m.ir_version = 10
    rows = check_support(m)
    assert all(r[3] is None for r in rows), rows
    check_against_ort(m, [{"x": _f32(1, 3, 8)}, {"x": _f32(2, 9, 8)}], rtol=1e-5, atol=1e-6)


def test_function_op_with_an_unsupported_body_is_not_expanded(monkeypatch):
    """A function op whose body needs an op without an emitter stays itself in the support table
    (every body op of the installed onnx imports now: the Div of Celu's body is taken out of the table here)."""
    from minimlir.frontend._onnx_ops import OP_TABLE
    from minimlir.frontend.onnx_import import check_support

    m = _model([helper.make_node("Celu", ["x"], ["y"], alpha=2.0)], [_vi("x", F, [4])], [_vi("y", F, [4])], 22)
    m.ir_version = 10
    assert all(r[3] is None for r in check_support(m))
    monkeypatch.delitem(OP_TABLE, "Div")
    rows = check_support(m)
    assert [(r[0], r[3]) for r in rows] == [("Celu", "no importer for this op")], rows


# --------------------------------------------------------------------------------------------
# trigonometric / hyperbolic, Round, Xor, bitwise ops, BitShift


@pytest.mark.parametrize("op,lo,hi", [("Sin", -7, 7), ("Cos", -7, 7), ("Tan", -1.5, 1.5), ("Asin", -1, 1),
                                      ("Acos", -1, 1), ("Atan", -9, 9), ("Sinh", -5, 5), ("Cosh", -5, 5),
                                      ("Asinh", -9, 9), ("Acosh", 1, 9), ("Atanh", -0.99, 0.99)])
def test_trig_and_hyperbolic(op, lo, hi):
    m = _model([helper.make_node(op, ["x"], ["y"])], [_vi("x", F, ["n"])], [_vi("y", F, ["n"])], 9)
    feeds = [{"x": _rng.uniform(lo, hi, n).astype(np.float32)} for n in (5, 67)]
    check_against_ort(m, feeds, [f"graph.{op.lower()}"], rtol=1e-5, atol=1e-6)


def test_round_half_to_even():
    m = _model([helper.make_node("Round", ["x"], ["y"])], [_vi("x", F, ["n"])], [_vi("y", F, ["n"])], 11)
    x = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.49999997, -3.7, 1e8 + 0.5, np.inf, -0.0], np.float32)
    check_against_ort(m, [{"x": x}, {"x": np.repeat(x, 9)}], ["graph.round"])


def test_xor_and_bitwise():
    m = _model([helper.make_node("Xor", ["p", "q"], ["x"]),
                helper.make_node("BitwiseAnd", ["a", "b"], ["band"]),
                helper.make_node("BitwiseOr", ["a", "b"], ["bor"]),
                helper.make_node("BitwiseXor", ["a", "b"], ["bxor"]),
                helper.make_node("BitwiseNot", ["a"], ["bnot"]),
                helper.make_node("BitwiseNot", ["u"], ["unot"])],
               [_vi("p", B, ["n"]), _vi("q", B, [1]), _vi("a", I32, ["n"]), _vi("b", I32, ["n"]),
                _vi("u", TensorProto.UINT8, ["n"])],
               [_vi("x", B, ["n"]), _vi("band", I32, ["n"]), _vi("bor", I32, ["n"]), _vi("bxor", I32, ["n"]),
                _vi("bnot", I32, ["n"]), _vi("unot", TensorProto.UINT8, ["n"])], 18)
    feeds = []
    for n in (3, 40):
        feeds.append({"p": _rng.random(n) > 0.5, "q": np.array([True]),
                      "a": _rng.integers(-2**31, 2**31, n).astype(np.int32),
                      "b": _rng.integers(-2**31, 2**31, n).astype(np.int32),
                      "u": _rng.integers(0, 256, n).astype(np.uint8)})
    check_against_ort(m, feeds)


@pytest.mark.parametrize("direction", ["LEFT", "RIGHT"])
@pytest.mark.parametrize("elem,dtype", [(TensorProto.UINT8, np.uint8), (TensorProto.UINT64, np.uint64)])
def test_bitshift_unsigned(direction, elem, dtype):
    m = _model([helper.make_node("BitShift", ["x", "y"], ["z"], direction=direction)],
               [_vi("x", elem, ["n"]), _vi("y", elem, ["n"])], [_vi("z", elem, ["n"])], 11)
    w = np.dtype(dtype).itemsize * 8
    feeds = []
    for n in (4, 33):
        x = _rng.integers(0, 2**(w - 1), n, dtype=np.uint64).astype(dtype) * 2 + 1
        feeds.append({"x": x, "y": _rng.integers(0, w, n).astype(dtype)})  # < width: defined in onnxruntime
    check_against_ort(m, feeds, ["graph.bitshift"])


# --------------------------------------------------------------------------------------------
# ArgMin


@pytest.mark.parametrize("keepdims,last", [(1, 0), (0, 1)])
def test_argmin_dynamic_with_ties_and_nan(keepdims, last):
    m = _model([helper.make_node("ArgMin", ["x"], ["y"], axis=1, keepdims=keepdims, select_last_index=last)],
               [_vi("x", F, ["n", "m"])], [_vi("y", I64, None)], 13)
    x1 = np.array([[3, 1, 1, 2], [0, 0, 5, -1], [7, 7, 7, 7]], np.float32)
    feeds = [{"x": x1}, {"x": np.round(_f32(5, 37))}]
    check_against_ort(m, feeds, ["graph.argmin"])


def test_argmin_uint8():
    m = _model([helper.make_node("ArgMin", ["x"], ["y"], axis=0, keepdims=0)],
               [_vi("x", TensorProto.UINT8, ["n", 3])], [_vi("y", I64, [3])], 13)
    check_against_ort(m, [{"x": np.array([[200, 3, 128], [127, 255, 0]], np.uint8)}])


@pytest.mark.parametrize("op,ref", [("Elu", lambda x: np.where(x > 0, x, np.expm1(x))), ("Tan", np.tan),
                                    ("Atan", np.arctan), ("Sinh", np.sinh)])
def test_float16_libm_functions(op, ref):
    """libm has no f16 functions: f16 values are extended to f32 for the call, truncated back
    (scalar and vectorized lanes). Used to fail: "no libm function 'expm1' for type f16"."""
    m = _model([helper.make_node(op, ["x"], ["y"])], [_vi("x", H, ["n"])], [_vi("y", H, ["n"])], 13)
    compiled = mini_compile(m, cache=False)
    for n in (3, 37):
        x = np.linspace(-1.2, 1.2, n).astype(np.float16)
        out = np.asarray(compiled(x)).reshape(-1)
        assert out.dtype == np.float16
        np.testing.assert_array_equal(out, ref(x.astype(np.float32)).astype(np.float16))
