"""loop-compute-inline: inline elementwise block `block` into the loads of its consumers and
remove it (TVM's `sch.compute_inline`).

    mini-opt k.mlir -p 'loop-compute-inline{block=bias}'

"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from minimlir.passes.loop.schedule.api import schedule_diagnostics, select


@dataclass(frozen=True)
class LoopComputeInlinePass(ModulePass):
    """Inline an elementwise block into its consumers' loads and remove it."""

    name = "loop-compute-inline"

    block: str = ""
    kernel: str = ""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        with schedule_diagnostics(op):
            sch, blk = select(op, self.kernel, self.block, "loop-compute-inline")
            sch.compute_inline(blk)
