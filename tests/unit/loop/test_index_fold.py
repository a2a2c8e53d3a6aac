"""The index-arithmetic folder that ends `lower_scheduled` (passes/_index_fold.py): what folds,
what must not, and that a folded kernel computes the same."""

import numpy as np
import pytest

import minimlir.compiler.interpreter as H
from minimlir.dialects import loop
from minimlir.passes.loop.schedule.index_fold import _eval, fold_index_arith


def kernel(body: str, args: str = "%out: memref<16xi64>") -> str:
    return f"""
func.func private @k({args}) attributes {{loop.kernel}} {{
{body}
  func.return
}}"""


def fold(text: str, inline_blocks: bool = False):
    m = H.parse(text)
    m.verify()
    fold_index_arith(m, inline_blocks=inline_blocks)
    m.verify()
    return m


def names(m) -> list[str]:
    k = next(op for op in m.walk() if loop.is_kernel(op))
    return [op.name for op in k.walk()][1:]


def test_identities_and_constants_fold_away():
    m = fold(kernel("""
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %n = mem.dim %out, 0 : memref<16xi64>
  %a = arith.muli %c0, %c16 : index
  %b = arith.addi %n, %a : index
  %c = arith.muli %b, %c1 : index
  %d = arith.subi %c, %c0 : index
  %e = arith.muli %n, %c0 : index
  %f = arith.addi %d, %e : index
  %g = arith.floordivsi %f, %c1 : index
  %v = arith.index_cast %g : index to i64
  mem.store %v, %out[%c0] : i64, memref<16xi64>"""))
    text = str(m)
    assert names(m) == ["arith.constant", "mem.dim", "arith.index_cast", "mem.store", "func.return"]
    assert "arith.index_cast %n : index to i64" in text


def test_reassociation_and_duplicate_constants():
    m = fold(kernel("""
  %c0 = arith.constant 0 : index
  %n = mem.dim %out, 0 : memref<16xi64>
  loop.for %i = %c0 to %n step %n {
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    %a = arith.addi %i, %c3 : index
    %b = arith.addi %a, %c4 : index
    %c3b = arith.constant 3 : index
    %x = arith.muli %i, %c3b : index
    %y = arith.muli %x, %c4 : index
    %s = arith.addi %b, %y : index
    %v = arith.index_cast %s : index to i64
    mem.store %v, %out[%i] : i64, memref<16xi64>
  }"""))
    text = str(m)
    assert "arith.constant 7 : index" in text and "arith.constant 12 : index" in text
    assert text.count("arith.constant 3 : index") == 0  # only used by the reassociated ops
    ops = names(m)
    assert ops.count("arith.addi") == 2 and ops.count("arith.muli") == 1
    k = next(op for op in m.walk() if loop.is_kernel(op))
    entry = list(k.body.block.ops)
    assert all(o.name == "arith.constant" for o in entry[:3])  # hoisted to the entry block
    assert sum(isinstance(o, loop.ForOp) for o in m.walk()) == 1


def test_cse_respects_dominance():
    m = fold(kernel("""
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %n = mem.dim %out, 0 : memref<16xi64>
  loop.for %i = %c0 to %n step %c2 {
    %a = arith.muli %i, %n : index
    %va = arith.index_cast %a : index to i64
    mem.store %va, %out[%i] : i64, memref<16xi64>
  }
  loop.for %j = %c0 to %n step %c2 {
    %b = arith.muli %n, %j : index
    %b2 = arith.muli %j, %n : index
    %s = arith.addi %b, %b2 : index
    %vb = arith.index_cast %s : index to i64
    mem.store %vb, %out[%j] : i64, memref<16xi64>
  }"""))
    # one muli per loop: the second loop's commuted duplicate is reused, the first loop's is not
    assert names(m).count("arith.muli") == 2


@pytest.mark.parametrize(
    "op,a,b",
    [("arith.floordivsi", 7, 0), ("arith.remsi", 7, 0), ("arith.divsi", 7, 0), ("arith.ceildivsi", 7, 0),
     ("arith.muli", 2**62, 4)],
)
def test_ub_and_overflow_do_not_fold(op, a, b):
    assert _eval(op, a, b) is None
    m = fold(kernel(f"""
  %c0 = arith.constant 0 : index
  %a = arith.constant {a} : index
  %b = arith.constant {b} : index
  %r = "{op}"(%a, %b) : (index, index) -> index
  %v = arith.index_cast %r : index to i64
  mem.store %v, %out[%c0] : i64, memref<16xi64>"""))
    assert op in names(m)


@pytest.mark.parametrize(
    "op,a,b,want",
    [("arith.floordivsi", -7, 2, -4), ("arith.ceildivsi", -7, 2, -3), ("arith.ceildivsi", 7, 2, 4),
     ("arith.divsi", -7, 2, -3), ("arith.remsi", -7, 2, -1), ("arith.minsi", -7, 2, -7),
     ("arith.maxsi", -7, 2, 2), ("arith.divui", 7, 2, 3), ("arith.remui", 7, 2, 1)],
)
def test_constant_division_semantics(op, a, b, want):
    assert _eval(op, a, b) == want
    m = fold(kernel(f"""
  %c0 = arith.constant 0 : index
  %a = arith.constant {a} : index
  %b = arith.constant {b} : index
  %r = "{op}"(%a, %b) : (index, index) -> index
  %v = arith.index_cast %r : index to i64
  mem.store %v, %out[%c0] : i64, memref<16xi64>"""))
    assert op not in names(m) and f"arith.constant {want} : index" in str(m)


