"""Schedule primitives (passes/_schedule.py): the scheduled kernel computes what the unscheduled
one does, checked with the reference interpreter on random inputs, for static and dynamic shapes
and sizes the tile / vector width does not divide; and every refusal says why."""

from pathlib import Path

import numpy as np
import pytest
from _schedule_kernels import chain, check, matmul, nan, parse, rand

from minimlir.dialects import loop
from minimlir.passes.loop.schedule.api import Schedule, ScheduleError
from minimlir.passes.loop.lower_unroll import LoopLowerUnrollPass
from minimlir.passes.loop.lower_vectors import LoopLowerVectorsPass

CONV = (Path(__file__).parents[2] / "lit" / "loop" / "Inputs" / "conv-add-relu.mlir").read_text()

# (type text for a dim, runtime size): dynamic, static divisible by 4, static not divisible
SHAPES = [("?", 7), ("8", 8), ("6", 6)]


def mm(shape):
    (m, sm), (n, sn) = shape, ("?", 5) if shape[0] == "?" else (shape[0], shape[1])
    return matmul(m, "?" if m == "?" else "5", n), [rand(sm, 5), rand(5, sn), nan(sm, sn)]


def chain_case(shape):
    t, s = shape
    return chain(t, t), [rand(s, s), rand(s), nan(s, s)]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("factors", [[None, 4], [None, 2, 3]])
def test_split(shape, factors):
    text, bufs = mm(shape)

    def sch(s):
        b = s.get_block("matmul")
        loops = s.split(s.get_loops(b)[1], factors)
        assert len(loops) == len(factors)
        s.split(s.get_loops(b)[-1], [None, 2])  # the reduction loop too

    check(text, sch, bufs, "matmul")


def test_split_explicit_factors_must_cover_extent():
    s = Schedule(parse(matmul("6", "5", "6")))
    i = s.get_loops(s.get_block("matmul"))[0]
    with pytest.raises(ScheduleError, match="do not match the extent 6"):
        s.split(i, [4, 4])
    s.split(i, [2, 3])  # exact


@pytest.mark.parametrize("shape", SHAPES)
def test_reorder(shape):
    text, bufs = mm(shape)

    def sch(s):
        b = s.get_block("matmul")
        i, j, k = s.get_loops(b)
        io, ii = s.split(i, [None, 4])
        s.reorder(s.get_loops(b)[3], ii)  # k above ii; split guard stays above its loop
        i0, k, ii, j = s.reorder(*s.get_loops(b)[:1], *s.get_loops(b)[3:], *s.get_loops(b)[1:3])[:4]

    check(text, sch, bufs, "matmul")


def test_reorder_refuses_bound_dependence_and_imperfect_nest():
    s = Schedule(parse(matmul()))
    b = s.get_block("matmul")
    io, ii = s.split(s.get_loops(b)[0], [None, 4])
    with pytest.raises(ScheduleError, match="depend on a loop that would be inside it"):
        s.reorder(ii, io)
    s2 = Schedule(parse(chain()))
    with pytest.raises(ScheduleError, match="not nested in one another"):
        s2.reorder(s2.get_loops(s2.get_block("add"))[0], s2.get_loops(s2.get_block("scale"))[1])


@pytest.mark.parametrize("shape", SHAPES)
def test_fuse_nested_and_siblings(shape):
    text, bufs = chain_case(shape)

    def sch(s):
        s.fuse(*s.get_loops(s.get_block("relu")))
        a0 = s.get_loops(s.get_block("add"))[0]
        s.fuse(s.get_loops(s.get_block("scale"))[0], a0)
        assert s.get_loops(s.get_block("scale"))[0] is s.get_loops(s.get_block("add"))[0]

    check(text, sch, bufs, "chain")


def test_fuse_siblings_refuses_cross_iteration_read():
    text = chain().replace("%p = mem.load %t[%wi, %wj]", "%p = mem.load %t[%wj, %wi]")
    s = Schedule(parse(text))
    with pytest.raises(ScheduleError, match="beyond what the same iteration"):
        s.fuse(s.get_loops(s.get_block("scale"))[0], s.get_loops(s.get_block("add"))[0])


