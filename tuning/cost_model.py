"""The cost model: gradient-boosted trees on loop-nest features (tuning/features.py), behind a small
interface, so the search does not care which library is underneath.

    model = make_model("lightgbm")            # or "xgboost", or "random"
    model.fit(X, y)                           # y: higher is better (log throughput relative to the task's best)
    scores = model.predict(X_new)
    model.save("m.json"); model = load_model("m.json")
    rho = spearman(y_held_out, model.predict(X_held_out))

`Trainer` is what the search uses: it keeps the samples, fits once `min_samples` exist, refits when
the data has grown by `refit_growth` (and at least 8 samples), and on every fit holds out a random
`holdout` share first and reports the Spearman rank correlation of its predictions on it (then fits
on everything). Until the first fit, `predict` is None and the search samples at random.
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import numpy as np


class CostModel(Protocol):
    name: str

    def fit(self, X: np.ndarray, y: np.ndarray) -> None: ...

    def predict(self, X: np.ndarray) -> np.ndarray: ...

    def save(self, path: str | Path) -> None: ...


def spearman(a: Sequence[float], b: Sequence[float]) -> float:
    """Spearman's rank correlation (average ranks for ties); nan for fewer than 3 points or a constant."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    if len(a) < 3:
        return float("nan")

    def ranks(x):
        order = np.argsort(x, kind="mergesort")
        r = np.empty(len(x))
        r[order] = np.arange(len(x))
        for v in np.unique(x):  # ties: average rank
            m = x == v
            if m.sum() > 1:
                r[m] = r[m].mean()
        return r

    ra, rb = ranks(a), ranks(b)
    if ra.std() == 0 or rb.std() == 0:
        return float("nan")
    return float(np.corrcoef(ra, rb)[0, 1])


