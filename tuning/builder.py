"""Candidate builds inside long-lived pool workers, with the parsed task kept in memory.

    r = build(task.to_json(), assignment)     # {"error", "seconds", "features", "object", "metadata", ...}
    f = features(task.to_json(), assignment)  # the feature vector only (schedule, no lowering), or None

A build worker (tuning/measure.py's process pool, alive for a whole tuning run) parses each task's
candidate module once (`candidate_text(task, None)`: the kernel and a public `main` calling it) and
keeps it; a candidate is a clone with its knob assignment attached. Building it runs exactly what
`compile(candidate_text(task, a), pipeline=CANDIDATE_PIPELINE)` runs, without the text round trip:
`loop-schedule` in two halves (the pass with `lower=false`, then `lower_scheduled` with the pass's
own width: what the pass does with `lower=true`), the features taken on the scheduled nest between
them, the rest of the pipeline through the driver (`api.lower`), then LLVM -O3 on the worker's one
target machine. The result is the object code (bytes, not a cache entry) plus the runtime metadata
of `main`, which the measuring process (tuning/runner.py) loads directly: no parse, no pass and no
cache lookup on the measuring side. Assignments that schedule to the same loop nest (a knob
value the rule treats like another, a knob of a rule part this kernel lacks) make the same code:
the worker keys the object by the printed scheduled nest and lowers and compiles each nest once.
A scoring job (`scored`, `features`) stops after the schedule; it returns the vector and that
key, so the search can skip a candidate whose code was measured already (LocalExecutor.unique).
The worker keeps the nests it scheduled for scoring (the last MAX_SCHEDULED): the executor sends
the build of a scored candidate to the worker that scored it, which starts at the lowering.
"""

from __future__ import annotations

import gc
import hashlib
import json
import time
from collections import OrderedDict
from typing import Any

from minimlir.tuning.task import Task

def _rest_pipeline() -> str:
    from minimlir.tuning.measure import CANDIDATE_PIPELINE

    first, _, rest = CANDIDATE_PIPELINE.partition(",")
    assert first == "loop-schedule", CANDIDATE_PIPELINE
    return rest


REST_PIPELINE = _rest_pipeline()
"""CANDIDATE_PIPELINE (tuning/measure.py) after its first pass, loop-schedule."""

MAX_TASKS = 64      # parsed tasks a worker keeps (least recently used goes)
MAX_FEATURES = 4096  # remembered feature vectors per worker
MAX_OBJECTS = 256    # remembered object codes per worker (by scheduled loop nest)
MAX_SCHEDULED = 32   # scheduled nests kept from scoring for the build that may follow

_tasks: OrderedDict[str, tuple[Task, Any, dict]] = OrderedDict()
_features: OrderedDict[str, list[float]] = OrderedDict()
_objects: OrderedDict[str, tuple[bytes, list[str]]] = OrderedDict()
_scheduled_nests: OrderedDict[str, tuple[Any, Any, list[float], str]] = OrderedDict()
_tm = None
stats = {"parses": 0, "builds": 0, "object_hits": 0, "feature_jobs": 0, "feature_hits": 0, "schedule_hits": 0}
"""What this worker did (for tests and profiling)."""


def _task_id(task_json: dict) -> str:
    """The task's identity for the caches: its kernel text and concrete shapes (the structural key
    alone is shared by kernels that differ only in names, and measured shapes may differ too)."""
    h = hashlib.sha256(task_json["kernel_text"].encode())
    h.update(json.dumps([task_json["shapes"], task_json["dtypes"], task_json["num_outputs"]]).encode())
    return h.hexdigest()[:24]


def _prepared(task_json: dict) -> tuple[Task, Any, dict]:
    """(task, pristine parsed candidate module, metadata of its `main`), parsed once per worker."""
    tid = _task_id(task_json)
    hit = _tasks.get(tid)
    if hit is not None:
        _tasks.move_to_end(tid)
        return hit
    from minimlir.backend.runtime import collect_metadata
    from minimlir.frontend.api import parse_mlir
    from minimlir.tuning.measure import candidate_text

    task = Task.from_json(task_json)
    module = parse_mlir(candidate_text(task, None), f"<task {task.name}>")
    stats["parses"] += 1
    entry = (task, module, collect_metadata(module, "main"))
    _tasks[tid] = entry
    while len(_tasks) > MAX_TASKS:
        _tasks.popitem(last=False)
    # the imports and the parsed task stay for the worker's life: out of the cyclic collector's
    # way, so its full collections scan a candidate's objects only, not everything loaded
    gc.collect()
    gc.freeze()
    return entry


def _scheduled(task_json: dict, assignment: dict | None):
    """A fresh clone of the task's module with `assignment`, through the first half of
    loop-schedule: (module, the pass, the feature vector)."""
    from minimlir.frontend.api import make_context
    from minimlir.passes.loop.schedule import LoopSchedulePass
    from minimlir.passes.loop.schedule.default.knobs import set_assignment
    from minimlir.tuning.features import kernel_features
    from minimlir.tuning.task import kernels_of

    task, base, _ = _prepared(task_json)
    module = base.clone()
    if assignment is not None:
        set_assignment(kernels_of(module)[0], assignment)
    schedule = LoopSchedulePass(lower=False)
    schedule.apply(make_context(), module)
    feats = kernel_features(kernels_of(module)[0], task.shapes, assignment)
    _remember(task_json, assignment, feats)
    return module, schedule, feats


