"""The per-kernel profiler: `compile(model, profile=True)`, `mini-run --profile`.

    m = compile("model.onnx", profile=True)
    m(x); m(x)
    for row in m.profile():            # one dict per kernel, slowest first
        print(row["kernel"], row["nodes"], row["calls"], row["ms"], row["percent"], row["gflops"], row["gbs"])
    print(format_table(m.profile()))
    write_json(m, "profile.json"); write_png(m.profile(), "profile.png")

A profiled compile runs the default pipeline (or the given one) with two more passes:
`graph-profile-nodes` after graph-fuse and graph-legalize (each kernel's ONNX nodes, FLOPs and bytes per call) and
`convert-profile-kernels` at the end (each kernel call from the entry timed with
clock_gettime(CLOCK_MONOTONIC) into the i64 array `minimlir_prof_counters`, which this module
owns). Unprofiled compiles do not run either pass, so their IR is unchanged and, the pipeline
being part of the compile-cache key, the two never share a cache entry. The kernel table is kept
beside the cache entry (`<key>.profile.json`) so a cache hit has it too.

Counters are process-wide: each call zeroes them, runs, and adds them to the model's own totals
(calls of profiled models must not overlap in time; a lock serializes them). Time is wall time
around each kernel call from the calling thread (a parallel kernel: its whole parallel region).
GFLOP/s and GB/s come from the compile-time counts; with dynamic dims they are evaluated at the
call's dims when every dynamic input dim of the call has one value (e.g. the batch), else n/a.
"""

from __future__ import annotations

import ctypes
import json
import threading
from pathlib import Path
from typing import Any

COUNTERS = "minimlir_prof_counters"
MAX_KERNELS = 4096
SCHEMA_VERSION = 1

_counters = (ctypes.c_int64 * (2 + 2 * MAX_KERNELS))()
_lock = threading.Lock()
_registered = False


def register_symbols() -> None:
    """Make `minimlir_prof_counters` resolvable by the JIT (before a profiled module is loaded)."""
    global _registered
    if not _registered:
        import llvmlite.binding as llvm

        from minimlir.backend import _target

        _target.init_llvm()
        llvm.add_symbol(COUNTERS, ctypes.addressof(_counters))
        _registered = True


def profile_pipeline(pipeline: str) -> str:
    """`pipeline` with the profiler's passes: graph-profile-nodes after graph-fuse, convert-profile-kernels last."""
    from minimlir.compiler.pipelines import PIPELINES

    parts = [p for p in pipeline.split(",") if p]
    while any(p in PIPELINES for p in parts):  # named pipelines, expanded (the default one is `compile`)
        parts = [q for p in parts for q in (PIPELINES[p].pipeline.split(",") if p in PIPELINES else [p])]
    out = []
    for p in parts:
        out.append(p)
        if p in ("graph-fuse", "graph-legalize"):
            out.append("graph-profile-nodes")
    out.append("convert-profile-kernels")
    return ",".join(out)


def _eval(poly: dict, dyn: int | None) -> float | None:
    total = 0
    for d, c in poly.items():
        d = int(d)
        if d == 0:
            total += c
        elif dyn is None:
            return None
        else:
            total += c * dyn ** d
    return float(total)


class ProfiledModel:
    """A CompiledModel that times its kernels: call it like the model; `profile()` gives the rows."""

    def __init__(self, model: Any, table: list[dict]):
        self._model = model
        self.table = table
        self.reset_profile()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._model, name)

    def reset_profile(self) -> None:
        self._ns = [0] * len(self.table)
        self._calls = [0] * len(self.table)
        self._work: list[tuple[float | None, float | None]] = [(0.0, 0.0)] * len(self.table)
        self.runs = 0

    def _dynamic_value(self, arrays: list) -> int | None:
        """The one value of every dynamic input dim of this call (None: several values; 0: no dynamic dim)."""
        values = set()
        for spec, a in zip(self._model.inputs or [], arrays):
            for s, n in zip(spec.shape, getattr(a, "shape", ())):
                if s is None:
                    values.add(int(n))
        if not values:
            return 0
        return values.pop() if len(values) == 1 else None

    def __call__(self, *args: Any, **kwargs: Any) -> list:
        n = len(self.table)
        dyn = None
        try:
            arrays = self._model.bind(args, {k: v for k, v in kwargs.items() if k != "out"})
            dyn = self._dynamic_value(arrays)
        except Exception:  # the model's own call reports the bad input
            pass
        with _lock:
            ctypes.memset(_counters, 0, ctypes.sizeof(ctypes.c_int64) * (2 + 2 * n))
            result = self._model(*args, **kwargs)
            ns = [_counters[2 + 2 * k] for k in range(n)]
            calls = [_counters[3 + 2 * k] for k in range(n)]
        self.runs += 1
        for k, row in enumerate(self.table):
            self._ns[k] += ns[k]
            self._calls[k] += calls[k]
            f0, b0 = self._work[k]
            f = _eval(row.get("flops", {}), dyn)
            b = _eval(row.get("bytes", {}), dyn)
            self._work[k] = (None if f0 is None or f is None else f0 + f * calls[k],
                             None if b0 is None or b is None else b0 + b * calls[k])
        return result

    run = __call__

    def profile(self) -> list[dict]:
        """One row per kernel, slowest first: kernel, nodes, calls, ns, ms, percent, flops, bytes, gflops, gbs."""
        total = sum(self._ns) or 1
        rows = []
        for k, row in enumerate(self.table):
            ns = self._ns[k]
            flops, nbytes = self._work[k]
            rows.append({
                "kernel": row["kernel"], "nodes": list(row.get("nodes", [])), "calls": self._calls[k],
                "ns": ns, "ms": ns / 1e6, "percent": 100.0 * ns / total,
                "flops": flops, "bytes": nbytes,
                "gflops": flops / ns if flops is not None and ns > 0 else None,  # flop/ns = GFLOP/s
                "gbs": nbytes / ns if nbytes is not None and ns > 0 else None,
            })
        rows.sort(key=lambda r: -r["ns"])
        return rows


