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


# A kernel-level module run directly (interpret_kernels with a kernel's name: its buffers in place).
CALLS = """
func.func @body(%x: memref<4xf32>, %y: memref<4xf32>) attributes {loop.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  loop.for %i = %c0 to %c4 step %c1 {
    %v = mem.load %x[%i] : memref<4xf32> -> f32
    %two = arith.constant 2.0 : f32
    %w = arith.mulf %v, %two : f32
    mem.store %w, %y[%i] : f32, memref<4xf32>
  }
  func.return
}
func.func @outer(%x: memref<4xf32>, %y: memref<4xf32>) attributes {loop.kernel} {
  func.call @body(%x, %y) : (memref<4xf32>, memref<4xf32>) -> ()
  %c0 = arith.constant 0 : index
  %s = mem.load %y[%c0] : memref<4xf32> -> f32
  %v = vector.broadcast %s : f32 to vector<4xf32>
  mem.store %v, %y[%c0] : vector<4xf32>, memref<4xf32>
  func.return
}
"""


def test_func_call_and_vector_broadcast_in_a_kernel():
    """func.call (an outlined parallel body) and vector.broadcast run in the interpreter itself."""
    x = np.array([1, 2, 3, 4], np.float32)
    y = np.zeros(4, np.float32)
    _, out = interp.interpret_kernels(interp.parse(CALLS), "outer", [x, y])
    np.testing.assert_array_equal(out, [2, 2, 2, 2])


def test_use_of_a_deallocated_buffer_and_out_of_bounds_are_errors():
    freed = """
func.func @k(%y: memref<2xf32>) attributes {loop.kernel} {
  %t = mem.alloc() : memref<2xf32>
  mem.dealloc %t : memref<2xf32>
  %c0 = arith.constant 0 : index
  %v = mem.load %t[%c0] : memref<2xf32> -> f32
  func.return
}
"""
    with pytest.raises(interp.InterpError, match=r"use of a deallocated buffer \(memref<2xf32>\)"):
        interp.interpret_kernels(interp.parse(freed), "k", [np.zeros(2, np.float32)])
    oob = freed.replace("  mem.dealloc %t : memref<2xf32>\n", "").replace("%c0 = arith.constant 0", "%c0 = arith.constant 2")
    with pytest.raises(interp.InterpError, match=r"mem.load out of bounds: index \[2\] into shape \[2\]"):
        interp.interpret_kernels(interp.parse(oob), "k", [np.zeros(2, np.float32)])


def test_an_unsupported_op_fails_only_when_it_runs():
    text = """
func.func @k(%y: memref<2xi32>, %n: index) attributes {loop.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  loop.for %i = %c0 to %n step %c1 {
    %a = arith.constant 7 : i32
    %b = arith.divui %a, %a : i32
    mem.store %b, %y[%i] : i32, memref<2xi32>
  }
  func.return
}
"""
    y = np.zeros(2, np.int32)
    interp.interpret_kernels(interp.parse(text), "k", [y, 0])  # the loop runs no iteration
    with pytest.raises(interp.InterpError, match="unsupported op arith.divui"):
        interp.interpret_kernels(interp.parse(text), "k", [y, 2])
