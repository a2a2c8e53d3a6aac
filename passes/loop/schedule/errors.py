"""The one exception the schedule primitives raise: a refused (illegal) request."""

from __future__ import annotations

from xdsl.ir import Operation


class ScheduleError(Exception):
    """An illegal schedule request; `op` is the block or loop it is about (for diagnostics)."""

    def __init__(self, message: str, op: Operation | None = None):
        super().__init__(message)
        self.message = message
        self.op = op
