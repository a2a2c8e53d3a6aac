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

from xdsl.dialects import arith, func, math
from xdsl.dialects.builtin import (
    AnyFloat,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    Signedness,
    StringAttr,
    VectorType,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from minimlir.dialects import loop, mem
from minimlir.dialects.builder import Builder, ConstPool, Index

__all__ = ["Emitter", "Index", "KernelBuilder", "element_type", "is_float", "is_unsigned"]


def element_type(t: Attribute) -> Attribute:
    """The scalar type of a scalar or vector type."""
    return t.element_type if isinstance(t, VectorType) else t


def is_unsigned(t: Attribute) -> bool:
    """An unsigned integer element type (ui8 ... ui64: ONNX uint8 ... uint64)."""
    t = element_type(t)
    return isinstance(t, IntegerType) and t.signedness.data == Signedness.UNSIGNED


def is_float(t: Attribute) -> bool:
    return isinstance(element_type(t), AnyFloat)


class Emitter(Builder):
    """Emits ops at an insertion point; all element/index arithmetic helpers live here. The
    index arithmetic (`iadd`, `imul`, `imin`, `icmp`, `affine`, …, folded) is the shared
    `minimlir.dialects.builder.Builder`'s, with the kernel's entry constants as its pool."""

    def __init__(self, kb: KernelBuilder, ip: InsertPoint):
        self.kb = kb
        self.ip = ip
        self.pool = kb.pool

    def at(self, ip: InsertPoint) -> Emitter:
        return Emitter(self.kb, ip)

    def and_(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.emit(arith.AndIOp(a, b))

    # -- element arithmetic ----------------------------------------------------------------

    def const(self, value: float | int | bool, t: Attribute) -> SSAValue:
        """A scalar constant of type `t` (emitted here, so it may live inside a loop)."""
        if isinstance(t, AnyFloat):
            return self.emit(arith.ConstantOp(FloatAttr(float(value), t)))
        assert isinstance(t, IntegerType | IndexType), t
        if is_unsigned(t):  # arith.constant is signless: the same bits, then bitcast to ui<w>
            w = t.width.data
            bits = int(value) % (1 << w)
            signless = IntegerType(w)
            c = self.emit(arith.ConstantOp(IntegerAttr(bits - (1 << w) if bits >= 1 << (w - 1) else bits, signless)))
            return self.emit(arith.BitcastOp(c, t))
        return self.emit(arith.ConstantOp(IntegerAttr(int(value), t)))

    def load(self, buf: SSAValue, idx: Sequence[Index], result_type: Attribute | None = None) -> SSAValue:
        return self.emit(mem.LoadOp(buf, [self.index(i) for i in idx], result_type))

    def store(self, value: SSAValue, buf: SSAValue, idx: Sequence[Index]) -> None:
        self.emit(mem.StoreOp(value, buf, [self.index(i) for i in idx]))

    def _bin(self, fop: type[Operation], iop: type[Operation], a: SSAValue, b: SSAValue) -> SSAValue:
        return self.emit((fop if is_float(a.type) else iop)(a, b))  # type: ignore[call-arg]

    def add(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self._bin(arith.AddfOp, arith.AddiOp, a, b)

    def sub(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self._bin(arith.SubfOp, arith.SubiOp, a, b)

    def mul(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self._bin(arith.MulfOp, arith.MuliOp, a, b)

    def div(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self._bin(arith.DivfOp, arith.DivUIOp if is_unsigned(a.type) else arith.DivSIOp, a, b)

    def max(self, a: SSAValue, b: SSAValue) -> SSAValue:
        """NaN-propagating maximum for floats (ONNX/NumPy semantics), signed max for ints
        (unsigned for ui8 ... ui64)."""
        return self._bin(arith.MaximumfOp, arith.MaxUIOp if is_unsigned(a.type) else arith.MaxSIOp, a, b)

    def min(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self._bin(arith.MinimumfOp, arith.MinUIOp if is_unsigned(a.type) else arith.MinSIOp, a, b)

    def neg(self, a: SSAValue) -> SSAValue:
        if is_float(a.type):
            return self.emit(arith.NegfOp(a))
        return self.sub(self.const(0, a.type), a)

    def cmp(self, pred: str, a: SSAValue, b: SSAValue) -> SSAValue:
        """pred in eq/ne/lt/le/gt/ge: ordered float compare, signed integer compare (i1: unsigned)."""
        if is_float(a.type):
            return self.emit(arith.CmpfOp(a, b, "o" + pred if pred != "ne" else "une"))
        t = element_type(a.type)
        sign = "u" if isinstance(t, IntegerType) and (t.width.data == 1 or is_unsigned(t)) else "s"  # false < true
        ipred = pred if pred in ("eq", "ne") else sign + pred
        return self.emit(arith.CmpiOp(a, b, ipred))

    def math(self, op_cls: type[Operation], a: SSAValue) -> SSAValue:
        """A unary math-dialect op, e.g. `b.math(math.ExpOp, v)`."""
        return self.emit(op_cls(a))  # type: ignore[call-arg]

    def exp(self, a: SSAValue) -> SSAValue:
        return self.emit(math.ExpOp(a))

    def log(self, a: SSAValue) -> SSAValue:
        return self.emit(math.LogOp(a))

    def sqrt(self, a: SSAValue) -> SSAValue:
        return self.emit(math.SqrtOp(a))

    def cast(self, v: SSAValue, to: Attribute) -> SSAValue:
        """Numeric conversion between float, integer (signed; i1 as bool) and index types."""
        src = v.type
        if src == to:
            return v
        if isinstance(src, IntegerType) and isinstance(to, IntegerType) and src.width == to.width:
            if to.width.data == 1 or src.signedness == to.signedness:
                return v
            return self.emit(arith.BitcastOp(v, to))  # i8 <-> ui8: the same bits
        if is_unsigned(src) and isinstance(to, IndexType):
            if src.width.data < 64:
                v = self.emit(arith.ExtUIOp(v, IntegerType(64)))
            return self.emit(arith.IndexCastOp(v, to))
        if isinstance(src, IndexType) or isinstance(to, IndexType):
            if isinstance(src, IndexType) and isinstance(to, AnyFloat):
                v = self.emit(arith.IndexCastOp(v, IntegerType(64)))
                return self.emit(arith.SIToFPOp(v, to))
            if isinstance(to, IndexType) and isinstance(src, AnyFloat):
                v = self.emit(arith.FPToSIOp(v, IntegerType(64)))
                src = v.type
            return self.emit(arith.IndexCastOp(v, to))
        if isinstance(src, AnyFloat) and isinstance(to, AnyFloat):
            if src.bitwidth < to.bitwidth:
                return self.emit(arith.ExtFOp(v, to))
            return self.emit(arith.TruncFOp(v, to))
        if isinstance(src, IntegerType) and isinstance(to, AnyFloat):
            if src.width.data == 1 or is_unsigned(src):
                return self.emit(arith.UIToFPOp(v, to))
            return self.emit(arith.SIToFPOp(v, to))
        if isinstance(src, AnyFloat) and isinstance(to, IntegerType):
            if to.width.data == 1:  # bool(x): x != 0
                return self.emit(arith.CmpfOp(v, self.const(0.0, src), "une"))
            if is_unsigned(to):
                return self.emit(arith.FPToUIOp(v, to))
            return self.emit(arith.FPToSIOp(v, to))
        assert isinstance(src, IntegerType) and isinstance(to, IntegerType)
        if to.width.data == 1:
            return self.emit(arith.CmpiOp(v, self.const(0, src), "ne"))
        if src.width.data < to.width.data:
            if src.width.data == 1 or is_unsigned(src):
                return self.emit(arith.ExtUIOp(v, to))
            return self.emit(arith.ExtSIOp(v, to))
        return self.emit(arith.TruncIOp(v, to))


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
