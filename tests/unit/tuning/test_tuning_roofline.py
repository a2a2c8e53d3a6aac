"""The measured FMA peak (tuning/roofline.py) that benchmarks/tuning.py puts next to each task's speedup."""

from __future__ import annotations

import math

import pytest

from minimlir.tuning.roofline import _ir, _kernel, peak_gflops


@pytest.mark.parametrize("width,chains", [(4, 4), (8, 12), (16, 28)])
def test_peak_loop_runs_every_chain_n_times(width, chains):
    # x <- x * a + b from x = b, n times, on each chain; the result sums the chains: a loop or a
    # chain the optimizer dropped would change it (and the FLOP count the peak divides by)
    assert _ir(width, chains).count("call <") == chains
    _, fn = _kernel(width, chains)
    for n, x_n in ((1, 1.5), (3, 1.875), (5, 1.96875)):
        assert fn(n, 0.5, 1.0) == chains * x_n


def test_peak_gflops_is_a_positive_rate():
    # one core, the host's width: a real number (its size is the benchmark's business, not a test's)
    peak = peak_gflops(1, seconds=0.005, rounds=1)
    assert math.isfinite(peak) and peak > 0
