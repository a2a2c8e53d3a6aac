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
when the last view dies.
"""

from __future__ import annotations

import ctypes
import os
import weakref
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, MemRefType, ModuleOp, StringAttr
from xdsl.ir import Attribute

from minimlir.passes._memref_abi import (
    PARAM_ATTR,
    is_entry,
    is_public,
    numpy_dtype_name,
    shape_list,
)

METADATA_VERSION = 1


class ArgumentError(ValueError):
    """A call's arguments do not fit the compiled function (raised before native code runs)."""


class NativeError(RuntimeError):
    """The native function returned a non-zero status."""


# ------------------------------------------------------------------------------ metadata


def _attr_str(d: Mapping[str, Attribute] | None, key: str) -> str | None:
    if d is None:
        return None
    v = d.get(key)
    return v.data if isinstance(v, StringAttr) else None


def _scalar_dtype(t: Attribute) -> str:
    return numpy_dtype_name(t)


def function_metadata(f: func.FuncOp) -> dict[str, Any]:
    """The runtime's view of one mem-level function (see the module docstring)."""
    ftype = f.function_type
    arg_attrs = [d.data for d in f.arg_attrs.data] if f.arg_attrs is not None else None
    res_attrs = [d.data for d in f.res_attrs.data] if f.res_attrs is not None else None
    block_args = f.body.blocks[0].args if f.body.blocks else ()
    args: list[dict[str, Any]] = []
    for k, t in enumerate(ftype.inputs.data):
        d = arg_attrs[k] if arg_attrs is not None else None
        name = _attr_str(d, "graph.name") or (
            block_args[k].name_hint if k < len(block_args) and block_args[k].name_hint else None
        )
        entry: dict[str, Any] = {"name": name or f"arg{k}", "param": _attr_str(d, PARAM_ATTR)}
        if isinstance(t, MemRefType):
            names = d.get("graph.dim_names") if d is not None else None
            entry.update(
                kind="memref",
                dtype=numpy_dtype_name(t.element_type),
                shape=shape_list(t),
                dim_names=[s.data for s in names.data] if isinstance(names, ArrayAttr) else None,
            )
        else:
            entry.update(kind="scalar", dtype=_scalar_dtype(t), shape=[], dim_names=None)
        args.append(entry)
    results: list[dict[str, Any]] = []
    for i, t in enumerate(ftype.outputs.data):
        d = res_attrs[i] if res_attrs is not None else None
        r: dict[str, Any] = {"name": _attr_str(d, "graph.name") or f"result{i}"}
        if isinstance(t, MemRefType):
            r.update(kind="memref", dtype=numpy_dtype_name(t.element_type), shape=shape_list(t))
        else:
            r.update(kind="scalar", dtype=_scalar_dtype(t), shape=[])
        results.append(r)
    abi = "entry" if is_entry(f) else "plain"
    if abi == "plain" and len(results) > 1:
        raise ArgumentError(
            f"function @{f.sym_name.data}: several scalar results are not supported by the runtime"
        )
    return {"abi": abi, "args": args, "results": results}


def collect_metadata(module: ModuleOp, entry: str | Sequence[str] | None = None) -> dict[str, Any]:
    """Metadata of the public functions of a mem-level module (or only those named in `entry`)."""
    wanted = [entry] if isinstance(entry, str) else list(entry) if entry is not None else None
    functions: dict[str, Any] = {}
    for op in module.ops:
        if isinstance(op, func.FuncOp) and op.body.blocks and is_public(op):
            name = op.sym_name.data
            if wanted is None or name in wanted:
                functions[name] = function_metadata(op)
    for name in wanted or ():
        if name not in functions:
            raise ArgumentError(f"no public function @{name} in the module")
    return {"version": METADATA_VERSION, "functions": functions}


# ------------------------------------------------------------------------------ memory


def _libc_free() -> Any:
    libc = ctypes.CDLL(None)
    free = libc.free
    free.argtypes = [ctypes.c_void_p]
    free.restype = None
    return free


# The deallocator of natively allocated outputs (the JIT's aligned_alloc is the process libc's).
# A module global looked up at free time, so tests can count frees.
FREE = _libc_free()


def _release(ptr: int) -> None:
    FREE(ptr)


def wrap_owned(ptr: int, shape: Sequence[int], dtype: np.dtype) -> np.ndarray:
    """A NumPy array over `ptr` (malloc'd by native code) that frees it when collected."""
    count = int(np.prod(shape, dtype=np.int64))
    nbytes = count * dtype.itemsize
    owner = (ctypes.c_char * max(nbytes, 1)).from_address(ptr)
    weakref.finalize(owner, _release, ptr)
    return np.frombuffer(owner, dtype=dtype, count=count).reshape(tuple(shape))


