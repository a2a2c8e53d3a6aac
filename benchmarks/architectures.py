"""The architecture exports in tests/data/arch/ (made by tests/data/make_architectures.py): each file
compiled once, run at its two sizes, compared with onnxruntime.

    python benchmarks/architectures.py                      # every file, both exporters
    python benchmarks/architectures.py --filter 'bert|unet' --exporter dynamo --json out.json

One row per file: model, exporter, whether it imports, the two sizes (the dynamic dims' values),
the largest absolute difference from onnxruntime over both sizes (`ok` when every element is within
rtol 1e-4 / atol 1e-4, the test suite's tolerance), and the cold compile time (disk cache off).
Each file runs in its own subprocess (`--timeout`), so a crash costs one row; the exit code is 1
when any row failed.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
ARCH = ROOT / "tests" / "data" / "arch"
EXPORTERS = ("dynamo", "ts")
RTOL = ATOL = 1e-4


def manifest() -> dict:
    return json.loads((ARCH / "manifest.json").read_text())


def inputs(entry: dict, size: int) -> dict[str, np.ndarray]:
    """The feeds of size `size` (0 or 1) of a manifest entry (see make_architectures.manifest_entry)."""
    rng = np.random.default_rng(size)
    feeds = {}
    for name, kind in entry["inputs"].items():
        shape = entry["sizes"][size][name]
        if kind == "ids":
            feeds[name] = rng.integers(2, 64, shape).astype(np.int64)
        elif kind == "mask":
            mask = np.ones(shape, np.int64)
            mask[-1, shape[1] - 2:] = 0  # the last row is padded
            feeds[name] = mask
        else:
            feeds[name] = rng.standard_normal(shape).astype(np.float32)
    return feeds


def size_label(entry: dict, size: int) -> str:
    return "x".join(str(d) for d in entry["sizes"][size][next(iter(entry["inputs"]))])


def measure(name: str, exporter: str) -> dict:
    import onnxruntime as ort

    from minimlir.frontend import compile as compile_model

    entry = manifest()[name]
    path = ARCH / f"{name}.{exporter}.onnx"
    row: dict = {"model": name, "exporter": exporter, "import": False,
                 "sizes": " ".join(size_label(entry, s) for s in (0, 1)), "max_err": None, "ok": False}
    t = time.perf_counter()
    try:
        model = compile_model(path, cache=False)
    except Exception as e:  # noqa: BLE001 - the row says what failed
        row["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
        return row
    row["import"] = True
    row["compile_s"] = time.perf_counter() - t
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    errs, ok = [], True
    for size in (0, 1):
        feeds = inputs(entry, size)
        try:
            ours = model(**feeds)
        except Exception as e:  # noqa: BLE001
            row["error"] = f"size {size_label(entry, size)}: {type(e).__name__}: {str(e).splitlines()[0][:200]}"
            return row
        for o, r in zip(ours, session.run(None, feeds)):
            if o.shape != r.shape:
                row["error"] = f"size {size_label(entry, size)}: shape {o.shape} != onnxruntime's {r.shape}"
                return row
            errs.append(float(np.max(np.abs(o.astype(np.float64) - r))) if r.size else 0.0)
            ok = ok and bool(np.allclose(o, r, rtol=RTOL, atol=ATOL))
    row["max_err"], row["ok"] = max(errs), ok
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--filter", default="", help="regex on the model name")
    ap.add_argument("--exporter", choices=("dynamo", "ts", "both"), default="both")
    ap.add_argument("--timeout", type=float, default=900)
    ap.add_argument("--json", help="write the rows here")
    ap.add_argument("--one", nargs=2, metavar=("NAME", "EXPORTER"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(measure(*args.one)))
        return 0
    names = [n for n in manifest() if re.search(args.filter, n)]
    exporters = EXPORTERS if args.exporter == "both" else (args.exporter,)
    rows = []
    print(f"{'model':<13} {'exporter':<8} {'import':<6} {'sizes':<26} {'max err':>9} {'match':<5} {'compile s':>9}")
    for name in names:
        for exp in exporters:
            if not (ARCH / f"{name}.{exp}.onnx").exists():
                row = {"model": name, "exporter": exp, "import": False, "sizes": "", "max_err": None, "ok": False,
                       "error": "no file (the export failed: see make_architectures.py)"}
            else:
                try:
                    proc = subprocess.run([sys.executable, __file__, "--one", name, exp], capture_output=True,
                                          text=True, timeout=args.timeout)
                    lines = proc.stdout.strip().splitlines()
                    row = json.loads(lines[-1]) if proc.returncode == 0 and lines else {
                        "model": name, "exporter": exp, "import": False, "sizes": "", "max_err": None, "ok": False,
                        "error": f"exit code {proc.returncode}: {(proc.stderr.strip().splitlines() or [''])[-1][:200]}"}
                except subprocess.TimeoutExpired:
                    row = {"model": name, "exporter": exp, "import": False, "sizes": "", "max_err": None,
                           "ok": False, "error": f"timeout after {args.timeout:.0f} s"}
            rows.append(row)
            err = "-" if row["max_err"] is None else f"{row['max_err']:.2e}"
            comp = f"{row['compile_s']:.1f}" if "compile_s" in row else "-"
            print(f"{name:<13} {exp:<8} {'yes' if row['import'] else 'no':<6} {row['sizes']:<26} {err:>9} "
                  f"{'yes' if row['ok'] else 'NO':<5} {comp:>9}", flush=True)
            if "error" in row:
                print(f"    {row['error']}", flush=True)
    print(f"{sum(r['ok'] for r in rows)} of {len(rows)} files match onnxruntime at both sizes")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
