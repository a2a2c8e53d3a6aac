"""Build a deployable artifact from a model (ONNX or `.mlir`): compile it (frontend.compile, or the
default pipeline for another CPU/target without a JIT) and write it with backend/artifact.py.

    build("model.onnx", "model.so", weights="auto")           # what mini-compile runs
    build("model.onnx", "model-arm.so", target="aarch64-linux-gnu")
"""

from __future__ import annotations

import os
from typing import Any

from minimlir.backend import _target, jit
from minimlir.backend.artifact import ArtifactError, ArtifactInfo, export_compiled, write_artifact
from minimlir.compiler.metadata import collect_metadata
from minimlir.frontend import api


def build(
    model: Any,
    path: str | os.PathLike[str],
    *,
    weights: str = "auto",
    cpu: str | None = None,
    target: str | None = None,
    tuning_db: str | os.PathLike[str] | None = None,
    emit_header: bool | str | os.PathLike[str] = False,
    params: Any = None,
    entry: str | None = None,
    cache: bool | str | os.PathLike[str] = True,
) -> ArtifactInfo:
    """Compile `model` (ONNX or .mlir, as `frontend.compile` takes it) into the artifact `path`."""
    tgt = _target.resolve(target, cpu)
    host = tgt.triple == _target.host_triple() and cpu in (None, "host")  # the JIT's own code
    if host:
        extra = {"tuning_db": tuning_db} if tuning_db is not None else {}
        compiled = api.compile(model, params=params, entry=entry, cache=cache, **extra)
        return export_compiled(compiled, path, weights=weights, emit_header=emit_header)
    if tuning_db is not None:
        raise ArtifactError("--tuning-db applies to the host's CPU only (its records were measured here); "
                            "drop it for --cpu/--target builds")
    return _build_for_target(model, path, tgt, weights=weights, emit_header=emit_header, params=params,
                             entry=entry)


def _build_for_target(model: Any, path: str | os.PathLike[str], tgt: _target.Target, *, weights: str,
                      emit_header: Any, params: Any, entry: str | None) -> ArtifactInfo:
    """Lower `model` with the default pipeline for `tgt` (its vector width and registers) and write
    the artifact; no JIT (the code may not run here)."""
    ctx = api.make_context()
    loaded = api.load(model, params=params, ctx=ctx)
    module = loaded.module
    entry = api.pick_entry(module, entry, kind=loaded.kind)
    entry_fn = next((f for f in api.graph_functions(module) if f.sym_name.data == entry), None)
    inputs = outputs = None
    if entry_fn is not None:
        inputs, outputs = api.signature(entry_fn)
    api.check_params(module, loaded.params, loaded.name)
    found: dict[str, Any] = {}
    graph_module = module.clone() if api.graph_level(module) else None
    with _target.using(tgt):
        split, rest = None, api.default_pipeline()
        if api.graph_level(module):
            split, rest = api._lower_in_parallel(module, entry, loaded, ctx, [], {})
        if split is not None:
            ir_text, found["metadata"] = split.llvm_ir, split.metadata
        else:
            if not api.graph_level(module) and not api.is_llvm_level(module):
                found["metadata"] = collect_metadata(module, entry)  # mem-level input: already the runtime's view
            if not api.is_llvm_level(module):
                lowered = api.lower(module, rest, ctx=ctx, name=loaded.name, source_text=loaded.text,
                                    metadata_entry=entry)
                if lowered.metadata is not None:
                    found["metadata"] = lowered.metadata
            if "metadata" not in found:
                raise ArtifactError("cannot export a module given in the llvm dialect: start from graph- or "
                                    "mem-level IR")
            ir_text = jit.to_llvm_ir(module, copy=False)
    params = dict(loaded.params)
    if graph_module is not None and any(f.get("params_of") == entry for f in found["metadata"]["functions"].values()):
        params.update(_lifted_params(graph_module, entry, params, tgt))
    return write_artifact(path, llvm_ir_parts=[ir_text], optimized=False, runtime_metadata=found["metadata"],
                          entry=entry, params=params, target=tgt, weights=weights,
                          emit_header=emit_header, inputs=inputs, outputs=outputs)


def _lifted_params(module: Any, entry: str, params: dict[str, Any], tgt: _target.Target) -> dict[str, Any]:
    """The weights graph-lift-params computes at load time, computed here for a `tgt` artifact:
    the graph-level prefix that packs and lifts them runs for `tgt` (its layouts), the function it
    lifts them into is then compiled for this machine and run on the weights (a layout's values
    do not depend on the CPU that computes them)."""
    from xdsl.dialects import func
    from xdsl.dialects.builtin import ModuleOp

    from minimlir.compiler.pipelines import expand
    from minimlir.passes.graph.lift_params import PARAMS_OF

    prefix = expand("compile-whole-module").split(",")
    upto = ",".join(prefix[: prefix.index("graph-lift-params") + 1])
    with _target.using(tgt):
        api.lower(module, upto, ctx=api.make_context(), name="<lift params>")
    lifted = {}
    for f in list(module.ops):
        if isinstance(f, func.FuncOp) and (of := f.attributes.get(PARAMS_OF)) is not None and of.data == entry:
            f.detach()
            del f.attributes[PARAMS_OF]
            names = [d.data["graph.name"].data for d in f.res_attrs.data]
            compiled = api.compile(ModuleOp([f]), params=params, entry=f.sym_name.data, cache=False)
            out = compiled()
            lifted.update(zip(names, out if isinstance(out, list | tuple) else [out]))
    return lifted
