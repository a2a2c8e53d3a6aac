"""Measurement (tuning/measure.py): parallel builds, isolated timed runs, every error code."""

from __future__ import annotations

import dataclasses

import pytest

from minimlir.tuning import measure as M
from minimlir.tuning import runner
from minimlir.tuning.task import extract_tasks

MATMUL = """
func.func @main(%a: tensor<16x32xf32>, %b: tensor<32x32xf32>) -> tensor<16x32xf32> {
  %x = graph.matmul %a, %b : (tensor<16x32xf32>, tensor<32x32xf32>) -> tensor<16x32xf32>
  %y = graph.relu %x : tensor<16x32xf32>
  func.return %y : tensor<16x32xf32>
}"""


@pytest.fixture(scope="module")
def task():
    return extract_tasks(MATMUL)[0]


@pytest.fixture(scope="module")
def executor(tmp_path_factory):
    ex = M.LocalExecutor(tmp_path_factory.mktemp("measure"),
                         M.MeasureConfig(threads=1, min_repeat_ms=5, repeats=3, build_jobs=2))
    yield ex
    ex.close()


@pytest.fixture
def pids(monkeypatch):
    """The measuring process (pid) of each run, in order."""
    seen: list[int] = []
    run = M.MeasureServer.run

    def spy(self, req):
        seen.append(self.proc.pid)
        return run(self, req)

    monkeypatch.setattr(M.MeasureServer, "run", spy)
    return seen


def test_default_variant_and_broken_candidates(task, executor):
    d = dict(task.defaults)
    rs = executor.measure(task, [d, dict(d, **{"matmul.mr": 4, "matmul.nv": 1}), dict(d, **{"matmul.mr": "x"})])
    assert [r.error for r in rs] == [M.OK, M.OK, M.BUILD_ERROR]
    assert len(rs[0].times) == 3 and all(t > 0 for t in rs[0].times)
    assert rs[0].features and len(rs[0].features) == len(rs[1].features)
    assert "TypeError" in rs[2].message and rs[2].cost == float("inf")
    assert task.key in executor.references  # candidate 0's outputs: the reference


def test_remeasure_runs_each_round_in_a_fresh_process(task, executor, pids):
    """A process's address-space layout is one draw for all its calls, and it made a candidate
    faster than the default in one process and 10% slower in others: the confirmation's
    rounds each run in a new measuring process, times kept per round."""
    d = dict(task.defaults)
    times = executor.remeasure(task, [d, dict(d, **{"matmul.mr": 4, "matmul.nv": 1}),
                                      dict(d, **{"matmul.mr": "x"})], rounds=3)
    assert [len(t) for t in times] == [3, 3, 0]  # per round; nothing for the one that does not build
    assert all(len(r) == 3 and min(r) > 0 for t in times[:2] for r in t)  # the repeats of each round
    assert len(pids) == 6 and len(set(pids)) == 3  # both candidates in each round's own process
    assert pids[0] == pids[1] and pids[2] == pids[3] and pids[4] == pids[5]


def test_the_search_moves_to_a_fresh_process_every_few_runs(task, tmp_path, monkeypatch, pids):
    """A search measured in one process would rank candidates by that process's address-space
    layout: the measuring process is replaced every FRESH_EVERY runs."""
    monkeypatch.setattr(runner, "FRESH_EVERY", 2)
    ex = M.LocalExecutor(tmp_path, M.MeasureConfig(threads=1, min_repeat_ms=2, repeats=2, build_jobs=1))
    try:
        d = dict(task.defaults)
        rs = ex.measure(task, [d] + [dict(d, **{"matmul.mr": m}) for m in (1, 2, 4, 8)])
    finally:
        ex.close()
    assert all(r.ok for r in rs)
    assert pids[0] == pids[1] != pids[2] == pids[3] != pids[4] and ex.servers_started == 3


def test_wrong_result_is_detected(task, executor):
    d = dict(task.defaults)
    executor.measure(task, [d])
    ref = executor.references[task.key]
    executor.references[task.key] = [r + 1.0 for r in ref]
    try:
        (r,) = executor.measure(task, [dict(d, **{"matmul.kc": 16})])
    finally:
        executor.references[task.key] = ref
    assert r.error == M.WRONG_RESULT and "difference" in r.message


def test_run_error_and_timeout(task, executor):
    bad = dataclasses.replace(task, shapes=[[3, 3], [32, 32], [16, 32]])  # wrong input shape
    (r,) = executor.measure(bad, [dict(task.defaults)])
    assert r.error == M.RUN_ERROR and r.message
    old = executor.config
    executor.config = dataclasses.replace(old, run_timeout=0.05, min_repeat_ms=5000)
    try:
        (r,) = executor.measure(task, [dict(task.defaults)])
    finally:
        executor.config = old
    assert r.error == M.RUN_TIMEOUT


