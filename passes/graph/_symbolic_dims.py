"""Symbolic dims of a graph-level function: every dynamic dim as an expression over symbols.

The symbols are the arguments' dynamic dims, named by `graph.dim_names` (an ONNX dim_param such as
"batch", or a fresh `<arg>.dim<i>` where there is no name). Shape inference runs the ops' own shape
functions (`Legalization.result_dims`, the ones graph-legalize emits as arith) on
`minimlir.dialects._shapes` expressions instead of SSA values, and evaluates `index` arithmetic
(`graph.dim`, `arith.addi/muli/floordivsi/…/maxsi`, the `dims` operands of graph.reshape,
graph.broadcast_to and graph.call_kernel) the same way. A value read from tensor data (a
graph.extract, a shape computed at run time) becomes an opaque symbol `%N`: it cannot be computed
from the arguments' dims.

While inferring, the checks that inputs must pass are collected (`DimCheck`): two dynamic dims that
broadcast against each other must be equal or 1 (`bcast`), and a reshape must keep the element
count (`eq`), where the expressions do not already prove it. `annotate` writes the results into the
IR (what a reader sees, and what `mini-opt` round-trips):

    %y = graph.conv2d %x, %w … {graph.dims = ["batch", "(h-3)/2+1"]} : (tensor<?x3x?x8xf32>, …) -> …
    func.func @main(…) attributes {graph.dim_checks = [{kind = "bcast", lhs = "x.dim1", rhs = "y.dim1",
                                                        op = "graph.add", loc = "Add_0"}]}
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from xdsl.dialects import arith, func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    IndexType,
    IntegerAttr,
    MemRefType,
    StringAttr,
    TensorType,
)
from xdsl.ir import Attribute, Block, BlockArgument, Operation, SSAValue
from xdsl.rewriter import InsertPoint

from minimlir.dialects import _shapes as S
from minimlir.dialects import graph
from minimlir.passes.graph.legalize._common import GraphDims

DIMS_ATTR = "graph.dims"
CHECKS_ATTR = "graph.dim_checks"
OPAQUE = "%"
"""Prefix of opaque symbols (values read from data): never a name in `graph.dim_names`."""


def is_opaque(e: S.Expr) -> bool:
    return any(s.startswith(OPAQUE) for s in e.symbols())


@dataclass(frozen=True)
class DimCheck:
    kind: str  # "bcast": lhs, rhs equal or one is 1; "eq": lhs == rhs
    lhs: S.Expr
    rhs: S.Expr
    op: str  # the op that needs it, e.g. "graph.add"
    loc: str  # its location name (the ONNX node), or ""

    def attr(self) -> DictionaryAttr:
        return DictionaryAttr({"kind": StringAttr(self.kind), "lhs": StringAttr(str(self.lhs)),
                               "rhs": StringAttr(str(self.rhs)), "op": StringAttr(self.op),
                               "loc": StringAttr(self.loc)})

    def as_json(self) -> dict[str, str]:
        return {"kind": self.kind, "lhs": str(self.lhs), "rhs": str(self.rhs), "op": self.op, "loc": self.loc}


def _loc_name(op: Operation) -> str:
    loc = getattr(op, "location", None)
    # loc("Add_1"("m.onnx":2:0)) -> Add_1 (a named location: the ONNX node); file:line:col: ""
    m = re.match(r'loc\("((?:[^"\\]|\\.)*)"\(', str(loc) if loc is not None else "")
    return m.group(1) if m else ""


def arg_dim_names(f: func.FuncOp) -> list[list[str]]:
    """Per argument, a name per dim: its `graph.dim_names` entry, or `<arg>.dim<i>` for an unnamed
    dynamic dim (static dims: "")."""
    out: list[list[str]] = []
    attrs = f.arg_attrs.data if f.arg_attrs is not None else ()
    for k, a in enumerate(f.body.block.args if f.body.blocks else ()):
        t = a.type
        if not isinstance(t, TensorType | MemRefType):
            out.append([])
            continue
        d = attrs[k].data if k < len(attrs) else {}
        names_attr = d.get("graph.dim_names")
        names = [s.data for s in names_attr.data] if isinstance(names_attr, ArrayAttr) else []
        gname = d.get("graph.name")
        base = gname.data if isinstance(gname, StringAttr) else (a.name_hint or f"arg{k}")
        row = []
        for i, s in enumerate(t.get_shape()):
            n = names[i] if i < len(names) else ""
            row.append("" if s >= 0 else (n or f"{base}.dim{i}"))
        out.append(row)
    return out


class FunctionDims:
    """The expressions of every dynamic dim and `index` value at the top level of one function."""

    def __init__(self, f: func.FuncOp):
        self.f = f
        self.block = f.body.block
        self.dims: dict[tuple[SSAValue, int], S.Expr] = {}
        self.values: dict[SSAValue, S.Expr] = {}
        self.checks: list[DimCheck] = []
        self._check_keys: set[tuple] = set()
        self.symbol_source: dict[str, tuple[BlockArgument, int]] = {}
        self._opaque = 0
        for arg, names in zip(self.block.args, arg_dim_names(f)):
            for i, n in enumerate(names):
                if n:
                    self.dims[(arg, i)] = S.sym(n)
                    self.symbol_source.setdefault(n, (arg, i))
        for op in self.block.ops:
            self._infer(op)

    def fresh(self) -> S.Expr:
        self._opaque += 1
        return S.sym(f"{OPAQUE}{self._opaque}")

    def check(self, kind: str, a: S.Expr, b: S.Expr, op: Operation) -> None:
        if a is b:
            return
        if kind == "bcast" and (a.value == 1 or b.value == 1):
            return
        if is_opaque(a) or is_opaque(b):
            return
        if a.value is not None and b.value is not None:
            return  # static: the verifier's business
        key = (kind, a, b) if str(a) <= str(b) or kind != "bcast" else (kind, b, a)
        if key in self._check_keys:
            return
        self._check_keys.add(key)
        self.checks.append(DimCheck(kind, key[1], key[2], op.name, _loc_name(op)))

    # -- queries ---------------------------------------------------------------------------

    def dim(self, v: SSAValue, i: int) -> S.Expr:
        t = v.type
        assert isinstance(t, TensorType | MemRefType)
        d = t.get_shape()[i]
        if d >= 0:
            return S.const(d)
        got = self.dims.get((v, i))
        if got is None:
            got = self.fresh()
            self.dims[(v, i)] = got
        return got

    def shape(self, v: SSAValue) -> list[S.Expr]:
        return [self.dim(v, i) for i in range(v.type.get_num_dims())]  # type: ignore[attr-defined]

    def expr(self, v: SSAValue) -> S.Expr:
        """The expression of an `index` value."""
        got = self.values.get(v)
        if got is None:
            got = self._index(v)
            self.values[v] = got
        return got

    def _index(self, v: SSAValue) -> S.Expr:
        op = v.owner
        if not isinstance(op, Operation) or op.parent is not self.block:
            return self.fresh()
        if isinstance(op, graph.DimOp):
            return self.dim(op.input, op.index.value.data)
        if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
            return S.const(op.value.value.data)
        # only ops whose meaning is the expression's for every sign (shape arithmetic may pass
        # through negative values, e.g. slice bounds): divsi/remsi truncate, the *ui ops are
        # unsigned; those stay opaque (computed as written)
        binary = {
            arith.AddiOp: S.add, arith.MuliOp: S.mul, arith.SubiOp: lambda a, b: a - b,
            arith.FloorDivSIOp: S.floordiv, arith.CeilDivSIOp: S.ceildiv,
            arith.MaxSIOp: S.maximum, arith.MinSIOp: S.minimum,
        }.get(type(op))
        if binary is not None and isinstance(v.type, IndexType):
            return binary(self.expr(op.operands[0]), self.expr(op.operands[1]))
        return self.fresh()

    # -- inference --------------------------------------------------------------------------

    def _set(self, results, exprs: list[S.Expr]) -> None:
        it = iter(exprs)
        for r in results:
            if isinstance(r.type, TensorType | MemRefType):
                for i, d in enumerate(r.type.get_shape()):
                    if d < 0:
                        self.dims[(r, i)] = next(it, None) or self.fresh()

    def _infer(self, op: Operation) -> None:
        dynamic = any(isinstance(r.type, TensorType) and any(d < 0 for d in r.type.get_shape())
                      for r in op.results)
        if isinstance(op, graph.CallKernelOp | graph.BroadcastToOp):
            self._set(op.results, [self.expr(d) for d in op.dims])
            if isinstance(op, graph.BroadcastToOp):
                out = self.shape(op.result)
                shp = self.shape(op.input)
                for a, b in zip(reversed(shp), reversed(out)):
                    self.check("bcast", a, b, op)
            return
        if isinstance(op, graph.ReshapeOp):
            self._set(op.results, [self.expr(d) for d in op.dims])
            self.check("eq", S.mul(*self.shape(op.input)), S.mul(*self.shape(op.result)), op)
            return
        if not dynamic or op.dialect_name() != "graph":
            return
        leg = _legalization_of(op)
        exprs: list[S.Expr] = []
        if leg is not None:
            g = SymbolicGraphDims(self, op)
            try:
                exprs = [g.to_expr(d) for d in leg.result_dims(op, g)]
            except Exception:  # a shape function we cannot follow: opaque dims
                exprs = []
            g.discard_scratch()
        self._set(op.results, exprs)


_LOADED: list = []


def _legalization_of(op: Operation):
    if not _LOADED:  # the legalization modules register themselves when imported
        from minimlir.passes.graph.legalize import _load_legalizations

        _load_legalizations()
        _LOADED.append(True)
    from minimlir.passes.graph.legalize.unary import legalization_of  # (every unary op: its class)

    return legalization_of(op)


class SymbolicGraphDims(GraphDims):
    """GraphDims whose values are `_shapes` expressions (ints for constants): the legalizations'
    shape functions, evaluated symbolically. Emitting IR is not possible here (no insertion
    point): a shape function that needs it makes its op's dims opaque."""

    def __init__(self, fd: FunctionDims, op: Operation):  # noqa: D107
        self.fd = fd
        self.op = op
        # IR a shape function emits (reading data: graph.extract, select, …) goes to a scratch
        # block, is opaque to the expressions, and is dropped afterwards
        self.scratch = Block()
        self.ip = InsertPoint.at_end(self.scratch)

    def discard_scratch(self) -> None:
        for o in reversed(list(self.scratch.ops)):
            o.detach()
            o.drop_all_references()

    def to_expr(self, v) -> S.Expr:
        if isinstance(v, S.Expr):
            return v
        if isinstance(v, int):
            return S.const(v)
        if isinstance(v, SSAValue):
            return self.fd.expr(v)
        raise TypeError(f"not a dim: {v!r}")

    @staticmethod
    def _out(e: S.Expr):
        return e.value if e.value is not None else e

    def index(self, v):  # type: ignore[override]
        if isinstance(v, S.Expr):
            if v.value is None:
                raise NotImplementedError("a symbolic dim cannot be an operand of emitted IR")
            v = v.value
        return super().index(v)

    def const_value(self, v):  # type: ignore[override]
        if isinstance(v, int):
            return v
        return self.to_expr(v).value

    def dim(self, value: SSAValue, i: int):  # type: ignore[override]
        return self._out(self.fd.dim(value, i))

    def same_dim_as_operand(self, op: Operation, result_type: TensorType, i: int):  # type: ignore[override]
        rank = result_type.get_num_dims()
        cands: list[S.Expr] = []
        for operand in op.operands:
            t = operand.type
            if not isinstance(t, TensorType):
                continue
            j = i - (rank - t.get_num_dims())
            if j >= 0:
                cands.append(self.fd.dim(operand, j))
        static = [c for c in cands if c.value is not None and c.value != 1]
        acc: S.Expr = static[0] if static else S.const(1)
        for c in cands:
            if c.value is None:
                self.fd.check("bcast", acc if acc.value != 1 else c, c, op)
                acc = S.bcast(acc, c) if not static else acc
        return self._out(acc)

    def iadd(self, a, b):  # type: ignore[override]
        return self._out(S.add(self.to_expr(a), self.to_expr(b)))

    def isub(self, a, b):  # type: ignore[override]
        return self._out(self.to_expr(a) - self.to_expr(b))

    def imul(self, a, b):  # type: ignore[override]
        return self._out(S.mul(self.to_expr(a), self.to_expr(b)))

    def floordiv(self, a, b):  # type: ignore[override]
        return self._out(S.floordiv(self.to_expr(a), self.to_expr(b)))

    def ceildiv(self, a, b):  # type: ignore[override]
        return self._out(S.ceildiv(self.to_expr(a), self.to_expr(b)))

    def max(self, a, b):  # type: ignore[override]
        return self._out(S.maximum(self.to_expr(a), self.to_expr(b)))

    def min(self, a, b):  # type: ignore[override]
        return self._out(S.minimum(self.to_expr(a), self.to_expr(b)))


