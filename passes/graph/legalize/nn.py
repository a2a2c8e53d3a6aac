"""graph-legalize for the compute-heavy ops: matmul, conv2d and the pools.

Each op becomes one named reduction block (plus a division block for the averages) in the natural
loop order: spatial loops outside, reduce loops inside; the scheduling passes reorder and tile.

    %y = graph.conv2d %x, %w pads [1, 1, 1, 1] : (tensor<1x3x5x5xf32>, tensor<4x3x3x3xf32>) -> …
  becomes
    loop.for %n, %co, %oh, %ow, %ci, %kh, %kw {
      loop.block "conv2d" (%vn = %n, …, %vkw = %kw) [spatial x4, reduce x3] {
        %ih = %voh + %vkh - 1                      (affine: oh*stride + kh*dilation - pad_top)
        %in = (0 <= %ih < H) and (0 <= %iw < W)
        %x  = mem.load %X[%vn, %vci, clamp(%ih), clamp(%iw)]   (never out of bounds)
        %xv = arith.select %in, %x, 0
        Y[n, co, oh, ow] += %xv * W[co, ci, kh, kw]
      } init { Y[n, co, oh, ow] = bias[co] (or 0) }
    }

Padding is never materialized: a tap in the padding loads at the clamped index and is replaced by
the padding value (0 for conv/avg, -inf for max) with a select. The unclamped index is the affine
`oh*s + kh*d - pad`; only dims that can actually leave the input (pad_begin > 0, or an end that
can overshoot) are clamped, so unpadded convolutions keep purely affine loads.

Grouped convolution iterates (n, g, oc, oh, ow | ci, kh, kw) with the output channel g*O/G + oc
and the input channel g*C/G + ci, both affine; depthwise drops the unit oc / ci variables.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xdsl.dialects import arith
from xdsl.dialects.builtin import AnyFloat, IntegerType, MemRefType, TensorType, Signedness
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.rewriter import Rewriter

from minimlir.dialects import graph, loop
from minimlir.passes.loop._kernel_builder import Emitter, Index, KernelBuilder
from minimlir.passes.graph.legalize._common import GraphDims, Legalization, legalizes


def _shape(v: SSAValue) -> tuple[int, ...]:
    assert isinstance(v.type, TensorType | MemRefType)
    return tuple(v.type.get_shape())


def _lowest(t: Attribute, b: Emitter) -> SSAValue:
    """-inf for floats, the smallest signed value for integers (the max-reduction identity)."""
    if isinstance(t, AnyFloat):
        return b.const(float("-inf"), t)
    assert isinstance(t, IntegerType)
    if t.signedness.data == Signedness.UNSIGNED:
        return b.const(0, t)
    return b.const(-(2 ** (t.width.data - 1)) if t.width.data > 1 else 0, t)


def _as_element(b: Emitter, v: Index, t: Attribute) -> SSAValue:
    return b.const(v, t) if isinstance(v, int) else b.cast(v, t)


def _graph_emit(g: GraphDims, op: Operation) -> SSAValue:
    Rewriter.insert_op(op, g.ip)
    return op.results[0]


def broadcast_index(b: Emitter, var: Index, dim: Index, clamp: bool) -> Index:
    """Index into an operand dim of extent `dim` aligned with a result iteration var: 0 if the
    dim is a static 1, `var` if it is known to equal the result dim, else min(var, dim - 1)
    (a `?` that may be 1 at run time: NumPy broadcasting)."""
    if dim == 1:
        return 0
    if not clamp:
        return var
    return b.imin(var, b.isub(dim, 1))


# -- matmul ---------------------------------------------------------------------------------


@legalizes(graph.MatMulOp)
class LegalizeMatMul(Legalization):
    """C[b…, i, j] = sum_k A[b…, i, k] * B[b…, k, j] with NumPy 1-D promotion and batch broadcast.

    Loop order b…, i, j, k; block "matmul" [spatial…, reduce]; the init region writes 0.
    """

    def build(self, op: graph.MatMulOp, kb: KernelBuilder) -> None:
        a, bm = kb.inputs
        (c,) = kb.outputs
        tile = op.tile  # a pre-packed B (graph-pack-weights): B[k, j] at [j / T, k, j % T]
        ra, rb, rc = len(_shape(a)), (2 if tile else len(_shape(bm))), len(_shape(c))
        nbatch = rc - (ra >= 2) - (rb >= 2)
        batch_a, batch_b = max(ra - 2, 0), max(rb - 2, 0)
        # The contraction extent: whichever side knows it statically.
        k_ext = kb.dim(a, ra - 1)
        if not isinstance(k_ext, int):
            kb_ext = kb.dim(bm, 1 if tile else rb - 2 if rb >= 2 else 0)
            if isinstance(kb_ext, int):
                k_ext = kb_ext
        extents = kb.dims(c) + [k_ext]
        kinds = ["spatial"] * rc + ["reduce"]

        def need_clamp(mine: int, other: int | None) -> bool:
            # A `?` batch dim may be 1 at run time if another operand contributes to that dim.
            return mine < 0 and other is not None and other != 1

        def operand_batch(buf: SSAValue, nb: int, other: SSAValue, other_nb: int, vs, e: Emitter):
            idx: list[Index] = []
            shape, oshape = _shape(buf), _shape(other)
            # what the symbolic dims prove (graph-legalize's broadcast_facts, operand dims
            # right-aligned with the result's: the batch dims are aligned as here)
            facts = kb.dim_facts[kb.inputs.index(buf)] if len(kb.dim_facts) == 2 else ()
            for p in range(nb):
                pos = nbatch - nb + p  # right-aligned with the result batch dims
                op_ = p - nb + other_nb
                other_dim = oshape[op_] if op_ >= 0 else None
                fact = facts[p] if p < len(facts) else ""
                if fact == "one":
                    idx.append(0)
                    continue
                clamp = need_clamp(shape[p], other_dim) and fact != "eq"
                idx.append(broadcast_index(e, vs[pos], kb.dim(buf, p), clamp))
            return idx

        def init(e: Emitter, vs: list[SSAValue]) -> None:
            e.store(e.const(0, c.type.element_type), c, vs[:rc])

        with kb.nest("matmul", extents, kinds, init=init) as (e, vs):
            loop.stamp_kind(vs[0].block.parent_op(), "matmul", batch=nbatch)
            k = vs[rc]
            i = vs[nbatch] if ra >= 2 else None
            j = vs[rc - 1] if rb >= 2 else None
            a_idx = operand_batch(a, batch_a, bm, batch_b, vs, e) + ([i] if i is not None else []) + [k]
            b_idx = operand_batch(bm, batch_b, a, batch_a, vs, e) + [k] + ([j] if j is not None else [])
            if tile:
                b_idx = [e.ifloordiv(j, tile), k, e.irem(j, tile)]
            x = e.load(a, a_idx)
            y = e.load(bm, b_idx)
            acc = e.load(c, vs[:rc])
            e.store(e.add(acc, e.mul(x, y)), c, vs[:rc])

    def result_dims(self, op: graph.MatMulOp, g: GraphDims) -> list[Index]:
        a, bm = op.lhs, op.rhs
        sa, sb, sc = _shape(a), op.rhs_shape(), _shape(op.result)
        ra, rb, rc = len(sa), len(sb), len(sc)
        nbatch = rc - (ra >= 2) - (rb >= 2)
        dims: list[Index] = []
        for p in range(rc):
            if sc[p] >= 0:
                continue
            if p < nbatch:
                cands: list[Index] = []
                for v, r in ((a, ra), (bm, rb)):
                    q = p - nbatch + (r - 2)
                    if r >= 2 and q >= 0 and _shape(v)[q] != 1:
                        cands.append(g.dim(v, q))
                acc = cands[0]
                for cand in cands[1:]:
                    acc = g.max(acc, cand)
                dims.append(acc)
            elif p == nbatch and ra >= 2:
                dims.append(g.dim(a, ra - 2))
            else:
                dims.append(g.dim(bm, rb - 1))
        return dims


# -- windows (conv / pools) ------------------------------------------------------------------


class _Window:
    """One spatial dim of a sliding window: in = out*stride + k*dilation - pad_begin."""

    def __init__(self, kb: KernelBuilder, size: Index, out: Index, kernel: Index, stride: int,
                 dilation: int, pad_begin: int, pad_end: int, ceil_mode: bool = False):
        self.size, self.stride, self.dilation, self.pad_begin = size, stride, dilation, pad_begin
        self.needs_lo = pad_begin > 0
        if all(isinstance(v, int) for v in (size, out, kernel)):
            last = (out - 1) * stride + (kernel - 1) * dilation - pad_begin  # type: ignore[operator]
            self.needs_hi = last > size - 1  # type: ignore[operator]
        else:
            self.needs_hi = pad_end > 0 or ceil_mode
        # size - 1, a kernel-level symbol for clamping (emitted before the nest, only if needed)
        self.last = kb.top.isub(size, 1) if self.needs_hi else None

    def index(self, b: Emitter, o: SSAValue, k: SSAValue) -> Index:
        return b.affine([(o, self.stride), (k, self.dilation)], -self.pad_begin)


def _guarded_load(b: Emitter, buf: SSAValue, lead: Sequence[Index], taps: Sequence[Index],
                  windows: Sequence[_Window], fill: Callable[[], SSAValue],
                  trail: Sequence[Index] = ()) -> SSAValue:
    """buf[lead…, taps…, trail…] if every tap is inside the input, else `fill()`; the load itself
    uses clamped indices so it never reads out of bounds."""
    cond: SSAValue | None = None
    idx: list[Index] = []
    for t, w in zip(taps, windows):
        if not (w.needs_lo or w.needs_hi):
            idx.append(t)
            continue
        checks = []
        if w.needs_lo:
            checks.append(b.icmp("ge", t, 0))
        if w.needs_hi:
            checks.append(b.icmp("lt", t, w.size))
        for ch in checks:
            cond = ch if cond is None else b.and_(cond, ch)
        lo = b.imax(t, 0) if w.needs_lo else t
        idx.append(b.imin(lo, w.last) if w.needs_hi else lo)
    v = b.load(buf, [*lead, *idx, *trail])
    return v if cond is None else b.select(cond, v, fill())


def _window_out_dim(g: GraphDims, size: Index, kernel: Index, stride: int, pb: int, pe: int,
                    dilation: int, ceil_mode: bool) -> Index:
    """Graph-level `window_output_size` (dialects/graph.py) on index values."""
    extent = g.iadd(g.imul(g.isub(kernel, 1), dilation), 1)
    span = g.isub(g.iadd(size, pb + pe), extent)
    if not ceil_mode:
        return g.iadd(g.floordiv(span, stride), 1)
    out = g.iadd(g.ceildiv(span, stride), 1)
    # Drop a last window that would start inside the end padding.
    start_last = g.imul(g.isub(out, 1), stride)
    limit = g.iadd(size, pb)
    cs, cl = g.const_value(start_last), g.const_value(limit)
    if cs is not None and cl is not None:
        return out - 1 if cs >= cl else out  # type: ignore[operator]
    starts_in_pad = _graph_emit(g, arith.CmpiOp(g.index(start_last), g.index(limit), "sge"))
    return _graph_emit(g, arith.SelectOp(starts_in_pad, g.index(g.isub(out, 1)), g.index(out)))


def _nchw_result_dims(op: Operation, g: GraphDims, x: SSAValue, channels: Index,
                      kernel: Sequence[Index], strides: Sequence[int], pads: Sequence[int],
                      dilations: Sequence[int], ceil_mode: bool) -> list[Index]:
    """The dynamic dims of an NCHW result, or of a blocked NCHW{B}c one (N, C/B, H, W, B: `channels`
    is then C/B)."""
    out = _shape(op.results[0])
    values = [g.dim(x, 0), channels]
    for s in range(2):
        if out[2 + s] >= 0:
            values.append(out[2 + s])
            continue
        values.append(_window_out_dim(g, g.dim(x, 2 + s), kernel[s], strides[s], pads[s],
                                      pads[2 + s], dilations[s], ceil_mode))
    values += out[4:]  # a block is static
    return [v for v, d in zip(values, out) if d < 0]


@legalizes(graph.Conv2dOp)
class LegalizeConv2d(Legalization):
    """NCHW x OIHW convolution: block "conv2d" [n, (g,) co, oh, ow | ci, kh, kw]; the init region
    writes bias[co] (or 0)."""

    def build(self, op: graph.Conv2dOp, kb: KernelBuilder) -> None:
        if op.blocked:
            return self._build_blocked(op, kb)
        x, w = kb.inputs[0], kb.inputs[1]
        bias = kb.inputs[2] if len(kb.inputs) == 3 else None
        (y,) = kb.outputs
        strides, pads = op.strides.get_values(), op.pads.get_values()
        dilations, group = op.dilations.get_values(), op.group.value.data
        t = y.type.element_type
        n_ext, o_ext, oh_ext, ow_ext = kb.dims(y)
        cg_ext, kh_ext, kw_ext = kb.dim(w, 1), kb.dim(w, 2), kb.dim(w, 3)
        wins = [
            _Window(kb, kb.dim(x, 2 + s), (oh_ext, ow_ext)[s], (kh_ext, kw_ext)[s], strides[s],
                    dilations[s], pads[s], pads[2 + s])
            for s in range(2)
        ]
        tile = op.tile  # a pre-packed OIHW{T}o weight (graph-pack-weights): W[o] at [o / T, …, o % T]
        og_ext: Index = o_ext
        if group > 1:
            og_ext = kb.top.ifloordiv(op.weight_shape()[0] if tile else kb.dim(w, 0), group)
        # Iteration variables, and which ones exist (depthwise drops unit oc / ci).
        names: list[str] = ["n"]
        extents: list[Index] = [n_ext]
        if group > 1:
            names.append("g")
            extents.append(group)
        if group == 1 or og_ext != 1:
            names.append("oc")
            extents.append(og_ext)
        names += ["oh", "ow"]
        extents += [oh_ext, ow_ext]
        n_spatial = len(names)
        if group == 1 or cg_ext != 1:
            names.append("ci")
            extents.append(cg_ext)
        names += ["kh", "kw"]
        extents += [kh_ext, kw_ext]
        kinds = ["spatial"] * n_spatial + ["reduce"] * (len(names) - n_spatial)

        def channels(e: Emitter, vs: list[SSAValue]) -> tuple[Index, Index, Index]:
            """(output channel, input channel, weight dim-1 index)."""
            v = dict(zip(names, vs))
            gi, oc, ci = v.get("g", 0), v.get("oc", 0), v.get("ci", 0)
            co = e.iadd(e.imul(gi, og_ext), oc) if group > 1 else oc
            c_in = e.iadd(e.imul(gi, cg_ext), ci) if group > 1 else ci
            return co, c_in, ci

        def init(e: Emitter, vs: list[SSAValue]) -> None:
            v = dict(zip(names, vs))
            co, _, _ = channels(e, vs)
            val = e.load(bias, [co]) if bias is not None else e.const(0, t)
            e.store(val, y, [v["n"], co, v["oh"], v["ow"]])

        with kb.nest("conv2d", extents, kinds, init=init) as (e, vs):
            # what the schedule rules match (passes/loop/schedule/default/conv2d.py)
            loop.stamp_kind(vs[0].block.parent_op(), "conv2d", groups=group,
                            depthwise="oc" not in names and "ci" not in names,
                            strides=strides, dilations=dilations)
            v = dict(zip(names, vs))
            co, c_in, ci = channels(e, vs)
            taps = [wins[s].index(e, v[("oh", "ow")[s]], v[("kh", "kw")[s]]) for s in range(2)]
            xv = _guarded_load(e, x, [v["n"], c_in], taps, wins, lambda: e.const(0, t))
            if tile:
                wv = e.load(w, [e.ifloordiv(co, tile), ci, v["kh"], v["kw"], e.irem(co, tile)])
            else:
                wv = e.load(w, [co, ci, v["kh"], v["kw"]])
            out_idx = [v["n"], co, v["oh"], v["ow"]]
            acc = e.load(y, out_idx)
            e.store(e.add(acc, e.mul(xv, wv)), y, out_idx)

    def _build_blocked(self, op: graph.Conv2dOp, kb: KernelBuilder) -> None:
        """NCHW{B}c x OIHW (group 1): block "conv2d" [n, cb, oh, ow, cl | ci, kh, kw] computing
        Y[n, cb, oh, ow, cl], output channel cb*B + cl, from X[n, ci floordiv B, ih, iw, ci mod B]
        (an NCHW input: X[n, ci, ih, iw]); the init region writes bias[cb*B + cl] (or 0)."""
        x, w = kb.inputs[0], kb.inputs[1]
        bias = kb.inputs[2] if len(kb.inputs) == 3 else None
        (y,) = kb.outputs
        B, tile = op.blocked, op.tile
        strides, pads, dilations = op.strides.get_values(), op.pads.get_values(), op.dilations.get_values()
        t = y.type.element_type
        n_ext, cb_ext, oh_ext, ow_ext, _ = kb.dims(y)
        ci_ext, kh_ext, kw_ext = kb.dim(w, 1), kb.dim(w, 2), kb.dim(w, 3)
        wins = [
            _Window(kb, kb.dim(x, 2 + s), (oh_ext, ow_ext)[s], (kh_ext, kw_ext)[s], strides[s],
                    dilations[s], pads[s], pads[2 + s])
            for s in range(2)
        ]
        extents = [n_ext, cb_ext, oh_ext, ow_ext, B, ci_ext, kh_ext, kw_ext]
        kinds = ["spatial"] * 5 + ["reduce"] * 3

        def init(e: Emitter, vs: list[SSAValue]) -> None:
            n, cb, oh, ow, cl = vs[:5]
            val = e.load(bias, [e.affine([(cb, B), (cl, 1)])]) if bias is not None else e.const(0, t)
            e.store(val, y, [n, cb, oh, ow, cl])

        with kb.nest("conv2d", extents, kinds, init=init) as (e, vs):
            loop.stamp_kind(vs[0].block.parent_op(), "conv2d", groups=1, strides=strides,
                            dilations=dilations, block=B)
            n, cb, oh, ow, cl, ci, kh, kw = vs
            co = e.affine([(cb, B), (cl, 1)])
            taps = [wins[0].index(e, oh, kh), wins[1].index(e, ow, kw)]
            if len(x.type.get_shape()) == 5:
                xv = _guarded_load(e, x, [n, e.ifloordiv(ci, B)], taps, wins, lambda: e.const(0, t),
                                   [e.irem(ci, B)])
            else:
                xv = _guarded_load(e, x, [n, ci], taps, wins, lambda: e.const(0, t))
            if tile:
                wv = e.load(w, [e.ifloordiv(co, tile), ci, kh, kw, e.irem(co, tile)])
            else:
                wv = e.load(w, [co, ci, kh, kw])
            out_idx = [n, cb, oh, ow, cl]
            acc = e.load(y, out_idx)
            e.store(e.add(acc, e.mul(xv, wv)), y, out_idx)

    def result_dims(self, op: graph.Conv2dOp, g: GraphDims) -> list[Index]:
        kernel = [g.dim(op.weight, 2), g.dim(op.weight, 3)]
        if op.blocked:
            return _nchw_result_dims(op, g, op.input, g.dim(op.input, 1), kernel, op.strides.get_values(),
                                     op.pads.get_values(), op.dilations.get_values(), False)
        o = op.weight_shape()[0] if op.tile else g.dim(op.weight, 0)
        return _nchw_result_dims(op, g, op.input, o, kernel,
                                 op.strides.get_values(), op.pads.get_values(),
                                 op.dilations.get_values(), False)


def _pool_windows(op, kb: KernelBuilder, x: SSAValue, y: SSAValue, dilations) -> list[_Window]:
    kernel, strides, pads = op.kernel.get_values(), op.strides.get_values(), op.pads.get_values()
    return [
        _Window(kb, kb.dim(x, 2 + s), kb.dim(y, 2 + s), kernel[s], strides[s], dilations[s],
                pads[s], pads[2 + s], bool(op.ceil_mode))
        for s in range(2)
    ]


class _LegalizePool2d(Legalization):
    def dilations(self, op) -> Sequence[int]:
        return (1, 1)

    def result_dims(self, op, g: GraphDims) -> list[Index]:
        return _nchw_result_dims(op, g, op.input, g.dim(op.input, 1), op.kernel.get_values(),
                                 op.strides.get_values(), op.pads.get_values(),
                                 self.dilations(op), bool(op.ceil_mode))


@legalizes(graph.MaxPool2dOp)
class LegalizeMaxPool2d(_LegalizePool2d):
    """Block "max_pool2d" [n, c, oh, ow | kh, kw]: init -inf, taps in the padding are -inf."""

    def dilations(self, op) -> Sequence[int]:
        return op.dilations.get_values()

    def build(self, op: graph.MaxPool2dOp, kb: KernelBuilder) -> None:
        (x,), (y,) = kb.inputs, kb.outputs
        t = y.type.element_type
        wins = _pool_windows(op, kb, x, y, self.dilations(op))
        kh, kw = op.kernel.get_values()
        extents = kb.dims(y) + [kh, kw]
        ns = len(extents) - 2  # n c oh ow, or n cb oh ow cl (blocked)
        kinds = ["spatial"] * ns + ["reduce"] * 2

        def init(e: Emitter, vs: list[SSAValue]) -> None:
            e.store(_lowest(t, e), y, vs[:ns])

        with kb.nest("max_pool2d", extents, kinds, init=init) as (e, vs):
            n, c, oh, ow, *cl, ikh, ikw = vs
            taps = [wins[0].index(e, oh, ikh), wins[1].index(e, ow, ikw)]
            xv = _guarded_load(e, x, [n, c], taps, wins, lambda: _lowest(t, e), cl)
            e.store(e.max(e.load(y, vs[:ns]), xv), y, vs[:ns])


@legalizes(graph.AvgPool2dOp)
class LegalizeAvgPool2d(_LegalizePool2d):
    """Block "avg_pool2d_sum" [n, c, oh, ow | kh, kw] (padding taps add 0), then block
    "avg_pool2d" [n, c, oh, ow] divides by the window count: with count_include_pad the window
    clipped to the padded input [-pad_begin, size + pad_end), else clipped to the input
    (ceil_mode windows past the end never count beyond the pads, as ONNX / PyTorch). With a
    dilation d the count is the number of taps start + k*d (0 <= k < kernel) inside that range."""

    def dilations(self, op) -> Sequence[int]:
        return op.dilations.get_values()

    def build(self, op: graph.AvgPool2dOp, kb: KernelBuilder) -> None:
        (x,), (y,) = kb.inputs, kb.outputs
        t = y.type.element_type
        dilations = self.dilations(op)
        wins = _pool_windows(op, kb, x, y, dilations)
        kernel, strides, pads = op.kernel.get_values(), op.strides.get_values(), op.pads.get_values()
        include_pad = bool(op.count_include_pad)
        extents = kb.dims(y) + list(kernel)
        ns = len(extents) - 2  # n c oh ow, or n cb oh ow cl (blocked)
        kinds = ["spatial"] * ns + ["reduce"] * 2

        def init(e: Emitter, vs: list[SSAValue]) -> None:
            e.store(e.const(0, t), y, vs[:ns])

        with kb.nest("avg_pool2d_sum", extents, kinds, init=init) as (e, vs):
            n, c, oh, ow, *cl, ikh, ikw = vs
            taps = [wins[0].index(e, oh, ikh), wins[1].index(e, ow, ikw)]
            xv = _guarded_load(e, x, [n, c], taps, wins, lambda: e.const(0, t), cl)
            e.store(e.add(e.load(y, vs[:ns]), xv), y, vs[:ns])

        with kb.nest("avg_pool2d", kb.dims(y)) as (e, vs):
            counts: list[Index] = []
            for s in range(2):
                start = e.affine([(vs[2 + s], strides[s])], -pads[s])
                lo = -pads[s] if include_pad else 0
                hi = e.iadd(wins[s].size, pads[2 + s]) if include_pad else wins[s].size
                d = dilations[s]
                if d == 1:
                    end = e.iadd(start, kernel[s])
                    counts.append(e.isub(e.imin(end, hi), e.imax(start, lo)))
                    continue
                # taps k in [ceil((lo - start) / d), ceil((hi - start) / d)) ∩ [0, kernel)
                k_lo = e.imax(e.iceildiv(e.isub(lo, start), d), 0)
                k_hi = e.imin(e.iceildiv(e.isub(hi, start), d), kernel[s])
                counts.append(e.imax(e.isub(k_hi, k_lo), 0))
            count = e.imul(counts[0], counts[1])
            e.store(e.div(e.load(y, vs), _as_element(e, count, t)), y, vs)


# -- global pools ----------------------------------------------------------------------------


class _LegalizeGlobalPool(Legalization):
    def result_dims(self, op, g: GraphDims) -> list[Index]:
        return [g.dim(op.input, i) for i in range(2) if _shape(op.result)[i] < 0]


@legalizes(graph.GlobalMaxPoolOp)
class LegalizeGlobalMaxPool(_LegalizeGlobalPool):
    """Block "global_max_pool" [n, c | spatial…]: init -inf."""

    def build(self, op, kb: KernelBuilder) -> None:
        (x,), (y,) = kb.inputs, kb.outputs
        t = y.type.element_type
        rank = len(_shape(x))
        kinds = ["spatial"] * 2 + ["reduce"] * (rank - 2)

        def out_idx(vs):
            return [vs[0], vs[1]] + [0] * (rank - 2)

        def init(e: Emitter, vs: list[SSAValue]) -> None:
            e.store(_lowest(t, e), y, out_idx(vs))

        with kb.nest("global_max_pool", kb.dims(x), kinds, init=init) as (e, vs):
            e.store(e.max(e.load(y, out_idx(vs)), e.load(x, vs)), y, out_idx(vs))


@legalizes(graph.GlobalAvgPoolOp)
class LegalizeGlobalAvgPool(_LegalizeGlobalPool):
    """Block "global_avg_pool_sum" [n, c | spatial…] (init 0), then "global_avg_pool" [n, c]
    divides by the number of spatial points."""

    def build(self, op, kb: KernelBuilder) -> None:
        (x,), (y,) = kb.inputs, kb.outputs
        t = y.type.element_type
        rank = len(_shape(x))
        kinds = ["spatial"] * 2 + ["reduce"] * (rank - 2)

        def out_idx(vs):
            return [vs[0], vs[1]] + [0] * (rank - 2)

        def init(e: Emitter, vs: list[SSAValue]) -> None:
            e.store(e.const(0, t), y, out_idx(vs))

        with kb.nest("global_avg_pool_sum", kb.dims(x), kinds, init=init) as (e, vs):
            e.store(e.add(e.load(y, out_idx(vs)), e.load(x, vs)), y, out_idx(vs))

        count: Index = 1
        for i in range(2, rank):
            count = kb.top.imul(count, kb.dim(x, i))
        with kb.nest("global_avg_pool", kb.dims(y)[:2]) as (e, vs):
            e.store(e.div(e.load(y, out_idx(vs)), _as_element(e, count, t)), y, out_idx(vs))


# -- Winograd F(m x m, 3x3) input transform ----------------------------------------------------


@legalizes(graph.WinogradInputOp)
class LegalizeWinogradInput(Legalization):
    """One block "winograd_input" over (n, i, j, c) (blocked: (n, i, j, c/B, c%B), the channel
    innermost, so loads and stores run along it): the r x r taps of the tile's input window
    (r = m + 2; zero outside the input: a clamped load and a select, as the conv's padding),
    B^T d B with B^T's constant entries (adds and subtracts for the +-1s, no term for the 0s;
    rows, then columns), r*r stores V[r*a + b, (n*th + i)*tw + j, c]."""

    def build(self, op: graph.WinogradInputOp, kb: KernelBuilder) -> None:
        from minimlir.passes.graph.winograd import TRANSFORMS

        (x,), (v,) = kb.inputs, kb.outputs
        xs = _shape(x)
        pt, pl = op.pads.get_values()
        th, tw = op.tiles.get_values()
        m = op.tile.value.data
        r = m + 2
        bt = TRANSFORMS[m][0]
        t = v.type.element_type
        extents = [xs[0], th, tw, xs[1], *xs[4:]]
        with kb.nest("winograd_input", extents) as (e, vs):
            n, i, j, *cv = vs
            zero = e.const(0, t)

            def taps(var: Index, pad: int, size: int, tiles: int) -> list[tuple[Index, SSAValue | None]]:
                """(clamped index, inside-the-input condition or None) of the window's r taps."""
                out = []
                for a in range(r):
                    raw = e.affine([(var, m)], a - pad)
                    lo, hi = a - pad < 0, m * (tiles - 1) + a - pad >= size
                    cond = None
                    if lo:
                        cond = e.icmp("ge", raw, 0)
                    if hi:
                        c_hi = e.icmp("lt", raw, size)
                        cond = c_hi if cond is None else e.and_(cond, c_hi)
                    idx = e.imax(raw, 0) if lo else raw
                    out.append((e.imin(idx, size - 1) if hi else idx, cond))
                return out

            rows, cols = taps(i, pt, xs[2], th), taps(j, pl, xs[3], tw)
            d = []
            for ri, rc in rows:
                line = []
                for ci, cc in cols:
                    val = e.load(x, [n, cv[0], ri, ci, *cv[1:]])
                    cond = rc if cc is None else cc if rc is None else e.and_(rc, cc)
                    line.append(val if cond is None else e.select(cond, val, zero))
                d.append(line)

            bt_times = _constant_matvec(e, bt, zero, t)  # z -> B^T z

            cols_t = [bt_times([d[a][b] for a in range(r)]) for b in range(r)]  # [b][a'] = (B^T d)[a', b]
            tile, chan = _tile_and_channel(e, n, i, j, cv, th, tw, xs)
            for a in range(r):
                row = bt_times([cols_t[b][a] for b in range(r)])  # ((B^T d) B)[a, :]
                for b in range(r):
                    e.store(row[b], v, [r * a + b, tile, chan])


