"""loop-lower-vectors: turn `vectorize` loops into vector code (W lanes per iteration).

    loop.for %i = %c0 to %n step %c1 vectorize {       loop.for %i = %c0 to %nw step %c8 {
      loop.block "add" (%v = %i) [spatial] {             loop.block "add" (%v = %i) [spatial] {
        %a = mem.load %x[%v] -> f32            ->          %a = mem.load %x[%v] -> vector<8xf32>
        %b = mem.load %s[] -> f32                          %b0 = mem.load %s[] -> f32
        %c = arith.addf %a, %b : f32                       %b = vector.broadcast %b0 : f32 to vector<8xf32>
        mem.store %c, %y[%v] : f32                         %c = arith.addf %a, %b : vector<8xf32>
      }                                                    mem.store %c, %y[%v] : vector<8xf32>
    }                                                  } }
                                                       loop.for %i = %nw to %n step %c1 { <scalar body> }

%nw = n - n mod W (folded when n is static; no remainder loop when W divides n; a loop shorter
than W stays scalar). Inside the vector loop a block's iteration variables hold the first lane.
A load whose index moves with %i (stride 1, last dim) becomes a vector load; with stride 2 (pools
and strided convs: x[2*i + k]) two vector loads, x[j:j+W] and x[j+W-1:j+2W-1], and a
`vector.shuffle` of their even-index elements; one that does not move stays scalar and is splat
with `vector.broadcast` when a vector op uses it; element ops on vectors become the same
arith/math op on vector types (convert-arith/math-to-llvm handle them).
The `vectorize` primitive (passes/_schedule.py) only marks loops this pass can lower.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, vector
from xdsl.dialects.builtin import (
    AnyFloat,
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IndexType,
    DenseArrayBase,
    IntegerType,
    ModuleOp,
    VectorType,
    i64,
)
from xdsl.ir import Operation, OpResult, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from minimlir.dialects import loop, mem
from minimlir.passes.loop.schedule.affine import AffineForm, affine_of
from minimlir.passes._diagnostics import emit_error
from minimlir.passes.loop._main_loop import add_main_loop, keep_remainder
from minimlir.passes.loop.schedule.api import (
    body_ops,
    const_index,
    emit,
    loop_name,
)


STRIDED_LOADS = (2,)
"""Strides (of the last index along the vectorized loop) a load may have besides 1: it becomes two
contiguous vector loads and one `vector.shuffle` of their even lanes (one permute on AVX-512 and
AVX2, uzp1 on NEON). A store must be contiguous."""


def _is_element_op(op: Operation) -> bool:
    return op.dialect_name() in ("arith", "math") and not op.regions and all(
        isinstance(r.type, (AnyFloat, IntegerType)) for r in op.results
    ) and not isinstance(op, arith.IndexCastOp)


def _defined_in(v: SSAValue, for_op: loop.ForOp) -> bool:
    return for_op.is_ancestor(v.owner if isinstance(v, OpResult) else v.owner.parent_op())


def _lane_invariant(v: SSAValue, for_op: loop.ForOp, depth: int = 0) -> bool:
    """Whether index `v` has the same value in every iteration of `for_op`: defined outside it, an
    affine form none of whose atoms is defined inside it, or pure index arithmetic (min, max,
    div, ...) of such values. A block's iteration variable is its binding's form."""
    if not _defined_in(v, for_op):
        return True
    f = affine_of(v)
    if f is not None:
        return not any(_defined_in(a, for_op) for a in f.atoms)
    if depth > 8 or not isinstance(v, OpResult):
        return False
    op = v.owner
    return (op.dialect_name() == "arith" and not op.regions and bool(op.operands)
            and all(isinstance(r.type, IndexType) for r in op.results)
            and all(_lane_invariant(o, for_op, depth + 1) for o in op.operands))


def _index_form(v: SSAValue, for_op: loop.ForOp):
    """The affine form of index `v`; a non-affine one that is the same in every iteration of
    `for_op` (the matmul rule's clamped row min(i, M-1) computed outside it, a broadcast batch
    min(b, B-1) computed in the block from outer variables) is the same for every lane: an
    opaque atom."""
    f = affine_of(v)
    if f is None and _lane_invariant(v, for_op):
        return AffineForm.atom(v)
    if f is None and isinstance(v, OpResult) and isinstance(v.owner, arith.AddiOp | arith.SubiOp):
        # a lane-invariant start plus the lane (a conv tile moved back to end at the row's last
        # column: min(ow0*rw, OW-rw) + ow1, shift_tile_binding)
        a, b = _index_form(v.owner.lhs, for_op), _index_form(v.owner.rhs, for_op)
        if a is not None and b is not None:
            return a + b if isinstance(v.owner, arith.AddiOp) else a - b
    return f


def vector_plan_error(for_op: loop.ForOp) -> tuple[str, Operation | None] | None:
    """Why the body of `for_op` cannot become vector code along its variable, or None."""
    iv = for_op.induction_var
    varying: set[SSAValue] = set()
    for op in for_op.body.walk():
        if op is for_op or isinstance(op, loop.YieldOp):
            continue
        if isinstance(op, loop.BlockOp):
            continue
        if op.regions:
            return f"'{op.name}' with regions in the loop body", op
        if isinstance(op, mem.LoadOp | mem.StoreOp):
            forms = [_index_form(i, for_op) for i in op.indices]
            if any(f is None for f in forms):
                return "non-affine (gather) index along the vectorized loop", op
            coeffs = [f.coeff(iv) for f in forms]  # type: ignore[union-attr]
            vtype = op.result.type if isinstance(op, mem.LoadOp) else op.value.type
            if isinstance(vtype, VectorType):
                return "the loop already holds vector accesses", op
            moving = any(coeffs)
            strided_load = isinstance(op, mem.LoadOp) and bool(coeffs) and coeffs[-1] in STRIDED_LOADS
            if moving and ((coeffs[-1] != 1 and not strided_load) or any(coeffs[:-1])):
                return f"access to {op.memref.name_hint or 'a buffer'} is strided along loop {loop_name(for_op)}", op
            if isinstance(op, mem.LoadOp) and moving:
                varying.add(op.result)
            continue
        if all(isinstance(r.type, IndexType) for r in op.results) and op.dialect_name() == "arith":
            # index arithmetic: stays scalar (first lane); used only as an index / binding, or
            # anywhere when it is the same in every lane (a channel-blocked avg pool's divisor,
            # from the output's row and column, over a vector of channels)
            for r in op.results:
                if _lane_invariant(r, for_op):
                    continue
                for u in r.uses:
                    user = u.operation
                    if not (
                        isinstance(user, mem.LoadOp | mem.StoreOp | loop.BlockOp | loop.ForOp)
                        or (user.dialect_name() == "arith" and isinstance(user.results[0].type, IndexType)
                            if user.results else False)
                    ):
                        return "an index value is used as data", user
            continue
        if isinstance(op, mem.DimOp):
            continue
        if (op.dialect_name() in ("arith", "math") and not op.regions and not any(v in varying for v in op.operands)
                and all(_lane_invariant(v, for_op) for v in op.operands if isinstance(v.type, IndexType))):
            continue  # the same in every lane (an index_cast of one): stays scalar, splat where used
        if not _is_element_op(op):
            return f"cannot vectorize '{op.name}'", op
        if any(v in varying for v in op.operands):
            for v in op.operands:
                if isinstance(v.type, IndexType):
                    return "an index value is used as data", op
            varying.update(op.results)
    return None


def _splat(value: SSAValue, width: int, ip: InsertPoint) -> SSAValue:
    vt = VectorType(value.type, [width])
    owner = value.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, FloatAttr):
        return emit(arith.ConstantOp(DenseIntOrFPElementsAttr.from_list(vt, [owner.value.value.data])), ip)
    return emit(vector.BroadcastOp(value, vt), ip)


def _vectorize_body(vloop: loop.ForOp, width: int) -> None:
    iv = vloop.induction_var
    varying: set[SSAValue] = set()
    for op in list(vloop.body.walk()):
        if op is vloop or isinstance(op, loop.YieldOp | loop.BlockOp):
            continue
        if isinstance(op, mem.LoadOp):
            forms = [_index_form(i, vloop) for i in op.indices]
            stride = forms[-1].coeff(iv) if forms else 0  # type: ignore[union-attr]
            if any(f.coeff(iv) for f in forms):  # type: ignore[union-attr]
                vt = VectorType(op.result.type, [width])
                new = mem.LoadOp(op.memref, list(op.indices), vt)
                new.attributes.update(op.attributes)  # check.site (checked mode's names)
                Rewriter.insert_op(new, InsertPoint.before(op))
                value = new.result
                if stride == 2:
                    # a pool's or conv's 2*ow + kw: lanes 0, 2, …, W-2 of x[i:i+W] and the odd
                    # lanes of x[i+W-1:i+2W-1], which ends at the last lane's element (nothing
                    # read past what the scalar loop reads)
                    ip = InsertPoint.before(op)
                    shift = emit(arith.ConstantOp.from_int_and_width(width - 1, IndexType()), ip)
                    last = emit(arith.AddiOp(op.indices[-1], shift), ip)
                    second = mem.LoadOp(op.memref, [*op.indices[:-1], last], vt)
                    second.attributes.update(op.attributes)
                    Rewriter.insert_op(second, ip)
                    # lane k is x[i + 2k]: first load's lane 2k while 2k < W, else the second's
                    # lane 2k - (W-1) (an odd W too: a 7-wide pool row)
                    mask = [2 * k if 2 * k < width else width + 2 * k - (width - 1) for k in range(width)]
                    shuf = vector.ShuffleOp(value, second.result, DenseArrayBase.from_list(i64, mask), result_type=vt)
                    Rewriter.insert_op(shuf, ip)
                    value = shuf.result
                op.result.replace_all_uses_with(value)
                op.detach()
                op.erase()
                varying.add(value)
            continue
        if isinstance(op, mem.StoreOp):
            value = op.value
            if value not in varying:
                value = _splat(value, width, InsertPoint.before(op))
            new = mem.StoreOp(value, op.memref, list(op.indices))
            new.attributes.update(op.attributes)
            Rewriter.insert_op(new, InsertPoint.before(op))
            op.detach()
            op.erase()
            continue
        if not op.results or isinstance(op.results[0].type, IndexType):
            continue
        if not any(v in varying for v in op.operands):
            continue
        ip = InsertPoint.before(op)
        operands = [v if v in varying else _splat(v, width, ip) for v in op.operands]
        new = type(op).create(
            operands=operands,
            result_types=[VectorType(r.type, [width]) for r in op.results],
            properties=dict(op.properties),
            attributes=dict(op.attributes),
        )
        Rewriter.insert_op(new, ip)
        for old, nr in zip(op.results, new.results):
            old.replace_all_uses_with(nr)
            varying.add(nr)
        op.detach()
        op.erase()


def lower_vector_loop(for_op: loop.ForOp, width: int) -> None:
    reason = vector_plan_error(for_op)
    if reason is not None:
        emit_error(reason[1] or for_op, f"cannot lower vectorize loop: {reason[0]}")
    if const_index(for_op.lb) != 0 or const_index(for_op.step) != 1:
        emit_error(for_op, "cannot lower vectorize loop: it must start at 0 with step 1")
    from xdsl.dialects.builtin import StringAttr

    for_op.properties["kind"] = StringAttr("serial")
    split = add_main_loop(for_op, width)
    if split is None:
        return  # shorter than one vector: stays scalar
    vloop, remainder = split
    vmap: dict[SSAValue, SSAValue] = {for_op.induction_var: vloop.induction_var}
    vip = InsertPoint.before(vloop.body.block.last_op)  # type: ignore[arg-type]
    for op in body_ops(for_op):
        Rewriter.insert_op(op.clone(value_mapper=vmap), vip)
    _vectorize_body(vloop, width)
    keep_remainder(for_op, vloop, remainder)


@dataclass(frozen=True)
class LoopLowerVectorsPass(ModulePass):
    """Rewrite `vectorize` loops into loops of step `width` over vector loads/stores/ops."""

    name = "loop-lower-vectors"

    width: int = 8

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.width not in (4, 8, 16):
            emit_error(op, f"loop-lower-vectors: width must be 4, 8 or 16, got {self.width}")
        for for_op in [o for o in op.walk() if isinstance(o, loop.ForOp)]:
            if for_op.kind.data == "vectorize":
                lower_vector_loop(for_op, self.width)
