"""mini-opt's diagnostic engine: rendering (`file:line:col: error: msg` + source line + caret), the located
verifier, and the `--verify-diagnostics` matcher (`// expected-error @+1 {{…}}`, as mlir-opt does it).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TextIO

from xdsl.ir import Block, Operation
from xdsl.dialects.builtin import StringAttr
from xdsl.traits import NoTerminator, SymbolTable
from xdsl.utils.exceptions import DiagnosticException, VerifyException

from minimlir.passes._diagnostics import (
    Diagnostic,
    OpDiagnosticException,
    file_line_col,
    format_location,
    make_diagnostic,
)

SEVERITIES = ("error", "warning", "remark", "note")


@dataclass
class SourceFile:
    """The text of the input (the whole file, also under --split-input-file) for snippets and matching."""

    name: str
    text: str
    lines: list[str] = field(init=False)

    def __post_init__(self):
        self.lines = self.text.split("\n")

    def line(self, lineno: int) -> str | None:
        if 1 <= lineno <= len(self.lines):
            return self.lines[lineno - 1].rstrip("\r")
        return None


@dataclass
class PositionLoc:
    """A position we know but that is no IR location: a parse error, an expected-* comment."""

    file: str
    line: int
    col: int
    length: int = 1


def position_of(diag: Diagnostic) -> tuple[str, int, int] | None:
    if isinstance(diag.location, PositionLoc):
        return (diag.location.file, diag.location.line, diag.location.col)
    return file_line_col(diag.location)


def render(diag: Diagnostic, source: SourceFile | None) -> str:
    """MLIR's layout: `file:line:col: severity: message`, then the source line and a caret."""
    pos = position_of(diag)
    where = format_location(diag.location) if pos is None else f"{pos[0]}:{pos[1]}:{pos[2]}"
    out = [f"{where}: {diag.severity}: {diag.message}"]
    if pos is not None and source is not None and pos[0] == source.name:
        line = source.line(pos[1])
        if line is not None and line.strip():
            length = diag.location.length if isinstance(diag.location, PositionLoc) else 1
            col = max(pos[2] - 1, 0)
            out.append(line)
            out.append(" " * col + "^" + "~" * (length - 1))
    return "\n".join(out) + "\n"


def error_at(file: str, line: int, col: int, message: str, length: int = 1) -> Diagnostic:
    return Diagnostic("error", message, PositionLoc(file, line, col, length))  # pyright: ignore


def from_exception(exc: DiagnosticException, op: Operation | None = None) -> Diagnostic:
    """A pass or verifier exception as a Diagnostic (located if it carries its op)."""
    if isinstance(exc, OpDiagnosticException):
        return make_diagnostic("error", exc.op, exc.message, exc.notes)
    if isinstance(exc, LocatedVerifyException):
        return make_diagnostic("error", exc.op, exc.message, exc.notes)
    message = str(exc.args[0]) if exc.args else type(exc).__name__
    return make_diagnostic("error", op, message)


class LocatedVerifyException(VerifyException):
    """A VerifyException with the op that failed (xDSL's own loses it)."""

    def __init__(self, op: Operation, message: str, notes: Iterable[tuple[Operation | None, str]] = ()):
        super().__init__(message)
        self.op = op
        self.message = message
        self.notes = list(notes)


def verify_located(op: Operation) -> None:
    """`op.verify()`, but raising LocatedVerifyException on the innermost failing op.

    Regions first, then the op itself, as xDSL's verifier does. Non-Verify exceptions from a verifier
    (crashes on odd attributes) are reported as verification errors too: bad input must not crash.
    """
    for region in op.regions:
        for block in region.blocks:
            for child in block.ops:
                verify_located(child)
            if block.first_op is None:
                _verify_empty_block(op, block)
    if op.has_trait(SymbolTable):
        _verify_unique_symbols(op)
    try:
        op.verify(verify_nested_ops=False)
    except LocatedVerifyException:
        raise
    except VerifyException as e:
        raise LocatedVerifyException(op, f"'{op.name}' op {e}") from None
    except Exception as e:  # a verifier that crashes on malformed input
        raise LocatedVerifyException(
            op, f"'{op.name}' op verifier failed: {type(e).__name__}: {e}"
        ) from None


def _verify_unique_symbols(op: Operation) -> None:
    """A symbol table defines each name once: the second definition is the error, located, with a note
    at the first (mlir-opt's wording; xDSL's SymbolTable verifier reports it on the module, unlocated)."""
    first: dict[str, Operation] = {}
    for region in op.regions:
        for block in region.blocks:
            for child in block.ops:
                name = child.properties.get("sym_name") or child.attributes.get("sym_name")
                if not isinstance(name, StringAttr):
                    continue
                if name.data in first:
                    raise LocatedVerifyException(
                        child,
                        f"redefinition of symbol named '{name.data}'",
                        [(first[name.data], "see existing symbol definition here")],
                    )
                first[name.data] = child


