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

`--dynamic`: each model compiled twice, cold, with a static batch and with a dynamic one
(`batch`, a dim_param), and the ratio of the two compile times in CPU seconds, which vary less than
wall time on a shared machine (target: <= 1.5). The models are
the light models (seeded random weights as in conformance.py's `random` family; their batch made
dynamic) and the toy EfficientNet / MobileNetV3 / RegNetY / ConvNeXt of benchmarks/dynamic_models.py.
For the toy models one dynamic artifact also runs at batch 1 and 8, and its batch-8 latency is
compared with a model compiled for batch 8 statically (target: <= 1.2x; the median of 20 runs, and the fastest
run, which a loaded machine disturbs least); `--filter` picks models.
`--dynamic --torchvision [--export-dir DIR]`: the same for torchvision's EfficientNet-B0, RegNetY-400MF,
ConvNeXt-Tiny and MobileNetV3-Small at 224x224 (random weights; benchmarks/torchvision_models.py),
exported with `torch.onnx.export(..., dynamo=True)` and a dynamic batch; needs torch, torchvision and
onnxscript installed (not dependencies of the project).
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


def _dynamic_model(name: str, kind: str, directory: Path) -> tuple[Path, tuple[int, ...]]:
    """The model file for `kind` (static, static8, dynamic) and its input shape at batch 1."""
    import onnx

    from dynamic_models import MODELS, SIZE

    path = directory / f"{name}-{kind}.onnx"
    from torchvision_models import MODELS as TORCHVISION, SIZE as TV_SIZE, export

    if name in TORCHVISION:
        cached = Path(os.environ.get("MINIMLIR_TV_EXPORTS", directory)) / path.name
        if not cached.exists():
            export(name, kind, cached)
        return cached, (1, 3, TV_SIZE, TV_SIZE)
    if name in MODELS:
        model = MODELS[name](dynamic=kind == "dynamic")
        if kind == "static8":
            for vi in (*model.graph.input, *model.graph.output):
                vi.type.tensor_type.shape.dim[0].dim_value = 8
        onnx.save(model, path)
        return path, (1, 3, SIZE, SIZE)
    from conformance import light_input, randomize_weights

    model, _ = randomize_weights(onnx.load(str(onnx_data_dir() / "light" / f"light_{name}.onnx")), 0)
    _, x = light_input(model)
    if kind == "dynamic":
        names = {i.name for i in model.graph.initializer}
        for vi in [*[i for i in model.graph.input if i.name not in names], *model.graph.output]:
            d = vi.type.tensor_type.shape.dim[0]
            d.Clear()
            d.dim_param = "batch"
        del model.graph.value_info[:]
    onnx.save_model(model, str(path), save_as_external_data=True, all_tensors_to_one_file=True,
                    location=path.name + ".data", size_threshold=1024)
    return path, tuple(x.shape)


