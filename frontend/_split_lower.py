"""Lower a big module on several cores: the kernels in chunks, each chunk in a forked worker.

The default `compile` pipeline is a short graph-level prefix (graph-infer-dims, graph-fuse,
graph-legalize, loop-fuse, graph-simplify-dims:
whole-module passes, a few seconds even for DenseNet) followed by passes that each work on one
function at a time: loop-schedule and the loop lowerings rewrite one kernel, graph-bufferize and
mem-plan rewrite the graph-level functions and only read the kernels' signatures, the conversions to
the llvm dialect and the translation to LLVM IR are per function too. The second part is where a
model's compile time goes (xDSL builds every op in Python), so `lower_split` runs it in parallel:

  1. the prefix runs here, in the caller's process, on the whole module;
  2. the module is cut into chunks: one with the graph-level functions (and a private declaration
     of every kernel they call), the others with the kernels, balanced by size;
  3. forked workers (`os.fork` via a process pool: they inherit the module, nothing is serialized
     on the way in) each take a chunk, build a module of it, run the rest of the pipeline on it,
     verify it and translate it to LLVM IR text;
  4. the texts are merged into one LLVM module (kernel declarations meet their definitions; shared
     declarations such as `free` or `llvm.fma.v8f32` are kept once), which the runtime compiles
     (in parts, in parallel again: backend/jit.py `compile_split`).

The result is the module the sequential pipeline would produce, function for function (the passes
after the prefix do not look across functions; tests/unit/frontend/test_split_lower.py compares both). It is
used by `minimlir.frontend.compile` for the default pipeline when the module has enough kernels and
the process may use more than one core; `MINIMLIR_COMPILE_JOBS=1` turns it off (N: N workers).
Anything unusual (no `fork`, IR dumps requested, a custom pipeline, a worker that dies, LLVM IR
this merger does not know) falls back to the sequential pipeline, so errors are reported the same.
"""

from __future__ import annotations

import os
import re
import time
import warnings
from dataclasses import dataclass, field
from typing import Any

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp

from minimlir.compiler import driver
from minimlir.compiler.errors import CompileError, error_text
from minimlir.compiler.pass_manager import fewer_gc_passes
from minimlir.compiler.pipelines import PIPELINES, expand
from minimlir.backend import jit
from minimlir.backend.parallel import cpu_count
from minimlir.dialects.loop import CONCAT_AXIS_ATTR
from minimlir.passes.loop.inplace import INPLACE_ATTR


PREFIX = "compile-whole-module"
"""The whole-module part of the `compile` pipeline (a named pipeline), run in the caller's process."""
SUFFIX = "compile-per-function"
"""The per-function part (a named pipeline), run on each chunk. `compile` is PREFIX,SUFFIX (checked)."""
MIN_KERNELS = 24
"""Modules with fewer kernels lower in one process (a worker costs a fork and a pass-manager setup)."""
KERNEL_ATTR = "loop.kernel"


class SplitUnavailable(Exception):
    """The split lowering cannot handle this module or host: lower sequentially instead."""


@dataclass
class SplitResult:
    """The merged LLVM IR, the exported functions' signatures, what the sequential `lower` reports."""

    llvm_ir: str
    signatures: dict[str, Any]
    metadata: dict[str, Any] | None
    remarks: list[str] = field(default_factory=list)
    pass_seconds: dict[str, float] = field(default_factory=dict)


def jobs() -> int:
    """Workers to use: $MINIMLIR_COMPILE_JOBS, else the cores this process may run on (at most 8)."""
    env = os.environ.get("MINIMLIR_COMPILE_JOBS", "")
    if env.isdigit() and int(env) > 0:
        return int(env)

    return max(1, min(cpu_count(), 8))


def applies(pipeline: str) -> bool:
    """Whether `pipeline` (a name or pass list) is the `compile` pipeline this module splits."""
    text = pipeline.strip()
    if "compile" not in PIPELINES or PIPELINES["compile"].pipeline != f"{PREFIX},{SUFFIX}":
        return False
    return text == "compile" or expand(text) == expand("compile")


def _kernels(module: ModuleOp) -> list[func.FuncOp]:
    return [op for op in module.ops
            if isinstance(op, func.FuncOp) and op.body.blocks and KERNEL_ATTR in op.attributes]


