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


def test_scheduler_does_not_keep_tuning_a_kernel_bound_by_its_bytes():
    """A heavy-weight kernel of few FLOPs that already moves its bytes at the best bandwidth seen
    (a small matmul bound by reading its weight) has little left to gain: the trials go to the
    compute-bound kernel that runs at a fraction of the best speed of its kind. (Before the bytes
    floor, its FLOP floor was ~0 and the whole latency looked removable: a BERT-like encoder spent
    496 of 596 trials on such a 0.06 ms kernel.)"""
    def searched(key, weight, flops, shape, cost, trials):
        t = Task(key=key, name=key, kernel_text="", shapes=[shape], dtypes=["float32"], num_outputs=1,
                 weight=weight, flops=flops, rule="matmul", defaults=dict(DEFAULTS), facts=dict(FACTS))
        s = TaskSearch(t, None, np.random.default_rng(0))
        s.update(_results([DEFAULTS] * trials, lambda a: cost))
        return s

    weight_bound = searched("weight_bound", 10, 3.3e4, [256, 256], 6e-5, 100)  # 256 KB in 60 us
    qk = searched("qk", 2, 4.2e6, [64, 64], 5e-4, 40)  # 8.4 GFLOP/s
    fast = searched("fast", 1, 4.2e6, [64, 64], 1.45e-4, 10)  # 29 GFLOP/s: the best speed of the kind
    sch = TaskScheduler([weight_bound, qk, fast], np.random.default_rng(0), eps=0.0)
    assert sch.next() is qk
    assert sch.gradient(qk) < sch.gradient(weight_bound) < 0


class _Retimer:
    """An executor whose re-measurement gives each candidate a fixed time (the machine, quiet)."""

    def __init__(self, true_cost):
        self.true_cost, self.calls = true_cost, []

    def remeasure(self, task, assignments, rounds):
        self.calls.append((task.key, [dict(a) for a in assignments], rounds))
        return [[[self.true_cost(a)] * 3 for _ in range(rounds)] for a in assignments]


def _searched(measured):
    s = TaskSearch(task(), None, np.random.default_rng(0))
    s.update([MeasureResult(a, times=[c]) for a, c in measured])
    return s


def test_confirmation_keeps_the_default_when_the_lucky_best_loses_side_by_side():
    """The search measured a candidate faster than the default once (a quiet moment); re-timed side
    by side it is slower, so the verdict is the default (a regression: the tuned ResNet-50 was slower
    than the default schedule)."""
    from minimlir.tuning.tuner import confirm

    lucky, other = dict(DEFAULTS, **{"matmul.mr": 4}), dict(DEFAULTS, **{"matmul.mr": 2})
    s = _searched([(DEFAULTS, 1.0), (lucky, 0.8), (other, 0.9)])
    assert s.speedup == 1.25
    truth = {akey(DEFAULTS): 1.0, akey(lucky): 1.1, akey(other): 1.05}
    ex = _Retimer(lambda a: truth[akey(a)])
    (rec,) = confirm(ex, [s], CPU_FP, "run1", top=2, rounds=3)
    (key, asked, rounds), = ex.calls
    assert asked == [DEFAULTS, lucky, other] and rounds == 3  # the default and the best two, by recorded cost
    assert rec["kind"] == "confirm" and rec["default"] and rec["knobs"] == DEFAULTS
    assert min(rec["times"]) == 1.0 and min(rec["default_times"]) == 1.0
    assert s.best == DEFAULTS and s.speedup == 1.0 and s.confirmed


def test_confirmation_keeps_a_candidate_that_beats_the_default_side_by_side():
    from minimlir.tuning.tuner import confirm

    a, b = dict(DEFAULTS, **{"matmul.mr": 4}), dict(DEFAULTS, **{"matmul.mr": 2})
    s = _searched([(DEFAULTS, 1.0), (a, 0.7), (b, 0.8)])
    truth = {akey(DEFAULTS): 1.0, akey(a): 0.9, akey(b): 0.6}
    (rec,) = confirm(_Retimer(lambda x: truth[akey(x)]), [s], CPU_FP, "run1", top=3, rounds=2)
    assert rec["knobs"] == b and not rec["default"] and rec["task"] == "t"
    assert s.best == b and abs(s.speedup - 1 / 0.6) < 1e-9
    # nothing to confirm where the default is already the best
    s2 = _searched([(DEFAULTS, 1.0), (a, 1.2)])
    assert confirm(_Retimer(lambda x: 1.0), [s2], CPU_FP, "run1") == [] and not s2.confirmed


