"""The in-place promise on lowered kernels (passes/loop/inplace.py): `inplace_holds` accepts a kernel
whose every element of the output is written once, right after the input is read at that element,
and refuses the kernels that would read an overwritten element; `keep_inplace_promise` gives such a
kernel a private copy of the input, which keeps an aliased call exact."""

import numpy as np

from minimlir.backend.runtime import compile_mlir_text
from minimlir.compiler.parsing import parse_module
from minimlir.passes.loop.inplace import inplace_holds, keep_inplace_promise

# y = 2 * r over 9 columns in tiles of 5; `START` gives the tile's first column. min(5t, 4) clamps
# the last tile to columns 4..8, so column 4 is computed twice (as the conv rule's clamped tiles do).
KERNEL = """
func.func private @k(%r: memref<1x9xf32>, %y: memref<1x9xf32>) attributes {loop.kernel, loop.inplace = [[0 : i64, 1 : i64]]} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  %c9 = arith.constant 9 : index
  loop.for %t = %c0 to %c2 step %c1 {
    %s = arith.muli %t, %c5 : index
    START
    loop.for %j = %c0 to %c5 step %c1 {
      %col = arith.addi %s2, %j : index
      BODY
    }
  }
  func.return
}
"""
CLAMPED = "%s2 = arith.minsi %s, %c4 : index"
BODY = """%ok = arith.cmpi slt, %col, %c9 : index
      scf.if %ok {
        %x = mem.load %r[%c0, %col] : memref<1x9xf32> -> f32
        %v = arith.addf %x, %x : f32
        mem.store %v, %y[%c0, %col] : f32, memref<1x9xf32>
      }"""
BODY = """%x = mem.load %r[%c0, %col] : memref<1x9xf32> -> f32
      %v = arith.addf %x, %x : f32
      mem.store %v, %y[%c0, %col] : f32, memref<1x9xf32>"""


def _kernel(start=CLAMPED, body=BODY, shape="1x9"):
    text = KERNEL.replace("START", start).replace("BODY", body).replace("1x9", shape)
    (k,) = parse_module(text).ops
    return k


def test_exact_tiles_hold():
    # 10 columns in two tiles of 5: every column once, read before written
    assert inplace_holds(_kernel(start="%s2 = arith.addi %s, %c0 : index", shape="1x10"), 0, 1)


def test_clamped_tile_breaks_it():
    assert not inplace_holds(_kernel(), 0, 1)


def test_store_before_load_breaks_it():
    body = """%x = mem.load %y[%c0, %col] : memref<1x9xf32> -> f32
      mem.store %x, %y[%c0, %col] : f32, memref<1x9xf32>"""
    swapped = """%z = arith.constant 0.0 : f32
      mem.store %z, %y[%c0, %col] : f32, memref<1x9xf32>
      %x = mem.load %r[%c0, %col] : memref<1x9xf32> -> f32"""
    assert not inplace_holds(_kernel(start="%s2 = arith.addi %s, %c0 : index", shape="1x10", body=swapped), 0, 1)
    assert not inplace_holds(_kernel(start="%s2 = arith.addi %s, %c0 : index", shape="1x10", body=body), 0, 1)


def test_reading_another_element_breaks_it():
    shifted = """%n = arith.subi %c9, %col : index
      %x = mem.load %r[%c0, %n] : memref<1x10xf32> -> f32
      mem.store %x, %y[%c0, %col] : f32, memref<1x10xf32>"""
    assert not inplace_holds(_kernel(start="%s2 = arith.addi %s, %c0 : index", shape="1x10", body=shifted), 0, 1)


def _aliased_run(kernel):
    """@main calls the kernel with one buffer as input and output (what mem-reuse-inputs makes)."""
    main = """
func.func @main(%x: memref<1x9xf32>) -> memref<1x9xf32> {
  %t = mem.alloc() {mem.result_slot = 0 : i64} : memref<1x9xf32>
  mem.copy %x, %t : memref<1x9xf32>, memref<1x9xf32>
  func.call @k(%t, %t) : (memref<1x9xf32>, memref<1x9xf32>) -> ()
  func.return %t : memref<1x9xf32>
}
"""
    module = parse_module(str(kernel) + main)
    prog = compile_mlir_text(module, pipeline="loop-outline-parallel,convert-to-llvm,convert-parallel-to-llvm",
                             cache=False)
    x = np.arange(1, 10, dtype=np.float32).reshape(1, 9)
    return np.asarray(prog(x)), 2 * x


def test_the_private_copy_keeps_an_aliased_call_exact():
    k = _kernel()
    got, want = _aliased_run(k)
    assert got[0, 4] == 2 * want[0, 4]  # without the copy: column 4 doubled twice
    k = _kernel()
    assert keep_inplace_promise(k) == 1
    got, want = _aliased_run(k)
    np.testing.assert_array_equal(got, want)
    assert keep_inplace_promise(_kernel(start="%s2 = arith.addi %s, %c0 : index", shape="1x10")) == 0
