"""The one entry point: compile an ONNX model or graph-level `.mlir` into a Python callable.

    import numpy as np
    from minimlir.frontend import compile

    m = compile("model.onnx")                  # or a ModelProto, a .mlir path, or .mlir text
    (y,) = m(x)                                # by position ...
    (y,) = m(x=x)                              # ... or by input name; always a list of outputs
    m.input_names, m.output_names              # ["x"], ["y"]
    m.inputs[0]                                # TensorSpec(name='x', dtype=float32, shape=(None, 3, 16, 16), ...)
    m.remarks                                  # pass remarks (mem-plan's peak bytes, ...), not printed

Outputs are always a list, in the order of the model's outputs (ONNX Runtime's convention: a model
with one output still returns `[y]`); `m.run(...)` is the same call. `out=[buf, ...]` lets native code
write into caller arrays (zero-copy; dims must match the computed ones).

What happens:
  1. load: ONNX → `import_onnx` (weights stay outside the IR, as params bound by pointer); `.mlir` →
     parsed with file:line:col locations, params from `params=` (a dict or a params file) or the
     module's `graph.params_file` attribute (relative to the .mlir file).
  2. lower: the named pipeline `compile` (fusion, schedule, parallel loops; `graph-to-llvm` where that is
     not registered) or `pipeline=`, run in memory on one module (no
     re-parse between passes), each pass verified. Remarks and warnings go to `m.remarks`, not to
     stderr. `dump_ir="dir"` writes `00-input.mlir`, `01-<pass>.mlir`, ... (the IR after each pass).
     A module already in the llvm dialect is not lowered again.
  3. JIT: `minimlir.backend.runtime` (llvmlite, disk cache unless `cache=False`). `num_threads` sets the
     thread count of parallel loops (minimlir.backend.parallel; process-wide, like OMP_NUM_THREADS;
     default MINIMLIR_NUM_THREADS, else one per core).

Compile cache (`cache=True`: $MINIMLIR_CACHE_DIR or ~/.cache/minimlir; `cache=path`: that folder;
`cache=False`: none). The whole compile is keyed by the model's bytes (an ONNX file's content hash,
plus the path, size and mtime of every external data file it names; a ModelProto's serialization;
`.mlir` text), the pipeline, `entry`, the minimlir/xDSL versions, a fingerprint of minimlir's
sources (frontend included) and the host CPU (`api_cache_key`). An entry is the runtime's
`<key>.mmo` (object code + JSON meta: runtime metadata, entry, input/output specs, remarks, param
types) and, for ONNX models, `<key>.params`: the weights as the importer produced them (a
`minimlir.compiler.params` file, memory-mapped on a hit; written before the `.mmo`, so a visible
entry has its weights). A hit runs no import, no pass and no LLVM. `.mlir` models keep reading
their weights from `params=` or their `graph.params_file` (weights are not part of the code).
`dump_ir=`/`print_ir=` skip the lookup (they want the IR), but still store.

Every input is checked before native code runs: count, names, dtype, rank, static dims, and that a
named dynamic dim ("batch") has one value across inputs. Errors are `InputError` (a ValueError)
naming the input; compile errors are `CompileError` with `file:line:col: error: ...` text; ONNX
models the importer cannot handle raise `UnsupportedModelError` listing every (op, reason).
"""

from __future__ import annotations

import builtins
import inspect
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from io import StringIO
from pathlib import Path
from typing import Any

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
    TensorType,
)
from xdsl.ir import Attribute, Operation
from xdsl.printer import Printer

from minimlir.compiler import driver as _driver
from minimlir.compiler.cache_key import cache_key
from minimlir.compiler.context import make_context
from minimlir.passes.graph.lift_params import PARAMS_OF
from minimlir.compiler.discovery import pass_registry  # noqa: F401 (re-exported)
from minimlir.compiler.driver import LowerResult
from minimlir.compiler.errors import CompileError, InputError
from minimlir.compiler.parsing import _first_line, parse_module
from minimlir.compiler.pipelines import checked_pipeline, checks_from_env
from minimlir.frontend._onnx_base import (  # re-exported: the errors users catch (onnx_import's, no onnx needed)
    OnnxImportError,
    UnsupportedModelError,
    numpy_dtype_of,
)
from minimlir.backend import cache as _cache
from minimlir.backend import parallel
from minimlir.backend import runtime
from minimlir.compiler.metadata import collect_metadata
from minimlir.compiler.params import ParamsFormatError
from minimlir.compiler.params import load_params
from minimlir.compiler.params import save_params
from minimlir.compiler.pipelines import PIPELINES
from minimlir.dialects import graph
from minimlir.dialects import llvm_ext as _llvm_ext
from minimlir.frontend import _split_lower as sl
from minimlir.passes._diagnostics import format_location


__all__ = [
    "CompileError",
    "CompiledModel",
    "InputError",
    "OnnxImportError",
    "TensorSpec",
    "UnsupportedModelError",
    "compile",
    "DEFAULT_PIPELINE",
]

DEFAULT_PIPELINE = "graph-to-llvm"
"""The plain lowering (no fusion, no schedule): used when the optimizing `compile` pipeline is absent."""


