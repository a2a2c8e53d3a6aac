"""The default schedule's knobs, declared in one place: the search space the tuner explores.

Each schedule rule declares its knobs here (`RuleKnobs`: a name, legal values, and a legality check
over a whole assignment). The rule itself reads a knob where today it uses a constant or a
heuristic's choice:

    mr = choose("matmul.mr", mr)          # the heuristic's mr unless an assignment overrides it

`choose` returns the heuristic's value when no assignment is active, so the default schedule's
output is unchanged (tests/unit/loop/test_schedule_knobs.py checks byte-identical IR). An assignment
reaches a kernel as the attribute `loop.schedule_knobs` (a JSON object as a string) on its
`func.func`: it survives cloning, printing and the forked split lowering, and `knob_scope` removes
it when the kernel is scheduled. While `tracing()` is active every value a rule read is recorded
(name -> value, plus the facts a legality check needs, such as static extents): the trace of the
untouched default schedule is candidate 0 of the tuner, and its names say which knobs apply.

    loop.schedule_knobs = "{\"matmul.mr\": 4, \"matmul.nv\": 3}"

A new rule becomes tunable by declaring a `RuleKnobs` below and calling `choose` in the rule.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

KNOBS_ATTR = "loop.schedule_knobs"


@dataclass(frozen=True)
class Knob:
    """One knob: `name` ("rule.knob"), its legal values (in order), and what it means."""

    name: str
    values: tuple
    doc: str = ""


@dataclass(frozen=True)
class RuleKnobs:
    """The knobs of one rule and a legality check: `check(assignment, facts)` returns None when the
    assignment (knob name -> value, every knob of the rule) can be built, else the reason."""

    rule: str
    knobs: tuple[Knob, ...]
    check: Callable[[Mapping[str, Any], Mapping[str, Any]], str | None] = lambda a, f: None
    # the knobs `check` reads (None: all of them): the check runs when these are assigned, so
    # a knob added later (absent from older traces) does not switch the check off
    checked: tuple[str, ...] | None = None

    def knob(self, name: str) -> Knob:
        return next(k for k in self.knobs if k.name == name)


def _widths() -> tuple[int, ...]:
    from minimlir.passes.loop.schedule.default import host_vector_width

    return tuple(w for w in (4, 8, 16) if w <= host_vector_width())


def _regs() -> int:
    """Vector registers of the host (32 with AVX-512, else 16)."""
    from minimlir.passes.loop.schedule.default import host_vector_width

    return 32 if host_vector_width() >= 16 else 16


def _check_matmul(a: Mapping[str, Any], f: Mapping[str, Any]) -> str | None:
    mr, nv, w = a["matmul.mr"], a["matmul.nv"], a["matmul.width"]
    if w > f.get("matmul.fit_width", w):
        return f"width {w} does not fit the buffers' last dim"
    if mr * nv + nv + 1 > 2 * _regs():
        return f"register tile {mr}x{nv} vectors needs more than twice the {_regs()} registers"
    # whole_m: mc is all M rows (unknown without the kernel's facts: then taken as applying)
    whole = bool(a.get("matmul.whole_m")) and bool(f.get("matmul.whole_m_ok", True))
    if a["matmul.mc"] % mr and not whole:
        return f"mc {a['matmul.mc']} is not a multiple of mr {mr}"
    m, n = f.get("matmul.M"), f.get("matmul.N")
    if m is not None and mr > m:
        return f"mr {mr} > M {m}"
    if n is not None and nv * w > max(n, w):
        return f"nv*width {nv * w} > N {n}"
    chunks = a.get("matmul.col_chunks", 1)
    if chunks > 1 and not (f.get("matmul.one_row_block") or whole):
        return f"col_chunks {chunks}: only for one row block and no batch loop"
    if chunks > 1 and n is not None and (n % (nv * w) or n // (nv * w) < chunks):
        return f"col_chunks {chunks}: more chunks than the {n} columns' panels of {nv * w}, or a ragged panel"
    return None


def _check_conv(a: Mapping[str, Any], f: Mapping[str, Any]) -> str | None:
    nv, w, rw = a["conv2d.nv"], a["conv2d.width"], a["conv2d.rw"]
    co, ow = f.get("conv2d.CO"), f.get("conv2d.OW")
    if co is not None and co % (nv * w):
        return f"nv*width {nv * w} does not divide the {co} output channels"
    if ow is not None and rw > ow:
        return f"rw {rw} > OW {ow}"
    if f.get("conv2d.block") and w != f["conv2d.block"]:
        return f"width {w}: a channel-blocked conv's vector is its block of {f['conv2d.block']}"
    if rw * nv + nv + 1 > 2 * _regs():
        return f"register tile {rw}x{nv} vectors needs more than twice the {_regs()} registers"
    return None


def _declarations() -> dict[str, RuleKnobs]:
    widths = _widths()
    rules = [
        RuleKnobs("matmul", (
            Knob("matmul.mr", (1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16), "register tile rows"),
            Knob("matmul.nv", (1, 2, 3, 4, 5, 6), "register tile columns, in vectors"),
            Knob("matmul.width", widths, "f32 lanes of a vector"),
            Knob("matmul.mc", tuple(range(1, 257)) + tuple(range(264, 1025, 8)),
                 "rows per parallel chunk (a multiple of mr; the default splits M into an even number of chunks)"),
            Knob("matmul.kc", (8, 16, 32, 64, 128, 256, 512, 1024), "reduction tile"),
            Knob("matmul.one_pass", (False, True),
                 "the whole K in one reduction tile (the epilogue on the accumulator registers; by default "
                 "where B's K x nv*W panel fits L1)"),
            Knob("matmul.order", ("ikj", "ijk"), "loop order of the cache tiles: i0 k0 j0 or i0 j0 k0"),
            Knob("matmul.pack_b", (False, True), "copy B's tile into a local buffer (cache_read)"),
            Knob("matmul.inline_epilogue", (True, False),
                 "inline the elementwise consumers into one epilogue block (no intermediate buffers)"),
            Knob("matmul.epilogue_in_registers", (True, False),
                 "a one-pass reduction (K <= kc): start the accumulator at the init value and apply the "
                 "epilogue to it before its one store (no init nest, no buffer for the matmul's result)"),
            Knob("matmul.fuse_at", ("row_block", "col_panel"),
                 "where the epilogue runs: per mc x nv*W panel of C (order ijk only) or per row block"),
            Knob("matmul.clamp_rows", (True, False), "ragged row tiles read row min(i, M-1), staying in registers"),
            Knob("matmul.row_version", (True, False),
                 "dynamic M: a ragged row tile runs one row at a time (a run-time branch), not mr clamped rows"),
            Knob("matmul.split_cols", (True, False),
                 "static N not a multiple of nv*W: exact tiles for the full column panels, a guarded last one"),
            Knob("matmul.unroll_rows", (True, False), "unroll the register tile's rows"),
            Knob("matmul.parallel", (True, False), "run the row blocks in parallel"),
            Knob("matmul.parallel_cols", (True, False),
                 "one row block, no batch, no column chunks: the column panel loop runs in parallel"),
            Knob("matmul.whole_m", (True, False),
                 "a static M of at most 256 rows as one row block, its column panels in parallel chunks"),
            Knob("matmul.wide_tile", (True, False),
                 "K and M long, N wide: a 6 x 4-vector register tile, not 8 x 2 (32 registers), "
                 "or 4 x 3, not 6 x 2 (16)"),
            Knob("matmul.short_k", (True, False),
                 "K up to two vectors: B unpacked, row blocks of 32 rows (not one whole-M block)"),
            Knob("matmul.col_chunks", (1, 2, 3, 4, 6, 8),
                 "one row block: split the column panels into this many parallel chunks"),
        ), _check_matmul, ("matmul.mr", "matmul.nv", "matmul.width", "matmul.mc")),
        RuleKnobs("conv2d", (
            Knob("conv2d.rw", tuple(range(1, 33)), "register tile: output columns"),
            Knob("conv2d.nv", (1, 2, 3, 4, 6, 8), "register tile: output channels, in vectors"),
            Knob("conv2d.width", widths, "f32 lanes of a vector"),
            Knob("conv2d.parallel", ("co0", "n", "oh", "ow0", "none"), "the loop that runs in parallel"),
            Knob("conv2d.fuse_at", ("co0", "oh"), "compute-at level of fused consumers"),
            Knob("conv2d.clamp_ow", (True, False),
                 "OW not a multiple of rw: full column tiles, the last one clamped, not a guarded one"),
            Knob("conv2d.split_ow", (False, True),
                 "OW not a multiple of rw, not clamped: full column tiles and a narrower last one (exact "
                 "register tiles both), not a tile guarded at run time"),
            Knob("conv2d.tile_order", ("columns", "vectors"),
                 "the register tile's loops: columns outside its channel vectors, or the vectors outside"),
            Knob("conv2d.transpose_out", (True, False),
                 "store the accumulator tile along the output row (transposed in registers), not per element"),
            Knob("conv2d.chunk_reduction", (True, False),
                 "a blocked conv's input blocks outside the output rows (partial sums in the output)"),
            Knob("conv2d.blocked_order", ("channels", "taps"),
                 "a blocked conv's reduction: per input block its channels, then the taps; or the taps first"),
        ), _check_conv, ("conv2d.nv", "conv2d.width", "conv2d.rw")),
        RuleKnobs("conv_epilogue", (
            Knob("conv_epilogue.inline", (True, False),
                 "inline a conv's elementwise consumers into one block (no intermediate buffers)"),
            Knob("conv_epilogue.vectorize", (True, False), "vectorize the fused consumers along the output row"),
            Knob("conv_epilogue.in_registers", (True, False),
                 "apply the inlined consumers to the accumulator tile before its store (no full-size buffer)"),
        )),
        RuleKnobs("conv2d_rows", (
            Knob("conv2d_rows.parallel", ("c", "n", "oh", "none"), "the loop that runs in parallel"),
        )),
        RuleKnobs("generic", (
            Knob("generic.vectorize", (True, False), "vectorize innermost loops"),
            Knob("generic.parallel", (True, False), "parallelize the outermost legal loop"),
            Knob("generic.width", widths, "f32 lanes of a vector"),
            Knob("generic.min_vector_extent", (4, 8, 16, 32), "static innermost extents below stay scalar"),
            Knob("generic.inline_elementwise", (True, False),
                 "compute-inline elementwise chains into their readers (no intermediate buffers)"),
            Knob("generic.fuse_rows", (True, False),
                 "fuse adjacent sibling nests level by level (a softmax's phases row by row)"),
            Knob("generic.vectorize_windows", (True, False),
                 "window reductions (pools): reduce loops outside the output loop, which is vectorized"),
            Knob("generic.window_row_unroll", (True, False),
                 "a window's output row of 5-7 outputs: the row and the taps unrolled, outputs in registers"),
            Knob("generic.pad_windows", (True, False),
                 "a padded window (pool) reads a padded copy of its input, so its output loop vectorizes"),
            Knob("generic.reassoc_reductions", (True, False),
                 "let LLVM vectorize reductions along the innermost loop (reassociated combine)"),
        )),
        RuleKnobs("parallel", (
            Knob("parallel.min_work", (32768, 0, 4096, 16384, 65536, 131072, 262144, 1048576),
                 "parallel loops executing fewer ops run serially (threshold.py; 0: off)"),
        )),
    ]
    return {r.rule: r for r in rules}


_DECLS: dict[str, RuleKnobs] | None = None


def declarations() -> dict[str, RuleKnobs]:
    """rule name -> its knobs (the whole search space of the default schedule)."""
    global _DECLS
    if _DECLS is None:
        _DECLS = _declarations()
    return _DECLS


def knob_decl(name: str) -> Knob | None:
    rule = declarations().get(name.split(".", 1)[0])
    return next((k for k in rule.knobs if k.name == name), None) if rule else None


def check_assignment(assignment: Mapping[str, Any], facts: Mapping[str, Any] | None = None,
                     defaults: Mapping[str, Any] | None = None) -> str | None:
    """None when every knob is declared, has a legal value (a declared one, or the heuristic's
    own choice in `defaults`), and each rule's check passes; else why not."""
    facts, defaults = facts or {}, defaults or {}
    by_rule: dict[str, dict[str, Any]] = {}
    for name, v in assignment.items():
        k = knob_decl(name)
        if k is None:
            return f"unknown knob '{name}'"
        if (v not in k.values and (name not in defaults or v != defaults[name])) or type(v) is not type(k.values[0]):
            return f"knob '{name}' = {v!r} is not one of {list(k.values)}"
        by_rule.setdefault(name.split(".", 1)[0], {})[name] = v
    for rule, a in by_rule.items():
        decl = declarations()[rule]
        if all(n in a for n in (decl.checked if decl.checked is not None else [k.name for k in decl.knobs])):
            why = decl.check(a, facts)
            if why is not None:
                return why
    return None


