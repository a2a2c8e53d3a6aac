"""Per-conv algorithm choice: direct, Winograd F(2x2, 3x3) or F(4x4, 3x3), measured (TVM's op
strategies, with the Winograd tile as one more knob).

    mini-tune model.onnx --db tune.jsonl --budget 10m     # first measures the algorithms, then the kernels
    mini-opt m.mlir -p 'graph-winograd{tuning-db=tune.jsonl}'

graph-winograd's default choice is a heuristic (channel and pixel thresholds, F(4x4) from 28x28
on) tuned on one machine; where it is wrong depends on the CPU and the shape (one thread on Zen 1:
512 channels at 7x7 stays direct by default but F(4x4) is 1.16x faster; on Zen 4 direct is right
there, F(4x4) 1.68x slower, while SqueezeNet's 16-64-channel convs, under the default's 64-channel
threshold, run 1.4-2.0x faster as Winograd: the model 1.23x). `mini-tune` settles it by
measurement, before it tunes kernels (within 30% of the budget, tuner.ALGORITHM_SHARE):

  * the convs: the model runs through the `compile` pipeline up to graph-winograd; every conv
    Winograd can compute (`winograd.eligible` without the size thresholds) is one, keyed by its
    signature (input, weight and result types, pads, output block: what the rewrite depends on),
    with its call count (`extract_convs`);
  * the measurement: a conv alone (its weight a random `graph.param`, so the filter transform is
    lifted and not timed, as in the model) is compiled once per algorithm and timed in an isolated
    child process with a timeout (`measure_conv`): a warm-up, every algorithm's output checked
    against the direct conv's (WRONG_RESULT), then `rounds` interleaved rounds of repeats of at least
    `min_repeat_ms` each, the thread count pinned. The fastest wins unless the default is within
    TIE of it (the default keeps its ties);
  * cold weights: where the model's parameters exceed the last-level cache (`cache_flush`, as for
    kernels, tuning/task.py) each timed call first flushes the weights, bound and lifted, from
    the caches: F(4x4)'s transformed filter is 4x the direct one's, and in such a model it comes
    from memory on every run;
  * one `"kind": "algorithm"` record per conv and CPU (tuning/database.py): every algorithm's times,
    the choice and the default;
  * at compile time (`stamp`: `compile(tuning_db=…)` runs it right before graph-winograd) each conv
    with a record for this CPU (exact CPU, then its ISA class) gets the choice as its
    `graph.algorithm` attribute, which graph-winograd honours over its heuristic. The kernels are
    then extracted, tuned and applied from the model compiled with the chosen algorithms.
"""

from __future__ import annotations

import hashlib
import math
import multiprocessing
import time
from dataclasses import dataclass
from typing import Any

from xdsl.dialects.builtin import ModuleOp, StringAttr

from minimlir.passes.graph.winograd import ALGORITHMS, ATTR  # the pass owns the attribute

TIE = 0.02
"""The default algorithm keeps its place unless another is more than this share faster."""


@dataclass
class ConvTask:
    """One conv signature of a model: what graph-winograd's rewrite depends on, and how to time it."""

    key: str
    signature: str
    text: str                    # a module with the conv alone: @main(%x) with params "w" (and "b")
    input_shape: list[int]
    weight_shape: list[int]
    bias: bool
    candidates: list[str]
    default: str
    weight: int = 1              # calls per model run
    flops: float = 0.0           # of the direct conv
    cold: bool = False           # time it with its weights flushed from the caches (tuning/task.py)

    def __str__(self) -> str:
        return (f"conv {'x'.join(map(str, self.weight_shape))} on {'x'.join(map(str, self.input_shape))}"
                f" x{self.weight} (default {self.default}){', weights flushed' if self.cold else ''}")


def _shape(t) -> list[int]:
    return [int(d) for d in t.get_shape()]


def signature(op) -> str:
    """What graph-winograd's rewrite of `op` depends on, as text (the types print the layout)."""
    bias = str(op.bias.type) if op.bias is not None else "-"
    return (f"conv2d {op.input.type} {op.weight.type} {bias} -> {op.result.type} pads {list(op.pads.get_values())}"
            f" block {op.block.value.data}")


def conv_key(op) -> str:
    return hashlib.sha256(signature(op).encode()).hexdigest()[:20]


def candidates(op) -> list[str]:
    """The algorithms `op` can run as: the direct conv, and Winograd's where it is structurally
    possible (graph-winograd's conditions without its size thresholds)."""
    from minimlir.passes.graph.winograd import eligible

    return list(ALGORITHMS) if eligible(op, min_channels=1, min_pixels=1) else ["direct"]


def default_choice(op) -> str:
    """graph-winograd's own choice for `op` (its heuristic, default options)."""
    from minimlir.passes.graph.winograd import auto_tile, eligible

    if not eligible(op):
        return "direct"
    return {t: n for n, t in ALGORITHMS.items()}[auto_tile(op)]


