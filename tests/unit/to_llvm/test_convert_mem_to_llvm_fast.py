"""convert-mem-to-llvm builds few ops: constant indices fold, casts/products/constants are shared."""

from xdsl.context import Context
from xdsl.dialects import arith, builtin, cf, func, llvm
from xdsl.dialects.builtin import UnrealizedConversionCastOp
from xdsl.parser import Parser

from minimlir.dialects.loop import Loop
from minimlir.dialects.mem import Mem
from minimlir.passes.to_llvm.mem import ConvertMemToLlvmPass


def _lower(text: str) -> builtin.ModuleOp:
    ctx = Context()
    for d in (builtin.Builtin, func.Func, arith.Arith, cf.Cf, llvm.LLVM, Mem, Loop):
        ctx.load_dialect(d)
    module = Parser(ctx, text).parse_module()
    ConvertMemToLlvmPass().apply(ctx, module)
    module.verify()
    return module


def _ops(module: builtin.ModuleOp, kind: type) -> list:
    return [op for op in module.walk() if isinstance(op, kind)]


def test_constant_indices_fold_into_the_gep():
    m = _lower("""
    func.func @k(%a: memref<4x8xf32>) attributes {loop.kernel} {
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %v = mem.load %a[%c1, %c2] : memref<4x8xf32> -> f32
      func.return
    }""")
    (gep,) = _ops(m, llvm.GEPOp)
    assert list(gep.rawConstantIndices.iter_values()) == [10]  # 1 * 8 + 2
    assert not gep.ssa_indices
    assert not _ops(m, llvm.MulOp) and not _ops(m, llvm.AddOp)
    assert not _ops(m, UnrealizedConversionCastOp)


def test_constant_part_is_summed_once():
    m = _lower("""
    func.func @k(%a: memref<4x8x2xf32>, %i: index) attributes {loop.kernel} {
      %c1 = arith.constant 1 : index
      %c3 = arith.constant 3 : index
      %c5 = arith.constant 5 : index
      %v = mem.load %a[%c1, %i, %c3] : memref<4x8x2xf32> -> f32
      %w = mem.load %a[%c5, %i, %c3] : memref<4x8x2xf32> -> f32
      func.return
    }""")
    (mul,) = _ops(m, llvm.MulOp)
    assert not _ops(m, llvm.AddOp)
    # one base gep (a + i * 2) for both loads, each adds its constant part in its own gep
    base, first, second = _ops(m, llvm.GEPOp)
    assert base.ssa_indices[0] is mul.res
    assert first.ptr is base.result and second.ptr is base.result
    assert list(first.rawConstantIndices.iter_values()) == [1 * 16 + 3]
    assert list(second.rawConstantIndices.iter_values()) == [5 * 16 + 3]


def test_casts_products_and_constants_are_shared():
    m = _lower("""
    func.func @k(%a: memref<4x8xf32>, %b: memref<4x8xf32>, %x: index, %y: index) attributes {loop.kernel} {
      cf.br ^body(%x, %y : index, index)
    ^body(%i: index, %j: index):
      %v = mem.load %a[%i, %j] : memref<4x8xf32> -> f32
      %w = mem.load %b[%i, %j] : memref<4x8xf32> -> f32
      mem.store %v, %b[%j, %i] : f32, memref<4x8xf32>
      func.return
    }""")
    casts = _ops(m, UnrealizedConversionCastOp)
    assert len(casts) == 2  # one index -> i64 cast per value, not one per use
    assert len(_ops(m, llvm.MulOp)) == 2  # i * 8 and j * 8, each built once
    assert len(_ops(m, llvm.AddOp)) == 2  # i * 8 + j (shared by both loads), j * 8 + i
    consts = _ops(m, llvm.ConstantOp)
    assert len(consts) == 1 and consts[0].value.value.data == 8
    # the constant pool is the entry block; a cast sits right after its value's definition
    entry, body = m.body.block.first_op.body.blocks
    assert consts[0].parent is entry
    assert all(op.parent is body for op in casts)


def test_dynamic_shape_still_linearizes():
    m = _lower("""
    func.func @k(%a: memref<?x8xf32>, %i: index) attributes {loop.kernel} {
      %c2 = arith.constant 2 : index
      %v = mem.load %a[%i, %c2] : memref<?x8xf32> -> f32
      func.return
    }""")
    # as for a static shape: base gep a + i * 8, the constant index in a second gep
    (mul,) = _ops(m, llvm.MulOp)
    assert not _ops(m, llvm.AddOp)
    base, elem = _ops(m, llvm.GEPOp)
    assert base.ssa_indices[0] is mul.res and elem.ptr is base.result
    assert list(elem.rawConstantIndices.iter_values()) == [2]


def test_dynamic_strides_are_built_once():
    m = _lower("""
    func.func @k(%a: memref<?x?x?xf32>, %x: index, %y: index) attributes {loop.kernel} {
      cf.br ^body(%x, %y : index, index)
    ^body(%i: index, %j: index):
      %v = mem.load %a[%i, %j, %j] : memref<?x?x?xf32> -> f32
      %w = mem.load %a[%i, %j, %i] : memref<?x?x?xf32> -> f32
      mem.store %v, %a[%j, %i, %i] : f32, memref<?x?x?xf32>
      func.return
    }""")
    # d1 * d2 once at entry; i * (d1 * d2), j * d2, j * (d1 * d2), i * d2 once each, not per access
    muls = _ops(m, llvm.MulOp)
    assert len(muls) == 5
    entry, body = m.body.block.first_op.body.blocks
    (stride,) = [op for op in muls if op.parent is entry]
    assert {stride.lhs, stride.rhs} == set(entry.args[2:4])
