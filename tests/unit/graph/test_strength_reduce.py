"""graph-strength-reduce against onnxruntime: Pow by a constant 1, 2, 3 (multiplies) and 0.5 (kept as
powf) give onnxruntime's bits, specials included, through one compile."""

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from minimlir.frontend import compile


def _model(dtype: int, np_dtype) -> onnx.ModelProto:
    exps = [1.0, 2.0, 3.0, 0.5]
    nodes = [helper.make_node("Pow", ["x", f"e{k}"], [f"y{k}"]) for k in range(len(exps))]
    inits = [numpy_helper.from_array(np.array(e, np_dtype), f"e{k}") for k, e in enumerate(exps)]
    g = helper.make_graph(
        nodes, "pow", [helper.make_tensor_value_info("x", dtype, ["n", 7])],
        [helper.make_tensor_value_info(f"y{k}", dtype, ["n", 7]) for k in range(len(exps))], inits,
    )
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 15)], ir_version=8)


def test_pow_by_small_constants_matches_onnxruntime_bitwise(tmp_path):
    for dtype, np_dtype in [(TensorProto.FLOAT, np.float32), (TensorProto.DOUBLE, np.float64)]:
        path = tmp_path / f"pow_{np.dtype(np_dtype).name}.onnx"
        onnx.save(_model(dtype, np_dtype), path)
        x = (np.random.default_rng(1).standard_normal((3, 7)) * 50).astype(np_dtype)
        x[0] = [np.nan, np.inf, -np.inf, -0.0, 0.0, 1e30, -1e-30]
        ref = ort.InferenceSession(str(path)).run(None, {"x": x})
        m = compile(path, cache=False)
        got = m(x)
        for k, (r, g) in enumerate(zip(ref, got)):
            assert np.array_equal(r, g, equal_nan=True), (np_dtype, k)
