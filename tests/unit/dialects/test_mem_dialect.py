"""mem dialect: constructors infer types, verifiers reject bad buffers."""

import pytest
from xdsl.dialects.builtin import DYNAMIC_INDEX, IndexType, MemRefType, VectorType, f16, f32, i8
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.test_value import create_ssa_value

from minimlir.dialects import mem

D = DYNAMIC_INDEX


def idx():
    return create_ssa_value(IndexType())


def buf(shape, elem=f32):
    return create_ssa_value(MemRefType(elem, shape))


def test_alloc_default_alignment_and_dims():
    n = idx()
    op = mem.AllocOp(MemRefType(f32, [D, 4]), [n])
    op.verify()
    assert op.alignment.value.data == 64
    assert op.result.type == MemRefType(f32, [D, 4])
    assert mem.AllocOp(MemRefType(f32, [4]), alignment=16).alignment.value.data == 16


def test_alloc_rejects_bad_alignment_and_dim_count():
    with pytest.raises(VerifyException, match="power of two, got 24"):
        mem.AllocOp(MemRefType(f32, [4]), alignment=24).verify()
    with pytest.raises(VerifyException, match=r"expected 2 dim operand\(s\)"):
        mem.AllocaOp(MemRefType(f32, [D, D]), [idx()]).verify()


def test_load_infers_element_type_and_checks_vectors():
    m = buf([D, 8])
    i = idx()
    load = mem.LoadOp(m, [i, i])
    load.verify()
    assert load.result.type == f32
    mem.LoadOp(m, [i, i], VectorType(f32, [8])).verify()
    with pytest.raises(VerifyException, match="does not fit in the last dim"):
        mem.LoadOp(m, [i, i], VectorType(f32, [16])).verify()
    with pytest.raises(VerifyException, match="vector element type f16"):
        mem.LoadOp(m, [i, i], VectorType(f16, [8])).verify()
    with pytest.raises(VerifyException, match="expected 2 indices"):
        mem.LoadOp(m, [i]).verify()


def test_vector_on_dynamic_last_dim_is_allowed():
    mem.LoadOp(buf([D]), [idx()], VectorType(f32, [8])).verify()


def test_store_checks_value_type():
    m = buf([4])
    mem.StoreOp(create_ssa_value(f32), m, [idx()]).verify()
    with pytest.raises(VerifyException, match="stored type f16 does not match"):
        mem.StoreOp(create_ssa_value(f16), m, [idx()]).verify()


def test_view_element_count_and_type():
    mem.ViewOp(buf([4, 4]), MemRefType(f32, [2, 8])).verify()
    mem.ViewOp(buf([D, 4]), MemRefType(f32, [D]), [idx()]).verify()  # dynamic: not checked
    with pytest.raises(VerifyException, match="has 16 elements"):
        mem.ViewOp(buf([4, 4]), MemRefType(f32, [15])).verify()
    with pytest.raises(VerifyException, match="keep the element type"):
        mem.ViewOp(buf([4]), MemRefType(f16, [4])).verify()


def test_dim_range():
    m = buf([D, 4])
    op = mem.DimOp(m, 1)
    op.verify()
    assert isinstance(op.result.type, IndexType)
    with pytest.raises(VerifyException, match="dim index 2 out of range for rank-2"):
        mem.DimOp(m, 2).verify()


def test_copy_fill():
    mem.CopyOp(buf([D, 4]), buf([3, 4])).verify()
    with pytest.raises(VerifyException, match="shapes differ in dim 0"):
        mem.CopyOp(buf([2, 4]), buf([3, 4])).verify()
    mem.FillOp(create_ssa_value(f32), buf([3])).verify()
    with pytest.raises(VerifyException, match="fill value type f16"):
        mem.FillOp(create_ssa_value(f16), buf([3])).verify()


def test_arena_and_slot():
    static = mem.ArenaOp(4096)
    static.verify()
    assert static.result.type == MemRefType(i8, [4096]) and static.size is None
    dynamic = mem.ArenaOp(idx())
    dynamic.verify()
    assert dynamic.result.type == MemRefType(i8, [D])
    mem.SlotOp(dynamic.result, idx(), MemRefType(f32, [D, 4]), [idx()]).verify()
    with pytest.raises(VerifyException, match="slot source must be a 1-D i8 memref"):
        mem.SlotOp(buf([64]), idx(), MemRefType(f32, [4])).verify()
    with pytest.raises(VerifyException, match=r"expected 1 dim operand\(s\)"):
        mem.SlotOp(static.result, idx(), MemRefType(f32, [D])).verify()


def test_helpers():
    assert mem.count_dynamic(MemRefType(f32, [D, 4, D])) == 2
    assert mem.num_elements(MemRefType(f32, [3, 4])) == 12
    assert mem.num_elements(MemRefType(f32, [D, 4])) is None
