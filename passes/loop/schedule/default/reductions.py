"""Row reductions the CPU can vectorize: the combine of a reduction along the innermost loop may
be reassociated.

A softmax's max and sum, a layer-norm's mean and variance, a ReduceSum over the last axis are
blocks `acc[r] = combine(acc[r], f(x[r, k]))` whose reduce variable `k` is the innermost loop.
Evaluated in order, each element waits for the previous one (4 cycles per `addf` or `maximumf`):
a 64-float row costs ~256 cycles of latency. Marking the combine `reassoc` lets LLVM's loop
vectorizer keep several vector partial results (W lanes × its interleave count) and combine them
at the end of the row, as onnxruntime's MLAS reductions do. `maximumf`/`minimumf` are
associative, so their result is exact; a sum is rounded in a different order (the usual
difference between a vectorized and a sequential sum, as in every BLAS and onnxruntime).

Only blocks whose innermost enclosing loop runs a reduce variable are marked: a matmul's or a
conv's reduction sits outside its register tile and keeps its order. The knob
`generic.reassoc_reductions` (default on) turns it off.
"""

from __future__ import annotations

from xdsl.dialects import arith, func
from xdsl.dialects.arith import FastMathFlagsAttr
from xdsl.dialects.builtin import Float32Type, Float64Type
from xdsl.dialects.utils.fast_math import FastMathFlag

from minimlir.dialects import loop, mem
from minimlir.passes.loop.schedule.affine import reduces_along

COMBINES = (arith.AddfOp, arith.MulfOp, arith.MaximumfOp, arith.MinimumfOp)
_REASSOC = FastMathFlagsAttr([FastMathFlag.REASSOC])


def _combine(block: loop.BlockOp) -> arith.AddfOp | arith.MulfOp | arith.MaximumfOp | arith.MinimumfOp | None:
    """The op of `acc[…] = combine(acc[…], e)` in a block holding one store, or None."""
    stores = [o for o in block.body.walk() if isinstance(o, mem.StoreOp)]
    if len(stores) != 1:
        return None
    st = stores[0]
    op = st.value.owner
    if not isinstance(op, COMBINES):
        return None
    for v in op.operands:
        ld = v.owner
        if (isinstance(ld, mem.LoadOp) and ld.memref is st.memref
                and list(ld.indices) == list(st.indices) and len(list(v.uses)) == 1):
            return op
    return None


def mark_reassociable_reductions(kernel: func.FuncOp) -> list[str]:
    """Mark `reassoc` the combine of every reduction block whose innermost loop runs one of its
    reduce variables (see the module docstring); returns the block names marked."""
    done = []
    for blk in loop.blocks_of(kernel):
        if "reduce" not in blk.kinds or (loop.block_kind(blk) or "").startswith(("matmul", "conv")):
            continue
        parent = blk.parent_op()
        while parent is not None and not isinstance(parent, loop.ForOp):
            parent = parent.parent_op()
        if parent is None:
            continue
        if not reduces_along(blk, parent.induction_var):
            continue
        op = _combine(blk)
        if op is None or not isinstance(op.result.type, Float32Type | Float64Type):
            continue
        op.properties["fastmath"] = _REASSOC
        done.append(blk.block_name.data)
    return done
