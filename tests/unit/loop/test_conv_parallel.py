"""The conv2d rule's parallel loop: the output-channel panels, or the output rows when there is one
panel (DenseNet's 32-channel 3x3 convs: over the panel loop the second thread idled) or when the
input is larger than the weights (each thread then reads its rows of the input, not all of it)."""

from __future__ import annotations

import numpy as np
from _references import conv_ref

import minimlir.compiler.interpreter as H
from minimlir.dialects import loop
from minimlir.passes.loop.schedule import default as D


def _conv(o: int, hw: int = 12, ci: int = 16) -> str:
    x, w, y = f"tensor<1x{ci}x{hw}x{hw}xf32>", f"tensor<{o}x{ci}x3x3xf32>", f"tensor<1x{o}x{hw}x{hw}xf32>"
    return (f"func.func @main(%x: {x}, %w: {w}) -> {y} {{\n"
            f"  %y = graph.conv2d %x, %w pads [1, 1, 1, 1] : ({x}, {w}) -> {y}\n"
            f"  %r = graph.relu %y : {y}\n  func.return %r : {y}\n}}")


def _parallel_loop(text: str) -> loop.ForOp:
    m = H.legalize(text)
    D.schedule_module(m, D.ScheduleConfig(width=16))
    (k,) = [k for k in m.ops if "loop.kernel" in k.attributes and loop.blocks_of_kind(k, "conv2d")]
    par = [f for f in k.walk() if isinstance(f, loop.ForOp) and f.kind.data == "parallel"
           and any(b.block_name.data == "conv2d" for b in f.walk() if isinstance(b, loop.BlockOp))]
    assert len(par) == 1
    return par[0]


def _parallel_extent(text: str) -> int:
    return _parallel_loop(text).ub.owner.value.value.data


def _check_at_two_threads(o: int, hw: int, seed: int) -> None:
    """Native, 2 threads, repeated: the conv (+ ReLU) against the reference."""
    if not H.native_status()[0]:
        return
    from minimlir.backend import parallel
    from minimlir.backend.runtime import compile_mlir_text

    rng = np.random.default_rng(seed)
    x, w = rng.standard_normal((1, 16, hw, hw)).astype(np.float32), rng.standard_normal((o, 16, 3, 3)).astype(np.float32)
    ref = np.maximum(conv_ref(x, w, None, (1, 1), (1, 1, 1, 1), (1, 1), 1), 0)
    prog = compile_mlir_text(_conv(o, hw=hw), pipeline="compile", cache=False)
    old = parallel.get_num_threads()
    parallel.set_num_threads(2)
    try:
        for _ in range(5):
            np.testing.assert_allclose(prog.main(x, w), ref, rtol=1e-4, atol=1e-4)
    finally:
        parallel.set_num_threads(old)


def test_one_channel_panel_runs_the_rows_in_parallel():
    assert _parallel_extent(_conv(32)) == 12  # one 32-channel panel: the 12 output rows
    assert _parallel_extent(_conv(64)) == 2  # two panels: over the panels
    if H.native_status()[0]:
        from minimlir.backend.runtime import compile_mlir_text

        rng = np.random.default_rng(0)
        x, w = rng.standard_normal((1, 16, 12, 12)).astype(np.float32), rng.standard_normal((32, 16, 3, 3)).astype(np.float32)
        prog = compile_mlir_text(_conv(32), pipeline="compile", cache=False)
        ref = np.maximum(conv_ref(x, w, None, (1, 1), (1, 1, 1, 1), (1, 1), 1), 0)
        np.testing.assert_allclose(prog.main(x, w), ref, rtol=1e-4, atol=1e-4)


def test_rows_run_in_parallel_when_the_input_outweighs_the_weights(monkeypatch):
    from minimlir.passes.loop.schedule.default import conv2d as C

    monkeypatch.setattr(C, "cores", lambda: 2)
    # 16 x 30 x 30 input (57 KB) against 64 x 16 x 3 x 3 weights (37 KB): the 30 rows, each
    # thread running both 32-channel panels of its rows (the panel loop inside the parallel one)
    par = _parallel_loop(_conv(64, hw=30))
    assert par.ub.owner.value.value.data == 30
    inner = [f for f in par.body.block.ops if isinstance(f, loop.ForOp)]
    assert [f.ub.owner.value.value.data for f in inner[:1]] == [2]
    assert _parallel_extent(_conv(128, hw=30)) == 4  # weights the larger (74 KB): the 4 panels
    assert _parallel_extent(_conv(64, hw=6)) == 2  # 6 rows: too few for 2 cores x 4
    _check_at_two_threads(64, 30, seed=1)


def test_rows_stay_inside_the_panels_when_the_weights_leave_the_cache(monkeypatch):
    """Rows outermost stream every weight panel once per output row: only while all the weights
    fit in half the L2 (VGG-19's 2.4 MB of 256-channel 3x3 weights at 56x56: 30.1 ms by rows,
    25.7 by panels at 1 thread)."""
    from minimlir.passes.loop.schedule.default import conv2d as C

    monkeypatch.setattr(C, "cores", lambda: 2)
    monkeypatch.setattr(C, "l2_bytes", lambda: 2 * 36864)  # the 36 KB of weights fill half of it
    assert _parallel_extent(_conv(64, hw=30)) == 30
    monkeypatch.setattr(C, "l2_bytes", lambda: 2 * 36864 - 4)  # one float short
    assert _parallel_extent(_conv(64, hw=30)) == 2  # the 2 panels


def test_rows_run_in_parallel_when_the_panels_share_out_unevenly(monkeypatch):
    """96 output channels are 3 panels of 32: on 2 cores one thread ran 2 of them (2 threads were
    1.34x one on Inception-v2's 64 -> 96 3x3 conv at 28x28); the 12 rows split evenly."""
    from minimlir.passes.loop.schedule.default import conv2d as C

    monkeypatch.setattr(C, "cores", lambda: 2)
    assert _parallel_extent(_conv(96)) == 12
    assert _parallel_extent(_conv(96, hw=6)) == 3  # 6 rows: too few for 2 cores x 4
    monkeypatch.setattr(C, "l2_bytes", lambda: 2 * 96 * 16 * 9 * 4 - 4)  # the weights leave half the L2
    assert _parallel_extent(_conv(96)) == 3
    monkeypatch.setattr(C, "l2_bytes", lambda: 1 << 21)
    monkeypatch.setattr(C, "cores", lambda: 3)  # 3 panels on 3 cores: even
    assert _parallel_extent(_conv(96)) == 3
    monkeypatch.setattr(C, "cores", lambda: 2)
    _check_at_two_threads(96, 12, seed=2)
