"""Emitters for the ai.onnx.ml domain (classical ML), registered with `onnx_op(...,
domain="ai.onnx.ml")` (OP_TABLE key "ai.onnx.ml:<op>"; `min_opset` is the ai.onnx.ml opset):

  Binarizer              graph.gt against the threshold, graph.cast back to x's type
  ArrayFeatureExtractor  graph.gather on the last axis
  TreeEnsemble           the trees (attributes) composed from gathers and compares, unrolled
                         over their depth

The other ai.onnx.ml ops are refused with their reason (`minimlir.frontend._onnx_unsupported.ML_OPS`:
string tensors, maps) or as having no importer yet.
"""

from __future__ import annotations

import math

import numpy as np
from xdsl.dialects.builtin import AnyFloat, i64

from minimlir.dialects import graph
from minimlir.frontend._onnx_ops import _elem, _shape, _ssa, onnx_op
from minimlir.frontend.onnx_import import DYNAMIC, NodeView, Unsupported

ML = "ai.onnx.ml"


@onnx_op("Binarizer", domain=ML)
def emit_binarizer(n: NodeView) -> list:
    """Binarizer(x, threshold) -> graph.cast(graph.gt(x, threshold)) to x's type: 1 where
    x > threshold, else 0 (NaN -> 0). For integer x the threshold is floor(threshold) (x > t
    exactly when x > floor(t))."""
    cx = n.cx
    x = _ssa(n, 0)
    t = float(n.attr("threshold", 0.0))
    elem = _elem(x)
    if not isinstance(elem, AnyFloat):
        t = math.floor(t)
    gt = cx.emit1(graph.GtOp(x, cx.scalar(t, elem)))
    return [cx.emit1(graph.CastOp(gt, elem))]


@onnx_op("ArrayFeatureExtractor", domain=ML)
def emit_array_feature_extractor(n: NodeView) -> list:
    """ArrayFeatureExtractor(x, indices) -> graph.gather on x's last axis with the indices
    flattened: shape [..., indices.size] ([1, indices.size] for a 1-D x, as onnxruntime and the
    onnx reference do). Constant indices out of [0, last dim) are refused (onnxruntime fails)."""
    cx = n.cx
    x, idx = _ssa(n, 0), n.input(1)
    shape = _shape(x)
    if len(shape) == 1:
        x = cx.reshape(x, [1, *cx.dims(x)])
        shape = [1, *shape]
    ishape = idx.shape
    if any(d == DYNAMIC for d in ishape):
        raise Unsupported("ArrayFeatureExtractor: indices of a dynamic shape")
    count = int(np.prod(ishape, dtype=np.int64))
    if idx.const is not None:
        c = np.asarray(idx.const).reshape(-1).astype(np.int64)
        if shape[-1] != DYNAMIC and ((c < 0) | (c >= shape[-1])).any():
            raise Unsupported(f"ArrayFeatureExtractor: index out of range for dim {shape[-1]}")
        indices = cx.ssa(cx.from_const(c))
    else:
        indices = cx.reshape(cx.ssa(idx), [count])
    return [cx.emit1(graph.GatherOp(x, indices, len(shape) - 1))]


# TreeEnsemble (ai.onnx.ml opset 5) --------------------------------------------------------------

_LEQ, _LT, _GTE, _GT, _EQ, _NEQ, _MEMBER = range(7)
_SUM, _AVERAGE, _MIN, _MAX = 1, 0, 2, 3
_POST = {0: "NONE", 1: "SOFTMAX", 2: "LOGISTIC", 3: "SOFTMAX_ZERO", 4: "PROBIT"}


def _check_tree_ensemble(node, opset) -> str | None:
    from minimlir.frontend._onnx_ops import _attr

    post = int(_attr(node, "post_transform", 0))
    if post not in (0, 1, 2):
        return (f"post_transform {_POST.get(post, post)} "
                "(NONE, SOFTMAX and LOGISTIC are imported; no inverse erf for PROBIT)")
    agg = int(_attr(node, "aggregate_function", 1))
    if agg not in (0, 1, 2, 3):
        return f"aggregate_function {agg}"
    return None


