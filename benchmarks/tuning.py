"""Auto-tuning: tuned over default, measured in the same run (ratios, higher is better).

    python benchmarks/tuning.py                                   # the issue's settings (hours)
    python benchmarks/tuning.py --kernel-tasks 4 --trials-per-task 24 --e2e-tasks 4 \
        --e2e-trials-per-task 12 --budgets 2m,6m --json out.json  # a smaller sample
    python benchmarks/tuning.py --rules matmul --trials-per-task 320 --models "" --budgets ""
                                                                  # overhead and Spearman after 256

1. Kernels: ResNet-50's tasks of the `--rules` kinds (conv2d and matmul; the `--kernel-tasks`
   heaviest convs, 0 = all, and the matmul), each tuned for `--trials-per-task` trials; then
   default and best are measured again, alternating, five rounds, each in a fresh measuring
   process (the median of each round's fastest call), so the ratio is not the search's luckiest
   sample: per-task speedup and the geometric mean. Next to
   it, the cores' fp32 FMA peak and memory read bandwidth measured in the same run
   (`tuning/roofline.py`), each default's share of the peak and its ceiling: default time over the
   roofline (its FLOPs at the peak or its cold weights read at the bandwidth, the longer): no
   schedule can speed a task up more.
   ResNet-50's parameters (118 MB) exceed the last-level cache, so its tasks are timed with their
   weights flushed before each call, as the model runs them (`--cache-flush`, default auto).
2. Overhead per trial: (tuning wall time - time spent inside the timed loops, the search's and the
   confirmation's) / trials; the same
   for the trial loop alone (without task extraction, process start-up before it and the report);
   and in CPU core-seconds of all processes outside the timed loops (what a busy shared machine
   does not distort); with the mean build time per candidate (in `--build-jobs` parallel workers)
   and time in the measuring process per candidate (loading, warm-up, calibration, timed loops).
3. Cost model: on the task with the most samples, fit on the first min(256, 3/4) measurements in
   order, Spearman rank correlation on the later ones (held out).
4. End to end, ResNet-50 / SqueezeNet / a BERT-like encoder (2 layers, d=128, seq 128): measure
   the convs' algorithms (direct / Winograd F(2x2) / F(4x4), one trial each; `--no-algorithms`
   skips it), then tune the `--e2e-tasks` heaviest tasks with the task scheduler (`--e2e-trials-per-task` each on average),
   compile with and without `tuning_db=`, median latency over `--runs` alternating calls; next to
   onnxruntime (same threads) on the same input.
5. Budgets: `--budget-model` tuned from scratch with each of `--budgets` (default 10m,60m: the
   issue's "a 10-minute budget reaches >= 80% of the speedup of a 60-minute run"), every database
   compiled and timed against the default; each speedup as a share of the longest budget's.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests" / "unit"))
sys.path.insert(0, str(HERE.parent / "tests" / "unit" / "frontend"))


def light(name: str) -> str:
    from conformance import onnx_data_dir

    return str(onnx_data_dir() / "light" / f"light_{name}.onnx")


def bert_like(path: Path) -> str:
    import onnx

    from test_dynamic_lengths import _encoder_model  # the encoder the dynamic-length tests run

    onnx.save(_encoder_model(layers=2, d=128, heads=4, vocab=1000, max_pos=512, n_cls=5), str(path))
    return str(path)


def geomean(xs):
    xs = [x for x in xs if x and math.isfinite(x)]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


def cpu_seconds() -> float:
    """CPU time of this process and of its waited-for children (the tuner's pool and measuring process)."""
    import resource

    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def timed_seconds(recs) -> float:
    return sum(sum(r.get("times") or []) * max(1, r.get("number", 1)) for r in recs)


def remeasure(task, assignments, workdir, threads, rounds=5):
    """Each assignment's median over `rounds` alternating rounds of its fastest call in the round,
    each round in a fresh measuring process (as the tuner's confirmation: a process's address-space
    layout moves some candidates by 10%), inf where one failed."""
    from minimlir.tuning.measure import LocalExecutor, MeasureConfig

    ex = LocalExecutor(workdir, MeasureConfig(threads=threads, min_repeat_ms=100, repeats=5))
    try:
        times = ex.remeasure(task, assignments, rounds)
    finally:
        ex.close()
    return [statistics.median(min(r) for r in t) if len(t) == rounds else math.inf for t in times]


def kernels(args, work: Path, out: dict) -> Path:
    from minimlir.tuning.database import Database
    from minimlir.tuning.task import extract_tasks
    from minimlir.tuning.tuner import TuneOptions, tune

    rules = args.rules.split(",")
    tasks = [t for t in extract_tasks(light("resnet50"), cache_flush=args.cache_flush) if t.rule in rules]
    if args.kernel_tasks:  # the N heaviest convs, and the matmul (the classifier) always
        convs = [t for t in tasks if t.rule == "conv2d"][:args.kernel_tasks]
        tasks = convs + [t for t in tasks if t.rule == "matmul"]
    from minimlir.tuning.roofline import bound_seconds, cold_bytes, memory_gbs, peak_gflops

    # what no schedule can beat: the ceiling of each task's speedup
    peak, gbs = peak_gflops(args.threads), memory_gbs(args.threads)
    print(f"  measured on {args.threads} core(s): fp32 FMA peak {peak:.1f} GFLOP/s, memory read {gbs:.1f} GB/s",
          flush=True)
    db = work / "resnet50-kernels.jsonl"
    rows, overheads, builds, runs, loop_overheads, cpu_overheads = [], [], [], [], [], []
    for t in tasks:
        t0, cpu0 = time.time(), cpu_seconds()
        res = tune(light("resnet50"), db, TuneOptions(trials=args.trials_per_task, threads=args.threads,
                                                      build_jobs=args.build_jobs,
                                                      seed=args.seed, progress=False,
                                                      report_dir=str(work / "kernel-report"),
                                                      workdir=str(work / "w")), tasks=[t])
        wall, cpu = time.time() - t0, cpu_seconds() - cpu0
        recs = [r for r in Database(db).measurements(t.key) if r["run"] == res.run]
        timed = res.timings.get("timed", timed_seconds(recs))  # every timed loop, the confirmation's too
        overheads.append((wall - timed) / max(1, len(recs)))
        loop_overheads.append((res.timings["loop"] - timed) / max(1, len(recs)))
        cpu_overheads.append((cpu - res.timings["timed_cpu"]) / max(1, len(recs)))
        builds.append(statistics.mean([r.get("build_seconds", 0.0) for r in recs]) if recs else 0.0)
        runs.append(statistics.mean([r.get("run_seconds", 0.0) for r in recs]) if recs else 0.0)
        s = res.tasks[0]
        d, b = remeasure(t, [s.space.default(), s.best], str(work / "w"), args.threads)
        default_gflops = t.flops / d / 1e9
        floor = bound_seconds(t.flops, cold_bytes(t), peak, gbs)
        flops_s = bound_seconds(t.flops, 0, peak, gbs)  # the FLOP bound alone: which one binds
        row = {"task": t.name, "rule": t.rule, "weight": t.weight, "gflop": t.flops / 1e9, "trials": s.trials,
               "errors": sum(1 for r in recs if r["error"] != "OK"), "default_ms": d * 1e3, "tuned_ms": b * 1e3,
               "speedup": d / b if b < math.inf else float("nan"), "search_speedup": s.speedup,
               "default_gflops": default_gflops, "tuned_gflops": t.flops / b / 1e9 if b < math.inf else 0.0,
               "default_share_of_peak": default_gflops / peak, "cold_bytes": cold_bytes(t),
               "roofline_ms": floor * 1e3, "ceiling": d / floor,
               "tune_seconds": wall, "best_knobs": s.best}
        rows.append(row)
        print(f"  {t.name:28} {t.rule:7} x{t.weight}  {row['default_ms']:9.3f} ms -> {row['tuned_ms']:9.3f} ms "
              f"{row['speedup']:5.2f}x  (default {default_gflops:.0f} GFLOP/s = {default_gflops / peak:.0%} of the "
              f"peak; roofline {floor * 1e3:.3f} ms ({'FLOPs' if floor == flops_s else 'cold weights'}): "
              f"ceiling {row['ceiling']:.2f}x; {s.trials} trials, {row['errors']} errors, {wall:.0f} s)",
              flush=True)
    out["kernels"] = {"rows": rows, "geomean_speedup": geomean([r["speedup"] for r in rows]),
                      "peak_gflops": peak, "memory_gbs": gbs,
                      "geomean_ceiling": geomean([r["ceiling"] for r in rows]),
                      "overhead_per_trial_s": statistics.mean(overheads) if overheads else None,
                      "loop_overhead_per_trial_s": statistics.mean(loop_overheads) if loop_overheads else None,
                      "cpu_overhead_per_trial_s": statistics.mean(cpu_overheads) if cpu_overheads else None,
                      "build_seconds_per_candidate": statistics.mean(builds) if builds else None,
                      "run_seconds_per_candidate": statistics.mean(runs) if runs else None}
    k = out["kernels"]
    print(f"kernels: geomean tuned/default speedup {k['geomean_speedup']:.3f}x over {len(rows)} task(s) "
          f"(target >= 1.3x); the roofline allows at most {k['geomean_ceiling']:.3f}x (geomean of each default's "
          f"time over its roofline: its FLOPs at the peak or its cold weights at the read bandwidth)", flush=True)
    print(f"overhead per trial {k['overhead_per_trial_s']:.2f} s beyond the timed loops (target <= 0.5 s); "
          f"{k['loop_overhead_per_trial_s']:.2f} s in the trial loop alone (without task extraction and "
          f"the report); CPU {k['cpu_overhead_per_trial_s']:.2f} core-s per trial outside the timed loops "
          f"(all processes); per candidate: build {k['build_seconds_per_candidate']:.2f} s (on "
          f"{args.build_jobs or 'all'} worker(s), in parallel), measuring process "
          f"{k['run_seconds_per_candidate']:.2f} s; load average {os.getloadavg()[0]:.1f}", flush=True)
    spearman_section(db, out)
    return db


def spearman_section(db_path: Path, out: dict) -> None:
    from minimlir.tuning.cost_model import make_model, spearman, targets
    from minimlir.tuning.database import Database, cost

    recs = Database(db_path).measurements()
    by_task: dict[str, list] = {}
    for r in recs:
        if r.get("features"):
            by_task.setdefault(r["task"], []).append(r)
    if not by_task:
        return
    key, rs = max(by_task.items(), key=lambda kv: len(kv[1]))
    if len(rs) < 8:  # nothing to fit a model on and rank with (a smoke run of a few trials)
        print(f"cost model: only {len(rs)} measurements of a task, no Spearman", flush=True)
        return
    n_train = min(256, (3 * len(rs)) // 4)
    train, test = rs[:n_train], rs[n_train:]
    X = np.array([r["features"] for r in rs])
    y = targets([cost(r) for r in rs], [key] * len(rs))
    m = make_model("lightgbm")
    m.fit(X[:n_train], y[:n_train])
    rho = spearman(y[n_train:], m.predict(X[n_train:]))
    # the same sizes, split at random (seeded): how well the model ranks candidates like the ones it
    # saw, where the split above asks it to rank the later, model-chosen ones
    perm = np.random.default_rng(0).permutation(len(rs))
    tr, te = perm[:n_train], perm[n_train:]
    m2 = make_model("lightgbm")
    m2.fit(X[tr], y[tr])
    rho_random = spearman(y[te], m2.predict(X[te]))
    out["cost_model"] = {"task": rs[0]["task_name"], "train": len(train), "held_out": len(test), "spearman": rho,
                         "spearman_random_split": rho_random}
    print(f"cost model: Spearman {rho:.3f} on {len(test)} held-out measurements of {rs[0]['task_name']} "
          f"(fitted on the first {len(train)}; target >= 0.7 after 256); {rho_random:.3f} with a random "
          f"split of the same sizes", flush=True)


def model_latency(compiled, feeds, runs):
    compiled(**feeds)
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        compiled(**feeds)
        times.append(time.perf_counter() - t)
    return times


def end_to_end(args, work: Path, out: dict, resnet_db: Path | None) -> None:
    import onnxruntime as ort

    from minimlir.frontend import compile as compile_model
    from minimlir.tuning.algorithms import extract_convs
    from minimlir.tuning.database import best_times
    from minimlir.tuning.task import extract_tasks
    from minimlir.tuning.tuner import TuneOptions, tune

    models = {"resnet50": light("resnet50"), "squeezenet": light("squeezenet"),
              "bert_like": bert_like(work / "bert_like.onnx")}
    rows = []
    for name in args.models.split(","):
        path = models[name]
        dims = {"batch": 1, "seq": 128} if name == "bert_like" else {}
        db = work / f"{name}-e2e.jsonl"
        if name == "resnet50" and resnet_db is not None and resnet_db.exists():
            shutil.copy(resnet_db, db)  # the kernel section's records count too
        tasks = extract_tasks(path, dims=dims)
        tasks = tasks[:args.e2e_tasks] if args.e2e_tasks else tasks
        # the convs' algorithms are measured first (one trial per candidate algorithm, on top of the
        # kernels' trials); the kernels tuned are then those of the model compiled with the choices
        convs = extract_convs(path) if args.algorithms else []
        t0 = time.time()
        algos = []
        if args.e2e_trials_per_task:
            res = tune(path, db, TuneOptions(trials=args.e2e_trials_per_task * len(tasks)
                                             + sum(len(c.candidates) for c in convs), threads=args.threads,
                                             seed=args.seed, progress=False, dims=dims,
                                             max_tasks=args.e2e_tasks or None, algorithms=args.algorithms,
                                             cache_flush=args.cache_flush,
                                             report_dir=str(work / f"{name}-report"), workdir=str(work / "w")))
            algos = res.algorithms
        wall = time.time() - t0
        for r in algos:
            best = best_times(r["times"])
            print(f"    conv {r['signature'][:90]}: " + ", ".join(f"{a} {t * 1e3:.3f} ms" for a, t in best.items())
                  + f" -> {r['choice']} (default {r['default']}, x{r.get('weight', 1)})", flush=True)
        base = compile_model(path, cache=False, num_threads=args.threads)
        spec = base.inputs[0]  # the real input (old exports list the initializers as inputs too)
        if name == "bert_like":
            feeds = {spec.name: np.random.default_rng(0).integers(0, 1000, (1, 128)).astype(np.int64)}
        else:
            shape = [d or 1 for d in spec.shape]
            feeds = {spec.name: np.random.default_rng(0).standard_normal(shape).astype(np.float32)}
        tuned = compile_model(path, cache=False, num_threads=args.threads, tuning_db=str(db))
        so = ort.SessionOptions()
        so.intra_op_num_threads = args.threads
        sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        tb, tt, to = [], [], []
        for _ in range(3):  # alternate, so load changes hit all three
            tb += model_latency(base, feeds, args.runs)
            tt += model_latency(tuned, feeds, args.runs)
            sess.run(None, feeds)
            for _ in range(args.runs):
                t = time.perf_counter()
                sess.run(None, feeds)
                to.append(time.perf_counter() - t)
        diff = float(np.abs(np.asarray(base(**feeds)[0]) - np.asarray(tuned(**feeds)[0])).max())
        row = {"model": name, "tasks_tuned": len(tasks), "tune_seconds": wall, "algorithms": algos,
               "default_ms": statistics.median(tb) * 1e3, "tuned_ms": statistics.median(tt) * 1e3,
               "onnxruntime_ms": statistics.median(to) * 1e3, "max_abs_diff_tuned_vs_default": diff}
        row["speedup"] = row["default_ms"] / row["tuned_ms"]
        row["tuned_over_onnxruntime"] = row["tuned_ms"] / row["onnxruntime_ms"]
        rows.append(row)
        print(f"  {name:11} default {row['default_ms']:8.2f} ms  tuned {row['tuned_ms']:8.2f} ms  "
              f"{row['speedup']:5.2f}x   onnxruntime {row['onnxruntime_ms']:8.2f} ms  "
              f"(tuned {len(tasks)} task(s) in {wall:.0f} s; max |tuned - default| {diff:.2g})", flush=True)
    out["end_to_end"] = rows


def budget_section(args, work: Path, out: dict) -> None:
    """Tune one model from scratch with each budget (`--budgets`, shortest first), compile with each
    database, time every variant against the default in alternating rounds; the shorter budgets'
    speedups as a share of the longest's."""
    from minimlir.frontend import compile as compile_model
    from minimlir.tools.mini_tune import parse_budget
    from minimlir.tuning.tuner import TuneOptions, tune

    path = light(args.budget_model) if args.budget_model != "bert_like" else bert_like(work / "bert_like.onnx")
    dims = {"batch": 1, "seq": 128} if args.budget_model == "bert_like" else {}
    budgets = [(b, parse_budget(b)) for b in args.budgets.split(",") if b]
    dbs = []
    for label, seconds in budgets:
        db = work / f"{args.budget_model}-budget-{label}.jsonl"
        t0 = time.time()
        res = tune(path, db, TuneOptions(budget_s=seconds, threads=args.threads, seed=args.seed, progress=False,
                                         cache_flush=args.cache_flush,
                                         dims=dims, build_jobs=args.build_jobs, algorithms=args.algorithms,
                                         report_dir=str(work / f"budget-{label}-report"), workdir=str(work / "w")))
        dbs.append(db)
        print(f"  {label:>6}: {res.trials} trials in {time.time() - t0:.0f} s", flush=True)
    base = compile_model(path, cache=False, num_threads=args.threads)
    spec = base.inputs[0]
    if args.budget_model == "bert_like":
        feeds = {spec.name: np.random.default_rng(0).integers(0, 1000, (1, 128)).astype(np.int64)}
    else:
        feeds = {spec.name: np.random.default_rng(0).standard_normal([d or 1 for d in spec.shape]).astype(np.float32)}
    tuned = [compile_model(path, cache=False, num_threads=args.threads, tuning_db=str(db)) for db in dbs]
    tb, tt = [], [[] for _ in tuned]
    for _ in range(3):
        tb += model_latency(base, feeds, args.runs)
        for i, m in enumerate(tuned):
            tt[i] += model_latency(m, feeds, args.runs)
    d = statistics.median(tb)
    rows = [{"budget": label, "seconds": sec, "default_ms": d * 1e3, "tuned_ms": statistics.median(t) * 1e3,
             "speedup": d / statistics.median(t)} for (label, sec), t in zip(budgets, tt)]
    longest = rows[-1]["speedup"]
    for r in rows:
        r["speedup_share_of_longest"] = r["speedup"] / longest
        r["gain_share_of_longest"] = (r["speedup"] - 1) / (longest - 1) if longest > 1 else float("nan")
        print(f"  {r['budget']:>6}: default {r['default_ms']:8.2f} ms  tuned {r['tuned_ms']:8.2f} ms  "
              f"{r['speedup']:5.2f}x  = {r['speedup_share_of_longest']:.2f} of the {rows[-1]['budget']} speedup "
              f"({r['gain_share_of_longest']:.2f} of its gain over 1x; target >= 0.8)", flush=True)
    out["budgets"] = {"model": args.budget_model, "rows": rows}


def main(argv=None) -> int:
    from minimlir.backend.parallel import cpu_count

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--trials-per-task", type=int, default=200)
    p.add_argument("--kernel-tasks", type=int, default=0, help="the N heaviest conv tasks and the matmul (0: all)")
    p.add_argument("--e2e-tasks", type=int, default=0, help="tune the N heaviest tasks per model (0: all)")
    p.add_argument("--e2e-trials-per-task", type=int, default=64)
    p.add_argument("--models", default="resnet50,squeezenet,bert_like")
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--threads", type=int, default=cpu_count())
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--rules", default="conv2d,matmul", help="the kernel section's task kinds")
    p.add_argument("--build-jobs", type=int, default=0, help="build workers (0: one per core)")
    p.add_argument("--budgets", default="10m,60m",
                   help="budget section: tune --budget-model from scratch with each budget ('' skips it)")
    p.add_argument("--budget-model", default="resnet50", choices=["resnet50", "squeezenet", "bert_like"])
    p.add_argument("--skip-kernels", action="store_true")
    p.add_argument("--no-algorithms", dest="algorithms", action="store_false",
                   help="end to end and budgets: do not measure the convs' algorithms (mini-tune --no-algorithms)")
    p.add_argument("--cache-flush", choices=["auto", "on", "off"], default="auto",
                   help="tune with the weights flushed before each timed call (mini-tune --cache-flush)")
    p.add_argument("--workdir", default=None)
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    work = Path(args.workdir or tempfile.mkdtemp(prefix="bench-tuning-"))
    work.mkdir(parents=True, exist_ok=True)
    out: dict = {"args": vars(args), "cpu": None}
    from minimlir.tuning.measure import cpu_fingerprint

    out["cpu"] = cpu_fingerprint()
    print(f"benchmarks/tuning.py on {out['cpu']['cpu']} ({out['cpu']['cores']} cores), {args.threads} thread(s), "
          f"work in {work}; load average {os.getloadavg()[0]:.1f}", flush=True)
    resnet_db = None
    if not args.skip_kernels:
        print("ResNet-50 conv and matmul tasks, tuned vs default:", flush=True)
        resnet_db = kernels(args, work, out)
    if args.models:
        print("end to end:", flush=True)
        end_to_end(args, work, out, resnet_db)
    if args.budgets:
        print(f"budgets ({args.budget_model}, tuned from scratch with each):", flush=True)
        budget_section(args, work, out)
    out["load_average_end"] = os.getloadavg()[0]
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
