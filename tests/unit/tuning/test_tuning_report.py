"""The live progress table and the end report (tuning/report.py), and tune_kernel for pass authors."""

from __future__ import annotations

import io
import json

import numpy as np

from minimlir.tuning.measure import MeasureResult
from minimlir.tuning.report import ProgressTable, write_report
from minimlir.tuning.search import TaskSearch
from minimlir.tuning.task import Task
from minimlir.tuning.tuner import TuneOptions, TuneResult


def _search(name, weight, costs):
    t = Task(key=name, name=name, kernel_text="", shapes=[[1]], dtypes=["float32"], num_outputs=1, weight=weight,
             flops=2e6, rule="matmul", defaults={"matmul.mr": 8}, facts={})
    s = TaskSearch(t, None, np.random.default_rng(0))
    s.update([MeasureResult({"matmul.mr": 8} if i == 0 else {"matmul.mr": i}, times=[c])
              for i, c in enumerate(costs)])
    s.global_trials.extend(range(1, len(costs) + 1))
    return s


def test_progress_table_rows():
    from rich.console import Console

    searches = [_search("conv_a", 2, [2e-3, 1e-3]), _search("mm_b", 1, [1e-3])]
    table = ProgressTable(searches)._table(3, TuneOptions(trials=6), 30.0)
    buf = io.StringIO()
    Console(file=buf, width=120).print(table)
    text = buf.getvalue()
    for col in ("task", "trials", "best GFLOP/s", "speedup", "ETA 30s"):
        assert col in text
    assert "2.00x" in text and "whole model" in text and "2.00 " in text  # 2 MFLOP in 1 ms


def test_report_files(tmp_path):
    searches = [_search("conv_a", 2, [2e-3, 1e-3, 1.5e-3]), _search("mm_b", 1, [1e-3, 5e-4])]
    res = TuneResult("run1", searches, 5, 12.0, [{"samples": 32, "spearman": 0.8, "held_out": 7}])
    paths = write_report(res, tmp_path / "rep", 13.0)
    s = json.loads((tmp_path / "rep" / "summary.json").read_text())
    assert s["model"]["default_s"] == 2 * 2e-3 + 1e-3 and s["model"]["best_s"] == 2 * 1e-3 + 5e-4
    assert s["tasks"][0]["speedup"] == 2.0 and s["tasks"][0]["curve"][-1] == [3, 1e-3]
    md = (tmp_path / "rep" / "summary.md").read_text()
    assert "| conv_a | matmul | 2 | 3 |" in md and "| 32 | 0.800 |" in md
    assert paths["png"].endswith("tuning.png") and (tmp_path / "rep" / "tuning.png").stat().st_size > 5000
    assert s["tasks"][0]["cold_args"] == [] and "flushed" not in md
    searches[1].task.cold_args = [1]  # a weight timed cold: marked, and said why
    write_report(res, tmp_path / "rep2", 13.0)
    md = (tmp_path / "rep2" / "summary.md").read_text()
    assert "| mm_b* | matmul |" in md and "weights flushed from the caches" in md
    assert json.loads((tmp_path / "rep2" / "summary.json").read_text())["tasks"][1]["cold_args"] == [1]


def test_tune_kernel_for_pass_authors(tmp_path):
    from minimlir.tuning.task import extract_tasks
    from minimlir.tuning.tuner import records_of, tune_kernel

    text = """
func.func @main(%a: tensor<8x16xf32>, %b: tensor<16x16xf32>) -> tensor<8x16xf32> {
  %x = graph.matmul %a, %b : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
  func.return %x : tensor<8x16xf32>
}"""
    task = extract_tasks(text)[0]
    task.cold_args = [1]  # as for a weight of a model larger than the caches: timed flushed, recorded
    db = tmp_path / "k.jsonl"
    s = tune_kernel(task, 3, db_path=db, opts=TuneOptions(threads=1, min_repeat_ms=5, repeats=2, batch_size=2))
    assert s.trials == 3 and s.best is not None and s.default_cost < float("inf")
    recs = records_of(db, task)
    assert len(recs) == 3 and recs[0]["default"] and recs[0]["knobs"] == task.defaults
    assert all(r["cold_args"] == [1] for r in recs)


def test_cache_flush_option_is_checked(tmp_path):
    import pytest

    from minimlir.tuning.tuner import TuneError, tune

    with pytest.raises(TuneError, match="cache_flush"):
        tune("examples/mlp.onnx", tmp_path / "t.jsonl", TuneOptions(trials=1, cache_flush="always"))
