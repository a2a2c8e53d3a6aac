"""LLVM-dialect ops that xDSL 0.74 lacks (or defines too narrowly), and their llvmlite hooks.

Every op prints exactly as MLIR's LLVM dialect does, so our output parses in
`mlir-translate --mlir-to-llvmir`:

    %i = llvm.fptosi %x : f32 to i32
    %e = llvm.extractelement %v[%c : i64] : vector<8xf32>
    %m = llvm.intr.maximum(%a, %b) : (f32, f32) -> f32
    %c = llvm.fcmp "olt" %a, %b : vector<8xf32>            (xDSL: scalars only)
    %s = llvm.select %c, %a, %b : vector<8xi1>, vector<8xf32>  (xDSL: i1 condition only)

Importing this module adds the ops to xDSL's `LLVM` dialect (replacing `llvm.fcmp` and
`llvm.select` by the vector-capable versions), so any Context that loads `llvm` afterwards
parses them. `install_llvmlite_hooks()` routes `xdsl.backend.llvm.convert` through
`convert_op_ext`, which translates these ops, emits correctly mangled intrinsic declarations
for xDSL's own intrinsic ops (`llvm.fabs.v8f32`, not a bare `llvm.fabs` shared by every type),
and forwards everything else to xDSL.
"""

from __future__ import annotations

from typing import ClassVar

from llvmlite import ir

from xdsl.dialects import llvm
from xdsl.dialects.builtin import (
    I1,
    AnyFloatConstr,
    BoolAttr,
    IntegerAttr,
    IntegerType,
    SignlessIntegerConstraint,
    VectorType,
    i1,
    i64,
)
from xdsl.dialects.llvm import FastMathAttr
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import (
    AnyAttr,
    IRDLOperation,
    ParsePropInAttrDict,
    VarConstraint,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import NoMemoryEffect, Pure
from xdsl.utils.exceptions import LLVMTranslationException

_FLOAT_OR_VEC = AnyFloatConstr | VectorType.constr(AnyFloatConstr)
_INT_OR_VEC = SignlessIntegerConstraint | VectorType.constr(SignlessIntegerConstraint)
_INTR_FORMAT = "`(` operands `)` attr-dict `:` functional-type(operands, results)"


def _fm(fast_math: FastMathAttr | str | None) -> FastMathAttr:
    if isinstance(fast_math, FastMathAttr):
        return fast_math
    if fast_math is None:
        return FastMathAttr(None)
    return FastMathAttr([f for f in fast_math.split(",") if f] or None)


# ---------------------------------------------------------------- casts


@irdl_op_definition
class FPToSIOp(llvm.GenericCastOp):
    """Float to signed integer (rounds toward zero)."""

    name = "llvm.fptosi"


@irdl_op_definition
class FPToUIOp(llvm.GenericCastOp):
    """Float to unsigned integer (rounds toward zero)."""

    name = "llvm.fptoui"


@irdl_op_definition
class UIToFPOp(llvm.GenericCastOp):
    """Unsigned integer to float."""

    name = "llvm.uitofp"


# ---------------------------------------------------------------- vectors


@irdl_op_definition
class ExtractElementOp(IRDLOperation):
    """One lane of a vector: `%e = llvm.extractelement %v[%i : i64] : vector<8xf32>`."""

    name = "llvm.extractelement"

    vector = operand_def(VectorType)
    position = operand_def(SignlessIntegerConstraint)
    res = result_def()

    traits = traits_def(NoMemoryEffect())

    def __init__(self, vector: SSAValue | Operation, position: SSAValue | Operation):
        vec_type = SSAValue.get(vector).type
        assert isinstance(vec_type, VectorType)
        super().__init__(
            operands=[vector, position], result_types=[vec_type.element_type]
        )

    def verify_(self) -> None:
        assert isinstance(self.vector.type, VectorType)
        if self.res.type != self.vector.type.element_type:
            raise ValueError("result type must be the vector's element type")

    @classmethod
    def parse(cls, parser: Parser) -> ExtractElementOp:
        vec = parser.parse_unresolved_operand()
        parser.parse_punctuation("[")
        pos = parser.parse_unresolved_operand()
        parser.parse_punctuation(":")
        pos_type = parser.parse_type()
        parser.parse_punctuation("]")
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        vec_type = parser.parse_type()
        vec_v, pos_v = parser.resolve_operands(
            [vec, pos], [vec_type, pos_type], parser.pos
        )
        op = cls(vec_v, pos_v)
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_ssa_value(self.vector)
        printer.print_string("[")
        printer.print_ssa_value(self.position)
        printer.print_string(" : ")
        printer.print_attribute(self.position.type)
        printer.print_string("]")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.vector.type)


