"""Emitters for the ai.onnx.ml domain (classical ML), registered with `onnx_op(...,
domain="ai.onnx.ml")` (OP_TABLE key "ai.onnx.ml:<op>"; `min_opset` is the ai.onnx.ml opset):

  Binarizer              graph.gt against the threshold, graph.cast back to x's type
  ArrayFeatureExtractor  graph.gather on the last axis

The other ai.onnx.ml ops are refused with their reason (`minimlir.frontend._onnx_unsupported.ML_OPS`:
string tensors, maps) or as having no importer yet.
"""

from __future__ import annotations

import math

import numpy as np
from xdsl.dialects.builtin import AnyFloat

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