def test_build_timeout(task, tmp_path):
    ex = M.LocalExecutor(tmp_path, M.MeasureConfig(build_timeout=0.01, build_jobs=1))
    try:
        (r,) = ex.measure(task, [dict(task.defaults, **{"matmul.kc": 32})])
    finally:
        ex.close()
    assert r.error == M.BUILD_TIMEOUT


def test_candidate_text_carries_the_assignment(task):
    text = M.candidate_text(task, {"matmul.mr": 2})
    assert 'loop.schedule_knobs = "{\\"matmul.mr\\": 2}"' in text and "func.func @main(" in text


def test_candidates_run_the_compile_pipelines_passes():
    """A candidate is lowered as the model's kernels are: every pass of compile-per-function but the
    few CANDIDATE_SKIPS names (a hand-kept list once missed convert-math-to-polynomials)."""
    from minimlir.compiler.pipelines import expand

    suffix = expand("compile-per-function").split(",")
    assert [p for p in suffix if p not in M.CANDIDATE_SKIPS] == M.CANDIDATE_PIPELINE.split(",")
    assert set(M.CANDIDATE_SKIPS) <= set(suffix)


def test_an_exp_kernel_is_measured_with_the_polynomial_exp():
    """softmax's exp as the model runs it (convert-math-to-polynomials), not as a call of libm's
    expf per element: the measured time was 3.7x the kernel's in the model."""
    from minimlir.backend import jit
    from minimlir.frontend.api import lower, parse_mlir

    text = """
func.func @main(%x: tensor<4x128xf32>) -> tensor<4x128xf32> {
  %y = graph.softmax %x axis 1 : tensor<4x128xf32>
  func.return %y : tensor<4x128xf32>
}"""
    (t,) = extract_tasks(text)
    m = parse_mlir(M.candidate_text(t, dict(t.defaults)))
    lower(m, M.CANDIDATE_PIPELINE)
    ir = jit.to_llvm_ir(m)
    assert "llvm.fmuladd" in ir and "llvm.exp." not in ir and "expf" not in ir  # (LLVM lowers llvm.exp to expf calls)


def test_cold_weights_are_flushed_before_every_timed_call(task, monkeypatch):
    """With cold_args the measuring process evicts those inputs before each timed call (and the
    results are those of a warm run)."""
    import numpy as np

    from minimlir.tuning import builder, runner

    b = builder.build(task.to_json(), dict(task.defaults))
    req = {"task": {"shapes": task.shapes, "dtypes": task.dtypes, "num_outputs": task.num_outputs},
           "object": b["object"], "metadata": b["metadata"], "externals": b.get("externals", []),
           "threads": 1, "seed": 0, "warmup": 1, "repeats": 3, "min_repeat_ms": 2, "save_outputs": True}
    warm = runner.time_candidate(req)
    flushed = []
    real = runner.flusher

    def spy(arrays):
        flushed.append([a.shape for a in arrays])
        f = real(arrays)

        def counted():
            flushed.append(1)
            f()
        return counted

    monkeypatch.setattr(runner, "flusher", spy)
    cold = runner.time_candidate(dict(req, cold_args=[1]))
    assert flushed[0] == [(32, 32)]  # the weight, not the activation or the output
    calls = flushed.count(1)
    assert calls >= cold["number"] * 3 and all(t > 0 for t in cold["times"])
    assert all(np.array_equal(w, c) for w, c in zip(warm["outputs"], cold["outputs"]))


def test_flushing_keeps_the_data():
    import numpy as np

    from minimlir.tuning.runner import flusher

    base = np.arange(1000, dtype=np.float32)
    parts = [base, base[3:4], base[1:], np.zeros(0, np.float32), np.arange(7, dtype=np.int8)]
    before = [p.copy() for p in parts]
    flusher(parts)()
    assert all(np.array_equal(p, q) for p, q in zip(parts, before))


def test_flushing_without_clflush_evicts_by_writing(monkeypatch):
    """Off x86-64 the flush writes a buffer twice the last-level cache (the data stays intact)."""
    import numpy as np

    from minimlir.tuning import runner
    from minimlir.tuning import task as T

    monkeypatch.setattr(runner, "_clflush", lambda: None)
    monkeypatch.setattr(T, "last_level_cache_bytes", lambda: 1 << 16)
    a = np.arange(100, dtype=np.float32)
    f = runner.flusher([a])
    evict = next(c.cell_contents for c in f.__closure__ if isinstance(c.cell_contents, np.ndarray))
    assert evict.nbytes == 2 << 16
    f()
    f()
    assert np.all(evict == 2.0) and np.array_equal(a, np.arange(100, dtype=np.float32))
