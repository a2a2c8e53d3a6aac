"""Pass pipelines for mini-opt: the textual syntax, option conversion, nesting, and the pass manager.

    builtin.module(canonicalize, func.func(cse, loop-tile{tile-sizes=4,8 mode="fast"}), cleanup)

An anchor `op.name(...)` runs its inner pipeline on every op of that name directly inside the current op
(MLIR's nested pass managers; `any(...)` matches every child). A module pass only knows `ModuleOp`, so a
non-module anchor op is moved into a scratch `builtin.module`, the passes run on that, and whatever the scratch
module holds afterwards goes back in the op's place. Anchors must be IsolatedFromAbove, as in MLIR. A named
pipeline (minimlir.compiler.pipelines) is expanded in place.
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import gc
import time
import types
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from difflib import get_close_matches
from io import StringIO
from typing import Any, Literal, TextIO, Union, get_args, get_origin, get_type_hints

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.printer import Printer
from xdsl.traits import IsolatedFromAbove
from xdsl.utils.exceptions import DiagnosticException

from minimlir.compiler.diagnostics import verify_located

# --- syntax -------------------------------------------------------------------------------------------


class PipelineError(Exception):
    """A bad pipeline: `message`, and the offending position in `text` when known."""

    def __init__(self, message: str, text: str | None = None, pos: int | None = None, hint: str = ""):
        super().__init__(message)
        self.message = message
        self.text = text
        self.pos = pos
        self.hint = hint

    def render(self) -> str:
        out = f"error: {self.message}\n"
        if self.text is not None and self.pos is not None:
            out += f"  {self.text}\n  {' ' * self.pos}^\n"
        if self.hint:
            out += self.hint + "\n"
        return out


@dataclass
class RawValue:
    text: str
    quoted: bool = False


@dataclass
class PassEntry:
    name: str
    options: dict[str, list[RawValue]]
    pos: int
    text: str  # the whole pipeline text, for error carets


@dataclass
class NestEntry:
    anchor: str
    elements: list[PassEntry | NestEntry]
    pos: int
    text: str


_IDENT_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.$")


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.pos = 0

    def error(self, message: str, pos: int | None = None) -> PipelineError:
        return PipelineError(message, self.text, self.pos if pos is None else pos)

    def skip_ws(self):
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def peek(self) -> str:
        self.skip_ws()
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def ident(self, what: str) -> tuple[str, int]:
        self.skip_ws()
        start = self.pos
        while self.pos < len(self.text) and self.text[self.pos] in _IDENT_CHARS:
            self.pos += 1
        if start == self.pos:
            found = repr(self.text[self.pos]) if self.pos < len(self.text) else "end of pipeline"
            raise self.error(f"expected {what}, found {found}")
        return self.text[start : self.pos], start

    def pipeline(self, closing: str) -> list[PassEntry | NestEntry]:
        elements: list[PassEntry | NestEntry] = []
        if self.peek() == closing:
            return elements
        while True:
            elements.append(self.element())
            c = self.peek()
            if c == ",":
                self.pos += 1
                continue
            if c == closing:
                return elements
            if c == "":
                raise self.error("expected ')' to close the nested pipeline" if closing else "unexpected end")
            raise self.error(f"expected ',' or {repr(closing) if closing else 'end of pipeline'}, found {c!r}")

    def element(self) -> PassEntry | NestEntry:
        name, start = self.ident("a pass name or an op anchor")
        c = self.peek()
        if c == "(":
            self.pos += 1
            inner = self.pipeline(")")
            self.pos += 1  # ')'
            return NestEntry(name, inner, start, self.text)
        options: dict[str, list[RawValue]] = {}
        if c == "{":
            self.pos += 1
            options = self.options()
        return PassEntry(name, options, start, self.text)

    def options(self) -> dict[str, list[RawValue]]:
        options: dict[str, list[RawValue]] = {}
        while True:
            c = self.peek()
            if c == "}":
                self.pos += 1
                return options
            if c == "":
                raise self.error("expected '}' to close the pass options")
            key, key_pos = self.ident("an option name")
            if key in options:
                raise self.error(f"option '{key}' given twice", key_pos)
            values: list[RawValue] = []
            if self.pos < len(self.text) and self.text[self.pos] == "=":
                self.pos += 1
                values = self.values()
            options[key] = values

    def values(self) -> list[RawValue]:
        if self.pos < len(self.text) and self.text[self.pos] == "{":  # MLIR list form: opt={1,2,3}
            self.pos += 1
            values: list[RawValue] = []
            while self.peek() != "}":
                if self.peek() == "":
                    raise self.error("expected '}' to close the option list")
                values.append(self.value())
                if self.peek() == ",":
                    self.pos += 1
            self.pos += 1
            return values
        values = [self.value()]
        while self.pos < len(self.text) and self.text[self.pos] == ",":
            self.pos += 1
            values.append(self.value())
        return values

    def value(self) -> RawValue:
        if self.pos < len(self.text) and self.text[self.pos] in "\"'":
            quote = self.text[self.pos]
            start = self.pos
            self.pos += 1
            chars: list[str] = []
            while self.pos < len(self.text) and self.text[self.pos] != quote:
                if self.text[self.pos] == "\\" and self.pos + 1 < len(self.text):
                    self.pos += 1
                    chars.append({"n": "\n", "t": "\t"}.get(self.text[self.pos], self.text[self.pos]))
                else:
                    chars.append(self.text[self.pos])
                self.pos += 1
            if self.pos >= len(self.text):
                raise self.error("unterminated string in pass options", start)
            self.pos += 1
            return RawValue("".join(chars), True)
        start = self.pos
        while self.pos < len(self.text) and not self.text[self.pos].isspace() and self.text[self.pos] not in ",{}":
            self.pos += 1
        if start == self.pos:
            raise self.error("expected an option value")
        return RawValue(self.text[start : self.pos])


def parse_pipeline(text: str, anchored: bool = False) -> list[PassEntry | NestEntry]:
    """Parse `a,b{x=1},func.func(c)`; with `anchored`, the text must be `builtin.module(...)`."""
    p = _Parser(text)
    elements = p.pipeline("")
    if anchored:
        if len(elements) != 1 or not isinstance(elements[0], NestEntry) or elements[0].anchor != "builtin.module":
            raise PipelineError(
                "--pass-pipeline must be anchored on the module: 'builtin.module(...)'",
                text,
                0,
                "hint: use -p 'a,b' for a plain list of passes",
            )
        return elements[0].elements
    return elements


# --- resolution ---------------------------------------------------------------------------------------


@dataclass
class PassStep:
    name: str
    pass_: ModulePass


@dataclass
class NestStep:
    anchor: str
    steps: list[PassStep | NestStep]


Step = PassStep | NestStep


def _did_you_mean(name: str, choices: Sequence[str]) -> str:
    close = get_close_matches(name, choices, n=3, cutoff=0.6)
    return "; did you mean " + " or ".join(f"'{c}'" for c in close) + "?" if close else ""


def option_fields(cls: type[ModulePass]) -> list[dataclasses.Field[Any]]:
    if not dataclasses.is_dataclass(cls):
        return []
    return [f for f in dataclasses.fields(cls) if f.init and f.name != "name"]


def type_name(tp: Any) -> str:
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        return " | ".join(type_name(a) for a in get_args(tp))
    if origin is Literal:
        return " | ".join(repr(a) for a in get_args(tp))
    if origin in (tuple, list):
        args = get_args(tp)
        if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
            return f"tuple[{type_name(args[0])}, ...]"
        return f"{origin.__name__}[{', '.join(type_name(a) for a in args)}]"
    if tp is type(None):
        return "None"
    return getattr(tp, "__name__", str(tp))


def _field_type(cls: type, f: dataclasses.Field[Any]) -> Any:
    try:
        return get_type_hints(cls)[f.name]
    except Exception:
        return f.type if not isinstance(f.type, str) else Any


def default_text(f: dataclasses.Field[Any]) -> str | None:
    if f.default is not dataclasses.MISSING:
        value = f.default
    elif f.default_factory is not dataclasses.MISSING:
        value = f.default_factory()
    else:
        return None
    return format_value(value)


def format_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, enum.Enum):
        return str(value.value)
    if isinstance(value, (tuple, list)):
        return ",".join(format_value(v) for v in value)  # pyright: ignore
    if isinstance(value, str):
        if value == "" or any(c.isspace() or c in ",{}()\"'" for c in value):
            return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
        return value
    return str(value)


class _BadValue(Exception):
    pass


def _convert_one(raw: RawValue, tp: Any) -> Any:
    text = raw.text
    origin = get_origin(tp)
    if tp is Any or tp is str or tp is object:
        return text
    if origin in (Union, types.UnionType):
        for alt in get_args(tp):
            if alt is type(None):
                continue
            try:
                return _convert_one(raw, alt)
            except _BadValue:
                continue
        raise _BadValue
    if origin is Literal:
        for choice in get_args(tp):
            if format_value(choice) == text or str(choice) == text:
                return choice
        raise _BadValue
    if tp is bool:
        low = text.lower()
        if low in ("true", "1", "on", "yes"):
            return True
        if low in ("false", "0", "off", "no"):
            return False
        raise _BadValue
    if tp is int:
        try:
            return int(text, 0)
        except ValueError:
            raise _BadValue from None
    if tp is float:
        try:
            return float(text)
        except ValueError:
            raise _BadValue from None
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        for member in tp:
            if str(member.value) == text or member.name == text:
                return member
        raise _BadValue
    raise _BadValue


def convert_option(pass_name: str, key: str, values: list[RawValue], tp: Any) -> Any:
    """The typed value of option `key` from its raw text values, or a PipelineError naming the type."""
    origin = get_origin(tp)
    args = get_args(tp)

    def bad(got: str) -> PipelineError:
        return PipelineError(f"option '{key}' of pass '{pass_name}' expects {type_name(tp)}, got {got}")

    if origin in (Union, types.UnionType) and type(None) in args:
        if not values:
            return None
        rest = [a for a in args if a is not type(None)]
        tp = rest[0] if len(rest) == 1 else Union[tuple(rest)]  # noqa: UP007
        origin, args = get_origin(tp), get_args(tp)
    sequence_alts = [tp] if origin in (tuple, list) else [a for a in args if get_origin(a) in (tuple, list)]
    if origin in (tuple, list) or (sequence_alts and len(values) != 1):
        for seq in sequence_alts:
            s_origin, s_args = get_origin(seq), get_args(seq)
            try:
                if s_origin is tuple and not (len(s_args) == 2 and s_args[1] is Ellipsis):
                    if len(s_args) != len(values):
                        raise _BadValue
                    return tuple(_convert_one(v, a) for v, a in zip(values, s_args))
                item = s_args[0] if s_args else Any
                converted = [_convert_one(v, item) for v in values]
                return tuple(converted) if s_origin is tuple else converted
            except _BadValue:
                continue
        raise bad(repr(",".join(v.text for v in values)))
    if not values:
        if tp is bool:
            return True  # `pass{flag}` sets a bool option, as in MLIR
        raise bad("no value")
    if len(values) != 1:
        raise bad(f"a list of {len(values)} values")
    try:
        return _convert_one(values[0], tp)
    except _BadValue:
        raise bad(repr(values[0].text)) from None


def instantiate(cls: type[ModulePass], entry: PassEntry) -> ModulePass:
    fields = {f.name.replace("_", "-"): f for f in option_fields(cls)}
    kwargs: dict[str, Any] = {}
    for key, values in entry.options.items():
        f = fields.get(key.replace("_", "-"))
        if f is None:
            valid = ", ".join(fields) or "(none)"
            raise PipelineError(
                f"pass '{entry.name}' has no option '{key}'{_did_you_mean(key, list(fields))}; valid options: {valid}",
                entry.text,
                entry.pos,
            )
        try:
            kwargs[f.name] = convert_option(entry.name, key, values, _field_type(cls, f))
        except PipelineError as e:
            e.text, e.pos = entry.text, entry.pos
            raise
    for dashed, f in fields.items():
        if f.name not in kwargs and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise PipelineError(f"pass '{entry.name}' requires option '{dashed}'", entry.text, entry.pos)
    try:
        return cls(**kwargs)
    except Exception as e:
        raise PipelineError(f"invalid options for pass '{entry.name}': {e}", entry.text, entry.pos) from None


class PipelineBuilder:
    """Turns parsed entries into steps: finds pass classes, converts options, expands named pipelines."""

    def __init__(
        self,
        passes: dict[str, Callable[[], type[ModulePass]]],
        named: dict[str, tuple[str, str]],
        ctx: Context | None = None,
    ):
        self.passes = passes
        self.named = named
        self.ctx = ctx

    def pass_class(self, name: str) -> type[ModulePass]:
        try:
            return self.passes[name]()
        except Exception as e:
            raise PipelineError(f"pass '{name}' failed to load: {type(e).__name__}: {e}") from None

    def build(self, elements: list[PassEntry | NestEntry], _expanding: tuple[str, ...] = ()) -> list[Step]:
        steps: list[Step] = []
        for el in elements:
            if isinstance(el, NestEntry):
                self._check_anchor(el)
                steps.append(NestStep(el.anchor, self.build(el.elements, _expanding)))
            elif el.name in self.passes:
                steps.append(PassStep(el.name, instantiate(self.pass_class(el.name), el)))
            elif el.name in self.named:
                if el.options:
                    raise PipelineError(f"named pipeline '{el.name}' takes no options", el.text, el.pos)
                if el.name in _expanding:
                    raise PipelineError(f"named pipeline '{el.name}' includes itself", el.text, el.pos)
                text = self.named[el.name][0]
                try:
                    inner = parse_pipeline(text)
                except PipelineError as e:
                    e.message = f"in named pipeline '{el.name}': {e.message}"
                    raise
                steps.extend(self.build(inner, (*_expanding, el.name)))
            else:
                choices = sorted([*self.passes, *self.named])
                raise PipelineError(
                    f"unknown pass '{el.name}'{_did_you_mean(el.name, choices)}",
                    el.text,
                    el.pos,
                    "available passes: " + ", ".join(choices),
                )
        return steps

    def _check_anchor(self, el: NestEntry) -> None:
        if el.anchor == "any" or self.ctx is None:
            return
        op_type = self.ctx.get_optional_op(el.anchor)
        if op_type is None:
            hint = _did_you_mean(el.anchor, ["builtin.module", "func.func", "any"])
            raise PipelineError(f"unknown operation '{el.anchor}' used as a pipeline anchor{hint}", el.text, el.pos)
        if op_type is not ModuleOp and not op_type.has_trait(IsolatedFromAbove):
            raise PipelineError(
                f"cannot nest a pipeline on '{el.anchor}': the op is not IsolatedFromAbove", el.text, el.pos
            )


def pipeline_str(steps: Sequence[Step]) -> str:
    """The text of steps, as -p takes it (reproducers, --list-passes)."""
    parts: list[str] = []
    for s in steps:
        if isinstance(s, NestStep):
            parts.append(f"{s.anchor}({pipeline_str(s.steps)})")
        else:
            parts.append(pass_str(s.pass_))
    return ",".join(parts)


def pass_str(p: ModulePass) -> str:
    opts: list[str] = []
    for f in option_fields(type(p)):
        value = getattr(p, f.name)
        default = default_text(f)
        text = format_value(value) if value is not None else None
        if text is None or text == default:
            continue
        opts.append(f"{f.name.replace('_', '-')}={text}")
    return p.name + (f"{{{' '.join(opts)}}}" if opts else "")


# --- execution ----------------------------------------------------------------------------------------


@dataclass
class TimerNode:
    name: str
    seconds: float = 0.0
    children: dict[str, TimerNode] = field(default_factory=dict["str", "TimerNode"])

    def child(self, name: str) -> TimerNode:
        if name not in self.children:
            self.children[name] = TimerNode(name)
        return self.children[name]

    def report(self, total: float) -> str:
        """mlir-opt's --mlir-timing layout."""
        bar = "===" + "-" * 73 + "==="
        lines = [
            bar,
            " " * 25 + "... Execution time report ...",
            bar,
            f"  Total Execution Time: {total:.4f} seconds",
            "",
            "  ----Wall Time----  ----Name----",
        ]

        def walk(node: TimerNode, depth: int):
            for c in node.children.values():
                pct = 100.0 * c.seconds / total if total > 0 else 0.0
                lines.append(f"  {c.seconds:8.4f} ({pct:5.1f}%)  {'  ' * depth}{c.name}")
                walk(c, depth + 1)

        walk(self, 0)
        lines.append(f"  {total:8.4f} ({100.0:5.1f}%)  Total")
        return "\n".join(lines) + "\n"