@irdl_op_definition
class FCmpOp(IRDLOperation):
    """`llvm.fcmp` on scalars and vectors (xDSL's version allows only scalars)."""

    name = "llvm.fcmp"

    T: ClassVar = VarConstraint("T", _FLOAT_OR_VEC)
    lhs = operand_def(T)
    rhs = operand_def(T)
    res = result_def(I1 | VectorType[I1])
    predicate = prop_def(IntegerAttr[IntegerType])
    fastmathFlags = prop_def(FastMathAttr, default_value=FastMathAttr(None))

    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(
        self,
        lhs: Operation | SSAValue,
        rhs: Operation | SSAValue,
        predicate: str | IntegerAttr[IntegerType],
        attributes: dict[str, Attribute] | None = None,
    ):
        if isinstance(predicate, str):
            predicate = IntegerAttr(llvm.FCmpPredicateFlag(predicate).to_int(), i64)
        t = SSAValue.get(lhs).type
        res_t = VectorType(i1, t.get_shape()) if isinstance(t, VectorType) else i1
        super().__init__(
            operands=[lhs, rhs],
            result_types=[res_t],
            attributes=attributes or {},
            properties={"predicate": predicate},
        )

    @classmethod
    def parse(cls, parser: Parser) -> FCmpOp:
        pred = parser.parse_str_literal()
        lhs = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        rhs = parser.parse_unresolved_operand()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        t = parser.parse_type()
        lhs_v, rhs_v = parser.resolve_operands([lhs, rhs], [t, t], parser.pos)
        fm = attrs.pop("fastmathFlags", None)
        op = cls(lhs_v, rhs_v, pred, attrs)
        if isinstance(fm, FastMathAttr):
            op.fastmathFlags = fm
        return op

    def print(self, printer: Printer) -> None:
        flag = llvm.FCmpPredicateFlag.from_int(self.predicate.value.data)
        printer.print_string(f' "{flag}" ')
        printer.print_ssa_value(self.lhs)
        printer.print_string(", ")
        printer.print_ssa_value(self.rhs)
        attrs = dict(self.attributes)
        if self.fastmathFlags.data:
            attrs["fastmathFlags"] = self.fastmathFlags
        printer.print_op_attributes(attrs)
        printer.print_string(" : ")
        printer.print_attribute(self.lhs.type)


@irdl_op_definition
class SelectOp(IRDLOperation):
    """`llvm.select` with a scalar or a per-lane (vector<Nxi1>) condition."""

    name = "llvm.select"

    T: ClassVar = VarConstraint("T", AnyAttr())
    cond = operand_def(I1 | VectorType[I1])
    lhs = operand_def(T)
    rhs = operand_def(T)
    res = result_def(T)
    fastmathFlags = prop_def(FastMathAttr, default_value=FastMathAttr(None))

    traits = traits_def(Pure())
    assembly_format = "$cond `,` $lhs `,` $rhs attr-dict `:` type($cond) `,` type($res)"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, cond, lhs, rhs):
        super().__init__(operands=[cond, lhs, rhs], result_types=[SSAValue.get(lhs).type])


# ---------------------------------------------------------------- intrinsics


class _FastMathIntrinsic(IRDLOperation):
    """Shared base: a pure intrinsic in the generic `(operands) : (…) -> …` form with fastmath flags."""

    fastmathFlags = prop_def(FastMathAttr, default_value=FastMathAttr(None))
    traits = traits_def(Pure())
    assembly_format = _INTR_FORMAT
    irdl_options = (ParsePropInAttrDict(),)

    def _build(self, operands: list, result_type: Attribute, fast_math) -> None:
        super().__init__(
            operands=operands, result_types=[result_type], properties={"fastmathFlags": _fm(fast_math)}
        )


