"""The ai.onnx.ml ops minimlir imports (Binarizer, ArrayFeatureExtractor, TreeEnsemble:
frontend/_onnx_ops_ml.py) and MelWeightMatrix, each against onnxruntime and / or the onnx
reference implementation; the other ai.onnx.ml ops are refused with a per-op reason. Each model is
compiled once and run at two batch sizes."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from minimlir.frontend import compile as mini_compile
from minimlir.frontend.onnx_backend import OnnxBackend
from minimlir.frontend.onnx_import import check_support, import_onnx

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
# TreeEnsemble


def _ensemble(n_trees, n_features, n_targets, max_depth, modes, dtype, missing=True, leaf_root=False):
    """Random trees (node ids in pre-order, as the reference reads membership_values), splits on a
    0.1 grid, integer membership sets (nonzero: the reference ends a set at a 0 as at a NaN)."""
    a = {k: [] for k in ("splits", "features", "modes", "tid", "fid", "tl", "fl", "lw", "lt", "miss")}
    members: list[float] = []

    def leaf():
        a["lw"].append(float(_rng.standard_normal()))
        a["lt"].append(int(_rng.integers(n_targets)))
        return len(a["lw"]) - 1

    def node(d):
        if d >= max_depth or (d > 0 and _rng.random() < 0.25):
            return leaf(), 1
        k = len(a["splits"])
        mode = int(_rng.choice(modes))
        a["modes"].append(mode)
        a["features"].append(int(_rng.integers(n_features)))
        # half on the integers the features take (ties for LEQ / LT / EQ ...), half between
        a["splits"].append(float(_rng.integers(-3, 4)) if _rng.random() < 0.5 else float(_rng.integers(-20, 21) / 10))
        a["miss"].append(int(_rng.integers(2)))
        if mode == 6:
            members.extend([*(float(v) for v in _rng.choice([-2, -1, 1, 2], int(_rng.integers(1, 4)), replace=False)),
                            np.nan])
        for key in ("tid", "fid", "tl", "fl"):
            a[key].append(0)
        a["tid"][k], a["tl"][k] = node(d + 1)
        a["fid"][k], a["fl"][k] = node(d + 1)
        return k, 0

    roots = [node(0)[0] for _ in range(n_trees)]
    if leaf_root:  # a tree that is one leaf: a node with both branches to the same leaf, as its root
        k = len(a["splits"])
        while len(a["lw"]) <= k:
            leaf()
        for key, v in (("modes", 0), ("features", 0), ("splits", 0.0), ("miss", 0), ("tid", k), ("fid", k),
                       ("tl", 1), ("fl", 1)):
            a[key].append(v)
        roots.append(k)
    attrs = dict(
        nodes_splits=numpy_helper.from_array(np.array(a["splits"], dtype=dtype), "s"),
        nodes_featureids=a["features"],
        nodes_modes=numpy_helper.from_array(np.array(a["modes"], dtype=np.uint8), "m"),
        nodes_truenodeids=a["tid"], nodes_falsenodeids=a["fid"], nodes_trueleafs=a["tl"],
        nodes_falseleafs=a["fl"], leaf_targetids=a["lt"],
        leaf_weights=numpy_helper.from_array(np.array(a["lw"], dtype=dtype), "w"),
        tree_roots=roots, n_targets=n_targets)
    if missing:
        attrs["nodes_missing_value_tracks_true"] = a["miss"]
    if members:
        attrs["membership_values"] = numpy_helper.from_array(np.array(members, dtype=dtype), "mv")
    return attrs


def _tree_model(attrs, elem, n_features, **kw):
    node = helper.make_node("TreeEnsemble", ["x"], ["y"], domain="ai.onnx.ml", **attrs, **kw)
    return _model([node], [_vi("x", elem, ["n", n_features])], [_vi("y", elem, None)])


def _features(dtype, n, n_features, nan=True):
    """Integer-valued features (onnxruntime tests set membership on the integer part) and NaNs."""
    x = _rng.integers(-3, 4, (n, n_features)).astype(dtype)
    if nan:
        x[_rng.random((n, n_features)) < 0.1] = np.nan
    return x


@pytest.mark.parametrize("dtype,elem", [(np.float32, F), (np.float64, D)])
@pytest.mark.parametrize("agg", [0, 1, 2, 3])
def test_tree_ensemble(dtype, elem, agg):
    """Every node mode (BRANCH_LEQ ... BRANCH_MEMBER), NaNs (missing values tracking true or not),
    every aggregate function, against onnxruntime and the reference at two batch sizes. MIN / MAX
    have one target: for a target no tree reaches, onnxruntime writes 0, the reference (whose
    values we follow; test_tree_ensemble_min_max_unreached) the type's extreme."""
    attrs = _ensemble(5, 4, 3 if agg < 2 else 1, 4, [0, 1, 2, 3, 4, 5, 6], dtype)
    m = _tree_model(attrs, elem, 4, aggregate_function=agg)
    _run_all(m, [{"x": _features(dtype, n, 4)} for n in (5, 17)])


