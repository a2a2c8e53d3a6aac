"""The cost model (tuning/cost_model.py): fit / predict / save / load, held-out Spearman, the Trainer."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from minimlir.tuning.cost_model import Trainer, load_model, make_model, spearman, targets

BACKENDS = ["lightgbm"] + (["xgboost"] if importlib.util.find_spec("xgboost") else [])


def data(n, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.random((n, 6))
    y = 3 * X[:, 0] - 2 * X[:, 1] ** 2 + 0.5 * X[:, 2] + 0.05 * rng.standard_normal(n)
    return X, y


def test_spearman_basics():
    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert spearman([1, 2, 2, 3], [1, 2, 3, 4]) == pytest.approx(0.9486833, abs=1e-6)
    assert np.isnan(spearman([1, 2], [1, 2]))


@pytest.mark.parametrize("backend", BACKENDS)
def test_fit_predict_save_load(backend, tmp_path):
    X, y = data(300)
    Xt, yt = data(100, seed=1)
    m = make_model(backend)
    m.fit(X, y)
    assert spearman(yt, m.predict(Xt)) > 0.85
    m.save(tmp_path / "m.json")
    m2 = load_model(tmp_path / "m.json")
    np.testing.assert_allclose(m2.predict(Xt), m.predict(Xt), rtol=1e-6, atol=1e-6)


def test_unknown_backend_is_an_error():
    with pytest.raises(ValueError, match="unknown cost model backend"):
        make_model("catboost")


def test_targets_rank_within_each_task():
    t = targets([1.0, 2.0, float("inf"), 10.0, 5.0], ["a", "a", "a", "b", "b"])
    assert t[0] == 0 and t[1] == pytest.approx(-1.0) and t[2] == pytest.approx(-2.0)
    assert t[4] == 0 and t[3] == pytest.approx(-1.0)


def test_trainer_fits_when_enough_and_refits_when_grown():
    X, y = data(80)
    tr = Trainer(min_samples=32, refit_growth=0.25)
    costs = np.exp(-y)  # lower cost = higher y
    for i in range(31):
        tr.add(X[i], costs[i], "t")
    assert not tr.maybe_fit() and tr.predict(X[:2]) is None
    tr.add(X[31], costs[31], "t")
    assert tr.maybe_fit() and tr.fitted_on == 32
    for i in range(32, 39):
        tr.add(X[i], costs[i], "t")
    assert not tr.maybe_fit()  # grew by 7 < 8
    for i in range(39, 80):
        tr.add(X[i], costs[i], "t")
    assert tr.maybe_fit() and tr.fitted_on == 80
    assert tr.spearman is not None and tr.spearman > 0.6
    assert [h["samples"] for h in tr.history] == [32, 80]