def _fkey(task_json: dict, assignment: dict | None) -> str:
    return _task_id(task_json) + json.dumps(assignment, sort_keys=True)


def _remember(task_json: dict, assignment: dict | None, feats: list[float]) -> None:
    _features[_fkey(task_json, assignment)] = feats
    while len(_features) > MAX_FEATURES:
        _features.popitem(last=False)


def code_key(task_json: dict, module, width: int) -> str:
    """What the candidate's code depends on: the task, the scheduled loop nest (printed) and the width."""
    from minimlir.frontend.api import ir_text

    return _task_id(task_json) + hashlib.sha256(f"{width}\n{ir_text(module)}".encode()).hexdigest()[:24]


def scored(task_json: dict, assignment: dict | None) -> tuple[list[float] | None, str | None]:
    """For scoring: (feature vector, code key), or (None, None) if the candidate cannot be scheduled."""
    from minimlir.compiler.pass_manager import fewer_gc_passes

    stats["feature_jobs"] += 1
    try:
        with fewer_gc_passes():
            module, schedule, feats = _scheduled(task_json, assignment)
            ck = code_key(task_json, module, schedule.config().width)
    except Exception:  # noqa: BLE001 - an unschedulable candidate scores nothing
        return None, None
    # the search builds the best scored candidates next, on this worker (LocalExecutor._placement):
    # their scheduled nests are kept, so the build starts at the lowering
    _scheduled_nests[_fkey(task_json, assignment)] = (module, schedule, feats, ck)
    while len(_scheduled_nests) > MAX_SCHEDULED:
        _scheduled_nests.popitem(last=False)
    return feats, ck


def features(task_json: dict, assignment: dict | None) -> list[float] | None:
    """The candidate's feature vector (schedule only, nothing lowered); None if it cannot be scheduled."""
    stats["feature_jobs"] += 1
    hit = _features.get(_fkey(task_json, assignment))
    if hit is not None:
        stats["feature_hits"] += 1
        return hit
    try:
        return _scheduled(task_json, assignment)[2]
    except Exception:  # noqa: BLE001 - an unschedulable candidate scores nothing
        return None


def target_machine():
    """The worker's one -O3 host target machine (made on first use)."""
    global _tm
    if _tm is None:
        from minimlir.backend import _target

        _tm = _target.target_machine(3)
    return _tm


def codegen(module) -> tuple[bytes, list[str]]:
    """llvm-dialect module -> (object code, external symbols), as the JIT's codegen does it (the
    same translation and O3 pipeline), minus loading the object here."""
    from minimlir.backend import jit
    from minimlir.compiler.pass_manager import fewer_gc_passes
    from minimlir.dialects import llvm_ext as _llvm_ext

    _llvm_ext.install_llvmlite_hooks()
    with fewer_gc_passes():
        ir_text = jit.to_llvm_ir(module, copy=False)
    functions, variables = jit.declared_symbols(ir_text)
    jit.check_symbol_names(functions)
    objs, _ = jit.compile_split(ir_text, target_machine(), 3, parts=1, with_ir=False)
    return jit.pack_objects(objs), sorted(set(functions) | set(variables))


def build(task_json: dict, assignment: dict | None) -> dict:
    """Compile one candidate to object code; any failure is a BUILD_ERROR result, not an exception."""
    from minimlir.compiler.pass_manager import fewer_gc_passes
    from minimlir.tuning.measure import BUILD_ERROR

    t0 = time.perf_counter()
    try:
        with fewer_gc_passes():  # as the compile pipeline runs its passes (the schedule too here)
            out = _build(task_json, assignment)
    except Exception as e:  # noqa: BLE001 - any failure is a BUILD_ERROR result
        first = str(e).strip().splitlines()[0] if str(e).strip() else ""
        return {"error": BUILD_ERROR, "seconds": time.perf_counter() - t0, "message": f"{type(e).__name__}: {first}"}
    return dict(out, seconds=time.perf_counter() - t0)


def _build(task_json: dict, assignment: dict | None) -> dict:
    from minimlir.frontend.api import lower
    from minimlir.passes.loop.schedule import lower_scheduled
    from minimlir.tuning.measure import OK

    _, _, metadata = _prepared(task_json)
    kept = _scheduled_nests.pop(_fkey(task_json, assignment), None)
    if kept is not None:  # scheduled for scoring on this worker
        stats["schedule_hits"] += 1
        module, schedule, feats, ck = kept
    else:
        module, schedule, feats = _scheduled(task_json, assignment)
        ck = code_key(task_json, module, schedule.config().width)
    width = schedule.config().width
    hit = _objects.get(ck)
    if hit is not None:  # another assignment scheduled to the same loop nest: the same code
        _objects.move_to_end(ck)
        stats["object_hits"] += 1
        obj, externals = hit
    else:
        lower_scheduled(module, width)
        # no final verification: the IR comes from the same passes as the default's, and every
        # candidate's output is checked against the default's when it first runs (WRONG_RESULT)
        lower(module, REST_PIPELINE, name=f"<candidate {task_json['name']}>", verify=False)
        obj, externals = codegen(module)
        _objects[ck] = (obj, externals)
        while len(_objects) > MAX_OBJECTS:
            _objects.popitem(last=False)
    stats["builds"] += 1
    return {"error": OK, "features": feats, "object": obj, "metadata": metadata, "externals": externals,
            "code_key": ck}


def worker_stats() -> dict:
    """This worker's counters (a pool job, for tests)."""
    import os

    return dict(stats, pid=os.getpid())
