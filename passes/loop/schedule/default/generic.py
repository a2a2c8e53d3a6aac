"""Rule: anything else. Parallelize the outermost loop that legally can be (per top-level nest),
vectorize the innermost loop when legal and long enough; window reductions (pools) first get
their output loop innermost (`_windows_innermost`)."""

from __future__ import annotations

import dataclasses
import math

from xdsl.dialects import func
from xdsl.ir import Operation

from minimlir.passes.loop.schedule.default.knobs import choose
from minimlir.dialects import loop
from minimlir.passes.loop.lower_vectors import vector_plan_error
from minimlir.passes.loop.schedule.api import (
    Schedule,
    ScheduleError,
    const_index,
)
from minimlir.passes.loop.schedule.default import transaction
from minimlir.passes.loop.schedule.default._helpers import _mark_width, _short_loop_width, fit_width
from minimlir.passes.loop.schedule.default.config import ScheduleConfig

# ----------------------------------------------------------------------------------------------
# generic


def _innermost_loops(root: Operation) -> list[loop.ForOp]:
    return [
        l for l in root.walk()
        if isinstance(l, loop.ForOp) and not any(isinstance(o, loop.ForOp) for o in l.body.walk() if o is not l)
    ]


def _schedule_rest(kernel: func.FuncOp, cfg: ScheduleConfig, skip: set[str] = frozenset()) -> None:
    """Parallelize / vectorize the nests that hold no block of `skip` and are not yet marked."""
    g = cfg.generic
    g = dataclasses.replace(g, vectorize=choose("generic.vectorize", g.vectorize),
                            parallel=choose("generic.parallel", g.parallel),
                            min_vector_extent=choose("generic.min_vector_extent", g.min_vector_extent))
    width = choose("generic.width", cfg.width)
    if g.vectorize and choose("generic.vectorize_windows", g.vectorize_windows):
        _windows_innermost(kernel, width, skip, g.min_vector_extent, g.parallel)
    tops = [op for op in kernel.body.block.ops if isinstance(op, loop.ForOp)]
    for t_index, top in enumerate(tops):
        if any(b.block_name.data in skip for b in loop.blocks_of(top)):
            continue
        if any(isinstance(l, loop.ForOp) and l.kind.data != "serial" for l in top.walk()):
            continue
        if g.vectorize:
            for idx, inner in enumerate(_innermost_loops(top)):
                ext = const_index(inner.ub)
                if ext is not None and ext < max(g.min_vector_extent, 2):
                    continue

                w = _short_loop_width(fit_width(inner, width, along=inner), ext)
                if w == 0:
                    continue

                def vec(s: Schedule, t=t_index, idx=idx, w=w) -> None:
                    top_now = [op for op in kernel.body.block.ops if isinstance(op, loop.ForOp)][t]
                    l = _innermost_loops(top_now)[idx]
                    s.vectorize(l)
                    _mark_width(l, w)

                transaction.attempt(kernel, vec, marks_only=True)
        if g.parallel:
            _parallelize_nest(kernel, t_index)


MAX_WINDOW = 16
"""Reduce loops up to this static extent count as a window (a pool's kernel_shape)."""


