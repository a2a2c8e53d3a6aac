"""Expand f32 `math.exp`, `math.tanh` and `math.erf`, vector and scalar, into polynomial code (MLIR's
math-polynomial-approximation): straight-line arithmetic instead of one libm call per lane.

    %y = math.exp %x : vector<8xf32>
      ->
    %xc = clamp(%x, -104, 89)                     ; a NaN stays NaN
    %nf = fmuladd(%xc, log2(e), 1.5 * 2^23)       ; round(xc * log2 e) in its low mantissa bits
    %n  = %nf - 1.5 * 2^23 ; %k = bitcast(%nf) - bits(1.5 * 2^23) + 126   ; %k = n + 126
    %r  = fmuladd(-%n, ln2_hi, %xc) ; %r = fmuladd(-%n, ln2_lo, %r)
    %p2 = 2 + 2r + r^2 * 2Q(r)                    ; 2 exp(r), |r| <= ln2/2, Q of degree 4 (Horner)
    %y  = %p2 * bitcast(max(%k, 1) << 23)         ; 2p * 2^(n-1): one scaling reaches 2^128
    %y  = n <= -126 ? bitcast(roundeven(%p2 * 2^(n + 148)) to i32) : %y  ; subnormals as integers

It runs right before convert-math-to-llvm (convert-math-to-llvm would otherwise scalarize these into
`expf`/`tanhf`/`erff` calls per lane) and emits llvm dialect ops directly (`llvm.intr.fmuladd` for the
polynomial steps: fused where the target has FMA, a multiply and an add where not; `llvm.fcmp` and
`llvm.select` on vectors, which `arith.cmpf` does not allow in xDSL). Scalar f32 gets the same code:
a vector loop's scalar remainder (ViT's softmax rows of 197: 5 `expf` calls a row) then costs no call
and computes the lanes it finishes exactly as the vector lanes. f16 and f64 are left to
convert-math-to-llvm. Options `exp`, `tanh`, `erf` (all true) turn each expansion off.

The functions (max error over a dense sweep of f32 inputs against float64, in f32 ulp;
tests/unit/to_llvm/test_math_approx.py asserts it):

- exp (≤ 2 ulp): clamp to [-104, 89] (exp(89) overflows to +inf, exp(-104) underflows to +0, so the
  clamp keeps the result exact at the ends), Cody-Waite reduction with ln2 split into a 9-bit head
  (n*ln2_hi exact for |n| <= 150 without FMA) and a tail, degree-4 Q, then one exponent scaling of
  2 exp(r) by 2^(n-1) (normal for n up to 128); results below 2^-125 are built as the subnormal's
  integer bits (rounded once, by a roundeven), so no lane computes with subnormal numbers (a
  microcode assist each on x86). n comes from the round-by-adding-1.5*2^23 trick, whose sum holds
  n in its bits: no roundps, no conversion, and a NaN flows through as NaN (its lane takes the
  normal path, tested unsigned on its bits) with no select to restore it. 25 operations, not 37:
  the 16 registers of AVX2 hold its constants with fewer spills (exp 0.63 -> 0.55 ms on 2^18
  elements, Zen 1).
- tanh (≤ 3 ulp): |x| < 0.55: x + x*s*P(s), s = x^2, P of degree 5; else (1 - e)/(1 + e) with
  e = exp(-2|x|) (no cancellation: e <= 1/3), sign restored with copysign; ±inf -> ±1, -0 -> -0.
  Its exp and erf's are `exp_inner`: the argument clamped to [-86, 88], one exponent scaling, no
  subnormal or NaN path (the caller restores NaN lanes). A `math.exp` marked `loop.exp_clamped`
  (elementfn.CLAMPED_EXP: tanh-GELU's x / (1 + exp(a)), whose result does not change) is one too.
  Polynomials are evaluated in Estrin's form (shorter dependency chains than Horner's; the accuracy
  bounds hold).
- erf (≤ 3 ulp): |x| < 0.9: x*c0 + x*(c0_lo + s*P(s)) (c0 = 2/sqrt(pi) split in two), P of degree 5;
  0.9 <= |x| < 3.92: 1 - exp(L(|x|)) with L of degree 6 approximating log(erfc(|x|)); |x| >= 3.92:
  1 (erf rounds to 1 in f32 there); copysign.

The coefficients are our own fit: Lawson's iteratively reweighted least squares (which converges to
the minimax polynomial) on 4000 Chebyshev nodes of each interval, in float64, weighted by the error
measure that matters (relative error of the result; for L, the error it causes in erf relative to
erf), rounded to f32. tests/unit/to_llvm/test_math_approx.py re-derives them.
"""

from __future__ import annotations

