"""Cross-check against MLIR itself: our llvm-dialect text through `mlir-translate --mlir-to-llvmir`
must parse, and the LLVM IR it gives must compute what our own translation computes."""

import ctypes
import math
import shutil
import subprocess

import numpy as np
import pytest
from _backend_harness import lower
from test_backend_jit import INT_OPS, SUM_LOOP, VECTOR

from minimlir.backend.jit import _ctype, compile_ir, compile_module, signatures

MLIR_TRANSLATE = shutil.which("mlir-translate-22") or shutil.which("mlir-translate")
pytestmark = pytest.mark.skipif(
    MLIR_TRANSLATE is None, reason="mlir-translate(-22) not on PATH (Debian package mlir-22-tools)"
)

MISC = """
func.func private @pair(%a: f32, %b: i32) -> (f32, i32) {
  func.return %a, %b : f32, i32
}
func.func @mix(%x: f32, %k: i64) -> f32 {
  %t = math.tanh %x : f32
  %p = math.fpowi %t, %k : f32, i64
  %r = math.round %p : f32
  %m = arith.maxnumf %r, %x : f32
  %n = arith.minimumf %m, %p : f32
  %i = arith.fptoui %n : f32 to i32
  %a, %b = func.call @pair(%n, %i) : (f32, i32) -> (f32, i32)
  %bf = arith.uitofp %b : i32 to f32
  %s = arith.addf %a, %bf : f32
  %q = math.rsqrt %s : f32
  func.return %q : f32
}
"""


def _both(text: str):
    module = lower(text)
    ours = compile_module(module, cache=False)
    translated = subprocess.run(
        [MLIR_TRANSLATE, "--mlir-to-llvmir"], input=str(module), capture_output=True, text=True
    )
    assert translated.returncode == 0, translated.stderr
    engine = compile_ir(translated.stdout)
    sigs = signatures(module)

    def theirs(name):
        ft = sigs[name]
        proto = ctypes.CFUNCTYPE(_ctype(ft.output), *[_ctype(t) for t in ft.inputs.data])
        return proto(engine.get_function_address(name))

    return ours, theirs, engine


def test_loop_agrees():
    ours, theirs, _engine = _both(SUM_LOOP)
    for n in (0, 7, 300):
        assert ours.get_function("sum_to")(n) == theirs("sum_to")(n) == float(sum(range(n)))


def test_integer_ops_agree():
    ours, theirs, _engine = _both(INT_OPS)
    for name in ("floordiv", "ceildiv", "remsi", "minmax"):
        for a in (-7, -1, 0, 5, 9):
            for b in (-3, 2, 4):
                assert ours.get_function(name)(a, b) == theirs(name)(a, b), (name, a, b)


def test_vector_math_agrees():
    ours, theirs, _engine = _both(VECTOR)
    x = np.linspace(-1.5, 2.0, 8, dtype=np.float32)
    y1, y2 = np.empty_like(x), np.empty_like(x)
    ours.get_function("vmath")(x.ctypes.data, y1.ctypes.data)
    theirs("vmath")(x.ctypes.data, y2.ctypes.data)
    np.testing.assert_array_equal(y1, y2)


def test_misc_ops_agree():
    ours, theirs, _engine = _both(MISC)
    for x, k in ((0.3, 2), (1.7, 3), (-0.4, 1)):
        a, b = ours.get_function("mix")(x, k), theirs("mix")(x, k)
        assert a == b or (math.isnan(a) and math.isnan(b))