def default_pipeline() -> str:
    """The named pipeline `compile` runs: `compile` (fuse, legalize, fuse kernels, schedule, bufferize, plan,
    llvm with parallel loops) when it is registered, else `graph-to-llvm`."""
    return "compile" if "compile" in PIPELINES else DEFAULT_PIPELINE


@dataclass(frozen=True)
class TensorSpec:
    """One input or output of the compiled entry point. `shape` has None for a dynamic dim."""

    name: str
    dtype: np.dtype
    shape: tuple[int | None, ...]
    dim_names: tuple[str, ...] = ()

    def __str__(self) -> str:
        dims = ["?" if d is None else str(d) for d in self.shape]
        for i, n in enumerate(self.dim_names):
            if n and self.shape[i] is None:
                dims[i] = n
        return f"{self.name}: {self.dtype}[{', '.join(dims)}]"


# --------------------------------------------------------------------------------------------
# Context, parsing and loading


def parse_mlir(text: str, name: str = "<string>", ctx: Context | None = None) -> ModuleOp:
    """Parse and verify `.mlir` text; errors raise CompileError(`name:line:col: error: msg`)."""
    return parse_module(text, name, ctx)


def _looks_like_mlir_text(s: str) -> bool:
    return "\n" in s or "{" in s or s.lstrip().startswith(("func.", "builtin.", "module", "//", '"'))


@dataclass
class Loaded:
    """A model as a graph-level (or lower) module, with its weights and where it came from."""

    module: ModuleOp
    params: dict[str, np.ndarray]
    name: str  # file name for diagnostics
    kind: str  # "onnx" or "mlir"
    text: str | None = None  # the .mlir source, for error snippets


def load(model: Any, *, params: Mapping[str, np.ndarray] | str | os.PathLike[str] | None = None,
         ctx: Context | None = None) -> Loaded:
    """Load `model` (ONNX path / ModelProto, `.mlir` path / text) as a module plus params."""
    if _is_model_proto(model):
        module, weights = import_onnx(model)
        return Loaded(module, dict(weights), (model.graph.name or "<model>") + ".onnx", "onnx")
    if isinstance(model, ModuleOp):
        return Loaded(model, _load_params(params, None, model), "<module>", "mlir")
    if isinstance(model, bytes):
        import onnx

        return load(onnx.load_from_string(model), params=params, ctx=ctx)
    if isinstance(model, str) and _looks_like_mlir_text(model):
        module = parse_mlir(model, "<string>", ctx)
        return Loaded(module, _load_params(params, None, module), "<string>", "mlir", model)
    if not isinstance(model, (str, os.PathLike)):
        raise TypeError(
            f"compile: expected an ONNX path or ModelProto, or .mlir text or path; got {type(model).__name__}"
        )
    path = Path(model)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file")
    if path.suffix == ".onnx" or (path.suffix != ".mlir" and _is_protobuf(path)):
        module, weights = import_onnx(path)
        if params is not None:
            weights = {**weights, **_load_params(params, path.parent, None)}
        return Loaded(module, dict(weights), str(path), "onnx")
    try:
        text = path.read_text()
    except UnicodeDecodeError as e:
        raise CompileError(f"{path}: error: not a text file (invalid UTF-8 at byte {e.start})") from None
    module = parse_mlir(text, str(path), ctx)
    return Loaded(module, _load_params(params, path.parent, module), str(path), "mlir", text)


def import_onnx(model: Any, **kwargs: Any):
    """minimlir.frontend.onnx_import.import_onnx, imported (with onnx) when a model is ONNX."""
    from minimlir.frontend.onnx_import import import_onnx

    return import_onnx(model, **kwargs)


def _is_model_proto(model: Any) -> bool:
    onnx = sys.modules.get("onnx")  # not imported yet: then `model` cannot be one of its protos
    return onnx is not None and isinstance(model, onnx.ModelProto)


def _is_protobuf(path: Path) -> bool:
    with open(path, "rb") as f:
        head = f.read(64)
    return b"\x00" in head or not head.isascii()


def _load_params(params, base: Path | None, module: ModuleOp | None) -> dict[str, np.ndarray]:
    if isinstance(params, Mapping):
        return {k: np.asarray(v) for k, v in params.items()}
    if params is not None:
        return dict(load_params(params))
    attr = module.attributes.get("graph.params_file") if module is not None else None
    if isinstance(attr, StringAttr):
        file = Path(attr.data)
        if not file.is_absolute():
            file = (base or Path.cwd()) / file
        if not file.is_file():
            raise FileNotFoundError(
                f"params file '{file}' (named by the module's graph.params_file) does not exist; pass params="
            )
        return dict(load_params(file))
    return {}


# --------------------------------------------------------------------------------------------
# The entry point's signature


def graph_functions(module: ModuleOp) -> list[func.FuncOp]:
    """Public, non-kernel functions: the entry point candidates."""
    return [
        op
        for op in module.body.block.ops
        if isinstance(op, func.FuncOp)
        and (op.sym_visibility is None or op.sym_visibility.data == "public")
        and "loop.kernel" not in op.attributes
        and PARAMS_OF not in op.attributes  # graph-lift-params': the runtime calls it
        and not op.is_declaration
    ]


