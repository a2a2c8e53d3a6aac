"""The host target: LLVM initialization, triple, CPU, features, target machines, libm.

Everything here is computed once per process. The CPU name and feature string are what
make LLVM use AVX2 / AVX-512 / FMA on this machine (they are also part of the cache key).
`Target` / `resolve` / `using` describe another machine (an artifact's `--cpu`/`--target`).
"""

from __future__ import annotations

import contextlib
import ctypes.util
import functools
import threading
from dataclasses import dataclass

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


# ---------------------------------------------------------------- targets other than the host
#
# An artifact (backend/artifact.py) may be built for another CPU or architecture. `Target` names
# what LLVM is told (triple, CPU, feature string) and what the code may use (`required`: LLVM
# feature names a loader checks before running it), and derives the schedule's view: the f32 lanes
# of a vector register and the number of vector registers (the register tiles' budget). While
# `using(target)` is active, the default schedule reads `current()` instead of the host.

_X86_V1 = ("sse", "sse2")
_X86_V2 = _X86_V1 + ("sse3", "ssse3", "sse4.1", "sse4.2", "popcnt", "cx16")
_X86_V3 = _X86_V2 + ("avx", "avx2", "fma", "bmi", "bmi2", "f16c", "lzcnt", "movbe")
_X86_V4 = _X86_V3 + ("avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl")
_X86_ICL = _X86_V4 + ("avx512vnni", "avx512vbmi", "avx512vbmi2", "avx512bitalg", "avx512vpopcntdq",
                      "avx512ifma", "gfni", "vaes", "vpclmulqdq")
X86_CPUS: dict[str, tuple[str, ...]] = {
    "generic": _X86_V1, "x86-64": _X86_V1, "x86-64-v2": _X86_V2, "x86-64-v3": _X86_V3,
    "x86-64-v4": _X86_V4, "nehalem": _X86_V2, "westmere": _X86_V2,
    "sandybridge": _X86_V2 + ("avx",), "ivybridge": _X86_V2 + ("avx", "f16c"),
    "haswell": _X86_V3, "broadwell": _X86_V3, "skylake": _X86_V3, "alderlake": _X86_V3 + ("avxvnni",),
    "znver1": _X86_V3, "znver2": _X86_V3, "znver3": _X86_V3,
    "skylake-avx512": _X86_V4, "cascadelake": _X86_V4 + ("avx512vnni",),
    "icelake-client": _X86_ICL, "icelake-server": _X86_ICL, "tigerlake": _X86_ICL,
    "sapphirerapids": _X86_ICL + ("avx512bf16", "avx512fp16", "avxvnni"),
    "znver4": _X86_ICL + ("avx512bf16",),
}
"""x86-64 CPU names `--cpu` accepts -> the vector ISA extensions LLVM may use for them."""

_A64_V8 = ("neon", "fp-armv8")
_A64_V82 = _A64_V8 + ("crc", "lse", "rcpc", "fullfp16", "dotprod")
AARCH64_CPUS: dict[str, tuple[str, ...]] = {
    "generic": _A64_V8, "cortex-a53": _A64_V8 + ("crc",), "cortex-a72": _A64_V8 + ("crc",),
    "cortex-a76": _A64_V82, "neoverse-n1": _A64_V82,
    "neoverse-v1": _A64_V82 + ("sve", "bf16", "i8mm"), "neoverse-n2": _A64_V82 + ("sve", "bf16", "i8mm"),
}
"""AArch64 CPU names `--cpu` accepts -> the extensions LLVM may use for them."""

# The checked features (LLVM name -> /proc/cpuinfo flag) are the artifact loader's table.
from minimlir.runtime._cpu import CPUINFO_FLAGS  # noqa: E402
from minimlir.runtime.errors import MinimlirError  # noqa: E402