# ------------------------------------------------------------------------------ calls


def _shape_str(shape: Sequence[int | None]) -> str:
    parts = ["?" if d is None else str(d) for d in shape]
    return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"


def _as_array(value: Any, what: str, allow_copy: bool) -> np.ndarray:
    if isinstance(value, np.ndarray):
        return value
    if hasattr(value, "__dlpack__"):
        try:
            return np.from_dlpack(value)
        except Exception as e:  # e.g. a device array
            raise ArgumentError(f"{what}: cannot import the DLPack array: {e}") from None
    if allow_copy:
        return np.asarray(value)
    raise ArgumentError(
        f"{what}: expected a NumPy array or a DLPack-capable array, got {type(value).__name__}"
    )


def check_array(
    a: np.ndarray, spec: Mapping[str, Any], what: str, allow_copy: bool, writable: bool = False
) -> np.ndarray:
    """Check dtype, rank, static dims and layout of `a` against a memref spec; returns the
    array to pass (a contiguous copy only when `allow_copy`)."""
    dtype = np.dtype(spec["dtype"])
    shape = spec["shape"]
    if a.dtype != dtype:
        raise ArgumentError(f"{what}: expected dtype {dtype.name} but got {a.dtype.name}")
    if a.ndim != len(shape):
        raise ArgumentError(
            f"{what}: expected rank {len(shape)} (shape {_shape_str(shape)}) but got rank "
            f"{a.ndim} (shape {_shape_str(a.shape)})"
        )
    if any(s is not None and s != d for s, d in zip(shape, a.shape)):
        raise ArgumentError(f"{what}: expected shape {_shape_str(shape)} but got {_shape_str(a.shape)}")
    if writable and not a.flags.writeable:
        raise ArgumentError(f"{what}: the array is read-only")
    if not a.flags.c_contiguous:
        if allow_copy and not writable:
            return np.ascontiguousarray(a)
        hint = "" if writable else " (or build the program with allow_copy=True)"
        raise ArgumentError(
            f"{what}: the array is not C-contiguous (strides {a.strides}); pass "
            f"np.ascontiguousarray(...){hint}"
        )
    if not a.dtype.isnative:
        raise ArgumentError(f"{what}: byte order must be native")
    return a


_CTYPES = {
    "float32": ctypes.c_float,
    "float64": ctypes.c_double,
    "int64": ctypes.c_int64,
    "int32": ctypes.c_int32,
    "int16": ctypes.c_int16,
    "int8": ctypes.c_int8,
    "uint8": ctypes.c_uint8,
    "bool": ctypes.c_bool,
}


