"""minimlir.runtime: run a compiled artifact (`mini-compile model.onnx -o model.so`) with numpy alone.

    import numpy as np, minimlir.runtime
    m = minimlir.runtime.load("model.so")          # maps model.params beside it, if any
    (y,) = m(np.random.rand(1, 64).astype(np.float32))
    (y,) = m.run({"x": x})                          # by input name; m(x=x) too
    m(x, out=[y])                                   # in place (zero-copy; shapes must match)
    m.num_threads = 2                               # threads of parallel loops (0: the default)
    m.inputs, m.outputs, m.metadata                 # names, dtypes, shapes with symbolic dims

This package imports only numpy and ctypes (and the standard library): never xDSL, llvmlite or
onnx. Arrays cross by pointer, no copy: inputs are NumPy arrays or any DLPack producer
(`__dlpack__`), outputs are NumPy arrays (DLPack producers themselves).

`load` checks, before any code of the artifact runs (it reads the ELF file, it does not map it):
the file is a whole ELF shared object for this machine's architecture, its metadata has this
runtime's ABI version, and this CPU has every feature the code was compiled for (/proc/cpuinfo).
Then the weights: embedded ones from the `.so` itself, or the params file (default: the one named
in the metadata, beside the `.so`), which must be whole and have the sha256 the `.so` recorded
(`verify=True` also re-hashes its bytes, which reads the whole file). Each failure is a
`LoadError` subclass with a message naming the file. Calls check their inputs exactly as the JIT
does (count, names, dtype, rank, static dims, equal symbolic dims: minimlir.runtime._native)
and raise `ArgumentError` before native code runs.
"""

from __future__ import annotations

import ctypes
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from minimlir.runtime import _cpu, _elf, _gomp, _malloc
from minimlir.runtime.errors import InputError as ArgumentError  # minimlir.runtime._native's name of it
from minimlir.runtime.errors import MinimlirError, NativeError

if TYPE_CHECKING:  # imported where used: the compiler imports this package's errors, and needs no numpy for them
    import numpy as np

    from minimlir.runtime import _params

ABI_VERSION = 1
"""The artifact interface this runtime reads (backend/artifact.py ABI_VERSION)."""

__all__ = [
    "ABI_VERSION",
    "AbiVersionError",
    "ArgumentError",
    "ArtifactFormatError",
    "CpuFeatureError",
    "LoadError",
    "Model",
    "NativeError",
    "ParamsMismatchError",
    "load",
]


class LoadError(MinimlirError, RuntimeError):
    """The artifact cannot be loaded here (the message says why and names the file)."""


class ArtifactFormatError(LoadError):
    """Not a minimlir artifact, truncated, or built for another architecture."""


class AbiVersionError(LoadError):
    """The artifact was written for another version of the artifact interface."""


class CpuFeatureError(LoadError):
    """This CPU lacks an instruction set extension the artifact's code uses."""


class ParamsMismatchError(LoadError):
    """The params file is missing, truncated, corrupt, or not the one the artifact was built with."""


