"""Plan the intermediate heap buffers of each graph-level function into one arena.

Runs after graph-bufferize. The candidates are the top-level `mem.alloc`s of a graph-level function
(every non-kernel func.func) that do not carry `mem.result_slot` and whose buffer (or a view of it)
does not reach `func.return`. Function arguments, params, result buffers and stack buffers are never
planned. A buffer lives from its `mem.alloc` to the last op that uses it or any memref derived from it
(a `mem.view` of it extends its life to the view's last use); `mem.dim` is not a use.

    %a = mem.alloc() : memref<16xf32>
    func.call @k1(%x, %a)
    %b = mem.alloc() : memref<16xf32>
    func.call @k2(%a, %b)
    mem.dealloc %a : memref<16xf32>
    %c = mem.alloc() : memref<16xf32>
    func.call @k3(%b, %c)
    mem.dealloc %b : memref<16xf32>
    ...
    ==>
    %arena = mem.arena : memref<128xi8>
    %off0 = arith.constant 0 : index
    %a = mem.slot %arena[%off0] {mem.offset = 0 : i64, mem.size = 64 : i64}
           : memref<128xi8> -> memref<16xf32>
    func.call @k1(%x, %a)
    %off64 = arith.constant 64 : index
    %b = mem.slot %arena[%off64] {mem.offset = 64 : i64, mem.size = 64 : i64} : …
    func.call @k2(%a, %b)
    %off0_1 = arith.constant 0 : index
    %c = mem.slot %arena[%off0_1] {mem.offset = 0 : i64, mem.size = 64 : i64} : …  (%a's bytes)
    func.call @k3(%b, %c)
    ...
    mem.dealloc %arena : memref<128xi8>
    func.return …

Slot offsets are multiples of max(`alignment` (default 64, at most 64: the arena's own alignment), the
largest `alignment` a planned alloc asks for); allocs asking for more than 64 stay on the heap.

Static sizes: the classic greedy-by-size planner (TFLite/TVM): sort by size, largest first, and put
each buffer at the lowest `alignment`-aligned offset where it overlaps no already placed buffer whose
lifetime intersects its own (`plan_static`). Slots carry `mem.offset` / `mem.size` (bytes).

Dynamic sizes (a `?` dim): the size expression `bytes * d0 * d1 …` is computed with arith on index at
the arena, so the dim values are moved up there (they are pure index arithmetic on the function's
arguments; `mem.dim` of a buffer is replaced by the dim operand that created it). A dynamic buffer whose
dims cannot be moved (they depend on loaded data, or on ops with effects) stays a heap `mem.alloc`.
Dynamic buffers follow the static region, grouped by their dynamic factor (the product of their
dynamic dims, compared structurally: `batch` and `batch`, not `batch` and `seq`). Within a group the
sizes are `bytes_per_unit * F` for one run-time F, so the group is planned like static buffers in units
of F (`plan_static` on the per-unit sizes): a buffer's offset is `base + offset_per_unit * F` and the
group's region `size_per_unit * F`, which is the static plan's arena scaled by F. A model with a dynamic
batch therefore gets, at batch 8, the arena a static batch-8 compile gets (one slot per buffer laid end
to end made it 4x larger for MobileNetV3, and per-call page faults with it). Dynamic slots carry
`mem.dynamic_slot = k` (buffers with equal k start at the same byte).

The arena (`mem.arena : memref<Nxi8>`, or `mem.arena(%size) : memref<?xi8>` with dynamic slots) is
created just before the first planned buffer and freed by one `mem.dealloc` before the return. The
pass reports at the function: `peak bytes: N (M buffers planned, K bytes before planning)`, where N is
the arena's static size and K the sum of the planned static sizes; with dynamic slots both read
`… + dynamic` and the dynamic slots are described.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    AnyFloat,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    i64,
)
from xdsl.ir import Attribute, BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter
from xdsl.rewriter import InsertPoint
from xdsl.traits import is_side_effect_free
from xdsl.utils.exceptions import DiagnosticException

from minimlir.dialects import mem
from minimlir.passes._diagnostics import emit_error, emit_remark
from minimlir.passes.graph.bufferize import RESULT_SLOT_ATTR, is_graph_function

ARENA_ALIGNMENT = mem.DEFAULT_ALIGNMENT
"""What mem.arena guarantees for its base address."""

_COMMUTATIVE = (arith.AddiOp, arith.MuliOp, arith.MaxSIOp, arith.MinSIOp)


# ============================================================================================
# The planners (pure functions, unit-tested on their own)
# ============================================================================================


def align_up(x: int, alignment: int) -> int:
    return -(-x // alignment) * alignment


def lifetimes_overlap(a: tuple[int, int], b: tuple[int, int]) -> bool:
    """Inclusive [start, end] op-index intervals."""
    return a[0] <= b[1] and b[0] <= a[1]


def plan_static(
    sizes: Sequence[int], lifetimes: Sequence[tuple[int, int]], alignment: int = 64
) -> tuple[list[int], int]:
    """Greedy by size: offsets (multiples of `alignment`) and the arena size for buffers of the given
    byte sizes and inclusive [start, end] lifetimes, such that no two buffers live at the same time
    share a byte."""
    n = len(sizes)
    offsets = [0] * n
    placed: list[int] = []
    for k in sorted(range(n), key=lambda k: (-sizes[k], lifetimes[k][0], k)):
        conflicts = sorted(
            (p for p in placed if sizes[p] and lifetimes_overlap(lifetimes[k], lifetimes[p])),
            key=lambda p: offsets[p],
        )
        off = 0
        for p in conflicts:
            if off + sizes[k] <= offsets[p]:
                break  # fits in the gap below p (every later conflict starts even higher)
            off = max(off, align_up(offsets[p] + sizes[p], alignment))
        offsets[k] = off
        placed.append(k)
    return offsets, max((o + s for o, s in zip(offsets, sizes)), default=0)


def share_slots(keys: Sequence[object], lifetimes: Sequence[tuple[int, int]]) -> list[int]:
    """Slot number per buffer: buffers with equal keys (same size) and disjoint lifetimes may share
    a slot (greedy interval colouring by start time, optimal per key); slots are numbered by first use."""
    slot_of = [-1] * len(keys)
    open_slots: dict[object, list[tuple[int, int]]] = {}  # key -> [(end of last occupant, slot)]
    count = 0
    for k in sorted(range(len(keys)), key=lambda k: (lifetimes[k][0], k)):
        slots = open_slots.setdefault(keys[k], [])
        for j, (end, slot) in enumerate(slots):
            if end < lifetimes[k][0]:
                slots[j] = (lifetimes[k][1], slot)
                slot_of[k] = slot
                break
        else:
            slots.append((lifetimes[k][1], count))
            slot_of[k] = count
            count += 1
    return slot_of


def max_live_bytes(sizes: Sequence[int], lifetimes: Sequence[tuple[int, int]]) -> int:
    """The most bytes alive at one time: a lower bound of any plan's arena size."""
    points = {s for s, _ in lifetimes}
    return max(
        (sum(sz for sz, lt in zip(sizes, lifetimes) if lt[0] <= t <= lt[1]) for t in points),
        default=0,
    )


