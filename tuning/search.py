"""Search: the space of one task, the per-task search policy, the task scheduler across tasks.

    space = SearchSpace(task)                  # the knobs its default schedule read, legal values
    space.default()                            # candidate 0: what the heuristics pick
    policy = TaskSearch(task, trainer, rng)
    batch = policy.propose(8, features=fn)     # assignments to measure next
    policy.update(results)

`TaskSearch.propose`: candidate 0 first; random legal candidates until the cost model is fitted;
then it draws `pool_factor` x batch candidates (random ones, plus mutations of the measured elites
when the space is large: evolutionary search), scores them with the model and measures the best
ones, with a share `epsilon` picked at random instead (epsilon-greedy). Illegal assignments are
rejected by `check_assignment` before anything is built; nothing is measured twice.

`TaskScheduler` (Ansor's gradient task scheduler): every task gets one batch first (round-robin
warm-up); after that the next batch goes to the task whose more trials are expected to cut the
model's total latency sum(weight x best latency) the most: the gradient mixes the recent slope
of its best latency (backward, over a window of trials) with an optimistic forward estimate,
min(-c/t, beta * floor - c), where the floor is the task's FLOPs at the best speed of a similar
task or its bytes at the best bandwidth of any task, whichever is longer; times the task's weight;
with probability `eps` a random task instead.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from minimlir.passes.loop.schedule.default.knobs import check_assignment, knob_decl, with_default
from minimlir.tuning.task import Task


def akey(a: dict[str, Any]) -> str:
    return json.dumps(a, sort_keys=True)


class SearchSpace:
    """The knobs of one task (those its default schedule read) with their legal values."""

    def __init__(self, task: Task):
        self.task = task
        self.knobs: dict[str, tuple] = {}
        for name, default in task.defaults.items():
            k = knob_decl(name)
            if k is not None:
                self.knobs[name] = with_default(k.values, default)

    @property
    def size(self) -> int:
        return math.prod(len(v) for v in self.knobs.values()) if self.knobs else 1

    def default(self) -> dict[str, Any]:
        return dict(self.task.defaults)

    def legal(self, a: dict[str, Any]) -> bool:
        return check_assignment(a, self.task.facts, self.task.defaults) is None

    def sample(self, rng: np.random.Generator, tries: int = 200) -> dict[str, Any] | None:
        for _ in range(tries):
            a = {n: vals[int(rng.integers(len(vals)))] for n, vals in self.knobs.items()}
            if self.legal(a):
                return a
        return None

    def mutate(self, a: dict[str, Any], rng: np.random.Generator, tries: int = 50) -> dict[str, Any] | None:
        """Change one or two knobs: to a neighbouring value (ordered knobs) or any other value."""
        names = [n for n, v in self.knobs.items() if len(v) > 1]
        if not names:
            return None
        for _ in range(tries):
            b = dict(a)
            for n in rng.choice(names, size=min(len(names), 1 + int(rng.random() < 0.3)), replace=False):
                vals = self.knobs[n]
                i = vals.index(b[n]) if b[n] in vals else 0
                if rng.random() < 0.6 and not isinstance(vals[0], str):
                    j = min(len(vals) - 1, max(0, i + (1 if rng.random() < 0.5 else -1)))
                else:
                    j = int(rng.integers(len(vals)))
                b[n] = vals[j]
            if b != a and self.legal(b):
                return b
        return None


class TaskSearch:
    """The search state of one task: what was measured, the best so far, what to measure next."""

    def __init__(self, task: Task, trainer, rng: np.random.Generator, *, epsilon: float = 0.2,
                 pool_factor: int = 4, evolve_above: int = 512, elites: int = 4):
        self.task, self.trainer, self.rng = task, trainer, rng
        self.space = SearchSpace(task)
        self.epsilon, self.pool_factor, self.evolve_above, self.elites = epsilon, pool_factor, evolve_above, elites
        self.measured: dict[str, Any] = {}  # akey -> MeasureResult (or a record dict)
        self.best_cost = math.inf
        self.best: dict[str, Any] | None = None
        self.default_cost = math.inf
        self.trials = 0
        self.history: list[tuple[int, float]] = []  # (trials so far, best cost) after each trial
        self.global_trials: list[int] = []  # the run's trial number of each of those trials
        self.exhausted = False
        self.confirmed = False  # best_cost and default_cost re-measured side by side (tuner.confirm)

    def propose(self, n: int, features: Callable[[list[dict]], list] | None = None) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        seen = set(self.measured)

        def take(a):
            if a is not None and akey(a) not in seen:
                seen.add(akey(a))
                out.append(a)

        if not self.measured:
            take(self.space.default())
        model_ready = self.trainer is not None and self.trainer.model is not None and features is not None
        if not model_ready:
            for _ in range(20 * n):
                if len(out) >= n:
                    break
                take(self.space.sample(self.rng))
        else:
            n_random = int(math.ceil(self.epsilon * (n - len(out))))
            n_model = n - len(out) - n_random
            pool: list[dict] = []
            pool_seen = set(seen)
            elites = self._elites()
            for _ in range(self.pool_factor * max(1, n_model) * 5):
                if len(pool) >= self.pool_factor * max(1, n_model):
                    break
                if elites and self.space.size > self.evolve_above and self.rng.random() < 0.7:
                    a = self.space.mutate(elites[int(self.rng.integers(len(elites)))], self.rng)
                else:
                    a = self.space.sample(self.rng)
                if a is not None and akey(a) not in pool_seen:
                    pool_seen.add(akey(a))
                    pool.append(a)
            if pool:
                feats = features(pool)
                ok = [(a, f) for a, f in zip(pool, feats) if f is not None]
                if ok:
                    scores = self.trainer.predict([f for _, f in ok])
                    order = np.argsort(-np.asarray(scores), kind="stable")
                    for i in order[:n_model]:
                        take(ok[int(i)][0])
            for _ in range(20 * n):
                if len(out) >= n:
                    break
                take(self.space.sample(self.rng))
        if not out:
            self.exhausted = True
        return out

    def _elites(self) -> list[dict]:
        good = sorted((r for r in self.measured.values() if _cost(r) < math.inf), key=_cost)
        return [dict(_assignment(r)) for r in good[:self.elites]]

    def update(self, results: Sequence[Any], default_first: bool = False) -> None:
        for r in results:
            a = _assignment(r)
            self.measured[akey(a)] = r
            self.trials += 1
            c = _cost(r)
            if akey(a) == akey(self.space.default()):
                self.default_cost = c
            if c < self.best_cost:
                self.best_cost, self.best = c, dict(a)
            self.history.append((self.trials, self.best_cost))

    @property
    def gflops(self) -> float:
        return self.task.flops / self.best_cost / 1e9 if self.best_cost < math.inf else 0.0

    @property
    def speedup(self) -> float:
        if self.best_cost < math.inf and self.default_cost < math.inf:
            return self.default_cost / self.best_cost
        return float("nan")


def _cost(r) -> float:
    if isinstance(r, dict):
        t = r.get("times") or []
        return float(min(t)) if r.get("error") == "OK" and t else math.inf
    return r.cost


def _assignment(r) -> dict:
    return r["knobs"] if isinstance(r, dict) else r.assignment


class TaskScheduler:
    """Which task gets the next batch (see the module docstring)."""

    def __init__(self, searches: Sequence[TaskSearch], rng: np.random.Generator, *, alpha: float = 0.2,
                 beta: float = 2.0, window: int = 8, eps: float = 0.05):
        self.searches = list(searches)
        self.rng, self.alpha, self.beta, self.window, self.eps = rng, alpha, beta, window, eps

    def total_latency(self) -> float:
        return sum(s.task.weight * s.best_cost for s in self.searches)

    def next(self) -> TaskSearch | None:
        live = [s for s in self.searches if not s.exhausted]
        if not live:
            return None
        warm = [s for s in live if s.trials == 0]
        if warm:
            return warm[0]  # round-robin warm-up, in task order
        if self.rng.random() < self.eps:
            return live[int(self.rng.integers(len(live)))]
        grads = [self.gradient(s) for s in live]
        return live[int(np.argmin(grads))]

    def gradient(self, s: TaskSearch) -> float:
        """d(total latency)/d(trials of s), negative = more trials help (Ansor's estimate)."""
        c = s.best_cost
        if not math.isfinite(c):
            return -math.inf  # nothing works yet: try it again
        h = s.history
        if len(h) > self.window:
            t0, c0 = h[-1 - self.window]
            c0 = c0 if math.isfinite(c0) else c
            backward = (c - c0) / max(1, s.trials - t0)
        else:
            backward = 0.0
        similar = [o for o in self.searches if o.task.rule == s.task.rule and o.best_cost < math.inf]
        best_speed = max((o.task.flops / o.best_cost for o in similar), default=0.0)
        forward = -c / max(1, s.trials)
        if best_speed > 0 and s.task.flops > 0:
            # what it would take at the best speed of its kind, but not less than moving its bytes at
            # the best bandwidth any task reached (Ansor has the FLOP term only: a kernel of few FLOPs,
            # a small matmul bound by reading its weight, then looked as if all of its time could go,
            # however long it had been tuned, and took 496 of 596 trials of a BERT-like encoder)
            floor = s.task.flops / best_speed
            measured = [o for o in self.searches if o.best_cost < math.inf]
            best_bw = max((_bytes(o.task) / o.best_cost for o in measured), default=0.0)
            if best_bw > 0:
                floor = max(floor, _bytes(s.task) / best_bw)
            forward = min(forward, self.beta * floor - c)
        return s.task.weight * (self.alpha * backward + (1 - self.alpha) * forward)


def _bytes(task: Task) -> float:
    """The bytes a kernel must move at least: each of its arguments once."""
    return float(sum(math.prod(sh) * np.dtype(dt).itemsize for sh, dt in zip(task.shapes, task.dtypes)))
