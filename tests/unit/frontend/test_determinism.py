"""Determinism: two calls with the same inputs give bitwise-identical outputs, at one thread and at all
cores, for every model the test suite runs. Here: the examples and the light-model sample
(squeezenet, compiled as the conformance sample compiles it: a disk-cache hit after that test). The
PyTorch exports in tests/data (test_onnx_transformer.py) and the dynamic-length models
(test_dynamic_lengths.py: Gather, embedding + sliced positions, the 2-layer encoder at lengths 1..512)
assert the same in their own tests, on the programs they compile (tests/unit/_determinism.py)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

from _determinism import assert_repeatable
from minimlir.frontend import compile

ROOT = Path(__file__).resolve().parents[3]


def _conformance():
    name = "minimlir_conformance"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / "conformance.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def _random_feeds(model, dims: dict[str, int], seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    feeds = {}
    for spec in model.inputs:
        shape = [d if d is not None else dims.get(n, 17) for d, n in zip(spec.shape, spec.dim_names or [""] * 9)]
        if np.issubdtype(spec.dtype, np.integer):
            hi = 50 if spec.name != "attention_mask" else 2
            feeds[spec.name] = rng.integers(0, hi, shape).astype(spec.dtype)
        else:
            feeds[spec.name] = rng.standard_normal(shape).astype(spec.dtype)
    return feeds


def _assert_repeatable(model, feeds_list) -> None:
    for feeds in feeds_list:
        assert_repeatable(lambda: model(**feeds), f"inputs {[v.shape for v in feeds.values()]}")


@pytest.mark.parametrize("path", ["examples/mlp.onnx", "examples/conv_add_relu.onnx",
                                  "examples/conv_add_relu.mlir", "examples/add_relu.mlir"])
def test_suite_models_are_bitwise_repeatable(path):
    model = compile(ROOT / path)
    feeds = [_random_feeds(model, {"batch": b, "seq": s, "n": b}, seed) for seed, (b, s) in
             enumerate([(2, 16), (3, 37), (1, 1)])]
    _assert_repeatable(model, feeds)


def test_light_model_sample_is_bitwise_repeatable(tmp_path):
    conf = _conformance()
    _, d = conf.write_light_case("squeezenet", tmp_path)
    model = compile(d / "model.onnx")
    (x,) = conf._load_npz(d / "inputs.npz")
    _assert_repeatable(model, [{model.input_names[0]: x}])


