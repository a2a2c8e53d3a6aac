"""loop-vectorize: mark loop `loop` of block `block` `vectorize` if legal (TVM's
`sch.vectorize`); loop-lower-vectors turns it into vector code.

    mini-opt k.mlir -p 'loop-vectorize{block=add loop=1}'

"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from minimlir.passes.loop.schedule.api import schedule_diagnostics, select


@dataclass(frozen=True)
class LoopVectorizePass(ModulePass):
    """Mark a block's loop `vectorize` if it can become vector code."""

    name = "loop-vectorize"

    block: str = ""
    loop: int = 0
    kernel: str = ""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        with schedule_diagnostics(op):
            sch, blk = select(op, self.kernel, self.block, "loop-vectorize")
            sch.vectorize(sch.get_loop(blk, self.loop))
