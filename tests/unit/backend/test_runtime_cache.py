"""backend/runtime.py compile cache: keyed by the input IR (not the lowered IR), so a hit in a new
process runs no parser and no pass; safe when processes share the folder; corruption rebuilds."""

import json
import subprocess
import sys

import numpy as np
import pytest

from minimlir.backend import cache, runtime
from minimlir.backend.runtime import compile_mlir_text, compile_stats

SRC = """
func.func @main(%x: tensor<?x3xf32>, %y: tensor<3xf32>) -> tensor<?x3xf32> {
  %a = graph.add %x, %y : (tensor<?x3xf32>, tensor<3xf32>) -> tensor<?x3xf32>
  %r = graph.relu %a : tensor<?x3xf32>
  func.return %r : tensor<?x3xf32>
}
"""

X = np.array([[1.0, -5.0, 2.0], [0.5, 0.5, -0.5]], np.float32)
Y = np.array([1.0, 2.0, -3.0], np.float32)
EXPECTED = np.maximum(X + Y, 0)

# A child process: compile SRC with the cache in argv[1], run it, report stats and the result.
CHILD = """
import json, sys
import numpy as np
from minimlir.backend import runtime
src, x, y = json.loads(sys.stdin.read())
p = runtime.compile_mlir_text(src, cache=sys.argv[1], pipeline=sys.argv[2])
s = runtime.compile_stats()
out = p.main(np.array(x, np.float32), np.array(y, np.float32))
print(json.dumps({"hits": s.hits, "misses": s.misses, "parses": s.parses,
                  "passes_run": s.passes_run, "cache_hit": p.cache_hit, "out": out.tolist()}))
"""


def _child(directory, wait=True, src=SRC, x=X, y=Y, pipeline="graph-to-llvm"):
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(directory), pipeline],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    proc.stdin.write(json.dumps([src, x.tolist(), y.tolist()]))
    proc.stdin.close()
    return proc if not wait else _report(proc)


def _report(proc):
    out = proc.stdout.read()
    err = proc.stderr.read()
    assert proc.wait() == 0, err
    assert err == "", err  # no remark printed either
    return json.loads(out)


@pytest.fixture(autouse=True)
def _fresh_stats():
    runtime.reset_compile_stats()
    cache.reset_stats()


def test_second_process_is_a_hit_and_runs_no_pass(tmp_path):
    first = _child(tmp_path)
    assert (first["misses"], first["hits"], first["cache_hit"]) == (1, 0, False)
    assert first["parses"] == 1 and first["passes_run"] > 0
    second = _child(tmp_path)
    assert (second["misses"], second["hits"], second["cache_hit"]) == (0, 1, True)
    assert second["parses"] == 0 and second["passes_run"] == 0
    np.testing.assert_array_equal(np.array(first["out"], np.float32), EXPECTED)
    np.testing.assert_array_equal(np.array(second["out"], np.float32), EXPECTED)
    assert len(list(tmp_path.glob("*.mmo"))) == 1


def test_two_processes_compiling_concurrently_both_succeed(tmp_path):
    procs = [_child(tmp_path, wait=False) for _ in range(2)]
    for r in [_report(p) for p in procs]:
        np.testing.assert_array_equal(np.array(r["out"], np.float32), EXPECTED)
    assert len(list(tmp_path.glob("*.mmo"))) == 1 and not list(tmp_path.glob("*.tmp"))
    p = compile_mlir_text(SRC, cache=tmp_path)
    assert p.cache_hit and compile_stats().passes_run == 0
    np.testing.assert_array_equal(p.main(X, Y), EXPECTED)


