"""backend/runtime.py: zero-copy calls, argument checks before native code, owned outputs, params."""

import ctypes
import gc

import llvmlite.binding as llvm
import numpy as np
import pytest

from minimlir.backend import runtime
from minimlir.backend.runtime import ArgumentError, collect_metadata, compile_mlir_text

# y = x + w (w a param); x's dim 0 is "batch"; @both checks a shared dim name across inputs
SRC = """
func.func private @add(%a: memref<?x3xf32>, %b: memref<?x3xf32>, %c: memref<?x3xf32>) attributes {loop.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %n = mem.dim %a, 0 : memref<?x3xf32>
  loop.for %i = %c0 to %n step %c1 {
    loop.for %j = %c0 to %c3 step %c1 {
      loop.block "add" (%vi = %i, %vj = %j) [spatial, spatial] {
        %x = mem.load %a[%vi, %vj] : memref<?x3xf32> -> f32
        %y = mem.load %b[%vi, %vj] : memref<?x3xf32> -> f32
        %s = arith.addf %x, %y : f32
        mem.store %s, %c[%vi, %vj] : f32, memref<?x3xf32>
      }
    }
  }
  func.return
}
func.func @main(%x: memref<?x3xf32> {graph.name = "x", graph.dim_names = ["batch", ""]},
                %w: memref<?x3xf32> {mem.param = "w"}) -> (memref<?x3xf32> {graph.name = "y"}) {
  %n = mem.dim %x, 0 : memref<?x3xf32>
  %r = mem.alloc(%n) {mem.result_slot = 0 : i64} : memref<?x3xf32>
  func.call @add(%x, %w, %r) : (memref<?x3xf32>, memref<?x3xf32>, memref<?x3xf32>) -> ()
  func.return %r : memref<?x3xf32>
}
func.func @both(%p: memref<?x3xf32> {graph.dim_names = ["batch", ""]},
                %q: memref<?x3xf32> {graph.dim_names = ["batch", ""]}) -> memref<2x3xf32> {
  %r = mem.alloc() : memref<2x3xf32>
  func.return %r : memref<2x3xf32>
}
func.func @plain(%a: memref<?x3xf32>, %b: memref<?x3xf32>, %c: memref<?x3xf32>) {
  func.call @add(%a, %b, %c) : (memref<?x3xf32>, memref<?x3xf32>, memref<?x3xf32>) -> ()
  func.return
}
"""

W = np.arange(12, dtype=np.float32).reshape(4, 3)


@pytest.fixture(scope="module")
def prog():
    return compile_mlir_text(SRC, pipeline="convert-to-llvm", cache=False, params={"w": W})


def test_metadata_is_serializable_and_complete():
    import json

    from xdsl.parser import Parser

    module = Parser(runtime.make_context(), SRC, "<t>").parse_module()
    meta = json.loads(json.dumps(collect_metadata(module)))
    main = meta["functions"]["main"]
    assert main["abi"] == "entry"
    assert main["args"][0] == {
        "name": "x", "param": None, "kind": "memref", "dtype": "float32",
        "shape": [None, 3], "dim_names": ["batch", ""],
    }
    assert main["args"][1]["param"] == "w"
    assert main["results"] == [{"name": "y", "kind": "memref", "dtype": "float32", "shape": [None, 3]}]
    assert meta["functions"]["plain"]["abi"] == "plain"
    assert "add" not in meta["functions"]  # private


def test_native_allocated_output(prog):
    x = np.ones((4, 3), np.float32)
    y = prog.main(x)
    np.testing.assert_array_equal(y, x + W)
    assert y.flags.c_contiguous and y.ctypes.data % 64 == 0


def test_out_is_zero_copy(prog):
    x = np.ones((4, 3), np.float32)
    out = np.zeros((4, 3), np.float32)
    res = prog.main(x, out=out)
    assert res is out
    np.testing.assert_array_equal(out, x + W)


def test_plain_function_writes_into_caller_array_via_dlpack(prog):
    class OnlyDlpack:  # a foreign array: only the DLPack protocol
        def __init__(self, a):
            self.a = a

        def __dlpack__(self, **kw):
            return self.a.__dlpack__(**kw)

        def __dlpack_device__(self):
            return self.a.__dlpack_device__()

    a = np.full((2, 3), 2.0, np.float32)
    c = np.zeros((2, 3), np.float32)
    prog.plain(OnlyDlpack(a), a, OnlyDlpack(c))
    np.testing.assert_array_equal(c, 4.0)


