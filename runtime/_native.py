"""Calling compiled minimlir entry points from NumPy: argument checks, pointers, owned outputs.

Needs only numpy and ctypes: the JIT (minimlir.backend.runtime) and the artifact loader
(minimlir.runtime) both call native code through `NativeFunction`, so an artifact checks its
inputs exactly as the JIT does.

`meta` is one function of the runtime metadata (backend/runtime.py `collect_metadata`):

    {"abi": "entry", "args": [{"name": "x", "kind": "memref", "dtype": "float32",
      "shape": [null, 3], "dim_names": ["batch", ""], "param": null}, ...],
     "results": [{"name": "y", "kind": "memref", "dtype": "float32", "shape": [null, 3]}]}

The native "entry" ABI: every memref argument is its data pointer followed by its dynamic dims
(int64, in order); then one pointer to the result slots (per result: data pointer, then every dim,
as int64; a null data pointer means "allocate it"); the return value is an int32 status: 0 ok,
1 an out= array has the wrong (dynamic) shape, 2 out of memory.

A program (anything with `allow_copy`, `param(name, function)` and `release(ptr)`) owns the
functions: `param` gives the weight bound to a `mem.param` argument, `release` frees a buffer the
native code allocated (an output no array owns any more). Optional hooks, where the compiler is
there (the JIT's program has them): `check_dims(checks, shapes)` for a function's symbolic
`dim_checks`, and checked mode's `checked_call(name)` (a context with `violation()`) and
`check_outputs(name, results, names)`.
"""

from __future__ import annotations

import ctypes
import functools
import math
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from minimlir.runtime.errors import DimCheckError, InputError, NativeError  # noqa: F401 (re-exported)

ArgumentError = InputError  # the old name of a call's argument error

STATUS_OK, STATUS_BAD_OUT, STATUS_NO_MEMORY = 0, 1, 2


def libc_free() -> Any:
    libc = ctypes.CDLL(None)
    free = libc.free
    free.argtypes = [ctypes.c_void_p]
    free.restype = None
    return free


def wrap_owned(ptr: int, shape: Sequence[int], dtype: np.dtype, release: Callable[[int], None]) -> np.ndarray:
    """A NumPy array over `ptr` (allocated by native code) that calls `release(ptr)` when collected."""
    count = math.prod(shape)  # Python ints: np.prod costs ~30x more per call
    nbytes = count * dtype.itemsize
    owner = (ctypes.c_char * max(nbytes, 1)).from_address(ptr)
    weakref.finalize(owner, release, ptr)
    return np.frombuffer(owner, dtype=dtype, count=count).reshape(tuple(shape))

def shape_str(shape: Sequence[int | None]) -> str:
    parts = ["?" if d is None else str(d) for d in shape]
    return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"


def as_array(value: Any, what: str, allow_copy: bool) -> np.ndarray:
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


@functools.cache
def _dtype(name: str) -> np.dtype:
    return np.dtype(name)


def check_array(
    a: np.ndarray, spec: Mapping[str, Any], what: str, allow_copy: bool, writable: bool = False
) -> np.ndarray:
    """Check dtype, rank, static dims and layout of `a` against a memref spec; returns the
    array to pass (a contiguous copy only when `allow_copy`)."""
    dtype = _dtype(spec["dtype"])
    shape = spec["shape"]
    if a.dtype != dtype:
        raise ArgumentError(f"{what}: expected dtype {dtype.name} but got {a.dtype.name}")
    if a.ndim != len(shape):
        raise ArgumentError(
            f"{what}: expected rank {len(shape)} (shape {shape_str(shape)}) but got rank "
            f"{a.ndim} (shape {shape_str(a.shape)})"
        )
    if any(s is not None and s != d for s, d in zip(shape, a.shape)):
        raise ArgumentError(f"{what}: expected shape {shape_str(shape)} but got {shape_str(a.shape)}")
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


def _arg_plan(a: Mapping[str, Any]) -> tuple[Any, np.dtype, int, tuple, tuple, tuple]:
    shape = a["shape"]
    names = a.get("dim_names") or ()
    return (
        a.get("param"),
        _dtype(a["dtype"]),
        len(shape),
        tuple((k, s) for k, s in enumerate(shape) if s is not None),
        tuple((k, n) for k, n in enumerate(names) if n),
        tuple(k for k, s in enumerate(shape) if s is None),
    )


NOT_PLAIN = object()  # call_plain(): the arguments need the checking path


