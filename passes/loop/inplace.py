"""Outputs that may take their input's buffer (onnxruntime's may-inplace kernels, TVM's in-place
ops): `loop-mark-inplace` names them on the kernel, loop-schedule makes the promise true, and
mem-reuse-inputs gives such an output the buffer of an input that dies at the call.

A residual add at the end of a conv (ResNet's `relu(conv(x) + r)`) reads `r` at the point it
writes: if the output takes r's buffer, the kernel moves r's bytes through the cache once instead of
reading r and then writing a fresh buffer (whose lines are read first, write-allocate): ResNet-50's
64 -> 256 1x1 convs at 56x56 moved 9.6 MB per call, 6.4 MB in place.

    func.func private @k(%w: memref<64x64xf32>, %x: memref<1x64x3136xf32>,
                         %r: memref<1x64x3136xf32>, %y: memref<1x64x3136xf32>)
        attributes {loop.kernel, loop.inplace = [[2, 3]]}          (output %y may be input %r)

`loop-mark-inplace` (before scheduling, in compile-whole-module: the split lowering builds the
graph-level chunk's kernel declarations from it) marks the pair (a, o) when arguments a and o have
one static type, the kernel only loads from a and only stores to o, and every load of a sits in an
all-spatial block that walks as many points as a has elements and reads a at its own point (each
index a block iteration variable, in order, or 0 on a unit dim): an elementwise use, no transpose,
broadcast or reduction.

What makes aliasing correct is checked on the scheduled, lowered kernel (`inplace_holds`): every
load of a is followed in its block by a store to o at the same index values and of the same type,
every store to o is preceded so, and no element of o is stored twice (the stores' addresses,
enumerated over their loops' constant ranges, are distinct). Then each element of a is read only
in the iteration that writes that element of o, before the write. A schedule may break it (a
clamped last tile recomputes a column: it would read r after the first tile overwrote it); loop-
schedule then gives the kernel a private copy of a at entry (`keep_inplace_promise`), so the
promise holds whatever schedule ran (the graph-level side may already rely on it). Kernels keep
`llvm.noalias` on every argument but the marked pairs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import ArrayAttr, IntegerAttr, MemRefType, ModuleOp, VectorType, i64
from xdsl.ir import Block, BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from minimlir.dialects import loop, mem
from minimlir.passes._diagnostics import emit_remark

INPLACE_ATTR = "loop.inplace"
MAX_CHECKED_ELEMENTS = 1 << 24
"""Outputs larger than this are not enumerated: the kernel gets the private copy instead."""


def inplace_pairs(kernel: Operation) -> list[tuple[int, int]]:
    """The (input, output) argument pairs `kernel` (a definition or a declaration) is marked with."""
    attr = kernel.attributes.get(INPLACE_ATTR)
    if not isinstance(attr, ArrayAttr):
        return []
    return [(p.data[0].value.data, p.data[1].value.data) for p in attr.data]  # type: ignore[attr-defined]


def aliased_args(kernel: Operation) -> set[int]:
    """Argument numbers of `kernel` that may share a buffer with another argument (no noalias)."""
    return {k for pair in inplace_pairs(kernel) for k in pair}


def _set_pairs(kernel: func.FuncOp, pairs: list[tuple[int, int]]) -> None:
    if pairs:
        kernel.attributes[INPLACE_ATTR] = ArrayAttr(
            [ArrayAttr([IntegerAttr(a, i64), IntegerAttr(o, i64)]) for a, o in pairs])
    else:
        kernel.attributes.pop(INPLACE_ATTR, None)


def _static(t) -> bool:
    return isinstance(t, MemRefType) and all(d >= 0 for d in t.get_shape())


def _only(value: SSAValue, kind: type) -> list[Operation] | None:
    """The users of `value` when each is a `kind` (mem.load / mem.store) using it as the buffer."""
    ops = []
    for use in value.uses:
        op = use.operation
        if not isinstance(op, kind) or op.memref is not value:  # type: ignore[attr-defined]
            return None
        if isinstance(op, mem.StoreOp) and op.value is value:
            return None
        ops.append(op)
    return ops


def _trip_product(op: Operation) -> int | None:
    """The product of the trip counts of the loop.for ops around `op` (constant bounds), else None."""
    # (imported here: the schedule package imports this module)
    from minimlir.passes.loop.schedule.default.threshold import trip_count

    n = 1
    p = op.parent_op()
    while p is not None and not isinstance(p, func.FuncOp):
        if isinstance(p, loop.ForOp):
            t = trip_count(p)
            if t is None:
                return None
            n *= t
        p = p.parent_op()
    return n


def _elementwise_read(ld: mem.LoadOp, shape: list[int]) -> bool:
    """`ld` reads its buffer at its block's own point (see the module docstring)."""
    from minimlir.passes.loop.schedule.api import const_index

    blk = ld.parent_op()
    while blk is not None and not isinstance(blk, loop.BlockOp):
        blk = blk.parent_op()
    if blk is None or any(k.data != "spatial" for k in blk.iter_kinds.data):
        return False
    if ld.parent_block() is not blk.body.block:
        return False
    vars_ = list(blk.iter_vars)
    last = -1
    for idx, d in zip(ld.indices, shape):
        if isinstance(idx, BlockArgument) and idx in vars_:
            k = vars_.index(idx)
            if k <= last:
                return False
            last = k
        elif not (d == 1 and const_index(idx) == 0):
            return False
    return _trip_product(blk) == math.prod(shape)


