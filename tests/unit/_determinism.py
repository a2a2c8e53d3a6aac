"""Shared by the model tests: two calls with the same inputs are bitwise identical, at one thread and
at all cores (parallel loops on libgomp; minimlir.backend.parallel sets the count process-wide)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from minimlir.backend import parallel


def bits(a) -> bytes:
    return np.ascontiguousarray(np.asarray(a)).tobytes()  # bitwise: NaN payloads and -0.0 included


def assert_repeatable(call: Callable[[], Sequence[np.ndarray]], what: str = "") -> None:
    """`call()` twice at 1 thread and twice at cpu_count() threads: each pair bitwise equal."""
    saved = parallel.get_num_threads()
    try:
        for threads in sorted({1, parallel.cpu_count()}):
            parallel.set_num_threads(threads)
            first, second = list(call()), list(call())
            assert len(first) == len(second)
            for k, (a, b) in enumerate(zip(first, second)):
                if bits(a) != bits(b):
                    diff = np.nanmax(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64)))
                    raise AssertionError(f"{what}: output #{k} differs between two calls at {threads} "
                                         f"thread(s): max |diff| {diff}")
    finally:
        parallel.set_num_threads(saved)
