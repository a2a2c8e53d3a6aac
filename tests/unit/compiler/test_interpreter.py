"""minimlir.compiler.interpreter as a library: no pytest inside; an unavailable native back end is
an exception (the tests' conftest turns it into a skip)."""

import subprocess
import sys

import numpy as np
import pytest

import minimlir.compiler.interpreter as interp

RELU = """
func.func @main(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = graph.relu %x : tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
"""


def test_interpreter_runs_a_graph():
    x = np.array([[-1, 2, -3], [4, -5, 6]], dtype=np.float32)
    (y,) = interp.run_graph(RELU, [x], backend="interp")
    interp.assert_outputs([y], [np.maximum(x, 0)])


def test_native_unavailable_is_an_exception_not_a_skip(monkeypatch):
    monkeypatch.setattr(interp, "native_status", lambda: (False, "no native here"))
    with pytest.raises(interp.NativeUnavailable, match="no native here"):
        interp.run_graph(RELU, [np.zeros((2, 3), np.float32)], backend="native")


def test_importing_the_interpreter_imports_no_pytest():
    code = "import sys, minimlir.compiler.interpreter; print('pytest' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