import math as pymath
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import llvm, math
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    FloatAttr,
    Float32Type,
    IntegerAttr,
    ModuleOp,
    VectorType,
    i32,
    i64,
)
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern

from minimlir.dialects import llvm_ext as ext
from minimlir.dialects.elementfn import CLAMPED_EXP

# exp(r) = 1 + r + r^2 * Q(r), |r| <= ln2/2 (relative fit error 3.1e-9)
EXP_Q = (0.4999999403953552, 0.1666652113199234, 0.04166838899254799, 0.008368710055947304,
         0.0013814610429108143)
# tanh(x) = x + x * s * P(s), s = x^2 <= 0.55^2 (relative fit error 1.6e-10)
TANH_P = (-0.3333333134651184, 0.13333293795585632, -0.05395964905619621, 0.021782826632261276,
          -0.008413959294557571, 0.0023958240635693073)
TANH_SMALL = 0.55
# erf(x) = x * (c0 + s * P(s)), s = x^2 <= 0.9^2; ERF_P[0] = c0 (relative fit error 2.9e-10)
ERF_P = (1.128379225730896, -0.37612634897232056, 0.11283715069293976, -0.026860510930418968,
         0.005203863140195608, -0.0008175677503459156, 8.513248030794784e-05)
ERF_C0_LO = 2.0 / pymath.sqrt(pymath.pi) - ERF_P[0]  # the part of 2/sqrt(pi) that c0 misses
ERF_SMALL = 0.9
# log(erfc(x)) = L(x), 0.9 <= x <= 3.92 (error in erf, relative to erf: 1.5e-9)
ERFC_LOG = (-0.00016643948038108647, -1.127797245979309, -0.6369760036468506, -0.10411374270915985,
            0.022315246984362602, -0.0030654994770884514, 0.00019822065951302648)
ERF_ONE = 3.92  # erf(x) rounds to 1.0f from here on

LOG2E = 1.4426950408889634
LN2_HI = 0.693359375  # 355/512: 9 significant bits, so n * LN2_HI is exact for |n| < 2^15
LN2_LO = pymath.log(2.0) - LN2_HI
EXP_LO, EXP_HI = -104.0, 89.0
ROUND_MAGIC = 12582912.0  # 1.5 * 2^23: x + ROUND_MAGIC rounds x to an integer, kept in the low bits
ROUND_MAGIC_BITS = 0x4B400000
# exp_inner's clamp: 2^n stays normal (n >= -124) and p * 2^n finite (n <= 127) in one scaling
EXP_IN_LO, EXP_IN_HI = -86.0, 88.0


