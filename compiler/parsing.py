"""Parsing `.mlir` text with source locations: every op gets `file:line:col` (as MLIR does), so
diagnostics point into the file; a lexer that cannot backtrack exponentially on bad strings.

    module = parse_module(text, "model.mlir")          # raises CompileError("model.mlir:3:5: error: …")
    parser = LocatingParser(ctx, text, "model.mlir")   # xDSL's Parser, locating
"""

from __future__ import annotations

import bisect
import re
from collections import defaultdict

from xdsl.context import Context
from xdsl.dialects.builtin import FileLineColLoc, IntAttr, ModuleOp, StringAttr, UnknownLoc
from xdsl.ir import Operation
from xdsl.parser import Parser
from xdsl.parser.generic_parser import ParserState
from xdsl.utils.lexer import Input
from xdsl.utils.mlir_lexer import MLIRLexer, MLIRTokenKind
from minimlir.compiler.context import make_context
from minimlir.compiler.diagnostics import SourceFile, from_exception, render, verify_located
from minimlir.compiler.errors import CompileError
from minimlir.compiler.stats import compile_stats


class _SafeLexer(MLIRLexer):
    """xDSL 0.74's string-literal regex nests `+` in `*`: an unterminated string holding an escape makes it
    backtrack exponentially (a 40-character line hangs mini-opt). Possessive `++` matches the same strings."""

    _unescaped_characters_regex = re.compile(r'"(?:[^"\\\n\v\f]++|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*+"')


class LocatingParser(Parser):
    """xDSL's parser, giving each op without an explicit `loc(...)` a FileLineColLoc at its name, as MLIR does.

    Those locations are not printed unless --mlir-print-debuginfo (the printer only prints locations then).
    An empty input is an empty module, as in mlir-opt.
    """

    def __init__(self, ctx: Context, text: str, name: str):
        # Parser.__init__, with a lexer whose string regex cannot backtrack exponentially.
        super(Parser, self).__init__(ParserState(_SafeLexer(Input(text, name))), ctx)
        self.ssa_values = dict()
        self.blocks = dict()
        self.forward_block_references = defaultdict(list)
        self.forward_ssa_references = dict()
        self._file = StringAttr(name)
        self._line_starts = [0] + [m.end() for m in re.finditer("\n", text)]
        self._op_name_pos: list[int] = []

    def line_col(self, offset: int) -> tuple[int, int]:
        line = bisect.bisect_right(self._line_starts, offset)
        return line, offset - self._line_starts[line - 1] + 1

    def current_offset(self) -> int:
        try:
            return self._current_token.span.start
        except Exception:
            return 0

    def _parse_op_result_list(self):
        results = super()._parse_op_result_list()
        if self._op_name_pos:
            self._op_name_pos[-1] = self._current_token.span.start
        return results

    def _get_op_by_name(self, name: str) -> type[Operation]:
        if (op_type := self.ctx.get_optional_op(name, dialect_stack=self._parser_state.dialect_stack)) is not None:
            return op_type
        pos = self._op_name_pos[-1] if self._op_name_pos else self.current_offset()
        dialect = name.split(".")[0] if "." in name else None
        if dialect is not None and dialect not in self.ctx.registered_dialect_names:
            self.raise_error(f"unknown dialect '{dialect}' of operation '{name}'", pos, pos + len(name))
        self.raise_error(f"unknown operation '{name}'", pos, pos + len(name))

    def parse_operation(self) -> Operation:
        self._op_name_pos.append(self._current_token.span.start)
        try:
            op = super().parse_operation()
        finally:
            pos = self._op_name_pos.pop()
        if isinstance(op.location, UnknownLoc):
            line, col = self.line_col(pos)
            op.location = FileLineColLoc(self._file, IntAttr(line), IntAttr(col))
        return op

    def _first_forward_use(self) -> int | None:
        """Offset of the first op using a never-defined value (xDSL would point at the end of input)."""
        for refs in self.forward_ssa_references.values():
            for value in refs.values():
                for use in value.uses:
                    loc = use.operation.location
                    if isinstance(loc, FileLineColLoc) and loc.filename == self._file:
                        return self._line_starts[loc.line.data - 1] + loc.column.data - 1
        return None

    def parse_module(self, allow_implicit_module: bool = True) -> ModuleOp:
        if not allow_implicit_module:
            return super().parse_module(False)
        ops: list[Operation] = []
        while self._current_token.kind != MLIRTokenKind.EOF:
            if self._current_token.kind in (MLIRTokenKind.HASH_IDENT, MLIRTokenKind.EXCLAMATION_IDENT):
                self._parse_alias_def()
                continue
            if self._current_token.kind == MLIRTokenKind.FILE_METADATA_BEGIN:
                self._parse_file_metadata_dictionary()
                continue
            if (op := self.parse_optional_operation()) is not None:
                ops.append(op)
                continue
            self.raise_error("expected an operation")
        if self.forward_ssa_references:
            names = ", ".join("%" + n for n in self.forward_ssa_references)
            self.raise_error(f"values used but not defined: [{names}]", self._first_forward_use())
        if len(ops) == 1 and isinstance(ops[0], ModuleOp):
            return ops[0]
        return ModuleOp(ops)


def line_col(text: str, offset: int) -> tuple[int, int]:
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


def split_chunks(text: str, enabled: bool) -> list[str]:
    """`// -----` chunks, each padded with newlines so line numbers stay those of the whole file."""
    if not enabled:
        return [text]
    chunks: list[str] = []
    start, current = 0, []
    for i, line in enumerate(text.splitlines(keepends=True)):
        if line.startswith("// -----"):
            chunks.append("\n" * start + "".join(current))
            start, current = i + 1, []
        else:
            current.append(line)
    chunks.append("\n" * start + "".join(current))
    return chunks


def _first_line(e: BaseException) -> str:
    text = str(e.args[0]) if e.args else str(e)
    return text.strip().splitlines()[0] if text.strip() else type(e).__name__


def parse_module(text: str, name: str = "<string>", ctx: Context | None = None) -> ModuleOp:
    """Parse (every op located) and verify `.mlir` text; errors raise CompileError(`name:line:col: error: msg`)."""
    from xdsl.utils.exceptions import DiagnosticException, ParseError

    compile_stats().parses += 1
    ctx = ctx or make_context()
    parser = None
    try:
        parser = LocatingParser(ctx, text, name)
        module = parser.parse_module()
    except ParseError as e:
        line, col = line_col(text, e.span.start)
        raise CompileError(f"{name}:{line}:{col}: error: {e.msg.strip() or 'syntax error'}") from None
    except Exception as e:  # attribute verifiers run while parsing, parse hooks on odd input, deep nesting
        line, col = line_col(text, parser.current_offset() if parser is not None else 0)
        raise CompileError(f"{name}:{line}:{col}: error: {_first_line(e)}") from None
    try:
        verify_located(module)
    except DiagnosticException as e:
        raise CompileError(render(from_exception(e), SourceFile(name, text)).rstrip()) from None
    return module
