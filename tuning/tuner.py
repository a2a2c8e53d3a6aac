"""The tuning loop: tasks -> task scheduler -> per-task search -> measure -> records -> cost model.

    from minimlir.tuning.tuner import tune, TuneOptions
    result = tune("model.onnx", "tune.jsonl", TuneOptions(trials=64, seed=0))
    result.tasks[0].speedup, result.report_paths

One run: extract the tasks, write a run-start marker, then until the budget (`trials`, total over
all tasks, and/or `budget_s` seconds of wall time) is spent: the scheduler picks a task, its search
proposes a batch, the executor measures it, the records are appended (one flushed write per batch),
the cost model gets the samples (one model across tasks; refit when grown). Then the confirmation
(`confirm`: each task's best few candidates re-timed side by side with the default; the default wins
unless beaten there; with a time budget the search leaves CONFIRM_SHARE of it for this), a
run-finish marker and the report (tuning/report.py). `resume=True` continues the last interrupted run of the
same model in the database: its records are replayed into the searches and the cost model, and the
trials and time already spent count against the budget.

For pass authors (`tune_kernel`, `records_of`, `replay`): tune one task, read its records, apply a
record's knobs to a kernel in IR.
"""

from __future__ import annotations

import hashlib
import math
import multiprocessing
import os
import secrets
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from minimlir.tuning.cost_model import Trainer
from minimlir.tuning.database import Database, compiler_version, make_record
from minimlir.tuning.measure import LocalExecutor, MeasureConfig
from minimlir.tuning.search import TaskScheduler, TaskSearch, _assignment, _cost, akey
from minimlir.tuning.task import Task, extract_tasks


class TuneError(Exception):
    """Bad tuning options or input (a clear message; mini-tune exits 1)."""


@dataclass
class TuneOptions:
    trials: int | None = None        # total measured candidates over all tasks
    budget_s: float | None = None    # wall-clock seconds
    threads: int = 1                 # pinned thread count of every measured run
    seed: int = 0
    batch_size: int = 8
    resume: bool = False
    executor: str = "local"          # or "ray"
    address: str | None = None       # Ray cluster address
    dims: dict[str, int] = field(default_factory=dict)
    cost_model: str = "lightgbm"
    min_samples: int = 32
    epsilon: float = 0.2
    min_repeat_ms: float = 40.0
    repeats: int = 5
    build_timeout: float = 120.0
    run_timeout: float = 30.0
    build_jobs: int = 0
    workdir: str | None = None
    report_dir: str | None = None    # default: next to the database, DB.report/
    progress: bool = True
    task_filter: str | None = None   # only tasks whose name contains this
    max_tasks: int | None = None
    confirm_top: int = 3             # candidates re-measured against the default at the end (0: off)
    confirm_rounds: int = 3
    algorithms: bool = True          # first measure each conv's algorithm (tuning/algorithms.py)
    cache_flush: str = "auto"        # auto | on | off: time kernels with their weights flushed (tuning/task.py)


@dataclass
class TuneResult:
    run: str
    tasks: list[TaskSearch]
    trials: int
    seconds: float
    spearman: list[dict]
    report_paths: dict[str, str] = field(default_factory=dict)
    finished: bool = True
    algorithms: list[dict] = field(default_factory=list)  # this run's conv algorithm records
    timings: dict[str, float] = field(default_factory=dict)  # this session: wall seconds of setup, loop, report;
    # timed_cpu: CPU seconds of the measuring processes inside timed loops; timed: wall seconds in them
    # (the measured run time, the confirmation's included)

    def model_latency(self, which: str = "best") -> float:
        return sum(s.task.weight * (s.best_cost if which == "best" else s.default_cost) for s in self.tasks)


def model_hash(model: Any) -> str:
    if isinstance(model, (str, os.PathLike)) and Path(model).is_file():
        return hashlib.sha256(Path(model).read_bytes()).hexdigest()[:20]
    if hasattr(model, "SerializeToString"):
        return hashlib.sha256(model.SerializeToString()).hexdigest()[:20]
    return hashlib.sha256(str(model).encode()).hexdigest()[:20]


