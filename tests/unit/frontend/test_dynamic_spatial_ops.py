"""ConvTranspose and Resize on dynamic spatial dims (found by the architecture exports: a U-Net's
ConvTranspose and bilinear interpolate, a YOLO neck's nearest upsample, all on a dynamic image
size). One compile per case serves two image sizes, each matching onnxruntime."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from minimlir.frontend import compile


def _model(node, inputs, inits):
    g = helper.make_graph([node], "g", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)], ir_version=8).SerializeToString()


def _check(model: bytes, shapes):
    compiled = compile(model, cache=False)
    session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    for shape in shapes:
        x = rng.standard_normal(shape).astype(np.float32)
        (ours,) = compiled(x)
        (ref,) = session.run(None, {"x": x})
        assert ours.shape == ref.shape
        np.testing.assert_allclose(ours, ref, rtol=1e-5, atol=1e-5)


CONV_T = [
    ({"strides": [2, 3], "pads": [1, 0, 0, 2], "output_padding": [1, 0]}, (3, 3), [(1, 3, 5, 7), (2, 3, 8, 4)]),
    ({"strides": [2], "auto_pad": "SAME_UPPER"}, (3,), [(1, 3, 5), (2, 3, 8)]),
]


@pytest.mark.parametrize("attrs,kernel,shapes", CONV_T, ids=["pads-output_padding", "1d-same_upper"])
def test_conv_transpose_with_dynamic_spatial_dims(attrs, kernel, shapes):
    rng = np.random.default_rng(1)
    w = numpy_helper.from_array(rng.standard_normal((3, 4) + kernel).astype(np.float32), "w")
    b = numpy_helper.from_array(rng.standard_normal(4).astype(np.float32), "b")
    dims = ["N", 3] + ["H", "W"][: len(kernel)]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, dims)
    _check(_model(helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], **attrs), [x], [w, b]), shapes)


RESIZE = [
    ({"mode": "nearest", "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"}, [1, 1, 2, 2]),
    ({"mode": "linear", "coordinate_transformation_mode": "half_pixel"}, [1, 1, 0.5, 1.5]),
    ({"mode": "cubic", "coordinate_transformation_mode": "half_pixel_symmetric"}, [1, 1, 2, 0.5]),
]


def _resize(attrs, scales):
    sc = numpy_helper.from_array(np.array(scales, np.float32), "scales")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 2, "H", "W"])
    return _model(helper.make_node("Resize", ["x", "", "scales"], ["y"], **attrs), [x], [sc])


@pytest.mark.parametrize("attrs,scales", RESIZE, ids=["nearest-2x", "linear-0.5x1.5", "cubic-2x0.5"])
def test_resize_with_constant_scales_on_dynamic_dims(attrs, scales):
    _check(_resize(attrs, scales), [(1, 2, 5, 7), (2, 2, 8, 4)])


def test_resize_of_a_dynamic_dim_by_an_inexact_scale_says_why():
    from minimlir.frontend.onnx_import import UnsupportedModelError

    with pytest.raises(UnsupportedModelError, match=r"scale 0.3\d* is not a ratio p/q"):
        compile(_resize({"mode": "linear"}, [1, 1, 0.3, 2]), cache=False)


def test_resize_to_sizes_computed_from_a_shape():
    """A static grid resized to a run-time size (a ViT's position embeddings to the patch grid of
    an image of any size): sizes = Concat([1, 2], Shape(ref)[2:4])."""
    grid = numpy_helper.from_array(np.random.default_rng(2).standard_normal((1, 2, 4, 4)).astype(np.float32), "grid")
    head = numpy_helper.from_array(np.array([1, 2], np.int64), "head")
    nodes = [helper.make_node("Shape", ["x"], ["hw"], start=2, end=4),
             helper.make_node("Concat", ["head", "hw"], ["sizes"], axis=0),
             helper.make_node("Resize", ["grid", "", "", "sizes"], ["r"], mode="cubic"),
             helper.make_node("Add", ["r", "x"], ["y"])]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 2, "H", "W"])
    g = helper.make_graph(nodes, "g", [x], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [grid, head])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)], ir_version=8).SerializeToString()
    _check(model, [(1, 2, 4, 4), (2, 2, 6, 5)])
