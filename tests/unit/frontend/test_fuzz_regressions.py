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
