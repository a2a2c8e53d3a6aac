"""3-D Conv and ConvTranspose in the ONNX importer (issue 14), composed at import from one
graph.conv2d (frontend/_onnx_ops.py `conv3d`: the output depth planes in the batch, the depth taps
in the channels), each against onnxruntime; every model is compiled once and run at two batch
sizes. The 1-D / 2-D import is unchanged (one graph.conv2d, no gather)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from minimlir.frontend.onnx_import import UnsupportedModelError, import_onnx

from test_onnx_ops_more import _model, _vi, check_against_ort

F = TensorProto.FLOAT
_rng = np.random.default_rng(1403)


def _f32(*shape):
    return _rng.standard_normal(shape).astype(np.float32)


def _ops(model) -> list[str]:
    module, _ = import_onnx(model)
    return [op.name for op in module.walk() if op.name.startswith("graph.")]


# --------------------------------------------------------------------------------------------
# Conv


@pytest.mark.parametrize("attrs,cin,cout,kernel", [
    ({}, 2, 3, [3, 3, 3]),
    ({"strides": [2, 1, 2], "pads": [1, 0, 1, 0, 1, 1]}, 2, 3, [3, 2, 3]),
    ({"dilations": [2, 1, 2], "pads": [2, 1, 0, 1, 1, 2]}, 3, 2, [2, 3, 2]),
    ({"group": 2, "strides": [2, 2, 1], "pads": [1, 1, 1, 1, 1, 1]}, 4, 6, [3, 3, 3]),
    ({"auto_pad": "SAME_UPPER", "strides": [2, 1, 2]}, 2, 4, [2, 3, 4]),
    ({"auto_pad": "SAME_LOWER", "group": 2}, 2, 2, [4, 2, 2]),
])
def test_conv3d_constant_weight_dynamic_batch(attrs, cin, cout, kernel):
    g = attrs.get("group", 1)
    w = helper.make_tensor("w", F, [cout, cin // g] + kernel, _f32(cout, cin // g, *kernel).reshape(-1))
    b = helper.make_tensor("b", F, [cout], _f32(cout))
    m = _model([helper.make_node("Conv", ["x", "w", "b"], ["y"], **attrs)],
               [_vi("x", F, ["n", cin, 5, 6, 7])], [_vi("y", F, None)], 17, [w, b])
    check_against_ort(m, [{"x": _f32(1, cin, 5, 6, 7)}, {"x": _f32(3, cin, 5, 6, 7)}],
                      ["graph.conv2d", "graph.gather"], rtol=1e-4, atol=1e-5)
    # one conv2d whatever the depth: the op count does not grow with OD * KD
    assert _ops(m).count("graph.conv2d") == 1


def test_conv3d_weight_input_no_bias():
    """A run-time weight is re-laid out by graph.transpose / graph.reshape."""
    m = _model([helper.make_node("Conv", ["x", "w"], ["y"], strides=[1, 2, 1], pads=[0, 1, 1, 1, 0, 0], group=2)],
               [_vi("x", F, ["n", 4, 6, 5, 4]), _vi("w", F, [2, 2, 2, 3, 3])], [_vi("y", F, None)], 11)
    w = _f32(2, 2, 2, 3, 3)
    check_against_ort(m, [{"x": _f32(2, 4, 6, 5, 4), "w": w}, {"x": _f32(1, 4, 6, 5, 4), "w": w}],
                      rtol=1e-4, atol=1e-5)


def test_conv3d_two_folded_nameless_weights():
    """Weights folded at import (Neg of a reshaped initializer) have no name: each conv gets its
    own re-laid-out constant (none is reused for the other)."""
    wf = helper.make_tensor("wf", F, [54], _f32(54))
    sh = helper.make_tensor("sh", TensorProto.INT64, [5], [2, 1, 3, 3, 3])
    m = _model([helper.make_node("Reshape", ["wf", "sh"], ["w"]), helper.make_node("Neg", ["w"], ["wn"]),
                helper.make_node("Abs", ["w"], ["wa"]),
                helper.make_node("Conv", ["x", "wn"], ["y1"], group=2),
                helper.make_node("Conv", ["x", "wa"], ["y2"], group=2, pads=[1, 1, 1, 1, 1, 1])],
               [_vi("x", F, ["n", 2, 4, 5, 5])], [_vi("y1", F, None), _vi("y2", F, None)], 17, [wf, sh])
    check_against_ort(m, [{"x": _f32(1, 2, 4, 5, 5)}, {"x": _f32(2, 2, 4, 5, 5)}], rtol=1e-4, atol=1e-5)


def test_conv3d_refusals():
    w = helper.make_tensor("w", F, [2, 2, 3, 3, 3], _f32(2, 2, 3, 3, 3).reshape(-1))
    m = _model([helper.make_node("Conv", ["x", "w"], ["y"])],
               [_vi("x", F, [1, 2, "d", 6, 6])], [_vi("y", F, None)], 17, [w])
    with pytest.raises(UnsupportedModelError, match="dynamic depth"):
        import_onnx(m)
    w = helper.make_tensor("w", F, [1, 1, 3, 1, 1], _f32(1, 1, 3, 1, 1).reshape(-1))
    m = _model([helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 0, 0, 1, 0, 0])],
               [_vi("x", F, [1, 1, 5000, 1, 1])], [_vi("y", F, None)], 17, [w])
    with pytest.raises(UnsupportedModelError, match="depth taps"):
        import_onnx(m)


def test_conv_1d_2d_import_unchanged():
    """A 2-D and a 1-D conv still import as one graph.conv2d (a 1-D one through reshapes) with no
    gather or transpose: the 3-D composition is not used for them."""
    w = helper.make_tensor("w", F, [3, 2, 3, 3], _f32(3, 2, 3, 3).reshape(-1))
    m = _model([helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1])],
               [_vi("x", F, ["n", 2, 5, 5])], [_vi("y", F, None)], 17, [w])
    assert [o for o in _ops(m) if o not in ("graph.param", "graph.constant")] == ["graph.conv2d"]
    w = helper.make_tensor("w", F, [3, 2, 3], _f32(3, 2, 3).reshape(-1))
    m = _model([helper.make_node("Conv", ["x", "w"], ["y"])], [_vi("x", F, ["n", 2, 5])], [_vi("y", F, None)], 17, [w])
    ops = _ops(m)
    assert ops.count("graph.conv2d") == 1 and ops.count("graph.reshape") == 3
    assert "graph.gather" not in ops and "graph.transpose" not in ops


# --------------------------------------------------------------------------------------------
# ConvTranspose


@pytest.mark.parametrize("attrs,cin,cout,kernel", [
    ({}, 2, 3, [3, 3, 3]),
    ({"strides": [2, 2, 2]}, 2, 3, [3, 3, 3]),
    ({"strides": [2, 1, 2], "output_padding": [1, 0, 1], "pads": [1, 0, 1, 0, 1, 0]}, 2, 2, [3, 2, 3]),
    ({"strides": [2, 2, 1], "dilations": [2, 1, 1], "group": 2, "pads": [1, 1, 0, 0, 1, 0]}, 4, 6, [2, 3, 2]),
    ({"strides": [2, 2, 2], "auto_pad": "SAME_UPPER"}, 2, 3, [3, 3, 3]),
    ({"strides": [3, 2, 2], "output_shape": [11, 9, 10]}, 1, 2, [3, 3, 3]),
])
def test_conv_transpose3d_constant_weight_dynamic_batch(attrs, cin, cout, kernel):
    g = attrs.get("group", 1)
    w = helper.make_tensor("w", F, [cin, cout // g] + kernel, _f32(cin, cout // g, *kernel).reshape(-1))
    b = helper.make_tensor("b", F, [cout], _f32(cout))
    m = _model([helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], **attrs)],
               [_vi("x", F, ["n", cin, 4, 4, 5])], [_vi("y", F, None)], 17, [w, b])
    check_against_ort(m, [{"x": _f32(1, cin, 4, 4, 5)}, {"x": _f32(2, cin, 4, 4, 5)}],
                      ["graph.conv2d", "graph.gather"], rtol=1e-4, atol=1e-5)
    assert _ops(m).count("graph.conv2d") == 1


def test_conv_transpose3d_weight_input_dynamic_hw():
    """A run-time weight (flipped by graph.slice steps -1) and run-time H, W (the depth stays static)."""
    m = _model([helper.make_node("ConvTranspose", ["x", "w"], ["y"], strides=[2, 2, 1], output_padding=[1, 0, 0],
                                 pads=[0, 1, 1, 1, 0, 0])],
               [_vi("x", F, ["n", 2, 3, "h", "w"]), _vi("w", F, [2, 3, 2, 3, 2])], [_vi("y", F, None)], 22)
    w = _f32(2, 3, 2, 3, 2)
    check_against_ort(m, [{"x": _f32(1, 2, 3, 4, 5), "w": w}, {"x": _f32(2, 2, 3, 5, 3), "w": w}],
                      rtol=1e-4, atol=1e-5)


def test_conv_transpose3d_dynamic_depth_is_refused():
    w = helper.make_tensor("w", F, [1, 1, 2, 2, 2], _f32(1, 1, 2, 2, 2).reshape(-1))
    m = _model([helper.make_node("ConvTranspose", ["x", "w"], ["y"])],
               [_vi("x", F, [1, 1, "d", 3, 3])], [_vi("y", F, None)], 22, [w])
    with pytest.raises(UnsupportedModelError, match="dynamic depth"):
        import_onnx(m)