def test_confirmation_keeps_the_default_on_a_tie():
    """A candidate 1% faster side by side is within the noise of a cold-weights run: the default
    stays (CONFIRM_TIE); 3% faster wins."""
    from minimlir.tuning.tuner import CONFIRM_TIE, confirm

    a = dict(DEFAULTS, **{"matmul.mr": 4})
    for side_by_side, wins in ((0.99, False), (1 / (1 + CONFIRM_TIE) - 0.01, True)):
        s = _searched([(DEFAULTS, 1.0), (a, 0.9)])
        truth = {akey(DEFAULTS): 1.0, akey(a): side_by_side}
        (rec,) = confirm(_Retimer(lambda x, t=truth: t[akey(x)]), [s], CPU_FP, "run1", top=1, rounds=2)
        assert rec["default"] is not wins and s.best == (a if wins else DEFAULTS)


def test_confirmation_takes_the_median_of_paired_rounds():
    """ResNet-50's fused_conv2d_add_relu_6: a candidate ran 3% faster than the default in one
    measuring process and 10% slower in others; the verdict took the fastest time over all rounds,
    so one lucky process made it the tuned schedule (0.91x when re-measured). Each round is a fresh
    process now; a candidate must be faster than the default in every round (process), and its
    score is the median over the rounds of its time over the default's in the same round: neither
    lucky processes nor one round hit by a load decide."""
    from minimlir.tuning.tuner import confirm

    a = dict(DEFAULTS, **{"matmul.mr": 4})
    per_round = {akey(DEFAULTS): [1.0, 1.0, 1.0], akey(a): [0.9, 1.1, 1.1]}

    class _Processes(_Retimer):
        def remeasure(self, task, assignments, rounds):
            return [[[t] * 3 for t in per_round[akey(x)]] for x in assignments]

    def verdict(measured_best):
        s = _searched([(DEFAULTS, 1.0), (a, measured_best)])
        (rec,) = confirm(_Processes(None), [s], CPU_FP, "run1", top=1, rounds=3)
        return rec, s

    rec, s = verdict(0.85)
    assert rec["default"] and s.best == DEFAULTS and s.speedup == 1.0
    assert rec["round_minima"] == [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]
    # faster in every round: it wins; the confirmed cost is the default's median round times its score
    per_round[akey(a)] = [0.9, 0.95, 0.85]
    rec, s = verdict(0.85)
    assert not rec["default"] and s.best == a and abs(s.best_cost - 0.9) < 1e-12 and s.default_cost == 1.0
    assert rec["round_minima"] == [[1.0, 1.0, 1.0], [0.9, 0.95, 0.85]]
    # one round in which a load slowed the default 300x (mini-tune on a busy machine reported
    # 113x) does not make a 5% slower candidate the winner
    per_round[akey(DEFAULTS)], per_round[akey(a)] = [1.0, 300.0, 1.0], [1.05, 1.05, 1.05]
    rec, s = verdict(0.9)
    assert rec["default"] and s.best == DEFAULTS and s.default_cost == 1.0
    # faster in two processes of three, 16% slower in the third (ResNet-50's fused_conv2d_relu_12:
    # the median chose it, re-measured in fresh processes it ran 0.84x): a layout lottery, out
    per_round[akey(DEFAULTS)], per_round[akey(a)] = [1.0, 1.0, 1.0], [0.9, 0.9, 1.16]
    rec, s = verdict(0.85)
    assert rec["default"] and s.best == DEFAULTS
    # a candidate that failed in one round is out
    per_round[akey(DEFAULTS)], per_round[akey(a)] = [1.0, 1.0, 1.0], [0.5, 0.5]
    rec, s = verdict(0.5)
    assert rec["default"]


CPU_FP = {"cpu": "znver4", "features": "avx512f", "cores": 2, "llvm": "20", "node": "a"}
