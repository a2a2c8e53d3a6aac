"""Lower `math` ops to LLVM intrinsics, or to libm calls where LLVM has no intrinsic.

    %0 = math.exp %x : vector<8xf32>   ->  %0 = llvm.intr.exp(%x) : (vector<8xf32>) -> vector<8xf32>
    %1 = math.rsqrt %y : f32           ->  %s = llvm.intr.sqrt(%y) ; %1 = llvm.fdiv %one, %s
    %2 = math.tanh %z : f32            ->  %2 = llvm.call @tanhf(%z) : (f32) -> f32
                                           llvm.func @tanhf(f32) -> f32   (declared once, external)

A libm function takes scalars, so a vector operand is scalarized lane by lane:

    %e0 = llvm.extractelement %v[%c0 : i64] ; %r0 = llvm.call @tanhf(%e0)
    %acc1 = llvm.insertelement %r0, %undef[%c0 : i64] ; … one lane after the other

Option `fast-math=true` adds `reassoc contract` to every call and intrinsic.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import llvm, math
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    SymbolTable,
    VectorType,
    f32,
    i32,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import DiagnosticException

from minimlir.dialects import llvm_ext as ext
from minimlir.passes.to_llvm._conversion import convert
from minimlir.passes.to_llvm._common import from_llvm, operands_to_llvm
from minimlir.passes.to_llvm.arith import fastmath_for

_INTRINSIC: dict[type[Operation], type[Operation]] = {
    math.AbsFOp: llvm.FAbsOp,
    math.CeilOp: llvm.FCeilOp,
    math.FloorOp: llvm.FFloorOp,
    math.SqrtOp: llvm.FSqrtOp,
    math.ExpOp: llvm.FExpOp,
    math.Exp2Op: llvm.FExp2Op,
    math.LogOp: llvm.FLogOp,
    math.Log2Op: llvm.FLog2Op,
    math.SinOp: llvm.FSinOp,
    math.CosOp: llvm.FCosOp,
    math.PowFOp: llvm.FPowOp,
    math.CopySignOp: llvm.FCopySignOp,
    math.FmaOp: llvm.FMAOp,
    math.Log10Op: ext.FLog10Op,
    math.RoundOp: ext.FRoundOp,
    math.RoundEvenOp: ext.FRoundEvenOp,
    math.TruncOp: ext.FTruncOp,
}

# math op -> libm base name (f32 gets the `f` suffix: tanhf)
_LIBM: dict[type[Operation], str] = {
    math.TanhOp: "tanh",
    math.ErfOp: "erf",
    math.ExpM1Op: "expm1",
    math.Log1pOp: "log1p",
    math.AtanOp: "atan",
    math.Atan2Op: "atan2",
    math.AcosOp: "acos",
    math.AsinOp: "asin",
    math.AcoshOp: "acosh",
    math.AsinhOp: "asinh",
    math.AtanhOp: "atanh",
    math.CbrtOp: "cbrt",
    math.CoshOp: "cosh",
    math.SinhOp: "sinh",
    math.TanOp: "tan",
}


def _new_intrinsic(cls: type[Operation], args: list[SSAValue], fm: llvm.FastMathAttr) -> Operation:
    """xDSL's intrinsic constructors disagree on their signatures: build them generically."""
    return cls.create(
        operands=args, result_types=[args[0].type], properties={"fastmathFlags": fm}
    )


def libm_function(module: ModuleOp, base: str, scalar: Attribute, arity: int) -> str:
    """Declare `tanhf`-style libm function once in `module` (external llvm.func); its name."""
    if isinstance(scalar, Float32Type):
        name = base + "f"
    elif isinstance(scalar, Float64Type):
        name = base
    else:
        raise DiagnosticException(f"no libm function '{base}' for type {scalar}")
    if SymbolTable.lookup_symbol(module, name) is None:
        decl = llvm.FuncOp(
            name,
            llvm.LLVMFunctionType([scalar] * arity, scalar),
            linkage=llvm.LinkageAttr("external"),
        )
        Rewriter.insert_op(decl, InsertPoint.at_end(module.body.block))
    return name


