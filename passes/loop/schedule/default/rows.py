"""Sibling nests fused down to the rows: a kernel of consecutive nests over the same outer loops
(a softmax's max, exp, sum and divide; a layer-norm's mean, variance and normalize) runs them
row by row instead of one whole-tensor pass each.

    for b, h, r: for k: max[b,h,r] = …        for b, h, r:
    for b, h, r: for j: e[…] = exp(…)    ->      for k: max[b,h,r] = …
    for b, h, r: for k: sum[b,h,r] += …          for j: e[…] = exp(…)
    for b, h, r: for j: y[…] = e / sum           for k: sum[b,h,r] += …
                                                 for j: y[…] = e / sum

Adjacent sibling loops with equal bounds are fused outermost first (Schedule.fuse: legal only when
each iteration of the second reads what the same iteration of the first wrote), then the loops in
the fused body, level by level, stopping at loops that run a reduction (fusing those would read a
partial result; the primitive refuses it too). Every row's data stays in L1 between the phases,
and a fused nest is one parallel loop instead of one per phase. Knob `generic.fuse_rows`.
"""

from __future__ import annotations

from xdsl.dialects import func
from xdsl.ir import Block

from minimlir.dialects import loop
from minimlir.passes.loop.schedule.affine import reduces_along
from minimlir.passes.loop.schedule.default import transaction


def _runs_reduction(l: loop.ForOp) -> bool:
    return any(reduces_along(blk, l.induction_var) for blk in loop.blocks_of(l))


def _at(kernel: func.FuncOp, path: list[int]) -> Block:
    blk = kernel.body.block
    for i in path:
        blk = [o for o in blk.ops if isinstance(o, loop.ForOp)][i].body.block
    return blk


def _fuse_level(kernel: func.FuncOp, path: list[int]) -> int:
    """Fuse adjacent sibling loops in the body at `path`, then recurse into each; returns fusions."""
    n = 0
    i = 0
    while True:
        loops = [o for o in _at(kernel, path).ops if isinstance(o, loop.ForOp)]
        if i + 1 >= len(loops):
            break
        a, b = loops[i], loops[i + 1]
        if a.next_op is not b or _runs_reduction(a) or _runs_reduction(b):
            i += 1
            continue

        def go(s, path=path, i=i):
            ls = [o for o in _at(kernel, path).ops if isinstance(o, loop.ForOp)]
            s.fuse(ls[i], ls[i + 1])

        if transaction.attempt(kernel, go):
            n += 1
        else:
            i += 1
    count = len([o for o in _at(kernel, path).ops if isinstance(o, loop.ForOp)])
    for j in range(count):
        l = [o for o in _at(kernel, path).ops if isinstance(o, loop.ForOp)][j]
        if not _runs_reduction(l) and len([o for o in l.body.block.ops if isinstance(o, loop.ForOp)]) > 1:
            n += _fuse_level(kernel, [*path, j])
    return n


def fuse_rows(kernel: func.FuncOp) -> int:
    """Fuse the kernel's sibling nests level by level (module docstring); returns the fusions."""
    if len([o for o in kernel.body.block.ops if isinstance(o, loop.ForOp)]) < 2:
        return 0
    return _fuse_level(kernel, [])


__all__ = ["fuse_rows"]
