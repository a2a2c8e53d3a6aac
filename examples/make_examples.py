"""Generate the example ONNX models the README uses (deterministic: fixed seeds, fixed names).

    python examples/make_examples.py            # writes examples/conv_add_relu.onnx, examples/mlp.onnx

conv_add_relu.onnx  x: [batch, 3, 16, 16] -> Conv(8, 3x3, pad 1) -> Add(per-channel bias) -> Relu
mlp.onnx            x: [batch, 64] -> Gemm(64->128) -> Relu -> Gemm(128->10) -> Softmax
"""

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto
from onnx import helper as h
from onnx import numpy_helper as nh

OPSET = 17
IR_VERSION = 8  # loadable by onnxruntime as well


def _model(graph: onnx.GraphProto) -> onnx.ModelProto:
    m = h.make_model(graph, opset_imports=[h.make_opsetid("", OPSET)], ir_version=IR_VERSION,
                     producer_name="minimlir-examples")
    onnx.checker.check_model(m, full_check=True)
    return m


def conv_add_relu() -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    inits = [
        nh.from_array(rng.standard_normal((8, 3, 3, 3), dtype=np.float32) * 0.2, "conv.weight"),
        nh.from_array(rng.standard_normal(8, dtype=np.float32) * 0.1, "conv.bias"),
        nh.from_array(rng.standard_normal((8, 1, 1), dtype=np.float32) * 0.1, "shift"),
    ]
    nodes = [
        h.make_node("Conv", ["x", "conv.weight", "conv.bias"], ["conv_out"], name="conv",
                    kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        h.make_node("Add", ["conv_out", "shift"], ["add_out"], name="add"),
        h.make_node("Relu", ["add_out"], ["y"], name="relu"),
    ]
    graph = h.make_graph(
        nodes, "conv_add_relu",
        [h.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, 16, 16])],
        [h.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 8, 16, 16])],
        inits,
    )
    return _model(graph)


def mlp() -> onnx.ModelProto:
    rng = np.random.default_rng(1)
    inits = [
        nh.from_array(rng.standard_normal((128, 64), dtype=np.float32) * 0.1, "fc1.weight"),
        nh.from_array(rng.standard_normal(128, dtype=np.float32) * 0.1, "fc1.bias"),
        nh.from_array(rng.standard_normal((10, 128), dtype=np.float32) * 0.1, "fc2.weight"),
        nh.from_array(rng.standard_normal(10, dtype=np.float32) * 0.1, "fc2.bias"),
    ]
    nodes = [
        h.make_node("Gemm", ["x", "fc1.weight", "fc1.bias"], ["fc1_out"], name="fc1", transB=1),
        h.make_node("Relu", ["fc1_out"], ["relu_out"], name="relu"),
        h.make_node("Gemm", ["relu_out", "fc2.weight", "fc2.bias"], ["logits"], name="fc2", transB=1),
        h.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=-1),
    ]
    graph = h.make_graph(
        nodes, "mlp",
        [h.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 64])],
        [h.make_tensor_value_info("probs", TensorProto.FLOAT, ["batch", 10])],
        inits,
    )
    return _model(graph)


def main() -> None:
    here = Path(__file__).resolve().parent
    for name, make in (("conv_add_relu", conv_add_relu), ("mlp", mlp)):
        onnx.save(make(), here / f"{name}.onnx")
        print(f"wrote {here / f'{name}.onnx'}")


if __name__ == "__main__":
    main()
