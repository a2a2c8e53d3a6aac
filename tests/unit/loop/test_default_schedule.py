"""The default schedule (loop-schedule / passes/_default_schedule.py) keeps every kernel's
meaning: scheduled native code == NumPy, and scheduled IR == unscheduled IR in the interpreter."""

from __future__ import annotations

import numpy as np
import pytest

import minimlir.compiler.interpreter as H
import _schedule_kernels  # teaches the interpreter vector.broadcast; fused()
from minimlir.passes.loop.schedule import default as D
from minimlir.passes.loop.schedule.api import const_index
from minimlir.passes.loop.schedule.default import transaction
from minimlir.compiler.pipelines import expand
from minimlir.passes.loop.schedule import LoopSchedulePass, lower_scheduled
from minimlir.passes.loop.schedule.default.matmul import register_tile
from minimlir.passes.loop.schedule.default import knobs as K

native_ok, native_reason = H.native_status()
needs_native = pytest.mark.skipif(not native_ok, reason=native_reason)


def _compile(text: str, pipeline: str = "compile"):
    from minimlir.backend.runtime import compile_mlir_text

    return compile_mlir_text(text, pipeline=pipeline, cache=False)


def matmul_text(m, k, n) -> str:
    a, b, c = f"tensor<{m}x{k}xf32>", f"tensor<{k}x{n}xf32>", f"tensor<{m}x{n}xf32>"
    return f"""
func.func @main(%a: {a}, %b: {b}) -> {c} {{
  %c = graph.matmul %a, %b : ({a}, {b}) -> {c}
  func.return %c : {c}
}}"""


def rand(*shape, seed=0):
    return np.random.default_rng(seed + sum(shape)).standard_normal(shape).astype(np.float32)


def schedule_and_interpret(text: str, inputs, width=4, cfg=None):
    """Interpret the legalized module before and after loop-schedule (+ lowering)."""
    want = H.interpret_kernels(H.legalize(text), None, inputs)
    m = H.legalize(text)
    kinds = D.schedule_module(m, cfg or D.ScheduleConfig(width=width))
    lower_scheduled(m, width)
    m.verify()
    got = H.interpret_kernels(m, None, inputs)
    return want, got, kinds


@pytest.mark.parametrize("mkn", [(1, 1, 1), (7, 13, 5), (9, 17, 6)])
def test_matmul_interpreted_same_as_unscheduled(mkn):
    m, k, n = mkn
    cfg = D.ScheduleConfig(width=4, matmul=D.MatmulKnobs(mr=3, nv=2, mc=6, kc=4))
    want, got, kinds = schedule_and_interpret(matmul_text(m, k, n), [rand(m, k), rand(k, n, seed=1)], cfg=cfg)
    # N below 4 lanes: no vector fits the output rows, the generic schedule applies
    assert kinds == {"matmul_0": "matmul" if n >= 4 else "generic"}
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kc", [0, 8])
def test_matmul_schedule_structure(kc):
    """The register tile: accumulator buffer, vector + unrolled loops, parallel i0; the init
    hoisted in front of the reduction when it runs in several passes (kc = 8 of K = 32), else
    forwarded into the accumulator (kc unset: one pass)."""
    m = H.legalize(matmul_text(66, 32, 48))  # 6 | M: the full 6-row tile
    assert D.schedule_module(m, D.ScheduleConfig(width=8, matmul=D.MatmulKnobs(kc=kc))) == {"matmul_0": "matmul"}
    text = str(m)
    assert ('loop.block "matmul_init"' in text) == (kc == 8)
    assert 'loop.block "matmul_acc_in"' in text and 'loop.block "matmul_acc_out"' in text
    mr, nv = register_tile(D.MatmulKnobs(), D.ScheduleConfig(width=8).vector_registers)
    assert f"memref<{mr}x{nv * 8}xf32>" in text  # mr x (nv * W)
    assert "math.fma" in text
    assert " parallel " in text and " vectorize " in text and "unroll" in text


@needs_native
@pytest.mark.parametrize(
    "mkn", [(1, 1, 1), (7, 13, 5), (64, 64, 64), (65, 33, 17), (3, 100, 40), (50, 20, 3)]
)
def test_matmul_native(mkn):
    m, k, n = mkn
    a, b = rand(m, k), rand(k, n, seed=1)
    (c,) = H._call_native(_compile(matmul_text(m, k, n)), "main", [a, b], None)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)


@needs_native
def test_matmul_dynamic_native():
    prog = _compile(matmul_text("?", "?", "?"))
    for m, k, n in [(1, 1, 1), (7, 13, 5), (65, 33, 17), (32, 64, 48)]:
        a, b = rand(m, k), rand(k, n, seed=1)
        np.testing.assert_allclose(prog.main(a, b), a @ b, rtol=1e-4, atol=1e-4)


@needs_native
def test_batched_matmul_with_fused_bias_relu():
    text = """
func.func @main(%a: tensor<2x20x30xf32>, %b: tensor<2x30x40xf32>, %c: tensor<40xf32>) -> tensor<2x20x40xf32> {
  %m = graph.matmul %a, %b : (tensor<2x20x30xf32>, tensor<2x30x40xf32>) -> tensor<2x20x40xf32>
  %s = graph.add %m, %c : (tensor<2x20x40xf32>, tensor<40xf32>) -> tensor<2x20x40xf32>
  %r = graph.relu %s : tensor<2x20x40xf32>
  func.return %r : tensor<2x20x40xf32>
}"""
    a, b, c = rand(2, 20, 30), rand(2, 30, 40, seed=1), rand(40, seed=2)
    got = _compile(text).main(a, b, c)
    np.testing.assert_allclose(got, np.maximum(a @ b + c, 0), rtol=1e-4, atol=1e-4)


CONV = """
func.func @main(%x: tensor<{x}xf32>, %w: tensor<{w}xf32>, %b: tensor<{co}xf32>) -> tensor<{y}xf32> {{
  %y = graph.conv2d %x, %w, %b strides [{s}, {s}] pads [{p}, {p}, {p}, {p}] dilations [1, 1] group {g} : (tensor<{x}xf32>, tensor<{w}xf32>, tensor<{co}xf32>) -> tensor<{y}xf32>
  %r = graph.relu %y : tensor<{y}xf32>
  func.return %r : tensor<{y}xf32>
}}"""


def conv_ref(x, w, b, s, p, g):
    n, c, h, wd = x.shape
    co, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)))
    oh, ow = (h + 2 * p - kh) // s + 1, (wd + 2 * p - kw) // s + 1
    y = np.zeros((n, co, oh, ow), np.float64)
    opg = co // g
    for o in range(co):
        gi = o // opg
        for i in range(kh):
            for j in range(kw):
                patch = xp[:, gi * cg:(gi + 1) * cg, i:i + s * oh:s, j:j + s * ow:s]
                y[:, o] += np.einsum("nchw,c->nhw", patch, w[o, :, i, j])
        y[:, o] += b[o]
    return y.astype(np.float32)


