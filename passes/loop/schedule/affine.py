"""Exact affine analysis of loop-level index expressions, for schedule primitives and lowerings.

An index is *affine* when it is a linear combination of atoms plus a constant, built with
`arith.constant`, `arith.addi`, `arith.subi` and `arith.muli` (one side constant). Atoms are

  * loop induction variables (`loop.for` body arguments),
  * `mem.dim` results,
  * values defined outside every `loop.for` / `loop.block` (kernel-level symbols).

Block iteration variables are not atoms: they are replaced by the affine form of their binding,
so every form is over loop variables and symbols. Anything else (an index loaded from a buffer,
as gather does, or `arith.divui` inside a loop) is non-affine: `affine_of` returns None.

    %vj = 4*%jo + %ji                   (binding of a tiled loop)
    in[%vi + %vki, %vj + %vkj]          -> dims (%i + %ki, 4*%jo + %ji + %kj)

`touched_region(block, buffer, under)` turns the accesses into a per-dimension box over the
loops from `under` inward: for the access above under the `%ji` loop (0..4) with `%ki` in
[0, KH) and `%kj` in [0, KW) it is dim 2: [%i, %i + KH - 1], dim 3: [4*%jo, 4*%jo + KW + 2].
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, IntegerAttr, VectorType
from xdsl.ir import BlockArgument, Operation, OpResult, SSAValue
from xdsl.rewriter import InsertPoint
from xdsl.builder import Builder

from minimlir.dialects import loop, mem


class AffineForm:
    """sum(coeffs[a] * a for atoms a) + const, with exact integer coefficients (never 0)."""

    __slots__ = ("coeffs", "const")

    coeffs: dict[SSAValue, int]
    const: int

    def __init__(self, coeffs: Mapping[SSAValue, int] | None = None, const: int = 0):
        self.coeffs = {v: c for v, c in (coeffs or {}).items() if c != 0}
        self.const = int(const)

    @staticmethod
    def constant(c: int) -> AffineForm:
        return AffineForm({}, c)

    @staticmethod
    def atom(v: SSAValue) -> AffineForm:
        return AffineForm({v: 1}, 0)

    # -- queries ----------------------------------------------------------------------------
    @property
    def is_constant(self) -> bool:
        return not self.coeffs

    @property
    def atoms(self) -> set[SSAValue]:
        return set(self.coeffs)

    def coeff(self, atom: SSAValue) -> int:
        return self.coeffs.get(atom, 0)

    def evaluate(self, env: Mapping[SSAValue, int]) -> int:
        """The value for concrete atom values (KeyError if an atom is missing from env)."""
        return self.const + sum(c * env[v] for v, c in self.coeffs.items())

    # -- arithmetic -------------------------------------------------------------------------
    def __add__(self, other: AffineForm | int) -> AffineForm:
        if isinstance(other, int):
            return AffineForm(self.coeffs, self.const + other)
        coeffs = dict(self.coeffs)
        for v, c in other.coeffs.items():
            coeffs[v] = coeffs.get(v, 0) + c
        return AffineForm(coeffs, self.const + other.const)

    __radd__ = __add__

    def __neg__(self) -> AffineForm:
        return AffineForm({v: -c for v, c in self.coeffs.items()}, -self.const)

    def __sub__(self, other: AffineForm | int) -> AffineForm:
        return self + (-other)

    def __rsub__(self, other: int) -> AffineForm:
        return (-self) + other

    def __mul__(self, k: int) -> AffineForm:
        if not isinstance(k, int):
            return NotImplemented
        return AffineForm({v: c * k for v, c in self.coeffs.items()}, self.const * k)

    __rmul__ = __mul__

    def substitute(self, atom: SSAValue, form: AffineForm) -> AffineForm:
        """Replace `atom` by `form`."""
        c = self.coeffs.get(atom, 0)
        if c == 0:
            return self
        rest = AffineForm({v: k for v, k in self.coeffs.items() if v is not atom}, self.const)
        return rest + form * c

    def substitute_all(self, mapping: Mapping[SSAValue, AffineForm]) -> AffineForm:
        """Replace several atoms at once (simultaneously, not one after the other)."""
        out = AffineForm({v: c for v, c in self.coeffs.items() if v not in mapping}, self.const)
        for v, form in mapping.items():
            if v in self.coeffs:
                out = out + form * self.coeffs[v]
        return out

    # -- comparison / printing --------------------------------------------------------------
    def __eq__(self, other: object) -> bool:
        if isinstance(other, int):
            return self.is_constant and self.const == other
        if not isinstance(other, AffineForm):
            return NotImplemented
        return self.coeffs == other.coeffs and self.const == other.const

    def __hash__(self) -> int:
        return hash((frozenset(self.coeffs.items()), self.const))

    def to_str(self, name: Callable[[SSAValue], str] | None = None) -> str:
        """E.g. `4*%jo + %kj - 1`; `name` maps an atom to its printed name."""
        name = name or atom_name
        parts: list[str] = []
        for v, c in self.coeffs.items():
            term = name(v) if abs(c) == 1 else f"{abs(c)}*{name(v)}"
            parts.append(("- " if c < 0 else "+ ") + term)
        if self.const or not parts:
            parts.append(("- " if self.const < 0 else "+ ") + str(abs(self.const)))
        text = " ".join(parts)
        return text[2:] if text.startswith("+ ") else "-" + text[2:]

    def __str__(self) -> str:
        return self.to_str()

    def __repr__(self) -> str:
        return f"AffineForm({self.to_str()})"


def atom_name(v: SSAValue) -> str:
    """A readable name for an atom: its name hint, else where it comes from."""
    if v.name_hint:
        return "%" + v.name_hint
    if isinstance(v, OpResult):
        return f"%<{v.owner.name}#{v.index}>"
    assert isinstance(v, BlockArgument)
    return f"%<arg{v.index}>"


def _inside_loops(op: Operation | None) -> bool:
    while op is not None:
        if isinstance(op, (loop.ForOp, loop.BlockOp)):
            return True
        op = op.parent_op()
    return False


def is_symbol(value: SSAValue) -> bool:
    """Is `value` loop-invariant for every loop of its kernel (a mem.dim or outside all loops)?"""
    if isinstance(value, OpResult):
        return isinstance(value.owner, mem.DimOp) or not _inside_loops(value.owner)
    assert isinstance(value, BlockArgument)
    return not _inside_loops(value.owner.parent_op())


def affine_of(value: SSAValue) -> AffineForm | None:
    """The affine form of an index value over loop variables and symbols, or None."""
    if isinstance(value, BlockArgument):
        owner = value.owner.parent_op()
        if isinstance(owner, loop.ForOp):
            return AffineForm.atom(value)
        if isinstance(owner, loop.BlockOp):
            return affine_of(owner.bindings[value.index])
        return AffineForm.atom(value) if is_symbol(value) else None

    assert isinstance(value, OpResult)
    op = value.owner
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
        return AffineForm.constant(op.value.value.data)
    if isinstance(op, mem.DimOp):
        return AffineForm.atom(value)
    form: AffineForm | None = None
    if isinstance(op, (arith.AddiOp, arith.SubiOp, arith.MuliOp)):
        lhs, rhs = affine_of(op.lhs), affine_of(op.rhs)
        if lhs is not None and rhs is not None:
            if isinstance(op, arith.AddiOp):
                form = lhs + rhs
            elif isinstance(op, arith.SubiOp):
                form = lhs - rhs
            elif rhs.is_constant:
                form = lhs * rhs.const
            elif lhs.is_constant:
                form = rhs * lhs.const
    if form is None and is_symbol(value):
        # e.g. %n4 = arith.divui %n, %c4 at kernel level: opaque but loop-invariant
        return AffineForm.atom(value)
    return form


def indices_of(op: mem.LoadOp | mem.StoreOp) -> list[AffineForm] | None:
    """Affine forms of an access's indices, or None if one of them is non-affine."""
    forms = [affine_of(i) for i in op.indices]
    if any(f is None for f in forms):
        return None
    return forms  # type: ignore[return-value]