def llvm_functions(module: ModuleOp) -> list[str]:
    from xdsl.dialects import llvm

    return [
        op.sym_name.data
        for op in module.body.block.ops
        if isinstance(op, llvm.FuncOp) and op.body.blocks and _linkage(op) != "internal"
    ]


def _linkage(op) -> str:
    linkage = getattr(op, "linkage", None)
    return getattr(linkage, "linkage", StringAttr("external")).data if linkage is not None else "external"


def graph_level(module: ModuleOp) -> bool:
    """True when some function still has tensor arguments or results (not bufferized yet)."""
    return any(
        isinstance(t, TensorType)
        for f in graph_functions(module)
        for t in (*f.function_type.inputs.data, *f.function_type.outputs.data)
    )


def is_llvm_level(module: ModuleOp) -> bool:
    """True when nothing above the llvm dialect is left (the pipeline has nothing to do)."""
    return all(op.name.startswith("llvm.") or op is module for op in module.walk())


def pick_entry(module: ModuleOp, entry: str | None, *, kind: str = "mlir") -> str:
    funcs = graph_functions(module)
    names = [f.sym_name.data for f in funcs] if funcs else llvm_functions(module)
    if entry is not None:
        if entry not in names:
            listed = ", ".join(f"@{n}" for n in names) or "none"
            raise CompileError(f"error: no entry point @{entry} in the module (entry points: {listed})")
        return entry
    if kind == "onnx" and "main" in names:
        return "main"
    if len(names) == 1:
        return names[0]
    if not names:
        raise CompileError("error: the module has no public function to run")
    raise CompileError(
        "error: the module has several public functions ("
        + ", ".join(f"@{n}" for n in names)
        + "): choose one with entry="
    )


def _arg_attr(attrs: ArrayAttr | None, i: int, key: str) -> Attribute | None:
    if attrs is None or i >= len(attrs.data):
        return None
    d = attrs.data[i]
    return d.data.get(key) if isinstance(d, DictionaryAttr) else None


def signature(fn: func.FuncOp) -> tuple[list[TensorSpec], list[TensorSpec]]:
    """Inputs and outputs of a graph-level (tensor) or mem-level (memref) function."""

    def spec(t: Attribute, name: str, dim_attr: Attribute | None) -> TensorSpec:
        if not isinstance(t, TensorType | MemRefType):
            raise CompileError(f"error: @{fn.sym_name.data}: argument '{name}' has type {t}, not a tensor")
        shape = tuple(None if d < 0 else d for d in t.get_shape())
        dims = tuple(s.data for s in dim_attr.data) if isinstance(dim_attr, ArrayAttr) else ()
        return TensorSpec(name, numpy_dtype_of(t.get_element_type()), shape, dims)  # type: ignore[arg-type]

    inputs: list[TensorSpec] = []
    args = fn.body.block.args if fn.body.blocks else ()
    for i, t in enumerate(fn.function_type.inputs.data):
        if _arg_attr(fn.arg_attrs, i, "mem.param") is not None:
            continue  # a bound weight, not a user input
        n = _arg_attr(fn.arg_attrs, i, "graph.name")
        name = n.data if isinstance(n, StringAttr) else (args[i].name_hint if i < len(args) else None) or f"arg{i}"
        inputs.append(spec(t, name, _arg_attr(fn.arg_attrs, i, "graph.dim_names")))
    outputs: list[TensorSpec] = []
    for i, t in enumerate(fn.function_type.outputs.data):
        n = _arg_attr(fn.res_attrs, i, "graph.name")
        outputs.append(spec(t, n.data if isinstance(n, StringAttr) else f"output{i}", None))
    return inputs, outputs


def _param_types(module: ModuleOp) -> dict[str, tuple[np.dtype, tuple[int, ...], Operation]]:
    found: dict[str, tuple[np.dtype, tuple[int, ...], Operation]] = {}
    for op in module.walk():
        if isinstance(op, graph.ParamOp):
            t = op.result.type
            found[op.param_name.data] = (numpy_dtype_of(t.get_element_type()), tuple(t.get_shape()), op)
    return found


def check_params(module: ModuleOp, params: Mapping[str, np.ndarray], name: str) -> None:
    """Every graph.param has a value of its type (before compiling, so the error names the weight)."""
    for pname, (dtype, shape, op) in _param_types(module).items():
        where = format_location(op.location)
        where = name if where == "loc(unknown)" else where
        if pname not in params:
            raise CompileError(f"{where}: error: parameter '{pname}' has no value (pass params= or a params file)")
        value = params[pname]
        if value.dtype != dtype or tuple(value.shape) != shape:
            raise CompileError(
                f"{where}: error: parameter '{pname}' is {value.dtype}{list(value.shape)}, "
                f"the IR expects {dtype}{list(shape)}"
            )


# --------------------------------------------------------------------------------------------
# Lowering


