"""tests/unit mirrors the packages (dialects/, graph/, loop/, mem/, to_llvm/, backend/, frontend/,
tools/). This file's folder is on sys.path (pytest's rootdir-less conftest rule), so the shared test
helpers here (`_backend_harness`, `_schedule_kernels`) import from every subfolder."""

import os
import sys

import pytest

# `pytest -n auto` runs one worker per core, and each worker's parallel loops start a libgomp
# team of their own: with libgomp's default spin-waiting, idle team threads burn the cores the
# other workers need (a kernel ran 18x slower on a loaded machine). Waiting threads sleep instead; results don't change.
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    # One compile process per worker when the workers already fill the cores: a compile's own
    # parallelism (forked split-lowering workers, LLVM codegen children) only adds process starts
    # and copies there (87 -> 66 s for the heaviest model tests on 2 cores). Tests of the parallel
    # compile set these themselves.
    from minimlir.backend.parallel import cpu_count

    if int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) >= cpu_count():
        os.environ.setdefault("MINIMLIR_COMPILE_JOBS", "1")
        os.environ.setdefault("MINIMLIR_LLVM_JOBS", "1")

# The reference interpreter moved into the package (minimlir.compiler.interpreter); tests written
# against the old helper name keep running.
import minimlir.compiler.interpreter as _interpreter

sys.modules.setdefault("_legalize_harness", _interpreter)


@pytest.hookimpl(wrapper=True)
def pytest_pyfunc_call(pyfuncitem):
    """A test that runs natively where the native back end does not work is skipped, with the reason."""
    try:
        return (yield)
    except _interpreter.NativeUnavailable as e:
        pytest.skip(str(e))
