"""Concat without copies: the producers of a concat's inputs write straight into their part of its output.

Runs after graph-bufferize, before mem-plan, on each graph-level function. A call of a concat kernel
(a kernel graph-legalize marked `loop.concat_axis`: it is exactly `out = concat(ins…, axis)`) whose
output part for each input is one contiguous run of the output (every output dim before the axis is
1, all shapes static: a channel concat at batch 1, as in SqueezeNet, Inception and DenseNet) is
removed. Each input that is a fresh heap buffer of this function (a `mem.alloc` some kernel writes,
or a `mem.view` reshape of one: a 1x1 conv run as a matmul) becomes a `mem.subrange` of the output,
so its producer writes there; any other input (a function argument, a param, a constant, a buffer
that is returned, an input met twice or already part of another concat) is copied into its part
with `mem.copy`, where the call was:

    %a = mem.alloc() : memref<1x64x55x55xf32>
    func.call @conv_1(%x, %a) …
    %b = mem.alloc() : memref<1x64x55x55xf32>
    func.call @conv_2(%x, %b) …
    %y = mem.alloc() : memref<1x128x55x55xf32>
    func.call @concat_0(%a, %b, %y) …
    mem.dealloc %a …
    mem.dealloc %b …
    ==>
    %y = mem.alloc() : memref<1x128x55x55xf32>                       (moved up to the first part)
    %a = mem.subrange %y[%c0] : memref<1x128x55x55xf32> -> memref<1x64x55x55xf32>
    func.call @conv_1(%x, %a) …
    %b = mem.subrange %y[%c193600] : memref<1x128x55x55xf32> -> memref<1x64x55x55xf32>
    func.call @conv_2(%x, %b) …

The output's `mem.dealloc` moves after the last use of the output or of any part (a part may be
read after the concat). A concat of concats (DenseNet's growing feature maps) nests: the inner
output becomes a part of the outer one, and its own parts follow it, so a dense block's layers all
write into one buffer. Other concats (a dynamic shape, a part that is not contiguous, a fused concat)
are left as they are. graph-fuse keeps a concat this pass will remove (`in_place`) in a kernel of
its own, so that the concat meets its producers here.

Correct because every buffer here is written once, by the call that produces it, before any read
(graph-bufferize's form): writing it inside the output instead changes no value read, and the parts
of one output are disjoint. The pass reports at each function how many concats it removed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import IndexType, IntegerAttr, MemRefType, ModuleOp, ShapedType
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import SymbolTable

from minimlir.dialects import graph, mem
from minimlir.dialects.loop import CONCAT_AXIS_ATTR
from minimlir.passes._diagnostics import emit_remark
from minimlir.passes.graph.bufferize import RESULT_SLOT_ATTR, is_graph_function, last_use_in_block


def concat_axis(module: ModuleOp, call: func.CallOp) -> int | None:
    """The axis of a call of a concat kernel (declared or defined in `module`), else None."""
    callee = SymbolTable.lookup_symbol(module, call.callee)
    attr = callee.attributes.get(CONCAT_AXIS_ATTR) if callee is not None else None
    return attr.value.data if isinstance(attr, IntegerAttr) else None


def part_offsets(ins: list[Attribute], out: Attribute, axis: int) -> list[int] | None:
    """The element offset of each input's part in the output (memref or tensor types), when every
    part is one contiguous run of the row-major output (static shapes, output dims before `axis` all
    1), else None."""
    if not isinstance(out, ShapedType) or not all(isinstance(t, ShapedType) for t in ins):
        return None
    shape = out.get_shape()
    if any(d < 0 for d in shape) or not 0 <= axis < len(shape) or math.prod(shape[:axis]) != 1:
        return None
    inner = math.prod(shape[axis + 1:])
    offsets, at = [], 0
    for t in ins:
        s = t.get_shape()
        if (len(s) != len(shape) or any(d < 0 for d in s) or t.get_element_type() != out.get_element_type()
                or any(a != b for k, (a, b) in enumerate(zip(s, shape)) if k != axis)):
            return None
        offsets.append(at * inner)
        at += s[axis]
    return offsets if at == shape[axis] else None


def in_place(op: Operation) -> bool:
    """Whether `op` is a graph.concat this pass will remove (its parts are contiguous): graph-fuse
    keeps such a concat in a kernel of its own, so that its producers can write into it."""
    return (isinstance(op, graph.ConcatOp)
            and part_offsets([v.type for v in op.inputs], op.result.type, op.axis.value.data) is not None)


def static_heap_alloc(v: SSAValue, block: Block) -> mem.AllocOp | None:
    """The `mem.alloc` of `v` when it is a static heap buffer of `block` at the arena's alignment
    (what these mem-level rewrites may re-place), else None."""
    op = v.owner
    if (isinstance(op, mem.AllocOp) and op.parent is block and not op.dims
            and op.alignment.value.data <= mem.DEFAULT_ALIGNMENT):
        return op
    return None


def _drop_deallocs(buffer: SSAValue) -> None:
    for use in list(buffer.uses):
        if isinstance(use.operation, mem.DeallocOp):
            Rewriter.erase_op(use.operation)


class _FunctionRewrite:
    def __init__(self, module: ModuleOp, f: func.FuncOp):
        self.module = module
        self.block: Block = f.body.block

    def _fresh(self, v: SSAValue) -> mem.AllocOp | None:
        """The alloc of `v` (through `mem.view` reshapes: a 1x1 conv run as a matmul writes
        [1, C, H*W]) when the input may become a part: a static heap buffer of this block that is
        not a function result (and so not yet a part of anything)."""
        while isinstance(v.owner, mem.ViewOp):
            v = v.owner.source
        op = static_heap_alloc(v, self.block)
        return op if op is not None and RESULT_SLOT_ATTR not in op.attributes else None

    def _const(self, value: int, before: Operation) -> SSAValue:
        c = arith.ConstantOp(IntegerAttr(value, IndexType()))
        Rewriter.insert_op(c, InsertPoint.before(before))
        return c.result

    def run(self) -> int:
        removed = 0
        for call in [op for op in self.block.ops if isinstance(op, func.CallOp)]:
            axis = concat_axis(self.module, call)
            if axis is None or len(call.arguments) < 2:
                continue
            *ins, out = call.arguments
            if not all(isinstance(v.type, MemRefType) for v in call.arguments):
                continue
            offsets = part_offsets([v.type for v in ins], out.type, axis)
            out_alloc = static_heap_alloc(out, self.block)
            if offsets is None or out_alloc is None:
                continue
            self._rewrite(call, out_alloc, offsets)
            removed += 1
        return removed

    def _rewrite(self, call: func.CallOp, out_alloc: mem.AllocOp, offsets: list[int]) -> None:
        out = out_alloc.result
        for k, off in enumerate(offsets):
            # re-read: making an earlier input a part replaced its uses here, so a value met twice
            # is a subrange the second time, not a fresh buffer, and is copied
            x = call.arguments[k]
            alloc = self._fresh(x)
            if alloc is None:  # copy it into its part, where the concat was
                part = mem.SubrangeOp(out, self._const(off, call), x.type)
                copy = mem.CopyOp(x, part.result)
                for o in (part, copy):
                    o.location = call.location
                    Rewriter.insert_op(o, InsertPoint.before(call))
                continue
            # the output exists before the part's producer: move its alloc up when it is later
            if self.block.get_operation_index(out_alloc) > self.block.get_operation_index(alloc):
                out_alloc.detach()
                Rewriter.insert_op(out_alloc, InsertPoint.before(alloc))
            _drop_deallocs(alloc.result)
            part = mem.SubrangeOp(out, self._const(off, alloc), alloc.result.type)
            part.location = alloc.location
            Rewriter.replace_op(alloc, part)
        Rewriter.erase_op(call)
        # the output lives until the last use of it or of any part (a part may be read later)
        _drop_deallocs(out)
        if any(isinstance(u.operation, func.ReturnOp) for u in out.uses) or RESULT_SLOT_ATTR in out_alloc.attributes:
            return
        last = last_use_in_block(out, self.block)
        free = mem.DeallocOp(out)
        free.location = out_alloc.location
        Rewriter.insert_op(free, InsertPoint.after(last if last is not None else out_alloc))


@dataclass(frozen=True)
class MemConcatInPlacePass(ModulePass):
    """Remove the copies of concats whose parts are contiguous: their inputs' producers write into
    the concat's output (see the module docstring)."""

    name = "mem-concat-in-place"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for f in [o for o in op.ops if is_graph_function(o)]:
            assert isinstance(f, func.FuncOp)
            if len(f.body.blocks) != 1:
                continue
            removed = _FunctionRewrite(op, f).run()
            if removed:
                emit_remark(f, f"concats in place: {removed}")
