"""The default schedule: heuristics that make an untuned kernel fast (TVM's default schedules /
MetaSchedule's first candidate), every choice a knob of a dataclass so a tuner can search them.

    from minimlir.passes.loop.schedule.default import ScheduleConfig, schedule_module
    schedule_module(module, ScheduleConfig.for_host())          # all kernels
    schedule_kernel(kernel, cfg)                                # one kernel

Per kernel, the first matching rule applies (rules match the `kind` attributes the legalizer
stamps on blocks, `loop.stamp_kind`; see passes/graph/legalize/). One module per rule: matmul.py,
conv2d.py, copies.py, generic.py; the knobs in config.py, the transaction that rolls a refused
attempt back in transaction.py, shared helpers in _helpers.py. A new rule is a new module with a
`schedule_<name>(kernel, cfg) -> bool` added to RULES:

  * matmul (block "matmul", loops [batch…, i, j, k], one reduce var last): register blocking
    with a tile that fits the vector registers (mr*nv + nv + 1 of them: 6 x 2 with 16, 8 x 2
    with 32; nv shrinks to a divisor of static N/W when that keeps at least half the tile). A
    ragged or dynamic M keeps its tile in registers: the last row tile runs all mr rows and
    reads / writes row min(i, M-1) (mr drops to the row count that wastes least, M = 7: 4).
    The row blocks (mc) are an even number of equal parallel chunks; with 16 registers and a
    static M of 4+ tiles, B's kc x nv*W panel is packed once per row block (pack_b)
        i -> (i0, i1, i2) = (·, mc/mr, mr)    j -> (j0, j1, j2) = (·, nv, W)    k -> (k0, k1) = (·, kc)
        order  i0 k0 j0 i1 k1 i2 j1 j2     i0 parallel, i2 j1 unrolled, j2 vector (W lanes)
    (static M <= small_m, a matrix-vector product: mr = M, nv = small_nv, kc = small_kc, one
    row block, so each k0 block streams small_kc rows of B, nv*W floats per row visit)
    the init is hoisted in front of k0 (decompose-reduction), so the k1 loop body is mr·nv
    vector FMAs on an accumulator tile LLVM keeps in registers; elementwise consumers fused into
    the kernel are computed per i0 row block (reverse-compute-at), then vectorized. A reduction
    that runs in one pass (K <= kc) instead starts the accumulator at
    the init value and applies the epilogue to it before its one store (epilogue_in_registers:
    no init nest, no buffer for C; ResNet-50's 1x1 convs as matmuls).
  * conv2d (block "conv2d", loops n co oh ow ci kh kw, group 1, W | CO static): output channels
    in vectors (TVM's NCHWc x86 schedule). The weights are packed into [co0][ci][kh][kw][nv*W]
    panels and the input into a zero-padded local copy (no clamp/select left in the tile), then
        co -> (co0, cj, cw) = (·, nv, W)      ow -> (ow0, ow1) = (·, rw' | OW, rw' <= rw)
        (when every such rw' < rw/2, as for OW = 13 or 27: the next divisor whose tile still
        fits the registers, rw'*nv <= 24 (16 lanes) or 12)
        order  n co0 oh ow0 | ci kh kw | ow1 cj cw    co0 parallel, ow1 cj unrolled, cw vector
    an rw' x nv*W accumulator tile stays in registers over the whole reduction; the bias init is
    forwarded into the accumulator (conv2d_acc_in). Stride and dilation only change the
    broadcast addresses. Grouped convs (loops n g co oh ow | ci kh kw, static channel counts)
    take the same path with co the channels of one group: panel g*(COg/T) + co0, input channel
    g*CIg + ci of the padded copy. Depthwise convs and groups with fewer than 4 (or not a
    multiple of 4) channels, stride 1: padded copy, reduction outside the output row, the row
    vectorized (_schedule_conv2d_rows). When "conv2d" takes the vector path, the kernel's other
    convs ("conv2d_1", …: a projection shortcut fused into the residual add) take it too, each
    with blocks of its own name. Other group-1 convs: reduction outside the output row,
    init hoisted, co parallel; anything else: generic.
  * first, in every kernel: copy blocks (broadcast, transpose: loads and a store only) whose
    buffer is kernel-local and read only by reduction-free blocks are inlined (inline_copies).
  * anything else: the elementwise blocks writing kernel-local buffers read only by elementwise
    blocks are compute-inlined into their readers (inline_elementwise: a fused GELU chain becomes
    one block, no intermediate buffers), then parallelize the outermost loop that legally can be (per top-level nest),
    vectorize the innermost loop when legal (and long enough).

Parallel loops get a step constant of their own (_private_parallel_steps: loop-outline-parallel
maps the step value into the outlined body). Every step is tried under a snapshot: a primitive the
kernel refuses (ScheduleError) leaves the IR as it was and the heuristics fall back, so any kernel stays correct.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects import arith, func
from xdsl.dialects.builtin import ModuleOp
from xdsl.rewriter import InsertPoint, Rewriter

from minimlir.dialects import loop
from minimlir.passes.loop.schedule.default.knobs import choose, knob_scope
from minimlir.passes.loop.schedule.default._helpers import (
    VECTOR_WIDTH_ATTR,
    _unique_names,
    fit_width,
    inline_elementwise,
)
from minimlir.passes.loop.schedule.default.config import (
    ConvKnobs,
    GenericKnobs,
    MatmulKnobs,
    ScheduleConfig,
    host_vector_width,
)
from minimlir.passes.loop.schedule.default.conv2d import schedule_conv2d
from minimlir.passes.loop.schedule.default.copies import inline_copies
from minimlir.passes.loop.schedule.default.generic import _schedule_rest
from minimlir.passes.loop.schedule.default.matmul import schedule_matmul
from minimlir.passes.loop.schedule.default.rows import fuse_rows
from minimlir.passes.loop.schedule.default.reductions import mark_reassociable_reductions
from minimlir.passes.loop.schedule.default.threshold import apply_parallel_threshold
from minimlir.passes.loop.schedule.default.transaction import REFUSALS

__all__ = [
    "REFUSALS", "RULES", "VECTOR_WIDTH_ATTR", "ConvKnobs", "GenericKnobs", "MatmulKnobs", "ScheduleConfig",
    "fit_width", "host_vector_width", "inline_copies", "schedule_conv2d", "schedule_kernel", "schedule_matmul",
    "schedule_module",
]

# ----------------------------------------------------------------------------------------------
# driver


RULES: list[Callable[[func.FuncOp, ScheduleConfig], bool]] = [schedule_matmul, schedule_conv2d]


def schedule_kernel(kernel: func.FuncOp, cfg: ScheduleConfig) -> str:
    """Apply the first matching rule (else the generic one); returns the rule's name.
    Copy blocks feeding elementwise blocks are inlined first (inline_copies)."""
    rule_name = "generic"
    with knob_scope(kernel) as trace:  # the kernel's loop.schedule_knobs (default/knobs.py)
        if _unique_names(kernel):
            inline_copies(kernel)
        if not _unique_names(kernel):
            _schedule_rest(kernel, cfg)
        else:
            for rule in RULES:
                if rule(kernel, cfg):
                    rule_name = rule.__name__.removeprefix("schedule_")
                    break
            else:
                if choose("generic.inline_elementwise", cfg.generic.inline_elementwise):
                    inline_elementwise(kernel)
                if choose("generic.fuse_rows", cfg.generic.fuse_rows):
                    fuse_rows(kernel)  # sibling nests run row by row (rows.py)
                _schedule_rest(kernel, cfg)
        if choose("generic.reassoc_reductions", cfg.generic.reassoc_reductions):
            mark_reassociable_reductions(kernel)  # row reductions LLVM may vectorize (reductions.py)
        apply_parallel_threshold(kernel)  # small parallel loops run serially (threshold.py)
        trace.rule = rule_name
    _private_parallel_steps(kernel)
    return rule_name


def _private_parallel_steps(kernel: func.FuncOp) -> None:
    """Give every parallel loop a step constant of its own. loop-outline-parallel passes the
    step to the outlined body as an argument and maps the step *value* to it, so a shared
    `arith.constant 1` would turn every unit index inside the body (the register tile's
    accumulator offsets) into a run-time value, and LLVM would keep the tile in memory."""
    for l in [o for o in kernel.walk() if isinstance(o, loop.ForOp) and o.kind.data == "parallel"]:
        c = l.step.owner
        if isinstance(c, arith.ConstantOp) and len(list(l.step.uses)) > 1:
            top = l
            while top.parent_op() is not kernel:
                top = top.parent_op()
            mine = c.clone()
            Rewriter.insert_op(mine, InsertPoint.before(top))
            l.operands = [l.lb, l.ub, mine.results[0]]


def schedule_module(module: ModuleOp, cfg: ScheduleConfig | None = None) -> dict[str, str]:
    """Schedule every loop kernel of `module`; returns kernel name -> rule used."""
    cfg = cfg or ScheduleConfig.for_host()
    out = {}
    for k in [op for op in module.walk() if loop.is_kernel(op)]:
        out[k.sym_name.data] = schedule_kernel(k, cfg)  # type: ignore[arg-type]
    return out
