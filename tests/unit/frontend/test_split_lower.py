"""Parallel lowering (frontend/_split_lower.py): chunks of kernels lowered in forked workers give
the program the sequential pipeline gives; errors and dead workers are handled."""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

from minimlir.frontend import _split_lower as sl
from minimlir.frontend import api

ROOT = Path(__file__).resolve().parents[3]
GPT2 = ROOT / "tests" / "data" / "tiny_gpt2_block.onnx"
# The paths that do not depend on the model's size (a failing chunk, a dying worker, a daemonic
# process) use the 3-kernel MLP, which `split_small` splits too: one GPT-2 compile costs ~10 CPU-s.
MLP = ROOT / "examples" / "mlp.onnx"


def _defined(ir: str) -> set[str]:
    return set(re.findall(r'^define [^@]*@"?([-\w.$]+)"?\(', ir, re.M))


@pytest.fixture
def split_small(monkeypatch):
    """Split even tiny models, into two workers."""
    monkeypatch.setattr(sl, "MIN_KERNELS", 1)
    monkeypatch.setenv("MINIMLIR_COMPILE_JOBS", "2")


def _feeds(sess, batch, seq):
    rng = np.random.default_rng(batch * 100 + seq)
    return {i.name: rng.integers(0, 50, (batch, seq)).astype(np.int64) for i in sess.get_inputs()}


def _mlp_feeds(sess, batch):
    rng = np.random.default_rng(batch)
    return {i.name: rng.standard_normal((batch, *i.shape[1:])).astype(np.float32) for i in sess.get_inputs()}


def test_split_matches_onnxruntime_on_gpt2(split_small):
    """A real multi-chunk model: one dynamic-size program, lowered in workers, serves every (batch, seq)."""
    split = api.compile(GPT2, cache=False)
    assert "lower-split-wall" in split.timings  # it did run in workers
    sess = ort.InferenceSession(str(GPT2))
    for batch, n in [(2, 5), (3, 11)]:
        feeds = _feeds(sess, batch, n)
        np.testing.assert_allclose(split(**feeds)[0], sess.run(None, feeds)[0], rtol=1e-4, atol=1e-5)


def test_split_gives_the_sequential_program(split_small, monkeypatch):
    """The same functions, remarks and bit-identical outputs as the sequential pipeline (on the MLP,
    which split_small cuts into chunks too: a second GPT-2 compile would cost ~10 CPU-s)."""
    split = api.compile(MLP, cache=False)
    assert "lower-split-wall" in split.timings
    monkeypatch.setenv("MINIMLIR_COMPILE_JOBS", "1")
    seq = api.compile(MLP, cache=False)
    assert "lower-split-wall" not in seq.timings
    assert _defined(split.program.engine.llvm_ir) == _defined(seq.program.engine.llvm_ir)
    assert split.remarks == seq.remarks
    sess = ort.InferenceSession(str(MLP))
    for batch in (1, 4):
        feeds = _mlp_feeds(sess, batch)
        np.testing.assert_array_equal(split(**feeds)[0], seq(**feeds)[0])


def test_chunks_cover_every_kernel_once():
    ctx = api.make_context()
    module = api.load(GPT2, ctx=ctx).module
    api.lower(module, sl.PREFIX, ctx=ctx)
    kernels = {k.sym_name.data for k in sl._kernels(module)}
    chunks = sl.plan_chunks(module, 2)
    assert 1 < len(chunks) <= 8
    names = [n for c in chunks for n in c]
    assert sorted(names) == sorted(kernels)
    main = sl.build_chunk(module, None)
    declared = {op.sym_name.data for op in main.ops if op.name == "func.func" and not op.body.blocks}
    assert kernels <= declared  # the graph-level chunk calls them through declarations


def test_a_failing_chunk_raises_compile_error(split_small, monkeypatch):
    monkeypatch.setattr(sl, "SUFFIX", sl.SUFFIX + ",no-such-pass")
    sl_module = api.load(MLP).module
    api.lower(sl_module, sl.PREFIX)
    assert len(sl.plan_chunks(sl_module, 2)) > 1  # it does split (in workers: the error comes from one)
    with pytest.raises(api.CompileError, match="no-such-pass"):
        sl.lower_split(sl_module, entry="main", name="mlp", source_text=None, workers=2)


def test_a_dying_worker_falls_back_to_the_sequential_pipeline(split_small, monkeypatch, tmp_path):
    def die(index, kernels):
        (tmp_path / f"worker-{index}").touch()  # the split was tried
        os._exit(3)

    monkeypatch.setattr(sl, "_work", die)
    m = api.compile(MLP, cache=False)
    assert list(tmp_path.glob("worker-*"))
    assert "lower-split-wall" not in m.timings
    sess = ort.InferenceSession(str(MLP))
    feeds = _mlp_feeds(sess, 3)
    np.testing.assert_allclose(m(**feeds)[0], sess.run(None, feeds)[0], rtol=1e-4, atol=1e-5)


def test_merge_keeps_one_declaration_and_drops_declared_definitions():
    a = ('; ModuleID = ""\ntarget triple = "x86_64-unknown-linux-gnu"\n'
         '@"g" = external global i32\n'
         'define i32 @"main"(ptr %".1")\n{\n  call void @"k"(ptr %".1")\n  ret i32 0\n}\n'
         'declare void @"k"(ptr %".1")\ndeclare void @"free"(ptr %".1")\n')
    b = ('; ModuleID = ""\ntarget triple = "x86_64-unknown-linux-gnu"\n'
         '@"g" = external global i32\n'
         'define internal void @"k"(ptr %".1")\n{\n  call void @"free"(ptr %".1")\n  ret void\n}\n'
         'declare void @"free"(ptr %".1")\n')
    merged = sl.merge_llvm_ir([a, b])
    assert merged.count("target triple") == 1
    assert merged.count('@"g" = external global i32') == 1
    assert 'declare void @"k"' not in merged
    assert merged.count('declare void @"free"') == 1
    assert _defined(merged) == {"main", "k"}
    import llvmlite.binding as llvm

    llvm.parse_assembly(merged).verify()


def test_merge_refuses_what_it_cannot_combine():
    with pytest.raises(sl.SplitUnavailable):
        sl.merge_llvm_ir(["define void @f()\n{\n  ret void\n}\n", "define void @f()\n{\n  ret void\n}\n"])
    with pytest.raises(sl.SplitUnavailable):
        sl.merge_llvm_ir(["@x = global i32 1\n", "@x = global i32 2\n"])
    with pytest.raises(sl.SplitUnavailable):
        sl.merge_llvm_ir(["!0 = !{}\n"])


def _compile_in_daemon(q):
    m = api.compile(MLP, cache=False)
    q.put("lower-split-wall" in m.timings)


def test_a_daemonic_process_compiles_without_workers(split_small):
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_compile_in_daemon, args=(q,), daemon=True)
    p.start()
    used_workers = q.get(timeout=300)
    p.join(60)
    assert p.exitcode == 0 and used_workers is False
