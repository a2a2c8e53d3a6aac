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
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
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
        # the elements (row-major) of small static integer tensors whose values follow from dims:
        # shape tensors (graph.from_dims, constants, and the gather / where / add / concat /
        # reshape an exporter computes shapes with), so a range's length or a broadcast_to's
        # dims read from them are expressions, not opaque symbols
        self.elems: dict[SSAValue, list[S.Expr]] = {}
        self.checks: list[DimCheck] = []
        self._check_keys: set[tuple] = set()
        self.symbol_source: dict[str, tuple[BlockArgument, int]] = {}
        self._opaque = 0
        primitive = "graph.primitive" in f.attributes  # only called by its caller, which proved its labels
        for arg, names in zip(self.block.args, arg_dim_names(f)):
            for i, n in enumerate(names):
                if n.isdigit() and primitive:  # a dim the caller proved constant (graph-fuse's labels)
                    self.dims[(arg, i)] = S.const(int(n))
                elif n:
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
        if isinstance(op, arith.IndexCastOp) and isinstance(v.type, IndexType):
            src = op.operands[0]
            ex = src.owner
            if isinstance(ex, graph.ExtractOp) and ex.parent is self.block:
                got = self.elems.get(ex.input)
                if got is not None and len(got) == 1:
                    return got[0]
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
        self._track_elems(op)
        if isinstance(op, graph.RangeOp):
            n = self._range_length(op)
            if n is not None:
                self._set(op.results, [n])
                return
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


    # -- small integer tensors with known elements -------------------------------------------

    _MAX_ELEMS = 16

    def nonneg(self, e: S.Expr) -> bool:
        """e >= 0 for every value of its symbols: dims of the arguments (never an opaque value
        read from data) and constants >= 0, combined by +, *, floor/ceil division, max, min."""
        if e.kind == "const":
            return e.value >= 0
        if e.kind == "sym":
            return not is_opaque(e)
        if e.kind == "sum":
            return e.args[1] >= 0 and all(c >= 0 and self.nonneg(t) for t, c in e.args[0])
        if e.kind == "prod":
            return all(self.nonneg(f) for f in e.args)
        if e.kind in ("fdiv", "cdiv", "max", "min"):
            return all(self.nonneg(a) for a in e.args)
        return False

    def _elems_of(self, v: SSAValue) -> list[S.Expr] | None:
        return self.elems.get(v)

    @staticmethod
    def _static_int(v: SSAValue) -> tuple[int, ...] | None:
        t = v.type
        if not isinstance(t, TensorType) or not isinstance(t.get_element_type(), IntegerType):
            return None
        shape = tuple(t.get_shape())
        if any(d < 0 for d in shape):
            return None
        return shape

    def _track_elems(self, op: Operation) -> None:
        if len(op.results) != 1:
            return
        r = op.results[0]
        shape = self._static_int(r)
        if shape is None:
            return
        n = 1
        for d in shape:
            n *= d
        if n > self._MAX_ELEMS:
            return
        got = self._compute_elems(op, shape, n)
        if got is not None and len(got) == n:
            self.elems[r] = got

    def _compute_elems(self, op: Operation, shape: tuple[int, ...], n: int) -> list[S.Expr] | None:
        if isinstance(op, graph.ConstantOp):
            v = op.value
            if isinstance(v, DenseIntOrFPElementsAttr) and isinstance(op.result.type.get_element_type(), IntegerType):
                vals = [int(x) for x in v.get_values()]
                if len(vals) == 1 and n != 1:  # a splat
                    vals = vals * n
                return [S.const(x) for x in vals]
            return None
        if isinstance(op, graph.FromDimsOp):
            return [self.expr(d) for d in op.dims]
        if isinstance(op, graph.ReshapeOp):  # same elements, row-major
            return self._elems_of(op.input)
        if isinstance(op, graph.GatherOp):
            data, idx = self._elems_of(op.data), self._elems_of(op.indices)
            dshape = self._static_int(op.data)
            if data is None or idx is None or dshape is None or len(dshape) != 1 or op.axis.value.data != 0:
                return None
            out = []
            for i in idx:
                if i.value is None or not -len(data) <= i.value < len(data):
                    return None
                out.append(data[i.value % len(data)])
            return out
        if isinstance(op, graph.ConcatOp):
            parts = [self._elems_of(x) for x in op.inputs]
            if any(p is None for p in parts) or len(shape) != 1:
                return None
            return [e for p in parts for e in p]  # type: ignore[union-attr]
        if isinstance(op, graph.AddOp | graph.SubOp | graph.MulOp | graph.EqOp | graph.WhereOp):
            ins = [self._elems_of(x) for x in op.operands]
            if any(p is None for p in ins):
                return None
            if any(len(p) not in (1, n) for p in ins):  # type: ignore[arg-type]
                return None  # only scalar-against-tensor broadcasting of equal shapes
            if any(len(p) == n and self._static_int(x) != shape for p, x in zip(ins, op.operands)):
                return None
            cols = [[p[k if len(p) == n else 0] for p in ins] for k in range(n)]  # type: ignore[index]
            out = []
            for c in cols:
                e = self._element(op, c)
                if e is None:
                    return None
                out.append(e)
            return out
        return None

    def _element(self, op: Operation, c: list[S.Expr]) -> S.Expr | None:
        if isinstance(op, graph.AddOp):
            return S.add(c[0], c[1])
        if isinstance(op, graph.SubOp):
            return c[0] - c[1]
        if isinstance(op, graph.MulOp):
            return S.mul(c[0], c[1])
        if isinstance(op, graph.EqOp):  # an i1 result: 1 or 0, when decidable
            a, b = c
            if a is b:
                return S.const(1)
            if a.value is not None and b.value is not None:
                return S.const(int(a.value == b.value))
            for x, y in ((a, b), (b, a)):  # a dim against a negative constant (Reshape's -1)
                if y.value is not None and y.value < 0 and self.nonneg(x):
                    return S.const(0)
            return None
        if isinstance(op, graph.WhereOp):
            cond = c[0].value
            if cond is None:
                return None
            return c[1] if cond else c[2]
        return None

    def _range_length(self, op: graph.RangeOp) -> S.Expr | None:
        """max(ceil((limit - start) / delta), 0) for a positive constant delta, when start and limit
        are known; written without the max where limit - start is provably >= 0."""
        start, limit, delta = (self._elems_of(x) for x in (op.start, op.limit, op.delta))
        if start is None or limit is None or delta is None or len(start) != 1 or len(limit) != 1 or len(delta) != 1:
            return None
        d = delta[0].value
        if d is None or d <= 0:
            return None
        n = S.ceildiv(limit[0] - start[0], S.const(d))
        return n if self.nonneg(limit[0] - start[0]) else S.maximum(n, S.const(0))


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


