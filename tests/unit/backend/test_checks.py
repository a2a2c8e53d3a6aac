"""Checked mode (`compile(..., checks=True)`, MINIMLIR_CHECKS=1): injected faults are caught and named.

Out-of-bounds accesses (scalar, vector lanes, static and dynamic dims, in parallel loops, an ONNX
Gather with an index past the table) stop the call with CheckError naming kernel, block, buffer,
index values, dims and ONNX node, and the faulting access is skipped; a read before write shows
as poison in an output and is reported. With checks off the generated code is unchanged.
"""

from __future__ import annotations

import re

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from xdsl.dialects.builtin import IndexType

from minimlir.backend import checks as rt_checks
from minimlir.frontend import CheckError, compile
from minimlir.compiler.pipelines import checked_pipeline
from minimlir.passes.to_llvm import _checks

SHIFT = """
func.func private @shift_k(%x: memref<?xf32>, %y: memref<?xf32>) attributes {loop.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = mem.dim %y, 0 : memref<?xf32>
  loop.for %i = %c0 to %n step %c1 {
    loop.block "shift" (%j = %i) [spatial] {
      %k = arith.addi %j, %c1 : index
      %v = mem.load %x[%k] : memref<?xf32> -> f32 loc("Shift_0"("m.onnx":1:0))
      mem.store %v, %y[%j] : f32, memref<?xf32>
    }
  }
  func.return
}
func.func @main(%x: memref<?xf32>) -> memref<?xf32> {
  %n = mem.dim %x, 0 : memref<?xf32>
  %y = mem.alloc(%n) : memref<?xf32>
  func.call @shift_k(%x, %y) : (memref<?xf32>, memref<?xf32>) -> ()
  func.return %y : memref<?xf32>
}
"""


def test_out_of_bounds_load_is_caught_and_named():
    m = compile(SHIFT, checks=True, cache=False)
    with pytest.raises(CheckError) as info:
        m(np.arange(6, dtype=np.float32))
    e = info.value
    assert isinstance(e, RuntimeError)
    assert e.kind == "out-of-bounds"
    assert (e.kernel, e.block, e.buffer, e.node) == ("shift_k", "shift", "%x", "Shift_0")
    assert e.indices == (6,) and e.dims == (6,) and e.count == 1
    assert "out-of-bounds load in kernel @shift_k, block 'shift' (ONNX node 'Shift_0')" in str(e)
    assert "index [6] is outside its dims [6]" in str(e)
    # the next call is clean again (the record is per call), and unchecked code has no guard
    with pytest.raises(CheckError):
        m(np.arange(3, dtype=np.float32))
    assert not compile(SHIFT, checks=False, cache=False).program.checked


STORE_PAST_END = """
func.func private @k(%x: memref<4xf32>, %y: memref<4xf32>) attributes {loop.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  loop.for %i = %c0 to %c4 step %c1 {
    loop.block "scatter" (%j = %i) [spatial] {
      %v = mem.load %x[%j] : memref<4xf32> -> f32
      %k = arith.addi %j, %c1 : index
      mem.store %v, %y[%k] : f32, memref<4xf32> loc("Scatter_7"("m.onnx":8:0))
    }
  }
  func.return
}
func.func @main(%x: memref<4xf32>) -> memref<4xf32> {
  %y = mem.alloc() : memref<4xf32>
  func.call @k(%x, %y) : (memref<4xf32>, memref<4xf32>) -> ()
  func.return %y : memref<4xf32>
}
"""


def test_out_of_bounds_store_is_skipped():
    m = compile(STORE_PAST_END, checks=True, cache=False)
    big = np.full(8, 42.0, np.float32)
    with pytest.raises(CheckError, match=r"out-of-bounds store in kernel @k, block 'scatter' \(ONNX node "
                                         r"'Scatter_7'\).*index \[4\] is outside its dims \[4\]") as info:
        m(np.arange(4, dtype=np.float32), out=[big[:4]])
    assert info.value.buffer.startswith("%1") or "argument #1" in info.value.buffer or info.value.buffer
    assert big[4] == 42.0  # the store past the end was dropped: the caller's next element is intact
    np.testing.assert_array_equal(big[1:4], [0, 1, 2])


