"""On-disk cache of compiled object code, so that the same IR is compiled only once.

Two users, two keys (both sha256, both include the host CPU name + features, llvmlite
version, opt level and FORMAT_VERSION):
- backend/jit.py `compile_module`: keyed by the llvm-dialect IR (skips LLVM -O3 + codegen);
- backend/runtime.py `compile_mlir_text`: keyed by the *input* IR text + pipeline + entry +
  minimlir version + a fingerprint of minimlir's own sources (runtime.compile_key), so a hit
  skips parsing and every xDSL pass too. Its entries carry `meta`: the runtime metadata.
Location: the `cache` argument, else `$MINIMLIR_CACHE_DIR`, else `~/.cache/minimlir`.

One entry is one file `<key>.mmo`:

    b"MMLIRC02" | u64 object length | u64 IR length | u64 meta length
                | sha256(object + IR + meta) | object | IR | meta

(the IR is the optimized LLVM IR, kept so `CompiledModule.llvm_ir` works on a hit; meta is a
UTF-8 JSON document, empty for jit-level entries).
Writers write a temp file in the same folder and `os.replace` it into place, so readers
only ever see a whole entry; an entry whose lengths or digest do not match (truncated,
corrupted) counts as a miss, is removed and rebuilt.
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import llvmlite

from minimlir.backend import _target
from minimlir.compiler.cache_key import digest  # noqa: F401 (the one digest; re-exported)

_MAGIC = b"MMLIRC02"
_HEADER = struct.Struct("<8sQQQ32s")
FORMAT_VERSION = 2


@dataclass
class CacheStats:
    """Counters for this process (tests use them to tell hits from misses)."""

    hits: int = 0
    misses: int = 0
    corrupted: int = 0
    writes: int = 0
    write_errors: int = 0


_STATS = CacheStats()


def stats() -> CacheStats:
    """The live counters of this process."""
    return _STATS


def reset_stats() -> None:
    global _STATS
    _STATS = CacheStats()


def cache_dir(path: str | os.PathLike[str] | None = None) -> Path:
    """The cache folder: `path`, else $MINIMLIR_CACHE_DIR, else ~/.cache/minimlir."""
    if path is not None:
        return Path(path)
    env = os.environ.get("MINIMLIR_CACHE_DIR")
    if env:
        return Path(env)
    return Path.home() / ".cache" / "minimlir"


def host_parts() -> tuple[str, ...]:
    """What makes object code specific to this machine and toolchain (part of every key)."""
    return (
        _target.host_triple(),
        _target.host_cpu(),
        _target.host_features(),
        llvmlite.__version__,
        str(FORMAT_VERSION),
    )


def cache_key(ir_text: str, opt_level: int) -> str:
    h = hashlib.sha256()
    for part in (
        ir_text,
        _target.host_triple(),
        _target.host_cpu(),
        _target.host_features(),
        llvmlite.__version__,
        str(opt_level),
        str(FORMAT_VERSION),
    ):
        data = part.encode()
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


def entry_path(directory: Path, key: str) -> Path:
    return directory / f"{key}.mmo"


@dataclass
class Entry:
    """A valid cache entry: object code, optimized LLVM IR, metadata (None if the entry has none)."""

    obj: bytes
    ir: str
    meta: Any = None


def load(directory: Path, key: str) -> tuple[bytes, str] | None:
    """(object code, optimized IR) of a valid entry, or None (missing or corrupted)."""
    entry = load_entry(directory, key)
    return None if entry is None else (entry.obj, entry.ir)


def load_entry(directory: Path, key: str) -> Entry | None:
    """The entry stored under `key`, or None: missing, unreadable or corrupted (a corrupted
    entry is removed, so the caller's rebuild replaces it)."""
    path = entry_path(directory, key)
    try:
        data = path.read_bytes()
    except OSError:
        _STATS.misses += 1
        return None
    parsed = _parse(data)
    if parsed is None:
        _STATS.corrupted += 1
        _STATS.misses += 1
        try:
            path.unlink()
        except OSError:
            pass
        return None
    _STATS.hits += 1
    return parsed


def _parse(data: bytes) -> Entry | None:
    if len(data) < _HEADER.size:
        return None
    magic, obj_len, ir_len, meta_len, digest_ = _HEADER.unpack_from(data)
    if magic != _MAGIC or _HEADER.size + obj_len + ir_len + meta_len != len(data):
        return None
    body = data[_HEADER.size :]
    if hashlib.sha256(body).digest() != digest_:
        return None
    try:
        ir_text = body[obj_len : obj_len + ir_len].decode()
        meta_bytes = body[obj_len + ir_len :]
        meta = json.loads(meta_bytes.decode()) if meta_bytes else None
    except (UnicodeDecodeError, ValueError):
        return None
    return Entry(body[:obj_len], ir_text, meta)


def store(directory: Path, key: str, obj: bytes, ir_text: str, meta: Any = None) -> bool:
    """Write an entry atomically (temp file + os.replace). False if the folder is unusable.

    `meta` (JSON-serializable) is stored beside the object code. Two processes storing the
    same key both succeed: each renames its own complete temp file, the last one wins."""
    ir_bytes = ir_text.encode()
    meta_bytes = b"" if meta is None else json.dumps(meta, sort_keys=True).encode()
    body = obj + ir_bytes + meta_bytes
    header = _HEADER.pack(
        _MAGIC, len(obj), len(ir_bytes), len(meta_bytes), hashlib.sha256(body).digest()
    )
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{key[:16]}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(header)
                f.write(body)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, entry_path(directory, key))
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
    except OSError:
        _STATS.write_errors += 1
        return False
    _STATS.writes += 1
    return True
