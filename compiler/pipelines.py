"""Named pass pipelines: usable by name wherever a pass is (`-p graph-lower,cse`), listed by --list-passes.

Adding one is one entry: name -> (pipeline, one-line description). The pipeline text is what `-p` takes: passes
with options and nested anchors (`func.func(cse)`), relative to where the name is used (usually the module).
A name must not clash with a pass name.
"""

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
        "mem-plan,convert-to-llvm",
        "Everything after graph-bufferize: plan buffers into an arena, then lower to the llvm dialect.",
    ),
    "graph-to-llvm": NamedPipeline(
        "graph-infer-dims,graph-legalize,graph-simplify-dims,graph-bufferize,mem-to-llvm",
        "graph dialect to llvm dialect: legalize ops to kernels, bufferize, plan memory, lower to llvm.",
    ),
    "compile-whole-module": NamedPipeline(
        "graph-infer-dims,graph-fuse,graph-legalize,loop-fuse,graph-simplify-dims",
        "The part of `compile` that rewrites the whole module: symbolic dims, fusion, legalization, kernel "
        "fusion (the split lowering runs it in the caller's process).",
    ),
    "compile-per-function": NamedPipeline(
        "loop-schedule,graph-bufferize,mem-plan,loop-outline-parallel,convert-vector-to-llvm,convert-to-llvm,"
        "convert-parallel-to-llvm",
        "The part of `compile` after compile-whole-module: passes that each rewrite one function at a time "
        "(the split lowering runs it on chunks of kernels in parallel).",
    ),
    "compile": NamedPipeline(
        "compile-whole-module,compile-per-function",
        "The default compile pipeline: fuse, legalize, fuse kernels, default schedule (tiles, vectors, "
        "parallel loops), bufferize, plan, lower to llvm with parallel loops on libgomp.",
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
