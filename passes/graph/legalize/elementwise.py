"""Legalizations of the elementwise graph ops: binary (NumPy broadcasting), compare, where and
cast (unary ops: passes/graph/legalize/unary.py, from the op's element function). Each becomes
one all-spatial loop nest over the result with one block:

    %z = graph.add %x, %y : (tensor<?x3xf32>, tensor<3xf32>) -> tensor<?x3xf32>
  becomes
    func.func private @add_0(%x: memref<?x3xf32>, %y: memref<3xf32>, %z: memref<?x3xf32>)
        attributes {loop.kernel} {
      %n = mem.dim %z, 0 : memref<?x3xf32>
      loop.for %i = %c0 to %n step %c1 {
        loop.for %j = %c0 to %c3 step %c1 {
          loop.block "add" (%vi = %i, %vj = %j) [spatial, spatial] {
            %a = mem.load %x[%vi, %vj] ; %b = mem.load %y[%vj]
            mem.store (%a + %b), %z[%vi, %vj]

Broadcasting: operand dims align to the right of the result's. An operand dim that is a static 1
is read at index 0; a static dim > 1 (or 0) equals the result dim, so it is read at the iteration
variable. A dynamic operand dim may still be 1 at run time while the result dim is larger. When
no other operand can supply that result dim (each is absent there or a static 1), the operand's
dim *is* the result dim and the iteration variable is used. Otherwise the kernel computes a
selector once at entry, `%s = select(dim == 1, 0, 1)`, and reads at `%vi * %s`. That index is
the product of an iteration variable and a symbol, so it is non-affine. We accept that for this
rare case (`?` against `?` or against a static size) rather than emit one kernel version per
broadcast pattern; the affine analysis then treats that access as unknown. Where the symbolic
dims prove more (graph-legalize's `KernelBuilder.dim_facts`: this operand dim has the result
dim's expression, or is the constant 1, e.g. a causal mask `batch x 1 x seq x past+seq` against
scores `batch x 4 x seq x past+seq` in a fused function whose arguments graph-fuse labelled),
the dim is read at the iteration variable (or at 0) and no selector is built.
"""

from __future__ import annotations

import math as pymath
from collections.abc import Callable, Sequence

from xdsl.dialects import arith, math
from xdsl.dialects.builtin import AnyFloat, Float64Type, IntegerType, MemRefType, TensorType, f64, i1
from xdsl.ir import Attribute, Operation, SSAValue

from minimlir.dialects import graph
from minimlir.dialects.elementfn import (  # noqa: F401  (the unary element functions live there now; re-exported)
    clamp,
    expm1,
    fconst,
    gelu,
    sigmoid,
    sign,
    softplus,
)
from minimlir.dialects.elementfn import unit_interval as _unit_interval  # noqa: F401  (re-exported)
from minimlir.passes.loop._kernel_builder import Emitter, Index, KernelBuilder, element_type, is_float, is_unsigned
from minimlir.passes.graph.legalize._common import Legalization, legalizes

# --------------------------------------------------------------------------------------------
# Broadcast access


