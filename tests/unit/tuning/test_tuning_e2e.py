"""A seeded 16-trial tune of a small matmul through mini-tune: the database, --resume of an
interrupted run, the report, and applying the best record (compile(tuning_db=), mini-run, mini-opt)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import numpy as np

from minimlir.tools import mini_tune

MODEL = """
func.func @main(%a: tensor<24x64xf32>, %b: tensor<64x48xf32>) -> tensor<24x48xf32> {
  %x = graph.matmul %a, %b : (tensor<24x64xf32>, tensor<64x48xf32>) -> tensor<24x48xf32>
  %y = graph.relu %x : tensor<24x48xf32>
  func.return %y : tensor<24x48xf32>
}
"""

COMMON = ["--seed", "3", "--batch-size", "4", "--threads", "1", "--no-progress", "--min-repeat-ms", "5",
          "--repeats", "3"]


def test_tune_resume_and_apply_best(tmp_path, capsys):
    model, db = tmp_path / "mm.mlir", tmp_path / "t.jsonl"
    model.write_text(MODEL)
    # a run stopped with Ctrl-C after its first batch: no finish marker, a hint to --resume
    # (Ctrl-C in a terminal: the child starts with SIGINT's default disposition, which Python turns
    # into KeyboardInterrupt, whatever this test process inherited: a suite started in the background
    # of a shell without job control ignores SIGINT, and so did the child, which ran to the end)
    proc = subprocess.Popen([sys.executable, "-m", "minimlir.tools.mini_tune", str(model), "--db", str(db),
                             "--trials", "100", *COMMON], stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    t0 = time.time()
    deadline = t0 + 240
    seen = 0
    while time.time() < deadline and proc.poll() is None:
        seen = sum('"kind": "measure"' in x for x in db.read_text().splitlines()) if db.exists() else 0
        if seen >= 2:
            break
        time.sleep(0.2)
    sent = (time.time() - t0, seen, proc.poll())  # (when, measurements by then, exit code if already ended)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130 and "--resume" in err and "Traceback" not in err, (sent, err)
    lines = [json.loads(x) for x in db.read_text().splitlines()]
    assert lines[0]["kind"] == "run" and lines[0]["status"] == "started"
    assert not any(r.get("status") == "finished" for r in lines)
    meas = [r for r in lines if r["kind"] == "measure"]
    assert len(meas) >= 2 and meas[0]["default"] and not any(r["default"] for r in meas[1:])
    assert all(r["cpu"]["cpu"] and r["cpu"]["cores"] >= 1 and r["cpu"]["llvm"] for r in meas)
    assert all(r["error"] == "OK" and len(r["times"]) == 3 and r["features"] for r in meas)
    # --resume continues that run to 16 trials in all
    assert mini_tune.main([str(model), "--db", str(db), "--trials", "16", "--resume", *COMMON]) == 0
    lines = [json.loads(x) for x in db.read_text().splitlines()]
    meas = [r for r in lines if r["kind"] == "measure"]
    assert len(meas) == 16 and len({r["run"] for r in meas}) == 1
    assert len({json.dumps(r["knobs"], sort_keys=True) for r in meas}) == 16  # nothing measured twice
    assert lines[-1]["status"] == "finished"
    # a finished run has nothing to resume
    assert mini_tune.main([str(model), "--db", str(db), "--trials", "20", "--resume", *COMMON]) == 1
    assert "nothing to resume" in capsys.readouterr().err
    report = json.loads((tmp_path / "t.report" / "summary.json").read_text())
    assert report["trials"] == 16 and report["tasks"][0]["trials"] == 16
    assert (tmp_path / "t.report" / "tuning.png").stat().st_size > 1000
    assert "| task |" in (tmp_path / "t.report" / "summary.md").read_text()
    # mini-tune db show
    capsys.readouterr()
    assert mini_tune.main(["db", "show", str(db)]) == 0
    assert "1 task(s), 16 record(s), 1 run(s)" in capsys.readouterr().out

    # apply the best record
    from minimlir.frontend import compile as compile_model
    from minimlir.tuning.apply import apply_records, host_fingerprint
    from minimlir.tuning.database import Database, cost
    from minimlir.tuning.task import _prefixed, structural_key, kernels_of

    m = _prefixed(str(model))
    (k,) = kernels_of(m)
    best = Database(db).best(structural_key(k), host_fingerprint())
    # the run ended with a confirmation unless the default was the fastest: then that is the verdict
    confirms = [r for r in lines if r["kind"] == "confirm"]
    fastest = min(meas, key=cost)
    if fastest["default"]:
        assert not confirms and best == fastest
    else:
        assert len(confirms) == 1 and best == confirms[0] and len(confirms[0]["default_times"]) == 3 * 3
        assert best["default"] or best["knobs"] in [r["knobs"] for r in sorted(meas, key=cost)[:4]]
    summary = apply_records(m, db)
    # the verdict applied: the best record's knobs, or (the default's own record won) no knobs at all
    line = (f"tuning: 0 of 1 kernels from {db} (1 keep the default schedule, their best)" if best["default"]
            else f"tuning: 1 of 1 kernels from {db}")
    assert summary.line() == line
    if not best["default"]:
        assert summary.by_kernel[k.sym_name.data]["knobs"] == best["knobs"]
    compiled = compile_model(str(model), tuning_db=str(db), cache=False)
    assert line in capsys.readouterr().err
    a = np.random.default_rng(0).standard_normal((24, 64)).astype(np.float32)
    b = np.random.default_rng(1).standard_normal((64, 48)).astype(np.float32)
    (y,) = compiled(a, b)
    np.testing.assert_allclose(y, np.maximum(a @ b, 0), rtol=1e-4, atol=1e-4)
    # mini-run --tuning-db and the loop-schedule pass option
    r = subprocess.run([sys.executable, "-m", "minimlir.tools.mini_run", str(model), "--tuning-db", str(db),
                        "--random-inputs", "--quiet", "--no-cache"], capture_output=True, text=True)
    assert r.returncode == 0 and r.stderr.count(line.split(" from ")[0] + " from") == 1, r.stderr
    r = subprocess.run([sys.executable, "-m", "minimlir.tools.mini_run", str(model), "--tuning-db",
                        str(tmp_path / "missing.jsonl"), "--random-inputs"], capture_output=True, text=True)
    assert r.returncode == 1 and "no such file" in r.stderr and "Traceback" not in r.stderr


def test_a_conv_record_applies_to_the_packed_conv_kernel(tmp_path, capsys):
    """The tuner keys the kernels the compile pipeline schedules: the conv with its weight packed
    (graph-pack-weights), and not the packing, which runs once when the weights are bound (a
    regression: tasks came from a shorter prefix, so no conv record matched at compile time)."""
    from minimlir.frontend import compile as compile_model

    model, db = "examples/conv_add_relu.onnx", tmp_path / "c.jsonl"
    assert mini_tune.main([model, "--db", str(db), "--trials", "3", *COMMON]) == 0
    capsys.readouterr()
    compiled = compile_model(model, tuning_db=str(db), cache=False)
    # the conv kernel's record matched: applied, or the default's own record won (kept as it is)
    err = capsys.readouterr().err
    assert (f"tuning: 1 of 1 kernels from {db}" in err
            or f"tuning: 0 of 1 kernels from {db} (1 keep the default schedule, their best)" in err), err
    import onnxruntime as ort

    x = np.random.default_rng(2).standard_normal((2, 3, 16, 16)).astype(np.float32)
    (ref,) = ort.InferenceSession(model).run(None, {"x": x})
    np.testing.assert_allclose(compiled(x)[0], ref, rtol=1e-4, atol=1e-4)


def test_a_script_without_a_main_guard_gets_a_clear_error(tmp_path):
    """The tuner's workers are spawned and import the calling script first: unguarded, every build
    and run failed (child tracebacks) and tune() returned a result with nothing measured, exit 0."""
    script = tmp_path / "tune_it.py"
    db = tmp_path / "t.jsonl"
    model = tmp_path / "m.mlir"
    model.write_text(MODEL)
    script.write_text("from minimlir.tuning.tuner import TuneOptions, tune\n"
                      f"r = tune({str(model)!r}, {str(db)!r}, TuneOptions(trials=4, progress=False, min_repeat_ms=5,"
                      f" repeats=3, workdir={str(tmp_path / 'w')!r}))\n"
                      "print('tuned', [s.best_cost for s in r.tasks])\n")
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 1 and "tuned" not in r.stdout
    assert 'guard the script\'s tune() call with `if __name__ == "__main__":`' in r.stderr.splitlines()[-1]
    assert not db.exists()  # stopped before the database
    # guarded, the same script tunes
    script.write_text(script.read_text().replace("r = tune", "if __name__ == '__main__':\n    r = tune")
                      .replace("print(", "    print("))
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0 and "tuned [" in r.stdout and "inf" not in r.stdout, r.stderr[-2000:]


def test_a_budget_too_small_for_every_kernel_says_so(tmp_path, capsys):
    """Two trials measure one kernel's default and one candidate: the second kernel's default is not
    measured, so there is no whole-model total (it printed 'kernels: inf ms -> inf ms (-)')."""
    model, db = tmp_path / "two.mlir", tmp_path / "t.jsonl"
    model.write_text(MODEL.replace("%y = graph.relu %x : tensor<24x48xf32>",
                                   "%y = graph.softmax %x axis 1 : tensor<24x48xf32>"))
    assert mini_tune.main([str(model), "--db", str(db), "--trials", "2", "--no-algorithms", *COMMON]) == 0
    out = capsys.readouterr().out
    assert "kernels: 1 of 2 measured (too few trials for a whole-model total" in out and "inf" not in out
    md = (tmp_path / "t.report" / "summary.md").read_text()
    assert "nan" not in md and "| softmax_0 | generic | 1 | 0 | - | - | - | - |" in md
