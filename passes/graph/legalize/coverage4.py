"""Legalizations of the ops of `minimlir.dialects._graph_coverage4`.

    bitcast:    elementwise block "bitcast": y[i] = arith.bitcast x[i].

    nms_select: block "nms_init" (keep = false, per (b, c, r)) and "nms_count_init" (count = 0,
                per (b, c)), then block "nms_select" over (b, c, r, q), q innermost: at q = 0 a
                one-element-per-(b, c) flag starts as valid[b, c, r] and count < max; every q
                clears it when candidate q is kept and suppresses r (suppress[b, order[q],
                order[r]]; keep[q] is still false for q >= r); at q = N-1 the flag is stored as
                keep[b, c, r] and added to the count. The flag and the count are carried through
                memory along q and r, so those loops stay serial (the flag's store is invariant
                along q: the vectorizer refuses it); different (b, c) are independent.
"""

from __future__ import annotations

from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, TensorType, i1, i64

from minimlir.dialects import graph
from minimlir.passes.graph.legalize._common import Legalization, legalizes
from minimlir.passes.graph.legalize.elementwise import build_elementwise
from minimlir.passes.loop._kernel_builder import KernelBuilder


@legalizes(graph.NmsSelectOp)
class LegalizeNmsSelect(Legalization):
    """keep[b, c, r] of the greedy suppression (see the module docstring)."""

    def build(self, op: graph.NmsSelectOp, kb: KernelBuilder) -> None:
        from minimlir.passes.graph.legalize.reduce import Scratch

        (sup, order, valid, maxc), (keep,) = kb.inputs, kb.outputs
        b_len, c_len, n_len = kb.dims(keep)
        scratch = Scratch(kb)
        flag = scratch.new(i1, [b_len, c_len])
        count = scratch.new(i64, [b_len, c_len])
        with kb.nest("nms_init", [b_len, c_len, n_len]) as (e, vs):
            e.store(e.const(False, i1), keep, vs)
        with kb.nest("nms_count_init", [b_len, c_len]) as (e, vs):
            e.store(e.const(0, i64), count, vs)
        last = kb.top.isub(n_len, 1)
        with kb.nest("nms_select", [b_len, c_len, n_len, n_len]) as (e, vs):
            b, c, r, q = vs
            bc = [b, c]
            cnt = e.load(count, bc)
            start = e.and_(e.load(valid, [b, c, r]), e.cmp("lt", cnt, e.load(maxc, [])))
            f = e.select(e.icmp("eq", q, 0), start, e.load(flag, bc))
            box_r = e.cast(e.load(order, [b, c, r]), IndexType())
            box_q = e.cast(e.load(order, [b, c, q]), IndexType())
            hit = e.and_(e.load(keep, [b, c, q]), e.load(sup, [b, box_q, box_r]))
            f = e.select(hit, e.const(False, i1), f)
            e.store(f, flag, bc)
            at_end = e.icmp("eq", q, last)
            e.store(e.select(at_end, f, e.load(keep, [b, c, r])), keep, [b, c, r])
            e.store(e.add(cnt, e.select(at_end, e.cast(f, i64), e.const(0, i64))), count, bc)
        scratch.free()


@legalizes(graph.BitcastOp)
class LegalizeBitcast(Legalization):
    """y[i] = the bits of x[i] read as y's element type."""

    def build(self, op: graph.BitcastOp, kb: KernelBuilder) -> None:
        assert isinstance(op.result.type, TensorType)
        to = op.result.type.get_element_type()
        build_elementwise(kb, "bitcast", lambda b, v: b.emit(arith.BitcastOp(v[0], to)))
