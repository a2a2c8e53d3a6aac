"""The `mem` dialect: explicit buffers (identity-layout, row-major, contiguous memrefs).

    %m = mem.alloc(%n) : memref<?x4xf32>
    %v = mem.load %m[%i, %j] : memref<?x4xf32> -> f32
    mem.store %v, %m[%i, %j] : f32, memref<?x4xf32>

Every memref here has the identity layout and no memory space: a buffer is a pointer to its
first element plus one run-time size per `?` dim. Ops that create a memref with `?` dims take one
`index` operand per `?`, in order.
"""

from __future__ import annotations

from collections.abc import Sequence
from xdsl.dialects.builtin import (
    I64,
    DYNAMIC_INDEX,
    IndexType,
    IntegerAttr,
    MemRefType,
    NoneAttr,
    VectorType,
    i8,
)
from xdsl.ir import Attribute, Dialect, Operation, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.traits import (
    MemoryAllocEffect,
    MemoryFreeEffect,
    MemoryReadEffect,
    MemoryWriteEffect,
    Pure,
)
from xdsl.utils.exceptions import VerifyException

DEFAULT_ALIGNMENT = 64


def _memref(value: SSAValue | Operation) -> MemRefType:
    typ = SSAValue.get(value).type
    assert isinstance(typ, MemRefType)
    return typ


def count_dynamic(typ: MemRefType) -> int:
    """Number of `?` dims of a memref type (= number of dim operands its creator takes)."""
    return sum(1 for d in typ.get_shape() if d == DYNAMIC_INDEX)


def num_elements(typ: MemRefType) -> int | None:
    """Static element count of a memref type, or None if some dim is `?`."""
    n = 1
    for d in typ.get_shape():
        if d == DYNAMIC_INDEX:
            return None
        n *= d
    return n


def _check_identity(typ: Attribute, what: str) -> None:
    if isinstance(typ, MemRefType) and (
        not isinstance(typ.layout, NoneAttr) or not isinstance(typ.memory_space, NoneAttr)
    ):
        raise VerifyException(
            f"{what} must have the identity layout and no memory space, got {typ}"
        )


def _check_dims(typ: MemRefType, dims: Sequence[SSAValue], what: str = "result") -> None:
    expected = count_dynamic(typ)
    if len(dims) != expected:
        raise VerifyException(
            f"expected {expected} dim operand(s), one per '?' of the {what} type {typ}, "
            f"got {len(dims)}"
        )


def _check_access(
    typ: MemRefType, indices: Sequence[SSAValue], value_type: Attribute, role: str
) -> None:
    """Shared by load and store: index count, scalar/vector element type, vector fit."""
    if len(indices) != typ.get_num_dims():
        raise VerifyException(
            f"expected {typ.get_num_dims()} indices for {typ} (one per dim), got {len(indices)}"
        )
    elem = typ.get_element_type()
    if isinstance(value_type, VectorType):
        if value_type.get_num_dims() != 1 or value_type.get_num_scalable_dims():
            raise VerifyException(f"{role} vector must be 1-D and fixed-size, got {value_type}")
        if value_type.get_element_type() != elem:
            raise VerifyException(
                f"{role} vector element type {value_type.get_element_type()} does not match "
                f"the memref element type {elem}"
            )
        if typ.get_num_dims() == 0:
            raise VerifyException(f"vector {role} needs a memref of rank >= 1, got {typ}")
        width = value_type.get_shape()[0]
        last = typ.get_shape()[-1]
        if last != DYNAMIC_INDEX and width > last:
            raise VerifyException(
                f"{role} vector of {width} elements does not fit in the last dim "
                f"(size {last}) of {typ}"
            )
    elif value_type != elem:
        raise VerifyException(
            f"{role} type {value_type} does not match the memref element type {elem} "
            f"(nor a vector of it)"
        )