def _windows_innermost(kernel: func.FuncOp, width: int, skip: set[str], min_extent: int = 4,
                       parallel: bool = True) -> None:
    """Window reductions (max/avg pools: out[c, oh, ow] = max over kh, kw of x[c, s*oh + kh, s*ow + kw])
    put their small reduce loops innermost, where nothing can be vectorized. Per top-level nest
    of one such block: its init is hoisted before the last spatial loop (decompose_reduction) and
    the reduce loops move outside that loop, which then runs innermost over contiguous outputs
    (stride-s input loads become vector loads plus a shuffle: loop-lower-vectors), so the generic
    vectorizer below takes it. Rolled back unless that innermost loop is vectorizable; not done
    where the output row is shorter than `min_extent` (the generic vectorizer's minimum): it would
    stay scalar, reading and writing its output at every tap, while the window innermost keeps the
    running max or sum in a register (Inception-v2's 3x3 max pools with 7-wide outputs: 0.20 ->
    0.10 ms for 1024 channels)."""
    names = []
    for top in [op for op in kernel.body.block.ops if isinstance(op, loop.ForOp)]:
        blocks = loop.blocks_of(top)
        if len(blocks) == 1 and blocks[0].block_name.data not in skip and blocks[0].has_init:
            names.append(blocks[0].block_name.data)
    for name in names:  # by name: a padded copy adds nests in front of the window's
        blk = loop.find_block(kernel, name)
        if blk is None:
            continue
        kinds = list(blk.kinds)
        n_red = len(kinds) - len([k for k in kinds if k == "spatial"])
        loops = loop.block_loops(blk)
        if n_red < 1 or len(loops) < n_red + 1 or kinds[-n_red:] != ["reduce"] * n_red:
            continue
        if any(const_index(l.ub) is None or const_index(l.ub) > MAX_WINDOW for l in loops[-n_red:]):
            continue
        row = const_index(loops[-n_red - 1].ub) or 0
        short = 5 <= row < min(8, width) and choose("generic.window_row_unroll", True)
        if row < max(min_extent, 4) and not short:
            continue

        def go(s: Schedule, name=name, n_red=n_red) -> None:
            b = loop.find_block(kernel, name)
            if choose("generic.pad_windows", True):
                _pad_window_input(kernel, b)
            ls = loop.block_loops(b)
            s.decompose_reduction(b, ls[-n_red - 1])
            ls = loop.block_loops(b)
            s.reorder(*ls[-n_red:], ls[-n_red - 1])
            inner = loop.block_loops(b)[-1]
            reason = vector_plan_error(inner)
            if reason is not None or fit_width(inner, width, along=inner) == 0:
                raise ScheduleError("window reduction: the output loop would not vectorize", inner)
            if short:
                # a row shorter than 8 (Inception-v2's 7-wide pools): the row and the taps
                # unrolled, so each output's running max or sum stays in a register (its window
                # innermost did a loop per output, 3x3/1 max on 1024 x 7 x 7: 0.23 ms, unrolled
                # 0.09; a vector<7> row was split into odd pieces: 0.18). Marked here: the generic
                # vectorizer below leaves a marked nest alone (its parallel loop is marked after)
                s.unroll(inner)
                taps = loop.block_loops(b)[-n_red - 1:-1]
                if math.prod(const_index(t.ub) for t in taps) <= MAX_WINDOW:
                    for t in taps:
                        s.unroll(t)
                marked.append(name)

        marked: list[str] = []
        if transaction.attempt(kernel, go) and marked and parallel:
            tops = [op for op in kernel.body.block.ops if isinstance(op, loop.ForOp)]
            t_index = next(i for i, t in enumerate(tops) if loop.find_block(t, name) is not None)
            _parallelize_nest(kernel, t_index)


