"""Dynamic batch and sequence lengths give onnxruntime's answer, the same answer on every call.

Regression for the embedding lookup that was wrong for lengths >= 16 and changed from call to call:
Gather's index normalization (`where(ids < 0, ids + n, ids)`) keeps its `ids < 0` mask in an i1
buffer, and the vectorized loop stored the mask as `vector<8xi1>`. LLVM packs a vector of i1 into
bits (8 lanes in one byte), while an i1 buffer holds one byte per element (NumPy's bool): the
scalar reads of the next loop saw one packed byte and seven bytes nobody wrote. i1 now lives in
memory as i8 (zext on store, trunc on load), scalar and vector alike.
"""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from _determinism import assert_repeatable
from minimlir.frontend import compile

F, I64 = TensorProto.FLOAT, TensorProto.INT64
LENGTHS = (1, 5, 16, 37, 100, 512)


def _model(nodes, inputs, outputs, inits=(), opset=17) -> onnx.ModelProto:
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def _check(model: onnx.ModelProto, feeds_list, rtol=1e-3, atol=1e-4):
    """One compile; every feed matches onnxruntime, and two calls are bitwise the same at one thread
    and at all cores (tests/unit/_determinism.py)."""
    prog = compile(model, cache=False)
    sess = ort.InferenceSession(model.SerializeToString())
    for feeds in feeds_list:
        refs = sess.run(None, feeds)
        outs = prog(**feeds)
        for out, ref in zip(outs, refs, strict=True):
            assert out.shape == ref.shape, (out.shape, ref.shape)
            np.testing.assert_allclose(out, ref, rtol=rtol, atol=atol)
        assert_repeatable(lambda: prog(**feeds), f"inputs {[v.shape for v in feeds.values()]}")


MASK_MLIR = """
func.func @main(%ids: tensor<?x?xi64>) -> tensor<?x?xi64> {
  %n = graph.constant dense<97> : tensor<i64>
  %z = graph.constant dense<0> : tensor<i64>
  %neg = graph.lt %ids, %z : (tensor<?x?xi64>, tensor<i64>) -> tensor<?x?xi1>
  %wrapped = graph.add %ids, %n : (tensor<?x?xi64>, tensor<i64>) -> tensor<?x?xi64>
  %r = graph.where %neg, %wrapped, %ids : (tensor<?x?xi1>, tensor<?x?xi64>, tensor<?x?xi64>) -> tensor<?x?xi64>
  func.return %r : tensor<?x?xi64>
}
"""


def test_i1_mask_buffer_through_vectorized_loop():
    prog = compile(MASK_MLIR, cache=False)
    rng = np.random.default_rng(0)
    for seq in (1, 7, 8, 9, 16, 37, 100):
        for batch in (1, 3):
            ids = rng.integers(-97, 97, (batch, seq)).astype(np.int64)
            (out,) = prog(ids)
            np.testing.assert_array_equal(out, np.where(ids < 0, ids + 97, ids))


BOOL_OUT_MLIR = """
func.func @main(%a: tensor<?xf32>, %b: tensor<?xf32>) -> tensor<?xi1> {
  %r = graph.lt %a, %b : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xi1>
  func.return %r : tensor<?xi1>
}
"""


def test_bool_output_is_one_byte_per_element():
    prog = compile(BOOL_OUT_MLIR, cache=False)
    rng = np.random.default_rng(1)
    for n in (3, 8, 16, 33, 100):
        a, b = (rng.standard_normal(n).astype(np.float32) for _ in range(2))
        (out,) = prog(a, b)
        assert out.dtype == np.bool_
        np.testing.assert_array_equal(out.view(np.uint8), (a < b).view(np.uint8))


@pytest.mark.parametrize("d", [8, 16, 33, 64])
def test_embedding_gather_dynamic_batch_and_seq(d):
    rng = np.random.default_rng(d)
    table = numpy_helper.from_array(rng.standard_normal((97, d)).astype(np.float32), "table")
    m = _model(
        [helper.make_node("Gather", ["table", "ids"], ["y"], axis=0)],
        [helper.make_tensor_value_info("ids", I64, ["batch", "seq"])],
        [helper.make_tensor_value_info("y", F, ["batch", "seq", d])],
        [table],
    )
    shapes = [(1, 16), (3, 37), (1, 100), (2, 5), (2, 16)]
    _check(m, [{"ids": rng.integers(-97, 97, s).astype(np.int64)} for s in shapes], rtol=0, atol=0)


def _embedding_nodes(vocab=1000, d=128, max_pos=512, seed=0):
    """Token embedding plus a position table sliced to the run-time length (10 nodes)."""
    rng = np.random.default_rng(seed)
    inits = [
        numpy_helper.from_array(rng.standard_normal((vocab, d)).astype(np.float32), "emb"),
        numpy_helper.from_array(rng.standard_normal((max_pos, d)).astype(np.float32), "pos"),
        numpy_helper.from_array(np.array([0], np.int64), "zero1"),
        numpy_helper.from_array(np.array(1, np.int64), "one"),
        numpy_helper.from_array(np.array([0], np.int64), "axes0"),
    ]
    nodes = [
        helper.make_node("Gather", ["emb", "ids"], ["tok"], axis=0),
        helper.make_node("Shape", ["ids"], ["shape"]),
        helper.make_node("Gather", ["shape", "one"], ["seq_len"], axis=0),
        helper.make_node("Unsqueeze", ["seq_len", "axes0"], ["end"]),
        helper.make_node("Slice", ["pos", "zero1", "end", "axes0"], ["pos_s"]),
        helper.make_node("Add", ["tok", "pos_s"], ["h"]),
    ]
    return nodes, inits