def read_metadata(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The metadata of an artifact, read from the file (nothing is loaded or run)."""
    path = Path(path)
    if not path.is_file():
        raise LoadError(f"{path}: no such file")
    try:
        machine, raw = _elf.read_symbol(path, "minimlir_metadata")
    except _elf.ElfError as e:
        raise ArtifactFormatError(str(e)) from None
    except OSError as e:
        raise LoadError(f"{path}: {e.strerror or e}") from None
    try:
        meta = json.loads(raw.rstrip(b"\0").decode())
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ArtifactFormatError(f"{path}: corrupt artifact metadata ({e})") from None
    if not isinstance(meta, dict) or meta.get("format") != "minimlir-artifact":
        raise ArtifactFormatError(f"{path}: not a minimlir artifact (no artifact metadata)")
    meta["_machine"] = machine
    return meta


def _check_machine(path: Path, meta: Mapping[str, Any]) -> None:
    version = meta.get("abi_version")
    if version != ABI_VERSION:
        built = meta.get("compiler", {}).get("version", "?")
        raise AbiVersionError(
            f"{path}: artifact ABI version {version} (built by minimlir {built}), but this runtime reads "
            f"version {ABI_VERSION}: rebuild it with this minimlir's mini-compile"
        )
    arch = _cpu.host_arch()
    target = meta.get("target", {})
    if meta["_machine"] != arch or target.get("arch") != arch:
        raise ArtifactFormatError(
            f"{path}: built for {target.get('triple', meta['_machine'])}, this machine is {arch}"
        )
    lacking = _cpu.missing(arch, list(target.get("required", [])))
    if lacking:
        raise CpuFeatureError(
            f"{path}: this CPU lacks {', '.join(lacking)}, which the artifact's code uses (compiled for "
            f"cpu '{target.get('cpu')}'); rebuild it with mini-compile --cpu host (on this machine) or --cpu generic"
        )


class Model:
    """A loaded artifact: call it with arrays (see the module docstring). Outputs are a list."""

    def __init__(self, path: str | os.PathLike[str], params: str | os.PathLike[str] | None = None,
                 *, num_threads: int | None = None, verify: bool = False):
        path = Path(path)
        meta = read_metadata(path)
        _check_machine(path, meta)
        self.path = path
        self.metadata = {k: v for k, v in meta.items() if not k.startswith("_")}
        fn = meta["function"]
        self.entry = meta["entry"]
        self.allow_copy = False
        self._weights: dict[str, np.ndarray] = {}
        pmeta = meta["params"]
        self.params_path: Path | None = None
        if pmeta["mode"] == "separate":  # checked (and mapped) before the .so is
            file = Path(params) if params is not None else path.parent / pmeta["file"]
            self.params_path = file
            self._weights = _map_params(file, pmeta, verify)
        elif params is not None:
            raise LoadError(f"{path}: the weights are {'embedded' if pmeta['mode'] == 'embed' else 'absent'}; "
                            f"params= is not used")
        try:
            with _gomp.loading():  # the .so needs libgomp: a short spin unless the user set a policy
                self._lib = ctypes.CDLL(str(path.resolve()))
        except OSError as e:
            raise ArtifactFormatError(f"{path}: cannot load the shared object: {e}") from None
        lib = self._lib
        lib.mml_abi_version.restype = ctypes.c_int
        lib.mml_check_cpu.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
        err = ctypes.create_string_buffer(512)
        if lib.mml_abi_version() != ABI_VERSION:
            raise AbiVersionError(f"{path}: the code's ABI version {lib.mml_abi_version()} is not {ABI_VERSION}")
        if lib.mml_check_cpu(err, len(err)) != 0:  # cpuid / getauxval: baseline code, safe on any CPU
            raise CpuFeatureError(f"{path}: {err.value.decode(errors='replace')}")
        if pmeta["mode"] == "embed":
            self._weights = _embedded_params(lib, path, pmeta, verify)
        lib.mml_free.argtypes = [ctypes.c_void_p]
        lib.mml_free.restype = None
        self._free = lib.mml_free
        lib.mml_entry_address.restype = ctypes.c_void_p
        from minimlir.runtime._native import NativeFunction

        self._fn = NativeFunction(self, self.entry, fn, lib.mml_entry_address())
        _malloc.keep_pages()  # buffers keep their pages between calls (runtime/_malloc.py)
        self._threads = ctypes.c_int32.in_dll(lib, "minimlir_num_threads")
        if num_threads is not None:
            self.num_threads = num_threads
        else:
            self._pin_workers()
        self.inputs = meta["inputs"]
        self.outputs = meta["outputs"]

    # the program interface NativeFunction uses
    params_version = 0  # the weights are bound once, at load: native calls cache their pointers

    def param(self, name: str, function: str) -> np.ndarray:
        return self._weights[name]

    def release(self, ptr: int) -> None:
        self._free(ptr)

    @property
    def input_names(self) -> list[str]:
        return [s["name"] for s in self.inputs]

    @property
    def output_names(self) -> list[str]:
        return [s["name"] for s in self.outputs]

    @property
    def num_threads(self) -> int:
        """Threads of this artifact's parallel loops (0: libgomp's default, OMP_NUM_THREADS or one per core)."""
        return int(self._threads.value)

    @num_threads.setter
    def num_threads(self, n: int | None) -> None:
        if n is not None and (not isinstance(n, int) or n < 0):
            raise ValueError(f"num_threads must be an int >= 0, got {n!r}")
        self._threads.value = int(n or 0)
        self._pin_workers()

    def _pin_workers(self) -> None:
        """Pin libgomp's workers one per core for this thread count (runtime/_gomp.py says why)."""
        try:  # the libgomp the .so loaded; none when the code has no parallel loop
            gomp = ctypes.CDLL("libgomp.so.1", mode=os.RTLD_NOLOAD | os.RTLD_GLOBAL)
        except (OSError, AttributeError):
            return
        _gomp.pin_workers(gomp, int(self._threads.value))

    def __repr__(self) -> str:
        def spec(s):
            return f"{s['name']}: {s['dtype']}[{', '.join('?' if d is None else str(d) for d in s['dims'])}]"

        return (f"<minimlir.runtime.Model {self.path.name} @{self.entry}({', '.join(map(spec, self.inputs))})"
                f" -> ({', '.join(map(spec, self.outputs))})>")

    def __call__(self, *args: Any, out: Sequence[Any] | None = None, **kwargs: Any) -> list[np.ndarray]:
        if out is not None:
            out = list(out) if isinstance(out, (list, tuple)) else [out]
        result = self._fn(*args, out=out, **kwargs)
        return list(result) if isinstance(result, tuple) else [result]

    def run(self, feeds: Mapping[str, Any] | Sequence[Any], out: Sequence[Any] | None = None) -> list[np.ndarray]:
        """Run with inputs by name (a dict) or in order (a list); returns the outputs as a list."""
        if isinstance(feeds, Mapping):
            return self(out=out, **feeds)
        return self(*feeds, out=out)