def convs_of(module: ModuleOp) -> list:
    from minimlir.dialects import graph

    return [o for o in module.walk() if isinstance(o, graph.Conv2dOp)]


def conv_module_text(op) -> str:
    """A module holding `op` alone: `@main(%x) -> conv(%x, param "w"[, param "b"])`."""
    from xdsl.dialects import func
    from xdsl.ir import Block, Region

    from minimlir.dialects import graph
    from minimlir.frontend.api import ir_text

    block = Block(arg_types=[op.input.type])
    w = graph.ParamOp("w", op.weight.type)
    mapping = {op.input: block.args[0], op.weight: w.result}
    ops: list = [w]
    if op.bias is not None:
        b = graph.ParamOp("b", op.bias.type)
        mapping[op.bias] = b.result
        ops.append(b)
    conv = op.clone(value_mapper=mapping)
    conv.attributes.pop(ATTR, None)
    conv.result.name_hint = "y"
    block.args[0].name_hint = "x"
    block.add_ops([*ops, conv, func.ReturnOp(conv.result)])
    fn = func.FuncOp("main", ((op.input.type,), (op.result.type,)), Region(block))
    return ir_text(ModuleOp([fn]))


def _split_at_winograd() -> tuple[str, str]:
    """The `compile` pipeline's passes before graph-winograd (what brings the convs to the form
    graph-winograd sees), and the rest from graph-winograd on."""
    from minimlir.compiler.pipelines import expand

    steps = expand("compile").split(",")
    i = steps.index("graph-winograd")
    return ",".join(steps[:i]), ",".join(steps[i:])


def _before_winograd() -> str:
    return _split_at_winograd()[0]


def measure_pipeline() -> str:
    """The `compile` pipeline from graph-winograd on: a ConvTask's module is already what
    graph-winograd sees (its layout chosen in the model); graph-layout must not choose again."""
    return _split_at_winograd()[1]


def extract_convs(model: Any, *, params=None, cache_flush: str = "auto") -> list[ConvTask]:
    """The unique convs of `model` with more than one candidate algorithm, heaviest first.
    `cache_flush` (auto | on | off, as for kernels: tuning/task.py) sets `cold`."""
    from minimlir.frontend import api
    from minimlir.tuning import task as _task

    ctx = api.make_context()
    loaded = api.load(model, params=params, ctx=ctx)
    module = loaded.module
    if not api.graph_level(module):
        return []
    api.lower(module, _before_winograd(), ctx=ctx, name=loaded.name, source_text=loaded.text)
    cold = _task.weights_cold(cache_flush, _task.param_args(module)[1])
    out: dict[str, ConvTask] = {}
    for op in convs_of(module):
        cands = candidates(op)
        if len(cands) < 2:
            continue
        key = conv_key(op)
        if key in out:
            out[key].weight += 1
            continue
        out[key] = ConvTask(key=key, signature=signature(op), text=conv_module_text(op),
                            input_shape=_shape(op.input.type), weight_shape=_shape(op.weight.type),
                            bias=op.bias is not None, candidates=cands, default=default_choice(op),
                            flops=2.0 * math.prod(_shape(op.weight.type)) * math.prod(_shape(op.result.type)[2:4])
                            * _shape(op.result.type)[0], cold=cold)
    return sorted(out.values(), key=lambda c: -c.weight * c.flops)


def stamp(module: ModuleOp, db, cpu: dict) -> tuple[int, int]:
    """Give every conv of `module` with an algorithm record for `cpu` its choice (`graph.algorithm`).
    Returns (convs stamped, convs with a choice to make)."""
    stamped = total = 0
    for op in convs_of(module):
        if ATTR in op.attributes or len(candidates(op)) < 2:
            continue
        total += 1
        rec = db.algorithm(conv_key(op), cpu)
        if rec is not None and rec.get("choice") in ALGORITHMS:
            op.attributes[ATTR] = StringAttr(rec["choice"])
            stamped += 1
    return stamped, total


# ---------------------------------------------------------------- measuring (an isolated child process)


@dataclass
class AlgorithmResult:
    times: dict[str, list[float]]       # per algorithm: seconds per call, one per round
    errors: dict[str, str]              # per failed algorithm: "BUILD_ERROR: …" etc.
    choice: str
    seconds: float = 0.0


def decide(times: dict[str, list[float]], default: str) -> str:
    """The fastest algorithm, unless the default is within TIE of it."""
    from minimlir.tuning.database import best_times

    best = best_times(times)
    if not best:
        return default
    fastest = min(best, key=best.get)  # type: ignore[arg-type]
    if default in best and best[default] <= best[fastest] * (1 + TIE):
        return default
    return fastest


