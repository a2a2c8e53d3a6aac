"""Legalizations of reductions and normalizations: reduce_sum/mean/max/min, argmax, softmax,
log_softmax, layer_norm, batch_norm, lrn.

A reduction is one block whose reduced dims are `reduce` iteration variables (innermost loops);
its `init` region writes the identity for each output point before the first accumulation:

    %y = graph.reduce_sum %x axes [1] : tensor<?x5xf32> -> tensor<?x1xf32>
  becomes
    loop.for %i = %c0 to %n step %c1 {
      loop.for %k = %c0 to %c5 step %c1 {
        loop.block "reduce_sum" (%vi = %i, %vk = %k) [spatial, reduce] {
          %acc = mem.load %y[%vi, %c0] ; %v = mem.load %x[%vi, %vk]
          mem.store (%acc + %v), %y[%vi, %c0]
        } init {
          mem.store %zero, %y[%vi, %c0]
        }

Multi-stage ops run one loop nest per stage (fusing them is the schedule's business) and keep
per-row statistics in local scratch buffers shaped like the input with the reduced dims set to 1:
`mem.alloca` when the scratch is static and at most SMALL_SCRATCH elements, else `mem.alloc` at
kernel entry and `mem.dealloc` at its end.

    softmax:     softmax_max (m = max x) ; softmax_exp (y = exp(x - m)) ; softmax_sum (s = sum y) ;
                 softmax_norm (y /= s)
    log_softmax: log_softmax_max ; log_softmax_sum (s = sum exp(x - m)) ; log_softmax_norm (y = x - m - log s)

A reduce block only ever writes at its spatial point (the reduce variables index reads only),
as TensorIR requires; that is why softmax stores exp(x - m) in a spatial block of its own.
    layer_norm:  layer_norm_mean ; layer_norm_mean_div ; layer_norm_var (sum (x - mean)^2, two-pass) ;
                 layer_norm_rstd (1 / sqrt(var / N + eps)) ; layer_norm_norm
    lrn:         lrn_pad (zero a channel-padded scratch) ; lrn_square ; lrn_sum (window sum into y) ; lrn
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

import numpy as np
from xdsl.dialects import arith, math
from xdsl.dialects.builtin import DYNAMIC_INDEX, AnyFloat, IntegerType, MemRefType, TensorType, f64, i64
from xdsl.ir import Attribute, Operation, SSAValue

from minimlir.dialects import graph, mem
from minimlir.passes.loop._kernel_builder import Emitter, Index, KernelBuilder, is_float, is_unsigned
from minimlir.passes.graph.legalize._common import GraphDims, Legalization, legalizes
from minimlir.passes.graph.legalize.elementwise import BroadcastPlan

SMALL_SCRATCH = 1024  # elements: larger (or dynamic) scratch buffers go to the heap

# --------------------------------------------------------------------------------------------
# Helpers


class Scratch:
    """Local buffers of one kernel; `free()` (at the end of `build`) deallocates heap ones."""

    def __init__(self, kb: KernelBuilder):
        self.kb = kb
        self.heap: list[SSAValue] = []

    def new(self, elt: Attribute, dims: Sequence[Index]) -> SSAValue:
        kb = self.kb
        consts = [kb.const_value(d) for d in dims]
        shape = [DYNAMIC_INDEX if c is None else c for c in consts]
        dyn = [kb.top.index(d) for d, c in zip(dims, consts) if c is None]
        t = MemRefType(elt, shape)
        if not dyn and int(np.prod(shape)) <= SMALL_SCRATCH:
            return kb.top.emit(mem.AllocaOp(t))
        buf = kb.top.emit(mem.AllocOp(t, dyn))
        self.heap.append(buf)
        return buf

    def free(self) -> None:
        for buf in self.heap:
            self.kb.top.emit(mem.DeallocOp(buf))


class Access:
    """Index lists for a block whose variables are (spatial dims in order, then reduced dims)."""

    def __init__(self, rank: int, spatial: Sequence[int], reduced: Sequence[int], vs: Sequence[SSAValue]):
        self.vs = list(vs)
        self.full: list[Index] = [0] * rank  # the input element
        for k, i in enumerate(spatial):
            self.full[i] = vs[k]
        self.kept: list[Index] = list(self.full)  # keepdims position (reduced dims -> 0)
        for k, a in enumerate(reduced):
            self.full[a] = vs[len(spatial) + k]
        self.dropped: list[Index] = list(vs[: len(spatial)])  # reduced dims removed
        self.reduce_vars = list(vs[len(spatial):])


@contextmanager
def reduce_nest(
    kb: KernelBuilder,
    name: str,
    dims: Sequence[Index],
    reduced: Sequence[int],
    init: Callable[[Emitter, Access], None] | None = None,
) -> Iterator[tuple[Emitter, Access]]:
    """Loops over the kept dims (outer, in order) then the reduced dims (inner), one block with
    iteration kinds spatial.../reduce...; `init` fills the block's init region."""
    rank = len(dims)
    spatial = [i for i in range(rank) if i not in reduced]
    extents = [dims[i] for i in spatial] + [dims[a] for a in reduced]
    kinds = ["spatial"] * len(spatial) + ["reduce"] * len(reduced)
    init_fn = None
    if init is not None:
        init_fn = lambda e, vs: init(e, Access(rank, spatial, reduced, vs))  # noqa: E731
    with kb.nest(name, extents, kinds, init=init_fn) as (b, vs):
        yield b, Access(rank, spatial, reduced, vs)