# ============================================================================================
# The pass
# ============================================================================================


def element_bytes(op: Operation, typ: Attribute) -> int:
    if isinstance(typ, IndexType):
        return 8
    if isinstance(typ, IntegerType):
        return max(1, (typ.width.data + 7) // 8)
    if isinstance(typ, AnyFloat):
        return max(1, (typ.bitwidth + 7) // 8)
    emit_error(op, f"mem-plan: cannot size a buffer of element type {typ}")


@dataclass
class _Buffer:
    alloc: mem.AllocOp
    lifetime: tuple[int, int]
    bytes_per_elem: int  # element size times the static dims
    dims: list[SSAValue]  # the alloc's dims moved to the arena (dynamic buffers only)


class _FunctionPlanner:
    def __init__(self, f: func.FuncOp, alignment: int):
        self.f = f
        self.block = f.body.block
        self.alignment = alignment
        self.order = {op: k for k, op in enumerate(self.block.ops)}
        self.rewriter = PatternRewriter(InsertPoint.at_start(self.block))
        self.keys: dict[SSAValue, int] = {}
        self.interned: dict[tuple, int] = {}

    # -- liveness ----------------------------------------------------------------------------

    def _lifetime(self, alloc: mem.AllocOp) -> tuple[int, int] | None:
        """[alloc, last use] in op indices, None if the buffer escapes through func.return."""
        end = self.order[alloc]
        for v in self._aliases(alloc.result):
            for use in v.uses:
                user = use.operation
                if isinstance(user, mem.DimOp | mem.DeallocOp):
                    continue
                if isinstance(user, func.ReturnOp):
                    return None
                top = self.block.find_ancestor_op_in_block(user)
                if top is not None:
                    end = max(end, self.order[top])
        return (self.order[alloc], end)

    def _aliases(self, value: SSAValue) -> set[SSAValue]:
        """`value` and every memref result of a user of an alias (mem.view, mem.slot, …)."""
        out, work = set[SSAValue](), [value]
        while work:
            v = work.pop()
            if v not in out:
                out.add(v)
                for use in v.uses:
                    work.extend(r for r in use.operation.results if isinstance(r.type, MemRefType))
        return out

    # -- moving size computations up to the arena -------------------------------------------

    def _available(self, v: SSAValue) -> SSAValue | None:
        """`v`, or an equal value, defined before the arena point (moving pure ops up), or None."""
        if isinstance(v, BlockArgument):
            return v if v.block is self.block else None
        op = v.owner
        assert isinstance(op, Operation)
        if op.parent is not self.block:
            return None
        if op in self.before:
            return v
        if isinstance(op, mem.DimOp) and not isinstance(op.source, BlockArgument):
            src = op.source.owner
            if isinstance(src, mem.AllocOp | mem.AllocaOp | mem.ViewOp | mem.SubrangeOp | mem.SlotOp):
                shape = op.source.type.get_shape()
                k = op.index.value.data
                if shape[k] == DYNAMIC_INDEX:
                    dim = self._available(src.dims[shape[:k].count(DYNAMIC_INDEX)])
                    if dim is None:
                        return None
                else:
                    c = arith.ConstantOp(IntegerAttr(shape[k], IndexType()))
                    self._hoist(c)
                    dim = c.result
                self.rewriter.replace(op, [], [dim])
                return dim
            return None
        if op.regions or not is_side_effect_free(op):
            return None
        for k in range(len(op.operands)):
            # re-read the operand: making an earlier one available may have replaced this one too
            # (`arith.maxsi %d, %d` where %d is a mem.dim that was just replaced)
            if self._available(op.operands[k]) is None:
                return None
        # every operand is now defined before the arena point (or replaced by such a value)
        op.detach()
        self._hoist(op)
        return op.results[v.index] if len(op.results) > 1 else op.results[0]

    def _hoist(self, op: Operation) -> None:
        self.rewriter.insert(op, InsertPoint.before(self.arena_point))
        op.location = self.arena_point.location
        self.before.add(op)

    def _key(self, v: SSAValue) -> int:
        """Structural identity of an index value (equal keys: equal values at run time), as a
        hash-consed id: each value's key is built once from its operands' ids, so the work is
        linear in the number of values however much the dims share (a tree of them, printed, would
        double at every broadcasting op). Commutative ops ignore operand order and
        `maxsi`/`minsi` of a value with itself is that value."""
        key = self.keys.get(v)
        if key is not None:
            return key
        if isinstance(v, BlockArgument):
            node: tuple = ("arg", v.index)
        else:
            op = v.owner
            assert isinstance(op, Operation)
            ids = tuple(self._key(o) for o in op.operands)
            if isinstance(op, arith.MaxSIOp | arith.MinSIOp) and ids[0] == ids[1]:
                self.keys[v] = ids[0]
                return ids[0]
            if isinstance(op, _COMMUTATIVE):
                ids = tuple(sorted(ids))
            props = tuple(sorted((k, str(a)) for k, a in op.properties.items()))
            attrs = tuple(sorted((k, str(a)) for k, a in op.attributes.items()))
            node = (op.name, props, attrs, ids, v.index if hasattr(v, "index") else 0)
        key = self.interned.setdefault(node, len(self.interned))
        self.keys[v] = key
        return key

    def _describe(self, v: SSAValue) -> str:
        if isinstance(v.owner, arith.ConstantOp):
            return str(v.owner.value.value.data)
        if isinstance(v.owner, mem.DimOp) and isinstance(v.owner.source, BlockArgument):
            src = v.owner.source
            name = src.name_hint or f"arg{src.index}"
            return f"{name}.dim{v.owner.index.value.data}"
        return v.name_hint or "?"

    # -- the plan ----------------------------------------------------------------------------

    def run(self) -> None:
        candidates: list[tuple[mem.AllocOp, tuple[int, int]]] = []
        for op in self.block.ops:
            if not isinstance(op, mem.AllocOp) or RESULT_SLOT_ATTR in op.attributes:
                continue
            if op.alignment.value.data > ARENA_ALIGNMENT:
                continue
            if (lifetime := self._lifetime(op)) is not None:
                candidates.append((op, lifetime))
        if not candidates:
            emit_remark(self.f, "peak bytes: 0 (0 buffers planned, 0 bytes before planning)")
            return
        self.arena_point: Operation = candidates[0][0]
        self.before = {op for op in self.block.ops if self.order[op] < self.order[self.arena_point]}

        static: list[_Buffer] = []
        dynamic: list[_Buffer] = []
        left = 0
        for alloc, lifetime in candidates:
            typ = alloc.result.type
            per = element_bytes(alloc, typ.get_element_type())
            for d in typ.get_shape():
                per *= 1 if d == DYNAMIC_INDEX else d
            if not alloc.dims:
                static.append(_Buffer(alloc, lifetime, per, []))
                continue
            dims = [self._available(d) for d in alloc.dims]
            if any(d is None for d in dims):
                left += 1
                continue
            dynamic.append(_Buffer(alloc, lifetime, per, dims))  # type: ignore[arg-type]

        planned = [*static, *dynamic]
        align = max(self.alignment, *(b.alloc.alignment.value.data for b in planned))
        sizes = [b.bytes_per_elem for b in static]
        offsets, static_size = plan_static(sizes, [b.lifetime for b in static], align)

        # dynamic buffers by factor (the sorted keys of their dims); each group planned in its units
        groups: dict[tuple[int, ...], list[int]] = {}
        for k, b in enumerate(dynamic):
            groups.setdefault(tuple(sorted(self._key(d) for d in b.dims)), []).append(k)
        unit_offset = [0] * len(dynamic)
        group_size: dict[tuple[int, ...], int] = {}
        for g, members in groups.items():
            offs, size = plan_static([dynamic[k].bytes_per_elem for k in members],
                                     [dynamic[k].lifetime for k in members], align)
            group_size[g] = align_up(size, align)
            for k, o in zip(members, offs):
                unit_offset[k] = o
        slot_ids: dict[tuple[tuple[int, ...], int], int] = {}
        slot_of = [0] * len(dynamic)
        for k in sorted(range(len(dynamic)), key=lambda k: (dynamic[k].lifetime[0], k)):
            gk = tuple(sorted(self._key(d) for d in dynamic[k].dims))
            slot_of[k] = slot_ids.setdefault((gk, unit_offset[k]), len(slot_ids))
        n_slots = len(slot_ids)

        # Arena size and dynamic offsets, computed at the arena point.
        at = InsertPoint.before(self.arena_point)
        loc = self.arena_point.location

        def emit(op: Operation) -> SSAValue:
            op.location = loc
            self.rewriter.insert(op, at)
            return op.results[0]

        def const(x: int) -> SSAValue:
            return emit(arith.ConstantOp(IntegerAttr(x, IndexType())))

        slot_offsets: dict[int, SSAValue] = {}
        slot_text: list[str] = []
        if dynamic:
            end = const(align_up(static_size, align))
            for g, members in groups.items():
                first = dynamic[members[0]]
                factor = first.dims[0]
                for d in first.dims[1:]:
                    factor = emit(arith.MuliOp(factor, d))
                for k in sorted(members, key=lambda k: slot_of[k]):
                    if slot_of[k] in slot_offsets:
                        continue
                    if unit_offset[k]:
                        off = emit(arith.AddiOp(end, emit(arith.MuliOp(const(unit_offset[k]), factor))))
                    else:
                        off = end
                    off.name_hint = off.name_hint or f"off_dyn{slot_of[k]}"
                    slot_offsets[slot_of[k]] = off
                end = emit(arith.AddiOp(end, emit(arith.MuliOp(const(group_size[g]), factor))))
                slot_text.append(" * ".join([str(group_size[g]), *map(self._describe, first.dims)]))
            end.name_hint = "arena_size"
            arena = emit(mem.ArenaOp(end))
        else:
            arena = emit(mem.ArenaOp(static_size))
        arena.name_hint = "arena"

        for k, b in enumerate(static):
            off = arith.ConstantOp(IntegerAttr(offsets[k], IndexType()))
            off.result.name_hint = f"off{offsets[k]}"
            slot = mem.SlotOp(arena, off, b.alloc.result.type)
            slot.attributes["mem.offset"] = IntegerAttr(offsets[k], i64)
            slot.attributes["mem.size"] = IntegerAttr(sizes[k], i64)
            self._replace_alloc(b.alloc, [off, slot])
        for k, b in enumerate(dynamic):
            slot = mem.SlotOp(arena, slot_offsets[slot_of[k]], b.alloc.result.type, b.alloc.dims)
            slot.attributes["mem.dynamic_slot"] = IntegerAttr(slot_of[k], i64)
            self._replace_alloc(b.alloc, [slot])

        ret = self.block.last_op
        assert ret is not None
        free = mem.DeallocOp(arena)
        free.location = ret.location
        self.rewriter.insert(free, InsertPoint.before(ret))

        before = sum(sizes)
        dyn = " + dynamic" if dynamic else ""
        msg = (f"peak bytes: {static_size}{dyn} ({_plural(len(planned), 'buffer')} planned, "
               f"{before} bytes before planning{dyn})")
        if dynamic:
            msg += (f"; dynamic: {_plural(len(dynamic), 'buffer')} in {_plural(n_slots, 'slot')} "
                    f"after the static region, in {_plural(len(groups), 'region')} of "
                    + ", ".join(slot_text) + " bytes")
        if left:
            msg += (f"; {_plural(left, 'dynamic buffer')} left on the heap (size not computable "
                    f"at the arena)")
        emit_remark(self.f, msg)

    def _replace_alloc(self, alloc: mem.AllocOp, new_ops: list[Operation]) -> None:
        for o in new_ops:
            o.location = alloc.location
        for v in self._aliases(alloc.result):
            for use in list(v.uses):
                if isinstance(use.operation, mem.DeallocOp):
                    self.rewriter.erase(use.operation)
        self.rewriter.replace(alloc, new_ops, [new_ops[-1].results[0]])


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


@dataclass(frozen=True)
class MemPlanPass(ModulePass):
    """Place the intermediate heap buffers of each graph-level function in one arena, reusing
    memory between buffers whose lifetimes do not overlap."""

    name = "mem-plan"

    alignment: int = 64

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        a = self.alignment
        if a <= 0 or a & (a - 1) or a > ARENA_ALIGNMENT:
            raise DiagnosticException(
                f"mem-plan: alignment must be a power of two <= {ARENA_ALIGNMENT} (the arena's "
                f"own alignment), got {a}"
            )
        for f in [o for o in op.walk() if is_graph_function(o)]:
            assert isinstance(f, func.FuncOp)
            if len(f.body.blocks) != 1:
                emit_error(f, "mem-plan expects a graph-level function with a single block")
            _FunctionPlanner(f, self.alignment).run()
