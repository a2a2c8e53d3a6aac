"""Lower the `mem` dialect to `llvm`: the memref ABI, getelementptr addressing, libc allocation.

The ABI (passes/_memref_abi.py): a memref value is a `!llvm.ptr` to element 0 plus one i64 per
`?` dim. Function signatures are expanded in place (the func.func stays for
convert-func-to-llvm), inside a body the memref is rebuilt by a cast that later ops look through:

    func.func @k(%a: memref<?x4xf32>) attributes {loop.kernel}
  ->
    func.func @k(%p: !llvm.ptr {llvm.noalias}, %n: i64) attributes {loop.kernel}
      %a = builtin.unrealized_conversion_cast %p, %n : !llvm.ptr, i64 to memref<?x4xf32>

    %v = mem.load %a[%i, %j] : memref<?x4xf32> -> f32
  ->
    %t = llvm.mul %i, %c4 overflow<nsw> : i64             // row-major linear index
    %l = llvm.add %t, %j overflow<nsw> : i64
    %q = llvm.getelementptr inbounds %p[%l] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    %v = llvm.load %q {alignment = 4 : i64} : !llvm.ptr -> f32

Vector loads/stores are `llvm.load`/`llvm.store` of the vector type aligned to the element.
Allocation:

    mem.alloc (align A)   -> aligned_alloc(A, max(round_up(bytes, A), A))     (libc)
    mem.arena             -> aligned_alloc(64, …) of its size
    mem.dealloc           -> free(ptr)
    mem.alloca (static)   -> llvm.alloca hoisted to the function's entry block (no stack growth
                             in loops); dynamic: llvm.alloca in place
    mem.view / mem.slot   -> the same pointer / a byte gep into the arena, dims from operands
    mem.dim               -> the descriptor's i64 (a constant when static)
    mem.copy              -> llvm.memcpy intrinsic;  mem.fill -> llvm.memset for a +0 value,
                             else a store loop

Entry ABI (public function returning memrefs; layout in passes/_memref_abi.py). The function
becomes `(expanded args…, %results: !llvm.ptr) -> i32`. Each returned buffer is a
`mem.alloc {mem.result_slot = i}` (graph-bufferize makes them; a returned value that is not
such an alloc gets a fresh one plus a mem.copy here), lowered to:

    ^bb:     %raw = load slot[off] : i64 ;  %isnull = icmp eq %raw, 0
             cond_br %isnull, ^alloc, ^check
    ^check:  %given = load slot[off] : !llvm.ptr
             %ok = and(icmp eq slot[off+1+k], dim_k …)
             cond_br %ok, ^join(%given), ^fail
    ^fail:   free(live heap buffers) ; store dim_k -> slot[off+1+k] ; return 1 : i32
                                                   // caller's out= has the wrong shape
    ^alloc:  %p = aligned_alloc(…) ;  cond_br %p == null, ^oom, ^ok
    ^ok:     store %p -> slot[off] ;  br ^join(%p)
    ^oom:    free(live heap buffers) ;  return 2 : i32               // out of memory
    ^join(%buf):  store dim_k -> slot[off+1+k] …  (rest of ^bb)

and every func.return returns `0 : i32`. Every other heap allocation of an entry function
(the mem-plan arena, unplanned mem.alloc) is null-checked the same way (status 2). "Live heap
buffers" are the non-result mem.alloc / mem.arena of the same block allocated before and not
yet deallocated: an error return leaks nothing. Result buffers already malloc'd sit in their
slots, and the runtime frees them on any non-zero status. (Allocations inside kernels are not
checked: kernels return void.)

Each mem op is one pattern (`lower_load`, `lower_store`, … ; the producers `lower_producer`), run
by the conversion driver (passes/to_llvm/_conversion.py); ends with its legality check, located:
`f.mlir:3:5: error: failed to legalize operation 'mem.X'`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func, llvm
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    ArrayAttr,
    DictionaryAttr,
    FloatAttr,
    FunctionType,
    IndexType,
    IntegerType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
    UnitAttr,
    UnrealizedConversionCastOp,
    VectorType,
    i1,
    i8,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, BlockArgument, Operation, OpResult, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter
from xdsl.rewriter import BlockInsertPoint, InsertPoint, Rewriter
from xdsl.utils.exceptions import DiagnosticException

from minimlir.dialects import mem
from minimlir.dialects.builder import Builder, ConstPool, LLVMBuilder
from minimlir.dialects.loop import is_kernel
from minimlir.passes.loop.inplace import aliased_args
from minimlir.dialects import llvm_ext as ext
from minimlir.passes.to_llvm import _checks
from minimlir.passes._diagnostics import emit_error
from minimlir.passes.to_llvm._common import convert_type, from_llvm, report_illegal, to_llvm
from minimlir.passes.to_llvm._conversion import ConversionDriver
from minimlir.passes.to_llvm._memref_abi import (
    ENTRY_ATTR,
    RESULT_SLOT_ATTR,
    element_bytes,
    expand_memref,
    is_entry,
    llvm_element_type,
    slot_offsets,
)

PTR = llvm.LLVMPointerType()
NSW = llvm.OverflowAttr([llvm.OverflowFlag.NO_SIGNED_WRAP])
# The property llvm.MulOp/AddOp store for NSW, built once (the ops would build a new IntegerAttr
# from the OverflowAttr on every construction: a tenth of this pass on DenseNet).
_NSW_FLAGS = IntegerAttr(NSW.to_int(), 32)
_CONST_ATTRS: dict[tuple[int, Attribute], IntegerAttr] = {}  # attributes are immutable: share them
_I32_MIN, _I32_MAX = -(2**31), 2**31 - 1

Dim = SSAValue | int  # an i64 value, or a static size
_PRODUCERS = (mem.AllocOp, mem.AllocaOp, mem.ArenaOp, mem.ViewOp, mem.SubrangeOp, mem.SlotOp)


class _MemConsts(ConstPool):
    """`MemLowering.pooled_const` as the builder's pool."""

    def __init__(self, low: MemLowering):
        super().__init__()
        self.low = low

    def get(self, builder: Builder, value: int, typ: Attribute) -> SSAValue | None:
        return self.low.pooled_const(builder.ip.block, value, typ)


