"""Rule: conv2d (the blocks graph-legalize stamps `kind = "conv2d"`, with `groups` and
`depthwise`): output channels in vectors (NCHWc), packed weight panels, a zero-padded input
copy; depthwise and small-group convs by output rows (see the package docstring)."""

from __future__ import annotations

from xdsl.dialects import arith, func
from xdsl.dialects.builtin import FloatAttr
from xdsl.ir import OpResult, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from minimlir.passes.loop.schedule.default.knobs import choose, fact
from minimlir.dialects import loop, mem
from minimlir.passes.loop.schedule.affine import AffineForm, affine_of
from minimlir.passes.loop.schedule.api import (
    Schedule,
    ScheduleError,
    const_index,
    emit,
    fold_static,
    iconst,
    local_form,
    materialize_form,
)
from minimlir.passes.loop.schedule.default import transaction
from minimlir.passes.loop.schedule.default._helpers import (
    _cache_accumulator,
    _contract_fma,
    _direct_loops,
    _forward_init,
    _fuse_consumers,
    _inline_epilogue,
    _mark_width,
    _short_loop_width,
    _vectorize_fused,
    clamp_tile_binding,
    cores,
    exact_tile_loops,
    fit_width,
    fold_epilogue_into,
    l2_bytes,
    shift_tile_binding,
    split_loop,
)
from minimlir.passes.loop.schedule.default.config import ScheduleConfig
from minimlir.passes.loop.schedule.default.generic import _schedule_rest

# ----------------------------------------------------------------------------------------------
# conv2d


def _unclamp(v: SSAValue) -> SSAValue:
    """The index under a clamp chain `minsi(maxsi(t, 0), last)` (either part optional)."""
    while isinstance(v, OpResult) and isinstance(v.owner, arith.MinSIOp | arith.MaxSIOp):
        v = v.owner.lhs
    return v


def _drop_dead(block) -> None:
    """Erase pure arith ops without uses from `block` (repeatedly)."""
    changed = True
    while changed:
        changed = False
        for o in reversed(list(block.ops)):
            if o.dialect_name() == "arith" and all(not r.uses for r in o.results):
                o.detach()
                o.erase()
                changed = True


def _nest(kernel: func.FuncOp, ip: InsertPoint, extents: list[SSAValue], name: str,
          outer: list[SSAValue] = ()) -> tuple:
    """Loops over `extents` at `ip` with one all-spatial block bound 1:1 (after the `outer`
    values, variables of loops around `ip`, which it binds first); returns the top loop, the
    block's iteration variables and an insert point in its body."""
    c0, c1 = iconst(kernel, 0), iconst(kernel, 1)
    ivs, top = [], None
    for e in extents:
        l = loop.ForOp(c0, e, c1)
        Rewriter.insert_op(l, ip)
        top = top or l
        ivs.append(l.induction_var)
        ip = InsertPoint.before(l.body.block.last_op)
    binds = [*outer, *ivs]
    blk = loop.BlockOp(name, binds, ["spatial"] * len(binds))
    Rewriter.insert_op(blk, ip)
    return top, list(blk.body.block.args), InsertPoint.before(blk.body.block.last_op)


def _conv_block(kernel: func.FuncOp, name: str | None = None) -> loop.BlockOp | None:
    """The kernel's first conv2d block (graph-legalize stamps `kind = "conv2d"`), or the one named."""
    convs = loop.blocks_of_kind(kernel, "conv2d")
    if name is not None:
        convs = [b for b in convs if b.block_name.data == name]
    return convs[0] if convs else None


def conv_weight_tile(co: int, cfg: ScheduleConfig) -> int:
    """The output-channel panel (nv*W) the vector path packs a conv's weights in, for `co`
    output channels (per group) and the default knobs; 0 when it refuses the conv (W < 4).
    graph-pack-weights packs a weight param in this panel once, at load time."""
    w = cfg.width
    while w >= 4 and co % w:
        w //= 2
    if w < 4:
        return 0
    nv = max(1, cfg.conv2d.nv)
    while co % (nv * w):
        nv -= 1
    return nv * w


def div_mod(ld: mem.LoadOp, q_dim: int, r_dim: int, rank: int = 5) -> tuple[SSAValue, int] | None:
    """(c, T) when `ld` has `rank` indices, its index q_dim c floordiv T and r_dim c mod T (T a
    positive constant): the split of one channel c into blocks of T (a pre-packed weight's output
    channel, a blocked input's channel; a pre-packed matmul B's column, rank 3); else None."""
    if len(ld.indices) != rank:
        return None
    q, r = ld.indices[q_dim], ld.indices[r_dim]
    if not (isinstance(q, OpResult) and isinstance(q.owner, arith.FloorDivSIOp)
            and isinstance(r, OpResult) and isinstance(r.owner, arith.RemSIOp)
            and q.owner.lhs is r.owner.lhs):
        return None
    t = const_index(q.owner.rhs)
    return (q.owner.lhs, t) if t is not None and t > 0 and const_index(r.owner.rhs) == t else None


def packed_tile(ld: mem.LoadOp) -> int:
    """T when `ld` reads a pre-packed weight W[c / T, ci, kh, kw, c % T] (graph-legalize of a
    conv2d with `weight_tile`), else 0."""
    split = div_mod(ld, 0, 4)
    return split[1] if split is not None else 0


def weight_index(ld: mem.LoadOp) -> tuple | None:
    """The logical (co, ci, kh, kw) index of a conv weight load, plain or pre-packed; None if
    `ld` is neither."""
    if len(ld.indices) == 4:
        return tuple(ld.indices)
    if packed_tile(ld):
        return (ld.indices[0].owner.lhs, *ld.indices[1:4])  # type: ignore[union-attr]
    return None


def _depthwise(blk: loop.BlockOp) -> bool:
    """One channel per group in and out: legalization dropped the unit co / ci loops (n c oh ow | kh kw)."""
    return "depthwise" in blk.attributes


def _block(blk: loop.BlockOp) -> int:
    """B of a channel-blocked conv (graph-layout's NCHW{B}c: n cb oh ow cl | ci kh kw), else 0."""
    return loop.int_param(blk, "block", 0)


def _grouped(blk: loop.BlockOp) -> bool:
    """groups > 1 with channel loops of their own (n g co oh ow | ci kh kw)."""
    return loop.int_param(blk, "groups", 1) > 1 and not _depthwise(blk)


