"""First, in every kernel: inline copy blocks (broadcast, transpose) whose buffer is kernel-local
and read only by reduction-free blocks."""

from __future__ import annotations

from xdsl.dialects import arith, func
from xdsl.dialects.builtin import IndexType

from minimlir.dialects import loop, mem
from minimlir.passes.loop.schedule.default import transaction


def _is_copy_block(blk: loop.BlockOp) -> bool:
    """A block that only moves data (loads, one store, index arithmetic, constants): a
    broadcast, transpose or reshape copy. Recomputing it at each use costs one load."""
    if "reduce" in blk.kinds or blk.has_init:
        return False
    for op in blk.body.block.ops:
        if isinstance(op, mem.LoadOp | mem.StoreOp | loop.YieldOp | arith.ConstantOp):
            continue
        if op.dialect_name() == "arith" and all(isinstance(r.type, IndexType) for r in op.results):
            continue
        return False
    return True


def inline_copies(kernel: func.FuncOp) -> list[str]:
    """compute-inline every copy block (_is_copy_block) that writes a kernel-local buffer read
    only by reduction-free blocks: `broadcast_to` then `transpose` of a splat weight becomes
    one store of the splat, with no intermediate buffer and no strided read of it. Copies that
    feed a reduction (a transpose into matmul) stay: their consumer reads them many times, and
    its schedule wants the contiguous layout. Returns the inlined block names."""
    from minimlir.passes.loop.schedule.affine import reads_writes

    done = []
    for blk in list(loop.blocks_of(kernel)):
        if not _is_copy_block(blk):
            continue
        _, writes = reads_writes(blk)
        if len(writes) != 1:
            continue
        (buf,) = writes
        if not isinstance(buf.owner, mem.AllocOp | mem.AllocaOp):
            continue
        readers = [b for b in loop.blocks_of(kernel) if b is not blk and buf in reads_writes(b)[0]]
        if not readers or any("reduce" in b.kinds or b.has_init for b in readers):
            continue
        name = blk.block_name.data
        if transaction.attempt(kernel, lambda s, name=name: s.compute_inline(s.get_block(name))):
            done.append(name)
    return done
