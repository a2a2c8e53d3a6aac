"""Matmul epilogues (bias, residual, ReLU / Clip / SiLU / GELU in erf and tanh form, scale) in the
matmul kernel: the elementwise consumers become one epilogue block (no intermediate buffer),
computed per row block inside the matmul's parallel loop (one fork-join per call), vectorized.
IR structure after the default schedule, interpreted results against the unscheduled kernel,
native results against NumPy."""

from __future__ import annotations

from math import erf

import numpy as np
import pytest

import minimlir.compiler.interpreter as H
import _schedule_kernels  # teaches the interpreter vector.broadcast; fused()
from minimlir.dialects import loop, mem
from minimlir.passes.loop.schedule import default as D
from minimlir.passes.loop.schedule import lower_scheduled
from minimlir.passes.loop.schedule.api import Schedule, ScheduleError

native_ok, native_reason = H.native_status()
needs_native = pytest.mark.skipif(not native_ok, reason=native_reason)


def t(*shape) -> str:
    return f"tensor<{'x'.join(map(str, shape))}xf32>"


def rand(*shape, seed=0):
    return np.random.default_rng(seed + sum(shape)).standard_normal(shape).astype(np.float32)


def gelu_erf(x):
    return (0.5 * x * (1 + np.vectorize(erf)(x / np.float32(np.sqrt(2))))).astype(np.float32)


def gelu_tanh(x):
    return (0.5 * x * (1 + np.tanh(np.float32(0.7978845608) * (x + np.float32(0.044715) * x**3)))).astype(
        np.float32)


def linear(m: int, k: int, n: int, epilogue: str, ret: str) -> str:
    """x: 1 x m x k (the exporters' batch of one), w: k x n, bias: n, res: 1 x m x n; the
    matmul result is %y = x @ w + bias; `epilogue` continues from %y and `ret` is returned."""
    x, y = t(1, m, k), t(1, m, n)
    return f"""
func.func @main(%x: {x}, %w: {t(k, n)}, %bias: {t(n)}, %res: {y}) -> {y} {{
  %mm = graph.matmul %x, %w : ({x}, {t(k, n)}) -> {y}
  %y = graph.add %mm, %bias : ({y}, {t(n)}) -> {y}
{epilogue}
  func.return %{ret} : {y}
}}""".replace("Y", y)


GELU_ERF = """
  %s2 = graph.constant dense<1.41421354> : tensor<f32>
  %d = graph.div %y, %s2 : (Y, tensor<f32>) -> Y
  %e = graph.erf %d : Y
  %one = graph.constant dense<1.0> : tensor<f32>
  %a = graph.add %e, %one : (Y, tensor<f32>) -> Y
  %p = graph.mul %y, %a : Y
  %half = graph.constant dense<0.5> : tensor<f32>
  %z = graph.mul %p, %half : (Y, tensor<f32>) -> Y"""

GELU_TANH = """
  %three = graph.constant dense<3.0> : tensor<f32>
  %c = graph.pow %y, %three : (Y, tensor<f32>) -> Y
  %k1 = graph.constant dense<0.044715> : tensor<f32>
  %c1 = graph.mul %c, %k1 : (Y, tensor<f32>) -> Y
  %in = graph.add %y, %c1 : Y
  %k2 = graph.constant dense<0.797884583> : tensor<f32>
  %in2 = graph.mul %in, %k2 : (Y, tensor<f32>) -> Y
  %th = graph.tanh %in2 : Y
  %one = graph.constant dense<1.0> : tensor<f32>
  %a = graph.add %th, %one : (Y, tensor<f32>) -> Y
  %p = graph.mul %y, %a : Y
  %half = graph.constant dense<0.5> : tensor<f32>
  %z = graph.mul %p, %half : (Y, tensor<f32>) -> Y"""

RESIDUAL = """
  %z = graph.add %y, %res : Y"""

RELU_SCALE = """
  %r = graph.relu %y : Y
  %sc = graph.constant dense<0.25> : tensor<f32>
  %z = graph.mul %r, %sc : (Y, tensor<f32>) -> Y"""

SILU = """
  %sg = graph.sigmoid %y : Y
  %z = graph.mul %y, %sg : Y"""