class _Emitter(LLVMBuilder):
    """Inserts llvm ops before `anchor`: the shared builder on i64 (`nsw` add/mul folding the
    arithmetic of static sizes).

    With a `MemLowering` (`low`), constants come from its per-function pool (entry block) and
    index operands from its per-value i64 views (one cast right after the definition)."""

    def __init__(self, anchor: Operation, low: MemLowering | None = None):
        self.anchor = anchor
        super().__init__(InsertPoint.before(anchor), low.const_pool if low is not None else None)
        self.low = low

    @property
    def ip(self) -> InsertPoint:  # type: ignore[override]
        """Before `anchor` (recomputed: a split moves the anchor to another block)."""
        return InsertPoint.before(self.anchor) if self.anchor is not None else self._ip

    @ip.setter
    def ip(self, ip: InsertPoint) -> None:
        self._ip = ip

    def at(self, ip: InsertPoint) -> _Emitter:
        """An emitter at `ip` (no anchor: for the blocks the builder's helpers make)."""
        e = object.__new__(_Emitter)
        e.anchor, e.ip, e.pool, e.low = None, ip, self.pool, self.low
        return e

    def __call__(self, op: Operation) -> Operation:
        return self.insert(op)

    def const(self, value: int, typ: Attribute = i64) -> SSAValue:
        return self.constant(value, typ)

    def value(self, d: Dim) -> SSAValue:
        return self.constant(d) if isinstance(d, int) else d

    def const_value(self, v: Dim) -> int | None:  # only ints fold here: values are never inspected
        return v if isinstance(v, int) else None

    def index(self, v: Dim) -> SSAValue:
        """An int as an i64 constant; an `index` operand as i64 (a cast, folded once its
        producer is lowered)."""
        if isinstance(v, int):
            return self.constant(v)
        if not isinstance(v.type, IndexType):
            return v
        if self.low is not None:
            return self.low.as_i64(v)
        return to_llvm(v, None, self.anchor)

    def mul(self, a: Dim, b: Dim) -> Dim:
        return self.imul(a, b)

    def add(self, a: Dim, b: Dim) -> Dim:
        return self.iadd(a, b)

    def icmp(self, a: Dim, b: Dim, pred: str) -> SSAValue:  # type: ignore[override]
        return self.emit(self.make_cmp(pred, self.value(a), self.value(b)))

    def gep(self, ptr: SSAValue, offset: Dim, elem: Attribute) -> SSAValue:
        if offset == 0:
            return ptr
        if isinstance(offset, int) and _I32_MIN <= offset <= _I32_MAX:
            # a constant index lives in the gep itself (rawConstantIndices, sign-extended i32)
            op = llvm.GEPOp(ptr, [offset], elem, inbounds=True)
        else:
            op = llvm.GEPOp.from_mixed_indices(ptr, [self.value(offset)], elem, inbounds=True)
        return self(op).results[0]


def _is_bool(t: Attribute) -> bool:
    return isinstance(t, IntegerType) and t.width.data == 1


def _as_bytes(t: Attribute) -> Attribute:
    """i1 -> i8 and vector<Nxi1> -> vector<Nxi8>: how booleans are laid out in memory.

    LLVM stores `<8 x i1>` as one byte of packed bits, but an i1 buffer holds one byte per
    element, as NumPy's bool does, and is read element by element elsewhere."""
    if isinstance(t, VectorType):
        return VectorType(i8, t.get_shape())
    return i8


def _const_attr(value: int, typ: Attribute) -> IntegerAttr:
    attr = _CONST_ATTRS.get((value, typ))
    if attr is None:
        attr = _CONST_ATTRS[(value, typ)] = IntegerAttr(value, typ)
    return attr


def _entry_block(block: Block | None) -> Block | None:
    """The entry block of the function whose body holds `block` (None if not a function body)."""
    region = block.parent if block is not None else None
    if region is None or not isinstance(region.parent, func.FuncOp | llvm.FuncOp):
        return None
    return region.blocks[0]


def _after_def(v: SSAValue) -> InsertPoint:
    """Right after the definition of `v`: a point that dominates every use of `v`."""
    if isinstance(v, OpResult):
        return InsertPoint.after(v.owner)
    assert isinstance(v, BlockArgument)
    return InsertPoint.at_start(v.block)


def _const_int(v: SSAValue) -> int | None:
    """The integer `v` is a constant of (through a 1:1 cast), or None."""
    owner = v.owner
    if isinstance(owner, UnrealizedConversionCastOp) and len(owner.inputs) == 1:
        return _const_int(owner.inputs[0])
    if isinstance(owner, llvm.ConstantOp | arith.ConstantOp):
        value = owner.value
        if isinstance(value, IntegerAttr):
            return value.value.data
    return None


def _is_positive_zero(v: SSAValue) -> bool:
    owner = v.owner
    if isinstance(owner, UnrealizedConversionCastOp) and len(owner.inputs) == 1:
        return _is_positive_zero(owner.inputs[0])
    if isinstance(owner, arith.ConstantOp | llvm.ConstantOp):
        value = owner.value
        if isinstance(value, IntegerAttr):
            return value.value.data == 0
        if isinstance(value, FloatAttr):
            f = value.value.data
            return f == 0.0 and math.copysign(1.0, f) > 0
    return False


def _func_of(op: Operation) -> func.FuncOp:
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, func.FuncOp):
        parent = parent.parent_op()
    if parent is None:
        raise DiagnosticException(f"'{op.name}' must be inside a func.func")
    return parent


def _memref_type(v: SSAValue) -> MemRefType:
    assert isinstance(v.type, MemRefType)
    return v.type


_STRIDES: dict[tuple[int, ...], tuple[int, ...]] = {}


