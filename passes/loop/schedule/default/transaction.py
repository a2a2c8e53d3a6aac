"""Transactions: try a group of schedule primitives on a kernel, roll the kernel back if one
refuses. `attempt` is the only place a rule's refusal is caught; REFUSALS records why.

A refusal is a ScheduleError (the Schedule API's "this request is illegal here", or a rule's own
"this kernel is not of my shape"). Anything else a rule raises (AssertionError, IndexError, …) is a
bug in the rule and propagates: loop-schedule then fails as a crashed pass, instead of the kernel
silently keeping a slower schedule."""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects import func

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
    """Run fn(Schedule(kernel)); on ScheduleError restore the kernel body and return False.
    `marks_only`: fn only finds loops and applies primitives that check everything before they
    change anything (Schedule.parallel, Schedule.vectorize set the loop kind last), so a refusal
    leaves the kernel as it was and no backup copy is made (most attempts on a big model)."""
    backup = None if marks_only else kernel.body.clone()
    try:
        fn(Schedule(kernel))
        if _verify_steps():
            kernel.verify()
        return True
    except ScheduleError as e:
        REFUSALS.append(f"@{kernel.sym_name.data}: {type(e).__name__}: {e}")
        if backup is None:
            return False
        kernel.body.detach_block(kernel.body.block).erase(safe_erase=False)
        blk = backup.detach_block(backup.block)
        kernel.body.add_block(blk)
        return False


