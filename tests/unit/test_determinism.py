"""Determinism: two calls with the same inputs give bitwise-identical outputs, at one thread and at all
cores, for every model the test suite runs: tests/data/*.onnx, the examples, the light-model sample
(squeezenet) and the dynamic-length models (tests/unit/test_dynamic_lengths.py). Dynamic dims are
run at sizes >= 16 and odd sizes, where vector loops have tails. Compiles use the disk cache (the
other tests compile the same models)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest

from minimlir.backend import parallel
from minimlir.frontend import compile

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))
import test_dynamic_lengths as dyn  # noqa: E402  (the models it builds)


def _conformance():
    name = "minimlir_conformance"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / "conformance.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def _bits(a: np.ndarray) -> bytes:
    return np.ascontiguousarray(a).tobytes()  # bitwise: NaN payloads and -0.0 included


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
    saved = parallel.get_num_threads()
    try:
        for threads in sorted({1, parallel.cpu_count()}):
            parallel.set_num_threads(threads)
            for feeds in feeds_list:
                first = model(**feeds)
                second = model(**feeds)
                for k, (a, b) in enumerate(zip(first, second, strict=True)):
                    assert _bits(a) == _bits(b), (
                        f"output #{k} differs between two calls at {threads} thread(s) "
                        f"(inputs {[v.shape for v in feeds.values()]}): max |diff| "
                        f"{np.nanmax(np.abs(a.astype(np.float64) - b.astype(np.float64)))}")
    finally:
        parallel.set_num_threads(saved)


@pytest.mark.parametrize("path", ["tests/data/tiny_bert_layer.onnx", "tests/data/tiny_gpt2_block.onnx",
                                  "examples/mlp.onnx", "examples/conv_add_relu.onnx",
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


def _dynamic_models() -> dict[str, onnx.ModelProto]:
    from onnx import helper, numpy_helper

    rng = np.random.default_rng(0)
    table = numpy_helper.from_array(rng.standard_normal((97, 33)).astype(np.float32), "table")
    gather = dyn._model([helper.make_node("Gather", ["table", "ids"], ["y"], axis=0)],
                        [helper.make_tensor_value_info("ids", dyn.I64, ["batch", "seq"])],
                        [helper.make_tensor_value_info("y", dyn.F, ["batch", "seq", 33])], [table])
    nodes, inits = dyn._embedding_nodes()
    positions = dyn._model(nodes, [helper.make_tensor_value_info("ids", dyn.I64, ["batch", "seq"])],
                           [helper.make_tensor_value_info("h", dyn.F, ["batch", "seq", 128])], inits)
    return {"gather": gather, "embedding_positions": positions, "encoder": dyn._encoder_model()}


@pytest.mark.parametrize("name", ["gather", "embedding_positions", "encoder"])
def test_dynamic_length_models_are_bitwise_repeatable(name):
    model = compile(_dynamic_models()[name])
    rng = np.random.default_rng(7)
    feeds = [{"ids": rng.integers(0, 97, shape).astype(np.int64)} for shape in [(1, 16), (3, 37), (2, 100)]]
    _assert_repeatable(model, feeds)
