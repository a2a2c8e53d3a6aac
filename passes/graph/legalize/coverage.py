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