class _Emit:
    """Builds llvm-dialect vector code before one op: `c(1.0)` a splat constant, `mul(a, b)`, ..."""

    def __init__(self, t: VectorType | Float32Type):
        self.t = t
        self.vector = isinstance(t, VectorType)
        self.it = VectorType(i32, t.get_shape()) if isinstance(t, VectorType) else i32
        self.ops: list[Operation] = []
        self._consts: dict[tuple, SSAValue] = {}

    def _e(self, op: Operation) -> SSAValue:
        self.ops.append(op)
        return op.results[0]

    def c(self, v: float) -> SSAValue:
        key = ("f", float(v))
        if key not in self._consts:
            value = (DenseIntOrFPElementsAttr.from_list(self.t, [float(v)]) if self.vector
                     else FloatAttr(float(v), self.t))
            self._consts[key] = self._e(llvm.ConstantOp(value, self.t))
        return self._consts[key]

    def ci(self, v: int) -> SSAValue:
        key = ("i", v)
        if key not in self._consts:
            value = DenseIntOrFPElementsAttr.from_list(self.it, [v]) if self.vector else IntegerAttr(v, i32)
            self._consts[key] = self._e(llvm.ConstantOp(value, self.it))
        return self._consts[key]

    def mul(self, a, b):
        return self._e(llvm.FMulOp(a, b))

    def add(self, a, b):
        return self._e(llvm.FAddOp(a, b))

    def sub(self, a, b):
        return self._e(llvm.FSubOp(a, b))

    def div(self, a, b):
        return self._e(llvm.FDivOp(a, b))

    def fma(self, a, b, c):
        return self._e(ext.FMulAddOp(a, b, c))

    def cmp(self, a, b, pred: str):
        return self._e(ext.FCmpOp(a, b, pred))

    def select(self, cond, a, b):
        return self._e(ext.SelectOp(cond, a, b))

    def abs(self, a):
        return self._e(llvm.FAbsOp(a, self.t))

    def copysign(self, mag, sign):
        return self._e(llvm.FCopySignOp(mag, sign))

    def poly(self, x, coeffs, horner: bool = False) -> SSAValue:
        """sum(coeffs[k] * x^k) in Estrin's form: pairs c0 + c1*x, combined with x^2, x^4, ...
        (degree 6: 3 dependent multiply-adds after x^2 and x^4, not Horner's 6; each lane's chain
        is what limits a core that keeps only a few vectors of it in flight). With `horner`,
        Horner's form: every multiply-add overwrites its running sum, none a constant, which
        x86's destructive three-operand FMA needs (exp: Estrin's constant pairs cost a register
        copy each, in a loop that already holds more constants than there are registers)."""
        if horner:
            acc = self.c(coeffs[-1])
            for k in reversed(coeffs[:-1]):
                acc = self.fma(acc, x, self.c(k))
            return acc
        terms = [self.c(k) for k in coeffs]
        power = x
        while len(terms) > 1:
            pairs = [self.fma(terms[i + 1], power, terms[i]) for i in range(0, len(terms) - 1, 2)]
            terms = pairs + ([terms[-1]] if len(terms) % 2 else [])
            if len(terms) > 1:
                power = self.mul(power, power)
        return terms[0]

    def pow2(self, biased) -> SSAValue:
        """2^(e - 127) for an i32 vector e of biased exponents, 1 <= e <= 254: e shifted into place."""
        return self._e(llvm.BitcastOp(self._e(llvm.ShlOp(biased, self.ci(23))), self.t))

    def exp_reduce(self, xc, bias: int, twice: bool = False) -> tuple[SSAValue, SSAValue]:
        """exp(xc) = p * 2^n for xc in [-104, 89] or NaN: (k, p) with k = n + `bias` as i32 and p =
        exp(r) (2 exp(r) if `twice`) for the Cody-Waite remainder r = xc - n*ln2 (|r| <= ln2/2),
        1 + r + r^2 * Q(r). n = round(xc * log2 e) comes from one multiply-add with ROUND_MAGIC
        (1.5 * 2^23: the sum's last bit is worth 1, so it rounds to an integer, and its low mantissa
        bits are n): k is the sum's bits minus a constant, no roundps and no float-to-int
        conversion, and defined on every lane (a NaN's bits are some integer; its r and p are
        NaN)."""
        nf = self.fma(xc, self.c(LOG2E), self.c(ROUND_MAGIC))
        n = self.sub(nf, self.c(ROUND_MAGIC))
        neg_n = self._e(llvm.FNegOp(n))
        r = self.fma(neg_n, self.c(LN2_HI), xc)
        r = self.fma(neg_n, self.c(LN2_LO), r)
        k = self._e(llvm.SubOp(self._e(llvm.BitcastOp(nf, self.it)), self.ci(ROUND_MAGIC_BITS - bias)))
        if twice:  # 2 + 2r + r^2 * 2Q(r): the same bits as 2 * p (scaling by 2 is exact)
            q = self.poly(r, tuple(2.0 * c for c in EXP_Q), horner=True)
            return k, self.add(self.fma(self.mul(r, r), q, self.add(r, r)), self.c(2.0))
        return k, self.add(self.fma(self.mul(r, r), self.poly(r, EXP_Q, horner=True), r), self.c(1.0))

    def exp(self, x) -> SSAValue:
        """exp(x), NaN in -> NaN out; see the module docstring."""
        lo, hi = self.c(EXP_LO), self.c(EXP_HI)
        xc = self.select(self.cmp(x, lo, "olt"), lo, x)  # NaN compares false: stays NaN ...
        xc = self.select(self.cmp(xc, hi, "ogt"), hi, xc)
        k, p2 = self.exp_reduce(xc, 126, twice=True)  # k = n + 126, -150 <= n <= 128; ... and p2 NaN
        # normal results (n >= -125): 2p * 2^(n-1), one exact scaling with 2^(n-1) normal for every
        # n up to 128 (exp(89) overflows to inf here, as it should)
        y = self.mul(p2, self.pow2(self._e(ext.SMaxOp(k, self.ci(1)))))
        # below 2^-125 (n <= -126): the subnormal's bits, m = round(2p * 2^(n + 148)) as an integer
        # (m >= 2^23 is the normal encoding of the same value), with no arithmetic on subnormal
        # numbers: on x86 each subnormal (or underflowing) result costs a microcode assist, and a
        # softmax over masked scores (x - max = -10000, clamped to -104) ran 1.8x slower
        t = self._e(llvm.AddOp(k, self.ci(22 + 127)))  # the scale's biased exponent, n + 275
        scale = self.pow2(self._e(ext.SMinOp(t, self.ci(22 + 127))))
        m = self._e(ext.FPToSIOp(self._e(ext.FRoundEvenOp(self.mul(p2, scale))), self.it))
        # n <= -126 is t <= 149 (125 <= t <= 403 for every number). The test is unsigned: a NaN's
        # t comes from its bits (0x344.. and up, or 2^31 and up with the sign bit set), so a NaN
        # takes the normal path, where its p2 is NaN (the subnormal path would make it a number)
        pred = IntegerAttr(llvm.ICmpPredicateFlag("ule").to_int(), i64)
        tiny = self._e(llvm.ICmpOp(t, self.ci(22 + 127), pred))
        return self.select(tiny, self._e(llvm.BitcastOp(m, self.t)), y)

    def exp_inner(self, x) -> SSAValue:
        """exp(x) for the exp inside tanh and erf, whose arguments either lie in [EXP_IN_LO, 0] or
        feed a lane the caller discards (or whose exact result there is below f32's half ulp of
        1): the argument is clamped to [EXP_IN_LO, EXP_IN_HI] (a NaN to EXP_IN_LO: the caller
        restores NaN lanes) and one exponent scaling suffices, no subnormal or NaN paths (16
        operations, not 25: the erf GELU of a 128 x 2048 matmul epilogue spent more in exp than
        onnxruntime's whole Gelu)."""
        xc = self.select(self.cmp(x, self.c(EXP_IN_LO), "ogt"), x, self.c(EXP_IN_LO))  # NaN -> lo
        xc = self.select(self.cmp(xc, self.c(EXP_IN_HI), "olt"), xc, self.c(EXP_IN_HI))
        k, p = self.exp_reduce(xc, 127)  # -124 <= n <= 127: k = n + 127 is 2^n's biased exponent
        return self.mul(p, self.pow2(k))

    def tanh(self, x) -> SSAValue:
        a = self.abs(x)
        s = self.mul(a, a)
        small = self.fma(self.mul(a, s), self.poly(s, TANH_P), a)
        # (|x| >= 43: e = exp(-86) ~ 4e-38, not exp(-2|x|); 1 - e and 1 + e round to 1 either way)
        e = self.exp_inner(self.mul(a, self.c(-2.0)))
        big = self.div(self.sub(self.c(1.0), e), self.add(self.c(1.0), e))
        y = self.select(self.cmp(a, self.c(TANH_SMALL), "olt"), small, big)
        y = self.select(self.cmp(x, x, "uno"), x, y)  # exp_inner does not keep NaN
        return self.copysign(y, x)

    def erf(self, x) -> SSAValue:
        a = self.abs(x)
        s = self.mul(a, a)
        t = self.mul(s, self.poly(s, ERF_P[1:]))
        small = self.fma(a, self.c(ERF_P[0]), self.mul(a, self.add(self.c(ERF_C0_LO), t)))
        mid = self.sub(self.c(1.0), self.exp_inner(self.poly(a, ERFC_LOG)))  # L in [-17.6, -1.6] where used
        y = self.select(self.cmp(a, self.c(ERF_ONE), "olt"), mid, self.c(1.0))  # NaN -> 1 here ...
        y = self.select(self.cmp(a, self.c(ERF_SMALL), "olt"), small, y)
        y = self.select(self.cmp(x, x, "uno"), x, y)  # ... and back to NaN
        return self.copysign(y, x)


