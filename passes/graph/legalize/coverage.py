"""Legalizations of the ops of `minimlir.dialects._graph_coverage` (reduce_prod is the
reduction legalization's product kind, in reduce.py).

    scatter_elements: block "scatter_copy" (y = x, elementwise), then block "scatter" over the
                      updates: j = clamp(wrap(I[v])), y[v with v[axis] := j] = U[v] (or combined
                      with what is there: add / mul / max / min). The store index is not affine,
                      so the schedule keeps the loop serial: later updates win, duplicates
                      accumulate in order, as ONNX specifies.
    scatter_nd:       "scatter_copy", then "scatter" over the updates (q..., s...): the k entries
                      of I[q..., :] are loaded, wrapped and clamped, y[j_0..j_k-1, s...] = U[q, s].
"""

from __future__ import annotations

from xdsl.ir import SSAValue

from minimlir.dialects import graph
from minimlir.passes.graph.legalize._common import GraphDims, Legalization, legalizes
from minimlir.passes.graph.legalize.more import wrapped_index
from minimlir.passes.loop._kernel_builder import Emitter, Index, KernelBuilder


def _combine(e: Emitter, reduction: str, old: SSAValue, new: SSAValue) -> SSAValue:
    if reduction == "add":
        return e.add(old, new)
    if reduction == "mul":
        return e.mul(old, new)
    if reduction == "max":
        return e.max(old, new)
    assert reduction == "min"
    return e.min(old, new)


def _copy(kb: KernelBuilder, x: SSAValue, y: SSAValue) -> None:
    with kb.nest("scatter_copy", kb.dims(y)) as (e, vs):
        e.store(e.load(x, vs), y, vs)


class _SameAsData(Legalization):
    def result_dims(self, op, g: GraphDims) -> list[Index]:
        return [g.dim(op.data, i) for i, d in enumerate(op.data.type.get_shape()) if d < 0]


def _put(e: Emitter, reduction: str, value: SSAValue, y: SSAValue, idx: list[Index]) -> None:
    if reduction != "none":
        value = _combine(e, reduction, e.load(y, idx), value)
    e.store(value, y, idx)


@legalizes(graph.ScatterElementsOp)
class LegalizeScatterElements(_SameAsData):
    """y = x; y[v with v[axis] := wrap(I[v])] (op)= U[v]."""

    def build(self, op: graph.ScatterElementsOp, kb: KernelBuilder) -> None:
        (x, ind, upd), (y,) = kb.inputs, kb.outputs
        axis = op.axis.value.data
        reduction = op.reduction.data
        _copy(kb, x, y)
        size = kb.dim(y, axis)
        last = kb.top.isub(size, 1)
        with kb.nest("scatter", kb.dims(upd)) as (e, vs):
            dst: list[Index] = list(vs)
            dst[axis] = wrapped_index(e, e.load(ind, vs), size, last)
            _put(e, reduction, e.load(upd, vs), y, dst)


@legalizes(graph.ScatterNDOp)
class LegalizeScatterND(_SameAsData):
    """y = x; y[wrap(I[q, 0]), ..., wrap(I[q, k-1]), s] (op)= U[q, s]."""

    def build(self, op: graph.ScatterNDOp, kb: KernelBuilder) -> None:
        (x, ind, upd), (y,) = kb.inputs, kb.outputs
        reduction = op.reduction.data
        irank = len(ind.type.get_shape())
        k = ind.type.get_shape()[-1]
        _copy(kb, x, y)
        sizes = [kb.dim(y, m) for m in range(k)]
        lasts = [kb.top.isub(s, 1) for s in sizes]
        with kb.nest("scatter", kb.dims(upd)) as (e, vs):
            lead = list(vs[: irank - 1])
            js = [wrapped_index(e, e.load(ind, [*lead, m]), sizes[m], lasts[m]) for m in range(k)]
            _put(e, reduction, e.load(upd, vs), y, [*js, *vs[irank - 1:]])


