"""How fast a kernel could run here: the cores' measured fp32 FMA peak.

    from minimlir.tuning.roofline import peak_gflops
    peak = peak_gflops(threads=1)          # GFLOP/s of one core, measured (about 0.3 s)
    ceiling = peak / kernel_gflops         # no schedule of that kernel can be more than this much faster

A schedule search only moves a kernel between its current speed and the machine's peak; a kernel
already at 90% of the peak has at most 1.11x left for any schedule (an algorithm that does fewer
FLOPs, such as Winograd, is another matter). `benchmarks/tuning.py` prints each task's share of the
peak and that ceiling next to the tuned speedup.

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
    acc = "%y0"
    for c in range(1, chains):  # every chain reaches the result, so none is dead code
        out.append(f"  %s{c} = fadd {vec} {acc}, %y{c}")
        acc = f"%s{c}"
    out += [f"  %r = extractelement {vec} {acc}, i32 0", "  ret float %r", "}"]
    return "\n".join(out) + "\n"


@functools.cache
def _kernel(width: int, chains: int):
    import llvmlite.binding as llvm

    from minimlir.backend import _target

    _target.init_llvm()
    mod = llvm.parse_assembly(_ir(width, chains))
    mod.verify()
    engine = llvm.create_mcjit_compiler(mod, _target.target_machine())
    engine.finalize_object()
    fn = ctypes.CFUNCTYPE(ctypes.c_float, ctypes.c_int64, ctypes.c_float, ctypes.c_float)(
        engine.get_function_address("minimlir_peak"))
    return engine, fn  # the engine owns the code: keep it alive with the function


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
    best = 0.0
    for _ in range(rounds):
        go = threading.Barrier(threads + 1)
        workers = [threading.Thread(target=lambda: (go.wait(), fn(n, 0.999, 1e-3))) for _ in range(threads)]
        for w in workers:
            w.start()
        go.wait()
        t0 = time.perf_counter()
        for w in workers:
            w.join()
        best = max(best, threads * n * flops_per_iter / (time.perf_counter() - t0) / 1e9)
    return best
