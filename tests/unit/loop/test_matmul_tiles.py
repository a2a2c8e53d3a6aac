"""The matmul rule's register tiles on the edges: ragged M / N / K (1, 3, 17, 127, 129), the
clamped last row tile, dynamic M, batched and transposed operands, bias + GELU epilogues, and the
tile that fits the vector registers. Native results against NumPy; several matmuls share one
compile (one function), so the file stays cheap."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import minimlir.compiler.interpreter as H
import _schedule_kernels
from minimlir.passes.loop.schedule import default as D
from minimlir.passes.loop.schedule import lower_scheduled
from minimlir.passes.loop.schedule.default.matmul import register_tile
from minimlir.passes.loop.schedule.api import const_index

native_ok, native_reason = H.native_status()
needs_native = pytest.mark.skipif(not native_ok, reason=native_reason)


def _compile(text: str):
    from minimlir.backend.runtime import compile_mlir_text

    return compile_mlir_text(text, pipeline="compile", cache=False)


def rand(*shape, seed=0):
    return np.random.default_rng(seed + sum(shape)).standard_normal(shape).astype(np.float32)


def t(shape) -> str:
    return f"tensor<{'x'.join(map(str, shape))}xf32>"


def many_matmuls(shapes) -> str:
    """One function, one graph.matmul per (M, K, N): one kernel each, one compile for all."""
    args = ", ".join(f"%a{i}: {t((m, k))}, %b{i}: {t((k, n))}" for i, (m, k, n) in enumerate(shapes))
    outs = ", ".join(t((m, n)) for m, _, n in shapes)
    body = "\n".join(
        f"  %c{i} = graph.matmul %a{i}, %b{i} : ({t((m, k))}, {t((k, n))}) -> {t((m, n))}"
        for i, (m, k, n) in enumerate(shapes)
    )
    rets = ", ".join(f"%c{i}" for i in range(len(shapes)))
    return f"func.func @main({args}) -> ({outs}) {{\n{body}\n  func.return {rets} : {outs}\n}}"


# M, K, N on the edges of the register tile (6 or 8 rows, 2 vectors) and of the cache tiles
# (a ragged N with a large M compiles slowly: its vector remainders unroll with the tile)
RAGGED = [(1, 3, 17), (3, 17, 128), (17, 129, 3), (127, 17, 32), (129, 3, 16), (17, 127, 40),
          (129, 129, 127), (13, 300, 24)]


def _operands(shapes, b_seed: int) -> list:
    """A and B of each (M, K, N) in `shapes`, in many_matmuls' argument order."""
    ins = []
    for i, (m, k, n) in enumerate(shapes):
        ins += [rand(m, k, seed=i), rand(k, n, seed=i + b_seed)]
    return ins


@needs_native
def test_ragged_matmuls_native():
    prog = _compile(many_matmuls(RAGGED))
    ins = _operands(RAGGED, 100)
    got = prog.main(*ins)
    for i, (m, k, n) in enumerate(RAGGED):
        a, b = ins[2 * i], ins[2 * i + 1]
        np.testing.assert_allclose(got[i], a @ b, rtol=1e-4, atol=1e-4, err_msg=f"{m}x{k}x{n}")


def test_ragged_rows_stay_in_registers():
    """M = 17 with a 6-row tile: the last tile's row loop gets the constant trip count (it
    unrolls) and the blocks read row min(i, M-1)."""
    m = H.legalize(many_matmuls([(17, 40, 32)]))
    cfg = D.ScheduleConfig(width=8, registers=16)
    assert D.schedule_module(m, cfg) == {"matmul_0": "matmul"}
    text = str(m)
    assert "memref<6x16xf32>" in text  # the 6 x 2-vector tile of 16 registers
    assert text.count("arith.minsi") >= 3  # the clamped row of acc_in, matmul and acc_out
    lower_scheduled(m, 8)
    m.verify()


@pytest.mark.parametrize("mkn", [(7, 13, 8), (17, 9, 20), (5, 3, 4)])
def test_clamped_rows_interpreted_same_as_unscheduled(mkn):
    """Interpreter: the clamped schedule (mr = 3 over M = 7, 17, 5) computes what the
    unscheduled kernel does."""
    m, k, n = mkn
    text = many_matmuls([mkn])
    inputs = [rand(m, k), rand(k, n, seed=1)]
    want = H.interpret_kernels(H.legalize(text), None, inputs)
    mod = H.legalize(text)
    cfg = D.ScheduleConfig(width=4, matmul=D.MatmulKnobs(mr=3, nv=2, mc=6, kc=4))
    D.schedule_module(mod, cfg)
    assert "arith.minsi" in str(mod)
    lower_scheduled(mod, 4)
    got = H.interpret_kernels(mod, None, inputs)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-5)


