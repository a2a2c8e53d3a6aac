"""Measurement: build candidates in parallel, run them one at a time in isolated child processes.

    ex = LocalExecutor(workdir, threads=2)
    results = ex.measure(task, [assignment0, assignment1, ...])     # MeasureResult per assignment
    results[0].error, results[0].times, results[0].features

A candidate is the task's kernel with a knob assignment (`loop.schedule_knobs`) inside a small
mem-level module whose public `main` calls it on caller buffers. Builds run in a process pool
(`build_jobs` spawned workers, alive for the executor's life): each worker parses a task once and
compiles candidates from clones of it through the per-function part of the `compile` pipeline,
computes the candidate's features on its scheduled loop nest, and returns the object code
(tuning/builder.py). Runs go one at a time through one measuring process (spawned, so it never
inherits the tuner's OpenMP or threads; tuning/runner.py): it loads the object (no pass runs, no
parse), pins the thread count, fills the inputs from a seed, runs a warm-up call, picks a number of
calls so that one repeat lasts at least `min_repeat_ms`, and times `repeats` repeats. A crash or a
timeout ends that process and the next run starts a fresh one; after a WRONG_RESULT it is replaced
too (the candidate wrote where it should not). The first run of each candidate is checked against
the default schedule's output (candidate 0, same seed, same inputs). Failures are results, not
exceptions:

    BUILD_ERROR    the candidate did not compile          BUILD_TIMEOUT  not within build_timeout
    RUN_ERROR      the run raised or died (a signal)    RUN_TIMEOUT    not within run_timeout
    WRONG_RESULT   its output differs from the default schedule's
"""

from __future__ import annotations

import multiprocessing
import os
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from minimlir.tuning.runner import MeasureServer, _ignore_sigint
from minimlir.tuning.task import Task

OK = "OK"
BUILD_ERROR = "BUILD_ERROR"
BUILD_TIMEOUT = "BUILD_TIMEOUT"
RUN_ERROR = "RUN_ERROR"
RUN_TIMEOUT = "RUN_TIMEOUT"
WRONG_RESULT = "WRONG_RESULT"
ERRORS = (BUILD_ERROR, BUILD_TIMEOUT, RUN_ERROR, RUN_TIMEOUT, WRONG_RESULT)

CANDIDATE_SKIPS = {
    "graph-bufferize": "the candidate module is at the mem level already",
    "mem-concat-in-place": "the candidate's main only calls the kernel: no concat to place",
    "mem-reuse-inputs": "the candidate's output must not take an input's buffer: the inputs are reused by every call",
}
"""The passes of `compile-per-function` a candidate skips, and why (tests/unit/tuning checks that
every other pass of it runs on candidates)."""


def _candidate_pipeline() -> str:
    from minimlir.compiler.pipelines import expand

    return ",".join(p for p in expand("compile-per-function").split(",") if p not in CANDIDATE_SKIPS)


CANDIDATE_PIPELINE = _candidate_pipeline()
"""The per-function part of `compile` (frontend/_split_lower.py SUFFIX) minus CANDIDATE_SKIPS, derived
from it so a kernel is measured as the model compiles it (a hand-kept copy once missed
convert-math-to-polynomials: softmax's exp was measured as libm calls, 3.7x slower than in the model)."""


@dataclass
class MeasureConfig:
    threads: int = 1
    warmup: int = 1
    repeats: int = 5
    min_repeat_ms: float = 40.0
    build_timeout: float = 120.0
    run_timeout: float = 30.0
    build_jobs: int = 0  # 0: one per core
    seed: int = 0
    rtol: float = 1e-3
    atol: float = 1e-4


@dataclass
class MeasureResult:
    assignment: dict[str, Any]
    error: str = OK
    times: list[float] = field(default_factory=list)  # seconds per call, one per repeat
    number: int = 0  # calls per repeat
    message: str = ""
    build_seconds: float = 0.0
    run_seconds: float = 0.0
    features: list[float] | None = None
    node: str = ""
    cpu: dict[str, Any] | None = None  # the measuring node's fingerprint (set by the Ray executor)

    @property
    def ok(self) -> bool:
        return self.error == OK

    @property
    def cost(self) -> float:
        """Seconds per call: the fastest repeat (each one averages >= min_repeat_ms of calls; the minimum
        is the estimate least disturbed by other processes). inf for a failed candidate."""
        return float(min(self.times)) if self.ok and self.times else float("inf")


