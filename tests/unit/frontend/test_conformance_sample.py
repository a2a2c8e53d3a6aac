"""A fast sample of the ONNX conformance run (benchmarks/conformance.py): one node test case per
supported op, compared with the case's expected outputs and tolerances, plus one light model
(squeezenet; deselect with `-k "not light_model"`). Also the runner's own pieces: comparison,
random weights, the worker protocol and the report."""

import importlib.util
import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from minimlir.frontend._onnx_ops import OP_TABLE
from minimlir.frontend.onnx_import import RANDOM_OPS

_PATH = Path(__file__).resolve().parents[3] / "benchmarks" / "conformance.py"
_spec = importlib.util.spec_from_file_location("minimlir_conformance", _PATH)
conformance = importlib.util.module_from_spec(_spec)
sys.modules["minimlir_conformance"] = conformance
_spec.loader.exec_module(conformance)

# The sample is representative, not exhaustive: deliberate edge-case tests (empty reductions, fmod of
# inf/NaN) and the *_expanded function bodies are left to the full run (`python benchmarks/conformance.py`).
NOT_REPRESENTATIVE = re.compile(r"empty|edge_case|expanded")


@pytest.fixture(scope="module")
def sample_cases():
    """op type -> (Case, TestCase): the case with the fewest op types, then float32 data first (the
    representative dtype; bool/int variants are in the full run), then the shortest name."""
    import warnings

    from onnx.backend.test.case.node import collect_testcases

    from minimlir.frontend.onnx_import import check_support

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = collect_testcases(None)
    candidates = []
    for tc in cases:
        ops = {n.op_type for n in tc.model.graph.node}
        if ops and ops <= set(OP_TABLE) and not NOT_REPRESENTATIVE.search(tc.name):
            inputs = tc.data_sets[0][0]
            not_f32 = not inputs or any(getattr(a, "dtype", None) != np.float32 for a in inputs[:1])
            candidates.append((len(ops), not_f32, len(tc.name), tc.name, sorted(ops), tc))
    candidates.sort(key=lambda c: c[:4])
    exercised = {n.op_type for tc in cases for n in tc.model.graph.node}
    chosen: dict = {"__exercised__": exercised}
    for op in sorted(OP_TABLE):
        for _, _, _, name, ops, tc in candidates:
            if op in ops and conformance.support_problem(tc, check_support) is None:
                chosen[op] = (conformance.Case("node", name, float(tc.rtol), float(tc.atol), ops), tc)
                break
    return chosen


@pytest.mark.parametrize("checks", [False, True], ids=["plain", "checked"])
@pytest.mark.parametrize("op", sorted(OP_TABLE))
def test_node_case_per_op(op, checks, sample_cases, tmp_path, monkeypatch):
    """Also in checked mode (MINIMLIR_CHECKS=1: bounds checks and poison, backend/checks.py)."""
    from minimlir.backend import checks as rt_checks

    if op in RANDOM_OPS:
        pytest.skip(f"{op}'s output is a sample of minimlir's generator, the case's one of NumPy's: "
                    "tests/unit/frontend/test_onnx_random.py checks its distribution")
    if op not in sample_cases and op not in sample_cases["__exercised__"]:
        pytest.skip(f"the onnx package ships no node test case that uses {op}")
    assert op in sample_cases, f"no supported onnx node test case uses {op}"
    monkeypatch.setenv("MINIMLIR_CHECKS", "1" if checks else "0")
    before = rt_checks.calls
    case, tc = sample_cases[op]
    result = conformance.run_case_dir(conformance.write_node_case(case, tc, tmp_path))
    assert result.status == "pass", f"{case.name}: {result.status}: {result.message}"
    assert (rt_checks.calls > before) == checks


def test_light_model_squeezenet(tmp_path):
    case, d = conformance.write_light_case("squeezenet", tmp_path)
    assert (case.rtol, case.atol) == (1e-3, 1e-7)  # from data/real/test_squeezenet/data.json
    result = conformance.run_case_dir(d)
    assert result.status == "pass", result.message
    assert result.max_abs_err is not None


