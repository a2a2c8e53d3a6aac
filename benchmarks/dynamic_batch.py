"""One artifact for every batch: a model compiled once with a dynamic batch, run at batch 8, against
the same model compiled for batch 8 statically.

    python benchmarks/dynamic_batch.py                         # the toy models and the light models
    python benchmarks/dynamic_batch.py --torchvision --export-dir /tmp/tv   # + torchvision exports
    python benchmarks/dynamic_batch.py --filter mobilenet --runs 40 --num-threads 2

For each model: the dynamic-batch model (`batch`, a dim_param) and the static batch-8 model are
compiled in this process (the disk cache on unless `--no-cache`), then run at batch 8 in turn,
interleaved (the order alternating), with the same thread count (`--num-threads`, default 2), after a
warm-up call each. Printed: the median wall time and the median CPU time of a call (process CPU
seconds, every thread; a loaded machine stretches wall time far more than CPU time), each model's
ratio dynamic / static (target <= 1.2), and the dynamic artifact's error against onnxruntime at batch
1, 3 and 8 (max |minimlir - onnxruntime| / max |onnxruntime|; target <= 1e-3; random-weight networks
have outputs of any scale, so an absolute tolerance would say nothing).

The models: the toy EfficientNet / MobileNetV3 / RegNetY / ConvNeXt of benchmarks/dynamic_models.py;
the ONNX light models (seeded random weights, batch made dynamic; a model whose graph fixes the batch,
e.g. a Reshape to [1, -1], cannot run at batch 8 and is reported as such); with `--torchvision`,
torchvision's EfficientNet-B0, RegNetY-400MF, ConvNeXt-Tiny and MobileNetV3-Small at 224x224
(benchmarks/torchvision_models.py, exported with dynamo=True; needs torch, torchvision and onnxscript,
which the project does not depend on; `--export-dir` keeps and reuses the exports).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

TARGET = 1.2
CHECK_BATCHES = (1, 3, 8)


def _prepare(name: str, directory: Path) -> tuple[Path, Path, tuple[int, ...]]:
    """(dynamic model, static batch-8 model, input shape at batch 1) for `name`."""
    import onnx

    from compile_time import _dynamic_model
    from conformance import LIGHT_MODELS

    dyn, shape = _dynamic_model(name, "dynamic", directory)
    if name not in LIGHT_MODELS:
        return dyn, _dynamic_model(name, "static8", directory)[0], shape
    model = onnx.load(str(dyn))  # the dynamic light model, its batch fixed to 8 again
    inits = {i.name for i in model.graph.initializer}
    for vi in [*[i for i in model.graph.input if i.name not in inits], *model.graph.output]:
        d = vi.type.tensor_type.shape.dim[0]
        d.Clear()
        d.dim_value = 8
    path = directory / f"{name}-static8.onnx"
    onnx.save_model(model, str(path), save_as_external_data=True, all_tensors_to_one_file=True,
                    location=path.name + ".data", size_threshold=1024)
    return dyn, path, shape


def _rel_err(got, want) -> float:
    import numpy as np

    scale = float(np.max(np.abs(want))) if want.size else 0.0
    diff = float(np.max(np.abs(got.astype(np.float64) - want))) if want.size else 0.0
    return diff / scale if scale > 0 else diff


def _check(m, path: Path, shape: tuple[int, ...]) -> dict[int, float | str]:
    """The dynamic artifact's relative error against onnxruntime at each of CHECK_BATCHES."""
    import numpy as np
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
    name = sess.get_inputs()[0].name
    out = {}
    for b in CHECK_BATCHES:
        x = np.random.default_rng(b).normal(size=(b, *shape[1:])).astype(np.float32)
        try:
            got = m(x)
        except Exception as e:  # noqa: BLE001 - a model that fixes its batch: reported, not raised
            out[b] = f"{type(e).__name__}: {str(e).splitlines()[0][:80]}"
            continue
        got = got[0] if isinstance(got, (list, tuple)) else got
        out[b] = _rel_err(np.asarray(got), sess.run(None, {name: x})[0])
    return out