def broadcast_facts(op: Operation, fd: FunctionDims) -> tuple[tuple[str, ...], ...]:
    """What the symbolic dims prove about each tensor operand's dynamic dims against the first
    result's (operand dims aligned to the right, as NumPy broadcasting): "eq" (the same expression
    as the result dim), "one" (the constant 1), "" (nothing). graph-legalize hands them to the
    kernel builder (`KernelBuilder.dim_facts`), whose broadcast plans then index an operand dim
    proved equal to the result's by the iteration variable, and one proved 1 at 0, instead of a
    stride selected at run time; they are part of the kernel's key."""
    if not op.results or not isinstance(op.results[0].type, TensorType):
        return ()
    res = op.results[0]
    rank = res.type.get_num_dims()
    out: list[tuple[str, ...]] = []
    for v in op.operands:
        if not isinstance(v.type, TensorType):
            continue
        shape = v.type.get_shape()
        off = rank - len(shape)
        row = []
        for j, d in enumerate(shape):
            i = j + off
            fact = ""
            if d < 0 and 0 <= i:
                e = fd.dim(v, j)
                if e.value == 1:
                    fact = "one"
                elif not is_opaque(e) and e is fd.dim(res, i):
                    fact = "eq"
            row.append(fact)
        out.append(tuple(row))
    return tuple(out)


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