@needs_native
@pytest.mark.parametrize(
    "shape",
    [  # (n, c, h, w, co, k, stride, pad, group)
        (1, 3, 9, 9, 8, 3, 1, 1, 1),
        (2, 4, 10, 7, 6, 3, 2, 1, 2),
        (1, 8, 6, 6, 8, 3, 1, 1, 8),
        (1, 16, 5, 5, 20, 1, 1, 0, 1),
        (1, 3, 15, 15, 4, 7, 2, 3, 1),
    ],
)
def test_conv_relu_native(shape):
    n, c, h, wd, co, k, s, p, g = shape
    oh, ow = (h + 2 * p - k) // s + 1, (wd + 2 * p - k) // s + 1
    text = CONV.format(
        x=f"{n}x{c}x{h}x{wd}", w=f"{co}x{c // g}x{k}x{k}", co=co, y=f"{n}x{co}x{oh}x{ow}", s=s, p=p, g=g
    )
    x, w, b = rand(n, c, h, wd), rand(co, c // g, k, k, seed=1), rand(co, seed=2)
    got = _compile(text).main(x, w, b)
    np.testing.assert_allclose(got, np.maximum(conv_ref(x, w, b, s, p, g), 0), rtol=1e-4, atol=1e-4)


OTHERS = """
func.func @main(%x: tensor<?x37xf32>, %y: tensor<37xf32>) -> (tensor<?x37xf32>, tensor<?x1xf32>) {
  %a = graph.mul %x, %y : (tensor<?x37xf32>, tensor<37xf32>) -> tensor<?x37xf32>
  %e = graph.exp %a : tensor<?x37xf32>
  %s = graph.softmax %e axis 1 : tensor<?x37xf32>
  %r = graph.reduce_sum %a axes [1] : tensor<?x37xf32> -> tensor<?x1xf32>
  func.return %s, %r : tensor<?x37xf32>, tensor<?x1xf32>
}"""


@needs_native
def test_generic_kernels_native_same_as_unscheduled():
    x, y = rand(5, 37), rand(37, seed=1)
    want = H._call_native(_compile(OTHERS, "graph-to-llvm"), "main", [x, y], None)
    got = H._call_native(_compile(OTHERS), "main", [x, y], None)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_generic_kernels_interpreted():
    text = OTHERS.replace("?x", "3x")
    want, got, kinds = schedule_and_interpret(text, [rand(3, 37), rand(37, seed=1)], width=8)
    assert set(kinds.values()) == {"generic"}
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_pass_options_and_errors():
    cfg = LoopSchedulePass(width=8, mr=4, nv=3, kc=64).config()
    assert (cfg.width, cfg.matmul.mr, cfg.matmul.nv, cfg.matmul.kc) == (8, 4, 3, 64)
    assert cfg.matmul.mc == D.MatmulKnobs().mc
    assert LoopSchedulePass().config().width == D.host_vector_width()
    assert D.host_vector_width() in (4, 8, 16)


def test_vector_width_fits_static_last_dims():
    """N = 13 < 16 lanes: the matmul rows use 8-lane vectors (mem verifies the fit)."""
    m = H.legalize(matmul_text(7, 5, 13))
    assert D.schedule_module(m, D.ScheduleConfig(width=16)) == {"matmul_0": "matmul"}
    lower_scheduled(m, 16)
    m.verify()
    text = str(m)
    assert "vector<8xf32>" in text and "vector<16xf32>" not in text
    k = next(op for op in H.legalize(matmul_text(7, 5, 3)).walk() if op.name == "loop.block")
    assert D.fit_width(k, 16) == 0


# -- conv2d vectorized over output channels -------------------------------------------------

CONV_GENERAL = """
func.func @main(%x: tensor<{x}xf32>, %w: tensor<{w}xf32>) -> tensor<{y}xf32> {{
  %y = graph.conv2d %x, %w strides [{sh}, {sw}] pads [{pads}] dilations [{dh}, {dw}] : (tensor<{x}xf32>, tensor<{w}xf32>) -> tensor<{y}xf32>
  func.return %y : tensor<{y}xf32>
}}"""


def conv_general_ref(x, w, strides, pads, dil):
    """Direct NumPy convolution (group 1), pads = (top, left, bottom, right)."""
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    n, c, hp, wp = xp.shape
    co, _, kh, kw = w.shape
    oh = (hp - (kh - 1) * dil[0] - 1) // strides[0] + 1
    ow = (wp - (kw - 1) * dil[1] - 1) // strides[1] + 1
    y = np.zeros((n, co, oh, ow))
    for i in range(kh):
        for j in range(kw):
            patch = xp[:, :, i * dil[0]:i * dil[0] + strides[0] * oh:strides[0],
                       j * dil[1]:j * dil[1] + strides[1] * ow:strides[1]]
            y += np.einsum("nchw,oc->nohw", patch, w[:, :, i, j])
    return y.astype(np.float32)


def conv_general_text(x, w, strides, pads, dil, y_shape=None):
    ref = conv_general_ref(np.zeros(x), np.zeros(w), strides, pads, dil)
    def dims(s):
        return "x".join(str(d) for d in s)

    return CONV_GENERAL.format(
        x=dims(x), w=dims(w), y=dims(y_shape or ref.shape), sh=strides[0], sw=strides[1],
        pads=", ".join(map(str, pads)), dh=dil[0], dw=dil[1],
    )


# (x shape, w shape, strides, pads (t, l, b, r), dilations)
CONV_CASES = [
    ((1, 3, 9, 9), (8, 3, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1)),
    ((2, 5, 11, 7), (16, 5, 3, 2), (2, 1), (0, 1, 2, 0), (1, 2)),
    ((1, 4, 13, 13), (12, 4, 5, 5), (3, 2), (2, 2, 2, 2), (2, 1)),
    ((1, 6, 5, 5), (32, 6, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1)),
    ((1, 2, 7, 17), (4, 2, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1)),
]


# the interpreter runs every scalar op in Python: the same cases with fewer rows and input channels
# (OW against rw, CO against nv*W, strides, pads and dilations unchanged)
CONV_CASES_INTERPRETED = [
    ((1, 3, 4, 9), (8, 3, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1)),
    ((2, 3, 5, 7), (16, 3, 3, 2), (2, 1), (0, 1, 2, 0), (1, 2)),
    ((1, 2, 13, 13), (12, 2, 5, 5), (3, 2), (2, 2, 2, 2), (2, 1)),
    ((1, 6, 5, 5), (32, 6, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1)),
    ((1, 2, 3, 17), (4, 2, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1)),
]


@pytest.mark.parametrize("case", CONV_CASES_INTERPRETED)
def test_conv_vector_interpreted_same_as_unscheduled(case):
    xs, ws, strides, pads, dil = case
    text = conv_general_text(xs, ws, strides, pads, dil)
    cfg = D.ScheduleConfig(width=4, conv2d=D.ConvKnobs(rw=3, nv=2))
    want, got, kinds = schedule_and_interpret(text, [rand(*xs), rand(*ws, seed=1)], cfg=cfg)
    assert kinds == {"conv2d_0": "conv2d"}
    m = H.legalize(text)
    D.schedule_module(m, cfg)
    names = {b.block_name.data for b in D.loop.blocks_of(m)}
    assert {"conv2d_wpack", "conv2d_acc_in", "conv2d_acc_out"} <= names  # the vector path ran
    assert ("conv2d_pad" in names) == any(pads)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-5)


