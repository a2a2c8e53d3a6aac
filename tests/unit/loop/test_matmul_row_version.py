"""The matmul rule's run-time row version for a dynamic M (matmul._version_rows): a row tile with
mr rows left runs the mr-row register tile, a ragged one (M < mr: a decode step) runs a one-row
copy once per row left instead of mr clamped rows. IR structure, the knob, and results against the
unscheduled kernel (interpreter) and numpy (native) at every M from 1 across tiles and row blocks."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects.builtin import StringAttr

import minimlir.compiler.interpreter as H
from minimlir.dialects import loop
from minimlir.passes.loop.schedule import default as D
from minimlir.passes.loop.schedule import lower_scheduled
from minimlir.passes.loop.schedule.api import const_index
from minimlir.passes.loop.schedule.default.knobs import KNOBS_ATTR

native_ok, native_reason = H.native_status()
needs_native = pytest.mark.skipif(not native_ok, reason=native_reason)

DYN_M = """
func.func @main(%a: tensor<?x{k}xf32>, %b: tensor<{k}x{n}xf32>) -> tensor<?x{n}xf32> {{
  %m = graph.matmul %a, %b : (tensor<?x{k}xf32>, tensor<{k}x{n}xf32>) -> tensor<?x{n}xf32>
  func.return %m : tensor<?x{n}xf32>
}}"""


def rand(*shape, seed=0):
    return np.random.default_rng(seed + sum(shape)).standard_normal(shape).astype(np.float32)


def _blocks(mod) -> list[str]:
    return [b.block_name.data for b in mod.walk() if isinstance(b, loop.BlockOp)]


def test_dynamic_m_gets_a_one_row_copy():
    mod = H.legalize(DYN_M.format(k=40, n=32))
    D.schedule_module(mod, D.ScheduleConfig(width=8, registers=32))
    names = _blocks(mod)
    for n in ("matmul_acc_in", "matmul", "matmul_acc_out"):
        assert n in names and f"{n}_row" in names, names
    # the copy's row tile loops run once (and unroll): row 0 of the accumulator, constant offsets
    for b in mod.walk():
        if isinstance(b, loop.BlockOp) and b.block_name.data.endswith("_row"):
            i2 = loop.block_loops(b)[-3]
            assert i2.kind.data == "unroll" and const_index(i2.ub) == 1
    text = str(mod)
    assert "arith.cmpi sge" in text  # the run-time choice: rows left >= mr
    lower_scheduled(mod, 8)
    mod.verify()


def test_knob_turns_it_off_and_static_m_never_has_it():
    mod = H.legalize(DYN_M.format(k=40, n=32))
    for f in mod.walk():
        if loop.is_kernel(f):
            f.attributes[KNOBS_ATTR] = StringAttr('{"matmul.row_version": false}')
    D.schedule_module(mod, D.ScheduleConfig(width=8, registers=32))
    assert not [n for n in _blocks(mod) if n.endswith("_row")]
    static = H.legalize(DYN_M.format(k=40, n=32).replace("?x40", "7x40").replace("?x32", "7x32"))
    D.schedule_module(static, D.ScheduleConfig(width=8, registers=32))
    assert not [n for n in _blocks(static) if n.endswith("_row")]


@pytest.mark.parametrize("m", [1, 2, 3, 4, 5, 7, 8])
def test_row_version_interpreted_same_as_unscheduled(m):
    """mr = 3, mc = 6 (two tiles a row block): M = 1, 2 (one ragged tile), 3 (one full), 4, 5, 7, 8
    (full tiles, then a ragged one, across row blocks)."""
    k, n = 5, 8
    text = DYN_M.format(k=k, n=n)
    inputs = [rand(m, k, seed=m), rand(k, n, seed=1)]
    want = H.interpret_kernels(H.legalize(text), None, inputs)
    mod = H.legalize(text)
    cfg = D.ScheduleConfig(width=4, matmul=D.MatmulKnobs(mr=3, nv=2, mc=6, kc=4))
    D.schedule_module(mod, cfg)
    assert "matmul_row" in _blocks(mod)
    lower_scheduled(mod, 4)
    got = H.interpret_kernels(mod, None, inputs)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got[0], inputs[0] @ inputs[1], rtol=1e-4, atol=1e-4)


SCORES = """
func.func @main(%q: tensor<?x4x?x16xf32>, %kt: tensor<?x4x16x?xf32>, %s: tensor<f32>) -> tensor<?x4x?x?xf32> {
  %m = graph.matmul %q, %kt : (tensor<?x4x?x16xf32>, tensor<?x4x16x?xf32>) -> tensor<?x4x?x?xf32>
  %r = graph.mul %m, %s : (tensor<?x4x?x?xf32>, tensor<f32>) -> tensor<?x4x?x?xf32>
  func.return %r : tensor<?x4x?x?xf32>
}"""


@needs_native
def test_dynamic_m_native_every_length():
    """One compile each: a plain and a batched (attention scores, scaled) matmul at M = 1 … 33 and
    several N, across the 8-row tile and the row blocks; equal to numpy."""
    from minimlir.backend.runtime import compile_mlir_text

    prog = compile_mlir_text(DYN_M.format(k=64, n=48), pipeline="compile", cache=False)
    b = rand(64, 48, seed=1)
    for m in (1, 2, 3, 7, 8, 9, 15, 16, 17, 33, 64, 65):
        a = rand(m, 64, seed=m)
        np.testing.assert_allclose(prog.main(a, b), a @ b, rtol=1e-4, atol=1e-4, err_msg=f"M={m}")
    prog = compile_mlir_text(SCORES, pipeline="compile", cache=False)
    s = np.array(0.25, np.float32)
    for batch, m, n in ((1, 1, 1), (1, 1, 49), (2, 1, 17), (1, 5, 37), (1, 9, 9), (2, 32, 32), (1, 17, 80)):
        q, kt = rand(batch, 4, m, 16, seed=m), rand(batch, 4, 16, n, seed=n)
        np.testing.assert_allclose(prog.main(q, kt, s), (q @ kt) * s, rtol=1e-4, atol=1e-4,
                                   err_msg=f"{batch} x 4 x {m} x {n}")