def loop_range(for_op: loop.ForOp) -> tuple[AffineForm, AffineForm] | None:
    """(first, last) value of the induction variable, as affine forms; None if non-affine.

    `last` is ub - 1, except when lb, ub and step are constants (then the exact last value
    lb + ((ub - 1 - lb) // step) * step). The loop is assumed non-empty.
    """
    lb, ub, step = affine_of(for_op.lb), affine_of(for_op.ub), affine_of(for_op.step)
    if lb is None or ub is None:
        return None
    last = ub - 1
    if step is not None and step.is_constant and step.const > 1:
        extent = ub - lb
        if extent.is_constant:
            last = lb + ((extent.const - 1) // step.const) * step.const
    return lb, last


def _accesses(block: loop.BlockOp) -> Iterable[Operation]:
    for region in (block.body, block.init):
        for op in region.walk():
            yield op


def reduces_along(block: loop.BlockOp, iv: SSAValue) -> bool:
    """Whether loop variable `iv` runs one of `block`'s reduce variables (a non-affine reduce
    binding counts: it may)."""
    for bnd, kind in zip(block.bindings, block.kinds):
        if kind == "reduce" and ((f := affine_of(bnd)) is None or f.coeff(iv)):
            return True
    return False


def reads_writes(block: loop.BlockOp) -> tuple[set[SSAValue], set[SSAValue]]:
    """The buffers a block (body and init) reads and writes."""
    reads: set[SSAValue] = set()
    writes: set[SSAValue] = set()
    for op in _accesses(block):
        if isinstance(op, mem.LoadOp):
            reads.add(op.memref)
        elif isinstance(op, mem.StoreOp):
            writes.add(op.memref)
        elif isinstance(op, mem.CopyOp):
            reads.add(op.source)
            writes.add(op.target)
        elif isinstance(op, mem.FillOp):
            writes.add(op.memref)
    return reads, writes


def _eliminate(
    lo: AffineForm, hi: AffineForm, loops: list[loop.ForOp]
) -> tuple[AffineForm, AffineForm] | None:
    """Bound lo from below and hi from above while `loops` (outermost first) run fully."""
    for for_op in reversed(loops):  # innermost first: inner bounds may use outer variables
        rng = loop_range(for_op)
        if rng is None:
            return None
        first, last = rng
        var = for_op.induction_var
        c = lo.coeff(var)
        if c:
            lo = lo.substitute(var, first if c > 0 else last)
        c = hi.coeff(var)
        if c:
            hi = hi.substitute(var, last if c > 0 else first)
    return lo, hi


def _min_max(a: AffineForm, b: AffineForm, want_min: bool) -> AffineForm | None:
    diff = a - b
    if not diff.is_constant:
        return None
    return (a if diff.const <= 0 else b) if want_min else (a if diff.const >= 0 else b)


def touched_region(
    block: loop.BlockOp, buffer: SSAValue, under: loop.ForOp | None = None
) -> list[tuple[AffineForm, AffineForm]] | None:
    """Bounding box of `buffer` elements that `block` reads or writes while the loops from
    `under` inward run their full ranges: one inclusive (lo, hi) per buffer dim, as affine
    forms over the loop variables outside `under` and symbols.

    `under=None` ranges every enclosing loop (the block's footprint over the whole kernel).
    Vector accesses cover `width` elements along the last dim. Returns None when an access's
    index or a loop bound is non-affine, when the buffer is touched by a whole-buffer op
    (mem.copy/mem.fill) inside the block, or when two accesses' bounds are not comparable
    (their difference is not a constant, e.g. `A[%i]` and `A[%n - %i]`).
    Raises ValueError if `under` does not enclose `block` or the block never touches `buffer`.
    """
    outer = loop.block_loops(block)
    if under is not None and under not in outer:
        raise ValueError(
            f"loop {under.induction_var} does not enclose block '{block.block_name.data}'"
        )
    start = 0 if under is None else outer.index(under)

    box: list[tuple[AffineForm, AffineForm]] | None = None
    for op in _accesses(block):
        if isinstance(op, (mem.CopyOp, mem.FillOp)) and buffer in op.operands:
            return None
        if not isinstance(op, (mem.LoadOp, mem.StoreOp)) or op.memref is not buffer:
            continue
        forms = indices_of(op)
        if forms is None:
            return None
        value_type = op.result.type if isinstance(op, mem.LoadOp) else op.value.type
        width = value_type.get_shape()[0] if isinstance(value_type, VectorType) else 1
        ranged = loop.enclosing_loops(op)[start:]
        dims: list[tuple[AffineForm, AffineForm]] = []
        for d, form in enumerate(forms):
            hi = form + (width - 1) if d == len(forms) - 1 else form
            bounds = _eliminate(form, hi, ranged)
            if bounds is None:
                return None
            dims.append(bounds)
        if box is None:
            box = dims
            continue
        merged: list[tuple[AffineForm, AffineForm]] = []
        for (lo_a, hi_a), (lo_b, hi_b) in zip(box, dims):
            lo, hi = _min_max(lo_a, lo_b, True), _min_max(hi_a, hi_b, False)
            if lo is None or hi is None:
                return None
            merged.append((lo, hi))
        box = merged
    if box is None:
        raise ValueError(
            f"block '{block.block_name.data}' does not access buffer {atom_name(buffer)}"
        )
    return box


def materialize(form: AffineForm, builder: Builder | InsertPoint) -> SSAValue:
    """Emit arith ops computing `form` (as index) at the builder / insertion point.

    Atoms must dominate the insertion point (true for the region forms of `touched_region`
    inserted inside the loop `under` or any loop around it).
    """
    b = builder if isinstance(builder, Builder) else Builder(builder)
    index = IndexType()

    def const(c: int) -> SSAValue:
        return b.insert(arith.ConstantOp(IntegerAttr(c, index))).result

    acc: SSAValue | None = None
    for v, c in form.coeffs.items():
        term = v
        if abs(c) != 1:
            term = b.insert(arith.MuliOp(v, const(abs(c)))).result
        if acc is None:
            acc = term if c > 0 else b.insert(arith.SubiOp(const(0), term)).result
        else:
            op = arith.AddiOp(acc, term) if c > 0 else arith.SubiOp(acc, term)
            acc = b.insert(op).result
    if acc is None:
        return const(form.const)
    if form.const > 0:
        acc = b.insert(arith.AddiOp(acc, const(form.const))).result
    elif form.const < 0:
        acc = b.insert(arith.SubiOp(acc, const(-form.const))).result
    return acc
