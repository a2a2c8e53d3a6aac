"""loop-outline-parallel: move the body of every outermost `parallel` loop into its own
function, called once over the whole range; convert-parallel-to-llvm later turns the call into
a libgomp parallel region (backend/parallel.py). Runs on mem-level IR (after bufferization),
before convert-loop-to-llvm.

    func.func private @k(%a: memref<?xf32>, %b: memref<?xf32>) attributes {loop.kernel} {
      %s = arith.constant 0.5 : f32
      loop.for %i = %c0 to %n step %c1 parallel { <body: %a, %b, %s, %i> }
    }
  becomes
    func.func private @k(...) attributes {loop.kernel} {
      func.call @k__par0(%c0, %n, %c1, %a, %b) : (index, index, index, memref<?xf32>, memref<?xf32>) -> ()
    }
    func.func private @k__par0(%lo: index, %hi: index, %step: index,
                               %a: memref<?xf32> {llvm.noalias}, %b: memref<?xf32> {llvm.noalias})
        attributes {loop.parallel_body} {
      %s = arith.constant 0.5 : f32                       (constants are cloned, not captured)
      loop.for %i = %lo to %hi step %step { <body> }
    }

A loop marked `loop.min_parallel_iters = N` (the parallel work threshold, for a dynamic trip
count) is recorded in the module's `loop.parallel_min_iters = {k__par0 = N}`.
The module gets `loop.parallel_bodies = [@k__par0, …]` so the llvm-level lowering can find
the calls after function signatures are expanded. The call runs the loop serially over the
full range: without the llvm-level lowering the program is still correct.

Captured values: everything the body uses that is defined outside it. Constants are cloned
into the new function; a static `mem.alloca` used only inside the loop (private scratch, e.g.
a register accumulator) is cloned too, so every thread has its own; so is one marked
`loop.private` (a schedule's accumulator tile or cache_read copy) that other loops use as well.
Memref arguments are
`llvm.noalias` when the loop sits in a kernel (whose buffers never alias) and no two captured
buffers are views of the same one. Parallel loops nested in the outlined one run serially.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    FunctionType,
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
    SymbolRefAttr,
    UnitAttr,
)
from xdsl.ir import Block, Operation, OpResult, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from minimlir.dialects import loop, mem
from minimlir.passes.loop.inplace import aliased_args

PARALLEL_BODY_ATTR = "loop.parallel_body"
PARALLEL_BODIES_ATTR = "loop.parallel_bodies"
MIN_ITERS_ATTR = "loop.parallel_min_iters"  # module: body name -> loop.min_parallel_iters of its loop


def _captured(for_op: loop.ForOp) -> list[SSAValue]:
    seen: dict[SSAValue, None] = {}
    for op in for_op.body.walk():
        for v in op.operands:
            owner = v.owner
            inside = for_op.is_ancestor(owner) if isinstance(owner, Operation) else (
                owner.parent_op() is not None and for_op.is_ancestor(owner.parent_op())  # type: ignore[arg-type]
            )
            if not inside:
                seen.setdefault(v, None)
    return list(seen)


def _clonable(v: SSAValue, for_op: loop.ForOp) -> bool:
    if not isinstance(v, OpResult):
        return False
    op = v.owner
    if isinstance(op, arith.ConstantOp):
        return True
    if isinstance(op, mem.AllocaOp) and not op.operands:
        return loop.PRIVATE_ATTR in op.attributes or all(for_op.is_ancestor(u.operation) for u in v.uses)
    return False


def _root(v: SSAValue) -> SSAValue:
    while isinstance(v, OpResult) and isinstance(v.owner, mem.ViewOp | mem.SubrangeOp | mem.SlotOp):
        v = v.owner.operands[0]
    return v


def outline(for_op: loop.ForOp, name: str) -> func.FuncOp:
    """Outline one parallel loop (see the module docstring); returns the new function."""
    parent_func = for_op
    while not isinstance(parent_func, func.FuncOp):
        parent_func = parent_func.parent_op()  # type: ignore[assignment]
        assert parent_func is not None
    for inner in for_op.body.walk():
        if isinstance(inner, loop.ForOp) and inner.kind.data == "parallel":
            inner.properties["kind"] = StringAttr("serial")
    captured = _captured(for_op)
    step_inside = for_op.step
    clones = [v for v in captured if _clonable(v, for_op)]
    args = [v for v in captured if v not in clones]
    index = IndexType()
    arg_types = [index, index, index, *[v.type for v in args]]
    body = Block(arg_types=arg_types)
    lo, hi, step = body.args[:3]
    vmap: dict[SSAValue, SSAValue] = {}
    for v, a in zip(args, body.args[3:]):
        vmap[v] = a
        a.name_hint = v.name_hint
    for v in clones:
        c = v.owner.clone()  # type: ignore[union-attr]
        body.add_op(c)
        vmap[v] = c.results[0]
    vmap[for_op.step] = step
    # Move the body (not a clone of it: the loop is erased below) and rewire its captured values.
    region = Region()
    for_op.body.move_blocks(region)
    inside = set(region.walk())
    for v, new in vmap.items():
        v.replace_uses_with_if(new, lambda use: use.operation in inside)
    new_loop = loop.ForOp(lo, hi, step, region)
    new_loop.location = for_op.location
    body.add_op(new_loop)
    body.add_op(func.ReturnOp())
    fn = func.FuncOp(name, FunctionType.from_lists(arg_types, []), Region(body), visibility="private")
    fn.attributes[PARALLEL_BODY_ATTR] = UnitAttr()
    memrefs = [v for v in args if isinstance(v.type, MemRefType)]
    roots = [_root(v) for v in memrefs]
    noalias = loop.is_kernel(parent_func) and len(set(roots)) == len(roots)
    # arguments of a pair that may share a buffer (loop-mark-inplace) are not noalias
    shared = {parent_func.body.block.args[k] for k in aliased_args(parent_func)}
    attrs = [DictionaryAttr({}) for _ in range(3)]
    for v in args:
        d = ({"llvm.noalias": UnitAttr()}
             if noalias and isinstance(v.type, MemRefType) and _root(v) not in shared else {})
        attrs.append(DictionaryAttr(d))
    if any(d.data for d in attrs):
        fn.arg_attrs = ArrayAttr(attrs)
    call = func.CallOp(name, [for_op.lb, for_op.ub, step_inside, *args], [])
    call.location = for_op.location
    Rewriter.insert_op(call, InsertPoint.before(for_op))
    for_op.detach()
    for_op.erase()
    for v in clones:  # the originals are dead now (all their uses were in the loop)
        owner = v.owner
        if isinstance(owner, Operation) and not owner.results[0].uses:
            owner.detach()
            owner.erase()
    Rewriter.insert_op(fn, InsertPoint.after(parent_func))
    return fn


def _static_trips(for_op: loop.ForOp) -> int | None:
    """The loop's trip count when its bounds and step are constants, else None."""
    vals = []
    for v in (for_op.lb, for_op.ub, for_op.step):
        if not (isinstance(v, OpResult) and isinstance(v.owner, arith.ConstantOp)
                and isinstance(v.owner.value, IntegerAttr)):
            return None
        vals.append(v.owner.value.value.data)
    lb, ub, step = vals
    return max(0, -(-(ub - lb) // step)) if step > 0 else None


def outline_module(module: ModuleOp) -> list[func.FuncOp]:
    made: list[func.FuncOp] = []
    names = {op.sym_name.data for op in module.ops if isinstance(op, func.FuncOp)}
    for f in [op for op in module.ops if isinstance(op, func.FuncOp)]:
        n = 0
        for for_op in [o for o in f.walk() if isinstance(o, loop.ForOp)]:
            if for_op.kind.data != "parallel" or for_op.parent is None:
                continue
            if any(l.kind.data == "parallel" for l in loop.enclosing_loops(for_op)):
                continue
            trips = _static_trips(for_op)
            if trips is not None and trips < 2:
                # one iteration (a matmul's single row block): no fork-join, the calling thread
                # runs it (a 48x256x169 matmul: 0.072 ms through the pool at 2 threads, 0.053 ms
                # without); a parallel loop nested in it is outlined instead
                for_op.properties["kind"] = StringAttr("serial")
                continue
            name = f"{f.sym_name.data}__par{n}"
            while name in names:
                n += 1
                name = f"{f.sym_name.data}__par{n}"
            names.add(name)
            n += 1
            min_iters = for_op.attributes.get("loop.min_parallel_iters")
            made.append(outline(for_op, name))
            if isinstance(min_iters, IntegerAttr):
                old = module.attributes.get(MIN_ITERS_ATTR)
                module.attributes[MIN_ITERS_ATTR] = DictionaryAttr(
                    {**(old.data if isinstance(old, DictionaryAttr) else {}), name: min_iters})
    if made:
        old = module.attributes.get(PARALLEL_BODIES_ATTR)
        prev = list(old.data) if isinstance(old, ArrayAttr) else []
        module.attributes[PARALLEL_BODIES_ATTR] = ArrayAttr(
            prev + [SymbolRefAttr(fn.sym_name.data) for fn in made]
        )
    return made


@dataclass(frozen=True)
class LoopOutlineParallelPass(ModulePass):
    """Outline outermost parallel loops into `loop.parallel_body` functions (see docstring)."""

    name = "loop-outline-parallel"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        outline_module(op)
