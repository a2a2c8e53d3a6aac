"""PyTorch transformer exports with dynamic batch and sequence length (tests/data, made by
tests/data/make_torch_models.py with the TorchScript exporter, opset 17): import, compile once,
run at two (batch, seq) sizes, compare with onnxruntime."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

from _determinism import assert_repeatable
from minimlir.backend.runtime import compile_mlir_text
from minimlir.dialects import graph
from minimlir.frontend.onnx_import import DYNAMIC, import_onnx

DATA = Path(__file__).resolve().parents[2] / "data"
SIZES = [(2, 5), (3, 11)]


def _feeds(names: list[str], batch: int, seq: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    feeds = {}
    for name in names:
        if name == "attention_mask":
            mask = np.ones((batch, seq), np.int64)
            mask[0, seq // 2 + 1:] = 0  # padding in the first sequence
            feeds[name] = mask
        else:
            feeds[name] = rng.integers(0, 50, (batch, seq)).astype(np.int64)
    return feeds


FUSED = "graph-fuse-legalize,graph-bufferize,mem-to-llvm"


@pytest.mark.parametrize(
    "model, pipeline",
    [("tiny_gpt2_block.onnx", "graph-to-llvm"), ("tiny_bert_layer.onnx", "graph-to-llvm"),
     ("tiny_gpt2_block.onnx", FUSED)],
)
def test_transformer_export_matches_onnxruntime_at_two_sizes(model, pipeline):
    path = DATA / model
    module, params = import_onnx(path)
    fn = next(op for op in module.walk() if op.name == "func.func")
    # batch and seq stay dynamic: one compiled artifact serves every size.
    for arg in fn.body.block.args:
        assert list(arg.type.get_shape()) == [DYNAMIC, DYNAMIC]
    if model.startswith("tiny_gpt2"):
        # bias[:, :, :seq, :seq]: graph.slice with run-time ends (no constant-only fallback).
        slices = [op for op in module.walk() if isinstance(op, graph.SliceOp)]
        assert slices and all(op.dyn_ends is not None for op in slices)
    # Pass the module itself: xDSL 0.74 re-parses the printed `dense<0xff800000> : tensor<f32>`
    # (-inf, GPT-2's mask fill) as the integer 4286578688 (see the report).
    prog = compile_mlir_text(module, params=params, cache=False, pipeline=pipeline)
    sess = ort.InferenceSession(str(path))
    names = [i.name for i in sess.get_inputs()]
    rng = np.random.default_rng(0)
    for batch, seq in SIZES:
        feeds = _feeds(names, batch, seq, rng)
        (ref,) = sess.run(None, feeds)
        out = prog(*feeds.values())
        out = np.asarray(out[0] if isinstance(out, list | tuple) else out)
        assert out.shape == ref.shape
        np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-5)
        assert_repeatable(lambda: [prog(*feeds.values())], f"{model} at {(batch, seq)}")