def candidate_pairs(kernel: func.FuncOp) -> list[tuple[int, int]]:
    """The pairs `loop-mark-inplace` marks (before scheduling; see the module docstring)."""
    args = list(kernel.body.block.args) if kernel.body.blocks else []
    pairs: list[tuple[int, int]] = []
    used: set[int] = set()
    for o, out in enumerate(args):
        if not _static(out.type) or _only(out, mem.StoreOp) in (None, []):
            continue
        for a, inp in enumerate(args):
            if a == o or a in used or inp.type != out.type:
                continue
            loads = _only(inp, mem.LoadOp)
            if not loads or not all(_elementwise_read(ld, list(inp.type.get_shape())) for ld in loads):
                continue
            pairs.append((a, o))
            used.update((a, o))
            break
    return pairs


# ---------------------------------------------------------------- the check on the lowered kernel


class _Iterations:
    """The iterations of a lowered kernel's loops, enumerated: per loop.for, the values of every
    enclosing induction variable at each iteration that runs it (numpy arrays; bounds may depend on
    outer variables, as a remainder loop's do). Index values are evaluated over them."""

    _BINARY = {
        arith.AddiOp: lambda a, b: a + b,
        arith.SubiOp: lambda a, b: a - b,
        arith.MuliOp: lambda a, b: a * b,
        arith.MinSIOp: np.minimum, arith.MaxSIOp: np.maximum,
        arith.MinUIOp: np.minimum, arith.MaxUIOp: np.maximum,
        arith.FloorDivSIOp: lambda a, b: np.floor_divide(a, b),
        arith.CeilDivSIOp: lambda a, b: -np.floor_divide(-a, b),
        arith.DivSIOp: lambda a, b: np.sign(a) * np.sign(b) * (np.abs(a) // np.abs(b)),
        arith.DivUIOp: lambda a, b: np.floor_divide(a, b),
        arith.RemSIOp: lambda a, b: a - b * (np.sign(a) * np.sign(b) * (np.abs(a) // np.abs(b))),
        arith.RemUIOp: lambda a, b: np.remainder(a, b),
    }

    def __init__(self, limit: int):
        self.limit = limit
        self.envs: dict[Operation | None, tuple[int, dict[SSAValue, np.ndarray]]] = {}

    def env(self, for_op: loop.ForOp | None) -> tuple[int, dict[SSAValue, np.ndarray]] | None:
        if for_op in self.envs:
            return self.envs[for_op]
        if for_op is None:
            self.envs[None] = (1, {})
            return self.envs[None]
        outer = self.around(for_op)
        if outer is None:
            return None
        n, ivs = outer
        lb, ub, step = (self.value(v, outer) for v in (for_op.lb, for_op.ub, for_op.step))
        if lb is None or ub is None or step is None:
            return None
        lb, ub, step = (np.broadcast_to(x, (n,)) for x in (lb, ub, step))
        if n and step.min() < 1:
            return None
        trips = np.maximum(0, -((lb - ub) // step))
        total = int(trips.sum())
        if total > self.limit:
            return None
        rows = np.repeat(np.arange(n), trips)
        offs = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(trips) - trips, trips)
        inner = {v: a[rows] for v, a in ivs.items()}
        inner[for_op.body.block.args[0]] = lb[rows] + offs * step[rows]
        self.envs[for_op] = (total, inner)
        return self.envs[for_op]

    def around(self, op: Operation) -> tuple[int, dict[SSAValue, np.ndarray]] | None:
        """The iterations of the loops around `op`; None under an op other than loop.for."""
        p = op.parent_op()
        if isinstance(p, func.FuncOp):
            return self.env(None)
        return self.env(p) if isinstance(p, loop.ForOp) else None

    def value(self, v: SSAValue, env: tuple[int, dict[SSAValue, np.ndarray]]):
        """`v` at every iteration of `env` (an array, or a scalar when it does not vary), or None."""
        if v in env[1]:
            return env[1][v]
        if isinstance(v, BlockArgument):
            return None  # an induction variable of a loop not around this access, a block variable
        op = v.owner
        if isinstance(op, arith.ConstantOp):
            return np.int64(op.value.value.data) if isinstance(op.value, IntegerAttr) else None
        fn = self._BINARY.get(type(op))
        if fn is None:
            return None
        a, b = self.value(op.operands[0], env), self.value(op.operands[1], env)
        if a is None or b is None:
            return None
        if type(op) in (arith.FloorDivSIOp, arith.CeilDivSIOp, arith.DivSIOp, arith.DivUIOp,
                        arith.RemSIOp, arith.RemUIOp) and np.any(b == 0):
            return None
        return fn(a, b)


def _store_addresses(st: mem.StoreOp, shape: list[int], it: _Iterations) -> np.ndarray | None:
    """Every element address `st` writes over its loops' iterations, or None (an op other than
    loop.for around it, an index this check does not evaluate, an index out of its dim)."""
    env = it.around(st)
    if env is None:
        return None
    n = env[0]
    addr = np.zeros(n, dtype=np.int64)
    t = st.value.type
    lanes = t.get_shape()[-1] if isinstance(t, VectorType) else 1
    for k, (idx, d) in enumerate(zip(st.indices, shape)):
        x = it.value(idx, env)
        if x is None:
            return None
        x = np.broadcast_to(x, (n,))
        last = k == len(shape) - 1
        if n and (x.min() < 0 or x.max() + (lanes - 1 if last else 0) >= d):
            return None
        addr = addr * d + x
    if lanes > 1:
        addr = (addr[:, None] + np.arange(lanes, dtype=np.int64)[None, :]).reshape(-1)
    return addr


def _pairs_in_block(loads: list[mem.LoadOp], stores: list[mem.StoreOp]) -> bool:
    """Each load is followed, and each store preceded, in its block by its partner (same index
    values, same type)."""
    def key(op, t):
        return (op.parent_block(), tuple(op.indices), t)

    order: dict[Block, dict[Operation, int]] = {}

    def pos(op) -> int:
        b = op.parent_block()
        if b not in order:
            order[b] = {o: k for k, o in enumerate(b.ops)}
        return order[b][op]

    first_load: dict[tuple, int] = {}
    last_store: dict[tuple, int] = {}
    for ld in loads:
        k = key(ld, ld.result.type)
        first_load[k] = min(first_load.get(k, 1 << 62), pos(ld))
    for st in stores:
        k = key(st, st.value.type)
        last_store[k] = max(last_store.get(k, -1), pos(st))
    for ld in loads:
        k = key(ld, ld.result.type)
        if last_store.get(k, -1) < pos(ld):
            return False
    for st in stores:
        k = key(st, st.value.type)
        if first_load.get(k, 1 << 62) > pos(st):
            return False
    return True


def inplace_holds(kernel: func.FuncOp, a: int, o: int) -> bool:
    """Whether output `o` of the lowered `kernel` may share input `a`'s buffer (module docstring)."""
    args = kernel.body.block.args
    inp, out = args[a], args[o]
    loads, stores = _only(inp, mem.LoadOp), _only(out, mem.StoreOp)
    if not loads or not stores or inp.type != out.type or not _static(out.type):
        return False
    if not _pairs_in_block(loads, stores):  # type: ignore[arg-type]
        return False
    shape = list(out.type.get_shape())
    numel = math.prod(shape)
    if numel > MAX_CHECKED_ELEMENTS:
        return False
    it = _Iterations(MAX_CHECKED_ELEMENTS)
    parts = []
    for st in stores:
        addr = _store_addresses(st, shape, it)  # type: ignore[arg-type]
        if addr is None:
            return False
        parts.append(addr)
    # (_store_addresses kept every index inside its dim: every address is below numel)
    every = np.concatenate(parts)
    return every.size == 0 or int(np.bincount(every, minlength=numel).max()) <= 1


def keep_inplace_promise(kernel: func.FuncOp) -> int:
    """After scheduling and lowering: each marked pair the schedule broke gets a private copy of
    the input at the kernel's entry (read instead of the argument). Returns how many did."""
    copied = 0
    for a, o in inplace_pairs(kernel):
        if inplace_holds(kernel, a, o):
            continue
        block = kernel.body.block
        inp = block.args[a]
        first = block.first_op
        assert first is not None
        private = mem.AllocOp(inp.type)
        copy = mem.CopyOp(inp, private.result)
        for op in (private, copy):
            op.location = kernel.location
            Rewriter.insert_op(op, InsertPoint.before(first))
        inp.replace_uses_with_if(private.result, lambda use: use.operation is not copy)
        ret = block.last_op
        free = mem.DeallocOp(private.result)
        free.location = kernel.location
        at = InsertPoint.before(ret) if isinstance(ret, func.ReturnOp) else InsertPoint.at_end(block)
        Rewriter.insert_op(free, at)
        copied += 1
        emit_remark(kernel, f"in-place output {o} of input {a}: the schedule re-reads the input after "
                            f"writing the output, so the kernel copies the input first")
    return copied


@dataclass(frozen=True)
class LoopMarkInplacePass(ModulePass):
    """Mark kernel outputs that may take an input's buffer (`loop.inplace`; module docstring)."""

    name = "loop-mark-inplace"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for k in [o for o in op.ops if loop.is_kernel(o)]:
            assert isinstance(k, func.FuncOp)
            if INPLACE_ATTR not in k.attributes:
                _set_pairs(k, candidate_pairs(k))