@legalizes(graph.WinogradOutputOp)
class LegalizeWinogradOutput(Legalization):
    """One block "winograd_output" over (n, i, j, k) (blocked: (n, i, j, k/B, k%B)), the channel
    innermost: the tile's r*r products M[e, (n*th + i)*tw + j, k], A^T M A with A^T's constant
    entries (rows, then columns), m*m stores. The last tiles' rows and columns past `size` store at
    the last row / column (clamped), in descending order, so the one tile element that belongs
    there is stored after them (no branch, and the stores stay affine but for the clamp)."""

    def build(self, op: graph.WinogradOutputOp, kb: KernelBuilder) -> None:
        from minimlir.passes.graph.winograd import TRANSFORMS

        (mm,), (y,) = kb.inputs, kb.outputs
        ys = _shape(y)
        th, tw = op.tiles.get_values()
        oh, ow = op.size.get_values()
        m = op.tile.value.data
        r = m + 2
        at = TRANSFORMS[m][2]
        t = y.type.element_type
        extents = [ys[0], th, tw, ys[1], *ys[4:]]
        with kb.nest("winograd_output", extents) as (e, vs):
            n, i, j, *kv = vs
            zero = e.const(0, t)
            tile, chan = _tile_and_channel(e, n, i, j, kv, th, tw, ys)
            prod = [[e.load(mm, [r * a + b, tile, chan]) for b in range(r)] for a in range(r)]
            combine = _constant_matvec(e, at, zero, t)
            cols = [combine([prod[a][b] for a in range(r)]) for b in range(r)]  # [b][p] = (A^T M)[p, b]
            out = [combine([cols[b][p] for b in range(r)]) for p in range(m)]  # [p][q] = (A^T M A)[p, q]

            def positions(var: Index, size: int, tiles: int) -> list[Index]:
                ragged = size < m * tiles
                return [e.imin(e.affine([(var, m)], p), size - 1) if ragged else e.affine([(var, m)], p)
                        for p in range(m)]

            rows, cols_at = positions(i, oh, th), positions(j, ow, tw)
            for p in reversed(range(m)):
                for q in reversed(range(m)):
                    e.store(out[p][q], y, [n, kv[0], rows[p], cols_at[q], *kv[1:]])


