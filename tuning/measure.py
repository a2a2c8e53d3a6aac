"""Measurement: build candidates in parallel, run them one at a time in isolated child processes.

    ex = LocalExecutor(workdir, threads=2)
    results = ex.measure(task, [assignment0, assignment1, ...])     # MeasureResult per assignment
    results[0].error, results[0].times, results[0].features

A candidate is the task's kernel with a knob assignment (`loop.schedule_knobs`) inside a small
mem-level module whose public `main` calls it on caller buffers. Builds run in a process pool
(`build_jobs` spawned workers): each compiles the module through the per-function part of the
`compile` pipeline with the API's disk cache in `workdir/objects`, and computes the candidate's
features on its scheduled loop nest. Runs go one at a time: a measuring process (spawned once, so
it never inherits the tuner's OpenMP or threads) forks one child per run; the child loads the cached
object (no pass runs), pins the thread count, fills the inputs from a seed, runs a warm-up call,
picks a number of calls so that one repeat lasts at least `min_repeat_ms`, and times `repeats`
repeats. The first run of each candidate is checked against the default schedule's output (candidate
0, same seed, same inputs). Failures are results, not exceptions:

    BUILD_ERROR    the candidate did not compile          BUILD_TIMEOUT  not within build_timeout
    RUN_ERROR      the child raised or died (a signal)    RUN_TIMEOUT    not within run_timeout
    WRONG_RESULT   its output differs from the default schedule's
"""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import time
import traceback
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from minimlir.tuning.task import Task

OK = "OK"
BUILD_ERROR = "BUILD_ERROR"
BUILD_TIMEOUT = "BUILD_TIMEOUT"
RUN_ERROR = "RUN_ERROR"
RUN_TIMEOUT = "RUN_TIMEOUT"
WRONG_RESULT = "WRONG_RESULT"
ERRORS = (BUILD_ERROR, BUILD_TIMEOUT, RUN_ERROR, RUN_TIMEOUT, WRONG_RESULT)

CANDIDATE_PIPELINE = ("loop-schedule,mem-plan,loop-outline-parallel,convert-vector-to-llvm,"
                      "convert-to-llvm,convert-parallel-to-llvm")
"""The per-function part of `compile` (frontend/_split_lower.py SUFFIX) minus graph-bufferize: the
candidate module is already at the mem level."""


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


# ---------------------------------------------------------------- builds (in pool workers)


