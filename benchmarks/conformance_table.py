"""The per-op table of a `conformance.py --only node --all` run, as markdown, from its log (its
stdout), so a run stopped early (or still going) gives its numbers too.

    python benchmarks/conformance.py --only node --all --shuffle 14 -j 3 > run.log
    python benchmarks/conformance_table.py run.log --command "..." > benchmarks/results/conformance-node.md

Cases minimlir rejects statically (`check_support`) are not in the log; they are collected again
here. A case minimlir has not run yet (the run stopped, or is still going) is "not run": the
summary then adds a projection, the pass rate of the cases run (a fair sample with `--shuffle`)
times the cases not run.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import conformance as C  # noqa: E402

LINE = re.compile(r"^\[\d+/\d+\] (\w+)\s+node/(\S+)( \[onnxruntime\])? [\d.]+s(?: \((.*)\))?$")


def parse_log(text: str) -> tuple[dict[str, tuple[str, str]], dict[str, tuple[str, str]]]:
    """(minimlir's results, onnxruntime's results): case name -> (status, message)."""
    ours: dict[str, tuple[str, str]] = {}
    theirs: dict[str, tuple[str, str]] = {}
    for line in text.splitlines():
        m = LINE.match(line.rstrip())
        if m:
            status, name, ort, message = m.group(1).lower(), m.group(2), m.group(3), m.group(4) or ""
            (theirs if ort else ours)[name] = (status, message)
    return ours, theirs


def build(log: str, command: str) -> str:
    ours, theirs = parse_log(log)
    everything, unsupported = C.collect_all_node_cases(None)
    static = {r.name: r for r in unsupported}
    names = C._op_names()
    mini: list[C.Result] = []
    ort: list[C.Result] = []
    not_run: list[str] = []
    for case, _ in everything:
        if case.name in theirs:
            s, msg = theirs[case.name]
            ort.append(C.Result("node", case.name, s, msg, ops=case.ops, backend="onnxruntime"))
        if case.name in static:
            mini.append(static[case.name])
        elif case.name in ours:
            s, msg = ours[case.name]
            mini.append(C.Result("node", case.name, s, msg, ops=case.ops))
        else:
            not_run.append(case.name)
    total = len(everything)
    run = [r for r in mini if r.name not in static]
    passed = sum(r.status == "pass" for r in mini)
    passed_ort = sum(r.status == "pass" for r in ort)
    ort_by = {r.name: r for r in ort}
    lines = ["# ONNX node conformance: minimlir and onnxruntime, every node case", "",
             f"Command: `{command}`", "",
             f"- node cases (all the onnx package ships): {total}",
             f"- onnxruntime passes **{passed_ort}** of {len(ort)} run"
             + ("" if len(ort) == total else f" ({total - len(ort)} not run)"),
             f"- minimlir passes **{passed}**: {len(static)} rejected at import (statically), "
             f"{len(run)} run, {len(not_run)} not run yet"]
    if not_run:
        rate = sum(r.status == "pass" for r in run) / max(1, len(run))
        lines.append(f"- projection for the {len(not_run)} not run at the run cases' pass rate "
                     f"({rate:.3f}): {passed + rate * len(not_run):.0f}")
    both = sum(r.status == "pass" and ort_by.get(r.name) is not None and ort_by[r.name].status == "pass"
               for r in mini)
    lines.append(f"- both pass {both}; only minimlir {passed - both}; only onnxruntime {passed_ort - both}")
    lines += ["", "Per op, where minimlir does not pass every case (cases, minimlir's and onnxruntime's "
              "passes, why minimlir's others fail, the most common reason):", "",
              "| op | cases | minimlir | onnxruntime | unsupported op | unsupported variant | wrong result "
              "| error | not run | top reason |", "|---|---|---|---|---|---|---|---|---|---|"]
    rows: dict[str, dict] = {}
    results = {r.name: r for r in mini}
    for case, _ in everything:
        op = C.case_op(case.name, case.ops, names)
        row = rows.setdefault(op, {"op": op, "cases": 0, "ours": 0, "ort": 0, "gap": 0, "not run": 0,
                                   **{w: 0 for w in C.WHY}, "reasons": {}})
        row["cases"] += 1
        o = ort_by.get(case.name)
        ok_o = o is not None and o.status == "pass"
        row["ort"] += ok_o
        r = results.get(case.name)
        if r is None:
            row["not run"] += 1
            continue
        if r.status == "pass":
            row["ours"] += 1
            continue
        w = C.why_not(r)
        row[w] += 1
        row["gap"] += ok_o
        reason = re.sub(r"\d+(\.\d+)?(e-?\d+)?", "N", r.message.split(" | ")[0])[:110].replace("|", "/")
        row["reasons"][f"{w}: {reason}"] = row["reasons"].get(f"{w}: {reason}", 0) + 1
    table = sorted((r for r in rows.values() if r["ours"] < r["cases"]),
                   key=lambda r: (-r["gap"], -(r["cases"] - r["ours"]), r["op"]))
    for r in table:
        top = max(r["reasons"].items(), key=lambda kv: kv[1])[0] if r["reasons"] else ""
        lines.append(f"| {r['op']} | {r['cases']} | {r['ours']} | {r['ort']} | {r['unsupported op']} | "
                     f"{r['unsupported variant']} | {r['wrong result']} | {r['error']} | {r['not run']} | {top} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("log", help="the stdout of a conformance.py --only node --all run")
    p.add_argument("--command", default="python benchmarks/conformance.py --only node --all",
                   help="the command of that run (printed at the top)")
    args = p.parse_args(argv)
    path = Path(args.log)
    if not path.is_file():
        print(f"error: {path}: no such file", file=sys.stderr)
        return 1
    sys.stdout.write(build(path.read_text(), args.command))
    return 0


if __name__ == "__main__":
    sys.exit(main())