def _tree_arrays(n: NodeView):
    """The node / leaf attributes as NumPy arrays, validated."""

    def ints(name, default=None):
        v = n.attr(name, default)
        return None if v is None else np.asarray(v, dtype=np.int64).reshape(-1)

    splits = n.attr("nodes_splits")
    modes = n.attr("nodes_modes")
    weights = n.attr("leaf_weights")
    if splits is None or modes is None or weights is None:
        raise Unsupported("TreeEnsemble: nodes_splits, nodes_modes and leaf_weights are required")
    a = {
        "splits": np.asarray(splits).reshape(-1),
        "modes": np.asarray(modes).reshape(-1).astype(np.int64),
        "weights": np.asarray(weights).reshape(-1),
        "features": ints("nodes_featureids"),
        "true_ids": ints("nodes_truenodeids"),
        "false_ids": ints("nodes_falsenodeids"),
        "true_leaf": ints("nodes_trueleafs"),
        "false_leaf": ints("nodes_falseleafs"),
        "targets": ints("leaf_targetids"),
        "roots": ints("tree_roots"),
        "missing": ints("nodes_missing_value_tracks_true"),
    }
    m = a["splits"].size
    for k in ("modes", "features", "true_ids", "false_ids", "true_leaf", "false_leaf"):
        if a[k] is None or a[k].size != m:
            raise Unsupported(f"TreeEnsemble: nodes attribute {k} does not have {m} entries")
    if a["targets"] is None or a["targets"].size != a["weights"].size:
        raise Unsupported("TreeEnsemble: leaf_targetids and leaf_weights differ in length")
    if a["roots"] is None or a["roots"].size == 0 or m == 0:
        raise Unsupported("TreeEnsemble: no trees")
    if a["missing"] is not None and a["missing"].size != m:
        raise Unsupported("TreeEnsemble: nodes_missing_value_tracks_true does not have one entry per node")
    return a


def _depth_and_starts(a) -> tuple[np.ndarray, int]:
    """Each tree's start in the combined index space (nodes 0..M-1, leaf l at M + l) and the
    number of steps that reach a leaf from every root (the deepest tree's depth)."""
    m = a["splits"].size
    starts, depth = [], 0
    for r in a["roots"]:
        if a["true_leaf"][r] and a["false_leaf"][r] and a["true_ids"][r] == a["false_ids"][r]:
            starts.append(m + r)  # a tree that is one leaf (the reference reads leaf `root`)
            continue
        starts.append(r)
        stack, seen = [(int(r), 1)], 0
        while stack:
            node, d = stack.pop()
            seen += 1
            if seen > m:
                raise Unsupported("TreeEnsemble: the nodes do not form trees (a cycle)")
            depth = max(depth, d)
            for ids, leafs in (("true_ids", "true_leaf"), ("false_ids", "false_leaf")):
                if not a[leafs][node]:
                    stack.append((int(a[ids][node]), d + 1))
    return np.array(starts, dtype=np.int64), depth


def _preorder_members(a) -> np.ndarray:
    """The MEMBER nodes in the order onnx's reference visits them building the trees."""
    m = a["splits"].size
    out = []
    for r in a["roots"]:
        if a["true_leaf"][r] and a["false_leaf"][r] and a["true_ids"][r] == a["false_ids"][r]:
            continue
        stack = [int(r)]
        while stack and len(out) <= m:
            node = stack.pop()
            if a["modes"][node] == _MEMBER:
                out.append(node)
            for ids, leafs in (("false_ids", "false_leaf"), ("true_ids", "true_leaf")):  # true popped first
                if not a[leafs][node]:
                    stack.append(int(a[ids][node]))
    return np.array(out, dtype=np.int64)