def build_candidate(task_json: dict, assignment: dict | None, cache_dir: str) -> dict:
    """In a build worker: compile the candidate into the disk cache, compute its features."""
    t0 = time.perf_counter()
    try:
        from minimlir.frontend import api
        from minimlir.passes.loop.schedule.default import ScheduleConfig, schedule_module
        from minimlir.tuning.features import kernel_features
        from minimlir.tuning.task import kernel_module, kernels_of

        task = Task.from_json(task_json)
        api.compile(candidate_text(task, assignment), pipeline=CANDIDATE_PIPELINE, cache=cache_dir)
        m = kernel_module(task, assignment)
        schedule_module(m, ScheduleConfig.for_host())
        feats = kernel_features(kernels_of(m)[0], task.shapes, assignment)
        return {"error": OK, "seconds": time.perf_counter() - t0, "features": feats}
    except Exception as e:  # noqa: BLE001 - any failure is a BUILD_ERROR result
        return {"error": BUILD_ERROR, "seconds": time.perf_counter() - t0,
                "message": f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"}


def features_of(task: Task, assignment: dict) -> list[float]:
    """The candidate's features without building it (schedule only): for scoring candidates."""
    from minimlir.passes.loop.schedule.default import ScheduleConfig, schedule_module
    from minimlir.tuning.features import kernel_features
    from minimlir.tuning.task import kernel_module, kernels_of

    m = kernel_module(task, assignment)
    schedule_module(m, ScheduleConfig.for_host())
    return kernel_features(kernels_of(m)[0], task.shapes, assignment)


def _features_job(task_json: dict, assignment: dict) -> list[float] | None:
    try:
        return features_of(Task.from_json(task_json), assignment)
    except Exception:  # noqa: BLE001 - an unschedulable candidate scores nothing
        return None


# ---------------------------------------------------------------- runs (one child per run)


def make_inputs(task: Task, seed: int) -> list[np.ndarray]:
    """Random inputs (normal floats, zero integers: indices stay in range) and zeroed outputs."""
    rng = np.random.default_rng(seed)
    arrays = []
    n_in = len(task.shapes) - task.num_outputs
    for i, (shape, dt) in enumerate(zip(task.shapes, task.dtypes)):
        dtype = np.dtype(dt)
        if i >= n_in:
            arrays.append(np.zeros(shape, dtype))
        elif dtype.kind == "f":
            arrays.append(rng.standard_normal(shape).astype(dtype))
        elif dtype.kind == "b":
            arrays.append(rng.random(shape) < 0.5)
        else:
            arrays.append(np.zeros(shape, dtype))
    return arrays


def _run_child(req: dict, out_path: str) -> None:
    """In the forked child: load, warm up, time; write a JSON result (and the outputs) to out_path."""
    from minimlir.backend import parallel
    from minimlir.frontend import api

    task = Task.from_json(req["task"])
    parallel.set_num_threads(req["threads"])
    model = api.compile(candidate_text(task, req["assignment"]), pipeline=CANDIDATE_PIPELINE,
                        cache=req["cache_dir"], num_threads=req["threads"])
    arrays = make_inputs(task, req["seed"])
    n_in = len(arrays) - task.num_outputs
    t0 = time.perf_counter()
    for _ in range(max(1, req["warmup"])):
        for a in arrays[n_in:]:
            a.fill(0)
        model(*arrays)
    one = max(time.perf_counter() - t0, 1e-7) / max(1, req["warmup"])
    if req.get("save_outputs"):
        np.savez(out_path + ".npz", *arrays[n_in:])
    number = max(1, int(np.ceil(req["min_repeat_ms"] / 1e3 / one)))
    times = []
    for _ in range(req["repeats"]):
        t = time.perf_counter()
        for _ in range(number):
            model(*arrays)
        times.append((time.perf_counter() - t) / number)
    Path(out_path).write_text(json.dumps({"times": times, "number": number}))


def _ignore_sigint() -> None:
    """Ctrl-C is for the tuner (it stops cleanly and can --resume); its helper processes ignore it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _serve(conn) -> None:
    """The measuring process: one request at a time, each in a forked child with a timeout."""
    import minimlir.frontend.api  # noqa: F401 - imported once here, inherited by every child

    _ignore_sigint()

    while True:
        try:
            req = conn.recv()
        except EOFError:
            return
        if req is None:
            return
        conn.send(_run_one(req))


def _run_one(req: dict) -> dict:
    out_path = req["out_path"]
    for p in (out_path, out_path + ".npz"):
        if os.path.exists(p):
            os.unlink(p)
    t0 = time.perf_counter()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        code = 0
        try:
            _run_child(req, out_path)
        except BaseException:  # noqa: BLE001 - reported through the file
            Path(out_path + ".err").write_text(traceback.format_exc(limit=3))
            code = 1
        os._exit(code)
    deadline = t0 + req["timeout"]
    status = None
    while time.perf_counter() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        time.sleep(0.002)
    else:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        return {"error": RUN_TIMEOUT, "seconds": time.perf_counter() - t0,
                "message": f"no result within {req['timeout']:g} s"}
    seconds = time.perf_counter() - t0
    if os.WIFSIGNALED(status):
        return {"error": RUN_ERROR, "seconds": seconds,
                "message": f"killed by signal {signal.Signals(os.WTERMSIG(status)).name}"}
    err = Path(out_path + ".err")
    if err.exists():
        msg = err.read_text().strip().splitlines()[-1]
        err.unlink()
        return {"error": RUN_ERROR, "seconds": seconds, "message": msg}
    try:
        res = json.loads(Path(out_path).read_text())
    except (OSError, ValueError) as e:
        return {"error": RUN_ERROR, "seconds": seconds, "message": f"no result: {e}"}
    return {"error": OK, "seconds": seconds, "times": res["times"], "number": res["number"]}


class MeasureServer:
    """A spawned measuring process (see _serve); `run(req)` blocks until the child is done."""

    def __init__(self):
        ctx = multiprocessing.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_serve, args=(child,), daemon=True)
        self.proc.start()

    def run(self, req: dict) -> dict:
        self.conn.send(req)
        if not self.conn.poll(req["timeout"] + 120):
            raise RuntimeError("the measuring process does not answer")
        return self.conn.recv()

    def close(self) -> None:
        try:
            self.conn.send(None)
        except (OSError, BrokenPipeError):
            pass
        self.proc.join(5)
        if self.proc.is_alive():
            self.proc.kill()


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
    """Builds in a spawned process pool, runs one at a time through a MeasureServer."""

    def __init__(self, workdir: str | os.PathLike, config: MeasureConfig | None = None):
        from minimlir.backend.parallel import cpu_count

        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.cache_dir = str(self.workdir / "objects")
        self.config = config or MeasureConfig()
        self.jobs = self.config.build_jobs or max(1, cpu_count())
        self._pool: ProcessPoolExecutor | None = None
        self._server: MeasureServer | None = None
        self.fingerprint = cpu_fingerprint()
        self.references: dict[str, list[np.ndarray]] = {}

    # -- pools
    def pool(self) -> ProcessPoolExecutor:
        if self._pool is None:
            self._pool = ProcessPoolExecutor(max_workers=self.jobs, mp_context=multiprocessing.get_context("spawn"),
                                             initializer=_ignore_sigint)
        return self._pool

    def _kill_pool(self) -> None:
        if self._pool is not None:
            for p in list(getattr(self._pool, "_processes", {}).values()):
                p.kill()
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None

    def server(self) -> MeasureServer:
        if self._server is None or not self._server.proc.is_alive():
            self._server = MeasureServer()
        return self._server

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        if self._server is not None:
            self._server.close()
            self._server = None

    # -- features for scoring (no build)
    def features(self, task: Task, assignments: list[dict]) -> list[list[float] | None]:
        tj = task.to_json()
        futs = [self.pool().submit(_features_job, tj, a) for a in assignments]
        out = []
        for f in futs:
            try:
                out.append(f.result(timeout=self.config.build_timeout))
            except Exception:  # noqa: BLE001
                out.append(None)
        return out

    # -- measuring
    def build(self, task: Task, assignments: list[dict]) -> list[dict]:
        tj = task.to_json()
        futs = [self.pool().submit(build_candidate, tj, a, self.cache_dir) for a in assignments]
        out: list[dict] = []
        start = time.perf_counter()
        for f in futs:
            left = max(0.1, self.config.build_timeout - (time.perf_counter() - start))
            try:
                out.append(f.result(timeout=left))
            except FutureTimeout:
                out.append({"error": BUILD_TIMEOUT, "seconds": self.config.build_timeout,
                            "message": f"not built within {self.config.build_timeout:g} s"})
            except Exception as e:  # noqa: BLE001 - a dead worker
                out.append({"error": BUILD_ERROR, "seconds": 0.0, "message": f"build worker failed: {e}"})
        if any(r["error"] == BUILD_TIMEOUT for r in out):
            self._kill_pool()
        return out

    def run(self, task: Task, assignment: dict, save_outputs: bool) -> dict:
        c = self.config
        req = {"task": task.to_json(), "assignment": assignment, "cache_dir": self.cache_dir,
               "threads": c.threads, "seed": c.seed, "warmup": c.warmup, "repeats": c.repeats,
               "min_repeat_ms": c.min_repeat_ms, "timeout": c.run_timeout, "save_outputs": save_outputs,
               "out_path": str(self.workdir / f"run-{os.getpid()}.json")}
        try:
            return self.server().run(req)
        except (RuntimeError, OSError, EOFError) as e:
            if self._server is not None:
                self._server.proc.kill()
                self._server = None
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
            results.append(self._run_checked(task, r))
        return results

    def _run_checked(self, task: Task, r: MeasureResult, out: dict | None = None) -> MeasureResult:
        """Run (unless `out`, a run's result, is given) and check against the reference outputs."""
        out = out if out is not None else self.run(task, r.assignment, save_outputs=True)
        r.run_seconds = out.get("seconds", 0.0)
        if out["error"] != OK:
            r.error, r.message = out["error"], out.get("message", "")
            return r
        r.times, r.number = list(out["times"]), int(out.get("number", 0))
        if out.get("cpu"):
            r.cpu, r.node = out["cpu"], out["cpu"].get("node", r.node)
        got = out["outputs"] if "outputs" in out else self._outputs()
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

    def _outputs(self, path: str | os.PathLike | None = None) -> list[np.ndarray]:
        path = path or self.workdir / f"run-{os.getpid()}.json.npz"
        with np.load(path) as z:
            return [z[f"arr_{i}"] for i in range(len(z.files))]
