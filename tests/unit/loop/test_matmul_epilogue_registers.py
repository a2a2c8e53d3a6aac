"""The matmul rule's epilogue in registers: a reduction that runs in one pass (K <= kc) starts its
accumulator at the init value (no init nest, no read back) and applies the fused epilogue (bias,
residual add, ReLU) to the accumulator before its one store, so the matmul's result C, a
kernel-local buffer, is gone. Interpreted against the unscheduled kernel (ragged rows and columns),
a K the tile runs in several passes keeps the old structure, and native runs against NumPy."""

from __future__ import annotations

import numpy as np
import pytest

import minimlir.compiler.interpreter as H
import _schedule_kernels as SK
from minimlir.dialects import loop, mem
from minimlir.passes.loop.schedule import default as D
from minimlir.passes.loop.schedule import lower_scheduled

native_ok, native_reason = H.native_status()
needs_native = pytest.mark.skipif(not native_ok, reason=native_reason)


def t(*shape) -> str:
    return f"tensor<{'x'.join(map(str, shape))}xf32>"


def linear(m, k, n) -> str:
    """relu(a @ w + bias + res): one fused kernel."""
    return f"""
func.func @main(%a: {t(m, k)}, %w: {t(k, n)}, %bias: {t(n)}, %res: {t(m, n)}) -> {t(m, n)} {{
  %mm = graph.matmul %a, %w : ({t(m, k)}, {t(k, n)}) -> {t(m, n)}
  %h = graph.add %mm, %bias : ({t(m, n)}, {t(n)}) -> {t(m, n)}
  %r = graph.add %h, %res : ({t(m, n)}, {t(m, n)}) -> {t(m, n)}
  %y = graph.relu %r : {t(m, n)}
  func.return %y : {t(m, n)}
}}"""


def _kernel(module):
    return next(op for op in module.ops if loop.is_kernel(op))


def _inputs(m, k, n):
    return [SK.rand(m, k), SK.rand(k, n, seed=1), SK.rand(n, seed=2), SK.rand(m, n, seed=3)]


def _ref(a, w, bias, res):
    return np.maximum(a @ w + bias + res, 0)


@pytest.mark.parametrize("mkn", [(12, 7, 16), (13, 9, 20), (5, 3, 4)])
def test_one_pass_epilogue_runs_on_the_accumulator(mkn):
    """K <= kc: no init nest and no heap buffer for C; acc_out stores the ReLU of the accumulator
    plus bias and residual straight into the kernel's output. Same values as the unscheduled
    kernel (ragged M and N: clamped rows, a guarded last column panel)."""
    text = linear(*mkn)
    inputs = _inputs(*mkn)
    want = H.interpret_kernels(SK.fused(text), None, inputs)
    mod = SK.fused(text)
    cfg = D.ScheduleConfig(width=4, matmul=D.MatmulKnobs(mr=3, nv=2, mc=6, kc=16))
    assert set(D.schedule_module(mod, cfg).values()) == {"matmul"}
    k = _kernel(mod)
    names = [b.block_name.data for b in loop.blocks_of(k)]
    assert not [n for n in names if n.endswith("_init")], names
    assert not [o for o in k.walk() if isinstance(o, mem.AllocOp)], "C is still a heap buffer"
    out = k.body.block.args[-1]
    acc_out = [b for b in loop.blocks_of(k) if b.block_name.data.startswith("matmul_acc_out")]
    assert acc_out and all(
        [s.memref for s in b.body.walk() if isinstance(s, mem.StoreOp)] == [out] for b in acc_out)
    assert any(o.name == "arith.maximumf" for b in acc_out for o in b.body.walk())  # the ReLU
    lower_scheduled(mod, 4)
    got = H.interpret_kernels(mod, None, inputs)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got[0], _ref(*inputs), rtol=1e-4, atol=1e-4)


def test_several_reduction_passes_keep_the_init_and_c():
    """K = 13 over kc = 4: the accumulator is read back between passes, so the init nest and C
    stay, and the epilogue runs after the last pass, as before."""
    mkn = (6, 13, 8)
    text = linear(*mkn)
    inputs = _inputs(*mkn)
    mod = SK.fused(text)
    cfg = D.ScheduleConfig(width=4, matmul=D.MatmulKnobs(mr=3, nv=2, mc=6, kc=4))
    D.schedule_module(mod, cfg)
    k = _kernel(mod)
    assert any(b.block_name.data == "matmul_init" for b in loop.blocks_of(k))
    lower_scheduled(mod, 4)
    got = H.interpret_kernels(mod, None, inputs)
    np.testing.assert_allclose(got[0], _ref(*inputs), rtol=1e-4, atol=1e-4)


def test_epilogue_off_knob_keeps_the_separate_epilogue():
    """loop.schedule_knobs {matmul.epilogue_in_registers = false}: the tuner's other choice."""
    from minimlir.passes.loop.schedule.default.knobs import set_assignment

    mod = SK.fused(linear(12, 7, 16))
    k = _kernel(mod)
    set_assignment(k, {"matmul.epilogue_in_registers": False})
    D.schedule_module(mod, D.ScheduleConfig(width=4, matmul=D.MatmulKnobs(mr=3, nv=2, mc=6, kc=16)))
    assert any(b.block_name.data == "matmul_init" for b in loop.blocks_of(k))
    assert [o for o in k.walk() if isinstance(o, mem.AllocOp | mem.AllocaOp) and len(o.results[0].type.shape) == 2
            and list(o.results[0].type.get_shape()) == [12, 16]], "C is a local buffer"
    lower_scheduled(mod, 4)
    inputs = _inputs(12, 7, 16)
    np.testing.assert_allclose(H.interpret_kernels(mod, None, inputs)[0], _ref(*inputs), rtol=1e-4, atol=1e-4)


@needs_native
def test_dynamic_rows_native():
    """One compile, M = 1 ... 37 (a decode step's one row through a prefill's ragged tiles)."""
    from minimlir.backend.runtime import compile_mlir_text

    prog = compile_mlir_text(linear("?", 64, 48), pipeline="compile", cache=False)
    w, bias = SK.rand(64, 48, seed=1), SK.rand(48, seed=2)
    for m in (1, 2, 7, 13, 37):
        a, res = SK.rand(m, 64, seed=m), SK.rand(m, 48, seed=m + 50)
        np.testing.assert_allclose(prog.main(a, w, bias, res), _ref(a, w, bias, res), rtol=1e-4, atol=1e-4,
                                   err_msg=f"M={m}")
