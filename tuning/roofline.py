"""How fast a kernel could run here: the cores' measured fp32 FMA peak and memory read bandwidth.

    from minimlir.tuning.roofline import peak_gflops, memory_gbs, bound_seconds
    peak = peak_gflops(threads=1)          # GFLOP/s of one core, measured (about 0.3 s)
    bw = memory_gbs(threads=1)             # GB/s reading memory (a buffer 4x the last-level cache)
    floor = bound_seconds(flops, cold_bytes, peak, bw)  # max(FLOPs at the peak, cold bytes at bw)
    ceiling = kernel_seconds / floor       # no schedule of that kernel can be more than this much faster

A schedule search only moves a kernel between its current speed and the machine's peak; a kernel
already at 90% of the peak has at most 1.11x left for any schedule (an algorithm that does fewer
FLOPs, such as Winograd, is another matter). `benchmarks/tuning.py` prints each task's share of the
peak and that ceiling next to the tuned speedup.

A kernel whose weights come from memory (a model larger than the caches: `Task.cold_args`) can
be no faster than reading them: the memory bound is those bytes at the measured read bandwidth
(a loop of vector loads into independent sums over a buffer four times the last-level cache).

The peak is measured, not computed from a datasheet (clock, boost and how a core splits a wide
FMA differ between machines): a loop of independent vector FMA chains at the schedule's vector
width (`ScheduleConfig.for_host().width`), as many chains as the register file holds with room for
the two operands, compiled for the host CPU by LLVM like every kernel, timed on `threads` threads at
once (ctypes drops the GIL during the call), best of `rounds`. FLOPs: 2 per lane per FMA.

    loop:                                   ; chains = registers - 4, each a <width x float>
      %y0 = fma(%x0, %a, %b) ... %y{k} = fma(%x{k}, %a, %b)
      %i1 = %i + 1; br (%i1 == %n) exit, loop
"""

from __future__ import annotations

import ctypes
import functools
import threading
import time


def _sum_and_return(vec: str, count: int) -> list[str]:
    """The end of a loop's exit block: %y0 + ... + %y{count-1}, lane 0 returned (every value reaches
    the result, so the optimizer drops none of the work)."""
    out, acc = [], "%y0"
    for c in range(1, count):
        out.append(f"  %s{c} = fadd {vec} {acc}, %y{c}")
        acc = f"%s{c}"
    return out + [f"  %r = extractelement {vec} {acc}, i32 0", "  ret float %r", "}"]


def _ir(width: int, chains: int) -> str:
    vec = f"<{width} x float>"
    fma = f"llvm.fma.v{width}f32"
    out = [
        f"declare {vec} @{fma}({vec}, {vec}, {vec})",
        "define float @minimlir_peak(i64 %n, float %a0, float %b0) {",
        "entry:",
        f"  %ia = insertelement {vec} poison, float %a0, i32 0",
        f"  %a = shufflevector {vec} %ia, {vec} poison, <{width} x i32> zeroinitializer",
        f"  %ib = insertelement {vec} poison, float %b0, i32 0",
        f"  %b = shufflevector {vec} %ib, {vec} poison, <{width} x i32> zeroinitializer",
        "  br label %loop",
        "loop:",
        "  %i = phi i64 [0, %entry], [%i1, %loop]",
    ]
    out += [f"  %x{c} = phi {vec} [%b, %entry], [%y{c}, %loop]" for c in range(chains)]
    out += [f"  %y{c} = call {vec} @{fma}({vec} %x{c}, {vec} %a, {vec} %b)" for c in range(chains)]
    out += ["  %i1 = add i64 %i, 1", "  %done = icmp uge i64 %i1, %n", "  br i1 %done, label %exit, label %loop",
            "exit:"]
    return "\n".join(out + _sum_and_return(vec, chains)) + "\n"


def jit_function(ir: str, name: str, restype, *argtypes):
    """(engine, function): `name` of the LLVM IR `ir`, JIT-compiled for the host (backend/jit.py
    compile_ir; the engine owns the code: keep it alive with the function)."""
    from minimlir.backend import jit

    engine = jit.compile_ir(ir)
    return engine, ctypes.CFUNCTYPE(restype, *argtypes)(engine.get_function_address(name))


@functools.cache
def _kernel(width: int, chains: int):
    return jit_function(_ir(width, chains), "minimlir_peak", ctypes.c_float, ctypes.c_int64, ctypes.c_float,
                        ctypes.c_float)