class NativeFunction:
    """One compiled function; call it with arrays (positional or by argument name)."""

    def __init__(self, program: CompiledProgram, name: str, meta: Mapping[str, Any], address: int):
        self.program = program
        self.name = name
        self.meta = meta
        self.inputs = [a for a in meta["args"] if a["param"] is None]
        self.params = [a for a in meta["args"] if a["param"] is not None]
        self.results = meta["results"]
        argtypes: list[Any] = []
        for a in meta["args"]:
            if a["kind"] == "memref":
                argtypes.append(ctypes.c_void_p)
                argtypes.extend(ctypes.c_int64 for s in a["shape"] if s is None)
            else:
                if a["dtype"] not in _CTYPES:
                    raise ArgumentError(f"@{name}: scalar argument type {a['dtype']} is not supported")
                argtypes.append(_CTYPES[a["dtype"]])
        if meta["abi"] == "entry":
            argtypes.append(ctypes.c_void_p)
            restype: Any = ctypes.c_int32
        elif self.results:
            restype = _CTYPES[self.results[0]["dtype"]]
        else:
            restype = None
        self._cfunc = ctypes.CFUNCTYPE(restype, *argtypes)(address)

    def __repr__(self) -> str:
        sig = ", ".join(f"{a['name']}: {a['dtype']}{_shape_str(a['shape'])}" for a in self.inputs)
        return f"<minimlir function {self.name}({sig})>"

    def _bind(self, args: tuple, kwargs: dict) -> list[Any]:
        if len(args) > len(self.inputs):
            raise ArgumentError(
                f"{self.name}() takes {len(self.inputs)} input(s), got {len(args)} positional"
            )
        values: dict[str, Any] = {a["name"]: v for a, v in zip(self.inputs, args)}
        for key, v in kwargs.items():
            if key not in {a["name"] for a in self.inputs}:
                raise ArgumentError(f"{self.name}() got an unexpected input '{key}'")
            if key in values:
                raise ArgumentError(f"{self.name}() got input '{key}' twice")
            values[key] = v
        missing = [a["name"] for a in self.inputs if a["name"] not in values]
        if missing:
            raise ArgumentError(f"{self.name}(): missing input(s) {', '.join(repr(m) for m in missing)}")
        return [values[a["name"]] for a in self.inputs]

    def __call__(self, *args: Any, out: Any = None, **kwargs: Any) -> Any:
        allow_copy = self.program.allow_copy
        given = iter(self._bind(args, kwargs))
        keep: list[np.ndarray] = []  # arrays whose memory the call uses
        native: list[Any] = []
        dims_seen: dict[str, tuple[int, str]] = {}
        for a in self.meta["args"]:
            if a["param"] is not None:
                what = f"param '{a['param']}'"
                arr = check_array(self.program.param(a["param"], self.name), a, what, allow_copy)
            else:
                what = f"input '{a['name']}'"
                value = next(given)
                if a["kind"] == "scalar":
                    native.append(_CTYPES[a["dtype"]](value))
                    continue
                arr = check_array(_as_array(value, what, allow_copy), a, what, allow_copy)
            for k, (n, d) in enumerate(zip(a.get("dim_names") or (), arr.shape)):
                if not n:
                    continue
                if n in dims_seen and dims_seen[n][0] != d:
                    other_d, other = dims_seen[n]
                    raise ArgumentError(
                        f"{what}: dim {k} ('{n}') is {d} but {other} has '{n}' = {other_d}"
                    )
                dims_seen.setdefault(n, (d, what))
            keep.append(arr)
            native.append(arr.ctypes.data)
            native.extend(d for d, s in zip(arr.shape, a["shape"]) if s is None)
        if self.meta["abi"] != "entry":
            if out is not None:
                raise ArgumentError(f"{self.name}() has no memref results: out= is not allowed")
            return self._cfunc(*native)
        return self._call_entry(native, out, keep)

    def _outs(self, out: Any) -> list[np.ndarray | None]:
        n = len(self.results)
        if out is None:
            return [None] * n
        outs = list(out) if isinstance(out, list | tuple) else [out]
        if len(outs) != n:
            raise ArgumentError(f"{self.name}(): out= needs {n} array(s) (or None), got {len(outs)}")
        checked: list[np.ndarray | None] = []
        for r, o in zip(self.results, outs):
            if o is None:
                checked.append(None)
                continue
            what = f"out= for result '{r['name']}'"
            arr = _as_array(o, what, False)
            checked.append(check_array(arr, r, what, False, writable=True))
        return checked

    def _call_entry(self, native: list[Any], out: Any, keep: list[np.ndarray]) -> Any:
        outs = self._outs(out)
        offsets = [0]
        for r in self.results:
            offsets.append(offsets[-1] + 1 + len(r["shape"]))
        slots = (ctypes.c_int64 * max(offsets[-1], 1))()
        for off, o in zip(offsets, outs):
            if o is not None:
                slots[off] = o.ctypes.data
                for k, d in enumerate(o.shape):
                    slots[off + 1 + k] = d
        status = self._cfunc(*native, ctypes.addressof(slots))
        del keep
        results: list[np.ndarray] = []
        owned: list[int] = []
        for r, off, o in zip(self.results, offsets, outs):
            if o is None and slots[off]:
                owned.append(slots[off])
        if status != 0:
            for ptr in owned:
                _release(ptr)
            if status == 1:
                for r, off, o in zip(self.results, offsets, outs):
                    if o is None:
                        continue
                    computed = tuple(slots[off + 1 + k] for k in range(len(r["shape"])))
                    if computed != o.shape:
                        raise ArgumentError(
                            f"out= for result '{r['name']}': the computed shape is "
                            f"{_shape_str(computed)} but the array has shape {_shape_str(o.shape)}"
                        )
            raise NativeError(f"{self.name}() failed with status {status}")
        for r, off, o in zip(self.results, offsets, outs):
            if o is not None:
                results.append(o)
                continue
            shape = [slots[off + 1 + k] for k in range(len(r["shape"]))]
            results.append(wrap_owned(slots[off], shape, np.dtype(r["dtype"])))
        return results[0] if len(results) == 1 else tuple(results)