CASES = {
    "gelu_erf": (GELU_ERF, gelu_erf),
    "gelu_tanh": (GELU_TANH, gelu_tanh),
    "residual": (RESIDUAL, None),
    "relu_scale": (RELU_SCALE, lambda y: np.maximum(y, 0) * np.float32(0.25)),
    "silu": (SILU, lambda y: y / (1 + np.exp(-y))),
}


def _fused(text: str):
    """graph-strength-reduce (Pow(x, 3) -> multiplies), graph-fuse, graph-legalize, loop-fuse:
    one kernel with the matmul and its epilogue."""
    return _schedule_kernels.fused(text, strength_reduce=True)


def _kernel(m):
    (k,) = [k for k in m.walk() if loop.is_kernel(k)]
    return k


def _inputs(m, k, n):
    return [rand(1, m, k), rand(k, n, seed=1), rand(n, seed=2), rand(1, m, n, seed=3)]


@pytest.mark.parametrize("case", list(CASES))
def test_epilogue_in_registers_is_applied_to_the_accumulator(case):
    """A one-pass reduction (K = 32): the consumers (inlined into one block) run on the
    accumulator in acc_out, vectorized, under the matmul's parallel row loop, and store the
    kernel's output: no buffer of the matmul's result C, no init nest, no epilogue nest."""
    m_, k_, n_ = 64, 32, 64
    m = _fused(linear(m_, k_, n_, CASES[case][0], "z"))
    kernel = _kernel(m)
    D.schedule_module(m, D.ScheduleConfig(width=8))
    blocks = [b.block_name.data for b in loop.blocks_of(kernel)]
    assert all(b.startswith("matmul") for b in blocks) and "matmul_init" not in blocks, blocks
    assert not [a for a in kernel.walk() if isinstance(a, mem.AllocOp | mem.AllocaOp)
                and a.results[0].type.get_shape() == (1, m_, n_)]
    (out,) = [b for b in loop.blocks_of(kernel) if b.block_name.data == "matmul_acc_out"]
    assert [s.memref for s in out.body.walk() if isinstance(s, mem.StoreOp)] == [kernel.body.block.args[-1]]
    par = [l for l in kernel.walk() if isinstance(l, loop.ForOp) and l.kind.data == "parallel"]
    assert len(par) == 1 and par[0].is_ancestor(out)
    assert loop.block_loops(out)[-1].kind.data == "vectorize"


@pytest.mark.parametrize("case", list(CASES))
def test_epilogue_is_one_vectorized_block_in_the_parallel_row_loop(case):
    """Several reduction passes (kc = 8 of K = 32): the consumers are inlined into one block that
    reads the matmul's output (C[0, i, j]: the batch of one is indexed by a constant) and writes the
    kernel's: the only buffer the kernel allocates at full size is the matmul's own accumulator C
    (the temporaries of the bias add and of each GELU op are gone), the epilogue runs under the
    matmul's parallel row loop (one parallel region per call) and its innermost loop is a vector loop."""
    m_, k_, n_ = 64, 32, 64  # enough work for the parallel threshold to keep the row loop parallel
    m = _fused(linear(m_, k_, n_, CASES[case][0], "z"))
    kernel = _kernel(m)
    D.schedule_module(m, D.ScheduleConfig(width=8, matmul=D.MatmulKnobs(kc=8)))
    blocks = [b.block_name.data for b in loop.blocks_of(kernel)]
    epi = [b for b in loop.blocks_of(kernel) if not b.block_name.data.startswith("matmul")]
    assert len(epi) == 1, blocks
    full = [a for a in kernel.walk() if isinstance(a, mem.AllocOp | mem.AllocaOp)
            and a.results[0].type.get_shape() == (1, m_, n_)]
    assert len(full) == 1, "only the matmul's output buffer is full size"
    par = [l for l in kernel.walk() if isinstance(l, loop.ForOp) and l.kind.data == "parallel"]
    assert len(par) == 1 and par[0].is_ancestor(epi[0])
    assert loop.block_loops(epi[0])[-1].kind.data == "vectorize"