# ---------------------------------------------------------------- the active assignment and the trace


@dataclass
class Trace:
    """What one kernel's schedule read: knob name -> value used, facts (static extents), rule."""

    values: dict[str, Any] = field(default_factory=dict)
    facts: dict[str, Any] = field(default_factory=dict)
    rule: str = ""
    unused: set[str] = field(default_factory=set)


_ACTIVE: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar("schedule_knobs", default=None)
_TRACE: contextvars.ContextVar[Trace | None] = contextvars.ContextVar("schedule_trace", default=None)
_TRACES: contextvars.ContextVar[list | None] = contextvars.ContextVar("schedule_traces", default=None)


def choose(name: str, default: Any) -> Any:
    """The value of knob `name`: the active assignment's, else `default` (the heuristic's)."""
    active = _ACTIVE.get()
    v = active.get(name, default) if active else default
    tr = _TRACE.get()
    if tr is not None and name not in tr.values:
        tr.values[name] = v
    return v


def fact(name: str, value: Any) -> None:
    """Record a fact about the kernel a legality check needs (a static extent), when tracing."""
    tr = _TRACE.get()
    if tr is not None:
        tr.facts.setdefault(name, value)


def read_assignment(kernel) -> dict[str, Any] | None:
    from xdsl.dialects.builtin import StringAttr

    attr = kernel.attributes.get(KNOBS_ATTR)
    if not isinstance(attr, StringAttr):
        return None
    return json.loads(attr.data)


