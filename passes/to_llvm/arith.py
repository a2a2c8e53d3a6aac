"""Lower every `arith` op to the `llvm` dialect, on scalars and on 1-D vectors.

    %0 = arith.addf %a, %b : vector<8xf32>      ->  %0 = llvm.fadd %a, %b : vector<8xf32>
    %1 = arith.addi %i, %j : index              ->  %1 = llvm.add %i, %j : i64
    %2 = arith.maxnumf %x, %y : f32             ->  %2 = llvm.intr.maxnum(%x, %y) : (f32, f32) -> f32

`index` becomes i64 (passes/_llvm_common.py). Operands that still have a source type
(an `index` function argument) and results with remaining non-LLVM users cross the
boundary through `builtin.unrealized_conversion_cast`, folded away by later passes.

`floordivsi`/`ceildivsi`/`ceildivui` have no LLVM instruction; they expand to a
division plus a remainder-based correction (as MLIR's arith-expand does).

Option `fast-math=true` adds `reassoc contract` to every float op (lets LLVM reassociate
reductions and vectorize them, and form FMAs); default off: IEEE results.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, llvm
from xdsl.dialects.builtin import (
    UnrealizedConversionCastOp,
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    VectorType,
)
from xdsl.dialects.utils.fast_math import FastMathFlag
from xdsl.ir import Attribute, Operation, OpResult, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import DiagnosticException
from xdsl.utils.type import get_element_type_or_self

from minimlir.dialects import llvm_ext as ext
from minimlir.passes.to_llvm._conversion import convert
from minimlir.passes.to_llvm._common import (
    convert_type,
    operands_to_llvm,
)

FAST_FLAGS = frozenset({FastMathFlag.REASSOC, FastMathFlag.ALLOW_CONTRACT})
_NSZ = frozenset({FastMathFlag.NO_SIGNED_ZEROS})


# Attributes are immutable values: the ones this pass builds for every op are built once and shared
# (constructing an IntegerAttr / FastMathAttr costs tens of microseconds in xDSL).
_FASTMATH_ATTRS: dict[frozenset, llvm.FastMathAttr] = {}
_INT_ATTRS: dict[tuple[int, Attribute], IntegerAttr] = {}
_I64 = IntegerType(64)


def _int_attr(value: int, t: Attribute) -> IntegerAttr:
    attr = _INT_ATTRS.get((value, t))
    if attr is None:
        attr = _INT_ATTRS[(value, t)] = IntegerAttr(value, t)
    return attr


def fastmath_for(op: Operation, fast_math: bool, extra: frozenset = frozenset()) -> llvm.FastMathAttr:
    """The op's own `fastmath` flags, plus `reassoc contract` when the option asks, plus `extra`."""
    flags: set[FastMathFlag] = set(extra)
    own = op.properties.get("fastmath")
    if own is not None:
        flags |= set(own.data)
    if fast_math:
        flags |= FAST_FLAGS
    key = frozenset(flags)
    attr = _FASTMATH_ATTRS.get(key)
    if attr is None:
        attr = _FASTMATH_ATTRS[key] = llvm.FastMathAttr(sorted(flags) or None)
    return attr


_FLOAT_BINARY: dict[type[Operation], type[Operation]] = {
    arith.AddfOp: llvm.FAddOp,
    arith.SubfOp: llvm.FSubOp,
    arith.MulfOp: llvm.FMulOp,
    arith.DivfOp: llvm.FDivOp,
}

_FLOAT_INTRINSIC: dict[type[Operation], type[Operation]] = {
    arith.MaximumfOp: ext.FMaximumOp,
    arith.MinimumfOp: ext.FMinimumOp,
}

_INT_BINARY: dict[type[Operation], type[Operation]] = {
    arith.AddiOp: llvm.AddOp,
    arith.SubiOp: llvm.SubOp,
    arith.MuliOp: llvm.MulOp,
    arith.DivSIOp: llvm.SDivOp,
    arith.DivUIOp: llvm.UDivOp,
    arith.RemSIOp: llvm.SRemOp,
    arith.RemUIOp: llvm.URemOp,
    arith.AndIOp: llvm.AndOp,
    arith.OrIOp: llvm.OrOp,
    arith.XOrIOp: llvm.XOrOp,
    arith.ShLIOp: llvm.ShlOp,
    arith.ShRSIOp: llvm.AShrOp,
    arith.ShRUIOp: llvm.LShrOp,
    arith.MaxSIOp: ext.SMaxOp,
    arith.MinSIOp: ext.SMinOp,
    arith.MaxUIOp: ext.UMaxOp,
    arith.MinUIOp: ext.UMinOp,
}

