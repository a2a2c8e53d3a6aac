"""LLM decoding with a KV cache: prefill latency and decode tokens/s, minimlir / onnxruntime, one run.

    python benchmarks/decode.py                          # examples/gpt2_kv.onnx, prompt 32, 64 tokens
    python benchmarks/decode.py --model M.onnx --prompt-len 128 --tokens 128 --threads 1 --repeats 5

The model is a decoder exported with past/present key-values (examples/make_gpt2_kv.py makes
one of any size). Both engines run examples/generate.py's greedy loop: a prefill of the prompt with
an empty past, then one token per step with the growing cache (minimlir writes the outputs in place,
`out=`). Each is warmed up by one whole generation, then timed `--repeats` times; the medians are
reported. The generated tokens must be identical (exit status 1 otherwise).
Targets (issue 14): decode tokens/s >= onnxruntime's; prefill <= 1.2x its latency.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def _generate_module():
    spec = importlib.util.spec_from_file_location("generate_example", ROOT / "examples" / "generate.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default=str(ROOT / "examples" / "gpt2_kv.onnx"))
    p.add_argument("--prompt-len", type=int, default=32)
    p.add_argument("--tokens", type=int, default=64)
    p.add_argument("--threads", type=int, default=1, help="threads of both engines (0: all cores)")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    import onnxruntime as ort

    from minimlir.backend import parallel
    from minimlir.frontend import compile

    gen = _generate_module()
    path = Path(a.model)
    kv = gen.KVModel(path)
    prompt = [int(t) for t in np.random.default_rng(a.seed).integers(0, kv.vocab, a.prompt_len)]
    if a.threads:
        parallel.set_num_threads(a.threads)
    prog = compile(path)
    opts = ort.SessionOptions()
    if a.threads:
        opts.intra_op_num_threads = a.threads
    sess = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])

    results = {}
    for name, run, engine in (("minimlir", gen.generate_minimlir, prog), ("onnxruntime", gen.generate_onnxruntime, sess)):
        tokens, _, _ = run(engine, kv, prompt, a.tokens)  # warm-up
        pre, dec = [], []
        for _ in range(a.repeats):
            again, t_pre, t_dec = run(engine, kv, prompt, a.tokens)
            if again != tokens:
                print(f"decode: {name} is not deterministic", file=sys.stderr)
                return 1
            pre.append(t_pre)
            dec.append((a.tokens - 1) / t_dec)
        results[name] = (tokens, statistics.median(pre), statistics.median(dec))
    (ours, pre_o, dec_o), (ref, pre_r, dec_r) = results["minimlir"], results["onnxruntime"]
    print(f"model {path.name}: prompt {a.prompt_len}, {a.tokens} tokens, {a.threads or 'all'} thread(s), "
          f"median of {a.repeats}")
    print(f"{'':14s}{'minimlir':>12s}{'onnxruntime':>14s}{'ratio':>10s}  target")
    print(f"{'prefill ms':14s}{pre_o * 1e3:12.2f}{pre_r * 1e3:14.2f}{pre_o / pre_r:10.2f}  <= 1.2 (ours/ort)")
    print(f"{'decode tok/s':14s}{dec_o:12.1f}{dec_r:14.1f}{dec_o / dec_r:10.2f}  >= 1.0 (ours/ort)")
    if ours != ref:
        print("decode: MISMATCH, the generated tokens differ from onnxruntime's", file=sys.stderr)
        return 1
    print(f"tokens identical to onnxruntime: {len(ours)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