VECTOR = """
func.func private @vk(%x: memref<12xf32>, %y: memref<16xf32>) attributes {loop.kernel} {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %c12 = arith.constant 12 : index
  loop.for %i = %c0 to %c12 step %c8 {
    loop.block "copy" (%j = %i) [spatial] {
      %v = mem.load %x[%j] : memref<12xf32> -> vector<8xf32>
      mem.store %v, %y[%j] : vector<8xf32>, memref<16xf32>
    }
  }
  func.return
}
func.func @main(%x: memref<12xf32>) -> memref<16xf32> {
  %y = mem.alloc() : memref<16xf32>
  func.call @vk(%x, %y) : (memref<12xf32>, memref<16xf32>) -> ()
  func.return %y : memref<16xf32>
}
"""


def test_vector_lanes_past_the_end_are_caught():
    m = compile(VECTOR, checks=True, cache=False)
    with pytest.raises(CheckError) as info:
        m(np.arange(12, dtype=np.float32))
    msg = str(info.value)
    assert "out-of-bounds vector<8xf32> load in kernel @vk, block 'copy'" in msg
    assert "index [8..15] is outside its dims [12]" in msg
    assert info.value.indices == (8,) and info.value.dims == (12,)


STATIC_2D = """
func.func private @k2(%x: memref<4x3xf32>, %y: memref<4xf32>) attributes {loop.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  loop.for %i = %c0 to %c4 step %c1 {
    loop.block "last_col" (%r = %i) [spatial] {
      %v = mem.load %x[%r, %c3] : memref<4x3xf32> -> f32
      mem.store %v, %y[%r] : f32, memref<4xf32>
    }
  }
  func.return
}
func.func @main(%x: memref<4x3xf32>) -> memref<4xf32> {
  %y = mem.alloc() : memref<4xf32>
  func.call @k2(%x, %y) : (memref<4x3xf32>, memref<4xf32>) -> ()
  func.return %y : memref<4xf32>
}
"""


def test_static_dims_are_checked_too():
    m = compile(STATIC_2D, checks=True, cache=False)
    # the default schedule may run the rows in parallel: the first violation is any row's
    with pytest.raises(CheckError, match=r"index \[[0-3], 3\] is outside its dims \[4, 3\]; 4 faulting accesses"):
        m(np.zeros((4, 3), np.float32))


PARALLEL = """
func.func private @pk(%x: memref<?xf32>, %y: memref<?xf32>) attributes {loop.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = mem.dim %y, 0 : memref<?xf32>
  loop.for %i = %c0 to %n step %c1 parallel {
    %k = arith.addi %i, %n : index
    %v = mem.load %x[%k] : memref<?xf32> -> f32 loc("Par_1"("m.onnx":2:0))
    mem.store %v, %y[%i] : f32, memref<?xf32>
  }
  func.return
}
func.func @main(%x: memref<?xf32>) -> memref<?xf32> {
  %n = mem.dim %x, 0 : memref<?xf32>
  %y = mem.alloc(%n) : memref<?xf32>
  func.call @pk(%x, %y) : (memref<?xf32>, memref<?xf32>) -> ()
  func.return %y : memref<?xf32>
}
"""


@pytest.mark.parametrize("threads", [1, 2])
def test_parallel_loop_faults_record_one_first_violation(threads):
    pipeline = "loop-outline-parallel,convert-to-llvm,convert-parallel-to-llvm"
    m = compile(PARALLEL, checks=True, cache=False, pipeline=pipeline, num_threads=threads)
    ir = m.program.engine.llvm_ir
    assert "GOMP_parallel" in ir and "__minimlir_check_fail" in ir
    with pytest.raises(CheckError) as info:
        m(np.arange(1000, dtype=np.float32))
    e = info.value
    assert e.count == 1000 and e.kernel == "pk" and e.node == "Par_1" and e.dims == (1000,)
    assert 1000 <= e.indices[0] < 2000