def test_owned_outputs_are_freed(prog, monkeypatch):
    freed = []
    real = runtime.FREE
    monkeypatch.setattr(runtime, "FREE", lambda p: (freed.append(p), real(p)))
    x = np.ones((4, 3), np.float32)
    ptrs = []
    for _ in range(5):
        y = prog.main(x)
        ptrs.append(y.ctypes.data)
        view = y[1:]  # a view keeps the buffer alive
        del y
        gc.collect()
        assert ptrs[-1] not in freed
        del view
        gc.collect()
        assert ptrs[-1] in freed
    assert len(freed) == 5


@pytest.mark.parametrize(
    "x, message",
    [
        (np.ones((4, 3), np.float64), "input 'x': expected dtype float32 but got float64"),
        (np.ones((4,), np.float32), r"input 'x': expected rank 2 \(shape \(\?, 3\)\) but got rank 1"),
        (np.ones((4, 5), np.float32), r"input 'x': expected shape \(\?, 3\) but got \(4, 5\)"),
        (np.ones((3, 4), np.float32).T, "input 'x': the array is not C-contiguous"),
        ([[1.0, 2.0, 3.0]], "input 'x': expected a NumPy array or a DLPack-capable array, got list"),
    ],
)
def test_bad_inputs_fail_before_native_code(prog, x, message):
    with pytest.raises(ArgumentError, match=message):
        prog.main(x)


def test_param_checked_like_an_input():
    bad = compile_mlir_text(SRC, entry="main", pipeline="convert-to-llvm", cache=False,
                            params={"w": W.astype(np.float64)})
    with pytest.raises(ArgumentError, match="param 'w': expected dtype float32 but got float64"):
        bad.main(np.ones((4, 3), np.float32))


def test_missing_param():
    p = compile_mlir_text(SRC, entry="main", pipeline="convert-to-llvm", cache=False)
    with pytest.raises(ArgumentError, match="param 'w' is missing"):
        p.main(np.ones((4, 3), np.float32))


def test_params_file(tmp_path):
    from minimlir.compiler.params import save_params

    path = tmp_path / "m.params"
    save_params(path, {"w": W})
    p = compile_mlir_text(SRC, entry="main", pipeline="convert-to-llvm", cache=False, params=path)
    np.testing.assert_array_equal(p(np.zeros((4, 3), np.float32)), W)


def test_copy_opt_in_for_non_contiguous():
    p = compile_mlir_text(SRC, entry="main", pipeline="convert-to-llvm", cache=False,
                          params={"w": W}, allow_copy=True)
    x = np.ones((3, 4), np.float32).T
    np.testing.assert_array_equal(p.main(x), x + W)


def test_wrong_out_raises_before_running(prog):
    x = np.ones((4, 3), np.float32)
    out = np.full((4, 5), 7.0, np.float32)
    with pytest.raises(ArgumentError, match=r"out= for result 'y': expected shape \(\?, 3\) but got \(4, 5\)"):
        prog.main(x, out=out)
    assert (out == 7.0).all()
    with pytest.raises(ArgumentError, match="out= for result 'y': the array is read-only"):
        ro = np.zeros((4, 3), np.float32)
        ro.flags.writeable = False
        prog.main(x, out=ro)


def test_out_with_wrong_dynamic_dim_reports_computed_shape(prog):
    x = np.ones((4, 3), np.float32)
    out = np.zeros((2, 3), np.float32)  # dim 0 is dynamic: checked by the native code
    with pytest.raises(ArgumentError, match=r"computed shape is \(4, 3\) but the array has shape \(2, 3\)"):
        prog.main(x, out=out)


def test_shared_dim_name_must_agree(prog):
    with pytest.raises(ArgumentError, match=r"input 'q': dim 0 \('batch'\) is 3 but input 'p' has 'batch' = 2"):
        prog.both(np.zeros((2, 3), np.float32), np.zeros((3, 3), np.float32))


def test_llvm_module_input_needs_metadata(prog):
    from xdsl.parser import Parser

    module = Parser(runtime.make_context(), SRC, "<t>").parse_module()
    meta = collect_metadata(module, "plain")
    runtime.run_pipeline(module, "convert-to-llvm")
    p = compile_mlir_text(module, metadata=meta, cache=False)
    c = np.zeros((1, 3), np.float32)
    p.plain(np.ones((1, 3), np.float32), np.ones((1, 3), np.float32), c)
    np.testing.assert_array_equal(c, 2.0)
    with pytest.raises(ArgumentError, match="needs metadata"):
        compile_mlir_text(module, cache=False)


