"""Applying records (tuning/apply.py): the loop-schedule pass option, compile(tuning_db=) with the
compile cache, replay() for pass authors, records that no longer apply, mini-tune's usage errors."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from minimlir.tools import mini_tune
from minimlir.tuning.apply import apply_records, host_fingerprint
from minimlir.tuning.database import Database, now
from minimlir.tuning.task import _prefixed, extract_tasks, kernels_of

MODEL = """
func.func @main(%a: tensor<32x64xf32>, %b: tensor<64x64xf32>) -> tensor<32x64xf32> {
  %x = graph.matmul %a, %b : (tensor<32x64xf32>, tensor<64x64xf32>) -> tensor<32x64xf32>
  func.return %x : tensor<32x64xf32>
}
"""


@pytest.fixture
def setup(tmp_path):
    model = tmp_path / "mm.mlir"
    model.write_text(MODEL)
    task = extract_tasks(str(model))[0]
    db = Database(tmp_path / "t.jsonl")
    knobs = dict(task.defaults, **{"matmul.mr": 4, "matmul.nv": 1, "matmul.mc": 32})

    def record(knobs, times):
        return {"v": 1, "kind": "measure", "task": task.key, "task_name": task.name, "rule": task.rule,
                "cpu": host_fingerprint(), "knobs": knobs, "times": times, "error": "OK", "message": "",
                "time": now(), "compiler": "test", "run": "r"}

    db.append([record(dict(task.defaults), [2.0]), record(knobs, [1.0])])
    return model, task, db, knobs, record


def test_loop_schedule_pass_option(setup, tmp_path):
    model, task, db, knobs, _ = setup
    fused = tmp_path / "fused.mlir"
    subprocess.run([sys.executable, "-m", "minimlir.tools.mini_opt", str(model), "-p",
                    "graph-fuse,graph-legalize,loop-fuse", "-o", str(fused)], check=True)
    r = subprocess.run([sys.executable, "-m", "minimlir.tools.mini_opt", str(fused), "-p",
                        f"loop-schedule{{tuning-db={db.path} lower=false}}"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    from minimlir.backend import _target

    lanes = _target.resolve().vector_width
    assert f"memref<4x{lanes}xf32>" in r.stdout  # the record's 4 x (nv 1 * lanes) register tile, not the default
    assert f"tuning: 1 of 1 kernels from {db.path}" in r.stderr
    assert "loop.schedule_knobs" not in r.stdout


def test_compile_with_tuning_db_and_the_cache(setup, tmp_path, capfd):
    from minimlir.frontend import compile as compile_model

    model, task, db, knobs, _ = setup
    a = np.random.default_rng(0).standard_normal((32, 64)).astype(np.float32)
    b = np.random.default_rng(1).standard_normal((64, 64)).astype(np.float32)
    for _ in range(2):  # a miss, then a hit: the summary line both times
        m = compile_model(str(model), tuning_db=str(db.path), cache=str(tmp_path / "cache"))
        assert capfd.readouterr().err.count(f"tuning: 1 of 1 kernels from {db.path}") == 1
        np.testing.assert_allclose(m(a, b)[0], a @ b, rtol=1e-4, atol=1e-4)
    with pytest.raises(FileNotFoundError, match="no such file"):
        compile_model(str(model), tuning_db=str(tmp_path / "none.jsonl"))


def test_stale_records_fall_back_to_the_default(setup):
    model, task, db, knobs, record = setup
    db.path.write_text("")
    db.append([record(dict(knobs, **{"matmul.removed_knob": 3}), [0.5]), record(dict(knobs, **{"matmul.mr": "4"}), [0.4])])
    m = _prefixed(str(model))
    s = apply_records(m, db.path)
    assert s.line() == f"tuning: 0 of 1 kernels from {db.path}"
    other = Database(db.path)
    other.append([dict(record(knobs, [1.0]), cpu={"cpu": "elsewhere", "features": "sse2"})])
    assert apply_records(_prefixed(str(model)), db.path).applied == 0  # another ISA class: not used


def test_replay_for_pass_authors(setup):
    from minimlir.passes.loop.schedule.default.knobs import read_assignment
    from minimlir.tuning.tuner import records_of, replay

    model, task, db, knobs, _ = setup
    recs = records_of(db.path, task)
    assert len(recs) == 2 and recs[1]["knobs"] == knobs
    (k,) = kernels_of(_prefixed(str(model)))
    replay(recs[1], k)
    assert read_assignment(k) == knobs
    with pytest.raises(ValueError, match="no longer applies"):
        replay(dict(recs[1], knobs={"matmul.mr": 99}), k)
    with pytest.raises(ValueError, match="for task"):
        replay(dict(recs[1], task="elsewhere"), k)


@pytest.mark.parametrize("argv, msg", [
    (["missing.onnx", "--db", "t.jsonl", "--trials", "1"], "no such file"),
    (["{model}", "--db", "t.jsonl"], "give a budget"),
    (["{model}", "--db", "t.jsonl", "--budget", "ten minutes"], "expected a duration"),
    (["{model}", "--db", "t.jsonl", "--trials", "0"], "must be >= 1"),
    (["{model}", "--db", "t.jsonl", "--trials", "1", "--address", "x:1"], "only applies with --executor ray"),
    (["{model}", "--db", "t.jsonl", "--trials", "1", "--dim", "batch"], "expected NAME=N"),
    (["db", "show", "missing.jsonl"], "no such file"),
])
def test_mini_tune_usage_errors(setup, argv, msg, capsys):
    model = setup[0]
    assert mini_tune.main([a.replace("{model}", str(model)) for a in argv]) == 1
    err = capsys.readouterr().err
    assert msg in err and "Traceback" not in err
    assert "'" + msg not in err  # the message itself, not its repr


def test_budget_parsing():
    assert mini_tune.parse_budget("10m") == 600 and mini_tune.parse_budget("1h30m") == 5400
    assert mini_tune.parse_budget("90s") == 90 and mini_tune.parse_budget("45") == 45


def test_a_kernel_whose_best_record_is_the_default_keeps_the_default_schedule(setup, capfd):
    """When candidate 0 (the default schedule) measured best, its record's knob values are the ones
    the default rule chose for the task alone; the kernel keeps the model's own default instead of
    having them pinned."""
    from minimlir.frontend import compile as compile_model
    from minimlir.passes.loop.schedule.default.knobs import read_assignment

    model, task, db, knobs, record = setup
    db.path.write_text("")
    db.append([dict(record(dict(task.defaults), [1.0]), default=True), record(knobs, [2.0])])
    m = _prefixed(str(model))
    s = apply_records(m, db.path)
    assert (s.applied, s.kept_default) == (0, 1)
    assert read_assignment(kernels_of(m)[0]) is None
    assert s.line() == f"tuning: 0 of 1 kernels from {db.path} (1 keep the default schedule, their best)"
    # a confirmation the default won, written with the default's knobs, is the same verdict
    db.append([dict(record(dict(task.defaults), [1.0]), kind="confirm", default=False, default_times=[1.0])])
    assert apply_records(_prefixed(str(model)), db.path).kept_default == 1
    # and compile(profile=True) reads the database too (it dropped tuning_db= before)
    compile_model(str(model), tuning_db=str(db.path), profile=True, cache=False)
    assert "tuning: 0 of 1 kernels" in capfd.readouterr().err


def test_checked_mode_applies_the_same_records(setup, capfd):
    """A checked compile (its accesses named by mem-check-sites) finds the records a plain one does,
    so the tuned kernels are the ones checked."""
    from minimlir.frontend import compile as compile_model

    model, task, db, knobs, _ = setup
    a = np.random.default_rng(0).standard_normal((32, 64)).astype(np.float32)
    b = np.random.default_rng(1).standard_normal((64, 64)).astype(np.float32)
    m = compile_model(str(model), tuning_db=str(db.path), cache=False, checks=True)
    assert f"tuning: 1 of 1 kernels from {db.path}" in capfd.readouterr().err
    np.testing.assert_allclose(m(a, b)[0], a @ b, rtol=1e-4, atol=1e-4)