def test_conv_vector_schedule_structure():
    """Packed weights, padded input, register tile rw x nv*W with the bias forwarded into it."""
    text = """
func.func @main(%x: tensor<1x8x14x14xf32>, %w: tensor<64x8x3x3xf32>, %b: tensor<64xf32>) -> tensor<1x64x14x14xf32> {
  %y = graph.conv2d %x, %w, %b strides [1, 1] pads [1, 1, 1, 1] dilations [1, 1] : (tensor<1x8x14x14xf32>, tensor<64x8x3x3xf32>, tensor<64xf32>) -> tensor<1x64x14x14xf32>
  func.return %y : tensor<1x64x14x14xf32>
}"""
    m = H.legalize(text)
    assert D.schedule_module(m, D.ScheduleConfig(width=16)) == {"conv2d_0": "conv2d"}
    text = str(m)
    for name in ("conv2d_pad", "conv2d_wpack", "conv2d_acc_in", "conv2d_acc_out"):
        assert f'loop.block "{name}"' in text
    assert 'loop.block "conv2d_init"' not in text  # forwarded into conv2d_acc_in
    assert "memref<2x8x3x3x32xf32>" in text  # [co0][ci][kh][kw][nv * W] weight panels
    assert "memref<1x8x16x16xf32>" in text  # 14 + 2 padding
    assert "memref<7x32xf32>" in text  # rw = 7 (divides 14) x nv * W = 2 * 16
    blk = next(b for b in D.loop.blocks_of(m) if b.block_name.data == "conv2d")
    assert not any(op.name in ("arith.select", "arith.minsi") for op in blk.body.walk())


@needs_native
@pytest.mark.parametrize("case", CONV_CASES)
def test_conv_vector_native(case):
    xs, ws, strides, pads, dil = case
    x, w = rand(*xs), rand(*ws, seed=1)
    (y,) = H._call_native(_compile(conv_general_text(xs, ws, strides, pads, dil)), "main", [x, w], None)
    np.testing.assert_allclose(y, conv_general_ref(x, w, strides, pads, dil), rtol=1e-4, atol=1e-4)


@needs_native
def test_conv_vector_dynamic_native():
    """N, H, W dynamic: padded extents and tails computed at run time; one compiled kernel."""
    text = CONV_GENERAL.format(x="?x3x?x?", w="16x3x3x3", y="?x16x?x?", sh=1, sw=2,
                               pads="1, 0, 1, 2", dh=1, dw=1)
    m = H.legalize(text)
    D.schedule_module(m, D.ScheduleConfig(width=16))
    m.verify()
    assert "memref<?x3x?x?xf32>" in str(m) and "conv2d_acc_out" in str(m)  # padded copy, vector path
    prog = _compile(text)
    for xs in [(1, 3, 5, 5), (2, 3, 9, 13), (1, 3, 3, 1)]:
        x, w = rand(*xs), rand(16, 3, 3, 3, seed=1)
        want = conv_general_ref(x, w, (1, 2), (1, 0, 1, 2), (1, 1))
        np.testing.assert_allclose(prog.main(x, w), want, rtol=1e-4, atol=1e-4)


def test_outlined_parallel_body_keeps_constant_tile_offsets():
    """The parallel loop's step is a constant of its own: loop-outline-parallel turns that value
    into the outlined function's step argument, and no other index of the body may become it
    (the register tile's accumulator offsets must stay constants for LLVM's SROA)."""
    from minimlir.backend.runtime import run_pipeline

    m = H.legalize(matmul_text(64, 32, 48))
    kinds = D.schedule_module(m, D.ScheduleConfig(width=8))
    assert kinds == {"matmul_0": "matmul"}
    par = [o for o in m.walk() if isinstance(o, D.loop.ForOp) and o.kind.data == "parallel"]
    assert par and all(len(list(l.step.uses)) == 1 for l in par)
    lower_scheduled(m, 8)
    run_pipeline(m, "graph-bufferize,mem-plan,loop-outline-parallel")
    bodies = [f for f in m.walk() if isinstance(f, D.func.FuncOp) and "loop.parallel_body" in f.attributes]
    assert bodies
    for f in bodies:
        step = f.body.block.args[2]
        assert [u.operation.name for u in step.uses] == ["loop.for"]


def test_single_trip_loops_are_inlined():
    """A vector loop of exactly one vector leaves no loop behind: its variable is the constant lb."""
    m = H.legalize(matmul_text(8, 4, 16))
    D.schedule_module(m, D.ScheduleConfig(width=16, matmul=D.MatmulKnobs(mr=8, nv=1, mc=8)))
    lower_scheduled(m, 16)
    m.verify()
    for l in [o for o in m.walk() if isinstance(o, D.loop.ForOp) and o.kind.data == "serial"]:
        lb, ub, step = (const_index(v) for v in (l.lb, l.ub, l.step))
        assert None in (lb, ub, step) or not lb < ub <= lb + step
    want, got, _ = schedule_and_interpret(matmul_text(8, 4, 16), [rand(8, 4), rand(4, 16, seed=1)], width=16,
                                          cfg=D.ScheduleConfig(width=16, matmul=D.MatmulKnobs(mr=8, nv=1, mc=8)))
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mkn", [(7, 13, 5), (9, 17, 6), (8, 8, 8)])
def test_matmul_packed_b_interpreted_same_as_unscheduled(mkn):
    """The pack_b knob: B's kc x (nv*W) tile is copied into a local buffer per j0 (cache_read)."""
    m, k, n = mkn
    cfg = D.ScheduleConfig(width=4, matmul=D.MatmulKnobs(mr=3, nv=2, mc=6, kc=4, pack_b=True))
    want, got, kinds = schedule_and_interpret(matmul_text(m, k, n), [rand(m, k), rand(k, n, seed=1)], cfg=cfg)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-5)
    mod = H.legalize(matmul_text(m, k, n))
    D.schedule_module(mod, cfg)
    assert "matmul_pack_b" in str(mod) and "memref<4x8xf32>" in str(mod)  # kc x nv*W


@needs_native
def test_matmul_packed_b_native():
    pipeline = expand("compile").replace("loop-schedule,", "loop-schedule{pack_b=true kc=16},")
    for m, k, n in [(70, 40, 50), (65, 33, 17)]:
        a, b = rand(m, k), rand(k, n, seed=1)
        np.testing.assert_allclose(_compile(matmul_text(m, k, n), pipeline).main(a, b), a @ b, rtol=1e-4, atol=1e-4)


def test_matmul_register_tile_adapts_to_static_extents():
    """M = 63: mr 8 -> 7 (divides M, no guarded row loop); N = 48 = 3 vectors: nv 2 -> 1."""
    m = H.legalize(matmul_text(63, 10, 48))
    assert D.schedule_module(m, D.ScheduleConfig(width=16)) == {"matmul_0": "matmul"}
    assert "memref<7x16xf32>" in str(m)  # the accumulator tile mr x nv*W
    want, got, _ = schedule_and_interpret(matmul_text(63, 10, 48), [rand(63, 10), rand(10, 48, seed=1)], width=16)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-5)


