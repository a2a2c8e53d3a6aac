"""The measuring process: one long-lived spawned process that loads each candidate's object code
and times it, one request at a time.

    server = MeasureServer()                  # spawned once; returns when the process is ready
    out = server.run(req)                     # {"error": "OK", "times": [...], "number": n, ...}
    server.close()

A request carries the candidate's object code and runtime metadata (tuning/builder.py), the task
(its shapes and dtypes for the inputs), the thread count, the seed and the timing settings. The
process loads the object with MCJIT (nothing is parsed, lowered or looked up), pins the thread
count, fills the inputs from the seed, runs the warm-up call(s), keeps a copy of the outputs of the
first call when asked (`save_outputs`: the reference check), picks a number of calls so that one
repeat lasts at least `min_repeat_ms`, times `repeats` repeats and drops the code again. With
`cold_args` (tuning/task.py: the weights of a model larger than the last-level cache), those
inputs are flushed from the caches (clflush) before each timed call and only the calls are timed.

It was spawned (never forked from the tuner), so it inherits no OpenMP pool or threads of the
tuner; its own parallel runtime stays warm from one candidate to the next, as in a model run.
Failures: an exception inside the run is a RUN_ERROR answer and the process goes on; a crash (a
signal, exit) ends the process: `run` answers RUN_ERROR ("killed by signal SIGSEGV") and the next
`run` starts a fresh one; no answer within the request's `timeout` kills it: RUN_TIMEOUT. Start-up
of a fresh process (imports) is not counted against a candidate's timeout.
"""

from __future__ import annotations

import functools
import gc
import multiprocessing
import signal
import time
import traceback
from typing import Any

import numpy as np

READY_TIMEOUT = 300.0  # seconds a fresh measuring process may take to import (a loaded machine)
FRESH_EVERY = 64
"""A measuring process is replaced after this many runs. A process's address-space layout (ASLR) is
one draw for all its runs, and some kernels are sensitive to it: a candidate of ResNet-50's
fused_conv2d_add_relu_6 (a 7 x 4-vector register tile that spills two accumulators to the stack in
its inner loop) ran 2.87-3.0 ms in some processes and 3.14-3.24 ms in others, the default 2.95-3.04
ms in all (with ASLR off: always the slow one). A search that measured everything in one process
would rank its candidates by that one draw; a fresh process now and then makes it noise the cost
model averages over (about 0.7 s a restart: 0.01 s a trial)."""


def _ignore_sigint() -> None:
    """Ctrl-C is for the tuner (it stops cleanly and can --resume); its helper processes ignore it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def make_inputs(shapes, dtypes, num_outputs: int, seed: int) -> list[np.ndarray]:
    """Random inputs (normal floats, zero integers: indices stay in range) and zeroed outputs."""
    rng = np.random.default_rng(seed)
    arrays = []
    n_in = len(shapes) - num_outputs
    for i, (shape, dt) in enumerate(zip(shapes, dtypes)):
        dtype = np.dtype(dt)
        if i >= n_in:
            arrays.append(np.zeros(shape, dtype))
        elif dtype.kind == "f":
            arrays.append(rng.standard_normal(shape).astype(dtype))
        elif dtype.kind == "b":
            arrays.append(rng.random(shape) < 0.5)
        else:
            arrays.append(np.zeros(shape, dtype))
    return arrays


def load(obj: bytes, metadata: dict, externals: list[str]):
    """The candidate's `main` from its object code (a NativeFunction; the code lives as long as it)."""
    import llvmlite.binding as llvm

    from minimlir.backend import _target, jit, runtime
    from minimlir.backend import checks as _checks

    if any(_checks.is_checked(n) for n in externals):
        _checks.install()
    if any(not llvm.address_of_symbol(n) for n in externals):
        runtime._load_symbol_providers()
        missing = [n for n in externals if not llvm.address_of_symbol(n)]
        if missing:
            raise RuntimeError(f"unresolved symbols in the candidate: {', '.join(missing[:5])}")
    with jit._llvm_lock:
        tm = _target.target_machine(3)  # its own: an MCJIT engine owns (and frees) its target machine
        engine = jit._engine_from_object(obj, tm)
    program = runtime.CompiledProgram(jit.CompiledModule(engine, {}, "", tm), metadata)
    return program["main"]