def identity(kind: str, t: Attribute, b: Emitter) -> SSAValue:
    """The identity of sum / max / min for element type t (i1: false < true, so max starts at
    false and min at true)."""
    if kind == "sum":
        return b.const(0, t)
    if kind == "prod":
        return b.const(1, t)
    if isinstance(t, AnyFloat):
        return b.const(float("-inf") if kind == "max" else float("inf"), t)
    assert isinstance(t, IntegerType)
    w = t.width.data
    if w == 1:
        return b.const(0 if kind == "max" else 1, t)
    if is_unsigned(t):
        return b.const(0 if kind == "max" else (1 << w) - 1, t)
    return b.const(-(1 << (w - 1)) if kind == "max" else (1 << (w - 1)) - 1, t)


def combine(kind: str, b: Emitter, acc: SSAValue, v: SSAValue) -> SSAValue:
    """acc (kind) v; on i1 max is `or` and min is `and` (a signed max would take true as -1)."""
    if kind != "sum" and acc.type == IntegerType(1):
        return b.emit(arith.OrIOp(acc, v) if kind == "max" else arith.AndIOp(acc, v))
    return {"sum": b.add, "prod": b.mul, "max": b.max, "min": b.min}[kind](acc, v)


def as_element(b: Emitter, n: Index, t: Attribute) -> SSAValue:
    """An index count as a value of element type t (a constant when static)."""
    c = b.kb.const_value(n)
    if c is not None:
        return b.const(c, t)
    return b.cast(b.index(n), t)


def is_nan(b: Emitter, v: SSAValue) -> SSAValue:
    return b.emit(arith.CmpfOp(v, v, "uno"))


def _elt(buf: SSAValue) -> Attribute:
    assert isinstance(buf.type, MemRefType)
    return buf.type.get_element_type()


def _float(op: Operation, name: str) -> float:
    return op.properties[name].value.data  # type: ignore[union-attr]


def _int(op: Operation, name: str) -> int:
    return op.properties[name].value.data  # type: ignore[union-attr]


class SameShapeAsInput(Legalization):
    """The result has the input's shape: each `?` of the result is the input's dim (the other
    operands, per-channel or normalized-shape parameters, never widen it)."""

    def result_dims(self, op: Operation, g: GraphDims) -> list[Index]:
        x = op.operands[0]
        res = op.results[0].type
        assert isinstance(res, TensorType)
        return [g.dim(x, i) for i, d in enumerate(res.get_shape()) if d < 0]


