"""Lower the `vector` ops the vectorizer emits (loop-lower-vectors, loop-schedule) to `llvm`.

    %v = vector.broadcast %s : f32 to vector<8xf32>
  becomes (as MLIR's convert-vector-to-llvm: one insert, then a zero-mask shuffle)
    %u = llvm.mlir.undef : vector<8xf32>
    %c0 = llvm.mlir.constant(0 : i32) : i32
    %i = llvm.insertelement %s, %u[%c0 : i32] : vector<8xf32>
    %v = llvm.shufflevector %i, %u [0, 0, 0, 0, 0, 0, 0, 0] : vector<8xf32>

    %r = vector.fma %a, %b, %c : vector<8xf32>   ->   %r = llvm.intr.fma(%a, %b, %c) : …

    %e = vector.shuffle %v, %v [0, 2, 4, 6] : vector<7xf32>, vector<7xf32>
                                                   ->   %e = llvm.shufflevector %v, %v [0, 2, 4, 6] : vector<7xf32>

A broadcast of a 1-lane vector is a shuffle of that vector; a broadcast to the same type is
the value itself. Scalars of type `index` are cast to i64 at the boundary (passes/_llvm_common.py).
Vector loads and stores are mem ops (convert-mem-to-llvm); element ops on vectors are arith/math.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import llvm, vector
from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, ModuleOp, VectorType, i32
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)

from minimlir.dialects import llvm_ext as ext
from minimlir.passes._diagnostics import emit_error
from minimlir.passes.to_llvm._conversion import convert
from minimlir.passes.to_llvm._common import convert_type, from_llvm, to_llvm


class LowerBroadcast(RewritePattern):
    """vector.broadcast scalar -> insertelement into lane 0 + all-zero shufflevector."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: vector.BroadcastOp, rewriter: PatternRewriter):
        rtype = op.vector.type
        assert isinstance(rtype, VectorType)
        if rtype.get_num_dims() != 1:
            emit_error(op, f"convert-vector-to-llvm: only 1-D vectors are supported, got {rtype}")
        target = convert_type(rtype)
        assert isinstance(target, VectorType)
        width = rtype.get_shape()[0]
        src = to_llvm(op.source, rewriter, op)
        mask = DenseArrayBase.from_list(i32, [0] * width)
        if isinstance(src.type, VectorType):
            if src.type == target:
                rewriter.replace(op, [], [op.source])
                return
            if src.type.get_shape() != (1,):
                emit_error(op, "convert-vector-to-llvm: can only broadcast a scalar or a 1-lane vector")
            shuf = llvm.ShuffleVectorOp(src, src, mask, target)
            casts, vals = from_llvm([shuf.res], [rtype])
            rewriter.replace(op, [shuf, *casts], vals)
            return
        undef = llvm.UndefOp(target)
        zero = llvm.ConstantOp(IntegerAttr(0, i32), i32)
        ins = llvm.InsertElementOp(undef.res, src, zero.result)
        shuf = llvm.ShuffleVectorOp(ins.res, undef.res, mask, target)
        casts, vals = from_llvm([shuf.res], [rtype])
        rewriter.replace(op, [undef, zero, ins, shuf, *casts], vals)


class LowerFma(RewritePattern):
    """vector.fma -> llvm.intr.fma on the vector type."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: vector.FMAOp, rewriter: PatternRewriter):
        a, b, c = (to_llvm(v, rewriter, op) for v in (op.lhs, op.rhs, op.acc))
        new = llvm.FMAOp(a, b, c)
        casts, vals = from_llvm([new.res], [op.res.type])
        rewriter.replace(op, [new, *casts], vals)


class LowerShuffle(RewritePattern):
    """vector.shuffle of 1-D vectors -> llvm.shufflevector (the same mask, as i32)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: vector.ShuffleOp, rewriter: PatternRewriter):
        rtype = op.result.type
        assert isinstance(rtype, VectorType)
        if rtype.get_num_dims() != 1 or op.v1.type.get_num_dims() != 1 or op.v1.type != op.v2.type:
            emit_error(op, "convert-vector-to-llvm: only shuffles of two 1-D vectors of one type are supported")
        a, b = to_llvm(op.v1, rewriter, op), to_llvm(op.v2, rewriter, op)
        mask = DenseArrayBase.from_list(i32, list(op.mask.get_values()))
        shuf = llvm.ShuffleVectorOp(a, b, mask, convert_type(rtype))
        casts, vals = from_llvm([shuf.res], [rtype])
        rewriter.replace(op, [shuf, *casts], vals)


@dataclass(frozen=True)
class ConvertVectorToLlvmPass(ModulePass):
    """vector.broadcast / vector.fma / vector.shuffle -> llvm (insertelement + shufflevector,
    llvm.intr.fma, shufflevector)."""

    name = "convert-vector-to-llvm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        ext.load_into(ctx)
        # erase_dead: dead pure ops the walk meets go too (as the greedy applier this pass used did)
        patterns = {vector.BroadcastOp: LowerBroadcast(), vector.FMAOp: LowerFma(), vector.ShuffleOp: LowerShuffle()}
        convert(op, patterns, illegal=("vector",), erase_dead=True)