_FLUSH_IR = """
declare void @llvm.x86.sse2.clflush(ptr)
declare void @llvm.x86.sse2.mfence()
define void @minimlir_flush(ptr %p, i64 %n) {
entry:
  %empty = icmp eq i64 %n, 0
  br i1 %empty, label %done, label %loop
loop:
  %i = phi i64 [0, %entry], [%i1, %loop]
  %q = getelementptr i8, ptr %p, i64 %i
  call void @llvm.x86.sse2.clflush(ptr %q)
  %i1 = add i64 %i, 64
  %more = icmp ult i64 %i1, %n
  br i1 %more, label %loop, label %last
last:
  %end = getelementptr i8, ptr %p, i64 %n
  %tail = getelementptr i8, ptr %end, i64 -1
  call void @llvm.x86.sse2.clflush(ptr %tail)
  br label %done
done:
  call void @llvm.x86.sse2.mfence()
  ret void
}
"""


@functools.cache
def _clflush():
    """Native `flush(address, nbytes)`: clflush every cache line of the range, then mfence (on
    x86-64; None elsewhere). The engine is returned with it: it owns the code."""
    import ctypes
    import platform

    from minimlir.tuning.roofline import jit_function

    if platform.machine().lower() not in ("x86_64", "amd64"):
        return None
    return jit_function(_FLUSH_IR, "minimlir_flush", None, ctypes.c_void_p, ctypes.c_int64)


