"""The native memref ABI shared by convert-mem-to-llvm and the runtime (backend/runtime.py).

A memref value is a pointer to its first element plus one i64 per `?` dim (static dims are
constants), row-major and contiguous:

    memref<?x4xf32>   ->  (!llvm.ptr, i64)            the i64 is dim 0
    memref<2x3xf32>   ->  (!llvm.ptr)
    memref<f32>       ->  (!llvm.ptr)

Function arguments of memref type expand to those values in order; `func.call` operands too.
Pointer arguments of kernels (`loop.kernel`) are `llvm.noalias`.

Entry ABI. A public function returning memrefs (the graph-level function)

    func.func @main(%x: memref<?x3xf32>) -> memref<?x3xf32>

becomes

    i32 @main(ptr %x, i64 %x_d0, ptr %results)

`%results` points to an array of 8-byte slots; result i owns `1 + rank_i` consecutive slots
starting at `slot_offsets(...)[i]`: [ptr, dim0, …, dim(rank-1)] (every dim, static ones too).
If the ptr slot is non-null on entry, the caller provides the buffer (`out=`): its dims slots
must hold its shape; the function checks them against the computed dims and returns 1 on a
mismatch (after writing the computed dims into the slots, so the caller can say what was
expected). Else the function allocates the buffer (aligned_alloc, 64 bytes) and stores the
pointer; the caller owns it (release with libc `free`). All dims are stored. Returns 0 on success.
"""

from __future__ import annotations

from xdsl.dialects import func, llvm
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    AnyFloat,
    Float16Type,
    Float32Type,
    Float64Type,
    IndexType,
    IntegerType,
    MemRefType,
    Signedness,
    i64,
)
from xdsl.ir import Attribute

from minimlir.dialects.loop import is_kernel
from minimlir.passes.to_llvm._common import register_type_expander

RESULT_SLOT_ATTR = "mem.result_slot"
PARAM_ATTR = "mem.param"
ENTRY_ATTR = "mem.entry"  # set on the lowered function: the entry ABI was applied
SLOT_BYTES = 8
DEFAULT_ALIGNMENT = 64


def expand_memref(t: Attribute) -> list[Attribute]:
    """LLVM types of one memref value: [ptr] + [i64] per `?` dim."""
    assert isinstance(t, MemRefType)
    n_dyn = sum(1 for d in t.get_shape() if d == DYNAMIC_INDEX)
    return [llvm.LLVMPointerType()] + [i64] * n_dyn


register_type_expander(MemRefType, expand_memref)


def llvm_element_type(t: Attribute) -> Attribute:
    """The LLVM type of a memref element (index is i64; floats and integers unchanged)."""
    if isinstance(t, IndexType):
        return i64
    if isinstance(t, IntegerType):
        return IntegerType(t.width.data)  # signless in LLVM
    if isinstance(t, AnyFloat):
        return t
    raise ValueError(f"unsupported memref element type {t}")


def element_bytes(t: Attribute) -> int:
    """Bytes per element in memory (i1 occupies one byte, as NumPy's bool)."""
    if isinstance(t, IndexType):
        return 8
    if isinstance(t, IntegerType):
        return max(1, (t.width.data + 7) // 8)
    if isinstance(t, Float16Type):
        return 2
    if isinstance(t, Float32Type):
        return 4
    if isinstance(t, Float64Type):
        return 8
    raise ValueError(f"unsupported memref element type {t}")


_NUMPY_INT = {1: "bool", 8: "int8", 16: "int16", 32: "int32", 64: "int64"}
_NUMPY_UINT = {8: "uint8", 16: "uint16", 32: "uint32", 64: "uint64"}


def numpy_dtype_name(t: Attribute) -> str:
    """The NumPy dtype name of an element type (index -> int64, i1 -> bool)."""
    if isinstance(t, IndexType):
        return "int64"
    if isinstance(t, IntegerType):
        w = t.width.data
        table = _NUMPY_UINT if t.signedness.data == Signedness.UNSIGNED else _NUMPY_INT
        if w in table:
            return table[w]
    if isinstance(t, Float16Type):
        return "float16"
    if isinstance(t, Float32Type):
        return "float32"
    if isinstance(t, Float64Type):
        return "float64"
    raise ValueError(f"element type {t} has no NumPy dtype")


def is_public(op: func.FuncOp) -> bool:
    return op.sym_visibility is None or op.sym_visibility.data == "public"


def is_entry(op: func.FuncOp) -> bool:
    """Does `op` get the entry ABI? A public, non-kernel definition returning memrefs."""
    outs = op.function_type.outputs.data
    return (
        is_public(op)
        and not is_kernel(op)
        and bool(op.body.blocks)
        and bool(outs)
        and any(isinstance(t, MemRefType) for t in outs)
    )


def slot_offsets(result_types: list[Attribute] | tuple[Attribute, ...]) -> list[int]:
    """First slot of each result in the %results array, then the total slot count."""
    offsets = [0]
    for t in result_types:
        assert isinstance(t, MemRefType)
        offsets.append(offsets[-1] + 1 + t.get_num_dims())
    return offsets


def shape_list(t: MemRefType) -> list[int | None]:
    """Shape with None for `?` (JSON-friendly)."""
    return [None if d == DYNAMIC_INDEX else d for d in t.get_shape()]
