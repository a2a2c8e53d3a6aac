"""Emitters for the ai.onnx.ml domain (classical ML), registered with `onnx_op(...,
domain="ai.onnx.ml")` (OP_TABLE key "ai.onnx.ml:<op>"; `min_opset` is the ai.onnx.ml opset):

  Binarizer              graph.gt against the threshold, graph.cast back to x's type

The other ai.onnx.ml ops are refused with their reason (`minimlir.frontend._onnx_unsupported.ML_OPS`:
string tensors, maps) or as having no importer yet.
"""

from __future__ import annotations

import math

from xdsl.dialects.builtin import AnyFloat

from minimlir.dialects import graph
from minimlir.frontend._onnx_ops import _elem, _ssa, onnx_op
from minimlir.frontend.onnx_import import NodeView

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