@irdl_op_definition
class AllocOp(IRDLOperation):
    """Heap-allocate a buffer, aligned to `alignment` bytes (a power of two, default 64)."""

    name = "mem.alloc"

    dims = var_operand_def(IndexType)
    alignment = prop_def(IntegerAttr[I64], default_value=IntegerAttr(DEFAULT_ALIGNMENT, 64))
    result = result_def(MemRefType)

    traits = traits_def(MemoryAllocEffect())
    assembly_format = "`(` $dims `)` attr-dict `:` type($result)"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(
        self,
        type: MemRefType,
        dims: Sequence[SSAValue | Operation] = (),
        alignment: int = DEFAULT_ALIGNMENT,
    ):
        super().__init__(
            operands=[list(dims)],
            result_types=[type],
            properties={"alignment": IntegerAttr(alignment, 64)},
        )

    def verify_(self) -> None:
        _check_identity(self.result.type, "allocated memref")
        _check_dims(_memref(self.result), self.dims)
        a = self.alignment.value.data
        if a <= 0 or a & (a - 1):
            raise VerifyException(f"alignment must be a positive power of two, got {a}")


@irdl_op_definition
class AllocaOp(IRDLOperation):
    """Allocate a local scratch buffer on the stack (freed when the function returns)."""

    name = "mem.alloca"

    dims = var_operand_def(IndexType)
    result = result_def(MemRefType)

    traits = traits_def(MemoryAllocEffect())
    assembly_format = "`(` $dims `)` attr-dict `:` type($result)"

    def __init__(self, type: MemRefType, dims: Sequence[SSAValue | Operation] = ()):
        super().__init__(operands=[list(dims)], result_types=[type])

    def verify_(self) -> None:
        _check_identity(self.result.type, "allocated memref")
        _check_dims(_memref(self.result), self.dims)


@irdl_op_definition
class DeallocOp(IRDLOperation):
    """Free a buffer made by mem.alloc."""

    name = "mem.dealloc"

    memref = operand_def(MemRefType)

    traits = traits_def(MemoryFreeEffect())
    assembly_format = "$memref attr-dict `:` type($memref)"

    def __init__(self, memref: SSAValue | Operation):
        super().__init__(operands=[memref])


@irdl_op_definition
class LoadOp(IRDLOperation):
    """Read one element, or a vector of contiguous elements along the last dim, at the indices."""

    name = "mem.load"

    memref = operand_def(MemRefType)
    indices = var_operand_def(IndexType)
    result = result_def()

    traits = traits_def(MemoryReadEffect())
    assembly_format = "$memref `[` $indices `]` attr-dict `:` type($memref) `->` type($result)"

    def __init__(
        self,
        memref: SSAValue | Operation,
        indices: Sequence[SSAValue | Operation],
        result_type: Attribute | None = None,
    ):
        if result_type is None:
            result_type = _memref(memref).get_element_type()
        super().__init__(operands=[memref, list(indices)], result_types=[result_type])

    def verify_(self) -> None:
        _check_access(_memref(self.memref), self.indices, self.result.type, "loaded")


@irdl_op_definition
class StoreOp(IRDLOperation):
    """Write one element, or a vector of contiguous elements along the last dim, at the indices."""

    name = "mem.store"

    value = operand_def()
    memref = operand_def(MemRefType)
    indices = var_operand_def(IndexType)

    traits = traits_def(MemoryWriteEffect())
    assembly_format = (
        "$value `,` $memref `[` $indices `]` attr-dict `:` type($value) `,` type($memref)"
    )

    def __init__(
        self,
        value: SSAValue | Operation,
        memref: SSAValue | Operation,
        indices: Sequence[SSAValue | Operation],
    ):
        super().__init__(operands=[value, memref, list(indices)])

    def verify_(self) -> None:
        _check_access(_memref(self.memref), self.indices, self.value.type, "stored")


def _check_alias(op: IRDLOperation, what: str) -> tuple[MemRefType, MemRefType]:
    """A zero-copy alias (view, subrange): identity layouts and the source's element type."""
    src, res = _memref(op.source), _memref(op.result)
    _check_identity(src, "source memref")
    _check_identity(res, "result memref")
    if src.get_element_type() != res.get_element_type():
        raise VerifyException(
            f"{what} must keep the element type: {src.get_element_type()} vs {res.get_element_type()}"
        )
    return src, res


