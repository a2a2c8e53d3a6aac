"""The parallel runtime: libgomp's thread pool behind `GOMP_parallel`, and the thread count.

Compiled code (passes/convert_parallel_to_llvm.py) runs a parallel loop as

    GOMP_parallel(@body_omp, ctx, minimlir_num_threads, 0)

libgomp keeps its worker threads alive between parallel regions (no thread is created per
call after the first). `minimlir_num_threads` is an i32 owned by this module and handed to
MCJIT's symbol resolver with `llvm.add_symbol`; 0 means libgomp's default (OMP_NUM_THREADS,
else the number of cores). It is process-wide:

    from minimlir.backend import parallel
    parallel.set_num_threads(2)        # or MINIMLIR_NUM_THREADS=2 in the environment
    parallel.get_num_threads()         # the count the next parallel loop will use

Idle workers spin briefly, then sleep (GOMP_SPINCOUNT=runtime._gomp.DEFAULT_SPINCOUNT when libgomp
is loaded, unless the user set OMP_WAIT_POLICY or GOMP_SPINCOUNT): libgomp's default spinning
takes the cores from the next region's threads whenever anything else runs, and sleeping at once
makes every region pay a wake-up (runtime/_gomp.py has the numbers). The workers (never the
calling thread) are pinned one per core when the thread count is set (`_gomp.pin_workers`: a woken
worker sharing its master's core made one call in five take several times the median).

If libgomp cannot be loaded, `available()` is False (with a one-time warning) and the parallel
lowering leaves the loops serial.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
import warnings

from minimlir.runtime import _gomp

NUM_THREADS_SYMBOL = "minimlir_num_threads"
_LIBGOMP_CANDIDATES = ("libgomp.so.1", "/lib/x86_64-linux-gnu/libgomp.so.1", "libgomp.so")

_num_threads = ctypes.c_int32(0)


@functools.cache
def _libgomp() -> ctypes.CDLL | None:
    import llvmlite.binding as llvm

    from minimlir.backend import _target

    _target.init_llvm()
    names = list(_LIBGOMP_CANDIDATES)
    found = ctypes.util.find_library("gomp")
    if found:
        names.insert(0, found)
    for name in names:
        try:
            with _gomp.loading():  # a short spin unless the user set a policy (runtime/_gomp.py)
                lib = ctypes.CDLL(name)
        except OSError:
            continue
        try:
            path = name if "/" in name else _loaded_path(name) or name
            llvm.load_library_permanently(path)
        except RuntimeError:
            continue
        llvm.add_symbol(NUM_THREADS_SYMBOL, ctypes.addressof(_num_threads))
        env = os.environ.get("MINIMLIR_NUM_THREADS")
        if env:
            try:
                _num_threads.value = max(0, int(env))
            except ValueError:
                warnings.warn(f"MINIMLIR_NUM_THREADS={env!r} is not an integer; ignored", stacklevel=2)
        return lib
    warnings.warn(
        "minimlir: libgomp could not be loaded; parallel loops run serially", RuntimeWarning, stacklevel=2
    )
    return None


def _loaded_path(soname: str) -> str | None:
    """The file a dlopen'ed soname resolved to (from /proc/self/maps)."""
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                if line.rstrip().endswith(soname) or f"/{soname}" in line:
                    return line.split()[-1]
    except OSError:
        pass
    return None


def ensure_pinned() -> None:
    """Pin libgomp's workers for the current thread count (runtime/_gomp.py `pin_workers`: once
    per larger team). Called where parallel code is about to run (a JIT module's load,
    set_num_threads), never when libgomp is merely loaded: loading happens at compile time too, in
    forked compile workers, and libgomp is not fork-safe (a worker forked from a process whose
    pool had started, the cost model's LightGBM in mini-tune, waited forever in the pinning
    region's barrier for threads that did not survive the fork)."""
    lib = _libgomp()
    if lib is not None:
        _gomp.pin_workers(lib, _num_threads.value)


def available() -> bool:
    """libgomp is loaded and its symbols (and ours) resolve in JIT-compiled code."""
    return _libgomp() is not None


def cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def set_num_threads(n: int | None) -> None:
    """Threads for every parallel loop from now on (process-wide); None or 0: the default."""
    if n is not None and n < 0:
        raise ValueError(f"num_threads must be >= 0, got {n}")
    lib = _libgomp()
    _num_threads.value = int(n or 0)
    if lib is not None:
        _gomp.pin_workers(lib, _num_threads.value)


def get_num_threads() -> int:
    """The thread count parallel loops use (resolving 0 to libgomp's default)."""
    lib = _libgomp()
    if _num_threads.value > 0:
        return _num_threads.value
    if lib is None:
        return 1
    return int(lib.omp_get_max_threads())