def candidate_text(task: Task, assignment: dict[str, Any] | None) -> str:
    """The task's kernel (with `assignment`) and a public `main` calling it on caller buffers."""
    import json as _json

    from minimlir.passes.loop.schedule.default.knobs import KNOBS_ATTR

    kt = task.kernel_text
    if assignment is not None:
        attr = _json.dumps(_json.dumps(dict(assignment), sort_keys=True))
        kt = kt.replace("attributes {loop.kernel", "attributes {" + KNOBS_ATTR + " = " + attr + ", loop.kernel", 1)
    head = kt[kt.index("@") + 1:]
    name = head[:head.index("(")]
    sig = head[head.index("(") + 1:]
    types = _arg_types(sig)
    ins = ", ".join(f"%a{i}: {t}" for i, t in enumerate(types))
    args = ", ".join(f"%a{i}" for i in range(len(types)))
    return ("builtin.module {\n" + kt + f"func.func @main({ins}) {{\n"
            f"  func.call @{name}({args}) : ({', '.join(types)}) -> ()\n  func.return\n}}\n}}\n")


def _arg_types(sig: str) -> list[str]:
    """The argument types of a printed `func.func @k(%0: T, %1: U) ...` signature."""
    depth, cur, out = 0, "", []
    for ch in sig:
        if ch in "<([" :
            depth += 1
        elif ch in ">)]":
            if depth == 0:
                out.append(cur)
                break
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
            continue
        cur += ch
    return [c.split(":", 1)[1].strip() for c in out if ":" in c]


# ---------------------------------------------------------------- builds (in pool workers: tuning/builder.py)


def build_candidate(task_json: dict, assignment: dict | None) -> dict:
    """In a build worker: the candidate's object code, runtime metadata and features (or BUILD_ERROR)."""
    from minimlir.tuning import builder

    return builder.build(task_json, assignment)


def _akey(a: dict) -> str:
    import json

    return json.dumps(a, sort_keys=True)


def features_of(task: Task, assignment: dict) -> list[float]:
    """The candidate's features without building it (schedule only): for scoring candidates."""
    from minimlir.passes.loop.schedule.default import ScheduleConfig, schedule_module
    from minimlir.tuning.features import kernel_features
    from minimlir.tuning.task import kernel_module, kernels_of

    m = kernel_module(task, assignment)
    schedule_module(m, ScheduleConfig.for_host())
    return kernel_features(kernels_of(m)[0], task.shapes, assignment)


def _features_job(task_json: dict, assignment: dict) -> list[float] | None:
    from minimlir.tuning import builder

    return builder.features(task_json, assignment)


# ---------------------------------------------------------------- runs (tuning/runner.py)


def make_inputs(task: Task, seed: int) -> list[np.ndarray]:
    """Random inputs (normal floats, zero integers: indices stay in range) and zeroed outputs."""
    from minimlir.tuning.runner import make_inputs as make

    return make(task.shapes, task.dtypes, task.num_outputs, seed)


# ---------------------------------------------------------------- the executor


def cpu_fingerprint() -> dict[str, Any]:
    """What a record's times depend on: host CPU name and features, core count, LLVM version."""
    import llvmlite.binding as llvm

    from minimlir.backend import _target
    from minimlir.backend.parallel import cpu_count

    _target.init_llvm()
    feats = llvm.get_host_cpu_features()
    flags = sorted(k for k, v in feats.items() if v)
    return {"cpu": llvm.get_host_cpu_name(), "features": ",".join(flags), "cores": cpu_count(),
            "llvm": ".".join(map(str, llvm.llvm_version_info)), "node": os.uname().nodename}


