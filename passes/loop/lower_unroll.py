"""loop-lower-unroll: really unroll `unroll` loops (fully, or by their unroll_factor).

    loop.for %i = %c0 to %n step %c1 unroll(2) { B(%i) }
  becomes
    loop.for %i = %c0 to %n2 step %c2 { B(%i) ; B(%i + 1) }     %n2 = n - n mod 2
    loop.for %i = %n2 to %n step %c1 { B(%i) }                  (only when 2 may not divide n)

A full unroll (no factor; constant bounds) replaces the loop by one copy of its body per
iteration, with the induction variable a constant. Blocks are copied with the body, so a name
may appear several times afterwards: this is a lowering, run after scheduling.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from minimlir.dialects import loop
from minimlir.passes._diagnostics import emit_error
from minimlir.passes.loop._main_loop import add_main_loop, keep_remainder
from minimlir.passes.loop.schedule.api import body_ops, const_index, emit, iconst, kernel_of


def unroll_loop(for_op: loop.ForOp) -> None:
    kernel = kernel_of(for_op)
    factor = for_op.unroll_factor.value.data if for_op.unroll_factor is not None else None
    lb, ub, step = (const_index(v) for v in (for_op.lb, for_op.ub, for_op.step))
    if factor is None:
        if lb is None or ub is None or step is None:
            emit_error(for_op, "cannot fully unroll a loop with a dynamic trip count")
        ip = InsertPoint.before(for_op)
        for i in range(lb, ub, step):
            vmap: dict[SSAValue, SSAValue] = {for_op.induction_var: iconst(kernel, i)}
            for op in body_ops(for_op):
                Rewriter.insert_op(op.clone(value_mapper=vmap), ip)
        for_op.detach()
        for_op.erase()
        return
    if lb != 0 or step != 1:
        emit_error(for_op, "cannot unroll by a factor: the loop must start at 0 with step 1")
    for_op.properties["kind"] = StringAttr("serial")
    for_op.properties.pop("unroll_factor", None)
    if factor == 1:
        return
    split = add_main_loop(for_op, factor)
    if split is None:
        return
    main_loop, remainder = split
    mip = InsertPoint.before(main_loop.body.block.last_op)  # type: ignore[arg-type]
    for k in range(factor):
        iv = main_loop.induction_var
        if k:
            iv = emit(arith.AddiOp(iv, iconst(kernel, k)), mip)
        vmap = {for_op.induction_var: iv}
        for op in body_ops(for_op):
            Rewriter.insert_op(op.clone(value_mapper=vmap), mip)
    keep_remainder(for_op, main_loop, remainder)


@dataclass(frozen=True)
class LoopLowerUnrollPass(ModulePass):
    """Unroll every `unroll` loop (innermost first)."""

    name = "loop-lower-unroll"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        loops = [o for o in op.walk() if isinstance(o, loop.ForOp) and o.kind.data == "unroll"]
        for for_op in reversed(loops):
            unroll_loop(for_op)
