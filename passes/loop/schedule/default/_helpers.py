"""Helpers shared by the default schedule rules: accumulator caching, FMA contraction, vector
width marks, consumer fusion."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xdsl.dialects import arith, func, math
from xdsl.dialects.builtin import AnyFloat, StringAttr, UnitAttr
from xdsl.ir import Block, Operation
from xdsl.rewriter import InsertPoint, Rewriter

from minimlir.dialects import loop, mem
from minimlir.passes.loop.schedule.affine import AffineForm, affine_of
from minimlir.passes.loop.schedule.api import (
    Schedule,
    ScheduleError,
    const_index,
    iconst,
    local_form,
    materialize_form,
    upper_forms,
)
from minimlir.passes.loop.schedule.default import transaction
from minimlir.passes.loop.schedule.default.threshold import trip_count

# ----------------------------------------------------------------------------------------------
# Helpers


def _direct_loops(blk: loop.BlockOp) -> list[loop.ForOp] | None:
    """The block's loops if they are exactly one per iteration var, in order, each binding
    the loop variable itself (the legalizer's untouched shape)."""
    loops = loop.block_loops(blk)
    if len(loops) != len(blk.bindings):
        return None
    for l, b in zip(loops, blk.bindings):
        if b is not l.induction_var:
            return None
        if const_index(l.lb) != 0 or const_index(l.step) != 1:
            return None
    return loops


def _contract_fma(blk: loop.BlockOp) -> None:
    """acc + a*b (arith.addf of an arith.mulf with one use) -> math.fma(a, b, acc)."""
    for op in list(blk.body.block.ops):
        if not isinstance(op, arith.AddfOp) or not isinstance(op.result.type, AnyFloat):
            continue
        for mul_side, acc in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
            m = mul_side.owner
            if isinstance(m, arith.MulfOp) and mul_side.has_one_use():
                fma = math.FmaOp(m.lhs, m.rhs, acc)
                from xdsl.rewriter import InsertPoint, Rewriter

                Rewriter.insert_op(fma, InsertPoint.before(op))
                op.result.replace_all_uses_with(fma.result)
                op.detach()
                op.erase()
                m.detach()
                m.erase()
                break


def _cache_accumulator(kernel: func.FuncOp, blk: loop.BlockOp, tile: list[int], name: str,
                       red: loop.ForOp | None = None) -> None:
    """Accumulate the output tile in a local buffer (TVM's cache_write to "local"):

        for k1 { for t... { blk: C[v] = f(C[v], ...) } }
     ->
        for t... { name_in: acc[t] = C[v] }              (before the reduction loop)
        for k1 { for t... { blk: acc[t] = f(acc[t], ...) } }
        for t... { name_out: C[v] = acc[t] }             (after it)

    `tile` gives the static extents of the loops under the reduction loop k1 (the loops right
    around the block, innermost last); the last one is a vector of W lanes inside loop j1, so acc
    is mr x (nv*W). acc is indexed by the tile loops' own variables: after full unrolling every
    access is at a constant offset and LLVM's SROA keeps the tile in registers. `red` (default:
    the loop right outside the tile loops) is the loop the copies go around; every loop from it
    to the tile loops must be a reduction loop."""
    from xdsl.dialects.builtin import MemRefType
    from xdsl.rewriter import InsertPoint, Rewriter

    from minimlir.passes.loop.schedule.api import emit, iconst

    loops = loop.block_loops(blk)
    t_loops = loops[-len(tile):]
    red = red if red is not None else loops[-1 - len(tile)]
    stores = [op for op in blk.body.walk() if isinstance(op, mem.StoreOp)]
    loads = [op for op in blk.body.walk() if isinstance(op, mem.LoadOp)]
    if len(stores) != 1 or stores[0].parent_block() is not blk.body.block:
        raise ScheduleError("cache accumulator: the block must store once", blk)
    out = stores[0].memref
    outs = [ld for ld in loads if ld.memref is out]
    if len(outs) != 1 or list(outs[0].indices) != list(stores[0].indices):
        raise ScheduleError("cache accumulator: the block must read its output once, where it stores", blk)
    args = list(blk.body.block.args)
    out_forms = [local_form(i, blk) for i in stores[0].indices]
    if any(f is None or not f.atoms <= set(args) for f in out_forms):
        raise ScheduleError("cache accumulator: output indices must be affine in iteration variables", blk)
    elem = stores[0].value.type
    # acc shape: (tile[0], ..., tile[-2] * tile[-1]) with the last two loops merged
    shape = [*tile[:-2], tile[-2] * tile[-1]] if len(tile) >= 2 else list(tile)
    acc_op = mem.AllocaOp(MemRefType(elem, shape))
    acc_op.attributes[loop.PRIVATE_ATTR] = UnitAttr()  # loaded from the output before every use: per thread
    entry = kernel.body.block
    Rewriter.insert_op(acc_op, InsertPoint.at_start(entry))
    acc = acc_op.results[0]
    acc.name_hint = name

    def acc_index(ivs: list, ip: InsertPoint) -> list:
        if len(ivs) >= 2:
            last = emit(arith.MuliOp(ivs[-2], iconst(kernel, tile[-1])), ip)
            last = emit(arith.AddiOp(last, ivs[-1]), ip)
            return [*ivs[:-2], last]
        return list(ivs)

    # the block itself
    ip = InsertPoint.before(blk)
    idx = acc_index([l.induction_var for l in t_loops], ip)
    ld = outs[0]
    new_ld = mem.LoadOp(acc, idx, ld.result.type)
    Rewriter.insert_op(new_ld, InsertPoint.before(ld))
    ld.result.replace_all_uses_with(new_ld.result)
    ld.detach()
    ld.erase()
    st = stores[0]
    Rewriter.insert_op(mem.StoreOp(st.value, acc, idx), InsertPoint.before(st))
    st.detach()
    st.erase()
    # copy nests before / after the reduction loop: clones of the tile loops
    spatial = [k for k, kd in enumerate(blk.kinds) if kd == "spatial"]
    if any(args.index(a) not in spatial for f in out_forms for a in f.atoms):
        raise ScheduleError("cache accumulator: output indices use a reduction variable", blk)
    for suffix, where in (("_in", InsertPoint.before(red)), ("_out", InsertPoint.after(red))):
        top = t_loops[0].clone()
        Rewriter.insert_op(top, where)
        clone_blk = next(o for o in top.walk() if isinstance(o, loop.BlockOp))
        cl_loops = [top, *[o for o in top.walk() if isinstance(o, loop.ForOp) and o is not top]]
        bip = InsertPoint.before(clone_blk)
        cidx = acc_index([l.induction_var for l in cl_loops], bip)
        nb = loop.BlockOp(name + suffix, [clone_blk.bindings[k] for k in spatial], ["spatial"] * len(spatial))
        nargs = nb.body.block.args
        sub = {a: AffineForm.atom(nargs[spatial.index(args.index(a))]) for a in args if args.index(a) in spatial}
        oidx = [materialize_form(f.substitute_all(sub), kernel, InsertPoint.before(nb.body.block.last_op))
                for f in out_forms]
        body_ip = InsertPoint.before(nb.body.block.last_op)
        if suffix == "_in":
            v = emit(mem.LoadOp(out, oidx, elem), body_ip)
            Rewriter.insert_op(mem.StoreOp(v, acc, cidx), body_ip)
        else:
            v = emit(mem.LoadOp(acc, cidx, elem), body_ip)
            Rewriter.insert_op(mem.StoreOp(v, out, oidx), body_ip)
        nb.location = blk.location
        Rewriter.insert_op(nb, bip)
        parent = clone_blk.parent_op()
        clone_blk.detach()
        clone_blk.erase()
        # drop index arithmetic that only fed the reduce bindings (it uses the reduction loop)
        changed = True
        while changed:
            changed = False
            for o in list(parent.body.block.ops):  # type: ignore[union-attr]
                if o.dialect_name() == "arith" and all(not r.uses for r in o.results):
                    o.detach()
                    o.erase()
                    changed = True
        # index values from the reduction loop must not survive in the copies
        for o in top.walk():
            for v in o.operands:
                if _defined_in(v, red):
                    raise ScheduleError("cache accumulator: tile bounds depend on the reduction loop", o)


def _forward_init(kernel: func.FuncOp, init: loop.BlockOp, acc_in: loop.BlockOp) -> None:
    """`acc_in` (acc[t] = C[v]) runs right after `init` (C[v] = f(v)) over the same tile: give
    it acc[t] = f(v) and drop the init nest, so C is written once (by acc_out) per tile.

        for t { init: C[v] = f(v) }          for t { acc_in: acc[t] = f(v) }
        for t { acc_in: acc[t] = C[v] }  ->"""
    i_loops, a_loops = loop.block_loops(init), loop.block_loops(acc_in)
    common = 0
    while common < min(len(i_loops), len(a_loops)) and i_loops[common] is a_loops[common]:
        common += 1
    i_own, a_own = i_loops[common:], a_loops[common:]
    if len(i_own) != len(a_own) or not i_own or i_own[0].next_op is not a_own[0]:
        raise ScheduleError("forward init: the init and acc_in nests do not match", acc_in)
    sub = {}
    for il, al in zip(i_own, a_own):
        if any(affine_of(x) is None or affine_of(x) != affine_of(y) for x, y in
               ((il.lb, al.lb), (il.step, al.step))):
            raise ScheduleError("forward init: loop bounds differ", acc_in)
        sub[il.induction_var] = AffineForm.atom(al.induction_var)
    for il, al in zip(i_own, a_own):
        fi, fa = upper_forms(il.ub), upper_forms(al.ub)  # min(...) bounds of guarded tiles
        if fi is None or fa is None or sorted(map(str, (f.substitute_all(sub) for f in fi))) != sorted(
            map(str, fa)
        ):
            raise ScheduleError("forward init: loop bounds differ", acc_in)
    i_stores = [o for o in init.body.walk() if isinstance(o, mem.StoreOp)]
    a_loads = [o for o in acc_in.body.walk() if isinstance(o, mem.LoadOp)]
    if len(i_stores) != 1 or len(a_loads) != 1 or i_stores[0].memref is not a_loads[0].memref:
        raise ScheduleError("forward init: unexpected init / acc_in bodies", acc_in)
    st, ld = i_stores[0], a_loads[0]
    i_args, a_args = list(init.body.block.args), list(acc_in.body.block.args)
    vmap = {}
    for si, li in zip(st.indices, ld.indices):
        if si not in i_args or li not in a_args:
            raise ScheduleError("forward init: indices are not iteration variables", acc_in)
        k, j = i_args.index(si), a_args.index(li)
        fi, fa = affine_of(init.bindings[k]), affine_of(acc_in.bindings[j])
        if fi is None or fa is None or fi.substitute_all(sub) != fa:
            raise ScheduleError("forward init: the blocks bind different points", acc_in)
        vmap[si] = li
    if len(vmap) != len(i_args):
        raise ScheduleError("forward init: init variable not in the stored index", acc_in)
    clone_block_ops(init, vmap, {st}, InsertPoint.before(ld))
    ld.result.replace_all_uses_with(vmap.get(st.value, st.value))
    ld.detach()
    ld.erase()
    i_own[0].detach()
    i_own[0].erase()


def clone_block_ops(src: loop.BlockOp, vmap: dict, skip: set, ip: InsertPoint) -> None:
    """Clone the body ops of `src` (not its yield, not those in `skip`) at `ip`, mapping values
    through `vmap` (which the clones extend)."""
    for o in list(src.body.block.ops):
        if o in skip or isinstance(o, loop.YieldOp):
            continue
        Rewriter.insert_op(o.clone(value_mapper=vmap), ip)


def _defined_in(v, op: Operation) -> bool:
    owner = v.owner
    if isinstance(owner, Operation):
        return op.is_ancestor(owner)
    parent = owner.parent_op()
    return parent is not None and op.is_ancestor(parent)


VECTOR_WIDTH_ATTR = "loop.vector_width"


def fit_width(root: Operation, width: int, along: loop.ForOp | None = None,
              buffers: set | None = None) -> int:
    """The widest of width, width/2, … >= 4 that fits the static last dim of every buffer
    accessed under `root` (mem verifies that a vector access fits its last dim); 0 if none.
    Only accesses that move with loop `along` (or to `buffers`) count, if given. A load with
    stride s along `along` spans s*(w-1)+1 elements (loop-lower-vectors' strided loads)."""
    w = width
    for op in root.walk():
        if isinstance(op, mem.LoadOp | mem.StoreOp):
            if buffers is not None and op.memref not in buffers:
                continue
            stride = 1
            if along is not None:
                forms = [affine_of(i) for i in op.indices]
                if all(f is not None and not f.coeff(along.induction_var) for f in forms):
                    continue
                if forms and forms[-1] is not None:
                    stride = max(1, abs(forms[-1].coeff(along.induction_var)))
            shape = op.memref.type.get_shape()  # type: ignore[union-attr]
            if shape and shape[-1] >= 0:
                while w >= 4 and shape[-1] < stride * (w - 1) + 1:
                    w //= 2
    return w if w >= 4 else 0


def _short_loop_width(w: int, extent: int | None) -> int:
    """For a short static loop, the width (w, w/2, … >= 4) with the least work counting the
    scalar remainder: a vector iteration as two scalar ones, ties to the shorter remainder
    (27 outputs: 3 x 8 + 3, not 16 + 11; 56: 7 x 8, not 3 x 16 + 8)."""
    if w == 0 or extent is None or extent >= 4 * w:
        return w
    best, cost = w, 2 * (extent // w) + extent % w
    c = w // 2
    while c >= 4:
        if 2 * (extent // c) + extent % c <= cost:
            best, cost = c, 2 * (extent // c) + extent % c
        c //= 2
    return best


def split_loop(for_op: loop.ForOp, at, suffix: str) -> loop.ForOp:
    """Split `for_op` (lb to ub) at `at` (an index value): it runs lb to `at`, and a copy placed
    right after it runs `at` to ub; the copy's blocks are named <block><suffix>. Returns the copy
    (a ragged last tile's loop nest: the matmul rule's column panels, the conv rule's columns)."""
    rest = for_op.clone()
    Rewriter.insert_op(rest, InsertPoint.after(for_op))
    for_op.operands = [for_op.lb, at, for_op.step]
    rest.operands = [at, rest.ub, rest.step]
    for b in rest.walk():
        if isinstance(b, loop.BlockOp):
            b.block_name = StringAttr(b.block_name.data + suffix)
    return rest


def exact_tile_loops(kernel: func.FuncOp, names: Sequence[str], extent: int) -> list[str]:
    """Give the guarded first tile loop (`for t < min(extent, E - i*extent)`: E % extent != 0, or E
    dynamic) of each named block, the third loop from its innermost, the constant trip count
    `extent`, so it unrolls and the accumulator stays in registers; returns the blocks changed
    (blocks not in the kernel are skipped). clamp_tile_binding then keeps their points inside E."""
    from minimlir.passes.loop.schedule.api import iconst

    out = []
    s = Schedule(kernel)
    for name in names:
        if not any(b.block_name.data == name for b in loop.blocks_of(kernel)):
            continue
        t = s.get_loops(s.get_block(name))[-3]
        if const_index(t.ub) is None:
            t.operands = [t.lb, iconst(kernel, extent), t.step]
            out.append(name)
    return out


def clamp_tile_binding(kernel: func.FuncOp, names: Sequence[str], pos: Callable[[str], int], last,
                       what: str) -> None:
    """The blocks of ragged tiles (exact_tile_loops) read and write point min(v, last) instead of v,
    v their binding `pos(name)`. The extra points of the last tile recompute point `last` into
    their own accumulator slots (the accumulator is indexed by the tile loops; every copy loads
    before any copy stores: acc_in, the reduction, acc_out) and store the same value there, so the
    result is unchanged. The clamped value is computed at the start of the tile loop's body (the
    third loop from the innermost), outside the vector loop, so it is the same for every lane (an
    index loop-lower-vectors accepts); the bindings stay affine."""
    from minimlir.passes.loop.schedule.api import emit

    s = Schedule(kernel)
    for name in names:
        blk = s.get_block(name)
        t = s.get_loops(blk)[-3]
        p = pos(name)
        form = affine_of(blk.bindings[p])
        inner = {l.induction_var for l in s.get_loops(blk)[-2:]}
        if form is None or t.induction_var not in form.atoms or form.atoms & inner:
            raise AssertionError(f"{what} binding of '{name}' is not a function of the tile loops")
        body_ip = InsertPoint.at_start(t.body.block)
        v = materialize_form(form, kernel, body_ip)
        clamped = emit(arith.MinSIOp(v, last), InsertPoint.after(v.owner) if isinstance(v.owner, Operation)
                       else body_ip)
        _rebind(blk, p, clamped)


def shift_tile_binding(kernel: func.FuncOp, names: Sequence[str], pos: Callable[[str], int], tile: int,
                       last_start: int, what: str) -> None:
    """The blocks of ragged tiles (exact_tile_loops) compute point min(s, last_start) + t instead of
    s + t (s the tile's first point, t its tile loop's variable, extent `tile`; their binding
    `pos(name)`): the last tile moves back to end at the last point and recomputes points the tile
    before it computed, so every lane is a distinct point and a tile stored as one vector along the
    dim stays inside it (clamp_tile_binding instead repeats the last point in the extra lanes). The
    recomputed points get the same values (a tile only reads what the kernel does not write), so the
    result is unchanged; the tiles along the dim must run on one thread. The start is computed
    before the tile loop, so it is the same for every lane."""
    from minimlir.passes.loop.schedule.api import emit, iconst

    s = Schedule(kernel)
    for name in names:
        blk = s.get_block(name)
        p = pos(name)
        form = affine_of(blk.bindings[p])
        ts = [l for l in s.get_loops(blk) if form is not None and form.coeff(l.induction_var) == 1
              and const_index(l.lb) == 0 and const_index(l.ub) == tile]
        if form is None or len(ts) != 1:
            raise AssertionError(f"{what} binding of '{name}' is not a tile's start plus its tile loop")
        t = ts[0]
        start = AffineForm({v: c for v, c in form.coeffs.items() if v is not t.induction_var}, form.const)
        v = materialize_form(start, kernel, InsertPoint.before(t))
        shifted = emit(arith.MinSIOp(v, iconst(kernel, last_start)), InsertPoint.before(t))
        point = emit(arith.AddiOp(shifted, t.induction_var), InsertPoint.at_start(t.body.block))
        _rebind(blk, p, point)


def _rebind(blk: loop.BlockOp, p: int, value) -> None:
    """Uses of `blk`'s iteration variable `p` read `value` instead (its binding stays)."""
    arg = blk.body.block.args[p]
    for u in list(arg.uses):
        u.operation.operands = [value if x is arg else x for x in u.operation.operands]


def _mark_width(for_op: loop.ForOp, width: int) -> None:
    from xdsl.dialects.builtin import IntegerAttr

    for_op.attributes[VECTOR_WIDTH_ATTR] = IntegerAttr(width, 64)


def _later_blocks(kernel: func.FuncOp, blk: loop.BlockOp) -> list[loop.BlockOp]:
    blocks = loop.blocks_of(kernel)
    return blocks[blocks.index(blk) + 1:]


_EXPENSIVE = (math.ErfOp, math.TanhOp, math.ExpOp, math.LogOp, math.PowFOp, math.SqrtOp, math.RsqrtOp,
              arith.DivfOp)


_INLINE_COPY_OPS = 24  # a value read several times is recomputed at each read only up to this size


def _inline_epilogue(kernel: func.FuncOp, blk: loop.BlockOp) -> list[str]:
    """compute-inline the elementwise blocks after `blk` (its epilogue: bias, residual, GELU,
    ...) that write a kernel-local buffer read only by later elementwise blocks, first to last,
    so a chain `add -> div -> erf -> add -> mul -> mul` becomes one block reading the matmul's
    output and writing the kernel's: no intermediate buffer, one loop nest to fuse and
    vectorize (inline_elementwise's rules). Returns the inlined block names."""
    prefix = blk.block_name.data
    return inline_elementwise(
        kernel, [b for b in _later_blocks(kernel, blk) if not b.block_name.data.startswith(prefix)])


def inline_elementwise(kernel: func.FuncOp, candidates: list[loop.BlockOp] | None = None) -> list[str]:
    """compute-inline each of `candidates` (default: every block of the kernel), first to last,
    that is elementwise (no reduction, no init) and writes a kernel-local buffer read only by
    later elementwise blocks: a fused chain `mul -> mul -> add -> tanh -> add -> mul` (GPT-2's
    GELU) becomes one block reading the kernel's inputs and writing its output, with no
    intermediate buffer (and no heap allocation per call when the dims are dynamic). A block
    whose value is read at several places is inlined only when it is cheap (no division or
    transcendental: recomputing `x + bias` twice costs less than a buffer round trip;
    recomputing an erf would not), and small (a chain of cheap blocks each read twice would
    otherwise grow exponentially). Returns the inlined block names."""
    from minimlir.passes.loop.schedule.affine import reads_writes

    done = []
    # by name: a refused attempt restores a clone of the kernel body, so blocks are looked up afresh
    names = [b.block_name.data for b in (loop.blocks_of(kernel) if candidates is None else candidates)]
    for want in names:
        b = next((x for x in loop.blocks_of(kernel) if x.block_name.data == want), None)
        if b is None or "reduce" in b.kinds or b.has_init:
            continue
        _, writes = reads_writes(b)
        if len(writes) != 1:
            continue
        (buf,) = writes
        if not isinstance(buf.owner, mem.AllocOp | mem.AllocaOp):
            continue
        readers = [r for r in _later_blocks(kernel, b) if buf in reads_writes(r)[0]]
        if not readers or any("reduce" in r.kinds or r.has_init for r in readers):
            continue
        n_loads = sum(1 for r in readers for o in r.body.walk() if isinstance(o, mem.LoadOp) and o.memref is buf)
        if n_loads > 1 and (any(isinstance(o, _EXPENSIVE) for o in b.body.walk())
                            or len(list(b.body.walk())) > _INLINE_COPY_OPS):
            continue  # recomputing it at each use would cost more than its buffer
        name = b.block_name.data
        if transaction.attempt(kernel, lambda s, name=name: s.compute_inline(s.get_block(name))):
            done.append(name)
    return done


def _fuse_consumers(kernel: func.FuncOp, blk: loop.BlockOp, anchor_of: Callable[[Schedule], loop.ForOp]) -> list[str]:
    """reverse-compute-at every later elementwise block at the anchor loop (each try atomic);
    returns the names of the blocks moved."""
    done = []
    for b in _later_blocks(kernel, blk):
        name = b.block_name.data
        if "reduce" in b.kinds or name.startswith(blk.block_name.data):
            continue

        def go(s: Schedule, name=name):
            s.reverse_compute_at(s.get_block(name), anchor_of(s))

        if transaction.attempt(kernel, go):
            done.append(name)
    return done


def _vectorize_fused(kernel: func.FuncOp, names: list[str], width: int) -> None:
    """Vectorize the innermost loop of each fused consumer block (the generic rule skips nests
    that already hold a parallel loop, so nothing else would), at the widest width <= `width`
    its accesses along that loop fit."""
    for name in names:
        def vec(s: Schedule, name=name) -> None:
            inner = s.get_loops(s.get_block(name))[-1]
            w = fit_width(inner, width, along=inner)
            if w == 0:
                raise ScheduleError(f"vectorize fused consumer: no vector width fits '{name}'", inner)
            s.vectorize(inner)
            _mark_width(inner, w)

        transaction.attempt(kernel, vec, marks_only=True)


def _unique_names(kernel: func.FuncOp) -> bool:
    names = [b.block_name.data for b in loop.blocks_of(kernel)]
    return len(names) == len(set(names))


def cores() -> int:
    """Cores of the compiling host, at most 8: the default count of a small-M matmul's column chunks.
    (Not backend.parallel.cpu_count: passes do not import the backend, tests/unit/test_layering.py.)"""
    import os

    return max(1, min(8, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1))


_CACHES: dict[int, int] = {}


def _cache_bytes(level: int, default: int) -> int:
    """The compiling host's per-core data (or unified) cache of `level` in bytes (Linux sysfs,
    cpu0), `default` where it cannot be read."""
    if level not in _CACHES:
        size = default
        try:
            import glob

            for d in glob.glob("/sys/devices/system/cpu/cpu0/cache/index*"):
                with open(f"{d}/level") as f:
                    if f.read().strip() != str(level):
                        continue
                with open(f"{d}/type") as f:
                    if f.read().strip() not in ("Data", "Unified"):
                        continue
                with open(f"{d}/size") as f:
                    text = f.read().strip().upper()
                mult = {"K": 1 << 10, "M": 1 << 20}.get(text[-1:], 1)
                size = int(text.rstrip("KM")) * mult
        except (OSError, ValueError):
            pass
        _CACHES[level] = size
    return _CACHES[level]


def l2_bytes() -> int:
    """The compiling host's per-core L2 cache in bytes (cpu0's unified level-2 cache), 1 MiB where
    it cannot be read."""
    return _cache_bytes(2, 1 << 20)


def l1d_bytes() -> int:
    """The compiling host's per-core L1 data cache in bytes, 32 KiB where it cannot be read."""
    return _cache_bytes(1, 32 << 10)


def _reads_from_outside(blk: loop.BlockOp, kernel: func.FuncOp) -> bool:
    """Every operand in `blk`'s body is defined in the block or at the kernel's top level (so a
    clone of the body is valid anywhere in the kernel)."""
    top = kernel.body.block
    return all(_defined_in(v, blk) or (v.owner if isinstance(v.owner, Block) else v.owner.parent_block()) is top
               for o in blk.body.walk() for v in o.operands)


def _static(v, blk: loop.BlockOp) -> int | None:
    """The constant `v` is: an index constant, or an iteration variable of `blk` bound to one
    (a constant, or the variable of a loop of one trip: its lower bound)."""
    args = list(blk.body.block.args)
    if v in args:
        v = blk.bindings[args.index(v)]
    owner = v.owner
    if isinstance(owner, Block) and isinstance(owner.parent_op(), loop.ForOp) and trip_count(owner.parent_op()) == 1:
        return const_index(owner.parent_op().lb)
    return const_index(v)


def fold_epilogue_into(kernel: func.FuncOp, acc_out: loop.BlockOp, st_out: mem.StoreOp,
                       others: Sequence[loop.BlockOp] = (), fixed_dim: int | None = None) -> bool:
    """Fold the one elementwise block reading the kernel-local buffer C that `st_out` (acc_out's
    store of the finished accumulator) writes into acc_out, before that store:

        acc_out:  C[v] = acc[t]                 Y[w] = f(C[w], bias[w], R[w], ...)
        ==>
        acc_out:  Y[v] = f(acc[t], bias[v], R[v], ...)      (C gone: no full-size intermediate)

    so the epilogue (bias, residual add, activation) is applied where the accumulator is in
    registers, and C, a full-size heap buffer written by acc_out and read back by the epilogue, is
    gone. `others` are the blocks that may also touch C (the tile, acc_in). The reader must read C
    only at its own point and nothing else may touch Y or write what the reader reads. With
    `fixed_dim`, its other reads must not vary along C's dim `fixed_dim` (a conv's output column:
    acc_out stores across the tile's vector lanes there, so a residual read along the row becomes
    a scalar gather, slower than the row-vectorized epilogue; a per-channel bias or scale is fine).
    Returns True when it folded, False when it left the kernel as it was."""
    from minimlir.passes.loop.schedule.affine import reads_writes

    c_buf = st_out.memref
    blocks = loop.blocks_of(kernel)
    readers = [b for b in blocks
               if b is not acc_out and b not in others and c_buf in reads_writes(b)[0] | reads_writes(b)[1]]
    if not isinstance(c_buf.owner, mem.AllocOp | mem.AllocaOp) or len(readers) != 1:
        return False
    (epi,) = readers
    if "reduce" in epi.kinds or epi.has_init:
        return False
    e_reads, e_writes = reads_writes(epi)
    c_loads = [o for o in epi.body.walk() if isinstance(o, mem.LoadOp) and o.memref is c_buf]
    e_stores = [o for o in epi.body.walk() if isinstance(o, mem.StoreOp)]
    e_args = list(epi.body.block.args)
    if (not c_loads or len(e_stores) != 1 or len(e_writes) != 1 or c_buf in e_writes
            or any(list(ld.indices) != list(c_loads[0].indices) for ld in c_loads)):
        return False
    # C[idx] read at the epilogue's own point (a GELU reads it twice, at the same point): each
    # index one of its variables (each once) or a constant that acc_out stores at too (a unit dim)
    vmap = {}
    for ei, si in zip(c_loads[0].indices, st_out.indices, strict=True):
        if ei in e_args and ei not in vmap:
            vmap[ei] = si
        elif ei in e_args or const_index(ei) is None or const_index(ei) != _static(si, acc_out):
            return False
    for a in e_args:  # a unit dim's variable the load of C does not use: its one value
        if a not in vmap and _static(a, epi) is not None:
            vmap[a] = iconst(kernel, _static(a, epi))
    if len(vmap) != len(e_args):
        return False
    if fixed_dim is not None:
        along = c_loads[0].indices[fixed_dim]
        if any(isinstance(o, mem.LoadOp) and o.memref is not c_buf and along in _index_vars(o)
               for o in epi.body.walk()):
            return False
    y_buf = e_stores[0].memref
    for b in blocks:  # nothing else touches Y or writes what the epilogue reads
        if b is epi:
            continue
        r, w = reads_writes(b)
        if y_buf in r or y_buf in w or (w & (e_reads - {c_buf})):
            return False
    e_loops = loop.block_loops(epi)
    e_top = e_loops[0] if e_loops else epi
    if loop.blocks_of(e_top) != [epi] or not _reads_from_outside(epi, kernel):
        return False
    for ld in c_loads:
        vmap[ld.result] = st_out.value
    clone_block_ops(epi, vmap, set(c_loads), InsertPoint.before(st_out))
    st_out.detach()
    st_out.erase()
    e_top.detach()
    e_top.erase()
    for u in list(c_buf.uses):
        if isinstance(u.operation, mem.DeallocOp):
            u.operation.detach()
            u.operation.erase()
    if not list(c_buf.uses):
        owner = c_buf.owner
        owner.detach()
        owner.erase()
    return True


def _index_vars(ld: mem.LoadOp) -> set:
    """The values a load's indices are computed from through arith (block arguments, constants)."""
    seen, todo = set(), list(ld.indices)
    while todo:
        v = todo.pop()
        if v in seen:
            continue
        seen.add(v)
        if isinstance(v.owner, Operation) and v.owner.dialect_name() == "arith":
            todo.extend(v.owner.operands)
    return seen
