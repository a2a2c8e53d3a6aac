"""The per-trial fast path: build workers that keep the parsed task (tuning/builder.py), one
long-lived measuring process (tuning/runner.py) that is restarted after a crash."""

from __future__ import annotations

import dataclasses

import pytest

from minimlir.tuning import builder
from minimlir.tuning import measure as M
from minimlir.tuning.task import extract_tasks

MATMUL = """
func.func @main(%a: tensor<16x32xf32>, %b: tensor<32x32xf32>) -> tensor<16x32xf32> {
  %x = graph.matmul %a, %b : (tensor<16x32xf32>, tensor<32x32xf32>) -> tensor<16x32xf32>
  %y = graph.relu %x : tensor<16x32xf32>
  func.return %y : tensor<16x32xf32>
}"""

CRASH_IR = """
define void @main() {
  store volatile i32 1, ptr null
  ret void
}
"""


@pytest.fixture(scope="module")
def task():
    return extract_tasks(MATMUL)[0]


@pytest.fixture(scope="module")
def executor(tmp_path_factory):
    ex = M.LocalExecutor(tmp_path_factory.mktemp("fast"),
                         M.MeasureConfig(threads=1, min_repeat_ms=2, repeats=2, build_jobs=1))
    yield ex
    ex.close()


def test_build_is_the_compile_pipeline(task):
    """The in-memory build gives exactly the llvm-dialect IR that compile(candidate_text, pipeline=
    CANDIDATE_PIPELINE) gives, for the default and for another assignment."""
    from minimlir.frontend import api
    from minimlir.passes.loop.schedule import lower_scheduled

    for a in (dict(task.defaults), dict(task.defaults, **{"matmul.mr": 2, "matmul.nv": 1})):
        stages: list[tuple[str, str]] = []
        api.compile(M.candidate_text(task, a), pipeline=M.CANDIDATE_PIPELINE, cache=False,
                    print_ir=lambda stage, text: stages.append((stage, text)))
        module, schedule, _ = builder._scheduled(task.to_json(), a)
        lower_scheduled(module, schedule.config().width)
        api.lower(module, builder.REST_PIPELINE)
        assert api.ir_text(module).strip() == stages[-1][1].strip()


def test_a_worker_parses_each_task_once(task, executor):
    d = dict(task.defaults)
    # generic.width: this kernel has no generic part, so it schedules like the default: same code
    rs = executor.measure(task, [d, dict(d, **{"matmul.mr": 4, "matmul.nv": 1}), dict(d, **{"generic.width": 4})])
    assert [r.error for r in rs] == [M.OK, M.OK, M.OK]
    feats = executor.features(task, [dict(d, **{"matmul.kc": 16}), dict(d, **{"matmul.kc": 16})])
    assert feats[0] is not None and feats[0] == feats[1]
    (r,) = executor.measure(task, [dict(d, **{"matmul.kc": 16})])
    assert r.error == M.OK and r.features == feats[0]
    stats = executor.pool().submit(builder.worker_stats).result()
    assert stats["parses"] == 1 and stats["builds"] == 4  # one worker, alive across batches
    assert stats["object_hits"] == 1 and stats["feature_jobs"] == 2
    assert stats["schedule_hits"] == 1  # the scored candidate's build starts from its scheduled nest


def test_a_scored_candidate_is_built_where_it_was_scheduled(task, tmp_path):
    """With two build workers, each scored candidate's build goes to the worker that scheduled it
    (and keeps the nest), as long as that keeps the workers even; the code is the same as a build
    from scratch."""
    d = dict(task.defaults)
    ex = M.LocalExecutor(tmp_path, M.MeasureConfig(threads=1, min_repeat_ms=2, repeats=2, build_jobs=2))
    try:
        cands = [dict(d, **{"matmul.kc": kc}) for kc in (8, 16, 32, 64)]
        ex.features(task, cands)
        assert sorted(ex._placement(task, cands)) == [0, 0, 1, 1]
        builds = ex.build(task, cands)
        hits = [ex.pool(w).submit(builder.worker_stats).result()["schedule_hits"] for w in (0, 1)]
        assert hits == [2, 2]
        fresh = ex.build(task, cands)  # nothing kept now: scheduled again
        assert [b["code_key"] for b in fresh] == [b["code_key"] for b in builds]
        assert [b["object"] for b in fresh] == [b["object"] for b in builds]
        # more candidates scored on one worker than an even share: the rest go to the other one
        ex.scored_on.update({(task.key, M._akey(a)): 0 for a in cands})
        assert sorted(ex._placement(task, cands)) == [0, 0, 1, 1]
    finally:
        ex.close()


