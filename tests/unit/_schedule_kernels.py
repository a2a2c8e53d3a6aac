"""Hand-written kernels and an oracle for the schedule tests (test_schedule_*.py).

`check(text, schedule_fn, inputs_fn, kernel)` parses `text`, runs the reference interpreter of
minimlir.compiler.interpreter on the unscheduled kernel, applies `schedule_fn(Schedule)` to a
fresh copy, verifies it, runs it again and compares every buffer (inputs and outputs).
"""

from __future__ import annotations

import numpy as np
import minimlir.compiler.interpreter as H
from minimlir.passes.loop.schedule.api import Schedule


def parse(text: str):
    m = H.parse(text)
    m.verify()
    return m


def fused(text: str, *, strength_reduce: bool = False, verify: bool = True):
    """graph-fuse, graph-legalize, loop-fuse (after graph-strength-reduce, Pow(x, 3) -> multiplies,
    when asked): each fusion group one kernel, its blocks ready for the default schedule."""
    from minimlir.passes.graph.fuse import GraphFusePass
    from minimlir.passes.graph.legalize import GraphLegalizePass
    from minimlir.passes.graph.strength_reduce import GraphStrengthReducePass
    from minimlir.passes.loop.fuse import LoopFusePass

    m = H.parse(text)
    passes = [GraphFusePass(), GraphLegalizePass(), LoopFusePass()]
    for p in ([GraphStrengthReducePass()] if strength_reduce else []) + passes:
        p.apply(H._context(), m)
    if verify:
        m.verify()
    return m


def run(module, kernel: str, buffers):
    bufs = [np.array(b, copy=True) for b in buffers]
    return H.interpret_kernels(module, kernel, bufs)


def check(text: str, schedule_fn, buffers, kernel: str, passes=()):
    """Run kernel unscheduled and scheduled on the same buffers; return the scheduled module."""
    want = run(parse(text), kernel, buffers)
    m = parse(text)
    schedule_fn(Schedule(m))
    for p in passes:
        p.apply(None, m)
    m.verify()
    got = run(m, kernel, buffers)
    for w, g in zip(want, got):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
    return m


def rand(*shape, seed=0):
    return np.random.default_rng(seed + sum(shape)).standard_normal(shape).astype(np.float32)


def nan(*shape):
    return np.full(shape, np.nan, dtype=np.float32)


# C[i, j] = sum_k A[i, k] * B[k, j]   (shape: "?x?" dynamic or e.g. "6x7")
def matmul(m="?", k="?", n="?") -> str:
    a, b, c = f"memref<{m}x{k}xf32>", f"memref<{k}x{n}xf32>", f"memref<{m}x{n}xf32>"
    return f"""
func.func @matmul(%a: {a}, %b: {b}, %c: {c}) attributes {{loop.kernel}} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cm = mem.dim %a, 0 : {a}
  %ck = mem.dim %a, 1 : {a}
  %cn = mem.dim %b, 1 : {b}
  loop.for %i = %c0 to %cm step %c1 {{
    loop.for %j = %c0 to %cn step %c1 {{
      loop.for %kk = %c0 to %ck step %c1 {{
        loop.block "matmul" (%vi = %i, %vj = %j, %vk = %kk) [spatial, spatial, reduce] {{
          %x = mem.load %a[%vi, %vk] : {a} -> f32
          %y = mem.load %b[%vk, %vj] : {b} -> f32
          %z = mem.load %c[%vi, %vj] : {c} -> f32
          %p = arith.mulf %x, %y : f32
          %s = arith.addf %z, %p : f32
          mem.store %s, %c[%vi, %vj] : f32, {c}
        }} init {{
          %zero = arith.constant 0.0 : f32
          mem.store %zero, %c[%vi, %vj] : f32, {c}
        }}
      }}
    }}
  }}
  func.return
}}
"""


# t = a * 2 (local), y[i, j] = t[i, j] + b[j] ; then z = max(y, 0): three blocks, one local buffer
def chain(r="?", c="?") -> str:
    t = f"memref<{r}x{c}xf32>"
    v = f"memref<{c}xf32>"
    dyn = "%rows, %cols" if r == "?" and c == "?" else ("%rows" if r == "?" else ("%cols" if c == "?" else ""))
    return f"""
func.func @chain(%a: {t}, %b: {v}, %z: {t}) attributes {{loop.kernel}} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %rows = mem.dim %a, 0 : {t}
  %cols = mem.dim %a, 1 : {t}
  %t = mem.alloca({dyn}) : {t}
  %y = mem.alloca({dyn}) : {t}
  loop.for %i = %c0 to %rows step %c1 {{
    loop.for %j = %c0 to %cols step %c1 {{
      loop.block "scale" (%vi = %i, %vj = %j) [spatial, spatial] {{
        %x = mem.load %a[%vi, %vj] : {t} -> f32
        %two = arith.constant 2.0 : f32
        %m = arith.mulf %x, %two : f32
        mem.store %m, %t[%vi, %vj] : f32, {t}
      }}
    }}
  }}
  loop.for %i2 = %c0 to %rows step %c1 {{
    loop.for %j2 = %c0 to %cols step %c1 {{
      loop.block "add" (%wi = %i2, %wj = %j2) [spatial, spatial] {{
        %p = mem.load %t[%wi, %wj] : {t} -> f32
        %q = mem.load %b[%wj] : {v} -> f32
        %s = arith.addf %p, %q : f32
        mem.store %s, %y[%wi, %wj] : f32, {t}
      }}
    }}
  }}
  loop.for %i3 = %c0 to %rows step %c1 {{
    loop.for %j3 = %c0 to %cols step %c1 {{
      loop.block "relu" (%ui = %i3, %uj = %j3) [spatial, spatial] {{
        %e = mem.load %y[%ui, %uj] : {t} -> f32
        %zero = arith.constant 0.0 : f32
        %r = arith.maximumf %e, %zero : f32
        mem.store %r, %z[%ui, %uj] : f32, {t}
      }}
    }}
  }}
  func.return
}}
"""