@onnx_op("TreeEnsemble", domain=ML, min_opset=5, check=_check_tree_ensemble)
def emit_tree_ensemble(n: NodeView) -> list:
    """TreeEnsemble(X [N, F]) -> [N, n_targets], composed from graph ops (the trees are attributes,
    so their structure is known at import):

        f    = gather(X, nodes_featureids, axis 1)            [N, M]  each node's feature
        cond = f <mode> nodes_splits (MEMBER: any f == member; NaN -> true where
               nodes_missing_value_tracks_true)                [N, M]  bool
        cur  = the trees' roots, then `depth` times (unrolled): [N, T]  indices, leaf l is M + l
               cur = where(gather_elements(cond, min(cur, M-1)), true_next[cur], false_next[cur])
               (a leaf's next is itself)
        y    = reduce over T of gather(W, cur - M)             W [L, n_targets]: a leaf's weight in
               its target's column, 0 (SUM, AVERAGE) / +-max (MIN, MAX) elsewhere

    As onnx's reference: AVERAGE divides the sum by the number of trees; a target no tree reaches
    is 0 for SUM / AVERAGE and the type's max / lowest for MIN / MAX (onnxruntime writes 0).
    post_transform SOFTMAX (1) / LOGISTIC (2), numbered as the ONNX spec has them (the reference
    ignores post_transform; onnxruntime 1.31 swaps the two), follow as graph.softmax / graph.sigmoid
    over the targets; SOFTMAX_ZERO and PROBIT (an inverse erf) are refused."""
    cx = n.cx
    x = _ssa(n, 0)
    elem = _elem(x)
    if not isinstance(elem, AnyFloat) or len(_shape(x)) != 2:
        raise Unsupported("TreeEnsemble: X must be a 2-D float tensor")
    a = _tree_arrays(n)
    m, n_leaves, n_trees = a["splits"].size, a["weights"].size, a["roots"].size
    n_targets = int(n.attr("n_targets", 0)) or int(a["targets"].max()) + 1
    npt = {32: np.float32, 64: np.float64, 16: np.float16}[elem.bitwidth]
    starts, depth = _depth_and_starts(a)
    nfeat = _shape(x)[1]
    if nfeat != DYNAMIC and ((a["features"] < 0) | (a["features"] >= nfeat)).any():
        raise Unsupported(f"TreeEnsemble: a feature id out of range for {nfeat} features")
    if ((a["targets"] < 0) | (a["targets"] >= n_targets)).any():
        raise Unsupported(f"TreeEnsemble: a leaf target id out of range for n_targets {n_targets}")

    def const(arr) -> object:
        return cx.ssa(cx.from_const(np.ascontiguousarray(arr)))

    # conditions: one bool per (row, node)
    f = cx.emit1(graph.GatherOp(x, const(a["features"]), 1))
    splits = const(a["splits"].astype(npt))
    cmp = {_LEQ: graph.LeOp, _LT: graph.LtOp, _GTE: graph.GeOp, _GT: graph.GtOp, _EQ: graph.EqOp}
    cond = None
    for mode in sorted(set(a["modes"].tolist())):
        if mode == _MEMBER:
            c = _membership(cx, n, x, a, const, npt)
        elif mode == _NEQ:
            c = cx.emit1(graph.NotOp(cx.emit1(graph.EqOp(f, splits))))
        elif mode in cmp:
            c = cx.emit1(cmp[mode](f, splits))
        else:
            raise Unsupported(f"TreeEnsemble: node mode {mode}")
        cond = c if cond is None else cx.emit1(graph.WhereOp(const(a["modes"] == mode), c, cond))
    if a["missing"] is not None and a["missing"].any():
        isnan = cx.emit1(graph.NotOp(cx.emit1(graph.EqOp(f, f))))
        cond = cx.emit1(graph.OrOp(cond, cx.emit1(graph.AndOp(isnan, const(a["missing"] != 0)))))

    # walk the trees: depth steps through the combined index space
    true_next = np.concatenate([np.where(a["true_leaf"] != 0, m + a["true_ids"], a["true_ids"]),
                                m + np.arange(n_leaves)])
    false_next = np.concatenate([np.where(a["false_leaf"] != 0, m + a["false_ids"], a["false_ids"]),
                                 m + np.arange(n_leaves)])
    if (true_next >= m + n_leaves).any() or (false_next >= m + n_leaves).any():
        raise Unsupported("TreeEnsemble: a node or leaf id out of range")
    tn, fn = const(true_next), const(false_next)
    c0 = cx.emit1(graph.GatherOp(cond, const(np.minimum(starts, m - 1)), 1))
    cur = cx.emit1(graph.WhereOp(c0, const(true_next[starts]), const(false_next[starts])))
    last = cx.scalar(m - 1, i64)
    for _ in range(depth - 1):
        c = cx.emit1(graph.GatherElementsOp(cond, cx.emit1(graph.MinOp(cur, last)), 1))
        cur = cx.emit1(graph.WhereOp(c, cx.emit1(graph.GatherOp(tn, cur, 0)), cx.emit1(graph.GatherOp(fn, cur, 0))))
    leaf = cx.emit1(graph.SubOp(cur, cx.scalar(m, i64)))

    # aggregate: one row of W per leaf
    agg = int(n.attr("aggregate_function", _SUM))
    fill = {_SUM: 0.0, _AVERAGE: 0.0, _MIN: np.finfo(npt).max, _MAX: np.finfo(npt).min}[agg]
    w = np.full((n_leaves, n_targets), fill, dtype=npt)
    w[np.arange(n_leaves), a["targets"]] = a["weights"].astype(npt)
    per_tree = cx.emit1(graph.GatherOp(const(w), leaf, 0))  # [N, T, n_targets]
    reduce = {_SUM: graph.ReduceSumOp, _AVERAGE: graph.ReduceSumOp, _MIN: graph.ReduceMinOp,
              _MAX: graph.ReduceMaxOp}[agg]
    y = cx.emit1(reduce(per_tree, [1], keepdims=False))
    if agg == _AVERAGE:
        y = cx.emit1(graph.DivOp(y, cx.scalar(float(n_trees), elem)))
    post = int(n.attr("post_transform", 0))
    if post == 2:
        y = cx.emit1(graph.SigmoidOp(y))
    elif post == 1:
        y = cx.emit1(graph.SoftmaxOp(y, 1))
    return [y]