class LocalExecutor:
    """Builds in a spawned process pool (workers live as long as the executor and keep each task's
    parsed IR: tuning/builder.py), runs one at a time through one MeasureServer (tuning/runner.py)."""

    def __init__(self, workdir: str | os.PathLike, config: MeasureConfig | None = None):
        from minimlir.backend.parallel import cpu_count

        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.config = config or MeasureConfig()
        self.jobs = self.config.build_jobs or max(1, cpu_count())
        self._pools: list[ProcessPoolExecutor | None] = [None] * self.jobs  # one process each
        self._next_worker = 0
        self.scored_on: dict[tuple[str, str], int] = {}  # (task key, assignment) -> worker that scored it
        self._server: MeasureServer | None = None
        self.fingerprint = cpu_fingerprint()
        self.references: dict[str, list[np.ndarray]] = {}
        self.servers_started = 0
        self.timed_cpu = 0.0  # CPU seconds the measuring processes spent inside timed loops
        self.timed_seconds = 0.0  # wall seconds inside those loops (the measured run time)
        self.code_keys: dict[tuple[str, str], str] = {}  # (task key, assignment) -> code key (tuning/builder.py)
        self.measured_codes: dict[str, set[str]] = {}  # task key -> code keys measured

    # -- pools
    def pool(self, worker: int = 0) -> ProcessPoolExecutor:
        """Build worker `worker` (a one-process pool: a job goes to the worker that holds what it
        needs, the candidate that worker scheduled for scoring)."""
        p = self._pools[worker]
        if p is None:
            p = self._pools[worker] = ProcessPoolExecutor(
                max_workers=1, mp_context=multiprocessing.get_context("spawn"), initializer=_ignore_sigint)
        return p

    def _kill_pool(self) -> None:
        for i, p in enumerate(self._pools):
            if p is not None:
                for proc in list(getattr(p, "_processes", {}).values()):
                    proc.kill()
                p.shutdown(wait=False, cancel_futures=True)
                self._pools[i] = None

    def _submit(self, jobs: list[tuple[int, Any, tuple]]) -> list:
        """Submit (worker, fn, args) jobs; a broken pool (a worker died) is replaced, once."""
        try:
            return [self.pool(w).submit(fn, *args) for w, fn, args in jobs]
        except Exception:  # noqa: BLE001
            self._kill_pool()
            return [self.pool(w).submit(fn, *args) for w, fn, args in jobs]

    def _placement(self, task: Task, assignments: list[dict]) -> list[int]:
        """A worker per build: the one that scored the candidate (it kept the scheduled nest) while
        that keeps the workers even (at most ceil(n / jobs) each), the least busy one otherwise."""
        cap = -(-len(assignments) // self.jobs)
        load = [0] * self.jobs
        out: list[int | None] = []
        for a in assignments:
            w = self.scored_on.get((task.key, _akey(a)))
            if w is not None and w < self.jobs and load[w] < cap:
                load[w] += 1
                out.append(w)
            else:
                out.append(None)
        for i, w in enumerate(out):
            if w is None:
                w = min(range(self.jobs), key=lambda k: load[k])
                load[w] += 1
                out[i] = w
        return [int(w) for w in out]  # type: ignore[arg-type]

    def server(self) -> MeasureServer:
        if self._server is not None and self._server.spent:
            self.restart_server()
        if self._server is None or not self._server.alive:
            self._server = MeasureServer()
            self.servers_started += 1
        return self._server

    def restart_server(self) -> None:
        """Drop the measuring process (after a candidate that may have corrupted it): a fresh one next."""
        if self._server is not None:
            self._server.kill()
            self._server = None

    def close(self, wait: bool = True) -> None:
        """Stop the workers and the measuring process; `wait=False` (Ctrl-C): kill them, the builds
        and the run in flight are dropped anyway."""
        if wait:
            for i, p in enumerate(self._pools):
                if p is not None:
                    p.shutdown(wait=True, cancel_futures=True)
                    self._pools[i] = None
        else:
            self._kill_pool()
        if self._server is not None:
            if wait:
                self._server.close()
            else:
                self._server.kill()
            self._server = None

    # -- features for scoring (no build)
    def features(self, task: Task, assignments: list[dict]) -> list[list[float] | None]:
        from minimlir.tuning import builder

        tj = task.to_json()
        workers = [(self._next_worker + i) % self.jobs for i in range(len(assignments))]
        self._next_worker = (self._next_worker + len(assignments)) % self.jobs
        futs = self._submit([(w, builder.scored, (tj, a)) for w, a in zip(workers, assignments)])
        out = []
        for a, w, f in zip(assignments, workers, futs):
            try:
                feats, ck = f.result(timeout=self.config.build_timeout)
            except Exception:  # noqa: BLE001
                feats, ck = None, None
            if ck is not None:
                self.code_keys[(task.key, _akey(a))] = ck
                self.scored_on[(task.key, _akey(a))] = w
            out.append(feats)
        return out

    def unique(self, task: Task, assignments: list[dict], feats: list) -> list:
        """`feats` with None for every candidate whose code (scheduled loop nest, as `features` saw
        it) was measured already or comes earlier in `assignments`: not worth a trial."""
        seen = set(self.measured_codes.get(task.key, ()))
        out = []
        for a, f in zip(assignments, feats):
            ck = self.code_keys.get((task.key, _akey(a)))
            if ck is not None and ck in seen:
                f = None
            elif ck is not None:
                seen.add(ck)
            out.append(f)
        return out

    # -- measuring
    def build(self, task: Task, assignments: list[dict]) -> list[dict]:
        tj = task.to_json()
        futs = self._submit([(w, build_candidate, (tj, a))
                             for w, a in zip(self._placement(task, assignments), assignments)])
        out: list[dict] = []
        start = time.perf_counter()
        broken = False
        for f in futs:
            left = max(0.1, self.config.build_timeout - (time.perf_counter() - start))
            try:
                out.append(f.result(timeout=left))
            except FutureTimeout:
                out.append({"error": BUILD_TIMEOUT, "seconds": self.config.build_timeout,
                            "message": f"not built within {self.config.build_timeout:g} s"})
            except Exception as e:  # noqa: BLE001 - a dead worker
                broken = True
                out.append({"error": BUILD_ERROR, "seconds": 0.0, "message": f"build worker failed: {e}"})
        if broken or any(r["error"] == BUILD_TIMEOUT for r in out):
            self._kill_pool()
        return out

    def request(self, task: Task, build: dict, save_outputs: bool) -> dict:
        """The measuring process's request for one built candidate."""
        c = self.config
        return {"task": {"shapes": task.shapes, "dtypes": task.dtypes, "num_outputs": task.num_outputs},
                "object": build["object"], "metadata": build["metadata"], "externals": build.get("externals", []),
                "threads": c.threads, "seed": c.seed, "warmup": c.warmup, "repeats": c.repeats,
                "min_repeat_ms": c.min_repeat_ms, "timeout": c.run_timeout, "save_outputs": save_outputs,
                "cold_args": list(task.cold_args)}

    def run(self, task: Task, build: dict, save_outputs: bool) -> dict:
        try:
            return self.server().run(self.request(task, build, save_outputs))
        except (RuntimeError, OSError, EOFError) as e:
            self.restart_server()
            return {"error": RUN_ERROR, "seconds": 0.0, "message": str(e)}

    def measure(self, task: Task, assignments: list[dict]) -> list[MeasureResult]:
        """Build all, then run one at a time; the first measurement of a task (candidate 0, the
        default schedule) gives the reference outputs every later candidate is checked against."""
        builds = self.build(task, assignments)
        results = []
        for a, b in zip(assignments, builds):
            r = MeasureResult(dict(a), build_seconds=b.get("seconds", 0.0), features=b.get("features"),
                              node=self.fingerprint["node"])
            if b["error"] != OK:
                r.error, r.message = b["error"], b.get("message", "")
                results.append(r)
                continue
            if b.get("code_key"):
                self.measured_codes.setdefault(task.key, set()).add(b["code_key"])
            r = self._run_checked(task, r, self.run(task, b, save_outputs=True))
            if r.error == WRONG_RESULT:
                self.restart_server()  # its writes went somewhere they should not: a clean process
            results.append(r)
        return results

    def remeasure(self, task: Task, assignments: list[dict], rounds: int) -> list[list[list[float]]]:
        """Times of already measured candidates again, built once and run in `rounds` interleaved
        rounds (a, b, c, a, b, c, ...), so that a slow spell of the machine hits all of them alike,
        each round in a fresh measuring process: a process's address-space layout is one draw for
        all its calls, and it moved a candidate of ResNet-50's fused_conv2d_add_relu_6 by 10% from
        one process to the next (the default by 2%; it measured faster than the default all through
        one process, slower in most others; runner.FRESH_EVERY).
        times[i][r]: assignment i's per-call seconds in round r (empty where a build or run failed)."""
        builds = self.build(task, assignments)
        times: list[list[list[float]]] = [[] for _ in assignments]
        dead = [b["error"] != OK for b in builds]
        for _ in range(rounds):
            self.restart_server()
            for i, b in enumerate(builds):
                if dead[i]:
                    continue
                out = self.run(task, b, save_outputs=False)
                if out["error"] != OK:
                    dead[i], times[i] = True, []
                    continue
                times[i].append(list(out["times"]))
                self._count_timed(out)
        return times

    def _count_timed(self, out: dict) -> None:
        self.timed_cpu += float(out.get("timed_cpu", 0.0))
        self.timed_seconds += sum(out["times"]) * max(1, int(out.get("number", 1)))

    def _run_checked(self, task: Task, r: MeasureResult, out: dict) -> MeasureResult:
        """Check a run's result (`out`) against the reference outputs."""
        r.run_seconds = out.get("seconds", 0.0)
        if out["error"] != OK:
            r.error, r.message = out["error"], out.get("message", "")
            return r
        r.times, r.number = list(out["times"]), int(out.get("number", 0))
        self._count_timed(out)
        if out.get("cpu"):
            r.cpu, r.node = out["cpu"], out["cpu"].get("node", r.node)
        got = [np.asarray(g) for g in out["outputs"]]
        ref = self.references.get(task.key)
        if ref is None:
            self.references[task.key] = got
        elif not all(g.shape == f.shape
                     and np.allclose(g, f, rtol=self.config.rtol,
                                     atol=self.config.atol * (1 + float(np.abs(f).max(initial=0))))
                     for g, f in zip(got, ref)):
            worst = max(float(np.abs(g.astype(np.float64) - f).max(initial=0)) for g, f in zip(got, ref))
            r.error, r.message = WRONG_RESULT, f"max abs difference {worst:.3g} from the default schedule"
        return r
