"""loop-compute-at: move producer block `block` under loop `loop` of block `target` (TVM's
`sch.compute_at`), computing exactly the region the target's iterations under that loop read.

    mini-opt k.mlir -p 'loop-compute-at{block=pad target=conv2d loop=3}'

"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from minimlir.passes.loop.schedule.api import schedule_diagnostics, select


@dataclass(frozen=True)
class LoopComputeAtPass(ModulePass):
    """Move a producer block under a consumer's loop, computing the region it reads."""

    name = "loop-compute-at"

    block: str = ""
    target: str = ""
    loop: int = 0
    kernel: str = ""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        with schedule_diagnostics(op):
            sch, blk = select(op, self.kernel, self.block, "loop-compute-at")
            tgt = sch.get_block(self.target)
            sch.compute_at(blk, sch.get_loop(tgt, self.loop))