def test_candidates_with_measured_code_are_not_proposed(task, executor):
    """The search skips assignments that schedule to a loop nest measured already (or earlier in
    the same pool): the generic.* knobs do nothing to this kernel (no generic part)."""
    d = dict(task.defaults)
    other = dict(d, **{"matmul.mr": 2, "matmul.kc": 16})
    executor.measure(task, [d])
    pool = [dict(d, **{"generic.width": 4}), other, dict(other, **{"generic.parallel": False}), d]
    feats = executor.unique(task, pool, executor.features(task, pool))
    assert [f is not None for f in feats] == [False, True, False, False]


def test_many_candidates_in_one_measuring_process(task, executor):
    """Each loaded candidate owns its target machine (an MCJIT engine frees the one it was made
    with): dropping one candidate's code must not break the next (it used to SIGSEGV)."""
    d = dict(task.defaults)
    started = executor.servers_started
    rs = executor.measure(task, [d, dict(d, **{"matmul.nv": 1}), dict(d, **{"matmul.mr": 2}), d])
    assert [r.error for r in rs] == [M.OK] * 4
    assert executor.servers_started == max(started, 1)


def test_a_crashing_candidate_is_run_error_and_the_process_restarts(task, executor, monkeypatch):
    import llvmlite.binding as llvm

    from minimlir.backend import _target

    d = dict(task.defaults)
    executor.measure(task, [d])  # a live measuring process
    started = executor.servers_started
    _target.init_llvm()
    crash_obj = _target.target_machine(3).emit_object(llvm.parse_assembly(CRASH_IR))
    good = executor.build(task, [d])[0]
    crash = dict(good, object=crash_obj, externals=[])
    with monkeypatch.context() as mp:
        mp.setattr(executor, "build", lambda task, assignments: [crash])
        (r,) = executor.measure(task, [dict(d, **{"matmul.mr": 2})])
    assert r.error == M.RUN_ERROR and "killed by signal" in r.message and r.cost == float("inf")
    (r,) = executor.measure(task, [d])  # the next candidate gets a fresh process
    assert r.error == M.OK and executor.servers_started == started + 1


def test_a_timeout_kills_the_process_and_the_next_run_gets_a_fresh_one(task, executor):
    d = dict(task.defaults)
    executor.measure(task, [d])
    started = executor.servers_started
    old = executor.config
    executor.config = dataclasses.replace(old, run_timeout=0.05, min_repeat_ms=5000)
    try:
        (r,) = executor.measure(task, [d])
    finally:
        executor.config = old
    assert r.error == M.RUN_TIMEOUT
    (r,) = executor.measure(task, [d])
    assert r.error == M.OK and executor.servers_started == started + 1


def test_a_dead_build_worker_gets_a_fresh_pool(task, executor):
    import time

    d = dict(task.defaults)
    executor.measure(task, [d])
    for p in list(executor.pool()._processes.values()):
        p.kill()
    time.sleep(1.0)  # the pool notices its dead worker
    feats = executor.features(task, [dict(d, **{"matmul.kc": 32})])
    (r,) = executor.measure(task, [dict(d, **{"matmul.kc": 32})])
    assert r.error == M.OK or (r.error == M.BUILD_ERROR and "build worker failed" in r.message)
    (r,) = executor.measure(task, [dict(d, **{"matmul.kc": 64})])
    assert r.error == M.OK and feats is not None


def test_timed_calls_go_straight_to_the_native_code(task, executor, monkeypatch):
    """The timed loops call the candidate through `bound` (arguments checked once): through the
    checking call each repeat also timed ~40 us of Python per call, more than a small kernel runs.
    Only the warm-up takes the ordinary call (it gives the reference outputs)."""
    from minimlir.runtime._native import NativeFunction
    from minimlir.tuning import runner

    build = executor.build(task, [dict(task.defaults)])[0]
    req = executor.request(task, build, save_outputs=True)
    calls = []
    orig = NativeFunction.__call__
    monkeypatch.setattr(NativeFunction, "__call__", lambda self, *a, **k: calls.append(1) or orig(self, *a, **k))
    out = runner.time_candidate(dict(req, repeats=3, min_repeat_ms=1))
    assert len(calls) == req["warmup"] and out["number"] >= 1 and len(out["times"]) == 3
    assert all(t > 0 for t in out["times"]) and len(out["outputs"]) == task.num_outputs
