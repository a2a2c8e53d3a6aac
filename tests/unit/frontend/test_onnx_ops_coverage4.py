"""ONNX ops of the fourth operator-coverage round (issue 14), each against onnxruntime: the
quantization ops (QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, ConvInteger,
QLinearConv), the data-dependent-size ops (Compress, Unique) and ReverseSequence, MaxUnpool.
Shapes are small; each model is compiled once and run on several inputs (ties at .5 for the
rounding, values past the range for the saturation, dynamic dims at two sizes)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from minimlir.frontend.onnx_import import UnsupportedModelError, check_support, import_onnx

from test_onnx_ops_more import _model, _vi, check_against_ort

F, F16, I32, I64, U8, I8, I16, U16, B = (TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.INT32,
                                         TensorProto.INT64, TensorProto.UINT8, TensorProto.INT8,
                                         TensorProto.INT16, TensorProto.UINT16, TensorProto.BOOL)

_rng = np.random.default_rng(1404)


def _unsupported(model: onnx.ModelProto, match: str) -> None:
    with pytest.raises(UnsupportedModelError, match=match):
        import_onnx(model)


def _ints(dtype, *shape):
    info = np.iinfo(dtype)
    return _rng.integers(info.min, info.max + 1, shape).astype(dtype)


# --------------------------------------------------------------------------------------------
# QuantizeLinear / DequantizeLinear


def _ties(*shape, scale=0.5):
    """Multiples of scale/2 (exact ties after division) spanning past the uint8/int8 range."""
    return (_rng.integers(-700, 700, shape) * (scale / 2)).astype(np.float32)


def test_quantize_dequantize():
    """One opset-21 model: per-tensor QuantizeLinear -> DequantizeLinear for uint8, int8, uint16,
    int16 (x / scale lands on .5 ties: round half to even; and past the range: saturation); per
    channel along axis 1 (int8); blocked (block_size 2 along axis 1 with a last partial block,
    5 = 2 + 2 + 1, uint8 zero points) and DequantizeLinear of a given uint8 input with those
    blocked params; DequantizeLinear of int32 (no zero point) and of int8 with a float16 scale;
    a dynamic length."""
    nodes, ins, outs, inits = [], [_vi("x", F, ["n"]), _vi("x16", F, ["n"])], [], []
    for k, (elem, zp) in enumerate(((U8, 7), (I8, -3), (U16, 300), (I16, -1000))):
        src = "x" if elem in (U8, I8) else "x16"
        inits += [helper.make_tensor(f"s{k}", F, [], [0.5]), helper.make_tensor(f"z{k}", elem, [], [zp])]
        nodes += [helper.make_node("QuantizeLinear", [src, f"s{k}", f"z{k}"], [f"q{k}"]),
                  helper.make_node("DequantizeLinear", [f"q{k}", f"s{k}", f"z{k}"], [f"y{k}"])]
        outs += [_vi(f"q{k}", elem, None), _vi(f"y{k}", F, None)]
    inits += [helper.make_tensor("sa", F, [3], [0.5, 0.25, 2.0]), helper.make_tensor("za", I8, [3], [0, -5, 9])]
    nodes += [helper.make_node("QuantizeLinear", ["xa", "sa", "za"], ["qa"], axis=1),
              helper.make_node("DequantizeLinear", ["qa", "sa", "za"], ["ya"], axis=-3)]
    ins.append(_vi("xa", F, ["b", 3, 2, 2]))
    outs += [_vi("qa", I8, None), _vi("ya", F, None)]
    sb = np.array([[0.5, 1.0, 0.25], [2.0, 0.5, 1.0]], np.float32)
    zb = np.array([[1, 200, 3], [4, 5, 250]], np.uint8)
    inits += [onnx.numpy_helper.from_array(sb, "sb"), onnx.numpy_helper.from_array(zb, "zb")]
    nodes += [helper.make_node("QuantizeLinear", ["xb", "sb", "zb"], ["qb"], axis=1, block_size=2),
              helper.make_node("DequantizeLinear", ["qi", "sb", "zb"], ["yb"], axis=1, block_size=2)]
    ins += [_vi("xb", F, [2, 5]), _vi("qi", U8, [2, 5])]
    outs += [_vi("qb", U8, None), _vi("yb", F, None)]
    inits += [helper.make_tensor("s8", F, [], [0.125]), helper.make_tensor("h", F16, [], [0.5])]
    nodes += [helper.make_node("DequantizeLinear", ["i32", "s8"], ["yi"]),
              helper.make_node("DequantizeLinear", ["i8", "h"], ["yh"])]
    ins += [_vi("i32", I32, [6]), _vi("i8", I8, [6])]
    outs += [_vi("yi", F, None), _vi("yh", F16, None)]
    m = _model(nodes, ins, outs, 21, inits)
    feeds = [{"x": (_rng.integers(-700, 700, n) * 0.25).astype(np.float32),
              "x16": (_rng.integers(-140000, 140000, n) * 0.25).astype(np.float32),
              "xa": _ties(b, 3, 2, 2), "xb": _ties(2, 5), "qi": _ints(np.uint8, 2, 5),
              "i32": _rng.integers(-(2 ** 20), 2 ** 20, 6).astype(np.int32), "i8": _ints(np.int8, 6)}
             for n, b in ((5, 1), (40, 2))]
    check_against_ort(m, feeds, graph_ops=("graph.round", "graph.clip", "graph.gather"))


def test_quantize_refusals():
    """A scale that fits no form; float8 / int4 output types: clear reasons, no traceback."""
    inits = [helper.make_tensor("s", F, [2], [0.5, 1.0])]
    node = helper.make_node("QuantizeLinear", ["x", "s"], ["q"], axis=1)
    _unsupported(_model([node], [_vi("x", F, [2, 3])], [_vi("q", U8, None)], 13, inits),
                 "y_scale has shape \\[2\\]: it must be a scalar or 1-D with one value per slice along axis 1")
    node = helper.make_node("QuantizeLinear", ["x", "s1"], ["q"], output_dtype=TensorProto.FLOAT8E4M3FN)
    m = _model([node], [_vi("x", F, [3])], [_vi("q", TensorProto.FLOAT8E4M3FN, None)], 21,
               [helper.make_tensor("s1", F, [], [0.5])])
    problems = [p for p in check_support(m) if p[3]]
    assert problems and "dtype float8e4m3fn (8-, 6- and 4-bit floats" in problems[0][3]


def test_dynamic_quantize_linear():
    """The ONNX formula (zero point rounded half to even from -x_min / scale); an all-zero input
    gives scale 1 as onnxruntime; dynamic shape."""
    node = helper.make_node("DynamicQuantizeLinear", ["x"], ["y", "s", "z"])
    m = _model([node], [_vi("x", F, ["n", 3])], [_vi("y", U8, None), _vi("s", F, None), _vi("z", U8, None)], 11)
    feeds = [{"x": _rng.standard_normal((2, 3)).astype(np.float32) * 3},
             {"x": np.abs(_rng.standard_normal((4, 3))).astype(np.float32)},
             {"x": -np.abs(_rng.standard_normal((1, 3))).astype(np.float32)},
             {"x": np.zeros((2, 3), np.float32)}]
    check_against_ort(m, feeds, graph_ops=("graph.reduce_min", "graph.round"))


# --------------------------------------------------------------------------------------------
# ConvInteger / QLinearConv


def _conv_integer_model(wz_len):
    node = helper.make_node("ConvInteger", ["x", "w", "xz", "wz"], ["y"], pads=[1, 0, 1, 1], strides=[1, 2])
    wz = [0, 17, 255][:wz_len] if wz_len > 1 else [201]
    inits = [helper.make_tensor("xz", U8, [], [131]), helper.make_tensor("wz", U8, [wz_len] if wz_len > 1 else [], wz)]
    return _model([node], [_vi("x", U8, ["n", 2, 5, 5]), _vi("w", U8, [3, 2, 3, 2])], [_vi("y", I32, None)], 10, inits)


def test_conv_integer_per_channel_zero_point():
    """A per-output-channel w zero point (onnxruntime refuses it): against an int64 numpy conv."""
    from minimlir.frontend.api import compile as mini_compile

    x, w = _ints(np.uint8, 2, 2, 5, 5), _ints(np.uint8, 3, 2, 3, 2)
    (y,) = mini_compile(_conv_integer_model(3), cache=False)(x, w)
    xc = np.pad(x.astype(np.int64) - 131, [(0, 0), (0, 0), (1, 1), (0, 1)])
    wc = w.astype(np.int64) - np.array([0, 17, 255]).reshape(3, 1, 1, 1)
    ref = np.zeros((2, 3, 5, 3), np.int64)
    for i in range(5):
        for j in range(3):
            ref[:, :, i, j] = np.einsum("nchw,ochw->no", xc[:, :, i:i + 3, 2 * j:2 * j + 2], wc)
    assert y.dtype == np.int32
    np.testing.assert_array_equal(y, ref)


def test_qlinear_conv_saturates_like_onnxruntime(elem=I8, dtype=np.int8):
    """Full-range 8-bit inputs, per-channel w scale / zero point, an int32 bias, group 2:
    many outputs saturate."""
    node = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"], ["y"],
                            group=2, pads=[1, 1, 1, 1])
    inits = [helper.make_tensor("xs", F, [], [0.05]), helper.make_tensor("xz", elem, [], [3]),
             helper.make_tensor("ws", F, [4], [0.01, 0.02, 0.005, 0.03]),
             helper.make_tensor("wz", elem, [4], [0, 0, 0, 0]),
             helper.make_tensor("ys", F, [], [0.4]), helper.make_tensor("yz", elem, [], [-7 if dtype == np.int8 else 9]),
             helper.make_tensor("b", I32, [4], [100, -2000, 0, 5000])]
    m = _model([node], [_vi("x", elem, [1, 4, 4, 4]), _vi("w", elem, [4, 2, 3, 3])], [_vi("y", elem, None)], 10, inits)
    check_against_ort(m, [{"x": _ints(dtype, 1, 4, 4, 4), "w": _ints(dtype, 4, 2, 3, 3)}])


def test_conv_integer_refusals():
    node = helper.make_node("ConvInteger", ["x", "w", "xz"], ["y"])
    inits = [helper.make_tensor("xz", U8, [2], [1, 2])]
    _unsupported(_model([node], [_vi("x", U8, [1, 2, 3, 3]), _vi("w", U8, [1, 2, 2, 2])], [_vi("y", I32, None)],
                        10, inits), "x's zero point has shape \\[2\\]: it must be a scalar")


# --------------------------------------------------------------------------------------------
# Compress / Unique: result sizes known only at run time


def test_compress():
    """With and without axis, a condition shorter (and, axis 2, longer) than the axis; all-false
    gives an empty result; the input's first dim and the condition lengths are dynamic: one
    compile serves every count."""
    variants = [(1, 3), (None, 7), (-3, 2), (2, 5)]
    nodes = [helper.make_node("Compress", ["x", f"c{k}"], [f"y{k}"], **({} if a is None else {"axis": a}))
             for k, (a, _) in enumerate(variants)]
    m = _model(nodes, [_vi("x", F, ["n", 4, 3])] + [_vi(f"c{k}", B, [f"l{k}"]) for k in range(4)],
               [_vi(f"y{k}", F, None) for k in range(4)], 11)
    x = _rng.standard_normal((2, 4, 3)).astype(np.float32)
    feeds = []
    for pick in (lambda n: _rng.random(n) < 0.5, lambda n: np.zeros(n, bool), lambda n: np.ones(n, bool)):
        conds = [pick(n) for _, n in variants]
        conds[3][3:] = False  # past the axis: onnxruntime refuses a true entry there
        feeds.append({"x": x, **{f"c{k}": c for k, c in enumerate(conds)}})
    feeds.append({"x": x[:1], **{f"c{k}": feeds[0][f"c{k}"][:1] for k in range(4)}})
    check_against_ort(m, feeds, graph_ops=("graph.nonzero",))


def test_unique():
    """Sorted and not, with and without axis (slices compared lexicographically), all four
    outputs; repeated values so that counts / inverse_indices / first indices matter; float
    with -0.0 == 0.0; a dynamic dim at several sizes."""
    variants = [({}, ["n"]), ({"sorted": 0}, ["n"]), ({"axis": 1}, [2, "n", 2]), ({"axis": -1, "sorted": 0}, ["n", 4])]
    nodes, outs = [], []
    for k, (attrs, _) in enumerate(variants):
        names = [f"{o}{k}" for o in ("y", "idx", "inv", "cnt")]
        nodes.append(helper.make_node("Unique", [f"x{k}"], names, **attrs))
        outs += [_vi(o, I64, None) for o in names]
    nodes.append(helper.make_node("Unique", ["f"], ["yf"]))
    m = _model(nodes, [_vi(f"x{k}", I64, shape) for k, (_, shape) in enumerate(variants)] + [_vi("f", F, [3, 3])],
               outs + [_vi("yf", F, None)], 11)
    f = np.array([[2.5, -1.0, 2.5], [0.0, -0.0, 7.0], [-1.0, 3.0, 0.5]], np.float32)
    feeds = [{**{f"x{k}": _rng.integers(0, hi, [size if d == "n" else d for d in shape]).astype(np.int64)
                 for k, (_, shape) in enumerate(variants)}, "f": f}
             for hi, size in ((2, 7), (3, 5), (50, 6), (3, 1))]
    check_against_ort(m, feeds, graph_ops=("graph.nonzero",))


# --------------------------------------------------------------------------------------------
# NonMaxSuppression


def _nms_model():
    """Two NonMaxSuppression nodes on the same boxes: corners (center_point_box 0, a score
    threshold) and centers (1, no score threshold)."""
    nodes = [helper.make_node("NonMaxSuppression", ["boxes", "scores", "m", "iou", "st"], ["sel0"], center_point_box=0),
             helper.make_node("NonMaxSuppression", ["boxes", "scores", "m", "iou"], ["sel1"], center_point_box=1)]
    inits = [helper.make_tensor("m", I64, [1], [3]), helper.make_tensor("iou", F, [1], [0.3]),
             helper.make_tensor("st", F, [1], [0.2])]
    return _model(nodes, [_vi("boxes", F, ["b", 12, 4]), _vi("scores", F, ["b", 2, 12])],
                  [_vi("sel0", I64, None), _vi("sel1", I64, None)], 11, inits)


def _boxes(b):
    """[y1, x1, y2, x2] with some corners flipped; read as [xc, yc, w, h] the sizes are positive."""
    xy = _rng.random((b, 12, 2)).astype(np.float32) * 4
    wh = 0.5 + _rng.random((b, 12, 2)).astype(np.float32) * 2
    other = np.where(_rng.random((b, 12, 2)) < 0.3, xy - wh, xy + wh)
    return np.concatenate([xy, np.abs(other)], 2).astype(np.float32)


def test_non_max_suppression():
    """Random overlapping boxes, two classes, repeated scores (ties: the lower box first), the
    per-class limit, a dynamic batch."""
    feeds = []
    for b in (1, 2):
        scores = _rng.integers(0, 6, (b, 2, 12)).astype(np.float32) / 5
        feeds.append({"boxes": _boxes(b), "scores": scores})
    check_against_ort(_nms_model(), feeds, graph_ops=("graph.nms_select", "graph.nonzero"))


def test_non_max_suppression_illegal_center_point_box():
    node = helper.make_node("NonMaxSuppression", ["boxes", "scores"], ["sel"], center_point_box=2)
    m = _model([node], [_vi("boxes", F, [1, 3, 4]), _vi("scores", F, [1, 1, 3])], [_vi("sel", I64, None)], 11)
    _unsupported(m, "center_point_box must be 0 or 1, got 2")


# --------------------------------------------------------------------------------------------
# ReverseSequence / MaxUnpool / TensorScatter


def test_reverse_sequence():
    """Both axis orders; lengths 0..T (0 and 1 leave the sequence as it is); a trailing dim."""
    nodes = [helper.make_node("ReverseSequence", ["a", "l"], ["ya"], batch_axis=1, time_axis=0),
             helper.make_node("ReverseSequence", ["b", "l"], ["yb"], batch_axis=0, time_axis=1)]
    m = _model(nodes, [_vi("a", F, [4, 5, 2]), _vi("b", F, [5, 4, 2]), _vi("l", I64, [5])],
               [_vi("ya", F, None), _vi("yb", F, None)], 10)
    feeds = [{"a": _rng.standard_normal((4, 5, 2)).astype(np.float32), "b": _rng.standard_normal((5, 4, 2)).astype(np.float32),
              "l": np.array([0, 1, 4, 2, 3], np.int64)}]
    check_against_ort(m, feeds, graph_ops=("graph.gather_elements",))


def test_max_unpool():
    """MaxPool's Indices into MaxUnpool (a dynamic batch; against onnxruntime), and output_shape
    larger than the unpooled size: zero-padded at the end as onnx's reference does (onnxruntime
    reads the indices as into the output_shape tensor instead: against the reference)."""
    from onnx.reference import ReferenceEvaluator

    from minimlir.frontend.api import compile as mini_compile

    nodes = [helper.make_node("MaxPool", ["a"], ["p", "i"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("MaxUnpool", ["p", "i"], ["y"], kernel_shape=[2, 2], strides=[2, 2])]
    m = _model(nodes, [_vi("a", F, ["n", 3, 4, 4])], [_vi("y", F, None)], 11)
    check_against_ort(m, [{"a": _rng.standard_normal((b, 3, 4, 4)).astype(np.float32)} for b in (1, 2)],
                      graph_ops=("graph.scatter_elements",))
    node = helper.make_node("MaxUnpool", ["x", "i", "shape"], ["y"], kernel_shape=[2, 2], strides=[2, 2])
    inits = [helper.make_tensor("shape", I64, [4], [1, 2, 5, 6])]
    m = _model([node], [_vi("x", F, [1, 2, 2, 2]), _vi("i", I64, [1, 2, 2, 2])], [_vi("y", F, None)], 11, inits)
    x = _rng.standard_normal((1, 2, 2, 2)).astype(np.float32)
    i = np.array([[[[0, 3], [9, 14]], [[17, 18], [24, 31]]]], np.int64)
    (y,) = mini_compile(m, cache=False)(x, i)
    (ref,) = ReferenceEvaluator(m).run(None, {"x": x, "i": i})
    assert y.shape == (1, 2, 5, 6)
    np.testing.assert_array_equal(y, ref)


def test_tensor_scatter():
    """Per-batch write positions, linear and circular (wrapping past the end of the cache)."""
    nodes = [helper.make_node("TensorScatter", ["past", "upd", "w"], ["lin"], mode="linear"),
             helper.make_node("TensorScatter", ["past", "upd", "wc"], ["circ"], mode="circular")]
    m = _model(nodes, [_vi("past", F, [3, 2, 6, 4]), _vi("upd", F, [3, 2, 3, 4]), _vi("w", I64, [3]),
                       _vi("wc", I64, [3])], [_vi("lin", F, None), _vi("circ", F, None)], 24)
    feeds = [{"past": _rng.standard_normal((3, 2, 6, 4)).astype(np.float32),
              "upd": _rng.standard_normal((3, 2, 3, 4)).astype(np.float32),
              "w": np.array([0, 3, 2], np.int64), "wc": np.array([0, 3, 5], np.int64)}]
    check_against_ort(m, feeds)


# --------------------------------------------------------------------------------------------
# BitCast (opset 26: onnxruntime's opset is older, so against numpy's view)


def test_bitcast_same_width():
    """f32 -> i32, u16 -> f16, i64 -> f64, bool -> u8, one model; the bits are kept (NaN
    payloads too); a dynamic dim."""
    from minimlir.frontend.api import compile as mini_compile
    from minimlir.frontend.onnx_import import _NP_TO_ONNX

    pairs = [(np.float32, np.int32), (np.uint16, np.float16), (np.int64, np.float64), (np.bool_, np.uint8)]
    onnx_t = [(_NP_TO_ONNX[np.dtype(a)], _NP_TO_ONNX[np.dtype(b)]) for a, b in pairs]
    nodes = [helper.make_node("BitCast", [f"x{k}"], [f"y{k}"], to=b) for k, (_, b) in enumerate(onnx_t)]
    m = _model(nodes, [_vi(f"x{k}", a, ["n", 3]) for k, (a, _) in enumerate(onnx_t)],
               [_vi(f"y{k}", b, None) for k, (_, b) in enumerate(onnx_t)], 26)
    m.ir_version = 13
    f = mini_compile(m, cache=False)
    for n in (1, 4):
        xs = [(_rng.random((n, 3)) < 0.5) if a == np.bool_ else
              _ints(np.uint8, n, 3 * np.dtype(a).itemsize).view(a) for a, _ in pairs]
        ys = f(*xs)
        for x, y, (_, b) in zip(xs, ys, pairs):
            assert y.dtype == b and y.shape == x.shape
            np.testing.assert_array_equal(y.view(np.uint8), x.view(np.uint8))


def test_bitcast_refusals():
    for to, match in ((TensorProto.INT16, "different widths"), (TensorProto.BOOL, "to bool")):
        node = helper.make_node("BitCast", ["x"], ["y"], to=to)
        m = _model([node], [_vi("x", F if to != TensorProto.BOOL else U8, [3])], [_vi("y", to, None)], 26)
        _unsupported(m, match)


# --------------------------------------------------------------------------------------------
# Det


def test_det_batched():
    """Random 3x3 matrices, one needing a row swap (a zero first pivot), one singular, one with a
    zero column; batch dims [b, 2] with b dynamic."""
    node = helper.make_node("Det", ["x"], ["y"])
    m = _model([node], [_vi("x", F, ["b", 2, 3, 3])], [_vi("y", F, None)], 11)
    x = _rng.standard_normal((3, 2, 3, 3)).astype(np.float32)
    x[0, 1, 0, 0] = 0
    x[1, 0, 2] = x[1, 0, 0] + x[1, 0, 1]  # singular
    x[2, 1, :, 2] = 0
    check_against_ort(m, [{"x": x}, {"x": x[:1]}], rtol=1e-4, atol=1e-5)


# --------------------------------------------------------------------------------------------
# RoiAlign


def test_roi_align_modes():
    """half_pixel + avg and output_half_pixel + max on one model, spatial_scale 0.5, rois partly
    outside the image and smaller than a pixel; the number of rois is dynamic."""
    common = dict(output_height=3, output_width=2, sampling_ratio=2, spatial_scale=0.5)
    nodes = [helper.make_node("RoiAlign", ["x", "rois", "b"], ["avg"], coordinate_transformation_mode="half_pixel",
                              **common),
             helper.make_node("RoiAlign", ["x", "rois", "b"], ["max"], coordinate_transformation_mode="output_half_pixel",
                              mode="max", **common)]
    m = _model(nodes, [_vi("x", F, [2, 3, 6, 7]), _vi("rois", F, ["r", 4]), _vi("b", I64, ["r"])],
               [_vi("avg", F, None), _vi("max", F, None)], 16)
    x = _rng.standard_normal((2, 3, 6, 7)).astype(np.float32)
    rois = np.array([[0, 0, 13, 11], [-4, 2, 6, 15], [3.3, 4.1, 3.6, 4.2], [8, 1, 20, 9]], np.float32)
    b = np.array([0, 1, 1, 0], np.int64)
    check_against_ort(m, [{"x": x, "rois": rois, "b": b}, {"x": x, "rois": rois[1:2], "b": b[1:2]}],
                      rtol=1e-5, atol=1e-6)


def test_roi_align_adaptive_sampling_is_refused():
    node = helper.make_node("RoiAlign", ["x", "rois", "b"], ["y"])
    m = _model([node], [_vi("x", F, [1, 1, 4, 4]), _vi("rois", F, [1, 4]), _vi("b", I64, [1])], [_vi("y", F, None)], 16)
    _unsupported(m, "sampling_ratio 0 \\(adaptive")


# --------------------------------------------------------------------------------------------
# DeformConv


def test_deform_conv():
    """group 2, offset_group 2, mask and bias, stride 2, dilation 2, pads, offsets large enough to
    leave the image (those taps count 0); a dynamic batch."""
    node = helper.make_node("DeformConv", ["x", "w", "off", "b", "mask"], ["y"], group=2, offset_group=2,
                            strides=[2, 1], dilations=[1, 2], pads=[1, 0, 1, 2], kernel_shape=[2, 2])
    # out: h = (5 + 2 - 2) // 2 + 1 = 3, w = (6 + 2 - 3) // 1 + 1 = 6
    m = _model([node], [_vi("x", F, ["n", 4, 5, 6]), _vi("w", F, [6, 2, 2, 2]), _vi("off", F, ["n", 16, 3, 6]),
                        _vi("b", F, [6]), _vi("mask", F, ["n", 8, 3, 6])], [_vi("y", F, None)], 19)
    feeds = []
    for nb in (1, 2):
        feeds.append({"x": _rng.standard_normal((nb, 4, 5, 6)).astype(np.float32),
                      "w": _rng.standard_normal((6, 2, 2, 2)).astype(np.float32),
                      "off": (_rng.standard_normal((nb, 16, 3, 6)) * 1.5).astype(np.float32),
                      "b": _rng.standard_normal(6).astype(np.float32),
                      "mask": _rng.random((nb, 8, 3, 6)).astype(np.float32)})
    check_against_ort(m, feeds, graph_ops=("graph.matmul", "graph.gather"), rtol=1e-5, atol=1e-5)


def test_not_implemented_lists_name_no_imported_op():
    """An op with an emitter is not listed as unsupported (`--check` / `--ops` would lie)."""
    from minimlir.frontend._onnx_ops import OP_TABLE
    from minimlir.frontend._onnx_unsupported import CATEGORIES

    listed = {op for _, ops in CATEGORIES.values() for op in ops}
    assert not listed & OP_TABLE.keys()
