"""libgomp's workers pinned one per core, the calling thread left free (runtime/_gomp.py)."""

import os

import pytest

from minimlir.runtime import _gomp


def test_plan_pins_workers_not_the_caller():
    assert _gomp.pin_plan(2, [0, 1], {}) == {1: 1}
    assert _gomp.pin_plan(3, [2, 5, 7], {}) == {1: 5, 2: 7}


@pytest.mark.parametrize("env", [{"OMP_PROC_BIND": "true"}, {"OMP_PLACES": "cores"},
                                 {"GOMP_CPU_AFFINITY": "0-1"}, {"MINIMLIR_PIN_THREADS": "0"}])
def test_plan_respects_the_users_binding(env):
    assert _gomp.pin_plan(2, [0, 1], env) is None


def test_plan_pins_nothing_for_one_thread_or_oversubscription():
    assert _gomp.pin_plan(1, [0, 1], {}) is None
    assert _gomp.pin_plan(3, [0, 1], {}) is None


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 cores")
def test_workers_are_pinned_and_caller_is_not():
    from minimlir.backend import parallel

    lib = parallel._libgomp()
    if lib is None:
        pytest.skip("no libgomp")
    before = os.sched_getaffinity(0)
    parallel.set_num_threads(2)
    assert _gomp._pinned.get(lib._handle, 1) >= 2 or "MINIMLIR_PIN_THREADS" in os.environ
    assert os.sched_getaffinity(0) == before  # the calling thread keeps its cores
