"""Search (tuning/search.py): the space, the per-task policy, the task scheduler."""

from __future__ import annotations

import math

import numpy as np

from minimlir.tuning.cost_model import Trainer
from minimlir.tuning.measure import MeasureResult
from minimlir.tuning.search import SearchSpace, TaskScheduler, TaskSearch, akey
from minimlir.tuning.task import Task

DEFAULTS = {"matmul.mr": 8, "matmul.nv": 2, "matmul.width": 8, "matmul.mc": 64, "matmul.kc": 256,
            "matmul.order": "ikj", "matmul.pack_b": False, "matmul.clamp_rows": True, "matmul.unroll_rows": True, "matmul.parallel": True,
            "matmul.row_version": True}
FACTS = {"matmul.M": 64, "matmul.N": 128, "matmul.fit_width": 8}


def task(key="t", weight=1, flops=1e6, rule="matmul"):
    return Task(key=key, name=key, kernel_text="", shapes=[[64, 64]], dtypes=["float32"], num_outputs=1,
                weight=weight, flops=flops, rule=rule, defaults=dict(DEFAULTS), facts=dict(FACTS))


def test_space_samples_only_legal_candidates():
    sp = SearchSpace(task())
    assert sp.default() == DEFAULTS and sp.legal(sp.default())
    assert sp.size > 10_000
    rng = np.random.default_rng(0)
    for _ in range(50):
        a = sp.sample(rng)
        assert a is not None and sp.legal(a) and a["matmul.mc"] % a["matmul.mr"] == 0
        m = sp.mutate(a, rng)
        assert m is not None and m != a and sp.legal(m)
    assert not sp.legal(dict(DEFAULTS, **{"matmul.mr": 6, "matmul.mc": 64}))


def _results(batch, cost):
    return [MeasureResult(a, times=[cost(a)], features=[a["matmul.mr"], a["matmul.nv"], a["matmul.kc"]])
            for a in batch]


def test_policy_default_first_no_duplicates_then_model_guided():
    tr = Trainer(min_samples=16, seed=0)
    s = TaskSearch(task(), tr, np.random.default_rng(0), epsilon=0.25)
    cost = lambda a: 1.0 + abs(a["matmul.mr"] - 4) + abs(a["matmul.nv"] - 3)  # noqa: E731
    first = s.propose(8)
    assert first[0] == DEFAULTS and len({akey(a) for a in first}) == 8
    seen = set()
    for _ in range(6):
        batch = s.propose(8, features=lambda pool: [[a["matmul.mr"], a["matmul.nv"], a["matmul.kc"]]
                                                    for a in pool]) if seen else first
        assert not ({akey(a) for a in batch} & seen)
        seen |= {akey(a) for a in batch}
        res = _results(batch, cost)
        s.update(res)
        for r in res:
            tr.add(r.features, r.cost, "t")
        tr.maybe_fit()
    assert tr.model is not None and s.trials == 48
    assert s.best_cost <= 2.0 and s.default_cost == cost(DEFAULTS)
    assert s.speedup == s.default_cost / s.best_cost


def test_scheduler_warms_up_round_robin_then_follows_the_gradient():
    heavy, light = TaskSearch(task("heavy", weight=10), None, np.random.default_rng(0)), \
        TaskSearch(task("light", weight=1), None, np.random.default_rng(1))
    sch = TaskScheduler([light, heavy], np.random.default_rng(0), eps=0.0)
    assert sch.next() is light
    light.update(_results([DEFAULTS], lambda a: 1.0))
    assert sch.next() is heavy
    heavy.update(_results([DEFAULTS], lambda a: 1.0))
    # same latency, ten times the weight: the heavy task cuts the total most
    assert sch.next() is heavy
    assert sch.gradient(heavy) < sch.gradient(light) < 0
    assert math.isclose(sch.total_latency(), 11.0)
