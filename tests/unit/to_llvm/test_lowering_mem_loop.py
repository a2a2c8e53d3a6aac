"""convert-loop-to-llvm + convert-mem-to-llvm: hand-written mem/loop kernels, JITed, vs NumPy."""

import re
import shutil
import subprocess

import numpy as np
import pytest

from minimlir.backend.runtime import compile_mlir_text, run_pipeline, _context
from xdsl.parser import Parser

ADD = """
func.func @add(%a: memref<?x?xf32>, %b: memref<?x?xf32>, %c: memref<?x?xf32>) attributes {loop.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = mem.dim %a, 0 : memref<?x?xf32>
  %m = mem.dim %a, 1 : memref<?x?xf32>
  loop.for %i = %c0 to %n step %c1 parallel {
    loop.for %j = %c0 to %m step %c1 vectorize {
      loop.block "add" (%vi = %i, %vj = %j) [spatial, spatial] {
        %x = mem.load %a[%vi, %vj] : memref<?x?xf32> -> f32
        %y = mem.load %b[%vi, %vj] : memref<?x?xf32> -> f32
        %s = arith.addf %x, %y : f32
        mem.store %s, %c[%vi, %vj] : f32, memref<?x?xf32>
      }
    }
  }
  func.return
}
"""

MATMUL = """
func.func @matmul(%a: memref<?x?xf32>, %b: memref<?x?xf32>, %c: memref<?x?xf32>) attributes {loop.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %m = mem.dim %a, 0 : memref<?x?xf32>
  %k = mem.dim %a, 1 : memref<?x?xf32>
  %n = mem.dim %b, 1 : memref<?x?xf32>
  loop.for %i = %c0 to %m step %c1 {
    loop.for %j = %c0 to %n step %c1 {
      loop.for %r = %c0 to %k step %c1 {
        loop.block "matmul" (%vi = %i, %vj = %j, %vr = %r) [spatial, spatial, reduce] {
          %x = mem.load %a[%vi, %vr] : memref<?x?xf32> -> f32
          %y = mem.load %b[%vr, %vj] : memref<?x?xf32> -> f32
          %acc = mem.load %c[%vi, %vj] : memref<?x?xf32> -> f32
          %p = arith.mulf %x, %y : f32
          %s = arith.addf %acc, %p : f32
          mem.store %s, %c[%vi, %vj] : f32, memref<?x?xf32>
        } init {
          %z = arith.constant 0.0 : f32
          mem.store %z, %c[%vi, %vj] : f32, memref<?x?xf32>
        }
      }
    }
  }
  func.return
}
"""

# reshape (2x6 -> 3x4 view) then a kernel on the view, through the entry ABI
VIEW = """
func.func private @scale(%a: memref<3x4xf32>, %c: memref<3x4xf32>) attributes {loop.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  loop.for %i = %c0 to %c3 step %c1 {
    loop.for %j = %c0 to %c4 step %c1 {
      loop.block "scale" (%vi = %i, %vj = %j) [spatial, spatial] {
        %x = mem.load %a[%vi, %vj] : memref<3x4xf32> -> f32
        %f = arith.index_cast %vi : index to i64
        %g = arith.sitofp %f : i64 to f32
        %s = arith.mulf %x, %g : f32
        mem.store %s, %c[%vi, %vj] : f32, memref<3x4xf32>
      }
    }
  }
  func.return
}
func.func @main(%x: memref<2x6xf32>) -> memref<3x4xf32> {
  %v = mem.view %x : memref<2x6xf32> -> memref<3x4xf32>
  %r = mem.alloc() {mem.result_slot = 0 : i64} : memref<3x4xf32>
  func.call @scale(%v, %r) : (memref<3x4xf32>, memref<3x4xf32>) -> ()
  func.return %r : memref<3x4xf32>
}
"""

