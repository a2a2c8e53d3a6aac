"""Per-conv algorithm choice (tuning/algorithms.py): the convs a model offers a choice for, the
measurement in a child process, the database lookup, the stamp graph-winograd honours at compile
time (compile(tuning_db=) and the pass option), and mini-tune measuring them before the kernels."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from minimlir.passes.graph.winograd import chosen_tile
from minimlir.tuning import algorithms as A
from minimlir.tuning.apply import host_fingerprint
from minimlir.tuning.database import Database, distill, now, show
from minimlir.tuning.task import extract_tasks


def _model(path, c=16, h=8, convs=2, strided=True):
    """`convs` equal 3x3 convs of `c` channels at h x h (ReLUs between), then a strided 3x3 conv."""
    rng = np.random.default_rng(0)
    nodes, inits, prev = [], [], "x"
    for i in range(convs):
        inits += [numpy_helper.from_array((rng.standard_normal((c, c, 3, 3)) / np.sqrt(9 * c)).astype(np.float32), f"w{i}"),
                  numpy_helper.from_array(rng.standard_normal(c).astype(np.float32), f"b{i}")]
        nodes += [helper.make_node("Conv", [prev, f"w{i}", f"b{i}"], [f"c{i}"], pads=[1, 1, 1, 1]),
                  helper.make_node("Relu", [f"c{i}"], [f"r{i}"])]
        prev = f"r{i}"
    out_h = h
    if strided:
        inits.append(numpy_helper.from_array((rng.standard_normal((c, c, 3, 3)) / np.sqrt(9 * c)).astype(np.float32), "ws"))
        nodes.append(helper.make_node("Conv", [prev, "ws"], ["s"], pads=[1, 1, 1, 1], strides=[2, 2]))
        prev, out_h = "s", (h + 1) // 2
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, h, h])],
                          [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [1, c, out_h, out_h])], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    return str(path)


def _record(conv, choice, cpu=None, times=None):
    times = times or {a: [1e-3] for a in conv.candidates}
    return {"v": 1, "kind": "algorithm", "conv": conv.key, "signature": conv.signature,
            "cpu": cpu or host_fingerprint(), "times": times, "errors": {}, "choice": choice,
            "default": conv.default, "run": "r", "time": now(), "compiler": "test"}


def test_extract_convs(tmp_path):
    convs = A.extract_convs(_model(tmp_path / "m.onnx"))
    # the two equal convs are one signature called twice; the strided one offers no choice
    assert len(convs) == 1
    (c,) = convs
    assert c.weight == 2 and c.candidates == ["direct", "winograd2", "winograd4"]
    assert c.default == "direct"  # 16 channels: under graph-winograd's thresholds
    assert c.flops == 2.0 * 16 * 16 * 9 * 64
    assert "graph.param \"w\"" in c.text and "graph.algorithm" not in c.text
    assert A.with_algorithm(c.text, "winograd4").count('graph.algorithm = "winograd4"') == 1


def test_decide_keeps_the_default_on_a_tie():
    assert A.decide({"direct": [1.0, 1.1], "winograd2": [0.5]}, "direct") == "winograd2"
    assert A.decide({"direct": [1.0], "winograd2": [0.99]}, "direct") == "direct"  # within TIE
    assert A.decide({"winograd2": [0.7], "winograd4": [0.6]}, "direct") == "winograd4"  # default failed
    assert A.decide({}, "winograd2") == "winograd2"


def test_measure_conv_in_a_child(tmp_path):
    (c,) = A.extract_convs(_model(tmp_path / "m.onnx"))
    r = A.measure_conv(c, threads=1, min_repeat_ms=2, rounds=2)
    assert r.errors == {}
    assert set(r.times) == set(c.candidates) and all(len(t) == 2 and min(t) > 0 for t in r.times.values())
    assert r.choice == A.decide(r.times, c.default)
    rec = A.make_record(c, r, host_fingerprint(), "run")
    assert rec["kind"] == "algorithm" and rec["choice"] == r.choice and rec["weight"] == 2


def test_measure_conv_with_cold_weights(tmp_path, monkeypatch):
    """cache_flush: "on" (or a model whose parameters exceed the last-level cache) times each call
    with the weights, bound and lifted, flushed; the record says so."""
    from minimlir.tuning import task as T

    path = _model(tmp_path / "m.onnx")
    assert not A.extract_convs(path)[0].cold  # a few KB of weights stay cached
    (c,) = A.extract_convs(path, cache_flush="on")
    assert c.cold and str(c).endswith(", weights flushed")
    monkeypatch.setattr(T, "last_level_cache_bytes", lambda: 1024)
    assert A.extract_convs(path)[0].cold and not A.extract_convs(path, cache_flush="off")[0].cold
    r = A.measure_conv(c, threads=1, min_repeat_ms=2, rounds=2)
    assert r.errors == {} and set(r.times) == set(c.candidates)
    assert A.make_record(c, r, host_fingerprint(), "run")["cold"] is True


def test_param_arrays_are_the_bound_and_lifted_weights(tmp_path):
    import numpy as np

    from minimlir.frontend import compile as compile_model

    (c,) = A.extract_convs(_model(tmp_path / "m.onnx"))
    w = np.ones(c.weight_shape, np.float32)
    params = {"w": w, **({"b": np.zeros(c.weight_shape[:1], np.float32)} if c.bias else {})}
    m = compile_model(A.with_algorithm(c.text, "winograd2"), params=params, cache=False)
    arrays = m.program.param_arrays()
    assert any(a is w for a in arrays)
    # and the transformed filter graph-lift-params computes: 4x4 per 3x3 tap set
    assert any(a.size == w.size // 9 * 16 for a in arrays)


def test_measure_conv_reports_a_build_error(tmp_path):
    (c,) = A.extract_convs(_model(tmp_path / "m.onnx"))
    c.text = c.text.replace("graph.conv2d", "graph.no_such_op")
    r = A.measure_conv(c, threads=1, min_repeat_ms=1, rounds=1)
    assert r.times == {} and r.choice == c.default
    assert set(r.errors) == set(c.candidates) and all(e.startswith("BUILD_ERROR") for e in r.errors.values())


def test_lookup_exact_cpu_then_isa_class(tmp_path):
    (c,) = A.extract_convs(_model(tmp_path / "m.onnx"))
    db = Database(tmp_path / "t.jsonl")
    here = host_fingerprint()
    other_isa = {"cpu": "old", "features": "sse2"}
    same_isa = dict(here, cpu="sibling")
    db.append([_record(c, "winograd4", cpu=other_isa)])
    assert db.algorithm(c.key, here) is None
    db.append([_record(c, "winograd2", cpu=same_isa)])
    assert db.algorithm(c.key, here)["choice"] == "winograd2"
    db.append([_record(c, "direct"), _record(c, "winograd4", cpu=same_isa)])
    assert db.algorithm(c.key, here)["choice"] == "direct"  # the exact CPU first


def test_compile_applies_the_choice(tmp_path, capfd):
    from minimlir.frontend import compile as compile_model

    path = _model(tmp_path / "m.onnx")
    (c,) = A.extract_convs(path)
    db = Database(tmp_path / "t.jsonl")
    db.append([_record(c, "winograd4")])
    stages = []
    x = np.random.default_rng(1).standard_normal((1, 16, 8, 8)).astype(np.float32)
    ref = compile_model(path, cache=False)(x)[0]
    m = compile_model(path, tuning_db=str(db.path), cache=False,
                      print_ir=lambda stage, text: stages.append(text) if "winograd_input" in text else None)
    err = capfd.readouterr().err
    assert "tuning: 0 of " in err and f"2 of 2 conv algorithms from {db.path}" in err
    assert stages and "tile 4" in stages[0]  # both convs ran as F(4x4), below the default's thresholds
    np.testing.assert_allclose(m(x)[0], ref, rtol=1e-4, atol=1e-4)
    # the same through the default (split) lowering and the compile cache: a miss, then a hit
    for _ in range(2):
        m = compile_model(path, tuning_db=str(db.path), cache=str(tmp_path / "cache"))
        assert f"2 of 2 conv algorithms from {db.path}" in capfd.readouterr().err
        np.testing.assert_allclose(m(x)[0], ref, rtol=1e-4, atol=1e-4)


def test_pass_option_stamps_from_the_database(tmp_path):
    path = _model(tmp_path / "m.onnx", strided=False)
    (c,) = A.extract_convs(path)
    db = Database(tmp_path / "t.jsonl")
    db.append([_record(c, "winograd2")])
    mlir = str(tmp_path / "m.mlir")
    subprocess.run([sys.executable, "-m", "minimlir.tools.mini_import_onnx", path, "-o", mlir], check=True)
    r = subprocess.run([sys.executable, "-m", "minimlir.tools.mini_opt", mlir, "-p",
                        f"{A._before_winograd()},graph-winograd{{tuning-db={db.path}}}"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("graph.winograd_input") == 2 and "tile 4" not in r.stdout
    assert f"tuning: 2 of 2 conv algorithms from {db.path}" in r.stderr


def test_show_and_distill(tmp_path):
    (c,) = A.extract_convs(_model(tmp_path / "m.onnx"))
    db = Database(tmp_path / "t.jsonl")
    db.append([_record(c, "winograd2", times={"direct": [2e-3], "winograd2": [1e-3], "winograd4": [1.5e-3]}),
               _record(c, "winograd4", times={"direct": [2e-3], "winograd2": [1.2e-3], "winograd4": [1e-3]})])
    text = show(db)
    assert "winograd4" in text and "2.00" in text and "1 conv algorithm choice(s)" in text
    assert distill(db, tmp_path / "d.jsonl") == 1
    (rec,) = [json.loads(line) for line in (tmp_path / "d.jsonl").read_text().splitlines()]
    assert rec["kind"] == "algorithm" and rec["choice"] == "winograd4"  # the latest


def test_tune_measures_algorithms_first(tmp_path):
    from minimlir.frontend import compile as compile_model
    from minimlir.tuning.tuner import TuneOptions, tune

    path = _model(tmp_path / "m.onnx", c=16, h=8)
    db_path = tmp_path / "t.jsonl"
    res = tune(path, db_path, TuneOptions(trials=12, seed=0, progress=False, min_repeat_ms=2, repeats=2,
                                          confirm_top=0, max_tasks=1))
    (rec,) = res.algorithms
    assert rec["choice"] in ("direct", "winograd2", "winograd4") and set(rec["times"]) == {"direct", "winograd2", "winograd4"}
    assert res.trials == 12  # 3 for the algorithms, then 9 kernel candidates
    report = json.loads(open(res.report_paths["json"]).read())
    assert report["algorithms"][0]["choice"] == rec["choice"] and report["algorithms"][0]["weight"] == 2
    assert rec["signature"] in open(res.report_paths["markdown"]).read()
    db = Database(db_path)
    assert db.algorithm(rec["conv"], host_fingerprint())["run"] == res.run
    # the tasks come from the model as compiled with the choice: winograd's kernels when it won
    expected = extract_tasks(path, before_winograd=lambda m: A.stamp(m, db, host_fingerprint()))
    assert res.tasks[0].task.key == expected[0].key
    assert ("winograd" in " ".join(t.name for t in expected)) == (rec["choice"] != "direct")
    x = np.random.default_rng(1).standard_normal((1, 16, 8, 8)).astype(np.float32)
    ref = compile_model(path, cache=False)(x)[0]
    np.testing.assert_allclose(compile_model(path, tuning_db=str(db_path), cache=False)(x)[0], ref,
                               rtol=1e-4, atol=1e-4)
    # --no-algorithms: nothing measured
    res2 = tune(path, tmp_path / "u.jsonl", TuneOptions(trials=2, progress=False, min_repeat_ms=2, repeats=1,
                                                        confirm_top=0, max_tasks=1, algorithms=False))
    assert res2.algorithms == [] and not Database(tmp_path / "u.jsonl").algorithms()


def test_list_tasks_names_the_convs(tmp_path):
    path = _model(tmp_path / "m.onnx")
    r = subprocess.run([sys.executable, "-m", "minimlir.tools.mini_tune", path, "--db", str(tmp_path / "t.jsonl"),
                        "--list-tasks"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    # (the input as graph-winograd sees it: channel-blocked by graph-layout, the block the host's vector)
    assert re.search(r"^[0-9a-f]{20}  conv 16x16x3x3 on 1x\S+ x2 \(default direct\) candidates direct, winograd2, "
                     r"winograd4$", r.stdout, re.M), r.stdout


@pytest.mark.parametrize("bad", ["winograd3", "Winograd2"])
def test_bad_stamp_is_an_error(bad):
    from xdsl.dialects.builtin import StringAttr

    from minimlir.frontend.api import parse_mlir

    m = parse_mlir("""
