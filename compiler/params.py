"""The minimlir params file: named weights beside the IR, mapped into memory without a copy.

`graph.param "conv1.weight"` in the IR names a tensor stored here. The file is a small header plus
one raw blob, so a loader can `mmap` it and hand out zero-copy array views:

    offset 0   magic        8 bytes   b"MMLPARAM"
    offset 8   version      u32 LE    1
    offset 12  reserved     u32 LE    0
    offset 16  index_len    u64 LE    length in bytes of the JSON index that follows
    offset 24  index        UTF-8 JSON, then zero padding up to the first data offset
    data       each tensor's raw bytes (C order, little-endian), starting at a 64-byte aligned
               absolute file offset; zero padding between tensors

The JSON index maps every name to its layout (offsets are absolute file offsets):

    {"tensors": {"fc.weight": {"dtype": "float32", "shape": [10, 4], "offset": 128, "nbytes": 160},
                 ...}}

`dtype` is a NumPy dtype name: float32 float16 float64 int64 int32 int16 int8 uint8 bool.
A 0-d tensor has `"shape": []`; an empty tensor has `"nbytes": 0` (its offset is still aligned).
Tensors are written in the order given. Readers must check the magic and version, and that every
`offset + nbytes` lies inside the file.

    save_params("model.params", {"w": np.ones((2, 3), np.float32)})
    load_params("model.params")["w"]      # read-only np.memmap view, no copy
"""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import numpy as np

MAGIC = b"MMLPARAM"
VERSION = 1
ALIGNMENT = 64
_HEADER = struct.Struct("<8sIIQ")  # magic, version, reserved, index_len

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


def save_params(path: str | os.PathLike[str], params: dict[str, np.ndarray]) -> None:
    """Write `params` (name -> array) to `path` in the format above."""
    arrays: dict[str, np.ndarray] = {}
    for name, value in params.items():
        array = np.asarray(value)
        dtype = array.dtype.newbyteorder("<") if array.dtype.byteorder == ">" else array.dtype
        if dtype.name not in SUPPORTED_DTYPES:
            raise ValueError(f"params: tensor '{name}' has unsupported dtype {array.dtype}")
        arrays[name] = np.require(array, dtype=dtype, requirements="C")  # keeps 0-d arrays 0-d

    # The index holds absolute offsets, which depend on the index length: lay out with a guess
    # of the data start and grow it until the index fits in front of it.
    data_start = _align(_HEADER.size + 64 * (len(arrays) + 1))
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
        index = json.dumps({"tensors": entries}, separators=(",", ":")).encode()
        if _HEADER.size + len(index) <= data_start:
            break
        data_start = _align(_HEADER.size + len(index))

    with open(path, "wb") as f:
        f.write(_HEADER.pack(MAGIC, VERSION, 0, len(index)))
        f.write(index)
        for name, array in arrays.items():
            f.write(b"\0" * (entries[name]["offset"] - f.tell()))
            f.write(array.reshape(-1).view(np.uint8).data)  # no copy of mapped inputs
        # Pad the file to an aligned length so the last tensor's page is fully backed.
        f.write(b"\0" * (_align(f.tell()) - f.tell()))


def read_index(path: str | os.PathLike[str]) -> dict[str, dict]:
    """The JSON index of a params file: name -> {dtype, shape, offset, nbytes}."""
    path = Path(path)
    try:
        size = path.stat().st_size
        with open(path, "rb") as f:
            header = f.read(_HEADER.size)
            if len(header) < _HEADER.size:
                raise ParamsFormatError(f"{path}: not a minimlir params file (too short)")
            magic, version, _, index_len = _HEADER.unpack(header)
            if magic != MAGIC:
                raise ParamsFormatError(f"{path}: not a minimlir params file (bad magic)")
            if version != VERSION:
                raise ParamsFormatError(f"{path}: unsupported params version {version}")
            if _HEADER.size + index_len > size:
                raise ParamsFormatError(f"{path}: truncated params index")
            index = json.loads(f.read(index_len).decode())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        if isinstance(e, OSError):
            raise
        raise ParamsFormatError(f"{path}: corrupt params index ({e})") from None
    tensors = index.get("tensors") if isinstance(index, dict) else None
    if not isinstance(tensors, dict):
        raise ParamsFormatError(f"{path}: corrupt params index (no 'tensors')")
    for name, entry in tensors.items():
        try:
            dtype = np.dtype(entry["dtype"])
            shape = tuple(int(d) for d in entry["shape"])
            offset, nbytes = int(entry["offset"]), int(entry["nbytes"])
        except (KeyError, TypeError, ValueError):
            raise ParamsFormatError(f"{path}: corrupt index entry for '{name}'") from None
        if entry["dtype"] not in SUPPORTED_DTYPES or nbytes != dtype.itemsize * int(
            np.prod(shape, dtype=np.int64)
        ):
            raise ParamsFormatError(f"{path}: inconsistent index entry for '{name}'")
        if offset % ALIGNMENT or offset < _HEADER.size + index_len or offset + nbytes > size:
            raise ParamsFormatError(f"{path}: tensor '{name}' lies outside the data section")
    return tensors


def load_params(path: str | os.PathLike[str]) -> dict[str, np.ndarray]:
    """Map a params file: name -> read-only `np.memmap` view into one shared mapping (no copy)."""
    tensors = read_index(path)
    if not tensors:
        return {}
    blob = np.memmap(path, dtype=np.uint8, mode="r")
    out: dict[str, np.ndarray] = {}
    for name, entry in tensors.items():
        start, nbytes = entry["offset"], entry["nbytes"]
        view = blob[start : start + nbytes].view(np.dtype(entry["dtype"]))
        out[name] = view.reshape(tuple(entry["shape"]))
    return out
