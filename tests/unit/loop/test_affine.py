"""Affine analysis (passes/_affine.py) on hand-written loop IR."""

import pytest
from xdsl.builder import Builder
from xdsl.context import Context
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import Builtin, ModuleOp
from xdsl.ir import SSAValue
from xdsl.parser import Parser
from xdsl.rewriter import InsertPoint

from minimlir.dialects import loop, mem
from minimlir.passes.loop.schedule.affine import (
    AffineForm,
    affine_of,
    loop_range,
    materialize,
    reads_writes,
    touched_region,
)


def parse(text: str) -> ModuleOp:
    ctx = Context()
    for d in (Builtin, func.Func, arith.Arith, loop.Loop, mem.Mem):
        ctx.load_dialect(d)
    module = Parser(ctx, text).parse_module()
    module.verify()
    return module


def values(module: ModuleOp) -> dict[str, SSAValue]:
    """Every named SSA value of the module by name hint (names are unique in these tests)."""
    out: dict[str, SSAValue] = {}
    for op in module.walk():
        for r in op.results:
            if r.name_hint:
                out[r.name_hint] = r
        for region in op.regions:
            for block in region.blocks:
                for a in block.args:
                    if a.name_hint and a.name_hint not in out:
                        out[a.name_hint] = a
    return out


# conv-like: out[n, c, i, j] += in[n, c, i + ki, j + kj], with j tiled as j = jo*4 + ji.
CONV = """
func.func @conv(%in: memref<?x?x?x?xf32>, %out: memref<?x?x?x?xf32>) attributes {loop.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %N = mem.dim %out, 0 : memref<?x?x?x?xf32>
  %C = mem.dim %out, 1 : memref<?x?x?x?xf32>
  %H = mem.dim %out, 2 : memref<?x?x?x?xf32>
  %W4 = mem.dim %out, 3 : memref<?x?x?x?xf32>
  %KH = mem.dim %in, 2 : memref<?x?x?x?xf32>
  %KW = mem.dim %in, 3 : memref<?x?x?x?xf32>
  loop.for %n = %c0 to %N step %c1 {
    loop.for %c = %c0 to %C step %c1 {
      loop.for %i = %c0 to %H step %c1 {
        loop.for %jo = %c0 to %W4 step %c1 {
          loop.for %ji = %c0 to %c4 step %c1 {
            loop.for %ki = %c0 to %KH step %c1 {
              loop.for %kj = %c0 to %KW step %c1 {
                %t = arith.muli %jo, %c4 : index
                %j = arith.addi %t, %ji : index
                loop.block "conv" (%vn = %n, %vc = %c, %vi = %i, %vj = %j, %vki = %ki, %vkj = %kj) [spatial, spatial, spatial, spatial, reduce, reduce] {
                  %y = arith.addi %vi, %vki : index
                  %x = arith.addi %vj, %vkj : index
                  %a = mem.load %in[%vn, %vc, %y, %x] : memref<?x?x?x?xf32> -> f32
                  %o = mem.load %out[%vn, %vc, %vi, %vj] : memref<?x?x?x?xf32> -> f32
                  %s = arith.addf %o, %a : f32
                  mem.store %s, %out[%vn, %vc, %vi, %vj] : f32, memref<?x?x?x?xf32>
                } init {
                  %zero = arith.constant 0.0 : f32
                  mem.store %zero, %out[%vn, %vc, %vi, %vj] : f32, memref<?x?x?x?xf32>
                }
              }
            }
          }
        }
      }
    }
  }
  func.return
}
"""


@pytest.fixture
def conv():
    module = parse(CONV)
    return module, values(module), loop.find_block(module, "conv")


def F(*terms, const=0) -> AffineForm:
    """F((v, 4), (w, 1), const=3) = 4*v + w + 3."""
    return AffineForm({v: c for v, c in terms}, const)


def test_affine_of_block_var_substitutes_binding(conv):
    _, v, _ = conv
    assert affine_of(v["x"]) == F((v["jo"], 4), (v["ji"], 1), (v["kj"], 1))
    assert affine_of(v["y"]) == F((v["i"], 1), (v["ki"], 1))
    assert affine_of(v["c4"]) == 4
    assert affine_of(v["KW"]) == F((v["KW"], 1))  # mem.dim: a symbol