@pytest.mark.parametrize("case", list(CASES))
def test_epilogue_interpreted_same_as_unscheduled(case):
    text = linear(13, 9, 16, CASES[case][0], "z")
    ins = _inputs(13, 9, 16)
    want = H.interpret_kernels(_fused(text), None, ins)
    m = _fused(text)
    D.schedule_module(m, D.ScheduleConfig(width=4, matmul=D.MatmulKnobs(mr=3, nv=2, mc=6, kc=4)))
    lower_scheduled(m, 4)
    m.verify()
    got = H.interpret_kernels(m, None, ins)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-5)


@needs_native
@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("threads", [1, 2])
def test_epilogue_native_matches_numpy(case, threads):
    from minimlir.backend import parallel
    from minimlir.backend.runtime import compile_mlir_text

    m_, k_, n_ = 37, 24, 48
    prog = compile_mlir_text(linear(m_, k_, n_, CASES[case][0], "z"), pipeline="compile", cache=False)
    x, w, bias, res = _inputs(m_, k_, n_)
    y = x @ w + bias
    want = y + res if case == "residual" else CASES[case][1](y)
    before = parallel.get_num_threads()
    parallel.set_num_threads(threads)
    try:
        got = prog.main(x, w, bias, res)
    finally:
        parallel.set_num_threads(before)
    np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-5)


def test_expensive_value_used_twice_is_not_recomputed():
    """An erf read by two consumers stays a buffer (one erf per element, not two), while the
    cheap bias add read by both the erf and the final multiply is inlined into each."""
    epi = """
  %e = graph.erf %y : Y
  %p = graph.mul %e, %y : Y
  %q = graph.add %p, %e : Y
  %z = graph.mul %q, %y : Y"""
    m = _fused(linear(24, 16, 32, epi, "z"))
    kernel = _kernel(m)
    D.schedule_module(m, D.ScheduleConfig(width=8))
    erfs = [o for o in kernel.walk() if o.name == "math.erf"]
    assert len(erfs) == 1
    assert not any(o.name == "graph.add" for o in kernel.walk())
    ins = _inputs(24, 16, 32)
    want = H.interpret_kernels(_fused(linear(24, 16, 32, epi, "z")), None, ins)
    lower_scheduled(m, 8)
    np.testing.assert_allclose(H.interpret_kernels(m, None, ins)[0], want[0], rtol=1e-5, atol=1e-5)


# A kernel as loop-fuse leaves it for a batch of one: the producer stores C[b, i, j], the consumer
# reads C[0, i, j] (the legalizer's broadcast indexing of a unit dim).
UNIT_BATCH = """
func.func @k(%a: memref<1x8x4xf32>, %out: memref<1x8x4xf32>) attributes {loop.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %t = mem.alloc() : memref<1x8x4xf32>
  loop.for %b = %c0 to %c1 step %c1 {
    loop.for %i = %c0 to %c8 step %c1 {
      loop.for %j = %c0 to %c4 step %c1 {
        loop.block "p" (%vb = %b, %vi = %i, %vj = %j) [spatial, spatial, spatial] {
          %x = mem.load %a[%vb, %vi, %vj] : memref<1x8x4xf32> -> f32
          %y = arith.addf %x, %x : f32
          mem.store %y, %t[%vb, %vi, %vj] : f32, memref<1x8x4xf32>
        }
      }
    }
  }
  loop.for %b2 = %c0 to %c1 step %c1 {
    loop.for %i2 = %c0 to %c8 step %c1 {
      loop.for %j2 = %c0 to %c4 step %c1 {
        loop.block "c" (%wb = %b2, %wi = %i2, %wj = %j2) [spatial, spatial, spatial] {
          %x = mem.load %t[%c0, %wi, %wj] : memref<1x8x4xf32> -> f32
          %y = arith.mulf %x, %x : f32
          mem.store %y, %out[%wb, %wi, %wj] : f32, memref<1x8x4xf32>
        }
      }
    }
  }
  func.return
}"""