class BroadcastPlan:
    """How to index each operand buffer from the result's iteration variables.

    Built before the loop nest (selectors are kernel-entry symbols); `indices(k, ivs)` is used
    inside the block.
    """

    def __init__(
        self,
        kb: KernelBuilder,
        operands: Sequence[SSAValue],
        result: SSAValue,
        others: Sequence[Sequence[int]] = (),
    ):
        """`others`: shapes of further values that take part in the broadcast but are read
        elsewhere (e.g. the data tensor of layer_norm, which scale broadcasts *to*)."""
        self.kb = kb
        out_t = result.type
        assert isinstance(out_t, MemRefType)
        out_shape = out_t.get_shape()
        rank = len(out_shape)
        shapes = []
        for buf in operands:
            assert isinstance(buf.type, MemRefType)
            shapes.append(buf.type.get_shape())
        facts = self._facts(kb, operands, result)
        # plan[k][j]: ("zero",) | ("iv", i) | ("sel", i, selector)
        self.plan: list[list[tuple]] = []
        for k, (buf, shape) in enumerate(zip(operands, shapes)):
            off = rank - len(shape)
            entries: list[tuple] = []
            for j, d in enumerate(shape):
                i = j + off
                fact = facts[k][j] if facts[k] is not None and j < len(facts[k]) else ""
                if d == 1 or (d < 0 and out_shape[i] == 1) or (d < 0 and fact == "one"):
                    entries.append(("zero",))
                elif d >= 0 or fact == "eq" or self._sole_provider([*shapes, *others], k, i, rank):
                    entries.append(("iv", i))
                else:
                    entries.append(("sel", i, self._selector(buf, j)))
            self.plan.append(entries)

    @staticmethod
    def _facts(kb: KernelBuilder, operands: Sequence[SSAValue], result: SSAValue) -> list:
        """Per operand, what graph-legalize proved about its dims (`KernelBuilder.dim_facts`, see
        passes/graph/_symbolic_dims.broadcast_facts): "eq" to the result dim, "one", or ""; None
        for an operand that is not one of the op's own inputs against its first result."""
        facts = getattr(kb, "dim_facts", ())
        if not facts or not kb.outputs or result is not kb.outputs[0]:
            return [None] * len(operands)
        out = []
        for buf in operands:
            k = next((n for n, b in enumerate(kb.inputs) if b is buf), None)
            row = facts[k] if k is not None and k < len(facts) else None
            shape = buf.type.get_shape()  # type: ignore[attr-defined]
            out.append(row if row is not None and len(row) == len(shape) else None)
        return out

    @staticmethod
    def _sole_provider(shapes: Sequence[Sequence[int]], k: int, i: int, rank: int) -> bool:
        """No operand other than k can make result dim i larger than operand k's dim."""
        for m, shape in enumerate(shapes):
            if m == k:
                continue
            j = i - (rank - len(shape))
            if j >= 0 and shape[j] != 1:
                return False
        return True

    def _selector(self, buf: SSAValue, j: int) -> SSAValue:
        kb, top = self.kb, self.kb.top
        dim = top.index(kb.dim(buf, j))
        is_one = top.emit(arith.CmpiOp(dim, kb.iconst(1), "eq"))
        return top.emit(arith.SelectOp(is_one, kb.iconst(0), kb.iconst(1)))

    def indices(self, b: Emitter, k: int, ivs: Sequence[SSAValue]) -> list[Index]:
        out: list[Index] = []
        for entry in self.plan[k]:
            if entry[0] == "zero":
                out.append(0)
            elif entry[0] == "iv":
                out.append(ivs[entry[1]])
            else:
                out.append(b.emit(arith.MuliOp(ivs[entry[1]], entry[2])))
        return out


def build_elementwise(
    kb: KernelBuilder,
    name: str,
    fn: Callable[[Emitter, list[SSAValue]], SSAValue],
) -> None:
    """One block over the result: load every input (broadcast), store fn(values)."""
    out = kb.outputs[0]
    plan = BroadcastPlan(kb, kb.inputs, out)
    with kb.nest(name, kb.dims(out)) as (b, ivs):
        vals = [b.load(buf, plan.indices(b, k, ivs)) for k, buf in enumerate(kb.inputs)]
        b.store(fn(b, vals), out, ivs)


# --------------------------------------------------------------------------------------------
# Element helpers


def _is_bool(v: SSAValue) -> bool:
    return element_type(v.type) == i1


def fmod(b: Emitter, x: SSAValue, y: SSAValue) -> SSAValue:
    """C fmod for floats: x - trunc(x / y) * y. xDSL 0.74 has no arith.remf, so it is computed
    in f64 for f16/f32 operands, which is exact while |x / y| < 2**24 (the product trunc(q) * y
    then fits an f64 mantissa); for f64 operands it is exact while |x / y| < 2**26 or so.
    IEEE edge cases as C: fmod(finite x, ±inf) = x (the formula gives 0 * inf = NaN), and the
    result has the sign of x (also a zero: fmod(-4, 2) = -0). NaN, x = ±inf or y = 0 give NaN."""
    t = element_type(x.type)
    wide = not isinstance(t, Float64Type)
    if wide:
        x, y = b.cast(x, f64), b.cast(y, f64)
    q = b.emit(math.TruncOp(b.div(x, y)))
    r = b.sub(x, b.mul(q, y))
    inf = fconst(b, pymath.inf, x)
    y_inf = b.cmp("eq", b.emit(math.AbsFOp(y)), inf)
    x_finite = b.cmp("lt", b.emit(math.AbsFOp(x)), inf)  # ordered: false for NaN
    r = b.select(b.emit(arith.AndIOp(y_inf, x_finite)), x, r)
    r = b.emit(math.CopySignOp(r, x))
    return b.cast(r, t) if wide else r


def mod(b: Emitter, x: SSAValue, y: SSAValue, c_fmod: bool) -> SSAValue:
    """ONNX Mod: fmod=1 -> C fmod (sign of the dividend); fmod=0 -> sign of the divisor, as
    np.mod: a nonzero remainder whose sign differs from y's gets y added (np.mod(-3, inf) = inf),
    a zero remainder takes y's sign (np.mod(0, -2) = -0)."""
    if is_float(x.type):
        r = fmod(b, x, y)
    else:
        r = b.emit((arith.RemUIOp if is_unsigned(x.type) else arith.RemSIOp)(x, y))
    if c_fmod:
        return r
    zero = b.const(0, element_type(x.type)) if not is_float(x.type) else fconst(b, 0.0, x)
    nonzero = b.cmp("ne", r, zero)
    signs_differ = b.emit(arith.XOrIOp(b.cmp("lt", r, zero), b.cmp("lt", y, zero)))
    fix = b.emit(arith.AndIOp(nonzero, signs_differ))
    out = b.select(fix, b.add(r, y), r)
    if is_float(x.type):
        out = b.select(b.cmp("eq", r, zero), b.emit(math.CopySignOp(r, y)), out)
    return out