def lower(
    module: ModuleOp,
    pipeline: str = DEFAULT_PIPELINE,
    *,
    ctx: Context | None = None,
    name: str = "<module>",
    on_ir: Callable[[str, str], None] | None = None,
    source_text: str | None = None,
    before: Mapping[str, Callable[[ModuleOp], None]] | None = None,
    metadata_entry: Any = _driver._UNSET,
    verify: bool = True,
) -> LowerResult:
    """Run `pipeline` on `module` in place (minimlir.compiler.driver.lower). `before[pass_name](module)`
    is called once, right before the first top-level run of that pass (driver.run_once_before)."""
    hooks = [_driver.run_once_before(p, fn, module) for p, fn in (before or {}).items()]
    return _driver.lower(module, pipeline, ctx=ctx, name=name, on_ir=on_ir, source_text=source_text,
                         before_pass=hooks, metadata_entry=metadata_entry, verify=verify)


def ir_text(module: Operation) -> str:
    out = StringIO()
    Printer(stream=out).print_op(module)
    return out.getvalue() + "\n"


# --------------------------------------------------------------------------------------------
# JIT (minimlir.backend.runtime)


def _call_with_supported(fn: Callable, *args, **kwargs):
    """Call `fn`, dropping keyword arguments it does not take (the runtime grows options over time)."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return fn(*args, **kwargs)
    if any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values()):
        return fn(*args, **kwargs)
    return fn(*args, **{k: v for k, v in kwargs.items() if k in sig.parameters and v is not None})


def jit(module: ModuleOp, metadata: Mapping[str, Any], *, params: Mapping[str, np.ndarray],
        num_threads: int | None, cache: bool):
    """The runtime's CompiledProgram for an llvm-dialect module and its mem-level metadata."""
    _llvm_ext.install_llvmlite_hooks()
    engine = runtime.jit_module(module, cache=cache)
    program = _call_with_supported(runtime.CompiledProgram, engine, metadata, params=dict(params),
                                   num_threads=num_threads)
    if num_threads is not None:
        parallel.set_num_threads(num_threads)  # process-wide, as OMP_NUM_THREADS
    return program


def _entry_callable(program, entry: str) -> Callable:
    for getter in (lambda: program[entry], lambda: getattr(program, entry)):
        try:
            fn = getter()
        except (KeyError, TypeError, AttributeError):
            continue
        if callable(fn):
            return fn
    raise CompileError(f"error: the compiled program has no entry point @{entry}")


# --------------------------------------------------------------------------------------------
# The compiled model


