"""AOT: a shared library that plain ctypes loads in a process without llvmlite or xDSL."""

import shutil
import subprocess
import sys
import textwrap

import pytest
from _backend_harness import lower

from minimlir.backend.aot import emit_object, emit_shared_library

TEXT = """
func.func @scaled_tanh(%x: f32, %k: i32) -> f32 {
  %kf = arith.sitofp %k : i32 to f32
  %0 = arith.mulf %x, %kf : f32
  %1 = math.tanh %0 : f32
  func.return %1 : f32
}
"""


def test_object_file(tmp_path):
    obj = emit_object(lower(TEXT), tmp_path / "k.o")
    assert obj.read_bytes()[:4] == b"\x7fELF"


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler to link with")
def test_shared_library_runs_without_the_compiler(tmp_path):
    so = emit_shared_library(lower(TEXT), tmp_path / "libk.so")
    script = textwrap.dedent(f"""
        import ctypes, math, sys
        lib = ctypes.CDLL({str(so)!r})
        f = lib.scaled_tanh
        f.restype = ctypes.c_float
        f.argtypes = [ctypes.c_float, ctypes.c_int32]
        got = f(0.25, 3)
        assert abs(got - math.tanh(0.75)) < 1e-6, got
        assert "llvmlite" not in sys.modules and "xdsl" not in sys.modules
        print("ok")
    """)
    out = subprocess.run([sys.executable, "-I", "-c", script], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
