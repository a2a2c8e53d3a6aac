"""Element functions: what one element of a graph op computes, as IR built with an `ElementBuilder`
(minimlir.dialects.builder). A unary graph op's `element(b, x)` (dialects/graph.py `_UnaryOp`)
calls them; graph-legalize calls that inside the kernel's block, where `b` is the kernel's
`Emitter` and `x` the loaded element:

    def element(self, b, x):                      # graph.hard_sigmoid
        return hard_sigmoid(b, x, self.alpha.value.data, self.beta.value.data)
  emits, in the block of the kernel:
    %0 = arith.constant 0.2 : f32 ; %1 = arith.mulf %0, %x ; … ; %y = arith.minimumf %c1, %3

`x` is a scalar of the op's element type (float or integer: each function says what it takes) or a
vector of it; constants take that element type (`fconst`). Nothing here knows about loops, buffers
or graph ops, so the dialect level can use it.
"""

from __future__ import annotations

import math as pymath

from xdsl.dialects import arith, math
from xdsl.dialects.builtin import AnyFloat, UnitAttr, f32, i1
from xdsl.ir import SSAValue

from minimlir.dialects.builder import ElementBuilder, element_type, is_float, is_unsigned


def fconst(b: ElementBuilder, value: float, like: SSAValue) -> SSAValue:
    """A constant of `like`'s element type."""
    return b.const(value, element_type(like.type))


def relu(b: ElementBuilder, x: SSAValue) -> SSAValue:
    """max(x, 0), any numeric type."""
    return b.max(x, b.const(0, element_type(x.type)))


def abs_(b: ElementBuilder, x: SSAValue) -> SSAValue:
    """|x|: math.absf / math.absi; an unsigned value is its own absolute value."""
    if is_unsigned(x.type):
        return x
    return b.emit((math.AbsFOp if is_float(x.type) else math.AbsIOp)(x))


def reciprocal(b: ElementBuilder, x: SSAValue) -> SSAValue:
    return b.div(fconst(b, 1.0, x), x)


def logical_not(b: ElementBuilder, x: SSAValue) -> SSAValue:
    """not x of an i1: x xor true."""
    return b.emit(arith.XOrIOp(x, b.const(1, i1)))


def clamp(b: ElementBuilder, x: SSAValue, lo: float | None, hi: float | None) -> SSAValue:
    """min(max(x, lo), hi); a None bound is no bound. For integers the bounds round inward."""
    t = element_type(x.type)
    if lo is not None:
        b_lo = b.const(lo if isinstance(t, AnyFloat) else pymath.ceil(lo), t)
        x = b.max(x, b_lo)
    if hi is not None:
        b_hi = b.const(hi if isinstance(t, AnyFloat) else pymath.floor(hi), t)
        x = b.min(x, b_hi)
    return x


def sigmoid(b: ElementBuilder, x: SSAValue) -> SSAValue:
    one = fconst(b, 1.0, x)
    return b.div(one, b.add(one, b.exp(b.neg(x))))


def expm1(b: ElementBuilder, x: SSAValue) -> SSAValue:
    return b.emit(math.ExpM1Op(x))


def sign(b: ElementBuilder, x: SSAValue) -> SSAValue:
    """-1 / 0 / 1; floats keep ±0 and NaN as they are (NumPy's sign)."""
    t = element_type(x.type)
    if is_unsigned(t):  # 0 or 1
        return b.select(b.cmp("gt", x, b.const(0, t)), b.const(1, t), b.const(0, t))
    zero, one, m_one = b.const(0, t), b.const(1, t), b.const(-1, t)
    neg = b.select(b.cmp("lt", x, zero), m_one, zero if not is_float(x.type) else x)
    return b.select(b.cmp("gt", x, zero), one, neg)


CLAMPED_EXP = "loop.exp_clamped"
"""A unit attribute on `math.exp`: its consumer gives the same result when the argument is clamped
to a finite range and a NaN argument gives any value (GELU's x / (1 + exp(a)): a NaN or an
overflowing exp comes with a NaN or a huge |x|). convert-math-to-polynomials then expands it into
the short exp without subnormal, overflow and NaN paths (`exp_inner`); elsewhere it is an exp."""


