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


_FORKED_CHILD = """
import ctypes, os, sys, time
lib = ctypes.CDLL("libgomp.so.1")
body = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(lambda _ctx: None)
lib.GOMP_parallel(body, None, ctypes.c_uint(2), ctypes.c_uint(0))  # the parent's pool: LightGBM's in mini-tune
pid = os.fork()
if pid == 0:  # a forked compile worker (frontend/_split_lower.py) lowering parallel loops
    from minimlir.backend import parallel
    parallel.available()
    os._exit(0)
for _ in range(400):
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        sys.exit(os.waitstatus_to_exitcode(status))
    time.sleep(0.05)
os.kill(pid, 9)
sys.exit(3)
"""


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 cores")
def test_a_forked_compile_worker_does_not_run_a_parallel_region():
    """Regression: libgomp is not fork-safe. A compile worker forked from a process whose libgomp
    pool had started (the cost model's LightGBM in mini-tune) pinned the workers while loading
    libgomp for convert-parallel-to-llvm, a parallel region whose barrier waited forever for
    threads that did not survive the fork (benchmarks/tuning.py hung in compile(tuning_db=)).
    Loading libgomp starts no region now; the pinning waits for code that runs."""
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-c", _FORKED_CHILD], timeout=120)
    assert r.returncode == 0, "the forked child hung (3) or failed"