def test_non_index_and_side_effects_untouched():
    m = fold(kernel("""
  %c0 = arith.constant 0 : index
  %z = arith.constant 0 : i64
  %one = arith.constant 1 : i64
  %x = mem.load %out[%c0] : memref<16xi64> -> i64
  %a = arith.addi %x, %z : i64
  %b = arith.muli %a, %one : i64
  %c = arith.muli %z, %one : i64
  %s = arith.addi %b, %c : i64
  mem.store %s, %out[%c0] : i64, memref<16xi64>
  mem.store %s, %out[%c0] : i64, memref<16xi64>
  %unused = mem.load %out[%c0] : memref<16xi64> -> i64"""))
    ops = names(m)
    assert ops.count("arith.addi") == 2 and ops.count("arith.muli") == 2  # i64: not ours
    assert ops.count("mem.store") == 2 and ops.count("mem.load") == 2  # not pure arith


def test_parallel_step_constant_kept_apart():
    """loop-outline-parallel rewires the parallel step inside the body: never share it."""
    m = fold(kernel("""
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %step = arith.constant 1 : index
  loop.for %i = %c0 to %c4 step %step parallel {
    %a = arith.addi %i, %c1 : index
    %v = arith.index_cast %a : index to i64
    mem.store %v, %out[%c1] : i64, memref<16xi64>
  }"""))
    par = next(op for op in m.walk() if isinstance(op, loop.ForOp))
    assert len(list(par.step.uses)) == 1 and str(m).count("arith.constant 1 : index") == 2


def test_isolated_regions_keep_their_constants():
    m = fold(kernel("""
  %c0 = arith.constant 0 : index
  %v = arith.constant 3 : i64
  mem.store %v, %out[%c0] : i64, memref<16xi64>
  builtin.module {
    func.func @g(%m: memref<16xi64>) {
      %c0b = arith.constant 0 : index
      %vb = arith.constant 3 : i64
      mem.store %vb, %m[%c0b] : i64, memref<16xi64>
      func.return
    }
  }"""))
    inner = next(op for op in m.walk() if op.name == "func.func" and op.sym_name.data == "g")
    assert [op.name for op in inner.body.block.ops].count("arith.constant") == 2


def test_constant_bindings_and_block_inlining():
    text = kernel("""
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  loop.for %i = %c0 to %c4 step %c1 {
    loop.block "b" (%vi = %i, %vk = %c0) [spatial, reduce] {
      %a = arith.addi %vi, %vk : index
      %v = arith.index_cast %a : index to i64
      mem.store %v, %out[%a] : i64, memref<16xi64>
    } init {
      %z = arith.constant 0 : i64
      mem.store %z, %out[%vi] : i64, memref<16xi64>
    }
    loop.block "c" (%vj = %i) [spatial] {
      %b = arith.addi %vj, %c1 : index
      %v = arith.index_cast %b : index to i64
      mem.store %v, %out[%b] : i64, memref<16xi64>
    }
  }""")
    m = fold(text)
    assert names(m).count("arith.addi") == 1 and names(m).count("loop.block") == 2
    m = fold(text, inline_blocks=True)
    blocks = [op for op in m.walk() if isinstance(op, loop.BlockOp)]
    assert [b.block_name.data for b in blocks] == ["b"]  # the init region needs its block
    assert names(m).count("arith.addi") == 1


def _interp(m, n=16):
    out = np.zeros(n, np.int64)
    H.interpret_kernels(m, "k", [out])
    return out


def test_folded_kernel_computes_the_same():
    text = kernel("""
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  loop.for %i = %c0 to %c4 step %c1 {
    loop.for %u = %c0 to %c2 step %c1 {
      %a = arith.muli %i, %c4 : index
      %z = arith.muli %c0, %c3 : index
      %b = arith.addi %a, %z : index
      %d = arith.addi %b, %c1 : index
      %e = arith.addi %d, %c2 : index
      %f = arith.muli %u, %c1 : index
      %g = arith.addi %f, %c0 : index
      loop.block "w" (%vi = %e, %vu = %g) [spatial, spatial] {
        %c1b = arith.constant 1 : index
        %s = arith.subi %vi, %c1b : index
        %t = arith.addi %s, %vu : index
        %r = arith.remsi %t, %c4 : index
        %q = arith.floordivsi %vi, %c2 : index
        %w = arith.addi %r, %q : index
        %v = arith.index_cast %w : index to i64
        %idx = arith.remsi %vi, %c4 : index
        %idx2 = arith.muli %idx, %c4 : index
        %idx3 = arith.addi %idx2, %vu : index
        mem.store %v, %out[%idx3] : i64, memref<16xi64>
      }
    }
  }""")
    want = _interp(H.parse(text))
    assert want.any()
    np.testing.assert_array_equal(_interp(fold(text)), want)
    np.testing.assert_array_equal(_interp(fold(text, inline_blocks=True)), want)