UNINIT = """
func.func private @add_k(%x: memref<4xf32>, %t: memref<4xf32>, %y: memref<4xf32>) attributes {loop.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  loop.for %i = %c0 to %c4 step %c1 {
    loop.block "add" (%j = %i) [spatial] {
      %a = mem.load %x[%j] : memref<4xf32> -> f32
      %b = mem.load %t[%j] : memref<4xf32> -> f32
      %s = arith.addf %a, %b : f32
      mem.store %s, %y[%j] : f32, memref<4xf32>
    }
  }
  func.return
}
func.func @main(%x: memref<4xf32>) -> memref<4xf32> {
  %t = mem.alloc() : memref<4xf32>
  %y = mem.alloc() : memref<4xf32>
  func.call @add_k(%x, %t, %y) : (memref<4xf32>, memref<4xf32>, memref<4xf32>) -> ()
  mem.dealloc %t : memref<4xf32>
  func.return %y : memref<4xf32>
}
"""


def test_uninitialized_read_is_caught():
    m = compile(UNINIT, checks=True, cache=False)
    with pytest.raises(CheckError) as info:
        m(np.arange(4, dtype=np.float32))
    assert info.value.kind == "uninitialized" and info.value.outputs == ["result0"]
    assert "output #0 'result0' holds 4 of 4 poison values (first at index [0])" in str(info.value)


PARTIAL = """
func.func private @half_k(%x: memref<?xi64>, %y: memref<?xi64>) attributes {loop.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %n = mem.dim %y, 0 : memref<?xi64>
  %h = arith.divsi %n, %c2 : index
  loop.for %i = %c0 to %h step %c1 {
    loop.block "copy" (%j = %i) [spatial] {
      %v = mem.load %x[%j] : memref<?xi64> -> i64
      mem.store %v, %y[%j] : i64, memref<?xi64>
    }
  }
  func.return
}
func.func @main(%x: memref<?xi64>) -> memref<?xi64> {
  %c0 = arith.constant 0 : index
  %n = mem.dim %x, 0 : memref<?xi64>
  %y = mem.alloc(%n) : memref<?xi64>
  func.call @half_k(%x, %y) : (memref<?xi64>, memref<?xi64>) -> ()
  func.return %y : memref<?xi64>
}
"""


def test_output_left_partly_unwritten_is_reported_with_int_sentinel():
    m = compile(PARTIAL, checks=True, cache=False)
    with pytest.raises(CheckError, match=r"output #0 'result0' holds 5 of 10 poison values \(first at index \[5\]\)"):
        m(np.arange(10, dtype=np.int64))


SLOT = """
func.func private @fill_k(%y: memref<?xf32>) attributes {loop.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = mem.dim %y, 0 : memref<?xf32>
  %z = arith.constant 1.0 : f32
  loop.for %i = %c0 to %n step %c1 {
    mem.store %z, %y[%i] : f32, memref<?xf32>
  }
  func.return
}
func.func private @copy_k(%x: memref<?xf32>, %y: memref<?xf32>) attributes {loop.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = mem.dim %y, 0 : memref<?xf32>
  loop.for %i = %c0 to %n step %c1 {
    %v = mem.load %x[%i] : memref<?xf32> -> f32
    mem.store %v, %y[%i] : f32, memref<?xf32>
  }
  func.return
}
func.func @main(%x: memref<?xf32>) -> memref<?xf32> {
  %n = mem.dim %x, 0 : memref<?xf32>
  %arena = mem.arena : memref<64xi8>
  %off = arith.constant 0 : index
  %t = mem.slot %arena[%off](%n) : memref<64xi8> -> memref<?xf32>
  func.call @fill_k(%t) : (memref<?xf32>) -> ()
  %y = mem.alloc(%n) : memref<?xf32>
  func.call @copy_k(%t, %y) : (memref<?xf32>, memref<?xf32>) -> ()
  mem.dealloc %arena : memref<64xi8>
  func.return %y : memref<?xf32>
}
"""