@needs_native
def test_dynamic_m_native():
    """One compile, M = 1 ... 131 (the decode step and the prefill of one artifact)."""
    text = """
func.func @main(%a: tensor<?x64xf32>, %b: tensor<64x48xf32>, %c: tensor<48xf32>) -> tensor<?x48xf32> {
  %m = graph.matmul %a, %b : (tensor<?x64xf32>, tensor<64x48xf32>) -> tensor<?x48xf32>
  %s = graph.add %m, %c : (tensor<?x48xf32>, tensor<48xf32>) -> tensor<?x48xf32>
  func.return %s : tensor<?x48xf32>
}"""
    prog = _compile(text)
    b, c = rand(64, 48, seed=1), rand(48, seed=2)
    for m in (1, 2, 5, 6, 7, 13, 131):
        a = rand(m, 64, seed=m)
        np.testing.assert_allclose(prog.main(a, b, c), a @ b + c, rtol=1e-4, atol=1e-4, err_msg=f"M={m}")


@needs_native
def test_batched_transposed_gelu_epilogue_native():
    """Attention-like batched matmuls (heads x 17 x 24 @ heads x 24 x 16, B given transposed),
    and a linear layer with a bias + erf-GELU epilogue fused into the matmul kernel."""
    text = """
func.func @main(%q: tensor<2x17x24xf32>, %k: tensor<2x16x24xf32>, %x: tensor<19x24xf32>, %w: tensor<24x32xf32>,
                %bias: tensor<32xf32>) -> (tensor<2x17x16xf32>, tensor<19x32xf32>) {
  %kt = graph.transpose %k perm [0, 2, 1] : tensor<2x16x24xf32> -> tensor<2x24x16xf32>
  %s = graph.matmul %q, %kt : (tensor<2x17x24xf32>, tensor<2x24x16xf32>) -> tensor<2x17x16xf32>
  %m = graph.matmul %x, %w : (tensor<19x24xf32>, tensor<24x32xf32>) -> tensor<19x32xf32>
  %h = graph.add %m, %bias : (tensor<19x32xf32>, tensor<32xf32>) -> tensor<19x32xf32>
  %e = graph.erf %h : tensor<19x32xf32>
  %g = graph.mul %h, %e : (tensor<19x32xf32>, tensor<19x32xf32>) -> tensor<19x32xf32>
  func.return %s, %g : tensor<2x17x16xf32>, tensor<19x32xf32>
}"""
    from math import erf

    q, k, x, w = rand(2, 17, 24), rand(2, 16, 24, seed=1), rand(19, 24, seed=2), rand(24, 32, seed=3)
    bias = rand(32, seed=4)
    s, g = _compile(text).main(q, k, x, w, bias)
    np.testing.assert_allclose(s, q @ k.transpose(0, 2, 1), rtol=1e-4, atol=1e-4)
    h = x @ w + bias
    np.testing.assert_allclose(g, h * np.vectorize(erf)(h).astype(np.float32), rtol=1e-4, atol=1e-4)


def test_register_tile_fits_the_registers():
    k = D.MatmulKnobs()
    for regs in (16, 32):
        mr, nv = register_tile(k, regs)
        assert mr * nv + nv + 1 <= regs  # accumulators, one B vector per column, one broadcast
    assert register_tile(D.MatmulKnobs(mr=4, nv=3), 16) == (4, 3)  # explicit knobs win


def test_pack_b_option_forces_either_way_and_unset_lets_the_rule_decide():
    """`loop-schedule{pack_b=false}` turns B's packing off even where the rule would pack it (a
    regression: false used to mean "the rule decides"); unset leaves the decision to the rule."""
    from minimlir.passes.loop.schedule import LoopSchedulePass

    assert LoopSchedulePass().config().matmul.pack_b is None
    assert LoopSchedulePass(pack_b=False).config().matmul.pack_b is False
    assert LoopSchedulePass(pack_b=True).config().matmul.pack_b is True
    text = many_matmuls([(64, 32, 64)])
    forced_off, decided = H.legalize(text), H.legalize(text)
    D.schedule_module(forced_off, dataclasses.replace(D.ScheduleConfig(width=8), matmul=LoopSchedulePass(
        pack_b=False).config().matmul))
    D.schedule_module(decided, dataclasses.replace(D.ScheduleConfig(width=8), matmul=LoopSchedulePass().config().matmul))
    assert "matmul_pack_b" not in str(forced_off)
    assert "matmul_pack_b" in str(decided)  # the rule packs a static M of >= 4 tiles with 16 registers


