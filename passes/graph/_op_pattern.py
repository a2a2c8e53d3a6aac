"""How each graph op fuses: TVM's OpPatternKind, declared on the op as a FusionKind trait
(dialects/_fusion.py: the kinds and what they mean). This module asks the op:

    op_pattern(op)                 the op's kind (opaque without the trait: other dialects)
    edge_pattern(consumer, value)  the kind of one input edge: a broadcast op is elementwise in an
                                   input that already has the result's shape (`add(conv, bias)` is
                                   elementwise in `conv`), which lets a conv2d absorb its bias add

graph-fuse (passes/graph/fuse.py) uses both.
"""

from __future__ import annotations

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue

from minimlir.dialects import graph
from minimlir.dialects._fusion import FusionKind, OpPattern, fusion_kind

__all__ = ["FusionKind", "OpPattern", "edge_pattern", "op_pattern"]


def op_pattern(op: Operation) -> OpPattern:
    """The fusion kind of `op` (its FusionKind trait; opaque without one)."""
    return fusion_kind(op)


def edge_pattern(consumer: Operation, operand: SSAValue) -> OpPattern:
    """The kind of the edge `operand -> consumer`: a broadcast op reading an input that already
    has the result's shape is elementwise in that input."""
    kind = op_pattern(consumer)
    if kind == OpPattern.BROADCAST and not isinstance(consumer, graph.BroadcastToOp):
        t = operand.type
        if (
            isinstance(t, TensorType)
            and consumer.results
            and isinstance(r := consumer.results[0].type, TensorType)
            and t.get_shape() == r.get_shape()
        ):
            return OpPattern.ELEMWISE
    return kind
