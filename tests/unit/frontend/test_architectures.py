"""Architectures end to end: the random-weight exports in tests/data/arch/ (made by
tests/data/make_architectures.py from Hugging Face transformers and small torchvision-style
definitions), each compiled once and matched with onnxruntime at both of its sizes (two batch sizes,
and two sequence lengths or image sizes where the model has them). A compile costs ~20 CPU-s, so the
suite runs a sample of three (an encoder and a LLaMA decoder from the dynamo exporter, the U-Net from
TorchScript); `python benchmarks/architectures.py` runs all twenty files (every architecture, both
exporters)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

from minimlir.frontend import compile

ROOT = Path(__file__).resolve().parents[3]
ARCH = ROOT / "tests" / "data" / "arch"

# the suite's sample: both exporters, a transformer encoder, an LLM decoder, a conv net
CASES = [("bert", "dynamo"), ("llama", "dynamo"), ("unet", "ts")]


def _bench():
    spec = importlib.util.spec_from_file_location("architectures_bench", ROOT / "benchmarks" / "architectures.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


BENCH = _bench()


def test_every_architecture_is_exported_both_ways_and_small():
    assert set(n for n, _ in CASES) <= set(BENCH.manifest())
    assert {e for _, e in CASES} == set(BENCH.EXPORTERS)
    assert len(BENCH.manifest()) == 10
    for name in BENCH.manifest():
        for exporter in BENCH.EXPORTERS:
            path = ARCH / f"{name}.{exporter}.onnx"
            assert path.stat().st_size <= 150_000, path


@pytest.fixture(scope="module", params=CASES, ids=[f"{n}-{e}" for n, e in CASES])
def compiled(request):
    name, exporter = request.param
    path = ARCH / f"{name}.{exporter}.onnx"
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return BENCH.manifest()[name], compile(path, cache=False), session


@pytest.mark.parametrize("size", [0, 1])
def test_matches_onnxruntime_at_two_sizes_from_one_compile(compiled, size):
    entry, model, session = compiled
    feeds = BENCH.inputs(entry, size)
    ours = model(**feeds)
    ref = session.run(None, feeds)
    assert len(ours) == len(ref)
    for o, r in zip(ours, ref):
        assert o.shape == r.shape
        np.testing.assert_allclose(o, r, rtol=BENCH.RTOL, atol=BENCH.ATOL)