def gelu(b: ElementBuilder, x: SSAValue, approximate: str) -> SSAValue:
    """0.5 x (1 + erf(x / sqrt(2))), or with approximate "tanh" its tanh approximation
    0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3), computed as x / (1 + exp(-2u)): the same
    function (1 + tanh(u) = 2 / (1 + exp(-2u))) with one exp and one division instead of tanh's
    exp, division and small-argument polynomial, and no cancellation in 1 + tanh(u) near -1 (for
    x = -5 the tanh form keeps no correct digit in f32; this one keeps all). Of the specials, only
    x = -inf differs: -inf / (1 + exp(88)) is -inf, the tanh form's -inf * 0 is NaN."""
    if approximate == "tanh":
        c1 = -2.0 * pymath.sqrt(2.0 / pymath.pi)
        t = b.add(b.mul(fconst(b, c1 * 0.044715, x), b.mul(x, x)), fconst(b, c1, x))  # -2u / x
        exp = math.ExpOp(b.mul(t, x))
        exp.attributes[CLAMPED_EXP] = UnitAttr()
        e = b.emit(exp)
        return b.div(x, b.add(fconst(b, 1.0, x), e))
    # 0.5 x (1 + erf(x / sqrt(2)))
    half, one = fconst(b, 0.5, x), fconst(b, 1.0, x)
    t = b.emit(math.ErfOp(b.mul(x, fconst(b, 1.0 / pymath.sqrt(2.0), x))))
    return b.mul(b.mul(half, x), b.add(one, t))


def softplus(b: ElementBuilder, x: SSAValue) -> SSAValue:
    """log(1 + exp(x)) computed as max(x, 0) + log1p(exp(-|x|)): no overflow for large x."""
    zero = fconst(b, 0.0, x)
    ax = b.emit(math.AbsFOp(x))
    return b.add(b.max(x, zero), b.emit(math.Log1pOp(b.exp(b.neg(ax)))))


def unit_interval(b: ElementBuilder, v: SSAValue) -> SSAValue:
    """max(0, min(1, v))."""
    return b.max(fconst(b, 0.0, v), b.min(fconst(b, 1.0, v), v))


def hard_swish(b: ElementBuilder, x: SSAValue) -> SSAValue:
    """ONNX HardSwish: x * max(0, min(1, x / 6 + 0.5))."""
    gate = unit_interval(b, b.add(b.mul(fconst(b, 1.0 / 6.0, x), x), fconst(b, 0.5, x)))
    return b.mul(x, gate)


def hard_sigmoid(b: ElementBuilder, x: SSAValue, alpha: float, beta: float) -> SSAValue:
    """max(0, min(1, alpha * x + beta))."""
    a, c = fconst(b, alpha, x), fconst(b, beta, x)
    return unit_interval(b, b.add(b.mul(a, x), c))


def leaky_relu(b: ElementBuilder, x: SSAValue, alpha: float) -> SSAValue:
    """x < 0 ? alpha * x : x."""
    a = fconst(b, alpha, x)
    return b.select(b.cmp("lt", x, fconst(b, 0.0, x)), b.mul(a, x), x)


def elu(b: ElementBuilder, x: SSAValue, alpha: float) -> SSAValue:
    """x > 0 ? x : alpha * expm1(x)."""
    a = fconst(b, alpha, x)
    return b.select(b.cmp("gt", x, fconst(b, 0.0, x)), x, b.mul(a, expm1(b, x)))


def selu(b: ElementBuilder, x: SSAValue, alpha: float, gamma: float) -> SSAValue:
    """gamma * elu(x, alpha)."""
    g = fconst(b, gamma, x)
    return b.mul(g, elu(b, x, alpha))


# ---------------------------------------------------------------------------------------------
# counter-based random numbers (graph.random): element k of a tensor is a pure function of the seed
# and k, so any tiling, vectorization or thread count computes the same tensor

