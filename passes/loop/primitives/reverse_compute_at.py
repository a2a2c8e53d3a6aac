"""loop-reverse-compute-at: move consumer block `block` under loop `loop` of producer block
`target` (TVM's `sch.reverse_compute_at`), computing exactly what those iterations produced.

    mini-opt k.mlir -p 'loop-reverse-compute-at{block=relu target=conv2d loop=3}'

"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from minimlir.passes.loop.schedule.api import schedule_diagnostics, select


@dataclass(frozen=True)
class LoopReverseComputeAtPass(ModulePass):
    """Move a consumer block under a producer's loop, computing what it produced."""

    name = "loop-reverse-compute-at"

    block: str = ""
    target: str = ""
    loop: int = 0
    kernel: str = ""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        with schedule_diagnostics(op):
            sch, blk = select(op, self.kernel, self.block, "loop-reverse-compute-at")
            tgt = sch.get_block(self.target)
            sch.reverse_compute_at(blk, sch.get_loop(tgt, self.loop))
