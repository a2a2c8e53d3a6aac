"""Shared pieces of the `convert-*-to-llvm` passes: type conversion, casts, legality.

Type conversion (one function for every lowering, so they agree):

    index                -> i64
    vector<8xindex>      -> vector<8xi64>
    i1 … i64, f16/f32/f64, vector<8xf32>, !llvm.*  -> unchanged

Other types (memref) are converted by *expanders* that a later lowering registers:

    register_type_expander(MemRefType, lambda t: [ptr] + [i64] * t.get_num_dynamic_dims())

`expand_type(t)` is what function signatures use (one source value may become several LLVM
values); `convert_type(t)` is the 1:1 form used for op results and block arguments.

A pass lowers op by op, so an operand may still have its source type (a func argument of
type `index` while arith is being lowered). Such values cross the boundary through
`builtin.unrealized_conversion_cast`, exactly as MLIR's dialect conversion does:

    %0 = builtin.unrealized_conversion_cast %i : index to i64     (to_llvm)
    %1 = builtin.unrealized_conversion_cast %r : i64 to index     (from_llvm)

Every pass ends with `finalize(module, dialects)`, which folds cast pairs
(`reconcile_unrealized_casts`) and checks that no op of the source dialects is left.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from xdsl.dialects import llvm
from xdsl.dialects.builtin import (
    AnyFloat,
    IndexType,
    IntegerType,
    Signedness,
    ModuleOp,
    UnrealizedConversionCastOp,
    VectorType,
    i64,
)
from xdsl.ir import Attribute, Block, BlockArgument, Operation, OpResult, SSAValue
from xdsl.pattern_rewriter import PatternRewriter
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import DiagnosticException

from minimlir.passes._diagnostics import emit_error

# type class -> function returning the LLVM types one value of that type becomes
_EXPANDERS: dict[type[Attribute], Callable[[Attribute], list[Attribute]]] = {}


def register_type_expander(
    type_class: type[Attribute], expander: Callable[[Attribute], list[Attribute]]
) -> None:
    """Teach every lowering how to convert `type_class` (e.g. MemRefType -> [ptr, i64…])."""
    _EXPANDERS[type_class] = expander


def _is_llvm_scalar(t: Attribute) -> bool:
    return isinstance(t, IntegerType | AnyFloat) or isinstance(
        t,
        llvm.LLVMPointerType
        | llvm.LLVMStructType
        | llvm.LLVMArrayType
        | llvm.LLVMVoidType
        | llvm.LLVMFunctionType,
    )


def convert_type_or_none(t: Attribute) -> Attribute | None:
    """The single LLVM type of `t`, or None when it has none (1:N or unknown)."""
    if isinstance(t, IndexType):
        return i64
    if isinstance(t, VectorType):
        elem = convert_type_or_none(t.element_type)
        if elem is None or not isinstance(elem, IntegerType | AnyFloat):
            return None
        if elem == t.element_type:
            return t
        return VectorType(elem, t.get_shape(), t.scalable_dims)
    if isinstance(t, IntegerType) and t.signedness.data != Signedness.SIGNLESS:
        return IntegerType(t.width.data)  # ui8 ... are signless in LLVM (the ops carry the sign)
    if _is_llvm_scalar(t):
        return t
    expander = _EXPANDERS.get(type(t))
    if expander is not None:
        parts = expander(t)
        if len(parts) == 1:
            return parts[0]
    return None


def convert_type(t: Attribute) -> Attribute:
    """The LLVM type of a value of type `t` (1:1); raises for types without one."""
    res = convert_type_or_none(t)
    if res is None:
        raise DiagnosticException(f"cannot convert type {t} to an LLVM type")
    return res


def expand_type(t: Attribute) -> list[Attribute]:
    """The LLVM types one value of type `t` becomes in a signature (memref: several)."""
    expander = _EXPANDERS.get(type(t))
    if expander is not None:
        return list(expander(t))
    return [convert_type(t)]


def is_legal_type(t: Attribute) -> bool:
    return convert_type_or_none(t) == t


# value -> the cast to its LLVM type that `to_llvm` made (right after the value's definition, so
# every later use reuses it); emptied by `finalize`, entries are checked before reuse.
_CASTS: dict[SSAValue, UnrealizedConversionCastOp] = {}


def _after_def(v: SSAValue) -> InsertPoint:
    """Right after the definition of `v`: a point that dominates every use of `v`."""
    if isinstance(v, OpResult):
        return InsertPoint.after(v.owner)
    assert isinstance(v, BlockArgument)
    return InsertPoint.at_start(v.block)


def to_llvm(value: SSAValue, rewriter: PatternRewriter | None, before: Operation) -> SSAValue:
    """`value` with its LLVM type: the value itself, the input of a cast that produced it,
    or an `unrealized_conversion_cast`: one per value, right after its definition (it
    dominates `before` and every other use; `before` is kept for the signature)."""
    target = convert_type(value.type)
    if value.type == target:
        return value
    owner = value.owner
    if (
        isinstance(owner, UnrealizedConversionCastOp)
        and len(owner.inputs) == 1
        and owner.inputs[0].type == target
    ):
        return owner.inputs[0]
    cast = _CASTS.get(value)
    if (
        cast is not None
        and cast.parent is not None
        and cast.operands[0] is value
        and cast.results[0].type == target
    ):
        return cast.results[0]
    cast = UnrealizedConversionCastOp.get([value], [target])
    Rewriter.insert_op(cast, _after_def(value))
    _CASTS[value] = cast
    return cast.results[0]


def operands_to_llvm(
    values: Sequence[SSAValue], rewriter: PatternRewriter | None, before: Operation
) -> list[SSAValue]:
    return [to_llvm(v, rewriter, before) for v in values]


def from_llvm(
    new_results: Sequence[SSAValue], old_types: Sequence[Attribute]
) -> tuple[list[Operation], list[SSAValue]]:
    """Casts that give LLVM-typed `new_results` back their source types (for remaining users).

    Returns (ops to insert after the new op, values to replace the old results with)."""
    ops: list[Operation] = []
    vals: list[SSAValue] = []
    for v, t in zip(new_results, old_types, strict=True):
        if v.type == t:
            vals.append(v)
        else:
            cast = UnrealizedConversionCastOp.get([v], [t])
            ops.append(cast)
            vals.append(cast.results[0])
    return ops, vals


def convert_block_args(block: Block) -> None:
    """Give every argument of `block` its LLVM type (1:1); old users see a cast back."""
    for arg in list(block.args):
        target = convert_type_or_none(arg.type)
        if target is None or target == arg.type:
            continue
        old_type = arg.type
        if not arg.uses:
            Rewriter.replace_value_with_new_type(arg, target)
            continue
        new_arg = Rewriter.replace_value_with_new_type(arg, target)
        users = list(new_arg.uses)
        cast = UnrealizedConversionCastOp.get([new_arg], [old_type])
        if block.first_op is not None:
            Rewriter.insert_op(cast, InsertPoint.before(block.first_op))
        else:
            block.add_op(cast)
        for use in users:
            use.operation.operands[use.index] = cast.results[0]


def report_illegal(op: Operation | None) -> None:
    """The one legality error of the conversions, located at `op` as mlir-opt does:
    `file:line:col: error: failed to legalize operation 'x.y'` (nothing when `op` is None)."""
    if op is not None:
        emit_error(op, f"failed to legalize operation '{op.name}'")


def check_legal(module: Operation, dialects: Iterable[str]) -> None:
    """Raise the located legality error for the first op of `dialects` left."""
    prefixes = tuple(d + "." for d in dialects)
    for op in module.walk():
        if op.name.startswith(prefixes):
            report_illegal(op)


def reconcile_casts(
    module: Operation, casts: list[UnrealizedConversionCastOp] | None = None
) -> None:
    """Fold `A -> B -> A` cast chains, identity casts and unused casts, to a fixpoint.

    (xDSL's reconcile-unrealized-casts does not terminate on some chains through block
    arguments, so this is a small explicit version.) `casts`: every cast of `module` in walk
    order, when the caller has walked it already."""
    # Only casts change (none is created or moved): iterate over them, in walk order, instead of
    # walking the whole module once per round.
    if casts is None:
        casts = [op for op in module.walk() if isinstance(op, UnrealizedConversionCastOp)]
    changed = True
    while changed:
        changed = False
        for op in casts:
            if op.parent is None:
                continue
            ins = list(op.inputs)
            if all(not r.uses for r in op.results):
                Rewriter.erase_op(op)
                changed = True
                continue
            if [v.type for v in ins] == list(op.result_types):
                for r, v in zip(op.results, ins, strict=True):
                    r.replace_all_uses_with(v)
                Rewriter.erase_op(op)
                changed = True
                continue
            producer = ins[0].owner if ins else None
            if (
                isinstance(producer, UnrealizedConversionCastOp)
                and list(producer.results) == ins
                and list(producer.inputs.types) == list(op.result_types)
            ):
                for r, v in zip(op.results, producer.inputs, strict=True):
                    r.replace_all_uses_with(v)
                Rewriter.erase_op(op)
                changed = True


def finalize(module: ModuleOp, dialects: Iterable[str]) -> None:
    """Fold cast pairs left by the rewrite and check that `dialects` are gone (one walk: folding
    casts neither creates nor removes an op of `dialects`)."""
    _CASTS.clear()
    prefixes = tuple(d + "." for d in dialects)
    casts: list[UnrealizedConversionCastOp] = []
    illegal: Operation | None = None
    for op in module.walk():
        if isinstance(op, UnrealizedConversionCastOp):
            casts.append(op)
        elif illegal is None and op.name.startswith(prefixes):
            illegal = op
    reconcile_casts(module, casts)
    report_illegal(illegal)
