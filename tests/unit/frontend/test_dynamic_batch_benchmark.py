"""benchmarks/dynamic_batch.py's helpers (the benchmark itself is a script, not a test): the error
against onnxruntime is relative to the output's scale (random-weight torchvision networks give outputs
near 1e-9, where an absolute tolerance passes anything), and the two artifacts run interleaved."""

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))

from dynamic_batch import _interleaved, _rel_err  # noqa: E402


def test_relative_error_sees_a_wrong_tiny_output():
    want = np.array([1e-9, -2e-9, 3e-9], np.float32)
    assert _rel_err(want.copy(), want) == 0.0
    assert _rel_err(want * 1.5, want) > 1e-3  # all within atol=1e-5, still wrong
    assert _rel_err(want * (1 + 1e-6), want) < 1e-5


def test_interleaved_alternates_and_warms_up():
    calls = []
    fns = [lambda x: calls.append("a"), lambda x: calls.append("b")]
    out = _interleaved(fns, None, 3)
    assert calls == ["a", "b", "a", "b", "b", "a", "a", "b"]
    assert len(out) == 2 and all(w >= 0 and c >= 0 for w, c in out)