@dataclass
class ExpandVectorMath(RewritePattern):
    """math.{exp,tanh,erf} on f32 or vector<Nxf32> -> polynomial llvm-dialect code."""

    exp: bool = True
    tanh: bool = True
    erf: bool = True

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if isinstance(op, math.ExpOp) and self.exp:
            kind = "exp_inner" if CLAMPED_EXP in op.attributes else "exp"
        elif isinstance(op, math.TanhOp) and self.tanh:
            kind = "tanh"
        elif isinstance(op, math.ErfOp) and self.erf:
            kind = "erf"
        else:
            return
        t = op.results[0].type
        if not (isinstance(t, Float32Type)
                or (isinstance(t, VectorType) and isinstance(t.element_type, Float32Type) and t.get_num_dims() == 1)):
            return
        b = _Emit(t)
        y = getattr(b, kind)(op.operands[0])
        rewriter.replace(op, b.ops, [y])


@dataclass(frozen=True)
class MathApproximatePass(ModulePass):
    """f32 exp/tanh/erf (vector or scalar) -> range reduction + minimax polynomials (no libm call)."""

    name = "convert-math-to-polynomials"

    exp: bool = True
    tanh: bool = True
    erf: bool = True

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        ext.load_into(ctx)
        PatternRewriteWalker(ExpandVectorMath(self.exp, self.tanh, self.erf),
                             apply_recursively=False).rewrite_module(op)

