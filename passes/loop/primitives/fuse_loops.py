"""loop-fuse-loops: merge loop `loop` of block `block` with the adjacent loop that follows it
(same bounds): one loop runs both bodies, when the second only reads what the same iteration of
the first wrote. With `loops=i,j,...` instead, fuse those nested loops into one (TVM's `sch.fuse`).

    mini-opt k.mlir -p 'loop-fuse-loops{block=add loop=0}'
    mini-opt k.mlir -p 'loop-fuse-loops{block=add loops=0,1}'

"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from minimlir.dialects import loop
from minimlir.passes.loop.schedule.api import ScheduleError, loop_name, schedule_diagnostics, select


@dataclass(frozen=True)
class LoopFuseLoopsPass(ModulePass):
    """Merge a loop with the adjacent loop of equal bounds (or fuse nested loops)."""

    name = "loop-fuse-loops"

    block: str = ""
    loop: int = 0
    loops: tuple[int, ...] = ()
    kernel: str = ""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        with schedule_diagnostics(op):
            sch, blk = select(op, self.kernel, self.block, "loop-fuse-loops")
            if self.loops:
                sch.fuse(*[sch.get_loop(blk, i) for i in self.loops])
                return
            first = sch.get_loop(blk, self.loop)
            nxt = first.next_op
            if not isinstance(nxt, loop.ForOp):
                raise ScheduleError(f"fuse: loop {loop_name(first)} is not followed by a loop", first)
            sch.fuse(first, nxt)
