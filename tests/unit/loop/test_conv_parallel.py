"""The conv2d rule's parallel loop: the output-channel panels, or the output rows when there is one
panel (DenseNet's 32-channel 3x3 convs: over the panel loop the second thread idled)."""

from __future__ import annotations

import numpy as np
from _references import conv_ref

import minimlir.compiler.interpreter as H
from minimlir.dialects import loop
from minimlir.passes.loop.schedule import default as D


def _conv(o: int) -> str:
    return (f"func.func @main(%x: tensor<1x16x12x12xf32>, %w: tensor<{o}x16x3x3xf32>) -> tensor<1x{o}x12x12xf32> {{\n"
            f"  %y = graph.conv2d %x, %w pads [1, 1, 1, 1] : (tensor<1x16x12x12xf32>, tensor<{o}x16x3x3xf32>)"
            f" -> tensor<1x{o}x12x12xf32>\n  func.return %y : tensor<1x{o}x12x12xf32>\n}}")


def _parallel_extent(text: str) -> int:
    m = H.legalize(text)
    D.schedule_module(m, D.ScheduleConfig(width=16))
    (k,) = [k for k in m.ops if "loop.kernel" in k.attributes]
    par = [f for f in k.walk() if isinstance(f, loop.ForOp) and f.kind.data == "parallel"
           and any(b.block_name.data == "conv2d" for b in f.walk() if isinstance(b, loop.BlockOp))]
    assert len(par) == 1
    return par[0].ub.owner.value.value.data


def test_one_channel_panel_runs_the_rows_in_parallel():
    assert _parallel_extent(_conv(32)) == 12  # one 32-channel panel: the 12 output rows
    assert _parallel_extent(_conv(64)) == 2  # two panels: over the panels
    if H.native_status()[0]:
        from minimlir.backend.runtime import compile_mlir_text

        rng = np.random.default_rng(0)
        x, w = rng.standard_normal((1, 16, 12, 12)).astype(np.float32), rng.standard_normal((32, 16, 3, 3)).astype(np.float32)
        prog = compile_mlir_text(_conv(32), pipeline="compile", cache=False)
        np.testing.assert_allclose(prog.main(x, w), conv_ref(x, w, None, (1, 1), (1, 1, 1, 1), (1, 1), 1),
                                   rtol=1e-4, atol=1e-4)