def _pad_window_input(kernel: func.FuncOp, blk: loop.BlockOp) -> None:
    """A padded window (max pool: taps outside the input are -inf; avg pool's sum: 0) reads
    X[n, c, max(s*oh + d*kh - p, 0), ...] and selects the pad value where a tap is outside, so
    its output loop does not vectorize: read instead a padded copy XP (pad_rows: border rows and
    columns set to the pad value, interior rows copied by vector loops) at s*oh + d*kh, affine
    (ResNet-50's 3x3/2 max pool: 0.9 ms scalar against onnxruntime's 0.3). Nothing happens
    without such a load (an unpadded window); raises ScheduleError where it cannot pad."""
    from xdsl.dialects import arith
    from xdsl.dialects.builtin import FloatAttr, MemRefType, UnitAttr
    from xdsl.ir import OpResult
    from xdsl.rewriter import InsertPoint, Rewriter

    from minimlir.dialects import mem
    from minimlir.passes.loop.schedule.api import iconst, local_form
    from minimlir.passes.loop.schedule.default.conv2d import (
        _drop_dead, _local_buffer, _unclamp, pad_rows, read_padded)

    guarded = []
    for ld in [o for o in blk.body.walk() if isinstance(o, mem.LoadOp)]:
        uses = list(ld.result.uses)
        if (len(ld.indices) in (4, 5) and len(uses) == 1 and isinstance(uses[0].operation, arith.SelectOp)
                and any(_unclamp(i) is not i for i in ld.indices[2:4])):
            guarded.append((ld, uses[0].operation))
    if not guarded:
        return
    if len(guarded) != 1:
        raise ScheduleError("padded window: several guarded loads", blk)
    ld, sel = guarded[0]
    args = list(blk.body.block.args)
    ls = loop.block_loops(blk)
    # channel-blocked (graph-layout): n cb oh ow cl | kh kw reading X[n, cb, h, w, cl]
    bl = len(ld.indices) == 5
    if (len(args) != 6 + bl or len(ls) != 6 + bl or ld.indices[0] is not args[0] or ld.indices[1] is not args[1]
            or (bl and ld.indices[4] is not args[4]) or list(blk.bindings) != [l.induction_var for l in ls]):
        raise ScheduleError("padded window: not n c oh ow | kh kw, bound to its loops", blk)
    pad = sel.rhs.owner
    if sel.lhs is not ld.result or not (isinstance(pad, arith.ConstantOp) and isinstance(pad.value, FloatAttr)):
        raise ScheduleError("padded window: the pad is not a constant", sel)
    x = ld.memref
    shape = x.type.get_shape()
    block = list(shape[4:])  # a blocked input's channel block: copied whole
    ext = [const_index(l.ub) for l in ls]
    if None in ext or min(shape) < 0:
        raise ScheduleError("padded window: dynamic sizes", blk)
    taps, pads, extents = [_unclamp(i) for i in ld.indices[2:4]], [], []
    for d, (t, ov, kv) in enumerate(zip(taps, args[2:4], args[-2:])):
        f = local_form(t, blk)
        if f is None or not f.atoms <= {ov, kv} or f.coeff(ov) < 1 or f.coeff(kv) < 1 or f.const > 0:
            raise ScheduleError("padded window: a tap is not s*o + d*k - p", ld)
        pads.append(-f.const)
        extents.append((ext[2 + d] - 1) * f.coeff(ov) + (ext[-2 + d] - 1) * f.coeff(kv) + 1)
    # the select's condition: exactly the taps' bounds 0 <= t < size
    want = {(taps[d], "sge", 0) for d in range(2) if pads[d] > 0}
    want |= {(taps[d], "slt", shape[2 + d]) for d in range(2) if extents[d] - pads[d] > shape[2 + d]}
    got, todo = set(), [sel.cond]
    while todo:
        c = todo.pop()
        op = c.owner if isinstance(c, OpResult) else None
        if isinstance(op, arith.AndIOp):
            todo += [op.lhs, op.rhs]
        elif isinstance(op, arith.CmpiOp) and const_index(op.rhs) is not None:
            got.add((op.lhs, arith.CMPI_COMPARISON_OPERATIONS[op.predicate.value.data], const_index(op.rhs)))
        else:
            raise ScheduleError("padded window: an unexpected guard", sel)
    if got != want:
        raise ScheduleError("padded window: the guard is not the input's bounds", sel)
    elem = x.type.element_type
    ext_v = [iconst(kernel, e) for e in extents]
    sizes = [iconst(kernel, shape[2]), iconst(kernel, shape[3])]
    frees: list = []
    trail = [iconst(kernel, b) for b in block]
    if extents[0] * extents[1] * 4 * math.prod(block) <= PRIVATE_PLANE_BYTES and ls[2].parent_op() is ls[1]:
        # one padded plane per (n, c), filled inside the channel loop right before its rows:
        # per-thread scratch (loop.private) that stays in L1/L2, not a full-size copy through memory
        xp = mem.AllocaOp(MemRefType(elem, extents + block))
        xp.attributes[loop.PRIVATE_ATTR] = UnitAttr()
        Rewriter.insert_op(xp, InsertPoint.at_start(kernel.body.block))
        xp = xp.results[0]
        ok = pad_rows(kernel, InsertPoint.before(ls[2]), x, xp, [], pads, sizes, ext_v, pad.value.value.data,
                      f"{blk.block_name.data}_pad", blk.location, at=[ls[0].induction_var, ls[1].induction_var],
                      trail=trail)
        prefix = []
    else:
        top = ls[0]
        while top.parent_op() is not kernel:
            top = top.parent_op()
        ip = InsertPoint.before(top)
        lead = [iconst(kernel, shape[0]), iconst(kernel, shape[1])]
        xp = _local_buffer(elem, [*lead, *ext_v, *trail], ip, frees)
        ok = pad_rows(kernel, ip, x, xp, lead, pads, sizes, ext_v, pad.value.value.data,
                      f"{blk.block_name.data}_pad", blk.location, trail=trail)
        prefix = [ld.indices[0], ld.indices[1]]
    if not ok:
        raise ScheduleError("padded window: dynamic sizes", blk)
    read_padded(kernel, ld, sel, xp, prefix, taps, pads, list(ld.indices[4:]))
    _drop_dead(blk.body.block)
    ret = kernel.body.block.last_op
    for f in frees:
        Rewriter.insert_op(mem.DeallocOp(f), InsertPoint.before(ret))


PRIVATE_PLANE_BYTES = 128 << 10
"""A padded window's input plane up to this size is per-thread scratch (on the stack of each thread),
filled per channel; a larger one is a full-size padded copy made before the window's loops."""


def _parallelize_nest(kernel: func.FuncOp, t_index: int) -> None:
    """Mark the outermost loop of top-level nest #t_index (walking down single-loop bodies,
    skipping loops of extent 1) that may legally run in parallel."""
    depth = 0
    while True:
        top = [op for op in kernel.body.block.ops if isinstance(op, loop.ForOp)][t_index]
        cur: loop.ForOp | None = top
        for _ in range(depth):
            inner = [o for o in cur.body.block.ops if isinstance(o, loop.ForOp)]  # type: ignore[union-attr]
            cur = inner[0] if len(inner) == 1 else None
            if cur is None:
                return
        assert cur is not None
        if cur.kind.data != "serial":
            return
        if const_index(cur.ub) == 1 or not _attempt_parallel(kernel, t_index, depth):
            depth += 1
            if depth > 8:
                return
            continue
        return


def _attempt_parallel(kernel: func.FuncOp, t_index: int, depth: int) -> bool:
    def go(s: Schedule) -> None:
        cur = [op for op in kernel.body.block.ops if isinstance(op, loop.ForOp)][t_index]
        for _ in range(depth):
            cur = [o for o in cur.body.block.ops if isinstance(o, loop.ForOp)][0]
        s.parallel(cur)

    return transaction.attempt(kernel, go, marks_only=True)


