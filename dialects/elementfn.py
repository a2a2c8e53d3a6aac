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
from xdsl.dialects.builtin import AnyFloat, i1
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


def gelu(b: ElementBuilder, x: SSAValue, approximate: str) -> SSAValue:
    """0.5 x (1 + erf(x / sqrt(2))), or with approximate "tanh" its tanh approximation."""
    half, one = fconst(b, 0.5, x), fconst(b, 1.0, x)
    if approximate == "tanh":
        # 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
        x3 = b.mul(b.mul(x, x), x)
        inner = b.mul(fconst(b, pymath.sqrt(2.0 / pymath.pi), x), b.add(x, b.mul(fconst(b, 0.044715, x), x3)))
        t = b.emit(math.TanhOp(inner))
    else:
        # 0.5 x (1 + erf(x / sqrt(2)))
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