def _verify_empty_block(op: Operation, block: Block) -> None:
    region = block.parent
    if region is not None and len(region.blocks) == 1 and not op.has_trait(NoTerminator):
        raise LocatedVerifyException(
            op,
            f"'{op.name}' op contains empty block in single-block region "
            "that expects at least a terminator",
        )


# --- --verify-diagnostics -----------------------------------------------------------------------------

_EXPECTED = re.compile(
    r"expected-(error|warning|remark|note)(-re)?"
    r"(?:\s*@(?:([+-]\d+)|(above)|(below)|(unknown)))?"
    r"\s*\{\{(.*)\}\}"
)
_DESIGNATOR_ONLY = re.compile(r"^\s*//\s*expected-(error|warning|remark|note)")


@dataclass
class Expected:
    severity: str
    pattern: str
    is_regex: bool
    line: int | None  # None: @unknown
    where: PositionLoc
    matched: bool = False

    def matches(self, message: str) -> bool:
        if not self.is_regex:
            return self.pattern in message
        return re.search(_regex_of(self.pattern), message) is not None


def _regex_of(pattern: str) -> str:
    """expected-*-re: literal text with `{{regex}}` pieces, as in MLIR."""
    parts = re.split(r"\{\{(.*?)\}\}", pattern)
    return "".join(p if i % 2 else re.escape(p) for i, p in enumerate(parts))


def parse_expected(source: SourceFile) -> list[Expected]:
    """Every expected-* designator of the file, with the line it applies to."""
    found: list[Expected] = []
    waiting_for_next_line: list[Expected] = []
    last_plain_line = 0
    for lineno, line in enumerate(source.lines, start=1):
        matches = list(_EXPECTED.finditer(line))
        if not matches:
            if line.strip():
                for exp in waiting_for_next_line:
                    exp.line = lineno
                waiting_for_next_line.clear()
                last_plain_line = lineno
            continue
        for m in matches:
            severity, re_flag, offset, above, below, unknown, text = m.groups()
            where = PositionLoc(source.name, lineno, m.start() + 1, len(m.group(0).split("{{")[0].rstrip()))
            exp = Expected(severity, text, re_flag is not None, lineno, where)
            if offset is not None:
                exp.line = lineno + int(offset)
            elif above:
                exp.line = last_plain_line
            elif below:
                waiting_for_next_line.append(exp)
            elif unknown:
                exp.line = None
            found.append(exp)
        if not _DESIGNATOR_ONLY.match(line) and line.strip():
            # Code followed by an expected-* comment on the same line is a code line too.
            for exp in waiting_for_next_line:
                exp.line = lineno
            waiting_for_next_line.clear()
            last_plain_line = lineno
    return found


def check_expected(
    source: SourceFile, expected: list[Expected], produced: Iterable[Diagnostic]
) -> list[str]:
    """Match produced diagnostics against the expectations; return rendered failures (empty: success)."""
    failures: list[str] = []
    for diag in produced:
        for d in (diag, *diag.notes):
            pos = position_of(d)
            line = pos[1] if pos is not None and pos[0] == source.name else None
            unknown = pos is None
            hit = next(
                (
                    e
                    for e in expected
                    if not e.matched
                    and e.severity == d.severity
                    and ((e.line is None and unknown) or (e.line is not None and e.line == line))
                    and e.matches(d.message)
                ),
                None,
            )
            if hit is not None:
                hit.matched = True
            else:
                failures.append(
                    render(Diagnostic("error", f"unexpected {d.severity}: {d.message}", d.location), source)
                )
    for e in expected:
        if not e.matched:
            what = "expected " + e.severity + (' "' + e.pattern + '"')
            failures.append(render(Diagnostic("error", f"{what} was not produced", e.where), source))  # pyright: ignore
    return failures


class DiagnosticEngine:
    """Prints diagnostics to stderr, or collects them under --verify-diagnostics."""

    def __init__(self, source: SourceFile, verify: bool, stream: TextIO | None = None):
        self.source = source
        self.verify = verify
        self.stream = stream if stream is not None else sys.stderr
        self.collected: list[Diagnostic] = []
        self.had_error = False

    def emit(self, diag: Diagnostic) -> None:
        if diag.severity == "error":
            self.had_error = True
        if self.verify:
            self.collected.append(diag)
            return
        text = render(diag, self.source)
        for note in diag.notes:
            # A note at the position just shown (MLIR's "see current operation") needs no second snippet.
            same = position_of(note) is not None and position_of(note) == position_of(diag)
            text += render(note, None if same else self.source)
        self.stream.write(text)
        self.stream.flush()

    def finish_verify(self) -> bool:
        """--verify-diagnostics: report mismatches; True if every expectation matched exactly."""
        failures = check_expected(self.source, parse_expected(self.source), self.collected)
        for f in failures:
            self.stream.write(f)
        return not failures