def test_arena_slot_larger_than_its_arena_stops_the_call():
    """A planned slot whose (dynamic) size exceeds the arena: caught before any kernel writes it."""
    m = compile(SLOT, checks=True, cache=False, pipeline="convert-to-llvm")
    np.testing.assert_array_equal(m(np.full(16, 2.0, np.float32))[0], np.ones(16, np.float32))
    with pytest.raises(CheckError) as info:
        m(np.ones(17, np.float32))
    e = info.value
    assert e.kind == "arena-overflow" and e.indices == (0, 68) and e.dims == (64,)
    assert "arena overflow in @main" in str(e) and "needs bytes [0, 68) but the arena has 64 bytes" in str(e)
    np.testing.assert_array_equal(m(np.full(3, 2.0, np.float32))[0], np.ones(3, np.float32))  # still usable


def test_poison_patterns_survive_arithmetic():
    f32 = np.array([_checks.POISON_F32], np.uint32).view(np.float32)
    with np.errstate(invalid="ignore"):
        derived = np.concatenate([f32 + 1.0, f32 * -2.0, np.array([np.nan, 1.0], np.float32)])
    assert rt_checks.poison_mask(derived).tolist() == [True, True, False, False]  # a plain NaN is not poison
    f64 = np.array([_checks.POISON_F64], np.uint64).view(np.float64)
    with np.errstate(invalid="ignore"):
        assert rt_checks.poison_mask(f64 - 3.0).tolist() == [True]
    assert rt_checks.poison_mask(np.array([_checks.POISON_I32, 7], np.int32)).tolist() == [True, False]
    assert rt_checks.poison_mask(np.array([0xA5, 1, 0], np.uint8).view(np.bool_)).tolist() == [True, False, False]
    assert rt_checks.poison_mask(np.zeros(2, np.int8)) is None  # no sentinel is distinguishable for i8


def _mlp_model() -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((16, 32)).astype(np.float32), "fc1.weight")
    b = numpy_helper.from_array(rng.standard_normal(32).astype(np.float32), "fc1.bias")
    g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "fc1.weight"], ["h"], name="fc1_matmul"),
         helper.make_node("Add", ["h", "fc1.bias"], ["y"], name="fc1_add")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 32])], initializer=[w, b])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def test_perturbed_index_in_an_onnx_model_names_node_block_and_weight():
    """A pass-like perturbation after graph-legalize: the Add kernel reads bias[j + 1]. The rest of the
    default pipeline (fusion, schedule, vectorize, parallel loops) runs on it in checked mode."""
    from xdsl.dialects import arith
    from xdsl.rewriter import InsertPoint, Rewriter

    from minimlir.dialects import loop, mem
    from minimlir.frontend import api
    from minimlir.compiler.pipelines import expand

    model = _mlp_model()
    ctx = api.make_context()
    loaded = api.load(model, ctx=ctx)
    steps = expand("compile").split(",")
    k = steps.index("graph-legalize") + 1
    api.lower(loaded.module, ",".join([*steps[:k], "mem-check-sites"]), ctx=ctx, name="m")
    perturbed = 0
    for op in list(loaded.module.walk()):
        block = op.parent_op()
        if isinstance(op, mem.LoadOp) and len(op.indices) == 1 and isinstance(block, loop.BlockOp) \
                and block.block_name.data == "add":
            one = arith.ConstantOp.from_int_and_width(1, IndexType())
            shifted = arith.AddiOp(op.indices[0], one)
            Rewriter.insert_op([one, shifted], InsertPoint.before(op))
            op.operands[1] = shifted.result
            perturbed += 1
    assert perturbed == 1
    text = api.ir_text(loaded.module)
    x = np.random.default_rng(1).standard_normal((3, 16)).astype(np.float32)
    m = compile(text, pipeline=",".join(steps[k:]), checks=True, params=loaded.params, cache=False)
    with pytest.raises(CheckError) as info:
        m(x)
    e = info.value
    assert (e.node, e.block, e.buffer) == ("fc1_add", "add", "weight 'fc1.bias'"), str(e)
    assert e.dims == (32,) and e.indices[0] + (1 if "vector" not in str(e) else 0) > 0
    assert re.search(r"out-of-bounds (vector<\d+xf32> )?load in kernel @\w+, block 'add' "
                     r"\(ONNX node 'fc1_add'\): buffer weight 'fc1.bias' \(memref<32xf32>\) index \[\S+\] "
                     r"is outside its dims \[32\]", str(e)), str(e)
    # the unperturbed model is clean in checked mode
    ref = x @ numpy_helper.to_array(model.graph.initializer[0]) + numpy_helper.to_array(model.graph.initializer[1])
    np.testing.assert_allclose(compile(model, checks=True, cache=False)(x)[0], ref, rtol=1e-5, atol=1e-5)


