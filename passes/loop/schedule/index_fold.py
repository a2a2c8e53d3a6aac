"""Fold the index arithmetic the schedule lowering leaves behind, in two linear walks per kernel.

loop-lower-unroll, loop-lower-vectors and `inline_single_trip_loops` substitute constants for
loop variables, so a scheduled kernel is full of `arith.muli %c0, %c16`, `arith.addi %x, %c0`
and one `arith.constant 1 : index` per unrolled copy. LLVM folds all of it, but every later
pass (and the LLVM translation) pays Python time per op. `fold_index_arith(module)` cleans
each `loop.kernel` function:

    %a = arith.muli %c0, %c16 : index          // constant operands        -> %c0
    %b = arith.addi %x, %c0 : index            // x+0, x-0, x*1, x/1       -> %x
    %d = arith.muli %x, %c0 : index            // x*0, x rem 1             -> %c0
    %e = arith.addi %x, %c3 : index
    %f = arith.addi %e, %c4 : index            // (x+3)+4                  -> x+7 (same for *)
    %g = arith.addi %x, %c3 : index            // same op, operands, properties as %e,
                                               //   earlier in this or an enclosing block -> %e
    %c1_2 = arith.constant 1 : index           // a duplicate constant     -> the one hoisted
                                               //   to the top of the kernel's entry block

An iteration variable of a `loop.block` bound to a constant is replaced by that constant in
the body and init region. With `inline_blocks=True` (what `lower_scheduled` uses), a
`loop.block` without init region is replaced by its body, iteration variables by their
bindings, exactly as convert-loop-to-llvm would later: after the schedule is lowered no pass
but that one looks at blocks, and each left-over block costs two ops (block + yield) in every
pass until then. Blocks with an init region stay (their init runs under a condition).

Finally the pure `arith` ops whose results ended up unused are erased. Only ops on `index` are
folded; a division or remainder by a constant 0 is left alone (it is UB, not a value), and so
is a result that does not fit in 64 bits. Constants are deduplicated by their value attribute
(any type: LLVM makes them immediates, never instructions), except the step of a parallel
loop, which loop-outline-parallel turns into an argument of the outlined body. Regions
isolated from above are not entered. Plain Python on the op lists, no pattern walker: modules
have 150k ops.
"""

from __future__ import annotations

from xdsl.dialects import arith, func
from xdsl.dialects.builtin import IndexType, IntegerAttr, ModuleOp
from xdsl.ir import Attribute, Block, Operation, SSAValue, SSAValues
from xdsl.traits import IsolatedFromAbove

from minimlir.dialects.loop import KERNEL_ATTR, BlockOp, ForOp, YieldOp

_MIN, _MAX = -(2**63), 2**63 - 1
_INDEX = IndexType()


