"""Region analysis with min/max bounds: the box of a buffer a block touches under a loop (lo = max
of affine forms, hi = min of affine forms, so guarded tiles stay exact), and index forms over a block's
own iteration variables. compute-at / reverse-compute-at / cache-read ask it what a tile needs."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from xdsl.dialects import arith
from xdsl.dialects.builtin import IntegerAttr, VectorType
from xdsl.ir import BlockArgument, Operation, OpResult, SSAValue

from minimlir.dialects import loop, mem
from minimlir.passes.loop.schedule.affine import AffineForm, affine_of, atom_name, is_symbol
from minimlir.passes.loop.schedule.errors import ScheduleError
from minimlir.passes.loop.schedule.ir import const_index

# ----------------------------------------------------------------------------------------------
# Region analysis with min/max bounds (guarded tiles): lo = max(los), hi = min(his).

Bound = list[AffineForm]


def fold_static(f: AffineForm) -> AffineForm:
    """Replace `mem.dim` atoms of static dims by their value."""
    out = f
    for a in f.atoms:
        c = const_index(a)
        if c is not None:
            out = out.substitute(a, AffineForm.constant(c))
    return out


def _bound_forms(v: SSAValue, cls: type[Operation]) -> Bound | None:
    if isinstance(v, OpResult) and isinstance(v.owner, cls):
        a = _bound_forms(v.owner.operands[0], cls)
        b = _bound_forms(v.owner.operands[1], cls)
        return None if a is None or b is None else a + b
    f = affine_of(v)
    return None if f is None else [fold_static(f)]


def upper_forms(v: SSAValue) -> Bound | None:
    """`v` as min(forms) (arith.minsi of affine values), or None."""
    return _bound_forms(v, arith.MinSIOp)


def lower_forms(v: SSAValue) -> Bound | None:
    """`v` as max(forms) (arith.maxsi of affine values), or None."""
    return _bound_forms(v, arith.MaxSIOp)


def loop_bounds(for_op: loop.ForOp) -> tuple[Bound, Bound] | None:
    """(first, last) of the induction variable as (max-list, min-list); loop assumed non-empty."""
    step = const_index(for_op.step)
    firsts = lower_forms(for_op.lb)
    ubs = upper_forms(for_op.ub)
    if firsts is None or ubs is None or step is None or step < 1:
        return None
    if step > 1:
        if len(firsts) == 1 and len(ubs) == 1 and (ubs[0] - firsts[0]).is_constant:
            ext = (ubs[0] - firsts[0]).const
            return firsts, [firsts[0] + ((ext - 1) // step) * step]
    return firsts, [u - 1 for u in ubs]


def _subst(forms: Bound, var: SSAValue, pos: Bound, neg: Bound) -> Bound:
    out: Bound = []
    for f in forms:
        c = f.coeff(var)
        if c == 0:
            out.append(f)
        else:
            out.extend(f.substitute(var, r) for r in (pos if c > 0 else neg))
    return out


def eliminate(los: Bound, his: Bound, loops: Sequence[loop.ForOp]) -> tuple[Bound, Bound] | None:
    """Bound max(los) from below and min(his) from above while `loops` run their full ranges."""
    for for_op in reversed(loops):  # innermost first: inner bounds may use outer variables
        var = for_op.induction_var
        if not any(f.coeff(var) for f in (*los, *his)):
            continue
        rng = loop_bounds(for_op)
        if rng is None:
            return None
        firsts, lasts = rng
        los = prune(_subst(los, var, firsts, lasts), want_max=True)
        his = prune(_subst(his, var, lasts, firsts), want_max=False)
    return los, his


def leq(a: AffineForm, b: AffineForm, ctx: Sequence[loop.ForOp] = ()) -> bool:
    """a <= b for every value of the loops `ctx` (and every value of the symbols)."""
    d = fold_static(a - b)
    if d.is_constant:
        return d.const <= 0
    if not ctx:
        return False
    rng = eliminate([d], [d], ctx)
    if rng is None:
        return False
    # d <= min(his): one constant upper bound <= 0 is enough
    return any(h.is_constant and h.const <= 0 for h in rng[1])


def prune(forms: Bound, want_max: bool, ctx: Sequence[loop.ForOp] = ()) -> Bound:
    """Drop forms that never decide the min (want_max=False) / max of the list."""
    out: Bound = []
    for f in forms:
        if any(f == g for g in out):
            continue
        out.append(f)
    keep: Bound = []
    for i, f in enumerate(out):
        dominated = False
        for j, g in enumerate(out):
            if i == j:
                continue
            # min: f is redundant if some g <= f (ties: keep the first)
            if (leq(g, f, ctx) if not want_max else leq(f, g, ctx)) and (
                j < i or not (leq(f, g, ctx) if not want_max else leq(g, f, ctx))
            ):
                dominated = True
                break
        if not dominated:
            keep.append(f)
    return keep


@dataclass
class Box:
    """Per buffer dim: lo = max(los[d]), hi = min(his[d])."""

    los: list[Bound]
    his: list[Bound]

    def __str__(self) -> str:
        def show(forms: Bound, fn: str) -> str:
            return str(forms[0]) if len(forms) == 1 else f"{fn}({', '.join(map(str, forms))})"

        return ", ".join(
            f"[{show(lo, 'max')}, {show(hi, 'min')}]" for lo, hi in zip(self.los, self.his)
        )


def _min_of_maxes(a: Bound, b: Bound, ctx) -> Bound | None:
    # min(max A, max B) = max A if every a in A is <= some b in B
    if all(any(leq(x, y, ctx) for y in b) for x in a):
        return a
    if all(any(leq(y, x, ctx) for x in a) for y in b):
        return b
    return None


def _max_of_mins(a: Bound, b: Bound, ctx) -> Bound | None:
    # max(min A, min B) = min B if every b in B is >= some a in A
    if all(any(leq(x, y, ctx) for x in a) for y in b):
        return b
    if all(any(leq(y, x, ctx) for y in b) for x in a):
        return a
    return None


def merge_boxes(a: Box | None, b: Box, ctx: Sequence[loop.ForOp] = ()) -> Box | None:
    if a is None:
        return b
    los, his = [], []
    for la, ha, lb, hb in zip(a.los, a.his, b.los, b.his):
        lo, hi = _min_of_maxes(la, lb, ctx), _max_of_mins(ha, hb, ctx)
        if lo is None or hi is None:
            return None
        los.append(lo)
        his.append(hi)
    return Box(los, his)


def block_accesses(blk: loop.BlockOp) -> Iterator[Operation]:
    for region in (blk.body, blk.init):
        yield from region.walk()


def access_box(op: mem.LoadOp | mem.StoreOp, depth: int) -> Box | None:
    """Box of one access while its enclosing loops from index `depth` inward run fully."""
    forms = [affine_of(i) for i in op.indices]
    if any(f is None for f in forms):
        return None
    t = op.result.type if isinstance(op, mem.LoadOp) else op.value.type
    width = t.get_shape()[0] if isinstance(t, VectorType) else 1
    ranged = loop.enclosing_loops(op)[depth:]
    los, his = [], []
    for d, f in enumerate(forms):
        assert f is not None
        hi = f + (width - 1) if d == len(forms) - 1 else f
        rng = eliminate([f], [hi], ranged)
        if rng is None:
            return None
        los.append(rng[0])
        his.append(rng[1])
    return Box(los, his)


def region(
    blk: loop.BlockOp, buffer: SSAValue, depth: int, kinds: tuple[type, ...] = (mem.LoadOp, mem.StoreOp)
) -> Box | None:
    """What `blk` touches of `buffer` (accesses of the given kinds) while the block's loops from
    index `depth` inward run fully; forms over the loops outside and symbols. None if non-affine
    or not comparable; raises ScheduleError if the block does not access the buffer."""
    ctx = loop.block_loops(blk)[:depth]
    box: Box | None = None
    found = False
    for op in block_accesses(blk):
        if isinstance(op, (mem.CopyOp, mem.FillOp)) and buffer in op.operands:
            return None
        if not isinstance(op, kinds) or op.memref is not buffer:
            continue
        found = True
        b = access_box(op, depth)
        if b is None:
            return None
        box = merge_boxes(box, b, ctx)
        if box is None:
            return None
    if not found:
        raise ScheduleError(f"block '{blk.block_name.data}' does not access {atom_name(buffer)}", blk)
    return box


# ----------------------------------------------------------------------------------------------
# Index forms over a block's own iteration variables


def local_form(v: SSAValue, blk: loop.BlockOp) -> AffineForm | None:
    """Affine form of an index inside `blk` over its iteration variables (body args) and symbols;
    None if non-affine or if it uses an enclosing loop variable directly."""
    body_args = blk.body.block.args
    init_args = blk.init.block.args if blk.has_init else ()
    if isinstance(v, BlockArgument):
        if v in body_args:
            return AffineForm.atom(v)
        if v in init_args:
            return AffineForm.atom(body_args[init_args.index(v)])
    if isinstance(v, OpResult) and blk.is_ancestor(v.owner):
        op = v.owner
        if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
            return AffineForm.constant(op.value.value.data)
        if isinstance(op, (arith.AddiOp, arith.SubiOp, arith.MuliOp)):
            a, b = local_form(op.lhs, blk), local_form(op.rhs, blk)
            if a is None or b is None:
                return None
            if isinstance(op, arith.AddiOp):
                return a + b
            if isinstance(op, arith.SubiOp):
                return a - b
            if b.is_constant:
                return a * b.const
            if a.is_constant:
                return b * a.const
            return None
        return None
    if is_symbol(v):
        f = affine_of(v)
        return f if f is not None else AffineForm.atom(v)
    return None


def identity_map(
    blk: loop.BlockOp, indices: Sequence[SSAValue], unit_shape: Sequence[int] | None = None
) -> list[tuple[int, int]] | None:
    """If every index is `iter_var_k + c` (distinct k), the list of (k, c) per dim.
    With `unit_shape` (the accessed buffer's shape), an index that is the constant 0 in a dim of
    static size 1 is accepted too, as the entry (-1, 0): no variable moves along that dim (the
    legalizer's broadcast indexing, `C[0, i, j]` for a batch of 1), and its only point is 0."""
    args = list(blk.body.block.args)
    out: list[tuple[int, int]] = []
    for d, idx in enumerate(indices):
        f = local_form(idx, blk)
        if unit_shape is not None and f is not None and not f.coeffs and f.const == 0 and unit_shape[d] == 1:
            out.append((-1, 0))
            continue
        if f is None or len(f.coeffs) != 1:
            return None
        (atom, coeff), = f.coeffs.items()
        if coeff != 1 or atom not in args:
            return None
        out.append((args.index(atom), f.const))
    ks = [k for k, _ in out if k >= 0]
    if len(set(ks)) != len(ks):
        return None
    return out


def var_domain(blk: loop.BlockOp, k: int) -> tuple[Bound, Bound] | None:
    """Range of iteration variable k over all the block's loops (forms over symbols)."""
    f = affine_of(blk.bindings[k])
    if f is None:
        return None
    return eliminate([f], [f], loop.block_loops(blk))