# -- small M (matrix-vector), copy inlining, grouped conv


@pytest.mark.parametrize("mkn", [(1, 37, 20), (3, 19, 24), (2, 8, 5)])
def test_small_m_matmul_interpreted_same_as_unscheduled(mkn):
    m, k, n = mkn
    cfg = D.ScheduleConfig(width=4, matmul=D.MatmulKnobs(small_nv=2, small_kc=3))
    want, got, kinds = schedule_and_interpret(matmul_text(m, k, n), [rand(m, k), rand(k, n, seed=1)], cfg=cfg)
    assert kinds == {"matmul_0": "matmul"}
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-5)


def test_small_m_matmul_narrower_vectors_divide_n():
    """N = 40 with W = 16: W = 8 and nv = 5 (no guarded vector loop), same values."""
    text = matmul_text(2, 9, 40)
    cfg = D.ScheduleConfig(width=16)
    m = H.legalize(text)
    D.schedule_module(m, cfg)
    assert "memref<2x40xf32>" in str(m)  # the accumulator: 2 rows x 5 vectors of 8
    want, got, _ = schedule_and_interpret(text, [rand(2, 9), rand(9, 40, seed=1)], width=16, cfg=cfg)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-5)


def test_small_m_matmul_tile_is_m_rows():
    """M = 1: a 1 x (small_nv*W) accumulator, k split by small_kc (no guarded 8-row tile)."""
    m = H.legalize(matmul_text(1, 64, 256))
    D.schedule_module(m, D.ScheduleConfig(width=8, matmul=D.MatmulKnobs(small_nv=4, small_kc=8)))
    text = str(m)
    assert "memref<1x32xf32>" in text and "minsi" not in text