def _interleaved(fns: list, x, runs: int) -> list[tuple[float, float]]:
    """(median wall s, median CPU s) of a call of each of `fns`, run in turn `runs` times."""
    wall: list[list[float]] = [[] for _ in fns]
    cpu: list[list[float]] = [[] for _ in fns]
    for f in fns:
        f(x)
    for r in range(runs):
        order = range(len(fns)) if r % 2 == 0 else reversed(range(len(fns)))
        for i in order:
            t, c = time.perf_counter(), time.process_time()
            fns[i](x)
            cpu[i].append(time.process_time() - c)
            wall[i].append(time.perf_counter() - t)
    med = lambda v: sorted(v)[len(v) // 2]  # noqa: E731
    return [(med(w), med(c)) for w, c in zip(wall, cpu)]


def measure(name: str, args, directory: Path) -> dict:
    import numpy as np

    from minimlir.frontend import compile as compile_model

    dyn_path, st_path, shape = _prepare(name, directory)
    cache = False if args.no_cache else True
    dyn = compile_model(dyn_path, cache=cache)
    row: dict = {"model": name, "check": _check(dyn, dyn_path, shape)}
    x = np.random.default_rng(0).normal(size=(8, *shape[1:])).astype(np.float32)
    if isinstance(row["check"].get(8), str):
        row["error"] = f"the dynamic model cannot run at batch 8: {row['check'][8]}"
        return row
    st = compile_model(st_path, cache=cache)
    (dw, dc), (sw, sc) = _interleaved([dyn, st], x, args.runs)
    row.update(dyn_wall=dw, dyn_cpu=dc, st_wall=sw, st_cpu=sc)
    return row


def _fmt_check(check: dict) -> str:
    return " ".join(f"b{b} {v:.1e}" if not isinstance(v, str) else f"b{b} n/a" for b, v in check.items())


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--filter", default=None, metavar="REGEX", help="models whose name matches")
    p.add_argument("--runs", type=int, default=20, help="interleaved calls of each model (default 20)")
    p.add_argument("--num-threads", type=int, default=2, help="threads for parallel loops (default 2)")
    p.add_argument("--no-cache", action="store_true", help="compile without the disk cache")
    p.add_argument("--no-light", action="store_true", help="leave out the ONNX light models")
    p.add_argument("--torchvision", action="store_true",
                   help="also torchvision's EfficientNet-B0, RegNetY-400MF, ConvNeXt-Tiny, MobileNetV3-Small "
                        "(needs torch, torchvision, onnxscript)")
    p.add_argument("--export-dir", default=None, metavar="DIR",
                   help="with --torchvision: keep the exported ONNX files here (reused when present)")
    args = p.parse_args(argv)
    if args.runs < 1 or args.num_threads < 1:
        print("error: --runs and --num-threads must be at least 1", file=sys.stderr)
        return 1

    from conformance import LIGHT_MODELS
    from dynamic_models import MODELS
    from torchvision_models import MODELS as TORCHVISION, available

    from minimlir.backend import parallel

    names = [*MODELS, *([] if args.no_light else LIGHT_MODELS)]
    if args.torchvision:
        why = available()
        if why and not args.export_dir:
            print(f"error: {why}", file=sys.stderr)
            return 1
        if args.export_dir:
            Path(args.export_dir).mkdir(parents=True, exist_ok=True)
            os.environ["MINIMLIR_TV_EXPORTS"] = str(Path(args.export_dir).resolve())
        names += TORCHVISION
    names = [n for n in names if not args.filter or re.search(args.filter, n)]
    parallel.set_num_threads(args.num_threads)
    print(f"batch 8, {args.num_threads} thread(s), median of {args.runs} interleaved calls; "
          f"load average {' '.join(f'{v:.1f}' for v in os.getloadavg())}")
    print(f"{'model':20} {'static8 wall':>12} {'dynamic wall':>12} {'ratio':>6} {'static8 cpu':>12} "
          f"{'dynamic cpu':>12} {'ratio':>6}   dynamic vs onnxruntime (relative error)", flush=True)
    ok, worst = True, []
    with tempfile.TemporaryDirectory() as d:
        for name in names:
            try:
                row = measure(name, args, Path(d))
            except Exception as e:  # noqa: BLE001 - one model's failure is a row, not the end of the run
                ok = False
                print(f"{name:20} error: {type(e).__name__}: {str(e).splitlines()[0][:150]}", flush=True)
                continue
            errs = [v for v in row["check"].values() if not isinstance(v, str)]
            if any(e > 1e-3 for e in errs):
                ok = False
            if "error" in row:
                print(f"{name:20} {row['error'][:110]}  | {_fmt_check(row['check'])}", flush=True)
                continue
            rw, rc = row["dyn_wall"] / row["st_wall"], row["dyn_cpu"] / row["st_cpu"]
            worst.append((rw, rc, name))
            print(f"{name:20} {row['st_wall'] * 1e3:9.2f} ms {row['dyn_wall'] * 1e3:9.2f} ms {rw:6.2f} "
                  f"{row['st_cpu'] * 1e3:9.2f} ms {row['dyn_cpu'] * 1e3:9.2f} ms {rc:6.2f}   "
                  f"{_fmt_check(row['check'])}", flush=True)
    if worst:
        print(f"dynamic / static batch 8: max {max(w[0] for w in worst):.2f} (wall), "
              f"{max(w[1] for w in worst):.2f} (CPU) (target <= {TARGET})")
    print(f"load average {' '.join(f'{v:.1f}' for v in os.getloadavg())}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
