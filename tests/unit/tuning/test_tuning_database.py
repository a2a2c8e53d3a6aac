"""The record database (tuning/database.py): append-only JSON lines, two writers, corrupt lines,
lookup by CPU then ISA class, stale records, distill / merge / show, run markers."""

from __future__ import annotations

import json
import multiprocessing

import pytest

from minimlir.tuning import database as D

CPU = {"cpu": "znver3", "features": "avx,avx2,fma,sse4.2", "cores": 2, "llvm": "20", "node": "a"}
OTHER_AVX2 = {"cpu": "haswell", "features": "avx,avx2,fma", "cores": 4, "llvm": "20", "node": "b"}
AVX512 = {"cpu": "skx", "features": "avx,avx2,avx512f,fma", "cores": 8, "llvm": "20", "node": "c"}


def rec(task="t1", knobs=None, times=(1.0,), error="OK", cpu=CPU, **kw):
    return {"v": 1, "kind": "measure", "task": task, "task_name": task, "rule": "matmul", "cpu": cpu,
            "knobs": knobs if knobs is not None else {"matmul.mr": 4}, "times": list(times), "error": error,
            "message": "", "time": D.now(), "compiler": D.compiler_version(), "run": "r", **kw}


def test_append_and_read_back(tmp_path):
    db = D.Database(tmp_path / "t.jsonl")
    db.append([rec(times=(2.0, 1.5)), rec(error="RUN_ERROR", times=())])
    db.append([rec(task="t2")])
    assert [r["task"] for r in db.measurements()] == ["t1", "t1", "t2"]
    assert D.cost(db.measurements()[0]) == 1.5 and D.cost(db.measurements()[1]) == float("inf")
    assert all(line.endswith("}") for line in (tmp_path / "t.jsonl").read_text().splitlines())


def _writer(path, who, n):
    db = D.Database(path)
    for i in range(n):
        db.append([rec(task=f"{who}-{i}", knobs={"matmul.mr": 4, "pad": "x" * 3000}) for _ in range(5)])


def test_two_writers_never_interleave(tmp_path):
    path = tmp_path / "t.jsonl"
    ctx = multiprocessing.get_context("fork")
    ps = [ctx.Process(target=_writer, args=(path, w, 40)) for w in ("a", "b")]
    for p in ps:
        p.start()
    for p in ps:
        p.join(60)
    db = D.Database(path, strict=True)
    assert len(db.measurements()) == 2 * 40 * 5 and db.skipped == 0


def test_corrupt_lines_are_skipped_with_a_count_or_an_error(tmp_path):
    path = tmp_path / "t.jsonl"
    db = D.Database(path)
    db.append([rec()])
    with open(path, "a") as f:
        f.write('{"kind": "measure", "task": "t1", "tim\n')  # a torn write
        f.write("not json at all\n")
    db.append([rec(task="t2")])  # after a line without "\n" too
    with open(path, "a") as f:
        f.write('{"half": ')
    db.append([rec(task="t3")])
    db = D.Database(path)
    assert [r["task"] for r in db.measurements()] == ["t1", "t2", "t3"]
    assert db.skipped == 3 and db.first_bad == f"{path}:2"
    assert "skipped 3 corrupt line(s), first at" in db.skipped_note()
    with pytest.raises(D.DatabaseError, match=rf"{path}:2: corrupt record"):
        D.Database(path, strict=True).records()


def test_lookup_exact_cpu_then_isa_class_then_nothing(tmp_path):
    db = D.Database(tmp_path / "t.jsonl")
    db.append([rec(knobs={"matmul.mr": 2}, times=(3.0,), cpu=OTHER_AVX2),
               rec(knobs={"matmul.mr": 4}, times=(5.0,), cpu=CPU),
               rec(knobs={"matmul.mr": 8}, times=(1.0,), cpu=AVX512)])
    assert db.best("t1", CPU)["knobs"] == {"matmul.mr": 4}  # exact CPU, even if slower elsewhere
    assert db.best("t1", dict(CPU, cpu="zen4"))["knobs"] == {"matmul.mr": 2}  # same class: avx2
    assert db.best("t1", {"cpu": "x", "features": "sse4.2"}) is None
    assert db.best("nope", CPU) is None


def test_records_that_no_longer_apply_are_passed_over(tmp_path):
    db = D.Database(tmp_path / "t.jsonl")
    db.append([rec(knobs={"matmul.mr": 4, "matmul.gone": 1}, times=(0.5,)),
               rec(knobs={"matmul.mr": "four"}, times=(0.6,)),
               rec(knobs={"matmul.mr": 6}, times=(2.0,))])
    assert db.best("t1", CPU)["knobs"] == {"matmul.mr": 6}


def confirm_rec(task="t1", knobs=None, times=(1.0,), default_times=(1.0,), cpu=CPU):
    return {"v": 1, "kind": "confirm", "task": task, "task_name": task, "rule": "matmul", "cpu": cpu,
            "knobs": knobs if knobs is not None else {"matmul.mr": 4}, "times": list(times),
            "default_times": list(default_times), "error": "OK", "default": False, "time": D.now(), "run": "r"}