class CompiledModel:
    """A compiled entry point: `m(*arrays, **named) -> list[np.ndarray]` (see the module docstring)."""

    def __init__(self, fn: Callable, entry: str, inputs: list[TensorSpec] | None, outputs: list[TensorSpec] | None,
                 *, remarks: list[str], timings: dict[str, float], program: Any = None, source: str = ""):
        self._fn = fn
        self.entry = entry
        self.inputs = inputs  # None when compiled from llvm-level IR (the runtime checks the arguments)
        self.outputs = outputs
        self.remarks = remarks
        self.timings = timings  # "import", "lower", "jit", "total" and per pass, in seconds
        self.program = program
        self.source = source
        self._plain_call = self._plain_call_of(fn, inputs)

    @staticmethod
    def _plain_call_of(fn: Callable, inputs: list[TensorSpec] | None) -> Callable | None:
        """The runtime's unchecked-conversion call (`call_plain`) when its own checks are exactly
        `_check`'s: the same inputs in order with the same dtype, static dims and dim names (so a
        mismatched named dim is refused there too); None otherwise (every call goes through bind)."""
        call = getattr(fn, "call_plain", None)
        meta = getattr(fn, "meta", None)
        if call is None or inputs is None or not isinstance(meta, Mapping):
            return None
        args = [a for a in meta.get("args", ()) if a.get("param") is None]
        if len(args) != len(inputs):
            return None
        for spec, a in zip(inputs, args):
            names = tuple(a.get("dim_names") or ())
            if (a.get("name") != spec.name or np.dtype(a.get("dtype")) != spec.dtype
                    or tuple(a.get("shape") or ()) != tuple(spec.shape)
                    or names + ("",) * (len(spec.shape) - len(names))
                    != tuple(spec.dim_names) + ("",) * (len(spec.shape) - len(spec.dim_names))):
                return None
        return call

    @property
    def input_names(self) -> list[str]:
        return [s.name for s in self.inputs] if self.inputs is not None else []

    @property
    def output_names(self) -> list[str]:
        return [s.name for s in self.outputs] if self.outputs is not None else []

    def __repr__(self) -> str:
        ins = ", ".join(map(str, self.inputs or []))
        outs = ", ".join(map(str, self.outputs or []))
        return f"<CompiledModel @{self.entry}({ins}) -> ({outs})>"

    def bind(self, args: Sequence[Any], kwargs: Mapping[str, Any]) -> list[np.ndarray]:
        """Arguments in signature order, converted and checked (raises InputError)."""
        if self.inputs is None:
            if kwargs:
                raise InputError(f"@{self.entry}: inputs by name need graph-level IR; pass them by position")
            return [np.asarray(a) for a in args]
        specs = self.inputs
        names = [s.name for s in specs]
        if len(args) > len(specs):
            raise InputError(
                f"@{self.entry} takes {len(specs)} input(s) ({', '.join(names)}), got {len(args)} positional"
            )
        bound: dict[str, Any] = dict(zip(names, args))
        for k, v in kwargs.items():
            if k not in names:
                from difflib import get_close_matches

                close = get_close_matches(k, names, 1)
                hint = f"; did you mean '{close[0]}'?" if close else f" (inputs: {', '.join(names)})"
                raise InputError(f"@{self.entry} has no input named '{k}'{hint}")
            if k in bound:
                raise InputError(f"input '{k}' given both by position and by name")
            bound[k] = v
        missing = [n for n in names if n not in bound]
        if missing:
            raise InputError(f"missing input(s): {', '.join(missing)} (@{self.entry} takes {', '.join(names)})")

        arrays: list[np.ndarray] = []
        named_dims: dict[str, tuple[int, str]] = {}
        for spec in specs:
            arrays.append(self._check(spec, bound[spec.name], named_dims))
        return arrays

    def _check(self, spec: TensorSpec, value: Any, named_dims: dict[str, tuple[int, str]]) -> np.ndarray:
        if isinstance(value, np.ndarray):
            array = value
        elif hasattr(value, "__dlpack__") and not isinstance(value, (int, float, bool, list, tuple)):
            try:
                array = np.from_dlpack(value)
            except Exception as e:
                raise InputError(f"input '{spec.name}': cannot read it as an array ({_first_line(e)})") from None
        else:  # Python scalars and lists take the declared dtype
            try:
                array = np.asarray(value, dtype=spec.dtype)
            except (TypeError, ValueError) as e:
                raise InputError(f"input '{spec.name}': cannot convert to {spec.dtype} ({_first_line(e)})") from None
        if array.dtype != spec.dtype:
            raise InputError(f"input '{spec.name}': expected dtype {spec.dtype}, got {array.dtype}")
        if array.ndim != len(spec.shape):
            raise InputError(
                f"input '{spec.name}': expected rank {len(spec.shape)} {_shape_text(spec)}, "
                f"got rank {array.ndim} (shape {tuple(array.shape)})"
            )
        for i, (want, got) in enumerate(zip(spec.shape, array.shape)):
            if want is not None and want != got:
                raise InputError(
                    f"input '{spec.name}': dim {i} must be {want} {_shape_text(spec)}, got shape {tuple(array.shape)}"
                )
            dim_name = spec.dim_names[i] if i < len(spec.dim_names) else ""
            if want is None and dim_name:
                seen = named_dims.setdefault(dim_name, (got, spec.name))
                if seen[0] != got:
                    raise InputError(
                        f"input '{spec.name}': dim {i} ('{dim_name}') is {got}, "
                        f"but '{seen[1]}' has {dim_name}={seen[0]}"
                    )
        if not array.flags.c_contiguous:
            array = np.ascontiguousarray(array)
        return array

    def __call__(self, *args: Any, out: Sequence[np.ndarray] | None = None, **kwargs: Any) -> list[np.ndarray]:
        if self._plain_call is not None and not kwargs:
            # ndarrays exactly as declared go straight in (the runtime checks them as bind would);
            # anything else (conversions, copies, errors) takes the checking path below
            from minimlir.backend.runtime import DimCheckError
            from minimlir.runtime._native import NOT_PLAIN

            try:
                result = self._plain_call(args, out)
            except DimCheckError as e:
                raise InputError(str(e)) from None
            if result is not NOT_PLAIN:
                return list(result) if isinstance(result, (list, tuple)) else [result]
        arrays = self.bind(args, kwargs)
        if out is not None:
            out = list(out)
            if self.outputs is not None and len(out) != len(self.outputs):
                raise InputError(f"out=: {len(self.outputs)} output array(s) expected, got {len(out)}")
        from minimlir.backend.runtime import DimCheckError

        try:
            result = self._fn(*arrays, out=out) if out is not None else self._fn(*arrays)
        except DimCheckError as e:  # the inputs' dims break the model's symbolic constraints
            raise InputError(str(e)) from None
        if isinstance(result, (list, tuple)):
            return list(result)
        return [result]

    run = __call__

    def export(self, path: str | os.PathLike[str], *, weights: str = "auto",
               emit_header: bool | str | os.PathLike[str] = False):
        """Write this model as a deployable shared object (backend/artifact.py): `weights` "embed"
        (in .rodata), "separate" (`<stem>.params` beside it) or "auto"; run it with
        `minimlir.runtime.load(path)`, no compiler needed. Returns an ArtifactInfo."""
        from minimlir.backend.artifact import export_compiled

        return export_compiled(self, path, weights=weights, emit_header=emit_header)


def _shape_text(spec: TensorSpec) -> str:
    return "[" + ", ".join("?" if d is None else str(d) for d in spec.shape) + "]"


# --------------------------------------------------------------------------------------------


