"""Named pass pipelines: usable by name wherever a pass is (`-p graph-lower,cse`), listed by --list-passes.

Adding one is one entry: name -> (pipeline, one-line description). The pipeline text is what `-p` takes: passes
with options and nested anchors (`func.func(cse)`), relative to where the name is used (usually the module).
A name must not clash with a pass name.
"""

import os
from typing import NamedTuple


class NamedPipeline(NamedTuple):
    pipeline: str
    description: str


PIPELINES: dict[str, NamedPipeline] = {
    "graph-fuse-legalize": NamedPipeline(
        "graph-fuse,graph-legalize,loop-fuse",
        "Fusion then legalization (TVM's FuseOps, LegalizeOps, FuseTIR): one kernel per fusion group.",
    ),
    "cleanup": NamedPipeline(
        "canonicalize,cse,dce", "Generic cleanup: canonicalize, then CSE, then dead code elimination."
    ),
    "convert-to-llvm": NamedPipeline(
        "convert-loop-to-llvm,convert-mem-to-llvm,convert-arith-to-llvm,convert-math-to-llvm,"
        "convert-cf-to-llvm,convert-func-to-llvm,dce",
        "Lower loop/mem/arith/math/cf/func to the llvm dialect (input already bufferized and planned).",
    ),
    "mem-to-llvm": NamedPipeline(
        "mem-concat-in-place,mem-reuse-inputs,mem-plan,convert-to-llvm",
        "Everything after graph-bufferize: concats in place, outputs in the buffers of dying inputs, plan buffers "
        "into an arena, then lower to the llvm dialect.",
    ),
    "graph-to-llvm": NamedPipeline(
        "graph-infer-dims,graph-legalize,graph-simplify-dims,graph-bufferize,mem-to-llvm",
        "graph dialect to llvm dialect: legalize ops to kernels, bufferize, plan memory, lower to llvm.",
    ),
    "compile-whole-module": NamedPipeline(
        "graph-strength-reduce,graph-layout,graph-winograd,graph-pack-weights,graph-infer-dims,graph-lift-params,graph-fuse,graph-legalize,"
        "loop-fuse,graph-simplify-dims,loop-mark-inplace",
        "The part of `compile` that rewrites the whole module: powers by small constants to multiplies, "
        "conv chains in the channel-blocked layout, wide 3x3 convs as Winograd F(2x2, 3x3), symbolic dims, "
        "weights packed in the kernels' layouts once "
        "at load time, fusion, legalization, kernel fusion (the split lowering runs it in the caller's process).",
    ),
    "compile-per-function": NamedPipeline(
        "loop-schedule,graph-bufferize,mem-concat-in-place,mem-reuse-inputs,mem-plan,loop-outline-parallel,convert-vector-to-llvm,convert-math-to-polynomials,"
        "convert-to-llvm,"
        "convert-parallel-to-llvm",
        "The part of `compile` after compile-whole-module: passes that each rewrite one function at a time "
        "(the split lowering runs it on chunks of kernels in parallel).",
    ),
    "compile": NamedPipeline(
        "compile-whole-module,compile-per-function",
        "The default compile pipeline: fuse, legalize, fuse kernels, default schedule (tiles, vectors, "
        "parallel loops), bufferize, concats in place, plan, lower to llvm with parallel loops on libgomp.",
    ),
}


def expand(pipeline: str) -> str:
    """`pipeline` (a pass list or a name) with every named pipeline replaced by its passes, recursively:
    expand("compile") == "graph-fuse,graph-legalize,loop-fuse,loop-schedule,…". Top-level names only
    (no options, no nesting), which is how the pipelines above are written."""
    out = []
    for part in (p.strip() for p in pipeline.split(",")):
        out.append(expand(PIPELINES[part].pipeline) if part in PIPELINES else part)
    return ",".join(out)


# ---------------------------------------------------------------- checked mode (passes/to_llvm/_checks.py)


def _split_top(text: str) -> list[str]:
    """`a,b{x=1,y=2},func.func(c,d)` -> its top-level items."""
    items, depth, cur = [], 0, ""
    for ch in text:
        if ch in "({":
            depth += 1
        elif ch in ")}":
            depth -= 1
        if ch == "," and depth == 0:
            items.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        items.append(cur.strip())
    return items


def checked_pipeline(text: str) -> str:
    """The checked-mode variant of a pipeline: named pipelines expanded, `mem-check-sites` right after
    `graph-legalize` (at the start when there is none: mem-level input), and
    `convert-mem-to-llvm{checks=true}`."""
    text = text.strip()
    if text.startswith("builtin.module(") and text.endswith(")"):
        text = text[len("builtin.module("):-1]

    def expand(t: str, depth: int = 0) -> list[str]:
        out: list[str] = []
        for item in _split_top(t):
            if item in PIPELINES and depth < 16:
                out.extend(expand(PIPELINES[item].pipeline, depth + 1))
            else:
                out.append(item)
        return out

    items = expand(text)
    result: list[str] = []
    for item in items:
        name = item.split("{", 1)[0].strip()
        if name == "convert-mem-to-llvm":
            opts = item[len(name):].strip()
            inner = opts[1:-1].strip() if opts.startswith("{") else ""
            inner = " ".join(o for o in inner.split() if not o.startswith("checks="))
            item = "convert-mem-to-llvm{" + (inner + " " if inner else "") + "checks=true}"
        result.append(item)
        if name == "graph-legalize":
            result.append("mem-check-sites")
    if "mem-check-sites" not in result:
        result.insert(0, "mem-check-sites")
    return ",".join(result)


def checks_from_env() -> bool:
    """MINIMLIR_CHECKS=1 (or true/yes/on) turns checked mode on where it is not given."""
    return os.environ.get("MINIMLIR_CHECKS", "").strip().lower() in ("1", "true", "yes", "on")