# entry: intermediates in an arena (two slots), two results, one an input copy
ARENA = """
func.func private @addk(%a: memref<?xf32>, %b: memref<?xf32>, %c: memref<?xf32>) attributes {loop.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = mem.dim %a, 0 : memref<?xf32>
  loop.for %i = %c0 to %n step %c1 {
    loop.block "add" (%vi = %i) [spatial] {
      %x = mem.load %a[%vi] : memref<?xf32> -> f32
      %y = mem.load %b[%vi] : memref<?xf32> -> f32
      %s = arith.addf %x, %y : f32
      mem.store %s, %c[%vi] : f32, memref<?xf32>
    }
  }
  func.return
}
func.func @main(%x: memref<?xf32>) -> (memref<?xf32>, memref<?xf32>) {
  %n = mem.dim %x, 0 : memref<?xf32>
  %c4 = arith.constant 4 : index
  %c64 = arith.constant 64 : index
  %bytes = arith.muli %n, %c4 : index
  %size = arith.addi %bytes, %c64 : index
  %size2 = arith.addi %size, %bytes : index
  %arena = mem.arena(%size2) : memref<?xi8>
  %c0 = arith.constant 0 : index
  %t0 = mem.slot %arena[%c0](%n) : memref<?xi8> -> memref<?xf32>
  %t1 = mem.slot %arena[%size](%n) : memref<?xi8> -> memref<?xf32>
  %one = arith.constant 1.0 : f32
  mem.fill %one, %t0 : f32, memref<?xf32>
  func.call @addk(%x, %t0, %t1) : (memref<?xf32>, memref<?xf32>, memref<?xf32>) -> ()
  %r = mem.alloc(%n) {mem.result_slot = 0 : i64} : memref<?xf32>
  func.call @addk(%t1, %t1, %r) : (memref<?xf32>, memref<?xf32>, memref<?xf32>) -> ()
  mem.dealloc %arena : memref<?xi8>
  func.return %r, %x : memref<?xf32>, memref<?xf32>
}
"""

# scratch: static alloca inside a loop (hoisted), copy, zero fill (memset), vector load/store
SCRATCH = """
func.func @k(%a: memref<?x8xf32>, %c: memref<?x8xf32>) attributes {loop.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = mem.dim %a, 0 : memref<?x8xf32>
  loop.for %i = %c0 to %n step %c1 {
    loop.block "row" (%vi = %i) [spatial] {
      %t = mem.alloca() : memref<1x8xf32>
      %z = arith.constant 0.0 : f32
      mem.fill %z, %t : f32, memref<1x8xf32>
      %v = mem.load %a[%vi, %c0] : memref<?x8xf32> -> vector<8xf32>
      %w = mem.load %t[%c0, %c0] : memref<1x8xf32> -> vector<8xf32>
      %s = arith.addf %v, %v : vector<8xf32>
      %u = arith.addf %s, %w : vector<8xf32>
      mem.store %u, %c[%vi, %c0] : vector<8xf32>, memref<?x8xf32>
    }
  }
  func.return
}
func.func @copy(%a: memref<?x8xf32>, %c: memref<?x8xf32>) {
  mem.copy %a, %c : memref<?x8xf32>, memref<?x8xf32>
  func.return
}
"""


def _lower(text: str) -> str:
    ctx = _context()
    module = Parser(ctx, text, "<test>").parse_module()
    run_pipeline(module, "convert-to-llvm", ctx)
    return str(module)


def _prog(text):
    return compile_mlir_text(text, pipeline="convert-to-llvm", cache=False)


def test_elementwise_add_dynamic_dims():
    prog = _prog(ADD)
    rng = np.random.default_rng(0)
    for shape in [(3, 5), (1, 17), (0, 4)]:
        a = rng.standard_normal(shape).astype(np.float32)
        b = rng.standard_normal(shape).astype(np.float32)
        c = np.full(shape, np.nan, np.float32)
        prog.add(a, b, c)
        np.testing.assert_array_equal(c, a + b)


def test_matmul_reduce_with_init():
    prog = _prog(MATMUL)
    rng = np.random.default_rng(1)
    a = rng.standard_normal((5, 7)).astype(np.float32)
    b = rng.standard_normal((7, 3)).astype(np.float32)
    c = np.full((5, 3), 123.0, np.float32)  # init must overwrite the garbage
    prog.matmul(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)


def test_view_reshape_entry():
    prog = _prog(VIEW)
    x = np.arange(12, dtype=np.float32).reshape(2, 6)
    y = prog.main(x)
    np.testing.assert_array_equal(y, x.reshape(3, 4) * np.arange(3, dtype=np.float32)[:, None])


def test_arena_slots_fill_and_two_results():
    prog = _prog(ARENA)
    x = np.arange(5, dtype=np.float32)
    r, xc = prog.main(x)
    np.testing.assert_array_equal(r, 2 * (x + 1))
    np.testing.assert_array_equal(xc, x)
    assert not np.shares_memory(xc, x)  # a returned input is copied into its own result


def test_alloca_vector_copy():
    prog = _prog(SCRATCH)
    a = np.random.default_rng(2).standard_normal((4, 8)).astype(np.float32)
    c = np.zeros_like(a)
    prog.k(a, c)
    np.testing.assert_array_equal(c, 2 * a)
    d = np.zeros_like(a)
    prog.copy(a, d)
    np.testing.assert_array_equal(d, a)