@pytest.mark.parametrize("shape", SHAPES)
def test_compute_at_and_reverse_compute_at(shape):
    text, bufs = chain_case(shape)

    def sch(s):
        add = s.get_block("add")
        i, j = s.get_loops(add)
        io, ii = s.split(i, [None, 4])
        jo, ji = s.split(s.get_loops(add)[2], [None, 4])
        s.reorder(jo, ii)
        s.compute_at(s.get_block("scale"), s.get_loops(add)[1])
        s.reverse_compute_at(s.get_block("relu"), s.get_loops(add)[1])
        assert len(s.get_loops(s.get_block("scale"))) == 4

    m = check(text, sch, bufs, "chain")
    top = [op for op in m.walk() if isinstance(op, loop.ForOp) and op.parent_op().name == "func.func"]
    assert len(top) == 1  # everything lives in the add's tile loops now


def test_compute_at_refusals():
    s = Schedule(parse(chain()))
    add, relu, scale = s.get_block("add"), s.get_block("relu"), s.get_block("scale")
    with pytest.raises(ScheduleError, match="comes after loop"):
        s.compute_at(relu, s.get_loops(add)[0])
    with pytest.raises(ScheduleError, match="no block under loop .* reads"):
        s.compute_at(scale, s.get_loops(relu)[0])
    gather = chain().replace("%p = mem.load %t[%wi, %wj]", "%g = arith.divui %wj, %c1 : index\n        %p = mem.load %t[%wi, %g]")
    s = Schedule(parse(gather))
    with pytest.raises(ScheduleError, match="non-affine"):
        s.compute_at(s.get_block("scale"), s.get_loops(s.get_block("add"))[0])


@pytest.mark.parametrize("shape", SHAPES)
def test_compute_inline(shape):
    text, bufs = chain_case(shape)

    def sch(s):
        s.compute_inline(s.get_block("scale"))
        s.compute_inline(s.get_block("add"))
        with pytest.raises(ScheduleError, match="no block named 'scale'; available blocks: relu"):
            s.get_block("scale")

    m = check(text, sch, bufs, "chain")
    assert not [op for op in m.walk() if op.name == "mem.alloca"]


def test_compute_inline_refusals():
    s = Schedule(parse(matmul()))
    with pytest.raises(ScheduleError, match="is a reduction"):
        s.compute_inline(s.get_block("matmul"))
    s = Schedule(parse(chain()))
    with pytest.raises(ScheduleError, match="kernel argument"):
        s.compute_inline(s.get_block("relu"))


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("width", [4, 8])
def test_vectorize_and_lower(shape, width):
    text, bufs = chain_case(shape)

    def sch(s):
        for name in ("scale", "add", "relu"):
            s.vectorize(s.get_loops(s.get_block(name))[1])

    m = check(text, sch, bufs, "chain", passes=[LoopLowerVectorsPass(width=width)])
    vec = [op for op in m.walk() if op.name == "mem.load" and "vector" in str(op.result.type)]
    assert vec or shape[1] < width


def test_vectorize_refusals():
    s = Schedule(parse(matmul()))
    b = s.get_block("matmul")
    i, j, k = s.get_loops(b)
    with pytest.raises(ScheduleError, match="runs reduction variable"):
        s.vectorize(k)
    with pytest.raises(ScheduleError, match="not innermost"):
        s.vectorize(j)
    s2 = Schedule(parse(chain()))
    i, j = s2.get_loops(s2.get_block("add"))
    s2.reorder(j, i)
    with pytest.raises(ScheduleError, match="does not store contiguously"):
        s2.vectorize(s2.get_loops(s2.get_block("add"))[1])


@pytest.mark.parametrize("shape", SHAPES)
def test_vectorize_reduction_inner_spatial(shape):
    text, bufs = mm(shape)

    def sch(s):
        b = s.get_block("matmul")
        s.reorder(*[s.get_loops(b)[x] for x in (2, 1)])
        s.decompose_reduction(b, s.get_loops(b)[1])
        s.vectorize(s.get_loops(b)[2])
        s.vectorize(s.get_loops(s.get_block("matmul_init"))[1])

    check(text, sch, bufs, "matmul", passes=[LoopLowerVectorsPass(width=4)])


@pytest.mark.parametrize("shape", SHAPES)
def test_unroll(shape):
    text, bufs = chain_case(shape)

    def sch(s):
        s.unroll(s.get_loops(s.get_block("add"))[1], 3)
        if shape[0] != "?":
            s.unroll(s.get_loops(s.get_block("relu"))[1])

    m = check(text, sch, bufs, "chain", passes=[LoopLowerUnrollPass()])
    assert not [op for op in m.walk() if isinstance(op, loop.ForOp) and op.kind.data == "unroll"]


