"""loop dialect: builders, verifiers, kernel helpers, printing of programmatically built IR."""

import pytest
from xdsl.builder import Builder
from xdsl.context import Context
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    Builtin,
    FloatAttr,
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    f32,
)
from xdsl.ir import Block, Region
from xdsl.parser import Parser
from xdsl.rewriter import InsertPoint
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.test_value import create_ssa_value

from minimlir.dialects import loop, mem

D = DYNAMIC_INDEX


def ctx() -> Context:
    c = Context()
    for d in (Builtin, func.Func, arith.Arith, loop.Loop, mem.Mem):
        c.load_dialect(d)
    return c


def idx():
    return create_ssa_value(IndexType())


def build_sum_rows() -> func.FuncOp:
    """out[i] = sum_j in[i, j], built with the Python API."""
    t_in, t_out = MemRefType(f32, [D, 8]), MemRefType(f32, [D])
    kernel = loop.make_kernel("sum_rows", [t_in], [t_out])
    src, dst = kernel.args
    b = Builder(InsertPoint.at_start(kernel.body.block))
    c0 = b.insert(arith.ConstantOp(IntegerAttr(0, IndexType()))).result
    c1 = b.insert(arith.ConstantOp(IntegerAttr(1, IndexType()))).result
    c8 = b.insert(arith.ConstantOp(IntegerAttr(8, IndexType()))).result
    n = b.insert(mem.DimOp(src, 0)).result
    outer = b.insert(loop.ForOp(c0, n, c1, kind="parallel"))
    bi = Builder(InsertPoint.at_start(outer.body.block))
    inner = bi.insert(loop.ForOp(c0, c8, c1, kind="unroll", unroll_factor=4))
    bj = Builder(InsertPoint.at_start(inner.body.block))
    blk = bj.insert(
        loop.BlockOp(
            "sum",
            [outer.induction_var, inner.induction_var],
            ["spatial", "reduce"],
            init=Block(arg_types=[IndexType(), IndexType()]),
        )
    )
    vi, vj = blk.iter_vars
    bb = Builder(InsertPoint.at_start(blk.body.block))
    x = bb.insert(mem.LoadOp(src, [vi, vj])).result
    acc = bb.insert(mem.LoadOp(dst, [vi])).result
    s = bb.insert(arith.AddfOp(acc, x)).result
    bb.insert(mem.StoreOp(s, dst, [vi]))
    ib = Builder(InsertPoint.at_start(blk.init.block))
    zero = ib.insert(arith.ConstantOp(FloatAttr(0.0, f32))).result
    ib.insert(mem.StoreOp(zero, dst, [blk.init.block.args[0]]))
    return kernel


def test_built_kernel_verifies_prints_and_reparses():
    kernel = build_sum_rows()
    module = ModuleOp([kernel])
    module.verify()
    text = str(module)
    assert "unroll(4)" in text and "parallel" in text and "} init {" in text
    reparsed = Parser(ctx(), text).parse_module()
    reparsed.verify()
    assert str(reparsed) == text
    # the init region refers to the same printed names as the bindings
    blk = loop.find_block(reparsed, "sum")
    assert blk.has_init and blk.kinds == ["spatial", "reduce"]
    store = blk.init.block.first_op.next_op
    assert store.indices[0] is blk.init.block.args[0]


def test_kernel_helpers():
    kernel = build_sum_rows()
    assert loop.is_kernel(kernel)
    assert not loop.is_kernel(func.FuncOp("f", ((), ())))
    loops = loop.loops_of(kernel)
    assert [lp.kind.data for lp in loops] == ["parallel", "unroll"]
    blk = loop.find_block(kernel, "sum")
    assert loop.block_loops(blk) == loops
    assert loop.find_block(kernel, "missing") is None
    assert loop.blocks_of(kernel) == [blk]
    assert blk.binding_of(blk.iter_vars[1]) is loops[1].induction_var
    assert blk.binding_of(blk.init.block.args[0]) is loops[0].induction_var


def test_make_kernel_rejects_non_memrefs():
    with pytest.raises(VerifyException, match=r"argument #1 must be a memref, got index"):
        loop.make_kernel("k", [MemRefType(f32, [4]), IndexType()], [])


def test_kernel_signature_checked_through_its_loops():
    kernel = build_sum_rows()
    kernel.function_type = func.FunctionType.from_lists(
        kernel.function_type.inputs.data, [f32]
    )
    with pytest.raises(VerifyException, match="kernel @sum_rows must not return results"):
        kernel.verify()  # reported by the outermost loop.for


def test_for_verifier():
    a = idx()
    loop.ForOp(a, a, a, kind="vectorize").verify()
    with pytest.raises(VerifyException, match="loop kind must be one of"):
        loop.ForOp(a, a, a, kind="gpu").verify()
    with pytest.raises(VerifyException, match="only allowed on 'unroll' loops"):
        loop.ForOp(a, a, a, kind="serial", unroll_factor=2).verify()
    body = Region(Block(arg_types=[IndexType(), IndexType()]))
    with pytest.raises(VerifyException, match="exactly one block argument"):
        loop.ForOp(a, a, a, body).verify()


def test_block_verifier():
    i = idx()
    loop.BlockOp("b", [i, i], ["spatial", "reduce"]).verify()
    with pytest.raises(VerifyException, match=r"2 binding\(s\) but 1 iteration kind"):
        loop.BlockOp("b", [i, i], ["spatial"]).verify()
    with pytest.raises(VerifyException, match="must be 'spatial' or 'reduce'"):
        loop.BlockOp("b", [i], ["parallel"]).verify()
    with pytest.raises(VerifyException, match="init region needs at least one 'reduce'"):
        loop.BlockOp("b", [i], ["spatial"], init=Block(arg_types=[IndexType()])).verify()
    with pytest.raises(VerifyException, match="block name must not be empty"):
        loop.BlockOp("", [i], ["spatial"]).verify()
    op = loop.BlockOp("b", [i], ["reduce"])
    assert not op.has_init and isinstance(op.body.block.last_op, loop.YieldOp)