class _FloatUnaryIntrinsic(_FastMathIntrinsic):
    T: ClassVar = VarConstraint("T", _FLOAT_OR_VEC)
    input = operand_def(T)
    res = result_def(T)

    def __init__(self, input: SSAValue | Operation, fast_math=None):
        self._build([input], SSAValue.get(input).type, fast_math)


class _FloatBinaryIntrinsic(_FastMathIntrinsic):
    T: ClassVar = VarConstraint("T", _FLOAT_OR_VEC)
    lhs = operand_def(T)
    rhs = operand_def(T)
    res = result_def(T)

    def __init__(self, lhs: SSAValue | Operation, rhs: SSAValue | Operation, fast_math=None):
        self._build([lhs, rhs], SSAValue.get(lhs).type, fast_math)


class _IntBinaryIntrinsic(IRDLOperation):
    T: ClassVar = VarConstraint("T", _INT_OR_VEC)
    lhs = operand_def(T)
    rhs = operand_def(T)
    res = result_def(T)
    traits = traits_def(Pure())
    assembly_format = _INTR_FORMAT

    def __init__(self, lhs: SSAValue | Operation, rhs: SSAValue | Operation):
        super().__init__(operands=[lhs, rhs], result_types=[SSAValue.get(lhs).type])


@irdl_op_definition
class FLog10Op(_FloatUnaryIntrinsic):
    """Base-10 logarithm."""

    name = "llvm.intr.log10"


@irdl_op_definition
class FRoundOp(_FloatUnaryIntrinsic):
    """Round to nearest, ties away from zero."""

    name = "llvm.intr.round"


@irdl_op_definition
class FRoundEvenOp(_FloatUnaryIntrinsic):
    """Round to nearest, ties to even."""

    name = "llvm.intr.roundeven"


@irdl_op_definition
class FTruncOp(_FloatUnaryIntrinsic):
    """Round toward zero."""

    name = "llvm.intr.trunc"


@irdl_op_definition
class FMaximumOp(_FloatBinaryIntrinsic):
    """IEEE 754-2019 maximum: NaN if either is NaN, -0 < +0."""

    name = "llvm.intr.maximum"


@irdl_op_definition
class FMinimumOp(_FloatBinaryIntrinsic):
    """IEEE 754-2019 minimum: NaN if either is NaN, -0 < +0."""

    name = "llvm.intr.minimum"


@irdl_op_definition
class FMulAddOp(_FastMathIntrinsic):
    """a*b+c, fused if the target has a fast FMA (may round twice otherwise)."""

    name = "llvm.intr.fmuladd"

    T: ClassVar = VarConstraint("T", _FLOAT_OR_VEC)
    a = operand_def(T)
    b = operand_def(T)
    c = operand_def(T)
    res = result_def(T)

    def __init__(self, a, b, c, fast_math=None):
        self._build([a, b, c], SSAValue.get(a).type, fast_math)


@irdl_op_definition
class FPowIOp(_FastMathIntrinsic):
    """x ** n for an i32 exponent."""

    name = "llvm.intr.powi"

    T: ClassVar = VarConstraint("T", _FLOAT_OR_VEC)
    val = operand_def(T)
    power = operand_def(IntegerType)
    res = result_def(T)

    def __init__(self, val, power, fast_math=None):
        self._build([val, power], SSAValue.get(val).type, fast_math)


@irdl_op_definition
class SMaxOp(_IntBinaryIntrinsic):
    """Signed integer maximum."""

    name = "llvm.intr.smax"


@irdl_op_definition
class SMinOp(_IntBinaryIntrinsic):
    """Signed integer minimum."""

    name = "llvm.intr.smin"


@irdl_op_definition
class UMaxOp(_IntBinaryIntrinsic):
    """Unsigned integer maximum."""

    name = "llvm.intr.umax"


@irdl_op_definition
class UMinOp(_IntBinaryIntrinsic):
    """Unsigned integer minimum."""

    name = "llvm.intr.umin"


