"""The runtime boundary: call JIT-compiled minimlir functions with NumPy / DLPack arrays, no copy.

    prog = compile_mlir_text(text, pipeline="mem-to-llvm")
    y = prog.main(x)                     # native code allocates y (freed when y is collected)
    prog.main(x, out=y)                  # zero-copy: the kernel writes into the caller's y

Metadata. Before lowering, `collect_metadata(module)` records, for every public function with a
body, what the native ABI (passes/_memref_abi.py) cannot tell: argument names (the `graph.name`
arg attribute, else the SSA name, else `arg<k>`), memref types (dtype, shape with None for `?`,
ONNX dim names from `graph.dim_names`), params (`mem.param`), result names and types, and the ABI
("entry": returns memrefs through the result slots; "plain": expanded signature, no results
or scalar results). It is a small JSON-serializable dict, so a disk cache can keep it beside
the object code:

    {"version": 1, "functions": {"main": {"abi": "entry",
        "args": [{"name": "x", "kind": "memref", "dtype": "float32", "shape": [null, 3],
                  "dim_names": ["batch", ""], "param": null}, ...],
        "results": [{"name": "y", "dtype": "float32", "shape": [null, 3]}]}}}

Calls. Every check (dtype, rank, static dims, C-contiguity, writability of out=, agreement of
dims that share a name, presence of params) runs in Python BEFORE native code runs; errors name
the argument: `input 'x': expected shape (?, 3) but got (2, 4)`. Arrays cross by pointer;
a non-contiguous input is an error unless the program was built with `allow_copy=True`.
Outputs the native code allocates are wrapped as NumPy arrays whose owner calls libc `free`
when the last view dies. Native status codes: 0 ok, 1 an out= array has the wrong (dynamic)
shape (ArgumentError naming the result), 2 out of memory (MemoryError); on a non-zero status
the native code has freed its own buffers and the runtime frees the results it allocated.

Compile cache. `compile_mlir_text` keys a disk entry (backend/cache.py) by the input text,
pipeline, entry, minimlir version, a fingerprint of minimlir's sources, opt level and the
host CPU/toolchain (`compile_key`). A hit loads the object code into MCJIT with the stored
metadata, remarks and warnings: no parsing, no xDSL pass. `cache=True` uses
$MINIMLIR_CACHE_DIR or ~/.cache/minimlir, `cache=path` that folder, `cache=False` nothing.
`compile_stats()` counts hits, misses and the passes run in this process.

Diagnostics. Pass remarks (mem-plan's `peak bytes: …`) are collected on `program.remarks`,
warnings on `program.warnings` (and re-emitted as Python `CompileWarning`s); nothing is
printed. Bad IR, a failing or crashing pass, and LLVM errors raise `CompileError` with a
`file:line:col: error: …` message that names the pass.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import warnings as _warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from minimlir.backend import checks as _checks
from minimlir.compiler.cache_key import source_fingerprint  # noqa: F401 (re-exported)
from minimlir.compiler.cache_key import versions as _versions  # noqa: F401 (re-exported)
from minimlir.compiler.context import make_context
from minimlir.compiler.errors import CompileError
from minimlir.compiler.stats import CompileStats, compile_stats, reset_compile_stats  # noqa: F401 (re-exported)
from minimlir.compiler.metadata import METADATA_VERSION, collect_metadata, function_metadata  # noqa: F401 (re-exported)
from minimlir.backend import _target, jit
from minimlir.backend import cache as _cache
from minimlir.compiler import driver
from minimlir.compiler.cache_key import cache_key
from minimlir.compiler.params import load_params
from minimlir.compiler.parsing import parse_module
from minimlir.compiler.pass_manager import fewer_gc_passes
from minimlir.compiler.pipelines import checked_pipeline, checks_from_env
from minimlir.dialects import llvm_ext as _llvm_ext
from minimlir.passes._diagnostics import format_location
from minimlir.runtime._native import (  # the JIT's call machinery (the errors re-exported)
    ArgumentError,
    DimCheckError,
    NativeError,
    NativeFunction,
    as_array as _as_array,
    libc_free,
    wrap_owned as _wrap_owned,
)


_context = make_context  # the old name (minimlir.compiler.context.make_context)


class CompileWarning(UserWarning):
    """A warning a pass emitted while compiling (also kept on `CompiledProgram.warnings`)."""


__all__ = [
    "ArgumentError",
    "CompileError",
    "CompileWarning",
    "CompiledProgram",
    "DimCheckError",
    "NativeError",
    "collect_metadata",
    "compile_key",
    "compile_mlir_text",
    "compile_stats",
]


# ------------------------------------------------------------------------------ memory and calls
# The call machinery (checks, pointers, owned outputs) is minimlir.runtime._native's, shared with
# the artifact loader; natively allocated outputs are freed with FREE (the JIT's aligned_alloc is
# the process libc's), a module global looked up at free time, so tests can count frees.

FREE = libc_free()


def _release(ptr: int) -> None:
    FREE(ptr)


def wrap_owned(ptr: int, shape: Sequence[int], dtype: np.dtype) -> np.ndarray:
    """A NumPy array over `ptr` (malloc'd by native code) that frees it when collected."""
    return _wrap_owned(ptr, shape, dtype, _release)


class CompiledProgram:
    """Native code for a module plus the metadata of its public functions.

    `engine` is anything with `address(name) -> int` (backend/jit.py's compiled module);
    `params` is a dict name -> array or the path of a params file (compiler/params.py)."""

    def __init__(
        self,
        engine: Any,
        metadata: Mapping[str, Any],
        params: Mapping[str, np.ndarray] | str | os.PathLike[str] | None = None,
        allow_copy: bool = False,
    ):
        if metadata.get("version") != METADATA_VERSION:
            raise ValueError(f"unsupported runtime metadata version {metadata.get('version')}")
        self.engine = engine
        self.metadata = metadata
        self.allow_copy = allow_copy
        self.remarks: list[str] = []  # `file:line:col: remark: msg` from the passes
        self.warnings: list[str] = []
        self.cache_hit = False
        self.cache_key: str | None = None
        self.checked = _checks.is_checked(getattr(engine, "llvm_ir", "") or "")  # checked mode
        self._params: dict[str, np.ndarray] = {}
        self._lifted: dict[str, np.ndarray] = {}
        if params is not None:
            self.bind_params(params)
        native = {name: NativeFunction(self, name, meta, _address(engine, name))
                  for name, meta in metadata["functions"].items()}
        # graph-lift-params' functions compute weights (packed layouts) from the bound ones; they
        # are run by `param`, not called by the user
        self.functions: dict[str, NativeFunction] = {
            n: f for n, f in native.items() if "params_of" not in metadata["functions"][n]}
        self._lifters: dict[str, tuple[NativeFunction, int]] = {
            r["name"]: (f, i) for n, f in native.items() if "params_of" in metadata["functions"][n]
            for i, r in enumerate(metadata["functions"][n]["results"])}

    def bind_params(self, params: Mapping[str, np.ndarray] | str | os.PathLike[str]) -> None:
        """Use these weights for `mem.param` arguments (a params file is memory-mapped)."""
        if isinstance(params, str | os.PathLike):
            params = load_params(params)
        self._params = dict(params)
        self._lifted = {}  # recomputed from these weights when first needed
        self.params_version = getattr(self, "params_version", 0) + 1  # native calls re-read the params

    def release(self, ptr: int) -> None:
        """Free a buffer the native code allocated (an output nothing refers to any more)."""
        _release(ptr)

    def check_dims(self, checks: Any, given_shapes: list[tuple[str, Any, tuple[int, ...]]]) -> str | None:
        """The message of the first `graph.dim_checks` constraint the inputs break, else None."""
        from minimlir.dialects._shapes import failed_check

        return failed_check(checks, given_shapes)

    def checked_call(self, name: str) -> Any:
        """Checked mode (backend/checks.py): a context that collects the call's first violation."""
        return _checks.CheckedCall(name) if self.checked else None

    def check_outputs(self, name: str, results: list[np.ndarray], names: list[str]) -> Exception | None:
        return _checks.poisoned_outputs(name, results, names) if self.checked else None

    def param_arrays(self) -> list[np.ndarray]:
        """The arrays of every bound and lifted param (what the tuner flushes from the caches to
        time a model's kernels with cold weights)."""
        arrays = [self.param(name, "param_arrays") for name in self._params]
        return [a for a in arrays if isinstance(a, np.ndarray)] + list(self.lifted_params().values())

    def lifted_params(self) -> dict[str, np.ndarray]:
        """Every lifted param (graph-lift-params), computed from the bound weights."""
        return {name: self.param(name, "lifted_params") for name in getattr(self, "_lifters", {})}

    def param(self, name: str, function: str) -> np.ndarray:
        if name not in self._params and name in getattr(self, "_lifters", {}):
            if name not in self._lifted:
                fn, _ = self._lifters[name]
                out = fn()
                out = out if isinstance(out, tuple) else (out,)
                for n, (f, i) in self._lifters.items():
                    if f is fn:
                        self._lifted[n] = out[i]
            return self._lifted[name]
        if name not in self._params:
            have = ", ".join(sorted(self._params)) or "none bound"
            raise ArgumentError(
                f"{function}(): param '{name}' is missing (bound params: {have}); pass params= "
                f"(a dict or a params file) when compiling, or call bind_params()"
            )
        return _as_array(self._params[name], f"param '{name}'", self.allow_copy)

    def __getitem__(self, name: str) -> NativeFunction:
        try:
            return self.functions[name]
        except KeyError:
            raise KeyError(f"no function '{name}' (have: {', '.join(self.functions)})") from None

    def __getattr__(self, name: str) -> NativeFunction:
        functions = self.__dict__.get("functions")
        if functions is not None and name in functions:
            return functions[name]
        raise AttributeError(name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if len(self.functions) != 1:
            raise ArgumentError(
                f"the program has {len(self.functions)} functions ({', '.join(self.functions)}): "
                f"call one by name"
            )
        return next(iter(self.functions.values()))(*args, **kwargs)


def _address(engine: Any, name: str) -> int:
    for attr in ("address", "function_address", "get_function_address"):
        fn = getattr(engine, attr, None)
        if fn is not None:
            addr = int(fn(name))
            if addr == 0:
                raise ValueError(f"function '{name}' not found in the compiled code")
            return addr
    raise TypeError(f"{type(engine).__name__} cannot look up function addresses")


# ------------------------------------------------------------------------------ compile


def _one_line(diag: Any) -> str:
    lines = [f"{format_location(d.location)}: {d.severity}: {d.message}" for d in (diag, *diag.notes)]
    return "\n".join(lines)


def run_pipeline(
    module: ModuleOp,
    pipeline: str,
    ctx=None,
    before: Mapping[str, Any] | None = None,
    diagnostics: list[Any] | None = None,
    source_text: str | None = None,
    filename: str = "<input>",
) -> None:
    """Run a pass pipeline on `module` in place (minimlir.compiler.driver.lower, verifying each pass).

    `before`: pass name -> callback(module), called once right before the first run of that pass.
    `diagnostics`: if given, remarks and warnings are appended to it (Diagnostic objects) instead of
    being printed. Errors raise CompileError (see minimlir.compiler.driver)."""
    hooks = [driver.run_once_before(name, fn, module) for name, fn in (before or {}).items()]
    result = driver.lower(module, pipeline, ctx=ctx, name=filename, source_text=source_text,
                          before_pass=hooks, verify_each=True)
    if diagnostics is not None:
        diagnostics.extend(result.diagnostics)


def _is_llvm_module(module: ModuleOp) -> bool:
    return all(op.name.startswith("llvm.") for op in module.ops)


# ---------------------------------------------------------------- compile cache key

def compile_key(
    text: str,
    pipeline: str,
    entry: str | Sequence[str] | None = None,
    metadata: Mapping[str, Any] | None = None,
    opt_level: int = 3,
) -> str:
    """The compile cache key of compile_mlir_text (see the module docstring). The number of
    threads is not part of it: the same code runs with any pool size."""
    entries = [entry] if isinstance(entry, str) else sorted(entry) if entry is not None else None
    parts = (text, pipeline, json.dumps(entries),
             json.dumps(metadata, sort_keys=True) if metadata is not None else "")
    return cache_key("minimlir-compile", parts, host=_cache.host_parts(), opt_level=opt_level)


def _print_module(module: ModuleOp) -> str:
    from io import StringIO

    from xdsl.printer import Printer

    out = StringIO()
    Printer(stream=out).print_op(module)
    return out.getvalue()


# ---------------------------------------------------------------- compile


def _parse(ctx: Any, text: str, filename: str) -> ModuleOp:
    """Parse with a location on every op (so diagnostics say file:line:col), then verify."""
    return parse_module(text, filename, ctx)


def _load_hit(entry: Any) -> Any | None:
    """A CompiledModule from a cached compile entry, or None if it cannot be used here (an
    external symbol it calls is not resolvable in this process: then recompile)."""
    import llvmlite.binding as llvm

    meta = entry.meta
    if not isinstance(meta, dict) or not isinstance(meta.get("metadata"), dict):
        return None
    _target.init_llvm()
    externals = [str(n) for n in meta.get("externals", ())]
    if any(_checks.is_checked(n) for n in externals):
        _checks.install()
    if any(not llvm.address_of_symbol(n) for n in externals):
        _load_symbol_providers()
        if any(not llvm.address_of_symbol(n) for n in externals):
            return None
    try:
        with jit._llvm_lock:
            tm = _target.target_machine(int(meta.get("opt_level", 3)))
            engine = jit._engine_from_object(entry.obj, tm)
    except Exception:  # an object LLVM refuses: recompile rather than fail
        return None
    return jit.CompiledModule(engine, {}, entry.ir, tm, cache_hit=True)


def _load_symbol_providers() -> None:
    """Register the symbols generated code may use beyond libc/libm: libgomp's GOMP_parallel and
    `minimlir_num_threads` (backend/parallel.py registers them lazily, at lowering time, which
    a cache hit skips)."""
    name = "minimlir.backend.parallel"
    if importlib.util.find_spec(name) is not None:
        available = getattr(importlib.import_module(name), "available", None)
        if available is not None:
            available()


def _codegen(module: ModuleOp | tuple[str, dict[str, Any]], opt_level: int) -> tuple[Any, bytes, list[str]]:
    """llvm-dialect module -> (CompiledModule, object code, external symbols it calls). The module
    is the caller's own (parsed or cloned here, or frontend.compile's): its casts are folded in place.
    Instead of a module: (LLVM IR text, signatures of its exported functions), as the parallel
    lowering (frontend/_split_lower.py) produces them."""
    import time

    _llvm_ext.install_llvmlite_hooks()
    t0 = time.perf_counter()
    if isinstance(module, tuple):
        ir_text, sigs = module
        _load_symbol_providers()  # the lowering ran in other processes
    else:
        sigs = jit.signatures(module)
        with fewer_gc_passes():
            ir_text = jit.to_llvm_ir(module, copy=False)
    t1 = time.perf_counter()
    with jit._llvm_lock:
        tm = _target.target_machine(opt_level)
    # the external symbols, read off the declarations (parsing the whole module here would cost a
    # parse more; the parts are parsed and verified where they are compiled)
    functions, variables = jit.declared_symbols(ir_text)
    if any(_checks.is_checked(n) for n in functions):
        _checks.install()
    jit.check_symbol_names(functions)
    externals = sorted(set(functions) | set(variables))
    # large modules: in parts, in parallel (backend/jit.py compile_split); the cache keeps all objects
    objs, opt_ir = jit.compile_split(ir_text, tm, opt_level)
    t2 = time.perf_counter()
    with jit._llvm_lock:
        engine = jit._engine_from_object(objs, tm)
    compiled = jit.CompiledModule(engine, sigs, opt_ir, tm)
    compiled.timings = {"llvm-translate": t1 - t0, "llvm-compile": t2 - t1,
                        "llvm-load": time.perf_counter() - t2, "llvm-parts": float(len(objs))}
    return compiled, jit.pack_objects(objs), externals


def compile_mlir_text(
    text_or_module: str | ModuleOp,
    entry: str | Sequence[str] | None = None,
    pipeline: str = "graph-to-llvm",
    cache: bool | str | os.PathLike[str] = True,
    params: Mapping[str, np.ndarray] | str | os.PathLike[str] | None = None,
    allow_copy: bool = False,
    metadata: Mapping[str, Any] | None = None,
    filename: str = "<input>",
    opt_level: int = 3,
    checks: bool | None = None,
) -> CompiledProgram:
    """Parse (if text), lower with `pipeline` (unless already llvm dialect), JIT, wrap.

    `cache`: True ($MINIMLIR_CACHE_DIR or ~/.cache/minimlir), a folder, or False. A hit skips
    parsing, every pass and LLVM (see the module docstring). `metadata` is needed only for
    input already in the llvm dialect (where types are gone). `filename` names the text in
    diagnostics. Errors raise CompileError; remarks/warnings land on the program. `checks`: checked
    mode (default $MINIMLIR_CHECKS; backend/checks.py), a pipeline of its own (and cache key)."""
    if checks if checks is not None else checks_from_env():
        pipeline = checked_pipeline(pipeline)

    compile_stats().compiles += 1
    is_text = isinstance(text_or_module, str)
    directory = None if cache is False else _cache.cache_dir(None if cache is True else Path(cache))
    key = None
    if directory is not None:
        key_text = text_or_module if is_text else _print_module(text_or_module)
        key = compile_key(key_text, pipeline, entry, metadata, opt_level)
        hit = _cache.load_entry(directory, key)
        engine = _load_hit(hit) if hit is not None else None
        if engine is not None:
            compile_stats().hits += 1
            meta = hit.meta
            program = CompiledProgram(engine, meta["metadata"], params=params, allow_copy=allow_copy)
            _finish(program, meta.get("remarks", []), meta.get("warnings", []), key, True)
            return program
        compile_stats().misses += 1

    ctx = make_context()
    module = _parse(ctx, text_or_module, filename) if is_text else text_or_module.clone()
    diagnostics: list[Any] = []
    if _is_llvm_module(module):
        if metadata is None:
            raise ArgumentError("a module already in the llvm dialect needs metadata= (collect_metadata)")
    else:
        from minimlir.compiler import driver

        lowered = driver.lower(module, pipeline, ctx=ctx, name=filename,
                               source_text=text_or_module if is_text else None, verify_each=True,
                               **({"metadata_entry": entry} if metadata is None else {}))
        diagnostics.extend(lowered.diagnostics)
        if metadata is None:
            if lowered.metadata is None:
                raise ArgumentError(f"pipeline '{pipeline}' does not run {driver.ABI_PASS}")
            metadata = lowered.metadata
    errors = [d for d in diagnostics if d.severity == "error"]
    if errors:
        raise CompileError("\n".join(_one_line(d) for d in errors))
    remarks = [_one_line(d) for d in diagnostics if d.severity == "remark"]
    warned = [_one_line(d) for d in diagnostics if d.severity == "warning"]
    engine, obj, externals = _codegen(module, opt_level)
    if directory is not None and key is not None:
        blob = {"metadata": metadata, "remarks": remarks, "warnings": warned,
                "externals": externals, "opt_level": opt_level}
        _cache.store(directory, key, obj, engine.llvm_ir, blob)
    program = CompiledProgram(engine, metadata, params=params, allow_copy=allow_copy)
    _finish(program, remarks, warned, key, False)
    return program


def _finish(program: CompiledProgram, remarks: list[str], warned: list[str], key: str | None,
            hit: bool) -> None:
    program.remarks = list(remarks)
    program.warnings = list(warned)
    program.cache_key = key
    program.cache_hit = hit
    for w in warned:
        _warnings.warn(w, CompileWarning, stacklevel=3)


def jit_module(module: ModuleOp, cache: bool | str | os.PathLike[str] = True) -> Any:
    """llvm-dialect module -> an object with `address(name)` (backend/jit.py)."""
    if any(_checks.is_checked(getattr(op, "sym_name", None) and op.sym_name.data or "") for op in module.ops):
        _checks.install()
    return jit.compile_module(module, cache=cache)