@legalizes(graph.TopKOp)
class LegalizeTopK(Legalization):
    """k selection passes along the axis, one block "topk" over (line with the axis -> j, r):
    pick j is the best (value, index) pair strictly worse than pick j-1, in the order "greater
    value (smaller with largest=false), then lower index"; O(n*k) per line, every pick exact.

        init: I[j] = -1
        body: take = (j == 0 or (x[r], r) after pick j-1) and (I[j] < 0 or (x[r], r) before
              (V[j], I[j])); V[j] = take ? x[r] : V[j]; I[j] = take ? r : I[j]

    Pick j reads pick j-1 (written by the previous iteration of the j loop), so the schedule
    keeps j serial; r is a reduction."""

    def result_dims(self, op: graph.TopKOp, g: GraphDims) -> list[Index]:
        axis = op.axis.value.data
        dims: list[Index] = []
        for r in op.results:
            dims += [g.dim(op.input, i) for i, d in enumerate(r.type.get_shape()) if d < 0 and i != axis]
        return dims

    def build(self, op: graph.TopKOp, kb: KernelBuilder) -> None:
        from xdsl.dialects import arith
        from xdsl.dialects.builtin import i64

        (x,), (vals, idx) = kb.inputs, kb.outputs
        axis = op.axis.value.data
        largest = bool(op.largest.value.data)
        dims = kb.dims(vals)
        n = kb.dim(x, axis)
        rank = len(dims)
        better, worse = ("gt", "lt") if largest else ("lt", "gt")

        def init(e: Emitter, vs) -> None:
            e.store(e.const(-1, i64), idx, vs[:rank])

        with kb.nest("topk", [*dims, n], ["spatial"] * rank + ["reduce"], init=init) as (e, vs):
            out, r = list(vs[:rank]), vs[rank]
            j = out[axis]
            src = list(out)
            src[axis] = r
            v = e.load(x, src)
            ri = e.cast(e.index(r), i64)
            first = e.icmp("eq", j, 0)
            prev = list(out)
            prev[axis] = e.imax(e.isub(j, 1), 0)
            pv, pi = e.load(vals, prev), e.load(idx, prev)
            after_prev = e.emit(arith.OrIOp(e.cmp(worse, v, pv),
                                            e.and_(e.cmp("eq", v, pv), e.cmp("gt", ri, pi))))
            cv, ci = e.load(vals, out), e.load(idx, out)
            before_cur = e.emit(arith.OrIOp(e.cmp(better, v, cv),
                                            e.and_(e.cmp("eq", v, cv), e.cmp("lt", ri, ci))))
            empty = e.cmp("lt", ci, e.const(0, i64))
            take = e.and_(e.emit(arith.OrIOp(first, after_prev)), e.emit(arith.OrIOp(empty, before_cur)))
            e.store(e.select(take, v, cv), vals, out)
            e.store(e.select(take, ri, ci), idx, out)