def _best_rate(calls: list, amount: float, rounds: int) -> float:
    """The best over `rounds` of `amount` / wall seconds of running every call of `calls` at once,
    one thread each (ctypes drops the GIL during a native call)."""
    best = 0.0
    for _ in range(rounds):
        go = threading.Barrier(len(calls) + 1)
        workers = [threading.Thread(target=lambda c=c: (go.wait(), c())) for c in calls]
        for w in workers:
            w.start()
        go.wait()
        t0 = time.perf_counter()
        for w in workers:
            w.join()
        best = max(best, amount / (time.perf_counter() - t0))
    return best


def peak_gflops(threads: int = 1, *, width: int | None = None, registers: int | None = None,
                seconds: float = 0.05, rounds: int = 5) -> float:
    """The measured fp32 FMA peak of `threads` cores at once, in GFLOP/s (best of `rounds` runs of
    about `seconds` each)."""
    from minimlir.passes.loop.schedule.default.config import ScheduleConfig

    cfg = ScheduleConfig.for_host()
    width = width or cfg.width
    chains = max(1, (registers or cfg.vector_registers) - 4)
    _, fn = _kernel(width, chains)
    flops_per_iter = 2 * width * chains
    n = 1 << 16
    while True:  # calibrate on one thread: n iterations take about `seconds`
        t0 = time.perf_counter()
        fn(n, 0.999, 1e-3)
        dt = time.perf_counter() - t0
        if dt >= seconds / 4 or n >= 1 << 40:
            break
        n *= 4
    n = max(1, int(n * seconds / max(dt, 1e-9)))
    return _best_rate([lambda: fn(n, 0.999, 1e-3)] * threads, threads * n * flops_per_iter / 1e9, rounds)


def _read_ir(width: int, sums: int) -> str:
    vec = f"<{width} x float>"
    out = ["define float @minimlir_read(ptr %p, i64 %n) {",  # %n: vectors, a multiple of `sums`
           "entry:", "  br label %loop", "loop:", "  %i = phi i64 [0, %entry], [%i1, %loop]"]
    out += [f"  %x{c} = phi {vec} [zeroinitializer, %entry], [%y{c}, %loop]" for c in range(sums)]
    for c in range(sums):
        out += [f"  %j{c} = add i64 %i, {c}", f"  %q{c} = getelementptr {vec}, ptr %p, i64 %j{c}",
                f"  %v{c} = load {vec}, ptr %q{c}, align 64", f"  %y{c} = fadd {vec} %x{c}, %v{c}"]
    out += [f"  %i1 = add i64 %i, {sums}", "  %done = icmp uge i64 %i1, %n",
            "  br i1 %done, label %exit, label %loop", "exit:"]
    return "\n".join(out + _sum_and_return(vec, sums)) + "\n"


@functools.cache
def _reader(width: int, sums: int):
    return jit_function(_read_ir(width, sums), "minimlir_read", ctypes.c_float, ctypes.c_void_p, ctypes.c_int64)


def memory_gbs(threads: int = 1, *, nbytes: int | None = None, rounds: int = 5) -> float:
    """The measured memory read bandwidth of `threads` cores at once, in GB/s: each thread sums its
    own buffer of `nbytes` (default four times the last-level cache, so it cannot be cached)."""
    import numpy as np

    from minimlir.passes.loop.schedule.default.config import ScheduleConfig
    from minimlir.tuning.task import last_level_cache_bytes

    width, sums = ScheduleConfig.for_host().width, 8
    step = 4 * width * sums
    nbytes = max(step, (nbytes or 4 * last_level_cache_bytes()) // step * step)
    _, fn = _reader(width, sums)
    bufs = []
    for _ in range(threads):  # 64-byte aligned, written once (pages mapped before timing)
        raw = np.ones(nbytes // 4 + 16, np.float32)
        off = (-raw.ctypes.data % 64) // 4
        bufs.append(raw[off:off + nbytes // 4])
    n = nbytes // (4 * width)
    return _best_rate([lambda b=b: fn(b.ctypes.data, n) for b in bufs], threads * nbytes / 1e9, rounds)


def cold_bytes(task) -> int:
    """The bytes of a task's flushed (cold) arguments: what one call must read from memory."""
    import numpy as np

    return sum(int(np.prod(task.shapes[i])) * np.dtype(task.dtypes[i]).itemsize for i in task.cold_args)


def bound_seconds(flops: float, nbytes: float, peak_gflops: float, gbs: float) -> float:
    """The roofline's lower bound of one call: its FLOPs at the peak or its cold bytes at the
    bandwidth, whichever takes longer."""
    return max(flops / (peak_gflops * 1e9), nbytes / (gbs * 1e9) if gbs > 0 else 0.0)
