"""The conv rule's register tile fits the target's vector registers: rw*nv accumulators + nv weight
vectors + 1 broadcast. With 16 registers (AVX2) the 8 x 2 tile of a 3x3 conv spilled inside the
reduction (ResNet-50's 64-channel 3x3 at 56x56 on Zen 1: 7.4 ms against 5.6 for 4 x 2)."""

from __future__ import annotations

import numpy as np
import pytest

import _legalize_harness as H
from _references import conv_ref
from minimlir.passes.loop.schedule import default as D
from minimlir.passes.loop.schedule.default import knobs as K
from minimlir.passes.loop.schedule.default.conv2d import _tile_registers


def _conv(c, co, hw, k):
    p = k // 2
    return f"""
func.func @main(%x: tensor<1x{c}x{hw}x{hw}xf32>, %w: tensor<{co}x{c}x{k}x{k}xf32>) -> tensor<1x{co}x{hw}x{hw}xf32> {{
  %y = graph.conv2d %x, %w pads [{p}, {p}, {p}, {p}] : (tensor<1x{c}x{hw}x{hw}xf32>, tensor<{co}x{c}x{k}x{k}xf32>) -> tensor<1x{co}x{hw}x{hw}xf32>
  func.return %y : tensor<1x{co}x{hw}x{hw}xf32>
}}"""


def _tile(text, cfg):
    m = H.legalize(text)
    with K.tracing() as traces:
        D.schedule_module(m, cfg)
    v = traces[0][1].values
    return v["conv2d.rw"], v["conv2d.nv"]


@pytest.mark.parametrize("k", [1, 3])
@pytest.mark.parametrize("hw", [56, 28, 14, 13, 7])
def test_tile_fits_sixteen_registers(hw, k):
    cfg = D.ScheduleConfig(width=8)  # AVX2: 16 vector registers
    rw, nv = _tile(_conv(32, 64, hw, k), cfg)
    assert rw * nv + nv + 1 <= _tile_registers(cfg, k * k), (rw, nv)
    assert rw * nv >= 6, (rw, nv)  # not a thin tile either: enough accumulators to hide the FMA latency


def test_thin_column_tile_halves_the_channels():
    # OW = 14 under 16 registers: 2 x 2 (whole columns) or 3 x 2 clamped, or 7 x 1: the last
    rw, nv = _tile(_conv(32, 64, 14, 3), D.ScheduleConfig(width=8))
    assert (rw, nv) == (7, 1)


@pytest.mark.parametrize("hw,tile", [(13, (5, 2)), (27, (4, 2))])
def test_pointwise_conv_keeps_two_vectors_under_a_thin_column_tile(hw, tile):
    # a 1x1 conv on OW = 13 (27) under 16 registers: 5 (4) clamped columns x 2 vectors, not 13
    # (9) x 1, a broadcast per FMA (SqueezeNet's 13x13 512 -> 1024 pointwise pair: 7.7 against
    # 9.0 ms at one thread); a 3x3 one still halves its channels (above)
    assert _tile(_conv(64, 64, hw, 1), D.ScheduleConfig(width=8)) == tile


def test_wide_registers_keep_the_eight_column_tile():
    rw, nv = _tile(_conv(32, 64, 56, 3), D.ScheduleConfig(width=16))  # AVX-512: 32 registers
    assert (rw, nv) == (8, 2)


@pytest.mark.parametrize("hw", [14, 7])
def test_register_tiles_compute_the_conv(hw):
    from minimlir.frontend import compile as compile_model

    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 32, hw, hw)).astype(np.float32)
    w = rng.standard_normal((64, 32, 3, 3)).astype(np.float32)
    m = compile_model(_conv(32, 64, hw, 3), cache=False)
    (y,) = m(x, w)
    ref = conv_ref(x, w, None, (1, 1), (1, 1, 1, 1), (1, 1), 1)
    np.testing.assert_allclose(np.asarray(y), ref, rtol=1e-4, atol=1e-4)


def _blocked_conv(c, co, hw, k, b=8):
    p = k // 2
    x, y = f"tensor<1x{c // b}x{hw}x{hw}x{b}xf32>", f"tensor<1x{co // b}x{hw}x{hw}x{b}xf32>"
    return f"""
func.func @main(%x: {x}, %w: tensor<{co}x{c}x{k}x{k}xf32>) -> {y} {{
  %y = graph.conv2d %x, %w pads [{p}, {p}, {p}, {p}] block {b} : ({x}, tensor<{co}x{c}x{k}x{k}xf32>) -> {y}
  func.return %y : {y}
}}"""


@pytest.mark.parametrize("k", [1, 3])
def test_blocked_ragged_row_runs_full_tiles_and_a_narrower_last_one(k):
    # OW = 7 under 16 registers: 4 + 3 columns x 2 vectors (split_ow), not two 4-column tiles
    # whose second recomputes column 6 (ResNet-50's 7x7 stage at one thread: 34-37 -> 40-43
    # GFLOP/s); an NCHW conv keeps the clamped tile (its transposed store needs whole tiles)
    m = H.legalize(_blocked_conv(64, 64, 7, k))
    with K.tracing() as traces:
        D.schedule_module(m, D.ScheduleConfig(width=8))
    v = traces[0][1].values
    assert (v["conv2d.rw"], v["conv2d.nv"], v["conv2d.clamp_ow"], v["conv2d.split_ow"]) == (4, 2, False, True)
    names = {b.block_name.data for b in m.walk() if b.name == "loop.block"}
    assert "conv2d_last_cols" in names, names
    m = H.legalize(_conv(64, 64, 7, k))
    with K.tracing() as traces:
        D.schedule_module(m, D.ScheduleConfig(width=8))
    v = traces[0][1].values
    assert (v["conv2d.clamp_ow"], v["conv2d.split_ow"]) == (True, False)


@pytest.mark.parametrize("hw,k,co", [(7, 3, 64), (7, 1, 64), (14, 1, 64), (13, 3, 64), (13, 3, 48), (13, 1, 48)])
def test_blocked_ragged_rows_compute_the_conv(hw, k, co):
    # (48 channels, OW = 13: 3 channel panels and 3 column tiles of 5; the split took the panel
    # loop, of the same extent, for the column tile loop: SqueezeNet's fire5 3x3 conv was wrong)
    from _references import blocked, unblocked

    from minimlir.frontend import compile as compile_model

    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 64, hw, hw)).astype(np.float32)
    w = rng.standard_normal((co, 64, k, k)).astype(np.float32)
    m = compile_model(_blocked_conv(64, co, hw, k), cache=False)
    (y,) = m(blocked(x, 8), w)
    ref = conv_ref(x, w, None, (1, 1), (k // 2,) * 4, (1, 1), 1)
    np.testing.assert_allclose(unblocked(np.asarray(y)), ref, rtol=1e-4, atol=1e-4)
