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


def test_read_loop_sums_every_vector():
    # the bandwidth's byte count assumes every vector of the buffer is loaded once
    import numpy as np

    from minimlir.tuning.roofline import _reader

    _, fn = _reader(8, 8)
    raw = np.zeros(8 * 8 * 3 + 16, np.float32)
    buf = raw[(-raw.ctypes.data % 64) // 4:][:8 * 8 * 3]
    buf[::8] = np.arange(24)  # lane 0 of each of the 24 vectors
    assert fn(buf.ctypes.data, 24) == float(np.arange(24).sum())


def test_memory_bandwidth_and_the_bound():
    from minimlir.tuning.roofline import bound_seconds, cold_bytes, memory_gbs
    from minimlir.tuning.task import Task

    assert memory_gbs(1, nbytes=1 << 20, rounds=1) > 0
    t = Task(key="k", name="k", kernel_text="", shapes=[[4, 8], [8, 1000], [1000], [4, 1000]],
             dtypes=["float32"] * 4, num_outputs=1, cold_args=[1, 2])
    assert cold_bytes(t) == 4 * (8 * 1000 + 1000)
    assert bound_seconds(2e9, 1e9, 100.0, 10.0) == 0.1  # 1 GB at 10 GB/s: slower than 2 GFLOP at 100
    assert bound_seconds(2e9, 1e6, 100.0, 10.0) == 0.02  # FLOP-bound
