"""Greedy generation with a KV cache: one compiled model serves the prefill and every decode step.

    python examples/generate.py                      # 64 tokens from a fixed prompt, ours and onnxruntime
    python examples/generate.py --tokens 32 --prompt 5,17,42 --model examples/gpt2_kv.onnx

examples/gpt2_kv.onnx is a small random-weight GPT-2 (Hugging Face transformers, exported by
examples/make_gpt2_kv.py with `use_cache=True`): input_ids (batch, seq) and per layer
past_key_values.i.key/.value (batch, heads, past, head_dim) -> logits (batch, seq, vocab) and
present.i.key/.value (batch, heads, past + seq, head_dim).

The prefill runs the prompt with an empty past (past = 0); each decode step feeds the one new token
and the cache the previous step returned, so the cache grows by one position per token and nothing is
recompiled. minimlir writes the step's outputs in place (`out=`) into two preallocated cache buffers
used in turn (a step reads one and writes the other) and a preallocated logits buffer, so the loop
allocates no output memory per token. The same loop runs on onnxruntime; the two token sequences
must be identical (exit status 1 otherwise).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


class KVModel:
    """Names and shapes of a decoder exported with past/present key-values."""

    def __init__(self, path: Path):
        import onnx

        m = onnx.load(str(path), load_external_data=False)
        self.past_names = [i.name for i in m.graph.input if i.name != "input_ids"]
        self.present_names = [o.name for o in m.graph.output if o.name != "logits"]
        dims = m.graph.input[1].type.tensor_type.shape.dim
        self.heads, self.head_dim = dims[1].dim_value, dims[3].dim_value
        logits = m.graph.output[0].type.tensor_type.shape.dim
        self.vocab = logits[2].dim_value
        if len(self.past_names) != len(self.present_names) or not self.heads or not self.vocab:
            raise SystemExit(f"{path}: not a decoder with past/present key-values inputs and outputs")


class Cache:
    """Two flat buffers of the longest cache (and one of the longest logits): each step's outputs are
    C-contiguous views of a prefix, so `out=` accepts them and nothing is allocated per token."""

    def __init__(self, kv: KVModel, max_len: int, batch: int = 1):
        self.kv, self.batch = kv, batch
        per = batch * kv.heads * max_len * kv.head_dim
        self.flat = [[np.zeros(per, np.float32) for _ in kv.past_names] for _ in range(2)]
        self.logits = np.zeros(batch * max_len * kv.vocab, np.float32)
        self.turn = 0
        self.length = 0
        # a step's present views are the next step's past views (same buffers, same length): kept, not rebuilt
        self._past: list[np.ndarray] | None = None
        self._next: list[np.ndarray] | None = None

    def view(self, flat: np.ndarray, length: int) -> np.ndarray:
        b, h, d = self.batch, self.kv.heads, self.kv.head_dim
        return flat[: b * h * length * d].reshape(b, h, length, d)

    def past(self) -> list[np.ndarray]:
        if self._past is None:
            self._past = [self.view(f, self.length) for f in self.flat[self.turn]]
        return self._past

    def outs(self, seq: int) -> list[np.ndarray]:
        logits = self.logits[: self.batch * seq * self.kv.vocab].reshape(self.batch, seq, self.kv.vocab)
        self._next = [self.view(f, self.length + seq) for f in self.flat[1 - self.turn]]
        return [logits, *self._next]

    def advance(self, seq: int) -> None:
        if self._next is None or self._next[0].shape[2] != self.length + seq:
            raise ValueError("Cache.advance: call outs(seq) with the same seq first")
        self.turn, self.length = 1 - self.turn, self.length + seq
        self._past, self._next = self._next, None


def generate_minimlir(prog, kv: KVModel, prompt: list[int], n: int) -> tuple[list[int], float, float]:
    """Greedy tokens, prefill seconds, decode seconds (all n - 1 steps)."""
    cache = Cache(kv, len(prompt) + n)
    ids = np.array([prompt], np.int64)
    tokens: list[int] = []
    t0 = time.perf_counter()
    t_prefill = 0.0
    for step in range(n):
        outs = cache.outs(ids.shape[1])
        prog(ids, *cache.past(), out=outs)
        cache.advance(ids.shape[1])
        tok = int(np.argmax(outs[0][0, -1]))
        tokens.append(tok)
        ids = np.array([[tok]], np.int64)
        if step == 0:
            t_prefill = time.perf_counter() - t0
    return tokens, t_prefill, time.perf_counter() - t0 - t_prefill


def generate_onnxruntime(sess, kv: KVModel, prompt: list[int], n: int) -> tuple[list[int], float, float]:
    past = {name: np.zeros((1, kv.heads, 0, kv.head_dim), np.float32) for name in kv.past_names}
    ids = np.array([prompt], np.int64)
    tokens: list[int] = []
    t0 = time.perf_counter()
    t_prefill = 0.0
    for step in range(n):
        logits, *present = sess.run(None, {"input_ids": ids, **past})
        past = dict(zip(kv.past_names, present))
        tok = int(np.argmax(logits[0, -1]))
        tokens.append(tok)
        ids = np.array([[tok]], np.int64)
        if step == 0:
            t_prefill = time.perf_counter() - t0
    return tokens, t_prefill, time.perf_counter() - t0 - t_prefill


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Greedy generation with a KV cache, minimlir and onnxruntime.")
    p.add_argument("--model", default=str(HERE / "gpt2_kv.onnx"))
    p.add_argument("--tokens", type=int, default=64, help="tokens to generate (default 64)")
    p.add_argument("--prompt", default="11,42,7,99,3,150,27,64", help="comma-separated token ids")
    p.add_argument("--threads", type=int, default=None, help="threads of both engines (default: all cores)")
    a = p.parse_args(argv)
    import onnxruntime as ort

    from minimlir.backend import parallel
    from minimlir.frontend import compile

    path = Path(a.model)
    if not path.is_file():
        print(f"generate: {path}: no such file", file=sys.stderr)
        return 1
    kv = KVModel(path)
    try:
        prompt = [int(t) for t in a.prompt.split(",") if t.strip()]
    except ValueError:
        print(f"generate: --prompt {a.prompt!r}: expected comma-separated integers", file=sys.stderr)
        return 1
    if not prompt or a.tokens < 1 or any(not 0 <= t < kv.vocab for t in prompt):
        print(f"generate: the prompt needs token ids in [0, {kv.vocab}) and --tokens >= 1", file=sys.stderr)
        return 1
    if a.threads:
        parallel.set_num_threads(a.threads)
    t = time.perf_counter()
    prog = compile(path)
    print(f"compiled {path.name} in {time.perf_counter() - t:.1f} s (one compile for every sequence and past length)")
    opts = ort.SessionOptions()
    if a.threads:
        opts.intra_op_num_threads = a.threads
    sess = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])

    ours, pre_o, dec_o = generate_minimlir(prog, kv, prompt, a.tokens)
    ref, pre_r, dec_r = generate_onnxruntime(sess, kv, prompt, a.tokens)
    print(f"prompt       {prompt}")
    print(f"minimlir     {ours}")
    print(f"onnxruntime  {ref}")
    steps = max(a.tokens - 1, 1)
    print(f"prefill {pre_o * 1e3:.2f} ms (onnxruntime {pre_r * 1e3:.2f} ms); "
          f"decode {steps / max(dec_o, 1e-9):.0f} tokens/s (onnxruntime {steps / max(dec_r, 1e-9):.0f})")
    if ours != ref:
        first = next(i for i, (x, y) in enumerate(zip(ours, ref)) if x != y)
        print(f"MISMATCH: the sequences differ from token {first}", file=sys.stderr)
        return 1
    print(f"token-identical: {a.tokens} tokens")
    return 0


if __name__ == "__main__":
    sys.exit(main())
