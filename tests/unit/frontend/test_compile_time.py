"""Compile-time machinery, structurally (no timing asserts): the `frontend.compile` disk cache (a hit
in a new process runs no pass; a changed model misses; weights come back from the stored params
file), `mini-run` twice compiles once, and graph-fuse's sharing of identical fusion groups (one
function, same numbers as without fusion)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto
from onnx import helper as h

from minimlir.frontend import compile
from minimlir.frontend.api import ir_text, load, lower
from minimlir.passes.graph.fuse import is_primitive

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
CONV_ONNX = EXAMPLES / "conv_add_relu.onnx"

_CHILD = """
import json, sys
import numpy as np
from minimlir.backend.runtime import compile_stats
from minimlir.frontend import compile
m = compile(sys.argv[1])
x = np.random.default_rng(0).standard_normal((2, 3, 16, 16)).astype(np.float32)
(y,) = m(x)
np.save(sys.argv[2], y)
s = compile_stats()
print(json.dumps({"passes": s.passes_run, "hits": s.hits, "hit": m.program.cache_hit}))
"""


def _child(model: Path, out: Path, cache: Path) -> dict:
    env = dict(os.environ, MINIMLIR_CACHE_DIR=str(cache))
    proc = subprocess.run([sys.executable, "-c", _CHILD, str(model), str(out)], env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_second_compile_in_new_process_runs_no_pass(tmp_path):
    model = tmp_path / "m.onnx"
    model.write_bytes(CONV_ONNX.read_bytes())
    first = _child(model, tmp_path / "a.npy", tmp_path / "cache")
    second = _child(model, tmp_path / "b.npy", tmp_path / "cache")
    assert first["passes"] > 0 and not first["hit"]
    assert second == {"passes": 0, "hits": 1, "hit": True}
    np.testing.assert_array_equal(np.load(tmp_path / "a.npy"), np.load(tmp_path / "b.npy"))
    assert list((tmp_path / "cache").glob("*.params")), "ONNX weights are stored beside the entry"


def test_changed_model_misses(tmp_path):
    model = onnx.load(str(CONV_ONNX))
    a = compile(model, cache=tmp_path)
    assert not a.program.cache_hit
    b = compile(model, cache=tmp_path)
    assert b.program.cache_hit and "lower" not in b.timings
    assert b.inputs == a.inputs and b.outputs == a.outputs and b.remarks == a.remarks
    init = model.graph.initializer[0]
    init.CopyFrom(onnx.numpy_helper.from_array(onnx.numpy_helper.to_array(init) + 1, init.name))
    c = compile(model, cache=tmp_path)
    assert not c.program.cache_hit
    x = np.ones((1, 3, 16, 16), np.float32)
    assert not np.array_equal(c(x)[0], a(x)[0])
    np.testing.assert_array_equal(b(x)[0], a(x)[0])


def test_mlir_hit_reads_params_given_again(tmp_path):
    text = """
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %w = graph.param "w" : tensor<4xf32>
  %s = graph.add %x, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %s : tensor<4xf32>
}
"""
    x = np.arange(4, dtype=np.float32)
    a = compile(text, params={"w": np.ones(4, np.float32)}, cache=tmp_path)
    b = compile(text, params={"w": np.full(4, 2, np.float32)}, cache=tmp_path)
    assert b.program.cache_hit
    np.testing.assert_array_equal(a(x)[0], x + 1)
    np.testing.assert_array_equal(b(x)[0], x + 2)


def test_mini_run_twice_compiles_once(tmp_path):
    x = np.random.default_rng(1).standard_normal((1, 3, 16, 16)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    code = (
        "import sys, json\n"
        "from minimlir.tools.mini_run import main\n"
        "from minimlir.backend.runtime import compile_stats\n"
        "rc = main(sys.argv[1:])\n"
        "print(json.dumps({'rc': rc, 'passes': compile_stats().passes_run}), file=sys.stderr)\n"
    )
    env = dict(os.environ, MINIMLIR_CACHE_DIR=str(tmp_path / "cache"))
    runs = []
    for _ in range(2):
        proc = subprocess.run([sys.executable, "-c", code, str(CONV_ONNX), "--input", f"x={tmp_path / 'x.npy'}"],
                              env=env, capture_output=True, text=True, timeout=600)
        runs.append((json.loads(proc.stderr.strip().splitlines()[-1]), proc.stdout))
    assert runs[0][0]["rc"] == 0 and runs[0][0]["passes"] > 0
    assert runs[1][0] == {"rc": 0, "passes": 0}
    assert runs[0][1] == runs[1][1]


def _two_identical_blocks() -> onnx.ModelProto:
    """x -> (conv, add, relu) -> (conv, add, relu) with the same shapes: two identical fusion groups."""
    rng = np.random.default_rng(2)
    inits, nodes, prev = [], [], "x"
    for i in range(2):
        w = rng.standard_normal((4, 4, 3, 3)).astype(np.float32)
        b = rng.standard_normal((1, 4, 1, 1)).astype(np.float32)
        inits += [onnx.numpy_helper.from_array(w, f"w{i}"), onnx.numpy_helper.from_array(b, f"b{i}")]
        nodes += [
            h.make_node("Conv", [prev, f"w{i}"], [f"c{i}"], pads=[1, 1, 1, 1]),
            h.make_node("Add", [f"c{i}", f"b{i}"], [f"a{i}"]),
            h.make_node("Relu", [f"a{i}"], [f"r{i}"]),
        ]
        prev = f"r{i}"
    graph = h.make_graph(nodes, "blocks", [h.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])],
                         [h.make_tensor_value_info(prev, TensorProto.FLOAT, [1, 4, 8, 8])], inits)
    return h.make_model(graph, opset_imports=[h.make_opsetid("", 17)], ir_version=8)


def test_identical_fusion_groups_share_one_function():
    loaded = load(_two_identical_blocks())
    lower(loaded.module, "graph-fuse")
    prims = [f for f in loaded.module.ops if is_primitive(f)]
    assert len(prims) == 1, ir_text(loaded.module)
    callees = [op.callee.string_value() for op in loaded.module.walk() if op.name == "func.call"]
    assert callees == [prims[0].sym_name.data] * 2


def test_shared_fusion_group_computes_what_unfused_code_does():
    model = _two_identical_blocks()
    x = np.random.default_rng(3).standard_normal((1, 4, 8, 8)).astype(np.float32)
    fused = compile(model, cache=False)
    plain = compile(model, cache=False, pipeline="graph-to-llvm")
    np.testing.assert_allclose(fused(x)[0], plain(x)[0], rtol=1e-5, atol=1e-5)
    import onnxruntime as ort

    (ref,) = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    np.testing.assert_allclose(fused(x)[0], ref, rtol=1e-4, atol=1e-4)


def test_split_llvm_compile_gives_identical_results(monkeypatch):
    """A module compiled in parts (child processes, several objects in one engine) computes exactly
    what the one-piece compile computes."""
    from minimlir.backend import jit

    model = _two_identical_blocks()
    x = np.random.default_rng(4).standard_normal((1, 4, 8, 8)).astype(np.float32)
    whole = compile(model, cache=False)
    assert jit.PART_MARKER not in whole.program.engine.llvm_ir
    monkeypatch.setattr(jit, "SPLIT_MIN_BYTES", 0)
    original = jit.compile_split
    monkeypatch.setattr(jit, "compile_split", lambda text, tm, opt, parts=None: original(text, tm, opt, 2))
    split = compile(model, cache=False)
    assert jit.PART_MARKER in split.program.engine.llvm_ir
    np.testing.assert_array_equal(split(x)[0], whole(x)[0])


def test_split_ir_defines_every_function_once():
    from minimlir.backend.jit import split_ir

    ir = (
        'target triple = "x86_64-unknown-linux-gnu"\n'
        '@"c" = internal constant [2 x float] [float 1.0, float 2.0]\n'
        'define internal void @"k"(ptr %".1")\n{\n.2:\n  call void @"GOMP_parallel"(ptr @"k_omp", ptr null, i32 0, i32 0)\n'
        '  ret void\n}\n'
        'define internal void @"k_omp"(ptr %".1")\n{\n.2:\n  ret void\n}\n'
        'define internal void @"j"(ptr %".1")\n{\n.2:\n  ret void\n}\n'
        'define i32 @"main"(ptr %".1")\n{\n.2:\n  call void @"k"(ptr %".1")\n  call void @"j"(ptr %".1")\n'
        '  ret i32 0\n}\n'
        'declare void @"GOMP_parallel"(ptr %".1", ptr %".2", i32 %".3", i32 %".4")\n'
    )
    parts = split_ir(ir, 2)
    assert parts is not None and len(parts) == 2
    defined = [ln.split("@")[1].split("(")[0] for p in parts for ln in p.splitlines() if ln.startswith("define")]
    assert sorted(defined) == sorted(['"k"', '"k_omp"', '"j"', '"main"'])
    # a kernel and the parallel body it references stay in one part
    assert any('define internal void @"k_omp"' in p and '@"k"(' in p for p in parts)
    import llvmlite.binding as llvm

    from minimlir.backend import _target

    _target.init_llvm()
    for p in parts:
        llvm.parse_assembly(p).verify()
    assert split_ir(ir.replace("internal constant", "global"), 2) is None  # a shared global: one piece


def test_failed_child_part_is_compiled_in_process(monkeypatch):
    """A part whose child process cannot run is compiled here: same objects, same results."""
    from minimlir.backend import jit

    model = _two_identical_blocks()
    x = np.random.default_rng(5).standard_normal((1, 4, 8, 8)).astype(np.float32)
    whole = compile(model, cache=False)
    monkeypatch.setattr(jit, "SPLIT_MIN_BYTES", 0)
    monkeypatch.setenv("MINIMLIR_LLVM_JOBS", "2")
    monkeypatch.setattr(jit.sys, "executable", "/bin/false")
    split = compile(model, cache=False)
    assert split.timings["llvm-parts"] == 2
    np.testing.assert_array_equal(split(x)[0], whole(x)[0])
