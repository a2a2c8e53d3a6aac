"""The record database: an append-only JSON-lines file, one measured candidate per line.

    db = Database("tune.jsonl")
    db.append([record, ...])                 # one locked, flushed, fsynced write per batch
    db.best(task_key, fingerprint)           # the best record for this CPU, else its ISA class, else None
    db.records(), db.skipped                 # all records; corrupt lines skipped (count, first file:line)

A record (`make_record`):

    {"v": 1, "kind": "measure", "task": "<key>", "task_name": "fused_conv2d_relu", "rule": "conv2d",
     "cpu": {"cpu": "znver3", "features": "avx,avx2,…", "cores": 2, "llvm": "20.1.8", "node": "host"},
     "knobs": {"conv2d.rw": 7, …}, "times": [1.2e-4, …], "error": "OK", "message": "",
     "time": "2026-12-01T09:20:00Z", "compiler": "minimlir 0.1.0 / xdsl 0.74.0", "run": "<id>",
     "default": true, "flops": 2.3e8, "weight": 4, "features": […]}
    (and "cold_args": [1, 2] when the run flushed those inputs before each timed call, tuning/task.py)

A run ends with one `"kind": "confirm"` record per task whose search found something faster than the
default: the verdict of re-timing its best few candidates side by side with the default
(tuner.confirm; `knobs` the winner, possibly the default's own, `times` and `default_times` from those
interleaved rounds, each in a fresh measuring process; `round_minima`: the default's and the winner's
fastest call per round, the median of whose ratios decided).

A conv's algorithm choice is one `"kind": "algorithm"` record per conv and CPU (tuning/algorithms.py):
`conv` (the key of its signature), `signature`, `cpu`, `times` per algorithm ("direct",
"winograd2", "winograd4"), `errors`, `choice`, `default`; `algorithm(conv, cpu)` returns the latest
on the exact CPU, else on its ISA class.

Run markers (`"kind": "run"`, `"status": "started" | "finished"`) bracket one `mini-tune` run, so an
interrupted run (a start without a finish) can be resumed. Two writers may append at once: each batch
is one `write` of whole lines on an O_APPEND descriptor under an exclusive `flock`. A corrupt line
(a torn write after a crash, a hand edit) is skipped and counted; `Database(path, strict=True)`
raises `DatabaseError` naming `file:line` instead.

Lookup (`best`): records of the task key without an error, on the exact CPU (name and feature flags)
first, then on any CPU of the same ISA class (`isa_class`: avx512 / avx2 / avx / sse), else none;
at each of those levels the latest confirmation wins over the fastest measurement (the fastest of
hundreds of noisy measurements is partly the luckiest one). A record whose knobs are no longer legal
for the current rules (`check_assignment`) is passed over.
"""

from __future__ import annotations

import datetime
import fcntl
import functools
import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any


VERSION = 1


class DatabaseError(Exception):
    """A database file that cannot be read (the message names file:line)."""


@functools.cache
def compiler_version() -> str:
    """The versions a record was measured with (package metadata: looked up once per process)."""
    from importlib.metadata import PackageNotFoundError, version

    def v(p):
        try:
            return version(p)
        except PackageNotFoundError:
            return "?"

    return f"minimlir {v('minimlir')} / xdsl {v('xdsl')}"


def isa_class(cpu: dict[str, Any]) -> str:
    flags = set(str(cpu.get("features", "")).split(","))
    if "avx512f" in flags:
        return "avx512"
    if "avx2" in flags and "fma" in flags:
        return "avx2"
    if "avx" in flags:
        return "avx"
    return "sse"


