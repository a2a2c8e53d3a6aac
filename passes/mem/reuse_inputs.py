"""An output takes the buffer of an input that dies at the call (onnxruntime's in-place reuse).

Runs after graph-bufferize (and mem-concat-in-place), before mem-plan, on each graph-level
function. For a call of a kernel marked `loop.inplace = [[a, o], ...]` (loop-mark-inplace: output o
may share input a's buffer; loop-schedule keeps that true), output o becomes input a when

  * both are static heap buffers of this function (`mem.alloc`, no `mem.result_slot`) of one type,
  * a is passed once to this call and this call is its last use (before it, only other calls use
    it or a `mem.view` of it; no subrange or return of it: nothing reads it afterwards),
  * every use of o is at or after the call, and o is not returned.

    %r = mem.alloc() : memref<1x256x3136xf32>
    func.call @conv_a(%x, %r) …
    %y = mem.alloc() : memref<1x256x3136xf32>
    func.call @conv_add_relu(%w, %h, %b, %r, %y) …          (loop.inplace = [[3, 4]])
    mem.dealloc %r : memref<1x256x3136xf32>
    func.call @next(%y, …) …
    mem.dealloc %y : memref<1x256x3136xf32>
    ==>
    %r = mem.alloc() : memref<1x256x3136xf32>
    func.call @conv_a(%x, %r) …
    func.call @conv_add_relu(%w, %h, %b, %r, %r) …
    func.call @next(%r, …) …
    mem.dealloc %r : memref<1x256x3136xf32>

A chain of such calls (ResNet's residual adds, one per block of a stage) keeps one buffer. The pass
reports at each function how many outputs it placed in their inputs.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter
from xdsl.traits import SymbolTable

from minimlir.dialects import mem
from minimlir.passes._diagnostics import emit_remark
from minimlir.passes.graph.bufferize import RESULT_SLOT_ATTR, is_graph_function, memref_aliases
from minimlir.passes.loop.inplace import inplace_pairs
from minimlir.passes.mem.concat_in_place import static_heap_alloc


def _plain(v: SSAValue, block: Block) -> mem.AllocOp | None:
    """The alloc of `v` when it is a static heap buffer of `block` that is not a result slot."""
    op = static_heap_alloc(v, block)
    return op if op is not None and RESULT_SLOT_ATTR not in op.attributes else None


def _returned(v: SSAValue) -> bool:
    """`v` or a memref derived from it reaches a func.return."""
    return any(isinstance(use.operation, func.ReturnOp) for x in memref_aliases(v) for use in x.uses)


class _FunctionRewrite:
    def __init__(self, module: ModuleOp, f: func.FuncOp):
        self.module = module
        self.block: Block = f.body.block
        self.order: dict[Operation, int] = {}

    def _dies_here(self, a: SSAValue, call: func.CallOp) -> bool:
        """Only calls before this one use `a` or a view of it (a reshape a 1x1 conv run as a conv
        reads), this call passes it once, and it is freed after."""
        at = self.order[call]
        work = [a]
        while work:
            v = work.pop()
            for use in v.uses:
                op = use.operation
                if op.parent is not self.block:
                    return False
                if isinstance(op, mem.DeallocOp) and v is a and self.order[op] > at:
                    continue
                if isinstance(op, mem.ViewOp):
                    work.append(op.result)
                    continue
                if op is call and v is a or (isinstance(op, func.CallOp) and self.order[op] < at):
                    continue
                return False
        return sum(1 for v in call.arguments if v is a) == 1

    def _after(self, o: SSAValue, call: func.CallOp) -> bool:
        at = self.order[call]
        for use in o.uses:
            top = self.block.find_ancestor_op_in_block(use.operation)
            if top is None or self.order[top] < at:
                return False
        return not _returned(o)

    def run(self) -> int:
        placed = 0
        self.order = {op: k for k, op in enumerate(self.block.ops)}
        for call in [op for op in self.block.ops if isinstance(op, func.CallOp)]:
            callee = SymbolTable.lookup_symbol(self.module, call.callee)
            if callee is None:
                continue
            for a, o in inplace_pairs(callee):
                if max(a, o) >= len(call.arguments):
                    continue
                x, y = call.arguments[a], call.arguments[o]
                ax, ay = _plain(x, self.block), _plain(y, self.block)
                if (ax is None or ay is None or x is y or x.type != y.type
                        or not self._dies_here(x, call) or not self._after(y, call)):
                    continue
                for use in list(x.uses):
                    if isinstance(use.operation, mem.DeallocOp):
                        Rewriter.erase_op(use.operation)
                y.replace_all_uses_with(x)
                Rewriter.erase_op(ay)
                placed += 1
        return placed


@dataclass(frozen=True)
class MemReuseInputsPass(ModulePass):
    """Outputs of in-place kernels take the buffer of an input that dies at the call (module
    docstring)."""

    name = "mem-reuse-inputs"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for f in [o for o in op.ops if is_graph_function(o)]:
            assert isinstance(f, func.FuncOp)
            if len(f.body.blocks) != 1:
                continue
            placed = _FunctionRewrite(op, f).run()
            if placed:
                emit_remark(f, f"outputs in their inputs' buffers: {placed}")
