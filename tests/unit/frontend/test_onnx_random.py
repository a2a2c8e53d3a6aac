"""The ONNX ops with random output (frontend/_onnx_ops_random.py): RandomUniform(Like),
RandomNormal(Like), Bernoulli, Multinomial and training-mode Dropout, all drawn by graph.random.

A sample cannot be compared with onnxruntime's (another generator), so: the node cases whose
outputs do not depend on the draw (Dropout with ratio 0) through OnnxBackend; statistics of large
samples against their distribution, with bounds of 5 standard errors of the estimate for the
sample size (fixed seeds: each check is deterministic, and a wrong distribution misses it by far);
determinism (two calls, 1 and 2 threads, two sizes of a dynamic dim); seeds."""

from __future__ import annotations

import importlib.util
import math
import sys
import warnings
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from minimlir.backend import parallel
from minimlir.frontend import compile as mini_compile
from minimlir.frontend.onnx_import import check_support, import_onnx

F, D, H = TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16
I32, I64, B = TensorProto.INT32, TensorProto.INT64, TensorProto.BOOL
N = 200_000  # sample size of the statistical checks

_PATH = Path(__file__).resolve().parents[3] / "benchmarks" / "conformance.py"


def _conformance():
    name = "minimlir_conformance_random"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, _PATH)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def _model(nodes, inputs, outputs, opset=22) -> onnx.ModelProto:
    g = helper.make_graph(nodes, "g", inputs, outputs)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def _vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def _within(value: float, expected: float, stderr: float, what: str) -> None:
    assert abs(value - expected) <= 5 * stderr, f"{what}: {value} vs {expected} (5 standard errors = {5 * stderr})"


def _ops(model) -> list[str]:
    module, _ = import_onnx(model)
    return [op.name for op in module.walk()]


# --------------------------------------------------------------------------------------------
# ONNX node cases: Dropout in training mode with ratio 0 (ratio and training_mode are graph inputs)


@pytest.mark.parametrize("name", ["test_training_dropout_zero_ratio", "test_training_dropout_zero_ratio_mask"])
def test_zero_ratio_node_case_passes_through_onnx_backend(name, tmp_path):
    from onnx.backend.test.case.node import collect_testcases

    conformance = _conformance()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (tc,) = [tc for tc in collect_testcases(None) if tc.name == name]
    assert conformance.support_problem(tc, check_support) is None
    assert "graph.random" in _ops(tc.model)  # a run-time ratio: drawn, not specialized away
    case = conformance.Case("node", tc.name, float(tc.rtol), float(tc.atol))
    result = conformance.run_case_dir(conformance.write_node_case(case, tc, tmp_path))
    assert result.status == "pass", f"{name}: {result.status}: {result.message}"


# --------------------------------------------------------------------------------------------
# Dropout


def _dropout(shape=("n", 64), elem=F, seed=None):
    attrs = {} if seed is None else {"seed": seed}
    return _model([helper.make_node("Dropout", ["x", "r", "t"], ["y", "mask"], **attrs)],
                  [_vi("x", elem, list(shape)), _vi("r", F, []), _vi("t", B, [])],
                  [_vi("y", elem, list(shape)), _vi("mask", B, list(shape))])


