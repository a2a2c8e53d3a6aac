"""Small IR helpers of the loop level: constants, insertion points, loop bodies, materializing
affine forms. Used by the Schedule API (api.py) and the schedule rules."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from xdsl.dialects import arith, func
from xdsl.dialects.builtin import IntegerAttr
from xdsl.ir import Attribute, Operation, OpResult, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from minimlir.dialects import loop, mem
from minimlir.dialects.builder import Builder, ConstPool, Index
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


class _EntryConstants(ConstPool):
    """The kernel's entry constants as the builder's pool: an existing `arith.constant` of the
    value at the entry is reused, a new one goes before the entry's first op."""

    def __init__(self, kernel: func.FuncOp):
        super().__init__(kernel.body.block)

    def get(self, builder: Builder, value: int, typ: Attribute) -> SSAValue | None:
        entry = self.entry
        assert entry is not None
        for op in entry.ops:
            if isinstance(op, arith.ConstantOp) and op.result.type == typ:
                if const_index(op.result) == value:
                    return op.result
        c = builder.make_constant(value, typ)
        first = entry.first_op
        assert first is not None
        Rewriter.insert_op(c, InsertPoint.before(first))
        return c.results[0]


def builder_at(kernel: func.FuncOp, ip: InsertPoint) -> Builder:
    """The shared builder at `ip`, constants from `kernel`'s entry."""
    return Builder(ip, _EntryConstants(kernel))


def iconst(kernel: func.FuncOp, value: int) -> SSAValue:
    """An index constant at the kernel entry (reused when one is already there)."""
    entry = kernel.body.block
    return builder_at(kernel, InsertPoint.at_start(entry)).constant(value)


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
    b = builder_at(kernel, ip)
    acc: Index | None = None
    for v, c in form.coeffs.items():
        term = b.imul(v, abs(c))
        if acc is None:
            acc = term if c > 0 else b.isub(0, term)
        else:
            acc = b.iadd(acc, term) if c > 0 else b.isub(acc, term)
    if acc is None:
        return b.index(form.const)
    return b.index(b.iadd(acc, form.const) if form.const >= 0 else b.isub(acc, -form.const))


def _materialize_fold(forms: Sequence[AffineForm], kernel: func.FuncOp, ip: InsertPoint, kind: str) -> SSAValue:
    b = builder_at(kernel, ip)
    vals = [materialize_form(f, kernel, ip) for f in forms]
    acc: Index = vals[0]
    for v in vals[1:]:
        acc = b.imin(acc, v) if kind == "min" else b.imax(acc, v)
    return b.index(acc)


def materialize_min(forms: Sequence[AffineForm], kernel: func.FuncOp, ip: InsertPoint) -> SSAValue:
    return _materialize_fold(forms, kernel, ip, "min")


def materialize_max(forms: Sequence[AffineForm], kernel: func.FuncOp, ip: InsertPoint) -> SSAValue:
    return _materialize_fold(forms, kernel, ip, "max")


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