def test_tree_ensemble_min_max_unreached_and_leaf_tree():
    """MIN / MAX over several targets (a target no tree reaches keeps the reference's initial
    float max / min), and a tree that is a single leaf; against the reference."""
    for agg in (2, 3):
        attrs = _ensemble(3, 3, 4, 3, [0, 2, 4], np.float32, leaf_root=True)
        m = _tree_model(attrs, F, 3, aggregate_function=agg)
        _run_all(m, [{"x": _features(np.float32, n, 3)} for n in (4, 9)], ort_check=False)


def test_tree_ensemble_membership_in_tree_order():
    """MEMBER nodes numbered out of pre-order (root 0, its true child 2, its false child 1): the
    reference assigns the NaN-ended sets in the order it builds the tree (0, 2, 1); onnxruntime in
    node-id order (0, 1, 2), so only the reference is compared."""
    attrs = dict(
        nodes_splits=numpy_helper.from_array(np.zeros(3, dtype=np.float32), "s"),
        nodes_featureids=[0, 1, 1],
        nodes_modes=numpy_helper.from_array(np.full(3, 6, dtype=np.uint8), "m"),
        nodes_truenodeids=[2, 0, 2], nodes_falsenodeids=[1, 1, 3], nodes_trueleafs=[0, 1, 1],
        nodes_falseleafs=[0, 1, 1], leaf_targetids=[0, 0, 0, 0],
        leaf_weights=numpy_helper.from_array(np.array([1, 2, 3, 4], dtype=np.float32), "w"),
        tree_roots=[0], n_targets=1,
        membership_values=numpy_helper.from_array(np.array([1, np.nan, 2, np.nan, -1, np.nan], np.float32), "mv"))
    m = _tree_model(attrs, F, 2)
    x = np.array([[a, b] for a in (1, 0) for b in (2, -1, 0)], dtype=np.float32)
    _run_all(m, [{"x": x}, {"x": x[::-1].copy()}], ort_check=False)


def test_tree_ensemble_post_transform():
    """SOFTMAX (1) and LOGISTIC (2) as the ONNX spec numbers them, on the reference's raw scores
    (the reference ignores post_transform; onnxruntime 1.31 swaps the two)."""

    def softmax(r):
        e = np.exp(r[0] - r[0].max(1, keepdims=True))
        return [(e / e.sum(1, keepdims=True)).astype(r[0].dtype)]

    def logistic(r):
        return [(1 / (1 + np.exp(-r[0]))).astype(r[0].dtype)]

    attrs = _ensemble(4, 3, 3, 3, [0, 1, 3], np.float32)
    for post, fn in ((1, softmax), (2, logistic)):
        m = _tree_model(attrs, F, 3, post_transform=post)
        _run_all(m, [{"x": _features(np.float32, n, 3)} for n in (3, 7)], ort_check=False, expect=fn)


# --------------------------------------------------------------------------------------------
# MelWeightMatrix


def test_mel_weight_matrix():
    """Constant inputs (initializers) fold at import, against onnxruntime and the reference; as
    graph inputs (the node test's form) through OnnxBackend, which specializes on their values."""
    params = [(8, 16, 8192, 0.0, 4096.0, F), (10, 64, 16000, 20.0, 7000.0, D)]
    for nb, dft, sr, lo, hi, out in params:
        inits = [numpy_helper.from_array(np.array(v, dtype=t), name) for v, t, name in
                 zip((nb, dft, sr, lo, hi), (np.int64, np.int64, np.int64, np.float32, np.float32), "abcde")]
        node = helper.make_node("MelWeightMatrix", list("abcde"), ["y"], output_datatype=out)
        m = _model([node], [], [_vi("y", out, None)], opset=17, inits=inits)
        module, _ = import_onnx(m)
        assert not any(op.name == "graph.call_kernel" for op in module.walk())
        _run_all(m, [{}])
    node = helper.make_node("MelWeightMatrix", list("abcde"), ["y"])
    ins = [_vi(n, t, []) for n, t in zip("abcde", (I64, I64, I64, F, F))]
    m = _model([node], ins, [_vi("y", F, None)], opset=17)
    rep = OnnxBackend.prepare(m)
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    for nb, dft, sr, lo, hi, _ in params:
        feeds = dict(zip("abcde", (np.array(nb), np.array(dft), np.array(sr), np.float32(lo), np.float32(hi))))
        feeds = {k: np.asarray(v) for k, v in feeds.items()}
        got = rep.run(feeds)[0]
        want = sess.run(None, feeds)[0]
        assert got.shape == want.shape == (dft // 2 + 1, nb) and got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-6)


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
