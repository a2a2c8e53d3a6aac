"""The on-disk object cache: hits skip LLVM, corrupted entries are rebuilt, processes can race."""

import multiprocessing as mp

import pytest
from _backend_harness import lower

from minimlir.backend import cache
from minimlir.backend.jit import compile_module

TEXT = """
func.func @poly(%x: f64) -> f64 {
  %c3 = arith.constant 3.0 : f64
  %c1 = arith.constant 1.0 : f64
  %0 = arith.mulf %x, %x : f64
  %1 = arith.mulf %0, %c3 : f64
  %2 = arith.addf %1, %c1 : f64
  func.return %2 : f64
}
"""


@pytest.fixture(autouse=True)
def fresh_stats():
    cache.reset_stats()


def test_second_compile_is_a_hit(tmp_path):
    first = compile_module(lower(TEXT), cache=tmp_path)
    assert (cache.stats().hits, cache.stats().misses, cache.stats().writes) == (0, 1, 1)
    assert not first.cache_hit
    second = compile_module(lower(TEXT), cache=tmp_path)
    assert second.cache_hit and cache.stats().hits == 1
    assert second.get_function("poly")(2.0) == 13.0
    assert second.llvm_ir == first.llvm_ir
    assert "poly" in second.asm()


def test_opt_level_is_part_of_the_key(tmp_path):
    compile_module(lower(TEXT), cache=tmp_path, opt_level=3)
    compile_module(lower(TEXT), cache=tmp_path, opt_level=1)
    assert cache.stats().hits == 0 and len(list(tmp_path.glob("*.mmo"))) == 2


def test_env_var_selects_the_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("MINIMLIR_CACHE_DIR", str(tmp_path / "env"))
    compile_module(lower(TEXT), cache=True)
    assert len(list((tmp_path / "env").glob("*.mmo"))) == 1


@pytest.mark.parametrize("damage", ["truncate", "flip", "empty"])
def test_corrupted_entry_is_rebuilt(tmp_path, damage):
    compile_module(lower(TEXT), cache=tmp_path)
    (entry,) = tmp_path.glob("*.mmo")
    data = bytearray(entry.read_bytes())
    if damage == "truncate":
        data = data[: len(data) // 2]
    elif damage == "flip":
        data[len(data) // 3] ^= 0xFF
    else:
        data = bytearray()
    entry.write_bytes(bytes(data))
    cm = compile_module(lower(TEXT), cache=tmp_path)
    assert not cm.cache_hit
    assert cache.stats().corrupted == 1 and cache.stats().writes == 2
    assert cm.get_function("poly")(-1.0) == 4.0
    # the rebuilt entry is good again
    assert compile_module(lower(TEXT), cache=tmp_path).cache_hit


def _compile_in_child(directory: str, x: float) -> float:
    cm = compile_module(lower(TEXT), cache=directory)
    return cm.get_function("poly")(x)


def test_two_processes_compile_the_same_ir(tmp_path):
    ctx = mp.get_context("spawn")
    with ctx.Pool(2) as pool:
        results = pool.starmap(_compile_in_child, [(str(tmp_path), 1.0), (str(tmp_path), 2.0)])
    assert results == [4.0, 13.0]
    entries = list(tmp_path.glob("*.mmo"))
    assert len(entries) == 1 and not list(tmp_path.glob("*.tmp"))
    assert compile_module(lower(TEXT), cache=tmp_path).cache_hit
