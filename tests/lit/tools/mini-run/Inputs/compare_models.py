"""Write the small ONNX models of compare.test into a folder (seeded, so every run builds the same ones).

    python compare_models.py OUT_DIR

mlp.onnx:         x[batch, 8] -> MatMul 'fc' -> Add 'bias' -> Relu 'act' -> Mul 'scale' -> Softmax 'probs' -> y
unsupported.onnx: x[4] -> MaxRoiPool 'running' -> STFT 'top' -> DFT 'dot' (no importer for any of them)
"""

import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT


def mlp() -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    inits = [
        numpy_helper.from_array(rng.standard_normal((8, 16)).astype(np.float32), "W"),
        numpy_helper.from_array(rng.standard_normal((16,)).astype(np.float32), "b"),
        numpy_helper.from_array(np.linspace(0.5, 2.0, 16, dtype=np.float32), "s"),
    ]
    nodes = [
        helper.make_node("MatMul", ["x", "W"], ["h"], name="fc"),
        helper.make_node("Add", ["h", "b"], ["hb"], name="bias"),
        helper.make_node("Relu", ["hb"], ["a"], name="act"),
        helper.make_node("Mul", ["a", "s"], ["z"], name="scale"),
        helper.make_node("Softmax", ["z"], ["y"], name="probs", axis=-1),
    ]
    g = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", F, ["batch", 8])],
                          [helper.make_tensor_value_info("y", F, ["batch", 16])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def unsupported() -> onnx.ModelProto:
    axis = numpy_helper.from_array(np.array(0, np.int64), "axis")
    k = numpy_helper.from_array(np.array([True, False, True, True]), "k")
    nodes = [
        helper.make_node("MaxRoiPool", ["x", "x"], ["c"], name="running", pooled_shape=[1, 1]),
        helper.make_node("STFT", ["c", "axis"], ["v"], name="top"),
        helper.make_node("DFT", ["v"], ["y"], name="dot"),
    ]
    g = helper.make_graph(nodes, "unsupported", [helper.make_tensor_value_info("x", F, [4])],
                          [helper.make_tensor_value_info("y", F, None)], [axis, k])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


if __name__ == "__main__":
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    onnx.save(mlp(), out / "mlp.onnx")
    onnx.save(unsupported(), out / "unsupported.onnx")