_CASTS: dict[type[Operation], type[Operation]] = {
    arith.ExtFOp: llvm.FPExtOp,
    arith.TruncFOp: llvm.FPTruncOp,
    arith.ExtSIOp: llvm.SExtOp,
    arith.ExtUIOp: llvm.ZExtOp,
    arith.TruncIOp: llvm.TruncOp,
    arith.SIToFPOp: llvm.SIToFPOp,
    arith.UIToFPOp: ext.UIToFPOp,
    arith.FPToSIOp: ext.FPToSIOp,
    arith.FPToUIOp: ext.FPToUIOp,
    arith.BitcastOp: llvm.BitcastOp,
}


def _width(t: Attribute) -> int:
    elem = get_element_type_or_self(t)
    assert isinstance(elem, IntegerType)
    return elem.width.data


def _splat(value: int, t: Attribute) -> llvm.ConstantOp:
    if isinstance(t, VectorType):
        return llvm.ConstantOp(DenseIntOrFPElementsAttr.from_list(t, [value]), t)
    return llvm.ConstantOp(_int_attr(value, t), t)


def _icmp(lhs: SSAValue, rhs: SSAValue, pred: str) -> llvm.ICmpOp:
    return llvm.ICmpOp(
        lhs, rhs, _int_attr(llvm.ICmpPredicateFlag(pred).to_int(), _I64)
    )


def _lower_constant(op: arith.ConstantOp) -> list[Operation]:
    t = convert_type(op.result.type)
    value = op.value
    if isinstance(value, IntegerAttr):
        assert isinstance(t, IntegerType)
        return [llvm.ConstantOp(_int_attr(value.value.data, t), t)]
    if isinstance(value, FloatAttr):
        return [llvm.ConstantOp(value, t)]
    if isinstance(value, DenseIntOrFPElementsAttr):
        if value.type != t:
            assert isinstance(t, VectorType)
            value = DenseIntOrFPElementsAttr.from_list(t, value.get_values())
        return [llvm.ConstantOp(value, t)]
    raise DiagnosticException(f"arith.constant: unsupported value {value}")


def _lower_div_with_correction(op: Operation, a: SSAValue, b: SSAValue) -> list[Operation]:
    """floordivsi / ceildivsi / ceildivui as a division plus a remainder-based fix-up.

        q = a / b ; r = a % b
        floordivsi: r != 0 && (r ^ b) < 0   -> q - 1
        ceildivsi:  r != 0 && (r ^ b) >= 0  -> q + 1
        ceildivui:  r != 0                  -> q + 1
    """
    t = a.type
    signed = not isinstance(op, arith.CeilDivUIOp)
    q = (llvm.SDivOp if signed else llvm.UDivOp)(a, b)
    r = (llvm.SRemOp if signed else llvm.URemOp)(a, b)
    zero = _splat(0, t)
    one = _splat(1, t)
    nonzero = _icmp(r.results[0], zero.results[0], "ne")
    ops: list[Operation] = [q, r, zero, one, nonzero]
    cond: SSAValue = nonzero.results[0]
    if signed:
        x = llvm.XOrOp(r.results[0], b)
        sign = _icmp(x.results[0], zero.results[0], "slt" if isinstance(op, arith.FloorDivSIOp) else "sge")
        both = llvm.AndOp(nonzero.results[0], sign.results[0])
        ops += [x, sign, both]
        cond = both.results[0]
    fixed = (llvm.SubOp if isinstance(op, arith.FloorDivSIOp) else llvm.AddOp)(q.results[0], one.results[0])
    sel = ext.SelectOp(cond, fixed.results[0], q.results[0])
    return ops + [fixed, sel]


def _lower_index_cast(op: Operation, value: SSAValue, signed: bool) -> list[Operation]:
    """index <-> iN: i64 on both sides after conversion, so a trunc, an ext or nothing."""
    src_w = _width(value.type)
    dst_t = convert_type(op.results[0].type)
    dst_w = _width(dst_t)
    if src_w == dst_w:
        return []
    if src_w > dst_w:
        return [llvm.TruncOp(value, dst_t)]
    return [(llvm.SExtOp if signed else llvm.ZExtOp)(value, dst_t)]


