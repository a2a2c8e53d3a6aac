"""tests/unit mirrors the packages (dialects/, graph/, loop/, mem/, to_llvm/, backend/, frontend/,
tools/). This file's folder is on sys.path (pytest's rootdir-less conftest rule), so the shared test
helpers here (`_backend_harness`, `_schedule_kernels`) import from every subfolder."""

import sys

import pytest

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