@legalizes(graph.MaxPool2dIndicesOp)
class LegalizeMaxPool2dIndices(Legalization):
    """Block "max_pool2d_indices" [n, c, oh, ow | kh, kw]: init I = -1; a tap inside the input
    whose value equals the pooled one sets I to its flat index if I is still -1 (the first)."""

    def result_dims(self, op, g: GraphDims) -> list[Index]:
        return [g.dim(op.pooled, i) for i, d in enumerate(op.pooled.type.get_shape()) if d < 0]

    def build(self, op: graph.MaxPool2dIndicesOp, kb: KernelBuilder) -> None:
        from xdsl.dialects.builtin import i64

        from minimlir.passes.graph.legalize.nn import _pool_windows

        (x, y), (ind,) = kb.inputs, kb.outputs
        wins = _pool_windows(op, kb, x, y, op.dilations.get_values())
        kh, kw = op.kernel.get_values()
        C, H, W = kb.dim(x, 1), kb.dim(x, 2), kb.dim(x, 3)
        column = op.storage_order.value.data == 1

        def init(e: Emitter, vs) -> None:
            e.store(e.const(-1, i64), ind, vs[:4])

        with kb.nest("max_pool2d_indices", kb.dims(y) + [kh, kw], ["spatial"] * 4 + ["reduce"] * 2,
                     init=init) as (e, vs):
            n, c, oh, ow, ikh, ikw = vs
            th, tw = wins[0].index(e, oh, ikh), wins[1].index(e, ow, ikw)
            inside = e.and_(e.and_(e.icmp("ge", th, 0), e.icmp("lt", th, H)),
                            e.and_(e.icmp("ge", tw, 0), e.icmp("lt", tw, W)))
            h = e.imin(e.imax(th, 0), e.isub(H, 1))
            w = e.imin(e.imax(tw, 0), e.isub(W, 1))
            hit = e.and_(inside, e.cmp("eq", e.load(x, [n, c, h, w]), e.load(y, vs[:4])))
            plane = e.iadd(e.imul(n, C), c)
            flat = (e.iadd(e.imul(e.iadd(e.imul(plane, W), w), H), h) if column
                    else e.iadd(e.imul(e.iadd(e.imul(plane, H), h), W), w))
            cur = e.load(ind, vs[:4])
            first = e.and_(hit, e.cmp("lt", cur, e.const(0, i64)))
            e.store(e.select(first, e.cast(e.index(flat), i64), cur), ind, vs[:4])


@legalizes(graph.NonZeroOp)
class LegalizeNonZero(Legalization):
    """The result's dim 1 is the count, read at the graph level (graph.extract of the 0-d count
    operand, index_cast). The kernel scans x in row-major order with a running position c in a
    one-element scratch: block "nonzero_start" sets c = 0; block "nonzero" stores every
    element's coordinates at column c of a (rank, count + 1) scratch and adds (x != 0) to c (the
    extra column takes the zeros' writes, so no store is conditional); block "nonzero_copy"
    copies the first count columns to the result. The stores at c are not affine: the scan stays
    serial."""

    def result_dims(self, op: graph.NonZeroOp, g: GraphDims) -> list[Index]:
        from xdsl.dialects import arith
        from xdsl.dialects.builtin import IndexType

        from minimlir.passes.graph.legalize.data import _graph_emit

        c = _graph_emit(g, graph.ExtractOp(op.count))
        return [_graph_emit(g, arith.IndexCastOp(c, IndexType()))]

    def build(self, op: graph.NonZeroOp, kb: KernelBuilder) -> None:
        from xdsl.dialects.builtin import i64

        from minimlir.passes.graph.legalize.reduce import Scratch

        (x, _count), (y,) = kb.inputs, kb.outputs
        rank = len(x.type.get_shape())
        n = kb.dim(y, 1)
        scratch = Scratch(kb)
        pos = scratch.new(i64, [1])
        coords = scratch.new(i64, [rank, kb.top.iadd(n, 1)])
        with kb.block("nonzero_start", [], [], kb.top) as (e, _):
            e.store(e.const(0, i64), pos, [0])
        t = x.type.get_element_type()
        with kb.nest("nonzero", kb.dims(x)) as (e, vs):
            c = e.load(pos, [0])
            ci = e.cast(c, _index_type())
            for d in range(rank):
                e.store(e.cast(e.index(vs[d]), i64), coords, [d, ci])
            nz = e.cmp("ne", e.load(x, vs), e.const(0, t))
            e.store(e.add(c, e.cast(nz, i64)), pos, [0])
        with kb.nest("nonzero_copy", kb.dims(y)) as (e, vs):
            e.store(e.load(coords, vs), y, vs)
        scratch.free()


def _index_type():
    from xdsl.dialects.builtin import IndexType

    return IndexType()