def compile(  # noqa: A001 (the one obvious name)
    model: Any,
    *,
    entry: str | None = None,
    num_threads: int | None = None,
    dump_ir: str | os.PathLike[str] | None = None,
    cache: bool | str | os.PathLike[str] = True,
    pipeline: str | None = None,
    params: Mapping[str, np.ndarray] | str | os.PathLike[str] | None = None,
    print_ir: Callable[[str, str], None] | None = None,
    checks: bool | None = None,
    tuning_db: str | os.PathLike[str] | None = None,
    profile: bool = False,
) -> CompiledModel:
    """Compile `model` (ONNX path / ModelProto / bytes, `.mlir` path or text) into a callable.

    `entry`: the function to run (default: ONNX `main`, or the module's only public function).
    `num_threads`: threads for parallel loops. `dump_ir`: a folder receiving the IR after every pass.
    `cache`: the disk compile cache (True, a folder, or False; see the module docstring).
    `pipeline`: a pass pipeline replacing the default (`compile`).
    `params`: weights for `graph.param` (dict, or params file path) when compiling `.mlir`.
    `print_ir(stage, text)`: called with the input IR ("input") and the IR after each pass.
    `checks`: checked mode (default: $MINIMLIR_CHECKS): every load/store is bounds-checked and every
    fresh buffer poisoned; a fault raises `CheckError` (passes/to_llvm/_checks.py, backend/checks.py).
    `tuning_db`: a mini-tune record database; each kernel with a record for this CPU gets its best
    schedule (minimlir.tuning.apply), one summary line goes to stderr.
    `profile`: time every kernel (frontend/profile.py): the model gains `profile()` (per-kernel rows).
    """
    if profile:
        from minimlir.frontend.profile import compile_profiled

        return compile_profiled(model, entry=entry, num_threads=num_threads, dump_ir=dump_ir, cache=cache,
                                pipeline=pipeline, params=params, print_ir=print_ir, checks=checks,
                                tuning_db=tuning_db)
    t0 = time.perf_counter()
    if checks if checks is not None else checks_from_env():  # its own pipeline text: own cache key
        pipeline = checked_pipeline(pipeline if pipeline is not None else default_pipeline())
    want_ir = dump_ir is not None or print_ir is not None
    pipeline_text = pipeline if pipeline is not None else default_pipeline()
    hook = None
    if tuning_db is not None:
        from minimlir.tuning.apply import TuningHook

        hook = TuningHook(tuning_db)
        pipeline_text += hook.cache_tag()  # the records are part of what is compiled
    slot = _cache_slot(model, cache, pipeline_text, entry)
    if slot is not None and not want_ir:
        hit = _cache_lookup(slot, model, params, num_threads)
        if hit is not None:
            hit.timings["total"] = time.perf_counter() - t0
            if hook is not None:
                hook.report(hit.remarks)
            return hit
    ctx = make_context()
    loaded = load(model, params=params, ctx=ctx)
    t_load = time.perf_counter()
    module = loaded.module
    entry = pick_entry(module, entry, kind=loaded.kind)

    inputs = outputs = None
    entry_fn = next((f for f in graph_functions(module) if f.sym_name.data == entry), None)
    if entry_fn is not None:
        inputs, outputs = signature(entry_fn)
    check_params(module, loaded.params, loaded.name)
    param_types = {n: [d.name, list(s)] for n, (d, s, _) in _param_types(module).items()}
    attr = module.attributes.get("graph.params_file")
    params_file = attr.data if isinstance(attr, StringAttr) else None

    dump_dir = Path(dump_ir) if dump_ir is not None else None
    counter = [0]

    def on_ir(stage: str, text: str) -> None:
        if dump_dir is not None:
            (dump_dir / f"{counter[0]:02d}-{stage}.mlir").write_text(text)
            counter[0] += 1
        if print_ir is not None:
            print_ir(stage, text)

    if dump_dir is not None:
        dump_dir.mkdir(parents=True, exist_ok=True)
    if want_ir:
        on_ir("input", ir_text(module))

    found: dict[str, Any] = {}
    remarks: list[str] = []
    timings: dict[str, float] = {"import": t_load - t0}
    split, rest = None, pipeline if pipeline is not None else default_pipeline()
    if pipeline is None and not want_ir and graph_level(module):
        split, rest = _lower_in_parallel(module, entry, loaded, ctx, remarks, timings, hook)
    if split is not None:
        found["metadata"] = split.metadata
        remarks = remarks + split.remarks
        timings.update(split.pass_seconds)
    elif pipeline is not None or not is_llvm_level(module):
        if not graph_level(module):
            found["metadata"] = collect_metadata(module, entry)  # mem-level input: already the runtime's view
        lowered = lower(
            module, rest, ctx=ctx, name=loaded.name,
            on_ir=on_ir if want_ir else None, source_text=loaded.text, metadata_entry=entry,
            before=hook.hooks() if hook else None,
        )
        if lowered.metadata is not None:
            found["metadata"] = lowered.metadata
        remarks = remarks + lowered.remarks
        for k, v in lowered.pass_seconds.items():
            timings[k] = timings.get(k, 0.0) + v
    t_lower = time.perf_counter()
    timings["lower"] = t_lower - t_load
    if split is None and not is_llvm_level(module):
        raise CompileError(
            f"error: the pipeline left the module above the llvm dialect (e.g. '{_first_above_llvm(module)}');"
            " a custom pipeline= must lower to llvm"
        )
    if "metadata" not in found:
        raise CompileError(
            "error: cannot run a module given in the llvm dialect: the argument types are gone;"
            " start from graph- or mem-level IR"
        )
    if hook is not None and hook.summary is not None:
        remarks = remarks + [hook.summary.line()]  # stored with the cache entry, printed on a hit
    program = _compile_and_store(slot, module if split is None else (split.llvm_ir, split.signatures),
                                 found["metadata"], loaded, entry, inputs, outputs, remarks,
                                 num_threads, param_types, params_file)
    if hook is not None:
        hook.report()
    fn = _entry_callable(program, entry)
    t_end = time.perf_counter()
    timings.update(getattr(program.engine, "timings", {}))  # llvm-translate, llvm-compile, llvm-load
    timings["jit"] = t_end - t_lower
    timings["total"] = t_end - t0
    return CompiledModel(fn, entry, inputs, outputs, remarks=remarks, timings=timings, program=program,
                         source=loaded.name)


