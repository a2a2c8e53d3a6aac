"""Bugs found by the random-graph fuzzer (benchmarks/fuzz_graphs.py), each as its shrunk reproducer.

Each model is compiled once and checked at several sizes of its dynamic dims against NumPy.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from minimlir.frontend import compile

F, I64 = TensorProto.FLOAT, TensorProto.INT64


def _model(nodes, inputs, outputs, inits=(), opset=18) -> onnx.ModelProto:
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 9
    return m


def _ints(name, vals):
    return numpy_helper.from_array(np.array(vals, dtype=np.int64), name)


def test_slice_then_gather_with_runtime_indices():
    """seed 1 graph 69: Gather(Slice(x[N0], ::-2), ids) with run-time ids failed to compile,
    "graph-fuse: outlining created a cycle": the index normalization reads dim(slice result)."""
    m = _model(
        [helper.make_node("Slice", ["x", "s", "e", "a", "st"], ["y"]),
         helper.make_node("Gather", ["y", "ids"], ["z"], axis=0)],
        [helper.make_tensor_value_info("x", F, ["N0"]), helper.make_tensor_value_info("ids", I64, [5])],
        [helper.make_tensor_value_info("z", F, [5])],
        [_ints("s", [2**62]), _ints("e", [2]), _ints("a", [0]), _ints("st", [-2])],
    )
    prog = compile(m, cache=False)
    rng = np.random.default_rng(0)
    for n in (4, 7, 16, 37):
        x = rng.standard_normal(n).astype(np.float32)
        y = x[:2:-2]
        ids = rng.integers(-len(y), len(y), 5).astype(np.int64)
        (z,) = prog(x, ids)
        np.testing.assert_array_equal(z, y[ids])


def test_layer_norm_of_constant_rows_returns_bias():
    """seed 2 graph 388 (tests/data/fuzz/seed2_graph388.onnx): LayerNormalization of rows whose
    values are all equal. var = 0, so rstd = 1/sqrt(eps) = 316 amplifies the rounding of the mean;
    a float32 mean of 32 equal values was a few ulps off and the output missed `bias` by 2.2e-4
    (the float64 twin and onnxruntime return exactly `bias`). Also a near-constant row with a large
    offset, where only a float64 mean keeps (x - mean) accurate."""
    rng = np.random.default_rng(388)
    scale = rng.uniform(0.5, 2.0, 32).astype(np.float32)
    bias = rng.uniform(-1.0, 1.0, 32).astype(np.float32)
    m = _model(
        [helper.make_node("LayerNormalization", ["x", "s", "b"], ["y"], axis=1, epsilon=1e-5)],
        [helper.make_tensor_value_info("x", F, ["N", 32])],
        [helper.make_tensor_value_info("y", F, ["N", 32])],
        [numpy_helper.from_array(scale, "s"), numpy_helper.from_array(bias, "b")],
    )
    prog = compile(m, cache=False)
    for n in (1, 3):
        for value in (-0.019679803, 1.7, 1000.1):
            x = np.full((n, 32), value, np.float32)
            (y,) = prog(x)
            np.testing.assert_array_equal(y, np.broadcast_to(bias, (n, 32)))
    x = (np.float32(1000.0) + rng.integers(0, 3, (3, 32)).astype(np.float32) * np.float32(2**-13))
    x64 = x.astype(np.float64)
    mu = x64.mean(axis=1, keepdims=True)
    ref = (x64 - mu) / np.sqrt(((x64 - mu) ** 2).mean(axis=1, keepdims=True) + np.float32(1e-5))
    ref = ref * scale + bias
    (y,) = prog(x)
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-4)