@pytest.mark.parametrize("m,packed", [(128, True), (16, False)])
def test_avx512_packs_b_for_a_static_m_of_several_tiles(m, packed):
    """With 32 registers (AVX-512: 8 x 2 tiles) B is packed too when M holds at least 4 row tiles:
    BERT's 128x512x2048 ran at 102 GFLOP/s reading B's rows 8 KB apart, packed at 121 (onnxruntime
    153); 128x512x512: 113 -> 145. A short M (a decode step's rows) reads B as it is."""
    text = many_matmuls([(m, 64, 64)])
    module = H.legalize(text)
    D.schedule_module(module, D.ScheduleConfig(width=16))
    assert ("matmul_pack_b" in str(module)) is packed


BATCH_BROADCAST = """
func.func @main(%p: tensor<?x4x?x?xf32>, %v: tensor<?x4x?x16xf32>) -> tensor<?x4x?x16xf32> {
  %o = graph.matmul %p, %v : (tensor<?x4x?x?xf32>, tensor<?x4x?x16xf32>) -> tensor<?x4x?x16xf32>
  func.return %o : tensor<?x4x?x16xf32>
}"""


def test_dynamic_batch_broadcast_matmul_vectorizes():
    """Attention's probs @ V with a dynamic batch (GPT-2's decode step): the operands' batch index
    is clamped for broadcasting, min(b, B-1), computed in the block from an outer loop variable.
    It is the same for every lane, so the inner N loop still becomes vector code (a regression:
    it was refused as a gather index and the kernel ran scalar, 40 us of a 200 us decode step)."""
    from minimlir.passes.loop.schedule.default import transaction

    m = H.legalize(BATCH_BROADCAST)
    before = len(transaction.REFUSALS)
    assert D.schedule_module(m, D.ScheduleConfig(width=8, registers=16)) == {"matmul_0": "matmul"}
    assert not [r for r in transaction.REFUSALS[before:] if "gather" in r]
    lower_scheduled(m, 8)
    m.verify()
    text = str(m)
    assert "vector.broadcast" in text and "math.fma" in text and "-> vector<8xf32>" in text


@needs_native
def test_dynamic_batch_broadcast_matmul_native():
    """The same kernel, native, for batch 1 and 3 and either operand broadcast (batch 1 vs 3)."""
    prog = _compile(BATCH_BROADCAST)
    for (bp, bv), m, k in (((1, 1), 1, 33), ((3, 3), 1, 7), ((1, 3), 5, 17), ((3, 1), 9, 1)):
        p, v = rand(bp, 4, m, k, seed=bp + m), rand(bv, 4, k, 16, seed=bv + k)
        np.testing.assert_allclose(prog.main(p, v), p @ v, rtol=1e-4, atol=1e-4, err_msg=f"{bp}x{bv} M={m} K={k}")


def _tile_loops(mod, name):
    from minimlir.dialects import loop

    blk = next(b for b in loop.blocks_of(mod) if b.block_name.data == name)
    return loop.block_loops(blk)


def test_ragged_columns_split_into_exact_panels_and_a_guarded_one():
    """N = 197 (ViT's attention columns) with 2 x 16-lane panels: the 6 full panels run the
    register tile with constant extents (it stayed in memory, 8 GFLOP/s), a copy of the panel
    loop (`*_cols` blocks) runs the last 5 columns: the accumulator copies with the guards, the
    tile (which reads B's packed panel) on one whole vector (a scalar FMA per column, the
    accumulator in memory, made ResNet-50's 196-column 1x1 convs pay 4 columns like 6 panels)."""
    from minimlir.dialects import loop
    from minimlir.passes.loop.schedule.api import const_index

    mod = H.legalize(many_matmuls([(200, 64, 197)]))  # 2 parallel row blocks
    D.schedule_module(mod, D.ScheduleConfig(width=16))
    names = {b.block_name.data for b in loop.blocks_of(mod)}
    assert {"matmul_cols", "matmul_acc_in_cols", "matmul_acc_out_cols"} <= names
    for name in ("matmul", "matmul_acc_in", "matmul_acc_out"):
        j1, j2 = _tile_loops(mod, name)[-2:]
        assert (const_index(j1.ub), const_index(j2.ub)) == (2, 16), name
        assert j1.kind.data == "unroll" and j2.kind.data == "vectorize"
    j1, j2 = _tile_loops(mod, "matmul_cols")[-2:]
    assert (const_index(j1.ub), const_index(j2.ub)) == (1, 16)
    for name in ("matmul_acc_in_cols", "matmul_acc_out_cols"):
        assert const_index(_tile_loops(mod, name)[-1].ub) is None, name  # guarded: they touch C
    # M = 50: one row block, the panel loop is the parallel one; its last panel runs inline, where
    # B's packed panel holds no earlier panel's values: that tile keeps the guards
    one = H.legalize(many_matmuls([(50, 64, 197)]))
    D.schedule_module(one, D.ScheduleConfig(width=16))
    assert const_index(_tile_loops(one, "matmul_cols")[-1].ub) is None
    from xdsl.dialects.builtin import StringAttr

    from minimlir.passes.loop.schedule.default.knobs import KNOBS_ATTR

    off = H.legalize(many_matmuls([(50, 64, 197)]))
    for k in off.walk():
        if loop.is_kernel(k):
            k.attributes[KNOBS_ATTR] = StringAttr('{"matmul.split_cols": false}')
    D.schedule_module(off, D.ScheduleConfig(width=16))
    assert "matmul_cols" not in str(off)


