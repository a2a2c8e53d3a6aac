"""The native call's fast path (runtime/_native.py `_fast_native`): arrays that are already what the
function takes go straight to native code, with the params' pointers cached while they stay bound;
anything else takes the checking path, so results and error messages are the same either way."""

import numpy as np
import pytest

from minimlir.backend.runtime import ArgumentError, compile_mlir_text
from minimlir.runtime import _native

# y = x + w + v: x and v share the dim "batch"; w is a static param (its pointer is cached)
SRC = """
func.func private @add(%a: memref<?x3xf32>, %b: memref<4x3xf32>, %v: memref<?x3xf32>, %c: memref<?x3xf32>)
    attributes {loop.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %n = mem.dim %a, 0 : memref<?x3xf32>
  loop.for %i = %c0 to %n step %c1 {
    loop.for %j = %c0 to %c3 step %c1 {
      loop.block "add" (%vi = %i, %vj = %j) [spatial, spatial] {
        %x = mem.load %a[%vi, %vj] : memref<?x3xf32> -> f32
        %y = mem.load %b[%vi, %vj] : memref<4x3xf32> -> f32
        %z = mem.load %v[%vi, %vj] : memref<?x3xf32> -> f32
        %s = arith.addf %x, %y : f32
        %t = arith.addf %s, %z : f32
        mem.store %t, %c[%vi, %vj] : f32, memref<?x3xf32>
      }
    }
  }
  func.return
}
func.func @main(%x: memref<?x3xf32> {graph.name = "x", graph.dim_names = ["batch", ""]},
                %w: memref<4x3xf32> {mem.param = "w"},
                %v: memref<?x3xf32> {graph.name = "v", graph.dim_names = ["batch", ""]})
    -> (memref<?x3xf32> {graph.name = "y"}) {
  %n = mem.dim %x, 0 : memref<?x3xf32>
  %r = mem.alloc(%n) {mem.result_slot = 0 : i64} : memref<?x3xf32>
  func.call @add(%x, %w, %v, %r) : (memref<?x3xf32>, memref<4x3xf32>, memref<?x3xf32>, memref<?x3xf32>) -> ()
  func.return %r : memref<?x3xf32>
}
"""

W = np.arange(12, dtype=np.float32).reshape(4, 3)


@pytest.fixture(scope="module")
def prog():
    return compile_mlir_text(SRC, pipeline="convert-to-llvm", cache=False, params={"w": W})


@pytest.fixture
def fast_only(prog, monkeypatch):
    """Fail if a call leaves the fast path."""
    def refuse(*a, **k):
        raise AssertionError("the call took the checking path")

    monkeypatch.setattr(prog.main, "_slow_call", refuse)
    return prog


def test_plain_arrays_take_the_fast_path(fast_only):
    x = np.ones((4, 3), np.float32)
    v = np.full((4, 3), 0.5, np.float32)
    np.testing.assert_array_equal(fast_only.main(x, v), x + W + v)
    out = np.zeros((4, 3), np.float32)
    assert fast_only.main(x, v, out=out) is out
    np.testing.assert_array_equal(out, x + W + v)


def test_read_only_and_empty_inputs(fast_only):
    x = np.ones((2, 3), np.float32)
    x.flags.writeable = False  # no writable buffer: the pointer comes from x.ctypes
    v = np.zeros((2, 3), np.float32)
    np.testing.assert_array_equal(fast_only.main(x, v), x + W[:2])
    e = np.zeros((0, 3), np.float32)
    assert fast_only.main(e, e).shape == (0, 3)


def test_rebound_params_are_read_again(prog):
    x = np.zeros((4, 3), np.float32)
    np.testing.assert_array_equal(prog.main(x, x), W)
    try:
        prog.bind_params({"w": W * 10})
        np.testing.assert_array_equal(prog.main(x, x), W * 10)
    finally:
        prog.bind_params({"w": W})
    np.testing.assert_array_equal(prog.main(x, x), W)


@pytest.mark.parametrize("args, message", [
    ((np.ones((4, 3), np.float64), np.ones((4, 3), np.float32)), "input 'x': expected dtype float32 but got float64"),
    ((np.ones((4, 3), np.float32), np.ones((3, 3), np.float32)),
     r"input 'v': dim 0 \('batch'\) is 3 but input 'x' has 'batch' = 4"),
    ((np.ones((3, 4), np.float32).T, np.ones((4, 3), np.float32)), "input 'x': the array is not C-contiguous"),
    ((np.ones((4, 3), np.float32), np.ones((4, 2), np.float32)), r"input 'v': expected shape \(\?, 3\)"),
])
def test_anything_else_gets_the_checking_paths_error(prog, args, message):
    with pytest.raises(ArgumentError, match=message):
        prog.main(*args)


def test_read_only_out_is_refused(prog):
    x = np.ones((4, 3), np.float32)
    out = np.zeros((4, 3), np.float32)
    out.flags.writeable = False
    with pytest.raises(ArgumentError, match="read-only"):
        prog.main(x, x, out=out)


def test_data_pointer_matches_numpy():
    a = np.arange(10, dtype=np.float32)[2:]
    assert _native._data_pointer(a) == a.ctypes.data
    a.flags.writeable = False
    assert _native._data_pointer(a) == a.ctypes.data


DOUBLE = """
func.func @main(%x: memref<4x3xf32> {graph.name = "x"}, %y: memref<4x3xf32> {graph.name = "y"}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  loop.for %i = %c0 to %c4 step %c1 {
    loop.for %j = %c0 to %c3 step %c1 {
      %v = mem.load %x[%i, %j] : memref<4x3xf32> -> f32
      %d = arith.addf %v, %v : f32
      mem.store %d, %y[%i, %j] : f32, memref<4x3xf32>
    }
  }
  func.return
}
"""


def test_bound_call_writes_the_callers_buffers_with_nothing_marshalled_per_call(monkeypatch):
    """`bound` (the tuner's timing loops): the arguments are checked once; each call then runs the
    native code on the same arrays (their current contents), without the checking path."""
    fn = compile_mlir_text(DOUBLE, pipeline="convert-to-llvm", cache=False).main
    x, y = np.arange(12, dtype=np.float32).reshape(4, 3), np.zeros((4, 3), np.float32)
    call = fn.bound(x, y)
    monkeypatch.setattr(fn, "_slow_call", lambda *a, **k: pytest.fail("the checking path ran"))
    monkeypatch.setattr(fn, "_fast_native", lambda *a, **k: pytest.fail("the arguments were checked again"))
    call()
    np.testing.assert_array_equal(y, 2 * x)
    x += 1
    call()
    np.testing.assert_array_equal(y, 2 * x)


def test_bound_falls_back_to_the_checking_call():
    """Arrays the fast path does not take (here float64), or a function with results: the bound call
    is the ordinary call, errors included."""
    fn = compile_mlir_text(DOUBLE, pipeline="convert-to-llvm", cache=False).main
    call = fn.bound(np.zeros((4, 3)), np.zeros((4, 3), np.float32))
    with pytest.raises(ArgumentError):
        call()
    prog = compile_mlir_text(SRC, pipeline="convert-to-llvm", cache=False, params={"w": W})
    x = np.ones((4, 3), np.float32)
    (y,) = [prog.main.bound(x, x)()]
    np.testing.assert_array_equal(y, x + W + x)