def _relayout_conv(kernel: func.FuncOp, blk: loop.BlockOp, pad_input: bool, co_tile: int,
                   name: str = "conv2d") -> tuple:
    """Give the conv2d block (n co oh ow | ci kh kw, group 1) operands it can read in vector
    tiles, with two local buffers filled before its nest:

        conv2d_wpack: WT[co0, ci, kh, kw, co1] = W[co0*T + co1, ci, kh, kw]   (T = co_tile)
        conv2d_pad:   XP[n, c, hp, wp] = X[n, c, hp - pt, wp - pl] inside X, else 0

    and the block reads XP[n, ci, oh*s + kh*d, ow*s + kw*d] (affine, no clamp, no select); the
    weight load is returned with WT for _read_weight_panel once the channel loop is split.
    Both buffers are heap-allocated (mem.alloc) and freed at the kernel end. A channel-blocked
    conv (graph-layout: n cb oh ow cl | ci kh kw, output channel cb*B + cl) reads and writes
    X[n, c floordiv B, h, w, c mod B] and Y[n, cb, oh, ow, cl]; its padded copy is
    XP[n, c floordiv B, hp, wp, c mod B]."""
    args = list(blk.body.block.args)
    loops = loop.block_loops(blk)
    ubs = [l.ub for l in loops]
    g, dw = None, _depthwise(blk)
    B = _block(blk)
    cl = None
    if B:  # n cb oh ow cl | ci kh kw: cl leaves the list, cb stands for the channel
        if len(args) != 8:
            raise ScheduleError("conv relayout: a blocked conv without its channel loops", blk)
        cl = args.pop(4)
        ubs.pop(4)
    if _grouped(blk):  # grouped: n g co oh ow | ci kh kw, channels g*COg + co and g*CIg + ci
        if len(args) != 8:
            raise ScheduleError("conv relayout: a grouped conv without its channel loops", blk)
        g, g_ub = args.pop(1), ubs.pop(1)
    if dw:  # depthwise: n c oh ow | kh kw, input channel c, weight [c, 0, kh, kw]
        args.insert(4, None)
        ubs.insert(4, iconst(kernel, 1))
    n, co, oh, ow, ci, kh, kw = args
    top = loops[0]
    while top.parent_op() is not kernel:
        top = top.parent_op()
    body = blk.body.block
    loads = [op for op in body.ops if isinstance(op, mem.LoadOp)]
    stores = [op for op in body.ops if isinstance(op, mem.StoreOp)]
    co_ext, ci_ext = const_index(ubs[1]), const_index(ubs[4])
    if B and co_ext is not None:
        co_ext *= B
    if co_ext is None or co_ext % co_tile:
        raise ScheduleError("conv relayout: the output channels must be a multiple of the tile", blk)
    if g is not None and (ci_ext is None or const_index(g_ub) is None):
        raise ScheduleError("conv relayout: grouped conv with dynamic channel counts", blk)

    def chan(v: SSAValue, c: SSAValue, ext: int | None) -> bool:
        """v is channel c of its group: c (group 1) or g*ext + c; blocked, output channel cb*B + cl."""
        if B and c is co:
            f = local_form(v, blk)
            return f is not None and f == AffineForm.atom(co) * B + AffineForm.atom(cl)
        if g is None:
            return v is c
        f = local_form(v, blk)
        return f is not None and f == AffineForm.atom(c) + AffineForm.atom(g) * ext

    if (len(stores) != 1 or len(loads) != 3
            or (list(stores[0].indices) != [n, co, oh, ow, cl] if B else (
                len(stores[0].indices) != 4 or [stores[0].indices[i] for i in (0, 2, 3)] != [n, oh, ow]
                or not chan(stores[0].indices[1], co, co_ext)))):
        raise ScheduleError("conv relayout: unexpected conv2d block", blk)
    y = stores[0].memref

    def weight_load(l: mem.LoadOp) -> bool:
        """W[co, ci, kh, kw], or of a pre-packed weight W[co / T, ci, kh, kw, co % T]."""
        idx = weight_index(l)
        return (idx is not None and list(idx[2:]) == [kh, kw] and chan(idx[0], co, co_ext)
                and (idx[1] is ci if ci is not None else const_index(idx[1]) == 0))

    w_ld = next((l for l in loads if weight_load(l)), None)
    x_ld = next((l for l in loads if l is not w_ld and l.memref is not y), None)
    xb = B and x_ld is not None and len(x_ld.indices) == 5  # a blocked input (else NCHW)
    if xb:
        x_ok = div_mod(x_ld, 1, 4) == (ci, B)  # X[n, ci floordiv B, h, w, ci mod B]
    else:
        x_ok = x_ld is not None and (x_ld.indices[1] is co if dw else chan(x_ld.indices[1], ci, ci_ext))
    if w_ld is None or x_ld is None or x_ld.indices[0] is not n or not x_ok:
        raise ScheduleError("conv relayout: unexpected conv2d operands", blk)
    elem = x_ld.result.type
    rows = co_ext * (const_index(g_ub) if g is not None else 1)  # W's dim 0: all output channels
    ip = InsertPoint.before(top)
    frees = []
    # -- weights: pre-packed in this tile already (graph-pack-weights, once at load time), or
    # packed here, per call, in co_tile-wide strips: sequential read streams, co_tile floats a write
    packed = packed_tile(w_ld)
    if packed == co_tile or (co_tile == 1 and not packed):  # (1-channel panels of OIHW: OIHW itself)
        wt = w_ld.memref
    elif packed and (co_tile % packed == 0 or (packed % co_tile == 0 and g is None)):
        # a register tile of k pre-packed panels (a tuned 4-vector tile on ResNet-50's 2-vector
        # panels), or of 1/k of one (the default's 7 x 1 tile of its 14x14 3x3 conv, whose weight
        # was copied into 8-channel panels in every call: 2.4 MB): read in place (_read_weight_panel)
        wt = w_ld.memref
    else:
        wt_shape = [iconst(kernel, rows // co_tile), ubs[4], ubs[5], ubs[6], iconst(kernel, co_tile)]
        wt = _local_buffer(elem, wt_shape, ip, frees)
        p_top, (pc0, pi, ph, pw, pc1), bip = _nest(kernel, ip, wt_shape, f"{name}_wpack")
        p_top.location = blk.location
        pc = emit(arith.AddiOp(emit(arith.MuliOp(pc0, iconst(kernel, co_tile)), bip), pc1), bip)
        src = [pc, pi, ph, pw]
        if packed:  # a panel of another width (a tuned tile): repack from it
            t = iconst(kernel, packed)
            src = [emit(arith.FloorDivSIOp(pc, t), bip), pi, ph, pw, emit(arith.RemSIOp(pc, t), bip)]
        v = emit(mem.LoadOp(w_ld.memref, src, elem), bip)
        Rewriter.insert_op(mem.StoreOp(v, wt, [pc0, pi, ph, pw, pc1]), bip)
    # -- padded input
    taps = [_unclamp(i) for i in x_ld.indices[2:4]]
    uses = list(x_ld.result.uses)
    sel = uses[0].operation if len(uses) == 1 and isinstance(uses[0].operation, arith.SelectOp) else None
    clamped = any(t is not i for t, i in zip(taps, x_ld.indices[2:])) or sel is not None
    if clamped and pad_input:
        if sel is None or sel.lhs is not x_ld.result:
            raise ScheduleError("conv relayout: padded load without a select", x_ld)
        zero = sel.rhs.owner
        if not (isinstance(zero, arith.ConstantOp) and isinstance(zero.value, FloatAttr)
                and zero.value.value.data == 0.0):
            raise ScheduleError("conv relayout: padding value is not 0", sel)
        x = x_ld.memref
        pads, extents, sizes = [], [], []
        for d, (t, ov, kv, o_ub, k_ub) in enumerate(zip(taps, (oh, ow), (kh, kw), ubs[2:4], ubs[5:7], strict=True)):
            f = local_form(t, blk)
            if f is None or not f.atoms <= {ov, kv} or f.coeff(ov) < 1 or f.coeff(kv) < 1 or f.const > 0:
                raise ScheduleError("conv relayout: tap index is not oh*s + kh*d - pad", x_ld)
            st, dil = f.coeff(ov), f.coeff(kv)
            of, kf = affine_of(o_ub), affine_of(k_ub)
            if of is None or kf is None:
                raise ScheduleError("conv relayout: non-affine extents", blk)
            # every tap, inside or not: (O - 1)*s + (K - 1)*d + 1
            extents.append(materialize_form(fold_static(of * st + kf * dil - st - dil + 1), kernel, ip))
            pads.append(-f.const)
            shape = x.type.get_shape()  # type: ignore[union-attr]
            sizes.append(iconst(kernel, shape[2 + d]) if shape[2 + d] >= 0 else emit(mem.DimOp(x, 2 + d), ip))
        xshape = x.type.get_shape()  # type: ignore[union-attr]
        chans = ubs[4] if g is None and not dw and not xb else (
            iconst(kernel, xshape[1]) if xshape[1] >= 0 else emit(mem.DimOp(x, 1), ip))
        trail = [iconst(kernel, B)] if xb else []
        xp = _local_buffer(elem, [ubs[0], chans, *extents, *trail], ip, frees)
        if not pad_rows(kernel, ip, x, xp, [ubs[0], chans], pads, sizes, extents, 0.0, f"{name}_pad", blk.location,
                        trail=trail):
            if xb:
                raise ScheduleError("conv relayout: a blocked conv's padded input with dynamic sizes", x_ld)
            _pad_by_elements(kernel, ip, x, xp, [ubs[0], chans], pads, sizes, extents, f"{name}_pad", blk.location)
        read_padded(kernel, x_ld, sel, xp, [n, x_ld.indices[1]], taps, pads, list(x_ld.indices[4:]))
    _drop_dead(body)
    ret = kernel.body.block.last_op
    for f in frees:
        Rewriter.insert_op(mem.DeallocOp(f), InsertPoint.before(ret))
    return w_ld, wt


def _pad_by_elements(kernel: func.FuncOp, ip: InsertPoint, x: SSAValue, xp: SSAValue, lead: list[SSAValue],
                     pads: list[int], sizes: list[SSAValue], extents: list[SSAValue], name: str, location) -> None:
    """pad_rows' zero fill for dynamic sizes: one element at a time, each tap clamped into X and
    selected against 0."""
    elem = xp.type.element_type  # type: ignore[union-attr]
    x_top, (qn, qc, qh, qw), bip = _nest(kernel, ip, [*lead, *extents], name)
    x_top.location = location
    last = [emit(arith.SubiOp(sz, iconst(kernel, 1)), InsertPoint.before(x_top)) for sz in sizes]
    cond, idx = None, []
    for q, pd, sz, lst in zip((qh, qw), pads, sizes, last):
        src = emit(arith.SubiOp(q, iconst(kernel, pd)), bip) if pd else q
        for c in (arith.CmpiOp(src, iconst(kernel, 0), "sge"), arith.CmpiOp(src, sz, "slt")):
            c = emit(c, bip)
            cond = c if cond is None else emit(arith.AndIOp(cond, c), bip)
        idx.append(emit(arith.MinSIOp(emit(arith.MaxSIOp(src, iconst(kernel, 0)), bip), lst), bip))
    v = emit(mem.LoadOp(x, [qn, qc, *idx], elem), bip)
    z = emit(arith.ConstantOp(FloatAttr(0.0, elem)), bip)
    v = emit(arith.SelectOp(cond, v, z), bip)
    Rewriter.insert_op(mem.StoreOp(v, xp, [qn, qc, qh, qw]), bip)


def read_padded(kernel: func.FuncOp, ld: mem.LoadOp, sel: arith.SelectOp, xp: SSAValue, prefix: list[SSAValue],
                taps: list[SSAValue], pads: list[int], suffix: list[SSAValue] = ()) -> None:
    """Replace a guarded load (`sel` = select(inside, `ld`, pad value), `ld` reading X at clamped
    `taps`) by a load of the padded copy XP[prefix..., tap + pad, ..., suffix...] (affine, no select)."""
    ip = InsertPoint.before(ld)
    idx = [emit(arith.AddiOp(t, iconst(kernel, p)), ip) if p else t for t, p in zip(taps, pads)]
    new = emit(mem.LoadOp(xp, [*prefix, *idx, *suffix], ld.result.type), ip)
    sel.result.replace_all_uses_with(new)
    sel.detach()
    sel.erase()
    ld.detach()
    ld.erase()


def pad_rows(kernel: func.FuncOp, ip: InsertPoint, x: SSAValue, xp: SSAValue, lead: list[SSAValue],
             pads: list[int], sizes: list[SSAValue], extents: list[SSAValue], value: float, name: str,
             location=None, at: list[SSAValue] | None = None, trail: list[SSAValue] = ()) -> bool:
    """Fill XP[n, c, hp, wp] (extents HP x WP) with X[n, c, hp - pt, wp - pl] inside X, else `value`,
    as row copies with no per-element test, when the spatial sizes and extents are static:

        {name}_top / _bottom:  XP[n, c, hp, :] = value        hp < pt, hp >= pt + H
        {name}_left / _right:  XP[n, c, pt + i, wp] = value   wp < pl, wp >= pl + W
        {name}:                XP[n, c, pt + i, pl + j] = X[n, c, i, j]   (contiguous: vectorized)

    (only the rows and columns XP holds: a strided conv may not read X's last ones), with loops
    over the `lead` extents (n, c); or, with `at` (the values of X's leading indices, from loops
    around `ip`), one plane XP[hp, wp] of X[at..., :, :], the blocks binding `at` as iteration
    variables of their own. One element at a time, with clamps and a select each, the copy of a
    64 x 56 x 56 input took 0.15 of a 1.65 ms 3x3 conv. Returns False (nothing built) when a size
    or extent is dynamic. `trail`: extents of dims after W (a blocked input's channel block: XP[n,
    cb, hp, wp, c]), copied whole."""
    st = [const_index(v) for v in (*sizes, *extents)]
    if None in st:
        return False
    (h, w, hp, wp), (pt, pl) = st, pads
    rows, cols = max(0, min(h, hp - pt)), max(0, min(w, wp - pl))
    elem = xp.type.element_type  # type: ignore[union-attr]

    def fill(part: str, r0: int, nr: int, col0: int, nc: int, copy: bool) -> None:
        if nr <= 0 or nc <= 0:
            return
        spatial = [iconst(kernel, nr), iconst(kernel, nc), *trail]
        top, ivs, bip = (_nest(kernel, ip, [*lead, *spatial], name + part) if at is None
                         else _nest(kernel, ip, spatial, name + part, at))
        k = len(ivs) - len(trail)
        (*pre, qi, qj), post = ivs[:k], ivs[k:]
        if location is not None:
            top.location = location
        hi = emit(arith.AddiOp(qi, iconst(kernel, r0)), bip) if r0 else qi
        wj = emit(arith.AddiOp(qj, iconst(kernel, col0)), bip) if col0 else qj
        if copy:
            v = emit(mem.LoadOp(x, [*pre, qi, qj, *post], elem), bip)
        else:
            v = emit(arith.ConstantOp(FloatAttr(value, elem)), bip)
        Rewriter.insert_op(mem.StoreOp(v, xp, [*(pre if at is None else []), hi, wj, *post]), bip)

    fill("_top", 0, min(pt, hp), 0, wp, False)
    fill("_bottom", pt + rows, hp - pt - rows, 0, wp, False)
    fill("_left", pt, rows, 0, min(pl, wp), False)
    fill("_right", pt, rows, pl + cols, wp - pl - cols, False)
    fill("", pt, rows, pl, cols, True)
    return True


def _read_weight_panel(kernel: func.FuncOp, w_ld: mem.LoadOp, wt: SSAValue, co0: loop.ForOp,
                       cj: loop.ForOp, cw: loop.ForOp, w: int, group: tuple | None = None) -> None:
    """W[co, ci, kh, kw] -> WT[co0, ci, kh, kw, cj*W + cw] with the output-channel tile loops'
    own variables (co = co0*nv*W + cj*W + cw): one contiguous weight panel per co0 tile.
    The index uses loop variables inside the block (affine, so the analyses and the vector
    lowering read it), which the channel split alone cannot express in block variables."""
    ip = InsertPoint.before(w_ld)
    nv = const_index(cj.ub)
    tile = wt.type.get_shape()[-1]  # type: ignore[union-attr]
    T = nv * w if nv is not None else tile
    # WT's panels hold `tile` channels, the register tile T = nv*W (read in place, not repacked):
    # k panels (T = k*tile): channel cj*W + cw of tile co0 is lane (cj mod tile/W)*W + cw of panel
    # co0*k + cj floordiv tile/W (cj is unrolled: both fold to constants per vector); 1/k of a
    # panel (tile = k*T): lane (co0 mod k)*T + cj*W + cw of panel co0 floordiv k, computed at the
    # top of co0's body (the same for every lane of the vector loop)
    k = T // tile if T > tile and T % tile == 0 else 1
    part = tile // T if tile > T and tile % T == 0 else 1
    cjv = cj.induction_var
    hi = None
    if k > 1:
        per = iconst(kernel, tile // w)
        hi = emit(arith.FloorDivSIOp(cjv, per), ip)
        cjv = emit(arith.RemSIOp(cjv, per), ip)
    lane = emit(arith.AddiOp(emit(arith.MuliOp(cjv, iconst(kernel, w)), ip), cw.induction_var), ip)
    _, ci, kh, kw = weight_index(w_ld)
    panel = co0.induction_var
    top = InsertPoint.before(co0.body.block.first_op)  # type: ignore[arg-type]
    if group is not None:  # (g, panels per group): panel g*P + co0
        gv, per = group
        panel = emit(arith.AddiOp(emit(arith.MuliOp(gv, iconst(kernel, per)), ip), panel), ip)
    if hi is not None:
        panel = emit(arith.AddiOp(emit(arith.MuliOp(panel, iconst(kernel, k)), ip), hi), ip)
    if part > 1:  # (not grouped: _relayout_conv repacks those)
        kc = iconst(kernel, part)
        first = emit(arith.MuliOp(emit(arith.RemSIOp(panel, kc), top), iconst(kernel, T)), top)
        panel = emit(arith.FloorDivSIOp(panel, kc), top)
        lane = emit(arith.AddiOp(first, lane), ip)
    new_w = emit(mem.LoadOp(wt, [panel, ci, kh, kw, lane], w_ld.result.type), ip)
    w_ld.result.replace_all_uses_with(new_w)
    body = w_ld.parent_block()
    w_ld.detach()
    w_ld.erase()
    if body is not None:
        _drop_dead(body)  # a pre-packed weight's c / T, c % T


def _read_blocked_input(kernel: func.FuncOp, blk: loop.BlockOp, b: int, cib: loop.ForOp, cil: loop.ForOp) -> None:
    """X[n, ci floordiv B, h, w, ci mod B] -> X[n, cib, h, w, cil] with the split channel loops'
    own variables (ci = cib*B + cil): affine, so LLVM strength-reduces the addresses (the div and
    mod of the block variable are not: every tap's address was recomputed, and a 3x3 conv at
    14x14 spilled and ran at 60% of the NCHW one's speed)."""
    ld = _blocked_input_load(blk, b)
    if ld is None:
        raise ScheduleError("conv2d rule: no blocked input read", blk)
    ip = InsertPoint.before(ld)
    new = emit(mem.LoadOp(ld.memref, [ld.indices[0], cib.induction_var, *ld.indices[2:4], cil.induction_var],
                          ld.result.type), ip)
    ld.result.replace_all_uses_with(new)
    ld.detach()
    ld.erase()
    _drop_dead(blk.body.block)


def _blocked_input_load(blk: loop.BlockOp, b: int) -> mem.LoadOp | None:
    """The read X[n, ci floordiv B, h, w, ci mod B] of a conv's blocked input (a pre-packed weight's
    W[co floordiv T, ci, kh, kw, co mod T] splits dims 0 and 4, not 1), or None (an NCHW input)."""
    return next((ld for ld in blk.body.walk() if isinstance(ld, mem.LoadOp)
                 and (split := div_mod(ld, 1, 4)) is not None and split[1] == b), None)


def transpose_shuffles(rows: int, width: int) -> list[tuple[int, int, list[int], list[int], list[int]]]:
    """The shuffles of an in-register transpose of a rows x width tile (`rows`, a power of two up to
    `width`, vectors of `width` lanes, row i in vector i) into column groups: a list of
    (a, b, mask, rows, cols), each a shuffle of the vectors numbered a and b (the inputs are
    0..rows-1, each shuffle's result the next number) with `mask` (lanes of a, then width + lanes
    of b), holding `cols` (consecutive columns) x `rows` (all rows, in order) as lane
    col_position * len(rows) + row_position. The last `rows` shuffles hold width/rows columns
    each, every column once: rows * log2(rows) shuffles in all, against rows * width element
    extracts (each level pairs vectors with the same columns and halves them)."""
    assert rows & (rows - 1) == 0 and 2 <= rows <= width
    vecs = [(i, [i], list(range(width))) for i in range(rows)]  # (number, rows, columns)
    out: list[tuple[int, int, list[int], list[int], list[int]]] = []
    n = rows
    while len(vecs[0][1]) < rows:
        groups: dict[tuple[int, ...], list] = {}
        for v in vecs:
            groups.setdefault(tuple(v[2]), []).append(v)
        nxt = []
        for cols, g in groups.items():
            g.sort(key=lambda v: v[1][0])
            for (a, ra, _), (b, rb, _) in zip(g[0::2], g[1::2], strict=True):
                half = len(cols) // 2
                for part in (list(cols[:half]), list(cols[half:])):
                    mask = []
                    for col in part:
                        ci = cols.index(col)
                        mask += [ci * len(ra) + k for k in range(len(ra))]
                        mask += [width + ci * len(rb) + k for k in range(len(rb))]
                    out.append((a, b, mask, ra + rb, part))
                    nxt.append((n, ra + rb, part))
                    n += 1
        vecs = nxt
    return out


def _transpose_rows(rw: int) -> int:
    """The rows R of the acc_out transpose for a tile of rw columns: rw rounded up to a power of two."""
    return 1 << (rw - 1).bit_length()


def _transpose_acc_out(kernel: func.FuncOp, s: Schedule, bname: str, rw: int, nv: int, w: int) -> None:
    """Store the accumulator tile along the output row instead of across channels (the tile is
    rw pixels x nv*w channels, NCHW wants each channel's rw pixels contiguous):

        acc_t:   per channel vector cj: the rw row vectors of acc, transposed in registers by
                 R*log2(R) shuffles (R = rw rounded up to a power of two, at most w), stored as
                 acc_t[c * R + ow1] (a local buffer)
        acc_out: for cj, cw { Y[.., c, oh, ow0*rw : +rw] = f(acc_t[c*R : +rw], ...) }   (rw lanes)

    instead of rw*nv*w scalar extracts and stores (SqueezeNet's 3-channel stem: the stores took
    longer than the 27-tap reduction). The epilogue runs on vectors along the row, so a residual
    read along the row is a vector load. Raises ScheduleError where it does not apply."""
    from xdsl.dialects import vector
    from xdsl.dialects.builtin import DenseArrayBase, MemRefType, UnitAttr, VectorType, i64

    out = s.get_block(f"{bname}_acc_out")
    ow1, cj, cw = s.get_loops(out)[-3:]
    if [const_index(l.ub) for l in (ow1, cj, cw)] != [rw, nv, w] or any(
            const_index(l.lb) != 0 or const_index(l.step) != 1 for l in (ow1, cj, cw)):
        raise ScheduleError("transpose acc_out: the tile loops are not rw x nv x w", out)
    accs = [o for o in out.body.walk() if isinstance(o, mem.LoadOp)
            and o.memref.name_hint == f"{bname}_acc"]
    if len(accs) != 1 or not isinstance(accs[0].memref.owner, mem.AllocaOp):
        raise ScheduleError("transpose acc_out: no single read of the accumulator", out)
    acc_ld = accs[0]
    acc = acc_ld.memref
    elem = acc_ld.result.type
    R = _transpose_rows(rw)
    if R > w or acc.type.get_shape() != (rw, nv * w):
        raise ScheduleError("transpose acc_out: the tile does not fit the transpose", out)
    t_op = mem.AllocaOp(MemRefType(elem, [nv * w * R]))
    t_op.attributes[loop.PRIVATE_ATTR] = UnitAttr()
    Rewriter.insert_op(t_op, InsertPoint.at_start(kernel.body.block))
    acc_t = t_op.results[0]
    acc_t.name_hint = f"{bname}_acc_t"
    # the transpose, a block of its own (no iteration variables) right before the copy-out nest
    blk = loop.BlockOp(f"{bname}_acc_t", [], [])
    Rewriter.insert_op(blk, InsertPoint.before(ow1))
    ip = InsertPoint.before(blk.body.block.last_op)
    vt = VectorType(elem, [w])
    for j in range(nv):
        vals = [emit(mem.LoadOp(acc, [iconst(kernel, i), iconst(kernel, j * w)], vt), ip) for i in range(rw)]
        vals += [vals[-1]] * (R - rw)  # padding rows: any values, never stored
        last = []
        for a, b, mask, _, cols in transpose_shuffles(R, w):
            vals.append(emit(vector.ShuffleOp(vals[a], vals[b], DenseArrayBase.from_list(i64, mask),
                                              result_type=vt), ip))
            last.append((cols, vals[-1]))
        for cols, v in last[-R:]:
            Rewriter.insert_op(mem.StoreOp(v, acc_t, [iconst(kernel, (j * w + cols[0]) * R)]), ip)
    # the copy-out reads acc_t[(cj*w + cw)*R + ow1], channels outside, the row in vector lanes
    cj, cw, ow1 = s.reorder(cj, cw, ow1)
    bip = InsertPoint.before(out)
    c = emit(arith.AddiOp(emit(arith.MuliOp(cj.induction_var, iconst(kernel, w)), bip), cw.induction_var), bip)
    at = emit(arith.AddiOp(emit(arith.MuliOp(c, iconst(kernel, R)), bip), ow1.induction_var), bip)
    new = mem.LoadOp(acc_t, [at], elem)
    Rewriter.insert_op(new, InsertPoint.before(acc_ld))
    acc_ld.result.replace_all_uses_with(new.result)
    acc_ld.detach()
    acc_ld.erase()
    for lp in (cj, cw, ow1):
        _drop_dead(lp.body.block)
    s.vectorize(ow1)
    _mark_width(ow1, rw)
    s.unroll(cw)
    s.unroll(cj)


def _local_buffer(elem, dims: list[SSAValue], ip: InsertPoint, frees: list) -> SSAValue:
    from xdsl.dialects.builtin import DYNAMIC_INDEX, MemRefType

    shape = [const_index(d) if const_index(d) is not None else DYNAMIC_INDEX for d in dims]
    op = mem.AllocOp(MemRefType(elem, shape), [d for d, e in zip(dims, shape) if e == DYNAMIC_INDEX])
    Rewriter.insert_op(op, ip)
    frees.append(op.results[0])
    return op.results[0]


def _tile_registers(cfg: ScheduleConfig, taps: int | None) -> int:
    """The vector registers an unrolled conv tile may take. With several taps (kh x kw unrolled
    in the reduction body) LLVM needs a few beyond the tile's accumulators, weights and broadcast,
    and spills inside the reduction when they are missing (3x3, 32 registers: 10 x 2 vectors, 23
    registers, 153 GFLOP/s; 11 x 2, 25, 102; 12 x 2, 27, 94; SqueezeNet's 13 x 2 at OW = 13, 29, 90
    against 134 for two clamped tiles of 7 x 2). A 1x1 conv's body is one tap: 13 x 2 runs at 120
    GFLOP/s there (its conv10, 512 -> 1024 channels), 7 x 2 clamped at 103; all but one register
    (14 x 2 at OW = 14, 31 registers) still runs faster than 7 x 2."""
    regs = cfg.vector_registers
    return regs - 1 if taps == 1 else regs * 23 // 32


def _largest_divisor(n: int, at_most: int) -> int:
    return max(d for d in range(1, max(1, at_most) + 1) if n % d == 0)


def _schedule_conv2d_vector(kernel: func.FuncOp, cfg: ScheduleConfig, bname: str | None = None,
                            rest: bool = True) -> bool:
    """Output channels in vectors (NCHWc-style, TVM's x86 conv2d): pack the weights into
    [co0][ci][kh][kw][nv*W] panels and the padded input into local buffers (_relayout_conv), then

        co -> (co0, cj, cw) = (., nv, W)     ow -> (ow0, ow1) = (., rw)
        order  n co0 oh ow0 | ci kh kw | ow1 cj cw    co0 parallel, ow1 cj unrolled, cw vector

    so the kw body is nv vector loads of WT, rw broadcasts of XP and rw*nv FMAs on an rw x nv*W
    accumulator tile kept in registers from ci = 0 to the end of the reduction (the init and
    the accumulator copies sit outside ci). Stride and dilation only change the broadcast
    addresses. Needs a static output-channel count that W divides (W halves to fit)."""
    c = cfg.conv2d
    blk = _conv_block(kernel, bname)
    loops = _direct_loops(blk) if blk is not None else None
    gr = 1 if blk is not None and _grouped(blk) else 0  # a group loop: n g co oh ow | ci kh kw
    bl = _block(blk) if blk is not None else 0  # channel-blocked: n cb oh ow cl | ci kh kw
    if (loops is None or _depthwise(blk)
            or blk.kinds != ["spatial"] * (4 + gr + (1 if bl else 0)) + ["reduce"] * 3):
        return False
    bname = blk.block_name.data
    co_ext, ow_ext = const_index(loops[1 + gr].ub), const_index(loops[3 + gr].ub)
    if co_ext is None:
        return False
    if bl:
        co_ext *= bl
        if bl > cfg.width or cfg.width % bl:
            return False
    tile = conv_weight_tile(co_ext, cfg)
    if not tile:
        return False
    w = cfg.width
    while co_ext % w or (bl and w > bl):  # blocked: the block is the vector (cl in lanes)
        w //= 2
    nv = tile // w
    if bl and (w != bl or tile % w):
        return False
    taps = (const_index(loops[-2].ub) or 0) * (const_index(loops[-1].ub) or 0) or None
    # the widest tile the registers hold: rw*nv accumulators + nv weight vectors + 1 broadcast
    # (16 registers, AVX2: a 3x3 conv's 8 x 2 tile spilled inside the reduction, ResNet-50's
    # 64-channel 3x3 at 56x56 7.4 ms against 5.6 for 4 x 2)
    limit = _tile_registers(cfg, taps)

    def fits(cols: int, vecs: int) -> bool:
        return cols * vecs + vecs + 1 <= limit

    rmax = max(1, min(c.rw, (limit - nv - 1) // nv))
    rw = _largest_divisor(ow_ext, rmax) if ow_ext is not None else rmax
    if ow_ext is not None and taps == 1:
        # a 1x1 conv's body is one tap: the widest tile of whole columns that fits the registers
        # (ResNet-50's 1024 -> 256 at 14x14: 14 x 2 vectors, 31 registers, 0.60 ms against 0.69
        # for 7 x 2; 512 -> 128 at 28x28 the same way, 0.77 against 0.79)
        rw = max((d for d in range(rw, ow_ext + 1) if ow_ext % d == 0 and fits(d, nv)), default=rw)
    elif ow_ext is not None and 2 * rw < rmax:
        # OW = 13, 27: the divisors below rw make a thin tile; a larger divisor may still fit
        # the registers: d*nv accumulators + nv weight vectors + 1 broadcast, with room left for
        # LLVM's temporaries (SqueezeNet's 27x27 3x3 convs: 9 x 2 vectors, 21 registers)
        rw = next((d for d in range(c.rw + 1, ow_ext + 1) if ow_ext % d == 0 and fits(d, nv)), rw)
    # a ragged row (OW = 7, 14 under 16 registers): a channel-blocked conv runs full tiles and a
    # narrower last one (7 = 4 + 3: split_ow), an NCHW one clamps its last tile (which its
    # transposed store needs). Found by the tuner: ResNet-50's 7x7 stage, 3x3 and 1x1, clamped
    # 4 x 2 tiles (8 columns for 7) ran at 34-37 GFLOP/s, split ones at 40-43 (one thread, Zen 1)
    clamp = choose("conv2d.clamp_ow", not bl)
    split = choose("conv2d.split_ow", bool(bl))
    if ow_ext is not None and 2 * rw <= rmax and ow_ext > rmax and (clamp or split):
        # still thin (OW = 13, 111: no larger divisor fits): full tiles of the width in
        # (rmax/2, rmax] that computes the fewest columns, the last one clamped
        # (clamp_tile_binding: it recomputes column OW-1; OW = 13: 2 tiles of 7) or narrower
        # (split: 7 + 6)
        rw = min(range(rmax, rmax // 2, -1), key=lambda r: -(-ow_ext // r) * r)
        if nv % 2 == 0 and rmax < c.rw and taps != 1:
            half = nv // 2
            # where the registers cap the columns: half the channels in whole columns, if that
            # keeps more accumulators busy per computed column (16 registers: OW = 14, 7 x 1
            # vectors rather than 3 clamped x 2; with 32 the clamped tiles stay, OW = 17: 3 x 6).
            # Not for a 1x1 conv, whose tile is wider (its one tap leaves more registers): one
            # vector loads a broadcast per FMA, and its clamped tile wastes less (SqueezeNet's
            # 13x13 512 -> 1024 pointwise pair at one thread: 5 clamped x 2 vectors 7.03 ms, 13 x
            # 1 8.19; ResNet-50's OW = 7 and 14 were 4 x 2 and 5 x 2 already)
            d = max(d for d in range(1, ow_ext + 1) if ow_ext % d == 0 and fits(d, half))
            if d * half * -(-ow_ext // rw) * rw > rw * nv * ow_ext:
                rw, nv = d, half
    fact("conv2d.CO", co_ext), fact("conv2d.OW", ow_ext), fact("conv2d.block", bl)
    rw, nv, w = choose("conv2d.rw", rw), choose("conv2d.nv", nv), choose("conv2d.width", w)
    if bl and w != bl:
        # a channel-blocked conv's vector is its block (cl in lanes): a tuned or recorded width of
        # 4 on a block of 8 computed wrong sums (and crashed), which only the tuner's check caught
        return False
    ragged: list[str] = []  # blocks whose column tile loop got the constant trip count rw
    # one channel panel (DenseNet's 32-channel 3x3 convs): the output rows are the parallel work
    # (over co0 the second thread idled: 28 ms of DenseNet's 57 ran on one core)
    one_panel = co_ext // (nv * w) < 2 and (not gr or const_index(loops[1].ub) == 1)
    ext = [const_index(l.ub) for l in loops]
    if bl:  # as an NCHW conv's: n co oh ow | ci kh kw
        ext = [ext[0], co_ext, *ext[2:4], *ext[5:]]
    rows = one_panel or _rows_read_less(blk, ext, gr) or _panels_uneven(ext, gr, nv * w)
    par = choose("conv2d.parallel", "oh" if rows else "co0")
    fuse_at = choose("conv2d.fuse_at", "co0")
    # parallel rows: oh outside co0, so one parallel loop covers every channel panel of its rows
    rows_first = par == "oh" and not gr
    # the tile stored along the output row (_transpose_acc_out) where every tile is whole (a
    # clamped last tile recomputes column OW-1 in its extra lanes) and no two threads share a row
    # (a ragged last tile moves back to end at column OW-1: shift_tile_binding)
    transpose = (not bl and ow_ext is not None and ow_ext >= rw and (ow_ext % rw == 0 or clamp) and 2 <= rw
                 and _transpose_rows(rw) <= w and par != "ow0" and choose("conv2d.transpose_out", True))
    transposed = False
    # blocked: the reduction over the input channels' blocks, then the taps, then the channels
    # within a block ("taps"), or the channels then the taps ("channels")
    blocked_order = choose("conv2d.blocked_order", "channels") if bl else None
    xb = bl and _blocked_input_load(blk, bl) is not None  # a blocked input (else NCHW: the chain's first conv)
    # a small map under a large weight panel (ResNet-50's 7x7 stage: 512 -> 512 3x3, a 590 KB
    # panel per 32 channels, streamed from L2 once per 7-pixel row): the input blocks outside the
    # rows, so each block's slice of the panel (18 KB) is read from L1 by every row; the partial
    # sums wait in the output (in L1), the epilogue runs once per panel after its reduction
    panel_bytes = (ext[-3] or 0) * (ext[-2] or 0) * (ext[-1] or 0) * nv * w * 4
    # (a ragged row: clamped tiles add column OW-1's partial sums twice; split ones are exact)
    split = bool(split and not clamp and ow_ext is not None and ow_ext % rw and ow_ext > rw and par != "ow0")
    chunked = bool(xb and blocked_order == "channels" and not rows_first and ow_ext is not None
                   and (ow_ext % rw == 0 or split) and choose("conv2d.chunk_reduction", panel_bytes > l2_bytes() // 8
                                                   and (ext[2] or 0) * ow_ext <= 14 * 14))

    def main(s: Schedule) -> None:
        b = s.get_block(bname)
        if c.fma:
            _contract_fma(b)
        w_ld, wt = _relayout_conv(kernel, b, c.pad_input, nv * w, bname)
        if bl:  # the block is the vector: cb -> (co0, cj), cl is cw; a blocked input's ci -> (cib, cil)
            n, co, oh, ow, cw, ci, kh, kw = s.get_loops(b)
            g = []
            co0, cj = s.split(co, [None, nv])
            if xb:
                cib, cil = s.split(ci, [None, bl])
                red = [cib, kh, kw, cil] if blocked_order == "taps" else [cib, cil, kh, kw]
            else:
                red = [ci, kh, kw]
        else:
            n, *g, co, oh, ow, ci, kh, kw = s.get_loops(b)
            co0, cj, cw = s.split(co, [None, nv, w])
            red = [ci, kh, kw]
        ow0, ow1 = s.split(ow, [None, rw])
        if rows_first:
            order = s.reorder(n, oh, co0, ow0, *red, ow1, cj, cw)
        elif chunked:
            order = s.reorder(n, co0, red[0], oh, ow0, *red[1:], ow1, cj, cw)
        else:
            order = s.reorder(n, *g, co0, oh, ow0, *red, ow1, cj, cw)
        co0 = order[2 if rows_first else 1 + len(g)]
        if chunked:  # n co0 cib oh ow0 | cil kh kw | ow1 cj cw
            red, (ow1, cj, cw) = [order[2], *order[5:8]], order[-3:]
        else:
            red, (ow1, cj, cw) = order[-3 - len(red):-3], order[-3:]
        if xb:
            _read_blocked_input(kernel, b, bl, *(red[0], red[-1] if blocked_order == "taps" else red[1]))
        group = (b.body.block.args[1], co_ext // (nv * w)) if gr else None
        _read_weight_panel(kernel, w_ld, wt, co0, cj, cw, w, group)
        if chunked:  # the init before the input blocks; the tile cached around each block's taps
            s.decompose_reduction(b, s.get_loops(b)[2])
            _cache_accumulator(kernel, b, [rw, nv, w], f"{bname}_acc", red=s.get_loops(b)[5])
        else:
            s.decompose_reduction(b, s.get_loops(b)[4 + gr])
            _cache_accumulator(kernel, b, [rw, nv, w], f"{bname}_acc", red=s.get_loops(b)[4 + gr])
        if clamp and ow_ext is not None and ow_ext % rw:
            # full rw-column tiles; the last one clamped to column OW-1 (clamp_tile_binding, below)
            ragged.extend(exact_tile_loops(kernel, [f"{bname}_init", f"{bname}_acc_in", bname, f"{bname}_acc_out"],
                                           rw))
        # the tile: vector lanes over cw, everything else of the tile unrolled
        ow1, cj, cw = s.get_loops(b)[-3:]
        s.vectorize(cw)
        _mark_width(cw, w)
        s.unroll(cj, None if const_index(cj.ub) is not None else nv)
        s.unroll(ow1, None if const_index(ow1.ub) is not None else rw)

    if not transaction.attempt(kernel, main):
        return False
    if not chunked:  # (chunked, acc_in reads the partial sums of the blocks before)
        transaction.attempt(
            kernel, lambda s: _forward_init(kernel, s.get_block(f"{bname}_init"), s.get_block(f"{bname}_acc_in"))
        )
    # the epilogue's level: the channel panel (co0) or the output row (oh), whichever is outer
    at = {"co0": 2, "oh": 1} if rows_first else {"co0": 1, "oh": 2}
    # (a ragged row's last tile, moved back, recomputes columns: an epilogue reading along the row
    # stays a block of its own there, so a residual whose buffer the output takes is read once)
    # (blocked: acc_out stores whole vectors of channels, so a residual read in the same lanes
    # folds in too, except where a clamped last tile writes column OW-1 twice)
    # (chunked: acc_out stores a partial sum; the epilogue runs per panel after the reduction)
    _conv_epilogue(kernel, cfg, bname, lambda s: s.get_loops(s.get_block(bname))[1 if chunked else at[fuse_at] + gr],
                   None if chunked else f"{bname}_acc_out", along_row=(transpose or bl) and ow_ext % rw == 0)
    for name in (f"{bname}_init", f"{bname}_acc_in", f"{bname}_acc_out"):
        if not any(b.block_name.data == name for b in loop.blocks_of(kernel)):
            continue
        if transpose and name.endswith("_acc_out") and transaction.attempt(
                kernel, lambda s: _transpose_acc_out(kernel, s, bname, rw, nv, w)):
            transposed = True
            continue

        def copies(s: Schedule, name=name, vec=True) -> None:
            *rest, last = s.get_loops(s.get_block(name))[-3:]
            if vec:  # acc_in reads the bias: contiguous along cw
                s.vectorize(last)
                _mark_width(last, w)
            for l in rest if vec else [*rest, last]:
                s.unroll(l, None if const_index(l.ub) is not None else rw)

        if not transaction.attempt(kernel, copies, marks_only=True):
            transaction.attempt(kernel, lambda s, name=name: copies(s, name, vec=False), marks_only=True)
    if c.parallel and par != "none":
        first = {"co0": 1 + gr, "n": 0, "oh": (1 if rows_first else 2) + gr, "ow0": 3 + gr}[par]
        for depth in (first, 1 + gr, 0, 1, 2 + gr):
            if transaction.attempt(kernel, lambda s, d=depth: s.parallel(s.get_loops(s.get_block(bname))[d]),
                                  marks_only=True):
                break
    if split:
        # after the marks: the last tile's copy takes them along
        transaction.attempt(kernel, lambda s: _split_ragged_columns(kernel, s, bname, rw, ow_ext))
    if ragged:
        # last: the clamped columns are not affine, so the epilogue's fusion and the parallel
        # loop's disjointness check (which hold for the guarded tiles: the clamped ones write the
        # same points) are done before (a regression: SqueezeNet's conv1 ran on one thread)
        live = [n for n in ragged if any(b.block_name.data == n for b in loop.blocks_of(kernel))]
        if transposed:  # acc_out stores the tile as one vector along the row: it must stay inside it
            shift_tile_binding(kernel, live, lambda _: 3 + gr, rw, ow_ext - rw, "conv2d rule: column")
        else:
            clamp_tile_binding(kernel, live, lambda _: 3 + gr, iconst(kernel, ow_ext - 1), "conv2d rule: column")
    if choose("conv2d.tile_order", "columns") == "vectors":
        # the register tile's channel vectors outside its columns (onnxruntime's NCHWc kernels): a
        # weight vector is loaded once and meets every column's broadcast, which LLVM keeps
        # live: rw*nv accumulators + rw broadcasts + 1 weight register (3 x 4 vectors: 16),
        # where columns outside hold all nv weight vectors live (17: spills)
        for name in (bname, bname + LAST_COLS):
            if any(b.block_name.data == name for b in loop.blocks_of(kernel)):
                transaction.attempt(
                    kernel, lambda s, name=name: s.reorder(*reversed(s.get_loops(s.get_block(name))[-3:-1])))
    if rest:
        _schedule_rest(kernel, cfg, skip=_tile_blocks(bname))
    return True


LAST_COLS = "_last_cols"  # suffix of the blocks of a split row's last, narrower tile


def _split_ragged_columns(kernel: func.FuncOp, s: Schedule, bname: str, rw: int, ow: int) -> None:
    """OW not a multiple of rw, neither clamped nor guarded at run time (onnxruntime's NCHWc
    kernels run a 7-pixel row as 3 + 3 + 1): the column tile loop ow0 splits into the OW // rw
    full tiles, whose tile loops get the constant trip count rw, and a copy that runs the last
    tile, OW % rw columns wide (constant too): both register tiles exact, no column computed twice.

        for ow0 < ceil(OW/rw) { for ow1 < min(rw, OW - ow0*rw) … }
     -> for ow0 < OW // rw { for ow1 < rw … }    for ow0 = OW // rw to ceil(OW/rw) { for ow1 < OW % rw … }

    The copy's blocks are named <block>_last_cols."""
    b = s.get_block(bname)
    ow1 = s.get_loops(b)[-3]
    bound = ow1.ub
    if const_index(bound) is not None:
        raise ScheduleError("split columns: the column tile loop is not ragged", b)
    # ow0: the loop whose body computes the bound min(rw, OW - ow0*rw) (not an outer loop of
    # the same extent: SqueezeNet's 48 channels make 3 panels, its 13 columns 3 tiles of 5)
    ow0 = bound.owner.parent_op() if isinstance(bound, OpResult) else None
    if (not isinstance(ow0, loop.ForOp) or ow0 not in s.get_loops(b) or const_index(ow0.ub) != -(-ow // rw)
            or const_index(ow0.lb) != 0 or const_index(ow0.step) != 1):
        raise ScheduleError("split columns: no column tile loop of extent ceil(OW / rw)", b)
    tiles = [i for i, l in enumerate(ow0.walk()) if isinstance(l, loop.ForOp) and l.ub is bound]
    rest = split_loop(ow0, iconst(kernel, ow // rw), LAST_COLS)
    for nest, extent in ((ow0, rw), (rest, ow % rw)):
        ops = list(nest.walk())
        for i in tiles:
            t = ops[i]
            assert isinstance(t, loop.ForOp)
            t.operands = [t.lb, iconst(kernel, extent), t.step]
            if t.kind.data == "unroll":
                s.unroll(t)


def _rows_read_less(blk: loop.BlockOp, ext: list[int | None], gr: int) -> bool:
    """Parallel output rows read less than parallel channel panels: each thread of a panel split
    reads the whole input and 1/T of the weights, of a row split 1/T of the input and all the
    weights, so rows win where the input is the larger (H*W > CO*KH*KW per input channel) and
    there are rows enough for every core (ResNet-50's 64-channel 3x3 convs at 56x56 in the model:
    1.27 ms by panels, 1.10 by rows at 2 threads; its 512-channel ones at 7x7 stay on panels).
    Only while all the weights stay in half the L2: rows outermost read every panel once per row,
    from memory when they do not (VGG-19's 256-channel 3x3 convs at 56x56, 2.4 MB of weights:
    30.1 ms by rows, 25.7 by panels at 1 thread). `ext`: the loops' extents (n (g) co oh ow | ci kh kw)."""
    co, oh, ow, ci, kh, kw = ext[1 + gr], ext[2 + gr], ext[3 + gr], ext[-3], ext[-2], ext[-1]
    if gr or None in (co, oh, ow, ci, kh, kw):
        return False
    s = max(_strides(blk))
    # (a short reduction, SqueezeNet's 3-channel 3x3 stem, is dominated by the per-row epilogue
    # and tile overheads, not by reads: 0.53 ms by rows against 0.42 by panels)
    weights = co * ci * kh * kw * 4
    return (oh >= 4 * cores() and ci * kh * kw >= 64 and (oh * s) * (ow * s) > co * kh * kw
            and 2 * weights <= l2_bytes())


def _panels_uneven(ext: list[int | None], gr: int, panel: int) -> bool:
    """The channel panels share out worse over the cores than the output rows do (Inception's 96
    output channels: 3 panels of 32 on 2 cores, one thread does 2 and the other 1, so 2 threads ran
    1.34x faster than one; by rows 1.75x: 0.36 -> 0.28 ms for a 64 -> 96 3x3 conv at 28x28), with
    rows enough (4 per core) and all the weights in half the L2 (rows outermost read every panel
    once per row)."""
    co, oh, ci, kh, kw = ext[1 + gr], ext[2 + gr], ext[-3], ext[-2], ext[-1]
    if gr or None in (co, oh, ci, kh, kw) or oh < 4 * cores():
        return False
    t = cores()
    panels = -(-co // panel)

    def imbalance(n: int) -> float:  # the busiest thread's share over the mean share
        return -(-n // t) * t / n

    return imbalance(panels) > 1.1 * imbalance(oh) and 2 * co * ci * kh * kw * 4 <= l2_bytes()


def _conv_epilogue(kernel: func.FuncOp, cfg: ScheduleConfig, bname: str, anchor,
                   acc_out: str | None = None, along_row: bool = False) -> list[str]:
    """The conv's elementwise consumers (bias, residual add, ReLU, …): inlined into one block
    (no full-size intermediate per op: ResNet's add + ReLU wrote a 1.6 MB buffer between them),
    then, with the accumulator tile's copy-out block `acc_out` (the vector path), applied to the
    tile before its one store (fold_epilogue_into): the conv's output is no longer a full-size
    kernel-local buffer written by the tile and read back by the epilogue (ResNet-50's 7x7 stem:
    3.2 MB a call). Otherwise (or when that does not apply) computed per output-channel block
    under the conv's loop (`anchor`), and vectorized along the output row (the generic rule
    skips nests holding a parallel loop, so nothing else would; scalar, the epilogue took 2/3 of
    ResNet-50's residual convs). `along_row`: acc_out will store along the output row
    (_transpose_acc_out), so an epilogue reading along the row folds into it too. Returns the
    blocks moved."""
    if not cfg.fuse_consumers:
        return []
    if choose("conv_epilogue.inline", True):
        _inline_epilogue(kernel, Schedule(kernel).get_block(bname))
    if acc_out is not None and choose("conv_epilogue.in_registers", True):
        out = loop.find_block(kernel, acc_out)
        stores = [o for o in out.body.walk() if isinstance(o, mem.StoreOp)] if out is not None else []
        others = [b for b in (loop.find_block(kernel, bname), loop.find_block(kernel, f"{bname}_acc_in")) if b]
        if len(stores) == 1 and fold_epilogue_into(kernel, out, stores[0], others,
                                                   fixed_dim=None if along_row else 3):
            return []
    fused = _fuse_consumers(kernel, Schedule(kernel).get_block(bname), anchor)
    if choose("conv_epilogue.vectorize", True):
        _vectorize_fused(kernel, fused, cfg.width)
    return fused


def _tile_blocks(bname: str) -> set[str]:
    return {bname, f"{bname}_init", f"{bname}_acc_in", f"{bname}_acc_out", f"{bname}_acc_t"}


def _strides(blk: loop.BlockOp) -> tuple[int, ...]:
    a = blk.attributes.get("strides")
    return tuple(x.value.data for x in a.data) if a is not None else (1, 1)


def _schedule_conv2d_rows(kernel: func.FuncOp, cfg: ScheduleConfig) -> bool:
    """Grouped convs the vector path refuses (depthwise, channels per group not a multiple of
    4): padded input copy (_relayout_conv with a 1-channel weight tile), then

        n g co oh | ci kh kw | ow          ow vector (stride 1: contiguous padded rows)

    with the init hoisted in front of ci, so the output row is the accumulator (in L1) and
    each tap is one broadcast weight times a row of the padded input. Depthwise blocks
    (n c oh ow | kh kw) too. Only when the row vectorizes (stride 1): strided rows keep the
    generic schedule, which measured faster than a scalar row over the padded copy."""
    c = cfg.conv2d
    blk = _conv_block(kernel)
    loops = _direct_loops(blk) if blk is not None else None
    dw = blk is not None and _depthwise(blk)  # depthwise: n c oh ow | kh kw
    want = ["spatial"] * 4 + ["reduce"] * 2 if dw else ["spatial"] * 5 + ["reduce"] * 3
    if loops is None or not (dw or _grouped(blk)) or blk.kinds != want:
        return False
    bname = blk.block_name.data
    red = loops[-2:]  # kh, kw
    taps = (const_index(red[0].ub) or 99) * (const_index(red[1].ub) or 99)

    def main(s: Schedule) -> None:
        b = s.get_block(bname)
        if c.fma:
            _contract_fma(b)
        w_ld, wt = _relayout_conv(kernel, b, c.pad_input, 1)
        *outer, oh, ow = s.get_loops(b)[:len(loops) - (2 if dw else 3)]
        s.reorder(*outer, oh, *s.get_loops(b)[len(outer) + 2:], ow)
        # WT[c, ci, kh, kw, 0] = W[c, ci, kh, kw], repacked from a pre-packed weight (an OIHW
        # one is read as it is: its 1-channel panels are itself)
        if wt is not w_ld.memref:
            ip = InsertPoint.before(w_ld)
            new_w = emit(mem.LoadOp(wt, [*weight_index(w_ld), iconst(kernel, 0)], w_ld.result.type), ip)
            w_ld.result.replace_all_uses_with(new_w)
            body = w_ld.parent_block()
            w_ld.detach()
            w_ld.erase()
            if body is not None:
                _drop_dead(body)
        s.decompose_reduction(b, s.get_loops(b)[len(outer) + 1])
        # the row must vectorize (stride 2: two loads and a shuffle per tap); a strided 3x3 one
        # measured faster as the generic schedule, which reads the input without the padded copy
        # (MobileNet's 96x112x112 3x3 s2 depthwise: 0.23 against 0.33 ms; 5x5 s2 on 240x28x28:
        # 0.95 against 0.18 ms)
        last = s.get_loops(b)[-1]
        if _strides(b) != (1, 1) and taps <= 9:
            raise ScheduleError("conv rows: a strided row of a small window", last)
        w = _short_loop_width(fit_width(last, cfg.width, along=last), const_index(last.ub))
        if w == 0 or not c.vectorize:
            raise ScheduleError("conv rows: no vector width fits", last)
        s.vectorize(last)
        _mark_width(last, w)

    if not transaction.attempt(kernel, main):
        return False
    _conv_epilogue(kernel, cfg, bname, lambda s: s.get_loops(s.get_block(bname))[1 if dw else 2])
    def vec_init(s: Schedule) -> None:
        last = s.get_loops(s.get_block(f"{bname}_init"))[-1]
        w = fit_width(last, cfg.width, along=last)
        if w == 0:
            raise ScheduleError("conv rows: no vector width fits", last)
        s.vectorize(last)
        _mark_width(last, w)

    transaction.attempt(kernel, vec_init, marks_only=True)
    par = choose("conv2d_rows.parallel", "c")
    if c.parallel and par != "none":
        first = {"c": 1, "n": 0, "oh": 2 if not dw else 1}[par]
        for depth in ((first, 1, 0) if dw else (first, 1, 2, 0)):
            if transaction.attempt(kernel, lambda s, d=depth: s.parallel(s.get_loops(s.get_block(bname))[d]),
                                  marks_only=True):
                break
    _schedule_rest(kernel, cfg, skip={bname, f"{bname}_init"})
    return True


def schedule_conv2d(kernel: func.FuncOp, cfg: ScheduleConfig) -> bool:
    """Reduction outside the output row: (n, co, oh | ci, kh, kw | ow) with the init hoisted in
    front of ci, so the innermost ow loop has no loop-carried dependence (LLVM vectorizes it;
    the padded input reads are clamped, so loop-lower-vectors cannot); co runs in parallel;
    consumers are computed per output channel."""
    c = cfg.conv2d
    convs = [b.block_name.data for b in loop.blocks_of_kind(kernel, "conv2d")]  # stamped by graph-legalize
    if not convs:
        return False
    if c.vectorize and _schedule_conv2d_vector(kernel, cfg, convs[0], rest=False):
        # the kernel's other convs take the vector path too (ResNet's projection shortcut:
        # two convs feed one residual add; generic, the second was 3/4 of ResNet-50)
        skip = _tile_blocks(convs[0])
        for n in convs[1:]:
            if _schedule_conv2d_vector(kernel, cfg, n, rest=False):
                skip |= _tile_blocks(n)
        _schedule_rest(kernel, cfg, skip=skip)
        return True
    if _schedule_conv2d_rows(kernel, cfg):
        return True
    blk = _conv_block(kernel)
    if blk is None or blk.kinds != ["spatial"] * 4 + ["reduce"] * 3 or _direct_loops(blk) is None:
        return False
    bname = blk.block_name.data

    def main(s: Schedule) -> None:
        b = s.get_block(bname)
        if c.fma:
            _contract_fma(b)
        n, co, oh, ow, ci, kh, kw = s.get_loops(b)
        s.reorder(n, co, oh, ci, kh, kw, ow)
        s.decompose_reduction(b, s.get_loops(b)[3])

    if not transaction.attempt(kernel, main):
        return False
    transaction.attempt(
        kernel, lambda s: _forward_init(kernel, s.get_block(f"{bname}_init"), s.get_block(f"{bname}_acc_in"))
    )
    _conv_epilogue(kernel, cfg, bname, lambda s: s.get_loops(s.get_block(bname))[1])
    if c.parallel:
        for depth in (1, 0, 2):
            if transaction.attempt(kernel, lambda s, d=depth: s.parallel(s.get_loops(s.get_block(bname))[d]),
                                  marks_only=True):
                break
    _schedule_rest(kernel, cfg, skip={bname, f"{bname}_init"})
    return True