# --- the runner's pieces ---------------------------------------------------------------------------


def test_compare_follows_the_onnx_runner():
    f = np.array([1.0, np.nan, 3.0], np.float32)
    assert conformance.compare([f], [f.copy()], 1e-3, 1e-7)[0] is None  # NaN == NaN
    assert "dtype float64, expected float32" in conformance.compare([f.astype(np.float64)], [f], 1e-3, 1e-7)[0]
    assert "shape (1, 3), expected (3,)" in conformance.compare([f.reshape(1, 3)], [f], 1e-3, 1e-7)[0]
    off = f.copy()
    off[2] = 3.01
    msg, max_abs, max_rel = conformance.compare([off], [f], 1e-3, 1e-7)
    assert msg.startswith("output 0: 1 of 3 elements off") and max_abs == pytest.approx(0.01, rel=1e-3)
    assert conformance.compare([off], [f], 1e-2, 0)[0] is None
    nan = f.copy()
    nan[0] = np.nan
    assert "1 NaN where the other is not" in conformance.compare([nan], [f], 1e-3, 1e-7)[0]
    assert "1 of 2 elements differ" in conformance.compare([np.array([1, 2])], [np.array([1, 3])], 0, 0)[0]
    assert "2 outputs, expected 1" in conformance.compare([f, f], [f], 1e-3, 1e-7)[0]


def test_light_input_and_random_weights():
    import onnx

    model = onnx.load(str(conformance.onnx_data_dir() / "light" / "light_squeezenet.onnx"))
    name, x = conformance.light_input(model)
    assert name == "data_0" and x.shape == (1, 3, 224, 224) and x.dtype == np.float32
    assert x.flat[0] == 0 and x.flat[-1] == pytest.approx((x.size - 1) / x.size)
    n_cos = sum(n.op_type == "ConstantOfShape" for n in model.graph.node)
    random_model, replaced = conformance.randomize_weights(model, seed=0)
    assert replaced == n_cos > 0
    assert not any(n.op_type == "ConstantOfShape" for n in random_model.graph.node)
    inits = {i.name: onnx.numpy_helper.to_array(i) for i in random_model.graph.initializer}
    weights = [a for a in inits.values() if a.ndim >= 2]
    assert weights and all(abs(a.mean()) < 0.1 and a.std() > 0 for a in weights)
    onnx.checker.check_model(random_model)
    again, _ = conformance.randomize_weights(model, seed=0)
    first = random_model.graph.initializer[-1]
    assert onnx.numpy_helper.to_array(first).tolist() == onnx.numpy_helper.to_array(
        next(i for i in again.graph.initializer if i.name == first.name)).tolist()


def test_worker_reports_a_broken_case_and_report_is_written(tmp_path):
    d = tmp_path / "node-broken"
    d.mkdir()
    case = conformance.Case("node", "broken")
    (d / "case.json").write_text(json.dumps(conformance.asdict(case)))
    np.savez(d / "inputs.npz", np.zeros(2, np.float32))
    (d / "model.onnx").write_bytes(b"not a model")
    results = conformance.run_cases([(case, d)], jobs=1, timeout=120, verbose=False)
    assert [(r.name, r.status) for r in results] == [("broken", "error")]
    assert "not a valid ONNX model" in results[0].message
    skipped = [conformance.Result("node", "test_x", "unsupported", "NonZero: no importer for this op")]
    table = conformance.summarize(results, skipped)
    assert re.search(r"node\s+1\s+0\s+0\s+1\s+0\s+0\s+0 / 1", table)
    conformance.write_report(tmp_path / "r.json", results, skipped, {"jobs": 1})
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["summary"] == {"node": {"error": 1, "unsupported": 1}}
    assert report["results"][0]["name"] == "broken"