def _size(op) -> int:
    return sum(1 for _ in op.walk())


def plan_chunks(module: ModuleOp, workers: int) -> list[list[str]]:
    """Kernel names per chunk: about four chunks per worker, balanced by op count (largest first), so
    the pool can even out kernels whose scheduled size differs from their size here."""
    sizes = {k.sym_name.data: _size(k) + 200 for k in _kernels(module)}
    n = max(1, min(len(sizes), 4 * workers))
    bins: list[list[str]] = [[] for _ in range(n)]
    load = [0] * n
    for name in sorted(sizes, key=lambda k: -sizes[k]):
        i = load.index(min(load))
        bins[i].append(name)
        load[i] += sizes[name]
    order = sorted(range(n), key=lambda i: -load[i])
    return [bins[i] for i in order if bins[i]]


def build_chunk(module: ModuleOp, kernels: list[str] | None) -> ModuleOp:
    """A module of clones: the given kernels, or (None) every other op of `module` plus a private
    declaration of each kernel."""
    ops = []
    if kernels is None:
        for op in module.ops:
            if isinstance(op, func.FuncOp) and op.body.blocks and KERNEL_ATTR in op.attributes:
                t = op.function_type
                decl = func.FuncOp.external(op.sym_name.data, list(t.inputs.data), list(t.outputs.data))
                for attr in (CONCAT_AXIS_ATTR, INPLACE_ATTR):  # what mem-concat-in-place, mem-reuse-inputs read
                    if attr in op.attributes:
                        decl.attributes[attr] = op.attributes[attr]
                ops.append(decl)
            else:
                ops.append(op.clone())
    else:
        wanted = set(kernels)
        ops = [op.clone() for op in module.ops
               if isinstance(op, func.FuncOp) and op.sym_name.data in wanted]
    chunk = ModuleOp(ops)
    for k, v in module.attributes.items():
        chunk.attributes[k] = v
    return chunk


# ---------------------------------------------------------------- the workers

_STATE: dict[str, Any] = {}
"""What forked workers inherit: the module after the prefix and how to lower a chunk."""


def _work(index: int, kernels: list[str] | None) -> tuple:
    """In a worker: lower one chunk to LLVM IR text. Returns ("ok", index, ir, sigs, metadata,
    remarks, seconds) or ("error", index, message)."""
    st = _STATE
    try:
        chunk = build_chunk(st["module"], kernels)
        want = {"metadata_entry": st["entry"]} if kernels is None and st.get("entry") is not None else {}
        lowered = driver.lower(chunk, SUFFIX, name=st["name"], source_text=st["source_text"], **want)
        t = time.perf_counter()
        sigs = jit.signatures(chunk)
        ir = jit.to_llvm_ir(chunk, copy=False)
        seconds = dict(lowered.pass_seconds)
        seconds["translate-to-llvm-ir"] = time.perf_counter() - t
        return ("ok", index, ir, sigs, lowered.metadata, lowered.remarks, seconds)
    except CompileError as e:  # the driver's (located) and the JIT's (`invalid LLVM IR: …`) alike
        return ("error", index, error_text(e))


def _task(index: int, kernels: list[str] | None) -> tuple:
    with fewer_gc_passes():  # the translation to LLVM IR too
        return _work(index, kernels)  # looked up in the worker (what the pool pickles is this name)


