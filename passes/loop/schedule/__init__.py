"""loop-schedule: apply the default schedule (passes/_default_schedule.py) to every loop kernel,
then (unless `lower=false`) lower what it marked: loop-lower-unroll, loop-lower-vectors.

    mini-opt k.mlir -p 'loop-schedule'                          # host vector width
    mini-opt k.mlir -p 'loop-schedule{width=8 mr=4 nv=2 lower=false}'
    mini-opt k.mlir -p 'loop-schedule{conv_rw=7 conv_nv=2 pack_b=true}'
    mini-opt k.mlir -p 'loop-schedule{tuning-db=tune.jsonl}'    # mini-tune's best schedules

Options are the most useful knobs of `ScheduleConfig`; 0 means "the default" (width 0: 16 on
AVX-512, 8 on AVX2). Kernels the heuristics do not recognise get the generic schedule
(parallel outer loop, vector inner loop where legal). Parallel loops stay `parallel`: the
parallel runtime lowering (loop-outline-parallel) runs after bufferization.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from minimlir.passes.loop.schedule.default import (
    ConvKnobs,
    GenericKnobs,
    MatmulKnobs,
    VECTOR_WIDTH_ATTR,
    ScheduleConfig,
    schedule_module,
)
from minimlir.passes._diagnostics import emit_error
from minimlir.dialects import loop
from minimlir.passes.loop.inplace import INPLACE_ATTR, keep_inplace_promise
from minimlir.passes.loop.schedule.default.merge_parallel import merge_parallel_loops


@dataclass(frozen=True)
class LoopSchedulePass(ModulePass):
    """Default schedule for every kernel: tiles, register blocks, vectors, parallel loops."""

    name = "loop-schedule"

    width: int = 0
    mr: int = 0
    nv: int = 0
    mc: int = 0
    kc: int = 0
    pack_b: bool | None = None  # unset: the matmul rule decides; true/false forces B's packing on/off
    conv_rw: int = 0
    conv_nv: int = 0
    parallel: bool = True
    vectorize: bool = True
    lower: bool = True
    tuning_db: str = ""  # a mini-tune record database: kernels with a record get its knobs

    def config(self) -> ScheduleConfig:
        target = ScheduleConfig.for_host()  # the host, or an artifact's target
        width = self.width or target.width
        m = MatmulKnobs()
        m = dataclasses.replace(
            m,
            mr=self.mr or m.mr,
            nv=self.nv or m.nv,
            mc=self.mc or m.mc,
            kc=self.kc or m.kc,
            pack_b=m.pack_b if self.pack_b is None else self.pack_b,
            parallel=self.parallel,
        )
        c = ConvKnobs()
        c = dataclasses.replace(c, rw=self.conv_rw or c.rw, nv=self.conv_nv or c.nv, parallel=self.parallel,
                                vectorize=self.vectorize)
        g = GenericKnobs(parallel=self.parallel, vectorize=self.vectorize)
        return ScheduleConfig(width=width, registers=target.registers, matmul=m, conv2d=c, generic=g)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.width not in (0, 4, 8, 16):
            emit_error(op, f"loop-schedule: width must be 4, 8 or 16, got {self.width}")
        for name, v in (("mr", self.mr), ("nv", self.nv), ("mc", self.mc), ("kc", self.kc),
                        ("conv-rw", self.conv_rw), ("conv-nv", self.conv_nv)):
            if v < 0:
                emit_error(op, f"loop-schedule: {name} must be >= 0, got {v}")
        if self.tuning_db:
            from minimlir.passes._diagnostics import emit_remark
            from minimlir.tuning.apply import TuningDbError, apply_records

            try:
                emit_remark(op, apply_records(op, self.tuning_db).line())
            except TuningDbError as e:
                emit_error(op, f"loop-schedule: {e}")
        cfg = self.config()
        if not self.vectorize:
            cfg = cfg.replace(matmul=dataclasses.replace(cfg.matmul))
        schedule_module(op, cfg)
        if self.lower:
            lower_scheduled(op, cfg.width)
            # after lowering (unit loops gone): adjacent parallel loops share one fork-join
            for k in [o for o in op.walk() if loop.is_kernel(o)]:
                merge_parallel_loops(k)
                # an output marked to take an input's buffer (loop-mark-inplace) still may
                keep_inplace_promise(k)
        else:
            # not lowered: the promise cannot be checked, so it is withdrawn (a graph-level pass
            # later in this pipeline will not alias the pair)
            for k in [o for o in op.walk() if loop.is_kernel(o)]:
                k.attributes.pop(INPLACE_ATTR, None)


def lower_scheduled(module: ModuleOp, width: int) -> None:
    """loop-lower-unroll, then loop-lower-vectors with each loop's own width (the
    `loop.vector_width` attribute the schedule sets; `width` otherwise), then fold the index
    arithmetic that unrolling left behind (passes/_index_fold.py)."""
    from xdsl.dialects.builtin import IntegerAttr

    from minimlir.dialects import loop
    from minimlir.passes.loop.lower_unroll import LoopLowerUnrollPass
    from minimlir.passes.loop.schedule.index_fold import fold_index_arith
    from minimlir.passes.loop.lower_vectors import lower_vector_loop

    LoopLowerUnrollPass().apply(Context(), module)
    for for_op in [o for o in module.walk() if isinstance(o, loop.ForOp)]:
        if for_op.kind.data == "vectorize":
            w = for_op.attributes.pop(VECTOR_WIDTH_ATTR, None)
            lower_vector_loop(for_op, w.value.data if isinstance(w, IntegerAttr) else width)
    for for_op in module.walk():
        if isinstance(for_op, loop.ForOp):
            for_op.attributes.pop(VECTOR_WIDTH_ATTR, None)
    inline_single_trip_loops(module)
    fold_index_arith(module, inline_blocks=True)


def inline_single_trip_loops(module: ModuleOp) -> None:
    """Replace every serial loop with constant bounds that runs exactly once (a vector loop of
    one vector: `for %i = 0 to 16 step 16`) by its body at %i = lb. The register tiles index
    their accumulator with such loop variables; as constants, LLVM's first SROA already keeps
    the accumulator in registers (it runs before the loop passes that would fold the loop)."""
    from xdsl.rewriter import InsertPoint, Rewriter

    from minimlir.dialects import loop
    from minimlir.passes.loop.schedule.api import body_ops, const_index

    for for_op in [o for o in module.walk() if isinstance(o, loop.ForOp)]:
        lb, ub, step = (const_index(v) for v in (for_op.lb, for_op.ub, for_op.step))
        if for_op.kind.data != "serial" or lb is None or ub is None or step is None or step < 1:
            continue
        if not lb < ub <= lb + step:
            continue
        for_op.induction_var.replace_all_uses_with(for_op.lb)
        ip = InsertPoint.before(for_op)
        for op in body_ops(for_op):
            op.detach()
            Rewriter.insert_op(op, ip)
        for_op.detach()
        for_op.erase()
