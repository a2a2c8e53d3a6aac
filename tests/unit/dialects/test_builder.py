"""The one IR builder (minimlir.dialects.builder): folds, the per-function constant pool, block helpers."""

from __future__ import annotations

from xdsl.dialects import arith, func, llvm
from xdsl.dialects.builtin import IndexType, i64
from xdsl.ir import Block
from xdsl.rewriter import InsertPoint

from minimlir.dialects.builder import Builder, ConstPool, LLVMBuilder


def _fn(arg_type=IndexType()) -> tuple[func.FuncOp, Block]:
    f = func.FuncOp("f", ((arg_type, arg_type), ()))
    block = f.body.block
    block.add_op(func.ReturnOp())
    return f, block


def test_folds_constants_and_identities():
    _, block = _fn()
    x, y = block.args
    b = Builder(InsertPoint.before(block.last_op))
    assert b.iadd(3, 4) == 7 and b.imul(3, 4) == 12 and b.isub(3, 4) == -1
    assert b.ifloordiv(-7, 2) == -4 and b.iceildiv(7, 2) == 4 and b.irem(-7, 2) == -1
    assert b.imin(3, 4) == 3 and b.imax(3, 4) == 4
    assert b.iadd(x, 0) is x and b.iadd(0, x) is x and b.isub(x, 0) is x
    assert b.imul(x, 1) is x and b.imul(1, x) is x and b.imul(x, 0) == 0
    assert b.ifloordiv(x, 1) is x and b.imin(x, x) is x and b.imax(y, y) is y
    assert b.select(b.icmp("lt", 2, 3), x, y) is x  # cmp of constants folds, then the select
    assert b.select(b.icmp("gt", 2, 3), x, y) is y
    assert not any(isinstance(o, arith.CmpiOp | arith.SelectOp) for o in block.ops)  # all folded
    s = b.iadd(b.imul(x, 4), y)  # one muli, one addi
    kinds = [type(o) for o in block.ops]
    assert kinds.count(arith.MuliOp) == 1 and kinds.count(arith.AddiOp) == 1
    assert s.owner.__class__ is arith.AddiOp


def test_pool_makes_one_constant_per_function():
    _, block = _fn()
    x, _ = block.args
    pool = ConstPool(block)
    b1 = Builder(InsertPoint.before(block.last_op), pool)
    b2 = Builder(InsertPoint.before(block.last_op), pool)
    b1.imul(x, 4)
    b2.iadd(x, 4)
    consts = [o for o in block.ops if isinstance(o, arith.ConstantOp)]
    assert len(consts) == 1 and block.first_op is consts[0]  # at the entry, shared
    assert b2.const_value(consts[0].result) == 4


def test_counted_loop_and_if_then_build_blocks():
    f, block = _fn(i64)
    n, c = block.args
    b = LLVMBuilder(InsertPoint.before(block.last_op))
    seen = []
    after = b.counted_loop(n, lambda lb, i: seen.append(i))
    assert len(f.body.blocks) == 4  # ^pred, ^hdr(i), ^body, ^cont
    hdr = f.body.blocks[1]
    assert seen == [hdr.args[0]] and isinstance(hdr.last_op, llvm.CondBrOp)
    assert isinstance(f.body.blocks[2].last_op, llvm.BrOp)
    cond = after.emit(after.make_cmp("eq", n, c))
    after.if_then(cond, lambda tb: tb.emit(tb.make_constant(1, i64)))
    assert len(f.body.blocks) == 6
    then = f.body.blocks[4]
    assert isinstance(then.last_op, llvm.BrOp) and then.last_op.successors[0] is f.body.blocks[5]
    assert isinstance(f.body.blocks[5].last_op, func.ReturnOp)