def reduced_result_dims(op: Operation, g: GraphDims, axes: Sequence[int], keep: bool) -> list[Index]:
    """Result `?` dims of a reduction: with keepdims result dim i is input dim i, else the
    result dims are the kept input dims in order."""
    x = op.operands[0]
    assert isinstance(x.type, TensorType)
    rank = x.type.get_num_dims()
    source = list(range(rank)) if keep else [i for i in range(rank) if i not in axes]
    res = op.results[0].type
    assert isinstance(res, TensorType)
    return [g.dim(x, source[k]) for k, d in enumerate(res.get_shape()) if d < 0]


# --------------------------------------------------------------------------------------------
# reduce_sum / reduce_mean / reduce_max / reduce_min

_REDUCE_KIND = {
    graph.ReduceSumOp: "sum",
    graph.ReduceMeanOp: "sum",
    graph.ReduceMaxOp: "max",
    graph.ReduceMinOp: "min",
    graph.ReduceProdOp: "prod",
}


@legalizes(*_REDUCE_KIND)
class LegalizeReduce(Legalization):
    """y[kept] = fold(x) over `axes`; reduce_mean then divides by the element count."""

    def result_dims(self, op: Operation, g: GraphDims) -> list[Index]:
        axes = list(op.axes.get_values())  # type: ignore[attr-defined]
        return reduced_result_dims(op, g, axes, bool(op.keepdims.value.data))  # type: ignore[attr-defined]

    def build(self, op: Operation, kb: KernelBuilder) -> None:
        x, y = kb.inputs[0], kb.outputs[0]
        name = op.name.split(".", 1)[1]
        kind = _REDUCE_KIND[type(op)]
        axes = list(op.axes.get_values())  # type: ignore[attr-defined]
        keep = bool(op.keepdims.value.data)  # type: ignore[attr-defined]
        dims = kb.dims(x)
        t = _elt(y)
        if kind in ("sum", "prod") and t == IntegerType(1):
            what = "prod" if kind == "prod" else "sum / mean"
            raise NotImplementedError(f"{what} of an i1 (bool) tensor: cast it first")
        if not axes:  # identity (ONNX noop_with_empty_axes)
            with kb.nest(name, dims) as (b, ivs):
                b.store(b.load(x, ivs), y, ivs)
            return

        def out(a: Access) -> list[Index]:
            return a.kept if keep else a.dropped

        def init(e: Emitter, a: Access) -> None:
            e.store(identity(kind, t, e), y, out(a))

        if any(kb.const_value(dims[ax]) == 0 for ax in axes):
            # An empty reduction: the block (and so its init) never runs; y is the identity
            # (reduce_mean: 0 / 0 = NaN below, as NumPy).
            with kb.nest(f"{name}_empty", kb.dims(y)) as (b, ivs):
                b.store(identity(kind, t, b), y, ivs)
        else:
            if any(kb.const_value(dims[ax]) is None for ax in axes):
                # a dynamic reduced extent may be 0 at run time (NonZero's count, an empty
                # slice): then the block's init never runs, so y starts as the identity
                with kb.nest(f"{name}_empty", kb.dims(y)) as (b, ivs):
                    b.store(identity(kind, t, b), y, ivs)
            with reduce_nest(kb, name, dims, axes, init) as (b, a):
                acc = b.load(y, out(a))
                b.store(combine(kind, b, acc, b.load(x, a.full)), y, out(a))

        if isinstance(op, graph.ReduceMeanOp):
            count: Index = 1
            for ax in axes:
                count = kb.top.imul(count, dims[ax])
            n = as_element(kb.top, count, t)
            with kb.nest(f"{name}_div", kb.dims(y)) as (b, ivs):
                b.store(b.div(b.load(y, ivs), n), y, ivs)


# --------------------------------------------------------------------------------------------
# argmax


