"""Transactions: try a group of schedule primitives on a kernel, roll the kernel back if one
refuses. `attempt` is the only place a rule's refusal is caught; REFUSALS records why.

A refusal is a ScheduleError (the Schedule API's "this request is illegal here", or a rule's own
"this kernel is not of my shape"). Anything else a rule raises (AssertionError, IndexError, …) is a
bug in the rule and propagates: loop-schedule then fails as a crashed pass, instead of the kernel
silently keeping a slower schedule."""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects import func

from minimlir.dialects import loop
from minimlir.passes.loop.schedule.api import (
    Schedule,
    ScheduleError,
)

# ----------------------------------------------------------------------------------------------
# Transactions: try a group of primitives, roll the kernel back if one refuses.


# Why steps were refused (kernel, message), newest last: for debugging and for tests.
REFUSALS: list[str] = []


def _verify_steps() -> bool:
    """Verify the kernel after every schedule step (MINIMLIR_VERIFY_EACH=1, for pass authors: it
    names the step that broke the IR). Off by default: a big model takes thousands of steps and the
    IR is verified after the pass anyway (mini-opt) or at the end of the pipeline (the API)."""
    import os

    return os.environ.get("MINIMLIR_VERIFY_EACH") == "1"


def attempt(kernel: func.FuncOp, fn: Callable[[Schedule], object], *, marks_only: bool = False) -> bool:
    """Run fn(Schedule(kernel)); on ScheduleError restore the kernel and return False.
    `marks_only`: fn only marks loops (Schedule.parallel, vectorize, unroll, a vector width: the
    loops' properties and attributes), so instead of a copy of the whole body (most of the
    schedule's time on a kernel, xDSL clones an op in about 0.15 ms) the loops' properties and
    attributes are kept and put back on a refusal, also after a step that had marked some."""
    backup = None if marks_only else kernel.body.clone()
    marks = _loop_marks(kernel) if marks_only else None
    try:
        fn(Schedule(kernel))
        if _verify_steps():
            kernel.verify()
        return True
    except ScheduleError as e:
        REFUSALS.append(f"@{kernel.sym_name.data}: {type(e).__name__}: {e}")
        if marks is not None:
            for op, props, attrs in marks:
                if dict(op.properties) != props:
                    op.properties.clear()
                    op.properties.update(props)
                if dict(op.attributes) != attrs:
                    op.attributes.clear()
                    op.attributes.update(attrs)
            return False
        assert backup is not None
        kernel.body.detach_block(kernel.body.block).erase(safe_erase=False)
        blk = backup.detach_block(backup.block)
        kernel.body.add_block(blk)
        return False


def _loop_marks(kernel: func.FuncOp) -> list[tuple[loop.ForOp, dict, dict]]:
    return [(op, dict(op.properties), dict(op.attributes)) for op in kernel.walk() if isinstance(op, loop.ForOp)]