def test_reverse_compute_at_reads_unit_dim_at_constant_zero():
    """Regression: a consumer reading C[0, i, j] where the producer writes C[b, i, j] (b of
    extent 1) was refused ("must read ... at (iteration variable + constant) in every dim"), so
    no epilogue of a batch-1 matmul was fused; and the fused nest could not run in parallel
    ("reads ... written by another iteration": the unit loop's variable b against 0)."""
    ins = [rand(1, 8, 4), np.zeros((1, 8, 4), np.float32)]
    want = H.interpret_kernels(H.parse(UNIT_BATCH), "k", [x.copy() for x in ins])
    m = H.parse(UNIT_BATCH)
    s = Schedule(m)
    i_loop = s.get_loops(s.get_block("p"))[1]
    s.reverse_compute_at(s.get_block("c"), i_loop)
    s.parallel(i_loop)
    assert i_loop.is_ancestor(s.get_block("c"))
    m.verify()
    got = H.interpret_kernels(m, "k", [x.copy() for x in ins])
    np.testing.assert_allclose(got[1], want[1])


def test_constant_index_in_a_wider_dim_is_still_refused():
    """Only a unit dim may be read at a constant: C[0, i, j] of an 8-row C needs row 0, which
    another iteration of the row loop writes."""
    text = UNIT_BATCH.replace("%t[%c0, %wi, %wj]", "%t[%wb, %c0, %wj]")
    m = H.parse(text)
    s = Schedule(m)
    with pytest.raises(ScheduleError):
        s.reverse_compute_at(s.get_block("c"), s.get_loops(s.get_block("p"))[1])


@pytest.mark.parametrize("knobs", [{"matmul.order": "ijk", "matmul.fuse_at": "col_panel"},
                                   {"matmul.order": "ijk", "matmul.fuse_at": "row_block"},
                                   {"matmul.inline_epilogue": False}])
def test_epilogue_knobs_interpreted_same_as_unscheduled(knobs):
    """The tuner's choices: the epilogue per mc x nv*W panel of C (order ijk: fused at j0, after
    the panel's last k0 block), per row block, or not inlined (one block per op)."""
    from minimlir.passes.loop.schedule.default.knobs import set_assignment

    text = linear(13, 9, 16, GELU_ERF, "z")
    ins = _inputs(13, 9, 16)
    want = H.interpret_kernels(_fused(text), None, ins)
    m = _fused(text)
    kernel = _kernel(m)
    set_assignment(kernel, knobs)
    D.schedule_module(m, D.ScheduleConfig(width=4, matmul=D.MatmulKnobs(mr=3, nv=2, mc=6, kc=4)))
    n_epi = len([b for b in loop.blocks_of(kernel) if not b.block_name.data.startswith("matmul")])
    assert n_epi == (1 if knobs.get("matmul.inline_epilogue", True) else 6)
    if knobs.get("matmul.fuse_at") == "col_panel":
        (epi,) = [b for b in loop.blocks_of(kernel) if not b.block_name.data.startswith("matmul")]
        mm = next(b for b in loop.blocks_of(kernel) if b.block_name.data == "matmul")
        j0 = loop.block_loops(mm)[2]  # batch i0 j0 k0 ...
        assert j0.is_ancestor(epi)
    lower_scheduled(m, 4)
    m.verify()
    got = H.interpret_kernels(m, None, ins)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-5)


def test_vectorized_epilogue_keeps_check_sites():
    """Regression: loop-lower-vectors made the vector loads and stores without the scalar ones'
    attributes, so checked mode lost the names (block, ONNX node, weight) of every access in a
    vectorized fused epilogue and reported "argument #10" of the outlined parallel body."""
    from minimlir.passes.mem.check_sites import annotate
    from minimlir.passes.to_llvm._checks import site_of

    m = _fused(linear(64, 32, 64, GELU_ERF, "z"))
    annotate(m)
    D.schedule_module(m, D.ScheduleConfig(width=8))
    lower_scheduled(m, 8)
    kernel = _kernel(m)
    args = kernel.body.block.args
    bias, out = args[2], args[-1]  # the epilogue's own accesses (not the pack / accumulator copies)
    vec = [o for o in kernel.walk() if isinstance(o, mem.LoadOp | mem.StoreOp) and o.memref in (bias, out)
           and "vector" in str(o.results[0].type if isinstance(o, mem.LoadOp) else o.value.type)]
    assert len(vec) >= 2
    assert all(site_of(o).get("buffer") for o in vec), [str(o) for o in vec if not site_of(o)][:3]