class PassCrash(Exception):
    """A non-diagnostic exception escaped a pass: a bug in the pass."""

    def __init__(self, step: PassStep, error: BaseException, snapshot: ModuleOp | None, target: Operation, path: str):
        super().__init__(f"pass '{step.name}' crashed: {type(error).__name__}: {error}")
        self.step = step
        self.error = error
        self.snapshot = snapshot  # the IR the pass ran on, before it ran
        self.target = target
        self.path = path  # pipeline that reaches the pass: func.func(name{opts})


class PassFailure(Exception):
    """A pass reported an error (DiagnosticException), or left IR that does not verify."""

    def __init__(self, step: PassStep, error: DiagnosticException, after_verify: bool):
        super().__init__(str(error))
        self.step = step
        self.error = error
        self.after_verify = after_verify


@dataclass
class IROptions:
    print_before: set[str] = field(default_factory=set[str])
    print_after: set[str] = field(default_factory=set[str])
    print_after_all: bool = False
    print_after_change: bool = False
    generic: bool = False
    debuginfo: bool = False
    stream: TextIO | None = None

    @property
    def wants_after(self) -> bool:
        return self.print_after_all or bool(self.print_after) or self.print_after_change


@contextlib.contextmanager
def fewer_gc_passes(gen0: int = 100_000) -> Iterator[None]:
    """Run passes with Python's cyclic garbage collector triggered every `gen0` allocations
    instead of every 700. Passes build and drop hundreds of thousands of xDSL objects, all in
    reference cycles (parents, uses), and the default threshold makes the collector rescan them
    constantly: about a third of the lowering time of a model. Cycles are still collected; the
    previous thresholds come back afterwards (also on error)."""
    old = gc.get_threshold()
    gc.set_threshold(max(gen0, old[0]), max(50, old[1]), max(100, old[2]))
    try:
        yield
    finally:
        gc.set_threshold(*old)