def _trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _eval(name: str, a: int, b: int) -> int | None:
    """`a <name> b` as the op computes it on 64-bit index values; None when not foldable."""
    if name == "arith.addi":
        r = a + b
    elif name == "arith.subi":
        r = a - b
    elif name == "arith.muli":
        r = a * b
    elif name == "arith.minsi":
        r = min(a, b)
    elif name == "arith.maxsi":
        r = max(a, b)
    elif b == 0:
        return None  # division by zero: UB, keep the op
    elif name == "arith.floordivsi":
        r = a // b
    elif name == "arith.ceildivsi":
        r = -((-a) // b)
    elif name == "arith.divsi":
        r = _trunc_div(a, b)
    elif name == "arith.remsi":
        r = a - b * _trunc_div(a, b)
    elif a < 0 or b < 0:
        return None  # unsigned ops: negative index constants are huge unsigned values
    elif name == "arith.divui":
        r = a // b
    elif name == "arith.ceildivui":
        r = -((-a) // b)
    elif name == "arith.remui":
        r = a % b
    else:
        return None
    return r if _MIN <= r <= _MAX else None


_FOLDABLE = frozenset(
    {
        "arith.addi",
        "arith.subi",
        "arith.muli",
        "arith.floordivsi",
        "arith.ceildivsi",
        "arith.divsi",
        "arith.remsi",
        "arith.divui",
        "arith.ceildivui",
        "arith.remui",
        "arith.minsi",
        "arith.maxsi",
    }
)
_COMMUTATIVE = frozenset({"arith.addi", "arith.muli", "arith.minsi", "arith.maxsi"})
_DIVS = frozenset({"arith.floordivsi", "arith.ceildivsi", "arith.divsi", "arith.divui", "arith.ceildivui"})
_REMS = frozenset({"arith.remsi", "arith.remui"})
_REASSOC = frozenset({"arith.addi", "arith.muli"})


def _rauw(old: SSAValue, new: SSAValue) -> None:
    """`old.replace_all_uses_with(new)` without its per-use bookkeeping: every use moves, so
    the use list is handed over whole (xDSL 0.74 internals; the pin is in pyproject.toml)."""
    if old is new:
        return
    use = old.first_use
    while use is not None:
        nxt = use._next_use  # pyright: ignore[reportPrivateUsage]
        op, i = use.operation, use.index
        operands = list(op._operands)  # pyright: ignore[reportPrivateUsage]
        operands[i] = new
        op._operands = SSAValues(operands)  # pyright: ignore[reportPrivateUsage]
        new.add_use(use)
        use = nxt
    old.first_use = None


def _inline_block(op: BlockOp) -> Operation | None:
    """Replace a `loop.block` without init region by its body, every iteration variable
    replaced by its binding (what convert-loop-to-llvm does); returns the first inlined op."""
    body = op.body.block
    for arg, b in zip(body.args, op.bindings):
        if arg.first_use is not None:
            _rauw(arg, b)
    parent = op.parent
    assert parent is not None
    first: Operation | None = None
    inner = body.first_op
    while inner is not None:
        nxt = inner.next_op
        if not isinstance(inner, YieldOp):
            inner.detach()
            parent.insert_op_before(inner, op)
            first = first or inner
        inner = nxt
    op.detach()
    op.erase()
    return first


def _is_parallel_step(v: SSAValue) -> bool:
    """Is `v` the step of a parallel loop? loop-outline-parallel turns that step into an argument
    of the outlined body and rewires every use of the value inside the loop to it: a constant
    shared with the body's indices would make them run-time values (and LLVM's SROA would no
    longer keep the register tile in registers). Such a constant is left alone."""
    for use in v.uses:
        o = use.operation
        if use.index == 2 and isinstance(o, ForOp) and o.kind.data == "parallel":
            return True
    return False


class _KernelFolder:
    def __init__(self, kernel: Operation, inline_blocks: bool):
        self.inline_blocks = inline_blocks
        self.entry: Block = kernel.regions[0].blocks.first  # type: ignore[assignment]
        self.consts: dict[Attribute, SSAValue] = {}  # value attribute -> the hoisted constant
        self.ival: dict[SSAValue, int] = {}  # index constants
        self.int_consts: dict[int, SSAValue] = {}  # const(value) memo
        self.hoist_after: Operation | None = None  # last hoisted constant
        self.cse: dict[tuple, SSAValue] = {}
        self.arith_ops: list[Operation] = []  # every arith op seen, in walk order

    # -- constants ----------------------------------------------------------------------------
    def _hoist(self, op: Operation) -> None:
        """Move `op` to just after the last hoisted constant (the entry block's top)."""
        after = self.hoist_after
        if after is None:
            if op is not self.entry.first_op:
                if op.parent is not None:
                    op.detach()
                self.entry.insert_op_before(op, self.entry.first_op)  # type: ignore[arg-type]
        elif after.next_op is not op:
            if op.parent is not None:
                op.detach()
            self.entry.insert_op_after(op, after)
        self.hoist_after = op

    def const(self, value: int) -> SSAValue:
        v = self.int_consts.get(value)
        if v is not None:
            return v
        attr = IntegerAttr(value, _INDEX)
        v = self.consts.get(attr)
        if v is None:
            op = arith.ConstantOp(attr)
            self._hoist(op)
            v = self.consts[attr] = op.result
            self.ival[v] = value
            self.arith_ops.append(op)
        self.int_consts[value] = v
        return v

    def _constant(self, op: arith.ConstantOp) -> None:
        if op.attributes or _is_parallel_step(op.result):
            self.arith_ops.append(op)
            return
        attr = op.value
        v = self.consts.get(attr)
        if v is not None:
            _rauw(op.result, v)
            op.detach()
            op.erase()
            return
        self._hoist(op)
        self.consts[attr] = op.result
        if isinstance(attr, IntegerAttr) and isinstance(attr.type, IndexType):
            self.ival[op.result] = attr.value.data
        self.arith_ops.append(op)

    # -- index arithmetic ---------------------------------------------------------------------
    def _fold(self, op: Operation) -> SSAValue | None:
        """The value `op` folds to, or None."""
        name = op.name
        a, b = op.operands
        ca, cb = self.ival.get(a), self.ival.get(b)
        if ca is not None and cb is not None:
            r = _eval(name, ca, cb)
            return None if r is None else self.const(r)
        if name == "arith.addi":
            return a if cb == 0 else b if ca == 0 else None
        if name == "arith.subi":
            return a if cb == 0 else self.const(0) if a is b else None
        if name == "arith.muli":
            if ca == 0 or cb == 0:
                return self.const(0)
            return a if cb == 1 else b if ca == 1 else None
        if name in _DIVS:
            return a if cb == 1 else None
        if name in _REMS:
            return self.const(0) if cb == 1 else None
        if name in ("arith.minsi", "arith.maxsi"):
            return a if a is b else None
        return None

    def _reassociate(self, op: Operation) -> None:
        """(x + c1) + c2 -> x + (c1 + c2), (x * c1) * c2 -> x * (c1 * c2)."""
        a, b = op.operands
        cb = self.ival.get(b)
        if cb is None:
            a, b = b, a
            cb = self.ival.get(b)
            if cb is None:
                return
        inner = a.owner
        if not isinstance(inner, Operation) or inner.name != op.name or inner.properties != op.properties:
            return
        x, y = inner.operands
        c1 = self.ival.get(y)
        if c1 is None:
            x, y = y, x
            c1 = self.ival.get(y)
            if c1 is None or x in self.ival:
                return
        elif x in self.ival:
            return
        r = _eval(op.name, c1, cb)
        if r is not None:
            op.operands = (x, self.const(r))

    def _index_op(self, op: Operation) -> None:
        v = self._fold(op)
        if v is not None:
            _rauw(op.results[0], v)
            op.detach()
            op.erase()
            return
        if op.name in _REASSOC:
            self._reassociate(op)
            v = self._fold(op)  # x + (c1 + c2) with c1 + c2 == 0
            if v is not None:
                _rauw(op.results[0], v)
                op.detach()
                op.erase()
                return
        if op.attributes:
            self.arith_ops.append(op)
            return
        operands = tuple(op.operands)
        if op.name in _COMMUTATIVE and id(operands[1]) < id(operands[0]):
            operands = (operands[1], operands[0])
        key = (op.name, operands, tuple(sorted(op.properties.items())))
        v = self.cse.get(key)
        if v is not None:
            _rauw(op.results[0], v)
            op.detach()
            op.erase()
            return
        self.arith_ops.append(op)
        self.cse[key] = op.results[0]
        self.log.append(key)

    def _constant_bindings(self, op: BlockOp) -> None:
        """An iteration variable bound to a constant is that constant (convert-loop-to-llvm
        substitutes every binding the same way): use the constant in the body and init."""
        for k, b in enumerate(op.bindings):
            if b in self.ival:
                for region in op.regions:
                    if region.blocks and region.block.args[k].first_use is not None:
                        _rauw(region.block.args[k], b)

    # -- the walk -----------------------------------------------------------------------------
    def block(self, block: Block) -> None:
        mark = len(self.log)
        op = block.first_op
        while op is not None:
            nxt = op.next_op
            if isinstance(op, arith.ConstantOp):
                self._constant(op)
            elif (
                op.name in _FOLDABLE
                and len(op.results) == 1
                and isinstance(op.results[0].type, IndexType)
                and len(op.operands) == 2
            ):
                self._index_op(op)
            else:
                if op.dialect_name() == "arith":
                    self.arith_ops.append(op)
                elif isinstance(op, BlockOp):
                    if self.inline_blocks and not op.has_init:
                        nxt = _inline_block(op) or nxt  # walk on from the inlined body
                        op = nxt
                        continue
                    self._constant_bindings(op)
                if op.regions and not op.has_trait(IsolatedFromAbove):
                    for region in op.regions:
                        for b in region.blocks:
                            self.block(b)
            op = nxt
        for key in self.log[mark:]:  # values of this block do not dominate its siblings
            del self.cse[key]
        del self.log[mark:]

    def run(self) -> None:
        self.log: list[tuple] = []
        region = self.entry.parent
        assert region is not None
        for b in list(region.blocks):
            self.block(b)
        for op in reversed(self.arith_ops):  # users come later in walk order: erase them first
            if op.parent is not None and all(not r.uses for r in op.results):
                op.detach()
                op.erase()


def fold_kernel(kernel: Operation, inline_blocks: bool = False) -> None:
    """Fold, deduplicate and clean up the index arithmetic of one kernel (see the module doc);
    with `inline_blocks`, also inline every `loop.block` without init region."""
    if kernel.regions and kernel.regions[0].blocks:
        _KernelFolder(kernel, inline_blocks).run()


def fold_index_arith(module: ModuleOp, inline_blocks: bool = False) -> None:
    """`fold_kernel` on every `loop.kernel` function of `module`."""
    for op in module.body.block.ops:
        if isinstance(op, func.FuncOp) and KERNEL_ATTR in op.attributes:
            fold_kernel(op, inline_blocks)
