"""The minimlir params file: named weights beside the IR, mapped into memory without a copy.

`graph.param "conv1.weight"` in the IR names a tensor stored here. The file is a small header plus
one raw blob, so a loader can `mmap` it and hand out zero-copy array views:

    offset 0   magic        8 bytes   b"MMLPARAM"
    offset 8   version      u32 LE    1
    offset 12  reserved     u32 LE    0
    offset 16  index_len    u64 LE    length in bytes of the JSON index that follows
    offset 24  index        UTF-8 JSON, then zero padding up to the first data offset
    data       each tensor's raw bytes (C order, little-endian), starting at a 64-byte aligned
               absolute file offset; zero padding between tensors and up to an aligned file length

The JSON index maps every name to its layout (offsets are absolute file offsets) and carries a
checksum of the whole file's content:

    {"sha256": "9f2c…", "tensors": {"fc.weight": {"dtype": "float32", "shape": [10, 4],
                                                  "offset": 128, "nbytes": 160}, ...}}

`sha256` is the SHA-256 of the compact JSON of `{"tensors": …}` (as written: `separators=(",",
":")`, insertion order) followed by every byte from the first data offset to the end of the file,
so it names both the layout and the values. It is the first key, so a C loader finds it at offset
24 + len('{"sha256":"'). Files written before the checksum existed have no `sha256`; they still load.

`dtype` is a NumPy dtype name: float32 float16 float64 int64 int32 int16 int8 uint8 bool.
A 0-d tensor has `"shape": []`; an empty tensor has `"nbytes": 0` (its offset is still aligned).
Tensors are written in the order given. Readers must check the magic and version, and that every
`offset + nbytes` lies inside the file.

    save_params("model.params", {"w": np.ones((2, 3), np.float32)})
    load_params("model.params")["w"]      # read-only np.memmap view, no copy

This module needs only numpy (the artifact runtime, minimlir.runtime, reads params with it);
minimlir.compiler.params re-exports it.
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

MAGIC = b"MMLPARAM"
VERSION = 1
ALIGNMENT = 64
_HEADER = struct.Struct("<8sIIQ")  # magic, version, reserved, index_len
HEADER_SIZE = _HEADER.size

SUPPORTED_DTYPES = (
    "float32",
    "float16",
    "float64",
    "int64",
    "int32",
    "int16",
    "int8",
    "uint8",
    "bool",
)


class ParamsFormatError(ValueError):
    """The file is not a valid minimlir params file (the message names the file)."""


def _align(n: int) -> int:
    return (n + ALIGNMENT - 1) // ALIGNMENT * ALIGNMENT


def _layout_bytes(entries: dict[str, dict]) -> bytes:
    return json.dumps({"tensors": entries}, separators=(",", ":")).encode()


def save_params(path: str | os.PathLike[str], params: dict[str, np.ndarray]) -> str:
    """Write `params` (name -> array) to `path` in the format above; returns its sha256."""
    arrays: dict[str, np.ndarray] = {}
    for name, value in params.items():
        array = np.asarray(value)
        dtype = array.dtype.newbyteorder("<") if array.dtype.byteorder == ">" else array.dtype
        if dtype.name not in SUPPORTED_DTYPES:
            raise ValueError(f"params: tensor '{name}' has unsupported dtype {array.dtype}")
        arrays[name] = np.require(array, dtype=dtype, requirements="C")  # keeps 0-d arrays 0-d

    # The index holds absolute offsets, which depend on the index length: lay out with a guess
    # of the data start and grow it until the index fits in front of it.
    data_start = _align(_HEADER.size + 64 * (len(arrays) + 1) + 80)
    while True:
        entries: dict[str, dict] = {}
        offset = data_start
        for name, array in arrays.items():
            entries[name] = {
                "dtype": array.dtype.name,
                "shape": list(array.shape),
                "offset": offset,
                "nbytes": int(array.nbytes),
            }
            offset = _align(offset + array.nbytes)
        end = offset
        layout = _layout_bytes(entries)
        index_len = len(layout) + len('"sha256":"",') + 64
        if _HEADER.size + index_len <= data_start:
            break
        data_start = _align(_HEADER.size + index_len)

    digest = hashlib.sha256(layout)
    pos = data_start
    chunks: list[tuple[int, memoryview]] = []
    for name, array in arrays.items():
        gap = entries[name]["offset"] - pos
        data = memoryview(array.reshape(-1).view(np.uint8))  # no copy of mapped inputs
        digest.update(b"\0" * gap)
        digest.update(data)
        chunks.append((gap, data))
        pos = entries[name]["offset"] + array.nbytes
    digest.update(b"\0" * (end - pos))
    sha = digest.hexdigest()
    index = ('{"sha256":"' + sha + '",' + layout.decode()[1:]).encode()
    assert len(index) == index_len

    with open(path, "wb") as f:
        f.write(_HEADER.pack(MAGIC, VERSION, 0, len(index)))
        f.write(index)
        f.write(b"\0" * (data_start - f.tell()))
        for gap, data in chunks:
            f.write(b"\0" * gap)
            f.write(data)
        # Pad the file to an aligned length so the last tensor's page is fully backed.
        f.write(b"\0" * (end - f.tell()))
    return sha


@dataclass
class ParamsHeader:
    """What the header and index of a params file say (offsets are absolute)."""

    tensors: dict[str, dict]
    sha256: str | None  # None for files written before the checksum existed
    data_start: int  # the first data offset (the file's end when there is no tensor)
    size: int  # the length of the file (or buffer)


def read_header(source: str | os.PathLike[str] | bytes | memoryview, name: str | None = None) -> ParamsHeader:
    """Check and read the header and index of a params file, or of the same bytes in memory
    (an artifact's embedded weights). Raises ParamsFormatError naming `name` (default: the path)."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        buf = memoryview(source)
        label = name or "<embedded params>"
        size = len(buf)
        header = bytes(buf[: _HEADER.size])
        read_index_bytes = lambda n: bytes(buf[_HEADER.size : _HEADER.size + n])  # noqa: E731
        f = None
    else:
        path = Path(source)
        label = name or str(path)
        size = path.stat().st_size
        f = open(path, "rb")
        header = f.read(_HEADER.size)
        read_index_bytes = f.read
    try:
        if len(header) < _HEADER.size:
            raise ParamsFormatError(f"{label}: not a minimlir params file (too short: truncated?)")
        magic, version, _, index_len = _HEADER.unpack(header)
        if magic != MAGIC:
            raise ParamsFormatError(f"{label}: not a minimlir params file (bad magic)")
        if version != VERSION:
            raise ParamsFormatError(f"{label}: unsupported params version {version} (this reader: {VERSION})")
        if _HEADER.size + index_len > size:
            raise ParamsFormatError(f"{label}: truncated params index")
        raw = read_index_bytes(index_len)
    finally:
        if f is not None:
            f.close()
    try:
        index = json.loads(raw.decode())
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ParamsFormatError(f"{label}: corrupt params index ({e})") from None
    tensors = index.get("tensors") if isinstance(index, dict) else None
    if not isinstance(tensors, dict):
        raise ParamsFormatError(f"{label}: corrupt params index (no 'tensors')")
    sha = index.get("sha256")
    if sha is not None and not (isinstance(sha, str) and len(sha) == 64):
        raise ParamsFormatError(f"{label}: corrupt params index (bad 'sha256')")
    first = size
    for tname, entry in tensors.items():
        try:
            dtype = np.dtype(entry["dtype"])
            shape = tuple(int(d) for d in entry["shape"])
            offset, nbytes = int(entry["offset"]), int(entry["nbytes"])
        except (KeyError, TypeError, ValueError):
            raise ParamsFormatError(f"{label}: corrupt index entry for '{tname}'") from None
        if entry["dtype"] not in SUPPORTED_DTYPES or nbytes != dtype.itemsize * int(
            np.prod(shape, dtype=np.int64)
        ):
            raise ParamsFormatError(f"{label}: inconsistent index entry for '{tname}'")
        if offset % ALIGNMENT or offset < _HEADER.size + index_len:
            raise ParamsFormatError(f"{label}: tensor '{tname}' lies outside the data section")
        if offset + nbytes > size:
            raise ParamsFormatError(
                f"{label}: truncated: tensor '{tname}' lies outside the data section (it ends at byte "
                f"{offset + nbytes}, the file has {size} bytes)"
            )
        first = min(first, offset)
    if sha is not None and tensors and size < _align(max(e["offset"] + e["nbytes"] for e in tensors.values())):
        raise ParamsFormatError(f"{label}: truncated: the file ends before its aligned length")
    return ParamsHeader(tensors, sha, first, size)


def read_index(path: str | os.PathLike[str]) -> dict[str, dict]:
    """The JSON index of a params file: name -> {dtype, shape, offset, nbytes}."""
    return read_header(path).tensors


def checksum(source: str | os.PathLike[str] | bytes | memoryview, header: ParamsHeader | None = None) -> str:
    """Recompute the sha256 of a params file (or buffer), reading every byte (see the docstring)."""
    header = header or read_header(source)
    digest = hashlib.sha256(_layout_bytes(header.tensors))
    if isinstance(source, (bytes, bytearray, memoryview)):
        digest.update(memoryview(source)[header.data_start :])
    else:
        with open(source, "rb") as f:
            f.seek(header.data_start)
            while chunk := f.read(1 << 22):
                digest.update(chunk)
    return digest.hexdigest()


def views(blob: np.ndarray, tensors: dict[str, dict]) -> dict[str, np.ndarray]:
    """name -> a zero-copy view of `blob` (uint8, the whole file) for every tensor of the index."""
    out: dict[str, np.ndarray] = {}
    for name, entry in tensors.items():
        start, nbytes = entry["offset"], entry["nbytes"]
        view = blob[start : start + nbytes].view(np.dtype(entry["dtype"]))
        out[name] = view.reshape(tuple(entry["shape"]))
    return out


def load_params(path: str | os.PathLike[str]) -> dict[str, np.ndarray]:
    """Map a params file: name -> read-only `np.memmap` view into one shared mapping (no copy)."""
    tensors = read_index(path)
    if not tensors:
        return {}
    return views(np.memmap(path, dtype=np.uint8, mode="r"), tensors)