def test_graph_to_llvm_end_to_end():
    src = """
    func.func @main(%x: tensor<?x3xf32>, %y: tensor<3xf32>) -> tensor<?x3xf32> {
      %w = graph.param "w" : tensor<3x3xf32>
      %a = graph.add %x, %y : (tensor<?x3xf32>, tensor<3xf32>) -> tensor<?x3xf32>
      %m = graph.matmul %a, %w : (tensor<?x3xf32>, tensor<3x3xf32>) -> tensor<?x3xf32>
      %r = graph.relu %m : tensor<?x3xf32>
      func.return %r : tensor<?x3xf32>
    }
    """
    rng = np.random.default_rng(3)
    w = rng.standard_normal((3, 3)).astype(np.float32)
    p = compile_mlir_text(src, cache=False, params={"w": w})  # default pipeline: graph-to-llvm
    assert p.metadata["functions"]["main"]["args"][2]["param"] == "w"
    for n in (1, 6):
        x = rng.standard_normal((n, 3)).astype(np.float32)
        y = rng.standard_normal(3).astype(np.float32)
        np.testing.assert_allclose(p.main(x, y), np.maximum((x + y) @ w, 0), rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------ compile diagnostics and errors

GRAPH = """
func.func @main(%x: tensor<?x3xf32>, %y: tensor<3xf32>) -> tensor<?x3xf32> {
  %a = graph.add %x, %y : (tensor<?x3xf32>, tensor<3xf32>) -> tensor<?x3xf32>
  %r = graph.relu %a : tensor<?x3xf32>
  %s = graph.relu %r : tensor<?x3xf32>
  func.return %s : tensor<?x3xf32>
}
"""


def test_remarks_are_collected_not_printed(capfd):
    p = compile_mlir_text(GRAPH, cache=False, filename="model.mlir")
    assert capfd.readouterr().err == ""
    assert any(r.startswith("model.mlir:2:1: remark: peak bytes:") for r in p.remarks), p.remarks
    assert p.warnings == []


def test_warnings_are_collected_and_reemitted():
    src = """
    func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
      %c = graph.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
      %a = graph.add %x, %c : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      func.return %a : tensor<4xf32>
    }
    """
    pipeline = "graph-legalize,graph-bufferize{max-inline-elements=2},mem-to-llvm"
    with pytest.warns(runtime.CompileWarning, match=r"<input>:3:12: warning: graph.constant of 4 elements"):
        p = compile_mlir_text(src, pipeline=pipeline, cache=False)
    assert len(p.warnings) == 1 and "make it a graph.param" in p.warnings[0]


def test_pass_failure_is_a_located_compile_error():
    src = """func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c = graph.constant dense_resource<blob1> : tensor<4xf32>
  %a = graph.add %x, %c : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %a : tensor<4xf32>
}
"""
    with pytest.raises(runtime.CompileError) as info:
        compile_mlir_text(src, cache=False, filename="m.mlir")
    message = str(info.value)
    assert message.startswith("m.mlir:2:8: error: failed to bufferize operation 'graph.constant'")
    assert message.endswith("note: pass 'graph-bufferize' failed")
    assert info.value.pass_name == "graph-bufferize"
    from minimlir.compiler.pass_manager import PassFailure

    assert not isinstance(info.value, PassFailure)


def test_pass_failure_in_a_lowering_names_the_pass():
    src = """func.func private @k(%a: memref<4xf32>) -> memref<4xf32> {
  func.return %a : memref<4xf32>
}
func.func @main(%x: memref<4xf32>) {
  func.return
}
"""
    with pytest.raises(runtime.CompileError, match=r"(?s)<input>:1:1: error: failed to legalize operation "
                       r"'func.func': @k returns a memref.*pass 'convert-mem-to-llvm' failed"):
        compile_mlir_text(src, pipeline="convert-to-llvm", cache=False)


@pytest.mark.parametrize(
    "src, message",
    [
        ("func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n  func.return %x tensor<4xf32>\n}",
         r"^<input>:2:18: error: Expected ':'"),
        ("func.func @main() {\n  %a = graph.nope : i32\n}", r"^<input>:2:8: error: unknown operation 'graph.nope'"),
    ],
)
def test_parse_errors_are_located(src, message):
    with pytest.raises(runtime.CompileError, match=message):
        compile_mlir_text(src, cache=False)


def test_bad_pipeline_is_a_compile_error():
    with pytest.raises(runtime.CompileError, match="invalid pipeline 'graph-legalise'.*unknown pass 'graph-legalise'"):
        compile_mlir_text(GRAPH, pipeline="graph-legalise", cache=False)


def test_wrong_number_of_inputs_names_the_expected_inputs():
    p = compile_mlir_text(GRAPH, cache=False)
    x = np.ones((2, 3), np.float32)
    expected = r"expected input\(s\): x: float32\(\?, 3\), y: float32\(3,\)"
    with pytest.raises(ArgumentError, match=r"main\(\) takes 2 input\(s\) but 3 were given; " + expected):
        p.main(x, x[0], x)
    with pytest.raises(ArgumentError, match=r"main\(\): missing input\(s\) 'y'; " + expected):
        p.main(x)
    with pytest.raises(ArgumentError, match=r"unexpected input 'z'; " + expected):
        p.main(x, x[0], z=x)


# ------------------------------------------------------------------ native error paths leak nothing

_ALLOC_T = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)
_FREE_T = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class CountingAllocator:
    """aligned_alloc/free for JIT code compiled while installed: records pointers, can fail the
    n-th allocation (returns null)."""

    def __init__(self):
        libc = ctypes.CDLL(None)
        self.real_alloc = libc.aligned_alloc
        self.real_alloc.argtypes = [ctypes.c_size_t, ctypes.c_size_t]
        self.real_alloc.restype = ctypes.c_void_p
        self.real_free = libc.free
        self.real_free.argtypes = [ctypes.c_void_p]
        self.real_free.restype = None
        self.allocated: list[int] = []
        self.freed: list[int] = []
        self.fail_at: int | None = None
        self.calls = 0
        self._alloc = _ALLOC_T(self.alloc)
        self._free = _FREE_T(self.free)

    def alloc(self, align, size):
        self.calls += 1
        if self.fail_at is not None and self.calls == self.fail_at:
            return None
        p = self.real_alloc(align, size)
        self.allocated.append(p)
        return p

    def free(self, p):
        if p:
            self.freed.append(p)
        self.real_free(p)

    def live(self, runtime_freed):
        return set(self.allocated) - set(self.freed) - set(runtime_freed)


