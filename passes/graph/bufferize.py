"""Bufferize graph-level functions: tensors become memrefs, kernels write into fresh buffers.

Runs after graph-legalize. Every non-kernel `func.func` with a body is a graph-level function whose
ops are graph.param / graph.constant / graph.call_kernel / graph.reshape / graph.dim plus ops on
non-tensor values (arith on index). The pass turns it into mem IR (LOWERING.md, graph-bufferize):

    func.func @main(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
      %w = graph.param "w" : tensor<4xf32>
      %n = graph.dim %x, 0 : tensor<?x4xf32>
      %y = graph.call_kernel @add(%x, %w) dims(%n) : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
      func.return %y : tensor<?x4xf32>
    }
    ==>
    func.func @main(%x: memref<?x4xf32>, %w: memref<4xf32> {mem.param = "w"}) -> memref<?x4xf32> {
      %n = mem.dim %x, 0 : memref<?x4xf32>
      %y = mem.alloc(%n) {mem.result_slot = 0 : i64} : memref<?x4xf32>
      func.call @add(%x, %w, %y) : (memref<?x4xf32>, memref<4xf32>, memref<?x4xf32>) -> ()
      func.return %y : memref<?x4xf32>
    }

- tensor arguments become memref arguments of the same shape and element type;
- `graph.param "w"` becomes a trailing argument with the arg attribute `mem.param = "w"` (one per
  distinct name, in order of first appearance);
- `graph.constant`: a splat is `mem.fill`ed; other constants get one `mem.store` per element. Up to
  `max-inline-elements` elements (default 1024) the buffer is a `mem.alloca` at function entry.
  Bigger constants still work but are a heap `mem.alloc` filled at their position on *every call*:
  the pass warns and asks for a graph.param instead (the ONNX importer already does that).
  `dense_resource` constants cannot be read here: error;
- `graph.call_kernel @k(ins) dims(ds)` becomes one `mem.alloc` per result (taking its share of `ds`)
  and `func.call @k(ins..., outs...)`; the callee must exist and take exactly those buffer types;
- `graph.reshape` becomes a zero-copy `mem.view`, `graph.dim` becomes `mem.dim`;
- `graph.from_dims(%d…)` becomes a `mem.alloc` of i64 with one `mem.store` per (index_cast) dim,
  `graph.extract %t` a `mem.load %t[]` (graph-legalize keeps both: they move index/scalar values);
- each returned buffer is a kernel-output `mem.alloc` tagged `mem.result_slot = i : i64`; anything
  else (an argument, a param, a constant, a view, a buffer already returned at an earlier position)
  is copied into a fresh tagged `mem.alloc` just before the return;
- every other heap buffer gets a `mem.dealloc` right after its last use (uses through views count;
  `mem.dim` does not: dims are known without the memory).

Any other op that touches a tensor fails with `failed to bufferize operation 'graph.X'` at its location.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    ArrayAttr,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    FunctionType,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    StringAttr,
    TensorType,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import SymbolTable

from minimlir.dialects import graph, mem
from minimlir.dialects.loop import is_kernel
from minimlir.passes._diagnostics import emit_error, emit_warning

RESULT_SLOT_ATTR = "mem.result_slot"
PARAM_ATTR = "mem.param"

_HANDLED = (
    graph.ParamOp, graph.ConstantOp, graph.CallKernelOp, graph.ReshapeOp, graph.DimOp,
    graph.FromDimsOp, graph.ExtractOp,
)


def memref_of(typ: Attribute) -> Attribute:
    """tensor<…> -> memref<…> with the same shape and element type; other types unchanged."""
    if isinstance(typ, TensorType):
        return MemRefType(typ.get_element_type(), typ.get_shape())
    return typ


def _touches_tensor(op: Operation) -> bool:
    return any(isinstance(v.type, TensorType) for v in (*op.operands, *op.results))


def is_graph_function(op: Operation) -> bool:
    """A func.func with a body that is not a loop.kernel: what graph-bufferize and mem-plan work on."""
    return isinstance(op, func.FuncOp) and not is_kernel(op) and bool(op.body.blocks)


def last_use_in_block(buffer: SSAValue, block: Block,
                      order: dict[Operation, int] | None = None) -> Operation | None:
    """The last op of `block` that uses `buffer` or an alias of it (a memref result of a user, such
    as a mem.view), or an op nested in such an op. `mem.dim` is not a use: dims need no memory.
    `order` (op -> position in `block`) may be given when asking for many buffers."""
    if order is None:
        order = {op: k for k, op in enumerate(block.ops)}
    last: Operation | None = None
    for v in memref_aliases(buffer):
        for use in v.uses:
            user = use.operation
            if isinstance(user, mem.DimOp):
                continue
            top = block.find_ancestor_op_in_block(user)
            if top is None:
                continue
            if last is None or order[top] > order[last]:
                last = top
    return last


def memref_aliases(buffer: SSAValue) -> set[SSAValue]:
    """`buffer` and every memref result of a user of it, transitively (mem.view, mem.subrange, …)."""
    seen: set[SSAValue] = set()
    work = [buffer]
    while work:
        v = work.pop()
        if v in seen:
            continue
        seen.add(v)
        for use in v.uses:
            work.extend(r for r in use.operation.results if isinstance(r.type, MemRefType))
    return seen


class _FunctionBufferizer:
    """Bufferizes one graph-level function in place."""

    def __init__(self, f: func.FuncOp, max_inline_elements: int):
        self.f = f
        self.block = f.body.block
        self.max_inline = max_inline_elements
        self.rewriter = PatternRewriter(InsertPoint.at_start(self.block))
        self.params: dict[str, SSAValue] = {}
        self.param_names: list[str] = []
        self.owned: list[mem.AllocOp] = []  # heap buffers this pass allocates
        self.kernel_outputs: set[SSAValue] = set()
        self.last_entry_op: Operation | None = None  # small constants go at entry, in order

    def run(self) -> None:
        self._check_supported()
        n_args = len(self.block.args)
        for arg in self.block.args:
            if isinstance(arg.type, TensorType):
                Rewriter.replace_value_with_new_type(arg, memref_of(arg.type))
        for op in list(self.block.ops):
            self._bufferize(op)
        ret = self.block.last_op
        assert isinstance(ret, func.ReturnOp)
        self._make_results(ret)
        self._insert_deallocs()
        self._update_signature(n_args, ret)

    # -- checks ------------------------------------------------------------------------------

    def _check_supported(self) -> None:
        if len(self.f.body.blocks) != 1:
            emit_error(
                self.f,
                f"graph-bufferize expects graph-level function @{self.f.sym_name.data} to have a "
                f"single block, got {len(self.f.body.blocks)}",
            )
        last = self.block.last_op
        if not isinstance(last, func.ReturnOp):
            emit_error(self.f, f"graph-level function @{self.f.sym_name.data} must end in func.return")
        for op in self.f.body.walk():
            top_level = op.parent is self.block
            if isinstance(op, _HANDLED) and top_level or isinstance(op, func.ReturnOp) and top_level:
                continue
            if op.dialect_name() == "graph":
                hint = (
                    "graph ops must not be nested in regions" if isinstance(op, _HANDLED)
                    else "run graph-legalize first"
                )
                emit_error(op, f"failed to bufferize operation '{op.name}' ({hint})")
            if _touches_tensor(op):
                emit_error(op, f"failed to bufferize operation '{op.name}': it uses tensor values")

    # -- one op ------------------------------------------------------------------------------

    def _bufferize(self, op: Operation) -> None:
        match op:
            case graph.ParamOp():
                self._param(op)
            case graph.ConstantOp():
                self._constant(op)
            case graph.CallKernelOp():
                self._call_kernel(op)
            case graph.ReshapeOp():
                view = mem.ViewOp(op.input, memref_of(op.result.type), op.dims)
                self._replace(op, [view], [view.result])
            case graph.DimOp():
                dim = mem.DimOp(op.input, op.index.value.data)
                self._replace(op, [dim], [dim.result])
            case graph.ExtractOp():
                load = mem.LoadOp(op.input, [], op.result.type)
                self._replace(op, [load], [load.result])
            case graph.FromDimsOp():
                self._from_dims(op)
            case _:
                pass

    def _replace(self, op: Operation, new_ops: list[Operation], results: list[SSAValue]) -> None:
        for new in new_ops:
            new.location = op.location
        self.rewriter.replace(op, new_ops, results)

    def _param(self, op: graph.ParamOp) -> None:
        name = op.param_name.data
        typ = memref_of(op.result.type)
        arg = self.params.get(name)
        if arg is None:
            arg = self.block.insert_arg(typ, len(self.block.args), op.location)
            self.params[name] = arg
            self.param_names.append(name)
        elif arg.type != typ:
            emit_error(
                op,
                f"graph.param \"{name}\" is used with two types in @{self.f.sym_name.data}: "
                f"{arg.type} and {typ}",
            )
        self._replace(op, [], [arg])

    def _constant(self, op: graph.ConstantOp) -> None:
        value = op.value
        if not isinstance(value, DenseIntOrFPElementsAttr):
            emit_error(
                op,
                "failed to bufferize operation 'graph.constant': its dense_resource value cannot be "
                "read at compile time; make it a graph.param",
            )
        typ = memref_of(op.result.type)
        assert isinstance(typ, MemRefType)
        n = mem.num_elements(typ)
        assert n is not None
        splat = n > 0 and value.is_splat()
        if n > self.max_inline and not splat:
            emit_warning(
                op,
                f"graph.constant of {n} elements is written with {n} stores on every call "
                f"(more than max-inline-elements={self.max_inline}); make it a graph.param",
            )
        ops: list[Operation] = []
        if n <= self.max_inline:
            buf: Operation = mem.AllocaOp(typ)
        else:
            buf = mem.AllocOp(typ)
            self.owned.append(buf)
        ops.append(buf)
        attrs = list(value.get_attrs())
        if splat:
            c = arith.ConstantOp(attrs[0])
            ops += [c, mem.FillOp(c, buf)]
        elif n:
            shape = typ.get_shape()
            idx = [arith.ConstantOp(IntegerAttr(k, IndexType())) for k in range(max(shape, default=0))]
            ops += idx
            consts: dict[Attribute, arith.ConstantOp] = {}
            for attr in attrs:
                if attr not in consts:
                    consts[attr] = arith.ConstantOp(attr)
                    ops.append(consts[attr])
            for flat, attr in enumerate(attrs):
                pos, rest = [], flat
                for d in reversed(shape):
                    pos.append(idx[rest % d])
                    rest //= d
                ops.append(mem.StoreOp(consts[attr], buf, list(reversed(pos))))
        for new in ops:
            new.location = op.location
        if n <= self.max_inline:
            # Small constants live on the stack, filled at function entry (in op order).
            at = (
                InsertPoint.at_start(self.block) if self.last_entry_op is None
                else InsertPoint.after(self.last_entry_op)
            )
            self.rewriter.insert(ops, at)
            self.last_entry_op = ops[-1]
            self._replace(op, [], [buf.results[0]])
        else:
            self._replace(op, ops, [buf.results[0]])

    def _from_dims(self, op: graph.FromDimsOp) -> None:
        # A fresh heap buffer like a kernel output (so it may be returned), one store per dim.
        typ = memref_of(op.result.type)
        assert isinstance(typ, MemRefType)
        buf = mem.AllocOp(typ)
        ops: list[Operation] = [buf]
        for k, d in enumerate(op.dims):
            pos = arith.ConstantOp(IntegerAttr(k, IndexType()))
            val = arith.IndexCastOp(d, IntegerType(64))
            ops += [pos, val, mem.StoreOp(val, buf, [pos])]
        self.owned.append(buf)
        self.kernel_outputs.add(buf.result)
        self._replace(op, ops, [buf.result])

    def _call_kernel(self, op: graph.CallKernelOp) -> None:
        outs: list[mem.AllocOp] = []
        dims = list(op.dims)
        for r in op.outputs:
            typ = memref_of(r.type)
            assert isinstance(typ, MemRefType)
            k = mem.count_dynamic(typ)
            outs.append(mem.AllocOp(typ, dims[:k]))
            dims = dims[k:]
        args = [*op.args, *(o.result for o in outs)]
        self._check_callee(op, [a.type for a in args])
        call = func.CallOp(op.callee, args, [])
        self.owned += outs
        self.kernel_outputs.update(o.result for o in outs)
        self._replace(op, [*outs, call], [o.result for o in outs])

    def _check_callee(self, op: graph.CallKernelOp, types: list[Attribute]) -> None:
        name = op.callee.string_value()
        callee = SymbolTable.lookup_symbol(op, op.callee)
        if not isinstance(callee, func.FuncOp):
            emit_error(op, f"failed to bufferize operation 'graph.call_kernel': no function @{name}")
        expected = list(callee.function_type.inputs.data)
        if len(expected) != len(types):
            emit_error(
                op,
                f"failed to bufferize operation 'graph.call_kernel': @{name} takes "
                f"{len(expected)} buffers, the call passes {len(types)} (inputs then outputs)",
            )
        for k, (want, got) in enumerate(zip(expected, types)):
            if want != got:
                emit_error(
                    op,
                    f"failed to bufferize operation 'graph.call_kernel': buffer #{k} of @{name} "
                    f"has type {want}, the call passes {got}",
                )

    # -- results, deallocs, signature -------------------------------------------------------

    def _make_results(self, ret: func.ReturnOp) -> None:
        claimed: set[SSAValue] = set()
        for i, v in enumerate(ret.arguments):
            if not isinstance(v.type, MemRefType) or i >= len(self.f.function_type.outputs.data):
                continue
            if not isinstance(self.f.function_type.outputs.data[i], TensorType):
                continue  # already a buffer before this pass: not ours to manage
            if v in self.kernel_outputs and v not in claimed:
                assert isinstance(v.owner, mem.AllocOp)
                v.owner.attributes[RESULT_SLOT_ATTR] = IntegerAttr(i, i64)
                claimed.add(v)
                continue
            typ = v.type
            new: list[Operation] = []
            dims: list[SSAValue] = []
            for k, d in enumerate(typ.get_shape()):
                if d == DYNAMIC_INDEX:
                    dim = mem.DimOp(v, k)
                    new.append(dim)
                    dims.append(dim.result)
            out = mem.AllocOp(typ, dims)
            out.attributes[RESULT_SLOT_ATTR] = IntegerAttr(i, i64)
            new += [out, mem.CopyOp(v, out)]
            for o in new:
                o.location = ret.location
                self.rewriter.insert(o, InsertPoint.before(ret))
            ret.operands[i] = out.result
            claimed.add(out.result)
        self.results = claimed

    def _insert_deallocs(self) -> None:
        after: dict[Operation, Operation] = {}  # last use -> the last dealloc placed after it
        order = {op: k for k, op in enumerate(self.block.ops)}  # deallocs added below are never last uses
        for alloc in self.owned:
            if alloc.result in self.results:
                continue
            last = last_use_in_block(alloc.result, self.block, order) or alloc
            dealloc = mem.DeallocOp(alloc.result)
            dealloc.location = alloc.location
            if isinstance(last, func.ReturnOp):
                at = InsertPoint.before(last)
            else:
                at = InsertPoint.after(after.get(last, last))
                after[last] = dealloc
            self.rewriter.insert(dealloc, at)

    def _update_signature(self, n_args: int, ret: func.ReturnOp) -> None:
        f = self.f
        f.function_type = FunctionType.from_lists(
            [a.type for a in self.block.args], [v.type for v in ret.arguments]
        )
        if not self.param_names and f.arg_attrs is None:
            return
        old = list(f.arg_attrs.data) if f.arg_attrs is not None else []
        old += [DictionaryAttr({})] * (n_args - len(old))
        old += [DictionaryAttr({PARAM_ATTR: StringAttr(name)}) for name in self.param_names]
        f.arg_attrs = ArrayAttr(old)


@dataclass(frozen=True)
class GraphBufferizePass(ModulePass):
    """Turn graph-level functions into mem IR: memref args, params as trailing args, kernel calls
    into fresh heap buffers, result buffers tagged `mem.result_slot`, deallocs after last use."""

    name = "graph-bufferize"

    max_inline_elements: int = 1024

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for f in [o for o in op.walk() if is_graph_function(o)]:
            assert isinstance(f, func.FuncOp)
            _FunctionBufferizer(f, self.max_inline_elements).run()