class CompiledProgram:
    """Native code for a module plus the metadata of its public functions.

    `engine` is anything with `address(name) -> int` (backend/jit.py's compiled module);
    `params` is a dict name -> array or the path of a params file (frontend/params.py)."""

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
        self._params: dict[str, np.ndarray] = {}
        if params is not None:
            self.bind_params(params)
        self.functions: dict[str, NativeFunction] = {
            name: NativeFunction(self, name, meta, _address(engine, name))
            for name, meta in metadata["functions"].items()
        }

    def bind_params(self, params: Mapping[str, np.ndarray] | str | os.PathLike[str]) -> None:
        """Use these weights for `mem.param` arguments (a params file is memory-mapped)."""
        if isinstance(params, str | os.PathLike):
            from minimlir.frontend.params import load_params

            params = load_params(params)
        self._params = dict(params)

    def param(self, name: str, function: str) -> np.ndarray:
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


def _context():
    from xdsl.context import Context

    from minimlir.passes import _llvm_ext  # noqa: F401 - registers the extension llvm ops
    from minimlir.tools.mini_opt import our_dialects

    ctx = Context()
    from xdsl.dialects import get_all_dialects

    for name, factory in get_all_dialects().items():
        ctx.register_dialect(name, factory)
    for d in our_dialects():
        if d.name in ctx.registered_dialect_names:
            continue
        ctx.load_dialect(d)
    return ctx


def run_pipeline(module: ModuleOp, pipeline: str, ctx=None, before: Mapping[str, Any] | None = None) -> None:
    """Run a pass pipeline (names, named pipelines, options) on `module` in place.

    `before`: pass name -> callback(module), called once right before the first run of that pass
    (compile_mlir_text collects the runtime metadata before convert-mem-to-llvm)."""
    from xdsl.transforms import get_all_passes

    from minimlir.tools._pipeline import IROptions, PassManager, PipelineBuilder, PassStep, parse_pipeline
    from minimlir.tools.mini_opt import named_pipelines, our_passes

    ctx = ctx or _context()
    available = dict(get_all_passes())
    for name, cls in our_passes().items():
        available[name] = lambda c=cls: c
    steps = PipelineBuilder(available, named_pipelines(), ctx).build(parse_pipeline(pipeline))
    pending = dict(before or {})
    for step in steps:
        if isinstance(step, PassStep) and step.name in pending:
            pending.pop(step.name)(module)
        PassManager([step], ctx, IROptions(), verify_each=True, snapshots=False).run(module)


def _is_llvm_module(module: ModuleOp) -> bool:
    return all(op.name.startswith("llvm.") for op in module.ops)


def compile_mlir_text(
    text_or_module: str | ModuleOp,
    entry: str | Sequence[str] | None = None,
    pipeline: str = "graph-to-llvm",
    cache: bool | str | os.PathLike[str] = True,
    params: Mapping[str, np.ndarray] | str | os.PathLike[str] | None = None,
    allow_copy: bool = False,
    metadata: Mapping[str, Any] | None = None,
) -> CompiledProgram:
    """Parse (if text), lower with `pipeline` (unless already llvm dialect), JIT, wrap.

    `metadata` is needed only for input already in the llvm dialect (where types are gone)."""
    from minimlir.passes import _llvm_ext as ext

    ctx = _context()
    if isinstance(text_or_module, str):
        from xdsl.parser import Parser

        module = Parser(ctx, text_or_module, "<input>").parse_module()
    else:
        module = text_or_module.clone()
    if _is_llvm_module(module):
        if metadata is None:
            raise ArgumentError("a module already in the llvm dialect needs metadata= (collect_metadata)")
    else:
        found: dict[str, Any] = {}
        if metadata is None:

            def collect(m: ModuleOp) -> None:  # the mem-level signatures, before they are expanded
                found["metadata"] = collect_metadata(m, entry)

            run_pipeline(module, pipeline, ctx, before={"convert-mem-to-llvm": collect})
            if "metadata" not in found:
                raise ArgumentError(f"pipeline '{pipeline}' does not run convert-mem-to-llvm")
            metadata = found["metadata"]
        else:
            run_pipeline(module, pipeline, ctx)
    ext.install_llvmlite_hooks()
    engine = jit_module(module, cache=cache)
    return CompiledProgram(engine, metadata, params=params, allow_copy=allow_copy)


def jit_module(module: ModuleOp, cache: bool | str | os.PathLike[str] = True) -> Any:
    """llvm-dialect module -> an object with `address(name)` (backend/jit.py)."""
    from minimlir.backend import jit

    return jit.compile_module(module, cache=cache)
