"""Schedule.cache_read / loop-cache-read: the packed copy of a tile keeps every kernel's meaning
(interpreted before == after on dynamic, divisible and ragged shapes) and is refused when the
tile cannot be packed."""

from __future__ import annotations

import pytest
from _schedule_kernels import chain, check, matmul, nan, parse, rand

from minimlir.dialects import loop, mem
from minimlir.passes.loop.schedule.api import Schedule, ScheduleError


def mm_case(m, k, n, sm, sk, sn):
    return matmul(m, k, n), [rand(sm, sk), rand(sk, sn, seed=1), nan(sm, sn)]


def tiled_pack(s: Schedule, at: int = 2, fk: int = 4, fj: int = 3):
    """i, k0, j0 | j1, k1 with B's (k0, j0) tile packed at loop `at`."""
    b = s.get_block("matmul")
    i, j, k = s.get_loops(b)
    j0, j1 = s.split(j, [None, fj])
    k0, k1 = s.split(k, [None, fk])
    i, k0, j0, j1, k1 = s.reorder(i, k0, j0, j1, k1)
    loads = [o for o in b.body.walk() if isinstance(o, mem.LoadOp)]
    return s.cache_read(b, loads[1].memref, s.get_loops(b)[at], "B_pack")


@pytest.mark.parametrize(
    "shape", [("?", "?", "?", 7, 9, 5), ("8", "8", "6", 8, 8, 6), ("5", "7", "10", 5, 7, 10), ("1", "1", "1", 1, 1, 1)]
)
def test_cache_read_packs_matmul_tile(shape):
    text, bufs = mm_case(*shape)
    m = check(text, tiled_pack, bufs, "matmul")
    allocas = [o for o in m.walk() if isinstance(o, mem.AllocaOp)]
    assert [a.results[0].type.get_shape() for a in allocas] == [(4, 3)]  # the tile, packed
    copy = next(b for b in loop.blocks_of(m) if b.block_name.data == "B_pack")
    assert copy.kinds == ["spatial", "spatial"]


def test_cache_read_at_outer_loop_packs_a_panel():
    """At loop k0 the tile is a kc x N panel: N must be static for a constant extent."""
    text, bufs = mm_case("6", "9", "5", 6, 9, 5)
    m = check(text, lambda s: tiled_pack(s, at=1), bufs, "matmul")
    assert [a.results[0].type.get_shape() for a in m.walk() if isinstance(a, mem.AllocaOp)] == [(4, 5)]
    with pytest.raises(ScheduleError, match="no constant extent"):
        tiled_pack(Schedule(parse(matmul("?", "?", "?"))), at=1)


def test_cache_read_refusals():
    s = Schedule(parse(matmul("?", "?", "?")))
    b = s.get_block("matmul")
    i, j, k = s.get_loops(b)
    out = [o for o in b.body.walk() if isinstance(o, mem.StoreOp)][0].memref
    with pytest.raises(ScheduleError, match="writes"):
        s.cache_read(b, out, i, "c_pack")
    text = chain("?", "?")
    s = Schedule(parse(text))
    add = s.get_block("add")
    other = s.get_block("scale")
    with pytest.raises(ScheduleError, match="does not enclose"):
        s.cache_read(add, [o for o in add.body.walk() if isinstance(o, mem.LoadOp)][0].memref,
                     s.get_loops(other)[0], "p")


def test_cache_read_pass_selects_buffer_and_reports_bad_index():
    from minimlir.passes.loop.primitives.cache_read import LoopCacheReadPass

    m = parse(matmul("4", "4", "4"))
    LoopCacheReadPass(block="matmul", read=1, loop=0, copy="B_pack").apply(None, m)
    m.verify()
    assert "B_pack" in str(m) and "memref<4x4xf32>" in str(m)
    with pytest.raises(Exception, match="no read=5"):
        LoopCacheReadPass(block="matmul", read=5, loop=0).apply(None, parse(matmul("4", "4", "4")))
