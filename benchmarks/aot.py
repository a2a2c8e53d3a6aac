"""The deployable artifact next to the JIT: latency, load time, size (one run, ratios in the same run).

    python benchmarks/aot.py                    # MLP + random-weight ResNet-50, 20 timed runs each
    python benchmarks/aot.py --runs 50 --loads 7 --threads 0 --json aot.json   # all cores

Per model: the JIT's median latency (`frontend.compile`) and the artifact's (`minimlir.runtime.load`
of the same model exported with `.export()`), their ratio (the same code, so ~1.0), and
onnxruntime's latency on the same input for scale. The load time of the artifact is measured in
fresh processes (`--loads` of them, the median): the time of `minimlir.runtime.load(...)` alone
(numpy and minimlir.runtime imported before; the import time is printed beside it), for ResNet-50 with separate params (mapped, not read: the target is
<= 50 ms) and embedded. Sizes: the .so, the params file and the weights' bytes.

ResNet-50 is the ONNX light model with seeded random weights, as `benchmarks/conformance.py --only
random` builds it (every ConstantOfShape weight becomes a He-scaled random initializer).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conformance import light_input, onnx_data_dir, randomize_weights  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def median_ms(fn, runs: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e3


def load_ms(so: Path, loads: int) -> tuple[float, float]:
    """(median import time of minimlir.runtime, median time of load()) in fresh processes, ms."""
    code = ("import sys, time, numpy\nt0 = time.perf_counter()\nimport minimlir.runtime as rt\n"
            "t1 = time.perf_counter()\nm = rt.load(sys.argv[1])\nt2 = time.perf_counter()\n"
            "print((t1 - t0) * 1e3, (t2 - t1) * 1e3)\n")
    imports, times = [], []
    for _ in range(loads):
        out = subprocess.run([sys.executable, "-c", code, str(so)], capture_output=True, text=True, check=True)
        a, b = out.stdout.split()
        imports.append(float(a))
        times.append(float(b))
    return statistics.median(imports), statistics.median(times)


def resnet50(directory: Path) -> tuple[Path, np.ndarray]:
    import onnx

    src = onnx_data_dir() / "light" / "light_resnet50.onnx"
    model, _ = randomize_weights(onnx.load(str(src)), seed=0)
    path = directory / "resnet50.onnx"
    onnx.save_model(model, str(path), save_as_external_data=True, all_tensors_to_one_file=True,
                    location="resnet50.onnx.data", size_threshold=1024)
    _, x = light_input(model)
    return path, x


def ort_ms(path: Path, x: np.ndarray, runs: int, threads: int) -> float | None:
    try:
        import onnxruntime as ort
    except ImportError:
        return None
    ort.set_default_logger_severity(3)  # not the light models' "initializer in graph inputs" warnings
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    sess = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
    name = sess.get_inputs()[0].name
    return median_ms(lambda: sess.run(None, {name: x}), runs)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--loads", type=int, default=5, help="fresh processes to time the load in")
    ap.add_argument("--threads", type=int, default=1, help="threads for minimlir and onnxruntime (0: all cores)")
    ap.add_argument("--no-resnet", action="store_true", help="only the MLP (quick)")
    ap.add_argument("--json", help="write the rows here")
    args = ap.parse_args(argv)

    from minimlir.frontend import compile
    import minimlir.runtime as rt

    rows = []
    with tempfile.TemporaryDirectory(prefix="minimlir-aot-") as tmp:
        tmp = Path(tmp)
        models = [("mlp", REPO / "examples" / "mlp.onnx", np.random.default_rng(0).random((8, 64), np.float32))]
        if not args.no_resnet:
            models.append(("resnet50", *resnet50(tmp)))
        for name, path, x in models:
            t = time.perf_counter()
            jit = compile(path, num_threads=args.threads or None)
            t_compile = time.perf_counter() - t
            weights = {"mlp": ["embed"], "resnet50": ["separate", "embed"]}[name]
            for mode in weights:
                so = tmp / f"{name}-{mode}.so"
                t = time.perf_counter()
                info = jit.export(so, weights=mode)
                t_export = time.perf_counter() - t
                art = rt.load(so, num_threads=args.threads or None)
                np.testing.assert_allclose(art(x)[0], jit(x)[0], rtol=1e-6, atol=1e-7)
                jit_ms = median_ms(lambda: jit(x), args.runs)
                art_ms = median_ms(lambda: art(x), args.runs)
                ort = ort_ms(path, x, args.runs, args.threads or (os.cpu_count() or 1))
                row = {
                    "model": name, "weights": mode, "jit_ms": jit_ms, "artifact_ms": art_ms,
                    "artifact_vs_jit": art_ms / jit_ms, "onnxruntime_ms": ort,
                    "artifact_vs_onnxruntime": art_ms / ort if ort else None,
                    "so_bytes": so.stat().st_size,
                    "params_bytes": info.params_path.stat().st_size if info.params_path else 0,
                    "weights_bytes": info.params_bytes, "compile_s": t_compile, "export_s": t_export,
                }
                row["import_ms"], row["load_ms"] = load_ms(so, args.loads)
                rows.append(row)
                print(f"{name:9} {mode:8} jit {jit_ms:8.3f} ms  artifact {art_ms:8.3f} ms  "
                      f"artifact/jit {row['artifact_vs_jit']:5.2f}  "
                      + (f"onnxruntime {ort:8.3f} ms  artifact/ort {row['artifact_vs_onnxruntime']:5.2f}  " if ort else "")
                      + f"load {row['load_ms']:7.1f} ms (import {row['import_ms']:5.1f} ms)  .so {row['so_bytes'] / 1e6:7.2f} MB  "
                      f"params {row['params_bytes'] / 1e6:7.2f} MB  weights {row['weights_bytes'] / 1e6:7.2f} MB  "
                      f"(compile {t_compile:.1f} s, export {t_export:.1f} s)", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
