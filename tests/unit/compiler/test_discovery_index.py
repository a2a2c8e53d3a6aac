"""Lazy start-up (minimlir.compiler.discovery, minimlir.compiler.context): the cached index of passes and
dialects is what a full walk finds, it is redone when a file changes, and a tool imports only the passes
and dialects its input and pipeline use."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from minimlir.compiler import discovery
from minimlir.compiler.discovery import discovery_index, index_fingerprint, our_dialects, our_passes, walk_index

ROOT = Path(__file__).resolve().parents[3]


def _python(code: str, cache: Path, *args: str) -> str:
    env = dict(os.environ, MINIMLIR_CACHE_DIR=str(cache))
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args], capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A fresh cache folder, the index written into it (as the first tool run writes it)."""
    monkeypatch.setenv("MINIMLIR_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(discovery, "_index", None)
    discovery_index()
    monkeypatch.setattr(discovery, "_index", None)  # the next call reads the file
    return tmp_path


def test_the_index_is_what_a_full_walk_finds():
    index = walk_index()
    assert index["passes"] == {name: [c.__module__, c.__qualname__] for name, c in our_passes().items()}
    assert set(index["dialects"]) == {d.name for d in our_dialects()} >= {"graph", "loop", "mem"}
    for name, factory in discovery.our_pass_factories().items():
        assert factory() is our_passes()[name]
    for name, factory in discovery.our_dialect_factories().items():
        assert factory().name == name


def test_the_cached_index_is_read_back_and_redone_when_stale(cache, monkeypatch):
    (file,) = cache.glob("discovery-*.json")
    stored = json.loads(file.read_text())
    assert stored["key"] == index_fingerprint()
    assert {k: v for k, v in stored.items() if k != "key"} == walk_index()
    # a doctored entry shows the next start reads the file instead of walking
    stored["passes"]["cse-from-cache"] = ["xdsl.transforms.common_subexpression_elimination",
                                         "CommonSubexpressionElimination"]
    file.write_text(json.dumps(stored))
    assert discovery_index()["passes"]["cse-from-cache"] == stored["passes"]["cse-from-cache"]
    assert discovery.pass_registry()["cse-from-cache"]().name == "cse"
    # a stale key (a file changed since) or a corrupt file: walk again, and rewrite it
    for bad in (json.dumps({**stored, "key": "stale"}), "{not json", "[]"):
        file.write_text(bad)
        monkeypatch.setattr(discovery, "_index", None)
        assert discovery_index() == walk_index()
        assert json.loads(file.read_text())["key"] == index_fingerprint()
    assert [p.name for p in cache.iterdir()] == [file.name]  # no temporary file left behind


def test_an_unwritable_cache_folder_still_discovers(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")  # a file where the cache folder should be: makedirs fails
    monkeypatch.setenv("MINIMLIR_CACHE_DIR", str(blocker / "cache"))
    monkeypatch.setattr(discovery, "_index", None)
    assert discovery_index() == walk_index()


def test_the_key_changes_when_a_file_is_added_edited_or_removed(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub" / "__pycache__").mkdir(parents=True)
    (pkg / "a.py").write_text("x = 1\n")
    key = index_fingerprint([str(pkg)])
    (pkg / "sub" / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"")  # not a source: ignored
    (pkg / "notes.txt").write_text("")
    assert index_fingerprint([str(pkg)]) == key
    (pkg / "sub" / "b.py").write_text("")
    added = index_fingerprint([str(pkg)])
    assert added != key
    (pkg / "a.py").write_text("x = 22\n")
    edited = index_fingerprint([str(pkg)])
    assert edited not in (key, added)
    (pkg / "sub" / "b.py").unlink()
    assert index_fingerprint([str(pkg)]) not in (key, added, edited)


LOADED = """
    import sys
    from minimlir.tools.mini_opt import main
    code = main(sys.argv[1:])
    mods = sorted(m for m in sys.modules if m.startswith(("minimlir.passes.", "minimlir.dialects.")))
    print(code, " ".join(mods), "numpy" in sys.modules)
"""


def test_mini_opt_imports_only_the_dialects_and_passes_it_uses(cache, tmp_path):
    src = tmp_path / "f.mlir"
    src.write_text("func.func @f(%x: i32) -> i32 {\n  func.return %x : i32\n}\n")
    out = _python(LOADED, tmp_path, str(src), "-p", "cse", "-o", str(tmp_path / "out.mlir")).split()
    assert out[0] == "0" and out[-1] == "False"  # no numpy: nothing here computes with it
    assert not [m for m in out[1:-1] if m.startswith("minimlir.passes.") and "._" not in m]
    assert "minimlir.dialects.graph" not in out
    out = _python(LOADED, tmp_path, str(ROOT / "examples" / "add_relu.mlir"), "-p", "graph-fuse",
                  "-o", str(tmp_path / "out.mlir")).split()
    assert out[0] == "0"
    assert {"minimlir.dialects.graph", "minimlir.dialects.loop", "minimlir.passes.graph.fuse"} <= set(out)
    assert "minimlir.passes.graph.legalize" not in out and "minimlir.passes.loop.schedule" not in out


def test_lazily_loaded_xdsl_dialects_get_our_fixes(cache):
    # llvm loads with llvm_ext's ops, arith with the vector compare fix, and dense hex floats parse as
    # bit patterns in any dialect: in a fresh process that imported none of them before parsing.
    code = """
        import sys
        from minimlir.compiler.parsing import parse_module
        assert "minimlir.dialects.llvm_ext" not in sys.modules and "xdsl.dialects.arith" not in sys.modules
        m = parse_module('''
        builtin.module attributes {t = dense<0xFF800000> : tensor<f32>} {
          func.func @f(%a: vector<8xf32>, %b: vector<8xf32>) -> vector<8xi1> {
            %c = arith.cmpf olt, %a, %b : vector<8xf32>
            func.return %c : vector<8xi1>
          }
          llvm.func @g(%a: vector<8xf32>, %b: vector<8xf32>) -> vector<8xi1> {
            %c = llvm.fcmp "olt" %a, %b : vector<8xf32>
            llvm.return %c : vector<8xi1>
          }
        }''', "t.mlir")
        print(m.attributes["t"].get_values()[0], "minimlir.passes.to_llvm.mem" in sys.modules)
    """
    assert _python(code, cache).split() == ["-inf", "False"]  # and no walk imported every module
