"""loop-reorder: permute the loops of a perfect nest (TVM's `sch.reorder`).

    mini-opt k.mlir -p 'loop-reorder{block=matmul order=0,2,1}'

`order` lists loop indices of get_loops(block), outermost first; the listed loops take, in that
order, the positions they hold now.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from minimlir.passes.loop.schedule.api import schedule_diagnostics, select


@dataclass(frozen=True)
class LoopReorderPass(ModulePass):
    """Permute the loops of a perfect nest around a block."""

    name = "loop-reorder"

    block: str = ""
    order: tuple[int, ...] = ()
    kernel: str = ""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        with schedule_diagnostics(op):
            sch, blk = select(op, self.kernel, self.block, "loop-reorder")
            loops = sch.get_loops(blk)
            sch.reorder(*[sch.get_loop(blk, i) for i in self.order])
            del loops