@needs_native
@pytest.mark.parametrize("mkn", [(1, 300, 70), (4, 33, 64), (2, 9216 // 32, 40), (3, 17, 1000), (1, 40, 20)])
def test_small_m_matmul_native(mkn):
    m, k, n = mkn
    a, b = rand(m, k), rand(k, n, seed=1)
    (c,) = H._call_native(_compile(matmul_text(m, k, n)), "main", [a, b], None)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)


SPLAT_T = """
func.func @main(%x: tensor<3x20xf32>) -> tensor<3x12xf32> {
  %s = graph.constant dense<2.000000e-02> : tensor<f32>
  %w = graph.broadcast_to %s : tensor<f32> -> tensor<12x20xf32>
  %wt = graph.transpose %w perm [1, 0] : tensor<12x20xf32> -> tensor<20x12xf32>
  %c = graph.matmul %x, %wt : (tensor<3x20xf32>, tensor<20x12xf32>) -> tensor<3x12xf32>
  func.return %c : tensor<3x12xf32>
}"""


def test_copy_blocks_inlined_into_elementwise_consumers():
    """broadcast_to -> transpose of a splat becomes one store of the splat (no temp buffer);
    the transpose feeding the matmul (a reduction) is not inlined."""
    from minimlir.passes.graph.fuse import GraphFusePass
    from minimlir.passes.graph.legalize import GraphLegalizePass
    from minimlir.passes.loop.fuse import LoopFusePass

    m = H.parse(SPLAT_T)
    for p in (GraphFusePass(), GraphLegalizePass(), LoopFusePass()):
        p.apply(H._context(), m)
    kernels = [k for k in m.walk() if D.loop.is_kernel(k)]
    before = {k.sym_name.data: [b.block_name.data for b in D.loop.blocks_of(k)] for k in kernels}
    assert ["broadcast_to", "transpose"] in before.values()
    D.schedule_module(m, D.ScheduleConfig(width=4))
    after = {k.sym_name.data: [b.block_name.data for b in D.loop.blocks_of(k)] for k in kernels}
    assert ["transpose"] in after.values()
    assert all("matmul" not in v or v == before[k] or "transpose" not in v for k, v in after.items())
    m.verify()


@needs_native
def test_copy_inlining_native():
    x = rand(3, 20)
    got = _compile(SPLAT_T).main(x)
    np.testing.assert_allclose(got, x @ np.full((20, 12), 0.02, np.float32), rtol=1e-5, atol=1e-5)


GROUP_CASES = [  # (n, c, h, w, co, k, stride, pad, group)
    (1, 8, 7, 9, 16, 3, 1, 1, 2),
    (2, 6, 9, 8, 24, 3, 2, 1, 3),
    (1, 12, 6, 5, 8, 1, 1, 0, 2),
]


def _group_text(n, c, h, wd, co, k, s, p, g):
    oh, ow = (h + 2 * p - k) // s + 1, (wd + 2 * p - k) // s + 1
    return CONV.format(x=f"{n}x{c}x{h}x{wd}", w=f"{co}x{c // g}x{k}x{k}", co=co, y=f"{n}x{co}x{oh}x{ow}",
                       s=s, p=p, g=g)


# interpreted: the same groups, output widths and channel counts with fewer rows and input channels
GROUP_CASES_INTERPRETED = [
    (1, 4, 3, 9, 16, 3, 1, 1, 2),
    (2, 6, 4, 8, 24, 3, 2, 1, 3),
    (1, 12, 6, 5, 8, 1, 1, 0, 2),
]


@pytest.mark.parametrize("case", GROUP_CASES_INTERPRETED)
def test_grouped_conv_vector_interpreted_same_as_unscheduled(case):
    n, c, h, wd, co, k, s, p, g = case
    cfg = D.ScheduleConfig(width=4, conv2d=D.ConvKnobs(rw=3, nv=2))
    inputs = [rand(n, c, h, wd), rand(co, c // g, k, k, seed=1), rand(co, seed=2)]
    want, got, kinds = schedule_and_interpret(_group_text(*case), inputs, cfg=cfg)
    assert kinds["conv2d_0"] == "conv2d"
    m = H.legalize(_group_text(*case))
    D.schedule_module(m, cfg)
    assert "conv2d_wpack" in {b.block_name.data for b in D.loop.blocks_of(m)}  # the vector path ran
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


@needs_native
@pytest.mark.parametrize("case", [*GROUP_CASES, (1, 32, 10, 10, 64, 5, 1, 2, 2)])
def test_grouped_conv_vector_native(case):
    n, c, h, wd, co, k, s, p, g = case
    x, w, b = rand(n, c, h, wd), rand(co, c // g, k, k, seed=1), rand(co, seed=2)
    got = _compile(_group_text(*case)).main(x, w, b)
    np.testing.assert_allclose(got, np.maximum(conv_ref(x, w, b, s, p, g), 0), rtol=1e-4, atol=1e-4)


ROW_CASES = [  # depthwise and groups of 3 or 6 channels: the row path (ow vectorized)
    (1, 6, 7, 9, 6, 3, 1, 1, 6),
    (2, 6, 9, 8, 6, 3, 2, 1, 6),
    (1, 6, 4, 9, 6, 3, 1, 1, 3),
    (1, 12, 5, 11, 18, 1, 1, 0, 2),
    (1, 6, 11, 12, 6, 5, 2, 2, 6),  # 5x5 stride 2: the row vectorized with strided loads
    (1, 4, 13, 21, 4, 5, 2, 1, 4),  # ragged: 9 outputs a row
]


@pytest.mark.parametrize("case", ROW_CASES)
def test_grouped_conv_rows_interpreted_same_as_unscheduled(case):
    n, c, h, wd, co, k, s, p, g = case
    cfg = D.ScheduleConfig(width=4)
    inputs = [rand(n, c, h, wd), rand(co, c // g, k, k, seed=1), rand(co, seed=2)]
    want, got, kinds = schedule_and_interpret(_group_text(*case), inputs, cfg=cfg)
    assert kinds["conv2d_0"] == ("conv2d" if s == 1 or k > 3 else "generic")  # strided 3x3 rows: generic
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


@needs_native
@pytest.mark.parametrize("case", [*ROW_CASES, (1, 40, 14, 14, 40, 3, 1, 1, 40)])
def test_grouped_conv_rows_native(case):
    n, c, h, wd, co, k, s, p, g = case
    x, w, b = rand(n, c, h, wd), rand(co, c // g, k, k, seed=1), rand(co, seed=2)
    got = _compile(_group_text(*case)).main(x, w, b)
    np.testing.assert_allclose(got, np.maximum(conv_ref(x, w, b, s, p, g), 0), rtol=1e-4, atol=1e-4)


@needs_native
def test_grouped_conv_dynamic_native():
    """Depthwise and grouped convs with dynamic N, H, W: one compiled kernel, several shapes."""
    for co, g in ((8, 8), (16, 2)):
        text = CONV.format(x="?x8x?x?", w=f"{co}x{8 // g}x3x3", co=co, y=f"?x{co}x?x?", s=1, p=1, g=g)
        prog = _compile(text)
        for xs in [(1, 8, 5, 5), (2, 8, 9, 13), (1, 8, 3, 1)]:
            x, w, b = rand(*xs), rand(co, 8 // g, 3, 3, seed=1), rand(co, seed=2)
            np.testing.assert_allclose(prog.main(x, w, b), np.maximum(conv_ref(x, w, b, 1, 1, g), 0),
                                       rtol=1e-4, atol=1e-4)


def test_conv_vector_prime_width_uses_larger_divisor():
    """OW = 13: no divisor in 2..8, so the tile is 13 columns when 13*nv accumulators, nv weight
    vectors and a broadcast leave LLVM room in the registers (23 of 32): 13 x 1 vector with 32
    registers (it was 1 x 1, a load per FMA). 13 x 2 (29 registers) spilled inside the reduction
    (SqueezeNet's 13x13 3x3 convs, 90 GFLOP/s): two clamped tiles of 7 x 2 instead (134). A 1x1
    conv (one tap in the reduction body) keeps 13 x 2."""
    xs, ws = (1, 4, 13, 13), (16, 4, 1, 1)
    text = conv_general_text(xs, ws, (1, 1), (0, 0, 0, 0), (1, 1))
    m = H.legalize(text)
    D.schedule_module(m, D.ScheduleConfig(width=16))
    assert "memref<13x16xf32>" in str(m)  # rw = 13 x nv * W = 16
    m = H.legalize(conv_general_text((1, 4, 13, 13), (64, 4, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1)))
    D.schedule_module(m, D.ScheduleConfig(width=16))
    assert "memref<7x32xf32>" in str(m) and "memref<13x32xf32>" not in str(m)  # 7 + 7 (clamped) columns
    m = H.legalize(conv_general_text((1, 4, 13, 13), (64, 4, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1)))
    D.schedule_module(m, D.ScheduleConfig(width=16))
    assert "memref<13x32xf32>" in str(m)  # a 1x1 conv: one tap in the body, 13 x 2 does not spill
    m = H.legalize(conv_general_text((1, 4, 17, 17), (64, 4, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1)))
    D.schedule_module(m, D.ScheduleConfig(width=16))
    assert "memref<6x32xf32>" in str(m)  # OW = 17: 3 tiles of 6 (18 columns), not of 8 (24)
    cfg = D.ScheduleConfig(width=4, conv2d=D.ConvKnobs(rw=4, nv=1))  # 16 registers: 3 + 3 + 3 + 3 (clamped) + 1
    want, got, _ = schedule_and_interpret(text, [rand(*xs), rand(*ws, seed=1)], cfg=cfg)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-5)


@needs_native
def test_conv_vector_prime_width_native():
    xs, ws = (1, 8, 13, 13), (24, 8, 3, 3)
    x, w = rand(*xs), rand(*ws, seed=1)
    (y,) = H._call_native(_compile(conv_general_text(xs, ws, (1, 1), (1, 1, 1, 1), (1, 1))), "main", [x, w], None)
    np.testing.assert_allclose(y, conv_general_ref(x, w, (1, 1), (1, 1, 1, 1), (1, 1)), rtol=1e-4, atol=1e-4)


def _printed(op) -> str:
    from io import StringIO

    from xdsl.printer import Printer

    out = StringIO()
    Printer(stream=out).print_op(op)
    return out.getvalue()


def test_refused_mark_attempts_leave_the_kernel_unchanged(monkeypatch):
    """Attempts made without a backup copy (marks_only: parallel, vectorize) must not change the
    kernel when they are refused: check every one the default schedule makes on a few kernels."""
    text = _printed
    real = transaction.attempt
    refused = []

    def checked(kernel, fn, *, marks_only=False):
        before = text(kernel) if marks_only else None
        ok = real(kernel, fn, marks_only=marks_only)
        if marks_only and not ok:
            assert text(kernel) == before
            refused.append(kernel.sym_name.data)
        return ok

    monkeypatch.setattr(transaction, "attempt", checked)
    for src in (OTHERS.replace("?x", "3x"), matmul_text(7, 13, 5), conv_general_text((1, 3, 9, 9), (8, 3, 3, 3), (2, 2), (1, 1, 1, 1), (1, 1))):
        D.schedule_module(H.legalize(src), D.ScheduleConfig(width=8))
    assert refused  # some attempts were refused (else the check checked nothing)


def test_a_mark_attempt_refused_after_marking_puts_the_marks_back():
    """A marks_only attempt keeps the loops' properties and attributes, not a copy of the body: a
    step refused after earlier steps marked loops (unrolled, vectorized, a vector width) leaves
    the kernel as it was."""
    from xdsl.dialects import func

    from minimlir.dialects import loop
    from minimlir.passes.loop.schedule.api import ScheduleError
    from minimlir.passes.loop.schedule.default._helpers import _mark_width

    text = _printed
    mod = H.legalize(matmul_text(7, 13, 5))
    kernel = next(k for k in mod.walk() if isinstance(k, func.FuncOp) and "loop.kernel" in k.attributes)
    before = text(kernel)

    def marks_then_refuses(s):
        *_, i, j, k = s.get_loops(s.get_block(loop.blocks_of(kernel)[0].block_name.data))
        s.unroll(i, 2)
        s.parallel(i)
        _mark_width(j, 8)
        raise ScheduleError("refused after marking", kernel)

    assert not transaction.attempt(kernel, marks_then_refuses, marks_only=True)
    assert text(kernel) == before


# -- conv + fused elementwise epilogue (relu, residual add, per-channel mul/add), and kernels
# -- with two convs (ResNet's projection shortcut)

CONV_EPILOGUE = """
func.func @main(%x: tensor<{x}xf32>, %w: tensor<{w}xf32>, %b: tensor<{co}xf32>, %r: tensor<{y}xf32>, %sc: tensor<1x{co}x1x1xf32>) -> tensor<{y}xf32> {{
  %y = graph.conv2d %x, %w, %b strides [{s}, {s}] pads [{p}, {p}, {p}, {p}] dilations [1, 1] group 1 : (tensor<{x}xf32>, tensor<{w}xf32>, tensor<{co}xf32>) -> tensor<{y}xf32>
{body}
}}"""

EPILOGUES = {
    "relu": ("""  %o = graph.relu %y : tensor<{y}xf32>
  func.return %o : tensor<{y}xf32>""", lambda y, r, sc: np.maximum(y, 0)),
    "add_relu": ("""  %a = graph.add %y, %r : (tensor<{y}xf32>, tensor<{y}xf32>) -> tensor<{y}xf32>
  %o = graph.relu %a : tensor<{y}xf32>
  func.return %o : tensor<{y}xf32>""", lambda y, r, sc: np.maximum(y + r, 0)),
    "mul_add": ("""  %m = graph.mul %y, %sc : (tensor<{y}xf32>, tensor<1x{co}x1x1xf32>) -> tensor<{y}xf32>
  %o = graph.add %m, %sc : (tensor<{y}xf32>, tensor<1x{co}x1x1xf32>) -> tensor<{y}xf32>
  func.return %o : tensor<{y}xf32>""", lambda y, r, sc: y * sc + sc),
}

# (n, c, h, w, co, k, stride, pad): OW 14 (rw 7), 13 (prime), 7 with stride 2; CO 8, 24, 12
EPILOGUE_SHAPES = [(1, 8, 14, 14, 32, 3, 1, 1), (1, 5, 13, 13, 24, 3, 1, 1), (2, 3, 13, 11, 12, 3, 2, 1)]
# the interpreter runs every scalar op in Python: the same cases (OW a multiple of rw 3, OW prime,
# stride 2 with batch 2; CO a multiple of nv*W, and not) on small shapes, each shape with one epilogue
# (every epilogue once, every shape once; test_conv_epilogue_native runs all nine pairs natively)
EPILOGUE_CASES_INTERPRETED = [
    ((1, 4, 6, 6, 16, 3, 1, 1), "add_relu"),
    ((1, 3, 7, 7, 8, 3, 1, 1), "relu"),
    ((2, 2, 7, 11, 12, 3, 2, 1), "mul_add"),  # OH 4, OW 6; the per-channel operand with CO 12
]


def _epilogue_case(shape, kind):
    n, c, h, wd, co, k, s, p = shape
    oh, ow = (h + 2 * p - k) // s + 1, (wd + 2 * p - k) // s + 1
    y = f"{n}x{co}x{oh}x{ow}"
    body, ref = EPILOGUES[kind]
    text = CONV_EPILOGUE.format(x=f"{n}x{c}x{h}x{wd}", w=f"{co}x{c}x{k}x{k}", co=co, y=y, s=s, p=p,
                                body=body.format(y=y, co=co))
    args = [rand(n, c, h, wd), rand(co, c, k, k, seed=1), rand(co, seed=2), rand(n, co, oh, ow, seed=3),
            rand(1, co, 1, 1, seed=4)]
    want = ref(conv_ref(*args[:3], s, p, 1), args[3], args[4])
    return text, args, want


def _fused(text: str):
    """graph-fuse, graph-legalize, loop-fuse: one kernel with the conv and its consumers."""
    return _schedule_kernels.fused(text, verify=False)


@pytest.mark.parametrize("shape, kind", EPILOGUE_CASES_INTERPRETED, ids=[k for _, k in EPILOGUE_CASES_INTERPRETED])
def test_conv_epilogue_interpreted_same_as_unscheduled(shape, kind):
    text, args, _ = _epilogue_case(shape, kind)
    want = H.interpret_kernels(H.legalize(text), None, args)
    m = _fused(text)
    cfg = D.ScheduleConfig(width=4, conv2d=D.ConvKnobs(rw=3, nv=2))
    assert list(D.schedule_module(m, cfg).values()) == ["conv2d"]
    lower_scheduled(m, 4)
    m.verify()
    got = H.interpret_kernels(m, None, args)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-5)


@needs_native
@pytest.mark.parametrize("shape", EPILOGUE_SHAPES)
@pytest.mark.parametrize("kind", sorted(EPILOGUES))
def test_conv_epilogue_native(shape, kind):
    text, args, want = _epilogue_case(shape, kind)
    (got,) = H._call_native(_compile(text), "main", args, None)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


SHORTCUT = """
func.func @main(%x: tensor<1x{c}x{h}x{h}xf32>, %w: tensor<{co}x{c}x1x1xf32>, %b: tensor<{co}xf32>, %x2: tensor<1x{c2}x{h2}x{h2}xf32>, %w2: tensor<{co}x{c2}x1x1xf32>, %b2: tensor<{co}xf32>) -> tensor<1x{co}x{h}x{h}xf32> {{
  %y = graph.conv2d %x, %w, %b strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1] group 1 : (tensor<1x{c}x{h}x{h}xf32>, tensor<{co}x{c}x1x1xf32>, tensor<{co}xf32>) -> tensor<1x{co}x{h}x{h}xf32>
  %y2 = graph.conv2d %x2, %w2, %b2 strides [2, 2] pads [0, 0, 0, 0] dilations [1, 1] group 1 : (tensor<1x{c2}x{h2}x{h2}xf32>, tensor<{co}x{c2}x1x1xf32>, tensor<{co}xf32>) -> tensor<1x{co}x{h}x{h}xf32>
  %a = graph.add %y, %y2 : (tensor<1x{co}x{h}x{h}xf32>, tensor<1x{co}x{h}x{h}xf32>) -> tensor<1x{co}x{h}x{h}xf32>
  %o = graph.relu %a : tensor<1x{co}x{h}x{h}xf32>
  func.return %o : tensor<1x{co}x{h}x{h}xf32>
}}"""


def _shortcut_case(c, h, co, c2):
    h2 = 2 * h
    text = SHORTCUT.format(c=c, h=h, co=co, c2=c2, h2=h2)
    args = [rand(1, c, h, h), rand(co, c, 1, 1, seed=1), rand(co, seed=2),
            rand(1, c2, h2, h2, seed=3), rand(co, c2, 1, 1, seed=4), rand(co, seed=5)]
    want = np.maximum(conv_ref(*args[:3], 1, 0, 1) + conv_ref(*args[3:], 2, 0, 1), 0)
    return text, args, want


def test_projection_shortcut_both_convs_take_the_vector_path():
    """conv2d + conv2d_1 (stride 2) -> add -> relu in one kernel: each conv gets its own packed
    weights and register tile (the second one used to stay generic)."""
    text, _, _ = _shortcut_case(16, 14, 64, 8)
    m = _fused(text)
    assert list(D.schedule_module(m, D.ScheduleConfig(width=16)).values()) == ["conv2d"]
    names = {b.block_name.data for b in D.loop.blocks_of(m)}
    for conv in ("conv2d", "conv2d_1"):
        assert {conv, f"{conv}_wpack", f"{conv}_acc_in", f"{conv}_acc_out"} <= names
    text_ir = str(m)
    assert "memref<14x32xf32>" in text_ir  # a register tile per conv (1x1: 14 columns x 2 vectors)
    assert "memref<2x16x1x1x32xf32>" in text_ir and "memref<2x8x1x1x32xf32>" in text_ir
    m.verify()


@pytest.mark.parametrize("case", [(4, 6, 16, 4), (5, 13, 24, 3)])
def test_projection_shortcut_interpreted_same_as_unscheduled(case):
    text, args, _ = _shortcut_case(*case)
    want = H.interpret_kernels(H.legalize(text), None, args)
    m = _fused(text)
    cfg = D.ScheduleConfig(width=4, conv2d=D.ConvKnobs(rw=3, nv=2))
    D.schedule_module(m, cfg)
    assert "conv2d_1_acc_out" in str(m)
    lower_scheduled(m, 4)
    m.verify()
    got = H.interpret_kernels(m, None, args)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-5)


@needs_native
@pytest.mark.parametrize("case", [(16, 14, 64, 8), (5, 13, 24, 3), (64, 7, 256, 32)])
def test_projection_shortcut_native(case):
    text, args, want = _shortcut_case(*case)
    (got,) = H._call_native(_compile(text), "main", args, None)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def _scheduled_epilogue(kind: str, knobs: dict | None = None):
    """The 8 -> 64 3x3 conv at 14x14 with epilogue `kind`, fused and scheduled (under `knobs`):
    its kernel, and the kernel's full-size (1x64x14x14) buffers."""
    text, _, _ = _epilogue_case((1, 8, 14, 14, 64, 3, 1, 1), kind)
    m = _fused(text)
    for k in m.walk():
        if knobs and D.loop.is_kernel(k):
            K.set_assignment(k, knobs)
    assert list(D.schedule_module(m, D.ScheduleConfig(width=16)).values()) == ["conv2d"]
    (kernel,) = [k for k in m.walk() if D.loop.is_kernel(k)]
    full = [a for a in kernel.walk() if a.name in ("mem.alloc", "mem.alloca")
            and a.results[0].type.get_shape() == (1, 64, 14, 14)]
    return kernel, full


TRANSPOSED_TILE_BLOCKS = ["conv2d_wpack", "conv2d_acc_in", "conv2d", "conv2d_acc_t", "conv2d_acc_out"]


def _tile_blocks(kernel) -> list[str]:
    return [b.block_name.data for b in D.loop.blocks_of(kernel) if not b.block_name.data.startswith("conv2d_pad")]


def test_conv_residual_epilogue_is_applied_to_the_transposed_tile():
    """ResNet's residual add + ReLU after a vector-path conv whose tile is stored along the output
    row (conv2d.transpose_out): applied in the tile's copy-out, on vectors along the row (the
    residual is a vector load there), so the conv's output is never a full-size buffer of its own."""
    kernel, full = _scheduled_epilogue("add_relu")
    assert _tile_blocks(kernel) == TRANSPOSED_TILE_BLOCKS
    assert not full
    out = D.loop.find_block(kernel, "conv2d_acc_out")
    inner = D.loop.block_loops(out)[-1]
    assert inner.kind.data == "vectorize" and inner.attributes["loop.vector_width"].value.data == 7
    assert len([o for o in out.body.walk() if o.name == "mem.load"]) == 2  # the tile, the residual


def test_conv_residual_epilogue_is_one_vectorized_block():
    """ResNet's residual add + ReLU after a vector-path conv storing its tile per element
    (conv2d.transpose_out off): one block (the add's full-size temporary is gone: only the conv's
    own output buffer is allocated at full size), computed under the conv's parallel channel-block
    loop, vectorized along the output row (it was two scalar nests, 2/3 of ResNet-50's residual
    convs)."""
    kernel, full = _scheduled_epilogue("add_relu", {"conv2d.transpose_out": False})
    epi = [b for b in D.loop.blocks_of(kernel) if not b.block_name.data.startswith("conv2d")]
    assert len(epi) == 1, [b.block_name.data for b in D.loop.blocks_of(kernel)]
    assert len(full) == 1
    par = [l for l in kernel.walk() if isinstance(l, D.loop.ForOp) and l.kind.data == "parallel"]
    assert any(p.is_ancestor(epi[0]) for p in par)
    assert D.loop.block_loops(epi[0])[-1].kind.data == "vectorize"


@pytest.mark.parametrize("kind", ["relu", "mul_add"])
def test_conv_channel_epilogue_applied_to_the_register_tile(kind):
    """A conv's epilogue that reads nothing along the output row (ReLU; a per-channel scale and
    shift) is applied to the accumulator tile before its one store: the conv's output is no
    longer a full-size kernel-local buffer written by the tile and read back by a separate
    epilogue nest (ResNet-50's 7x7 stem: 3.2 MB a call, 2.2 -> 1.9 ms)."""
    kernel, full = _scheduled_epilogue(kind)
    assert _tile_blocks(kernel) == TRANSPOSED_TILE_BLOCKS
    assert not full
    (out,) = [b for b in D.loop.blocks_of(kernel) if b.block_name.data == "conv2d_acc_out"]
    assert {o.name for o in out.body.walk()} >= ({"arith.maximumf"} if kind == "relu" else {"arith.mulf", "arith.addf"})


def test_conv_padded_input_is_copied_by_rows():
    """The zero-padded copy of a conv's input (static sizes): border rows and columns filled
    with 0, interior rows copied by a vectorized loop, no clamp or select per element (one
    element at a time it took 0.15 of a 1.65 ms 64 x 56 x 56 3x3 conv). Asymmetric pads with
    stride 2 (the copy holds only the rows and columns the conv reads); the numbers: CONV_CASES."""
    m = H.legalize(conv_general_text((1, 4, 13, 11), (32, 4, 3, 3), (2, 2), (0, 1, 2, 0), (1, 1)))
    D.schedule_module(m, D.ScheduleConfig(width=8))
    (kernel,) = [k for k in m.walk() if D.loop.is_kernel(k)]
    pads = {b.block_name.data: b for b in D.loop.blocks_of(kernel) if b.block_name.data.startswith("conv2d_pad")}
    assert set(pads) == {"conv2d_pad", "conv2d_pad_bottom", "conv2d_pad_left"}, sorted(pads)
    assert not [o for b in pads.values() for o in b.body.walk() if o.name in ("arith.select", "arith.minsi")]
    assert D.loop.block_loops(pads["conv2d_pad"])[-1].kind.data == "vectorize"


POOL_CASES = [  # (C, H, W, kernel, stride, op): stride 2 rows (strided vector loads), ragged widths
    (3, 15, 23, 3, 2, "max_pool2d"),
    (2, 9, 40, 2, 2, "max_pool2d"),
    (4, 11, 11, 3, 1, "max_pool2d"),
    (2, 8, 37, 3, 2, "avg_pool2d"),
]


def _pool_text(c, h, w, k, s, op):
    oh, ow = (h - k) // s + 1, (w - k) // s + 1
    x, y = f"tensor<1x{c}x{h}x{w}xf32>", f"tensor<1x{c}x{oh}x{ow}xf32>"
    return f"""
func.func @main(%x: {x}) -> {y} {{
  %y = graph.{op} %x kernel [{k}, {k}] strides [{s}, {s}] : {x} -> {y}
  func.return %y : {y}
}}"""


def _pool_ref(x, k, s, op):
    n, c, h, w = x.shape
    oh, ow = (h - k) // s + 1, (w - k) // s + 1
    win = np.stack([x[:, :, i:i + s * (oh - 1) + 1:s, j:j + s * (ow - 1) + 1:s] for i in range(k) for j in range(k)])
    return win.max(0) if op == "max_pool2d" else win.mean(0)


@pytest.mark.parametrize("case", POOL_CASES)
def test_pool_window_loops_outside_the_vectorized_output_row(case):
    """A pool's kernel loops run outside its output row, which is vectorized (stride 2: strided
    vector loads); before, the kernel loops were innermost and the whole pool scalar."""
    c, h, w, k, s, op = case
    text = _pool_text(*case)
    m = H.legalize(text)
    D.schedule_module(m, D.ScheduleConfig(width=8))
    (blk,) = [b for b in D.loop.blocks_of(m) if "reduce" in b.kinds]  # max_pool2d, avg_pool2d_sum
    loops = D.loop.block_loops(blk)
    assert loops[-1].kind.data == "vectorize" and [l.kind.data for l in loops[-3:-1]] == ["serial"] * 2
    assert const_index(loops[-2].ub) == k and const_index(loops[-3].ub) == k
    x = rand(1, c, h, w)
    want, got, _ = schedule_and_interpret(text, [x], width=8, cfg=D.ScheduleConfig(width=8))
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6, atol=1e-6)
    if native_ok:
        (y,) = H._call_native(_compile(text), "main", [x], None)
        np.testing.assert_allclose(y, _pool_ref(x, k, s, op), rtol=1e-5, atol=1e-6)


def test_short_rows_pick_the_width_with_the_least_remainder():
    from minimlir.passes.loop.schedule.default.generic import _short_loop_width

    assert _short_loop_width(16, 27) == 8 and _short_loop_width(16, 56) == 8 and _short_loop_width(16, 55) == 16
    assert _short_loop_width(16, 200) == 16 and _short_loop_width(8, 13) == 4 and _short_loop_width(0, 9) == 0


RAGGED_CONV_CASES = [  # OW with no divisor near rw = 8 that fits the registers (SqueezeNet's conv1: 111)
    ((1, 3, 5, 47), (32, 3, 3, 3), (2, 2), (0, 0, 0, 0), (1, 1), 8),    # OW = 23, stride 2: 3 x 8 (24)
    ((1, 5, 3, 19), (32, 5, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 5),    # OW = 19, padded: 4 x 5 (20)
    ((1, 4, 3, 85), (32, 4, 1, 3), (1, 3), (0, 1, 0, 1), (1, 1), 6),    # OW = 29, stride 3: 5 x 6 (30)
]


@pytest.mark.parametrize("case", RAGGED_CONV_CASES)
def test_conv_ragged_columns_clamped_full_tiles(case):
    """A thin column tile (OW = 23: rw 1) becomes full tiles of the width in (4, 8] that computes
    the fewest columns, so the tile unrolls and stays in registers: the last one moves back to end
    at column OW-1 where the tile is stored along the row (conv2d.transpose_out: every lane a
    distinct column), else it recomputes column OW-1 in its extra lanes (clamped; the interpreted
    run below, whose 4 lanes are fewer than the 8 columns)."""
    xs, ws, strides, pads, dil, rw = case
    text = conv_general_text(xs, ws, strides, pads, dil)
    m = H.legalize(text)
    assert D.schedule_module(m, D.ScheduleConfig(width=16)) == {"conv2d_0": "conv2d"}
    blk = next(b for b in D.loop.blocks_of(m) if b.block_name.data == "conv2d")
    loops = D.loop.block_loops(blk)
    assert const_index(loops[-3].ub) == rw and loops[-3].kind.data == "unroll"
    assert any(op.name == "arith.minsi" for op in loops[-4].body.block.ops)  # the tile's start, moved back
    # the output-channel panels still run in parallel (a regression: with the clamp applied
    # before the parallel marking, its disjointness check refused every loop)
    assert [l.kind.data for l in loops[:3]].count("parallel") == 1
    x, w = rand(*xs), rand(*ws, seed=1)
    ref = conv_general_ref(x, w, strides, pads, dil)
    # interpreted on one 8-channel panel (4 lanes x 2 vectors): the same clamped column tiles as
    # 32 channels, a quarter of the interpreter's time (47 s for the 32 on a slow host)
    w8 = w[:8]
    text8 = conv_general_text(xs, (8, *ws[1:]), strides, pads, dil)
    want, got, _ = schedule_and_interpret(text8, [x, w8], cfg=D.ScheduleConfig(width=4, conv2d=D.ConvKnobs(rw=8, nv=2)))
    np.testing.assert_allclose(got[0], conv_general_ref(x, w8, strides, pads, dil), rtol=1e-4, atol=1e-4)
    if native_ok:
        (y,) = H._call_native(_compile(text), "main", [x, w], None)
        np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("width", [4, 8, 16])
def test_transpose_shuffles_transpose_every_tile(width):
    """The conv tile's in-register transpose (conv2d.transpose_out): R row vectors of `width`
    lanes become R vectors of width/R consecutive columns x R rows, every column once, in
    R*log2(R) two-input shuffles."""
    from minimlir.passes.loop.schedule.default.conv2d import transpose_shuffles

    rows = 2
    while rows <= width:
        tile = np.arange(rows * width).reshape(rows, width) + 1000
        vals = list(tile)
        shuffles = transpose_shuffles(rows, width)
        assert len(shuffles) == rows * (rows.bit_length() - 1)
        for a, b, mask, _, _ in shuffles:
            vals.append(np.concatenate([vals[a], vals[b]])[mask])
        seen = []
        for (_, _, _, rs, cols), v in zip(shuffles[-rows:], vals[-rows:], strict=True):
            assert rs == list(range(rows)) and cols == list(range(cols[0], cols[0] + width // rows))
            np.testing.assert_array_equal(v, tile[:, cols].T.reshape(-1))
            seen += cols
        assert sorted(seen) == list(range(width))
        rows *= 2
