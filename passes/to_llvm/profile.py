"""convert-profile-kernels: per-kernel timing (compile(..., profile=True), mini-run --profile).

Wraps every call of a kernel (a defined llvm.func) from a public function with two reads of
`clock_gettime(CLOCK_MONOTONIC)` (libc) and adds the elapsed nanoseconds and one call to the
kernel's slots of the external i64 array `minimlir_prof_counters` (backend/profile.py owns it and
reads it after each call):

    slots 0, 1: the timespec scratch; kernel k: slot 2 + 2k = ns, 3 + 2k = calls

Parallel kernels are timed around the whole parallel region from the calling thread. The kernel
table (id -> callee name) is left on the module as the `minimlir.profile` attribute (JSON). The
pass runs only in profiled pipelines: without it the IR is unchanged.
"""

import json

from xdsl.context import Context
from xdsl.dialects import llvm
from xdsl.dialects.builtin import ArrayAttr, IntegerAttr, ModuleOp, StringAttr, i32, i64
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from minimlir.passes.graph.lift_params import PARAMS_FUNCTIONS

COUNTERS = "minimlir_prof_counters"
MAX_KERNELS = 4096
PTR = llvm.LLVMPointerType()
KERNELS_ATTR = "minimlir.profile_kernels"  # graph-profile-nodes' record (nodes, flops, bytes)
LAST_TABLE: list[dict] = []
"""The kernel table of the last module instrumented in this process (frontend/profile.py reads it)."""


class _B:
    def __init__(self, ip: InsertPoint):
        self.ip = ip

    def __call__(self, op):
        Rewriter.insert_op(op, self.ip)
        return op.results[0] if op.results else None

    def const(self, v: int, t=i64):
        return self(llvm.ConstantOp(IntegerAttr(v, t), t))


def _now(b: _B):
    base = b(llvm.AddressOfOp(COUNTERS, PTR))
    b(llvm.CallOp("clock_gettime", b.const(1, i32), base, return_type=i32))
    sec = b(llvm.LoadOp(base, i64, alignment=8))
    nsp = b(llvm.GEPOp.from_mixed_indices(base, [1], i64))
    nsec = b(llvm.LoadOp(nsp, i64, alignment=8))
    return b(llvm.AddOp(b(llvm.MulOp(sec, b.const(1_000_000_000))), nsec))


def _add(b: _B, slot: int, value):
    base = b(llvm.AddressOfOp(COUNTERS, PTR))
    p = b(llvm.GEPOp.from_mixed_indices(base, [slot], i64))
    old = b(llvm.LoadOp(p, i64, alignment=8))
    b(llvm.StoreOp(b(llvm.AddOp(old, value)), p, alignment=8))


def instrument(module: ModuleOp) -> list[dict]:
    """Instrument the kernel calls of `module`'s public functions; the kernel table by id."""
    defined = {op.sym_name.data for op in module.ops if isinstance(op, llvm.FuncOp) and op.body.blocks}
    kernels: dict[str, int] = {}
    lifters = module.attributes.get(PARAMS_FUNCTIONS)  # graph-lift-params': run once, at bind
    skip = {a.data for a in lifters.data} if isinstance(lifters, ArrayAttr) else set()
    publics = [op for op in module.ops if isinstance(op, llvm.FuncOp) and op.body.blocks
               and op.linkage.linkage.data not in ("internal", "private") and op.sym_name.data not in skip]
    for fn in publics:
        calls = [c for c in fn.walk() if isinstance(c, llvm.CallOp) and c.callee is not None
                 and c.callee.string_value() in defined]
        for call in calls:
            name = call.callee.string_value()
            k = kernels.setdefault(name, len(kernels))
            if k >= MAX_KERNELS:
                raise ValueError(f"more than {MAX_KERNELS} kernels to profile")
            t0 = _now(_B(InsertPoint.before(call)))
            after = _B(InsertPoint.after(call))
            t1 = _now(after)
            _add(after, 2 + 2 * k, after(llvm.SubOp(t1, t0)))
            _add(after, 3 + 2 * k, after.const(1))
    if kernels:
        have = {op.sym_name.data for op in module.ops if isinstance(op, (llvm.FuncOp, llvm.GlobalOp))}
        if "clock_gettime" not in have:
            module.body.block.add_op(llvm.FuncOp(
                "clock_gettime", llvm.LLVMFunctionType([i32, PTR], i32), linkage=llvm.LinkageAttr("external")))
        if COUNTERS not in have:
            module.body.block.add_op(llvm.GlobalOp(i64, COUNTERS, "external"))
    names = sorted(kernels, key=kernels.get)
    recorded = module.attributes.get(KERNELS_ATTR)
    info = json.loads(recorded.data) if isinstance(recorded, StringAttr) else {}
    table = [{"kernel": n, "nodes": [], "flops": {}, "bytes": {}, **info.get(n, {})} for n in names]
    module.attributes["minimlir.profile"] = StringAttr(json.dumps(table))
    global LAST_TABLE
    LAST_TABLE = table
    return table


class LlvmProfileKernelsPass(ModulePass):
    """Time every kernel call of the public functions into `minimlir_prof_counters`."""

    name = "convert-profile-kernels"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        instrument(op)