def _child(conn, text: str, input_shape, weight_shape, bias: bool, algos: list[str], threads: int,
           seed: int, min_repeat_ms: float, rounds: int, cold: bool = False) -> None:
    """Compile `text` once per algorithm, check against the direct conv, time interleaved rounds
    (`cold`: each call after flushing the model's weights, bound and lifted, from the caches)."""
    import os
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the tuner's: it kills this process
    os.environ["OMP_NUM_THREADS"] = str(threads)
    import numpy as np

    from minimlir.frontend import compile as compile_model

    rng = np.random.default_rng(seed)
    x = rng.standard_normal(input_shape, dtype=np.float32)
    params = {"w": (rng.standard_normal(weight_shape) / np.sqrt(np.prod(weight_shape[1:]))).astype(np.float32)}
    if bias:
        params["b"] = rng.standard_normal(weight_shape[:1], dtype=np.float32)
    models, outs, errors = {}, {}, {}
    for a in algos:
        try:
            m = compile_model(with_algorithm(text, a), pipeline=measure_pipeline(), params=params,
                              num_threads=threads, cache=False)
        except Exception as e:  # a compile error is a result, not the end of tuning
            errors[a] = f"BUILD_ERROR: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
            continue
        try:
            outs[a] = np.asarray(m(x)[0])
        except Exception as e:
            errors[a] = f"RUN_ERROR: {type(e).__name__}: {e}"
            continue
        models[a] = m
    ref = outs.get("direct")
    for a in list(models):
        if ref is None or a == "direct":
            continue
        tol = 1e-3 * max(1.0, float(np.abs(ref).max()))
        if outs[a].shape != ref.shape or not np.allclose(outs[a], ref, rtol=1e-3, atol=tol):
            errors[a] = f"WRONG_RESULT: max abs difference {float(np.abs(outs[a] - ref).max()):.3g}"
            del models[a]
    from minimlir.tuning.runner import flusher, timed_repeats

    repeat = {a: timed_repeats(lambda m=m: m(x), flusher(m.program.param_arrays()) if cold else None)
              for a, m in models.items()}
    # calls per repeat: one repeat (its flushes too) lasts at least min_repeat_ms
    number = {a: max(1, int(math.ceil(min_repeat_ms / 1e3 / max(repeat[a](1)[1], 1e-6)))) for a in models}
    times: dict[str, list[float]] = {a: [] for a in models}
    for _ in range(rounds):
        for a in models:
            times[a].append(repeat[a](number[a])[0] / number[a])
    conn.send({"times": times, "errors": errors})
    conn.close()


def with_algorithm(text: str, algo: str) -> str:
    """A ConvTask's module text with its conv stamped `graph.algorithm = algo`."""
    from minimlir.frontend.api import ir_text, parse_mlir

    m = parse_mlir(text, "<conv>")
    for op in convs_of(m):
        op.attributes[ATTR] = StringAttr(algo)
    return ir_text(m)


def measure_conv(conv: ConvTask, *, threads: int = 1, seed: int = 0, min_repeat_ms: float = 40.0,
                 rounds: int = 5, timeout: float = 300.0) -> AlgorithmResult:
    """Time `conv` under each of its candidate algorithms in a spawned child (see the docstring)."""
    t0 = time.time()
    mp = multiprocessing.get_context("spawn")
    parent, child = mp.Pipe(duplex=False)
    proc = mp.Process(target=_child, args=(child, conv.text, conv.input_shape, conv.weight_shape, conv.bias,
                                           conv.candidates, threads, seed, min_repeat_ms, rounds, conv.cold),
                       daemon=True)
    proc.start()
    child.close()
    out = None
    try:
        if parent.poll(timeout):
            out = parent.recv()
    except (EOFError, OSError):
        out = None
    finally:
        if proc.is_alive():
            proc.kill()
        proc.join(5)
        parent.close()
    if out is None:
        why = "RUN_TIMEOUT" if proc.exitcode is None or proc.exitcode == -9 else f"RUN_ERROR: exit code {proc.exitcode}"
        return AlgorithmResult({}, {a: why for a in conv.candidates}, conv.default, time.time() - t0)
    times = {a: t for a, t in out["times"].items() if t}
    return AlgorithmResult(times, out["errors"], decide(times, conv.default), time.time() - t0)


def make_record(conv: ConvTask, res: AlgorithmResult, cpu: dict, run: str = "", threads: int = 1) -> dict:
    from minimlir.tuning.database import VERSION, compiler_version, now

    return {"v": VERSION, "kind": "algorithm", "conv": conv.key, "signature": conv.signature,
            "cpu": dict(cpu), "times": res.times, "errors": res.errors, "choice": res.choice,
            "default": conv.default, "threads": threads, "weight": conv.weight, "flops": conv.flops,
            "run": run, "time": now(), "compiler": compiler_version(), "seconds": round(res.seconds, 3),
            **({"cold": True} if conv.cold else {})}
