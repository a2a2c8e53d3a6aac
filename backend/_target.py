"""The host target: LLVM initialization, triple, CPU, features, target machines, libm.

Everything here is computed once per process. The CPU name and feature string are what
make LLVM use AVX2 / AVX-512 / FMA on this machine (they are also part of the cache key).
"""

from __future__ import annotations

import ctypes.util
import functools
import threading

import llvmlite.binding as llvm

_lock = threading.Lock()


@functools.cache
def init_llvm() -> None:
    """Initialize the native target and asm printer (idempotent)."""
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    llvm.initialize_native_asmparser()
    load_libm()


@functools.cache
def load_libm() -> list[str]:
    """Make libm's symbols (tanhf, erff, …) and libgcc's (`__powisf2`, which LLVM emits for
    llvm.powi) visible to MCJIT's symbol resolver. MCJIT turns a symbol it cannot find into
    a null address, so a missing library would be a segfault at call time."""
    loaded = []
    for lib in ("m", "gcc_s"):
        path = ctypes.util.find_library(lib)
        if path is not None:
            llvm.load_library_permanently(path)
            loaded.append(path)
    return loaded


@functools.cache
def host_triple() -> str:
    return llvm.get_process_triple()


@functools.cache
def host_cpu() -> str:
    return llvm.get_host_cpu_name()


@functools.cache
def host_features() -> str:
    try:
        return llvm.get_host_cpu_features().flatten()
    except RuntimeError:  # not available on every host
        return ""


def target_machine(
    opt_level: int = 3,
    *,
    reloc: str = "default",
    codemodel: str = "jitdefault",
    jit: bool = True,
    cpu: str | None = None,
    features: str | None = None,
) -> llvm.TargetMachine:
    """A target machine for the host (or the given cpu/features)."""
    init_llvm()
    target = llvm.Target.from_triple(host_triple())
    with _lock:
        return target.create_target_machine(
            cpu=host_cpu() if cpu is None else cpu,
            features=host_features() if features is None else features,
            opt=opt_level,
            reloc=reloc,
            codemodel=codemodel,
            jit=jit,
        )