def _strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """Row-major element strides of a static shape."""
    r = _STRIDES.get(shape)
    if r is None:
        out = []
        n = 1
        for d in reversed(shape):
            out.append(n)
            n *= d
        r = _STRIDES[shape] = tuple(reversed(out))
    return r


def _dims(t: MemRefType, dynamic: Sequence[SSAValue]) -> list[Dim]:
    """Every dim of `t`: ints for static dims, the descriptor's i64 values for `?`."""
    out: list[Dim] = []
    it = iter(dynamic)
    for d in t.get_shape():
        out.append(next(it) if d == DYNAMIC_INDEX else d)
    return out


def _erase(op: Operation) -> None:
    op.detach()
    op.erase()


def _replace(op: Operation, values: Sequence[SSAValue]) -> None:
    for old, new in zip(op.results, values, strict=True):
        old.replace_all_uses_with(new)
    _erase(op)


class MemLowering:
    """One module's mem -> llvm rewrite (signatures, producers, then consumers)."""

    def __init__(self, module: ModuleOp, checks: bool = False):
        self.module = module
        # checked mode (passes/to_llvm/_checks.py): bounds guards on accesses, poison in fresh buffers
        self.checker = _checks.Instrumenter(module) if checks else None
        self.results_arg: dict[func.FuncOp, SSAValue] = {}
        self.slot_offsets: dict[func.FuncOp, list[int]] = {}
        # entry functions: heap alloc -> the non-result heap buffers live right before it
        self.live_before: dict[Operation, list[Operation]] = {}
        self.heap_ptr: dict[Operation, SSAValue] = {}  # lowered alloc/arena -> its pointer
        self.symbols: set[str] | None = None  # top-level symbol names (declare)
        # Caches that make addressing cheap (building an xDSL op costs tens of microseconds):
        self.consts: dict[tuple[Block, int, Attribute], SSAValue] = {}  # (entry block, value, type)
        self.i64_of: dict[SSAValue, SSAValue] = {}  # index value -> its i64 view
        self.scaled: dict[tuple[SSAValue, int], SSAValue] = {}  # (i64 value, stride) -> product
        self.sums: dict[tuple, SSAValue] = {}  # (block, terms, constant) -> linear offset
        self.bases: dict[tuple, SSAValue] = {}  # (block, ptr, element type, terms) -> gep
        self.products: dict[tuple, SSAValue] = {}  # dynamic strides and index * stride products
        self.const_pool = _MemConsts(self)
        self.memref_casts: list[Operation] = []  # the casts that rebuild memrefs (erased at the end)

    # ------------------------------------------------------------ shared values

    def pooled_const(self, block: Block | None, value: int, typ: Attribute) -> SSAValue | None:
        """One `llvm.mlir.constant` per (function, value, type), at the start of the entry block
        (None when `block` is not directly in a function body)."""
        entry = _entry_block(block)
        if entry is None:
            return None
        key = (entry, value, typ)
        v = self.consts.get(key)
        if v is None:
            op = llvm.ConstantOp(_const_attr(value, typ), typ)
            Rewriter.insert_op(op, InsertPoint.at_start(entry))
            v = self.consts[key] = op.results[0]
        return v

    def as_i64(self, v: SSAValue) -> SSAValue:
        """`v` (an index) as i64: one cast per value, right after its definition (so it
        dominates every use, and every later address reuses it)."""
        target = convert_type(v.type)
        if v.type == target:
            return v
        r = self.i64_of.get(v)
        if r is not None:
            return r
        owner = v.owner
        if (
            isinstance(owner, UnrealizedConversionCastOp)
            and len(owner.inputs) == 1
            and owner.inputs[0].type == target
        ):
            r = owner.inputs[0]
        else:
            cast = UnrealizedConversionCastOp.get([v], [target])
            Rewriter.insert_op(cast, _after_def(v))
            r = cast.results[0]
        self.i64_of[v] = r
        return r

    def scale(self, v: SSAValue, stride: int) -> SSAValue:
        """`v * stride` (i64, nsw), one per (value, stride), right after the definition of `v`."""
        if stride == 1:
            return v
        key = (v, stride)
        r = self.scaled.get(key)
        if r is not None:
            return r
        at = _after_def(v)
        c = None
        entry = _entry_block(at.block)
        if entry is not None and entry is not at.block:  # the pool (entry start) dominates `at`
            c = self.pooled_const(entry, stride, i64)
        if c is None:  # `v` is defined in the entry block: a constant of its own, before the mul
            const = llvm.ConstantOp(_const_attr(stride, i64), i64)
            Rewriter.insert_op(const, at)
            at = InsertPoint.after(const)
            c = const.results[0]
        mul = llvm.MulOp(v, c, overflow=_NSW_FLAGS)
        Rewriter.insert_op(mul, at)
        r = self.scaled[key] = mul.results[0]
        return r

    def dynamic_strides(self, dims: list[Dim]) -> list[tuple[int, SSAValue | None]] | None:
        """Row-major strides of a shape with dynamic dims, each as (static factor, product of
        the later dynamic dims or None). The products are built once per function, at the start
        of its entry block; None (Horner form instead) unless every dynamic dim is an argument
        of a function's entry block (a kernel's descriptor), where they dominate every access."""
        dyn = [d for d in dims if not isinstance(d, int)]
        for d in dyn:
            if not isinstance(d, BlockArgument) or _entry_block(d.block) is not d.block:
                return None
        out: list[tuple[int, SSAValue | None]] = []
        static = 1
        later: tuple[SSAValue, ...] = ()
        for d in reversed(dims):
            out.append((static, self.dim_product(later) if later else None))
            if isinstance(d, int):
                static *= d
            else:
                later = (d, *later)
        out.reverse()
        return out

    def dim_product(self, dims: tuple[SSAValue, ...]) -> SSAValue:
        """d_0 * d_1 * … (nsw) of entry-block arguments, once per function, at its entry start."""
        if len(dims) == 1:
            return dims[0]
        r = self.products.get(dims)
        if r is None:
            rest = self.dim_product(dims[1:])
            mul = llvm.MulOp(dims[0], rest, overflow=_NSW_FLAGS)
            at = InsertPoint.after(rest.owner) if isinstance(rest, OpResult) else InsertPoint.at_start(dims[0].block)
            Rewriter.insert_op(mul, at)
            r = self.products[dims] = mul.results[0]
        return r

    def times(self, b: _Emitter, v: SSAValue, prod: SSAValue) -> SSAValue:
        """`v * prod` (`prod` from `dim_product`), one per pair: right after the definition of
        `v` when that is in a nested block (hoisted out of inner loops), else before `b.anchor`."""
        entry = _entry_block(b.anchor.parent)
        nested = (isinstance(v, OpResult) and v.owner.parent is not entry) or (
            isinstance(v, BlockArgument) and v.block is not entry)
        key = (v, prod) if nested else (b.anchor.parent, v, prod)
        r = self.products.get(key)
        if r is None:
            mul = llvm.MulOp(v, prod, overflow=_NSW_FLAGS)
            Rewriter.insert_op(mul, _after_def(v) if nested else InsertPoint.before(b.anchor))
            r = self.products[key] = mul.results[0]
        return r

    def linear_sum(self, b: _Emitter, terms: list[SSAValue], offset: int) -> Dim:
        """sum(terms) + offset, before `b.anchor`; sums (and their prefixes) are shared within
        a block (an earlier one in the same block dominates)."""
        if not terms:
            return offset
        block = b.anchor.parent
        acc = terms[0]
        for k in range(1, len(terms)):
            key = (block, *terms[: k + 1])
            r = self.sums.get(key)
            if r is None:
                r = self.sums[key] = b.add(acc, terms[k])
            acc = r
        if offset:
            key = (block, *terms, offset, None)  # `None` keeps it apart from a terms-only key
            r = self.sums.get(key)
            if r is None:
                r = self.sums[key] = b.add(acc, offset)
            acc = r
        return acc

    # ------------------------------------------------------------ runtime declarations

    def declare(self, name: str, inputs: list[Attribute], output: Attribute | None) -> None:
        if self.symbols is None:  # SymbolTable.lookup_symbol scans the module: scan once
            self.symbols = {
                o.sym_name.data for o in self.module.body.block.ops
                if isinstance(getattr(o, "sym_name", None), StringAttr)
            }
        if name in self.symbols:
            return
        self.symbols.add(name)
        fn_type = llvm.LLVMFunctionType(inputs, output if output is not None else llvm.LLVMVoidType())
        decl = llvm.FuncOp(name, fn_type, linkage=llvm.LinkageAttr("external"))
        self.module.body.block.add_op(decl)

    def aligned_alloc(self, b: _Emitter, nbytes: Dim, align: int) -> SSAValue:
        """aligned_alloc(align, max(round_up(nbytes, align), align)): C11 wants a multiple."""
        self.declare("aligned_alloc", [i64, i64], PTR)
        if isinstance(nbytes, int):
            size: SSAValue = b.const(max(-(-nbytes // align) * align, align))
        else:
            bumped = b.add(nbytes, align - 1)
            rounded = b(llvm.AndOp(b.value(bumped), b.const(-align))).results[0]
            size = b(ext.UMaxOp(rounded, b.const(align))).results[0]
        call = b(llvm.CallOp("aligned_alloc", b.const(align), size, return_type=PTR))
        return call.results[0]

    # ------------------------------------------------------------ descriptors

    def desc(self, op: Operation, index: int) -> tuple[SSAValue, list[SSAValue]]:
        """(ptr, dynamic dims) of operand `index` of `op` (lowering its producer if needed)."""
        value = op.operands[index]
        owner = value.owner
        if isinstance(owner, _PRODUCERS):
            self.lower_producer(owner)
            value = op.operands[index]
            owner = value.owner
        parts = expand_memref(value.type)
        if (
            isinstance(owner, UnrealizedConversionCastOp)
            and len(owner.inputs) == len(parts)
            and list(owner.inputs.types) == parts
        ):
            return owner.inputs[0], list(owner.inputs[1:])
        what = owner.name if isinstance(owner, Operation) else "a block argument"
        emit_error(
            op,
            f"failed to legalize operation '{op.name}': its memref operand comes from {what}, "
            f"which has no memref ABI lowering"
        )

    def address(
        self, b: _Emitter, op: Operation, memref_index: int, indices: Sequence[SSAValue]
    ) -> tuple[SSAValue, MemRefType]:
        """Pointer to element [indices] of the memref operand (row-major linear gep).

        Static shape: gep(gep(ptr, sum(i_k * stride_k)), c) with the constant indices folded
        into the constant c; each i_k * stride_k is built once per function, the inner gep once
        per block. Dynamic shape: one gep, Horner form
        ((i_0 * d_1 + i_1) * d_2 + i_2)…"""
        t = _memref_type(op.operands[memref_index])
        ptr, dyn = self.desc(op, memref_index)
        elem = llvm_element_type(t.element_type)
        if not dyn:
            shape = t.get_shape()
            strides = _strides(shape)
            offset = 0
            terms: list[SSAValue] = []
            for idx, stride in zip(indices, strides):
                c = _const_int(idx)
                if c is not None:
                    offset += c * stride
                elif stride:
                    terms.append(self.scale(self.as_i64(idx), stride))
            return self.based_gep(b, ptr, elem, terms, offset), t
        dims = _dims(t, dyn)
        strides = self.dynamic_strides(dims)
        if strides is not None:
            # the static path with each stride `static * product of the later dynamic dims`
            # (the products built once at function entry, each index * stride once): an
            # address is one shared base gep per block plus a constant, as for static shapes
            offset = 0
            terms = []
            for idx, (stride, prod) in zip(indices, strides):
                c = _const_int(idx)
                if not stride:
                    continue
                if prod is None:
                    if c is not None:
                        offset += c * stride
                    else:
                        terms.append(self.scale(self.as_i64(idx), stride))
                elif c is not None:
                    if c:
                        terms.append(self.scale(prod, c * stride))
                else:
                    terms.append(self.times(b, self.scale(self.as_i64(idx), stride), prod))
            return self.based_gep(b, ptr, elem, terms, offset), t
        linear: Dim = 0
        for k, idx in enumerate(indices):
            c = _const_int(idx)
            i64_idx: Dim = c if c is not None else self.as_i64(idx)
            linear = b.add(b.mul(linear, dims[k]) if k else linear, i64_idx)
        return b.gep(ptr, linear, elem), t

    def based_gep(self, b: _Emitter, ptr: SSAValue, elem: Attribute, terms: list[SSAValue], offset: int) -> SSAValue:
        """gep(base, offset) with base = gep(ptr, sum(terms)) shared within the block; the
        constant part is the gep's own constant index (both in bounds: indices and strides
        are >= 0)."""
        if not terms:
            return b.gep(ptr, offset, elem)
        key = (b.anchor.parent, ptr, elem, *terms)
        base = self.bases.get(key)
        if base is None:
            base = self.bases[key] = b.gep(ptr, self.linear_sum(b, terms, 0), elem)
        return b.gep(base, offset, elem)

    @staticmethod
    def numel(b: _Emitter, t: MemRefType, dyn: Sequence[SSAValue], scale: int = 1) -> Dim:
        """scale * number of elements: the dynamic dims multiplied first, then one constant."""
        n: Dim = 1
        for d in dyn:
            n = b.mul(n, d)
        static = scale
        for d in t.get_shape():
            if d != DYNAMIC_INDEX:
                static *= d
        return b.mul(n, static)

    # ------------------------------------------------------------ signatures

    def expand_signature(self, f: func.FuncOp) -> None:
        """memref args -> (ptr, i64…); kernels get noalias pointers; entries get the entry ABI."""
        ftype = f.function_type
        entry = is_entry(f)
        old_attrs = f.arg_attrs.data if f.arg_attrs is not None else [None] * len(ftype.inputs)
        inputs: list[Attribute] = []
        attrs: list[DictionaryAttr] = []
        shared = aliased_args(f)  # an output that may take an input's buffer (loop-mark-inplace)
        for pos, (t, d) in enumerate(zip(ftype.inputs.data, old_attrs)):
            keep = {k: v for k, v in (d.data.items() if d is not None else ()) if k.startswith("llvm.")}
            if isinstance(t, MemRefType):
                parts = expand_memref(t)
                if is_kernel(f) and pos not in shared:
                    keep["llvm.noalias"] = UnitAttr()
                inputs.extend(parts)
                attrs.append(DictionaryAttr(keep))
                attrs.extend(DictionaryAttr({}) for _ in parts[1:])
            else:
                inputs.append(t)
                attrs.append(DictionaryAttr(keep))
        outputs = list(ftype.outputs.data)
        if entry:
            inputs.append(PTR)
            attrs.append(DictionaryAttr({}))
            self.slot_offsets[f] = slot_offsets(outputs)
            outputs = [i32]
            f.res_attrs = None
            f.attributes[ENTRY_ATTR] = UnitAttr()
        elif any(isinstance(t, MemRefType) for t in outputs):
            emit_error(
                f,
                f"failed to legalize operation 'func.func': @{f.sym_name.data} returns a memref; "
                f"only public entry functions may (kernels write into output arguments)"
            )
        f.function_type = FunctionType.from_lists(inputs, outputs)
        f.arg_attrs = ArrayAttr(attrs) if any(a.data for a in attrs) else None
        if not f.body.blocks:
            return
        block = f.body.blocks[0]
        for arg in list(block.args):
            if not isinstance(arg.type, MemRefType):
                continue
            parts = expand_memref(arg.type)
            pos = arg.index
            new_args = [block.insert_arg(p, pos + k) for k, p in enumerate(parts)]
            new_args[0].name_hint = arg.name_hint
            for k, a in enumerate(new_args[1:]):
                if arg.name_hint:
                    a.name_hint = f"{arg.name_hint}_d{k}"
            cast = UnrealizedConversionCastOp.get(new_args, [arg.type])
            Rewriter.insert_op(cast, InsertPoint.at_start(block))
            arg.replace_all_uses_with(cast.results[0])
            block.erase_arg(arg)
        if entry:
            results = block.insert_arg(PTR, len(block.args))
            results.name_hint = "results"
            self.results_arg[f] = results

    # ------------------------------------------------------------ producers

    def lower_producer(self, op: Operation) -> None:
        if op.parent is None:
            return  # already lowered
        b = _Emitter(op, self)
        t = _memref_type(op.results[0])
        if isinstance(op, mem.AllocOp):
            if RESULT_SLOT_ATTR in op.attributes and _func_of(op) in self.results_arg:
                self.lower_result_alloc(op)
                return
            dyn = [b.index(d) for d in op.dims]
            nbytes = self.numel(b, t, dyn, element_bytes(t.element_type))
            ptr = self.aligned_alloc(b, nbytes, op.alignment.value.data)
            self.checked_heap(op, ptr)
            if self.checker is not None:
                self.checker.poison(self, b, ptr, nbytes, t.element_type)
        elif isinstance(op, mem.AllocaOp):
            dyn = [b.index(d) for d in op.dims]
            elem = llvm_element_type(t.element_type)
            n = self.numel(b, t, dyn)
            if isinstance(n, int):  # hoist: one stack slot per function, not per iteration
                ptr = self.hoisted_alloca(_func_of(op), n, elem)
            else:
                ptr = b(llvm.AllocaOp(n, elem, alignment=64)).results[0]
            if self.checker is not None:  # where it is allocated (each iteration), not hoisted
                self.checker.poison(self, b, ptr, b.mul(n, element_bytes(t.element_type)), t.element_type)
        elif isinstance(op, mem.ArenaOp):
            dyn = [b.index(op.size)] if op.size is not None else []
            size = self.numel(b, t, dyn)
            ptr = self.aligned_alloc(b, size, mem.DEFAULT_ALIGNMENT)
            self.checked_heap(op, ptr)
        elif isinstance(op, mem.ViewOp):
            ptr, _ = self.desc(op, 0)
            dyn = [b.index(d) for d in op.dims]
        elif isinstance(op, mem.SubrangeOp):
            base, _ = self.desc(op, 0)
            off = _const_int(op.offset)
            ptr = b.gep(base, off if off is not None else b.index(op.offset), llvm_element_type(t.element_type))
            dyn = []
        elif isinstance(op, mem.SlotOp):
            arena_op = op.arena.owner if isinstance(op.arena.owner, mem.ArenaOp) else None
            base, _ = self.desc(op, 0)
            off = _const_int(op.offset)
            ptr = b.gep(base, off if off is not None else b.index(op.offset), i8)
            dyn = [b.index(d) for d in op.dims]
            if self.checker is not None:  # the slot must fit in the arena; its bytes are fresh here
                nbytes = self.numel(b, t, dyn, element_bytes(t.element_type))
                fill = self.checker.guard_slot(self, b, op, arena_op, off if off is not None
                                               else b.index(op.offset), nbytes)
                fb = _Emitter(fill.last_op, self) if fill is not None else b
                self.checker.poison(self, fb, ptr, nbytes, t.element_type)
        else:  # pragma: no cover - _PRODUCERS lists the cases above
            raise AssertionError(op.name)
        cast = b(UnrealizedConversionCastOp.get([ptr, *dyn], [t]))
        _replace(op, cast.results)

    # ------------------------------------------------------------ entry error paths

    def compute_live_heap(self, f: func.FuncOp) -> None:
        """live_before[alloc] for every heap alloc of entry `f` (per block, in order)."""
        for region in f.regions:
            for block in region.blocks:
                self._scan_block(block)

    def _scan_block(self, block: Block) -> None:
        live: list[Operation] = []
        for op in block.ops:
            for region in op.regions:
                for inner in region.blocks:
                    self._scan_block(inner)
            if isinstance(op, mem.AllocOp | mem.ArenaOp):
                self.live_before[op] = list(live)
                if RESULT_SLOT_ATTR not in op.attributes:
                    live.append(op)
            elif isinstance(op, mem.DeallocOp):
                owner = op.operands[0].owner
                if owner in live:
                    live.remove(owner)

    def error_return(self, block: Block, at: Operation, status: int) -> None:
        """At the end of `block`: free the heap buffers live before `at`, return `status`."""
        block.add_op(llvm.UnreachableOp())
        b = _Emitter(block.last_op, self)
        for buf in self.live_before.get(at, ()):
            ptr = self.heap_ptr.get(buf)
            if ptr is not None:
                self.declare("free", [PTR], None)
                b(llvm.CallOp("free", ptr))
        code = b.const(status, i32)
        _erase(block.last_op)
        block.add_op(func.ReturnOp(code))

    @staticmethod
    def is_null(b: _Emitter, ptr: SSAValue) -> SSAValue:
        """`ptr == null` (llvm.icmp takes integers; instcombine folds this to a pointer compare)."""
        return b.icmp(b(llvm.PtrToIntOp(ptr, i64)).results[0], 0, "eq")

    def checked_heap(self, op: Operation, ptr: SSAValue) -> None:
        """In an entry function: `ptr == null` -> free what is live, return 2 (out of memory).

            ^bb: %p = aligned_alloc(…) ; cond_br %p == null, ^oom, ^cont
            ^oom: free(live…) ; return 2 : i32 ;  ^cont: `op` and the rest
        """
        self.heap_ptr[op] = ptr
        if op not in self.live_before:
            return
        pred = op.parent_block()
        assert pred is not None
        b = _Emitter(op, self)
        null = self.is_null(b, ptr)
        b.if_then(null, lambda oom: self.error_return(oom.ip.block, op, 2))

    def entry_anchor(self, f: func.FuncOp) -> Operation:
        """First op of the entry block after the argument casts and leading constants (hoisting
        point). Not necessarily after every pooled constant: an op inserted at the start for an
        entry-block argument (e.g. `scale`'s mul) can sit before older ones."""
        op = f.body.blocks[0].first_op
        while isinstance(op, UnrealizedConversionCastOp | llvm.ConstantOp):
            op = op.next_op
        assert op is not None
        return op

    def hoisted_alloca(self, f: func.FuncOp, n: int, elem: Attribute) -> SSAValue:
        """A static stack slot of `n` x `elem` in `f`'s entry block, at `entry_anchor`, its size a
        constant of its own just before it (a pooled one may come later in the block: see
        entry_anchor); the slot depends on nothing else, so it dominates every use."""
        size = llvm.ConstantOp(_const_attr(n, i64), i64)
        alloca = llvm.AllocaOp(size.result, elem, alignment=64)
        Rewriter.insert_op([size, alloca], InsertPoint.before(self.entry_anchor(f)))
        return alloca.results[0]

    def lower_result_alloc(self, op: mem.AllocOp) -> None:
        """The entry-ABI alloc: use the caller's buffer (dims checked) or allocate (docstring)."""
        f = _func_of(op)
        slot = op.attributes[RESULT_SLOT_ATTR]
        assert isinstance(slot, IntegerAttr)
        i = slot.value.data
        results = self.results_arg[f]
        off = self.slot_offsets[f][i]
        t = _memref_type(op.result)
        b = _Emitter(op, self)
        dyn = [b.index(d) for d in op.dims]
        dims = _dims(t, dyn)
        nbytes = self.numel(b, t, dyn, element_bytes(t.element_type))
        slot_ptr = b.gep(results, off, i64)
        dim_ptrs = [b.gep(results, off + 1 + k, i64) for k in range(len(dims))]
        raw = b(llvm.LoadOp(slot_ptr, i64, alignment=8)).results[0]
        is_null = b.icmp(raw, 0, "eq")

        pred = op.parent_block()
        assert pred is not None
        join = pred.split_before(op, arg_types=[PTR])
        check, fail, alloc = Block(), Block(), Block()
        Rewriter.insert_block([check, fail, alloc], BlockInsertPoint.before(join))
        pred.add_op(llvm.CondBrOp(is_null, alloc, [], check, []))

        # ^check: the caller's dims must equal the computed ones
        br = check.add_op(llvm.UnreachableOp()) or check.last_op
        cb = _Emitter(br, self)
        given = cb(llvm.LoadOp(slot_ptr, PTR, alignment=8)).results[0]
        ok: SSAValue | None = None
        for p, d in zip(dim_ptrs, dims):
            eq = cb.icmp(cb(llvm.LoadOp(p, i64, alignment=8)).results[0], d, "eq")
            ok = eq if ok is None else cb(llvm.AndOp(ok, eq)).results[0]
        if ok is None:
            ok = cb(llvm.ConstantOp(IntegerAttr(1, i1), i1)).results[0]
        _erase(check.last_op)
        check.add_op(llvm.CondBrOp(ok, join, [given], fail, []))

        # ^fail: report the computed dims, free what is live, status 1
        fail.add_op(llvm.UnreachableOp())
        fb = _Emitter(fail.last_op, self)
        for p, d in zip(dim_ptrs, dims):
            fb(llvm.StoreOp(fb.value(d), p, alignment=8))
        _erase(fail.last_op)
        self.error_return(fail, op, 1)

        # ^alloc: malloc, null -> ^oom (status 2), else ^ok publishes the pointer
        ok_block, oom = Block(), Block()
        Rewriter.insert_block([ok_block, oom], BlockInsertPoint.before(join))
        alloc.add_op(llvm.UnreachableOp())
        ab = _Emitter(alloc.last_op, self)
        new = self.aligned_alloc(ab, nbytes, op.alignment.value.data)
        null = self.is_null(ab, new)
        _erase(alloc.last_op)
        alloc.add_op(llvm.CondBrOp(null, oom, [], ok_block, []))
        ok_block.add_op(llvm.StoreOp(new, slot_ptr, alignment=8))
        ok_block.add_op(llvm.BrOp(join, new))
        self.error_return(oom, op, 2)

        # ^join(%buf): store every dim, the buffer is %buf
        jb = _Emitter(op, self)
        for p, d in zip(dim_ptrs, dims):
            jb(llvm.StoreOp(jb.value(d), p, alignment=8))
        if self.checker is not None:
            self.checker.poison(self, jb, join.args[0], nbytes, t.element_type)
        cast = jb(UnrealizedConversionCastOp.get([join.args[0], *dyn], [t]))
        _replace(op, cast.results)

    # ------------------------------------------------------------ consumers

    def lower_load(self, op: mem.LoadOp) -> None:
        b = _Emitter(op, self)
        ptr, t = self.address(b, op, 0, op.indices)
        if self.checker is not None:
            ptr = self.checker.guard(self, b, op, 0, ptr)
        res_t = convert_type(op.result.type)
        if _is_bool(t.element_type):
            # i1 lives in memory as one byte (NumPy's bool); a vector of i1 would be bit-packed
            bytes_t = _as_bytes(res_t)
            raw = b(llvm.LoadOp(ptr, bytes_t, alignment=1)).results[0]
            load = b(llvm.TruncOp(raw, res_t))
        else:
            load = b(llvm.LoadOp(ptr, res_t, alignment=element_bytes(t.element_type)))
        casts, values = from_llvm(load.results, [op.result.type])
        for c in casts:
            b(c)
        _replace(op, values)

    def lower_store(self, op: mem.StoreOp) -> None:
        b = _Emitter(op, self)
        ptr, t = self.address(b, op, 1, op.indices)
        if self.checker is not None:
            ptr = self.checker.guard(self, b, op, 1, ptr)
        value = to_llvm(op.value, None, op)
        if _is_bool(t.element_type):
            value = b(llvm.ZExtOp(value, _as_bytes(value.type))).results[0]
        b(llvm.StoreOp(value, ptr, alignment=element_bytes(t.element_type)))
        _erase(op)

    def lower_dim(self, op: mem.DimOp) -> None:
        b = _Emitter(op, self)
        t = _memref_type(op.source)
        _, dyn = self.desc(op, 0)
        d = _dims(t, dyn)[op.index.value.data]
        casts, values = from_llvm([b.value(d)], [op.result.type])
        for c in casts:
            b(c)
        _replace(op, values)

    def lower_dealloc(self, op: mem.DeallocOp) -> None:
        self.declare("free", [PTR], None)
        b = _Emitter(op, self)
        ptr, _ = self.desc(op, 0)
        b(llvm.CallOp("free", ptr))
        _erase(op)

    def lower_copy(self, op: mem.CopyOp) -> None:
        b = _Emitter(op, self)
        t = _memref_type(op.source)
        src, dyn = self.desc(op, 0)
        dst, _ = self.desc(op, 1)
        nbytes = self.numel(b, t, dyn, element_bytes(t.element_type))
        volatile = b.const(0, i1)
        b(llvm.CallIntrinsicOp("llvm.memcpy.p0.p0.i64", [dst, src, b.value(nbytes), volatile], []))
        _erase(op)

    def lower_fill(self, op: mem.FillOp) -> None:
        b = _Emitter(op, self)
        t = _memref_type(op.memref)
        ptr, dyn = self.desc(op, 1)
        eb = element_bytes(t.element_type)
        if _is_positive_zero(op.value):
            zero, volatile = b.const(0, i8), b.const(0, i1)
            nbytes = b.value(self.numel(b, t, dyn, eb))
            b(llvm.CallIntrinsicOp("llvm.memset.p0.i64", [ptr, zero, nbytes, volatile], []))
            _erase(op)
            return
        n = self.numel(b, t, dyn)
        value = to_llvm(op.value, None, op)
        if _is_bool(t.element_type):
            value = b(llvm.ZExtOp(value, i8)).results[0]
        elem = llvm_element_type(t.element_type)

        def body(lb: _Emitter, i: SSAValue) -> None:
            lb(llvm.StoreOp(value, lb.gep(ptr, i, elem), alignment=eb))

        b.counted_loop(b.value(n), body)
        _erase(op)

    def lower_call(self, op: func.CallOp) -> None:
        if not any(isinstance(a.type, MemRefType) for a in op.arguments):
            return
        if any(isinstance(t, MemRefType) for t in op.result_types):
            emit_error(
                op,
                f"failed to legalize operation 'func.call': call to @{op.callee.string_value()} "
                f"returns a memref (kernels write into their output arguments)"
            )
        args: list[SSAValue] = []
        for k, a in enumerate(op.arguments):
            if isinstance(a.type, MemRefType):
                ptr, dyn = self.desc(op, k)
                args.extend([ptr, *dyn])
            else:
                args.append(a)
        new = func.CallOp(op.callee, args, list(op.result_types))
        new.attributes.update(op.attributes)
        Rewriter.insert_op(new, InsertPoint.before(op))
        _replace(op, new.results)

    def lower_entry_return(self, op: func.ReturnOp) -> None:
        b = _Emitter(op, self)
        zero = b.const(0, i32)
        b(func.ReturnOp(zero))
        _erase(op)

    # ------------------------------------------------------------ driver

    def normalize_entry_results(self, f: func.FuncOp) -> None:
        """Every value an entry returns must be its own `mem.alloc {mem.result_slot = i}`."""
        for ret in [op for op in f.walk() if isinstance(op, func.ReturnOp)]:
            seen: set[SSAValue] = set()
            for i, v in enumerate(ret.arguments):
                if not isinstance(v.type, MemRefType):
                    emit_error(
                        ret,
                        f"entry function @{f.sym_name.data}: result #{i} has type {v.type}; "
                        f"an entry function returns only memrefs"
                    )
                owner = v.owner
                slot = owner.attributes.get(RESULT_SLOT_ATTR) if isinstance(owner, Operation) else None
                fresh = (
                    isinstance(owner, mem.AllocOp)
                    and v not in seen
                    and (slot is None or (isinstance(slot, IntegerAttr) and slot.value.data == i))
                    and not any(isinstance(u.operation, mem.DeallocOp) for u in v.uses)
                )
                seen.add(v)
                if fresh:
                    owner.attributes[RESULT_SLOT_ATTR] = IntegerAttr(i, i64)
                    continue
                t = _memref_type(v)
                dims = [mem.DimOp(v, k) for k, d in enumerate(t.get_shape()) if d == DYNAMIC_INDEX]
                alloc = mem.AllocOp(t, dims)
                alloc.attributes[RESULT_SLOT_ATTR] = IntegerAttr(i, i64)
                copy = mem.CopyOp(v, alloc)
                for o in [*dims, alloc, copy]:
                    Rewriter.insert_op(o, InsertPoint.before(ret))
                ret.operands[i] = alloc.result

    def run(self) -> None:
        funcs = [op for op in self.module.walk() if isinstance(op, func.FuncOp)]
        for f in funcs:
            if is_entry(f):
                self.normalize_entry_results(f)
        for f in funcs:
            self.expand_signature(f)
        for f in funcs:
            if f in self.results_arg:
                self.compute_live_heap(f)
        # one pattern per mem op, through the conversion driver (one walk: lowering producers
        # adds llvm ops only): the producers first (a consumer reads its operand's descriptor),
        # then the consumers; a producer met through a consumer's operand is lowered then.
        producers = {cls: self._pattern(self.lower_producer) for cls in _PRODUCERS}
        consumers = {
            mem.LoadOp: self._pattern(self.lower_load),
            mem.StoreOp: self._pattern(self.lower_store),
            mem.DimOp: self._pattern(self.lower_dim),
            mem.DeallocOp: self._pattern(self.lower_dealloc),
            mem.CopyOp: self._pattern(self.lower_copy),
            mem.FillOp: self._pattern(self.lower_fill),
            func.CallOp: self._pattern(self.lower_call),
            func.ReturnOp: self._pattern(self.lower_return),
        }
        ConversionDriver([producers, consumers]).run(self.module)
        self.erase_dead_casts()

    @staticmethod
    def _pattern(lower: Callable[[Operation], None]) -> Callable[[Operation, PatternRewriter], None]:
        def pattern(op: Operation, rewriter: PatternRewriter) -> None:
            lower(op)

        return pattern

    def lower_return(self, op: func.ReturnOp) -> None:
        """An entry function's return of memrefs -> `return 0 : i32` (the results are in their slots)."""
        if any(isinstance(t, MemRefType) for t in op.arguments.types):
            if _func_of(op) in self.results_arg:
                self.lower_entry_return(op)

    def erase_dead_casts(self) -> None:
        """Erase the casts that rebuilt memrefs (all unused now), then check legality: one walk."""
        casts: list[Operation] = []
        illegal: Operation | None = None
        for op in self.module.walk():
            if isinstance(op, UnrealizedConversionCastOp):
                if all(isinstance(t, MemRefType) for t in op.result_types):
                    casts.append(op)
            elif illegal is None and op.name.startswith("mem."):
                illegal = op
        for op in reversed(casts):
                if all(not r.uses for r in op.results):
                    _erase(op)
                else:
                    user = next(iter(op.results[0].uses)).operation
                    emit_error(
                        user,
                        f"failed to legalize operation '{user.name}': it uses a memref value, "
                        f"which has no LLVM lowering there"
                    )
        report_illegal(illegal)  # the conversions' one legality check (located)


@dataclass(frozen=True)
class ConvertMemToLlvmPass(ModulePass):
    """mem -> llvm: memref ABI (ptr + i64 per `?` dim), gep addressing, libc allocation."""

    name = "convert-mem-to-llvm"

    checks: bool = False
    """Checked mode (passes/to_llvm/_checks.py): bounds-check every access, poison every fresh buffer."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        ext.load_into(ctx)
        MemLowering(op, self.checks).run()  # ends with the legality check (`failed to legalize operation 'mem.X'`)
