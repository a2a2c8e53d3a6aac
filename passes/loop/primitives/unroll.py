"""loop-unroll: mark loop `loop` of block `block` `unroll` (fully, or by `factor`; TVM's
`sch.unroll`); loop-lower-unroll unrolls it.

    mini-opt k.mlir -p 'loop-unroll{block=add loop=1 factor=4}'

"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from minimlir.passes.loop.schedule.api import schedule_diagnostics, select


@dataclass(frozen=True)
class LoopUnrollPass(ModulePass):
    """Mark a block's loop `unroll` (fully or by a factor)."""

    name = "loop-unroll"

    block: str = ""
    loop: int = 0
    factor: int = 0
    kernel: str = ""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        with schedule_diagnostics(op):
            sch, blk = select(op, self.kernel, self.block, "loop-unroll")
            sch.unroll(sch.get_loop(blk, self.loop), self.factor or None)