Hook = Callable[[PassStep, ModuleOp], None]
"""A pass manager hook: called with the pass step and the module (or nested scratch module) it runs on."""


class PassManager:
    """Runs steps on a module: nesting, IR printing, timing, verification, crash capture.

    `before_pass` / `after_pass`: hooks called around every pass run (after: once the pass ran and,
    with verify_each, verified), e.g. to read the module before a given pass or to see the IR after
    each one (`manager.ir_text(target)`)."""

    def __init__(
        self,
        steps: list[Step],
        ctx: Context,
        ir: IROptions,
        timer: TimerNode | None = None,
        verify_each: bool = True,
        snapshots: bool = True,
        before_pass: Sequence[Hook] = (),
        after_pass: Sequence[Hook] = (),
    ):
        self.steps = steps
        self.ctx = ctx
        self.ir = ir
        self.timer = timer
        self.verify_each = verify_each
        self.snapshots = snapshots
        self.before_pass = list(before_pass)
        self.after_pass = list(after_pass)
        self._anchors: list[str] = []

    def run(self, module: ModuleOp) -> None:
        with fewer_gc_passes():
            self._run_steps(self.steps, module, self.timer)

    def _run_steps(self, steps: Sequence[Step], target: ModuleOp, timer: TimerNode | None):
        for step in steps:
            if isinstance(step, PassStep):
                self._run_pass(step, target, timer)
            else:
                self._run_nested(step, target, timer)

    def _children(self, op: Operation, anchor: str) -> list[Operation]:
        return [
            child
            for region in op.regions
            for block in region.blocks
            for child in block.ops
            if anchor == "any" or child.name == anchor
        ]

    def _run_nested(self, step: NestStep, target: ModuleOp, timer: TimerNode | None):
        node = timer.child(f"'{step.anchor}' Pipeline") if timer is not None else None
        start = time.perf_counter()
        self._anchors.append(step.anchor)
        try:
            for child in self._children(target, step.anchor):
                if step.anchor == "any" and not (
                    isinstance(child, ModuleOp) or child.has_trait(IsolatedFromAbove)
                ):
                    continue
                block, after = child.parent, child.next_op
                assert block is not None
                child.detach()
                wrapper = child if isinstance(child, ModuleOp) else ModuleOp([child])
                try:
                    self._run_steps(step.steps, wrapper, node)
                finally:
                    put_back = self._put_back(wrapper, child)
                    for op in put_back:
                        if after is not None:
                            block.insert_op_before(op, after)
                        else:
                            block.add_op(op)
        finally:
            self._anchors.pop()
            if node is not None:
                node.seconds += time.perf_counter() - start

    def _put_back(self, wrapper: ModuleOp, child: Operation) -> list[Operation]:
        """The ops that replace `child` after its nested run (its pre-crash snapshot after a crash)."""
        import sys

        exc = sys.exc_info()[1]
        source = wrapper
        if isinstance(exc, PassCrash) and exc.target is wrapper and exc.snapshot is not None:
            source, exc.snapshot = exc.snapshot, None
        if source is child or (isinstance(child, ModuleOp) and source is not wrapper):
            return [source]
        ops = list(source.body.block.ops)
        for op in ops:
            op.detach()
        return ops

    def _dump(self, when: str, step: PassStep, target: ModuleOp) -> None:
        stream = self.ir.stream
        assert stream is not None
        stream.write(f"// -----// IR Dump {when} {step.name} //----- //\n")
        stream.write(self.ir_text(target))
        stream.write("\n\n")
        stream.flush()

    def ir_text(self, target: ModuleOp) -> str:
        """The IR a pass ran on as the printing options say (nested: the anchored ops only)."""
        out = StringIO()
        printer = Printer(stream=out, print_generic_format=self.ir.generic, print_debuginfo=self.ir.debuginfo)
        if self._anchors and self._anchors[-1] != "builtin.module":
            # nested: print the anchored op(s), not our scratch module
            for i, op in enumerate(target.body.block.ops):
                if i:
                    out.write("\n")
                printer.print_op(op)
        else:
            printer.print_op(target)
        return out.getvalue()

    def _run_pass(self, step: PassStep, target: ModuleOp, timer: TimerNode | None):
        for hook in self.before_pass:
            hook(step, target)
        ir = self.ir
        if step.name in ir.print_before:
            self._dump("Before", step, target)
        before_text = self.ir_text(target) if ir.print_after_change else None
        snapshot = target.clone() if self.snapshots else None
        start = time.perf_counter()
        try:
            step.pass_.apply(self.ctx, target)
        except DiagnosticException as e:
            raise PassFailure(step, e, after_verify=False) from None
        except Exception as e:
            path = pass_str(step.pass_)
            for anchor in reversed(self._anchors):
                path = f"{anchor}({path})"
            raise PassCrash(step, e, snapshot, target, path) from e
        finally:
            if timer is not None:
                timer.child(step.name).seconds += time.perf_counter() - start
        if self.verify_each:
            start = time.perf_counter()
            try:
                verify_located(target)
            except DiagnosticException as e:
                raise PassFailure(step, e, after_verify=True) from None
            finally:
                if timer is not None:
                    timer.child("Verifier").seconds += time.perf_counter() - start
        if ir.wants_after:
            selected = ir.print_after_all or step.name in ir.print_after
            if ir.print_after_change:
                changed = self.ir_text(target) != before_text
                selected = changed and (selected or not (ir.print_after_all or ir.print_after))
            if selected:
                self._dump("After", step, target)
        for hook in self.after_pass:
            hook(step, target)


def walk_steps(steps: Sequence[Step]) -> Iterator[PassStep]:
    for s in steps:
        if isinstance(s, NestStep):
            yield from walk_steps(s.steps)
        else:
            yield s