def set_assignment(kernel, assignment: Mapping[str, Any] | None) -> None:
    """Attach (or with None remove) a knob assignment on a kernel's func.func."""
    from xdsl.dialects.builtin import StringAttr

    if assignment is None:
        kernel.attributes.pop(KNOBS_ATTR, None)
    else:
        kernel.attributes[KNOBS_ATTR] = StringAttr(json.dumps(dict(assignment), sort_keys=True))


@contextlib.contextmanager
def knob_scope(kernel) -> Iterator[Trace]:
    """Schedule `kernel` under its `loop.schedule_knobs` assignment (removed from the IR here)."""
    assignment = read_assignment(kernel)
    kernel.attributes.pop(KNOBS_ATTR, None)
    trace = Trace()
    traces = _TRACES.get()
    t1 = _ACTIVE.set(assignment)
    t2 = _TRACE.set(trace if traces is not None else None)
    try:
        yield trace
    finally:
        _ACTIVE.reset(t1)
        _TRACE.reset(t2)
    if assignment:
        trace.unused = set(assignment) - set(trace.values) if traces is not None else set()
    if traces is not None:
        traces.append((kernel.sym_name.data, trace))


@contextlib.contextmanager
def tracing() -> Iterator[list[tuple[str, Trace]]]:
    """Collect (kernel name, Trace) for every kernel scheduled inside the block."""
    out: list[tuple[str, Trace]] = []
    tok = _TRACES.set(out)
    try:
        yield out
    finally:
        _TRACES.reset(tok)


def space_of(trace: Trace) -> dict[str, tuple]:
    """knob name -> legal values, for the knobs the trace read (the kernel's search space)."""
    out = {}
    for name in trace.values:
        k = knob_decl(name)
        if k is not None:
            out[name] = k.values
    return out


def with_default(values: Sequence, default: Any) -> tuple:
    """`values` with `default` in it (a heuristic may pick a value outside the declared list)."""
    return tuple(values) if default in values else (*values, default)