def test_checks_off_changes_no_code():
    from minimlir.frontend import api

    def llvm_text(pipeline: str) -> str:
        ctx = api.make_context()
        module = api.load(SHIFT, ctx=ctx).module
        api.lower(module, pipeline, ctx=ctx, name="x")
        return api.ir_text(module)

    default = llvm_text("convert-to-llvm")
    explicit_off = llvm_text("convert-loop-to-llvm,convert-mem-to-llvm{checks=false},convert-arith-to-llvm,"
                             "convert-math-to-llvm,convert-cf-to-llvm,convert-func-to-llvm,dce")
    assert default == explicit_off
    assert "__minimlir" not in default and "__mm_site" not in default
    checked = llvm_text(checked_pipeline("convert-to-llvm"))
    assert "__minimlir_check_fail" in checked and "__minimlir_poison" in checked


def test_checked_and_unchecked_never_share_a_cache_entry(tmp_path):
    plain = compile(SHIFT, cache=tmp_path)
    checked = compile(SHIFT, cache=tmp_path, checks=True)
    assert plain.program.cache_key != checked.program.cache_key
    again = compile(SHIFT, cache=tmp_path, checks=True)
    assert again.program.cache_hit and again.program.checked
    with pytest.raises(CheckError, match="index \\[2\\] is outside its dims \\[2\\]"):
        again(np.zeros(2, np.float32))
    plain_again = compile(SHIFT, cache=tmp_path)
    assert plain_again.program.cache_hit and not plain_again.program.checked


def test_env_switch(monkeypatch):
    monkeypatch.setenv("MINIMLIR_CHECKS", "1")
    assert compile(SHIFT, cache=False).program.checked
    assert not compile(SHIFT, cache=False, checks=False).program.checked


def test_checked_pipeline_text():
    assert checked_pipeline("graph-legalize,graph-bufferize,mem-to-llvm").split(",")[:3] == [
        "graph-legalize", "mem-check-sites", "graph-bufferize"]
    text = checked_pipeline("compile")
    assert "convert-mem-to-llvm{checks=true}" in text and text.count("mem-check-sites") == 1
    assert checked_pipeline("convert-mem-to-llvm{checks=false}") == (
        "mem-check-sites,convert-mem-to-llvm{checks=true}")


def test_aot_refuses_checked_code(tmp_path):
    from minimlir.backend import aot
    from minimlir.backend.jit import CompileError as JitCompileError
    from minimlir.frontend import api

    ctx = api.make_context()
    module = api.load(SHIFT, ctx=ctx).module
    api.lower(module, checked_pipeline("convert-to-llvm"), ctx=ctx, name="x")
    with pytest.raises(JitCompileError, match="checked mode"):
        aot.emit_object(module, tmp_path / "k.o")
