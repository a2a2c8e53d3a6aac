"""Build loop kernels from Python: buffers, index arithmetic, loop nests and compute blocks.

The legalizer (graph-legalize) and the schedule primitives use this instead of wiring
`loop.for` / `loop.block` / `mem.*` / `arith.*` ops by hand:

    kb = KernelBuilder("relu_0", [x_type], [y_type])
    x, y = kb.args
    with kb.nest("relu", kb.dims(y)) as (b, ivs):   # loops + an all-spatial block, bound 1:1
        v = b.load(x, ivs)
        b.store(b.max(v, b.const(0.0, v.type)), y, ivs)
    kernel = kb.finish()

prints as

    func.func private @relu_0(%x: memref<?x4xf32>, %y: memref<?x4xf32>) attributes {loop.kernel} {
      %n = mem.dim %y, 0 : memref<?x4xf32>
      loop.for %i = %c0 to %n step %c1 {
        loop.for %j = %c0 to %c4 step %c1 {
          loop.block "relu" (%vi = %i, %vj = %j) [spatial, spatial] { ... }

Index arithmetic (`b.iadd`, `b.imul`, …) folds constants, so indices stay affine and small. Index
constants and `mem.dim` reads are emitted once, at the kernel entry (they are symbols for the
affine analysis). Element arithmetic (`b.add`, `b.max`, `b.cmp`, …) picks the float or integer
arith op from the operand type.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from xdsl.dialects import func
from xdsl.dialects.builtin import IndexType, MemRefType, StringAttr
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from minimlir.dialects import loop, mem
from minimlir.dialects.builder import (  # noqa: F401  (element_type, is_float, is_unsigned: re-exported)
    ConstPool,
    ElementBuilder,
    Index,
    element_type,
    is_float,
    is_unsigned,
)

__all__ = ["Emitter", "Index", "KernelBuilder", "element_type", "is_float", "is_unsigned"]


class Emitter(ElementBuilder):
    """Emits ops at an insertion point in a kernel: loads and stores here; the element arithmetic
    (`add`, `max`, `cmp`, `const`, `cast`, …) is the shared `minimlir.dialects.builder.ElementBuilder`'s
    and the index arithmetic (`iadd`, `imul`, `imin`, `icmp`, `affine`, …, folded) its base
    `Builder`'s, with the kernel's entry constants as its pool."""

    def __init__(self, kb: KernelBuilder, ip: InsertPoint):
        self.kb = kb
        self.ip = ip
        self.pool = kb.pool

    def at(self, ip: InsertPoint) -> Emitter:
        return Emitter(self.kb, ip)

    def load(self, buf: SSAValue, idx: Sequence[Index], result_type: Attribute | None = None) -> SSAValue:
        return self.emit(mem.LoadOp(buf, [self.index(i) for i in idx], result_type))

    def store(self, value: SSAValue, buf: SSAValue, idx: Sequence[Index]) -> None:
        self.emit(mem.StoreOp(value, buf, [self.index(i) for i in idx]))


class _EntryEmitter(Emitter):
    """Emits at the kernel entry, after the symbols emitted so far (so the values dominate every
    loop nest, wherever a schedule later moves it)."""

    def insert(self, op: Operation) -> Operation:
        self.kb._insert_entry(op)
        return op

    def emit(self, op: Operation) -> SSAValue:
        self.kb._insert_entry(op)
        return op.results[0] if op.results else None  # type: ignore[return-value]


class KernelBuilder:
    """One kernel `@name(inputs..., outputs...)`; `kb.args` are its buffers."""

    def __init__(self, name: str, input_types: Sequence[MemRefType], output_types: Sequence[MemRefType]):
        self.kernel = loop.make_kernel(name, input_types, output_types)
        entry = self.kernel.body.block
        self.args: tuple[SSAValue, ...] = tuple(entry.args)
        self.inputs = self.args[: len(input_types)]
        self.outputs = self.args[len(input_types):]
        ret = entry.last_op
        assert isinstance(ret, func.ReturnOp)
        self._entry_block = entry
        self._last_entry: Operation | None = None  # symbols (constants, dims) go first, in order
        self._body_ip = InsertPoint.before(ret)
        self.pool = ConstPool(entry, place=self._insert_entry)  # index constants, at the entry
        self._dims: dict[tuple[SSAValue, int], SSAValue] = {}
        # per input: what graph-legalize proved about its dims against the first output's
        # ("eq" / "one" / "" per dim: passes/graph/_symbolic_dims.broadcast_facts); read by the
        # broadcast plans of passes/graph/legalize/elementwise.py
        self.dim_facts: tuple[tuple[str, ...], ...] = ()
        self.top = Emitter(self, self._body_ip)
        self.entry = _EntryEmitter(self, self._body_ip)

    def _insert_entry(self, op: Operation) -> None:
        if self._last_entry is None:
            ip = InsertPoint.at_start(self._entry_block)
        else:
            ip = InsertPoint.after(self._last_entry)
        Rewriter.insert_op(op, ip)
        self._last_entry = op

    # -- symbols ---------------------------------------------------------------------------

    def iconst(self, value: int) -> SSAValue:
        """An index constant, emitted once at the kernel entry."""
        return self.top.constant(value)

    def const_value(self, v: Index) -> int | None:
        return self.top.const_value(v)

    def dim(self, buf: SSAValue, i: int) -> Index:
        """Extent `i` of `buf`: an int when static, else a `mem.dim` read once at the entry."""
        t = buf.type
        assert isinstance(t, MemRefType)
        size = t.get_shape()[i]
        if size >= 0:
            return size
        key = (buf, i)
        if key not in self._dims:
            op = mem.DimOp(buf, i)
            self._insert_entry(op)
            self._dims[key] = op.result
        return self._dims[key]

    def dims(self, buf: SSAValue) -> list[Index]:
        assert isinstance(buf.type, MemRefType)
        return [self.dim(buf, i) for i in range(buf.type.get_num_dims())]

    # -- structure -------------------------------------------------------------------------

    @contextmanager
    def loops(
        self,
        extents: Sequence[Index],
        kinds: Sequence[str] | None = None,
        at: Emitter | None = None,
    ) -> Iterator[tuple[Emitter, list[SSAValue]]]:
        """A perfect nest `for i_k in [0, extents[k])`, outermost first; yields an emitter inside
        the innermost body and the induction variables."""
        e = at or self.top
        ivs: list[SSAValue] = []
        for k, extent in enumerate(extents):
            kind = kinds[k] if kinds else "serial"
            for_op = loop.ForOp(self.iconst(0), e.index(extent), self.iconst(1), kind=kind)
            e.emit(for_op)
            ivs.append(for_op.induction_var)
            e = Emitter(self, InsertPoint.before(for_op.body.block.last_op))  # before loop.yield
        yield e, ivs

    @contextmanager
    def block(
        self,
        name: str,
        bindings: Sequence[Index],
        kinds: Sequence[str],
        at: Emitter,
        init: Callable[[Emitter, list[SSAValue]], None] | None = None,
    ) -> Iterator[tuple[Emitter, list[SSAValue]]]:
        """A `loop.block "name"` bound to `bindings`; yields an emitter in its body and the
        iteration variables. `init(emitter, iter_vars)` fills the init region (reductions)."""
        idx = [at.index(v) for v in bindings]
        blk = loop.BlockOp(name, idx, kinds, init=Block(arg_types=[IndexType()] * len(idx)) if init else None)
        at.emit(blk)
        if init is not None:
            init_block = blk.init.block
            init(Emitter(self, InsertPoint.before(init_block.last_op)), list(init_block.args))
        body = blk.body.block
        yield Emitter(self, InsertPoint.before(body.last_op)), list(body.args)

    @contextmanager
    def nest(
        self,
        name: str,
        extents: Sequence[Index],
        kinds: Sequence[str] | None = None,
        init: Callable[[Emitter, list[SSAValue]], None] | None = None,
        at: Emitter | None = None,
        loop_kinds: Sequence[str] | None = None,
    ) -> Iterator[tuple[Emitter, list[SSAValue]]]:
        """Loops over `extents` with one block bound 1:1 to them: the common case.
        `kinds` are the iteration kinds (default all spatial); reduce vars go innermost."""
        kinds = list(kinds) if kinds else ["spatial"] * len(extents)
        with self.loops(extents, loop_kinds, at=at) as (e, ivs):
            with self.block(name, ivs, kinds, e, init=init) as (b, vs):
                yield b, vs

    def finish(self) -> func.FuncOp:
        """The kernel, private (it is only ever called through graph.call_kernel)."""
        self.kernel.sym_visibility = StringAttr("private")
        return self.kernel
