"""ONNX ops of the second operator-coverage round (issue 14), each against onnxruntime (or, for the
OnnxBackend specialization, the numpy formula): Resize, ConvTranspose, Einsum, TopK, ScatterND,
ScatterElements, OneHot, EyeLike, Hardmax, ReduceProd, InstanceNormalization, ... Each family has
an opset/attribute variant and an error case for illegal attributes."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from minimlir.frontend.onnx_backend import OnnxBackend
from minimlir.frontend.onnx_import import UnsupportedModelError, import_onnx

from test_onnx_ops_more import _model, _vi, check_against_ort

F, I64, I32, B, U8 = TensorProto.FLOAT, TensorProto.INT64, TensorProto.INT32, TensorProto.BOOL, TensorProto.UINT8

_rng = np.random.default_rng(1402)


def _f32(*shape):
    return _rng.standard_normal(shape).astype(np.float32)


def _unsupported(model: onnx.ModelProto, match: str) -> None:
    with pytest.raises(UnsupportedModelError, match=match):
        import_onnx(model)


def test_resize_of_a_dynamic_dim_is_unsupported():
    m = _resize_model(13, {"mode": "nearest"}, ["n", 1, 2, 2], [1, 1, 4, 4], sizes=[1, 1, 4, 4])
    _unsupported(m, "Resize of a dynamic dim")


# --------------------------------------------------------------------------------------------
# OnnxBackend: a run-time `axes` input that reaches an op inside an expanded function body


@pytest.mark.parametrize("op,fn", [("ReduceL1", lambda x, a: np.abs(x).sum(axis=a, keepdims=True)),
                                   ("ReduceSumSquare", lambda x, a: (x * x).sum(axis=a, keepdims=True))])
def test_backend_specializes_axes_of_an_expanded_function(op, fn):
    m = _model([helper.make_node(op, ["x", "axes"], ["y"], keepdims=1)],
               [_vi("x", F, [3, 4, 5]), _vi("axes", I64, [1])], [_vi("y", F, None)], 18)
    rep = OnnxBackend.prepare(m)
    assert rep.specialized_on == ["axes"]
    x = _f32(3, 4, 5)
    for axis in (1, 2):
        (y,) = rep.run([x, np.array([axis], np.int64)])
        np.testing.assert_allclose(y, fn(x, axis), rtol=1e-5)


# --------------------------------------------------------------------------------------------
# Resize / Upsample


def _resize_model(opset, attrs, x_shape, out_shape, scales=None, sizes=None, roi=None, elem=F):
    inits, ins = [], ["x", "", "", ""]
    if roi is not None:
        inits.append(helper.make_tensor("roi", F, [len(roi)], roi))
        ins[1] = "roi"
    if scales is not None:
        inits.append(helper.make_tensor("scales", F, [len(scales)], scales))
        ins[2] = "scales"
    if sizes is not None:
        inits.append(helper.make_tensor("sizes", I64, [len(sizes)], sizes))
        ins[3] = "sizes"
    while ins and ins[-1] == "":
        ins.pop()
    return _model([helper.make_node("Resize", ins, ["y"], **attrs)],
                  [_vi("x", elem, x_shape)], [_vi("y", elem, out_shape)], opset, inits)


@pytest.mark.parametrize("attrs,scales,sizes", [
    ({"mode": "nearest"}, [1, 1, 2, 1.5], None),
    ({"mode": "nearest", "nearest_mode": "ceil", "coordinate_transformation_mode": "align_corners"}, None, [1, 1, 7, 3]),
    ({"mode": "linear"}, [1, 1, 0.6, 2.5], None),
    ({"mode": "linear", "coordinate_transformation_mode": "pytorch_half_pixel"}, None, [1, 1, 3, 1]),
    ({"mode": "linear", "coordinate_transformation_mode": "asymmetric"}, [1, 1, 1.7, 0.5], None),
    ({"mode": "cubic"}, [1, 1, 1.5, 0.75], None),
    ({"mode": "cubic", "cubic_coeff_a": -0.5, "exclude_outside": 1}, None, [1, 1, 9, 5]),
])
def test_resize_opset13_dynamic_batch(attrs, scales, sizes):
    """The batch dim is dynamic (not resized), one compile, two batch sizes (sizes: opset 18 with
    axes [2, 3], since sizes for every axis would resize the dynamic batch)."""
    if sizes is not None:
        attrs, sizes = {**attrs, "axes": [2, 3]}, sizes[2:]
    m = _resize_model(13 if sizes is None else 18, attrs, ["n", 1, 5, 6], ["n", 1, None, None],
                      scales=scales, sizes=sizes)
    check_against_ort(m, [{"x": _f32(1, 1, 5, 6)}, {"x": _f32(3, 1, 5, 6)}], ["graph.gather"], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("mode", ["linear", "cubic"])
def test_resize_opset18_antialias_axes(mode):
    m = _resize_model(18, {"mode": mode, "antialias": 1, "axes": [3, 2]}, [2, 3, 9, 8], [2, 3, 4, 3],
                      sizes=[3, 4])
    check_against_ort(m, [{"x": _f32(2, 3, 9, 8)}], rtol=1e-5, atol=1e-6)


def test_resize_tf_crop_and_resize_extrapolation():
    m = _resize_model(13, {"mode": "linear", "coordinate_transformation_mode": "tf_crop_and_resize",
                           "extrapolation_value": 7.0}, [1, 2, 6, 6], [1, 2, 4, 5],
                      sizes=[1, 2, 4, 5], roi=[0, 0, -0.2, 0.3, 1, 1, 0.8, 1.4])
    check_against_ort(m, [{"x": _f32(1, 2, 6, 6)}], rtol=1e-5, atol=1e-6)


def test_resize_nearest_uint8_image():
    """uint8 nearest resize is exact (a gather, no arithmetic)."""
    m = _resize_model(19, {"mode": "nearest", "coordinate_transformation_mode": "half_pixel",
                           "nearest_mode": "round_prefer_ceil"}, ["n", 3, 4, 5], ["n", 3, 6, 10],
                      scales=[1, 1, 1.5, 2], elem=U8)
    for b in (1, 2):
        x = _rng.integers(0, 256, (b, 3, 4, 5), dtype=np.uint8)
        check_against_ort(m, [{"x": x}])


@pytest.mark.parametrize("scales", [[1, 1, 2, 1.5], [1, 1, 0.6, 0.4]])
def test_resize_opset10_and_upsample(scales):
    """Resize-10 nearest: floor when upsampling, ceil when downsampling (as onnxruntime)."""
    m = _model([helper.make_node("Resize", ["x", "s"], ["y"], mode="nearest")],
               [_vi("x", F, [1, 1, 5, 7])], [_vi("y", F, None)], 10,
               [helper.make_tensor("s", F, [4], scales)])
    check_against_ort(m, [{"x": _f32(1, 1, 5, 7)}])
    m = _model([helper.make_node("Upsample", ["x", "s"], ["y"], mode="linear")],
               [_vi("x", F, [1, 1, 3, 4])], [_vi("y", F, [1, 1, 6, 8])], 9,
               [helper.make_tensor("s", F, [4], [1, 1, 2, 2])])
    check_against_ort(m, [{"x": _f32(1, 1, 3, 4)}], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("attrs,match", [
    ({"mode": "bilinear"}, "mode 'bilinear' is not a Resize mode"),
    ({"mode": "nearest", "antialias": 1}, "antialias is defined for linear and cubic"),
    ({"mode": "linear", "coordinate_transformation_mode": "centered"}, "coordinate_transformation_mode 'centered'"),
    ({"mode": "nearest", "nearest_mode": "up"}, "nearest_mode 'up'"),
])
def test_resize_illegal_attributes(attrs, match):
    _unsupported(_resize_model(19, attrs, [1, 1, 2, 2], [1, 1, 4, 4], scales=[1, 1, 2, 2]), match)


def test_resize_linear_of_integers_is_unsupported():
    _unsupported(_resize_model(19, {"mode": "linear"}, [1, 1, 2, 2], [1, 1, 4, 4], scales=[1, 1, 2, 2], elem=U8),
                 "mode 'linear' of ui8")


# --------------------------------------------------------------------------------------------
# constant folding of exact unary ops (LayerNormalization's expanded body: ConstantOfShape(Neg(axis)))


def test_layer_norm_body_shape_arithmetic_folds():
    """Reshape(y, Concat(Shape(x)[:axis], ConstantOfShape(Neg(axis)))) with axis = -1: the
    target shape has static length only if Neg of the constant folds at import."""
    nodes = [
        helper.make_node("Constant", [], ["axis"], value=helper.make_tensor("a", I64, [1], [-1])),
        helper.make_node("Constant", [], ["zero"], value=helper.make_tensor("z", I64, [1], [0])),
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Slice", ["shape", "zero", "axis"], ["prefix"]),
        helper.make_node("Neg", ["axis"], ["nred"]),
        helper.make_node("ConstantOfShape", ["nred"], ["suffix"], value=helper.make_tensor("one", I64, [1], [1])),
        helper.make_node("Concat", ["prefix", "suffix"], ["rshape"], axis=0),
        helper.make_node("ReduceMean", ["x"], ["m"], axes=[1]),
        helper.make_node("Flatten", ["m"], ["m2"], axis=1),
        helper.make_node("Reshape", ["m2", "rshape"], ["y"]),
    ]
    m = _model(nodes, [_vi("x", F, [3, 4])], [_vi("y", F, [3, 1])], 17)
    check_against_ort(m, [{"x": _f32(3, 4)}], rtol=1e-6, atol=1e-7)


# --------------------------------------------------------------------------------------------
# EyeLike, OneHot, Hardmax, InstanceNormalization, ReduceProd


@pytest.mark.parametrize("opset", [9, 22])
@pytest.mark.parametrize("attrs", [{}, {"k": 2}, {"k": -1, "dtype": TensorProto.INT32}, {"dtype": TensorProto.DOUBLE}])
def test_eye_like(opset, attrs):
    out = attrs.get("dtype", F)
    m = _model([helper.make_node("EyeLike", ["x"], ["y"], **attrs)], [_vi("x", F, [4, 6])], [_vi("y", out, [4, 6])], opset)
    check_against_ort(m, [{"x": _f32(4, 6)}])


def test_eye_like_illegal():
    _unsupported(_model([helper.make_node("EyeLike", ["x"], ["y"])], [_vi("x", F, [2, 3, 4])],
                        [_vi("y", F, [2, 3, 4])], 9), "EyeLike of a rank-3 tensor")
    _unsupported(_model([helper.make_node("EyeLike", ["x"], ["y"], dtype=TensorProto.STRING)], [_vi("x", F, [2, 3])],
                        [_vi("y", TensorProto.STRING, [2, 3])], 9), "dtype string")


@pytest.mark.parametrize("opset,axis", [(9, -1), (11, 0), (11, 1), (11, -2)])
def test_one_hot_dynamic(opset, axis):
    depth = helper.make_tensor("depth", I64, [], [5])
    m = _model([helper.make_node("OneHot", ["i", "depth", "v"], ["y"], axis=axis)],
               [_vi("i", I64, ["n", 2]), _vi("v", F, [2])], [_vi("y", F, None)], opset, [depth])
    v = np.array([-1.5, 3.0], np.float32)
    lo = -5 if opset >= 11 else 0  # negative indices count from the end from opset 11
    feeds = [{"i": _rng.integers(lo, 7, (b, 2)).astype(np.int64), "v": v} for b in (1, 4)]
    check_against_ort(m, feeds, ["graph.where"])


def test_one_hot_illegal():
    depth = helper.make_tensor("depth", I64, [], [5])
    m = _model([helper.make_node("OneHot", ["i", "depth", "v"], ["y"], axis=3)],
               [_vi("i", I64, [3]), _vi("v", F, [2])], [_vi("y", F, None)], 11, [depth])
    _unsupported(m, "OneHot: axis 3 is out of range")
    m = _model([helper.make_node("OneHot", ["i", "depth", "v"], ["y"])],
               [_vi("i", I64, [3]), _vi("v", F, [3])], [_vi("y", F, None)], 11, [depth])
    _unsupported(m, r"values must have shape \[2\]")


@pytest.mark.parametrize("opset,axis", [(11, 1), (11, 0), (11, 2), (13, -1), (13, 1), (13, 0)])
def test_hardmax(opset, axis):
    m = _model([helper.make_node("Hardmax", ["x"], ["y"], axis=axis)],
               [_vi("x", F, [3, 4, 5])], [_vi("y", F, [3, 4, 5])], opset)
    x = _f32(3, 4, 5)
    x[0, 1, :2] = 7.0  # a tie: the first maximum wins
    check_against_ort(m, [{"x": x}])


def test_hardmax_dynamic_batch():
    m = _model([helper.make_node("Hardmax", ["x"], ["y"])], [_vi("x", F, ["n", 6])], [_vi("y", F, ["n", 6])], 13)
    check_against_ort(m, [{"x": _f32(1, 6)}, {"x": _f32(5, 6)}], ["graph.argmax"])


def test_hardmax_illegal_axis():
    _unsupported(_model([helper.make_node("Hardmax", ["x"], ["y"], axis=3)], [_vi("x", F, [3, 4])],
                        [_vi("y", F, [3, 4])], 13), "Hardmax: axis 3 is out of range")


@pytest.mark.parametrize("opset", [6, 22])
def test_instance_norm_dynamic(opset):
    m = _model([helper.make_node("InstanceNormalization", ["x", "s", "b"], ["y"], epsilon=1e-3)],
               [_vi("x", F, ["n", 3, "h", 5]), _vi("s", F, [3]), _vi("b", F, [3])], [_vi("y", F, ["n", 3, "h", 5])], opset)
    s, b = _f32(3), _f32(3)
    check_against_ort(m, [{"x": _f32(1, 3, 4, 5), "s": s, "b": b}, {"x": _f32(2, 3, 7, 5), "s": s, "b": b}],
                      ["graph.reduce_mean"], rtol=1e-4, atol=1e-5)


def test_instance_norm_illegal_rank():
    _unsupported(_model([helper.make_node("InstanceNormalization", ["x", "s", "b"], ["y"])],
                        [_vi("x", F, [2, 3]), _vi("s", F, [3]), _vi("b", F, [3])], [_vi("y", F, [2, 3])], 6),
                 "rank-2 input")


@pytest.mark.parametrize("opset,keepdims,axes", [(13, 1, [1]), (13, 0, [0, 2]), (13, 1, None), (18, 0, [-1]), (18, 1, None)])
def test_reduce_prod(opset, keepdims, axes):
    nodes_in, inits, attrs = ["x"], [], {"keepdims": keepdims}
    if axes is not None and opset >= 18:
        inits.append(helper.make_tensor("axes", I64, [len(axes)], axes))
        nodes_in.append("axes")
    elif axes is not None:
        attrs["axes"] = axes
    m = _model([helper.make_node("ReduceProd", nodes_in, ["y"], **attrs)], [_vi("x", F, ["n", 4, 3])],
               [_vi("y", F, None)], opset, inits)
    check_against_ort(m, [{"x": _f32(2, 4, 3)}, {"x": _f32(3, 4, 3)}], ["graph.reduce_prod"], rtol=1e-5)


def test_reduce_prod_int64_and_empty():
    m = _model([helper.make_node("ReduceProd", ["x"], ["y"], axes=[1])], [_vi("x", I64, [3, 4])], [_vi("y", I64, [3, 1])], 13)
    check_against_ort(m, [{"x": _rng.integers(-3, 4, (3, 4)).astype(np.int64)}])
    m = _model([helper.make_node("ReduceProd", ["x"], ["y"], axes=[1])], [_vi("x", F, [3, 0])], [_vi("y", F, [3, 1])], 13)
    check_against_ort(m, [{"x": np.zeros((3, 0), np.float32)}])


def test_reduce_prod_illegal_axis():
    _unsupported(_model([helper.make_node("ReduceProd", ["x"], ["y"], axes=[2])], [_vi("x", F, [3, 4])],
                        [_vi("y", F, None)], 13), "axis")


# --------------------------------------------------------------------------------------------
# Einsum


@pytest.mark.parametrize("eq,shapes", [
    ("bij,bjk->bik", [["n", 2, 3], ["n", 3, 4]]),
    ("ij,jk", [[3, 4], [4, 5]]),                      # implicit output: ik
    ("...ij,...jk->...ik", [["n", 2, 3], [1, 3, 4]]),   # broadcast ellipsis
    ("i,j->ij", [[3], [4]]),
    ("bhqd,bhkd->bhqk", [["n", 2, 3, 4], ["n", 2, 5, 4]]),
    ("ii->i", [[4, 4]]),
    ("iij->j", [[3, 3, 2]]),
    ("ij,ij,ij->i", [[2, 3], [2, 3], [1, 3]]),
    ("abc->cba", [[2, 3, 4]]),
    ("ab,b->", [[3, 4], [4]]),
    ("bij->b", [["n", 3, 4]]),
])
@pytest.mark.parametrize("opset", [12, 13])
def test_einsum(eq, shapes, opset):
    inputs = [_vi(f"x{i}", F, s) for i, s in enumerate(shapes)]
    m = _model([helper.make_node("Einsum", [f"x{i}" for i in range(len(shapes))], ["y"], equation=eq)],
               inputs, [_vi("y", F, None)], opset)
    feeds = []
    for b in (1, 3):
        feeds.append({f"x{i}": _f32(*[b if d == "n" else d for d in s]) for i, s in enumerate(shapes)})
    if not any("n" in s for s in shapes):
        feeds = feeds[:1]
    check_against_ort(m, feeds, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("eq,match", [
    ("ij,jk->il", "output subscript 'l' is not an input subscript"),
    ("ij->", "equation 'ij->' has 1 operands, the node 2"),
    ("ijk,jk->ik", "'ijk' does not match an operand of rank 2"),
    ("ij,jk->ii", "repeat a letter"),
])
def test_einsum_illegal_equation(eq, match):
    m = _model([helper.make_node("Einsum", ["a", "b"], ["y"], equation=eq)],
               [_vi("a", F, [2, 3]), _vi("b", F, [3, 4])], [_vi("y", F, None)], 12)
    _unsupported(m, match)


# --------------------------------------------------------------------------------------------
# ConvTranspose


@pytest.mark.parametrize("attrs,cin,cout,kernel", [
    ({}, 2, 3, [3, 3]),
    ({"strides": [2, 2], "pads": [1, 0, 0, 1]}, 2, 3, [3, 3]),
    ({"strides": [2, 3], "output_padding": [1, 2], "pads": [0, 1, 1, 0]}, 2, 2, [3, 2]),
    ({"strides": [2, 2], "dilations": [2, 1], "group": 2}, 4, 6, [2, 3]),
    ({"strides": [2, 2], "auto_pad": "SAME_LOWER"}, 2, 3, [3, 3]),
    ({"strides": [2, 2], "auto_pad": "SAME_UPPER", "group": 2}, 2, 4, [4, 4]),
    ({"strides": [3, 2], "output_shape": [11, 9]}, 1, 2, [3, 3]),
    ({"auto_pad": "VALID", "strides": [1, 2]}, 3, 1, [1, 2]),
])
@pytest.mark.parametrize("opset", [11, 22])
def test_conv_transpose_constant_weight_dynamic_batch(attrs, cin, cout, kernel, opset):
    g = attrs.get("group", 1)
    w = helper.make_tensor("w", F, [cin, cout // g] + kernel, _f32(cin, cout // g, *kernel).reshape(-1))
    b = helper.make_tensor("b", F, [cout], _f32(cout))
    m = _model([helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], **attrs)],
               [_vi("x", F, ["n", cin, 4, 5])], [_vi("y", F, None)], opset, [w, b])
    check_against_ort(m, [{"x": _f32(1, cin, 4, 5)}, {"x": _f32(3, cin, 4, 5)}], ["graph.conv2d"], rtol=1e-4, atol=1e-5)


def test_conv_transpose_1d_weight_input():
    m = _model([helper.make_node("ConvTranspose", ["x", "w"], ["y"], strides=[3], pads=[1, 2], output_padding=[1])],
               [_vi("x", F, [2, 3, 6]), _vi("w", F, [3, 2, 4])], [_vi("y", F, None)], 22)
    check_against_ort(m, [{"x": _f32(2, 3, 6), "w": _f32(3, 2, 4)}], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("attrs,match", [
    ({"auto_pad": "SAME"}, "auto_pad 'SAME' is not"),
    ({"strides": [0, 1]}, r"strides must be >= 1"),
    ({"strides": [2, 2], "output_padding": [2, 0]}, "output_padding .* must be smaller than the stride"),
    ({"group": 3}, "3 input channels|2 input channels"),
])
def test_conv_transpose_illegal_attributes(attrs, match):
    m = _model([helper.make_node("ConvTranspose", ["x", "w"], ["y"], **attrs)],
               [_vi("x", F, [1, 2, 4, 4]), _vi("w", F, [2, 2, 3, 3])], [_vi("y", F, None)], 22)
    _unsupported(m, match)


def test_conv_transpose_4d_is_unsupported():
    m = _model([helper.make_node("ConvTranspose", ["x", "w"], ["y"])],
               [_vi("x", F, [1, 1, 3, 3, 3, 3]), _vi("w", F, [1, 1, 2, 2, 2, 2])], [_vi("y", F, None)], 22)
    _unsupported(m, "4-D kernel")


# --------------------------------------------------------------------------------------------
# ScatterElements / Scatter / ScatterND


@pytest.mark.parametrize("opset,reduction", [(11, None), (13, None), (16, "add"), (16, "mul"), (18, "max"), (18, "min")])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_scatter_elements_dynamic_duplicates(opset, reduction, axis):
    attrs = {"axis": axis} | ({"reduction": reduction} if reduction else {})
    m = _model([helper.make_node("ScatterElements", ["x", "i", "u"], ["y"], **attrs)],
               [_vi("x", F, ["n", 5]), _vi("i", I64, ["p", 3]), _vi("u", F, ["p", 3])], [_vi("y", F, ["n", 5])], opset)
    feeds = []
    for nrows in (2, 4):
        size = nrows if axis == 0 else 5
        p = 2
        if reduction is None:  # distinct targets (duplicates are undefined without a reduction); some negative
            if axis == 0:
                i = np.stack([_rng.permutation(size)[:p] for _ in range(3)], axis=1) - size * (np.arange(3) % 2)
            else:
                i = np.stack([_rng.permutation(size)[:3] - size * (r % 2) for r in range(p)])
        else:
            i = _rng.integers(-size, size, (p, 3))
        feeds.append({"x": _f32(nrows, 5), "i": i.astype(np.int64), "u": _f32(p, 3)})
    check_against_ort(m, feeds, ["graph.scatter_elements"], rtol=1e-6)


def test_scatter_opset9_and_int32_indices():
    m = _model([helper.make_node("Scatter", ["x", "i", "u"], ["y"], axis=1)],
               [_vi("x", F, [3, 4]), _vi("i", I32, [3, 2]), _vi("u", F, [3, 2])], [_vi("y", F, [3, 4])], 9)
    i = np.array([[0, 3], [2, 1], [3, 0]], np.int32)
    check_against_ort(m, [{"x": _f32(3, 4), "i": i, "u": _f32(3, 2)}])


@pytest.mark.parametrize("opset,reduction", [(11, None), (16, "add"), (16, "mul"), (18, "max"), (18, "min")])
def test_scatter_nd_slices_dynamic(opset, reduction):
    attrs = {"reduction": reduction} if reduction else {}
    m = _model([helper.make_node("ScatterND", ["x", "i", "u"], ["y"], **attrs)],
               [_vi("x", F, [5, "n", 3]), _vi("i", I64, [2, 1]), _vi("u", F, [2, "n", 3])], [_vi("y", F, [5, "n", 3])], opset)
    i = np.array([[3], [-1]] if reduction is None else [[3], [3]], np.int64)
    feeds = [{"x": _f32(5, n, 3), "i": i, "u": _f32(2, n, 3)} for n in (1, 4)]
    check_against_ort(m, feeds, ["graph.scatter_nd"], rtol=1e-6)


def test_scatter_nd_element_indices_int64_data():
    m = _model([helper.make_node("ScatterND", ["x", "i", "u"], ["y"], reduction="add")],
               [_vi("x", I64, [3, 4]), _vi("i", I64, [4, 2]), _vi("u", I64, [4])], [_vi("y", I64, [3, 4])], 18)
    i = np.array([[0, 1], [2, 3], [0, 1], [-1, -4]], np.int64)
    check_against_ort(m, [{"x": np.arange(12, dtype=np.int64).reshape(3, 4), "i": i, "u": np.array([5, 6, 7, 8], np.int64)}])


@pytest.mark.parametrize("op,opset,attrs,match", [
    ("ScatterElements", 16, {"reduction": "max"}, "reduction 'max' is not one of none, add, mul"),
    ("ScatterElements", 18, {"reduction": "sub"}, "reduction 'sub'"),
    ("ScatterElements", 13, {"axis": 2}, "axis 2 is out of range"),
    ("ScatterND", 13, {"reduction": "add"}, "reduction 'add' is not one of none"),
])
def test_scatter_illegal_attributes(op, opset, attrs, match):
    if op == "ScatterND":
        ins = [_vi("x", F, [4, 3]), _vi("i", I64, [2, 1]), _vi("u", F, [2, 3])]
    else:
        ins = [_vi("x", F, [4, 3]), _vi("i", I64, [2, 3]), _vi("u", F, [2, 3])]
    m = _model([helper.make_node(op, ["x", "i", "u"], ["y"], **attrs)], ins, [_vi("y", F, [4, 3])], opset)
    _unsupported(m, match)


# --------------------------------------------------------------------------------------------
# TopK


@pytest.mark.parametrize("opset,axis,largest,k", [(11, -1, 1, 3), (11, 0, 1, 2), (11, 1, 0, 4), (24, 2, 0, 1), (10, -1, 1, 6)])
def test_topk_dynamic_with_ties(opset, axis, largest, k):
    attrs = {"axis": axis} | ({"largest": largest} if opset >= 11 else {})
    kt = helper.make_tensor("k", I64, [1], [k])
    m = _model([helper.make_node("TopK", ["x", "k"], ["v", "i"], **attrs)], [_vi("x", F, [3, "n", 6])],
               [_vi("v", F, None), _vi("i", I64, None)], opset, [kt])
    feeds = []
    for nn in (4, 5):
        x = np.round(_f32(3, nn, 6) * 2) / 2  # many ties: lower index first
        feeds.append({"x": x})
    check_against_ort(m, feeds, ["graph.topk"])


@pytest.mark.parametrize("opset,elem,dtype", [(1, F, np.float32), (11, TensorProto.INT64, np.int64), (24, U8, np.uint8)])
def test_topk_attribute_k_and_integers(opset, elem, dtype):
    if opset < 10:
        node, inits = helper.make_node("TopK", ["x"], ["v", "i"], k=3), []
    else:
        node, inits = helper.make_node("TopK", ["x", "k"], ["v", "i"]), [helper.make_tensor("k", I64, [1], [3])]
    m = _model([node], [_vi("x", elem, [2, 7])], [_vi("v", elem, [2, 3]), _vi("i", I64, [2, 3])], opset, inits)
    check_against_ort(m, [{"x": _rng.integers(0, 5, (2, 7)).astype(dtype)}])


def test_topk_illegal():
    kt = helper.make_tensor("k", I64, [1], [5])
    m = _model([helper.make_node("TopK", ["x", "k"], ["v", "i"])], [_vi("x", F, [2, 4])],
               [_vi("v", F, None), _vi("i", I64, None)], 11, [kt])
    _unsupported(m, r"k 5 must be in \[0, 4\]")
    m = _model([helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=2)], [_vi("x", F, [2, 8])],
               [_vi("v", F, None), _vi("i", I64, None)], 11, [kt])
    _unsupported(m, "axis 2 is out of range")


# --------------------------------------------------------------------------------------------
# CumProd


@pytest.mark.parametrize("exclusive,reverse", [(0, 0), (1, 0), (0, 1), (1, 1)])
@pytest.mark.parametrize("axis", [0, -1])
def test_cumprod_dynamic(exclusive, reverse, axis):
    ax = helper.make_tensor("axis", I64, [], [axis])
    m = _model([helper.make_node("CumProd", ["x", "axis"], ["y"], exclusive=exclusive, reverse=reverse)],
               [_vi("x", F, ["n", 5])], [_vi("y", F, ["n", 5])], 26, [ax])
    check_against_ort(m, [{"x": _f32(1, 5)}, {"x": _f32(4, 5)}], ["graph.cumprod"], rtol=1e-5)


def test_cumprod_int32_and_illegal_axis():
    ax = helper.make_tensor("axis", I64, [], [1])
    m = _model([helper.make_node("CumProd", ["x", "axis"], ["y"], exclusive=1)], [_vi("x", I32, [2, 4])],
               [_vi("y", I32, [2, 4])], 26, [ax])
    check_against_ort(m, [{"x": _rng.integers(-3, 4, (2, 4)).astype(np.int32)}])
    bad = helper.make_tensor("axis", I64, [], [2])
    m = _model([helper.make_node("CumProd", ["x", "axis"], ["y"])], [_vi("x", F, [2, 4])], [_vi("y", F, [2, 4])], 26, [bad])
    _unsupported(m, "CumProd: axis 2 is out of range")


# --------------------------------------------------------------------------------------------
# LpPool, LpNormalization


@pytest.mark.parametrize("opset,attrs", [
    (11, {"kernel_shape": [2, 2]}),
    (11, {"kernel_shape": [3, 2], "p": 3, "strides": [2, 1], "pads": [1, 0, 1, 1]}),
    (18, {"kernel_shape": [2, 3], "p": 1, "auto_pad": "SAME_UPPER"}),
    (18, {"kernel_shape": [2, 2], "dilations": [2, 1]}),
])
def test_lp_pool_dynamic_batch(opset, attrs):
    m = _model([helper.make_node("LpPool", ["x"], ["y"], **attrs)], [_vi("x", F, ["n", 2, 5, 6])],
               [_vi("y", F, None)], opset)
    check_against_ort(m, [{"x": _f32(1, 2, 5, 6)}, {"x": _f32(3, 2, 5, 6)}], ["graph.avg_pool2d"], rtol=1e-4, atol=1e-5)


def test_lp_pool_1d_and_illegal_p():
    m = _model([helper.make_node("LpPool", ["x"], ["y"], kernel_shape=[3], strides=[2])], [_vi("x", F, [2, 3, 9])],
               [_vi("y", F, None)], 18)
    check_against_ort(m, [{"x": _f32(2, 3, 9)}], rtol=1e-4, atol=1e-5)
    m = _model([helper.make_node("LpPool", ["x"], ["y"], kernel_shape=[3], p=0)], [_vi("x", F, [2, 3, 9])],
               [_vi("y", F, None)], 18)
    _unsupported(m, "p must be positive")


@pytest.mark.parametrize("p,axis", [(2, -1), (1, 0), (2, 1)])
def test_lp_normalization(p, axis):
    m = _model([helper.make_node("LpNormalization", ["x"], ["y"], p=p, axis=axis)], [_vi("x", F, ["n", 4, 5])],
               [_vi("y", F, ["n", 4, 5])], 1)
    x = _f32(3, 4, 5)
    x[0, 0, :] = 0.0  # zero norms (along either axis) give 0, not NaN
    x[:, 1, 2] = 0.0
    check_against_ort(m, [{"x": _f32(2, 4, 5)}, {"x": x}], ["graph.reduce_sum"], rtol=1e-5, atol=1e-6)


def test_lp_normalization_illegal_p():
    _unsupported(_model([helper.make_node("LpNormalization", ["x"], ["y"], p=3)], [_vi("x", F, [2, 4])],
                        [_vi("y", F, [2, 4])], 1), "p must be 1 or 2")


# --------------------------------------------------------------------------------------------
# MaxPool's Indices output


@pytest.mark.parametrize("opset,attrs", [
    (12, {"kernel_shape": [2, 2], "strides": [2, 2]}),
    (12, {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "storage_order": 1}),
    (12, {"kernel_shape": [2, 3], "strides": [1, 2], "dilations": [2, 1]}),
    (22, {"kernel_shape": [3, 2], "strides": [2, 2], "ceil_mode": 1}),
    (8, {"kernel_shape": [2, 2], "storage_order": 1}),
])
def test_max_pool_indices_dynamic_batch(opset, attrs):
    m = _model([helper.make_node("MaxPool", ["x"], ["y", "i"], **attrs)], [_vi("x", F, ["n", 2, 5, 6])],
               [_vi("y", F, None), _vi("i", I64, None)], opset)
    feeds = []
    for b in (1, 3):
        x = np.round(_f32(b, 2, 5, 6) * 2) / 2  # ties: the first tap wins
        feeds.append({"x": x})
    check_against_ort(m, feeds, ["graph.max_pool2d_indices"])


def test_max_pool_indices_1d():
    m = _model([helper.make_node("MaxPool", ["x"], ["y", "i"], kernel_shape=[3], strides=[2], pads=[1, 1])],
               [_vi("x", F, [2, 3, 9])], [_vi("y", F, None), _vi("i", I64, None)], 12)
    check_against_ort(m, [{"x": _f32(2, 3, 9)}])


def test_max_pool_indices_illegal():
    m = _model([helper.make_node("MaxPool", ["x"], ["y", "i"], kernel_shape=[2, 2], storage_order=2)],
               [_vi("x", F, [1, 1, 4, 4])], [_vi("y", F, None), _vi("i", I64, None)], 12)
    _unsupported(m, "storage_order must be 0 or 1")
    m = _model([helper.make_node("MaxPool", ["x"], ["y", "i"], kernel_shape=[2, 2, 2])],
               [_vi("x", F, [1, 1, 4, 4, 4])], [_vi("y", F, None), _vi("i", I64, None)], 12)
    _unsupported(m, "the Indices output of a 3-D MaxPool")


# --------------------------------------------------------------------------------------------
# NonZero: the result's dim is known only at run time


@pytest.mark.parametrize("opset", [9, 13])
@pytest.mark.parametrize("elem,dtype", [(F, np.float32), (I64, np.int64), (B, np.bool_), (U8, np.uint8)])
def test_nonzero_data_dependent_dim(opset, elem, dtype):
    """One compile: the count differs per call (none, some, all nonzero), and with the dynamic
    input dim too."""
    m = _model([helper.make_node("NonZero", ["x"], ["y"])], [_vi("x", elem, ["n", 3])], [_vi("y", I64, [2, None])], opset)
    xs = [np.zeros((2, 3)), np.array([[0, 1, 0], [2, 0, 3], [0, 0, 4]]), np.ones((4, 3))]
    if elem == F:
        xs.append(np.array([[np.nan, 0, -0.0], [0.5, 0, 0]]))
    check_against_ort(m, [{"x": x.astype(dtype)} for x in xs], ["graph.nonzero"])


def test_nonzero_feeds_gather_nd():
    """The data-dependent dim flows on: x[nonzero(x)] via Transpose + GatherND, and its sum."""
    nodes = [helper.make_node("NonZero", ["x"], ["nz"]), helper.make_node("Transpose", ["nz"], ["idx"], perm=[1, 0]),
             helper.make_node("GatherND", ["x", "idx"], ["vals"]),
             helper.make_node("ReduceSum", ["vals"], ["s"], keepdims=0)]
    m = _model(nodes, [_vi("x", F, [3, 4])], [_vi("vals", F, [None]), _vi("s", F, [])], 11)
    x = np.where(_rng.random((3, 4)) < 0.5, 0, _f32(3, 4)).astype(np.float32)
    check_against_ort(m, [{"x": x}, {"x": np.zeros((3, 4), np.float32)}], rtol=1e-5)


def test_nonzero_of_a_scalar_is_unsupported():
    _unsupported(_model([helper.make_node("NonZero", ["x"], ["y"])], [_vi("x", F, [])], [_vi("y", I64, None)], 13),
                 "NonZero of a 0-d tensor")


@pytest.mark.parametrize("op", ["ReduceSum", "ReduceMax", "ReduceProd"])
def test_reduce_over_a_dynamic_dim_that_is_empty_at_run_time(op):
    """Used to leave the result unwritten (the reduce block's init never ran for a 0 extent)."""
    m = _model([helper.make_node(op, ["x"], ["y"], axes=[0], keepdims=0)], [_vi("x", F, ["n", 3])], [_vi("y", F, [3])], 11)
    check_against_ort(m, [{"x": np.zeros((0, 3), np.float32)}, {"x": _f32(2, 3)}, {"x": np.zeros((0, 3), np.float32)}])


@pytest.mark.parametrize("opset,p", [(2, 2), (2, 3), (2, 1)])
def test_global_lp_pool(opset, p):
    m = _model([helper.make_node("GlobalLpPool", ["x"], ["y"], p=p)], [_vi("x", F, ["n", 3, 4, 5])],
               [_vi("y", F, ["n", 3, 1, 1])], opset)
    check_against_ort(m, [{"x": _f32(1, 3, 4, 5)}, {"x": _f32(2, 3, 4, 5)}], rtol=1e-5, atol=1e-6)
    _unsupported(_model([helper.make_node("GlobalLpPool", ["x"], ["y"], p=p)], [_vi("x", F, [3, 4])],
                        [_vi("y", F, None)], opset), "rank-2 input")