def power(b: Emitter, x: SSAValue, y: SSAValue) -> SSAValue:
    """Float pow is math.powf; integer pow goes through f64 (exact while |result| < 2**53)."""
    if is_float(x.type):
        return b.emit(math.PowFOp(x, y))
    t = element_type(x.type)
    r = b.emit(math.PowFOp(b.cast(x, f64), b.cast(y, f64)))
    return b.cast(r, t)


def compare(b: Emitter, pred: str, x: SSAValue, y: SSAValue) -> SSAValue:
    """Ordered float compares, signed integer compares, unsigned for i1 (false < true)."""
    if _is_bool(x) and pred not in ("eq", "ne"):
        return b.emit(arith.CmpiOp(x, y, "u" + pred))
    return b.cmp(pred, x, y)


# --------------------------------------------------------------------------------------------
# Binary ops


def _prop_float(op: Operation, name: str) -> float:
    return op.properties[name].value.data  # type: ignore[union-attr]


_BINARY: dict[type[Operation], Callable[[Emitter, SSAValue, SSAValue, Operation], SSAValue]] = {
    graph.AddOp: lambda b, x, y, op: b.add(x, y),
    graph.SubOp: lambda b, x, y, op: b.sub(x, y),
    graph.MulOp: lambda b, x, y, op: b.mul(x, y),
    graph.DivOp: lambda b, x, y, op: b.div(x, y),
    graph.PowOp: lambda b, x, y, op: power(b, x, y),
    graph.MaxOp: lambda b, x, y, op: (b.emit(arith.OrIOp(x, y)) if _is_bool(x) else b.max(x, y)),
    graph.MinOp: lambda b, x, y, op: (b.emit(arith.AndIOp(x, y)) if _is_bool(x) else b.min(x, y)),
    graph.ModOp: lambda b, x, y, op: mod(b, x, y, bool(op.fmod.value.data)),
    graph.AndOp: lambda b, x, y, op: b.emit(arith.AndIOp(x, y)),
    graph.OrOp: lambda b, x, y, op: b.emit(arith.OrIOp(x, y)),
    graph.XorOp: lambda b, x, y, op: b.emit(arith.XOrIOp(x, y)),
    graph.EqOp: lambda b, x, y, op: compare(b, "eq", x, y),
    graph.LtOp: lambda b, x, y, op: compare(b, "lt", x, y),
    graph.LeOp: lambda b, x, y, op: compare(b, "le", x, y),
    graph.GtOp: lambda b, x, y, op: compare(b, "gt", x, y),
    graph.GeOp: lambda b, x, y, op: compare(b, "ge", x, y),
}


_ARITHMETIC = (graph.AddOp, graph.SubOp, graph.MulOp, graph.DivOp, graph.PowOp, graph.ModOp)


@legalizes(*_BINARY)
class LegalizeBinary(Legalization):
    """z[i] = f(x[bcast(i)], y[bcast(i)])."""

    def build(self, op: Operation, kb: KernelBuilder) -> None:
        elt = op.operands[0].type.get_element_type()  # type: ignore[attr-defined]
        if isinstance(op, _ARITHMETIC) and elt == i1:
            raise NotImplementedError(
                "arithmetic on i1 (bool) tensors is not defined; use graph.and / graph.or / graph.xor"
            )
        fn = _BINARY[type(op)]
        build_elementwise(kb, op.name.split(".", 1)[1], lambda b, v: fn(b, v[0], v[1], op))


# --------------------------------------------------------------------------------------------
# where, cast


@legalizes(graph.WhereOp)
class LegalizeWhere(Legalization):
    """z[i] = cond[bcast(i)] ? x[bcast(i)] : y[bcast(i)] (3-way broadcast)."""

    def build(self, op: Operation, kb: KernelBuilder) -> None:
        build_elementwise(kb, "where", lambda b, v: b.select(v[0], v[1], v[2]))


@legalizes(graph.CastOp)
class LegalizeCast(Legalization):
    """ONNX Cast: float -> int truncates toward zero, x -> bool is x != 0, bool -> x is 0 / 1."""

    def build(self, op: Operation, kb: KernelBuilder) -> None:
        assert isinstance(op.results[0].type, TensorType)
        to: Attribute = op.results[0].type.get_element_type()
        assert isinstance(to, AnyFloat | IntegerType)
        build_elementwise(kb, "cast", lambda b, v: b.cast(v[0], to))