def _latency(m, shape: tuple[int, ...], batch: int, runs: int = 20, best: bool = False) -> float:
    """Median of `runs` calls (`best`: the fastest, which a loaded machine disturbs least)."""
    import numpy as np

    x = np.random.default_rng(0).normal(size=(batch, *shape[1:])).astype(np.float32)
    m(x)
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        m(x)
        times.append(time.perf_counter() - t)
    return min(times) if best else sorted(times)[len(times) // 2]


def measure_dynamic(name: str, kind: str) -> dict:
    from minimlir.frontend import compile as compile_model

    with tempfile.TemporaryDirectory() as d:
        path, shape = _dynamic_model(name, kind, Path(d))
        from depth_sweep import _cpu

        t, cpu0 = time.perf_counter(), _cpu()
        m = compile_model(path, cache=False)
        row = {"model": name, "kind": kind, "wall_s": time.perf_counter() - t, "cpu_s": _cpu() - cpu0}
        if kind == "dynamic":
            row["lat1"] = _latency(m, shape, 1)
            row["lat8"] = _latency(m, shape, 8) if name not in LIGHT_MODELS else None
            row["lat8_min"] = _latency(m, shape, 8, best=True) if name not in LIGHT_MODELS else None
        elif kind == "static8":
            row["lat8"] = _latency(m, shape, 8)
            row["lat8_min"] = _latency(m, shape, 8, best=True)
        else:
            row["lat1"] = _latency(m, shape, 1)
    return row


def dynamic_main(args) -> int:
    from dynamic_models import MODELS

    from torchvision_models import MODELS as TORCHVISION, available

    if args.torchvision:
        why = available()
        if why and not args.export_dir:  # with --export-dir, exports already there need no torch
            print(f"error: {why}", file=sys.stderr)
            return 1
        if args.export_dir:
            Path(args.export_dir).mkdir(parents=True, exist_ok=True)
            os.environ["MINIMLIR_TV_EXPORTS"] = str(Path(args.export_dir).resolve())
    names = TORCHVISION if args.torchvision else [*MODELS, *LIGHT_MODELS]
    models = [m for m in names if not args.filter or re.search(args.filter, m)]
    ok = True
    print("compile CPU seconds (this process and finished LLVM workers), cold cache")
    print(f"{'model':14} {'static s':>9} {'dynamic s':>10} {'ratio':>6}   latency: static b1, dynamic b1"
          f" | static b8, dynamic b8, ratio (medians; fastest runs)", flush=True)
    ratios, serve = [], []
    for name in models:
        kinds = ["static", "dynamic"] + (["static8"] if name in MODELS or name in TORCHVISION else [])
        rows = {}
        for kind in kinds:
            cmd = [sys.executable, os.path.abspath(__file__), "--one-dynamic", name, kind]
            try:
                proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
                lines = proc.stdout.strip().splitlines()
                if proc.returncode == 0 and lines:
                    rows[kind] = json.loads(lines[-1])
                else:
                    rows[kind] = {"error": (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]}
            except subprocess.TimeoutExpired:
                rows[kind] = {"error": f"timeout after {args.timeout:g} s"}
        bad = [f"{k}: {r['error'][:100]}" for k, r in rows.items() if "error" in r]
        if bad:
            ok = False
            print(f"{name:14} error: {'; '.join(bad)}", flush=True)
            continue
        st, dy = rows["static"], rows["dynamic"]
        ratio = dy["cpu_s"] / st["cpu_s"]
        ratios.append(ratio)
        line = (f"{name:14} {st['cpu_s']:9.1f} {dy['cpu_s']:10.1f} {ratio:6.2f}   "
                f"{st['lat1'] * 1e3:7.2f} ms {dy['lat1'] * 1e3:7.2f} ms")
        if "static8" in rows:
            s8, d8 = rows["static8"]["lat8"], dy["lat8"]
            s8m, d8m = rows["static8"]["lat8_min"], dy["lat8_min"]
            serve.append((d8 / s8, d8m / s8m))
            line += f" | {s8 * 1e3:7.2f} ms {d8 * 1e3:7.2f} ms {d8 / s8:5.2f} ({s8m * 1e3:.2f} {d8m * 1e3:.2f} {d8m / s8m:.2f})"
        print(line, flush=True)
    if ratios:
        print(f"compile time dynamic/static: max {max(ratios):.2f} (target <= 1.5)")
    if serve:
        print(f"batch-8 latency, one dynamic artifact / static batch 8: max {max(r for r, _ in serve):.2f} "
              f"(medians), {max(r for _, r in serve):.2f} (fastest runs) (target <= 1.2)")
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--filter", default=None, metavar="REGEX")
    p.add_argument("--profile", default=None, metavar="PATH", help="cProfile dump (one model)")
    p.add_argument("--warm", action="store_true", help="time a cache hit instead of a cold compile")
    p.add_argument("--timeout", type=float, default=1800)
    p.add_argument("--json", default=None, metavar="PATH")
    p.add_argument("--dynamic", action="store_true", help="static vs dynamic batch: compile-time ratios")
    p.add_argument("--torchvision", action="store_true",
                   help="with --dynamic: torchvision's EfficientNet-B0, RegNetY-400MF, ConvNeXt-Tiny and "
                        "MobileNetV3-Small, exported with dynamo=True (needs torch, torchvision, onnxscript)")
    p.add_argument("--export-dir", default=None, metavar="DIR",
                   help="with --torchvision: keep the exported ONNX files here (reused when present)")
    p.add_argument("--one", default=None, help=argparse.SUPPRESS)
    p.add_argument("--one-dynamic", nargs=2, default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.one_dynamic:
        print(json.dumps(measure_dynamic(*args.one_dynamic)))
        return 0
    if args.dynamic:
        return dynamic_main(args)
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
