"""The ai.onnx.ml ops minimlir imports (Binarizer, ArrayFeatureExtractor: frontend/_onnx_ops_ml.py), against
onnxruntime and / or the onnx reference implementation; the other ai.onnx.ml ops are refused with a per-op reason. Each model is
compiled once and run at two batch sizes."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from minimlir.frontend import compile as mini_compile
from minimlir.frontend.onnx_import import check_support

F, D, I64 = TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.INT64
_rng = np.random.default_rng(1405)


def _model(nodes, inputs, outputs, ml=5, opset=21, inits=()) -> onnx.ModelProto:
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset), helper.make_opsetid("ai.onnx.ml", ml)])
    m.ir_version = 8  # onnxruntime 1.31 reads IR <= 13
    return m


def _vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def _run_all(model, feeds_list, ort_check=True, ref_check=True, expect=None):
    """Compile once; each feed dict's outputs equal onnxruntime's and / or the onnx reference's
    (dtype, shape, values; `expect(reference outputs)` transforms the reference's first)."""
    compiled = mini_compile(model, cache=False)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]) if ort_check else None
    ref = ReferenceEvaluator(model) if ref_check else None
    for feeds in feeds_list:
        outs = [np.asarray(o) for o in compiled(*feeds.values())]
        wants = []
        if sess is not None:
            wants.append(sess.run(None, feeds))
        if ref is not None:
            r = ref.run(None, feeds)
            wants.append(expect(r) if expect else r)
        for want in wants:
            assert len(outs) == len(want)
            for out, w in zip(outs, want):
                w = np.asarray(w)
                assert out.shape == w.shape and out.dtype == w.dtype, (out.shape, w.shape, out.dtype, w.dtype)
                np.testing.assert_allclose(out, w, rtol=1e-5, atol=1e-6)


# --------------------------------------------------------------------------------------------
# Binarizer, ArrayFeatureExtractor


def test_binarizer():
    """float32 against onnxruntime and the reference (values on the threshold: not above); float64
    and int64 (onnxruntime has no kernel for them) against the reference (a negative fractional
    threshold for int64: x > -1.5 holds for -1)."""
    m = _model([helper.make_node("Binarizer", ["x"], ["y"], domain="ai.onnx.ml", threshold=0.5)],
               [_vi("x", F, ["n", 4])], [_vi("y", F, None)], ml=1)
    xs = [np.round(_rng.standard_normal((n, 4)), 1).astype(np.float32) for n in (3, 8)]
    xs[0][0, :2] = 0.5
    _run_all(m, [{"x": x} for x in xs])
    for elem, dtype in ((D, np.float64), (I64, np.int64)):
        m = _model([helper.make_node("Binarizer", ["x"], ["y"], domain="ai.onnx.ml", threshold=-1.5)],
                   [_vi("x", elem, ["n", 3])], [_vi("y", elem, None)], ml=1)
        feeds = [{"x": _rng.integers(-4, 4, (n, 3)).astype(dtype)} for n in (2, 5)]
        _run_all(m, feeds, ort_check=False)  # onnxruntime has a float32 Binarizer only


def test_array_feature_extractor():
    """Run-time [1, 3] indices (repeated, out of order) on a dynamic batch of rank-3 data, constant
    indices on a 1-D input (the result is [1, k], as onnxruntime has it)."""
    m = _model([helper.make_node("ArrayFeatureExtractor", ["x", "i"], ["y"], domain="ai.onnx.ml")],
               [_vi("x", F, ["n", 2, 5]), _vi("i", I64, [1, 3])], [_vi("y", F, None)], ml=1)
    feeds = [{"x": _rng.standard_normal((n, 2, 5)).astype(np.float32), "i": np.array(i, dtype=np.int64)}
             for n, i in ((2, [[4, 0, 4]]), (6, [[1, 3, 2]]))]
    _run_all(m, feeds)
    idx = numpy_helper.from_array(np.array([3, 1], dtype=np.int64), "i")
    m = _model([helper.make_node("ArrayFeatureExtractor", ["x", "i"], ["y"], domain="ai.onnx.ml")],
               [_vi("x", I64, [6])], [_vi("y", I64, None)], ml=1, inits=[idx])
    _run_all(m, [{"x": np.arange(6, dtype=np.int64) * 7}])


# --------------------------------------------------------------------------------------------
# what stays refused


def test_other_ml_ops_refused_per_op():
    """The ai.onnx.ml opset import is accepted; LabelEncoder (string tensors) and Scaler (no importer)
    are refused, each with its own reason, next to an imported Binarizer."""
    nodes = [helper.make_node("LabelEncoder", ["k"], ["y"], domain="ai.onnx.ml", keys_strings=["a"], values_int64s=[1]),
             helper.make_node("Scaler", ["x"], ["z"], domain="ai.onnx.ml", scale=[2.0]),
             helper.make_node("Binarizer", ["x"], ["b"], domain="ai.onnx.ml")]
    m = _model(nodes, [_vi("k", TensorProto.STRING, [3]), _vi("x", F, [3])],
               [_vi("y", I64, [3]), _vi("z", F, [3]), _vi("b", F, [3])], ml=4)
    rows = {op: reason for op, _, _, reason in check_support(m)}
    assert "string" in rows["LabelEncoder"] and "LabelEncoder" in rows["LabelEncoder"]
    assert rows["Scaler"] == "ai.onnx.ml op Scaler: no importer for this op yet"
    assert rows["Binarizer"] is None