def _membership(cx, n, x, a, const, npt):
    """MEMBER nodes: cond = any(X[:, feature] == v for v in the node's set), the sets read from
    membership_values, each ended by a NaN, in the order the reference builds the trees (pre-order
    from each root: node, true branch, false branch). Computed as one gather of (node, value)
    pairs, an equality, and a 0/1 matmul that counts the matches per member node."""
    values = n.attr("membership_values")
    member = np.flatnonzero(a["modes"] == _MEMBER)
    if values is None:
        raise Unsupported("TreeEnsemble: MEMBER nodes without membership_values")
    values = np.asarray(values, dtype=np.float64).reshape(-1)
    if int(np.isnan(values).sum()) != member.size:
        raise Unsupported("TreeEnsemble: membership_values must hold one NaN-ended set per MEMBER node")
    pair_node, pair_value, k = [], [], 0
    for v in values:
        if np.isnan(v):
            k += 1
        else:
            pair_node.append(k)
            pair_value.append(v)
    order = _preorder_members(a)
    if len(set(order.tolist())) != order.size or order.size != member.size:
        raise Unsupported("TreeEnsemble: a MEMBER node not reached exactly once from the roots")
    member = order
    m = a["splits"].size
    if not pair_node:
        return cx.emit1(graph.LtOp(cx.scalar(1.0, _elem(x)), const(np.zeros(m, dtype=npt))))  # all false
    pair_node = np.array(pair_node)
    fp = cx.emit1(graph.GatherOp(x, const(a["features"][member[pair_node]]), 1))  # [N, P]
    eq = cx.emit1(graph.EqOp(fp, const(np.array(pair_value, dtype=npt))))
    ind = np.zeros((pair_node.size, m), dtype=npt)
    ind[np.arange(pair_node.size), member[pair_node]] = 1
    counts = cx.emit1(graph.MatMulOp(cx.emit1(graph.CastOp(eq, _elem(x))), const(ind)))  # [N, M]
    return cx.emit1(graph.GtOp(counts, cx.scalar(0.5, _elem(x))))
