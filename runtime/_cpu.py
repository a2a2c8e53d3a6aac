"""This machine's architecture and CPU features, as the artifact loader checks them (no native code).

`host_flags()` reads /proc/cpuinfo ("flags" on x86-64, "Features" on AArch64); an artifact's
metadata lists the LLVM feature names its code may use (`target.required`), and `missing(...)`
maps them to cpuinfo flags with CPUINFO_FLAGS (also the table backend/_target.py chooses the
required features from: only features listed here are recorded and checked).
"""

from __future__ import annotations

import functools
import os

CPUINFO_FLAGS: dict[str, dict[str, str]] = {
    "x86_64": {
        "sse": "sse", "sse2": "sse2", "sse3": "pni", "ssse3": "ssse3", "sse4.1": "sse4_1",
        "sse4.2": "sse4_2", "popcnt": "popcnt", "cx16": "cx16", "pclmul": "pclmulqdq", "aes": "aes",
        "movbe": "movbe", "avx": "avx", "f16c": "f16c", "fma": "fma", "bmi": "bmi1", "avx2": "avx2",
        "bmi2": "bmi2", "lzcnt": "abm", "sse4a": "sse4a", "sha": "sha_ni", "avx512f": "avx512f",
        "avx512bw": "avx512bw", "avx512cd": "avx512cd", "avx512dq": "avx512dq", "avx512vl": "avx512vl",
        "avx512ifma": "avx512ifma", "avx512vbmi": "avx512vbmi", "avx512vbmi2": "avx512_vbmi2",
        "gfni": "gfni", "vaes": "vaes", "vpclmulqdq": "vpclmulqdq", "avx512vnni": "avx512_vnni",
        "avx512bitalg": "avx512_bitalg", "avx512vpopcntdq": "avx512_vpopcntdq",
        "avx512fp16": "avx512_fp16", "avx512bf16": "avx512_bf16", "avxvnni": "avx_vnni",
    },
    "aarch64": {
        "neon": "asimd", "fp-armv8": "fp", "crc": "crc32", "lse": "atomics", "rcpc": "lrcpc",
        "fullfp16": "fphp", "dotprod": "asimddp", "sve": "sve", "bf16": "bf16", "i8mm": "i8mm",
        "aes": "aes", "sha2": "sha2",
    },
}


def host_arch() -> str:
    m = os.uname().machine.lower()
    return {"amd64": "x86_64", "arm64": "aarch64"}.get(m, m)


@functools.cache
def host_flags() -> frozenset[str]:
    """The CPU flags the kernel reports for this machine (empty if /proc/cpuinfo is unreadable)."""
    key = "features" if host_arch() == "aarch64" else "flags"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                name, _, value = line.partition(":")
                if name.strip().lower() == key:
                    return frozenset(value.split())
    except OSError:
        pass
    return frozenset()


def missing(arch: str, required: list[str], flags: frozenset[str] | None = None) -> list[str] | None:
    """The required LLVM features this CPU lacks ([] if none), or None when the flags are unknown."""
    flags = host_flags() if flags is None else flags
    if not flags:
        return None
    table = CPUINFO_FLAGS.get(arch, {})
    return [f for f in required if f in table and table[f] not in flags]
