"""libgomp's wait policy for minimlir's parallel loops: a short spin unless the user chose one.

How long an idle libgomp worker spins before it sleeps decides two costs. libgomp's default
(OMP_WAIT_POLICY unset: GOMP_SPINCOUNT = 300000 pause loops, milliseconds) keeps 2 cores busy
between two kernels, during the Python side of a call and after the call returns: on a machine
where anything else runs (onnxruntime's own spinning pool interleaved in a benchmark, another
process) the spinning worker takes the core the next region's other thread needs (measured on the
BERT-like encoder, 2 cores, load about 3-5: 2-thread medians of 200-1300 ms against 39-60 ms at 1
thread). Passive waiting (spin 0) puts the worker to sleep after every region, and each region then
starts with a futex wake-up: on a virtual machine waking a halted vCPU costs tens of microseconds,
more than a decode step's small kernels take (measured on the 2-vCPU Firecracker VM, GPT-2 decode at
2 threads, benchmarks/decode.py --threads 2: passive 149 tokens/s, spin 30000 4000, onnxruntime
4900; prefill 6.96 ms passive, 0.47 ms spinning).

So by default the worker spins DEFAULT_SPINCOUNT pause loops (a fraction of a millisecond: long
enough to bridge the gaps between the kernels of a call and between the calls of a decode loop,
short enough not to hold a core long after a call returns). libgomp reads GOMP_SPINCOUNT and
OMP_WAIT_POLICY once, when it is loaded (its constructor), so `loading()` sets ours in the process
environment around the dlopen that first loads it (the JIT's load of libgomp, or an artifact's .so
that needs it) and restores the environment after. A user's OMP_WAIT_POLICY or GOMP_SPINCOUNT is
respected (nothing set), and so is MINIMLIR_GOMP_WAIT_POLICY=active|passive (ours only: libgomp's
spin-forever or sleep-at-once). Once libgomp is loaded the policy is fixed for the process.

Worker threads are pinned, one per core (`pin_workers`): with nothing pinned, a worker that slept
through a pause between calls is sometimes woken onto the core its master thread runs on, and the
two share that core for milliseconds until the scheduler moves one (measured on SqueezeNet, 2
threads, 2 vCPUs, a call after a 0.1 s pause: unpinned, 6 of 30 and in a slower phase 9 of 20 calls
took 10-34 ms against a median of 4.4-5.4 ms; pinned, 0 and 1 of 30, median 4.6-4.9 ms).
Only the workers are pinned, never the calling thread: libgomp's OMP_PROC_BIND would bind the
master too, and every thread the program starts afterwards (onnxruntime's pool, say) would inherit
that one core. A user's OMP_PROC_BIND,
OMP_PLACES or GOMP_CPU_AFFINITY is respected (nothing pinned), and MINIMLIR_PIN_THREADS=0 turns it off.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
from collections.abc import Iterator

DEFAULT_SPINCOUNT = 20000
_USER_VARS = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")


def wait_policy(environ: dict[str, str] | os._Environ | None = None) -> dict[str, str] | None:
    """The variables we would set for libgomp's load; None when the user chose a policy."""
    env = os.environ if environ is None else environ
    if any(v in env for v in _USER_VARS):
        return None
    ours = env.get("MINIMLIR_GOMP_WAIT_POLICY", "").strip().lower()
    if ours in ("active", "passive"):
        return {"OMP_WAIT_POLICY": ours}
    return {"GOMP_SPINCOUNT": str(DEFAULT_SPINCOUNT)}


@contextlib.contextmanager
def loading() -> Iterator[None]:
    """Around the dlopen that may first load libgomp: our wait policy in the environment."""
    policy = wait_policy()
    if policy is None:
        yield
        return
    os.environ.update(policy)
    try:
        yield
    finally:
        for k in policy:
            os.environ.pop(k, None)


_AFFINITY_VARS = ("OMP_PROC_BIND", "OMP_PLACES", "GOMP_CPU_AFFINITY")
_pinned: dict[int, int] = {}  # libgomp's dlopen handle -> the largest team whose workers were pinned
_BODY = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


def pin_plan(n: int, cpus: list[int], environ: dict[str, str] | os._Environ | None = None) -> dict[int, int] | None:
    """Worker thread number -> the core it is pinned to, for a team of n; None: pin nothing.

    Worker i (1 <= i < n) gets the i-th allowed core; thread 0 (the caller) is left free. Nothing is
    pinned for one thread, for more threads than allowed cores (pinning would stack workers), or
    when the user chose a binding or set MINIMLIR_PIN_THREADS=0."""
    env = os.environ if environ is None else environ
    if any(v in env for v in _AFFINITY_VARS) or env.get("MINIMLIR_PIN_THREADS", "1").strip() == "0":
        return None
    if n <= 1 or n > len(cpus):
        return None
    return {i: cpus[i] for i in range(1, n)}


def pin_workers(lib: ctypes.CDLL, n: int) -> bool:
    """Pin the workers of the calling thread's libgomp pool for a team of n, 0: libgomp's default
    (omp_get_max_threads); see the module docstring.

    Runs one parallel region of n threads in which each worker sets its own affinity: libgomp keeps
    those threads for later regions of up to n threads. Once per larger team; True when pinned."""
    if n == 0:
        lib.omp_get_max_threads.restype = ctypes.c_int
        n = lib.omp_get_max_threads()
    if n <= _pinned.get(lib._handle, 1):
        return False
    try:
        cpus = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        return False
    plan = pin_plan(n, cpus)
    if plan is None:
        return False
    lib.omp_get_thread_num.restype = ctypes.c_int

    def body(_ctx: int | None) -> None:
        cpu = plan.get(lib.omp_get_thread_num())
        if cpu is not None:
            with contextlib.suppress(OSError):
                os.sched_setaffinity(0, {cpu})  # 0: the calling thread

    fn = _BODY(body)
    lib.GOMP_parallel.restype = None
    lib.GOMP_parallel(fn, None, ctypes.c_uint(n), ctypes.c_uint(0))
    _pinned[lib._handle] = n
    return True


__all__ = ["DEFAULT_SPINCOUNT", "loading", "pin_plan", "pin_workers", "wait_policy"]