def test_static_alloca_hoisted_to_entry_block():
    text = _lower(SCRATCH)
    body = text.split("llvm.func @k")[1].split("llvm.func @copy")[0]
    entry_block = body.split("^bb")[0]
    assert "llvm.alloca" in entry_block
    assert body.count("llvm.alloca") == 1


def test_kernel_pointers_noalias_and_no_ptrtoint():
    text = _lower(MATMUL)
    assert text.count("{llvm.noalias}") == 3
    assert "ptrtoint" not in text and "inttoptr" not in text
    assert "llvm.getelementptr inbounds" in text


def test_entry_abi_signature():
    text = _lower(ARENA)
    sig = r"llvm.func @main\(%x\w*: !llvm.ptr, %x_d0: i64, %results: !llvm.ptr\) -> i32"
    assert re.search(sig, text), text
    assert "llvm.call @aligned_alloc" in text and "llvm.call @free" in text


def test_illegal_mem_op_reports_failure():

    text = """
    func.func private @g() -> memref<4xf32>
    func.func @f() {
      %m = func.call @g() : () -> memref<4xf32>
      %c0 = arith.constant 0 : index
      %v = mem.load %m[%c0] : memref<4xf32> -> f32
      func.return
    }
    """
    ctx = _context()
    module = Parser(ctx, text, "<test>").parse_module()
    with pytest.raises(Exception, match="failed to legalize"):
        run_pipeline(module, "convert-loop-to-llvm,convert-mem-to-llvm", ctx)


@pytest.mark.skipif(shutil.which("mlir-translate-22") is None, reason="mlir-translate-22 not on PATH")
def test_lowered_module_is_valid_mlir_llvm_dialect():
    for text in (MATMUL, ARENA, SCRATCH):
        lowered = _lower(text)
        proc = subprocess.run(
            ["mlir-translate-22", "--mlir-to-llvmir"], input=lowered, capture_output=True, text=True
        )
        assert proc.returncode == 0, proc.stderr
        assert "define i32 @main" in proc.stdout or "define void" in proc.stdout


PAIRS = """
func.func @pairs(%x: memref<2x{n2}xf32>, %y: memref<2x{n}xf32>) attributes {{loop.kernel}} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %cn = arith.constant {n} : index
  loop.for %r = %c0 to %c2 step %c1 {{
    loop.for %i = %c0 to %cn step %c1 vectorize {{
      loop.block "pairs" (%vr = %r, %vi = %i) [spatial, spatial] {{
        %j = arith.muli %vi, %c2 : index
        %k = arith.addi %j, %c1 : index
        %a = mem.load %x[%vr, %j] : memref<2x{n2}xf32> -> f32
        %b = mem.load %x[%vr, %k] : memref<2x{n2}xf32> -> f32
        %s = arith.subf %a, %b : f32
        mem.store %s, %y[%vr, %vi] : f32, memref<2x{n}xf32>
      }}
    }}
  }}
  func.return
}}
"""


@pytest.mark.parametrize("width", [4, 7, 5, 8])
def test_stride_two_loads_at_any_width(width):
    """x[2i] and x[2i+1] along a vector loop: two vector loads and a shuffle picking x[i + 2k] for
    lane k. An odd width (a 7-wide pool row) built a shuffle of width-1 lanes: invalid LLVM IR
    (an operation on a vector<7> and a vector<6>)."""
    from minimlir.dialects import loop
    from minimlir.passes.loop.schedule import lower_scheduled  # noqa: F401 (imports lower_vectors' users first)
    from minimlir.passes.loop.lower_vectors import lower_vector_loop

    n = 2 * width
    module = Parser(_context(), PAIRS.format(n=n, n2=2 * n), "<test>").parse_module()
    (vec,) = [o for o in module.walk() if isinstance(o, loop.ForOp) and o.kind.data == "vectorize"]
    lower_vector_loop(vec, width)
    assert f"vector<{width}xf32>" in str(module)
    prog = compile_mlir_text(module, pipeline="convert-vector-to-llvm,convert-to-llvm", cache=False)
    x = np.random.default_rng(1).standard_normal((2, 2 * n)).astype(np.float32)
    y = np.full((2, n), np.nan, np.float32)
    prog.pairs(x, y)
    np.testing.assert_array_equal(y, x[:, 0::2] - x[:, 1::2])