def test_form_arithmetic_and_printing(conv):
    _, v, _ = conv
    f = F((v["jo"], 4), (v["kj"], 1), const=-1)
    assert str(f) == "4*%jo + %kj - 1"
    assert str(-f) == "-4*%jo - %kj + 1"
    assert str(f - f) == "0"
    g = f.substitute(v["kj"], F((v["KW"], 1), const=-1))
    assert g == F((v["jo"], 4), (v["KW"], 1), const=-2)
    assert (2 * g).evaluate({v["jo"]: 3, v["KW"]: 5}) == 2 * (12 + 5 - 2)
    assert hash(F((v["jo"], 1))) == hash(F((v["jo"], 1)))


def test_region_of_input_under_inner_tile_loop(conv):
    _, v, block = conv
    ji_loop = v["ji"].owner.parent_op()
    box = touched_region(block, v["in"], ji_loop)
    assert box is not None and len(box) == 4
    # n and c are outside %ji: single points
    assert box[0] == (F((v["n"], 1)), F((v["n"], 1)))
    assert box[1] == (F((v["c"], 1)), F((v["c"], 1)))
    # rows: i + ki with ki in [0, KH - 1]
    assert box[2] == (F((v["i"], 1)), F((v["i"], 1), (v["KH"], 1), const=-1))
    # cols: j in [jo*4, jo*4 + 3 + KW - 1]
    assert box[3] == (F((v["jo"], 4)), F((v["jo"], 4), (v["KW"], 1), const=2))


def test_region_of_output_unions_load_and_stores(conv):
    _, v, block = conv
    jo_loop = v["jo"].owner.parent_op()
    box = touched_region(block, v["out"], jo_loop)
    assert box is not None
    W4 = v["W4"]
    assert box[2] == (F((v["i"], 1)), F((v["i"], 1)))
    assert box[3] == (AffineForm.constant(0), F((W4, 4), const=-1))
    # whole kernel: every loop ranged, only symbols remain
    full = touched_region(block, v["out"])
    assert full[0] == (AffineForm.constant(0), F((v["N"], 1), const=-1))
    assert all(not (lo.atoms | hi.atoms) - {v[s] for s in ("N", "C", "H", "W4")} for lo, hi in full)


def test_reads_writes(conv):
    _, v, block = conv
    reads, writes = reads_writes(block)
    assert reads == {v["in"], v["out"]}
    assert writes == {v["out"]}


def test_under_must_enclose_block(conv):
    module, v, block = conv
    other = loop.ForOp(v["c0"], v["c4"], v["c1"])
    with pytest.raises(ValueError, match="does not enclose"):
        touched_region(block, v["in"], other)


GATHER = """
func.func @gather(%data: memref<?x8xf32>, %idx: memref<?xi64>, %pos: memref<?xindex>, %out: memref<?x8xf32>) attributes {loop.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %n = mem.dim %out, 0 : memref<?x8xf32>
  loop.for %i = %c0 to %n step %c1 {
    loop.for %j = %c0 to %c8 step %c1 {
      loop.block "gather" (%vi = %i, %vj = %j) [spatial, spatial] {
        %k = mem.load %pos[%vi] : memref<?xindex> -> index
        %x = mem.load %data[%k, %vj] : memref<?x8xf32> -> f32
        mem.store %x, %out[%vi, %vj] : f32, memref<?x8xf32>
      }
    }
  }
  func.return
}
"""


def test_gather_index_is_not_affine():
    module = parse(GATHER)
    v = values(module)
    block = loop.find_block(module, "gather")
    assert affine_of(v["k"]) is None
    assert touched_region(block, v["data"], v["j"].owner.parent_op()) is None
    # the index buffer and the output are still analysable
    box = touched_region(block, v["out"], v["j"].owner.parent_op())
    zero, seven = AffineForm.constant(0), AffineForm.constant(7)
    assert box == [(F((v["i"], 1)), F((v["i"], 1))), (zero, seven)]
    with pytest.raises(ValueError, match="does not access"):
        touched_region(block, v["idx"])