def test_dropout_keeps_one_minus_ratio_and_scales_the_kept():
    m = mini_compile(_dropout(seed=3), cache=False)
    x = np.random.default_rng(0).uniform(1.0, 2.0, (N // 64, 64)).astype(np.float32)
    for ratio in (0.1, 0.5, 0.75):
        y, mask = m(x, np.array(ratio, np.float32), np.array(True))
        kept = mask.mean()
        _within(kept, 1 - ratio, math.sqrt(ratio * (1 - ratio) / mask.size), f"kept fraction at ratio {ratio}")
        scale = np.float32(1) / (np.float32(1) - np.float32(ratio))
        np.testing.assert_array_equal(y[mask], x[mask] * scale)
        assert (y[~mask] == 0).all()


def test_dropout_ratio_zero_or_inference_is_exactly_x_like_onnxruntime():
    model = _dropout()
    m = mini_compile(model, cache=False)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    x = np.random.default_rng(1).standard_normal((5, 64)).astype(np.float32)
    for ratio, training in ((0.0, True), (0.5, False), (0.0, False)):
        feeds = (x, np.array(ratio, np.float32), np.array(training))
        y, mask = m(*feeds)
        ry, rmask = sess.run(None, dict(zip("xrt", feeds)))
        np.testing.assert_array_equal(y, x)
        np.testing.assert_array_equal(y, ry)
        assert mask.dtype == np.bool_ and mask.all() and rmask.all()


def test_dropout_float16_and_float64():
    for elem, dtype in ((H, np.float16), (D, np.float64)):
        m = mini_compile(_dropout(elem=elem, seed=1), cache=False)
        x = np.ones((N // 64, 64), dtype)
        y, mask = m(x, np.array(0.25, np.float32), np.array(True))
        assert y.dtype == dtype
        _within(mask.mean(), 0.75, math.sqrt(0.75 * 0.25 / mask.size), f"kept fraction ({dtype.__name__})")
        np.testing.assert_array_equal(y[mask], dtype(1) / (dtype(1) - dtype(0.25)))


def test_dropout_constant_training_and_ratio():
    nodes = [helper.make_node("Dropout", ["x", "r", "t"], ["y"], seed=9)]
    inits = [helper.make_tensor("r", F, [], [0.2]), helper.make_tensor("t", B, [], [True])]
    g = helper.make_graph(nodes, "g", [_vi("x", F, [N])], [_vi("y", F, [N])], initializer=inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    assert "graph.random" in _ops(model)
    (y,) = mini_compile(model, cache=False)(np.ones(N, np.float32))
    _within((y != 0).mean(), 0.8, math.sqrt(0.16 / N), "kept fraction")
    assert set(np.unique(y)) == {np.float32(0), np.float32(1) / np.float32(0.8)}


# --------------------------------------------------------------------------------------------
# RandomUniform / RandomNormal (and Like)


@pytest.mark.parametrize("elem,dtype", [(F, np.float32), (D, np.float64), (H, np.float16)])
def test_random_uniform_mean_and_variance(elem, dtype):
    low, high = -1.0, 3.0
    model = _model([helper.make_node("RandomUniform", [], ["y"], shape=[N // 100, 100], low=low, high=high,
                                     dtype=elem, seed=11.0)], [], [_vi("y", elem, [N // 100, 100])])
    (y,) = mini_compile(model, cache=False)()
    assert y.dtype == dtype and y.shape == (N // 100, 100)
    assert (y >= low).all() and (y < high).all()
    y = y.astype(np.float64)
    w = high - low
    var = w * w / 12
    _within(y.mean(), (low + high) / 2, math.sqrt(var / N), "mean")
    _within(y.var(), var, math.sqrt((w**4 / 80 - var * var) / N), "variance")
    # a uniform histogram: 10 bins, each 1/10 of the sample
    counts = np.histogram(y, bins=10, range=(low, high))[0] / N
    for c in counts:
        _within(c, 0.1, math.sqrt(0.09 / N), "bin frequency")


@pytest.mark.parametrize("elem,dtype", [(F, np.float32), (D, np.float64), (H, np.float16)])
def test_random_normal_like_mean_and_std(elem, dtype):
    mean, scale = 2.0, 0.5
    model = _model([helper.make_node("RandomNormalLike", ["x"], ["y"], mean=mean, scale=scale, seed=5.0)],
                   [_vi("x", elem, ["n"])], [_vi("y", elem, ["n"])])
    (y,) = mini_compile(model, cache=False)(np.zeros(N, dtype))
    assert y.dtype == dtype and y.shape == (N,)
    y = y.astype(np.float64)
    _within(y.mean(), mean, scale / math.sqrt(N), "mean")
    _within(y.std(), scale, scale / math.sqrt(2 * N), "standard deviation")
    for k, p in ((1, 0.682689), (2, 0.954500)):
        inside = (np.abs(y - mean) < k * scale).mean()
        _within(inside, p, math.sqrt(p * (1 - p) / N), f"within {k} sigma")


def test_random_uniform_like_dtype_attribute_and_int_input():
    model = _model([helper.make_node("RandomUniformLike", ["x"], ["y"], dtype=D, seed=1.0)],
                   [_vi("x", I64, [3, 4])], [_vi("y", D, [3, 4])])
    (y,) = mini_compile(model, cache=False)(np.zeros((3, 4), np.int64))
    assert y.dtype == np.float64 and y.shape == (3, 4) and ((y >= 0) & (y < 1)).all()
    no_dtype = _model([helper.make_node("RandomUniformLike", ["x"], ["y"])], [_vi("x", I64, [3])], [_vi("y", D, [3])])
    assert any(r[3] and "not a float tensor" in r[3] for r in check_support(no_dtype))


def test_random_dtype_is_checked():
    model = _model([helper.make_node("RandomNormal", [], ["y"], shape=[2], dtype=I32)], [], [_vi("y", I32, [2])])
    assert ("RandomNormal", 22, 1, "dtype int32 (float16, float or double)") in check_support(model)


# --------------------------------------------------------------------------------------------
# Bernoulli / Multinomial


def test_bernoulli_frequency_and_dtype():
    probs = np.array([0.0, 0.05, 0.3, 0.5, 0.9, 1.0])
    model = _model([helper.make_node("Bernoulli", ["p"], ["y"], dtype=I32, seed=2.0)],
                   [_vi("p", D, ["n", len(probs)])], [_vi("y", I32, ["n", len(probs)])])
    rows = N // len(probs)
    (y,) = mini_compile(model, cache=False)(np.tile(probs, (rows, 1)))
    assert y.dtype == np.int32 and set(np.unique(y)) <= {0, 1}
    for k, p in enumerate(probs):
        freq = y[:, k].mean()
        if p in (0.0, 1.0):
            assert freq == p
        else:
            _within(freq, p, math.sqrt(p * (1 - p) / rows), f"frequency of p={p}")


def test_bernoulli_default_dtype_is_the_input_type():
    model = _model([helper.make_node("Bernoulli", ["p"], ["y"])], [_vi("p", H, [N])], [_vi("y", H, [N])])
    (y,) = mini_compile(model, cache=False)(np.full(N, 0.25, np.float16))
    assert y.dtype == np.float16
    _within(y.astype(np.float64).mean(), 0.25, math.sqrt(0.25 * 0.75 / N), "frequency")


@pytest.mark.parametrize("dtype_attr,dtype", [(None, np.int32), (I64, np.int64)])
def test_multinomial_frequencies_match_the_probabilities(dtype_attr, dtype):
    probs = np.array([[0.1, 0.2, 0.7, 0.0], [0.25, 0.25, 0.25, 0.25], [0.0, 0.0, 0.0, 1.0]])
    with np.errstate(divide="ignore"):
        logits = (np.log(probs) + 3.0).astype(np.float32)  # unnormalized log-probabilities
    attrs = {"sample_size": N // 4, "seed": 4.0} | ({} if dtype_attr is None else {"dtype": dtype_attr})
    model = _model([helper.make_node("Multinomial", ["x"], ["y"], **attrs)],
                   [_vi("x", F, ["b", 4])], [_vi("y", dtype_attr or I32, ["b", N // 4])])
    (y,) = mini_compile(model, cache=False)(logits)
    assert y.dtype == dtype and y.shape == (3, N // 4)
    for row, p in zip(y, probs):
        freq = np.bincount(row, minlength=4) / row.size
        assert len(freq) == 4
        for f, q in zip(freq, p):
            if q == 0.0:
                assert f == 0.0
            else:
                _within(f, q, math.sqrt(q * (1 - q) / row.size), f"frequency of class with p={q}")


# --------------------------------------------------------------------------------------------
# determinism and seeds


def _uniform_like(seed=None, name=""):
    attrs = {} if seed is None else {"seed": seed}
    return helper.make_node("RandomUniformLike", ["x"], [f"y{name}"], name=name, **attrs)


def test_same_output_on_every_call_and_thread_count():
    model = _model([_uniform_like(7.0, "a"), helper.make_node("Dropout", ["x", "r", "t"], ["d"], seed=7)],
                   [_vi("x", F, ["n", 1024]), _vi("r", F, []), _vi("t", B, [])],
                   [_vi("ya", F, ["n", 1024]), _vi("d", F, ["n", 1024])])
    m = mini_compile(model, cache=False)
    feeds = (np.ones((256, 1024), np.float32), np.array(0.5, np.float32), np.array(True))
    saved = parallel.get_num_threads()
    try:
        runs = []
        for threads in (1, 2, 1):
            parallel.set_num_threads(threads)
            runs.append([np.array(o) for o in m(*feeds)])
    finally:
        parallel.set_num_threads(saved)
    for other in runs[1:]:
        for a, b in zip(runs[0], other):
            assert a.tobytes() == b.tobytes()
    assert 0.4 < (runs[0][1] != 0).mean() < 0.6


def test_a_dynamic_dim_at_two_sizes_draws_the_same_first_elements():
    model = _model([_uniform_like(3.0)], [_vi("x", F, ["n"])], [_vi("y", F, ["n"])])
    m = mini_compile(model, cache=False)
    (small,), (big,) = m(np.zeros(10, np.float32)), m(np.zeros(100_000, np.float32))
    assert small.shape == (10,) and big.shape == (100_000,)
    np.testing.assert_array_equal(big[:10], small)
    assert len(np.unique(big)) > 99_000  # distinct draws, not a repeated pattern


def test_different_seeds_differ_and_a_missing_seed_is_fixed_per_node():
    nodes = [_uniform_like(1.0, "a"), _uniform_like(2.0, "b"), _uniform_like(None, "c"), _uniform_like(None, "d"),
             _uniform_like(1.0, "e")]
    model = _model(nodes, [_vi("x", F, [1000])], [_vi(f"y{k}", F, [1000]) for k in "abcde"])
    x = np.zeros(1000, np.float32)
    a, b, c, d, e = mini_compile(model, cache=False)(x)
    for one, other in ((a, b), (a, c), (c, d), (b, d)):
        assert (one != other).mean() > 0.99
    np.testing.assert_array_equal(a, e)  # the same seed, the same sample
    again = mini_compile(model, cache=False)(x)  # compiled again: the derived seeds are the same
    np.testing.assert_array_equal(again[2], c)
    np.testing.assert_array_equal(again[3], d)


def test_checked_mode_and_the_unscheduled_pipeline_draw_the_same_samples():
    """Bounds-checked code (MINIMLIR_CHECKS: every load and store checked) and the unscheduled
    graph-to-llvm pipeline compute bitwise the same samples as the default compile."""
    nodes = [_uniform_like(1.0, "a"), helper.make_node("RandomNormalLike", ["x"], ["yb"], seed=2.0),
             helper.make_node("Bernoulli", ["p"], ["yc"], seed=3.0),
             helper.make_node("Multinomial", ["lp"], ["yd"], sample_size=50, seed=4.0),
             helper.make_node("Dropout", ["x", "r", "t"], ["ye", "yf"], seed=5)]
    model = _model(nodes, [_vi("x", F, ["n", 33]), _vi("p", F, ["n", 33]), _vi("lp", F, ["b", 5]),
                           _vi("r", F, []), _vi("t", B, [])],
                   [_vi("ya", F, ["n", 33]), _vi("yb", F, ["n", 33]), _vi("yc", F, ["n", 33]),
                    _vi("yd", I32, ["b", 50]), _vi("ye", F, ["n", 33]), _vi("yf", B, ["n", 33])])
    rng = np.random.default_rng(2)
    feeds = (rng.standard_normal((7, 33)).astype(np.float32), rng.random((7, 33)).astype(np.float32),
             rng.standard_normal((3, 5)).astype(np.float32), np.array(0.3, np.float32), np.array(True))
    plain = mini_compile(model, cache=False)(*feeds)
    checked = mini_compile(model, cache=False, checks=True)(*feeds)
    unscheduled = mini_compile(model, cache=False, pipeline="graph-to-llvm")(*feeds)
    for a, b, c in zip(plain, checked, unscheduled):
        assert a.tobytes() == b.tobytes() == c.tobytes()