@pytest.mark.parametrize("mkn", [(7, 13, 10), (17, 9, 27), (5, 5, 9)])
def test_split_columns_interpreted_same_as_unscheduled(mkn):
    """Ragged N over a 2 x 4-lane panel, with ragged M over 3-row tiles: the copy's rows are
    clamped too."""
    m, k, n = mkn
    text = many_matmuls([mkn])
    inputs = [rand(m, k), rand(k, n, seed=1)]
    want = H.interpret_kernels(H.legalize(text), None, inputs)
    mod = H.legalize(text)
    D.schedule_module(mod, D.ScheduleConfig(width=4, matmul=D.MatmulKnobs(mr=3, nv=2, mc=6, kc=4)))
    assert "matmul_cols" in str(mod)
    lower_scheduled(mod, 4)
    mod.verify()
    np.testing.assert_allclose(H.interpret_kernels(mod, None, inputs)[0], want[0], rtol=1e-5, atol=1e-5)


DYNAMIC_QK = """
func.func @main(%q: tensor<2x?x8xf32> {graph.dim_names = ["", "seq", ""]},
                %k: tensor<2x8x?xf32> {graph.dim_names = ["", "", "seq"]}) -> tensor<2x?x?xf32> {
  %s = graph.matmul %q, %k : (tensor<2x?x8xf32>, tensor<2x8x?xf32>) -> tensor<2x?x?xf32>
  func.return %s : tensor<2x?x?xf32>
}"""


def test_dynamic_columns_split_at_run_time_into_exact_panels_and_a_guarded_one():
    """A dynamic N (a Hugging Face export's attention scores, seq x seq): the panel loop splits at
    N // (nv*W) computed from C's last dim; the full panels' tile loops have constant extents (the
    guarded ones kept the accumulator in memory: the QK^T ran 8x slower than at a static length),
    the copy keeps the guards. Interpreted against the unscheduled kernel for N below, at and
    between whole panels, the rows ragged too."""
    from minimlir.dialects import loop

    mod = H.legalize(DYNAMIC_QK)
    D.schedule_module(mod, D.ScheduleConfig(width=4, matmul=D.MatmulKnobs(mr=3, nv=2, mc=6, kc=4)))
    names = {b.block_name.data for b in loop.blocks_of(mod)}
    assert {"matmul_cols", "matmul_acc_in_cols", "matmul_acc_out_cols"} <= names
    for name in ("matmul", "matmul_acc_in", "matmul_acc_out"):
        j1, j2 = _tile_loops(mod, name)[-2:]
        assert (const_index(j1.ub), const_index(j2.ub)) == (2, 4), name
    assert const_index(_tile_loops(mod, "matmul_cols")[-1].ub) is None
    lower_scheduled(mod, 4)
    mod.verify()
    for n in (1, 5, 8, 9, 16, 19):
        inputs = [rand(2, n, 8, seed=n), rand(2, 8, n, seed=n + 1)]
        want = H.interpret_kernels(H.legalize(DYNAMIC_QK), None, inputs)
        got = H.interpret_kernels(mod, None, inputs)
        np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-5, err_msg=f"N={n}")


