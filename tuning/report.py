"""What a tuning run shows: a live progress table while it runs, a report when it ends.

The table (rich): one row per task with its trials, best GFLOP/s, speedup over the default schedule
and the run's ETA; a last row for the whole model (sum of weight x best latency). The report, in
`DIR/`: `summary.json` (per task: key, name, rule, weight, FLOPs, default and best latency, speedup,
trials, best knobs, the curve; the whole model; the cost model's held-out Spearman per fit),
`summary.md` (the same as tables) and `tuning.png` (best latency against trials, per task and for
the whole model, with matplotlib).
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path


def _fmt_ms(s: float) -> str:
    return f"{s * 1e3:.3f}" if math.isfinite(s) else "-"


def _fmt_x(x: float | None) -> str:
    """A speedup, or '-' where it is unknown (a latency not measured)."""
    return f"{x:.2f}x" if x is not None and math.isfinite(x) else "-"


class ProgressTable:
    def __init__(self, searches):
        self.searches = searches
        self.live = None
        self.line = ""

    def _table(self, trials: int, opts, elapsed: float):
        from rich.table import Table

        eta = "-"
        if opts.budget_s is not None:
            eta = f"{max(0.0, opts.budget_s - elapsed):.0f}s"
        if opts.trials is not None and trials:
            left = elapsed / trials * (opts.trials - trials)
            eta = f"{left:.0f}s" if eta == "-" else f"{min(float(eta[:-1]), left):.0f}s"
        t = Table(title=f"mini-tune: {trials} trials, {elapsed:.0f}s, ETA {eta}")
        for col in ("task", "rule", "weight", "trials", "best GFLOP/s", "best ms", "speedup"):
            t.add_column(col, justify="left" if col in ("task", "rule") else "right")
        for s in self.searches:
            sp = s.speedup
            t.add_row(s.task.name[:40], s.task.rule, str(s.task.weight), str(s.trials), f"{s.gflops:.2f}",
                      _fmt_ms(s.best_cost), _fmt_x(sp))
        best = sum(s.task.weight * s.best_cost for s in self.searches)
        default = sum(s.task.weight * s.default_cost for s in self.searches)
        sp = default / best if math.isfinite(best) and math.isfinite(default) else float("nan")
        t.add_row("whole model", "", "", str(trials), "", _fmt_ms(best), _fmt_x(sp))
        return t

    def start(self) -> None:
        from rich.console import Console
        from rich.live import Live

        console = Console(file=sys.stderr)
        self.live = Live(console=console, refresh_per_second=2, transient=False, auto_refresh=False)
        self.live.start()

    def update(self, trials: int, opts, elapsed: float) -> None:
        if self.live is not None:
            self.live.update(self._table(trials, opts, elapsed), refresh=True)

    def stop(self) -> None:
        if self.live is not None:
            self.live.stop()
            self.live = None


def summary(result) -> dict:
    tasks = []
    for s in result.tasks:
        tasks.append({"key": s.task.key, "name": s.task.name, "rule": s.task.rule, "weight": s.task.weight,
                      "flops": s.task.flops, "trials": s.trials,
                      "default_s": s.default_cost if math.isfinite(s.default_cost) else None,
                      "best_s": s.best_cost if math.isfinite(s.best_cost) else None,
                      "speedup": None if math.isnan(s.speedup) else s.speedup,
                      "best_gflops": s.gflops, "best_knobs": s.best, "cold_args": list(s.task.cold_args),
                      "curve": [[t, c if math.isfinite(c) else None] for t, c in s.history]})
    best, default = result.model_latency("best"), result.model_latency("default")
    return {"run": result.run, "trials": result.trials, "seconds": result.seconds, "finished": result.finished,
            "model": {"default_s": default if math.isfinite(default) else None,
                      "best_s": best if math.isfinite(best) else None,
                      "speedup": default / best if math.isfinite(best) and math.isfinite(default) else None},
            "cost_model": result.spearman, "tasks": tasks,
            "algorithms": [_algorithm_row(r) for r in getattr(result, "algorithms", [])]}


def _algorithm_row(r: dict) -> dict:
    from minimlir.tuning.database import algorithm_speedup, best_times

    return {"conv": r.get("conv"), "signature": r.get("signature"), "weight": r.get("weight", 1),
            "default": r.get("default"), "choice": r.get("choice"), "times_s": best_times(r.get("times", {})),
            "errors": r.get("errors", {}), "speedup": algorithm_speedup(r)}


def _markdown(s: dict) -> str:
    m = s["model"]
    lines = [f"# mini-tune run {s['run']}", "",
             f"{s['trials']} trials in {s['seconds']:.0f} s ({'finished' if s['finished'] else 'interrupted'}).",
             "", "| whole model | default ms | tuned ms | speedup |", "|---|---:|---:|---:|",
             f"| sum of weight x kernel latency | {_fmt_ms(m['default_s'] or math.inf)} | "
             f"{_fmt_ms(m['best_s'] or math.inf)} | {_fmt_x(m['speedup'])} |", "",
             "| task | rule | weight | trials | default ms | tuned ms | speedup | GFLOP/s |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for t in s["tasks"]:
        mark = "*" if t.get("cold_args") else ""
        lines.append(f"| {t['name']}{mark} | {t['rule']} | {t['weight']} | {t['trials']} | "
                     f"{_fmt_ms(t['default_s'] or math.inf)} | {_fmt_ms(t['best_s'] or math.inf)} | "
                     f"{_fmt_x(t['speedup'])} | "
                     f"{format(t['best_gflops'], '.2f') if t['best_s'] else '-'} |")
    if any(t.get("cold_args") for t in s["tasks"]):
        lines += ["", "\\* timed with its weights flushed from the caches before each call (`--cache-flush`): "
                  "the model's parameters exceed the last-level cache"]
    if s.get("algorithms"):
        lines += ["", "| conv | calls | default | choice | default ms | choice ms | speedup |",
                  "|---|---:|---|---|---:|---:|---:|"]
        for a in s["algorithms"]:
            t = a["times_s"]
            lines.append(f"| `{a['signature']}` | {a['weight']} | {a['default']} | {a['choice']} | "
                         f"{_fmt_ms(t.get(a['default'], math.inf))} | {_fmt_ms(t.get(a['choice'], math.inf))} | "
                         f"{_fmt_x(a['speedup'])} |")
    if s["cost_model"]:
        lines += ["", "| cost model fit: samples | held-out Spearman |", "|---:|---:|"]
        lines += [f"| {h['samples']} | {h['spearman']:.3f} |" for h in s["cost_model"]]
    return "\n".join(lines) + "\n"


def _plot(result, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a1, a2) = plt.subplots(1, 2, figsize=(12, 4.5))
    for s in result.tasks:
        pts = [(t, c * 1e3) for t, c in s.history if math.isfinite(c)]
        if pts:
            a1.plot(*zip(*pts), marker=".", label=s.task.name[:28])
    a1.set_xlabel("trials of the task")
    a1.set_ylabel("best latency (ms)")
    a1.set_yscale("log")
    a1.set_title("per task")
    if len(result.tasks) <= 12:
        a1.legend(fontsize=7)
    # whole model: after every batch (in order of the global trial count)
    events = sorted(((t_global, s) for s in result.tasks for t_global in getattr(s, "global_trials", [])),
                    key=lambda e: e[0])
    xs, ys = [], []
    cur = {id(s): math.inf for s in result.tasks}
    for s in result.tasks:
        s._hist_iter = iter(s.history)
    for t_global, s in events:
        _, c = next(s._hist_iter)
        cur[id(s)] = c
        total = sum(x.task.weight * cur[id(x)] for x in result.tasks)
        if math.isfinite(total):
            xs.append(t_global)
            ys.append(total * 1e3)
    a2.plot(xs, ys, marker=".", color="black")
    a2.set_xlabel("trials (all tasks)")
    a2.set_ylabel("sum of weight x best latency (ms)")
    a2.set_title("whole model")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def write_report(result, directory: str | Path, wall: float) -> dict[str, str]:
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    s = summary(result)
    s["wall_seconds"] = wall
    (d / "summary.json").write_text(json.dumps(s, indent=1))
    (d / "summary.md").write_text(_markdown(s))
    paths = {"json": str(d / "summary.json"), "markdown": str(d / "summary.md")}
    try:
        _plot(result, d / "tuning.png")
        paths["png"] = str(d / "tuning.png")
    except ImportError:
        pass
    return paths