def make_executor(opts: TuneOptions, workdir: str):
    cfg = MeasureConfig(threads=opts.threads, repeats=opts.repeats, min_repeat_ms=opts.min_repeat_ms,
                        build_timeout=opts.build_timeout, run_timeout=opts.run_timeout,
                        build_jobs=opts.build_jobs, seed=opts.seed)
    if opts.executor == "local":
        return LocalExecutor(workdir, cfg)
    if opts.executor == "ray":
        from minimlir.tuning.ray_executor import RayExecutor

        return RayExecutor(workdir, cfg, address=opts.address)
    raise TuneError(f"unknown executor '{opts.executor}' (local, ray)")


MAIN_GUARD = ("the tuner's worker processes are spawned and import the calling script first: guard the "
              "script's tune() call with `if __name__ == \"__main__\":`")


def check_spawn(timeout: float = 300.0) -> None:
    """The tuner's builds, runs and conv-algorithm measurements are spawned processes, and a spawned
    process imports the caller's main module first: a script that calls tune() without an
    `if __name__ == "__main__":` guard would tune again in each of them (where it stops with
    TuneError) and every build and run would fail. One spawned no-op tells it before anything is
    measured (a fraction of a second)."""
    from minimlir.tuning import _spawned

    p = multiprocessing.get_context("spawn").Process(target=_spawned, daemon=True)
    p.start()
    p.join(timeout)
    if p.exitcode is None:
        p.kill()
        p.join(5)
        raise TuneError(f"a spawned worker process did not start within {timeout:g} s (importing the main module)")
    if p.exitcode != 0:
        raise TuneError(f"a spawned worker process failed to start (exit code {p.exitcode}); {MAIN_GUARD}")


