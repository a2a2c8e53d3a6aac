"""loop-parallel: mark loop `loop` of block `block` `parallel` if its iterations write disjoint
points and it runs no reduction (TVM's `sch.parallel`).

    mini-opt k.mlir -p 'loop-parallel{block=matmul loop=0}'

"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from minimlir.passes.loop.schedule.api import schedule_diagnostics, select


@dataclass(frozen=True)
class LoopParallelPass(ModulePass):
    """Mark a block's loop `parallel` if its iterations are independent."""

    name = "loop-parallel"

    block: str = ""
    loop: int = 0
    kernel: str = ""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        with schedule_diagnostics(op):
            sch, blk = select(op, self.kernel, self.block, "loop-parallel")
            sch.parallel(sch.get_loop(blk, self.loop))
