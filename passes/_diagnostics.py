"""Diagnostics for pass authors: report a remark, warning or error at an op's source location.

    from minimlir.passes._diagnostics import emit_error, emit_remark, emit_warning

    emit_remark(op, "fused 3 ops")            # mini-opt: `in.mlir:4:8: remark: fused 3 ops`, exit 0
    emit_warning(op, "dynamic dim, no tiling")
    emit_error(op, "cannot lower graph.gather")  # raises OpDiagnosticException: exit 1

The location is `op.location`: mini-opt gives every parsed op its `FileLineColLoc` in the input, an explicit
`loc(...)` in the source wins. Ops a pass creates should copy the location of the op they replace
(`new.location = op.location`), or their diagnostics have no position. Every function takes `notes`, a list of
`(op_or_None, message)` pairs printed as `note:` lines (MLIR's `diag.attachNote`).
`--verify-diagnostics` matches all of them against `// expected-remark {{…}}` and friends.

This module imports only xDSL's core, so a pass can import it for free.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import NoReturn

from xdsl.dialects.builtin import (
    CallSiteLoc,
    FileLineColLoc,
    FusedLoc,
    NameLoc,
    UnknownLoc,
)
from xdsl.ir import Attribute, Operation
from xdsl.utils.exceptions import DiagnosticException

Note = tuple[Operation | None, str]


@dataclass
class Diagnostic:
    """One diagnostic: severity is "error", "warning", "remark" or "note"."""

    severity: str
    message: str
    location: Attribute | None = None
    notes: list[Diagnostic] = field(default_factory=list["Diagnostic"])
    op: Operation | None = None


class OpDiagnosticException(DiagnosticException):
    """A DiagnosticException that knows the op it is about (raised by `emit_error`)."""

    def __init__(self, op: Operation | None, message: str, notes: Sequence[Note] = ()):
        super().__init__(message)
        self.op = op
        self.message = message
        self.notes = list(notes)


_handlers: list[Callable[[Diagnostic], None]] = []


@contextmanager
def diagnostic_handler(handler: Callable[[Diagnostic], None]) -> Iterator[None]:
    """Route remarks and warnings to `handler` for the duration of the block (mini-opt does this)."""
    _handlers.append(handler)
    try:
        yield
    finally:
        _handlers.remove(handler)


def make_diagnostic(
    severity: str, op: Operation | None, message: str, notes: Sequence[Note] = ()
) -> Diagnostic:
    return Diagnostic(
        severity,
        message,
        None if op is None else op.location,
        [make_diagnostic("note", n_op, n_msg) for n_op, n_msg in notes],
        op,
    )


def _emit(severity: str, op: Operation, message: str, notes: Sequence[Note]) -> None:
    diag = make_diagnostic(severity, op, message, notes)
    if _handlers:
        _handlers[-1](diag)
        return
    # No driver listening (a pass used from Python): print, like MLIR's default handler.
    for d in (diag, *diag.notes):
        print(f"{format_location(d.location)}: {d.severity}: {d.message}", file=sys.stderr)


def emit_remark(op: Operation, message: str, notes: Sequence[Note] = ()) -> None:
    """Report an informational remark about `op`; compilation continues."""
    _emit("remark", op, message, notes)


def emit_warning(op: Operation, message: str, notes: Sequence[Note] = ()) -> None:
    """Report a warning about `op`; compilation continues."""
    _emit("warning", op, message, notes)


def emit_error(op: Operation, message: str, notes: Sequence[Note] = ()) -> NoReturn:
    """Fail the pass with an error located at `op` (raises OpDiagnosticException)."""
    raise OpDiagnosticException(op, message, notes)


def file_line_col(loc: Attribute | None) -> tuple[str, int, int] | None:
    """The first file:line:col position inside a location, as MLIR's diagnostic printer picks it."""
    match loc:
        case FileLineColLoc():
            return (loc.filename.data, loc.line.data, loc.column.data)
        case NameLoc():
            return file_line_col(loc.location)
        case CallSiteLoc():
            return file_line_col(loc.callee) or file_line_col(loc.caller)
        case FusedLoc():
            for inner in loc.locations.data:  # pyright: ignore
                if (pos := file_line_col(inner)) is not None:
                    return pos
            return None
        case _:
            return None


def format_location(loc: Attribute | None) -> str:
    """`file:line:col` when the location has a position, else `loc(...)` as MLIR prints it."""
    if (pos := file_line_col(loc)) is not None:
        return f"{pos[0]}:{pos[1]}:{pos[2]}"
    if loc is None or isinstance(loc, UnknownLoc):
        return "loc(unknown)"
    return f"loc({_loc_text(loc)})"


def _loc_text(loc: Attribute) -> str:
    text = str(loc)
    return text[4:-1] if text.startswith("loc(") and text.endswith(")") else text