STEPPED = """
func.func @stepped(%a: memref<?xf32>, %b: memref<100xf32>) attributes {loop.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c10 = arith.constant 10 : index
  %n = mem.dim %a, 0 : memref<?xf32>
  %m = arith.divui %n, %c3 : index
  loop.for %i = %c0 to %c10 step %c3 {
    loop.for %j = %c0 to %m step %c1 {
      loop.block "rev" (%vi = %i, %vj = %j) [spatial, spatial] {
        %r = arith.subi %n, %vj : index
        %r1 = arith.subi %r, %c1 : index
        %x = mem.load %a[%r1] : memref<?xf32> -> vector<4xf32>
        %two = arith.muli %c1, %vi : index
        %d = arith.divui %vi, %c3 : index
        mem.store %x, %b[%two] : vector<4xf32>, memref<100xf32>
      }
    }
  }
  func.return
}
"""


def test_steps_negative_coeffs_vectors_and_symbols():
    module = parse(STEPPED)
    v = values(module)
    block = loop.find_block(module, "rev")
    i_loop = v["i"].owner.parent_op()
    # constant bounds: exact last value 9 for 0..10 step 3
    assert loop_range(i_loop) == (AffineForm.constant(0), AffineForm.constant(9))
    # %m = n / 3 at kernel level is an opaque symbol
    assert affine_of(v["m"]) == F((v["m"], 1))
    # a divui inside a loop is not affine
    assert affine_of(v["d"]) is None
    # a[n - 1 - j] as vector<4>: j in [0, m - 1] -> lo = n - m, hi = n - 1 + 3
    assert touched_region(block, v["a"], v["j"].owner.parent_op()) == [
        (F((v["n"], 1), (v["m"], -1)), F((v["n"], 1), const=2))
    ]
    assert touched_region(block, v["b"], i_loop) == [
        (AffineForm.constant(0), AffineForm.constant(12))
    ]


SHIFTED = """
func.func @shifted(%a: memref<?xf32>, %b: memref<?xf32>) attributes {loop.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = mem.dim %b, 0 : memref<?xf32>
  loop.for %j = %c0 to %n step %c1 {
    loop.block "shift" (%vj = %j) [spatial] {
      %j1 = arith.addi %vj, %c1 : index
      %r = arith.subi %n, %vj : index
      %x = mem.load %a[%vj] : memref<?xf32> -> f32
      %y = mem.load %a[%j1] : memref<?xf32> -> f32
      %z = mem.load %a[INDEX] : memref<?xf32> -> f32
      %s = arith.addf %x, %y : f32
      mem.store %s, %b[%vj] : f32, memref<?xf32>
    }
  }
  func.return
}
"""


def test_union_of_shifted_accesses():
    module = parse(SHIFTED.replace("INDEX", "%vj"))
    v = values(module)
    block = loop.find_block(module, "shift")
    j_loop = v["j"].owner.parent_op()
    assert touched_region(block, v["a"], j_loop) == [(AffineForm.constant(0), F((v["n"], 1)))]
    assert touched_region(block, v["b"], j_loop) == [
        (AffineForm.constant(0), F((v["n"], 1), const=-1))
    ]


def test_incomparable_accesses_give_none():
    # a[j], a[j + 1], a[n - j]: ranging j, the bounds compare (lo 0, hi n).
    # Ranging only a trip-1 loop inside j keeps j: lo bounds j and n - j are incomparable.
    module = parse(SHIFTED.replace("INDEX", "%r"))
    v = values(module)
    block = loop.find_block(module, "shift")
    j_loop = v["j"].owner.parent_op()
    assert touched_region(block, v["a"], j_loop) == [(AffineForm.constant(0), F((v["n"], 1)))]
    nest = parse(SHIFTED.replace("INDEX", "%r").replace(
        "loop.for %j = %c0 to %n step %c1 {",
        "loop.for %j = %c0 to %n step %c1 {\n    loop.for %u = %c0 to %c1 step %c1 {"
    ).replace("    }\n  }\n  func.return", "    }\n    }\n  }\n  func.return"))
    w = values(nest)
    inner = w["u"].owner.parent_op()
    assert touched_region(loop.find_block(nest, "shift"), w["a"], inner) is None


def test_materialize_round_trips(conv):
    module, v, block = conv
    form = F((v["jo"], 4), (v["KW"], -1), (v["ji"], 1), const=-7)
    loop_ji = v["ji"].owner.parent_op()
    value = materialize(form, InsertPoint.at_start(loop_ji.body.block))
    module.verify()
    assert affine_of(value) == form
    builder = Builder(InsertPoint.at_start(loop_ji.body.block))
    assert affine_of(materialize(AffineForm.constant(5), builder)) == 5
