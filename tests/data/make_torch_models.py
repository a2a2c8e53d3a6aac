"""Export the small transformer test models in this folder with PyTorch (run by hand, not in the suite).

    pip install torch          # only for this script: torch is not a minimlir dependency
    python tests/data/make_torch_models.py

writes
    tiny_gpt2_block.onnx   a GPT-2-style decoder block: input_ids (batch, seq) int64 -> logits
                           (batch, seq, vocab); token + positional embeddings (arange(seq)),
                           LayerNorm, causal attention masked with both a slice of a registered
                           causal-mask buffer (bias[:, :, :seq, :seq]) and a Trilu of a
                           seq x seq tensor, softmax, GELU MLP, final LayerNorm and LM head.
    tiny_bert_layer.onnx   a BERT-like encoder layer: input_ids, attention_mask (batch, seq)
                           int64 -> hidden states (batch, seq, hidden); embeddings (word,
                           position via arange, token type via zeros_like), the extended
                           attention mask (1 - mask[:, None, None, :]) * -10000, self-attention
                           with view(batch, seq, heads, head_dim) reshapes, GELU FFN.

Both use the TorchScript exporter (`dynamo=False`, opset 17), whose graphs are full of
Shape -> Gather -> Unsqueeze -> Concat -> Reshape chains, with dynamic batch and seq axes.
Weights are random (seeded) and tiny (hidden size 16) so each file stays a few tens of KB.
"""

from __future__ import annotations

import math
from pathlib import Path

import torch
from torch import nn
from torch.nn import functional as F

HERE = Path(__file__).resolve().parent
OPSET = 17


class TinyGPT2Block(nn.Module):
    def __init__(self, vocab: int = 50, max_pos: int = 32, d: int = 16, heads: int = 2):
        super().__init__()
        self.d, self.heads = d, heads
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(max_pos, d)
        self.ln_1 = nn.LayerNorm(d)
        self.c_attn = nn.Linear(d, 3 * d)
        self.c_proj = nn.Linear(d, d)
        self.ln_2 = nn.LayerNorm(d)
        self.c_fc = nn.Linear(d, 4 * d)
        self.c_fc_proj = nn.Linear(4 * d, d)
        self.ln_f = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        mask = torch.tril(torch.ones(max_pos, max_pos)).view(1, 1, max_pos, max_pos)
        self.register_buffer("bias", mask)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        b, t = input_ids.size()
        pos = torch.arange(0, t, dtype=torch.long, device=input_ids.device).unsqueeze(0)
        x = self.wte(input_ids) + self.wpe(pos)
        h = self.ln_1(x)
        q, k, v = self.c_attn(h).split(self.d, dim=2)
        hd = self.d // self.heads
        q = q.view(b, t, self.heads, hd).transpose(1, 2)
        k = k.view(b, t, self.heads, hd).transpose(1, 2)
        v = v.view(b, t, self.heads, hd).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))
        # Two causal masks with the same meaning: a slice of the registered buffer (x[:, :, :t, :t])
        # and an upper triangle of -10000 built from t (Trilu on a run-time-sized tensor).
        att = att.masked_fill(self.bias[:, :, :t, :t] == 0, float("-inf"))
        att = att + torch.triu(torch.full((t, t), -10000.0, device=att.device), diagonal=1)
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, self.d)
        x = x + self.c_proj(y)
        x = x + self.c_fc_proj(F.gelu(self.c_fc(self.ln_2(x))))
        return self.lm_head(self.ln_f(x))


class TinyBertLayer(nn.Module):
    def __init__(self, vocab: int = 50, max_pos: int = 32, d: int = 16, heads: int = 2):
        super().__init__()
        self.d, self.heads = d, heads
        self.word = nn.Embedding(vocab, d)
        self.position = nn.Embedding(max_pos, d)
        self.token_type = nn.Embedding(2, d)
        self.emb_ln = nn.LayerNorm(d, eps=1e-12)
        self.query = nn.Linear(d, d)
        self.key = nn.Linear(d, d)
        self.value = nn.Linear(d, d)
        self.attn_out = nn.Linear(d, d)
        self.attn_ln = nn.LayerNorm(d, eps=1e-12)
        self.intermediate = nn.Linear(d, 4 * d)
        self.output = nn.Linear(4 * d, d)
        self.out_ln = nn.LayerNorm(d, eps=1e-12)

    def _heads(self, x: torch.Tensor) -> torch.Tensor:
        new_shape = x.size()[:-1] + (self.heads, self.d // self.heads)
        return x.view(new_shape).permute(0, 2, 1, 3)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        seq = input_ids.size(1)
        pos = torch.arange(seq, dtype=torch.long, device=input_ids.device).unsqueeze(0).expand_as(input_ids)
        token_types = torch.zeros_like(input_ids)
        x = self.word(input_ids) + self.position(pos) + self.token_type(token_types)
        x = self.emb_ln(x)
        ext = (1.0 - attention_mask[:, None, None, :].to(torch.float32)) * -10000.0
        q, k, v = self._heads(self.query(x)), self._heads(self.key(x)), self._heads(self.value(x))
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.d // self.heads) + ext
        probs = F.softmax(scores, dim=-1)
        ctx = (probs @ v).permute(0, 2, 1, 3).contiguous()
        ctx = ctx.view(ctx.size()[:-2] + (self.d,))
        x = self.attn_ln(self.attn_out(ctx) + x)
        return self.out_ln(self.output(F.gelu(self.intermediate(x))) + x)


def export(model: nn.Module, args: tuple, names: list[str], out: str, path: Path) -> None:
    axes = {n: {0: "batch", 1: "seq"} for n in names}
    axes[out] = {0: "batch", 1: "seq"}
    torch.onnx.export(
        model.eval(), args, str(path), input_names=names, output_names=[out],
        dynamic_axes=axes, opset_version=OPSET, dynamo=False,
    )
    print(f"wrote {path} ({path.stat().st_size} bytes)")


def main() -> None:
    torch.manual_seed(0)
    ids = torch.randint(0, 50, (2, 5))
    export(TinyGPT2Block(), (ids,), ["input_ids"], "logits", HERE / "tiny_gpt2_block.onnx")
    mask = torch.ones(2, 5, dtype=torch.long)
    mask[1, 3:] = 0
    export(TinyBertLayer(), (ids, mask), ["input_ids", "attention_mask"], "hidden", HERE / "tiny_bert_layer.onnx")


if __name__ == "__main__":
    main()
