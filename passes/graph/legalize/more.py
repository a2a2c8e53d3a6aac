"""Legalizations of the ops of `minimlir.dialects._graph_more`: gather_elements, gather_nd, cumsum,
the trigonometric / hyperbolic functions, round and bitshift (elementwise, as in
`_legalize_elementwise`).

    gather_elements: one block "gather_elements" over the result: y[v] = x[v with v[axis] := j],
                     j = clamp(wrap(I[v])) (negative indices count from the end; an out-of-range
                     index is clamped so that it never reads outside the data buffer).
    gather_nd:       one block "gather_nd" over the result (b..., q..., s...): the k entries of
                     I[b..., q..., :] are loaded, wrapped and clamped, then x[b..., j_0..j_k-1, s...].
    cumsum:          a scan in two blocks. "cumsum_first" writes the first element of every
                     line (x[0], or 0 when exclusive; the last one when reverse), "cumsum" then
                     runs along the axis: y[i + 1] = y[i] + x[i + 1] (x[i] when exclusive).
                     All accesses are affine; the schedule sees that iteration i + 1 reads what
                     iteration i wrote, so it never runs the axis loop in parallel or as a vector.
"""

from __future__ import annotations

from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, MemRefType, TensorType
from xdsl.ir import SSAValue

from minimlir.dialects import graph
from minimlir.passes.loop._kernel_builder import Emitter, Index, KernelBuilder, is_unsigned
from minimlir.passes.graph.legalize._common import GraphDims, Legalization, legalizes
from minimlir.passes.graph.legalize.elementwise import build_elementwise


def _shape(v: SSAValue) -> tuple[int, ...]:
    assert isinstance(v.type, TensorType | MemRefType)
    return tuple(v.type.get_shape())


def _elt(v: SSAValue):
    return v.type.get_element_type()  # type: ignore[attr-defined]


def wrapped_index(e: Emitter, raw_value: SSAValue, size: Index, last: Index) -> Index:
    """An index element as `index`: negative counts from the end, then clamped to [0, last]."""
    raw = e.cast(raw_value, IndexType())
    wrapped = e.select(e.icmp("lt", raw, 0), e.index(e.iadd(raw, size)), raw)
    return e.iclamp(wrapped, 0, last)


@legalizes(graph.GatherElementsOp)
class LegalizeGatherElements(Legalization):
    """Y[v] = X[v[:axis], wrap(I[v]), v[axis+1:]] (non-affine in the axis)."""

    def build(self, op: graph.GatherElementsOp, kb: KernelBuilder) -> None:
        (x, ind), (y,) = kb.inputs, kb.outputs
        axis = op.axis.value.data
        size = kb.dim(x, axis)
        last = kb.top.isub(size, 1)
        with kb.nest("gather_elements", kb.dims(y)) as (e, vs):
            j = wrapped_index(e, e.load(ind, vs), size, last)
            src: list[Index] = list(vs)
            src[axis] = j
            e.store(e.load(x, src), y, vs)

    def result_dims(self, op: graph.GatherElementsOp, g: GraphDims) -> list[Index]:
        return [g.dim(op.indices, i) for i, d in enumerate(_shape(op.result)) if d < 0]


@legalizes(graph.GatherNDOp)
class LegalizeGatherND(Legalization):
    """Y[b, q, s] = X[b, wrap(I[b, q, 0]), ..., wrap(I[b, q, k-1]), s]."""

    def build(self, op: graph.GatherNDOp, kb: KernelBuilder) -> None:
        (x, ind), (y,) = kb.inputs, kb.outputs
        bd = op.batch_dims.value.data
        irank = len(_shape(ind))
        k = _shape(ind)[-1]
        sizes = [kb.dim(x, bd + m) for m in range(k)]
        lasts = [kb.top.isub(s, 1) for s in sizes]
        with kb.nest("gather_nd", kb.dims(y)) as (e, vs):
            lead = list(vs[: irank - 1])  # b..., q...
            js = [wrapped_index(e, e.load(ind, [*lead, m]), sizes[m], lasts[m]) for m in range(k)]
            e.store(e.load(x, [*vs[:bd], *js, *vs[irank - 1:]]), y, vs)

    def result_dims(self, op: graph.GatherNDOp, g: GraphDims) -> list[Index]:
        bd = op.batch_dims.value.data
        irank = len(_shape(op.indices))
        k = _shape(op.indices)[-1]
        dims: list[Index] = []
        for i, d in enumerate(_shape(op.result)):
            if d >= 0:
                continue
            if i < irank - 1:
                dims.append(g.dim(op.indices, i))
            else:
                dims.append(g.dim(op.data, bd + k + i - (irank - 1)))
        return dims