def test_embedding_plus_sliced_positions():
    nodes, inits = _embedding_nodes()
    m = _model(
        nodes,
        [helper.make_tensor_value_info("ids", I64, ["batch", "seq"])],
        [helper.make_tensor_value_info("h", F, ["batch", "seq", 128])],
        inits,
    )
    rng = np.random.default_rng(3)
    feeds = [{"ids": rng.integers(0, 1000, (b, s)).astype(np.int64)}
             for b, s in [(1, 16), (2, 16), (1, 100), (2, 5), (1, 5), (3, 8), (1, 1), (2, 37), (1, 512)]]
    _check(m, feeds)


def _encoder_model(layers=2, d=32, heads=2, vocab=1000, max_pos=512, n_cls=5, seed=0):
    """Embedding + sliced positions, `layers` post-norm attention blocks, mean-pool, linear head."""
    rng = np.random.default_rng(seed)
    nodes, inits = _embedding_nodes(vocab, d, max_pos, seed)
    dh = d // heads

    def w(name, *shape, scale=None):
        s = scale if scale is not None else 1 / np.sqrt(shape[0])
        inits.append(numpy_helper.from_array((rng.standard_normal(shape) * s).astype(np.float32), name))
        return name

    def const(name, arr):
        inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    const("split_heads", np.array([0, 0, heads, dh], np.int64))
    const("merge_heads", np.array([0, 0, d], np.int64))
    const("scale", np.array(1 / np.sqrt(dh), np.float32))
    x = "h"
    for i in range(layers):
        p = f"l{i}_"
        qkv = []
        for t in "qkv":
            nodes.append(helper.make_node("MatMul", [x, w(p + t, d, d)], [p + t + "_mm"]))
            nodes.append(helper.make_node("Add", [p + t + "_mm", w(p + t + "_b", d, scale=0.1)], [p + t + "_lin"]))
            nodes.append(helper.make_node("Reshape", [p + t + "_lin", "split_heads"], [p + t + "_r"]))
            perm = [0, 2, 3, 1] if t == "k" else [0, 2, 1, 3]
            nodes.append(helper.make_node("Transpose", [p + t + "_r"], [p + t + "_t"], perm=perm))
            qkv.append(p + t + "_t")
        nodes += [
            helper.make_node("MatMul", [qkv[0], qkv[1]], [p + "s"]),
            helper.make_node("Mul", [p + "s", "scale"], [p + "ss"]),
            helper.make_node("Softmax", [p + "ss"], [p + "a"], axis=-1),
            helper.make_node("MatMul", [p + "a", qkv[2]], [p + "ctx"]),
            helper.make_node("Transpose", [p + "ctx"], [p + "ctx_t"], perm=[0, 2, 1, 3]),
            helper.make_node("Reshape", [p + "ctx_t", "merge_heads"], [p + "ctx_m"]),
            helper.make_node("MatMul", [p + "ctx_m", w(p + "o", d, d)], [p + "o_mm"]),
            helper.make_node("Add", [p + "o_mm", x], [p + "res1"]),
            helper.make_node("LayerNormalization", [p + "res1", const(p + "g1", np.ones(d, np.float32)),
                                                    const(p + "b1", np.zeros(d, np.float32))],
                             [p + "n1"], axis=-1, epsilon=1e-5),
            helper.make_node("MatMul", [p + "n1", w(p + "f1", d, 2 * d)], [p + "f1_mm"]),
            helper.make_node("Relu", [p + "f1_mm"], [p + "f1_r"]),
            helper.make_node("MatMul", [p + "f1_r", w(p + "f2", 2 * d, d)], [p + "f2_mm"]),
            helper.make_node("Add", [p + "f2_mm", p + "n1"], [p + "res2"]),
            helper.make_node("LayerNormalization", [p + "res2", const(p + "g2", np.ones(d, np.float32)),
                                                    const(p + "b2", np.zeros(d, np.float32))],
                             [p + "n2"], axis=-1, epsilon=1e-5),
        ]
        x = p + "n2"
    nodes += [
        helper.make_node("ReduceMean", [x], ["pooled"], axes=[1], keepdims=0),
        helper.make_node("Gemm", ["pooled", w("head", d, n_cls), w("head_b", n_cls, scale=0.1)], ["logits"]),
    ]
    return _model(
        nodes,
        [helper.make_tensor_value_info("ids", I64, ["batch", "seq"])],
        [helper.make_tensor_value_info("logits", F, ["batch", n_cls])],
        inits,
    )


def test_two_layer_encoder_at_every_length():
    m = _encoder_model()
    rng = np.random.default_rng(5)
    feeds = [{"ids": rng.integers(0, 1000, (b, s)).astype(np.int64)}
             for b, s in [(1, 1), (2, 5), (1, 16), (3, 37), (1, 100), (1, 512)]]
    _check(m, feeds)
