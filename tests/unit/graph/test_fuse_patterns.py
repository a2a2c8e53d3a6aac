"""Fusion kinds: every graph op declares one (a FusionKind trait), and broadcast edges become elementwise when the
input already has the result's shape."""

from __future__ import annotations

import pytest
from xdsl.dialects.builtin import IndexType, TensorType, f32
from xdsl.utils.test_value import create_ssa_value

from minimlir.dialects import graph
from minimlir.dialects._fusion import FusionKind
from minimlir.passes.graph._op_pattern import OpPattern, edge_pattern, op_pattern


def test_every_graph_op_declares_one_fusion_kind():
    missing = [op.name for op in graph.Graph.operations if len(op.get_traits_of_type(FusionKind)) != 1]
    assert missing == []


def test_a_slice_with_runtime_bounds_is_opaque():
    x = create_ssa_value(TensorType(f32, [8]))
    assert op_pattern(graph.SliceOp(x, [0], [4], [1])) == OpPattern.INJECTIVE
    n = create_ssa_value(IndexType())
    assert op_pattern(graph.SliceOp(x, [0], [0], [1], dyn_ends=[(0, n)])) == OpPattern.OPAQUE


@pytest.mark.parametrize(
    "cls,kind",
    [
        (graph.ReluOp, OpPattern.ELEMWISE),
        (graph.CastOp, OpPattern.ELEMWISE),
        (graph.AddOp, OpPattern.BROADCAST),
        (graph.WhereOp, OpPattern.BROADCAST),
        (graph.TransposeOp, OpPattern.INJECTIVE),
        (graph.ReshapeOp, OpPattern.INJECTIVE),
        (graph.GatherOp, OpPattern.INJECTIVE),
        (graph.ReduceSumOp, OpPattern.COMM_REDUCE),
        (graph.SoftmaxOp, OpPattern.COMM_REDUCE),
        (graph.Conv2dOp, OpPattern.OUT_EWISE_FUSABLE),
        (graph.MatMulOp, OpPattern.OUT_EWISE_FUSABLE),
        (graph.ParamOp, OpPattern.OPAQUE),
        (graph.CallKernelOp, OpPattern.OPAQUE),
    ],
)
def test_kinds(cls, kind):
    assert cls.get_trait(FusionKind) == FusionKind(kind)


def test_kind_order_is_tvms():
    assert (
        OpPattern.ELEMWISE < OpPattern.BROADCAST < OpPattern.INJECTIVE < OpPattern.COMM_REDUCE
        < OpPattern.OUT_EWISE_FUSABLE < OpPattern.OPAQUE
    )


def test_broadcast_edge_is_elementwise_in_a_full_shape_input():
    full = create_ssa_value(TensorType(f32, [2, 3]))
    row = create_ssa_value(TensorType(f32, [3]))
    add = graph.AddOp(full, row)
    assert op_pattern(add) == OpPattern.BROADCAST
    assert edge_pattern(add, full) == OpPattern.ELEMWISE
    assert edge_pattern(add, row) == OpPattern.BROADCAST
    relu = graph.ReluOp(full)
    assert edge_pattern(relu, full) == OpPattern.ELEMWISE
