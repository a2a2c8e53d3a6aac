"""loop-split: split loop `loop` of block `block` by `factors` (TVM's `sch.split`).

    mini-opt k.mlir -p 'loop-split{block=matmul loop=2 factors=4}'
    for k = 0 to K  ->  for ko = 0 to ceildiv(K, 4) { for ki = 0 to min(4, K - ko*4) { k = ko*4 + ki } }

`factors=4` means inner factor 4 (outer inferred); `factors=0,4,2` gives three loops (0 = inferred).
The guard `min(...)` is omitted when the factor divides a static extent.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from minimlir.passes.loop.schedule.api import schedule_diagnostics, select


@dataclass(frozen=True)
class LoopSplitPass(ModulePass):
    """Split a block's loop into outer/inner loops (guarded when the factor may not divide)."""

    name = "loop-split"

    block: str = ""
    loop: int = 0
    factors: tuple[int, ...] = ()
    kernel: str = ""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        with schedule_diagnostics(op):
            sch, blk = select(op, self.kernel, self.block, "loop-split")
            fs = list(self.factors)
            if len(fs) == 1:
                fs = [0, fs[0]]
            sch.split(sch.get_loop(blk, self.loop), fs)