def lower_split(module: ModuleOp, *, entry: str | None, name: str, source_text: str | None,
                workers: int | None = None) -> SplitResult:
    """Run SUFFIX on `module` (already through PREFIX, left unchanged) with its chunks in `workers`
    forked processes; see the module docstring. Raises `CompileError` for a module that does not
    lower, `SplitUnavailable` when the sequential pipeline should run instead."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    workers = workers or jobs()
    if workers < 2 or "fork" not in multiprocessing.get_all_start_methods():
        raise SplitUnavailable("one worker")
    if multiprocessing.current_process().daemon:
        raise SplitUnavailable("a daemonic process may not start workers")
    t0 = time.perf_counter()
    seconds: dict[str, float] = {}
    if len(_kernels(module)) < MIN_KERNELS:
        raise SplitUnavailable("few kernels")
    chunks: list[list[str] | None] = [None, *plan_chunks(module, workers)]
    _STATE.clear()
    _STATE.update(module=module, entry=entry, name=name, source_text=source_text)
    results: list[tuple | None] = [None] * len(chunks)
    try:
        ctx_fork = multiprocessing.get_context("fork")
        with warnings.catch_warnings():
            # Python >= 3.12 warns about fork() in a process with threads: the workers only run
            # Python passes and return text, they take none of the locks other threads may hold
            warnings.simplefilter("ignore", DeprecationWarning)
            with ProcessPoolExecutor(max_workers=min(workers, len(chunks)), mp_context=ctx_fork) as pool:
                futures = [pool.submit(_task, i, c) for i, c in enumerate(chunks)]
                for f in futures:
                    r = f.result()
                    results[r[1]] = r
    except (BrokenProcessPool, OSError, AssertionError, RuntimeError) as e:
        raise SplitUnavailable(f"the workers failed: {e}") from None
    finally:
        _STATE.clear()
    errors = [r[2] for r in results if r is not None and r[0] == "error"]
    if errors:
        raise CompileError(errors[0])
    parts, sigs, remarks = [], {}, []
    metadata = None
    for r in results:
        assert r is not None
        _, _, ir, s, meta, rem, secs = r
        parts.append(ir)
        sigs.update(s)
        remarks.extend(rem)
        metadata = metadata or meta
        for k, v in secs.items():
            seconds[k] = seconds.get(k, 0.0) + v
    merged = merge_llvm_ir(parts)
    seconds["lower-split-wall"] = time.perf_counter() - t0
    return SplitResult(merged, sigs, metadata, remarks, seconds)


# ---------------------------------------------------------------- merging LLVM IR text

_DECLARE = re.compile(r'declare\s+.*?@("(?:[^"\\]|\\.)*"|[-\w.$]+)\(')
_GLOBAL = re.compile(r'@("(?:[^"\\]|\\.)*"|[-\w.$]+)\s*=')


def merge_llvm_ir(parts: list[str]) -> str:
    """One LLVM module from modules that define disjoint functions (as the chunks' translations
    do): the first header, every definition, each global and declaration once, no declaration of a
    function some part defines. Raises SplitUnavailable for what it cannot merge safely (metadata,
    attribute groups, two different definitions of one global or function)."""
    header: list[str] = []
    globals_: dict[str, str] = {}
    declares: dict[str, str] = {}
    defines: dict[str, list[str]] = {}
    for n, text in enumerate(parts):
        lines = text.split("\n")
        i = 0
        while i < len(lines):
            line = lines[i]
            i += 1
            if not line.strip():
                continue
            if line.startswith("define "):
                m = jit._DEFINE.match(line)
                if m is None:
                    raise SplitUnavailable(f"cannot read: {line[:80]}")
                body = [line]
                while i < len(lines) and lines[i] != "}":
                    body.append(lines[i])
                    i += 1
                if i == len(lines):
                    raise SplitUnavailable("unterminated function")
                body.append("}")
                i += 1
                if m.group(2) in defines:
                    raise SplitUnavailable(f"@{m.group(2)} is defined twice")
                defines[m.group(2)] = body
            elif line.startswith("declare "):
                m = _DECLARE.match(line)
                if m is None:
                    raise SplitUnavailable(f"cannot read: {line[:80]}")
                declares.setdefault(m.group(1), line)
            elif line.startswith("@"):
                m = _GLOBAL.match(line)
                if m is None:
                    raise SplitUnavailable(f"cannot read: {line[:80]}")
                if globals_.setdefault(m.group(1), line) != line:
                    raise SplitUnavailable(f"two definitions of the global @{m.group(1)}")
            elif line.startswith((";", "target ", "source_filename")):
                if n == 0:
                    header.append(line)
            else:  # metadata, attribute groups, types, comdats: numbered per module
                raise SplitUnavailable(f"cannot merge: {line[:80]}")
    out = list(header)
    out.extend(globals_.values())
    out.extend(line for name, line in declares.items() if name not in defines)
    for body in defines.values():
        out.append("")
        out.extend(body)
    return "\n".join(out) + "\n"