@dataclass(frozen=True)
class Target:
    """A machine to generate code for: triple, LLVM CPU name and feature string, required features."""

    triple: str
    cpu: str
    features: str
    required: tuple[str, ...]

    @property
    def arch(self) -> str:
        return arch_of(self.triple)

    @property
    def is_host(self) -> bool:
        return self.triple == host_triple() and self.cpu == host_cpu() and self.features == host_features()

    @property
    def vector_width(self) -> int:
        """f32 lanes of the widest vector register the code may use."""
        if self.arch == "aarch64":
            return 4  # NEON (fixed-width vectors; SVE is not used)
        if "avx512f" in self.required:
            return 16
        return 8 if "avx" in self.required else 4

    @property
    def vector_registers(self) -> int:
        if self.arch == "aarch64":
            return 32
        return 32 if "avx512f" in self.required else 16


def arch_of(triple: str) -> str:
    head = triple.split("-", 1)[0]
    if head in ("x86_64", "amd64"):
        return "x86_64"
    if head in ("aarch64", "arm64"):
        return "aarch64"
    return head


class TargetError(MinimlirError, ValueError):
    """An unknown target triple or CPU name (the message lists the known ones)."""


def resolve(triple: str | None = None, cpu: str | None = None) -> Target:
    """The Target for `triple` (default: the host's) and `cpu`: "host" (this machine's CPU and
    features; only for the host's architecture), "generic" (the architecture's baseline) or a name
    from X86_CPUS / AARCH64_CPUS; None: "host" for the host's architecture, else "generic"."""
    host = host_triple()
    if triple is None or triple in ("host", "native"):
        triple = host
    arch = arch_of(triple)
    if cpu is None:  # the default: this machine, or the baseline of another architecture
        cpu = "host" if arch == arch_of(host) else "generic"
    if arch not in CPUINFO_FLAGS:
        raise TargetError(f"unsupported target '{triple}' (supported: x86_64-linux-gnu, aarch64-linux-gnu)")
    if "linux" not in triple:
        raise TargetError(f"unsupported target '{triple}': only Linux targets (…-linux-gnu)")
    triple = _normalize_triple(triple)
    if cpu == "host":
        if arch != arch_of(host):
            raise TargetError(f"--cpu host needs the host's architecture ({arch_of(host)}); "
                              f"for {arch} use --cpu generic or a CPU name")
        feats = host_features()
        known = CPUINFO_FLAGS[arch]
        required = tuple(f[1:] for f in feats.split(",") if f.startswith("+") and f[1:] in known)
        return Target(triple, host_cpu(), feats, required)
    table = X86_CPUS if arch == "x86_64" else AARCH64_CPUS
    if cpu not in table:
        raise TargetError(f"unknown CPU '{cpu}' for {arch} (known: host, {', '.join(table)})")
    required = table[cpu]
    llvm_cpu = "x86-64" if (arch, cpu) == ("x86_64", "generic") else cpu
    return Target(triple, llvm_cpu, ",".join(f"+{f}" for f in required), required)


def _normalize_triple(triple: str) -> str:
    parts = triple.split("-")
    if len(parts) == 3:  # aarch64-linux-gnu -> aarch64-unknown-linux-gnu
        parts.insert(1, "unknown")
    return "-".join(parts)


_active: Target | None = None


def current() -> Target | None:
    """The target being compiled for, or None for the host (see `using`)."""
    return _active


@contextlib.contextmanager
def using(target: Target | None):
    """Compile for `target` inside the block: the default schedule takes its vector width and
    register count from it (forked lowering workers inherit it)."""
    global _active
    saved, _active = _active, target
    try:
        yield target
    finally:
        _active = saved


def init_all_targets() -> None:
    """Make every target LLVM was built with available (for cross compilation)."""
    init_llvm()
    _init_all()


@functools.cache
def _init_all() -> None:
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()


def machine_for(target: Target, opt_level: int = 3) -> llvm.TargetMachine:
    """A position-independent target machine for a shared library built for `target`."""
    init_all_targets()
    with _lock:
        return llvm.Target.from_triple(target.triple).create_target_machine(
            cpu=target.cpu, features=target.features, opt=opt_level, reloc="pic", codemodel="default",
        )