def _plain(a: Any, dtype: np.dtype, rank: int, static: tuple) -> bool:
    """`a` is an ndarray that `check_array` would pass unchanged (dtype equality implies native
    byte order: `dtype` is native)."""
    if not isinstance(a, np.ndarray) or a.dtype != dtype or a.ndim != rank or not a.flags.c_contiguous:
        return False
    shape = a.shape
    return all(shape[k] == s for k, s in static)


def _data_pointer(a: np.ndarray) -> int:
    """The address of a C-contiguous array's first element. `a.ctypes.data` builds a helper
    object (several µs, 30 arguments per decode step); a writable, non-empty buffer gives its
    address through ctypes directly, at a tenth of that."""
    if a.nbytes and a.flags.writeable:
        return ctypes.addressof(ctypes.c_char.from_buffer(a))
    return a.ctypes.data


CTYPES = {
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

    def __init__(self, program: Any, name: str, meta: Mapping[str, Any], address: int):
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
                if a["dtype"] not in CTYPES:
                    raise ArgumentError(f"@{name}: scalar argument type {a['dtype']} is not supported")
                argtypes.append(CTYPES[a["dtype"]])
        if meta["abi"] == "entry":
            argtypes.append(ctypes.c_void_p)
            restype: Any = ctypes.c_int32
        elif self.results:
            restype = CTYPES[self.results[0]["dtype"]]
        else:
            restype = None
        self._cfunc = ctypes.CFUNCTYPE(restype, *argtypes)(address)
        # The fast path's plan (see `_fast_native`): per memref argument its param name (None for an
        # input), dtype, rank, static dims as (position, size), named dims as (position, name), and
        # the positions of its dynamic dims; per result the same for out= arrays. Params with a dynamic
        # dim take the checking path.
        self._plan = None
        if meta["abi"] == "entry" and all(
            a["kind"] == "memref" and (a["param"] is None or None not in a["shape"]) for a in meta["args"]
        ):
            self._plan = [_arg_plan(a) for a in meta["args"]]
            self._out_plan = [_arg_plan(r) for r in self.results]
        self._param_cache: tuple[Any, list[Any], list[np.ndarray]] | None = None
        # the result slots (entry ABI): per result its data pointer then its dims
        offsets = [0]
        for r in self.results:
            offsets.append(offsets[-1] + 1 + len(r["shape"]))
        self._slot_layout = (offsets, ctypes.c_int64 * max(offsets[-1], 1))
        self._result_dtypes = [np.dtype(r["dtype"]) for r in self.results]

    def __repr__(self) -> str:
        sig = ", ".join(f"{a['name']}: {a['dtype']}{shape_str(a['shape'])}" for a in self.inputs)
        return f"<minimlir function {self.name}({sig})>"

    def _expected(self) -> str:
        """`expected inputs: x: float32(?, 3), y: float32(3,)` (params are bound, not passed)."""
        if not self.inputs:
            return "expected no inputs"
        listed = ", ".join(f"{a['name']}: {a['dtype']}{shape_str(a['shape'])}" for a in self.inputs)
        return f"expected input(s): {listed}"

    def _bind(self, args: tuple, kwargs: dict) -> list[Any]:
        n = len(self.inputs)
        if len(args) > n:
            raise ArgumentError(
                f"{self.name}() takes {n} input(s) but {len(args)} were given; {self._expected()}"
            )
        values: dict[str, Any] = {a["name"]: v for a, v in zip(self.inputs, args)}
        for key, v in kwargs.items():
            if key not in {a["name"] for a in self.inputs}:
                raise ArgumentError(f"{self.name}() got an unexpected input '{key}'; {self._expected()}")
            if key in values:
                raise ArgumentError(f"{self.name}() got input '{key}' twice")
            values[key] = v
        missing = [a["name"] for a in self.inputs if a["name"] not in values]
        if missing:
            raise ArgumentError(
                f"{self.name}(): missing input(s) {', '.join(repr(m) for m in missing)}; "
                f"{self._expected()}"
            )
        return [values[a["name"]] for a in self.inputs]

    def __call__(self, *args: Any, out: Any = None, **kwargs: Any) -> Any:
        if not kwargs:
            result = self.call_plain(args, out)
            if result is not NOT_PLAIN:
                return result
        return self._slow_call(args, out, kwargs)

    def call_plain(self, args: tuple, out: Any = None) -> Any:
        """The call by position when every argument is already exactly what the function takes
        (`_fast_native`'s checks: dtype, rank, static dims, consistent named dims, C-contiguous, out=
        writable); NOT_PLAIN, having run nothing, otherwise (the checking call then gives the error)."""
        if self._plan is None:
            return NOT_PLAIN
        fast = self._fast_native(args, out)
        return NOT_PLAIN if fast is None else self._call_entry(*fast)

    def bound(self, *args: Any) -> Callable[[], Any]:
        """A call of this function on `args` with nothing left to check or marshal: for timing
        loops (the tuner's measuring process), where the per-call checks and argument marshalling
        of `__call__` (tens of microseconds) would outweigh a small kernel. Only for a function
        without results (it writes into caller buffers: a tuning candidate's `main`) whose
        arguments are all inputs that already are exactly what it takes (dtype, rank, static dims,
        C-contiguous, consistent named dims), outside checked mode; otherwise the returned call is
        `self(*args)`, checks and errors included. A failing status raises NativeError as a call
        does."""
        native = self._bound_native(args)
        if native is None:
            return lambda: self(*args)
        if self.meta["abi"] == "entry":
            slots = self._slot_layout[1]()
            native.append(ctypes.addressof(slots))
        else:
            slots = None
        call = functools.partial(self._cfunc, *native)
        name = self.name

        def run() -> None:
            status = call()
            if status is not None and status != STATUS_OK:
                raise NativeError(f"{name}() failed with status {status}")

        run.keep = (args, slots, self)  # type: ignore[attr-defined]  # the memory the call uses
        return run

    def _bound_native(self, args: tuple) -> list[Any] | None:
        """`bound`'s native arguments, or None where it takes the ordinary call."""
        if self.results or self.params or self._checked_call() is not None or len(args) != len(self.inputs):
            return None
        if self.meta.get("dim_checks") or any(a["kind"] != "memref" for a in self.meta["args"]):
            return None
        native: list[Any] = []
        seen: dict[str, int] = {}
        for a, arr in zip(self.meta["args"], args):
            _, dtype, rank, static, named, dynamic = _arg_plan(a)
            if not _plain(arr, dtype, rank, static):
                return None
            for k, n in named:
                if seen.setdefault(n, arr.shape[k]) != arr.shape[k]:
                    return None
            native.append(_data_pointer(arr))
            native.extend(arr.shape[k] for k in dynamic)
        return native

    def _params_native(self) -> tuple[list[Any], list[np.ndarray]] | None:
        """The params' part of the native arguments, cached while the program's params stay bound
        (a program that rebinds them bumps `params_version`; one without it is never cached)."""
        version = getattr(self.program, "params_version", None)
        if version is None:
            return None
        cached = self._param_cache
        if cached is not None and cached[0] == version:
            return cached[1], cached[2]
        native: list[Any] = []
        keep: list[np.ndarray] = []
        allow_copy = self.program.allow_copy
        for a in self.meta["args"]:
            if a["param"] is None:
                continue
            arr = check_array(self.program.param(a["param"], self.name), a, f"param '{a['param']}'", allow_copy)
            keep.append(arr)
            native.append(arr.ctypes.data)  # a param with a dynamic dim has no fast plan
        self._param_cache = (version, native, keep)
        return native, keep

    def _fast_native(self, args: tuple, out: Any) -> tuple[list[Any], Any, list[Any], Any] | None:
        """The native arguments when every input (and out= array) is already exactly what the
        function takes: an ndarray of the right dtype, rank and static dims, C-contiguous, with
        consistent named dims, and no param has a dynamic dim; None otherwise, and the checking
        path (`_slow_call`) then gives the call, or its error, as before."""
        if len(args) != len(self.inputs) or self.meta.get("dim_checks"):
            return None
        params = self._params_native()
        if params is None:
            return None
        param_native, keep = params
        native: list[Any] = []
        seen: dict[str, int] = {}
        given = iter(args)
        param_pos = 0
        for a, (param, dtype, rank, static, named, dynamic) in zip(self.meta["args"], self._plan):
            if param is not None:
                native.append(param_native[param_pos])
                param_pos += 1
                continue
            arr = next(given)
            if not _plain(arr, dtype, rank, static):
                return None
            shape = arr.shape
            for k, n in named:
                if seen.setdefault(n, shape[k]) != shape[k]:
                    return None
            native.append(_data_pointer(arr))
            for k in dynamic:
                native.append(shape[k])
        if out is not None:
            outs = list(out) if isinstance(out, list | tuple) else [out]
            if len(outs) != len(self.results):
                return None
            for o, (_, dtype, rank, static, _named, _dyn) in zip(outs, self._out_plan):
                if o is not None and not (_plain(o, dtype, rank, static) and o.flags.writeable):
                    return None
        else:
            outs = None
        return native, None, [*keep, *args], outs if outs is not None else [None] * len(self.results)

    def _slow_call(self, args: tuple, out: Any, kwargs: dict) -> Any:
        allow_copy = self.program.allow_copy
        given = iter(self._bind(args, kwargs))
        keep: list[np.ndarray] = []  # arrays whose memory the call uses
        native: list[Any] = []
        dims_seen: dict[str, tuple[int, str]] = {}
        given_shapes: list[tuple[str, Any, tuple[int, ...]]] = []
        for a in self.meta["args"]:
            if a["param"] is not None:
                what = f"param '{a['param']}'"
                arr = check_array(self.program.param(a["param"], self.name), a, what, allow_copy)
            else:
                what = f"input '{a['name']}'"
                value = next(given)
                if a["kind"] == "scalar":
                    native.append(CTYPES[a["dtype"]](value))
                    continue
                arr = check_array(as_array(value, what, allow_copy), a, what, allow_copy)
            for k, (n, d) in enumerate(zip(a.get("dim_names") or (), arr.shape)):
                if not n:
                    continue
                if n in dims_seen and dims_seen[n][0] != d:
                    other_d, other = dims_seen[n]
                    raise ArgumentError(
                        f"{what}: dim {k} ('{n}') is {d} but {other} has '{n}' = {other_d}"
                    )
                dims_seen.setdefault(n, (d, what))
            if a["param"] is None:
                given_shapes.append((a["name"], a.get("dim_names") or (), arr.shape))
            keep.append(arr)
            native.append(arr.ctypes.data)
            native.extend(d for d, s in zip(arr.shape, a["shape"]) if s is None)
        check_dims = getattr(self.program, "check_dims", None)
        if self.meta.get("dim_checks") and check_dims is not None:
            if (msg := check_dims(self.meta["dim_checks"], given_shapes)) is not None:
                raise DimCheckError(msg)
        if self.meta["abi"] != "entry":
            if out is not None:
                raise ArgumentError(f"{self.name}() has no memref results: out= is not allowed")
            checked = self._checked_call()
            if checked is None:
                return self._cfunc(*native)
            with checked:
                value = self._cfunc(*native)
            if (err := checked.violation()) is not None:
                raise err
            return value
        return self._call_entry(native, out, keep)

    def _checked_call(self) -> Any:
        hook = getattr(self.program, "checked_call", None)
        return hook(self.name) if hook is not None else None

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
            arr = as_array(o, what, False)
            checked.append(check_array(arr, r, what, False, writable=True))
        return checked

    def _call_entry(self, native: list[Any], out: Any, keep: list[Any], outs: list | None = None) -> Any:
        """`outs`: the out= arrays already checked (by `_fast_native`), else `out` is checked here."""
        if outs is None:
            outs = self._outs(out)
        offsets, slots_type = self._slot_layout
        slots = slots_type()
        for off, o in zip(offsets, outs):
            if o is not None:
                slots[off] = _data_pointer(o)
                for k, d in enumerate(o.shape):
                    slots[off + 1 + k] = d
        checked = self._checked_call()
        if checked is None:
            status = self._cfunc(*native, ctypes.addressof(slots))
        else:
            with checked:
                status = self._cfunc(*native, ctypes.addressof(slots))
        del keep
        results: list[np.ndarray] = []
        owned: list[int] = []
        for r, off, o in zip(self.results, offsets, outs):
            if o is None and slots[off]:
                owned.append(slots[off])
        if checked is not None and (err := checked.violation()) is not None:
            for ptr in owned:
                self.program.release(ptr)
            raise err
        if status != STATUS_OK:
            for ptr in owned:
                self.program.release(ptr)
            if status == STATUS_NO_MEMORY:
                raise MemoryError(f"{self.name}(): out of memory (a native allocation failed)")
            if status == STATUS_BAD_OUT:
                for r, off, o in zip(self.results, offsets, outs):
                    if o is None:
                        continue
                    computed = tuple(slots[off + 1 + k] for k in range(len(r["shape"])))
                    if computed != o.shape:
                        raise ArgumentError(
                            f"out= for result '{r['name']}': the computed shape is "
                            f"{shape_str(computed)} but the array has shape {shape_str(o.shape)}"
                        )
            raise NativeError(f"{self.name}() failed with status {status}")
        for r, off, o, dt in zip(self.results, offsets, outs, self._result_dtypes):
            if o is not None:
                results.append(o)
                continue
            shape = slots[off + 1:off + 1 + len(r["shape"])]
            results.append(wrap_owned(slots[off], shape, dt, self.program.release))
        check_outputs = getattr(self.program, "check_outputs", None)
        if check_outputs is not None:
            err = check_outputs(self.name, results, [r["name"] for r in self.results])
            if err is not None:
                raise err
        return results[0] if len(results) == 1 else tuple(results)


