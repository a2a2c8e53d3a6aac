"""Small IR helpers of the loop level: constants, insertion points, loop bodies, materializing
affine forms. Used by the Schedule API (api.py) and the schedule rules."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from xdsl.dialects import arith, func
from xdsl.dialects.builtin import IndexType, IntegerAttr
from xdsl.ir import Operation, OpResult, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from minimlir.dialects import loop, mem
from minimlir.passes.loop.schedule.affine import AffineForm, atom_name, is_symbol
from minimlir.passes.loop.schedule.errors import ScheduleError

# ----------------------------------------------------------------------------------------------
# Small IR helpers


def const_index(v: SSAValue) -> int | None:
    """The value of an index constant, or of a `mem.dim` of a static dim; else None."""
    if isinstance(v, OpResult) and isinstance(v.owner, mem.DimOp):
        shape = v.owner.source.type.get_shape()  # type: ignore[union-attr]
        d = shape[v.owner.index.value.data]
        return d if d >= 0 else None
    if isinstance(v, OpResult) and isinstance(v.owner, arith.ConstantOp):
        attr = v.owner.value
        if isinstance(attr, IntegerAttr):
            return attr.value.data
    return None


def kernel_of(op: Operation) -> func.FuncOp:
    p = op
    while p is not None and not loop.is_kernel(p):
        p = p.parent_op()
    if p is None:
        raise ScheduleError("operation is not inside a loop kernel", op)
    return p  # type: ignore[return-value]


def iconst(kernel: func.FuncOp, value: int) -> SSAValue:
    """An index constant at the kernel entry (reused when one is already there)."""
    entry = kernel.body.block
    for op in entry.ops:
        if isinstance(op, arith.ConstantOp) and isinstance(op.result.type, IndexType):
            if const_index(op.result) == value:
                return op.result
    c = arith.ConstantOp(IntegerAttr(value, IndexType()))
    first = entry.first_op
    assert first is not None
    Rewriter.insert_op(c, InsertPoint.before(first))
    return c.result


def top_level_ancestor(op: Operation, kernel: func.FuncOp) -> Operation:
    while op.parent_op() is not kernel:
        parent = op.parent_op()
        assert parent is not None
        op = parent
    return op


def symbol_point(values: Iterable[SSAValue], op: Operation) -> InsertPoint:
    """Where to compute a function of `values` used by `op`: at kernel level (so the result is a
    symbol for the affine analysis) when every value is a symbol, else right before `op`."""
    if all(is_symbol(v) for v in values):
        kernel = kernel_of(op)
        return InsertPoint.before(top_level_ancestor(op, kernel))
    return InsertPoint.before(op)


def emit(op: Operation, ip: InsertPoint) -> SSAValue:
    Rewriter.insert_op(op, ip)
    return op.results[0]


def materialize_form(form: AffineForm, kernel: func.FuncOp, ip: InsertPoint) -> SSAValue:
    """Arith ops computing `form` at `ip` (constants come from the kernel entry)."""
    acc: SSAValue | None = None
    for v, c in form.coeffs.items():
        term = v if abs(c) == 1 else emit(arith.MuliOp(v, iconst(kernel, abs(c))), ip)
        if acc is None:
            acc = term if c > 0 else emit(arith.SubiOp(iconst(kernel, 0), term), ip)
        else:
            acc = emit(arith.AddiOp(acc, term) if c > 0 else arith.SubiOp(acc, term), ip)
    if acc is None:
        return iconst(kernel, form.const)
    if form.const > 0:
        acc = emit(arith.AddiOp(acc, iconst(kernel, form.const)), ip)
    elif form.const < 0:
        acc = emit(arith.SubiOp(acc, iconst(kernel, -form.const)), ip)
    return acc


def materialize_min(forms: Sequence[AffineForm], kernel: func.FuncOp, ip: InsertPoint) -> SSAValue:
    vals = [materialize_form(f, kernel, ip) for f in forms]
    acc = vals[0]
    for v in vals[1:]:
        acc = emit(arith.MinSIOp(acc, v), ip)
    return acc


def materialize_max(forms: Sequence[AffineForm], kernel: func.FuncOp, ip: InsertPoint) -> SSAValue:
    vals = [materialize_form(f, kernel, ip) for f in forms]
    acc = vals[0]
    for v in vals[1:]:
        acc = emit(arith.MaxSIOp(acc, v), ip)
    return acc


def move_ops(ops: Sequence[Operation], ip: InsertPoint) -> None:
    for op in ops:
        op.detach()
        Rewriter.insert_op(op, ip)


def body_ops(for_op: loop.ForOp) -> list[Operation]:
    """The body ops of a loop, without the terminator."""
    return [op for op in for_op.body.block.ops if not isinstance(op, loop.YieldOp)]


def erase_dead_loops(start: Operation | None) -> None:
    """From `start` upward: drop unused pure arith ops and loops left with an empty body."""
    cur = start
    while isinstance(cur, loop.ForOp):
        changed = True
        while changed:
            changed = False
            for op in reversed(body_ops(cur)):
                if op.dialect_name() == "arith" and all(not r.uses for r in op.results):
                    op.detach()
                    op.erase()
                    changed = True
        if body_ops(cur):
            return
        parent = cur.parent_op()
        cur.detach()
        cur.erase()
        cur = parent


def loop_name(for_op: loop.ForOp) -> str:
    return atom_name(for_op.induction_var)


def require_normalized(for_op: loop.ForOp, what: str) -> None:
    if const_index(for_op.lb) != 0 or const_index(for_op.step) != 1:
        raise ScheduleError(
            f"{what}: loop {loop_name(for_op)} must start at 0 with step 1", for_op
        )


