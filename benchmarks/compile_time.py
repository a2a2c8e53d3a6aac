"""Cold compile time of the ONNX light models: import, every pass, verification, LLVM.

    python benchmarks/compile_time.py                      # all nine, one subprocess each
    python benchmarks/compile_time.py --filter resnet --profile /tmp/resnet.prof

Each model compiles in its own process with the disk cache off (`cache=False`), so the numbers
are cold. Printed per model: total seconds, import, lowering (the sum of the passes, or its
wall time when it ran in worker processes: frontend/_split_lower.py), the final verifier, LLVM
(translation to LLVM IR, -O3, codegen, loading), then the passes that took more than 1% of the
total (CPU seconds summed over the workers). `--profile PATH` writes a cProfile dump of one model's compile
(open it with `python -m pstats PATH`). `--warm` compiles twice with the cache on and reports
the second (cache-hit) time.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conformance import LIGHT_MODELS, onnx_data_dir  # noqa: E402

_SUMMARY = ("import", "lower", "Verifier", "jit", "total")


def measure(name: str, profile: str | None, warm: bool) -> dict:
    from minimlir.frontend import compile as compile_model

    path = onnx_data_dir() / "light" / f"light_{name}.onnx"
    if warm:
        with tempfile.TemporaryDirectory() as d:
            compile_model(path, cache=d)
            t = time.perf_counter()
            m = compile_model(path, cache=d)
            return {"model": name, "wall_s": time.perf_counter() - t, "timings": m.timings}
    t = time.perf_counter()
    if profile:
        import cProfile

        prof = cProfile.Profile()
        m = prof.runcall(compile_model, path, cache=False)
        prof.dump_stats(profile)
    else:
        m = compile_model(path, cache=False)
    return {"model": name, "wall_s": time.perf_counter() - t, "timings": m.timings}


def show(row: dict) -> None:
    t = row["timings"]
    total = row["wall_s"]
    if "lower-split-wall" in t:  # lowered in worker processes: per-pass numbers are CPU seconds summed
        lowering = (f"lower {t.get('lower', 0):6.1f} (wall; in workers, whose pass and verify CPU seconds "
                    f"are summed below)  verify {t.get('Verifier', 0):5.1f}")
    else:
        lowering = f"passes {t.get('lower', 0) - t.get('Verifier', 0):6.1f}  verify {t.get('Verifier', 0):5.1f}"
    print(f"{row['model']:14} total {total:7.1f} s  import {t.get('import', 0):6.1f}  {lowering}  "
          f"llvm {t.get('jit', 0):6.1f}" + "".join(f"  {k} {v:.1f}" for k, v in t.items() if k.startswith("llvm-")),
          flush=True)
    passes = {k: v for k, v in t.items()
              if k not in _SUMMARY and not k.startswith("llvm-") and k != "lower-split-wall"}
    big = sorted(((v, k) for k, v in passes.items() if v > 0.01 * total), reverse=True)
    if big:
        print("    " + ", ".join(f"{k} {v:.1f}" for v, k in big), flush=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--filter", default=None, metavar="REGEX")
    p.add_argument("--profile", default=None, metavar="PATH", help="cProfile dump (one model)")
    p.add_argument("--warm", action="store_true", help="time a cache hit instead of a cold compile")
    p.add_argument("--timeout", type=float, default=1800)
    p.add_argument("--json", default=None, metavar="PATH")
    p.add_argument("--one", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.one:
        print(json.dumps(measure(args.one, args.profile, args.warm)))
        return 0
    models = [m for m in LIGHT_MODELS if not args.filter or re.search(args.filter, m)]
    rows = []
    for name in models:
        cmd = [sys.executable, os.path.abspath(__file__), "--one", name]
        cmd += ["--profile", args.profile] if args.profile else []
        cmd += ["--warm"] if args.warm else []
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
            lines = proc.stdout.strip().splitlines()
            row = json.loads(lines[-1]) if proc.returncode == 0 and lines else {
                "model": name, "error": (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]}
        except subprocess.TimeoutExpired:
            row = {"model": name, "error": f"timeout after {args.timeout:g} s"}
        rows.append(row)
        if "error" in row:
            print(f"{name:14} error: {row['error'][:120]}", flush=True)
        else:
            show(row)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")
    return 0 if all("error" not in r for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