@needs_native
def test_dynamic_columns_native():
    """One compile, seq = 1 ... 131 (both M and N dynamic), and a dynamic N under a static M."""
    prog = _compile(DYNAMIC_QK)
    for n in (1, 7, 15, 16, 17, 48, 131):
        q, k = rand(2, n, 8, seed=n), rand(2, 8, n, seed=n + 1)
        np.testing.assert_allclose(prog.main(q, k), q @ k, rtol=1e-4, atol=1e-4, err_msg=f"seq={n}")
    wide = _compile("""
func.func @main(%a: tensor<64x300xf32>, %b: tensor<300x?xf32> {graph.dim_names = ["", "n"]}) -> tensor<64x?xf32> {
  %y = graph.matmul %a, %b : (tensor<64x300xf32>, tensor<300x?xf32>) -> tensor<64x?xf32>
  %r = graph.relu %y : tensor<64x?xf32>
  func.return %r : tensor<64x?xf32>
}""")
    a = rand(64, 300)
    for n in (3, 33, 100):
        b = rand(300, n, seed=n)
        np.testing.assert_allclose(wide.main(a, b), np.maximum(a @ b, 0), rtol=1e-4, atol=1e-4, err_msg=f"N={n}")


@needs_native
def test_attention_scores_ragged_columns_native():
    """QK^T / sqrt(d) of a ViT (197 tokens, 2 heads of 64): batched, B transposed, scaled."""
    text = """
func.func @main(%q: tensor<1x2x197x64xf32>, %k: tensor<1x2x197x64xf32>) -> tensor<1x2x197x197xf32> {
  %kt = graph.transpose %k perm [0, 1, 3, 2] : tensor<1x2x197x64xf32> -> tensor<1x2x64x197xf32>
  %s = graph.matmul %q, %kt : (tensor<1x2x197x64xf32>, tensor<1x2x64x197xf32>) -> tensor<1x2x197x197xf32>
  %c = graph.constant dense<8.0> : tensor<f32>
  %d = graph.div %s, %c : (tensor<1x2x197x197xf32>, tensor<f32>) -> tensor<1x2x197x197xf32>
  func.return %d : tensor<1x2x197x197xf32>
}"""
    q, k = rand(1, 2, 197, 64), rand(1, 2, 197, 64, seed=1)
    got = _compile(text).main(q, k)
    np.testing.assert_allclose(got, q @ k.transpose(0, 1, 3, 2) / 8, rtol=1e-4, atol=1e-4)


def _parallel_loops(kernel) -> list:
    from minimlir.dialects import loop

    return [f for f in kernel.walk() if isinstance(f, loop.ForOp) and f.kind.data == "parallel"]


def _fc(k: int, n: int, relu: bool = False) -> str:
    """[1, k] x [k, n] + bias (and ReLU): an FC layer at batch 1."""
    last = "%r" if relu else "%z"
    return (f"func.func @main(%a: tensor<1x{k}xf32>, %b: tensor<{k}x{n}xf32>, %c: tensor<{n}xf32>)"
            f" -> tensor<1x{n}xf32> {{\n"
            f"  %y = graph.matmul %a, %b : (tensor<1x{k}xf32>, tensor<{k}x{n}xf32>) -> tensor<1x{n}xf32>\n"
            f"  %z = graph.add %y, %c : (tensor<1x{n}xf32>, tensor<{n}xf32>) -> tensor<1x{n}xf32>\n"
            + (f"  %r = graph.relu %z : tensor<1x{n}xf32>\n" if relu else "")
            + f"  func.return {last} : tensor<1x{n}xf32>\n}}")


def _outermost_parallel_extent(text: str) -> int:
    """The extent of the kernel's one parallel loop, which must be outermost."""
    m = _schedule_kernels.fused(text)
    D.schedule_module(m, D.ScheduleConfig(width=16))
    (kernel,) = [k for k in m.ops if "loop.kernel" in k.attributes]
    par = _parallel_loops(kernel)
    assert len(par) == 1 and par[0].parent_op() is kernel
    return par[0].ub.owner.value.value.data