@irdl_op_definition
class ViewOp(IRDLOperation):
    """Zero-copy reshape: the same contiguous elements seen with another shape."""

    name = "mem.view"

    source = operand_def(MemRefType)
    dims = var_operand_def(IndexType)
    result = result_def(MemRefType)

    traits = traits_def(Pure())
    assembly_format = (
        "$source (`(` $dims^ `)`)? attr-dict `:` type($source) `->` type($result)"
    )

    def __init__(
        self,
        source: SSAValue | Operation,
        result_type: MemRefType,
        dims: Sequence[SSAValue | Operation] = (),
    ):
        super().__init__(operands=[source, list(dims)], result_types=[result_type])

    def verify_(self) -> None:
        src, res = _check_alias(self, "view")
        _check_dims(res, self.dims)
        n_src, n_res = num_elements(src), num_elements(res)
        if n_src is not None and n_res is not None and n_src != n_res:
            raise VerifyException(
                f"view must keep the element count: {src} has {n_src} elements, "
                f"{res} has {n_res}"
            )


@irdl_op_definition
class SubrangeOp(IRDLOperation):
    """Zero-copy part of a buffer: its elements `offset` … `offset + n` (n: the result's element count,
    `offset` counted in elements of the row-major source), seen with the result's shape. The part of a
    row-major buffer that a concat along axis `a` gives one input is such a range when every dim
    before `a` is 1 (a channel concat at batch 1): mem-concat-in-place lets the producer write there.

        %p = mem.subrange %y[%c64] : memref<1x128x55x55xf32> -> memref<1x64x55x55xf32>
    """

    name = "mem.subrange"

    source = operand_def(MemRefType)
    offset = operand_def(IndexType)
    result = result_def(MemRefType)

    traits = traits_def(Pure())
    assembly_format = "$source `[` $offset `]` attr-dict `:` type($source) `->` type($result)"

    def __init__(self, source: SSAValue | Operation, offset: SSAValue | Operation, result_type: MemRefType):
        super().__init__(operands=[source, offset], result_types=[result_type])

    def verify_(self) -> None:
        src, res = _check_alias(self, "subrange")
        n_src, n_res = num_elements(src), num_elements(res)
        if n_src is None or n_res is None:
            raise VerifyException(f"subrange needs static shapes, got {src} -> {res}")
        owner = self.offset.owner
        if isinstance(owner, Operation) and owner.name == "arith.constant":
            off = owner.properties["value"]
            if isinstance(off, IntegerAttr) and not 0 <= off.value.data <= n_src - n_res:
                raise VerifyException(
                    f"subrange of {n_res} elements at offset {off.value.data} does not fit in {src} "
                    f"({n_src} elements)"
                )


@irdl_op_definition
class DimOp(IRDLOperation):
    """The run-time size of dim `index` of a buffer."""

    name = "mem.dim"

    source = operand_def(MemRefType)
    index = prop_def(IntegerAttr[IndexType])
    result = result_def(IndexType)

    traits = traits_def(Pure())
    assembly_format = "$source `,` $index attr-dict `:` type($source)"

    def __init__(self, source: SSAValue | Operation, index: int):
        super().__init__(
            operands=[source],
            result_types=[IndexType()],
            properties={"index": IntegerAttr(index, IndexType())},
        )

    def verify_(self) -> None:
        rank = _memref(self.source).get_num_dims()
        i = self.index.value.data
        if not 0 <= i < rank:
            raise VerifyException(f"dim index {i} out of range for rank-{rank} memref")


def _check_same_shape(a: MemRefType, b: MemRefType) -> None:
    if a.get_element_type() != b.get_element_type():
        raise VerifyException(
            f"element types differ: {a.get_element_type()} vs {b.get_element_type()}"
        )
    if a.get_num_dims() != b.get_num_dims():
        raise VerifyException(f"ranks differ: {a} vs {b}")
    for k, (x, y) in enumerate(zip(a.get_shape(), b.get_shape())):
        if x != DYNAMIC_INDEX and y != DYNAMIC_INDEX and x != y:
            raise VerifyException(f"shapes differ in dim {k}: {a} vs {b}")


