"""How each graph op fuses: TVM's OpPatternKind, keyed by op class.

    ELEMWISE        y[i] = f(x[i])                       relu, exp, cast, clip, …
    BROADCAST       y[i] = f(x[g(i)]), g drops/stretches  add, mul, where, batch_norm, …
    INJECTIVE       each output element reads one input   transpose, reshape, slice, concat,
                    element (or none: padding)            pad, gather, tile, split, …
    COMM_REDUCE     commutative reduction (+ epilogue)    reduce_*, argmax, global pools,
                                                          softmax, log_softmax, layer_norm
    OUT_EWISE_FUSABLE  complex op whose elementwise       conv2d, matmul, max/avg pool
                    consumers can run in its output loop
    OPAQUE          never fused                           param, constant, dim, call_kernel,
                                                          shape, from_dims, extract, range, lrn

The order matters: `max` of two kinds is the kind of a path through both (TVM's CombinePattern).
graph-fuse uses `op_pattern(op)` for an op and `edge_pattern(consumer, operand)` for one input
edge: a broadcast op is elementwise in an input that already has the result's shape
(`add(conv, bias)` is elementwise in `conv`), which is what lets a conv2d absorb its bias add.
"""

from __future__ import annotations

from enum import IntEnum

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue

from minimlir.dialects import _graph_more as graph_more
from minimlir.dialects import graph


class OpPattern(IntEnum):
    """TVM's OpPatternKind (same order and meaning; TVM's kTuple has no graph op here)."""

    ELEMWISE = 0
    BROADCAST = 1
    INJECTIVE = 2
    COMM_REDUCE = 3
    OUT_EWISE_FUSABLE = 4
    OPAQUE = 8

    @property
    def label(self) -> str:
        return _LABELS[self]


_LABELS = {
    OpPattern.ELEMWISE: "elementwise",
    OpPattern.BROADCAST: "broadcast",
    OpPattern.INJECTIVE: "injective",
    OpPattern.COMM_REDUCE: "reduction",
    OpPattern.OUT_EWISE_FUSABLE: "out-elementwise-fusable",
    OpPattern.OPAQUE: "opaque",
}

PATTERNS: dict[OpPattern, tuple[type[Operation], ...]] = {
    OpPattern.ELEMWISE: (
        graph.ReluOp, graph.SigmoidOp, graph.TanhOp, graph.ExpOp, graph.LogOp, graph.SqrtOp,
        graph.RsqrtOp, graph.ErfOp, graph.NegOp, graph.AbsOp, graph.FloorOp, graph.CeilOp,
        graph.SignOp, graph.ReciprocalOp, graph.NotOp, graph.SoftplusOp, graph.HardSwishOp,
        graph.GeluOp, graph.ClipOp, graph.LeakyReluOp, graph.EluOp, graph.SeluOp,
        graph.HardSigmoidOp, graph.CastOp,
    ),
    OpPattern.BROADCAST: (
        graph.AddOp, graph.SubOp, graph.MulOp, graph.DivOp, graph.PowOp, graph.MaxOp,
        graph.MinOp, graph.ModOp, graph.AndOp, graph.OrOp, graph.XorOp,
        graph.EqOp, graph.LtOp, graph.LeOp, graph.GtOp, graph.GeOp,
        graph.WhereOp, graph.BatchNormOp, graph.BroadcastToOp,
    ),
    OpPattern.INJECTIVE: (
        graph.ReshapeOp, graph.TransposeOp, graph.ConcatOp, graph.SliceOp, graph.SplitOp,
        graph.GatherOp, graph.PadOp, graph.TileOp, graph.TriluOp,
    ),
    OpPattern.COMM_REDUCE: (
        graph.ReduceSumOp, graph.ReduceMeanOp, graph.ReduceMaxOp, graph.ReduceMinOp,
        graph.ArgMaxOp, graph.GlobalAvgPoolOp, graph.GlobalMaxPoolOp,
        graph.SoftmaxOp, graph.LogSoftmaxOp, graph.LayerNormOp,
    ),
    OpPattern.OUT_EWISE_FUSABLE: (
        graph.Conv2dOp, graph.MatMulOp, graph.MaxPool2dOp, graph.AvgPool2dOp,
    ),
    OpPattern.OPAQUE: (
        graph.ParamOp, graph.ConstantOp, graph.DimOp, graph.CallKernelOp, graph.ShapeOp,
        graph.FromDimsOp, graph.ExtractOp, graph.RangeOp, graph.LRNOp,
    ),
}

# the ops of dialects/_graph_more.py
PATTERNS[OpPattern.ELEMWISE] += tuple(graph_more.MORE_ELEMENTWISE)
PATTERNS[OpPattern.BROADCAST] += tuple(graph_more.MORE_BROADCAST)
PATTERNS[OpPattern.COMM_REDUCE] += tuple(graph_more.MORE_REDUCE)
PATTERNS[OpPattern.COMM_REDUCE] += (graph.ReduceProdOp,)
PATTERNS[OpPattern.OPAQUE] += (graph.ScatterElementsOp,)
PATTERNS[OpPattern.OPAQUE] += (graph.ScatterNDOp,)
PATTERNS[OpPattern.OPAQUE] += (graph.TopKOp,)
PATTERNS[OpPattern.OPAQUE] += (graph.CumProdOp,)
PATTERNS[OpPattern.OPAQUE] += (graph.MaxPool2dIndicesOp,)
PATTERNS[OpPattern.OPAQUE] += (graph.NonZeroOp,)
# data-dependent gathers and the scan get kernels of their own (what the table's default gave them)
PATTERNS[OpPattern.OPAQUE] += (graph_more.GatherElementsOp, graph_more.GatherNDOp, graph_more.CumSumOp)


_BY_CLASS: dict[type[Operation], OpPattern] = {
    cls: kind for kind, classes in PATTERNS.items() for cls in classes
}


def op_pattern(op: Operation) -> OpPattern:
    """The fusion kind of `op`; anything not in the table (other dialects, unknown ops) is opaque.
    A graph.slice with run-time `bounds` is opaque too: its kernel reads them from a graph.from_dims
    buffer built at the graph level, which a fused kernel (loop-fuse) cannot hold."""
    if isinstance(op, graph.SliceOp) and op.bounds:
        return OpPattern.OPAQUE
    return _BY_CLASS.get(type(op), OpPattern.OPAQUE)


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
