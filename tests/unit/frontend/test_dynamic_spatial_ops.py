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
