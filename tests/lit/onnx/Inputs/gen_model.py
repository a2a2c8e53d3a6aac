"""Write a small ONNX model for the lit tests: `python gen_model.py NAME OUT.onnx`."""

import sys

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh


def _model(nodes, inputs, outputs, inits=(), opsets=(("", 17),)):
    g = h.make_graph(nodes, "g", inputs, outputs, list(inits))
    return h.make_model(g, opset_imports=[h.make_opsetid(d, v) for d, v in opsets], ir_version=8)


def _vi(name, dtype, shape):
    return h.make_tensor_value_info(name, dtype, shape)


def dynamic_reshape():
    """y = Reshape(x, [Shape(x)[0], -1]) @ w, with x: [batch, seq, 4]."""
    nodes = [
        h.make_node("Shape", ["x"], ["s"], name="shape"),
        h.make_node("Gather", ["s", "zero"], ["n"], name="gather", axis=0),
        h.make_node("Unsqueeze", ["n", "ax0"], ["n1"], name="unsqueeze"),
        h.make_node("Concat", ["n1", "m1"], ["shape2"], name="concat", axis=0),
        h.make_node("Reshape", ["x", "shape2"], ["r"], name="reshape"),
        h.make_node("Shape", ["r"], ["rs"], name="shape_r"),
        h.make_node("ConstantOfShape", ["rs"], ["ones"], name="ones",
                    value=h.make_tensor("v", T.FLOAT, [1], [1.0])),
        h.make_node("Add", ["r", "ones"], ["y"], name="add"),
    ]
    inits = [nh.from_array(np.array(0, np.int64), "zero"), nh.from_array(np.array([0], np.int64), "ax0"),
             nh.from_array(np.array([-1], np.int64), "m1")]
    return _model(nodes, [_vi("x", T.FLOAT, ["batch", "seq", 4])], [_vi("y", T.FLOAT, None)], inits)


def unsupported():
    """Three unsupported things and one supported op."""
    nodes = [
        h.make_node("Relu", ["x"], ["a"], name="relu"),
        h.make_node("DFT", ["a"], ["b"], name="dft"),
        h.make_node("Pad", ["x", "p"], ["c"], name="pad", mode="wrap"),
        h.make_node("Cast", ["x"], ["d"], name="cast", to=T.BFLOAT16),
    ]
    inits = [nh.from_array(np.array([3, 3], np.int64), "p")]  # wrap by more than the dim
    return _model(nodes, [_vi("x", T.FLOAT, [2])], [_vi(o, T.FLOAT, None) for o in "bcd"], inits)


def contradiction():
    """A declared input shape that contradicts the initializer of the same name."""
    nodes = [h.make_node("Add", ["x", "w"], ["y"], name="add")]
    inits = [nh.from_array(np.ones(3, np.float32), "w")]
    return _model(nodes, [_vi("x", T.FLOAT, [3]), _vi("w", T.FLOAT, [4])], [_vi("y", T.FLOAT, None)], inits)


def opset11_softmax():
    """Softmax before opset 13 on a 3-D input with axis 1: coerced to 2-D."""
    nodes = [h.make_node("Softmax", ["x"], ["y"], name="softmax", axis=1)]
    return _model(nodes, [_vi("x", T.FLOAT, ["n", 3, 4])], [_vi("y", T.FLOAT, None)], opsets=(("", 11),))


if __name__ == "__main__":
    onnx.save(globals()[sys.argv[1]](), sys.argv[2])