@legalizes(graph.CumSumOp, graph.CumProdOp)
class LegalizeCumSum(Legalization):
    """A scan along the axis (see the module docstring); cumprod multiplies (exclusive: from 1)."""

    def build(self, op: graph.CumSumOp, kb: KernelBuilder) -> None:
        prod = isinstance(op, graph.CumProdOp)
        name = "cumprod" if prod else "cumsum"
        (x,), (y,) = kb.inputs, kb.outputs
        axis = op.axis.value.data
        exclusive, reverse = bool(op.exclusive), bool(op.reverse)
        dims = kb.dims(y)
        n = dims[axis]
        t = _elt(y)

        def at(e: Emitter, vs, i: Index) -> list[Index]:
            idx: list[Index] = list(vs)
            idx[axis] = i
            return idx

        def pos(e: Emitter, i: Index) -> Index:
            """The i-th position along the scan: i, or n - 1 - i when reverse."""
            return e.isub(e.isub(n, 1), i) if reverse else i

        first = list(dims)
        first[axis] = kb.top.imin(n, 1)  # an empty axis has no first element
        with kb.nest(f"{name}_first", first) as (e, vs):
            p = pos(e, 0)
            v = e.const(1 if prod else 0, t) if exclusive else e.load(x, at(e, vs, p))
            e.store(v, y, at(e, vs, p))
        rest = list(dims)
        rest[axis] = kb.top.imax(kb.top.isub(n, 1), 0)
        with kb.nest(name, rest) as (e, vs):
            i = vs[axis]
            prev, cur = pos(e, i), pos(e, e.iadd(i, 1))
            add = e.load(x, at(e, vs, prev if exclusive else cur))
            e.store((e.mul if prod else e.add)(e.load(y, at(e, vs, prev)), add), y, at(e, vs, cur))


# -- elementwise: trigonometric, hyperbolic, rounding, bit shifts -------------------------------

# sin … atanh and round lower from what they declare (MATH_OP: passes/graph/legalize/unary.py)


@legalizes(graph.BitShiftOp)
class LegalizeBitShift(Legalization):
    """z[i] = x << y (LEFT) or x >> y (RIGHT: logical for unsigned, arithmetic for signed),
    broadcast. A shift by a negative amount or by the width or more (poison in LLVM) gives what
    the sign extension alone gives: -1 for a right shift of a negative x, else 0 (ONNX BitShift)."""

    def build(self, op: graph.BitShiftOp, kb: KernelBuilder) -> None:
        left = op.direction.data == "LEFT"
        t = _elt(kb.outputs[0])
        width = t.width.data
        signed = not is_unsigned(t)

        def fn(b: Emitter, v: list[SSAValue]) -> SSAValue:
            x, y = v
            right_cls = arith.ShRSIOp if signed else arith.ShRUIOp
            shifted = b.emit((arith.ShLIOp if left else right_cls)(x, y))
            too_far = b.cmp("ge", y, b.const(width, t))
            fill = b.const(0, t)
            if signed:
                too_far = b.emit(arith.OrIOp(too_far, b.cmp("lt", y, b.const(0, t))))
                if not left:
                    fill = b.select(b.cmp("lt", x, b.const(0, t)), b.const(-1, t), fill)
            return b.select(too_far, fill, shifted)

        build_elementwise(kb, "bitshift", fn)
