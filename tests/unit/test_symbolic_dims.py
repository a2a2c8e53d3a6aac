"""Symbolic dims: compile time linear in depth with a dynamic batch (issue 11)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

from depth_sweep import build  # noqa: E402


def test_deep_dynamic_chain_plans_in_linear_time():
    """24 squeeze-excite residual blocks with a dynamic batch: every broadcasting Mul's dim was
    built from both inputs' dims, and mem-plan printed the doubling tree of them (2^24 nodes: this
    never finished). Now fuse + legalize + bufferize + mem-plan take a few seconds."""
    code = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(ROOT / 'benchmarks')!r})
        from depth_sweep import build
        from minimlir.frontend.api import lower
        from minimlir.frontend.onnx_import import import_onnx
        module = import_onnx(build(24, True))[0]
        lower(module, "graph-fuse,graph-legalize,loop-fuse,graph-bufferize,mem-plan")
        print("ok")
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip().endswith("ok")


def test_deep_dynamic_chain_matches_onnxruntime(tmp_path):
    import onnx
    import onnxruntime as ort

    from minimlir.frontend import compile as compile_model

    model = build(6, True)
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    m = compile_model(path, cache=False)
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    for batch in (1, 3):
        x = np.random.default_rng(batch).normal(size=(batch, 4, 8, 8)).astype(np.float32)
        (got,) = m(x)
        (want,) = sess.run(None, {"x": x})
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