@irdl_op_definition
class AbsOp(IRDLOperation):
    """Integer absolute value: `"llvm.intr.abs"(%x) <{is_int_min_poison = false}> : (i32) -> i32`."""

    name = "llvm.intr.abs"

    T: ClassVar = VarConstraint("T", _INT_OR_VEC)
    input = operand_def(T)
    res = result_def(T)
    is_int_min_poison = prop_def(BoolAttr)
    traits = traits_def(Pure())
    # MLIR has no custom form for this op either: it prints generically.

    def __init__(self, input: SSAValue | Operation, is_int_min_poison: bool = False):
        super().__init__(
            operands=[input],
            result_types=[SSAValue.get(input).type],
            properties={"is_int_min_poison": BoolAttr.from_bool(is_int_min_poison)},
        )


class _VectorReduceIntrinsic(_FastMathIntrinsic):
    """(vector<NxT>) -> T, no start value."""

    vector = operand_def(VectorType)
    res = result_def()

    def __init__(self, vector: SSAValue | Operation, fast_math=None):
        vt = SSAValue.get(vector).type
        assert isinstance(vt, VectorType)
        self._build([vector], vt.element_type, fast_math)


@irdl_op_definition
class VectorReduceFMaxOp(_VectorReduceIntrinsic):
    """Largest lane (maxnum semantics)."""

    name = "llvm.intr.vector.reduce.fmax"


@irdl_op_definition
class VectorReduceFMinOp(_VectorReduceIntrinsic):
    """Smallest lane (minnum semantics)."""

    name = "llvm.intr.vector.reduce.fmin"


@irdl_op_definition
class VectorReduceFMaximumOp(_VectorReduceIntrinsic):
    """Largest lane (NaN-propagating)."""

    name = "llvm.intr.vector.reduce.fmaximum"


@irdl_op_definition
class VectorReduceFMinimumOp(_VectorReduceIntrinsic):
    """Smallest lane (NaN-propagating)."""

    name = "llvm.intr.vector.reduce.fminimum"


@irdl_op_definition
class VectorReduceAddOp(_VectorReduceIntrinsic):
    """Integer sum of the lanes."""

    name = "llvm.intr.vector.reduce.add"


NEW_OPS: tuple[type[IRDLOperation], ...] = (
    FPToSIOp,
    FPToUIOp,
    UIToFPOp,
    ExtractElementOp,
    FLog10Op,
    FRoundOp,
    FRoundEvenOp,
    FTruncOp,
    FMaximumOp,
    FMinimumOp,
    FMulAddOp,
    FPowIOp,
    SMaxOp,
    SMinOp,
    UMaxOp,
    UMinOp,
    AbsOp,
    VectorReduceFMaxOp,
    VectorReduceFMinOp,
    VectorReduceFMaximumOp,
    VectorReduceFMinimumOp,
    VectorReduceAddOp,
)
REPLACED_OPS: tuple[type[IRDLOperation], ...] = (FCmpOp, SelectOp)


def _extend_llvm_dialect() -> None:
    ops = llvm.LLVM._operations  # noqa: SLF001 - the only way to add ops to a dialect
    by_name = {op.name: i for i, op in enumerate(ops)}
    for op in REPLACED_OPS + NEW_OPS:
        if op.name in by_name:
            ops[by_name[op.name]] = op
        else:
            ops.append(op)


_extend_llvm_dialect()


def load_into(ctx) -> None:
    """Make a Context that already loaded `llvm` know the extension ops too."""
    if "llvm" not in {d.name for d in ctx.loaded_dialects}:
        return
    for op in REPLACED_OPS + NEW_OPS:
        known = ctx._loaded_ops.get(op.name)  # noqa: SLF001
        if known is not op:
            ctx._loaded_ops[op.name] = op  # noqa: SLF001


# ---------------------------------------------------------------- llvmlite translation


def _mangle(t: ir.Type) -> str:
    if isinstance(t, ir.VectorType):
        return f"v{t.count}{_mangle(t.element)}"
    if isinstance(t, ir.FloatType):
        return "f32"
    if isinstance(t, ir.DoubleType):
        return "f64"
    if isinstance(t, ir.HalfType):
        return "f16"
    if isinstance(t, ir.IntType):
        return f"i{t.width}"
    raise LLVMTranslationException(f"cannot mangle intrinsic type {t}")


def _intrinsic(
    module: ir.Module, base: str, overloads: list[ir.Type], ret: ir.Type, args: list[ir.Type]
) -> ir.Function:
    name = ".".join([base] + [_mangle(t) for t in overloads])
    if name in module.globals:
        return module.globals[name]
    return ir.Function(module, ir.FunctionType(ret, args), name=name)