def _tile_and_channel(e: Emitter, n: Index, i: Index, j: Index, cv: list[SSAValue], th: int, tw: int,
                      shape: tuple[int, ...]) -> tuple[Index, Index]:
    """The flat tile index (n*th + i)*tw + j and the logical channel (c, or c/B*B + c%B of a
    channel-blocked `shape`) of the Winograd transforms' nest variables."""
    tile = e.affine([(n, th * tw), (i, tw), (j, 1)])
    chan = e.affine([(cv[0], shape[4]), (cv[1], 1)]) if len(shape) == 5 else cv[0]
    return tile, chan


def _constant_matvec(e: Emitter, mat, zero: SSAValue, t: Attribute) -> Callable[[list[SSAValue]], list[SSAValue]]:
    """z -> mat z for a constant matrix (numpy): +-1 entries as adds and subtracts, 0s skipped,
    others multiplied (each distinct factor one constant); the positive terms first."""
    factors: dict[float, SSAValue] = {}

    def apply(z: list[SSAValue]) -> list[SSAValue]:
        out = []
        for row in mat:
            acc: SSAValue | None = None
            for c, zv in sorted(zip(row, z), key=lambda cz: cz[0] < 0):
                if c == 0:
                    continue
                if abs(c) != 1:
                    f = float(abs(c))
                    if f not in factors:
                        factors[f] = e.const(f, t)
                    zv = e.mul(zv, factors[f])
                if acc is None:
                    acc = zv if c > 0 else e.sub(zero, zv)
                else:
                    acc = e.add(acc, zv) if c > 0 else e.sub(acc, zv)
            out.append(acc if acc is not None else zero)
        return out

    return apply
