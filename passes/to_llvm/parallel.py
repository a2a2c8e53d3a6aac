"""convert-parallel-to-llvm: run the outlined parallel loops (loop-outline-parallel) on libgomp's
thread pool. Runs on llvm-dialect IR, after convert-func-to-llvm.

Every `llvm.call @body(%lo, %hi, %step, %args…)` to a function listed in the module attribute
`loop.parallel_bodies` becomes

    %ctx = llvm.alloca %cN x i64                    (function entry; one 8-byte slot per value)
    llvm.store %lo, gep %ctx[0] … llvm.store %argK, gep %ctx[3+K]
    %fn  = llvm.mlir.addressof @body_omp
    %nt  = llvm.load @minimlir_num_threads : i32    (0: libgomp's default thread count)
    llvm.call @GOMP_parallel(%fn, %ctx, %nt, 0)     (returns when every thread is done)

(when %nt is 1 the body is called directly over the whole range instead: one thread gains nothing
from libgomp, whose team set-up costs ~260 ns a region)

(with a body in the module's `loop.parallel_min_iters`, the parallel work threshold of
passes/loop/schedule/default/threshold.py: %nt = 1 when ceildiv(hi - lo, step) is below it, so
libgomp runs the body on the calling thread without waking the pool)

and each thread runs the trampoline

    llvm.func internal @body_omp(%ctx: !llvm.ptr) {
      <load lo, hi, step, args from %ctx>
      n = ceildiv(hi - lo, step);  chunk = ceildiv(n, omp_get_num_threads())
      b = min(tid * chunk, n);     e = min(b + chunk, n)
      llvm.call @body(lo + b*step, lo + e*step, step, args…)     (an empty range does nothing)
    }

A static split: thread t gets one contiguous chunk. If libgomp cannot be loaded
(backend/parallel.py), the calls stay serial calls of the whole range (a one-time warning).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import llvm
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, IntegerAttr, ModuleOp, SymbolRefAttr, i32, i64
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from minimlir.dialects import llvm_ext as ext
from minimlir.passes.loop.outline_parallel import MIN_ITERS_ATTR, PARALLEL_BODIES_ATTR

PTR = llvm.LLVMPointerType()
NUM_THREADS_SYMBOL = "minimlir_num_threads"
_SLOT_TYPES = (llvm.LLVMPointerType,)


def _fits_slot(t: Attribute) -> bool:
    from xdsl.dialects.builtin import AnyFloat, IntegerType

    if isinstance(t, llvm.LLVMPointerType):
        return True
    if isinstance(t, IntegerType):
        return t.width.data <= 64
    return isinstance(t, AnyFloat) and t.bitwidth <= 64


class _B:
    """Append llvm ops to a block or before an op; returns the first result."""

    def __init__(self, ip: InsertPoint):
        self.ip = ip

    def __call__(self, op: Operation) -> SSAValue:
        Rewriter.insert_op(op, self.ip)
        return op.results[0] if op.results else None  # type: ignore[return-value]

    def const(self, v: int, t=i64) -> SSAValue:
        return self(llvm.ConstantOp(IntegerAttr(v, t), t))


def _declare(module: ModuleOp, name: str, ftype: llvm.LLVMFunctionType) -> None:
    for op in module.ops:
        if isinstance(op, llvm.FuncOp) and op.sym_name.data == name:
            return
    decl = llvm.FuncOp(name, ftype, linkage=llvm.LinkageAttr("external"))
    module.body.block.add_op(decl)


def _declare_global(module: ModuleOp) -> None:
    for op in module.ops:
        if isinstance(op, llvm.GlobalOp) and op.sym_name.data == NUM_THREADS_SYMBOL:
            return
    module.body.block.add_op(llvm.GlobalOp(i32, NUM_THREADS_SYMBOL, "external"))


def _trampoline(module: ModuleOp, body_fn: llvm.FuncOp) -> str:
    name = body_fn.sym_name.data + "_omp"
    types = list(body_fn.function_type.inputs.data)
    block = Block(arg_types=[PTR])
    ctx = block.args[0]
    b = _B(InsertPoint.at_end(block))
    vals = []
    for k, t in enumerate(types):
        p = ctx if k == 0 else b(llvm.GEPOp.from_mixed_indices(ctx, [k], i64))
        vals.append(b(llvm.LoadOp(p, t)))
    lo, hi, step = vals[:3]
    tid = b(llvm.SExtOp(b(llvm.CallOp("omp_get_thread_num", return_type=i32)), i64))
    nt = b(llvm.SExtOp(b(llvm.CallOp("omp_get_num_threads", return_type=i32)), i64))
    one = b.const(1)
    span = b(llvm.SubOp(hi, lo))
    n = b(llvm.SDivOp(b(llvm.SubOp(b(llvm.AddOp(span, step)), one)), step))
    n = b(ext.SMaxOp(n, b.const(0)))
    chunk = b(llvm.SDivOp(b(llvm.SubOp(b(llvm.AddOp(n, nt)), one)), nt))
    first = b(ext.SMinOp(b(llvm.MulOp(tid, chunk)), n))
    last = b(ext.SMinOp(b(llvm.AddOp(first, chunk)), n))
    start = b(llvm.AddOp(lo, b(llvm.MulOp(first, step))))
    end = b(llvm.AddOp(lo, b(llvm.MulOp(last, step))))
    b(llvm.CallOp(body_fn.sym_name.data, start, end, step, *vals[3:]))
    b(llvm.ReturnOp())
    fn = llvm.FuncOp(
        name,
        llvm.LLVMFunctionType([PTR], llvm.LLVMVoidType()),
        linkage=llvm.LinkageAttr("internal"),
        body=Region(block),
    )
    Rewriter.insert_op(fn, InsertPoint.after(body_fn))
    return name


def _dispatch(call: llvm.CallOp, tramp: str, min_iters: int | None = None) -> None:
    fn = call.parent_op()
    while not isinstance(fn, llvm.FuncOp):
        fn = fn.parent_op()  # type: ignore[union-attr]
    entry = fn.body.blocks[0]
    eb = _B(InsertPoint.at_start(entry))
    nslots = len(call.args)
    size = llvm.ConstantOp(IntegerAttr(nslots, i64), i64)
    alloca = llvm.AllocaOp(size.result, i64, alignment=8)
    Rewriter.insert_op([size, alloca], InsertPoint.at_start(entry))
    ctx = alloca.results[0]
    b = _B(InsertPoint.before(call))
    ntp = b(llvm.AddressOfOp(NUM_THREADS_SYMBOL, PTR))
    nt = b(llvm.LoadOp(ntp, i32, alignment=4))
    if min_iters is not None:  # too few iterations to pay for fork-join: one thread, the caller's
        lo, hi, step = call.args[:3]
        n = b(llvm.SDivOp(b(llvm.SubOp(b(llvm.AddOp(b(llvm.SubOp(hi, lo)), step)), b.const(1))), step))
        slt = IntegerAttr(llvm.ICmpPredicateFlag("slt").to_int(), i64)
        small = b(llvm.ICmpOp(n, b.const(min_iters), slt))
        nt = b(ext.SelectOp(small, b.const(1, i32), nt))
    # One thread (set_num_threads(1), or below the work threshold): call the body over the whole
    # range directly. GOMP_parallel with one thread still builds a team (~260 ns a call), which
    # a decode step of a small model would pay a hundred times.
    eq = IntegerAttr(llvm.ICmpPredicateFlag("eq").to_int(), i64)
    serial_now = b(llvm.ICmpOp(nt, b.const(1, i32), eq))
    block = call.parent_block()
    region = block.parent
    cont = block.split_before(call)
    serial, par = Block(), Block()
    region.insert_block_before(serial, cont)
    region.insert_block_before(par, cont)
    block.add_op(llvm.CondBrOp(serial_now, serial, [], par, []))
    call.detach()
    serial.add_op(call)
    serial.add_op(llvm.BrOp(cont))
    pb = _B(InsertPoint.at_end(par))
    for k, v in enumerate(call.args):
        p = ctx if k == 0 else pb(llvm.GEPOp.from_mixed_indices(ctx, [k], i64))
        pb(llvm.StoreOp(v, p, alignment=8))
    fptr = pb(llvm.AddressOfOp(tramp, PTR))
    pb(llvm.CallOp("GOMP_parallel", fptr, ctx, nt, pb.const(0, i32)))
    pb(llvm.BrOp(cont))
    del eb


def lower_parallel_calls(module: ModuleOp) -> int:
    """Rewrite the calls to parallel bodies; returns how many. Leaves them serial (and the
    attribute in place) if libgomp is not available."""
    attr = module.attributes.get(PARALLEL_BODIES_ATTR)
    mi = module.attributes.pop(MIN_ITERS_ATTR, None)
    if not isinstance(attr, ArrayAttr):
        return 0
    from minimlir.backend import parallel

    if not parallel.available():
        del module.attributes[PARALLEL_BODIES_ATTR]
        return 0
    names = {a.root_reference.data for a in attr.data if isinstance(a, SymbolRefAttr)}
    funcs = {op.sym_name.data: op for op in module.ops if isinstance(op, llvm.FuncOp)}
    calls = [
        op for op in module.walk()
        if isinstance(op, llvm.CallOp) and op.callee is not None and op.callee.string_value() in names
    ]
    tramps: dict[str, str] = {}
    min_iters = {k: v.value.data for k, v in mi.data.items()} if isinstance(mi, DictionaryAttr) else {}
    done = 0
    for call in calls:
        callee = call.callee.string_value()  # type: ignore[union-attr]
        body_fn = funcs.get(callee)
        if body_fn is None or not all(_fits_slot(v.type) for v in call.args):
            continue
        if callee not in tramps:
            tramps[callee] = _trampoline(module, body_fn)
        _dispatch(call, tramps[callee], min_iters.get(callee))
        done += 1
    if done:
        _declare(module, "GOMP_parallel", llvm.LLVMFunctionType([PTR, PTR, i32, i32], llvm.LLVMVoidType()))
        _declare(module, "omp_get_thread_num", llvm.LLVMFunctionType([], i32))
        _declare(module, "omp_get_num_threads", llvm.LLVMFunctionType([], i32))
        _declare_global(module)
    del module.attributes[PARALLEL_BODIES_ATTR]
    return done


@dataclass(frozen=True)
class ConvertParallelToLlvmPass(ModulePass):
    """Calls of outlined parallel loop bodies -> GOMP_parallel with a chunking trampoline."""

    name = "convert-parallel-to-llvm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        ext.load_into(ctx)
        lower_parallel_calls(op)
