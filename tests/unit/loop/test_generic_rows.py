"""The generic rule on kernels no matmul/conv rule takes: a fused elementwise chain becomes one
block (no intermediate buffers, no heap allocation per call with dynamic dims), a reduction
along the innermost loop gets a reassociable combine (LLVM vectorizes it), and sibling fusion
refuses to read a reduction's partial result. IR structure after the default schedule,
interpreted results against the unscheduled kernel, native results against NumPy."""

from __future__ import annotations

import numpy as np
import pytest

import minimlir.compiler.interpreter as H
import _schedule_kernels  # teaches the interpreter vector.broadcast; fused()
from minimlir.dialects import loop, mem
from minimlir.passes.loop.schedule import default as D
from minimlir.passes.loop.schedule import lower_scheduled
from minimlir.passes.loop.schedule.api import Schedule, ScheduleError
from minimlir.passes.loop.schedule.default.rows import fuse_rows

native_ok, native_reason = H.native_status()
needs_native = pytest.mark.skipif(not native_ok, reason=native_reason)

# GPT-2's GELU (tanh form, Pow already strength-reduced) on a dynamic (batch, seq) activation
GELU_DYN = """
func.func @main(%x: tensor<?x?x256xf32>) -> tensor<?x?x256xf32> {
  %half = graph.constant dense<0.5> : tensor<f32>
  %k1 = graph.constant dense<0.044715> : tensor<f32>
  %k2 = graph.constant dense<0.797884583> : tensor<f32>
  %one = graph.constant dense<1.0> : tensor<f32>
  %a = graph.mul %x, %half : (tensor<?x?x256xf32>, tensor<f32>) -> tensor<?x?x256xf32>
  %s = graph.mul %x, %x : tensor<?x?x256xf32>
  %c = graph.mul %s, %x : tensor<?x?x256xf32>
  %c1 = graph.mul %c, %k1 : (tensor<?x?x256xf32>, tensor<f32>) -> tensor<?x?x256xf32>
  %in = graph.add %x, %c1 : tensor<?x?x256xf32>
  %in2 = graph.mul %in, %k2 : (tensor<?x?x256xf32>, tensor<f32>) -> tensor<?x?x256xf32>
  %th = graph.tanh %in2 : tensor<?x?x256xf32>
  %p = graph.add %th, %one : (tensor<?x?x256xf32>, tensor<f32>) -> tensor<?x?x256xf32>
  %z = graph.mul %a, %p : tensor<?x?x256xf32>
  func.return %z : tensor<?x?x256xf32>
}"""

SOFTMAX = """
func.func @main(%x: tensor<?x4x?x?xf32>) -> tensor<?x4x?x?xf32> {
  %y = graph.softmax %x axis 3 : tensor<?x4x?x?xf32>
  func.return %y : tensor<?x4x?x?xf32>
}"""

LAYER_NORM = """
func.func @main(%x: tensor<?x?x64xf32>, %g: tensor<64xf32>, %b: tensor<64xf32>) -> tensor<?x?x64xf32> {
  %y = graph.layer_norm %x, %g, %b axis 2 epsilon 1.0e-05 : (tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
  func.return %y : tensor<?x?x64xf32>
}"""


def rand(*shape, seed=0):
    return np.random.default_rng(seed + sum(shape)).standard_normal(shape).astype(np.float32)


def gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(np.float32(0.797884583) * (x + np.float32(0.044715) * x**3)))


def _fused(text: str):
    return _schedule_kernels.fused(text)


def _kernel(m):
    (k,) = [k for k in m.walk() if loop.is_kernel(k)]
    return k


def test_elementwise_chain_is_one_block_without_intermediate_buffers():
    m = _fused(GELU_DYN)
    kernel = _kernel(m)
    assert len(loop.blocks_of(kernel)) == 9
    assert D.schedule_kernel(kernel, D.ScheduleConfig(width=8)) == "generic"
    assert len(loop.blocks_of(kernel)) == 1
    assert not [o for o in kernel.walk() if isinstance(o, mem.AllocOp | mem.AllocaOp)
                and o.results[0].uses], "no intermediate buffer is read any more"
    inner = loop.block_loops(loop.blocks_of(kernel)[0])[-1]
    assert inner.kind.data == "vectorize"


def test_inline_elementwise_knob_off_keeps_the_nests():
    m = _fused(GELU_DYN)
    kernel = _kernel(m)
    cfg = D.ScheduleConfig(width=8, generic=D.GenericKnobs(inline_elementwise=False))
    D.schedule_kernel(kernel, cfg)
    assert len(loop.blocks_of(kernel)) == 9


def test_elementwise_chain_interpreted_same_as_unscheduled():
    x = rand(2, 3, 256)
    want = H.interpret_kernels(_fused(GELU_DYN), None, [x])
    m = _fused(GELU_DYN)
    D.schedule_module(m, D.ScheduleConfig(width=4))
    lower_scheduled(m, 4)
    m.verify()
    np.testing.assert_allclose(H.interpret_kernels(m, None, [x])[0], want[0], rtol=1e-6, atol=1e-6)