def _flags(op: Operation) -> list[str]:
    fm = op.properties.get("fastmathFlags")
    if isinstance(fm, FastMathAttr):
        return [f.value for f in fm.data]
    return []


# op class -> LLVM intrinsic base name; overloaded on the result type
_SAME_TYPE_INTRINSICS: dict[type[Operation], str] = {
    llvm.FAbsOp: "llvm.fabs",
    llvm.FCeilOp: "llvm.ceil",
    llvm.FSqrtOp: "llvm.sqrt",
    llvm.FFloorOp: "llvm.floor",
    llvm.FExp2Op: "llvm.exp2",
    llvm.FLogOp: "llvm.log",
    llvm.FExpOp: "llvm.exp",
    llvm.FSinOp: "llvm.sin",
    llvm.FCosOp: "llvm.cos",
    llvm.FLog2Op: "llvm.log2",
    llvm.FPowOp: "llvm.pow",
    llvm.VectorFMaxOp: "llvm.maxnum",
    llvm.VectorFMinOp: "llvm.minnum",
    llvm.FCopySignOp: "llvm.copysign",
    llvm.FMAOp: "llvm.fma",
    FLog10Op: "llvm.log10",
    FRoundOp: "llvm.round",
    FRoundEvenOp: "llvm.roundeven",
    FTruncOp: "llvm.trunc",
    FMaximumOp: "llvm.maximum",
    FMinimumOp: "llvm.minimum",
    FMulAddOp: "llvm.fmuladd",
    SMaxOp: "llvm.smax",
    SMinOp: "llvm.smin",
    UMaxOp: "llvm.umax",
    UMinOp: "llvm.umin",
}

# (vector) -> element, overloaded on the vector type
_REDUCE_INTRINSICS: dict[type[Operation], str] = {
    VectorReduceFMaxOp: "llvm.vector.reduce.fmax",
    VectorReduceFMinOp: "llvm.vector.reduce.fmin",
    VectorReduceFMaximumOp: "llvm.vector.reduce.fmaximum",
    VectorReduceFMinimumOp: "llvm.vector.reduce.fminimum",
    VectorReduceAddOp: "llvm.vector.reduce.add",
}

# (start, vector) -> element, overloaded on the vector type
_START_REDUCE_INTRINSICS: dict[type[Operation], str] = {
    llvm.VectorReduceFAddOp: "llvm.vector.reduce.fadd",
    llvm.VectorReduceFMulOp: "llvm.vector.reduce.fmul",
}

_CAST_NAMES: dict[type[Operation], str] = {
    FPToSIOp: "fptosi",
    FPToUIOp: "fptoui",
    UIToFPOp: "uitofp",
}