@pytest.fixture
def counting(monkeypatch):
    from minimlir.backend import _target

    _target.init_llvm()
    counter = CountingAllocator()
    real = {n: llvm.address_of_symbol(n) for n in ("aligned_alloc", "free")}
    llvm.add_symbol("aligned_alloc", ctypes.cast(counter._alloc, ctypes.c_void_p).value)
    llvm.add_symbol("free", ctypes.cast(counter._free, ctypes.c_void_p).value)
    runtime_freed: list[int] = []
    real_free = runtime.FREE
    monkeypatch.setattr(runtime, "FREE", lambda p: (runtime_freed.append(p), real_free(p)))
    try:
        prog = compile_mlir_text(GRAPH, cache=False)  # relu(relu(x + y)): an arena + a result
    finally:
        for name, addr in real.items():
            llvm.add_symbol(name, addr)
    yield prog, counter, runtime_freed


def test_out_shape_mismatch_frees_the_arena(counting):
    prog, counter, runtime_freed = counting
    x, y = np.ones((4, 3), np.float32), np.ones(3, np.float32)
    np.testing.assert_array_equal(prog.main(x, y), 2.0)
    gc.collect()
    assert counter.allocated and not counter.live(runtime_freed)
    with pytest.raises(ArgumentError, match=r"computed shape is \(4, 3\) but the array has shape \(2, 3\)"):
        prog.main(x, y, out=np.zeros((2, 3), np.float32))
    assert not counter.live(runtime_freed)
    out = np.zeros((4, 3), np.float32)
    prog.main(x, y, out=out)
    np.testing.assert_array_equal(out, 2.0)
    assert not counter.live(runtime_freed)


def test_failed_allocation_is_memory_error_and_leaks_nothing(counting):
    prog, counter, runtime_freed = counting
    x, y = np.ones((4, 3), np.float32), np.ones(3, np.float32)
    prog.main(x, y)
    per_call = counter.calls  # the arena and the result
    assert per_call >= 2
    for k in range(1, per_call + 1):  # fail each allocation of one call in turn
        counter.calls, counter.fail_at = 0, k
        with pytest.raises(MemoryError, match=r"main\(\): out of memory"):
            prog.main(x, y)
        gc.collect()
        assert not counter.live(runtime_freed), f"allocation {k} failed: leaked"
    counter.fail_at = None
    np.testing.assert_array_equal(prog.main(x, y), 2.0)
