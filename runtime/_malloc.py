"""Keep large buffers' pages between calls (glibc malloc).

A compiled function allocates its arena and its results with aligned_alloc on every call. With
glibc's defaults a block above the mmap threshold (128 KiB, raised on the fly only up to the last
one freed) is an mmap of fresh pages, and a freed heap top above the trim threshold goes back to
the OS, so each call page-faults its buffers in again: a 7x7/2 conv (3 -> 96 channels at 224x224)
took 4.9 ms a call with 2200 minor faults (9 MB), 2.5 ms without; VGG-19 faulted 50 MB a call
(300 against 314 ms). onnxruntime keeps an arena for the same reason.

`keep_pages()` raises both thresholds once per process, when compiled code is loaded (never at
import): allocations up to 32 MiB (glibc's largest threshold) come from the heap, and up to
512 MiB of free heap top is kept. Opt out with MINIMLIR_MALLOC_TUNE=0 (then glibc's defaults, or
the host's own M_* settings, stay). Other C libraries are left alone."""

from __future__ import annotations

import ctypes
import os
import threading

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 << 20  # glibc's maximum (HEAP_MAX_SIZE / 2 on 64-bit)
TRIM_THRESHOLD = 512 << 20

_lock = threading.Lock()
_done: list[bool] = []


def keep_pages() -> bool:
    """Apply the thresholds (once per process); True when glibc accepted them."""
    with _lock:
        if not _done:
            _done.append(_apply())
        return _done[0]


def _apply() -> bool:
    if os.environ.get("MINIMLIR_MALLOC_TUNE", "1") == "0":
        return False
    try:
        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
        libc.gnu_get_libc_version  # glibc only: musl has no tunable thresholds
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))


__all__ = ["keep_pages"]
