"""graph-legalize for data movement: transpose, concat, slice, split, gather, pad, broadcast_to,
tile, trilu, range and shape.

Each output element is written exactly once by a spatial block, and loads use affine indices
wherever the op is affine (transpose, concat, slice, split, constant pad, tile/broadcast_to on
static dims, trilu). The non-affine ones say so: gather loads its index from a buffer; reflect /
edge pad and broadcasting of a `?` dim that may be 1 at run time compute their indices with
min/max/select.

    %y = graph.concat %a, %b axis 1 : (tensor<2x3xf32>, tensor<2x?xf32>) -> tensor<2x?xf32>
  becomes one nest per input, writing at the running offset along the axis:
    loop.for %i, %j (0..2, 0..3)   loop.block "concat_0" { Y[i, j]     = A[i, j] }
    loop.for %i, %j (0..2, 0..m)   loop.block "concat_1" { Y[i, j + 3] = B[i, j] }

graph.from_dims stays at the graph level (graph-bufferize stores its index operands into a small
i64 buffer): a kernel takes memrefs only, so it could not receive the index values.
graph.range's length is a run-time value: its shape function reads the 0-d start/limit/delta
tensors with graph.extract.
"""

from __future__ import annotations

from xdsl.dialects import arith, math
from xdsl.dialects.builtin import (
    AnyFloat,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    TensorType,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.rewriter import Rewriter

from minimlir.dialects import graph, loop
from minimlir.passes.loop._kernel_builder import Emitter, Index, KernelBuilder
from minimlir.passes.graph.legalize._common import GraphDims, Legalization, legalizes


def _shape(v: SSAValue) -> tuple[int, ...]:
    assert isinstance(v.type, TensorType | MemRefType)
    return tuple(v.type.get_shape())


def _elt(v: SSAValue) -> Attribute:
    return v.type.get_element_type()  # type: ignore[union-attr]


def _graph_emit(g: GraphDims, op: Operation) -> SSAValue:
    Rewriter.insert_op(op, g.ip)
    return op.results[0]


# -- transpose -------------------------------------------------------------------------------


@legalizes(graph.TransposeOp)
class LegalizeTranspose(Legalization):
    """Y[i_0, …] = X[j] with j[perm[k]] = i_k: block "transpose" over the output."""

    def build(self, op: graph.TransposeOp, kb: KernelBuilder) -> None:
        (x,), (y,) = kb.inputs, kb.outputs
        perm = op.perm.get_values()
        with kb.nest("transpose", kb.dims(y)) as (e, vs):
            idx: list[Index] = [0] * len(perm)
            for k, p in enumerate(perm):
                idx[p] = vs[k]
            e.store(e.load(x, idx), y, vs)

    def result_dims(self, op: graph.TransposeOp, g: GraphDims) -> list[Index]:
        perm = op.perm.get_values()
        return [g.dim(op.input, perm[k]) for k, d in enumerate(_shape(op.result)) if d < 0]


# -- concat / split --------------------------------------------------------------------------


@legalizes(graph.ConcatOp)
class LegalizeConcat(Legalization):
    """One nest per input, block "concat_<k>": Y[…, off_k + i, …] = X_k[…, i, …] (affine)."""

    def build(self, op: graph.ConcatOp, kb: KernelBuilder) -> None:
        (y,) = kb.outputs
        axis = op.axis.value.data
        offset: Index = 0
        for k, x in enumerate(kb.inputs):
            off = offset
            with kb.nest(f"concat_{k}", kb.dims(x)) as (e, vs):
                out = list(vs)
                out[axis] = e.iadd(vs[axis], off)
                e.store(e.load(x, vs), y, out)
            if k + 1 < len(kb.inputs):
                offset = kb.top.iadd(offset, kb.dim(x, axis))

    def kernel_attributes(self, op: graph.ConcatOp) -> dict[str, Attribute]:
        return {loop.CONCAT_AXIS_ATTR: IntegerAttr(op.axis.value.data, 64)}

    def result_dims(self, op: graph.ConcatOp, g: GraphDims) -> list[Index]:
        axis = op.axis.value.data
        dims: list[Index] = []
        for i, d in enumerate(_shape(op.result)):
            if d >= 0:
                continue
            if i == axis:
                total: Index = 0
                for x in op.inputs:
                    total = g.iadd(total, g.dim(x, axis))
                dims.append(total)
            else:
                dyn = [x for x in op.inputs if _shape(x)[i] < 0]
                dims.append(g.dim(dyn[0], i))
        return dims


@legalizes(graph.SplitOp)
class LegalizeSplit(Legalization):
    """One kernel with one output buffer per piece; block "split_<k>" per piece:
    Y_k[…, i, …] = X[…, off_k + i, …] (affine)."""

    def build(self, op: graph.SplitOp, kb: KernelBuilder) -> None:
        (x,) = kb.inputs
        axis = op.axis.value.data
        offset: Index = 0
        for k, y in enumerate(kb.outputs):
            off = offset
            with kb.nest(f"split_{k}", kb.dims(y)) as (e, vs):
                src = list(vs)
                src[axis] = e.iadd(vs[axis], off)
                e.store(e.load(x, src), y, vs)
            if k + 1 < len(kb.outputs):
                offset = kb.top.iadd(offset, kb.dim(y, axis))

    def result_dims(self, op: graph.SplitOp, g: GraphDims) -> list[Index]:
        axis = op.axis.value.data
        sizes = op.sizes.get_values()
        n_dyn = sum(1 for s in sizes if s < 0)
        share = last = None
        if n_dyn:
            rest = g.isub(g.dim(op.input, axis), sum(s for s in sizes if s >= 0))
            share = g.ceildiv(rest, n_dyn)
            last = rest if n_dyn == 1 else g.isub(rest, g.imul(share, n_dyn - 1))
        dims: list[Index] = []
        seen_dyn = 0
        for r, s in zip(op.outputs, sizes):
            for i, d in enumerate(_shape(r)):
                if d >= 0:
                    continue
                if i != axis:
                    dims.append(g.dim(op.input, i))
                    continue
                seen_dyn += 1
                dims.append(last if seen_dyn == n_dyn else share)  # type: ignore[arg-type]
        return dims


# -- slice -----------------------------------------------------------------------------------


class _IndexOps:
    """The same index arithmetic at the graph level (GraphDims) or in a kernel (Emitter)."""

    def __init__(self, at: GraphDims | Emitter):
        self.at = at
        if isinstance(at, GraphDims):
            self.add, self.sub, self.mul = at.iadd, at.isub, at.imul
            self.min, self.max, self.ceildiv = at.min, at.max, at.ceildiv
        else:
            self.add, self.sub, self.mul = at.iadd, at.isub, at.imul
            self.min, self.max, self.ceildiv = at.imin, at.imax, at.iceildiv


def _slice_bound(ix: _IndexOps, size: Index, v: int, step: int, is_end: bool) -> Index:
    """ONNX normalization of a raw start/end `v` on a dim of run-time extent `size`: negative
    counts from the end; clamp to [0, size] (step > 0), start to [0, size-1] and end to
    [-1, size-1] (step < 0). INT64_MAX / INT64_MIN are therefore "to the end"."""
    if step > 0:
        return ix.min(v, size) if v >= 0 else ix.max(ix.add(size, v), 0)
    if v >= 0:
        return ix.min(v, ix.sub(size, 1))
    return ix.max(ix.add(size, v), -1 if is_end else 0)


def _dynamic_slice_bound(ix: _IndexOps, size: Index, v: SSAValue, step: int, is_end: bool) -> Index:
    """`_slice_bound` of a run-time value: (v < 0 ? v + size : v), then the same clamping."""
    at = ix.at
    if isinstance(at, GraphDims):
        neg = _graph_emit(at, arith.CmpiOp(v, at.index(0), "slt"))
        w = _graph_emit(at, arith.SelectOp(neg, at.index(at.iadd(v, size)), v))
    else:
        w = at.index(at.select(at.icmp("lt", v, 0), at.index(at.iadd(v, size)), v))
    if step > 0:
        return ix.min(ix.max(w, 0), size)
    return ix.min(ix.max(w, -1 if is_end else 0), ix.sub(size, 1))


def _slice_bounds(op: graph.SliceOp, ix: _IndexOps, size_of, dyn_value) -> tuple[list[Index], list[Index | None]]:
    """Normalized (starts, ends) per dim. Static dims keep their (normalized) properties; a `?`
    dim or a run-time bound is normalized here. `ends` is None where nobody needs it (static
    dims with static bounds). `dyn_value(k)` is the k-th run-time bound as an index value."""
    dyn_s, dyn_e = op.dynamic_bounds()
    n_s = len(dyn_s)
    slot_s = {i: k for k, i in enumerate(dyn_s)}
    slot_e = {i: n_s + k for k, i in enumerate(dyn_e)}
    starts: list[Index] = []
    ends: list[Index | None] = []
    for i, (d, b, e, s) in enumerate(zip(_shape(op.input), op.starts.get_values(),
                                         op.ends.get_values(), op.steps.get_values())):
        dynamic = d < 0 or i in slot_s or i in slot_e
        if i in slot_s:
            starts.append(_dynamic_slice_bound(ix, size_of(i), dyn_value(slot_s[i]), s, False))
        else:
            starts.append(b if d >= 0 else _slice_bound(ix, size_of(i), b, s, False))
        if i in slot_e:
            ends.append(_dynamic_slice_bound(ix, size_of(i), dyn_value(slot_e[i]), s, True))
        else:
            ends.append(None if not dynamic else e if d >= 0 else _slice_bound(ix, size_of(i), e, s, True))
    return starts, ends


@legalizes(graph.SliceOp)
class LegalizeSlice(Legalization):
    """Y[i…] = X[start + i*step, …]: block "slice" (affine; a `?` dim's start is normalized at
    the kernel entry, so it is a symbol). Run-time bounds (the `bounds` index operands) reach the
    kernel as an i64 buffer (graph.from_dims, an extra kernel input) that the kernel entry reads
    and normalizes: the start stays a symbol, the block stays affine."""

    def build(self, op: graph.SliceOp, kb: KernelBuilder) -> None:
        x, *rest = kb.inputs
        (y,) = kb.outputs
        top = kb.top

        def dyn_value(k: int) -> SSAValue:
            return top.cast(top.load(rest[0], [k]), IndexType())

        starts, _ = _slice_bounds(op, _IndexOps(top), lambda i: kb.dim(x, i), dyn_value)
        steps = op.steps.get_values()
        with kb.nest("slice", kb.dims(y)) as (e, vs):
            idx = [e.affine([(v, s)], 0) for v, s in zip(vs, steps)]
            idx = [e.iadd(i, b) for i, b in zip(idx, starts)]
            e.store(e.load(x, idx), y, vs)

    def extra_args(self, op: graph.SliceOp, g: GraphDims) -> list[SSAValue]:
        if not op.bounds:
            return []
        return [_graph_emit(g, graph.FromDimsOp(list(op.bounds)))]

    def result_dims(self, op: graph.SliceOp, g: GraphDims) -> list[Index]:
        ix = _IndexOps(g)
        starts, ends = _slice_bounds(op, ix, lambda i: g.dim(op.input, i), lambda k: op.bounds[k])
        dims: list[Index] = []
        steps = op.steps.get_values()
        for i, d in enumerate(_shape(op.result)):
            if d >= 0:
                continue
            e = ends[i]
            assert e is not None
            span = g.isub(e, starts[i]) if steps[i] > 0 else g.isub(starts[i], e)
            dims.append(g.max(g.ceildiv(span, abs(steps[i])), 0))
        return dims


# -- gather ----------------------------------------------------------------------------------


@legalizes(graph.GatherOp)
class LegalizeGather(Legalization):
    """Y[p…, q…, s…] = X[p…, wrap(I[q…]), s…]: block "gather". The index is loaded from a buffer
    (non-affine); negative indices wrap (idx + dim, ONNX) and out-of-range ones are clamped to the
    axis so that a bad index never reads outside the data buffer."""

    def build(self, op: graph.GatherOp, kb: KernelBuilder) -> None:
        (x, ind), (y,) = kb.inputs, kb.outputs
        axis = op.axis.value.data
        q = len(_shape(ind))
        size = kb.dim(x, axis)
        last = kb.top.isub(size, 1)
        with kb.nest("gather", kb.dims(y)) as (e, vs):
            raw = e.cast(e.load(ind, vs[axis: axis + q]), IndexType())
            wrapped = e.select(e.icmp("lt", raw, 0), e.index(e.iadd(raw, size)), raw)
            j = e.iclamp(wrapped, 0, last)
            e.store(e.load(x, [*vs[:axis], j, *vs[axis + q:]]), y, vs)

    def result_dims(self, op: graph.GatherOp, g: GraphDims) -> list[Index]:
        axis = op.axis.value.data
        q = len(_shape(op.indices))
        dims: list[Index] = []
        for i, d in enumerate(_shape(op.result)):
            if d >= 0:
                continue
            if i < axis:
                dims.append(g.dim(op.data, i))
            elif i < axis + q:
                dims.append(g.dim(op.indices, i - axis))
            else:
                dims.append(g.dim(op.data, i - q + 1))
        return dims


# -- pad -------------------------------------------------------------------------------------


def _scalar(e: Emitter, value: float, t: Attribute) -> SSAValue:
    if isinstance(t, AnyFloat):
        return e.const(value, t)
    return e.const(bool(value) if t == IntegerType(1) else int(value), t)


@legalizes(graph.PadOp)
class LegalizePad(Legalization):
    """constant: block "pad_fill" writes the value everywhere, then block "pad" copies the input
    into the interior (both affine; negative pads crop). reflect / edge: one block "pad" whose
    source index is mirrored / clamped on the padded dims."""

    def build(self, op: graph.PadOp, kb: KernelBuilder) -> None:
        (x,), (y,) = kb.inputs, kb.outputs
        rank = len(_shape(x))
        pads = op.pads.get_values()
        begin, end = pads[:rank], pads[rank:]
        mode = op.mode.data
        t = _elt(y)
        if mode == "constant":
            with kb.nest("pad_fill", kb.dims(y)) as (e, vs):
                e.store(_scalar(e, op.value.value.data, t), y, vs)
            lo = [max(0, -b) for b in begin]
            extents = [kb.top.isub(kb.dim(x, i), lo[i] + max(0, -end[i])) for i in range(rank)]
            with kb.nest("pad", extents) as (e, vs):
                src = [e.iadd(v, lo[i]) for i, v in enumerate(vs)]
                dst = [e.iadd(v, lo[i] + begin[i]) for i, v in enumerate(vs)]
                e.store(e.load(x, src), y, dst)
            return
        lasts = [kb.top.isub(kb.dim(x, i), 1) if begin[i] > 0 or end[i] > 0 else None
                 for i in range(rank)]
        with kb.nest("pad", kb.dims(y)) as (e, vs):
            src: list[Index] = []
            for i, v in enumerate(vs):
                j = e.isub(v, begin[i])
                last = lasts[i]
                if last is None:
                    src.append(j)
                elif mode == "edge":
                    src.append(e.iclamp(j, 0, last))
                else:  # reflect (pads < size): -j before the start, 2*last - j past the end
                    r = e.select(e.icmp("lt", j, 0), e.index(e.isub(0, j)), e.index(j))
                    mirrored = e.index(e.isub(e.imul(last, 2), r))
                    src.append(e.select(e.icmp("gt", r, last), mirrored, r))
            e.store(e.load(x, src), y, vs)

    def result_dims(self, op: graph.PadOp, g: GraphDims) -> list[Index]:
        rank = len(_shape(op.input))
        pads = op.pads.get_values()
        return [g.iadd(g.dim(op.input, i), pads[i] + pads[rank + i])
                for i, d in enumerate(_shape(op.result)) if d < 0]


# -- broadcast_to / tile / trilu -------------------------------------------------------------


def _bcast_exact_dims(op: graph.BroadcastToOp) -> tuple[int, ...]:
    """Positions of `?` input dims whose result extent is known to be that very dim (the dims
    operand is `graph.dim %input, j`): there the index is the result var, no broadcasting."""
    xs, ys = _shape(op.input), _shape(op.result)
    off = len(ys) - len(xs)
    dyn = iter(op.dims)
    exact = []
    for i, d in enumerate(ys):
        if d >= 0:
            continue
        v = next(dyn)
        j = i - off
        if j >= 0 and xs[j] < 0 and isinstance(v.owner, graph.DimOp) and v.owner.input is op.input \
                and v.owner.index.value.data == j:
            exact.append(j)
    return tuple(exact)


@legalizes(graph.BroadcastToOp)
class LegalizeBroadcastTo(Legalization):
    """Y[i…] = X[b(i)…] right-aligned: a static 1 reads index 0, an equal dim reads i, and a `?`
    input dim that may be 1 at run time reads min(i, dim - 1) (non-affine)."""

    def build(self, op: graph.BroadcastToOp, kb: KernelBuilder) -> None:
        (x,), (y,) = kb.inputs, kb.outputs
        xs = _shape(x)
        off = len(_shape(y)) - len(xs)
        exact = _bcast_exact_dims(op)
        lasts = {j: kb.top.isub(kb.dim(x, j), 1) for j, d in enumerate(xs) if d < 0 and j not in exact}
        with kb.nest("broadcast_to", kb.dims(y)) as (e, vs):
            idx: list[Index] = []
            for j, d in enumerate(xs):
                v = vs[j + off]
                if d == 1:
                    idx.append(0)
                elif j in lasts:
                    idx.append(e.imin(v, lasts[j]))
                else:
                    idx.append(v)
            e.store(e.load(x, idx), y, vs)

    def result_dims(self, op: graph.BroadcastToOp, g: GraphDims) -> list[Index]:
        return list(op.dims)

    def kernel_key(self, op: graph.BroadcastToOp) -> tuple:
        return (*super().kernel_key(op), _bcast_exact_dims(op))


@legalizes(graph.TileOp)
class LegalizeTile(Legalization):
    """Y[r_0*d_0 + i_0, …] = X[i_0, …]: block "tile" over (r_0, i_0, r_1, i_1, …) (repeat vars
    only where repeats > 1); affine on static dims."""

    def build(self, op: graph.TileOp, kb: KernelBuilder) -> None:
        (x,), (y,) = kb.inputs, kb.outputs
        repeats = op.repeats.get_values()
        extents: list[Index] = []
        for i, r in enumerate(repeats):
            if r != 1:
                extents.append(r)
            extents.append(kb.dim(x, i))
        with kb.nest("tile", extents) as (e, vs):
            it = iter(vs)
            src: list[Index] = []
            dst: list[Index] = []
            for i, r in enumerate(repeats):
                rv = next(it) if r != 1 else None
                iv = next(it)
                src.append(iv)
                dst.append(iv if rv is None else e.iadd(e.imul(rv, kb.dim(x, i)), iv))
            e.store(e.load(x, src), y, dst)

    def result_dims(self, op: graph.TileOp, g: GraphDims) -> list[Index]:
        repeats = op.repeats.get_values()
        return [g.imul(g.dim(op.input, i), repeats[i])
                for i, d in enumerate(_shape(op.result)) if d < 0]


@legalizes(graph.TriluOp)
class LegalizeTrilu(Legalization):
    """Y = X where j - i >= k (upper) / j - i <= k (lower) on the last two dims, else 0:
    block "trilu" (affine indices, a select on the value)."""

    def build(self, op: graph.TriluOp, kb: KernelBuilder) -> None:
        (x,), (y,) = kb.inputs, kb.outputs
        k = op.k.value.data
        upper = bool(op.upper)
        t = _elt(y)
        with kb.nest("trilu", kb.dims(y)) as (e, vs):
            diag = e.isub(vs[-1], vs[-2])
            keep = e.icmp("ge" if upper else "le", diag, k)
            e.store(e.select(keep, e.load(x, vs), _scalar(e, 0, t)), y, vs)


# -- range / shape ---------------------------------------------------------------------------


@legalizes(graph.RangeOp)
class LegalizeRange(Legalization):
    """Y[i] = start + i * delta: block "range". The length max(0, ceil((limit - start) / delta))
    is computed at the graph level from graph.extract of the 0-d operands."""

    def build(self, op: graph.RangeOp, kb: KernelBuilder) -> None:
        start, _, delta = kb.inputs
        (y,) = kb.outputs
        t = _elt(y)
        with kb.nest("range", kb.dims(y)) as (e, vs):
            s, d = e.load(start, []), e.load(delta, [])
            e.store(e.add(s, e.mul(e.cast(vs[0], t), d)), y, vs)

    def result_dims(self, op: graph.RangeOp, g: GraphDims) -> list[Index]:
        if _shape(op.result)[0] >= 0:
            return []
        s, l, d = (_graph_emit(g, graph.ExtractOp(v)) for v in (op.start, op.limit, op.delta))
        t = _elt(op.start)
        if isinstance(t, AnyFloat):
            q = _graph_emit(g, arith.DivfOp(_graph_emit(g, arith.SubfOp(l, s)), d))
            n = _graph_emit(g, arith.FPToSIOp(_graph_emit(g, math.CeilOp(q)), i64))
        else:
            n = _graph_emit(g, arith.CeilDivSIOp(_graph_emit(g, arith.SubiOp(l, s)), d))
        n = _graph_emit(g, arith.IndexCastOp(n, IndexType()))
        return [g.max(n, 0)]


@legalizes(graph.ShapeOp)
class LegalizeShape(Legalization):
    """Y[k] = dim k of X as i64: one loop-free block "shape" storing the (mem.dim) extents."""

    def build(self, op: graph.ShapeOp, kb: KernelBuilder) -> None:
        (x,), (y,) = kb.inputs, kb.outputs
        dims = kb.dims(x)
        with kb.block("shape", [], [], kb.top) as (e, _):
            for k, d in enumerate(dims):
                v = e.const(d, i64) if isinstance(d, int) else e.cast(d, i64)
                e.store(v, y, [k])

