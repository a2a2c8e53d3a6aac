"""maximumf/minimumf lower with `nsz` (convert-arith-to-llvm): cheaper on x86, and they still propagate
NaN; only the order of -0.0 and +0.0 is left open. Checked natively, vectorized and scalar, on a ReLU,
a max pool and an elementwise Min/Max."""

import numpy as np
import pytest

import minimlir.compiler.interpreter as H

onnx = pytest.importorskip("onnx")


def _model():
    from onnx import TensorProto, helper

    nodes = [
        helper.make_node("Relu", ["x"], ["r"]),
        helper.make_node("MaxPool", ["x"], ["p"], kernel_shape=[3, 3], strides=[2, 2]),
        helper.make_node("Max", ["x", "y"], ["mx"]),
        helper.make_node("Min", ["x", "y"], ["mn"]),
    ]
    shape = [1, 3, 19, 37]  # rows of 37 (vector + scalar remainder), pooled rows of 18
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, TensorProto.FLOAT, shape) for n in "xy"],
                          [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("r", "p", "mx", "mn")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def _pool_ref(x):
    n, c, h, w = x.shape
    oh, ow = (h - 3) // 2 + 1, (w - 3) // 2 + 1
    out = np.full((n, c, oh, ow), -np.inf, np.float32)
    for kh in range(3):
        for kw in range(3):
            out = np.maximum(out, x[:, :, kh:kh + 2 * oh:2, kw:kw + 2 * ow:2])
    return out


@pytest.mark.skipif(not H.native_status()[0], reason="no native backend")
def test_max_and_min_propagate_nan():
    from minimlir.frontend import compile as compile_model

    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 3, 19, 37)).astype(np.float32)
    y = rng.standard_normal((1, 3, 19, 37)).astype(np.float32)
    x.flat[rng.choice(x.size, 40, replace=False)] = np.nan
    y.flat[rng.choice(y.size, 40, replace=False)] = np.nan
    x[0, 0, 0, :4] = [-0.0, 0.0, -0.0, np.nan]
    y[0, 0, 0, :4] = [0.0, -0.0, -0.0, 1.0]
    r, p, mx, mn = compile_model(_model(), cache=False)(x, y)
    for got, want in ((r, np.maximum(x, 0)), (p, _pool_ref(x)), (mx, np.maximum(x, y)), (mn, np.minimum(x, y))):
        got = np.asarray(got)
        assert np.isnan(want).any()
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_array_equal(got, want)  # -0.0 == +0.0
