"""Loop schedule primitives over loop kernels (TVM's `tvm.tir.Schedule`, on loop/mem IR).

    sch = Schedule(module)                       # or Schedule(module, kernel="conv_0")
    conv = sch.get_block("conv2d")
    n, c, h, w, *red = sch.get_loops(conv)
    ho, hi = sch.split(h, [None, 16])
    wo, wi = sch.split(w, [None, 16])
    sch.reorder(ho, wo, hi, wi)
    sch.reverse_compute_at(sch.get_block("add"), wo)
    sch.vectorize(sch.get_loops(sch.get_block("add"))[-1])

Every primitive rewrites the IR in place and raises `ScheduleError` (with the op it is about)
when the request is illegal; the IR is then untouched. Block handles (`loop.block` ops) stay valid
across primitives; loop handles may not (split/reorder/fuse build new `loop.for` ops): use the
loops a primitive returns, or ask `get_loops` again.

Decisions (see each primitive's docstring):
  * split of an extent that the factor may not divide (dynamic, or static and non-divisible)
    guards the inner loop by its upper bound, no predicate op:
        for io = 0 to ceildiv(E, f)                    (arith.ceildivsi at kernel level)
          %r = min(f, E - io*f)                        (arith.minsi; omitted when f divides E)
          for ii = 0 to %r
            i = io*f + ii
    The region analysis below understands `minsi`/`maxsi` loop bounds, so compute-at still
    computes exact regions of guarded tiles.
  * a region is a per-dimension box whose lower bound is a max of affine forms and whose
    upper bound is a min of affine forms (`Box`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from xdsl.dialects import arith, func
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, UnitAttr, VectorType
from xdsl.ir import BlockArgument, Operation, OpResult, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from minimlir.dialects import loop, mem
from minimlir.passes.loop.schedule.affine import (
    AffineForm,
    affine_of,
    atom_name,
    is_symbol,
    reads_writes,
    reduces_along,
)
from minimlir.passes._diagnostics import emit_error


from minimlir.passes.loop.schedule.errors import ScheduleError
from minimlir.passes.loop.schedule.ir import (  # noqa: F401 (re-exported: the API's helpers)
    const_index,
    kernel_of,
    iconst,
    top_level_ancestor,
    symbol_point,
    emit,
    materialize_form,
    materialize_min,
    materialize_max,
    move_ops,
    body_ops,
    erase_dead_loops,
    loop_name,
    require_normalized,
)
from minimlir.passes.loop.schedule.region import (  # noqa: F401 (re-exported)
    fold_static,
    upper_forms,
    lower_forms,
    loop_bounds,
    eliminate,
    leq,
    prune,
    Box,
    merge_boxes,
    block_accesses,
    access_box,
    region,
    local_form,
    identity_map,
    var_domain,
    Bound,
)


# ----------------------------------------------------------------------------------------------
# The schedule


class Schedule:
    """Schedule primitives over the kernels of a module (or one kernel, `kernel="name"`)."""

    def __init__(self, module: ModuleOp | func.FuncOp, kernel: str | None = None):
        self.module = module
        if isinstance(module, func.FuncOp):
            self.kernels = [module]
        else:
            self.kernels = [op for op in module.walk() if loop.is_kernel(op)]
        if kernel:
            kernel = kernel.lstrip("@")
            chosen = [k for k in self.kernels if k.sym_name.data == kernel]
            if not chosen:
                names = ", ".join("@" + k.sym_name.data for k in self.kernels) or "none"
                raise ScheduleError(
                    f"no kernel named @{kernel}; available kernels: {names}", _first(module)
                )
            self.kernels = chosen

    # -- lookup ---------------------------------------------------------------------------------

    def get_block(self, name: str, kernel: str | None = None) -> loop.BlockOp:
        kernels = self.kernels
        if kernel:
            kernels = [k for k in kernels if k.sym_name.data == kernel.lstrip("@")]
        found = [b for k in kernels for b in loop.blocks_of(k) if b.block_name.data == name]
        if not found:
            avail = sorted({b.block_name.data for k in kernels for b in loop.blocks_of(k)})
            raise ScheduleError(
                f"no block named '{name}'; available blocks: {', '.join(avail) or 'none'}",
                kernels[0] if kernels else _first(self.module),
            )
        if len(found) > 1:
            names = ", ".join("@" + kernel_of(b).sym_name.data for b in found)
            raise ScheduleError(
                f"block name '{name}' is ambiguous (in kernels {names}); pick one with kernel=@name",
                found[0],
            )
        return found[0]

    def get_loops(self, block: loop.BlockOp) -> list[loop.ForOp]:
        return loop.block_loops(block)

    def get_loop(self, block: loop.BlockOp, index: int) -> loop.ForOp:
        loops = self.get_loops(block)
        if not 0 <= index < len(loops):
            raise ScheduleError(
                f"block '{block.block_name.data}' has {len(loops)} loop(s) (0..{len(loops) - 1}), "
                f"no loop {index}",
                block,
            )
        return loops[index]

    # -- split ----------------------------------------------------------------------------------

    def split(self, for_op: loop.ForOp, factors: Sequence[int | None]) -> list[loop.ForOp]:
        """Split a loop into len(factors) nested loops, outermost first. One factor may be None
        (or -1/0): it is inferred as ceildiv(extent, product of the others); only the outermost
        may be inferred for a dynamic extent. Non-dividing factors guard the inner loop's bound.

            for i = 0 to E  ->  for io = 0 to ceildiv(E, f) { for ii = 0 to min(f, E - io*f) {
                                  i = io*f + ii ... } }
        """
        require_normalized(for_op, "split")
        fs: list[int | None] = [None if (f is None or f <= 0) else int(f) for f in factors]
        if len(fs) < 2:
            raise ScheduleError("split needs at least two factors (e.g. [None, 4])", for_op)
        if fs.count(None) > 1:
            raise ScheduleError("split: at most one factor may be inferred", for_op)
        extent = const_index(for_op.ub)
        known = 1
        for f in fs:
            if f is not None:
                known *= f
        if None in fs and fs.index(None) != 0:
            if extent is None:
                raise ScheduleError(
                    "split: only the outermost factor may be inferred for a dynamic extent", for_op
                )
            fs[fs.index(None)] = -(-extent // known)
        if fs[0] is not None:
            rest = 1
            for f in fs[1:]:
                rest *= f  # type: ignore[operator]
            if extent is None or fs[0] != -(-extent // rest):
                raise ScheduleError(
                    f"split: factors {list(factors)} do not match the extent "
                    f"{extent if extent is not None else atom_name(for_op.ub)} "
                    f"(make the outermost factor None to infer it)",
                    for_op,
                )
        inners: list[loop.ForOp] = []
        cur = for_op
        for f in reversed(fs[1:]):
            assert f is not None
            cur, inner = self._split2(cur, f)
            inners.insert(0, inner)
        return [cur, *inners]

    def _split2(self, for_op: loop.ForOp, f: int) -> tuple[loop.ForOp, loop.ForOp]:
        kernel = kernel_of(for_op)
        c0, c1, cf = iconst(kernel, 0), iconst(kernel, 1), iconst(kernel, f)
        ub = for_op.ub
        extent = const_index(ub)
        if extent is not None:
            n_outer: SSAValue = iconst(kernel, -(-extent // f))
            exact = extent % f == 0
        else:
            n_outer = emit(arith.CeilDivSIOp(ub, cf), symbol_point([ub], for_op))
            exact = False
        kind = for_op.kind.data if for_op.kind.data == "parallel" else "serial"
        outer = loop.ForOp(c0, n_outer, c1, kind=kind)
        outer.location = for_op.location
        Rewriter.insert_op(outer, InsertPoint.before(for_op))
        io = outer.induction_var
        base = for_op.induction_var.name_hint or "i"
        io.name_hint = base + "_o"
        ip = InsertPoint.before(outer.body.block.last_op)  # type: ignore[arg-type]
        if exact:
            inner_ub: SSAValue = cf
        else:
            ubs = upper_forms(ub)
            if ubs is not None:
                step_off = AffineForm.atom(io) * f
                inner_ub = materialize_min(
                    [AffineForm.constant(f), *[u - step_off for u in ubs]], kernel, ip
                )
            else:
                t = emit(arith.MuliOp(io, cf), ip)
                inner_ub = emit(arith.MinSIOp(cf, emit(arith.SubiOp(ub, t), ip)), ip)
        inner = loop.ForOp(c0, inner_ub, c1)
        inner.location = for_op.location
        inner.induction_var.name_hint = base + "_i"
        Rewriter.insert_op(inner, ip)
        iip = InsertPoint.before(inner.body.block.last_op)  # type: ignore[arg-type]
        t = emit(arith.MuliOp(io, cf), iip)
        i = emit(arith.AddiOp(t, inner.induction_var), iip)
        move_ops(body_ops(for_op), iip)
        for_op.induction_var.replace_all_uses_with(i)
        for_op.detach()
        for_op.erase()
        return outer, inner

    # -- reorder --------------------------------------------------------------------------------

    def _chain(self, loops: Sequence[loop.ForOp], what: str) -> list[loop.ForOp]:
        """The loops from the outermost to the innermost of `loops`, which must form one chain
        where each loop's body is only index arithmetic and the next loop."""
        if len(set(loops)) != len(loops):
            raise ScheduleError(f"{what}: a loop is given twice", loops[0])
        innermost = max(loops, key=lambda l: len(loop.enclosing_loops(l)))
        chain_all = [*loop.enclosing_loops(innermost), innermost]
        for l in loops:
            if l not in chain_all:
                raise ScheduleError(
                    f"{what}: loops {loop_name(l)} and {loop_name(innermost)} are not nested in one "
                    "another",
                    l,
                )
        start = min(chain_all.index(l) for l in loops)
        chain = chain_all[start:]
        for outer, inner in zip(chain, chain[1:]):
            for op in body_ops(outer):
                if op is inner:
                    continue
                if op.dialect_name() != "arith" or op.regions:
                    raise ScheduleError(
                        f"{what}: not a perfect nest: loop {loop_name(outer)} holds "
                        f"'{op.name}' besides loop {loop_name(inner)}",
                        op,
                    )
        return chain

    def reorder(self, *loops: loop.ForOp) -> list[loop.ForOp]:
        """Permute loops of a perfect nest: the given loops take, in the given order, the
        positions they occupy now; other loops of the nest stay. Returns the new nest."""
        if len(loops) < 2:
            return list(loops)
        chain = self._chain(loops, "reorder")
        blocks = [b for b in loop.blocks_of(chain[-1])]
        if len(blocks) > 1:
            raise ScheduleError(
                "reorder: the loops enclose several blocks ("
                + ", ".join(b.block_name.data for b in blocks)
                + "); reordering could break the dependences between them",
                chain[0],
            )
        slots = sorted(chain.index(l) for l in loops)
        order = list(chain)
        for slot, l in zip(slots, loops):
            order[slot] = l
        newpos = {l: order.index(l) for l in chain}
        iv_of = {l.induction_var: l for l in chain}
        # in-between index arithmetic: level = innermost new position among the loops it uses
        between = [op for l in chain[:-1] for op in body_ops(l) if not isinstance(op, loop.ForOp)]
        level: dict[Operation, int] = {}
        for op in between:
            lv = -1
            for v in op.operands:
                if v in iv_of:
                    lv = max(lv, newpos[iv_of[v]])
                elif isinstance(v, OpResult) and v.owner in level:
                    lv = max(lv, level[v.owner])
            level[op] = lv
        for l in chain:
            p = newpos[l]
            for v in (l.lb, l.ub, l.step):
                dep = newpos[iv_of[v]] if v in iv_of else (
                    level[v.owner] if isinstance(v, OpResult) and v.owner in level else -1
                )
                if dep >= p:
                    raise ScheduleError(
                        f"reorder: the bounds of loop {loop_name(l)} depend on a loop that would "
                        "be inside it",
                        l,
                    )
        news: list[loop.ForOp] = []
        ip = InsertPoint.before(chain[0])
        for l in order:
            n = loop.ForOp(
                l.lb, l.ub, l.step, kind=l.kind.data,
                unroll_factor=l.unroll_factor.value.data if l.unroll_factor else None,
            )
            n.location = l.location
            n.attributes |= l.attributes
            news.append(n)
        for p, n in enumerate(news):
            before_nested = [op for op in between if level[op] == p - 1]
            move_ops(before_nested, ip)
            Rewriter.insert_op(n, ip)
            ip = InsertPoint.before(n.body.block.last_op)  # type: ignore[arg-type]
        move_ops([op for op in between if level[op] == len(news) - 1], ip)
        move_ops(body_ops(chain[-1]), ip)
        for l in chain:
            l.induction_var.replace_all_uses_with(news[newpos[l]].induction_var)
        chain[0].detach()
        chain[0].erase()
        return news

    # -- fuse -----------------------------------------------------------------------------------

    def fuse(self, *loops: loop.ForOp) -> loop.ForOp:
        """Two kinds of fusion, picked from the loops given:
          * nested loops (a perfect nest, outermost first): one loop over the product of the
            extents, the old variables recovered with divsi/remsi (non-affine afterwards);
          * adjacent sibling loops with equal bounds: one loop running both bodies in turn,
            legal when every buffer the second reads from the first is produced by the same
            iteration (and the second writes nothing the first touches)."""
        if len(loops) < 2:
            raise ScheduleError("fuse needs at least two loops", loops[0] if loops else None)
        if all(a.next_op is b for a, b in zip(loops, loops[1:])):
            cur = loops[0]
            for nxt in loops[1:]:
                cur = self._fuse_siblings(cur, nxt)
            return cur
        return self._fuse_nested(list(loops))

    def _fuse_siblings(self, a: loop.ForOp, b: loop.ForOp) -> loop.ForOp:
        for x, y, what in ((a.lb, b.lb, "lower bounds"), (a.ub, b.ub, "upper bounds"),
                           (a.step, b.step, "steps")):
            fx, fy = affine_of(x), affine_of(y)
            if x is not y and (fx is None or fy is None or fx != fy):
                raise ScheduleError(
                    f"fuse: loops {loop_name(a)} and {loop_name(b)} have different {what}", b
                )
        depth = len(loop.enclosing_loops(a)) + 1
        blocks_a, blocks_b = loop.blocks_of(a), loop.blocks_of(b)
        rw_a = [reads_writes(x) for x in blocks_a]
        rw_b = [reads_writes(x) for x in blocks_b]
        writes_a = set().union(*(w for _, w in rw_a)) if rw_a else set()
        touched_a = writes_a.union(*(r for r, _ in rw_a)) if rw_a else set()
        iv_a, iv_b = a.induction_var, b.induction_var
        sub = {iv_b: AffineForm.atom(iv_a)}

        def box_of(blks, buf, kinds, rename) -> Box | None:
            box = None
            for blk in blks:
                if buf not in reads_writes(blk)[0] | reads_writes(blk)[1]:
                    continue
                try:
                    bx = region(blk, buf, depth, kinds)
                except ScheduleError:
                    continue
                if bx is None:
                    return None
                if rename:
                    bx = Box([[f.substitute_all(sub) for f in d] for d in bx.los],
                             [[f.substitute_all(sub) for f in d] for d in bx.his])
                box = merge_boxes(box, bx)
                if box is None:
                    return None
            return box

        # A loop that runs a reduction of the first loop's blocks: the second loop's iteration
        # would read a partial result (a softmax's max before the row is done).
        reducing = [x for x in blocks_a if reduces_along(x, iv_a)]
        if reducing:
            red_writes = set().union(*(reads_writes(x)[1] for x in reducing))
            for blk, (reads, _) in zip(blocks_b, rw_b):
                if reads & red_writes:
                    raise ScheduleError(
                        f"fuse: loop {loop_name(a)} runs the reduction of block "
                        f"'{reducing[0].block_name.data}'; block '{blk.block_name.data}' of the second "
                        "loop would read its partial result", blk,
                    )
        for blk, (reads, writes) in zip(blocks_b, rw_b):
            for buf in writes & touched_a:
                raise ScheduleError(
                    f"fuse: block '{blk.block_name.data}' of the second loop writes "
                    f"{atom_name(buf)}, which the first loop also accesses",
                    blk,
                )
            for buf in reads & writes_a:
                w = box_of(blocks_a, buf, (mem.StoreOp,), False)
                r = box_of([blk], buf, (mem.LoadOp,), True)
                ok = w is not None and r is not None and all(
                    all(any(leq(x, y) for y in rl) for x in wl)  # lo_w <= lo_r
                    and all(any(leq(x, y) for x in rh) for y in wh)  # hi_r <= hi_w
                    for wl, wh, rl, rh in zip(w.los, w.his, r.los, r.his)
                )
                if not ok:
                    raise ScheduleError(
                        f"fuse: block '{blk.block_name.data}' reads {atom_name(buf)} beyond what "
                        f"the same iteration of loop {loop_name(a)} writes",
                        blk,
                    )
        move_ops(body_ops(b), InsertPoint.before(a.body.block.last_op))  # type: ignore[arg-type]
        iv_b.replace_all_uses_with(iv_a)
        b.detach()
        b.erase()
        return a

    def _fuse_nested(self, loops: list[loop.ForOp]) -> loop.ForOp:
        chain = self._chain(loops, "fuse")
        if len(chain) != len(loops) or any(x is not y for x, y in zip(chain, loops)):
            raise ScheduleError(
                "fuse: the loops must be consecutive in one nest, outermost first", loops[0]
            )
        ivs = {l.induction_var for l in chain}
        for l in chain:
            require_normalized(l, "fuse")
            if not is_symbol(l.ub) and l.ub not in ivs and const_index(l.ub) is None:
                if any(l2.is_ancestor(l.ub.owner) for l2 in chain if isinstance(l.ub, OpResult)):
                    raise ScheduleError(
                        f"fuse: the extent of loop {loop_name(l)} depends on another fused loop", l
                    )
        kernel = kernel_of(chain[0])
        extents = [l.ub for l in chain]
        consts = [const_index(e) for e in extents]
        ip = symbol_point(extents, chain[0])
        if all(c is not None for c in consts):
            total = 1
            for c in consts:
                total *= c  # type: ignore[operator]
            n: SSAValue = iconst(kernel, total)
        else:
            n = extents[0]
            for e in extents[1:]:
                n = emit(arith.MuliOp(n, e), ip)
        fused = loop.ForOp(iconst(kernel, 0), n, iconst(kernel, 1))
        fused.location = chain[0].location
        Rewriter.insert_op(fused, InsertPoint.before(chain[0]))
        fip = InsertPoint.before(fused.body.block.last_op)  # type: ignore[arg-type]
        rest = fused.induction_var
        vals: list[SSAValue] = [rest] * len(chain)
        for k in range(len(chain) - 1, 0, -1):
            vals[k] = emit(arith.RemSIOp(rest, extents[k]), fip)
            rest = emit(arith.DivSIOp(rest, extents[k]), fip)
        vals[0] = rest
        for l in chain[:-1]:
            move_ops([op for op in body_ops(l) if not isinstance(op, loop.ForOp)], fip)
        move_ops(body_ops(chain[-1]), fip)
        for l, v in zip(chain, vals):
            l.induction_var.replace_all_uses_with(v)
        chain[0].detach()
        chain[0].erase()
        return fused

    # -- compute-at -----------------------------------------------------------------------------

    def _order(self, kernel: func.FuncOp) -> dict[Operation, int]:
        return {op: i for i, op in enumerate(kernel.walk())}

    def compute_at(self, block: loop.BlockOp, for_op: loop.ForOp) -> list[loop.ForOp]:
        """Move producer `block` under the consumer loop `for_op`: new loops compute exactly the
        box of the produced buffer that the blocks under `for_op` read in one iteration of it
        (clamped to the producer's own domain). Returns the new loops around the block."""
        name = block.block_name.data
        kernel = kernel_of(block)
        if kernel_of(for_op) is not kernel:
            raise ScheduleError("compute-at: the block and the loop are in different kernels", block)
        if for_op in loop.block_loops(block):
            raise ScheduleError(f"compute-at: loop {loop_name(for_op)} encloses block '{name}' itself", block)
        reads_p, writes_p = reads_writes(block)
        if len(writes_p) != 1:
            raise ScheduleError(
                f"compute-at: block '{name}' must write exactly one buffer, writes {len(writes_p)}", block
            )
        (buf,) = writes_p
        pos = self._order(kernel)
        if pos[block] > pos[for_op]:
            raise ScheduleError(
                f"compute-at: block '{name}' comes after loop {loop_name(for_op)}; use "
                "reverse-compute-at to move a consumer",
                block,
            )
        consumers = [b for b in loop.blocks_of(for_op) if buf in reads_writes(b)[0]]
        if not consumers:
            raise ScheduleError(
                f"compute-at: no block under loop {loop_name(for_op)} reads {atom_name(buf)}, "
                f"the buffer block '{name}' writes",
                block,
            )
        for b in loop.blocks_of(kernel):
            if b is block:
                continue
            r, w = reads_writes(b)
            bname = b.block_name.data
            if for_op.is_ancestor(b):
                if buf in w:
                    raise ScheduleError(
                        f"compute-at: block '{bname}' under the loop also writes {atom_name(buf)}", b
                    )
                continue
            if pos[b] > pos[block] and buf in (r | w):
                raise ScheduleError(
                    f"compute-at: block '{bname}' outside loop {loop_name(for_op)} also accesses "
                    f"{atom_name(buf)}, which block '{name}' would no longer produce in full",
                    b,
                )
            if pos[block] < pos[b] < pos[for_op] and w & reads_p:
                raise ScheduleError(
                    f"compute-at: block '{bname}' between them writes a buffer block '{name}' reads",
                    b,
                )
        depth = loop.block_loops(consumers[0]).index(for_op) + 1
        ctx = loop.block_loops(consumers[0])[:depth]
        need: Box | None = None
        for c in consumers:
            bx = region(c, buf, depth, (mem.LoadOp,))
            if bx is None:
                raise ScheduleError(
                    f"compute-at: cannot compute the region of {atom_name(buf)} that block "
                    f"'{c.block_name.data}' reads (non-affine index or loop bound)",
                    c,
                )
            need = merge_boxes(need, bx, ctx)
            if need is None:
                raise ScheduleError(
                    "compute-at: the regions the consumers read are not comparable", c
                )
        assert need is not None
        mapping = self._store_map(block, buf, "compute-at")
        ranges = self._var_ranges(block, mapping, need, ctx, "compute-at")
        return self._place(block, ranges, InsertPoint.at_start(for_op.body.block), kernel)

    def _store_map(self, blk: loop.BlockOp, buf: SSAValue, what: str) -> list[tuple[int, int]]:
        name = blk.block_name.data
        maps = []
        for op in block_accesses(blk):
            if isinstance(op, mem.StoreOp) and op.memref is buf:
                if isinstance(op.value.type, VectorType):
                    raise ScheduleError(f"{what}: block '{name}' is already vectorized", blk)
                m = identity_map(blk, op.indices)
                if m is None:
                    raise ScheduleError(
                        f"{what}: block '{name}' must store {atom_name(buf)} at "
                        "(iteration variable + constant) in every dim",
                        op,
                    )
                maps.append(m)
        if not maps or any(m != maps[0] for m in maps):
            raise ScheduleError(f"{what}: block '{name}' stores {atom_name(buf)} at different indices", blk)
        covered = {k for k, _ in maps[0]}
        for k, kind in enumerate(blk.kinds):
            if kind == "spatial" and k not in covered:
                raise ScheduleError(
                    f"{what}: spatial variable #{k} of block '{name}' does not index "
                    f"{atom_name(buf)}; the write is not one point per iteration",
                    blk,
                )
        return maps[0]

    def _var_ranges(
        self, blk: loop.BlockOp, mapping, box: Box, ctx, what: str
    ) -> list[tuple[Bound, Bound]]:
        """Per iteration var of `blk`: (los, his) from the buffer box (vars that index the
        buffer) or the var's own full domain (the others), clamped to the domain."""
        name = blk.block_name.data
        by_var = {k: (d, c) for d, (k, c) in enumerate(mapping) if k >= 0}  # k = -1: a unit dim read at 0
        out = []
        for k in range(len(blk.bindings)):
            dom = var_domain(blk, k)
            if dom is None or any(not all(is_symbol(a) for a in f.atoms) for f in (*dom[0], *dom[1])):
                raise ScheduleError(
                    f"{what}: cannot compute the domain of iteration variable #{k} of block '{name}'",
                    blk,
                )
            if k in by_var:
                d, c = by_var[k]
                los = prune([f - c for f in box.los[d]] + dom[0], True, ctx)
                his = prune([f - c for f in box.his[d]] + dom[1], False, ctx)
            else:
                los, his = dom
            out.append((los, his))
        return out

    def _place(
        self, blk: loop.BlockOp, ranges, ip: InsertPoint, kernel: func.FuncOp
    ) -> list[loop.ForOp]:
        """Build loops over `ranges` (spatial vars first, reduce vars innermost) at `ip`, move
        `blk` into them and rebind it; erase the loops it leaves empty."""
        old_parent = blk.parent_op()
        order = [k for k, kd in enumerate(blk.kinds) if kd == "spatial"]
        order += [k for k, kd in enumerate(blk.kinds) if kd != "spatial"]
        c0, c1 = iconst(kernel, 0), iconst(kernel, 1)
        bindings: dict[int, SSAValue] = {}
        loops = []
        for k in order:
            los, his = ranges[k]
            if len(los) == 1:
                lo_form = los[0]
                ub = materialize_min([h - lo_form + 1 for h in his], kernel, ip)
                lo = None
            else:
                lo = materialize_max(los, kernel, ip)
                hi1 = materialize_min([h + 1 for h in his], kernel, ip)
                ub = emit(arith.SubiOp(hi1, lo), ip)
            ext = const_index(ub)
            if ext == 1:
                bindings[k] = lo if lo is not None else materialize_form(lo_form, kernel, ip)
                continue
            nl = loop.ForOp(c0, ub, c1)
            nl.location = blk.location
            Rewriter.insert_op(nl, ip)
            loops.append(nl)
            ip = InsertPoint.before(nl.body.block.last_op)  # type: ignore[arg-type]
            t = nl.induction_var
            if lo is not None:
                bindings[k] = emit(arith.AddiOp(lo, t), ip)
            elif lo_form == 0:
                bindings[k] = t
            else:
                bindings[k] = materialize_form(lo_form + AffineForm.atom(t), kernel, ip)
        blk.detach()
        Rewriter.insert_op(blk, ip)
        blk.operands = [bindings[k] for k in range(len(blk.bindings))]
        erase_dead_loops(old_parent)
        return loops

    def reverse_compute_at(self, block: loop.BlockOp, for_op: loop.ForOp) -> list[loop.ForOp]:
        """Move consumer `block` under the producer loop `for_op`, at the end of its body: new
        loops run the consumer over exactly the points whose reads of the produced buffer were
        written by one iteration of `for_op` (clamped to the consumer's domain)."""
        name = block.block_name.data
        kernel = kernel_of(block)
        if kernel_of(for_op) is not kernel:
            raise ScheduleError("reverse-compute-at: the block and the loop are in different kernels", block)
        if for_op.is_ancestor(block):
            raise ScheduleError(
                f"reverse-compute-at: block '{name}' is already under loop {loop_name(for_op)}", block
            )
        if "reduce" in block.kinds or block.has_init:
            raise ScheduleError(f"reverse-compute-at: block '{name}' is a reduction", block)
        pos = self._order(kernel)
        if pos[block] < pos[for_op]:
            raise ScheduleError(
                f"reverse-compute-at: block '{name}' comes before loop {loop_name(for_op)}; use "
                "compute-at to move a producer",
                block,
            )
        reads_c, writes_c = reads_writes(block)
        if reads_c & writes_c:
            raise ScheduleError(f"reverse-compute-at: block '{name}' reads a buffer it writes", block)
        under = loop.blocks_of(for_op)
        produced = set().union(*(reads_writes(b)[1] for b in under)) if under else set()
        bufs = reads_c & produced
        if not bufs:
            raise ScheduleError(
                f"reverse-compute-at: block '{name}' reads nothing that loop {loop_name(for_op)} writes",
                block,
            )
        if len(bufs) > 1:
            raise ScheduleError(
                f"reverse-compute-at: block '{name}' reads several buffers written under loop "
                f"{loop_name(for_op)}",
                block,
            )
        (buf,) = bufs
        end = max(pos[op] for op in for_op.walk())
        for b in loop.blocks_of(kernel):
            if b is block:
                continue
            r, w = reads_writes(b)
            bname = b.block_name.data
            if for_op.is_ancestor(b):
                if (r | w) & writes_c:
                    raise ScheduleError(
                        f"reverse-compute-at: block '{bname}' under the loop accesses a buffer "
                        f"block '{name}' writes",
                        b,
                    )
                continue
            if end < pos[b] < pos[block] and ((w & reads_c) or ((r | w) & writes_c)):
                raise ScheduleError(
                    f"reverse-compute-at: block '{bname}' between them conflicts with block '{name}'",
                    b,
                )
        producers = [b for b in under if buf in reads_writes(b)[1]]
        depth = loop.block_loops(producers[0]).index(for_op) + 1
        ctx = loop.block_loops(producers[0])[:depth]
        made: Box | None = None
        for p in producers:
            bx = region(p, buf, depth, (mem.StoreOp,))
            if bx is None:
                raise ScheduleError(
                    f"reverse-compute-at: cannot compute the region of {atom_name(buf)} that block "
                    f"'{p.block_name.data}' writes (non-affine index or loop bound)",
                    p,
                )
            made = merge_boxes(made, bx, ctx)
            if made is None:
                raise ScheduleError("reverse-compute-at: the producers' regions are not comparable", p)
        assert made is not None
        maps = []
        for op in block_accesses(block):
            if isinstance(op, mem.LoadOp) and op.memref is buf:
                m = identity_map(block, op.indices, buf.type.get_shape())  # type: ignore[union-attr]
                if m is None:
                    raise ScheduleError(
                        f"reverse-compute-at: block '{name}' must read {atom_name(buf)} at "
                        "(iteration variable + constant) in every dim",
                        op,
                    )
                maps.append(m)
        if any(m != maps[0] for m in maps):
            raise ScheduleError(
                f"reverse-compute-at: block '{name}' reads {atom_name(buf)} at different indices", block
            )
        ranges = self._var_ranges(block, maps[0], made, ctx, "reverse-compute-at")
        ip = InsertPoint.before(for_op.body.block.last_op)  # type: ignore[arg-type]
        return self._place(block, ranges, ip, kernel)

    # -- cache-read -----------------------------------------------------------------------------

    def cache_read(self, block: loop.BlockOp, buffer: SSAValue, for_op: loop.ForOp, name: str) -> loop.BlockOp:
        """Copy the box of `buffer` that `block` reads in one iteration of `for_op` into a local
        buffer (a static `mem.alloca`, row-major and contiguous: a packed tile), filled by a new
        block `name` at the start of `for_op`'s body; `block` then reads the copy (TVM's
        `cache_read` + `compute_at` + buffer compaction in one step).

            for k0 { for j0 {                        for k0 { for j0 {
              for k1, j1 { blk: ... B[k, j] ... }  ->  for a, b { name: L[a, b] = B[lo_k + a, lo_j + b] }
            } }                                        for k1, j1 { blk: ... L[k - lo_k, j - lo_j] ... } } }

        lo is the box's lower corner (affine in the loops outside and at `for_op`); the local
        extent of a dim is the smallest constant bound of hi - lo + 1 (guarded tiles copy only
        their valid part). Refused when a block under `for_op` writes `buffer`, the box is not
        affine, has several lower bounds, or no constant extent."""
        from xdsl.dialects.builtin import MemRefType

        kernel = kernel_of(block)
        bname = block.block_name.data
        loops = loop.block_loops(block)
        if for_op not in loops:
            raise ScheduleError(
                f"cache-read: loop {loop_name(for_op)} does not enclose block '{bname}'", for_op
            )
        if not any(isinstance(op, mem.LoadOp) and op.memref is buffer for op in block_accesses(block)):
            raise ScheduleError(f"cache-read: block '{bname}' does not load {atom_name(buffer)}", block)
        for b in loop.blocks_of(for_op):
            if buffer in reads_writes(b)[1]:
                raise ScheduleError(
                    f"cache-read: block '{b.block_name.data}' writes {atom_name(buffer)} under loop "
                    f"{loop_name(for_op)}",
                    b,
                )
        if any(isinstance(u.operation, (mem.CopyOp, mem.FillOp)) and for_op.is_ancestor(u.operation)
               for u in buffer.uses):
            raise ScheduleError(f"cache-read: {atom_name(buffer)} is copied or filled under the loop", for_op)
        depth = loops.index(for_op) + 1
        box = region(block, buffer, depth, (mem.LoadOp,))
        if box is None:
            raise ScheduleError(
                f"cache-read: cannot compute the region of {atom_name(buffer)} that block '{bname}' "
                "reads (non-affine index or loop bound)",
                block,
            )
        sizes: list[int] = []
        for d, (los, his) in enumerate(zip(box.los, box.his)):
            if len(los) != 1:
                raise ScheduleError(f"cache-read: dim {d} of the region has several lower bounds", block)
            ext = [(h - los[0]).const + 1 for h in his if (h - los[0]).is_constant]
            if not ext:
                raise ScheduleError(f"cache-read: dim {d} of the region has no constant extent", block)
            sizes.append(max(1, min(ext)))
        elem = buffer.type.element_type  # type: ignore[union-attr]
        alloc = mem.AllocaOp(MemRefType(elem, sizes))
        alloc.attributes[loop.PRIVATE_ATTR] = UnitAttr()  # refilled before every read: per thread
        Rewriter.insert_op(alloc, InsertPoint.at_start(kernel.body.block))
        local = alloc.results[0]
        local.name_hint = name
        ip = InsertPoint.at_start(for_op.body.block)
        lo_vals = [materialize_form(los[0], kernel, ip) for los in box.los]
        c0, c1 = iconst(kernel, 0), iconst(kernel, 1)
        ivs: list[SSAValue] = []
        for los, his, size in zip(box.los, box.his, sizes):
            forms = prune([h - los[0] + 1 for h in his] + [AffineForm.constant(size)], False)
            ub = materialize_min(forms, kernel, ip)
            l = loop.ForOp(c0, ub, c1)
            l.location = block.location
            Rewriter.insert_op(l, ip)
            ivs.append(l.induction_var)
            ip = InsertPoint.before(l.body.block.last_op)  # type: ignore[arg-type]
        copy = loop.BlockOp(name, ivs, ["spatial"] * len(ivs))
        copy.location = block.location
        Rewriter.insert_op(copy, ip)
        args = list(copy.body.block.args)
        bip = InsertPoint.before(copy.body.block.last_op)  # type: ignore[arg-type]
        zero = [f.is_constant and f.const == 0 for f in (los[0] for los in box.los)]
        src = [a if z else emit(arith.AddiOp(lo, a), bip) for lo, a, z in zip(lo_vals, args, zero)]
        v = emit(mem.LoadOp(buffer, src, elem), bip)
        Rewriter.insert_op(mem.StoreOp(v, local, args), bip)
        for op in [o for o in block_accesses(block) if isinstance(o, mem.LoadOp) and o.memref is buffer]:
            lip = InsertPoint.before(op)
            idx = [i if z else emit(arith.SubiOp(i, lo), lip) for i, lo, z in zip(op.indices, lo_vals, zero)]
            new = mem.LoadOp(local, idx, op.result.type)
            Rewriter.insert_op(new, lip)
            op.result.replace_all_uses_with(new.result)
            op.detach()
            op.erase()
        return copy

    # -- compute-inline -------------------------------------------------------------------------

    def compute_inline(self, block: loop.BlockOp) -> None:
        """Inline an elementwise producer into the loads of its consumers and remove it."""
        name = block.block_name.data
        kernel = kernel_of(block)
        if "reduce" in block.kinds or block.has_init:
            raise ScheduleError(f"compute-inline: block '{name}' is a reduction", block)
        reads_p, writes_p = reads_writes(block)
        if len(writes_p) != 1:
            raise ScheduleError(f"compute-inline: block '{name}' must write exactly one buffer", block)
        (buf,) = writes_p
        if isinstance(buf, BlockArgument) and buf.owner is kernel.body.block:
            raise ScheduleError(
                f"compute-inline: block '{name}' writes {atom_name(buf)}, a kernel argument (output)",
                block,
            )
        if buf in reads_p:
            raise ScheduleError(f"compute-inline: block '{name}' reads the buffer it writes", block)
        stores = [op for op in block_accesses(block) if isinstance(op, mem.StoreOp)]
        if len(stores) != 1 or stores[0].parent_block() is not block.body.block:
            raise ScheduleError(
                f"compute-inline: block '{name}' must store its buffer exactly once, at its top level",
                block,
            )
        store = stores[0]
        mapping = self._store_map(block, buf, "compute-inline")
        pos = self._order(kernel)
        for b in loop.blocks_of(kernel):
            if b is block:
                continue
            r, w = reads_writes(b)
            if buf in w:
                raise ScheduleError(
                    f"compute-inline: block '{b.block_name.data}' also writes {atom_name(buf)}", b
                )
            if pos[b] > pos[block] and w & reads_p:
                raise ScheduleError(
                    f"compute-inline: block '{b.block_name.data}' writes a buffer block '{name}' "
                    "reads, after it",
                    b,
                )
            if buf in r and pos[b] < pos[block]:
                raise ScheduleError(
                    f"compute-inline: block '{b.block_name.data}' reads {atom_name(buf)} before "
                    f"block '{name}' writes it",
                    b,
                )
        other = [u.operation for u in buf.uses if not block.is_ancestor(u.operation)]
        for op in other:
            if not isinstance(op, (mem.LoadOp, mem.DeallocOp)) or (
                isinstance(op, mem.LoadOp) and isinstance(op.result.type, VectorType)
            ):
                raise ScheduleError(
                    f"compute-inline: {atom_name(buf)} is used by '{op.name}', not only scalar loads",
                    op,
                )
            if isinstance(op, mem.LoadOp) and not any(b.is_ancestor(op) for b in loop.blocks_of(kernel)):
                raise ScheduleError(f"compute-inline: {atom_name(buf)} is loaded outside a block", op)
        body = [op for op in block.body.block.ops if op is not store and not isinstance(op, loop.YieldOp)]
        args = list(block.body.block.args)
        for ld in [op for op in other if isinstance(op, mem.LoadOp)]:
            ip = InsertPoint.before(ld)
            vmap: dict[SSAValue, SSAValue] = {}
            for d, (k, c) in enumerate(mapping):
                idx = ld.indices[d]
                vmap[args[k]] = idx if c == 0 else emit(arith.SubiOp(idx, iconst(kernel, c)), ip)
            for op in body:
                clone = op.clone(value_mapper=vmap)
                Rewriter.insert_op(clone, ip)
            value = vmap.get(store.value, store.value)
            ld.result.replace_all_uses_with(value)
            ld.detach()
            ld.erase()
        parent = block.parent_op()
        block.detach()
        block.erase()
        erase_dead_loops(parent)
        if isinstance(buf, OpResult) and isinstance(buf.owner, (mem.AllocOp, mem.AllocaOp)):
            for u in list(buf.uses):
                if isinstance(u.operation, mem.DeallocOp):
                    u.operation.detach()
                    u.operation.erase()
            if not buf.uses:
                owner = buf.owner
                owner.detach()
                owner.erase()

    # -- annotations ----------------------------------------------------------------------------

    def _iteration_conflict(self, for_op: loop.ForOp, what: str, unit_last: bool) -> None:
        """Refuse unless the iterations of `for_op` are independent: no block binds its variable
        to a reduce variable; every store depends on it (distinct points per iteration, with
        unit stride in the last dim when `unit_last`), and reads of written buffers stay
        inside the same iteration's writes."""
        iv = for_op.induction_var
        depth = len(loop.enclosing_loops(for_op)) + 1
        blocks = loop.blocks_of(for_op)
        if not blocks:
            raise ScheduleError(f"{what}: loop {loop_name(for_op)} encloses no block", for_op)
        written: set[SSAValue] = set()
        for b in blocks:
            bname = b.block_name.data
            for k, kind in enumerate(b.kinds):
                f = affine_of(b.bindings[k])
                if f is None:
                    raise ScheduleError(f"{what}: block '{bname}' has a non-affine binding", b)
                if kind == "reduce" and f.coeff(iv):
                    raise ScheduleError(
                        f"{what}: loop {loop_name(for_op)} runs reduction variable #{k} of "
                        f"block '{bname}'",
                        b,
                    )
            for op in block_accesses(b):
                if not isinstance(op, mem.StoreOp):
                    continue
                written.add(op.memref)
                forms = [affine_of(i) for i in op.indices]
                if any(f is None for f in forms):
                    raise ScheduleError(f"{what}: block '{bname}' stores at a non-affine index", op)
                coeffs = [f.coeff(iv) for f in forms]  # type: ignore[union-attr]
                if unit_last and (not coeffs or coeffs[-1] != 1 or any(coeffs[:-1])):
                    raise ScheduleError(
                        f"{what}: block '{bname}' does not store contiguously along loop "
                        f"{loop_name(for_op)} (needs stride 1 in the last dim only)",
                        op,
                    )
                if not unit_last and _private_scratch(op.memref, for_op):
                    continue  # each iteration gets its own copy (see _private_scratch)
                if not unit_last:
                    bx = access_box(op, depth)
                    # [max(los), min(his)] lies in [l, h] for any l in los, h in his: one
                    # such pair moving with iv and narrower than its stride is disjoint
                    ok = bx is not None and any(
                        l.coeff(iv) == h.coeff(iv) != 0
                        and (h - l).is_constant
                        and (h - l).const < abs(l.coeff(iv))
                        for lo, hi in zip(bx.los, bx.his)
                        for l in lo
                        for h in hi
                    )
                    if not ok:
                        raise ScheduleError(
                            f"{what}: iterations of loop {loop_name(for_op)} may write the same "
                            f"element of {atom_name(op.memref)} in block '{bname}'",
                            op,
                        )
        for b in blocks:
            for buf in reads_writes(b)[0] & written:
                w: Box | None = None
                for p in blocks:
                    if buf in reads_writes(p)[1]:
                        bx = region(p, buf, depth, (mem.StoreOp,))
                        w = None if bx is None else merge_boxes(w, bx)
                        if w is None:
                            break
                r = region(b, buf, depth, (mem.LoadOp,))
                # over the outer loops' values: a unit batch loop's variable is 0 (C[b, ...]
                # written, C[0, ...] read)
                outer = loop.enclosing_loops(for_op)
                ok = w is not None and r is not None and all(
                    all(any(leq(x, y, outer) for y in rl) for x in wl)
                    and all(any(leq(x, y, outer) for x in rh) for y in wh)
                    for wl, wh, rl, rh in zip(w.los, w.his, r.los, r.his)
                )
                if not ok:
                    raise ScheduleError(
                        f"{what}: block '{b.block_name.data}' reads {atom_name(buf)} written by "
                        f"another iteration of loop {loop_name(for_op)}",
                        b,
                    )

    def parallel(self, for_op: loop.ForOp) -> None:
        """Mark a loop `parallel` if its iterations write disjoint points (and no reduction)."""
        self._iteration_conflict(for_op, "parallel", unit_last=False)
        self._set_kind(for_op, "parallel")

    def vectorize(self, for_op: loop.ForOp) -> None:
        """Mark an innermost loop `vectorize` if loop-lower-vectors can turn it into vector
        code: no reduction along it, stores contiguous along it (stride 1, last dim), loads
        contiguous or invariant, float element ops only."""
        from minimlir.passes.loop.lower_vectors import vector_plan_error

        if any(isinstance(op, loop.ForOp) for op in for_op.body.walk()):
            raise ScheduleError(f"vectorize: loop {loop_name(for_op)} is not innermost", for_op)
        require_normalized(for_op, "vectorize")
        self._iteration_conflict(for_op, "vectorize", unit_last=True)
        reason = vector_plan_error(for_op)
        if reason is not None:
            raise ScheduleError(f"vectorize: {reason[0]}", reason[1] or for_op)
        self._set_kind(for_op, "vectorize")

    def unroll(self, for_op: loop.ForOp, factor: int | None = None) -> None:
        """Mark a loop `unroll` (fully, or by `factor`); loop-lower-unroll does the unrolling."""
        if factor is not None and factor < 1:
            raise ScheduleError(f"unroll: factor must be >= 1, got {factor}", for_op)
        if factor is None and any(const_index(v) is None for v in (for_op.lb, for_op.ub, for_op.step)):
            raise ScheduleError(
                f"unroll: loop {loop_name(for_op)} has a dynamic trip count; give a factor", for_op
            )
        if factor is None:
            trip = len(range(const_index(for_op.lb), const_index(for_op.ub), const_index(for_op.step)))  # type: ignore[arg-type]
            if trip > 1024:
                raise ScheduleError(f"unroll: full unroll of {trip} iterations is too large", for_op)
        self._set_kind(for_op, "unroll")
        if factor is not None:
            for_op.properties["unroll_factor"] = IntegerAttr(factor, 64)

    def _set_kind(self, for_op: loop.ForOp, kind: str) -> None:
        from xdsl.dialects.builtin import StringAttr

        for_op.properties["kind"] = StringAttr(kind)
        for_op.properties.pop("unroll_factor", None)

    # -- decompose-reduction --------------------------------------------------------------------

    def decompose_reduction(self, block: loop.BlockOp, for_op: loop.ForOp) -> loop.BlockOp:
        """Hoist `block`'s init into a new block `<name>_init` placed right before `for_op`,
        under copies of the loops from `for_op` inward that run only spatial variables; the
        original block loses its init."""
        name = block.block_name.data
        kernel = kernel_of(block)
        if not block.has_init:
            raise ScheduleError(f"decompose-reduction: block '{name}' has no init", block)
        loops = loop.block_loops(block)
        if for_op not in loops:
            raise ScheduleError(
                f"decompose-reduction: loop {loop_name(for_op)} does not enclose block '{name}'", for_op
            )
        start = loops.index(for_op)
        forms = [affine_of(b) for b in block.bindings]
        if any(f is None for f in forms):
            raise ScheduleError(f"decompose-reduction: block '{name}' has a non-affine binding", block)
        red_ivs = {v for f, k in zip(forms, block.kinds) if k == "reduce" for v in f.atoms}  # type: ignore[union-attr]
        sp_ivs = {v for f, k in zip(forms, block.kinds) if k == "spatial" for v in f.atoms}  # type: ignore[union-attr]
        for l in loops[:start]:
            if l.induction_var in red_ivs:
                raise ScheduleError(
                    f"decompose-reduction: reduction loop {loop_name(l)} is outside loop "
                    f"{loop_name(for_op)}; the init would run more than once",
                    for_op,
                )
        copies: list[loop.ForOp] = []
        ip = InsertPoint.before(for_op)
        vmap: dict[SSAValue, AffineForm] = {}
        for l in loops[start:]:
            iv = l.induction_var
            if iv in red_ivs and iv in sp_ivs:
                raise ScheduleError(
                    f"decompose-reduction: loop {loop_name(l)} runs both spatial and reduction "
                    f"variables of block '{name}'",
                    l,
                )
            if iv not in sp_ivs:
                continue
            bounds = []
            for v in (l.lb, l.ub, l.step):
                if isinstance(v, OpResult) and any(x.is_ancestor(v.owner) for x in loops[start:]):
                    f = upper_forms(v) if v is l.ub else None
                    if f is None or any(
                        a in {x.induction_var for x in loops[start:]} and a not in vmap for a in
                        {a for g in f for a in g.atoms}
                    ):
                        raise ScheduleError(
                            f"decompose-reduction: the bounds of loop {loop_name(l)} depend on "
                            "a reduction loop",
                            l,
                        )
                    v = materialize_min([g.substitute_all(vmap) for g in f], kernel, ip)
                bounds.append(v)
            n = loop.ForOp(*bounds, kind=l.kind.data if l.kind.data == "parallel" else "serial")
            n.location = l.location
            Rewriter.insert_op(n, ip)
            copies.append(n)
            vmap[iv] = AffineForm.atom(n.induction_var)
            ip = InsertPoint.before(n.body.block.last_op)  # type: ignore[arg-type]
        zero = AffineForm.constant(0)
        inner_ivs = {l.induction_var for l in loops[start:]}
        for v in red_ivs & inner_ivs:
            vmap[v] = zero
        sp = [k for k, kind in enumerate(block.kinds) if kind == "spatial"]
        bindings = [materialize_form(forms[k].substitute_all(vmap), kernel, ip) for k in sp]  # type: ignore[union-attr]
        init_blk = loop.BlockOp(f"{name}_init", bindings, ["spatial"] * len(sp))
        init_blk.location = block.location
        Rewriter.insert_op(init_blk, ip)
        old = block.init.block
        new_args = init_blk.body.block.args
        iip = InsertPoint.before(init_blk.body.block.last_op)  # type: ignore[arg-type]
        for j, k in enumerate(sp):
            old.args[k].replace_all_uses_with(new_args[j])
        red = [k for k, kind in enumerate(block.kinds) if kind != "spatial"]
        for k in red:
            if old.args[k].uses:
                old.args[k].replace_all_uses_with(iconst(kernel, 0))
        move_ops([op for op in old.ops if not isinstance(op, loop.YieldOp)], iip)
        block.init.detach_block(old)
        old.erase()
        return init_blk