def test_one_row_block_runs_the_batch_loop_in_parallel():
    """[4, 34, 34] x [1, 4, 34, 784] (ShuffleNet's grouped 1x1 conv as a matmul): 34 rows are one
    row block, so the parallel loop is the batch of 4 (it was the one-iteration row-block loop:
    the second thread idled); the 128-row matmul keeps its row blocks parallel. Same result."""

    text = ("func.func @main(%a: tensor<4x34x34xf32>, %b: tensor<1x4x34x784xf32>, %c: tensor<128x64xf32>,"
            " %d: tensor<64x32xf32>) -> (tensor<1x4x34x784xf32>, tensor<128x32xf32>) {\n"
            "  %y = graph.matmul %a, %b : (tensor<4x34x34xf32>, tensor<1x4x34x784xf32>) -> tensor<1x4x34x784xf32>\n"
            "  %z = graph.matmul %c, %d : (tensor<128x64xf32>, tensor<64x32xf32>) -> tensor<128x32xf32>\n"
            "  func.return %y, %z : tensor<1x4x34x784xf32>, tensor<128x32xf32>\n}")
    m = H.legalize(text)
    D.schedule_module(m, D.ScheduleConfig(width=16))
    kernels = {k.sym_name.data: k for k in m.ops if "loop.kernel" in k.attributes}
    for name, ub in (("matmul_0", 4), ("matmul_1", None)):
        par = _parallel_loops(kernels[name])
        assert len(par) == 1, name
        if ub is not None:
            assert par[0].ub.owner.value.value.data == ub  # the batch loop, 4 groups
        else:
            assert par[0].ub.owner.value.value.data != 1
    if native_ok:
        prog = _compile(text)
        ins = [rand(4, 34, 34), rand(1, 4, 34, 784), rand(128, 64), rand(64, 32)]
        y, z = prog.main(*ins)
        np.testing.assert_allclose(y, ins[0] @ ins[1], rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(z, ins[2] @ ins[3], rtol=1e-4, atol=1e-4)


def test_matrix_vector_splits_its_columns_into_parallel_chunks(monkeypatch):
    """[1, 256] x [256, 1024] + bias, ReLU (an FC layer at batch 1): one row block and no batch
    loop, so the column panels split into one chunk per core, the parallel loop (the parallel loop
    was the one-iteration row-block loop: AlexNet's FC layers ran at the same 15.7 GB/s on one
    and on two threads). The bias + ReLU epilogue runs per chunk. Same result as NumPy."""
    from minimlir.passes.loop.schedule.default import matmul as MM

    monkeypatch.setattr(MM, "cores", lambda: 4)
    text = _fc(256, 1024, relu=True)
    assert _outermost_parallel_extent(text) == 4  # outermost: the init, the tile and the epilogue inside
    if native_ok:
        from minimlir.backend import parallel

        prog = _compile(text)
        ins = [rand(1, 256), rand(256, 1024), rand(1024)]
        for threads in (1, 2):
            parallel.set_num_threads(threads)
            np.testing.assert_allclose(prog.main(*ins), np.maximum(ins[0] @ ins[1] + ins[2], 0), rtol=1e-4, atol=1e-4)
        parallel.set_num_threads(0)


def test_an_odd_number_of_column_panels_still_splits_into_one_chunk_per_core(monkeypatch):
    """[1, 512] x [512, 1000] (a classifier at batch 1): 25 panels of 40 columns, odd, so no chunk
    count up to 2 divided them; the panel loop then ran in parallel inside every k block, and two
    threads were slower than one (0.40 against 0.29 ms for 2048 x 1000). Now 2 chunks of 13 and
    12 panels, the outermost loop. Same result at 1 and 2 threads."""
    from minimlir.passes.loop.schedule.default import matmul as MM

    monkeypatch.setattr(MM, "cores", lambda: 2)
    text = _fc(512, 1000)
    assert _outermost_parallel_extent(text) == 2
    assert MM._col_chunks(25, 2) == 2 and MM._col_chunks(24, 2) == 2 and MM._col_chunks(5, 2) == 1  # 3+2: 20% off
    if native_ok:
        from minimlir.backend import parallel

        prog = _compile(text)
        ins = [rand(1, 512), rand(512, 1000), rand(1000)]
        try:
            for threads in (1, 2):
                parallel.set_num_threads(threads)
                for _ in range(5):
                    np.testing.assert_allclose(prog.main(*ins), ins[0] @ ins[1] + ins[2], rtol=1e-4, atol=1e-4)
        finally:
            parallel.set_num_threads(0)


@pytest.mark.parametrize("m,k,n,whole", [(128, 250, 256, True), (20, 40, 64, True), (300, 16, 64, False),
                                         (96, 24, 48, False)])
def test_a_static_m_up_to_256_rows_is_one_row_block(m, k, n, whole):
    """M <= 256 with the column panels splitting evenly over the cores: one row block of all M rows
    (B's panels read and packed once, not per 64-row block; a 64-row matmul had nothing for a
    second thread), the column panels in parallel chunks. 300 rows keep 64-row blocks; 48 columns
    (3 panels of 16 on width 8) keep them too unless one core compiles. Native results at 1 and 2
    threads against NumPy, ragged K included (K below 256: a 16-register host keeps 6 x 2, whose
    panels split evenly; the wide 4 x 3 tile leaves a ragged one)."""
    from minimlir.backend import parallel
    from minimlir.passes.loop.schedule.default import knobs as K
    from minimlir.passes.loop.schedule.default._helpers import cores as _cores

    mod = H.legalize(many_matmuls([(m, k, n)]))
    with K.tracing() as traces:
        D.schedule_module(mod, D.ScheduleConfig(width=8))
    values = traces[0][1].values
    expect = whole or (m <= 256 and _cores() == 1)
    assert values.get("matmul.whole_m", False) is expect
    assert "matmul.col_chunks" in values if expect and _cores() > 1 else True
    if native_ok:
        prog = _compile(many_matmuls([(m, k, n)]))
        a, b = rand(m, k, seed=1), rand(k, n, seed=2)
        for threads in (1, 2):
            parallel.set_num_threads(threads)
            np.testing.assert_allclose(prog.main(a, b), a @ b, rtol=1e-4, atol=1e-4)
        parallel.set_num_threads(0)


def test_packed_b_is_one_panel_under_column_chunks(monkeypatch):
    """With the column panels in parallel chunks (whole_m, two cores), B's copy is one kc x nv*W
    panel per j0, as without chunks. It was placed one loop too high (at k0): a kc x (N / chunks)
    block whose rows lay 1 KB apart, which thrashed L1 (BERT 35.2 -> 31.6 ms with the fix)."""
    from minimlir.passes.loop.schedule.default import matmul as MM

    monkeypatch.setattr(MM, "cores", lambda: 2)
    monkeypatch.setattr(MM, "l1d_bytes", lambda: 32 << 10)  # K = 700 in two k blocks
    mod = H.legalize(many_matmuls([(128, 700, 512)]))
    D.schedule_module(mod, D.ScheduleConfig(width=16))
    text = str(mod)
    assert "matmul_pack_b" in text
    assert "memref<512x64xf32>" in text and "memref<512x256xf32>" not in text  # kc x nv*W (6 x 4 tile)


RAGGED_ONE_BLOCK = [(48, 256, 169), (16, 96, 3025), (32, 128, 729), (40, 300, 200)]


@pytest.mark.parametrize("m,k,n", RAGGED_ONE_BLOCK)
def test_one_row_block_with_ragged_n_runs_its_column_panels_in_parallel(m, k, n):
    """One row block, no batch, N not a whole number of panels (SqueezeNet's squeeze convs as
    matmuls): the column panel loop j0 is the parallel one (over the row block the second thread
    idled), and its accumulator tile and B's copy are per thread (loop.private)."""
    mod = H.legalize(many_matmuls([(m, k, n)]))
    D.schedule_module(mod, D.ScheduleConfig(width=16))
    from minimlir.dialects import loop

    kernel = next(o for o in mod.walk() if loop.is_kernel(o))
    par = [f for f in kernel.walk() if isinstance(f, loop.ForOp) and f.kind.data == "parallel"]
    # the panel loop j0 inside the row block and k0 loops (and the copy running the ragged panel),
    # not the one-iteration row block loop
    assert par and all(len(loop.enclosing_loops(f)) == 2 for f in par)
    allocas = [o for o in kernel.walk() if o.name == "mem.alloca"]
    assert allocas and all(loop.PRIVATE_ATTR in a.attributes for a in allocas)


@needs_native
def test_parallel_column_panels_are_exact_at_two_threads():
    """Repeated runs at 2 threads: a scratch buffer shared by the threads would corrupt results."""
    from minimlir.backend import parallel

    prog = _compile(many_matmuls(RAGGED_ONE_BLOCK))
    ins = _operands(RAGGED_ONE_BLOCK, 50)
    parallel.set_num_threads(2)
    try:
        for _ in range(20):
            got = prog.main(*ins)
            for i in range(len(RAGGED_ONE_BLOCK)):
                np.testing.assert_allclose(got[i], ins[2 * i] @ ins[2 * i + 1], rtol=1e-4, atol=1e-3)
    finally:
        parallel.set_num_threads(0)


def test_row_blocks_grow_to_what_l2_holds_where_b_is_packed(monkeypatch):
    """Every row block packs B's panel again: with B packed, a row block holds up to half of M (two
    parallel chunks at least) and as many rows as keep A's mc x kc block in a quarter of L2."""
    from minimlir.passes.loop.schedule.default import matmul as MM

    monkeypatch.setattr(MM, "l2_bytes", lambda: 2 << 20)
    k = D.MatmulKnobs()
    assert MM.row_block_rows(k, 256, True, 1024) == 512   # 512 x 256 floats: 512 KB
    assert MM.row_block_rows(k, 256, True, 4096) == 512
    assert MM.row_block_rows(k, 128, True, 512) == 256    # half of M
    assert MM.row_block_rows(k, 256, True, 100) == 64     # at least ROW_BLOCK_ROWS
    assert MM.row_block_rows(k, 256, False, 1024) == 64   # B read in place: nothing to share
    assert MM.row_block_rows(D.MatmulKnobs(mc=32), 256, True, 1024) == 32  # the knob wins


@pytest.mark.parametrize("k, panel, width", [(384, "384x32", 16), (512, "512x32", 16), (2048, "512x32", 16),
                                              (768, "768x16", 8), (1024, "512x16", 8)])
def test_one_reduction_pass_up_to_the_wide_tile(monkeypatch, k, panel, width):
    """K in one reduction tile up to WIDE_KC (512), so the epilogue runs on the accumulator
    registers; a longer K in tiles of 512, or in one where B's K x nv*W panel fits L1 (48 KB: K up
    to 768 with 16-float panels)."""
    from minimlir.passes.loop.schedule.default import matmul as MM

    monkeypatch.setattr(MM, "l1d_bytes", lambda: 48 << 10)
    mod = H.legalize(many_matmuls([(64, k, 512)]))
    D.schedule_module(mod, D.ScheduleConfig(width=width))
    assert f"memref<{panel}xf32>" in str(mod)  # B's packed panel: kc x nv*W


@pytest.mark.parametrize("m, k, n", [(64, 16, 3025), (128, 32, 729), (64, 16, 3136)])
def test_short_reduction_writes_row_blocks_with_b_unpacked(m, k, n):
    """K up to two vectors (SqueezeNet's 16- and 32-channel expand 1x1 convs as matmuls) is bound by
    writing C: B is read in place (no packed copy) and the parallel row blocks are 32 rows, not all M
    panel by panel nor one whole-M block (3136 columns split evenly: whole_m would apply)."""
    from minimlir.passes.loop.schedule.default import matmul as MM

    assert MM.row_block_rows(D.MatmulKnobs(), k, False, m, short_k=True) == MM.SHORT_K_ROWS
    mod = H.legalize(many_matmuls([(m, k, n)]))
    D.schedule_module(mod, D.ScheduleConfig(width=16))
    text = str(mod)
    assert "pack_b" not in text
    (kernel,) = [op for op in mod.walk() if D.loop.is_kernel(op)]
    (par,) = [lp for lp in kernel.walk() if isinstance(lp, D.loop.ForOp) and lp.kind.data == "parallel"]
    assert const_index(par.ub) == m // MM.SHORT_K_ROWS  # the row blocks
    a, b = np.random.default_rng(0).standard_normal((m, k)), np.random.default_rng(1).standard_normal((k, n))
    got = np.asarray(_compile(many_matmuls([(m, k, n)])).main(a.astype(np.float32), b.astype(np.float32)))
    np.testing.assert_allclose(got, a @ b, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("m, k, n, tile", [(128, 512, 2048, "6x64"), (197, 384, 1536, "6x64"),
                                           (64, 512, 2048, "8x32"), (128, 128, 2048, "8x32"), (128, 512, 784, "8x16")])
def test_wide_b_takes_a_six_by_four_vector_tile(m, k, n, tile):
    """N a multiple of 4 vectors with K and M long (BERT's and ViT's projections and MLPs): a 6 x 4-
    vector register tile (matmul.wide_tile); otherwise 8 x 2 with 32 registers. Checked natively."""
    mod = H.legalize(many_matmuls([(m, k, n)]))
    D.schedule_module(mod, D.ScheduleConfig(width=16))
    assert f"memref<{tile}xf32>" in str(mod)  # the accumulator tile
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)
    got = np.asarray(_compile(many_matmuls([(m, k, n)])).main(a, b))
    np.testing.assert_allclose(got, a @ b, rtol=1e-4, atol=2e-3)


@pytest.mark.parametrize("m, k, n, tile", [(128, 512, 2048, "4x24"), (128, 2048, 512, "4x24"), (256, 512, 512, "4x24"),
                                           (197, 384, 1536, "6x16"), (64, 512, 2048, "6x16"), (128, 128, 2048, "6x16")])
def test_wide_b_takes_a_four_by_three_vector_tile_with_16_registers(m, k, n, tile):
    """With 16 vector registers (AVX2) a wide B with K and M long takes a 4 x 3-vector tile (7 loads
    per 12 FMAs, not 6 x 2's 8) where its rows waste no more than 6 x 2's (M = 128, 256; not 197:
    200 rows against 198); N = 2048 is 85 full panels of 24 and a ragged last one. Checked natively."""
    mod = H.legalize(many_matmuls([(m, k, n)]))
    D.schedule_module(mod, D.ScheduleConfig(width=8))
    assert f"memref<{tile}xf32>" in str(mod)  # the accumulator tile
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)
    got = np.asarray(_compile(many_matmuls([(m, k, n)])).main(a, b))  # (the host's tile)
    np.testing.assert_allclose(got, a @ b, rtol=1e-4, atol=2e-3)
