"""The compile cache key, one recipe for every cache (frontend.compile's and the JIT's):

    sha256 over (kind, the input's parts …, minimlir and xDSL versions, a fingerprint of minimlir's
                 sources, the host (triple, CPU, features, llvmlite: backend.cache.host_parts()),
                 the LLVM optimization level)

so editing any pass, the driver or the backend invalidates every entry, and object code never
crosses machines. The thread count is not part of it: the same code runs with any pool size.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import importlib.util
from collections.abc import Sequence
from pathlib import Path

SOURCE_PACKAGES = (
    "minimlir.dialects",
    "minimlir.passes",
    "minimlir.compiler",
    "minimlir.backend",
    "minimlir.frontend",
    "minimlir.runtime",
    "minimlir.tuning",
    "minimlir.tools",
)


def digest(parts: Sequence[str]) -> str:
    """sha256 of length-prefixed parts (no two part lists collide by concatenation)."""
    h = hashlib.sha256()
    for part in parts:
        data = part.encode()
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


@functools.cache
def source_fingerprint(packages: tuple[str, ...] = SOURCE_PACKAGES) -> str:
    """sha256 over (path, size, mtime) of every .py file of `packages` (default: all of minimlir's):
    editing a pass, the driver or the runtime invalidates the compile cache. Computed once per
    process and package list (a stat per file, no reading)."""
    parts: list[str] = []
    for name in packages:
        spec = importlib.util.find_spec(name)
        roots = (spec.submodule_search_locations or ()) if spec is not None else ()
        for root in roots:
            base = Path(root)
            for f in sorted(base.rglob("*.py")):
                try:
                    st = f.stat()
                except OSError:
                    continue
                parts.append(f"{name}/{f.relative_to(base)}:{st.st_size}:{st.st_mtime_ns}")
    return digest(parts)


@functools.cache
def versions() -> tuple[str, ...]:
    out = []
    for dist in ("minimlir", "xdsl"):
        try:
            out.append(f"{dist}={importlib.metadata.version(dist)}")
        except importlib.metadata.PackageNotFoundError:
            out.append(f"{dist}=unknown")
    return tuple(out)


def cache_key(kind: str, parts: Sequence[str], *, host: Sequence[str], opt_level: int = 3) -> str:
    """The key of a cache entry of `kind` for an input named by `parts` (see the module docstring)."""
    return digest((kind, *parts, *versions(), source_fingerprint(), *host, str(opt_level)))
