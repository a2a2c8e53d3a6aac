"""The Ray executor (tuning/ray_executor.py) on a local Ray cluster started by the test."""

from __future__ import annotations

import pytest

ray = pytest.importorskip("ray", reason="ray is not installed (pip install 'minimlir[distributed]')")

from minimlir.tuning import measure as M  # noqa: E402
from minimlir.tuning.task import extract_tasks  # noqa: E402

MATMUL = """
func.func @main(%a: tensor<16x32xf32>, %b: tensor<32x32xf32>) -> tensor<16x32xf32> {
  %x = graph.matmul %a, %b : (tensor<16x32xf32>, tensor<32x32xf32>) -> tensor<16x32xf32>
  func.return %x : tensor<16x32xf32>
}"""


@pytest.fixture(scope="module")
def cluster():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def test_ray_builds_and_measures_with_node_fingerprints(cluster, tmp_path):
    from minimlir.tuning.database import Database, make_record
    from minimlir.tuning.ray_executor import RayExecutor

    task = extract_tasks(MATMUL)[0]
    ex = RayExecutor(tmp_path, M.MeasureConfig(threads=1, min_repeat_ms=5))
    try:
        assert len(ex.actors) == 1 and ex.node_fingerprints[0]["cpu"]
        d = dict(task.defaults)
        rs = ex.measure(task, [d, dict(d, **{"matmul.mr": 4}), dict(d, **{"matmul.mr": "x"})])
        feats = ex.features(task, [d])
    finally:
        ex.close()
    assert [r.error for r in rs] == [M.OK, M.OK, M.BUILD_ERROR]
    assert rs[0].cpu == ex.node_fingerprints[0] and rs[0].times and rs[1].features
    assert feats[0] == rs[0].features
    db = Database(tmp_path / "t.jsonl")
    db.append([make_record(task, r, r.cpu or ex.fingerprint) for r in rs])
    assert db.measurements()[0]["cpu"]["node"] == ex.node_fingerprints[0]["node"]


def test_tune_with_the_ray_executor(cluster, tmp_path):
    from minimlir.tuning.database import Database
    from minimlir.tuning.tuner import TuneOptions, tune

    task = extract_tasks(MATMUL)[0]
    res = tune(MATMUL, tmp_path / "t.jsonl", TuneOptions(trials=3, executor="ray", progress=False, threads=1,
                                                        min_repeat_ms=5, batch_size=2), tasks=[task])
    assert res.trials == 3 and res.tasks[0].best_cost < float("inf")
    recs = Database(tmp_path / "t.jsonl").measurements()
    assert len(recs) == 3 and all(r["error"] == "OK" and r["cpu"]["node"] for r in recs)


def test_ray_remeasure_keeps_times_per_round(cluster, tmp_path):
    """The confirmation's re-measurement on Ray: one fresh measuring process per round on the node
    (the actor restarts it), times per round, nothing for a candidate that does not build."""
    from minimlir.tuning.ray_executor import RayExecutor

    task = extract_tasks(MATMUL)[0]
    ex = RayExecutor(tmp_path, M.MeasureConfig(threads=1, min_repeat_ms=5, repeats=2))
    try:
        d = dict(task.defaults)
        times = ex.remeasure(task, [d, dict(d, **{"matmul.mr": 4}), dict(d, **{"matmul.mr": "x"})], rounds=2)
    finally:
        ex.close()
    assert [len(t) for t in times] == [2, 2, 0]
    assert all(len(r) == 2 and min(r) > 0 for t in times[:2] for r in t)
