"""The Ray executor (`mini-tune --executor ray [--address HOST:PORT]`, `pip install minimlir[distributed]`):
builds fan out as Ray tasks over the cluster, runs go to one measuring actor per node.

    ray start --head                                  # on the first machine
    ray start --address HEAD:6379                     # on every other machine
    mini-tune model.onnx --db t.jsonl --budget 1h --executor ray --address HEAD:6379

A build task compiles the candidate into a private cache folder and returns the object file (the
API cache's `.mmo` entry) with its features. The measuring actors (`num_cpus=0`, pinned to their
node) each own a `MeasureServer` (a clean spawned process that forks one child per run), so runs are
one at a time per node and never share a machine with another measurement; the entry is written to
the actor's cache first (a node with another CPU misses it and compiles in the child: still
correct). Candidates of a batch go round-robin to the nodes; each result carries the measuring
node's fingerprint (CPU, features, cores, LLVM), which its record stores. Outputs come back to the
driver, which checks them against the default schedule's as the local executor does.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from minimlir.tuning.measure import OK, LocalExecutor, MeasureConfig
from minimlir.tuning.task import Task


def _build_remote(task_json: dict, assignment: dict | None) -> dict:
    from minimlir.tuning.measure import build_candidate

    with tempfile.TemporaryDirectory(prefix="mini-tune-build-") as d:
        r = build_candidate(task_json, assignment, d)
        if r["error"] == OK:
            entries = sorted(Path(d).rglob("*.mmo"))
            r["objects"] = [(p.relative_to(d).as_posix(), p.read_bytes()) for p in entries]
        return r


class _Measurer:
    """One per node: runs candidates one at a time through a MeasureServer."""

    def __init__(self, workdir: str):
        from minimlir.tuning.measure import MeasureServer, cpu_fingerprint

        self.workdir = Path(workdir) / f"node-{os.uname().nodename}-{os.getpid()}"
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.cache_dir = self.workdir / "objects"
        self.cache_dir.mkdir(exist_ok=True)
        self.server = MeasureServer()
        self.fp = cpu_fingerprint()

    def fingerprint(self) -> dict:
        return self.fp

    def run(self, req: dict, objects: list) -> dict:
        import numpy as np

        for rel, data in objects or []:
            dst = self.cache_dir / rel
            dst.parent.mkdir(parents=True, exist_ok=True)
            if not dst.exists():
                tmp = dst.with_suffix(".tmp")
                tmp.write_bytes(data)
                os.replace(tmp, dst)
        req = dict(req, cache_dir=str(self.cache_dir), out_path=str(self.workdir / "run.json"))
        out = self.server.run(req)
        out["cpu"] = self.fp
        if out.get("error") == OK and req.get("save_outputs"):
            with np.load(req["out_path"] + ".npz") as z:
                out["outputs"] = [z[f"arr_{i}"] for i in range(len(z.files))]
        return out


class RayExecutor(LocalExecutor):
    def __init__(self, workdir: str | os.PathLike, config: MeasureConfig | None = None,
                 address: str | None = None, init_kwargs: dict[str, Any] | None = None):
        try:
            import ray
        except ImportError:
            raise RuntimeError("--executor ray needs Ray: pip install 'minimlir[distributed]'") from None
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        if not ray.is_initialized():
            ray.init(address=address, ignore_reinit_error=True, log_to_driver=False, **(init_kwargs or {}))
        super().__init__(workdir, config)
        self.ray = ray
        self._build = ray.remote(num_cpus=1)(_build_remote)
        actor_cls = ray.remote(num_cpus=0)(_Measurer)
        self.actors = [actor_cls.options(scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False)
                                         ).remote(str(self.workdir))
                       for n in ray.nodes() if n.get("Alive")]
        if not self.actors:
            raise RuntimeError("the Ray cluster has no live node")
        self.node_fingerprints = ray.get([a.fingerprint.remote() for a in self.actors])
        self._objects: dict[str, list] = {}
        self._next = 0

    def features(self, task: Task, assignments: list[dict]) -> list:
        from minimlir.tuning.measure import _features_job

        remote = self.ray.remote(num_cpus=1)(_features_job)
        tj = task.to_json()
        return self.ray.get([remote.remote(tj, a) for a in assignments])

    def build(self, task: Task, assignments: list[dict]) -> list[dict]:
        import json

        from minimlir.tuning.measure import BUILD_ERROR, BUILD_TIMEOUT

        tj = task.to_json()
        refs = [self._build.remote(tj, a) for a in assignments]
        ready, _ = self.ray.wait(refs, num_returns=len(refs), timeout=self.config.build_timeout)
        out = []
        for a, ref in zip(assignments, refs):
            if ref not in ready:
                self.ray.cancel(ref, force=True)
                out.append({"error": BUILD_TIMEOUT, "seconds": self.config.build_timeout,
                            "message": f"not built within {self.config.build_timeout:g} s"})
                continue
            try:
                r = self.ray.get(ref)
            except Exception as e:  # noqa: BLE001 - a dead task
                r = {"error": BUILD_ERROR, "seconds": 0.0, "message": f"build task failed: {e}"}
            self._objects[json.dumps(a, sort_keys=True)] = r.pop("objects", [])
            out.append(r)
        return out

    def measure(self, task: Task, assignments: list[dict]):
        """Build all, then run round-robin over the nodes (one at a time per node, nodes in parallel)."""
        from minimlir.tuning.measure import MeasureResult

        builds = self.build(task, assignments)
        results: list = [None] * len(assignments)
        pending = []
        for i, (a, b) in enumerate(zip(assignments, builds)):
            r = MeasureResult(dict(a), build_seconds=b.get("seconds", 0.0), features=b.get("features"))
            if b["error"] != OK:
                r.error, r.message = b["error"], b.get("message", "")
                results[i] = r
            else:
                pending.append((i, r))
        # candidate 0 of a task (the reference) first and alone, the rest spread over the nodes
        first = [p for p in pending if task.key not in self.references][:1]
        for group in (first, [p for p in pending if p not in first]):
            outs = self._dispatch(task, [r for _, r in group])
            for (i, r), out in zip(group, outs):
                results[i] = self._checked(task, r, out)
        return results

    def _dispatch(self, task: Task, rs: list) -> list[dict]:
        import json

        c = self.config
        refs = []
        for r in rs:
            req = {"task": task.to_json(), "assignment": r.assignment, "threads": c.threads, "seed": c.seed,
                   "warmup": c.warmup, "repeats": c.repeats, "min_repeat_ms": c.min_repeat_ms,
                   "timeout": c.run_timeout, "save_outputs": True}
            actor = self.actors[self._next % len(self.actors)]
            self._next += 1
            refs.append(actor.run.remote(req, self._objects.pop(json.dumps(r.assignment, sort_keys=True), [])))
        out = []
        for ref in refs:
            try:
                out.append(self.ray.get(ref))
            except Exception as e:  # noqa: BLE001 - a dead actor
                from minimlir.tuning.measure import RUN_ERROR

                out.append({"error": RUN_ERROR, "seconds": 0.0, "message": f"measuring actor failed: {e}"})
        return out

    def _checked(self, task: Task, r, out: dict):
        return self._run_checked(task, r, out)

    def close(self) -> None:
        for a in getattr(self, "actors", []):
            try:
                self.ray.kill(a)
            except Exception:  # noqa: BLE001
                pass
        self.actors = []
        super().close()
