"""A causal attention mask built from shapes (GPT-2's export: Shape/Gather/Range/LessOrEqual/Expand
with a shape tensor whose -1 becomes 1) with dynamic seq and past lengths.

graph-infer-dims follows the small integer tensors such a shape is computed in (from_dims,
constants, gather, where(eq(x, -1), 1, x), add, concat), so the Range lengths and the Expand dims are
expressions (`seq`, `past+seq`, `1`), not opaque values; graph-fuse labels the fused function's
arguments with the equalities, and graph-legalize reads them: the mask add indexes the mask by
the iteration variables (dim 1 at 0), with no stride selected at run time. The results must equal
onnxruntime's at every length, including seq 1 (a decode step) and an empty past (a prefill).
"""

from __future__ import annotations

import re

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from minimlir.frontend import compile
from minimlir.frontend.api import lower
from minimlir.frontend.onnx_import import import_onnx

F, I64 = TensorProto.FLOAT, TensorProto.INT64
HEADS, D = 4, 16


def _i64(name: str, vals) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(vals, dtype=np.int64), name)


def _mask_model() -> onnx.ModelProto:
    """q (batch, 4, seq, 16), past_k (batch, 4, past, 16) -> softmax(q k^T / 4 + mask), k = [past_k; q]."""
    n = helper.make_node
    nodes = [
        n("Concat", ["past_k", "q"], ["k"], axis=2),
        n("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
        n("MatMul", ["q", "kt"], ["qk"]),
        n("Mul", ["qk", "scale"], ["scores"]),
        # lengths from shapes
        n("Shape", ["q"], ["q_shape"]),
        n("Shape", ["past_k"], ["p_shape"]),
        n("Gather", ["q_shape", "c0"], ["batch"], axis=0),
        n("Gather", ["q_shape", "c2"], ["seq"], axis=0),
        n("Gather", ["p_shape", "c2"], ["past"], axis=0),
        n("Add", ["past", "seq"], ["total"]),
        n("Range", ["past", "total", "one"], ["rows"]),  # positions of the new tokens
        n("Range", ["zero", "total", "one"], ["cols"]),
        n("Unsqueeze", ["rows", "ax1"], ["rows2"]),
        n("Unsqueeze", ["cols", "ax0"], ["cols2"]),
        n("LessOrEqual", ["cols2", "rows2"], ["allowed"]),  # (seq, total)
        # Expand to (batch, -1 -> 1, seq, total), as the exporter writes it
        n("Unsqueeze", ["batch", "ax0"], ["b1"]),
        n("Unsqueeze", ["seq", "ax0"], ["s1"]),
        n("Unsqueeze", ["total", "ax0"], ["t1"]),
        n("Concat", ["b1", "minus1", "s1", "t1"], ["shape4"], axis=0),
        n("Equal", ["shape4", "minus1x4"], ["is_m1"]),
        n("Where", ["is_m1", "ones4", "shape4"], ["shape4b"]),
        n("Expand", ["allowed", "shape4b"], ["allowed4"]),
        n("Where", ["allowed4", "fzero", "fmin"], ["mask"]),
        n("Add", ["scores", "mask"], ["masked"]),
        n("Softmax", ["masked"], ["probs"], axis=-1),
    ]
    inits = [
        numpy_helper.from_array(np.array(0.25, np.float32), "scale"),
        _i64("c0", 0), _i64("c2", 2), _i64("one", 1), _i64("zero", 0),
        _i64("ax0", [0]), _i64("ax1", [1]), _i64("minus1", [-1]), _i64("minus1x4", [-1] * 4),
        _i64("ones4", [1] * 4),
        numpy_helper.from_array(np.array(0.0, np.float32), "fzero"),
        numpy_helper.from_array(np.array(np.finfo(np.float32).min, np.float32), "fmin"),
    ]
    g = helper.make_graph(
        nodes, "mask",
        [helper.make_tensor_value_info("q", F, ["batch", HEADS, "seq", D]),
         helper.make_tensor_value_info("past_k", F, ["batch", HEADS, "past", D])],
        [helper.make_tensor_value_info("probs", F, ["batch", HEADS, "seq", "total"])],
        initializer=inits,
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def test_shape_tensors_give_range_and_expand_dims_as_expressions():
    module = import_onnx(_mask_model())[0]
    text = str(module)
    ranges = re.findall(r"graph\.range .*?graph\.dims = \[([^\]]*)\]", text)
    assert sorted(ranges) == ['"past+seq"', '"seq"'], ranges
    (expand,) = re.findall(r"graph\.broadcast_to .*?graph\.dims = \[([^\]]*)\]", text)
    assert expand == '"batch", "1", "seq", "past+seq"'
    assert '"?"' not in text  # no dim is opaque
    assert "graph.dim_checks" not in text  # nothing to check per call (the fast call path)


def test_mask_add_reads_the_mask_without_run_time_strides():
    module = import_onnx(_mask_model())[0]
    lower(module, "graph-strength-reduce,graph-infer-dims,graph-fuse,graph-legalize")
    text = str(module)
    # the fused function's arguments carry the equalities the caller proved
    sig = re.search(r"func\.func private @(fused_\w*add\w*)\(([^)]*)\)", text)
    assert sig is not None, text
    assert '"1"' in sig.group(2) and sig.group(2).count('"d') >= 4, sig.group(2)
    kernels = re.split(r"(?=func\.func )", text)
    adds = [k for k in kernels if "loop.kernel" in k and re.search(r'loop\.block "add"', k)
            and "memref<?x?x?x?xf32>" in k]
    assert adds, "no kernel adds the 4-d mask"
    for k in adds:
        assert "arith.select" not in k, k  # before: one select(dim == 1, 0, 1) stride per mask dim


@pytest.mark.parametrize("batch", [1, 2])
def test_causal_mask_matches_onnxruntime(batch):
    model = _mask_model()
    prog = compile(model, cache=False)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(batch)
    for seq, past in ((1, 0), (1, 1), (1, 37), (5, 0), (3, 20), (17, 16), (32, 0)):
        q = rng.normal(size=(batch, HEADS, seq, D)).astype(np.float32)
        pk = rng.normal(size=(batch, HEADS, past, D)).astype(np.float32)
        (want,) = sess.run(None, {"q": q, "past_k": pk})
        (got,) = prog(q=q, past_k=pk)
        assert got.shape == (batch, HEADS, seq, past + seq)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
        # causal: the new token at position past+i sees nothing after it
        for i in range(seq):
            assert not got[:, :, i, past + i + 1:].any()


def test_range_with_unknown_sign_keeps_the_max():
    """Range(limit=a dim, start=another dim): the length is max(limit - start, 0), not limit - start
    (a dim may be smaller than the other); and an Equal against -1 of a value read from data is not
    decided."""
    from minimlir.dialects import _shapes as S
    from minimlir.passes.graph._symbolic_dims import FunctionDims

    n = helper.make_node
    nodes = [
        n("Shape", ["x"], ["xs"]), n("Shape", ["y"], ["ys"]),
        n("Gather", ["xs", "c0"], ["a"], axis=0), n("Gather", ["ys", "c0"], ["b"], axis=0),
        n("Range", ["b", "a", "one"], ["r"]),
        n("Cast", ["r"], ["out"], to=F),
    ]
    g = helper.make_graph(
        nodes, "r",
        [helper.make_tensor_value_info("x", F, ["a"]), helper.make_tensor_value_info("y", F, ["b"])],
        [helper.make_tensor_value_info("out", F, ["n"])],
        initializer=[_i64("c0", 0), _i64("one", 1)],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    module = import_onnx(m)[0]
    f = next(o for o in module.ops if getattr(o, "sym_name", None) is not None and o.sym_name.data == "main")
    fd = FunctionDims(f)
    rng_op = next(o for o in f.body.block.ops if o.name == "graph.range")
    assert fd.dim(rng_op.results[0], 0) is S.maximum(S.sym("a") - S.sym("b"), 0)
    prog = compile(m, cache=False)
    for a, b in ((5, 2), (2, 5), (3, 3), (0, 4)):
        (got,) = prog(x=np.zeros(a, np.float32), y=np.zeros(b, np.float32))
        np.testing.assert_array_equal(got, np.arange(b, a, dtype=np.float32))


def test_fused_kernel_shares_the_proved_dims():
    """loop-fuse gives equal dims one Index (and a dim proved 1 the constant): every nest of the
    fused scores kernel (matmul, scale, mask where, add) runs over the same three `mem.dim`s (batch,
    seq, past+seq), and the matmul's batch dims, proved equal, are read unclamped (no min(b, B-1))."""
    module = import_onnx(_mask_model())[0]
    lower(module, "graph-strength-reduce,graph-infer-dims,graph-fuse,graph-legalize,loop-fuse")
    kernels = [k for k in re.split(r"(?=func\.func )", str(module)) if 'loop.block "matmul"' in k]
    assert len(kernels) == 1
    (k,) = kernels
    assert re.findall(r'loop\.block "(\w+)"', k) == ["matmul", "mul", "where", "add"]
    assert k.count("mem.dim") == 3, k
    assert "arith.minsi" not in k, k
