"""mini-opt: the minimlir pass driver (an mlir-opt look-alike on top of xDSL's xdsl-opt).

    mini-opt in.mlir --pass-pipeline='builtin.module(func.func(cse),canonicalize)'
    mini-opt in.mlir -p 'graph-legalize,loop-tile{tile-sizes=4,8}' --print-ir-after-all
    mini-opt bad.mlir --split-input-file --verify-diagnostics

Passes and dialects are discovered: every concrete `ModulePass` defined in a non-`_` module of
`minimlir.passes` and every `Dialect` object in a module of `minimlir.dialects` is registered, next to all of
xDSL's. Named pipelines come from `minimlir.compiler.pipelines`. Bad input never gives a Python traceback: it
is reported as `file:line:col: error: …` and the exit code is 1.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import tempfile
import time
import traceback
from collections.abc import Sequence
from io import StringIO
from typing import IO, NoReturn

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.printer import Printer
from xdsl.utils.exceptions import DiagnosticException, MultipleSpansParseError, ParseError
from xdsl.xdsl_opt_main import xDSLOptMain

from minimlir.passes._diagnostics import Diagnostic, diagnostic_handler
from minimlir.compiler.diagnostics import (
    DiagnosticEngine,
    PositionLoc,
    SourceFile,
    error_at,
    from_exception,
    position_of,
    verify_located,
)
from minimlir.compiler.discovery import (  # noqa: F401 (our_dialects, pass_registry: re-exported)
    named_pipelines,
    our_dialects,
    our_passes,
    pass_registry,
    pass_summary,
    passes_defined_in,
    xdsl_universe,
)
from minimlir.compiler.context import register_dialects
from minimlir.compiler.parsing import LocatingParser, line_col, split_chunks
from minimlir.compiler.pass_manager import (
    IROptions,
    PassCrash,
    PassFailure,
    PassManager,
    PipelineBuilder,
    PipelineError,
    Step,
    TimerNode,
    default_text,
    option_fields,
    parse_pipeline,
    type_name,
)


# --- the driver ---------------------------------------------------------------------------------------


class _ArgParser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(1, f"{self.prog}: error: {message}\n")


class _Failed(Exception):
    """A chunk failed; its diagnostics were already emitted."""


class MiniOptMain(xDSLOptMain):
    def __init__(self, description: str = "minimlir modular optimizer driver", args: Sequence[str] | None = None):
        self.available_frontends = {}
        self.available_passes = {}
        self.available_targets = {}
        self.ctx = Context()
        self.register_all_dialects()
        self.register_all_frontends()
        self.register_all_passes()
        self.register_all_targets()
        parser = _ArgParser(
            prog="mini-opt",
            description=description,
            formatter_class=argparse.RawDescriptionHelpFormatter,
            epilog="Pipelines: -p 'a,b{opt=1 list=1,2},func.func(cse)' or "
            "--pass-pipeline='builtin.module(...)'; --list-passes shows passes, options and named pipelines.",
        )
        self.register_all_arguments(parser)
        self.args = parser.parse_args(args=args)
        self.ctx.allow_unregistered = self.args.allow_unregistered_dialect

    def register_all_dialects(self):
        register_dialects(self.ctx)  # by name: a dialect's module is imported when the input uses it

    def register_all_passes(self):
        for name, factory in pass_registry().items():  # by name: imported when a pipeline names it
            self.register_pass(name, factory)

    def register_all_targets(self):
        for name, factory in xdsl_universe().all_targets.items():
            self.available_targets.setdefault(name, factory)

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser):
        a = arg_parser.add_argument
        a("input_file", nargs="?", default="-", help="input file ('-' or none: stdin)")
        a("-o", "--output-file", help="output file (default: stdout)")
        a("-p", "--passes", default=None, help="pass list, e.g. 'cse,loop-tile{tile-size=8},func.func(dce)'")
        a("--pass-pipeline", default=None, help="anchored pipeline: 'builtin.module(a,func.func(b))'")
        a("--list-passes", action="store_true", help="list passes (with options) and named pipelines, then exit")
        a("--show-dialects", action="store_true", help="list registered dialects and their ops, then exit")
        a("--print-ir-after-all", "--mlir-print-ir-after-all", action="store_true",
          help="print the IR after every pass (stderr)")
        a("--print-ir-before", "--mlir-print-ir-before", action="append", default=[], metavar="PASS",
          help="print the IR before PASS (comma list, repeatable)")
        a("--print-ir-after", "--mlir-print-ir-after", action="append", default=[], metavar="PASS",
          help="print the IR after PASS (comma list, repeatable)")
        a("--print-ir-after-change", "--mlir-print-ir-after-change", action="store_true",
          help="print the IR after a pass only if it changed it")
        a("--mlir-timing", action="store_true", help="report per-pass wall time on stderr")
        a("--print-op-generic", "--mlir-print-op-generic", dest="print_op_generic", action="store_true",
          help="print operations in generic form")
        a("--print-debuginfo", "--mlir-print-debuginfo", dest="print_debuginfo", action="store_true",
          help="print locations (loc(...)) of operations")
        a("--print-no-properties", action="store_true", help="print properties as attributes")
        a("--syntax-highlight", action="store_true", help=argparse.SUPPRESS)
        a("--split-input-file", action="store_true", help="process each '// -----' chunk separately")
        a("--verify-diagnostics", action="store_true",
          help="check diagnostics against expected-error/warning/remark/note comments")
        a("--allow-unregistered-dialect", action="store_true", help="allow ops of unknown dialects")
        a("--no-implicit-module", action="store_true", help="the input must be a builtin.module")
        a("--disable-verify", "--mlir-disable-verify", dest="disable_verify", action="store_true",
          help="do not verify the IR after parsing and after each pass")
        a("--load-pass-plugin", action="append", default=[], metavar="FILE.py",
          help="register the passes defined in a Python file (repeatable)")
        a("--debug-crash", action="store_true", help="print the Python traceback when a pass crashes")
        a("-t", "--target", default="mlir", help=argparse.SUPPRESS)
        a("-f", "--frontend", default=None, help=argparse.SUPPRESS)
        a("-v", "--version", action="version", version=f"mini-opt {_version()} (xDSL {_version('xdsl')})")

    def load_pass_plugins(self) -> None:
        """--load-pass-plugin: every concrete ModulePass defined in the file becomes available."""
        import importlib.util

        for i, path in enumerate(self.args.load_pass_plugin):
            if not os.path.isfile(path):
                raise PipelineError(f"--load-pass-plugin: no such file '{path}'")
            try:
                spec = importlib.util.spec_from_file_location(f"_mini_opt_plugin_{i}", path)
                assert spec is not None and spec.loader is not None
                module = importlib.util.module_from_spec(spec)
                sys.modules[spec.name] = module  # dataclasses look their module up
                spec.loader.exec_module(module)
            except Exception as e:
                raise PipelineError(f"--load-pass-plugin: failed to load '{path}': {type(e).__name__}: {e}") from None
            for obj in passes_defined_in(module):
                self.register_pass(obj.name, lambda c=obj: c)

    # -- listing -----------------------------------------------------------------------------------------

    def list_passes(self, out: IO[str]) -> None:
        out.write("Available passes:\n")
        for name in sorted(self.available_passes):
            try:
                cls = self.available_passes[name]()
            except Exception as e:
                out.write(f"  {name}  (failed to load: {type(e).__name__}: {e})\n")
                continue
            summary = pass_summary(cls)
            out.write(f"  {name}" + (f"  -  {summary}" if summary else "") + "\n")
            for f in option_fields(cls):
                default = default_text(f)
                try:
                    from typing import get_type_hints

                    tp = type_name(get_type_hints(cls)[f.name])
                except Exception:
                    tp = str(f.type)
                out.write(f"      --{f.name.replace('_', '-')}=<{tp}>")
                out.write(f"  (default: {default})\n" if default is not None else "  (required)\n")
        out.write("Named pipelines:\n")
        for name, (text, description) in sorted(named_pipelines().items()):
            out.write(f"  {name}  -  {description}\n      = {text}\n")

    def show_dialects(self, out: IO[str]) -> None:
        out.write("Available dialects:\n")
        for name in sorted(self.ctx.registered_dialect_names):
            try:
                dialect = self.ctx.get_dialect(name)
                ops = sorted(op.name for op in dialect.operations)
            except Exception as e:
                out.write(f"  {name}  (failed to load: {type(e).__name__}: {e})\n")
                continue
            out.write(f"  {name}: {', '.join(ops)}\n")

    # -- pipeline ----------------------------------------------------------------------------------------

    def build_pipeline(self) -> list[Step]:
        args = self.args
        if args.passes is not None and args.pass_pipeline is not None:
            raise PipelineError("-p and --pass-pipeline cannot be combined")
        builder = PipelineBuilder(self.available_passes, named_pipelines(), self.ctx)
        if args.pass_pipeline is not None:
            return builder.build(parse_pipeline(args.pass_pipeline, anchored=True))
        return builder.build(parse_pipeline(args.passes or ""))

    def ir_filter(self, values: list[str], flag: str) -> set[str]:
        names = {n.strip() for v in values for n in v.split(",") if n.strip()}
        for n in names:
            if n not in self.available_passes:
                from difflib import get_close_matches

                close = get_close_matches(n, list(self.available_passes), n=3)
                hint = "; did you mean " + " or ".join(f"'{c}'" for c in close) + "?" if close else ""
                raise PipelineError(f"{flag}: unknown pass '{n}'{hint}")
        return names

    # -- running -----------------------------------------------------------------------------------------

    def run(self) -> int:  # pyright: ignore[reportIncompatibleMethodOverride]
        args = self.args
        try:
            self.load_pass_plugins()
        except PipelineError as e:
            sys.stderr.write(e.render())
            return 1
        if args.list_passes:
            self.list_passes(sys.stdout)
            return 0
        if args.show_dialects:
            self.show_dialects(sys.stdout)
            return 0
        try:
            steps = self.build_pipeline()
            ir = IROptions(
                print_before=self.ir_filter(args.print_ir_before, "--print-ir-before"),
                print_after=self.ir_filter(args.print_ir_after, "--print-ir-after"),
                print_after_all=args.print_ir_after_all,
                print_after_change=args.print_ir_after_change,
                generic=args.print_op_generic,
                debuginfo=args.print_debuginfo,
                stream=sys.stderr,
            )
        except PipelineError as e:
            sys.stderr.write(e.render())
            return 1
        if args.target != "mlir" and args.target.split("{")[0] not in self.available_targets:
            sys.stderr.write(
                f"error: unknown target '{args.target}'; available targets: {', '.join(self.available_targets)}\n"
            )
            return 1

        start_all = time.perf_counter()
        timer = TimerNode("root") if args.mlir_timing else None
        name = "<stdin>" if args.input_file == "-" else args.input_file
        try:
            if args.input_file == "-":
                data = sys.stdin.buffer.read()
            else:
                with open(args.input_file, "rb") as f:
                    data = f.read()
        except OSError as e:
            sys.stderr.write(f"error: could not open input file '{args.input_file}': {e.strerror or e}\n")
            return 1
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            good = data[: e.start].decode("utf-8")
            line = good.count("\n") + 1
            col = len(good) - (good.rfind("\n") + 1) + 1
            source = SourceFile(name, good)
            engine = DiagnosticEngine(source, args.verify_diagnostics)
            engine.emit(error_at(name, line, col, f"invalid UTF-8 byte 0x{data[e.start]:02x} in input"))
            if args.verify_diagnostics:
                engine.finish_verify()
            return 1

        source = SourceFile(name, text)
        engine = DiagnosticEngine(source, args.verify_diagnostics)
        out: IO[str] = StringIO() if args.output_file else sys.stdout
        ok = True
        for i, chunk in enumerate(split_chunks(text, args.split_input_file)):
            if i > 0:
                out.write("// -----\n")
                out.flush()
            try:
                result = self.process_chunk(chunk, name, steps, ir, timer, engine)
            except _Failed:
                ok = False
                result = None
            if result is not None:
                out.write(result)
            out.flush()
        if args.verify_diagnostics:
            ok = engine.finish_verify()
        if ok and args.output_file:
            try:
                with open(args.output_file, "w") as f:
                    f.write(out.getvalue())  # pyright: ignore
            except OSError as e:
                sys.stderr.write(f"error: could not write output file '{args.output_file}': {e.strerror or e}\n")
                ok = False
        if timer is not None:
            sys.stderr.write(timer.report(time.perf_counter() - start_all))
        return 0 if ok else 1

    def parse(self, chunk: str, name: str, engine: DiagnosticEngine) -> ModuleOp:
        frontend = self.args.frontend
        if frontend is not None and frontend != "mlir":
            raise_error = engine.emit
            if frontend not in self.available_frontends:
                raise_error(Diagnostic("error", f"unknown frontend '{frontend}'"))
                raise _Failed
            try:
                return self.available_frontends[frontend](StringIO(chunk))  # pyright: ignore
            except Exception as e:
                engine.emit(Diagnostic("error", f"frontend '{frontend}' failed: {type(e).__name__}: {e}"))
                raise _Failed from None
        parser = None
        try:
            parser = LocatingParser(self.ctx, chunk, name)  # lexes the first token: may raise too
            return parser.parse_module(not self.args.no_implicit_module)
        except ParseError as e:
            line, col = line_col(chunk, e.span.start)
            msg = e.msg.strip() or "syntax error"
            if msg.startswith("End of file reached before closing string literal"):
                msg = "unterminated string literal"
            if e.msg.startswith(" ") and e.span.start >= len(chunk.rstrip()):
                msg = f"unexpected end of input {msg}"  # xDSL's `expect(..., " in block definition")`
            diag = error_at(name, line, col, msg, max(1, min(e.span.end - e.span.start, 80)))
            if isinstance(e, MultipleSpansParseError):
                for span, msg in e.refs:
                    r_line, r_col = line_col(chunk, span.start)
                    diag.notes.append(Diagnostic("note", msg or e.ref_text or "see here",
                                                 PositionLoc(name, r_line, r_col)))  # pyright: ignore
            engine.emit(diag)
        except RecursionError:
            line, col = line_col(chunk, (parser.current_offset() if parser is not None else 0))
            engine.emit(error_at(name, line, col, "input nested too deeply"))
        except DiagnosticException as e:  # e.g. an attribute's verifier, run while parsing
            line, col = line_col(chunk, (parser.current_offset() if parser is not None else 0))
            engine.emit(error_at(name, line, col, str(e.args[0]) if e.args else type(e).__name__))
        except Exception as e:  # a parse hook that does not expect malformed input
            line, col = line_col(chunk, (parser.current_offset() if parser is not None else 0))
            engine.emit(error_at(name, line, col, f"failed to parse: {type(e).__name__}: {e}"))
        raise _Failed

    def emit_op_error(self, diag: Diagnostic, engine: DiagnosticEngine, note: str | None = None) -> None:
        if not engine.verify:
            if position_of(diag) is None and diag.op is not None:
                text = _op_text(diag.op)
                diag.notes.append(Diagnostic("note", f"see current operation: {text}", diag.location))
            if note:
                diag.notes.append(Diagnostic("note", note, diag.location))
        engine.emit(diag)

    def process_chunk(
        self,
        chunk: str,
        name: str,
        steps: list[Step],
        ir: IROptions,
        timer: TimerNode | None,
        engine: DiagnosticEngine,
    ) -> str | None:
        start = time.perf_counter()
        try:
            module = self.parse(chunk, name, engine)
        finally:
            if timer is not None:
                timer.child("Parser").seconds += time.perf_counter() - start
        if not self.args.disable_verify:
            start = time.perf_counter()
            try:
                verify_located(module)
            except DiagnosticException as e:
                self.emit_op_error(from_exception(e), engine)
                raise _Failed from None
            finally:
                if timer is not None:
                    timer.child("Verifier").seconds += time.perf_counter() - start

        manager = PassManager(steps, self.ctx, ir, timer, verify_each=not self.args.disable_verify)
        try:
            with diagnostic_handler(engine.emit):
                manager.run(module)
        except PassFailure as f:
            note = f"the IR after pass '{f.step.name}' does not verify" if f.after_verify else None
            self.emit_op_error(from_exception(f.error), engine, note)
            raise _Failed from None
        except PassCrash as c:
            self.report_crash(c, module)
            raise _Failed from None

        start = time.perf_counter()
        try:
            return self.output_resulting_program(module)
        except Exception as e:
            sys.stderr.write(f"error: failed to print the result: {type(e).__name__}: {e}\n")
            raise _Failed from None
        finally:
            if timer is not None:
                timer.child("Output").seconds += time.perf_counter() - start

    def report_crash(self, crash: PassCrash, module: ModuleOp) -> None:
        if self.args.debug_crash or os.environ.get("MINIMLIR_TRACEBACK") == "1":
            traceback.print_exception(crash.error, file=sys.stderr)
        sys.stderr.write(f"error: {crash}\n")
        repro_ir = crash.snapshot if crash.snapshot is not None else module
        try:
            fd, path = tempfile.mkstemp(prefix="mini-opt-repro-", suffix=".mlir")
            with os.fdopen(fd, "w") as f:
                printer = Printer(stream=f, print_generic_format=True)
                printer.print_op(repro_ir)
                f.write("\n")
        except Exception as e:
            sys.stderr.write(f"note: could not save a reproducer: {type(e).__name__}: {e}\n")
            return
        flags = " --allow-unregistered-dialect" if self.args.allow_unregistered_dialect else ""
        sys.stderr.write(f"note: reproduce with: mini-opt {path}{flags} -p {shlex.quote(crash.path)}\n")


def _op_text(op: Operation, max_lines: int = 3) -> str:
    out = StringIO()
    try:
        Printer(stream=out, print_generic_format=True).print_op(op)
    except Exception:
        return op.name
    lines = out.getvalue().splitlines()
    return "\n".join(lines[:max_lines]) + (" ..." if len(lines) > max_lines else "")


def _version(dist: str = "minimlir") -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return "unknown"


def main(argv: list[str] | None = None) -> int:
    try:
        tool = MiniOptMain(args=argv)
    except SystemExit as e:  # --help, --version, bad arguments
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except Exception as e:  # a broken pass or dialect module: report it, not a traceback
        if os.environ.get("MINIMLIR_TRACEBACK") == "1":
            traceback.print_exc()
        sys.stderr.write(f"error: mini-opt failed to start: {type(e).__name__}: {e}\n")
        return 1
    try:
        return tool.run()
    except Exception as e:
        if tool.args.debug_crash or os.environ.get("MINIMLIR_TRACEBACK") == "1":
            traceback.print_exc()
        sys.stderr.write(f"error: internal error in mini-opt: {type(e).__name__}: {e}\n")
        return 1


__all__ = ["MiniOptMain", "main", "named_pipelines", "our_dialects", "our_passes"]

if __name__ == "__main__":
    sys.exit(main())