@legalizes(graph.ArgMaxOp, graph.ArgMinOp)
class LegalizeArgMax(Legalization):
    """y = index of the max (argmin: min) along `axis` (first one; last with select_last_index).
    NaN counts as the maximum (minimum) as in NumPy: the first NaN wins, or the last one with
    select_last_index."""

    def result_dims(self, op: Operation, g: GraphDims) -> list[Index]:
        assert isinstance(op, graph.ArgMaxOp | graph.ArgMinOp)
        return reduced_result_dims(op, g, [op.axis.value.data], bool(op.keepdims.value.data))

    def build(self, op: Operation, kb: KernelBuilder) -> None:
        assert isinstance(op, graph.ArgMaxOp | graph.ArgMinOp)
        x, y = kb.inputs[0], kb.outputs[0]
        axis = op.axis.value.data
        keep = bool(op.keepdims.value.data)
        last = bool(op.select_last_index.value.data)
        dims = kb.dims(x)
        t = _elt(x)
        kind = "min" if isinstance(op, graph.ArgMinOp) else "max"
        strict, loose = ("lt", "le") if kind == "min" else ("gt", "ge")
        scratch = Scratch(kb)
        best = scratch.new(t, [1 if i == axis else d for i, d in enumerate(dims)])

        def out(a: Access) -> list[Index]:
            return a.kept if keep else a.dropped

        def init(e: Emitter, a: Access) -> None:
            e.store(identity(kind, t, e), best, a.kept)
            e.store(e.const(0, i64), y, out(a))

        with reduce_nest(kb, f"arg{kind}", dims, [axis], init) as (b, a):
            v = b.load(x, a.full)
            cur = b.load(best, a.kept)
            if last:
                better = b.cmp(loose, v, cur)
                if is_float(t):
                    better = b.emit(arith.OrIOp(better, is_nan(b, v)))
            else:
                better = b.cmp(strict, v, cur)
                if is_float(t):
                    cur_is_number = b.emit(arith.XOrIOp(is_nan(b, cur), b.const(1, IntegerType(1))))
                    first_nan = b.emit(arith.AndIOp(is_nan(b, v), cur_is_number))
                    better = b.emit(arith.OrIOp(better, first_nan))
            b.store(b.select(better, v, cur), best, a.kept)
            k = b.cast(a.reduce_vars[0], i64)
            b.store(b.select(better, k, b.load(y, out(a))), y, out(a))
        scratch.free()


# --------------------------------------------------------------------------------------------
# softmax / log_softmax


@legalizes(graph.SoftmaxOp, graph.LogSoftmaxOp)
class LegalizeSoftmax(SameShapeAsInput):
    """Stages along `axis`: running max, exp(x - max) and its sum, normalize (softmax: a multiply by
    1 / sum, one division a row, as onnxruntime's kernel does; a division per element kept ViT's
    6 x 197 x 197 softmax at 0.23 ms a call, 0.20 with the reciprocal)."""

    def build(self, op: Operation, kb: KernelBuilder) -> None:
        x, y = kb.inputs[0], kb.outputs[0]
        name = op.name.split(".", 1)[1]
        log = isinstance(op, graph.LogSoftmaxOp)
        axis = _int(op, "axis")
        dims = kb.dims(x)
        t = _elt(x)
        scratch = Scratch(kb)
        row = [1 if i == axis else d for i, d in enumerate(dims)]
        m = scratch.new(t, row)
        s = scratch.new(t, row)

        with reduce_nest(kb, f"{name}_max", dims, [axis],
                         lambda e, a: e.store(identity("max", t, e), m, a.kept)) as (b, a):
            b.store(b.max(b.load(m, a.kept), b.load(x, a.full)), m, a.kept)

        if log:  # s = sum exp(x - m), nothing stored to y yet
            with reduce_nest(kb, f"{name}_sum", dims, [axis],
                             lambda e, a: e.store(e.const(0.0, t), s, a.kept)) as (b, a):
                ex = b.exp(b.sub(b.load(x, a.full), b.load(m, a.kept)))
                b.store(b.add(b.load(s, a.kept), ex), s, a.kept)
        else:  # y = exp(x - m) ; s = sum y
            with kb.nest(f"{name}_exp", dims) as (b, ivs):
                r = [0 if i == axis else v for i, v in enumerate(ivs)]
                b.store(b.exp(b.sub(b.load(x, ivs), b.load(m, r))), y, ivs)
            with reduce_nest(kb, f"{name}_sum", dims, [axis],
                             lambda e, a: e.store(e.const(0.0, t), s, a.kept)) as (b, a):
                b.store(b.add(b.load(s, a.kept), b.load(y, a.full)), s, a.kept)

        if not log:  # one division a row: s = 1 / sum, then y * s (as onnxruntime normalizes)
            with kb.nest(f"{name}_rcp", row) as (b, ivs):
                b.store(b.div(b.const(1.0, t), b.load(s, ivs)), s, ivs)
        with kb.nest(f"{name}_norm", dims) as (b, ivs):
            r = [0 if i == axis else v for i, v in enumerate(ivs)]
            if log:
                shifted = b.sub(b.load(x, ivs), b.load(m, r))
                b.store(b.sub(shifted, b.log(b.load(s, r))), y, ivs)
            else:
                b.store(b.mul(b.load(y, ivs), b.load(s, r)), y, ivs)
        scratch.free()