class GBTModel:
    """Gradient-boosted regression trees: LightGBM (default) or XGBoost."""

    def __init__(self, backend: str = "lightgbm", seed: int = 0, rounds: int = 200):
        if backend not in ("lightgbm", "xgboost"):
            raise ValueError(f"unknown cost model backend '{backend}' (lightgbm, xgboost)")
        self.name = backend
        self.seed = seed
        self.rounds = rounds
        self.booster = None

    def fit(self, X: np.ndarray, y: np.ndarray) -> None:
        X, y = np.asarray(X, np.float64), np.asarray(y, np.float64)
        n = len(y)
        if self.name == "lightgbm":
            import lightgbm as lgb

            params = {"objective": "regression", "learning_rate": 0.08, "num_leaves": 15,
                      "min_data_in_leaf": max(2, min(10, n // 8)), "min_data_in_bin": 1,
                      "feature_fraction": 0.9, "bagging_fraction": 0.9, "bagging_freq": 1,
                      "seed": self.seed, "verbose": -1, "num_threads": 1, "deterministic": True}
            self.booster = lgb.train(params, lgb.Dataset(X, y, params={"verbose": -1}),
                                     num_boost_round=self.rounds)
        else:
            import xgboost as xgb

            params = {"objective": "reg:squarederror", "eta": 0.08, "max_depth": 5,
                      "min_child_weight": 1, "subsample": 0.9, "seed": self.seed, "nthread": 1}
            self.booster = xgb.train(params, xgb.DMatrix(X, y), num_boost_round=self.rounds)

    def predict(self, X: np.ndarray) -> np.ndarray:
        if self.booster is None:
            raise RuntimeError("the cost model is not fitted")
        X = np.asarray(X, np.float64)
        if self.name == "lightgbm":
            return np.asarray(self.booster.predict(X))
        import xgboost as xgb

        return np.asarray(self.booster.predict(xgb.DMatrix(X)))

    def save(self, path: str | Path) -> None:
        if self.booster is None:
            raise RuntimeError("the cost model is not fitted")
        if self.name == "lightgbm":
            blob = self.booster.model_to_string().encode()
        else:
            blob = bytes(self.booster.save_raw("json"))
        Path(path).write_text(json.dumps({"backend": self.name, "seed": self.seed, "rounds": self.rounds,
                                          "model": base64.b64encode(blob).decode()}))

    @staticmethod
    def load(path: str | Path) -> GBTModel:
        d = json.loads(Path(path).read_text())
        m = GBTModel(d["backend"], d.get("seed", 0), d.get("rounds", 200))
        blob = base64.b64decode(d["model"])
        if m.name == "lightgbm":
            import lightgbm as lgb

            m.booster = lgb.Booster(model_str=blob.decode())
        else:
            import xgboost as xgb

            m.booster = xgb.Booster()
            m.booster.load_model(bytearray(blob))
        return m


class RandomModel:
    """Scores at random: the baseline the search uses before a model is fitted (and for tests)."""

    name = "random"

    def __init__(self, seed: int = 0):
        self.rng = np.random.default_rng(seed)

    def fit(self, X: np.ndarray, y: np.ndarray) -> None:
        pass

    def predict(self, X: np.ndarray) -> np.ndarray:
        return self.rng.random(len(X))

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps({"backend": "random"}))


def make_model(name: str = "lightgbm", seed: int = 0):
    if name == "random":
        return RandomModel(seed)
    return GBTModel(name, seed)


def load_model(path: str | Path):
    d = json.loads(Path(path).read_text())
    return RandomModel() if d["backend"] == "random" else GBTModel.load(path)


def targets(costs: Sequence[float], groups: Sequence[str]) -> np.ndarray:
    """log2(best cost of the sample's task / its cost): 0 for a task's best, negative below, so one
    model ranks candidates of many tasks; failed candidates (inf) get the task's worst minus 1."""
    costs = np.asarray(costs, float)
    out = np.zeros(len(costs))
    for g in set(groups):
        idx = [i for i, x in enumerate(groups) if x == g]
        c = costs[idx]
        finite = c[np.isfinite(c)]
        if not len(finite):
            out[idx] = -1.0
            continue
        ok = np.isfinite(c)
        v = np.zeros(len(c))
        v[ok] = np.log2(finite.min() / c[ok])
        v[~ok] = v[ok].min() - 1.0
        out[idx] = v
    return out


class Trainer:
    """Samples plus a model fitted on them when there are enough (see the module docstring)."""

    def __init__(self, backend: str = "lightgbm", min_samples: int = 32, refit_growth: float = 0.25,
                 holdout: float = 0.2, seed: int = 0):
        self.backend, self.min_samples, self.refit_growth, self.holdout = backend, min_samples, refit_growth, holdout
        self.seed = seed
        self.X: list[list[float]] = []
        self.costs: list[float] = []
        self.groups: list[str] = []
        self.model = None
        self.fitted_on = 0
        self.history: list[dict] = []  # one entry per fit: samples, held-out Spearman

    def add(self, features: Sequence[float] | None, cost: float, group: str) -> None:
        if features is None:
            return
        self.X.append(list(features))
        self.costs.append(cost)
        self.groups.append(group)

    def maybe_fit(self) -> bool:
        n = len(self.X)
        if n < self.min_samples:
            return False
        if self.model is not None and n < max(self.fitted_on + 8, self.fitted_on * (1 + self.refit_growth)):
            return False
        X, y = np.asarray(self.X), targets(self.costs, self.groups)
        rng = np.random.default_rng(self.seed + n)
        perm = rng.permutation(n)
        k = max(3, int(math.ceil(self.holdout * n)))
        test, train = perm[:k], perm[k:]
        probe = make_model(self.backend, self.seed)
        probe.fit(X[train], y[train])
        rho = spearman(y[test], probe.predict(X[test]))
        self.model = make_model(self.backend, self.seed)
        self.model.fit(X, y)
        self.fitted_on = n
        self.history.append({"samples": n, "spearman": rho, "held_out": int(k)})
        return True

    @property
    def spearman(self) -> float | None:
        return self.history[-1]["spearman"] if self.history else None

    def predict(self, X: Sequence[Sequence[float]]) -> np.ndarray | None:
        if self.model is None:
            return None
        return self.model.predict(np.asarray(X, float))
