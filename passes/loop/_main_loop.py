"""Split a loop from 0 with step 1 into a main loop of step k and a remainder loop, for the
lowerings that put k iterations' work in one (loop-lower-unroll, loop-lower-vectors):

    loop.for %i = %c0 to %n step %c1 { B }    ->    loop.for %i = %c0 to %nk step %ck { <filled by the caller> }
                                                    loop.for %i = %nk to %n step %c1 { B }

%nk = n - n mod k (a constant when n is static); the remainder loop is the original one, erased
when k divides n.
"""

from __future__ import annotations

from xdsl.dialects import arith
from xdsl.ir import SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from minimlir.dialects import loop
from minimlir.passes.loop.schedule.api import const_index, emit, iconst, kernel_of, symbol_point


def add_main_loop(for_op: loop.ForOp, k: int) -> tuple[loop.ForOp, bool] | None:
    """Insert the empty main loop of step `k` before `for_op` and say whether iterations remain
    for `for_op`; None (nothing inserted) when the static trip count is below `k`."""
    kernel = kernel_of(for_op)
    extent = const_index(for_op.ub)
    if extent is not None:
        main = extent - extent % k
        if main == 0:
            return None
        main_end: SSAValue = iconst(kernel, main)
        remainder = extent % k != 0
    else:
        ip = symbol_point([for_op.ub], for_op)
        rem = emit(arith.RemSIOp(for_op.ub, iconst(kernel, k)), ip)
        main_end = emit(arith.SubiOp(for_op.ub, rem), ip)
        remainder = True
    main_loop = loop.ForOp(for_op.lb, main_end, iconst(kernel, k))
    main_loop.location = for_op.location
    Rewriter.insert_op(main_loop, InsertPoint.before(for_op))
    return main_loop, remainder


def keep_remainder(for_op: loop.ForOp, main_loop: loop.ForOp, remainder: bool) -> None:
    """Once the main loop is filled: `for_op` starts where it ends, or goes if nothing remains."""
    if remainder:
        for_op.operands = [main_loop.ub, for_op.ub, for_op.step]
    else:
        for_op.detach()
        for_op.erase()
