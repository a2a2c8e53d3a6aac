"""loop-decompose-reduction: hoist the init of reduction block `block` into a new block
`<block>_init` placed before loop `loop` (TVM's `sch.decompose_reduction`).

    mini-opt k.mlir -p 'loop-decompose-reduction{block=matmul loop=2}'

"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from minimlir.passes.loop.schedule.api import schedule_diagnostics, select


@dataclass(frozen=True)
class LoopDecomposeReductionPass(ModulePass):
    """Hoist a reduction block's init into its own block before a loop."""

    name = "loop-decompose-reduction"

    block: str = ""
    loop: int = 0
    kernel: str = ""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        with schedule_diagnostics(op):
            sch, blk = select(op, self.kernel, self.block, "loop-decompose-reduction")
            sch.decompose_reduction(blk, sch.get_loop(blk, self.loop))