def tune(model: Any, db_path: str | os.PathLike, opts: TuneOptions | None = None,
         tasks: list[Task] | None = None) -> TuneResult:
    if getattr(multiprocessing.current_process(), "_inheriting", False):
        raise TuneError(f"tune() called while a spawned process imports the main module; {MAIN_GUARD}")
    opts = opts or TuneOptions()
    if opts.trials is None and opts.budget_s is None:
        raise TuneError("give a budget: trials and/or seconds")
    if (opts.trials is not None and opts.trials < 1) or (opts.budget_s is not None and opts.budget_s <= 0):
        raise TuneError("the budget must be positive")
    if opts.cache_flush not in ("auto", "on", "off"):
        raise TuneError(f"cache_flush must be auto, on or off, not {opts.cache_flush!r}")
    t_start = time.time()
    check_spawn()
    db = Database(db_path)
    mh = model_hash(model)
    prev = db.interrupted_run(mh) if opts.resume else None
    if opts.resume and prev is None:
        last = db.last_run(mh)
        raise TuneError(f"{db_path}: nothing to resume: the last run of this model finished"
                        if last is not None else f"{db_path}: no run of this model to resume")
    run = prev["run"] if prev else secrets.token_hex(6)
    db.append([{"v": 1, "kind": "run", "status": "started", "run": run, "model_hash": mh,
                "model": str(model) if isinstance(model, (str, os.PathLike)) else "<model>",
                "time": _now(), "options": _opts_json(opts)}]
              if not prev else [{"v": 1, "kind": "run", "status": "resumed", "run": run, "model_hash": mh,
                                 "time": _now()}])
    spent_trials, spent_s = 0, 0.0
    if prev:
        spent_s = float(prev.get("spent_s", 0.0)) + sum(
            float(r.get("seconds", 0.0)) for r in db.runs() if r.get("run") == run and r.get("status") == "progress")
    algos: list[dict] = []
    before_winograd = None
    if tasks is None:
        t_alg = time.time()
        if opts.algorithms:
            from minimlir.tuning.algorithms import stamp
            from minimlir.tuning.measure import cpu_fingerprint

            cpu0 = cpu_fingerprint()
            algos, n = _tune_algorithms(model, mh, db, opts, run, cpu0, spent_s, t_start)
            spent_trials += n
            before_winograd = lambda m: stamp(m, db, cpu0)  # noqa: E731
        tasks = extract_tasks(model, dims=opts.dims, before_winograd=before_winograd, cache_flush=opts.cache_flush)
        if not prev:
            db.append([{"v": 1, "kind": "run", "status": "progress", "run": run, "model_hash": mh,
                        "seconds": time.time() - t_alg, "time": _now(), "tasks": [t.key for t in tasks]}])
    if opts.task_filter:
        tasks = [t for t in tasks if opts.task_filter in t.name]
    if opts.max_tasks:
        tasks = tasks[:opts.max_tasks]
    if not tasks:
        db.append([{"v": 1, "kind": "run", "status": "finished", "run": run, "model_hash": mh, "time": _now(),
                    "trials": spent_trials, "error": "no kernel to tune"}])
        raise TuneError("no kernel to tune")
    rng = np.random.default_rng(opts.seed)
    trainer = Trainer(opts.cost_model, min_samples=opts.min_samples, seed=opts.seed)
    searches = [TaskSearch(t, trainer, np.random.default_rng([opts.seed, i]), epsilon=opts.epsilon)
                for i, t in enumerate(tasks)]
    by_key = {s.task.key: s for s in searches}
    if prev:
        for r in db.measurements():
            if r.get("run") == run and r["task"] in by_key:
                by_key[r["task"]].update([r])
                trainer.add(r.get("features"), _rec_cost(r), r["task"])
                spent_trials += 1
                by_key[r["task"]].global_trials.append(spent_trials)
        trainer.maybe_fit()
    workdir = opts.workdir or tempfile.mkdtemp(prefix="mini-tune-")
    executor = make_executor(opts, workdir)
    cpu = executor.fingerprint
    scheduler = TaskScheduler(searches, rng)
    progress = _progress(opts, searches)
    trials = spent_trials
    t0 = t_start  # the budget counts the task extraction too
    finished = False
    t_loop = time.time()
    # with a time budget the search ends early enough for the confirmation
    search_s = None if opts.budget_s is None else opts.budget_s * (1 - CONFIRM_SHARE * (opts.confirm_top > 0))
    try:
        if progress:
            progress.start()
        while True:
            elapsed = spent_s + (time.time() - t0)
            if opts.trials is not None and trials >= opts.trials:
                break
            if search_s is not None and elapsed >= search_s:
                break
            s = scheduler.next()
            if s is None:
                break
            # the warm-up round is short (the default and one more), so every kernel is measured early
            n = opts.batch_size if s.trials else min(opts.batch_size, 2)
            n = n if opts.trials is None else min(n, opts.trials - trials)
            if search_s is not None and trials > spent_trials:  # do not start what cannot finish
                per_trial = (time.time() - t_loop) / max(1, trials - spent_trials)
                n = max(1, min(n, int((search_s - elapsed) / max(per_trial, 1e-3))))
            batch = s.propose(n, features=lambda pool, s=s: _scored(executor, s.task, pool))
            if not batch:
                continue
            if s.default_cost == math.inf and not s.measured and akey(batch[0]) != akey(s.space.default()):
                batch.insert(0, s.space.default())
            t_batch = time.time()
            results = executor.measure(s.task, batch)
            default_key = akey(s.space.default())
            recs = [make_record(s.task, r, getattr(r, "cpu", None) or cpu, run, akey(r.assignment) == default_key)
                    for r in results]
            db.append(recs + [{"v": 1, "kind": "run", "status": "progress", "run": run, "model_hash": mh,
                               "seconds": time.time() - t_batch, "time": _now()}])
            s.update(results)
            for r in results:
                trainer.add(r.features, r.cost, s.task.key)
            trainer.maybe_fit()
            s.global_trials.extend(range(trials + 1, trials + len(results) + 1))
            trials += len(results)
            if progress:
                progress.update(trials, opts, spent_s + time.time() - t0)
        if opts.confirm_top > 0:
            t_conf = time.time()
            db.append(confirm(executor, searches, cpu, run, opts.confirm_top, opts.confirm_rounds))
            db.append([{"v": 1, "kind": "run", "status": "progress", "run": run, "model_hash": mh,
                        "seconds": time.time() - t_conf, "time": _now()}])
        finished = True
    except KeyboardInterrupt:
        finished = False
    finally:
        if progress:
            progress.stop()
        executor.close(wait=finished)  # after Ctrl-C: do not wait for the builds in flight
    t_end_loop = time.time()
    seconds = spent_s + time.time() - t0
    if finished:
        db.append([{"v": 1, "kind": "run", "status": "finished", "run": run, "model_hash": mh,
                    "time": _now(), "trials": trials, "seconds": seconds}])
    result = TuneResult(run, searches, trials, seconds, list(trainer.history), finished=finished,
                        algorithms=algos)
    from minimlir.tuning.report import write_report

    report_dir = opts.report_dir or str(Path(db_path).with_suffix("")) + ".report"
    result.report_paths = write_report(result, report_dir, time.time() - t_start)
    result.timings = {"setup": t_loop - t_start, "loop": t_end_loop - t_loop, "report": time.time() - t_end_loop,
                      "timed_cpu": float(getattr(executor, "timed_cpu", 0.0)),
                      "timed": float(getattr(executor, "timed_seconds", 0.0))}
    if not finished:
        raise KeyboardInterrupt
    return result


