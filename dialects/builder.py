"""The one IR builder: an insertion point, typed constants (hash-consed per function when a
`ConstPool` is given), integer arithmetic that folds constants and identities as it goes, and
block helpers for the control flow the lowerings build (a counted loop, if/then/else).

Every level uses it: the kernel builder of graph-legalize and the schedule (`Emitter` in
passes/loop/_kernel_builder.py, on `arith` over `index`), the graph-level shape arithmetic
(`GraphDims`, passes/graph/legalize/_common.py), the Schedule API's affine materialization
(passes/loop/schedule/ir.py) and the mem lowering (passes/to_llvm/mem.py, on `llvm` over i64,
via `LLVMBuilder`).

    b = Builder(InsertPoint.before(op))          # in place; ints become arith.constant here
    n = b.imul(b.iadd(i, 0), 4)                  # -> i * 4: one arith.muli, `i + 0` folded
    b.imul(3, 4)                                 # -> 12 (a Python int: nothing emitted)
    b.index(n)                                   # an int becomes a constant (an SSA value)

    pool = ConstPool(entry_block)                # one `arith.constant 4 : index` per function
    b = Builder(ip, pool)

An operand is an `Index`: an SSA value or a Python int. A fold returns an int when every
operand is a known constant (so chains of folds emit nothing), and the surviving value for an
identity (`x + 0`, `x * 1`, `x - 0`, `x / 1`, `min(x, x)`, `x * 0 -> 0`, `select(true, a, b)`).

`ElementBuilder` adds element arithmetic on scalars and vectors of any float or integer type
(`add`, `max`, `cmp`, `const`, `cast`, …: the float or integer `arith` op from the operand type):
what the element functions of graph ops are written with (minimlir.dialects.elementfn,
`_UnaryOp.element`); the kernel `Emitter` is one.

Block helpers (`if_then`, `counted_loop`) split the current block at the insertion point and
build the CFG the lowering docstrings draw; the subclass picks the branch ops (`cf.*` here,
`llvm.*` in `LLVMBuilder`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xdsl.dialects import arith, cf, llvm, math
from xdsl.dialects.builtin import (
    AnyFloat,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    Signedness,
    VectorType,
    i1,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.rewriter import BlockInsertPoint, InsertPoint, Rewriter
from xdsl.traits import IsTerminator

Index = SSAValue | int

_INDEX = IndexType()


def _fold_min(a: int, b: int) -> int:
    return min(a, b)


def _fold_max(a: int, b: int) -> int:
    return max(a, b)


def _floordiv(a: int, b: int) -> int:
    return a // b


def _ceildiv(a: int, b: int) -> int:
    return -(-a // b)


def _rem(a: int, b: int) -> int:  # arith.remsi: the sign of the dividend (C's %)
    r = abs(a) % abs(b)
    return -r if a < 0 else r


_CMP = {
    "eq": lambda a, b: a == b,
    "ne": lambda a, b: a != b,
    "lt": lambda a, b: a < b,
    "le": lambda a, b: a <= b,
    "gt": lambda a, b: a > b,
    "ge": lambda a, b: a >= b,
}


class ConstPool:
    """One constant per (value, type) per function: created once, at the function entry, and
    reused by every builder that shares the pool.

    `place(op)` inserts a new constant op where the pool keeps them (default: appended after the
    pool's earlier constants at the start of `entry`). `known` maps a pooled value back to its
    integer, so folding sees through them without inspecting the op."""

    def __init__(self, entry: Block | None = None, place: Callable[[Operation], None] | None = None):
        self.entry = entry
        self._place = place
        self._last: Operation | None = None
        self.values: dict[tuple[int, Attribute], SSAValue] = {}
        self.known: dict[SSAValue, int] = {}

    def place(self, op: Operation) -> None:
        if self._place is not None:
            self._place(op)
            return
        assert self.entry is not None
        ip = InsertPoint.at_start(self.entry) if self._last is None else InsertPoint.after(self._last)
        Rewriter.insert_op(op, ip)
        self._last = op

    def get(self, builder: Builder, value: int, typ: Attribute) -> SSAValue | None:
        """The pooled constant (made on first use); None where the pool does not apply."""
        key = (value, typ)
        v = self.values.get(key)
        if v is None:
            op = builder.make_constant(value, typ)
            self.place(op)
            v = self.values[key] = op.results[0]
            self.known[v] = value
        return v


class Builder:
    """Emits ops at an insertion point (`arith` on `index`/integers, `cf` branches)."""

    index_type: Attribute = _INDEX
    pool: ConstPool | None = None

    def __init__(self, ip: InsertPoint, pool: ConstPool | None = None):
        self.ip = ip
        self.pool = pool

    # -- emission ---------------------------------------------------------------------------

    def insert(self, op: Operation) -> Operation:
        """Insert `op` at the insertion point; return it."""
        Rewriter.insert_op(op, self.ip)
        return op

    def emit(self, op: Operation) -> SSAValue:
        """Insert `op`; return its single result (or its first result, if any)."""
        Rewriter.insert_op(op, self.ip)
        return op.results[0] if op.results else None  # type: ignore[return-value]

    def at(self, ip: InsertPoint) -> Builder:
        """A builder of the same kind at another point, sharing the constant pool."""
        b = object.__new__(type(self))
        b.__dict__.update(self.__dict__)
        b.ip = ip
        return b

    # -- constants --------------------------------------------------------------------------

    def make_constant(self, value: int, typ: Attribute) -> Operation:
        """The (unplaced) op of an integer constant of type `typ`."""
        return arith.ConstantOp(IntegerAttr(value, typ))

    def constant(self, value: int, typ: Attribute | None = None) -> SSAValue:
        """An integer constant: from the pool when there is one, else emitted here."""
        typ = typ or self.index_type
        if self.pool is not None:
            pooled = self.pool.get(self, value, typ)
            if pooled is not None:
                return pooled
        return self.emit(self.make_constant(value, typ))

    def index(self, v: Index) -> SSAValue:
        """`v` as an SSA value (an int becomes a constant of the index type)."""
        return self.constant(v) if isinstance(v, int) else v

    def const_value(self, v: Index) -> int | None:
        """The integer `v` is known to be, or None."""
        if isinstance(v, int):
            return v
        if self.pool is not None:
            c = self.pool.known.get(v)
            if c is not None:
                return c
        owner = v.owner
        if isinstance(owner, arith.ConstantOp | llvm.ConstantOp) and isinstance(owner.value, IntegerAttr):
            return owner.value.value.data
        return None

    # -- folded integer arithmetic ----------------------------------------------------------

    def binop(self, kind: str, a: SSAValue, b: SSAValue) -> SSAValue:
        """Emit the (unfolded) op `kind` in add/sub/mul/floordiv/ceildiv/rem/min/max."""
        return self.emit(_ARITH_BINOPS[kind](a, b))  # type: ignore[call-arg]

    def _fold(self, kind: str, a: Index, b: Index, fn: Callable[[int, int], int]) -> Index:
        ca, cb = self.const_value(a), self.const_value(b)
        if ca is not None and cb is not None:
            return fn(ca, cb)
        return self.binop(kind, self.index(a), self.index(b))

    def iadd(self, a: Index, b: Index) -> Index:
        ca, cb = self.const_value(a), self.const_value(b)
        if ca is not None and cb is not None:
            return ca + cb
        if cb == 0:
            return a
        if ca == 0:
            return b
        return self.binop("add", self.index(a), self.index(b))

    def isub(self, a: Index, b: Index) -> Index:
        ca, cb = self.const_value(a), self.const_value(b)
        if ca is not None and cb is not None:
            return ca - cb
        if cb == 0:
            return a
        return self.binop("sub", self.index(a), self.index(b))

    def imul(self, a: Index, b: Index) -> Index:
        ca, cb = self.const_value(a), self.const_value(b)
        if ca is not None and cb is not None:
            return ca * cb
        if cb == 1:
            return a
        if ca == 1:
            return b
        if ca == 0 or cb == 0:
            return 0
        return self.binop("mul", self.index(a), self.index(b))

    def ifloordiv(self, a: Index, b: Index) -> Index:
        if self.const_value(b) == 1:
            return a
        return self._fold("floordiv", a, b, _floordiv)

    def iceildiv(self, a: Index, b: Index) -> Index:
        if self.const_value(b) == 1:
            return a
        return self._fold("ceildiv", a, b, _ceildiv)

    def irem(self, a: Index, b: Index) -> Index:
        if self.const_value(b) == 1:
            return 0
        return self._fold("rem", a, b, _rem)

    def imin(self, a: Index, b: Index) -> Index:
        if a is b:
            return a
        return self._fold("min", a, b, _fold_min)

    def imax(self, a: Index, b: Index) -> Index:
        if a is b:
            return a
        return self._fold("max", a, b, _fold_max)

    def iclamp(self, a: Index, lo: Index, hi: Index) -> Index:
        """min(max(a, lo), hi)."""
        return self.imin(self.imax(a, lo), hi)

    def product(self, values: Sequence[Index]) -> Index:
        acc: Index = 1
        for v in values:
            acc = self.imul(acc, v)
        return acc

    def affine(self, terms: Sequence[tuple[Index, int]], const: int = 0) -> Index:
        """sum(coeff * value) + const, folded."""
        acc: Index = const
        for value, coeff in terms:
            acc = self.iadd(acc, self.imul(value, coeff))
        return acc

    def make_cmp(self, pred: str, a: SSAValue, b: SSAValue) -> Operation:
        """The (unplaced) signed compare op; pred in eq/ne/lt/le/gt/ge (or arith's slt, ult, …)."""
        ipred = pred if pred in ("eq", "ne") or pred[0] in "su" else "s" + pred
        return arith.CmpiOp(a, b, ipred)

    def icmp(self, pred: str, a: Index, b: Index) -> SSAValue:
        """Signed integer compare -> i1: a constant `true`/`false` when both sides are known."""
        ca, cb = self.const_value(a), self.const_value(b)
        if ca is not None and cb is not None:
            key = pred if pred in _CMP else pred[1:]
            return self.constant(int(_CMP[key](ca, cb)), i1)
        return self.emit(self.make_cmp(pred, self.index(a), self.index(b)))

    def select(self, c: SSAValue, a: SSAValue, b: SSAValue) -> SSAValue:
        """`c ? a : b`; folded when `c` is a known constant or both sides are the same value."""
        if a is b:
            return a
        cc = self.const_value(c)
        if cc is not None:
            return a if cc else b
        return self.emit(self.make_select(c, a, b))

    def make_select(self, c: SSAValue, a: SSAValue, b: SSAValue) -> Operation:
        return arith.SelectOp(c, a, b)

    # -- control flow -----------------------------------------------------------------------

    def make_br(self, dest: Block, args: Sequence[SSAValue] = ()) -> Operation:
        return cf.BranchOp(dest, *args)

    def make_cond_br(self, cond: SSAValue, then: Block, else_: Block, then_args=(), else_args=()) -> Operation:
        return cf.ConditionalBranchOp(cond, then, then_args, else_, else_args)

    def _split(self) -> tuple[Block, Block]:
        """Split the current block at the insertion point: (the block before, the rest)."""
        ip = self.ip
        pred = ip.block
        if ip.insert_before is None:
            cont = Block()
            Rewriter.insert_block(cont, BlockInsertPoint.after(pred))
        else:
            cont = pred.split_before(ip.insert_before)
        return pred, cont

    def if_then(
        self,
        cond: SSAValue,
        then: Callable[[Builder], None],
        else_: Callable[[Builder], None] | None = None,
    ) -> Builder:
        """`if cond { then } [else { else_ }]` as blocks; returns a builder at the join.

            ^pred: … cond_br %cond, ^then, ^else|^cont
            ^then: then(b) ; br ^cont          (no branch if `then` ended in a terminator)
            ^else: else_(b) ; br ^cont
            ^cont: the ops that followed the insertion point
        """
        pred, cont = self._split()
        then_block = Block()
        blocks = [then_block]
        else_block = None
        if else_ is not None:
            else_block = Block()
            blocks.append(else_block)
        Rewriter.insert_block(blocks, BlockInsertPoint.before(cont))
        pred.add_op(self.make_cond_br(cond, then_block, else_block or cont))
        for block, fill in ((then_block, then), (else_block, else_)):
            if block is None or fill is None:
                continue
            fill(self.at(InsertPoint.at_end(block)))
            last = block.last_op
            if last is None or not last.has_trait(IsTerminator):
                block.add_op(self.make_br(cont))
        return self.at(InsertPoint.at_start(cont) if cont.first_op is None else InsertPoint.before(cont.first_op))

    def counted_loop(self, n: Index, body: Callable[[Builder, SSAValue], None]) -> Builder:
        """for (i = 0; i < n; ++i) body(b, i), as blocks; returns a builder after the loop.

            ^pred: br ^hdr(0) ; ^hdr(%i): cond_br %i < %n, ^body, ^cont
            ^body: body(%i) ; br ^hdr(%i + 1) ; ^cont: the ops that followed the insertion point
        """
        zero = self.index(0)
        pred, cont = self._split()
        hdr, loop_block = Block(arg_types=[self.index_type]), Block()
        Rewriter.insert_block([hdr, loop_block], BlockInsertPoint.before(cont))
        pred.add_op(self.make_br(hdr, [zero]))
        i = hdr.args[0]
        hb = self.at(InsertPoint.at_end(hdr))
        more = hb.emit(hb.make_cmp("slt", i, hb.index(n)))
        hdr.add_op(self.make_cond_br(more, loop_block, cont))
        lb = self.at(InsertPoint.at_end(loop_block))
        body(lb, i)
        nxt = lb.iadd(i, 1)
        loop_block.add_op(self.make_br(hdr, [lb.index(nxt)]))
        return self.at(InsertPoint.at_start(cont) if cont.first_op is None else InsertPoint.before(cont.first_op))


_ARITH_BINOPS: dict[str, type[Operation]] = {
    "add": arith.AddiOp,
    "sub": arith.SubiOp,
    "mul": arith.MuliOp,
    "floordiv": arith.FloorDivSIOp,
    "ceildiv": arith.CeilDivSIOp,
    "rem": arith.RemSIOp,
    "min": arith.MinSIOp,
    "max": arith.MaxSIOp,
}

# ----------------------------------------------------------------------------------------------
# the llvm flavour: i64 arithmetic with `nsw`, llvm.mlir.constant, llvm branches

_NSW_FLAGS = IntegerAttr(llvm.OverflowAttr([llvm.OverflowFlag.NO_SIGNED_WRAP]).to_int(), 32)
_CONST_ATTRS: dict[tuple[int, Attribute], IntegerAttr] = {}  # attributes are immutable: share them
_LLVM_BINOPS: dict[str, type[Operation]] = {"add": llvm.AddOp, "sub": llvm.SubOp, "mul": llvm.MulOp}


def const_attr(value: int, typ: Attribute) -> IntegerAttr:
    """A shared `IntegerAttr(value, typ)` (building attributes is a measurable cost when lowering)."""
    attr = _CONST_ATTRS.get((value, typ))
    if attr is None:
        attr = _CONST_ATTRS[(value, typ)] = IntegerAttr(value, typ)
    return attr


class LLVMBuilder(Builder):
    """The same builder on the llvm dialect: i64 values, `nsw` add/sub/mul, llvm.icmp, llvm.br."""

    index_type = i64

    def make_constant(self, value: int, typ: Attribute) -> Operation:
        return llvm.ConstantOp(const_attr(value, typ), typ)

    def binop(self, kind: str, a: SSAValue, b: SSAValue) -> SSAValue:
        op = _LLVM_BINOPS.get(kind)
        if op is None:
            raise NotImplementedError(f"LLVMBuilder: no llvm op for '{kind}' (only add/sub/mul)")
        return self.emit(op(a, b, overflow=_NSW_FLAGS))

    def make_cmp(self, pred: str, a: SSAValue, b: SSAValue) -> Operation:
        ipred = pred if pred in ("eq", "ne") or pred[0] in "su" else "s" + pred
        flag = const_attr(llvm.ICmpPredicateFlag(ipred).to_int(), i64)
        return llvm.ICmpOp(a, b, flag)

    def make_select(self, c: SSAValue, a: SSAValue, b: SSAValue) -> Operation:
        return llvm.SelectOp(c, a, b)

    def make_br(self, dest: Block, args: Sequence[SSAValue] = ()) -> Operation:
        return llvm.BrOp(dest, *args)

    def make_cond_br(self, cond: SSAValue, then: Block, else_: Block, then_args=(), else_args=()) -> Operation:
        return llvm.CondBrOp(cond, then, list(then_args), else_, list(else_args))


# ----------------------------------------------------------------------------------------------
# element arithmetic: scalar (or vector) values of any float / integer type, for the element
# functions of graph ops (minimlir.dialects.elementfn, `_UnaryOp.element`) and the kernels


def element_type(t: Attribute) -> Attribute:
    """The scalar type of a scalar or vector type."""
    return t.element_type if isinstance(t, VectorType) else t


def is_unsigned(t: Attribute) -> bool:
    """An unsigned integer element type (ui8 ... ui64: ONNX uint8 ... uint64)."""
    t = element_type(t)
    return isinstance(t, IntegerType) and t.signedness.data == Signedness.UNSIGNED


def is_float(t: Attribute) -> bool:
    return isinstance(element_type(t), AnyFloat)


class ElementBuilder(Builder):
    """The builder with element arithmetic: `b.add`, `b.max`, `b.cmp`, `b.const`, `b.cast`, … pick the
    float or integer `arith` op (signed, or unsigned for ui8 ... ui64) from the operand type; math ops
    through `b.emit(math.XOp(v))` or `b.math(math.XOp, v)`. Element constants are emitted in place
    (they may live inside a loop); the index arithmetic is `Builder`'s. The kernel builder's `Emitter`
    (passes/loop/_kernel_builder.py) is one, with loads and stores."""

    def and_(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.emit(arith.AndIOp(a, b))

    def xor(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.emit(arith.XOrIOp(a, b))

    def shrui(self, a: SSAValue, bits: int) -> SSAValue:
        """Logical (zero-filling) shift right of an integer by a constant number of bits."""
        return self.emit(arith.ShRUIOp(a, self.const(bits, element_type(a.type))))

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
