"""Lower `cf.br` / `cf.cond_br` / `cf.assert` to `llvm.br` / `llvm.cond_br`.

    cf.cond_br %c, ^body(%i : index), ^exit     ->  llvm.cond_br %c, ^body(%i64 : i64), ^exit

Block arguments get their LLVM types (index -> i64); uses that are not converted yet see
an `unrealized_conversion_cast` back. `cf.assert %ok, "msg"` becomes a branch to a block
that calls `abort()` (declared once as an external llvm.func):

    ^bb:  …  llvm.cond_br %ok, ^cont, ^fail
    ^fail:   llvm.call @abort() ; llvm.unreachable
    ^cont:   (rest of ^bb)
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import cf, llvm
from xdsl.dialects.builtin import ModuleOp, SymbolTable
from xdsl.ir import Block
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern
from xdsl.rewriter import BlockInsertPoint, InsertPoint, Rewriter

from minimlir.dialects import llvm_ext as ext
from minimlir.passes.to_llvm._conversion import convert
from minimlir.passes.to_llvm._common import convert_block_args, operands_to_llvm


class LowerBranch(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: cf.BranchOp, rewriter: PatternRewriter) -> None:
        convert_block_args(op.successor)
        args = operands_to_llvm(op.arguments, rewriter, op)
        rewriter.replace(op, [llvm.BrOp(op.successor, *args)], [])


class LowerCondBranch(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: cf.ConditionalBranchOp, rewriter: PatternRewriter) -> None:
        convert_block_args(op.then_block)
        convert_block_args(op.else_block)
        then_args = operands_to_llvm(op.then_arguments, rewriter, op)
        else_args = operands_to_llvm(op.else_arguments, rewriter, op)
        new = llvm.CondBrOp(op.cond, op.then_block, then_args, op.else_block, else_args)
        rewriter.replace(op, [new], [])


@dataclass
class LowerAssert(RewritePattern):
    module: ModuleOp
    declared: bool = False  # @abort is known to be declared (lookup_symbol scans the module)

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: cf.AssertOp, rewriter: PatternRewriter) -> None:
        if not self.declared and SymbolTable.lookup_symbol(self.module, "abort") is None:
            decl = llvm.FuncOp("abort", llvm.LLVMFunctionType([]), linkage=llvm.LinkageAttr("external"))
            Rewriter.insert_op(decl, InsertPoint.at_end(self.module.body.block))
        self.declared = True
        block = op.parent_block()
        assert block is not None and block.parent is not None
        # split: everything after the assert moves to ^cont
        cont = Block()
        Rewriter.insert_block(cont, BlockInsertPoint.after(block))
        after = op.next_op
        while after is not None:
            nxt = after.next_op
            after.detach()
            cont.add_op(after)
            after = nxt
        fail = Block([llvm.CallOp("abort"), llvm.UnreachableOp()])
        Rewriter.insert_block(fail, BlockInsertPoint.after(cont))
        rewriter.replace(op, [llvm.CondBrOp(op.arg, cont, [], fail, [])], [])


@dataclass(frozen=True)
class ConvertCfToLlvmPass(ModulePass):
    """cf -> llvm branches (block arguments with LLVM types)."""

    name = "convert-cf-to-llvm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        ext.load_into(ctx)
        # asserts first (they split blocks), then the branches: two phases of one walk
        phases = [
            {cf.AssertOp: LowerAssert(op)},
            {cf.BranchOp: LowerBranch(), cf.ConditionalBranchOp: LowerCondBranch()},
        ]
        convert(op, phases, illegal=("cf",))
