"""loop-fuse (TVM's FuseTIR): each legalized `graph.primitive` function becomes ONE kernel.

After graph-fuse + graph-legalize a primitive function is a sequence of kernel calls with the
shape arithmetic that sizes their results:

    func.func private @fused_add_tanh(%x: tensor<?x8xf32>, %y: tensor<?x8xf32>) -> tensor<?x8xf32>
        attributes {graph.primitive} {
      %n = graph.dim %x, 0 …
      %e = graph.call_kernel @add_0(%x, %y) dims(%n) …
      %m = graph.dim %e, 0 …
      %s = graph.call_kernel @tanh_0(%e) dims(%m) …
      func.return %s …
    }

It becomes a kernel with the same name, whose buffers are the group's inputs then its outputs; the
members' loop nests are copied one after the other, an intermediate becomes a local buffer
(`mem.alloca` when static and at most 64 KiB, else `mem.alloc` … `mem.dealloc`; both at the
kernel's entry and end, so they dominate the nests wherever a schedule moves them), and the shape
arithmetic is re-materialized on buffers (`graph.dim` -> `mem.dim`):

    func.func private @fused_add_tanh(%x: memref<?x8xf32>, %y: memref<?x8xf32>,
                                      %s: memref<?x8xf32>) attributes {loop.kernel} {
      %n = mem.dim %x, 0 …
      %e = mem.alloc(%n) : memref<?x8xf32>      // locals at the entry
      loop.for … { loop.block "add" … }      // add_0's nest, writing %e
      loop.for … { loop.block "tanh" … }     // tanh_0's nest, reading %e, writing %s
      mem.dealloc %e : memref<?x8xf32>
    }

Each `func.call @fused_add_tanh(%a, %b)` becomes `graph.call_kernel @fused_add_tanh(%a, %b)
dims(…)`, the result dims recomputed in the caller from `graph.dim` of the call's arguments.
Block names stay unique (a repeated name gets a `_1`, `_2`, … suffix). Member kernels that
nothing calls any more are erased.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import (
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    StringAttr,
    TensorType,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import SymbolTable

from minimlir.dialects import graph, loop, mem
from minimlir.passes._diagnostics import emit_error
from minimlir.passes.loop._kernel_builder import Index, KernelBuilder
from minimlir.dialects import _shapes as S
from minimlir.passes.graph._symbolic_dims import FunctionDims, is_opaque
from minimlir.passes.graph.fuse import PRIMITIVE_ATTR, is_primitive

ALLOCA_LIMIT = 64 * 1024  # bytes: larger (or dynamic) intermediates go to the heap

# Index arithmetic that may appear between the kernel calls of a primitive function.
_INDEX_OPS = (
    arith.ConstantOp, arith.AddiOp, arith.SubiOp, arith.MuliOp, arith.FloorDivSIOp,
    arith.CeilDivSIOp, arith.DivSIOp, arith.RemSIOp, arith.MaxSIOp, arith.MinSIOp,
    arith.CmpiOp, arith.SelectOp,
)


def as_memref(t: Attribute) -> MemRefType:
    assert isinstance(t, TensorType)
    return MemRefType(t.element_type, t.get_shape())


def _byte_size(t: MemRefType) -> int | None:
    n = mem.num_elements(t)
    if n is None:
        return None
    elt = t.get_element_type()
    width = elt.bitwidth if hasattr(elt, "bitwidth") else 64
    if isinstance(elt, IntegerType):
        width = elt.width.data
    return n * max(1, (width + 7) // 8)


def _dynamic_positions(types: Sequence[Attribute]) -> list[tuple[int, int]]:
    """(result, dim) for each `?` over all `types`, in order: the layout of a dims operand list."""
    return [
        (k, i)
        for k, t in enumerate(types)
        for i, d in enumerate(t.get_shape())  # type: ignore[attr-defined]
        if d < 0
    ]


def _reshaped_call(v: SSAValue) -> SSAValue | None:
    """The call result that `v` reshapes, through static-shaped graph.reshape ops only; else None."""
    if not isinstance(v.owner, graph.ReshapeOp):
        return None
    while isinstance(v.owner, graph.ReshapeOp):
        if not v.type.has_static_shape():  # type: ignore[attr-defined]
            return None
        v = v.owner.input
    return v if isinstance(v.owner, graph.CallKernelOp) and v.type.has_static_shape() else None  # type: ignore[attr-defined]


class _Fuser:
    """Builds the fused kernel of one primitive function."""

    def __init__(self, prim: func.FuncOp, module: ModuleOp):
        self.prim = prim
        self.module = module
        block = prim.body.block
        ret = block.last_op
        assert isinstance(ret, func.ReturnOp)
        self.ret = ret
        self.kb = KernelBuilder(
            prim.sym_name.data,
            [as_memref(a.type) for a in block.args],
            [as_memref(t) for t in prim.function_type.outputs.data],
        )
        self.buf: dict[SSAValue, SSAValue] = dict(zip(block.args, self.kb.inputs))
        self.idx: dict[SSAValue, Index] = {}
        self.local_dims: dict[SSAValue, list[Index]] = {}  # local buffers and views
        self.heap: list[SSAValue] = []
        self.block_names: set[str] = set()
        self.members: set[str] = set()
        self.copies: list[tuple[SSAValue, SSAValue]] = []
        # The symbolic dims of the function's values (from graph-fuse's argument labels: the
        # equalities its caller proved): a dim with the expression of one seen before is that
        # Index, a dim proved constant is the constant, so the members' nests get the same bounds
        # (what loop fusion and reverse-compute-at compare) and buffer sizes.
        self.fd = FunctionDims(prim)
        self.value_of: dict[SSAValue, SSAValue] = dict(zip(self.kb.inputs, block.args))
        self.by_expr: dict[S.Expr, Index] = {}
        # A call result that is returned (once) is written straight into the output buffer, and
        # so is one returned through reshapes (static shapes): the call writes a view of the output
        # (a kernel ending in a reshape, such as a strided slice feeding a 1x1 conv as a matmul,
        # copied its whole result after computing it: ResNet-50's, serially, 0.16 -> 0.51 ms at 2
        # threads)
        for k, v in enumerate(ret.arguments):
            self.value_of.setdefault(self.kb.outputs[k], v)
            if isinstance(v.owner, graph.CallKernelOp) and v not in self.buf:
                self.buf[v] = self.kb.outputs[k]
            elif (src := _reshaped_call(v)) is not None and src not in self.buf and v not in ret.arguments[:k]:
                t = as_memref(src.type)
                view = self.kb.entry.emit(mem.ViewOp(self.kb.outputs[k], t, []))
                self.local_dims[view] = self._shape_of(t, [], [src.type], 0)
                self.buf[src] = view
            else:
                self.copies.append((v, self.kb.outputs[k]))

    # -- index values ------------------------------------------------------------------------

    def _dim(self, buffer: SSAValue, i: int) -> Index:
        if buffer in self.local_dims:
            return self.local_dims[buffer][i]
        v = self.value_of.get(buffer)
        e = self.fd.dim(v, i) if v is not None else None
        if e is not None and not is_opaque(e):
            if e.value is not None:
                return e.value
            if e in self.by_expr:
                return self.by_expr[e]
        d = self.kb.dim(buffer, i)
        if e is not None and not is_opaque(e):
            self.by_expr[e] = d
        return d

    def _unified(self, v: SSAValue, dims: list[Index]) -> list[Index]:
        """The extents of call result v, each the Index of an equal dim seen before if any."""
        out = list(dims)
        for i, d in enumerate(dims):
            if isinstance(d, int):
                continue
            e = self.fd.dim(v, i)
            if is_opaque(e):
                continue
            if e.value is not None:
                out[i] = e.value
            elif e in self.by_expr:
                out[i] = self.by_expr[e]
            else:
                self.by_expr[e] = d
        return out

    def _index(self, v: SSAValue) -> SSAValue:
        return self.kb.top.index(self.idx[v])

    def _index_op(self, op: Operation) -> None:
        if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr) and isinstance(
            op.result.type, IndexType
        ):
            self.idx[op.result] = op.value.value.data
            return
        mapping = {o: self._index(o) for o in op.operands}
        new = op.clone(value_mapper=mapping)
        self.kb.entry.emit(new)
        for old, res in zip(op.results, new.results):
            self.idx[old] = res

    # -- buffers -----------------------------------------------------------------------------

    def _local(self, t: MemRefType, dims: list[Index]) -> SSAValue:
        dyn = [self.kb.top.index(d) for d, s in zip(dims, t.get_shape()) if s < 0]
        size = _byte_size(t)
        # Locals (and the index arithmetic sizing them) live at the kernel entry, so they dominate
        # every nest wherever a schedule moves it (reverse-compute-at pulls consumers up).
        if size is not None and size <= ALLOCA_LIMIT:
            buffer = self.kb.entry.emit(mem.AllocaOp(t))
        else:
            buffer = self.kb.entry.emit(mem.AllocOp(t, dyn))
            self.heap.append(buffer)
        self.local_dims[buffer] = dims
        return buffer

    def _shape_of(self, t: MemRefType, dims: Sequence[SSAValue], types: Sequence[Attribute], k: int):
        """Extents of result k (ints for static dims, mapped dims operands for `?`)."""
        pos = _dynamic_positions(types)
        out: list[Index] = []
        for i, d in enumerate(t.get_shape()):
            out.append(d if d >= 0 else self.idx[dims[pos.index((k, i))]])
        return out

    # -- ops ---------------------------------------------------------------------------------

    def _call(self, call: graph.CallKernelOp) -> None:
        kernel = SymbolTable.lookup_symbol(self.module, call.callee)
        if not loop.is_kernel(kernel):
            emit_error(call, f"loop-fuse: '{call.callee}' is not a loop kernel")
        assert isinstance(kernel, func.FuncOp)
        self.members.add(kernel.sym_name.data)
        types = [r.type for r in call.outputs]
        for k, r in enumerate(call.outputs):
            t = as_memref(r.type)
            if r not in self.buf:  # else: an output of the fused kernel, written in place
                self.buf[r] = self._local(t, self._unified(r, self._shape_of(t, call.dims, types, k)))
        kargs = kernel.body.block.args
        buffers = [self.buf[a] for a in call.args] + [self.buf[r] for r in call.outputs]
        mapping: dict[SSAValue, SSAValue] = dict(zip(kargs, buffers))
        for op in kernel.body.block.ops:
            if isinstance(op, func.ReturnOp):
                continue
            # Symbols go to the fused kernel's entry, once: index constants and dims of buffers.
            if (
                isinstance(op, arith.ConstantOp)
                and isinstance(op.value, IntegerAttr)
                and isinstance(op.result.type, IndexType)
            ):
                mapping[op.result] = self.kb.iconst(op.value.value.data)
                continue
            if isinstance(op, mem.DimOp) and op.source in kargs:
                mapping[op.result] = self.kb.top.index(
                    self._dim(mapping[op.source], op.index.value.data)
                )
                continue
            new = op.clone(value_mapper=mapping)
            for b in new.walk():
                if isinstance(b, loop.BlockOp):
                    b.block_name = StringAttr(self._unique(b.block_name.data))
            self.kb.top.emit(new)

    def _unique(self, name: str) -> str:
        new, k = name, 0
        while new in self.block_names:
            k += 1
            new = f"{name}_{k}"
        self.block_names.add(new)
        return new

    def _reshape(self, op: graph.ReshapeOp) -> None:
        t = as_memref(op.result.type)
        dims = self._shape_of(t, op.dims, [op.result.type], 0)
        dyn = [self._index(d) for d in op.dims]
        view = self.kb.entry.emit(mem.ViewOp(self.buf[op.input], t, dyn))
        self.local_dims[view] = dims
        self.buf[op.result] = view

    def build(self) -> func.FuncOp:
        for op in self.prim.body.block.ops:
            if isinstance(op, func.ReturnOp):
                break
            if isinstance(op, graph.CallKernelOp):
                self._call(op)
            elif isinstance(op, graph.DimOp):
                i = op.index.value.data
                self.idx[op.result] = self._dim(self.buf[op.input], i)
            elif isinstance(op, graph.ReshapeOp):
                self._reshape(op)
            elif isinstance(op, _INDEX_OPS) and all(isinstance(r.type, IndexType | IntegerType) for r in op.results):
                self._index_op(op)
            else:
                emit_error(
                    op,
                    f"loop-fuse: cannot fuse '{op.name}' in primitive function "
                    f"@{self.prim.sym_name.data} (expected graph.call_kernel, graph.dim, "
                    "graph.reshape and index arithmetic; run graph-legalize first)",
                )
        for v, out in self.copies:
            self.kb.top.emit(mem.CopyOp(self.buf[v], out))
        self._deallocs()
        kernel = self.kb.finish()
        kernel.location = self.prim.location
        return kernel

    def _deallocs(self) -> None:
        """`mem.dealloc` of each heap intermediate at the end of the kernel (not after its last use:
        schedule primitives may move nests, and the end dominates nothing they can reach)."""
        for h in self.heap:
            self.kb.top.emit(mem.DeallocOp(h))


class _CallerDims:
    """Result dims of a primitive call, recomputed before the call from graph.dim of its args."""

    def __init__(self, prim: func.FuncOp, call: func.CallOp):
        self.args = dict(zip(prim.body.block.args, call.arguments))
        self.ip = InsertPoint.before(call)
        self.call = call
        self.memo: dict[tuple[SSAValue, int] | SSAValue, SSAValue] = {}

    def _emit(self, op: Operation) -> SSAValue:
        op.location = self.call.location
        Rewriter.insert_op(op, self.ip)
        return op.results[0]

    def dim(self, v: SSAValue, i: int) -> SSAValue:
        key = (v, i)
        if key in self.memo:
            return self.memo[key]
        t = v.type
        assert isinstance(t, TensorType)
        d = t.get_shape()[i]
        owner = v.owner
        if d >= 0:
            res = self._emit(arith.ConstantOp(IntegerAttr(d, IndexType())))
        elif v in self.args:
            a = self.args[v]
            if isinstance(a.owner, graph.CallKernelOp):  # the caller knows that dim already
                types = [r.type for r in a.owner.outputs]
                k = list(a.owner.outputs).index(a)
                res = a.owner.dims[_dynamic_positions(types).index((k, i))]
            else:
                res = self._emit(graph.DimOp(a, i))
        elif isinstance(owner, graph.CallKernelOp):
            types = [r.type for r in owner.outputs]
            k = list(owner.outputs).index(v)
            res = self.index(owner.dims[_dynamic_positions(types).index((k, i))])
        elif isinstance(owner, graph.ReshapeOp):
            res = self.index(owner.dims[_dynamic_positions([t]).index((0, i))])
        else:
            emit_error(self.call, f"loop-fuse: cannot compute dim {i} of a value made by '{owner}'")
        self.memo[key] = res
        return res

    def index(self, v: SSAValue) -> SSAValue:
        if v in self.memo:
            return self.memo[v]
        op = v.owner
        if isinstance(op, graph.DimOp):
            res = self.dim(op.input, op.index.value.data)
        elif isinstance(op, arith.MaxSIOp | arith.MinSIOp) and self.index(op.lhs) is self.index(op.rhs):
            res = self.index(op.lhs)  # broadcasting a dim with itself is that dim
        elif isinstance(op, _INDEX_OPS):
            new = op.clone(value_mapper={o: self.index(o) for o in op.operands})
            res = self._emit(new)
        else:
            emit_error(self.call, f"loop-fuse: cannot recompute index value {v} in the caller")
        self.memo[v] = res
        return res

    def result_dims(self, ret: func.ReturnOp) -> list[SSAValue]:
        return [
            self.dim(ret.arguments[k], i)
            for k, i in _dynamic_positions([v.type for v in ret.arguments])
        ]


@dataclass(frozen=True)
class LoopFusePass(ModulePass):
    """Fuse the kernels of each legalized graph.primitive function into one kernel (FuseTIR)."""

    name = "loop-fuse"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        prims = [f for f in op.ops if is_primitive(f)]
        members: set[str] = set()
        # the calls of every primitive, in walk order, found in one walk (not one walk per primitive)
        calls_of: dict[str, list[func.CallOp]] = {}
        for c in op.walk():
            if isinstance(c, func.CallOp):
                calls_of.setdefault(c.callee.string_value(), []).append(c)
        for prim in prims:
            assert isinstance(prim, func.FuncOp)
            name = prim.sym_name.data
            calls = calls_of.get(name, [])
            fuser = _Fuser(prim, op)
            kernel = fuser.build()
            members |= fuser.members
            for call in calls:
                dims = _CallerDims(prim, call).result_dims(fuser.ret)
                new = graph.CallKernelOp(name, list(call.arguments), [r.type for r in call.res], dims)
                new.location = call.location
                Rewriter.insert_op(new, InsertPoint.before(call))
                for old, res in zip(call.res, new.outputs):
                    old.replace_all_uses_with(res)
                call.detach()
                call.erase()
            Rewriter.insert_op(kernel, InsertPoint.before(prim))
            prim.detach()
            prim.erase()
        called = {
            c.callee.string_value() for c in op.walk() if isinstance(c, graph.CallKernelOp)
        }
        for f in list(op.ops):
            if isinstance(f, func.FuncOp) and f.sym_name.data in members - called:
                f.detach()
                f.erase()


__all__ = ["LoopFusePass", "PRIMITIVE_ATTR"]