def _private_scratch(buf: SSAValue, for_op: loop.ForOp) -> bool:
    """A static `mem.alloca` used only inside `for_op`: a parallel lowering gives every
    iteration (thread) its own copy, so iterations never write the same one. Reads must still
    come from the same iteration's writes (checked with the other buffers)."""
    if not (isinstance(buf, OpResult) and isinstance(buf.owner, mem.AllocaOp)):
        return False
    if any(d < 0 for d in buf.type.get_shape()):  # type: ignore[union-attr]
        return False
    return all(for_op.is_ancestor(u.operation) for u in buf.uses)


def _first(module: Operation) -> Operation:
    for op in module.walk():
        if op is not module:
            return op
    return module


# ----------------------------------------------------------------------------------------------
# Pass plumbing: every schedule pass selects a block by name and a loop by index.


@contextmanager
def schedule_diagnostics(module: ModuleOp) -> Iterator[None]:
    """Turn a ScheduleError into a located error (`emit_error`)."""
    try:
        yield
    except ScheduleError as e:
        emit_error(e.op or _first(module), e.message)


def select(module: ModuleOp, kernel: str, block: str, what: str) -> tuple[Schedule, loop.BlockOp]:
    sch = Schedule(module, kernel or None)
    if not block:
        raise ScheduleError(f"{what}: option 'block' is required", _first(module))
    return sch, sch.get_block(block)