def annotate(f: func.FuncOp) -> FunctionDims:
    """Write `graph.dims` on every op with a dynamic tensor result (one string per `?`, in order;
    `?` where the dim is read from data) and `graph.dim_checks` on the function."""
    fd = FunctionDims(f)
    for op in fd.block.ops:
        texts: list[Attribute] = []
        for r in op.results:
            if isinstance(r.type, TensorType):
                for i, d in enumerate(r.type.get_shape()):
                    if d < 0:
                        e = fd.dim(r, i)
                        texts.append(StringAttr("?" if is_opaque(e) else str(e)))
        if texts and op.dialect_name() == "graph":
            op.attributes[DIMS_ATTR] = ArrayAttr(texts)
        elif DIMS_ATTR in op.attributes:
            del op.attributes[DIMS_ATTR]
    if fd.checks:
        f.attributes[CHECKS_ATTR] = ArrayAttr([c.attr() for c in fd.checks])
    elif CHECKS_ATTR in f.attributes:
        del f.attributes[CHECKS_ATTR]
    return fd


def checks_of(f: func.FuncOp) -> list[dict[str, str]]:
    """The function's `graph.dim_checks` as JSON-able dicts (for the runtime's metadata)."""
    a = f.attributes.get(CHECKS_ATTR)
    if not isinstance(a, ArrayAttr):
        return []
    out = []
    for d in a.data:
        if isinstance(d, DictionaryAttr):
            out.append({k: v.data for k, v in d.data.items() if isinstance(v, StringAttr)})
    return out