def same_cpu(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return a.get("cpu") == b.get("cpu") and a.get("features") == b.get("features")


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def make_record(task, result, cpu: dict[str, Any], run: str = "", default: bool = False,
                with_features: bool = True) -> dict[str, Any]:
    rec = {"v": VERSION, "kind": "measure", "task": task.key, "task_name": task.name, "rule": task.rule,
           "cpu": dict(cpu), "knobs": dict(result.assignment), "times": list(result.times),
           "error": result.error, "message": result.message, "time": now(), "compiler": compiler_version(),
           "run": run, "default": default, "flops": task.flops, "weight": task.weight,
           "build_seconds": round(result.build_seconds, 4), "run_seconds": round(result.run_seconds, 4),
           "number": getattr(result, "number", 0)}
    if getattr(task, "cold_args", None):  # timed with these inputs flushed from the caches (tuning/task.py)
        rec["cold_args"] = list(task.cold_args)
    if with_features and result.features is not None:
        rec["features"] = [round(float(x), 6) for x in result.features]
    return rec


def best_times(times: dict[str, list[float]]) -> dict[str, float]:
    """Per algorithm of an algorithm record's `times`, its fastest (algorithms without one left out)."""
    return {a: min(t) for a, t in times.items() if t}


def algorithm_speedup(rec: dict[str, Any]) -> float | None:
    """An algorithm record's default time over its choice's, or None when either has none."""
    best = best_times(rec.get("times", {}))
    d, c = best.get(rec.get("default")), best.get(rec.get("choice"))
    return d / c if d and c else None


def cost(rec: dict[str, Any]) -> float:
    t = rec.get("times") or []
    return float(min(t)) if rec.get("error") == "OK" and t else float("inf")


class Database:
    def __init__(self, path: str | os.PathLike, strict: bool = False):
        self.path = Path(path)
        self.strict = strict
        self.skipped = 0
        self.first_bad: str | None = None
        self._records: list[dict[str, Any]] | None = None
        self._size = -1

    # -- writing
    def append(self, records: Iterable[dict[str, Any]]) -> None:
        data = "".join(json.dumps(r, sort_keys=True) + "\n" for r in records).encode()
        if not data:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                # a torn last line (a writer killed mid-write) must not swallow our first record
                if os.fstat(fd).st_size > 0:
                    with open(self.path, "rb") as f:
                        f.seek(-1, os.SEEK_END)
                        if f.read(1) != b"\n":
                            data = b"\n" + data
                view = memoryview(data)
                while view:
                    n = os.write(fd, view)
                    view = view[n:]
                os.fsync(fd)
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)
        self._records = None

    # -- reading
    def records(self) -> list[dict[str, Any]]:
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            return []
        if self._records is not None and size == self._size:
            return self._records
        out, self.skipped, self.first_bad = [], 0, None
        with open(self.path, "rb") as f:
            for lineno, raw in enumerate(f, 1):
                line = raw.strip()
                if not line:
                    continue
                try:
                    rec = json.loads(line)
                    if not isinstance(rec, dict) or "kind" not in rec:
                        raise ValueError("not a record object")
                except ValueError as e:
                    where = f"{self.path}:{lineno}"
                    if self.strict:
                        raise DatabaseError(f"{where}: corrupt record ({str(e).splitlines()[0]})") from None
                    self.skipped += 1
                    self.first_bad = self.first_bad or where
                    continue
                out.append(rec)
        self._records, self._size = out, size
        return out

    def measurements(self, task: str | None = None) -> list[dict[str, Any]]:
        return [r for r in self.records() if r.get("kind") == "measure" and (task is None or r.get("task") == task)]

    def skipped_note(self) -> str:
        return f"{self.path}: skipped {self.skipped} corrupt line(s), first at {self.first_bad}" if self.skipped else ""

    # -- lookup
    def best(self, task: str, cpu: dict[str, Any], facts: dict | None = None,
             defaults: dict | None = None) -> dict[str, Any] | None:
        from minimlir.passes.loop.schedule.default.knobs import check_assignment

        def usable(r):
            return cost(r) < float("inf") and check_assignment(r.get("knobs", {}), facts, defaults) is None

        recs = [r for r in self.measurements(task) if usable(r)]
        confirms = [r for r in self.confirmations(task) if usable(r)]
        for match in (lambda c: same_cpu(c, cpu), lambda c: isa_class(c) == isa_class(cpu)):
            conf = [r for r in confirms if match(r.get("cpu", {}))]
            if conf:
                return conf[-1]  # the latest confirmation is the verdict (see tuner.confirm)
            pool = [r for r in recs if match(r.get("cpu", {}))]
            if pool:
                return min(pool, key=cost)
        return None

    def default_knobs(self, task: str, cpu: dict[str, Any]) -> dict[str, Any] | None:
        """The knobs of the task's latest default-schedule measurement (candidate 0) on this CPU's
        ISA class, or None."""
        recs = [r for r in self.measurements(task)
                if r.get("default") and isa_class(r.get("cpu", {})) == isa_class(cpu)]
        return recs[-1].get("knobs") if recs else None

    def algorithms(self, conv: str | None = None) -> list[dict[str, Any]]:
        """The conv algorithm records (tuning/algorithms.py), of one conv key or all."""
        return [r for r in self.records() if r.get("kind") == "algorithm" and (conv is None or r.get("conv") == conv)]

    def algorithm(self, conv: str, cpu: dict[str, Any]) -> dict[str, Any] | None:
        """The latest algorithm record of the conv on this CPU, else on its ISA class, else None."""
        recs = [r for r in self.algorithms(conv) if r.get("times")]
        for match in (lambda c: same_cpu(c, cpu), lambda c: isa_class(c) == isa_class(cpu)):
            pool = [r for r in recs if match(r.get("cpu", {}))]
            if pool:
                return pool[-1]
        return None

    def confirmations(self, task: str | None = None) -> list[dict[str, Any]]:
        return [r for r in self.records() if r.get("kind") == "confirm" and (task is None or r.get("task") == task)]

    # -- runs
    def runs(self) -> list[dict[str, Any]]:
        return [r for r in self.records() if r.get("kind") == "run"]

    def interrupted_run(self, model_hash: str) -> dict[str, Any] | None:
        """The start marker of the last run of this model, if that run did not finish."""
        mine = [r for r in self.runs() if r.get("model_hash") == model_hash]
        starts = [r for r in mine if r.get("status") == "started"]
        if not starts:
            return None
        last = starts[-1]
        finished = any(r.get("run") == last["run"] and r.get("status") == "finished" for r in mine)
        return None if finished else last

    def last_run(self, model_hash: str) -> dict[str, Any] | None:
        runs = [r for r in self.runs() if r.get("model_hash") == model_hash]
        return runs[-1] if runs else None