@dataclass
class LowerArithOp(RewritePattern):
    """One pattern for the whole dialect: the ops differ only by their LLVM counterpart."""

    fast_math: bool = False

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        lowered = self.lower(op)
        if lowered is None:
            return  # left for the legality check to report
        _replace_result(op, *lowered)

    def lower(self, op: Operation) -> tuple[list[Operation], SSAValue] | None:
        """(new llvm ops, the llvm value of the result), or None for an op left to the legality
        check. The new ops are not inserted yet; casts for operands may be."""
        if not op.name.startswith("arith."):
            return None
        kind = type(op)
        args = operands_to_llvm(op.operands, None, op)
        new_ops: list[Operation]
        result: SSAValue | None = None
        if isinstance(op, arith.ConstantOp):
            new_ops = _lower_constant(op)
        elif kind in _FLOAT_BINARY:
            new_ops = [_FLOAT_BINARY[kind](args[0], args[1], fastmath_for(op, self.fast_math))]
        elif kind in _FLOAT_INTRINSIC:
            # nsz: maximumf/minimumf keep their NaN propagation, but may order -0.0 and +0.0 either
            # way (ONNX's Max, MaxPool and Relu do not order them; onnxruntime's maxps returns
            # either), which x86 lowers without the sign-bit select: a ReLU max(x, 0) is 2
            # instructions instead of 5, a max pool's max 4 instead of 6
            new_ops = [_FLOAT_INTRINSIC[kind](args[0], args[1], fastmath_for(op, self.fast_math, _NSZ))]
        elif isinstance(op, arith.MaxnumfOp):
            new_ops = [llvm.VectorFMaxOp(args[0], args[1], fastmath_for(op, self.fast_math))]
        elif isinstance(op, arith.MinnumfOp):
            new_ops = [llvm.VectorFMinOp(args[0], args[1], fastmath_for(op, self.fast_math))]
        elif isinstance(op, arith.NegfOp):
            new_ops = [llvm.FNegOp(args[0], fastmath_for(op, self.fast_math))]
        elif kind in _INT_BINARY:
            new_ops = [_INT_BINARY[kind](args[0], args[1])]
        elif isinstance(op, arith.FloorDivSIOp | arith.CeilDivSIOp | arith.CeilDivUIOp):
            new_ops = _lower_div_with_correction(op, args[0], args[1])
        elif isinstance(op, arith.CmpiOp):
            pred = arith.CMPI_COMPARISON_OPERATIONS[op.predicate.value.data]
            new_ops = [_icmp(args[0], args[1], pred)]
        elif isinstance(op, arith.CmpfOp):
            pred = arith.CMPF_COMPARISON_OPERATIONS[op.predicate.value.data]
            pred = {"false": "_false", "true": "_true"}.get(pred, pred)
            cmp = ext.FCmpOp(args[0], args[1], pred)
            cmp.fastmathFlags = fastmath_for(op, self.fast_math)
            new_ops = [cmp]
        elif isinstance(op, arith.SelectOp):
            new_ops = [ext.SelectOp(args[0], args[1], args[2])]
        elif kind in _CASTS:
            new_ops = [_CASTS[kind](args[0], convert_type(op.results[0].type))]
        elif isinstance(op, arith.IndexCastOp):
            new_ops = _lower_index_cast(op, args[0], signed=True)
            if not new_ops:
                result = args[0]
        else:
            return None  # left for the legality check to report
        if result is None:
            result = new_ops[-1].results[0]
        return new_ops, result


def _replace_result(op: Operation, new_ops: list[Operation], new: SSAValue) -> None:
    """Insert `new_ops` before `op`, give its users `new` (the LLVM-typed result), erase `op`.

    Users that read the result through an `index -> i64` cast (earlier lowerings) and arith ops
    still to be lowered by this pass (they read operands through `to_llvm`) take `new`
    directly; only other users (cf, func) get a cast back to the source type."""
    if new_ops:
        Rewriter.insert_op(new_ops, InsertPoint.before(op))
    old = op.results[0]
    if old.type == new.type:
        old.replace_all_uses_with(new)
    else:
        back: SSAValue | None = None
        for use in list(old.uses):
            user = use.operation
            if (
                isinstance(user, UnrealizedConversionCastOp)
                and len(user.operands) == 1
                and len(user.results) == 1
                and user.results[0].type == new.type
            ):
                user.results[0].replace_all_uses_with(new)
                user.detach()
                user.erase()
            elif user.name.startswith("arith."):
                user.operands[use.index] = new
            else:
                if back is None:
                    cast = UnrealizedConversionCastOp.get([new], [old.type])
                    Rewriter.insert_op(cast, InsertPoint.after(new.owner) if isinstance(new, OpResult)
                                       else InsertPoint.before(op))
                    back = cast.results[0]
                user.operands[use.index] = back
    op.detach()
    op.erase()


@dataclass(frozen=True)
class ConvertArithToLlvmPass(ModulePass):
    """arith -> llvm (scalars and vectors; index as i64)."""

    name = "convert-arith-to-llvm"

    fast_math: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        ext.load_into(ctx)
        convert(op, {"arith": LowerArithOp(self.fast_math)}, illegal=("arith",))
