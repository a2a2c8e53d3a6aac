"""Export a small random-weight GPT-2 (Hugging Face transformers) with its KV cache as ONNX inputs and
outputs (`use_cache=True`), for examples/generate.py and benchmarks/decode.py (run by hand; torch and
transformers are not minimlir dependencies):

    pip install 'torch==2.13.0+cpu' transformers onnxscript
    python examples/make_gpt2_kv.py [--layers 2 --embd 64 --heads 4 --vocab 256 --out examples/gpt2_kv.onnx]

The graph: input_ids (batch, seq) int64 and, per layer i, past_key_values.i.key / .value
(batch, heads, past, head_dim) float32 -> logits (batch, seq, vocab) and present.i.key / .value
(batch, heads, past + seq, head_dim). Positions continue from the past length; the causal mask covers
the past. One file serves the prefill (past = 0) and every decode step (seq = 1).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch
from torch import nn
from transformers import DynamicCache, GPT2Config, GPT2LMHeadModel


class WithPast(nn.Module):
    """GPT2LMHeadModel with the cache flattened into tensors (what an ONNX graph can carry)."""

    def __init__(self, model: GPT2LMHeadModel):
        super().__init__()
        self.model = model
        self.layers = model.config.n_layer

    def forward(self, input_ids: torch.Tensor, *past: torch.Tensor):
        cache = DynamicCache()
        for i in range(self.layers):
            cache.update(past[2 * i], past[2 * i + 1], i)
        out = self.model(input_ids=input_ids, past_key_values=cache, use_cache=True)
        present = []
        for i in range(self.layers):
            layer = out.past_key_values.layers[i]
            present += [layer.keys, layer.values]
        return (out.logits, *present)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--embd", type=int, default=64)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--vocab", type=int, default=256)
    p.add_argument("--positions", type=int, default=256)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--init-range", type=float, default=0.5,
                   help="weight std (GPT-2's 0.02 gives near-uniform logits and one repeated token)")
    p.add_argument("--dynamo", action="store_true", help="the dynamo exporter (default: TorchScript)")
    p.add_argument("--out", default=str(Path(__file__).resolve().parent / "gpt2_kv.onnx"))
    a = p.parse_args()
    torch.manual_seed(a.seed)
    config = GPT2Config(vocab_size=a.vocab, n_positions=a.positions, n_embd=a.embd, n_layer=a.layers,
                        n_head=a.heads, initializer_range=a.init_range, attn_implementation="eager")
    model = WithPast(GPT2LMHeadModel(config).eval())
    hd = a.embd // a.heads
    ids = torch.randint(0, a.vocab, (1, 3))
    past = [torch.randn(1, a.heads, 4, hd) for _ in range(2 * a.layers)]
    names = ["input_ids"] + [f"past_key_values.{i}.{kv}" for i in range(a.layers) for kv in ("key", "value")]
    outs = ["logits"] + [f"present.{i}.{kv}" for i in range(a.layers) for kv in ("key", "value")]
    axes = {"input_ids": {0: "batch", 1: "seq"}, "logits": {0: "batch", 1: "seq"}}
    for n in names[1:]:
        axes[n] = {0: "batch", 2: "past"}
    for n in outs[1:]:
        axes[n] = {0: "batch", 2: "total"}
    with torch.no_grad():
        if a.dynamo:
            b, s, pl = torch.export.Dim("batch"), torch.export.Dim("seq"), torch.export.Dim("past")
            shapes = ({0: b, 1: s}, *[{0: b, 2: pl} for _ in past])
            torch.onnx.export(model, (ids, *past), a.out, input_names=names, output_names=outs,
                              dynamic_shapes=(shapes[0], tuple(shapes[1:])), dynamo=True, opset_version=18)
        else:
            torch.onnx.export(model, (ids, *past), a.out, input_names=names, output_names=outs,
                              dynamic_axes=axes, opset_version=17, dynamo=False)
    print(f"wrote {a.out} ({Path(a.out).stat().st_size} bytes)")


if __name__ == "__main__":
    main()