def _combines(kernel, name):
    blk = next(b for b in loop.blocks_of(kernel) if b.block_name.data == name)
    (st,) = [o for o in blk.body.walk() if isinstance(o, mem.StoreOp)]
    return st.value.owner


@pytest.mark.parametrize("text,names", [(SOFTMAX, ["softmax_max", "softmax_sum"]),
                                        (LAYER_NORM, ["layer_norm_mean", "layer_norm_var"])])
def test_row_reductions_get_a_reassociable_combine(text, names):
    m = _fused(text)
    kernel = _kernel(m)
    D.schedule_kernel(kernel, D.ScheduleConfig(width=8))
    for name in names:
        op = _combines(kernel, name)
        assert "reassoc" in str(op.properties.get("fastmath")), name


def test_reassoc_knob_off_and_matmul_reductions_keep_their_order():
    m = _fused(SOFTMAX)
    kernel = _kernel(m)
    D.schedule_kernel(kernel, D.ScheduleConfig(width=8, generic=D.GenericKnobs(reassoc_reductions=False)))
    assert "reassoc" not in str(_combines(kernel, "softmax_sum").properties.get("fastmath", ""))
    mm = _fused("""
func.func @main(%a: tensor<16x32xf32>, %b: tensor<32x48xf32>) -> tensor<16x48xf32> {
  %c = graph.matmul %a, %b : (tensor<16x32xf32>, tensor<32x48xf32>) -> tensor<16x48xf32>
  func.return %c : tensor<16x48xf32>
}""")
    D.schedule_module(mm, D.ScheduleConfig(width=8))
    assert not [o for o in mm.walk() if "reassoc" in str(o.properties.get("fastmath", ""))]


def test_fusing_a_reduction_loop_with_its_reader_is_refused():
    """Regression: sibling fusion of the softmax's max loop (over the reduced axis) with the exp
    loop (same bounds) passed the same-iteration check — the max is written in every iteration —
    yet the exp of element j would read the max of elements 0..j only."""
    m = _fused(SOFTMAX)
    kernel = _kernel(m)
    s = Schedule(kernel)
    mx, ex = s.get_block("softmax_max"), s.get_block("softmax_exp")
    lm, le = s.get_loops(mx), s.get_loops(ex)
    for a, b in zip(lm[:3], le[:3]):  # batch, head and row loops: legal, one at a time
        s.fuse(a, b)
        lm, le = s.get_loops(mx), s.get_loops(ex)
    assert lm[-1].next_op is le[-1]
    with pytest.raises(ScheduleError, match="partial result"):
        s.fuse(lm[-1], le[-1])


@pytest.mark.parametrize("text", [SOFTMAX, LAYER_NORM])
def test_fuse_rows_interpreted_same_as_unscheduled(text):
    ins = [rand(1, 4, 5, 7)] if text is SOFTMAX else [rand(2, 3, 64), rand(64, seed=1), rand(64, seed=2)]
    want = H.interpret_kernels(_fused(text), None, ins)
    m = _fused(text)
    kernel = _kernel(m)
    before = len([o for o in kernel.body.block.ops if isinstance(o, loop.ForOp)])
    assert fuse_rows(kernel) > 0
    tops = [o for o in kernel.body.block.ops if isinstance(o, loop.ForOp)]
    assert len(tops) < before
    # the reductions still sit alone in the loop over the reduced axis
    for blk in loop.blocks_of(kernel):
        if "reduce" in blk.kinds:
            assert len(loop.blocks_of(loop.block_loops(blk)[-1])) == 1
    np.testing.assert_allclose(H.interpret_kernels(m, None, ins)[0], want[0], rtol=1e-6, atol=1e-6)


@needs_native
@pytest.mark.parametrize("shape", [(1, 4, 32, 32), (1, 4, 1, 41), (2, 4, 3, 7)])
def test_softmax_native_matches_numpy(shape):
    from minimlir.backend.runtime import compile_mlir_text

    prog = compile_mlir_text(SOFTMAX, pipeline="compile", cache=False)
    x = rand(*shape) * 4
    e = np.exp(x - x.max(-1, keepdims=True))
    np.testing.assert_allclose(prog.main(x), e / e.sum(-1, keepdims=True), rtol=1e-5, atol=1e-6)


@needs_native
def test_gelu_native_matches_numpy():
    from minimlir.backend.runtime import compile_mlir_text

    prog = compile_mlir_text(GELU_DYN, pipeline="compile", cache=False)
    for shape in [(1, 1, 256), (1, 33, 256)]:
        x = rand(*shape)
        np.testing.assert_allclose(prog.main(x), gelu_tanh(x), rtol=1e-5, atol=1e-5)