def convert_op_ext(op: Operation, builder: ir.IRBuilder, val_map, block_map=None):
    """Translate one llvm-dialect op to llvmlite; falls back to xDSL's `convert_op`."""
    from xdsl.backend.llvm.convert_op import convert_op as xdsl_convert_op
    from xdsl.backend.llvm.convert_type import convert_type

    kind = type(op)
    args = [val_map[v] for v in op.operands]
    if kind in _SAME_TYPE_INTRINSICS:
        ret = convert_type(op.results[0].type)
        fn = _intrinsic(builder.module, _SAME_TYPE_INTRINSICS[kind], [ret], ret, [a.type for a in args])
        val_map[op.results[0]] = builder.call(fn, args, fastmath=_flags(op))
    elif kind in _REDUCE_INTRINSICS:
        ret = convert_type(op.results[0].type)
        fn = _intrinsic(builder.module, _REDUCE_INTRINSICS[kind], [args[0].type], ret, [args[0].type])
        val_map[op.results[0]] = builder.call(fn, args, fastmath=_flags(op))
    elif kind in _START_REDUCE_INTRINSICS:
        ret = convert_type(op.results[0].type)
        fn = _intrinsic(
            builder.module, _START_REDUCE_INTRINSICS[kind], [args[1].type], ret, [a.type for a in args]
        )
        val_map[op.results[0]] = builder.call(fn, args, fastmath=_flags(op))
    elif kind is FPowIOp:
        ret = convert_type(op.results[0].type)
        fn = _intrinsic(builder.module, "llvm.powi", [ret, args[1].type], ret, [a.type for a in args])
        val_map[op.results[0]] = builder.call(fn, args, fastmath=_flags(op))
    elif kind is AbsOp:
        assert isinstance(op, AbsOp)
        ret = convert_type(op.res.type)
        fn = _intrinsic(builder.module, "llvm.abs", [ret], ret, [ret, ir.IntType(1)])
        poison = ir.Constant(ir.IntType(1), int(op.is_int_min_poison.value.data != 0))
        val_map[op.res] = builder.call(fn, [args[0], poison])
    elif kind in _CAST_NAMES:
        instr = ir.instructions.CastInstr(
            builder.block, _CAST_NAMES[kind], args[0], convert_type(op.results[0].type)
        )
        builder._insert(instr)  # noqa: SLF001 - llvmlite has no generic cast builder
        val_map[op.results[0]] = instr
    elif kind is SelectOp:
        val_map[op.results[0]] = builder.select(args[0], args[1], args[2])
    elif kind is ExtractElementOp:
        val_map[op.results[0]] = builder.extract_element(args[0], args[1])
    elif kind is llvm.StoreOp and getattr(args[1].type, "pointee", args[0].type) != args[0].type:
        # llvmlite's typed pointers: a vector stored through the element pointer (offset 0
        # of an alloca) needs the pointer cast to the vector type
        assert isinstance(op, llvm.StoreOp)
        if isinstance(args[0].type, ir.PointerType):  # a pointer stored into an i64 slot
            store = ir.instructions.StoreInstr(builder.block, args[0], args[1])
            builder._insert(store)  # noqa: SLF001 - llvmlite's store() insists on typed pointees
        else:
            store = builder.store(args[0], builder.bitcast(args[1], args[0].type.as_pointer()))
        if op.alignment:
            store.align = op.alignment.value.data
    elif kind is llvm.CallIntrinsicOp and _retype_pointer_args(builder, op, args):
        # llvmlite's typed pointers: `llvm.memset.p0.i64` is declared with the pointer type of
        # its first use (float*); a later call on an i64 buffer bitcasts its pointers to it
        xdsl_convert_op(op, builder, _PointerArgMap(val_map, op, args), block_map)
    elif isinstance(op, FCmpOp | llvm.FCmpOp):
        pred = llvm.FCmpPredicateFlag.from_int(op.predicate.value.data).value
        res_t = convert_type(op.results[0].type)
        if pred in ("_false", "_true"):
            val_map[op.results[0]] = ir.Constant(
                res_t,
                int(pred == "_true") if not isinstance(res_t, ir.VectorType) else [int(pred == "_true")] * res_t.count,
            )
        else:
            instr = ir.instructions.FCMPInstr(builder.block, pred, args[0], args[1], flags=_flags(op))
            builder._insert(instr)  # noqa: SLF001
            val_map[op.results[0]] = instr
    else:
        xdsl_convert_op(op, builder, val_map, block_map)


def _retype_pointer_args(builder: ir.IRBuilder, op: Operation, args: list) -> bool:
    """Bitcast (in `args`) pointer arguments of an already-declared intrinsic to its parameter
    types; True when one needed it."""
    try:
        fn = builder.module.get_global(op.intrin.data)  # type: ignore[attr-defined]
    except KeyError:
        return False
    changed = False
    for k, (a, want) in enumerate(zip(args, fn.function_type.args)):
        if a.type != want and isinstance(a.type, ir.PointerType) and isinstance(want, ir.PointerType):
            args[k] = builder.bitcast(a, want)
            changed = True
    return changed


class _PointerArgMap(dict):
    """val_map with the call's operands mapped to the bitcast arguments."""

    def __init__(self, val_map, op: Operation, args: list):
        super().__init__(val_map)
        self._base = val_map
        for v, a in zip(op.operands, args):
            self[v] = a

    def __setitem__(self, key, value):
        super().__setitem__(key, value)
        if getattr(self, "_base", None) is not None:
            self._base[key] = value


def install_llvmlite_hooks() -> None:
    """Route `xdsl.backend.llvm.convert.convert_module` through `convert_op_ext` (idempotent)."""
    import xdsl.backend.llvm.convert as convert_mod

    convert_mod.convert_op = convert_op_ext