@irdl_op_definition
class CopyOp(IRDLOperation):
    """Copy every element of `source` into `target` (same shape)."""

    name = "mem.copy"

    source = operand_def(MemRefType)
    target = operand_def(MemRefType)

    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    assembly_format = "$source `,` $target attr-dict `:` type($source) `,` type($target)"

    def __init__(self, source: SSAValue | Operation, target: SSAValue | Operation):
        super().__init__(operands=[source, target])

    def verify_(self) -> None:
        _check_same_shape(_memref(self.source), _memref(self.target))


@irdl_op_definition
class FillOp(IRDLOperation):
    """Set every element of a buffer to a scalar."""

    name = "mem.fill"

    value = operand_def()
    memref = operand_def(MemRefType)

    traits = traits_def(MemoryWriteEffect())
    assembly_format = "$value `,` $memref attr-dict `:` type($value) `,` type($memref)"

    def __init__(self, value: SSAValue | Operation, memref: SSAValue | Operation):
        super().__init__(operands=[value, memref])

    def verify_(self) -> None:
        elem = _memref(self.memref).get_element_type()
        if self.value.type != elem:
            raise VerifyException(
                f"fill value type {self.value.type} does not match the memref element type {elem}"
            )


def _check_arena_type(typ: Attribute, what: str) -> MemRefType:
    if not (
        isinstance(typ, MemRefType)
        and typ.get_num_dims() == 1
        and typ.get_element_type() == i8
    ):
        raise VerifyException(f"{what} must be a 1-D i8 memref, got {typ}")
    _check_identity(typ, what)
    return typ


@irdl_op_definition
class ArenaOp(IRDLOperation):
    """One 64-byte aligned heap arena of bytes in which memory planning places buffers."""

    name = "mem.arena"

    size = opt_operand_def(IndexType)
    result = result_def(MemRefType)

    traits = traits_def(MemoryAllocEffect())
    assembly_format = "(`(` $size^ `)`)? attr-dict `:` type($result)"

    def __init__(self, size: int | SSAValue | Operation):
        if isinstance(size, int):
            super().__init__(operands=[[]], result_types=[MemRefType(i8, [size])])
        else:
            super().__init__(operands=[[size]], result_types=[MemRefType(i8, [DYNAMIC_INDEX])])

    def verify_(self) -> None:
        typ = _check_arena_type(self.result.type, "arena")
        dynamic = typ.get_shape()[0] == DYNAMIC_INDEX
        if dynamic and self.size is None:
            raise VerifyException(f"arena of type {typ} needs a size operand")
        if not dynamic and self.size is not None:
            raise VerifyException(f"arena of static type {typ} takes no size operand")


@irdl_op_definition
class SlotOp(IRDLOperation):
    """A typed buffer inside an arena, starting `offset` bytes from the arena's start."""

    name = "mem.slot"

    arena = operand_def(MemRefType)
    offset = operand_def(IndexType)
    dims = var_operand_def(IndexType)
    result = result_def(MemRefType)

    traits = traits_def(Pure())
    assembly_format = (
        "$arena `[` $offset `]` (`` `(` $dims^ `)`)? attr-dict `:` type($arena) `->` type($result)"
    )

    def __init__(
        self,
        arena: SSAValue | Operation,
        offset: SSAValue | Operation,
        result_type: MemRefType,
        dims: Sequence[SSAValue | Operation] = (),
    ):
        super().__init__(operands=[arena, offset, list(dims)], result_types=[result_type])

    def verify_(self) -> None:
        _check_arena_type(self.arena.type, "slot source")
        res = _memref(self.result)
        _check_identity(res, "slot memref")
        _check_dims(res, self.dims)


Mem = Dialect(
    "mem",
    [
        AllocOp,
        AllocaOp,
        DeallocOp,
        LoadOp,
        StoreOp,
        ViewOp,
        SubrangeOp,
        DimOp,
        CopyOp,
        FillOp,
        ArenaOp,
        SlotOp,
    ],
)
