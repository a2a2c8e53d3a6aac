"""How a graph op fuses, as a trait of the op (TVM keeps `TOpPattern` on the op the same way):

    traits = traits_def(Pure(), FusionKind.ELEMWISE)

    ELEMWISE        y[i] = f(x[i])                       relu, exp, cast, clip, …
    BROADCAST       y[i] = f(x[g(i)]), g drops/stretches  add, mul, where, batch_norm, …
    INJECTIVE       each output element reads one input   transpose, reshape, slice, concat,
                    element (or none: padding)            pad, gather, tile, split, …
    COMM_REDUCE     commutative reduction (+ epilogue)    reduce_*, argmax, global pools,
                                                          softmax, log_softmax, layer_norm
    OUT_EWISE_FUSABLE  complex op whose elementwise       conv2d, matmul, max/avg pool
                    consumers can run in its output loop
    OPAQUE          never fused                           param, constant, dim, call_kernel, …

An op without the trait is opaque. The base classes carry it for their families (every
`_UnaryOp` is elementwise, every `_BinaryOp` broadcasts, every `_ReduceOp` reduces), so a new
unary op inherits it. An op whose kind depends on its operands overrides `FusionKind.of`
(graph.slice with run-time bounds is opaque). graph-fuse asks `fusion_kind(op)`
(passes/graph/_op_pattern.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import ClassVar

from xdsl.ir import Operation
from xdsl.traits import OpTrait


class OpPattern(IntEnum):
    """TVM's OpPatternKind (same order and meaning; TVM's kTuple has no graph op here). The order
    matters: `max` of two kinds is the kind of a path through both (TVM's CombinePattern)."""

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


@dataclass(frozen=True)
class FusionKind(OpTrait):
    """The op's fusion kind (an OpPattern). `FusionKind.ELEMWISE` etc. are the instances to use."""

    pattern: OpPattern

    ELEMWISE: ClassVar[FusionKind]
    BROADCAST: ClassVar[FusionKind]
    INJECTIVE: ClassVar[FusionKind]
    COMM_REDUCE: ClassVar[FusionKind]
    OUT_EWISE_FUSABLE: ClassVar[FusionKind]
    OPAQUE: ClassVar[FusionKind]

    def of(self, op: Operation) -> OpPattern:
        """The kind of this op instance (the declared one; a subclass may look at the operands)."""
        return self.pattern


for _p in OpPattern:
    setattr(FusionKind, _p.name, FusionKind(_p))


def fusion_kind(op: Operation) -> OpPattern:
    """The fusion kind of `op`: its FusionKind trait's, OPAQUE without one (other dialects too)."""
    trait = op.get_trait(FusionKind)
    return trait.of(op) if trait is not None else OpPattern.OPAQUE