def _lower_in_parallel(module: ModuleOp, entry: str, loaded: Loaded, ctx: Context, remarks: list[str],
                       timings: dict[str, float], after_prefix: Callable[[ModuleOp], None] | None = None):
    """The default pipeline with its per-function part on several cores (frontend/_split_lower.py):
    (the SplitResult, None) or, when `module` is to be lowered in this process after all, (None,
    the pipeline still to run on it: the whole default one, or its per-function part when the
    graph-level prefix has run already)."""
    if sl.jobs() < 2 or not sl.applies(default_pipeline()):
        return None, default_pipeline()
    before_winograd = getattr(after_prefix, "before_winograd", None)  # a TuningHook's algorithm choices
    pre = lower(module, sl.PREFIX, ctx=ctx, name=loaded.name, source_text=loaded.text,
                before={"graph-winograd": before_winograd} if before_winograd else None)
    remarks.extend(pre.remarks)
    timings.update(pre.pass_seconds)
    if after_prefix is not None:
        after_prefix(module)
    try:
        return sl.lower_split(module, entry=entry, name=loaded.name, source_text=loaded.text), None
    except sl.SplitUnavailable:
        return None, sl.SUFFIX


# --------------------------------------------------------------------------------------------
# The compile cache (see the module docstring)

API_CACHE_VERSION = 1


@dataclass
class _Slot:
    directory: Path
    key: str


def _onnx_file_identity(path: Path) -> list[str]:
    """The content hash of an ONNX file and the (path, size, mtime) of its external data files."""
    import hashlib

    data = path.read_bytes()
    parts = ["onnx-file", hashlib.sha256(data).hexdigest()]
    if b"location" in data:  # the key of an external data entry: only then parse the proto
        import onnx
        from onnx.external_data_helper import _get_all_tensors

        try:
            proto = onnx.load_model_from_string(data)  # reads no external data
            tensors = list(_get_all_tensors(proto))
        except Exception:
            tensors = []
        for t in tensors:
            if t.data_location != onnx.TensorProto.EXTERNAL:
                continue
            loc = next((e.value for e in t.external_data if e.key == "location"), "")
            f = path.parent / loc
            try:
                st = f.stat()
                parts.append(f"{f.resolve()}:{st.st_size}:{st.st_mtime_ns}")
            except OSError:
                parts.append(f"{f}:missing")
    return parts


def _model_identity(model: Any) -> list[str] | None:
    """What names the model's content, or None when it cannot be keyed cheaply (then no cache)."""
    import hashlib

    if _is_model_proto(model):
        try:
            data = model.SerializeToString(deterministic=True)
        except Exception:  # e.g. a proto over protobuf's 2 GiB limit
            return None
        return ["onnx-proto", hashlib.sha256(data).hexdigest()]
    if isinstance(model, bytes):
        return ["onnx-bytes", hashlib.sha256(model).hexdigest()]
    if isinstance(model, ModuleOp):
        return ["mlir-module", ir_text(model)]
    if isinstance(model, str) and _looks_like_mlir_text(model):
        return ["mlir-text", model]
    if isinstance(model, (str, os.PathLike)):
        path = Path(model)
        if not path.is_file():
            return None
        if path.suffix == ".onnx" or (path.suffix != ".mlir" and _is_protobuf(path)):
            return _onnx_file_identity(path)
        try:
            return ["mlir-file", path.read_text()]
        except (OSError, UnicodeDecodeError):
            return None
    return None


def api_cache_key(identity: Sequence[str], pipeline: str, entry: str | None, opt_level: int = 3) -> str:
    """The key of a `compile` cache entry (minimlir.compiler.cache_key; see the module docstring)."""
    return cache_key("minimlir-api", (str(API_CACHE_VERSION), *identity, pipeline, entry or ""),
                     host=_cache.host_parts(), opt_level=opt_level)


def _cache_slot(model: Any, cache: Any, pipeline: str, entry: str | None) -> _Slot | None:
    if cache is False or cache is None:
        return None

    identity = _model_identity(model)
    if identity is None:
        return None
    directory = _cache.cache_dir(None if cache is True else Path(cache))
    return _Slot(directory, api_cache_key(identity, pipeline, entry))


def _params_path(slot: _Slot) -> Path:
    return slot.directory / f"{slot.key}.params"


def _spec_json(specs: list[TensorSpec] | None) -> list[dict] | None:
    if specs is None:
        return None
    return [{"name": s.name, "dtype": s.dtype.name, "shape": list(s.shape), "dim_names": list(s.dim_names)}
            for s in specs]


