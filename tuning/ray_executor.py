"""The Ray executor (`mini-tune --executor ray [--address HOST:PORT]`, `pip install minimlir[distributed]`):
builds fan out as Ray tasks over the cluster, runs go to one measuring actor per node.

    ray start --head                                  # on the first machine
    ray start --address HEAD:6379                     # on every other machine
    mini-tune model.onnx --db t.jsonl --budget 1h --executor ray --address HEAD:6379

A build task compiles the candidate (tuning/builder.py) and returns its object code, features and
the CPU it was built for. The measuring actors (`num_cpus=0`, pinned to their node) each own a
`MeasureServer` (tuning/runner.py: a clean spawned process that loads and times one candidate at a
time), so runs are one at a time per node and never share a machine with another measurement; an
actor on a node with another CPU builds the candidate again for its own CPU first (still correct).
Candidates of a batch go
round-robin to the nodes; each result carries the measuring node's fingerprint (CPU, features,
cores, LLVM), which its record stores. Outputs come back to the driver, which checks them against
the default schedule's as the local executor does.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from minimlir.tuning.measure import OK, WRONG_RESULT, LocalExecutor, MeasureConfig
from minimlir.tuning.task import Task


def _build_remote(task_json: dict, assignment: dict | None) -> dict:
    """A Ray task: the candidate's object code (tuning/builder.py) and the building node's CPU."""
    from minimlir.tuning import builder
    from minimlir.tuning.measure import cpu_fingerprint

    r = builder.build(task_json, assignment)
    fp = cpu_fingerprint()
    r["built_for"] = [fp["cpu"], fp["features"], fp["llvm"]]
    return r


class _Measurer:
    """One per node: runs candidates one at a time through a MeasureServer."""

    def __init__(self, workdir: str):
        from minimlir.tuning.measure import cpu_fingerprint

        self.workdir = Path(workdir)
        self.server = None
        self.fp = cpu_fingerprint()

    def fingerprint(self) -> dict:
        return self.fp

    def run(self, req: dict, built: dict, task_json: dict) -> dict:
        from minimlir.tuning import builder
        from minimlir.tuning.measure import OK, RUN_ERROR
        from minimlir.tuning.runner import MeasureServer

        if built.get("built_for") != [self.fp["cpu"], self.fp["features"], self.fp["llvm"]]:
            built = builder.build(task_json, req["assignment"])  # code for another CPU: build it here
            if built["error"] != OK:
                return {"error": RUN_ERROR, "seconds": 0.0, "cpu": self.fp,
                        "message": f"does not build on {self.fp['node']}: {built.get('message', '')}"}
        req = dict(req, object=built["object"], metadata=built["metadata"], externals=built.get("externals", []))
        if self.server is not None and self.server.spent:
            self.restart()
        if self.server is None or not self.server.alive:
            self.server = MeasureServer()
        out = self.server.run(req)
        out["cpu"] = self.fp
        return out

    def restart(self) -> None:
        if self.server is not None:
            self.server.kill()
            self.server = None


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
            if r.get("error") == OK:
                self._objects[json.dumps(a, sort_keys=True)] = {k: r.pop(k) for k in
                                                                ("object", "metadata", "externals", "built_for")
                                                                if k in r}
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
            for (i, r), out, actor in zip(group, outs, self._last_actors):
                results[i] = self._checked(task, r, out)
                if results[i].error == WRONG_RESULT:
                    actor.restart.remote()  # a clean measuring process on that node
        return results

    def remeasure(self, task: Task, assignments: list[dict], rounds: int) -> list[list[list[float]]]:
        """As LocalExecutor.remeasure (each round in a fresh measuring process), on one node (times
        from different nodes do not compare)."""
        actors = self.actors
        self.actors = actors[:1]
        times: list[list[list[float]]] = [[] for _ in assignments]
        dead = [False] * len(assignments)
        try:
            for _ in range(rounds):
                self.ray.get(self.actors[0].restart.remote())
                for i, r in enumerate(self.measure(task, assignments)):
                    if not r.ok:
                        dead[i], times[i] = True, []
                    elif not dead[i]:
                        times[i].append(list(r.times))
        finally:
            self.actors = actors
        return times

    def _dispatch(self, task: Task, rs: list) -> list[dict]:
        import json

        c = self.config
        refs, actors = [], []
        tj = task.to_json()
        for r in rs:
            req = {"task": {"shapes": task.shapes, "dtypes": task.dtypes, "num_outputs": task.num_outputs},
                   "assignment": r.assignment, "threads": c.threads, "seed": c.seed,
                   "warmup": c.warmup, "repeats": c.repeats, "min_repeat_ms": c.min_repeat_ms,
                   "timeout": c.run_timeout, "save_outputs": True, "cold_args": list(task.cold_args)}
            actor = self.actors[self._next % len(self.actors)]
            self._next += 1
            actors.append(actor)
            refs.append(actor.run.remote(req, self._objects.pop(json.dumps(r.assignment, sort_keys=True), {}), tj))
        out = []
        for ref in refs:
            try:
                out.append(self.ray.get(ref))
            except Exception as e:  # noqa: BLE001 - a dead actor
                from minimlir.tuning.measure import RUN_ERROR

                out.append({"error": RUN_ERROR, "seconds": 0.0, "message": f"measuring actor failed: {e}"})
        self._last_actors = actors
        return out

    def _checked(self, task: Task, r, out: dict):
        return self._run_checked(task, r, out)

    def close(self, wait: bool = True) -> None:
        for a in getattr(self, "actors", []):
            try:
                self.ray.kill(a)
            except Exception:  # noqa: BLE001
                pass
        self.actors = []
        super().close(wait)