# --------------------------------------------------------------------------------------------
# layer_norm


@legalizes(graph.LayerNormOp)
class LegalizeLayerNorm(SameShapeAsInput):
    """(x - mean) / sqrt(var + eps) * scale (+ bias) over dims [axis, rank); two-pass variance.

    Statistics accumulate in float64 for float32 (and narrower) inputs, and the normalization
    (x - mean) * rstd is computed in float64 before rounding, as onnxruntime's CPU kernel does: when
    a row is (nearly) constant, var << eps and rstd ~ 1/sqrt(eps) = 316 amplifies any rounding of
    the mean; a float32 mean of 32 equal values is a few ulps off and the output missed `bias` by
    2e-4 (fuzzer, seed 2 graph 388)."""

    def build(self, op: Operation, kb: KernelBuilder) -> None:
        assert isinstance(op, graph.LayerNormOp)
        x, scale = kb.inputs[0], kb.inputs[1]
        bias = kb.inputs[2] if len(kb.inputs) > 2 else None
        y = kb.outputs[0]
        axis = op.axis.value.data
        eps = op.epsilon.value.data
        dims = kb.dims(x)
        rank = len(dims)
        t = _elt(x)
        assert isinstance(t, AnyFloat)
        acc: Attribute = f64 if t.bitwidth < 64 else t
        wide = acc != t
        norm_axes = list(range(axis, rank))
        scratch = Scratch(kb)
        row = [1 if i >= axis else d for i, d in enumerate(dims)]
        mean = scratch.new(acc, row)
        var = scratch.new(acc, row)
        count: Index = 1
        for a in norm_axes:
            count = kb.top.imul(count, dims[a])
        n = as_element(kb.top, count, acc)
        params = [scale] + ([bias] if bias is not None else [])
        assert isinstance(x.type, MemRefType)
        plan = BroadcastPlan(kb, params, y, others=[x.type.get_shape()])

        def load_x(b: Emitter, idx: Sequence[Index]) -> SSAValue:
            v = b.load(x, idx)
            return b.cast(v, acc) if wide else v

        with reduce_nest(kb, "layer_norm_mean", dims, norm_axes,
                         lambda e, a: e.store(e.const(0.0, acc), mean, a.kept)) as (b, a):
            b.store(b.add(b.load(mean, a.kept), load_x(b, a.full)), mean, a.kept)

        outer = dims[:axis]
        with kb.nest("layer_norm_mean_div", outer) as (b, ivs):
            idx = [*ivs, *[0] * (rank - axis)]
            b.store(b.div(b.load(mean, idx), n), mean, idx)

        with reduce_nest(kb, "layer_norm_var", dims, norm_axes,
                         lambda e, a: e.store(e.const(0.0, acc), var, a.kept)) as (b, a):
            d = b.sub(load_x(b, a.full), b.load(mean, a.kept))
            b.store(b.add(b.load(var, a.kept), b.mul(d, d)), var, a.kept)

        with kb.nest("layer_norm_rstd", outer) as (b, ivs):
            idx = [*ivs, *[0] * (rank - axis)]
            v = b.add(b.div(b.load(var, idx), n), b.const(eps, acc))
            b.store(b.div(b.const(1.0, acc), b.sqrt(v)), var, idx)

        with kb.nest("layer_norm_norm", dims) as (b, vs):
            idx = [*vs[:axis], *[0] * (rank - axis)]
            r = b.mul(b.sub(load_x(b, vs), b.load(mean, idx)), b.load(var, idx))
            if wide:
                r = b.cast(r, t)
            r = b.mul(r, b.load(scale, plan.indices(b, 0, vs)))
            if bias is not None:
                r = b.add(r, b.load(bias, plan.indices(b, 1, vs)))
            b.store(r, y, vs)
        scratch.free()