@pytest.mark.parametrize("damage", ["truncate", "flip", "empty", "bad-json"])
def test_corrupted_entry_is_rebuilt(tmp_path, damage):
    compile_mlir_text(SRC, cache=tmp_path)
    (entry,) = tmp_path.glob("*.mmo")
    data = bytearray(entry.read_bytes())
    if damage == "truncate":
        data = data[: len(data) // 2]
    elif damage == "flip":
        data[len(data) // 3] ^= 0xFF
    elif damage == "empty":
        data = bytearray()
    else:  # a well-formed entry whose metadata blob is not what the runtime needs
        parsed = cache._parse(bytes(data))
        assert parsed is not None and "metadata" in parsed.meta
        cache.store(tmp_path, entry.stem, parsed.obj, parsed.ir, {"something": "else"})
        data = bytearray(entry.read_bytes())
    entry.write_bytes(bytes(data))
    runtime.reset_compile_stats()
    p = compile_mlir_text(SRC, cache=tmp_path)
    assert not p.cache_hit and compile_stats().misses == 1 and compile_stats().passes_run > 0
    if damage != "bad-json":
        assert cache.stats().corrupted == 1
    np.testing.assert_array_equal(p.main(X, Y), EXPECTED)
    again = compile_mlir_text(SRC, cache=tmp_path)  # the rebuilt entry is good
    assert again.cache_hit


def test_changed_text_pipeline_entry_or_sources_miss(tmp_path, monkeypatch):
    compile_mlir_text(SRC, cache=tmp_path)
    assert compile_mlir_text(SRC, cache=tmp_path).cache_hit
    # the same passes spelled differently is a different pipeline string: a miss, not a wrong hit
    expanded = "graph-legalize,graph-bufferize,mem-plan,convert-to-llvm"
    assert not compile_mlir_text(SRC, pipeline=expanded, cache=tmp_path).cache_hit
    assert not compile_mlir_text(SRC + "\n// edited\n", cache=tmp_path).cache_hit
    assert not compile_mlir_text(SRC, entry="main", cache=tmp_path).cache_hit
    from minimlir.compiler import cache_key

    monkeypatch.setattr(cache_key, "source_fingerprint", lambda: "a pass was edited")
    assert not compile_mlir_text(SRC, cache=tmp_path).cache_hit
    assert compile_stats().hits == 1 and compile_stats().misses == 5
    assert len(list(tmp_path.glob("*.mmo"))) == 5


def test_key_has_host_and_versions_but_not_threads(monkeypatch):
    key = runtime.compile_key(SRC, "graph-to-llvm")
    assert runtime.compile_key(SRC, "graph-to-llvm", opt_level=2) != key
    monkeypatch.setenv("MINIMLIR_NUM_THREADS", "3")
    assert runtime.compile_key(SRC, "graph-to-llvm") == key
    monkeypatch.setattr(cache, "host_parts", lambda: ("x86_64", "some-other-cpu", "+avx2"))
    assert runtime.compile_key(SRC, "graph-to-llvm") != key


def test_source_fingerprint_sees_pass_files():
    fp = runtime.source_fingerprint()
    assert len(fp) == 64 and runtime.source_fingerprint() is fp  # computed once per process


def test_location_env_argument_and_disabled(tmp_path, monkeypatch):
    monkeypatch.setenv("MINIMLIR_CACHE_DIR", str(tmp_path / "env"))
    compile_mlir_text(SRC)  # cache=True: the env folder
    assert len(list((tmp_path / "env").glob("*.mmo"))) == 1
    compile_mlir_text(SRC, cache=tmp_path / "arg")
    assert len(list((tmp_path / "arg").glob("*.mmo"))) == 1
    p = compile_mlir_text(SRC, cache=False)
    assert not p.cache_hit and p.cache_key is None
    assert len(list((tmp_path / "env").glob("*.mmo"))) == 1 and compile_stats().hits == 0


def test_hit_keeps_metadata_remarks_and_warnings(tmp_path):
    src = """
    func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
      %c = graph.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
      %a = graph.add %x, %c : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      %r = graph.relu %a : tensor<4xf32>
      func.return %r : tensor<4xf32>
    }
    """
    pipeline = "graph-legalize,graph-bufferize{max-inline-elements=2},mem-to-llvm"
    with pytest.warns(runtime.CompileWarning, match="graph.constant of 4 elements"):
        first = compile_mlir_text(src, pipeline=pipeline, cache=tmp_path)
    ran = compile_stats().passes_run
    with pytest.warns(runtime.CompileWarning, match="graph.constant of 4 elements"):
        second = compile_mlir_text(src, pipeline=pipeline, cache=tmp_path)
    assert second.cache_hit and compile_stats().passes_run == ran > 0
    assert second.metadata == first.metadata
    assert second.remarks == first.remarks and any("peak bytes" in r for r in second.remarks)
    assert second.warnings == first.warnings and second.warnings[0].startswith("<input>:3:")
    x = np.array([-5.0, 0.0, 1.0, -1.0], np.float32)
    np.testing.assert_array_equal(second.main(x), np.maximum(x + [1, 2, 3, 4], 0))


def test_module_input_is_keyed_by_its_printed_form(tmp_path):
    from xdsl.parser import Parser

    module = Parser(runtime.make_context(), SRC, "<t>").parse_module()
    assert not compile_mlir_text(module, cache=tmp_path).cache_hit
    p = compile_mlir_text(module.clone(), cache=tmp_path)
    assert p.cache_hit and compile_stats().parses == 0
    np.testing.assert_array_equal(p.main(X, Y), EXPECTED)


def test_parallel_code_hits_in_a_new_process(tmp_path):
    """A hit must register what the lowering registered (libgomp, minimlir_num_threads) before
    MCJIT resolves the object's symbols; the hit process runs no pass."""
    from minimlir.backend import parallel
    from minimlir.tools.mini_opt import named_pipelines

    if "compile" not in named_pipelines() or not parallel.available():
        pytest.skip("no 'compile' pipeline or no libgomp")
    src = """
    func.func @main(%x: tensor<64x256xf32>, %y: tensor<256xf32>) -> tensor<64x256xf32> {
      %a = graph.add %x, %y : (tensor<64x256xf32>, tensor<256xf32>) -> tensor<64x256xf32>
      %r = graph.relu %a : tensor<64x256xf32>
      func.return %r : tensor<64x256xf32>
    }
    """
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 256)).astype(np.float32)
    y = rng.standard_normal(256).astype(np.float32)
    first = _child(tmp_path, src=src, x=x, y=y, pipeline="compile")
    (entry,) = tmp_path.glob("*.mmo")
    meta = cache._parse(entry.read_bytes()).meta
    if "GOMP_parallel" not in meta["externals"]:
        pytest.skip("the 'compile' pipeline made no parallel loop here")
    second = _child(tmp_path, src=src, x=x, y=y, pipeline="compile")
    assert not first["cache_hit"] and second["cache_hit"] and second["passes_run"] == 0
    for r in (first, second):
        np.testing.assert_array_equal(np.array(r["out"], np.float32), np.maximum(x + y, 0))