def _spec_from_json(items: list[dict] | None) -> list[TensorSpec] | None:
    if items is None:
        return None
    return [TensorSpec(d["name"], np.dtype(d["dtype"]), tuple(d["shape"]), tuple(d["dim_names"])) for d in items]


def _hit_params(slot: _Slot, meta: Mapping[str, Any], model: Any, params: Any) -> dict[str, np.ndarray] | None:
    """The weights of a cache hit, or None when they cannot be had (then recompile)."""
    kind = meta.get("params")
    if kind == "stored":  # ONNX: the importer's weights, stored beside the entry
        try:
            weights = dict(load_params(_params_path(slot)))
        except (OSError, ParamsFormatError, ValueError):
            return None
        if params is not None and isinstance(model, (str, os.PathLike)):  # as load(): a path's overrides
            weights.update(_load_params(params, Path(model).parent, None))
        return weights
    base = Path(model).parent if isinstance(model, (str, os.PathLike)) and not (
        isinstance(model, str) and _looks_like_mlir_text(model)) else None
    if params is not None:
        return _load_params(params, base, None)
    file = meta.get("params_file")
    if file:
        file = Path(file)
        if not file.is_absolute():
            file = (base or Path.cwd()) / file
        if not file.is_file():
            return None  # the miss path reports the missing file
        return dict(load_params(file))
    return {}


def _cache_lookup(slot: _Slot, model: Any, params: Any, num_threads: int | None) -> CompiledModel | None:
    """The CompiledModel of a cache hit (no import, no pass, no LLVM), or None."""
    t0 = time.perf_counter()
    stored = _cache.load_entry(slot.directory, slot.key)
    meta = stored.meta if stored is not None else None
    if not isinstance(meta, dict) or meta.get("api") != API_CACHE_VERSION:
        runtime.compile_stats().misses += 1
        return None
    weights = _hit_params(slot, meta, model, params)
    if weights is None:
        runtime.compile_stats().misses += 1
        return None
    for pname, (dtype, shape) in meta.get("param_types", {}).items():
        value = weights.get(pname)
        if value is None or value.dtype != np.dtype(dtype) or list(value.shape) != shape:
            runtime.compile_stats().misses += 1
            return None  # recompiling reports the located error
    engine = runtime._load_hit(stored)
    if engine is None:
        runtime.compile_stats().misses += 1
        return None
    runtime.compile_stats().hits += 1
    program = _call_with_supported(runtime.CompiledProgram, engine, meta["metadata"], params=weights,
                                   num_threads=num_threads)
    program.cache_hit = True
    program.cache_key = slot.key
    if num_threads is not None:
        parallel.set_num_threads(num_threads)
    entry = meta["entry"]
    fn = _entry_callable(program, entry)
    timings = {"cache": time.perf_counter() - t0}
    return CompiledModel(fn, entry, _spec_from_json(meta.get("inputs")), _spec_from_json(meta.get("outputs")),
                         remarks=list(meta.get("remarks", [])), timings=timings, program=program,
                         source=meta.get("source", ""))


def _compile_and_store(slot: _Slot | None, module: ModuleOp, metadata: Mapping[str, Any], loaded: Loaded, entry: str,
                       inputs: list[TensorSpec] | None, outputs: list[TensorSpec] | None, remarks: list[str],
                       num_threads: int | None, param_types: dict[str, list], params_file: str | None):
    """LLVM-compile `module` (in parallel parts when large: runtime._codegen), store the entry (weights
    first for ONNX) unless `slot` is None, return the program."""
    _llvm_ext.install_llvmlite_hooks()
    engine, obj, externals = runtime._codegen(module, 3)
    if slot is None:
        program = _call_with_supported(runtime.CompiledProgram, engine, metadata, params=dict(loaded.params),
                                       num_threads=num_threads)
        if num_threads is not None:
            parallel.set_num_threads(num_threads)
        return program
    meta: dict[str, Any] = {
        "api": API_CACHE_VERSION, "metadata": metadata, "externals": externals, "opt_level": 3,
        "entry": entry, "inputs": _spec_json(inputs), "outputs": _spec_json(outputs), "remarks": remarks,
        "source": loaded.name, "param_types": param_types,
    }
    stored = True
    if loaded.kind == "onnx":
        meta["params"] = "stored"
        try:
            import tempfile

            slot.directory.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=slot.directory, prefix=f".{slot.key[:16]}.", suffix=".ptmp")
            os.close(fd)
            try:
                save_params(tmp, loaded.params)
                os.replace(tmp, _params_path(slot))
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        except (OSError, ValueError):
            stored = False  # an unwritable folder or a weight dtype the params format lacks
    else:
        meta["params"] = "file"
        meta["params_file"] = params_file
    if stored:
        _cache.store(slot.directory, slot.key, obj, engine.llvm_ir, meta)

    program = _call_with_supported(runtime.CompiledProgram, engine, metadata, params=dict(loaded.params),
                                   num_threads=num_threads)
    program.cache_hit = False
    program.cache_key = slot.key
    if num_threads is not None:
        parallel.set_num_threads(num_threads)
    return program


def _first_above_llvm(module: ModuleOp) -> str:
    return next((op.name for op in module.walk() if op is not module and not op.name.startswith("llvm.")), "?")


_ = builtins  # `compile` shadows the builtin inside this module only
