"""Rule: anything else. Parallelize the outermost loop that legally can be (per top-level nest),
vectorize the innermost loop when legal and long enough."""

from __future__ import annotations

import dataclasses

from xdsl.dialects import func
from xdsl.ir import Operation

from minimlir.passes.loop.schedule.default.knobs import choose
from minimlir.dialects import loop
from minimlir.passes.loop.schedule.api import (
    Schedule,
    const_index,
)
from minimlir.passes.loop.schedule.default import transaction
from minimlir.passes.loop.schedule.default._helpers import _mark_width, fit_width
from minimlir.passes.loop.schedule.default.config import ScheduleConfig

# ----------------------------------------------------------------------------------------------
# generic


def _innermost_loops(root: Operation) -> list[loop.ForOp]:
    return [
        l for l in root.walk()
        if isinstance(l, loop.ForOp) and not any(isinstance(o, loop.ForOp) for o in l.body.walk() if o is not l)
    ]


def _schedule_rest(kernel: func.FuncOp, cfg: ScheduleConfig, skip: set[str] = frozenset()) -> None:
    """Parallelize / vectorize the nests that hold no block of `skip` and are not yet marked."""
    g = cfg.generic
    g = dataclasses.replace(g, vectorize=choose("generic.vectorize", g.vectorize),
                            parallel=choose("generic.parallel", g.parallel),
                            min_vector_extent=choose("generic.min_vector_extent", g.min_vector_extent))
    width = choose("generic.width", cfg.width)
    tops = [op for op in kernel.body.block.ops if isinstance(op, loop.ForOp)]
    for t_index, top in enumerate(tops):
        if any(b.block_name.data in skip for b in loop.blocks_of(top)):
            continue
        if any(isinstance(l, loop.ForOp) and l.kind.data != "serial" for l in top.walk()):
            continue
        if g.vectorize:
            for idx, inner in enumerate(_innermost_loops(top)):
                ext = const_index(inner.ub)
                if ext is not None and ext < max(g.min_vector_extent, 2):
                    continue

                w = fit_width(inner, width, along=inner)
                if w == 0:
                    continue

                def vec(s: Schedule, t=t_index, idx=idx, w=w) -> None:
                    top_now = [op for op in kernel.body.block.ops if isinstance(op, loop.ForOp)][t]
                    l = _innermost_loops(top_now)[idx]
                    s.vectorize(l)
                    _mark_width(l, w)

                transaction.attempt(kernel, vec, marks_only=True)
        if g.parallel:
            _parallelize_nest(kernel, t_index)


def _parallelize_nest(kernel: func.FuncOp, t_index: int) -> None:
    """Mark the outermost loop of top-level nest #t_index (walking down single-loop bodies,
    skipping loops of extent 1) that may legally run in parallel."""
    depth = 0
    while True:
        top = [op for op in kernel.body.block.ops if isinstance(op, loop.ForOp)][t_index]
        cur: loop.ForOp | None = top
        for _ in range(depth):
            inner = [o for o in cur.body.block.ops if isinstance(o, loop.ForOp)]  # type: ignore[union-attr]
            cur = inner[0] if len(inner) == 1 else None
            if cur is None:
                return
        assert cur is not None
        if cur.kind.data != "serial":
            return
        if const_index(cur.ub) == 1 or not _attempt_parallel(kernel, t_index, depth):
            depth += 1
            if depth > 8:
                return
            continue
        return


def _attempt_parallel(kernel: func.FuncOp, t_index: int, depth: int) -> bool:
    def go(s: Schedule) -> None:
        cur = [op for op in kernel.body.block.ops if isinstance(op, loop.ForOp)][t_index]
        for _ in range(depth):
            cur = [o for o in cur.body.block.ops if isinstance(o, loop.ForOp)][0]
        s.parallel(cur)

    return transaction.attempt(kernel, go, marks_only=True)