_M64 = (1 << 64) - 1
GOLDEN_GAMMA = 0x9E3779B97F4A7C15
"""splitmix64's increment (2^64 / golden ratio, odd): counter n is at key + (n + 1) * GAMMA."""
_MIX1, _MIX2 = 0xBF58476D1CE4E5B9, 0x94D049BB133111EB
_MANTISSA = {16: 11, 32: 24, 64: 53}
"""Bits of a uniform draw per float width: exactly representable, so u < 1 even after rounding."""


def _i64(value: int) -> int:
    """A 64-bit pattern as the signed value arith.constant takes."""
    value &= _M64
    return value - (1 << 64) if value >> 63 else value


def mix64(value: int) -> int:
    """splitmix64's finalizer (a bijection of 64-bit words) on a Python int: how a seed becomes
    the generator's key, at compile time. `random_bits` emits the same function as IR."""
    z = value & _M64
    z = ((z ^ (z >> 30)) * _MIX1) & _M64
    z = ((z ^ (z >> 27)) * _MIX2) & _M64
    return z ^ (z >> 31)


def _mix64(b: ElementBuilder, z: SSAValue) -> SSAValue:
    t = element_type(z.type)
    z = b.mul(b.xor(z, b.shrui(z, 30)), b.const(_i64(_MIX1), t))
    z = b.mul(b.xor(z, b.shrui(z, 27)), b.const(_i64(_MIX2), t))
    return b.xor(z, b.shrui(z, 31))


def random_bits(b: ElementBuilder, key: int, counter: SSAValue, stride: int = 1, offset: int = 0) -> SSAValue:
    """64 random bits (an i64) for counter n = stride * counter + offset (`counter` an i64 >= 0):
    splitmix64's output number n + 1 from state `key`, mix64(key + (n + 1) * GAMMA) mod 2^64
    (wrapping i64 multiplies and adds, logical shifts)."""
    t = element_type(counter.type)
    step = b.const(_i64(stride * GOLDEN_GAMMA), t)
    start = b.const(_i64(key + (offset + 1) * GOLDEN_GAMMA), t)
    return _mix64(b, b.add(b.mul(counter, step), start))


def uniform01(b: ElementBuilder, bits: SSAValue, t: AnyFloat) -> SSAValue:
    """The top m bits of `bits` (m = 11 / 24 / 53 for f16 / f32 / f64) scaled to [0, 1) in t."""
    m = _MANTISSA[t.bitwidth]
    top = b.shrui(bits, 64 - m)
    return b.mul(b.cast(top, t), b.const(2.0 ** -m, t))


def random_uniform(b: ElementBuilder, key: int, counter: SSAValue, t: AnyFloat, low: float, high: float) -> SSAValue:
    """low + u * (high - low), u = uniform01 of counter `counter`."""
    u = uniform01(b, random_bits(b, key, counter), t)
    if (low, high) == (0.0, 1.0):
        return u
    return b.add(b.const(low, t), b.mul(u, b.const(high - low, t)))


def random_normal(b: ElementBuilder, key: int, counter: SSAValue, t: AnyFloat, mean: float, scale: float) -> SSAValue:
    """mean + scale * sqrt(-2 ln(1 - u1)) cos(2 pi u2) (Box-Muller), u1, u2 the uniform draws of
    counters 2k and 2k + 1; computed in f32 for an f16 result (then rounded), else in t."""
    ct = t if t.bitwidth >= 32 else f32
    u1 = uniform01(b, random_bits(b, key, counter, 2, 0), ct)
    u2 = uniform01(b, random_bits(b, key, counter, 2, 1), ct)
    one = b.const(1.0, ct)
    radius = b.sqrt(b.mul(b.const(-2.0, ct), b.log(b.sub(one, u1))))  # 1 - u1 in (0, 1]: finite
    z = b.mul(radius, b.emit(math.CosOp(b.mul(b.const(2.0 * pymath.pi, ct), u2))))
    if scale != 1.0:
        z = b.mul(b.const(scale, ct), z)
    if mean != 0.0:
        z = b.add(b.const(mean, ct), z)
    return b.cast(z, t)