func.func @f(%x: tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32> {
  %w = graph.param "w" : tensor<8x8x3x3xf32>
  %y = graph.conv2d %x, %w pads [1, 1, 1, 1] : (tensor<1x8x8x8xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x8x8xf32>
  func.return %y : tensor<1x8x8x8xf32>
}""")
    (conv,) = A.convs_of(m)
    conv.attributes[A.ATTR] = StringAttr(bad)
    with pytest.raises(ValueError, match="must be one of direct, winograd2, winograd4"):
        chosen_tile(conv)


def test_resume_keeps_the_runs_algorithm_records(tmp_path, monkeypatch):
    """An interrupted run's algorithm records count on --resume: the convs are not measured again,
    their trials count against the budget, the kernels come from the model with those choices."""
    from minimlir.tuning.tuner import TuneOptions, model_hash, tune

    path = _model(tmp_path / "m.onnx", strided=False)
    (c,) = A.extract_convs(path)
    db = Database(tmp_path / "t.jsonl")
    db.append([{"v": 1, "kind": "run", "status": "started", "run": "r0", "model_hash": model_hash(path)},
               dict(_record(c, "winograd2"), run="r0")])

    def no_measuring(*a, **k):
        raise AssertionError("measured again")

    monkeypatch.setattr(A, "measure_conv", no_measuring)
    res = tune(path, db.path, TuneOptions(trials=5, resume=True, progress=False, min_repeat_ms=2, repeats=1,
                                          confirm_top=0, max_tasks=1))
    assert res.run == "r0" and [r["choice"] for r in res.algorithms] == ["winograd2"]
    assert res.trials == 5  # 3 of them the algorithms' (one per candidate), 2 kernel candidates
    assert sum(s.trials for s in res.tasks) == 2


def test_cli_reports_the_algorithms(tmp_path):
    """mini-tune's last line counts the convs whose measured algorithm is not the default's (10
    trials: 3 for the conv's algorithms, within ALGORITHM_SHARE, then 7 for one kernel)."""
    path = _model(tmp_path / "m.onnx", strided=False)
    db = tmp_path / "t.jsonl"
    r = subprocess.run([sys.executable, "-m", "minimlir.tools.mini_tune", path, "--db", str(db), "--trials", "10",
                        "--threads", "1", "--no-progress", "--max-tasks", "1", "--min-repeat-ms", "2"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    (rec,) = Database(db).algorithms()
    changed = int(rec["choice"] != rec["default"])
    assert f"conv algorithms: {changed} of 1 differ from the default's; records in {db}" in r.stdout
