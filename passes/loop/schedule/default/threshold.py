"""The parallel work threshold: a parallel loop whose total work is small runs serially, so a tiny
kernel does not pay libgomp's fork-join (a few microseconds, far more on a loaded machine).

Runs last in `schedule_kernel`, on the scheduled kernel (loops with kinds, bodies lowered). The work
of a loop nest is counted in executed ops: each op in a body counts 1 (`math` ops
`TRANSCENDENTAL_WEIGHT`, they expand to dozens of instructions), a loop multiplies its body by its
trip count. For each outermost parallel loop:

  * every trip count static: work < `parallel.min_work` -> the loop becomes serial (decided here);
  * the parallel loop's own trip count dynamic, its body's work W static: the loop gets
    `loop.min_parallel_iters = ceil(min_work / W)`; loop-outline-parallel records it per body and
    convert-parallel-to-llvm asks libgomp for one thread (no fork-join, the body runs on the
    calling thread) when the run-time trip count is below it;
  * a dynamic extent inside the body: no estimate, the loop stays parallel.

    loop.for %i = %c0 to %c4 step %c1 parallel { 64 ops }      -> serial (256 < min_work)
    loop.for %i = %c0 to %n step %c1 parallel { 4096 ops }     -> parallel {loop.min_parallel_iters = 8}

The threshold is the knob `parallel.min_work` (knobs.py); 0 turns the threshold off.
"""

from __future__ import annotations

from xdsl.dialects import arith
from xdsl.dialects.builtin import IntegerAttr, StringAttr, i64
from xdsl.ir import Block, Operation

from minimlir.dialects import loop
from minimlir.passes.loop.schedule.default.knobs import choose, fact

MIN_PARALLEL_ITERS_ATTR = "loop.min_parallel_iters"
DEFAULT_MIN_WORK = 32768
TRANSCENDENTAL_WEIGHT = 24


def _const(v) -> int | None:
    owner = getattr(v, "owner", None)
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
        return owner.value.value.data
    return None


def trip_count(for_op: loop.ForOp) -> int | None:
    lb, ub, step = _const(for_op.lb), _const(for_op.ub), _const(for_op.step)
    if lb is None or ub is None or step is None or step <= 0:
        return None
    return max(0, -(-(ub - lb) // step))


def block_work(block: Block) -> int | None:
    """Ops executed by one run of `block` (None when a nested trip count is dynamic)."""
    total = 0
    for op in block.ops:
        w = op_work(op)
        if w is None:
            return None
        total += w
    return total


def op_work(op: Operation) -> int | None:
    if isinstance(op, loop.ForOp):
        n = trip_count(op)
        body = block_work(op.body.block)
        return None if n is None or body is None else n * body
    if isinstance(op, arith.ConstantOp | loop.YieldOp):
        return 0
    w = TRANSCENDENTAL_WEIGHT if op.name.startswith("math.") else 1
    for region in op.regions:
        for b in region.blocks:
            inner = block_work(b)
            if inner is None:
                return None
            w += inner
    return w


def apply_parallel_threshold(kernel: Operation) -> None:
    """Serialize (or mark for a run-time check) the kernel's small outermost parallel loops."""
    tops = [
        op for op in kernel.walk()
        if isinstance(op, loop.ForOp) and op.kind.data == "parallel"
        and not any(l.kind.data == "parallel" for l in loop.enclosing_loops(op))
    ]
    if not tops:
        return
    min_work = choose("parallel.min_work", DEFAULT_MIN_WORK)
    for for_op in tops:
        body = block_work(for_op.body.block)
        n = trip_count(for_op)
        if n is not None and body is not None:
            fact("parallel.work", n * body)
        if min_work <= 0 or body is None:
            continue
        if n is not None:
            if n * body < min_work:
                for_op.properties["kind"] = StringAttr("serial")
        else:
            for_op.attributes[MIN_PARALLEL_ITERS_ATTR] = IntegerAttr(-(-min_work // max(body, 1)), i64)


__all__ = ["DEFAULT_MIN_WORK", "MIN_PARALLEL_ITERS_ATTR", "apply_parallel_threshold", "block_work"]
