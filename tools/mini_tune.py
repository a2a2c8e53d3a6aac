"""mini-tune: measured schedule search for a model's kernels, remembered in a record database.

    mini-tune MODEL.onnx|.mlir --db tune.jsonl (--budget 10m | --trials N) [--threads N] [--seed S]
              [--resume] [--executor local|ray [--address HOST:PORT]] [--dim batch=8] [--report DIR]
    mini-tune db show tune.jsonl
    mini-tune db distill tune.jsonl -o best.jsonl        # the best record per kernel and CPU
    mini-tune db merge a.jsonl b.jsonl -o all.jsonl

A model with convolutions first gets each conv's algorithm measured (direct, Winograd F(2x2, 3x3)
or F(4x4, 3x3), within 30% of the budget; `--no-algorithms` skips it), then its kernels, compiled
with those algorithms, are tuned. The run shows a live table (task, trials, best GFLOP/s, speedup
over the default schedule, ETA) and ends with a report in DB.report/ (summary.json, summary.md,
tuning.png). Ctrl-C stops it; `--resume` continues the interrupted run. Apply the records with
`mini-run MODEL --tuning-db tune.jsonl`, `compile(model, tuning_db="tune.jsonl")`, or in a pipeline
`-p 'graph-winograd{tuning-db=tune.jsonl},…,loop-schedule{tuning-db=tune.jsonl}'`.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import traceback
from typing import NoReturn


class UsageError(Exception):
    pass


class _ArgParser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(1, f"{self.prog}: error: {message}\n")


def parse_budget(text: str) -> float:
    """'10m', '90s', '1h', '1h30m', '45' (seconds) -> seconds."""
    t = text.strip().lower()
    if re.fullmatch(r"\d+(\.\d+)?", t):
        return float(t)
    parts = re.findall(r"(\d+(?:\.\d+)?)([hms])", t)
    if not parts or "".join(a + b for a, b in parts) != t:
        raise UsageError(f"--budget {text!r}: expected a duration such as 10m, 90s, 1h30m")
    return sum(float(a) * {"h": 3600, "m": 60, "s": 1}[b] for a, b in parts)


def parse_dims(items: list[str]) -> dict[str, int]:
    out = {}
    for item in items:
        name, eq, val = item.partition("=")
        if not eq or not name or not val.isdigit() or int(val) < 1:
            raise UsageError(f"--dim {item!r}: expected NAME=N with N >= 1")
        out[name] = int(val)
    return out


def tune_parser() -> argparse.ArgumentParser:
    p = _ArgParser(prog="mini-tune", description="Tune a model's kernel schedules (see also: mini-tune db -h).",
                   formatter_class=argparse.RawDescriptionHelpFormatter,
                   epilog=__doc__.split("\n\n", 1)[1] if __doc__ else None)
    a = p.add_argument
    a("model", help="an .onnx model or a graph-level .mlir file")
    a("--db", required=True, metavar="FILE", help="the record database (JSON lines; appended to)")
    a("--budget", default=None, metavar="DURATION", help="wall-clock budget: 10m, 90s, 1h30m")
    a("--trials", type=int, default=None, metavar="N", help="measured candidates in total (over all kernels)")
    a("--threads", type=int, default=None, metavar="N", help="threads of every measured run (default: all cores)")
    a("--seed", type=int, default=0, help="seed of the search and of the random inputs (default 0)")
    a("--resume", action="store_true", help="continue the last interrupted run of this model in --db")
    a("--executor", choices=("local", "ray"), default="local", help="where to build and measure")
    a("--address", default=None, help="Ray cluster address (with --executor ray; default: a local Ray)")
    a("--dim", action="append", default=[], metavar="NAME=N", help="size of a dynamic dim (default 1)")
    a("--batch-size", type=int, default=8, metavar="N", help="candidates measured per batch (default 8)")
    a("--cost-model", choices=("lightgbm", "xgboost"), default="lightgbm")
    a("--min-repeat-ms", type=float, default=40.0, metavar="MS", help="minimum time of one timed repeat")
    a("--repeats", type=int, default=5, metavar="N", help="timed repeats per run; the fastest one counts")
    a("--report", default=None, metavar="DIR", help="report folder (default: DB.report next to --db)")
    a("--tasks", default=None, metavar="TEXT", help="only kernels whose name contains TEXT")
    a("--max-tasks", type=int, default=None, metavar="N", help="only the N heaviest kernels")
    a("--list-tasks", action="store_true",
      help="print the convs with an algorithm choice and the kernels (tasks), and exit")
    a("--no-algorithms", action="store_true",
      help="keep graph-winograd's default algorithm per conv (do not measure direct vs Winograd first)")
    a("--cache-flush", choices=("auto", "on", "off"), default="auto",
      help="flush each kernel's weights from the caches before every timed call, as a model larger than "
           "the last-level cache has them: auto (default: when the model's parameters exceed it), on, off")
    a("--no-progress", action="store_true", help="no live table (one line per batch is not printed either)")
    return p


def db_parser() -> argparse.ArgumentParser:
    p = _ArgParser(prog="mini-tune db", description="Inspect and combine record databases.")
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("show", help="per kernel and CPU: trials, errors, default and best latency")
    s.add_argument("db")
    s.add_argument("--strict", action="store_true", help="fail on a corrupt line instead of skipping it")
    d = sub.add_parser("distill", help="keep the best record per kernel and CPU")
    d.add_argument("db")
    d.add_argument("-o", "--output", required=True)
    m = sub.add_parser("merge", help="append the records of several databases to one (no duplicates)")
    m.add_argument("dbs", nargs="+")
    m.add_argument("-o", "--output", required=True)
    for sp in (s, d, m):
        sp.error = lambda message, sp=sp: (sp.print_usage(sys.stderr),
                                           sp.exit(1, f"{sp.prog}: error: {message}\n"))  # type: ignore
    return p


def run_db(argv: list[str]) -> int:
    from minimlir.tuning import database as D

    args = db_parser().parse_args(argv)
    paths = [args.db] if args.cmd in ("show", "distill") else args.dbs
    for p in paths:
        if not os.path.isfile(p):
            raise UsageError(f"{p}: no such file")
    if args.cmd == "show":
        db = D.Database(args.db, strict=args.strict)
        print(D.show(db))
        return 0
    if args.cmd == "distill":
        src = D.Database(args.db)
        n = D.distill(src, args.output)
        print(f"distilled {n} record(s) from {args.db} into {args.output}"
              + (f" ({src.skipped_note()})" if src.skipped else ""))
        return 0
    n = D.merge([D.Database(p) for p in args.dbs], args.output)
    print(f"merged {n} new record(s) into {args.output}")
    return 0


def run_tune(argv: list[str]) -> int:
    from minimlir.backend.parallel import cpu_count
    from minimlir.tuning.task import extract_tasks
    from minimlir.tuning.tuner import TuneOptions, tune

    args = tune_parser().parse_args(argv)
    if not os.path.isfile(args.model):
        raise UsageError(f"{args.model}: no such file")
    dims = parse_dims(args.dim)
    if args.list_tasks:
        if not args.no_algorithms:
            from minimlir.tuning.algorithms import extract_convs

            for c in extract_convs(args.model, cache_flush=args.cache_flush):
                print(f"{c.key}  {c} candidates {', '.join(c.candidates)}")
        for t in extract_tasks(args.model, dims=dims, cache_flush=args.cache_flush):
            print(f"{t.key}  {t}")
        return 0
    if args.budget is None and args.trials is None:
        raise UsageError("give a budget: --budget DURATION and/or --trials N")
    if args.trials is not None and args.trials < 1:
        raise UsageError("--trials N: N must be >= 1")
    for name, v in (("--threads", args.threads), ("--batch-size", args.batch_size), ("--max-tasks", args.max_tasks),
                    ("--repeats", args.repeats)):
        if v is not None and v < 1:
            raise UsageError(f"{name} N: N must be >= 1")
    if args.address and args.executor != "ray":
        raise UsageError("--address only applies with --executor ray")
    opts = TuneOptions(trials=args.trials, budget_s=parse_budget(args.budget) if args.budget else None,
                       threads=args.threads or cpu_count(), seed=args.seed, batch_size=args.batch_size,
                       resume=args.resume, executor=args.executor, address=args.address, dims=dims,
                       cost_model=args.cost_model, min_repeat_ms=args.min_repeat_ms, repeats=args.repeats,
                       report_dir=args.report,
                       progress=not args.no_progress, task_filter=args.tasks, max_tasks=args.max_tasks,
                       algorithms=not args.no_algorithms, cache_flush=args.cache_flush)
    try:
        res = tune(args.model, args.db, opts)
    except KeyboardInterrupt:
        print(f"mini-tune: interrupted; continue with: mini-tune {args.model} --db {args.db} --resume ...",
              file=sys.stderr)
        return 130
    best, default = res.model_latency("best"), res.model_latency("default")
    if best < float("inf") and default < float("inf"):
        lat = f"kernels: {default * 1e3:.3f} ms -> {best * 1e3:.3f} ms ({default / best:.2f}x)"
    else:  # a budget too small to measure every kernel's default: no whole-model total to give
        timed = sum(s.default_cost < float("inf") for s in res.tasks)
        lat = (f"kernels: {timed} of {len(res.tasks)} measured (too few trials for a whole-model total; "
               f"each kernel takes 2 to start)")
    changed = sum(r.get("choice") != r.get("default") for r in res.algorithms)
    convs = (f"conv algorithms: {changed} of {len(res.algorithms)} differ from the default's; "
             if res.algorithms else "")
    print(f"mini-tune: {res.trials} trials in {res.seconds:.0f} s over {len(res.tasks)} kernel(s); "
          f"{lat}; {convs}records in {args.db}; "
          f"report: {', '.join(res.report_paths.values())}")
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    from minimlir.frontend.api import CompileError, OnnxImportError, UnsupportedModelError
    from minimlir.tuning.database import DatabaseError
    from minimlir.tuning.tuner import TuneError

    try:
        if argv and argv[0] == "db":
            return run_db(argv[1:])
        return run_tune(argv)
    except CompileError as e:
        sys.stderr.write(f"{str(e).strip().splitlines()[0]}\n")
    except (UsageError, TuneError, DatabaseError, UnsupportedModelError, OnnxImportError, FileNotFoundError) as e:
        msg = str(e).strip().splitlines()[0] if str(e).strip() else repr(e)
        sys.stderr.write(f"mini-tune: error: {msg}\n")
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # noqa: BLE001 - bugs: one line unless MINIMLIR_TRACEBACK=1
        if os.environ.get("MINIMLIR_TRACEBACK") == "1":
            traceback.print_exc()
        sys.stderr.write(f"mini-tune: error: {type(e).__name__}: {e}\n")
    return 1


if __name__ == "__main__":
    sys.exit(main())