# ---------------------------------------------------------------- mini-tune db distill | merge | show


def distill(src: Database, dst: str | os.PathLike) -> int:
    """Keep the best measurement per (task, CPU) and the confirmations, without features; returns how
    many records that is."""
    best: dict[tuple, dict] = {}
    for r in src.measurements():
        if cost(r) == float("inf"):
            continue
        k = (r["task"], r.get("cpu", {}).get("cpu"), r.get("cpu", {}).get("features"))
        if k not in best or cost(r) < cost(best[k]):
            best[k] = r
    # every confirmation (one per task and run: few), in order: which of them is the verdict depends
    # on the rules' legality checks at lookup time
    algos = {(r["conv"], r.get("cpu", {}).get("cpu"), r.get("cpu", {}).get("features")): r
             for r in src.algorithms() if r.get("times")}  # the latest per conv and CPU
    out = [{k: v for k, v in r.items() if k != "features"}
           for r in [*best.values(), *src.confirmations(), *algos.values()]]
    d = Database(dst)
    if d.path.exists() and d.path.resolve() == src.path.resolve():
        raise DatabaseError(f"{dst}: distill into a new file, not into its source")
    d.append(out)
    return len(out)


def merge(sources: Sequence[Database], dst: str | os.PathLike) -> int:
    """Append every record of `sources` to `dst` that it does not hold yet; returns how many."""
    d = Database(dst)
    have = {json.dumps(r, sort_keys=True) for r in d.records()}
    new = []
    for s in sources:
        for r in s.records():
            line = json.dumps(r, sort_keys=True)
            if line not in have:
                have.add(line)
                new.append(r)
    d.append(new)
    return len(new)


def show(db: Database) -> str:
    """A table: per task and CPU, trials, errors, default and best latency, speedup."""
    rows: dict[tuple, dict] = {}
    for r in db.measurements():
        k = (r["task"], r.get("cpu", {}).get("cpu", "?"))
        row = rows.setdefault(k, {"name": r.get("task_name", "?"), "n": 0, "err": {}, "best": float("inf"),
                                  "default": float("inf")})
        row["n"] += 1
        if r.get("error") != "OK":
            row["err"][r["error"]] = row["err"].get(r["error"], 0) + 1
        row["best"] = min(row["best"], cost(r))
        if r.get("default"):
            row["default"] = min(row["default"], cost(r))
    for r in db.confirmations():  # the confirmed verdict replaces the search's numbers
        row = rows.get((r["task"], r.get("cpu", {}).get("cpu", "?")))
        if row is not None and r.get("times") and r.get("default_times"):
            row["best"], row["default"], row["confirmed"] = min(r["times"]), min(r["default_times"]), True
    lines = [f"{'task':32} {'key':20} {'cpu':10} {'trials':>6} {'default':>10} {'best':>10} {'speedup':>7}  errors"]
    for (key, cpu), row in sorted(rows.items(), key=lambda kv: kv[1]["name"]):
        finite = row["best"] < float("inf") and row["default"] < float("inf")
        sp = row["default"] / row["best"] if finite else float("nan")
        errs = ", ".join(f"{e} {n}" for e, n in sorted(row["err"].items())) or "-"
        lines.append(f"{row['name'][:32]:32} {key:20} {cpu[:10]:10} {row['n']:6d} {_ms(row['default']):>10} "
                     f"{_ms(row['best']):>10} {sp:7.2f}{'*' if row.get('confirmed') else ' '} {errs}")
    latest = {(r["conv"], r.get("cpu", {}).get("cpu", "?")): r for r in db.algorithms() if r.get("times")}
    if latest:
        lines.append("")
        lines.append(f"{'conv':60} {'cpu':10} {'default':>10} {'choice':>10} {'speedup':>7}")
        for (_, cpu), r in sorted(latest.items(), key=lambda kv: kv[1].get("signature", "")):
            sp = algorithm_speedup(r) or float("nan")
            lines.append(f"{r.get('signature', r['conv'])[:60]:60} {cpu[:10]:10} {r.get('default', '?'):>10} "
                         f"{r.get('choice', '?'):>10} {sp:7.2f}")
    runs = db.runs()
    if any(row.get("confirmed") for row in rows.values()):
        lines.append("* confirmed: best and default re-measured side by side at the end of a run")
    lines.append(f"{len(rows)} task(s), {len(db.measurements())} record(s), "
                 + (f"{len(latest)} conv algorithm choice(s), " if latest else "")
                 + f"{len({r['run'] for r in runs})} run(s)" + (f"; {db.skipped_note()}" if db.skipped else ""))
    return "\n".join(lines)


def _ms(s: float) -> str:
    return f"{s * 1e3:.4f}ms" if s < float("inf") else "-"