# --------------------------------------------------------------------------------------------
# batch_norm


@legalizes(graph.BatchNormOp)
class LegalizeBatchNorm(SameShapeAsInput):
    """Inference: y = (x - mean[c]) / sqrt(var[c] + eps) * scale[c] + bias[c], c = dim 1."""

    def build(self, op: Operation, kb: KernelBuilder) -> None:
        assert isinstance(op, graph.BatchNormOp)
        x, scale, bias, mean, var = kb.inputs
        y = kb.outputs[0]
        eps = op.epsilon.value.data
        t = _elt(x)
        with kb.nest("batch_norm", kb.dims(y)) as (b, ivs):
            c = [ivs[1]]
            denom = b.sqrt(b.add(b.load(var, c), b.const(eps, t)))
            r = b.div(b.sub(b.load(x, ivs), b.load(mean, c)), denom)
            b.store(b.add(b.mul(r, b.load(scale, c)), b.load(bias, c)), y, ivs)


# --------------------------------------------------------------------------------------------
# lrn


@legalizes(graph.LRNOp)
class LegalizeLRN(SameShapeAsInput):
    """ONNX LRN: y = x / (bias + alpha / size * sum_{window} x^2) ^ beta, the window being
    channels [c - (size-1)//2, c + ceil((size-1)/2)] clipped to [0, C). The squares go into a
    zero-padded copy (C + size - 1 channels) so the window sum reads at the affine c + k."""

    def build(self, op: Operation, kb: KernelBuilder) -> None:
        assert isinstance(op, graph.LRNOp)
        x, y = kb.inputs[0], kb.outputs[0]
        size = op.size.value.data
        alpha, beta, bias = op.alpha.value.data, op.beta.value.data, op.bias.value.data
        lo = (size - 1) // 2
        dims = kb.dims(x)
        rank = len(dims)
        t = _elt(x)
        scratch = Scratch(kb)
        padded_dims = list(dims)
        padded_dims[1] = kb.top.iadd(dims[1], size - 1)
        sq = scratch.new(t, padded_dims)

        with kb.nest("lrn_pad", padded_dims) as (b, ivs):
            b.store(b.const(0.0, t), sq, ivs)

        with kb.nest("lrn_square", dims) as (b, ivs):
            v = b.load(x, ivs)
            b.store(b.mul(v, v), sq, [ivs[0], b.iadd(ivs[1], lo), *ivs[2:]])

        extents = [*dims, size]
        kinds = ["spatial"] * rank + ["reduce"]
        with kb.nest("lrn_sum", extents, kinds,
                     init=lambda e, vs: e.store(e.const(0.0, t), y, vs[:rank])) as (b, vs):
            ivs, k = vs[:rank], vs[rank]
            w = b.load(sq, [ivs[0], b.iadd(ivs[1], k), *ivs[2:]])
            b.store(b.add(b.load(y, ivs), w), y, ivs)

        with kb.nest("lrn", dims) as (b, ivs):
            base = b.add(b.const(bias, t), b.mul(b.const(alpha / size, t), b.load(y, ivs)))
            b.store(b.div(b.load(x, ivs), b.emit(math.PowFOp(base, b.const(beta, t)))), y, ivs)
        scratch.free()
