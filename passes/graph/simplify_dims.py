"""Compute every distinct dim expression once, at function entry, from the arguments' dims.

Runs on graph-level functions after graph-legalize / loop-fuse (before graph-bufferize). Each
top-level `index` value (graph.dim, arith on index: the shape functions graph-legalize emitted before
each call) gets its symbolic expression (`minimlir.passes.graph._symbolic_dims`); each distinct expression
is built once at the start of the function, from `graph.dim` of the argument that names each symbol,
and every value with that expression is replaced by it. So equal dims are one SSA value: the
allocation sizes and loop bounds after bufferization, mem-plan's slot sharing (two buffers whose
sizes are the same expression share slots) and its arena offsets all use them.

    func.func @main(%x: tensor<?x4xf32> {graph.dim_names = ["batch", ""]}) -> tensor<?x4xf32> {
      %n = graph.dim %x, 0 : tensor<?x4xf32>
      %a = graph.call_kernel @k(%x) dims(%n) : (tensor<?x4xf32>) -> tensor<?x4xf32>
      %m = graph.dim %a, 0 : tensor<?x4xf32>
      %n2 = arith.maxsi %m, %n : index
      %b = graph.call_kernel @k(%a) dims(%n2) : …
    ==>
      %batch = graph.dim %x, 0 : tensor<?x4xf32>
      %a = graph.call_kernel @k(%x) dims(%batch) : …
      %b = graph.call_kernel @k(%a) dims(%batch) : …

Values that depend on tensor data (graph.extract, …) keep their own computation. The function also
gets (or keeps) `graph.dim_checks` from the graph-level shape inference when there is none yet.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import IndexType, IntegerAttr, ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import is_side_effect_free

from minimlir.dialects import _shapes as S
from minimlir.dialects import graph
from minimlir.dialects.loop import is_kernel
from minimlir.passes.graph._symbolic_dims import FunctionDims, is_opaque

_OPS = {
    "add": arith.AddiOp, "sub": arith.SubiOp, "mul": arith.MuliOp, "fdiv": arith.FloorDivSIOp,
    "cdiv": arith.CeilDivSIOp, "max": arith.MaxSIOp, "min": arith.MinSIOp,
}


def simplify_function(f: func.FuncOp) -> int:
    """Rewrite one function; returns how many distinct expressions were built at entry."""
    fd = FunctionDims(f)
    block = f.body.block
    targets: list[tuple[SSAValue, S.Expr]] = []
    for op in block.ops:
        if isinstance(op, graph.DimOp | arith.ConstantOp) or op.dialect_name() == "arith":
            for r in op.results:
                if isinstance(r.type, IndexType):
                    e = fd.expr(r)
                    if not is_opaque(e):
                        targets.append((r, e))
    if not targets:
        return 0
    first = block.first_op
    assert first is not None
    loc = f.location
    built: list[Operation] = []

    def emit(kind: str, operands: tuple) -> SSAValue:
        if kind == "const":
            op: Operation = arith.ConstantOp(IntegerAttr(operands[0], IndexType()))
        elif kind == "sym":
            arg, i = fd.symbol_source[operands[0]]
            op = graph.DimOp(arg, i)
            op.results[0].name_hint = _hint(operands[0])
        elif kind == "mod":  # floor remainder, as the expression means: a - b * floordiv(a, b)
            q = emit("fdiv", operands)
            return emit("sub", (operands[0], emit("mul", (operands[1], q))))
        else:
            op = _OPS[kind](*operands)
        op.location = loc
        Rewriter.insert_op(op, InsertPoint.before(first))
        built.append(op)
        return op.results[0]

    memo: dict[S.Expr, object] = {}
    for v, e in targets:
        new = e.materialize(emit, memo)
        assert isinstance(new, SSAValue)
        if new is not v:
            v.replace_all_uses_with(new)
    # the old computations are dead now (erase users first: walk backwards)
    for op in reversed(list(block.ops)):
        if op in built or op.dialect_name() not in ("arith", "graph") or op.regions:
            continue
        if isinstance(op, graph.DimOp | arith.ConstantOp) or op.dialect_name() == "arith":
            if all(not r.uses for r in op.results) and is_side_effect_free(op):
                Rewriter.erase_op(op)
    for op in list(reversed(built)):  # built for a value that only fed the dead computations
        if all(not r.uses for r in op.results):
            Rewriter.erase_op(op)
            built.remove(op)
    return len(built)


def _hint(name: str) -> str | None:
    h = "".join(c if c.isalnum() or c == "_" else "_" for c in name)
    return h if h and not h[0].isdigit() else None


@dataclass(frozen=True)
class GraphSimplifyDimsPass(ModulePass):
    """Build each distinct dim expression once at function entry and use it everywhere."""

    name = "graph-simplify-dims"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for f in [o for o in op.walk() if isinstance(o, func.FuncOp)]:
            if is_kernel(f) or not f.body.blocks or len(f.body.blocks) != 1:
                continue
            simplify_function(f)