def test_unroll_refuses_dynamic_full():
    s = Schedule(parse(chain()))
    with pytest.raises(ScheduleError, match="dynamic trip count"):
        s.unroll(s.get_loops(s.get_block("add"))[1])


def test_parallel():
    s = Schedule(parse(matmul()))
    b = s.get_block("matmul")
    i, j, k = s.get_loops(b)
    s.parallel(i)
    s.parallel(j)
    assert i.kind.data == "parallel"
    with pytest.raises(ScheduleError, match="runs reduction variable"):
        s.parallel(k)
    text = chain().replace("mem.store %s, %y[%wi, %wj]", "mem.store %s, %y[%wi, %c0]")
    s = Schedule(parse(text))
    with pytest.raises(ScheduleError, match="may write the same element"):
        s.parallel(s.get_loops(s.get_block("add"))[1])


@pytest.mark.parametrize("shape", SHAPES)
def test_decompose_reduction(shape):
    text, bufs = mm(shape)

    def sch(s):
        b = s.get_block("matmul")
        s.split(s.get_loops(b)[1], [None, 4])
        init = s.decompose_reduction(b, s.get_loops(b)[1])
        assert not b.has_init and init.block_name.data == "matmul_init"
        assert len(s.get_loops(init)) == 3

    check(text, sch, bufs, "matmul")


def test_decompose_reduction_refuses_outer_reduce_loop():
    s = Schedule(parse(matmul()))
    b = s.get_block("matmul")
    s.reorder(*[s.get_loops(b)[x] for x in (2, 0)])
    with pytest.raises(ScheduleError, match="reduction loop .* is outside"):
        s.decompose_reduction(b, s.get_loops(b)[1])


def make_static(text: str, shapes: dict[str, str]) -> str:
    """Give the named 4-D buffers static shapes (line by line: one buffer per access line)."""
    lines = []
    for line in text.splitlines():
        if line.startswith("func.func"):
            for name, shape in shapes.items():
                line = line.replace(f"{name}: memref<?x?x?x?xf32>", f"{name}: memref<{shape}xf32>")
        else:
            for name, shape in shapes.items():
                if f"{name}[" in line or f" {name}," in line or f"{name} = mem.alloca" in line:
                    line = line.replace("memref<?x?x?x?xf32>", f"memref<{shape}xf32>")
                    line = line.replace("mem.alloca(%n, %o, %h, %wd)", "mem.alloca()")
        lines.append(line)
    return "\n".join(lines)


@pytest.mark.parametrize("tile", [16, 2])
@pytest.mark.parametrize("static", [False, True])
def test_conv_add_relu_fused_tiles(tile, static):
    """The headline: conv2d tiled tile x tile over the output, add and relu computed at the tile."""
    x, w, bias = rand(1, 2, 6, 7), rand(3, 2, 2, 2), rand(3)
    text = CONV
    if static:
        text = make_static(text, {"%x": "1x2x6x7", "%w": "3x2x2x2", "%z": "1x3x5x6", "%conv": "1x3x5x6", "%sum": "1x3x5x6"})
    z = nan(1, 3, 5, 6)

    def sch(s):
        conv = s.get_block("conv2d")
        s.split(s.get_loops(conv)[2], [None, tile])
        s.split(s.get_loops(conv)[4], [None, tile])
        loops = s.get_loops(conv)
        s.reorder(loops[4], loops[3])
        s.reverse_compute_at(s.get_block("add"), s.get_loops(conv)[3])
        s.reverse_compute_at(s.get_block("relu"), s.get_loops(conv)[3])

    m = check(text, sch, [x, w, bias, z], "conv_add_relu")
    got = [np.array(b, copy=True) for b in (x, w, bias, z)]
    from _schedule_kernels import run

    out = run(m, "conv_add_relu", got)[3]
    ref = np.zeros((1, 3, 5, 6), np.float32)
    for o in range(3):
        for i in range(5):
            for j in range(6):
                ref[0, o, i, j] = (x[0, :, i:i + 2, j:j + 2] * w[o]).sum() + bias[o]
    np.testing.assert_allclose(out, np.maximum(ref, 0), rtol=1e-5, atol=1e-5)
