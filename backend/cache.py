"""On-disk cache of compiled object code, so that the same IR is optimized only once.

Key: sha256 of (llvm-dialect IR text, host CPU name, CPU features, llvmlite version,
opt level, entry format version). Location: the `cache` argument of `compile_module`, else
`$MINIMLIR_CACHE_DIR`, else `~/.cache/minimlir`.

One entry is one file `<key>.mmo`:

    b"MMLIRC01" | u64 object length | u64 IR length | sha256(object + IR) | object | IR

(the IR is the optimized LLVM IR, kept so `CompiledModule.llvm_ir` works on a hit).
Writers write a temp file in the same folder and `os.replace` it into place, so readers
only ever see a whole entry; an entry whose lengths or digest do not match (truncated,
corrupted) counts as a miss, is removed and rebuilt.
"""

from __future__ import annotations

import hashlib
import os
import struct
import tempfile
from dataclasses import dataclass
from pathlib import Path

import llvmlite

from minimlir.backend import _target

_MAGIC = b"MMLIRC01"
_HEADER = struct.Struct("<8sQQ32s")
FORMAT_VERSION = 1


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


def load(directory: Path, key: str) -> tuple[bytes, str] | None:
    """(object code, optimized IR) of a valid entry, or None (missing or corrupted)."""
    path = entry_path(directory, key)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        _STATS.misses += 1
        return None
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


def _parse(data: bytes) -> tuple[bytes, str] | None:
    if len(data) < _HEADER.size:
        return None
    magic, obj_len, ir_len, digest = _HEADER.unpack_from(data)
    if magic != _MAGIC or _HEADER.size + obj_len + ir_len != len(data):
        return None
    body = data[_HEADER.size :]
    if hashlib.sha256(body).digest() != digest:
        return None
    try:
        ir_text = body[obj_len:].decode()
    except UnicodeDecodeError:
        return None
    return body[:obj_len], ir_text


def store(directory: Path, key: str, obj: bytes, ir_text: str) -> bool:
    """Write an entry atomically (temp file + os.replace). False if the folder is unusable."""
    ir_bytes = ir_text.encode()
    body = obj + ir_bytes
    header = _HEADER.pack(_MAGIC, len(obj), len(ir_bytes), hashlib.sha256(body).digest())
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