def _side_file(model: Any, cache: Any) -> Path | None:
    key = getattr(getattr(model, "program", None), "cache_key", None)
    if not key or cache is False or cache is None:
        return None
    from minimlir.backend import cache as _cache

    return _cache.cache_dir(None if cache is True else Path(cache)) / f"{key}.profile.json"


def compile_profiled(model: Any, *, pipeline: str | None = None, cache: Any = True, **kwargs: Any) -> ProfiledModel:
    """`frontend.api.compile` with per-kernel timing (see the module docstring)."""
    from minimlir.frontend import api
    from minimlir.passes.to_llvm import profile as _pass

    register_symbols()
    text = profile_pipeline(pipeline if pipeline is not None else api.default_pipeline())
    with _lock:
        _pass.LAST_TABLE = None
        compiled = api.compile(model, pipeline=text, cache=cache, **kwargs)
        table = _pass.LAST_TABLE
    side = _side_file(compiled, cache)
    if table is None and side is not None and side.exists():  # a cache hit: the table stored beside it
        try:
            table = json.loads(side.read_text())["kernels"]
        except (OSError, ValueError, KeyError):
            table = None
    if table is None:  # a hit without its table: compile again, without the cache
        with _lock:
            compiled = api.compile(model, pipeline=text, cache=False, **kwargs)
            table = _pass.LAST_TABLE
        if table is None:
            raise api.CompileError("error: the profiled pipeline did not instrument the module")
    if side is not None and not side.exists():
        try:
            side.write_text(json.dumps({"version": SCHEMA_VERSION, "kernels": table}))
        except OSError:
            pass
    return ProfiledModel(compiled, table)


def _num(v: float | None, fmt: str) -> str:
    return "n/a" if v is None else format(v, fmt)


def format_table(rows: list[dict], limit: int | None = None, width: int = 48) -> str:
    """The profile as a text table (slowest kernels first; `limit` rows, the rest summed)."""
    header = f"{'kernel':<40} {'nodes':<{width}} {'calls':>6} {'time ms':>10} {'%':>6} {'GFLOP/s':>8} {'GB/s':>8}"
    lines = [header, "-" * len(header)]
    shown = rows if limit is None else rows[:limit]
    for r in shown:
        nodes = ",".join(r["nodes"]) or "-"
        if len(nodes) > width:
            nodes = nodes[: width - 3] + "..."
        lines.append(f"{r['kernel'][:40]:<40} {nodes:<{width}} {r['calls']:>6} {r['ms']:>10.3f} {r['percent']:>6.1f} "
                     f"{_num(r['gflops'], '8.2f'):>8} {_num(r['gbs'], '8.2f'):>8}")
    rest = rows[len(shown):]
    if rest:
        lines.append(f"{'(' + str(len(rest)) + ' more)':<40} {'':<{width}} {sum(r['calls'] for r in rest):>6} "
                     f"{sum(r['ms'] for r in rest):>10.3f} {sum(r['percent'] for r in rest):>6.1f}")
    total = sum(r["ms"] for r in rows)
    calls = sum(r["calls"] for r in rows)
    lines.append(f"{'total':<40} {'':<{width}} {calls:>6} {total:>10.3f} {100.0 if rows else 0.0:>6.1f}")
    return "\n".join(lines)


def to_json(model: ProfiledModel) -> dict:
    """The `--profile-json` document: {"version", "runs", "total_ms", "kernels": [rows]}."""
    rows = model.profile()
    return {"version": SCHEMA_VERSION, "runs": model.runs, "total_ms": sum(r["ms"] for r in rows), "kernels": rows}


def write_json(model: ProfiledModel, path: str | Path) -> None:
    Path(path).write_text(json.dumps(to_json(model), indent=1) + "\n")


def write_png(rows: list[dict], path: str | Path, top: int = 20, title: str = "") -> None:
    """A horizontal bar chart of the `top` slowest kernels (matplotlib, the `profile` extra)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        raise RuntimeError("--profile-png needs matplotlib: pip install 'minimlir[profile]'") from e
    shown = rows[:top][::-1]
    labels = [f"{r['kernel'][:40]} ({','.join(r['nodes'])[:30]})" for r in shown]
    fig, ax = plt.subplots(figsize=(11, 0.35 * len(shown) + 1.5))
    ax.barh(range(len(shown)), [r["ms"] for r in shown])
    ax.set_yticks(range(len(shown)), labels, fontsize=7)
    ax.set_xlabel("total time (ms)")
    for i, r in enumerate(shown):
        ax.text(r["ms"], i, f" {r['percent']:.1f}%", va="center", fontsize=7)
    ax.set_title(title or "minimlir kernels by time")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