def _scalarize(
    callee: str, args: list[SSAValue], vt: VectorType, fm: llvm.FastMathAttr, via: Attribute | None = None
) -> list[Operation]:
    """Call a scalar function on every lane of `args` and rebuild the vector (with `via`: each
    lane extended to that type for the call and truncated back)."""
    ops: list[Operation] = [acc := llvm.UndefOp(vt)]
    value: SSAValue = acc.results[0]
    for lane in range(vt.get_shape()[0]):
        idx = llvm.ConstantOp(IntegerAttr(lane, i64), i64)
        elems: list[Operation] = [ext.ExtractElementOp(a, idx) for a in args]
        ops += [idx, *elems]
        if via is not None:
            elems = [llvm.FPExtOp(e.results[0], via) for e in elems]
            ops += elems
        call = llvm.CallOp(callee, *[e.results[0] for e in elems], return_type=via or vt.element_type, fastmath=fm)
        ops.append(call)
        result = call.results[0]
        if via is not None:
            ops.append(trunc := llvm.FPTruncOp(result, vt.element_type))
            result = trunc.results[0]
        ins = llvm.InsertElementOp(value, result, idx)
        ops.append(ins)
        value = ins.results[0]
    return ops


def _const_like(value: float, t: Attribute) -> llvm.ConstantOp:
    if isinstance(t, VectorType):
        return llvm.ConstantOp(DenseIntOrFPElementsAttr.from_list(t, [value]), t)
    return llvm.ConstantOp(FloatAttr(value, t), t)


@dataclass
class LowerMathOp(RewritePattern):
    """math.X -> llvm.intr.X, or a (scalarized) libm call."""

    module: ModuleOp
    fast_math: bool = False

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not op.name.startswith("math."):
            return
        kind = type(op)
        fm = fastmath_for(op, self.fast_math)
        args = operands_to_llvm(op.operands, rewriter, op)
        t = args[0].type
        new_ops: list[Operation]
        if kind in _INTRINSIC:
            new_ops = [_new_intrinsic(_INTRINSIC[kind], args, fm)]
        elif isinstance(op, math.RsqrtOp):
            sqrt = _new_intrinsic(llvm.FSqrtOp, args, fm)
            one = _const_like(1.0, t)
            new_ops = [sqrt, one, llvm.FDivOp(one.results[0], sqrt.results[0], fm)]
        elif isinstance(op, math.AbsIOp):
            new_ops = [ext.AbsOp(args[0], is_int_min_poison=False)]
        elif isinstance(op, math.FPowIOp):
            power = args[1]
            pw = power.type
            assert isinstance(pw, IntegerType)
            new_ops = []
            if pw.width.data > 32:
                new_ops.append(llvm.TruncOp(power, i32))
            elif pw.width.data < 32:
                new_ops.append(llvm.SExtOp(power, i32))
            if new_ops:
                power = new_ops[-1].results[0]
            new_ops.append(ext.FPowIOp(args[0], power, fm))
        elif kind in _LIBM:
            scalar = t.element_type if isinstance(t, VectorType) else t
            # libm has no f16 functions: call the f32 one on the extended value, then truncate
            via = f32 if isinstance(scalar, Float16Type) else None
            callee = libm_function(self.module, _LIBM[kind], via or scalar, len(args))
            if isinstance(t, VectorType):
                new_ops = _scalarize(callee, args, t, fm, via)
            elif via is not None:
                exts = [llvm.FPExtOp(a, via) for a in args]
                call = llvm.CallOp(callee, *[e.results[0] for e in exts], return_type=via, fastmath=fm)
                new_ops = [*exts, call, llvm.FPTruncOp(call.results[0], t)]
            else:
                new_ops = [llvm.CallOp(callee, *args, return_type=t, fastmath=fm)]
        else:
            return  # left for the legality check to report
        casts, values = from_llvm([new_ops[-1].results[0]], [op.results[0].type])
        rewriter.replace(op, new_ops + casts, values)


@dataclass(frozen=True)
class ConvertMathToLlvmPass(ModulePass):
    """math -> llvm intrinsics / libm calls."""

    name = "convert-math-to-llvm"

    fast_math: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        ext.load_into(ctx)
        convert(op, {"math": LowerMathOp(op, self.fast_math)}, illegal=("math",))