def test_a_confirmation_outranks_a_faster_measurement(tmp_path):
    """The search's fastest record can be a lucky one that loses to the default when re-timed side by
    side; the run's confirmation is the verdict (a regression: applying a database made kernels
    slower than the default schedule)."""
    db = D.Database(tmp_path / "t.jsonl")
    db.append([rec(knobs={"matmul.mr": 8}, times=(0.8,)), rec(knobs={"matmul.mr": 4}, times=(1.0,), default=True),
               confirm_rec(knobs={"matmul.mr": 4}, times=(1.0,), default_times=(1.0,)),
               confirm_rec(knobs={"matmul.mr": 2}, times=(0.9,), default_times=(1.0,), cpu=OTHER_AVX2)])
    assert db.best("t1", CPU)["knobs"] == {"matmul.mr": 4}
    assert db.best("t1", CPU)["kind"] == "confirm"
    # an exact-CPU measurement still beats a confirmation made on another CPU of the class
    assert db.best("t1", dict(CPU, cpu="zen4"))["knobs"] == {"matmul.mr": 2}
    db.append([rec(task="t3", knobs={"matmul.mr": 2}, times=(1.0,), cpu=OTHER_AVX2)])
    assert db.best("t1", OTHER_AVX2)["kind"] == "confirm"
    # the latest confirmation wins; one whose knobs no longer apply is passed over
    db.append([confirm_rec(knobs={"matmul.mr": 6}, times=(0.95,))])
    text = D.show(db)  # the confirmed numbers, marked
    assert "* confirmed" in text and "1.05*" in text
    db.append([confirm_rec(knobs={"matmul.gone": 1})])
    assert db.best("t1", CPU)["knobs"] == {"matmul.mr": 6}
    # distill keeps the verdicts
    assert D.distill(db, tmp_path / "d.jsonl") == 6
    assert D.Database(tmp_path / "d.jsonl").best("t1", CPU)["knobs"] == {"matmul.mr": 6}


def test_run_markers_tell_interrupted_from_finished(tmp_path):
    db = D.Database(tmp_path / "t.jsonl")
    db.append([{"kind": "run", "status": "started", "run": "a", "model_hash": "m"}])
    assert db.interrupted_run("m")["run"] == "a"
    db.append([{"kind": "run", "status": "finished", "run": "a", "model_hash": "m"}])
    assert db.interrupted_run("m") is None and db.last_run("m")["status"] == "finished"
    assert db.interrupted_run("other") is None


def test_distill_merge_show(tmp_path):
    a, b = D.Database(tmp_path / "a.jsonl"), D.Database(tmp_path / "b.jsonl")
    a.append([rec(times=(3.0,), features=[1.0]), rec(knobs={"matmul.mr": 2}, times=(1.0,), default=True),
              rec(error="RUN_TIMEOUT", times=())])
    dup = a.measurements()[1]
    b.append([rec(task="t2", times=(2.0,)), dup,
              rec(knobs={"matmul.mr": 2}, times=(1.1,))])  # the second one is in a too: merged once
    assert D.distill(a, tmp_path / "d.jsonl") == 1
    (best,) = D.Database(tmp_path / "d.jsonl").measurements()
    assert best["knobs"] == {"matmul.mr": 2} and "features" not in best
    with pytest.raises(D.DatabaseError, match="new file"):
        D.distill(a, tmp_path / "a.jsonl")
    n = D.merge([a, b], tmp_path / "m.jsonl")
    assert n == 5 and D.merge([a, b], tmp_path / "m.jsonl") == 0
    text = D.show(D.Database(tmp_path / "m.jsonl"))
    assert "RUN_TIMEOUT 1" in text and "2 task(s), 5 record(s)" in text
    assert json.loads((tmp_path / "m.jsonl").read_text().splitlines()[0])["kind"] == "measure"


def test_mini_tune_db_commands(tmp_path, capsys):
    from minimlir.tools import mini_tune

    a = D.Database(tmp_path / "a.jsonl")
    a.append([rec(times=(3.0,)), rec(knobs={"matmul.mr": 2}, times=(1.0,))])
    with open(a.path, "a") as f:
        f.write("garbage\n")
    assert mini_tune.main(["db", "distill", str(a.path), "-o", str(tmp_path / "d.jsonl")]) == 0
    out = capsys.readouterr().out
    assert "distilled 1 record(s)" in out and "skipped 1 corrupt line(s)" in out
    assert mini_tune.main(["db", "merge", str(a.path), str(tmp_path / "d.jsonl"), "-o", str(tmp_path / "m.jsonl")]) == 0
    assert "merged 2 new record(s)" in capsys.readouterr().out  # the distilled one is a copy
    assert mini_tune.main(["db", "show", str(a.path), "--strict"]) == 1
    assert f"{a.path}:3: corrupt record" in capsys.readouterr().err
