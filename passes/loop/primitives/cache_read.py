"""loop-cache-read: copy the tile of a buffer that block `block` reads in one iteration of its
loop `loop` into a packed local buffer, filled by a new block `copy` at the start of that loop's
body (TVM's `sch.cache_read` followed by `compute_at`, with the buffer compacted to the tile).

    mini-opt k.mlir -p 'loop-cache-read{block=matmul read=1 loop=2 copy=B_pack}'

`read` picks the buffer: the n-th distinct buffer the block loads from, in order of first load.
See `Schedule.cache_read` (passes/_schedule.py) for what is refused.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from minimlir.dialects import mem
from minimlir.passes.loop.schedule.api import ScheduleError, block_accesses, schedule_diagnostics, select


@dataclass(frozen=True)
class LoopCacheReadPass(ModulePass):
    """Pack the tile a block reads of one buffer under a loop into a local buffer."""

    name = "loop-cache-read"

    block: str = ""
    read: int = 0
    loop: int = 0
    copy: str = ""
    kernel: str = ""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        with schedule_diagnostics(op):
            sch, blk = select(op, self.kernel, self.block, "loop-cache-read")
            bufs = []
            for o in block_accesses(blk):
                if isinstance(o, mem.LoadOp) and o.memref not in bufs:
                    bufs.append(o.memref)
            if not 0 <= self.read < len(bufs):
                raise ScheduleError(
                    f"loop-cache-read: block '{self.block}' loads {len(bufs)} buffer(s) "
                    f"(read=0..{len(bufs) - 1}), no read={self.read}",
                    blk,
                )
            sch.cache_read(blk, bufs[self.read], sch.get_loop(blk, self.loop),
                           self.copy or f"{self.block}_cache{self.read}")