def _map_params(file: Path, pmeta: Mapping[str, Any], verify: bool) -> dict[str, np.ndarray]:
    import numpy as np

    from minimlir.runtime import _params

    if not file.is_file():
        raise ParamsMismatchError(f"{file}: the artifact's params file does not exist (pass params= to load)")
    try:
        header = _params.read_header(file)
    except _params.ParamsFormatError as e:
        raise ParamsMismatchError(str(e)) from None
    _check_params(file, header, pmeta)
    if verify and _params.checksum(file, header) != pmeta["sha256"]:
        raise ParamsMismatchError(f"{file}: the weights' bytes do not match their sha256 (the file was changed)")
    blob = np.memmap(file, dtype=np.uint8, mode="r")
    return _params.views(blob, header.tensors)


def _check_params(label: Any, header: _params.ParamsHeader, pmeta: Mapping[str, Any]) -> None:
    want = pmeta["sha256"]
    if header.sha256 != want:
        got = header.sha256[:16] + "…" if header.sha256 else "none"
        raise ParamsMismatchError(
            f"{label}: these params are not the artifact's (sha256 {got}, the artifact was built with "
            f"{want[:16]}…): another model's or changed weights"
        )
    if header.tensors != pmeta["tensors"]:
        raise ParamsMismatchError(f"{label}: the params' layout is not the one the artifact was built with")


def _embedded_params(lib: ctypes.CDLL, path: Path, pmeta: Mapping[str, Any], verify: bool) -> dict[str, np.ndarray]:
    import numpy as np

    from minimlir.runtime import _params

    size = int(pmeta["nbytes"])
    base = ctypes.addressof(ctypes.c_uint8.in_dll(lib, "minimlir_params"))
    raw = (ctypes.c_uint8 * size).from_address(base)
    blob = np.frombuffer(raw, dtype=np.uint8)
    blob.flags.writeable = False
    try:
        header = _params.read_header(memoryview(blob), name=f"{path} (embedded params)")
    except _params.ParamsFormatError as e:
        raise ParamsMismatchError(str(e)) from None
    _check_params(f"{path} (embedded params)", header, pmeta)
    if verify and _params.checksum(memoryview(blob), header) != pmeta["sha256"]:
        raise ParamsMismatchError(f"{path}: the embedded weights do not match their sha256 (the file was changed)")
    weights = _params.views(blob, header.tensors)
    return weights


def load(path: str | os.PathLike[str], params: str | os.PathLike[str] | None = None, *,
         num_threads: int | None = None, verify: bool = False) -> Model:
    """Load an artifact (see the module docstring). `params`: the params file of a separate-weights
    artifact (default: the one beside it); `verify`: also re-hash the weights' bytes."""
    return Model(path, params, num_threads=num_threads, verify=verify)
