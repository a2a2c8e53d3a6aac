"""Applying a record database at compile time: each kernel gets the best record's knobs.

    compile("model.onnx", tuning_db="tune.jsonl")          # minimlir.frontend.compile
    mini-run model.onnx --tuning-db tune.jsonl
    mini-opt k.mlir -p 'loop-schedule{tuning-db=tune.jsonl}'

Before graph-winograd, `stamp_algorithms(module, db)` gives each conv with an algorithm record for
this CPU its measured choice (direct or Winograd F(2x2) / F(4x4); tuning/algorithms.py).
`apply_records(module, db)` runs after the graph-level prefix (fusion, legalization, kernel fusion)
and before `loop-schedule`: for every kernel it computes the task key (tuning/task.py) and looks up
the best record for this CPU (exact CPU, then the same ISA class; tuning/database.py); a hit is
attached as the kernel's `loop.schedule_knobs`, which the default schedule reads. A kernel without
an applicable record keeps the default schedule, and so does a kernel whose best record is the
default schedule's own (candidate 0, or a confirmation the default won): its knob values are the
ones the default rule chose for the task alone, which need not be the ones it chooses in the model.
The result is one summary line, never a warning per kernel: "tuning: 42 of 53 kernels, 4 of 4
conv algorithms from tune.jsonl (5 keep the default schedule, their best)" (the convs only where
the model has a conv with a choice to make).
"""

from __future__ import annotations

import hashlib
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from xdsl.dialects.builtin import ModuleOp

from minimlir.runtime.errors import MinimlirError


class TuningDbError(MinimlirError, FileNotFoundError):
    """The database named by tuning_db= / --tuning-db cannot be used (missing, unreadable)."""


@dataclass
class ApplySummary:
    db: str
    applied: int = 0
    kernels: int = 0
    skipped_lines: int = 0
    kept_default: int = 0
    by_kernel: dict[str, dict] = field(default_factory=dict)
    algorithms: int = 0   # convs given a measured algorithm (tuning/algorithms.py)
    convs: int = 0        # convs with more than one candidate algorithm
    kernels_done: bool = True  # False: only the algorithms were applied (graph-winograd{tuning-db=…})

    def line(self) -> str:
        notes = ([f"{self.kept_default} keep the default schedule, their best"] if self.kept_default else []) + (
            [f"{self.skipped_lines} corrupt line(s) skipped"] if self.skipped_lines else [])
        note = f" ({'; '.join(notes)})" if notes else ""
        parts = ([f"{self.applied} of {self.kernels} kernels"] if self.kernels_done else []) + (
            [f"{self.algorithms} of {self.convs} conv algorithms"] if self.convs or not self.kernels_done else [])
        return f"tuning: {', '.join(parts)} from {self.db}{note}"


_FINGERPRINT: dict | None = None


def host_fingerprint() -> dict:
    global _FINGERPRINT
    if _FINGERPRINT is None:
        from minimlir.tuning.measure import cpu_fingerprint

        _FINGERPRINT = cpu_fingerprint()
    return _FINGERPRINT


def open_db(path: str | os.PathLike):
    from minimlir.tuning.database import Database

    p = Path(path)
    if not p.is_file():
        raise TuningDbError(f"tuning database '{path}': no such file")
    return Database(p)


def apply_records(module: ModuleOp, db_path: str | os.PathLike, cpu: dict | None = None) -> ApplySummary:
    """Attach the best record's knobs to every kernel of `module` that has one (see the docstring)."""
    from minimlir.passes.loop.schedule.default.knobs import read_assignment, set_assignment
    from minimlir.tuning.task import bind_time_kernels, kernels_of, structural_key

    db = open_db(db_path)
    db.records()
    cpu = cpu or host_fingerprint()
    s = ApplySummary(str(db_path), skipped_lines=db.skipped)
    once = bind_time_kernels(module)
    for k in kernels_of(module):
        if k.sym_name.data in once:
            continue
        s.kernels += 1
        if read_assignment(k) is not None:  # already given (a hand-written or replayed assignment)
            continue
        key = structural_key(k)
        rec = db.best(key, cpu)
        if rec is not None and (rec.get("default") or rec.get("knobs") == db.default_knobs(key, cpu)):
            # the default schedule measured best: the kernel keeps the schedule the default rule
            # gives it here, in the model. Pinning the record's knobs would at best reproduce it:
            # they are the values the default took on the task alone (scheduled standalone, its
            # dynamic dims at the tuned sizes), which is all the measurement vouches for
            s.kept_default += 1
            continue
        if rec is not None:
            set_assignment(k, rec["knobs"])
            s.applied += 1
            s.by_kernel[k.sym_name.data] = rec
    return s


def stamp_algorithms(module: ModuleOp, db_path: str | os.PathLike, cpu: dict | None = None) -> ApplySummary:
    """Give every conv of `module` (before graph-winograd) its recorded algorithm (tuning/algorithms.py)."""
    from minimlir.tuning.algorithms import stamp

    db = open_db(db_path)
    db.records()
    s = ApplySummary(str(db_path), skipped_lines=db.skipped, kernels_done=False)
    s.algorithms, s.convs = stamp(module, db, cpu or host_fingerprint())
    return s


class TuningHook:
    """What `compile(tuning_db=…)` runs once the prefix is done: apply_records plus the summary."""

    def __init__(self, db_path: str | os.PathLike):
        self.db = open_db(db_path)
        self.path = str(db_path)
        self.summary: ApplySummary | None = None
        self.algorithms: ApplySummary | None = None

    def cache_tag(self) -> str:
        """The database's content hash and this CPU, for the compile cache key."""
        h = hashlib.sha256(self.db.path.read_bytes()).hexdigest()[:16]
        fp = host_fingerprint()
        return f"#tuning-db={h}:{fp['cpu']}"

    def before_winograd(self, module: ModuleOp) -> None:
        """Before graph-winograd: each conv with an algorithm record gets the measured choice."""
        if self.algorithms is None:
            self.algorithms = stamp_algorithms(module, self.path)

    def hooks(self) -> dict:
        """The pass manager hooks (`before` of frontend.api.lower): pass name -> call."""
        return {"graph-winograd": self.before_winograd, "loop-schedule": self}

    def __call__(self, module: ModuleOp) -> None:
        if self.summary is None:  # once: the split lowering may fall back to the sequential one
            self.summary = apply_records(module, self.path)
            if self.algorithms is not None:
                self.summary.algorithms, self.summary.convs = self.algorithms.algorithms, self.algorithms.convs

    def report(self, remarks: list[str] | None = None, stream=None) -> str | None:
        """Print the summary line once (to stderr); from the cached remarks on a cache hit."""
        line = self.summary.line() if self.summary is not None else next(
            (r for r in (remarks or []) if r.startswith("tuning: ")), None)
        if line is not None:
            print(line, file=stream or sys.stderr)
        return line