ALGORITHM_SHARE = 0.3
"""At most this share of the budget (trials and seconds) goes to measuring conv algorithms."""


def _tune_algorithms(model: Any, mh: str, db: Database, opts: TuneOptions, run: str, cpu: dict, spent_s: float,
                     t_start: float) -> tuple[list[dict], int]:
    """Measure the algorithms of each conv of `model` (tuning/algorithms.py), heaviest first, within
    ALGORITHM_SHARE of the budget; a conv this run measured already (a resumed run) is not measured
    again. Returns this run's algorithm records and the trials they count for (one per algorithm)."""
    from minimlir.tuning.algorithms import extract_convs, make_record, measure_conv
    from minimlir.tuning.database import best_times

    convs = extract_convs(model, cache_flush=opts.cache_flush)
    if not convs:
        return [], 0
    done = {r["conv"]: r for r in db.algorithms() if r.get("run") == run}
    out, trials = [], 0
    max_trials = None if opts.trials is None else int(opts.trials * ALGORITHM_SHARE)
    max_s = None if opts.budget_s is None else opts.budget_s * ALGORITHM_SHARE
    for c in convs:
        if c.key in done:
            out.append(done[c.key])
            trials += len(c.candidates)
            continue
        if max_trials is not None and trials + len(c.candidates) > max_trials:
            break
        if max_s is not None and spent_s + time.time() - t_start >= max_s:
            break
        res = measure_conv(c, threads=opts.threads, seed=opts.seed, min_repeat_ms=opts.min_repeat_ms,
                           rounds=opts.repeats, timeout=opts.build_timeout + opts.run_timeout * len(c.candidates))
        rec = make_record(c, res, cpu, run, opts.threads)
        db.append([rec, {"v": 1, "kind": "run", "status": "progress", "run": run, "model_hash": mh,
                         "seconds": res.seconds, "time": _now()}])
        out.append(rec)
        trials += len(c.candidates)
        if opts.progress:
            import sys

            shown = ", ".join(f"{a} {t * 1e3:.3f} ms" for a, t in best_times(res.times).items())
            print(f"algorithm: {c}: {shown or 'no result'} -> {res.choice}", file=sys.stderr)
    return out, trials


CONFIRM_SHARE = 0.1
"""With a time budget, the search stops at this share before its end, for the confirmation."""
CONFIRM_TIE = 0.02
"""A confirmed candidate must be more than this share faster than the default side by side (as a
conv's algorithm must: tuning/algorithms.py TIE); ResNet-50's F(2x2) product with cold weights
varies by 2-5% between measurements of one schedule."""


