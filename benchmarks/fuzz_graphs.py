"""Random-graph differential testing: random valid ONNX graphs, minimlir against onnxruntime.

    python benchmarks/fuzz_graphs.py --n 2000 --seed 1 [--out fuzz-out] [-j 2] [--start 0]
    python benchmarks/fuzz_graphs.py --replay fuzz-out/seed1_graph17.onnx
    python benchmarks/fuzz_graphs.py --n 200 --seed 3 --winograd 4     # every eligible conv as F(4x4, 3x3)

Graph i of seed S is `minimlir.frontend.random_graphs.generate(S, i)`. Each graph is compiled once
(`compile(model, cache=False)`) and run at each binding of its dynamic dims (two or three sizes)
next to onnxruntime in float32 and on the graph's float64 twin (the judge). A mismatch or a crash
(a compile or run error, a dead worker, a timeout) is shrunk to a minimal graph, written to
`--out` as `seedS_graphI.onnx` plus `seedS_graphI.txt`: the command that replays it, the verdict,
the graph and the per-binding differences. Graphs run in `-j` worker processes (a worker that
segfaults or hangs is restarted; the graph counts as a crash). The summary lists graphs, sizes
run, mismatches, crashes, shrunk reproducers; the exit code is 1 if any graph failed.

`--replay FILE.onnx` checks one reproducer (its bindings and input ranges are in the model's
metadata) and prints the per-binding table; exit code 1 while it still fails. The tiny graphs
compile faster in one process: workers set MINIMLIR_COMPILE_JOBS=1 unless it is set.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

RESULT = "@@fuzz-result "
WINOGRAD_ENV = "MINIMLIR_FUZZ_WINOGRAD"
"""Set by `--winograd M` (so workers and replays see it): the graph is compiled once per size, its
dynamic dims bound (graph-winograd rewrites static convs only), and every conv Winograd can compute
runs as F(M x M, 3x3), whatever its size (what a tuning database may choose, tuning/algorithms.py)."""


def _check_options() -> dict:
    tile = os.environ.get(WINOGRAD_ENV)
    if not tile:
        return {}
    from minimlir.compiler.pipelines import expand

    forced = f"graph-winograd{{min-channels=1 min-pixels=1 tile={int(tile)}}}"
    pipeline = ",".join(forced if s == "graph-winograd" else s for s in expand("compile").split(","))
    return {"compile_fn": lambda model: _StaticPerSize(model, pipeline)}


class _StaticPerSize:
    """`--winograd`: the model compiled once per binding of its dynamic dims, with them static
    (graph-winograd takes static convs only), with `pipeline`; called like a compiled model."""

    def __init__(self, model, pipeline: str):
        from minimlir.frontend import random_graphs as rg

        self.model, self.pipeline, self.compiled = model, pipeline, {}
        self._compiled(rg.make_feeds(model, 0))  # the first size now: compile errors are compile errors


    def __call__(self, **feeds):
        return self._compiled(feeds)(**feeds)

    def _compiled(self, feeds: dict):
        import onnx

        from minimlir.frontend import compile as compile_model

        key = tuple(tuple(v.shape) for v in feeds.values())
        if key not in self.compiled:
            m = onnx.ModelProto()
            m.CopyFrom(self.model)
            for inp in m.graph.input:
                if inp.name in feeds:
                    for d, n in zip(inp.type.tensor_type.shape.dim, feeds[inp.name].shape):
                        d.Clear()
                        d.dim_value = int(n)
            del m.graph.value_info[:]
            self.compiled[key] = compile_model(m, cache=False, pipeline=self.pipeline)
        return self.compiled[key]


def _check_one(seed: int, index: int, out_dir: str | None, shrink: bool) -> dict:
    from minimlir.frontend import random_graphs as rg

    t0 = time.time()
    model = rg.generate(seed, index)
    res = rg.check(model, **_check_options())
    row = {
        "index": index, "kind": res.kind, "sizes": res.sizes_run, "compile_s": round(res.compile_seconds, 3),
        "nodes": len(model.graph.node), "ops": [n.op_type for n in model.graph.node],
        "message": res.message.splitlines()[0] if res.message else "",
    }
    if not res.ok and out_dir:
        row["repro"] = _write_repro(model, res, seed, index, out_dir, shrink, in_process=True)
    row["seconds"] = round(time.time() - t0, 3)
    return row


def _write_repro(model, res, seed: int, index: int, out_dir: str, shrink: bool, in_process: bool) -> str:
    from minimlir.frontend import random_graphs as rg

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    stem = out / f"seed{seed}_graph{index}"
    import onnx

    onnx.save(model, str(stem) + ".orig.onnx")
    kind = res.kind
    first = res.message.split(":", 2)[:2]

    def still_fails(m) -> bool:
        r = rg.check(m, **_check_options()) if in_process else _subprocess_check(m, out)
        return r.kind == kind and (kind != "crash" or r.message.split(":", 2)[:2] == first)

    small = model
    if shrink:
        failing_env = None
        meta = rg.metadata(model)
        for run in res.runs:
            if run.bad:
                failing_env = meta["envs"].index(run.env)
                break
        small = rg.shrink(model, still_fails, failing_env=failing_env,
                          log=lambda s: print(f"[graph {index}] {s}", file=sys.stderr, flush=True))
    onnx.save(small, str(stem) + ".onnx")
    final = rg.check(small, **_check_options()) if in_process else _subprocess_check(small, out)
    mode = f" --winograd {os.environ[WINOGRAD_ENV]}" if os.environ.get(WINOGRAD_ENV) else ""
    text = (f"# reproduce: {rg.reproduce_command(str(stem) + '.onnx')}{mode}\n"
            f"# original (unshrunk) graph: {stem}.orig.onnx; generated by generate(seed={seed}, index={index})\n"
            + rg.report_text(small, final if not final.ok else res))
    Path(str(stem) + ".txt").write_text(text)
    return str(stem) + ".onnx"


def _subprocess_check(model, tmp_dir: Path):
    """check() in a child process (for graphs that kill the process): a CheckResult."""
    import tempfile

    import onnx

    from minimlir.frontend import random_graphs as rg

    with tempfile.NamedTemporaryFile(suffix=".onnx", dir=tmp_dir, delete=False) as f:
        path = f.name
    onnx.save(model, path)
    try:
        p = subprocess.run([sys.executable, __file__, "--replay", path, "--json"], capture_output=True, text=True,
                           timeout=600, env=_worker_env())
        for line in p.stdout.splitlines():
            if line.startswith(RESULT):
                d = json.loads(line[len(RESULT):])
                return rg.CheckResult(d["kind"], d["message"])
        return rg.CheckResult("crash", f"worker died: exit code {p.returncode}")
    except subprocess.TimeoutExpired:
        return rg.CheckResult("crash", "worker died: timeout")
    finally:
        os.unlink(path)


def _worker_env() -> dict:
    env = dict(os.environ)
    env.setdefault("MINIMLIR_COMPILE_JOBS", "1")
    return env


def worker_main(seed: int, out_dir: str | None, shrink: bool) -> None:
    """Read graph indices from stdin, one per line; print one result line per graph."""
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        index = int(line)
        try:
            row = _check_one(seed, index, out_dir, shrink)
        except Exception as e:  # a generator or harness error: report it, never hide it
            import traceback

            row = {"index": index, "kind": "crash", "sizes": 0, "compile_s": 0, "nodes": 0, "ops": [],
                   "message": f"harness: {type(e).__name__}: {e}", "trace": traceback.format_exc()}
        print(RESULT + json.dumps(row), flush=True)


class Worker:
    """One worker process; `run(index, timeout)` returns its result row, or None if it died."""

    def __init__(self, args):
        cmd = [sys.executable, __file__, "--worker", "--seed", str(args.seed)]
        if args.out:
            cmd += ["--out", args.out]
        if args.no_shrink:
            cmd.append("--no-shrink")
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1,
                                     env=_worker_env())
        self.lines: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            if line.startswith(RESULT):
                self.lines.put(json.loads(line[len(RESULT):]))
        self.lines.put(None)

    def run(self, index: int, timeout: float):
        try:
            self.proc.stdin.write(f"{index}\n")
            self.proc.stdin.flush()
            return self.lines.get(timeout=timeout)
        except (queue.Empty, BrokenPipeError):
            return None

    def stop(self):
        try:
            self.proc.kill()
        except OSError:
            pass
        self.proc.wait()


def run_many(args) -> list[dict]:
    indices: queue.Queue = queue.Queue()
    for i in range(args.start, args.start + args.n):
        indices.put(i)
    rows: list[dict] = []
    lock = threading.Lock()
    t0 = time.time()

    def slot():
        w = Worker(args)
        while True:
            if args.max_minutes and time.time() - t0 > 60 * args.max_minutes:
                break  # the summary says how many graphs ran
            try:
                i = indices.get_nowait()
            except queue.Empty:
                break
            row = w.run(i, args.timeout)
            if row is None:  # dead or hung: a crash; shrink it with a child process per candidate
                code = w.proc.poll()
                w.stop()
                why = f"worker died: exit code {code}" if code is not None else f"worker died: timeout {args.timeout}s"
                row = {"index": i, "kind": "crash", "sizes": 0, "compile_s": 0, "nodes": 0, "ops": [], "message": why}
                if args.out:
                    from minimlir.frontend import random_graphs as rg

                    model = rg.generate(args.seed, i)
                    row["nodes"] = len(model.graph.node)
                    row["ops"] = [n.op_type for n in model.graph.node]
                    res = rg.CheckResult("crash", why)
                    row["repro"] = _write_repro(model, res, args.seed, i, args.out, not args.no_shrink,
                                                in_process=False)
                w = Worker(args)
            with lock:
                rows.append(row)
                done = len(rows)
                if row["kind"] not in ("ok", "invalid"):
                    print(f"[{done}/{args.n}] graph {row['index']}: {row['kind']}: {row['message']}"
                          + (f" -> {row['repro']}" if row.get("repro") else ""), flush=True)
                elif done % 25 == 0:
                    el = time.time() - t0
                    print(f"[{done}/{args.n}] {el:.0f}s elapsed, {el / done:.2f}s per graph", flush=True)
        w.stop()

    threads = [threading.Thread(target=slot) for _ in range(max(1, args.jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sorted(rows, key=lambda r: r["index"])


def summarize(rows: list[dict], args, seconds: float) -> str:
    kinds = collections.Counter(r["kind"] for r in rows)
    ops = collections.Counter(op for r in rows for op in r["ops"])
    compile_s = [r["compile_s"] for r in rows if r["compile_s"]]
    lines = [
        f"seed {args.seed}, graphs {args.start}..{args.start + args.n - 1}"
        + (f" (time limit {args.max_minutes:g} min: {len(rows)} of {args.n} ran)" if len(rows) < args.n else ""),
        f"graphs: {len(rows)}  sizes run: {sum(r['sizes'] for r in rows)}  nodes: {sum(r['nodes'] for r in rows)}",
        f"ok: {kinds['ok']}  mismatches: {kinds['mismatch']}  crashes: {kinds['crash']}  "
        f"invalid (rejected by onnxruntime, not counted): {kinds['invalid']}",
        f"shrunk reproducers: {sum(1 for r in rows if r.get('repro'))}" + (f" in {args.out}" if args.out else ""),
        f"time: {seconds:.0f}s, compile {sum(compile_s) / max(len(compile_s), 1):.2f}s per graph (mean), "
        f"{max(compile_s, default=0):.1f}s max",
        "ops: " + ", ".join(f"{k} {v}" for k, v in sorted(ops.items())),
    ]
    for r in rows:
        if r["kind"] not in ("ok", "invalid"):
            lines.append(f"  graph {r['index']}: {r['kind']}: {r['message']}" + (f" -> {r['repro']}" if r.get("repro") else ""))
    for r in rows:
        if r["kind"] == "invalid":
            lines.append(f"  graph {r['index']} invalid: {r['message']}")
    return "\n".join(lines)


def replay(path: str, as_json: bool) -> int:
    import onnx

    from minimlir.frontend import random_graphs as rg

    try:
        model = onnx.load(path)
    except Exception as e:
        print(f"error: cannot load {path}: {e}", file=sys.stderr)
        return 1
    res = rg.check(model, **_check_options())
    if as_json:
        print(RESULT + json.dumps({"kind": res.kind, "message": res.message.splitlines()[0] if res.message else ""}))
    else:
        print(rg.report_text(model, res), end="")
        if res.kind == "crash":
            print(res.message)
    return 0 if res.ok else 1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=100, help="number of graphs")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--start", type=int, default=0, help="first graph index")
    ap.add_argument("--out", default="fuzz-out", help="folder for shrunk reproducers ('' for none)")
    ap.add_argument("-j", "--jobs", type=int, default=1, help="worker processes")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per graph (shrinking included)")
    ap.add_argument("--max-minutes", type=float, default=0.0,
                    help="start no new graph after this many minutes (0: no limit); the summary counts what ran")
    ap.add_argument("--no-shrink", action="store_true", help="write failing graphs unshrunk")
    ap.add_argument("--json", action="store_true", help="(with --replay) one machine-readable result line")
    ap.add_argument("--replay", metavar="FILE.onnx", help="check one reproducer and print the differences")
    ap.add_argument("--winograd", type=int, choices=(2, 4), default=None, metavar="M",
                    help="every conv Winograd can compute runs as F(M x M, 3x3), M = 2 or 4, at any size")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.winograd:
        os.environ[WINOGRAD_ENV] = str(args.winograd)
    if args.replay:
        return replay(args.replay, args.json)
    if args.worker:
        worker_main(args.seed, args.out or None, not args.no_shrink)
        return 0
    if args.n < 1 or args.jobs < 1:
        print("error: --n and -j must be positive", file=sys.stderr)
        return 1
    t0 = time.time()
    rows = run_many(args)
    print(summarize(rows, args, time.time() - t0))
    return 0 if all(r["kind"] in ("ok", "invalid") for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