def flusher(arrays: list[np.ndarray]):
    """A function that evicts `arrays` from every cache level (TVM's cache flush before a timed
    call): clflush on x86-64; elsewhere writing a buffer twice the size of the last-level cache."""
    native = _clflush()
    if native is not None:
        fn = native[1]
        ranges = [(a.ctypes.data, a.nbytes) for a in arrays if a.nbytes]

        def flush() -> None:
            for addr, n in ranges:
                fn(addr, n)
        return flush
    from minimlir.tuning.task import last_level_cache_bytes

    evict = np.zeros(2 * last_level_cache_bytes() // 4, np.float32)

    def flush() -> None:
        np.add(evict, 1.0, out=evict)
    return flush


def timed_repeats(call, flush=None):
    """`repeat(n) -> (seconds inside the n calls, wall seconds)`: `call` n times, each after
    `flush()` when given (its time not counted: only the calls are)."""
    perf = time.perf_counter
    if flush is None:
        def repeat(n: int) -> tuple[float, float]:
            t = perf()
            for _ in range(n):
                call()
            dt = perf() - t
            return dt, dt
        return repeat

    def repeat_flushed(n: int) -> tuple[float, float]:
        inside, w0 = 0.0, perf()
        for _ in range(n):
            flush()
            t = perf()
            call()
            inside += perf() - t
        return inside, perf() - w0
    return repeat_flushed


def time_candidate(req: dict) -> dict:
    """Load, warm up, time (in this process). Raises on a failing run."""
    from minimlir.backend import parallel

    parallel.set_num_threads(req["threads"])
    fn = load(req["object"], req["metadata"], req.get("externals", []))
    t = req["task"]
    arrays = make_inputs(t["shapes"], t["dtypes"], t["num_outputs"], req["seed"])
    n_in = len(arrays) - t["num_outputs"]
    outputs = None
    for i in range(max(1, req["warmup"])):
        for a in arrays[n_in:]:
            a.fill(0)
        fn(*arrays)
        if i == 0 and req.get("save_outputs"):
            outputs = [a.copy() for a in arrays[n_in:]]
    # the timed calls go straight to the native code (fn(*arrays) checks and marshals the arrays on
    # every call: about 30 us, more than many a small kernel takes; in the model, kernels call
    # each other natively)
    call = fn.bound(*arrays)
    cold = [arrays[i] for i in req.get("cold_args") or [] if i < n_in]
    # with cold args the weights come from memory on every call, as in a model larger than the caches
    repeat = timed_repeats(call, flusher(cold) if cold else None)
    # a warm call sizes the repeats (the first call also pays for cold caches and fresh pages: sized
    # by it, a repeat of a fast kernel lasted about half of min_repeat_ms); with flushes, a repeat's
    # wall time (the flushes' too) is what lasts min_repeat_ms
    one = max(repeat(1)[1], 1e-7)
    min_s = req["min_repeat_ms"] / 1e3
    number = max(1, int(np.ceil(min_s / one)))
    times: list[float] = []
    resized = 0
    cpu0 = time.process_time()  # all of this process's threads
    while len(times) < req["repeats"]:
        elapsed, wall = repeat(number)
        if not times and wall < 0.8 * min_s and resized < 4:
            # still short of min_repeat_ms: more calls per repeat, and this one does not count (TVM
            # grows `number` the same way)
            number = max(number + 1, int(np.ceil(number * min_s / max(wall, 1e-9))))
            resized += 1
            cpu0 = time.process_time()
            continue
        times.append(elapsed / number)
    out: dict[str, Any] = {"times": times, "number": number, "timed_cpu": time.process_time() - cpu0}
    if outputs is not None:
        out["outputs"] = outputs
    return out


def _serve(conn) -> None:
    """The measuring process's loop (see the module docstring)."""
    from minimlir.tuning.measure import OK, RUN_ERROR

    _ignore_sigint()
    import minimlir.backend.runtime  # noqa: F401 - before "ready": imports are not a run's time
    from minimlir.backend import parallel

    parallel.available()
    # what is alive now lives as long as the process: out of the collector's way, so the collection
    # after each candidate scans that candidate's objects only (a full one took about 30 ms)
    gc.collect()
    gc.freeze()
    conn.send("ready")
    while True:
        try:
            req = conn.recv()
        except (EOFError, OSError):
            return
        if req is None:
            return
        t0 = time.perf_counter()
        try:
            out = dict(time_candidate(req), error=OK)
        except Exception as e:  # noqa: BLE001 - a failing run is an answer
            last = traceback.format_exception_only(type(e), e)[-1].strip()
            out = {"error": RUN_ERROR, "message": last}
        out["seconds"] = time.perf_counter() - t0
        try:
            conn.send(out)
        except (OSError, BrokenPipeError):
            return
        del out
        gc.collect()  # the candidate's code goes now (its program and functions form a cycle)


class MeasureServer:
    """The spawned measuring process (see the module docstring)."""

    def __init__(self):
        ctx = multiprocessing.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_serve, args=(child,), daemon=True)
        self.proc.start()
        child.close()
        self.requests = 0
        if not self.conn.poll(READY_TIMEOUT) or self._recv_or_none() != "ready":
            self.kill()
            raise RuntimeError("the measuring process did not start")

    def _recv_or_none(self):
        try:
            return self.conn.recv()
        except (EOFError, OSError):
            return None

    @property
    def alive(self) -> bool:
        return self.proc.is_alive()

    @property
    def spent(self) -> bool:
        """It has measured FRESH_EVERY runs: replace it with a fresh one."""
        return self.requests >= FRESH_EVERY

    def run(self, req: dict) -> dict:
        """One candidate: its answer, or RUN_ERROR (the process died) / RUN_TIMEOUT (killed)."""
        from minimlir.tuning.measure import RUN_ERROR, RUN_TIMEOUT

        t0 = time.perf_counter()
        self.requests += 1
        try:
            self.conn.send(req)
        except (OSError, BrokenPipeError):
            return {"error": RUN_ERROR, "seconds": 0.0, "message": "the measuring process is gone"}
        if not self.conn.poll(req["timeout"]):
            self.kill()
            return {"error": RUN_TIMEOUT, "seconds": time.perf_counter() - t0,
                    "message": f"no result within {req['timeout']:g} s"}
        out = self._recv_or_none()
        if out is None:  # the process died during the run
            self.proc.join(5)
            code = self.proc.exitcode
            why = (f"killed by signal {signal.Signals(-code).name}" if code is not None and code < 0
                   else f"the measuring process exited ({code})")
            self.kill()
            return {"error": RUN_ERROR, "seconds": time.perf_counter() - t0, "message": why}
        return out

    def kill(self) -> None:
        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join(5)
        self.conn.close()

    def close(self) -> None:
        try:
            self.conn.send(None)
        except (OSError, BrokenPipeError):
            pass
        self.proc.join(5)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join(5)
        try:
            self.conn.close()
        except OSError:
            pass
