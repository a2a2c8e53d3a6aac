"""Merge adjacent parallel loops of a kernel into one, so one call wakes the thread pool once.

A fused kernel whose blocks were scheduled one by one (a matmul's elementwise epilogue, softmax,
layer norm) ends as a row of top-level parallel loops over the same rows; every one of them is one
`GOMP_parallel` fork-join (the BERT-like encoder ran 148 of them per call, the 7-op GELU epilogue 7),
and each sweeps a whole temporary through memory. Two neighbours

    loop.for %i = %lb to %ub step %s parallel { A(%i) }
    loop.for %j = %lb to %ub step %s parallel { B(%j) }

become `loop.for %i … parallel { A(%i); B(%i) }` when that cannot change a result: the same
bounds (same values or equal constants), only `arith.constant`s between them, and every buffer
that one of them writes and the other touches is indexed by the loop's own induction variable at
one and the same dim in every access of both loops (not the last dim of a vector access), so
iteration %i of B reads and writes only the slice that iteration %i of A wrote or read. Buffers
must be kernel arguments or kernel-level `mem.alloc`/`mem.alloca` (distinct values, no views:
the kernel's arguments do not alias, see loop-outline-parallel's `llvm.noalias`); any other op
with a memref operand in either loop, or a nested parallel loop, refuses the merge.

Runs in `loop-schedule` after `lower_scheduled` (the unit batch loops that wrap each block's nest at
scheduling time are gone by then); serial loops are left alone.
"""

from __future__ import annotations

from xdsl.dialects import arith
from xdsl.dialects.builtin import IntegerAttr, MemRefType, VectorType, i64
from xdsl.ir import Block, BlockArgument, Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from minimlir.dialects import loop, mem
from minimlir.passes.loop.schedule.default.threshold import MIN_PARALLEL_ITERS_ATTR, _const


def _same(a: SSAValue, b: SSAValue) -> bool:
    if a is b:
        return True
    ca, cb = _const(a), _const(b)
    return ca is not None and ca == cb


def _accesses(for_op: loop.ForOp, kernel_block: Block) -> dict[SSAValue, list[tuple[int | None, bool]]] | None:
    """memref -> [(dim indexed by the loop's IV or None, is_write)] for memrefs defined outside the
    loop; None when the loop has an op the merge cannot reason about."""
    iv = for_op.body.block.args[0]
    out: dict[SSAValue, list[tuple[int | None, bool]]] = {}
    for op in for_op.body.walk():
        if isinstance(op, loop.ForOp) and op is not for_op and op.kind.data == "parallel":
            return None
        if isinstance(op, mem.LoadOp | mem.StoreOp):
            m = op.memref
            if _defined_inside(m, for_op):
                continue
            if not _plain_buffer(m, kernel_block):
                return None
            idx = list(op.indices)
            rank = len(idx)
            vec = isinstance((op.result.type if isinstance(op, mem.LoadOp) else op.value.type), VectorType)
            dims = [d for d, v in enumerate(idx) if v is iv and not (vec and d == rank - 1)]
            out.setdefault(m, []).append((dims[0] if len(dims) == 1 else None, isinstance(op, mem.StoreOp)))
            continue
        for v in op.operands:
            if isinstance(v.type, MemRefType) and not _defined_inside(v, for_op):
                return None
    return out


def _defined_inside(v: SSAValue, for_op: loop.ForOp) -> bool:
    return for_op.is_ancestor(v.owner.parent_op() if isinstance(v.owner, Block) else v.owner)


def _plain_buffer(v: SSAValue, kernel_block: Block) -> bool:
    if isinstance(v, BlockArgument):
        return v.block is kernel_block
    return isinstance(v.owner, mem.AllocOp | mem.AllocaOp) and v.owner.parent_block() is kernel_block


def _can_merge(a: loop.ForOp, b: loop.ForOp, kernel_block: Block) -> bool:
    if not (_same(a.lb, b.lb) and _same(a.ub, b.ub) and _same(a.step, b.step)):
        return False
    acc_a, acc_b = _accesses(a, kernel_block), _accesses(b, kernel_block)
    if acc_a is None or acc_b is None:
        return False
    for m in acc_a.keys() & acc_b.keys():
        both = acc_a[m] + acc_b[m]
        if not any(w for _, w in both):
            continue  # read by both: no dependence
        dims = {d for d, _ in both}
        if len(dims) != 1 or None in dims:
            return False
    return True


def _merge(a: loop.ForOp, b: loop.ForOp, between: list[Operation]) -> None:
    for c in between:
        c.detach()
        Rewriter.insert_op(c, InsertPoint.before(a))
    a_block, b_block = a.body.block, b.body.block
    b_block.args[0].replace_all_uses_with(a_block.args[0])
    term = a_block.last_op
    assert isinstance(term, loop.YieldOp)
    for op in list(b_block.ops):
        if isinstance(op, loop.YieldOp):
            continue
        op.detach()
        Rewriter.insert_op(op, InsertPoint.before(term))
    ma, mb = a.attributes.get(MIN_PARALLEL_ITERS_ATTR), b.attributes.get(MIN_PARALLEL_ITERS_ATTR)
    if ma is None or mb is None:  # one of them always runs parallel: so does the merged loop
        a.attributes.pop(MIN_PARALLEL_ITERS_ATTR, None)
    else:  # the merged body does the work of both: fewer iterations pay for the fork-join
        a.attributes[MIN_PARALLEL_ITERS_ATTR] = IntegerAttr(min(ma.value.data, mb.value.data), i64)
    Rewriter.erase_op(b)


def merge_parallel_loops(kernel: Operation) -> int:
    """Merge runs of adjacent compatible top-level parallel loops; returns how many merges."""
    block = kernel.regions[0].blocks[0]
    merged = 0
    cur: loop.ForOp | None = None
    between: list[Operation] = []
    for op in list(block.ops):
        if isinstance(op, loop.ForOp) and op.kind.data == "parallel":
            if cur is not None and _can_merge(cur, op, block):
                _merge(cur, op, between)
                merged += 1
            else:
                cur = op
            between = []
        elif isinstance(op, arith.ConstantOp) and cur is not None:
            between.append(op)
        else:
            cur, between = None, []
    return merged


__all__ = ["merge_parallel_loops"]
