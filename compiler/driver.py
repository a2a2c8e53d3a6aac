"""The driver: run a pass pipeline on a module in memory. Every way of compiling goes through `lower`:
`minimlir.frontend.compile` (ONNX and `.mlir`), the JIT's `compile_mlir_text`, the split (parallel)
lowering's workers; mini-opt builds its pipelines with the same registry and pass manager.

    result = lower(module, "compile", name="model.mlir", source_text=text,
                   metadata_entry="main")            # the runtime's view, read before the ABI pass
    result.remarks, result.pass_seconds, result.metadata

Hooks are the pass manager's public `before_pass` / `after_pass` callbacks, `(step, module) -> None`;
`run_once_before(pass_name, fn)` makes one that calls `fn(module)` right before the first top-level
run of a pass. The one pass whose input the runtime must see is named once, here: ABI_PASS.

Errors are CompileError, one format for every caller:
    invalid pipeline 'graph-legalise': … unknown pass 'graph-legalise' …
    f.mlir:3:5: error: … \\n note: pass 'graph-bufferize' failed          (.pass_name set)
    f.mlir:3:5: error: … \\n note: pass 'X' left IR that does not verify
    error: pass 'X' crashed: ZeroDivisionError: … (a compiler bug; reproduce with mini-opt -p '…')
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import DiagnosticException

from minimlir.compiler.context import make_context
from minimlir.compiler.diagnostics import SourceFile, from_exception, render, verify_located
from minimlir.compiler.discovery import named_pipelines, pass_registry
from minimlir.compiler.errors import CompileError
from minimlir.compiler.pass_manager import (
    Hook,
    IROptions,
    PassCrash,
    PassFailure,
    PassManager,
    PassStep,
    PipelineBuilder,
    PipelineError,
    Step,
    TimerNode,
    parse_pipeline,
)
from minimlir.compiler.stats import compile_stats
from minimlir.passes._diagnostics import Diagnostic, diagnostic_handler
from minimlir.compiler.metadata import collect_metadata


ABI_PASS = "convert-mem-to-llvm"
"""The pass that expands memref signatures into the native ABI (pointer + one i64 per `?` dim): the
runtime metadata (minimlir.compiler.metadata) is read from the module right before it."""

_UNSET: Any = object()


@dataclass
class LowerResult:
    module: ModuleOp
    remarks: list[str] = field(default_factory=list)  # rendered `loc: remark: msg` (warnings too)
    diagnostics: list[Diagnostic] = field(default_factory=list)  # the same, as objects
    pass_seconds: dict[str, float] = field(default_factory=dict)
    metadata: dict[str, Any] | None = None  # with metadata_entry=: the runtime's view before ABI_PASS


def build_pipeline(pipeline: str, ctx: Context) -> list[Step]:
    """Pass steps of a pipeline text (`a,b{opt=1}`, `builtin.module(...)`, named pipelines)."""
    text = pipeline.strip()
    anchored = text.startswith("builtin.module(")
    try:
        return PipelineBuilder(pass_registry(), named_pipelines(), ctx).build(parse_pipeline(text, anchored))
    except PipelineError as e:
        e.hint = ""  # not the list of every xDSL pass
        raise CompileError(f"invalid pipeline '{pipeline}': {e.render().rstrip()}") from None


def run_once_before(pass_name: str, fn: Callable[[ModuleOp], None], module: ModuleOp) -> Hook:
    """A before_pass hook calling `fn(module)` once, right before the first top-level run of `pass_name`."""
    pending = [fn]

    def hook(step: PassStep, target: ModuleOp) -> None:
        if pending and target is module and step.name == pass_name:
            pending.pop()(module)

    return hook


def lower(
    module: ModuleOp,
    pipeline: str,
    *,
    ctx: Context | None = None,
    name: str = "<module>",
    source_text: str | None = None,
    on_ir: Callable[[str, str], None] | None = None,
    before_pass: Iterable[Hook] = (),
    after_pass: Iterable[Hook] = (),
    metadata_entry: str | Sequence[str] | None = _UNSET,
    verify_each: bool | None = None,
    verify: bool = True,
) -> LowerResult:
    """Run `pipeline` on `module` in place.

    `on_ir(pass_name, ir_text)` sees the IR after each pass. `metadata_entry` (a function name, names,
    or None for every public function) collects the runtime metadata right before ABI_PASS into
    `result.metadata`. Remarks and warnings are collected, not printed. `verify_each`: verify after
    every pass (default: only at the end, unless MINIMLIR_VERIFY_EACH=1; verifying after each pass
    costs about half the lowering time of a real model). `verify=False` skips the final verification
    too (the tuner's candidate builds: they are checked by running them against the default).
    """
    ctx = ctx or make_context()
    source = SourceFile(name, source_text) if source_text is not None else None
    steps = build_pipeline(pipeline, ctx)
    if verify_each is None:
        verify_each = os.environ.get("MINIMLIR_VERIFY_EACH") == "1"
    result = LowerResult(module)
    before = list(before_pass)
    if metadata_entry is not _UNSET:
        def take(m: ModuleOp) -> None:  # the mem-level signatures, before they are expanded
            result.metadata = collect_metadata(m, metadata_entry)

        before.append(run_once_before(ABI_PASS, take, module))

    def count(step: PassStep, target: ModuleOp) -> None:
        compile_stats().passes_run += 1

    after = [count, *after_pass]
    manager: PassManager
    if on_ir is not None:
        after.append(lambda step, target: on_ir(step.name, manager.ir_text(target)))
    timer = TimerNode("root")
    manager = PassManager(steps, ctx, IROptions(), timer, verify_each=verify_each, snapshots=False,
                          before_pass=before, after_pass=after)

    def collect(diag: Diagnostic) -> None:
        result.diagnostics.append(diag)
        result.remarks.append(render(diag, source).rstrip())

    try:
        with diagnostic_handler(collect):
            manager.run(module)
    except PassFailure as f:
        what = "left IR that does not verify" if f.after_verify else "failed"
        err = CompileError(f"{render(from_exception(f.error), source).rstrip()}\nnote: pass '{f.step.name}' {what}")
        err.pass_name = f.step.name
        raise err from None
    except PassCrash as c:
        err = CompileError(
            f"error: pass '{c.step.name}' crashed: {type(c.error).__name__}: {c.error} "
            f"(a compiler bug; reproduce with mini-opt -p '{c.path}')"
        )
        err.pass_name = c.step.name
        raise err from c.error
    if not verify_each and verify:
        start = time.perf_counter()
        try:
            verify_located(module)
        except DiagnosticException as e:
            raise CompileError(
                render(from_exception(e), source).rstrip()
                + "\nnote: the IR after the pipeline does not verify (MINIMLIR_VERIFY_EACH=1 finds the pass)"
            ) from None
        timer.child("Verifier").seconds += time.perf_counter() - start

    def walk(node: TimerNode) -> None:
        for child in node.children.values():
            result.pass_seconds[child.name] = result.pass_seconds.get(child.name, 0.0) + child.seconds
            walk(child)

    walk(timer)
    return result