def confirm(executor, searches: list[TaskSearch], cpu: dict, run: str, top: int = 3,
            rounds: int = 3) -> list[dict]:
    """The confirmation that ends a run: the search's best is the minimum of a few repeats, and over
    hundreds of candidates the fastest of them is partly the luckiest (a quiet moment of a shared
    machine, or a measuring process whose address-space layout happens to suit it). So
    per task whose best is not the default, its `top` best candidates are timed again with the
    default, interleaved over `rounds` rounds, each in a fresh measuring process
    (executor.remeasure). A candidate's score is the median over the rounds of its fastest time in
    the round over the default's in the same round; the best of them wins only where it is faster
    than the default in every round and by more than CONFIRM_TIE in the median; otherwise the
    default does (a win inside the noise is a coin toss against a regression, and a candidate that
    is fast in some processes' address-space layouts and slow in others, as a register tile that
    spills can be, is a lottery in the deployed model). A candidate that failed in a round is out.
    The confirmed costs: the default's median round, and that times the winner's score. One
    `confirm` record per task, which Database.best prefers over the measurements; the search's best
    and default costs become the confirmed ones (the report's speedups)."""
    out = []
    for s in searches:
        if s.best is None or not math.isfinite(s.default_cost) or akey(s.best) == akey(s.space.default()):
            continue
        d = s.space.default()
        ranked = sorted((r for r in s.measured.values() if _cost(r) < math.inf
                         and akey(_assignment(r)) != akey(d)), key=_cost)
        cands = [dict(_assignment(r)) for r in ranked[:top]]
        times = executor.remeasure(s.task, [d] + cands, rounds)
        if not times[0]:
            continue  # the default failed now: nothing to compare with, the measurements stand
        # per round, each candidate's fastest call over the default's (the rounds pair them: a slow
        # spell of the machine slows all of that round's). A candidate must be faster in every
        # round (every fresh process: one that is fast in some layouts and slow in others is a
        # lottery in the deployed model) and, by the median over the rounds, by more than the tie
        best = {i: [min(r) for r in t] for i, t in enumerate(times) if len(t) == len(times[0])}
        ratios = {i: [c / d for c, d in zip(m, best[0])] for i, m in best.items()}
        ratio = {i: statistics.median(r) for i, r in ratios.items()}
        ok = [i for i in ratio if i and max(ratios[i]) < 1.0 and ratio[i] * (1 + CONFIRM_TIE) < 1.0]
        wi = min(ok, key=ratio.__getitem__) if ok else 0  # the default keeps its ties
        dcost = statistics.median(best[0])
        wcost = dcost * ratio[wi]
        knobs = d if wi == 0 else cands[wi - 1]
        s.best, s.best_cost, s.default_cost, s.confirmed = dict(knobs), wcost, dcost, True
        out.append({"v": 1, "kind": "confirm", "task": s.task.key, "task_name": s.task.name,
                    "rule": s.task.rule, "cpu": dict(cpu), "knobs": dict(knobs),
                    "times": [x for r in times[wi] for x in r], "default_times": [x for r in times[0] for x in r],
                    "round_minima": [best[0], best[wi]],
                    "error": "OK", "default": wi == 0, "candidates": len(cands), "rounds": rounds,
                    "run": run, "time": _now(), "compiler": compiler_version(), "flops": s.task.flops,
                    "weight": s.task.weight})
    return out


def _scored(executor, task: Task, pool: list[dict]) -> list:
    """Features of the candidates in `pool`; None (not a candidate) for code already measured."""
    feats = executor.features(task, pool)
    unique = getattr(executor, "unique", None)
    return unique(task, pool, feats) if unique is not None else feats


def _rec_cost(r: dict) -> float:
    from minimlir.tuning.database import cost

    return cost(r)


def _now() -> str:
    from minimlir.tuning.database import now

    return now()


def _opts_json(opts: TuneOptions) -> dict:
    from dataclasses import asdict

    return {k: v for k, v in asdict(opts).items() if k not in ("progress",)}


def _progress(opts: TuneOptions, searches):
    if not opts.progress:
        return None
    from minimlir.tuning.report import ProgressTable

    return ProgressTable(searches)


# ---------------------------------------------------------------- the API for pass authors


def tune_kernel(task: Task, trials: int, *, db_path: str | os.PathLike | None = None,
                opts: TuneOptions | None = None) -> TaskSearch:
    """Tune one task for `trials` measurements (records appended to `db_path` if given)."""
    opts = opts or TuneOptions(trials=trials, progress=False)
    opts.trials, opts.progress = trials, False
    with tempfile.TemporaryDirectory() as d:
        db = db_path or os.path.join(d, "tune.jsonl")
        res = tune(f"<task {task.key}>", db, opts, tasks=[task])
    return res.tasks[0]


def records_of(db_path: str | os.PathLike, task: Task | str) -> list[dict]:
    """Every measurement record of a task (or task key), in file order."""
    key = task.key if isinstance(task, Task) else task
    return Database(db_path).measurements(key)


def replay(record: dict, kernel) -> None:
    """Attach a record's knobs to `kernel` (a loop.kernel func.func): the next loop-schedule uses them.
    Raises ValueError when the record is for another kernel or its knobs are no longer legal."""
    from minimlir.passes.loop.schedule.default.knobs import check_assignment, set_assignment
    from minimlir.tuning.task import structural_key

    if structural_key(kernel) != record["task"]:
        raise ValueError(f"the record is for task {record['task']}, not this kernel ({structural_key(kernel)})")
    why = check_assignment(record["knobs"])
    if why is not None:
        raise ValueError(f"the record no longer applies: {why}")
    set_assignment(kernel, record["knobs"])
