"""graph-strength-reduce: a float power by the constant 1, 2 or 3 becomes multiplications, a
float division by a constant becomes a multiplication where that is exact or feeds only erf, GELU's
tanh approximation written out in elementwise ops becomes `graph.gelu`, and a convolution of an
image whose windows tile it (a ViT's patch embedding) becomes a matmul.

    %c = graph.constant dense<3.0> : tensor<f32>
    %y = graph.pow %x, %c : (tensor<?x64xf32>, tensor<f32>) -> tensor<?x64xf32>
  ->
    %s = graph.mul %x, %x : tensor<?x64xf32>
    %y = graph.mul %s, %x : tensor<?x64xf32>

(exponent 2: one multiply; exponent 1: `%y` is `%x`). `math.powf` is a libm call per element, which
LLVM cannot vectorize; GELU's tanh approximation (`0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))`, as
the PyTorch exporters write it) spends most of its time there. The result is the one onnxruntime
computes: its CPU Pow kernel evaluates exponent 2 as `x*x` and 3 as `x*x*x`. Applies to f32 and
f64 tensors whose exponent is a `graph.constant` splat and whose result has the base's type (the
exponent does not broadcast the base to a larger shape). The new ops keep the pow's location and
attributes (its symbolic `graph.dims`).

    %t = graph.tanh %u          ; %u = sqrt(2/pi) * (x + 0.044715 * x^3), in mul/add/pow/div ops
    %y = graph.mul (graph.mul %x, 0.5), (graph.add %t, 1.0)
  ->
    %y = graph.gelu %x approximate "tanh"

GELU's tanh approximation as the exporters write it (torch.onnx: eight ops; the factors and sums in
any order, the cube as a pow or two multiplies: the tanh's argument and the product are read as
polynomials in x and compared, coefficient by coefficient, with the formula's) is one op, as
onnxruntime's FastGelu fusion makes it. graph.gelu's tanh form computes x / (1 + exp(-2u)), the
same function with one exp and one division (tanh's exp, division and polynomial are gone) and
accurate where 1 + tanh(u) cancels (x < -3): ViT's FFN epilogue ran 1.0 ms per layer, onnxruntime's
FastGelu 0.47 (Zen 1, one thread).

    %c = graph.constant dense<1.41421354> : tensor<f32>
    %d = graph.div %x, %c : ...          ; only used by graph.erf (GELU, as the exporters write it)
  ->
    %r = graph.constant dense<0.707106769> : tensor<f32>
    %d = graph.mul %x, %r : ...

A division by a scalar constant c (a splat) is a multiplication by 1/c when 1/c is exact in the
element type (c a power of two: the same bits), or when every use of the quotient is `graph.erf`:
x * (1/c) is within an ulp of x / c, and erf's own error (the polynomial's 3 ulp) is larger than
that shift of its argument, the trade onnxruntime's Gelu fusion makes too (it multiplies by
M_SQRT1_2). A vector division costs 10-14 cycles on the x86 cores we measure, a multiply 3-4, and
the GELU of BERT's 128 x 2048 FFN divides every element.

    %y = graph.conv2d %x, %w, %b strides [16, 16] : (tensor<1x3x224x224xf32>, tensor<384x3x16x16xf32>, …)
  ->
    %p = patches of %x: reshape to 1x3x14x16x14x16, transpose to 1x14x14x3x16x16, reshape to 196x768
    %k = %w reshaped to 384x768, transposed to 768x384   ; weight only: computed once (graph-lift-params)
    %m = graph.add (graph.matmul %p, %k), %b              ; 196 x 384
    %y = %m reshaped to 1x14x14x384, transposed to 1x384x14x14

A conv2d whose kernel equals its strides (no pads, dilation 1, group 1, H and W multiples of the
kernel, more than one tap) of an image (at most 4 input channels, static f32 NCHW) reads every
input pixel once: it is a matmul of the patches by the weight, the im2col onnxruntime runs for it,
here with no duplication. The conv rule's register tiles are built for overlapping windows over
many channels: ViT's 16x16/16 patch conv of a 224x224 RGB image ran 3.9 ms as a conv, 2.9 as a
matmul (onnxruntime 3.0; Zen 1, one thread). Convs over feature maps (ConvNeXt's 2x2/2
downsampling) stay convs, in the channel-blocked chain of graph-layout.
"""

import math
from dataclasses import dataclass

import numpy as np

from xdsl.context import Context
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, Float32Type, Float64Type, ModuleOp, TensorType
from xdsl.passes import ModulePass
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from minimlir.dialects import graph


def constant_rhs(op: graph.PowOp | graph.DivOp) -> float | None:
    """The right operand's value when it is a graph.constant splat, else None."""
    owner = op.rhs.owner
    return _splat(owner) if isinstance(owner, graph.ConstantOp) else None


def _splat(c: graph.ConstantOp) -> float | None:
    """The constant's value when all its elements are one value, else None."""
    value = c.value
    if not isinstance(value, DenseIntOrFPElementsAttr):
        return None
    values = value.get_values()
    if not values or any(v != values[0] for v in values):
        return None
    return float(values[0])


def _float_elementwise(op: graph.PowOp | graph.DivOp) -> Float32Type | Float64Type | None:
    """The element type of a float op whose result has its left operand's type (the right one does
    not broadcast it to a larger shape), else None."""
    t = op.lhs.type
    if not isinstance(t, TensorType) or op.result.type != t:
        return None
    e = t.get_element_type()
    return e if isinstance(e, Float32Type | Float64Type) else None


class _PowByConstant(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.PowOp, rewriter: PatternRewriter) -> None:
        x = op.lhs
        if _float_elementwise(op) is None:
            return
        exponent = constant_rhs(op)
        if exponent not in (1.0, 2.0, 3.0):
            return
        new: list[graph.MulOp] = []
        result = x
        for _ in range(int(exponent) - 1):  # x*x, then (x*x)*x: onnxruntime's order
            new.append(graph.MulOp(result, x, x.type))
            result = new[-1].result
        for m in new:
            m.attributes.update(op.attributes)
            m.location = op.location
        constant = op.rhs.owner
        rewriter.replace(op, new, [result])
        if not constant.results[0].uses:
            rewriter.erase(constant)


class _DivByConstant(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.DivOp, rewriter: PatternRewriter) -> None:
        x = op.lhs
        etype = _float_elementwise(op)
        if etype is None:
            return
        c = constant_rhs(op)
        if c is None or c == 0.0 or not math.isfinite(c):
            return
        dtype = np.float32 if isinstance(etype, Float32Type) else np.float64
        recip = dtype(1) / dtype(c)
        exact = math.frexp(abs(c))[0] == 0.5 and np.isfinite(recip) and recip != 0  # a power of two
        only_erf = bool(op.result.uses) and all(isinstance(u.operation, graph.ErfOp) for u in op.result.uses)
        if not (exact or only_erf):
            return
        rtype = op.rhs.type  # a graph.constant's: static
        splat = [float(recip)] * math.prod(rtype.get_shape())
        const = graph.ConstantOp(DenseIntOrFPElementsAttr.from_list(rtype, splat))
        mul = graph.MulOp(x, const.result, op.result.type)
        mul.attributes.update(op.attributes)
        const.location = mul.location = op.location
        old = op.rhs.owner
        rewriter.replace(op, [const, mul], [mul.result])
        if not old.results[0].uses:
            rewriter.erase(old)


GELU_TANH = {1: math.sqrt(2.0 / math.pi), 3: math.sqrt(2.0 / math.pi) * 0.044715}
"""The tanh argument of GELU's tanh approximation as a polynomial in x: sqrt(2/pi) (x + 0.044715 x^3)."""


def _polynomial(v: SSAValue, x: SSAValue | None, depth: int = 8) -> tuple[dict[int, float], SSAValue | None] | None:
    """`v` as a polynomial in one tensor `x` ({power: coefficient}) when it is built from splat
    constants and `x` by mul, add, sub, pow by 1-3 and division by a constant; with `x` None the one
    non-constant leaf found is `x` (the first value that is not such an expression). Returns
    (polynomial, x), or None."""
    r = _expand(v, x, depth)
    if r is None and x is None and isinstance(v.type, TensorType):
        return {1: 1.0}, v
    return r


def _expand(v: SSAValue, x: SSAValue | None, depth: int) -> tuple[dict[int, float], SSAValue | None] | None:
    if v is x:
        return {1: 1.0}, x
    owner = v.owner
    if isinstance(owner, graph.ConstantOp):
        c = _splat(owner)
        return ({0: c}, x) if c is not None else None
    if depth == 0 or not isinstance(owner, graph.MulOp | graph.AddOp | graph.SubOp | graph.PowOp | graph.DivOp):
        return None
    if isinstance(owner, graph.PowOp | graph.DivOp):
        c = constant_rhs(owner)
        base = _polynomial(owner.lhs, x, depth - 1)
        if c is None or base is None:
            return None
        p, x = base
        if isinstance(owner, graph.DivOp):
            return ({k: a / c for k, a in p.items()}, x) if c != 0.0 else None
        if c not in (1.0, 2.0, 3.0):
            return None
        out = {0: 1.0}
        for _ in range(int(c)):
            out = _poly_mul(out, p)
        return out, x
    left = _polynomial(owner.lhs, x, depth - 1)
    if left is None:
        return None
    right = _polynomial(owner.rhs, left[1], depth - 1)
    if right is None:
        return None
    p, q, x = left[0], right[0], right[1]
    if isinstance(owner, graph.MulOp):
        return _poly_mul(p, q), x
    sign = -1.0 if isinstance(owner, graph.SubOp) else 1.0
    out = dict(p)
    for k, a in q.items():
        out[k] = out.get(k, 0.0) + sign * a
    return out, x


def _poly_mul(p: dict[int, float], q: dict[int, float]) -> dict[int, float]:
    out: dict[int, float] = {}
    for i, a in p.items():
        for j, b in q.items():
            out[i + j] = out.get(i + j, 0.0) + a * b
    return out


def _same_polynomial(p: dict[int, float], q: dict[int, float], rtol: float = 1e-5) -> bool:
    """p == q up to the rounding of their coefficients to f32 (zero terms ignored)."""
    keys = {k for k, a in p.items() if a != 0.0} | {k for k, a in q.items() if a != 0.0}
    return all(abs(p.get(k, 0.0) - q.get(k, 0.0)) <= rtol * max(abs(p.get(k, 0.0)), abs(q.get(k, 0.0)))
               for k in keys)


class _TanhGelu(RewritePattern):
    """0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), in any order the exporters write its
    factors and sums, becomes `graph.gelu %x approximate "tanh"` (onnxruntime's FastGelu fusion)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.TanhOp, rewriter: PatternRewriter) -> None:
        inner = _polynomial(op.input, None)
        if inner is None or inner[1] is None or not _same_polynomial(inner[0], GELU_TANH):
            return
        x = inner[1]
        xt = x.type
        if not (isinstance(xt, TensorType) and isinstance(xt.get_element_type(), Float32Type | Float64Type)):
            return
        if op.result.uses.get_length() != 1:
            return
        plus = next(iter(op.result.uses)).operation  # 1 + tanh(...)
        if not isinstance(plus, graph.AddOp) or plus.result.type != xt:
            return
        one = plus.rhs if plus.lhs is op.result else plus.lhs
        unit = _polynomial(one, x, 1) if one is not op.result else None
        if unit is None or not _same_polynomial(unit[0], {0: 1.0}):
            return
        # the product of (1 + tanh) and factors whose product is 0.5 x, at most two multiplies up
        factor, out, chain, others = {0: 1.0}, plus.result, [], [one]
        for _ in range(2):
            if out.uses.get_length() != 1:
                return
            mul = next(iter(out.uses)).operation
            if not isinstance(mul, graph.MulOp) or mul.result.type != xt:
                return
            other = mul.rhs if mul.lhs is out else mul.lhs
            p = _polynomial(other, x, 2)
            if other is out or p is None:
                return
            factor, out = _poly_mul(factor, p[0]), mul.result
            chain.append(mul)
            others.append(other)
            if _same_polynomial(factor, {1: 0.5}):
                break
        else:
            return
        gelu = graph.GeluOp(x, "tanh")
        gelu.attributes.update(chain[-1].attributes)
        gelu.location = chain[-1].location
        rewriter.replace(chain[-1], [gelu], [gelu.result])
        feeds = [v.owner for v in others if isinstance(v.owner, Operation)]
        _erase_dead([*reversed(chain[:-1]), plus, op, *feeds], rewriter)


def _erase_dead(ops: list[Operation], rewriter: PatternRewriter) -> None:
    """Erase `ops` (consumers first) and the graph ops feeding them that are left without a use."""
    work = list(ops)
    while work:
        o = work.pop(0)
        if o.parent is None or any(r.uses for r in o.results):
            continue
        feeds = [v.owner for v in o.operands if isinstance(v.owner, Operation)]
        rewriter.erase(o)
        work.extend(f for f in feeds if f.dialect_name() == "graph")


PATCH_MAX_CHANNELS = 4  # the patch-conv rewrite's input channels: an image (gray, RGB, RGBA)


class _PatchConvAsMatmul(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.Conv2dOp, rewriter: PatternRewriter) -> None:
        if op.weight_tile.value.data or op.block.value.data:
            return
        x, w = op.input, op.weight
        xt, wt = x.type, w.type
        if not (isinstance(xt, TensorType) and isinstance(wt, TensorType)
                and isinstance(xt.get_element_type(), Float32Type) and xt.get_num_dims() == 4):
            return
        xs, ws = list(xt.get_shape()), list(wt.get_shape())
        if any(d < 0 for d in xs + ws) or len(ws) != 4:
            return
        n, c, h, wd = xs
        co, ci, kh, kw = ws
        strides = tuple(op.strides.get_values())
        if (op.group.value.data != 1 or ci != c or c > PATCH_MAX_CHANNELS or strides != (kh, kw)
                or any(op.pads.get_values()) or tuple(op.dilations.get_values()) != (1, 1)
                or kh * kw < 2 or h % kh or wd % kw):
            return
        oh, ow, k = h // kh, wd // kw, c * kh * kw
        f32 = xt.get_element_type()
        new: list = []

        def emit(o):
            new.append(o)
            return o.results[0]

        def reshape(v, shape):
            return emit(graph.ReshapeOp(v, TensorType(f32, shape)))

        p = reshape(x, [n, c, oh, kh, ow, kw])
        p = emit(graph.TransposeOp(p, [0, 2, 4, 1, 3, 5]))
        p = reshape(p, [n * oh * ow, k])
        kmat = emit(graph.TransposeOp(reshape(w, [co, k]), [1, 0]))
        m = emit(graph.MatMulOp(p, kmat))
        if op.bias is not None:
            m = emit(graph.AddOp(m, op.bias, m.type))
        y = emit(graph.TransposeOp(reshape(m, [n, oh, ow, co]), [0, 3, 1, 2]))
        for o in new:
            o.location = op.location
        rewriter.replace(op, new, [y])


@dataclass(frozen=True)
class GraphStrengthReducePass(ModulePass):
    """Float graph.pow by a constant 1, 2 or 3 becomes multiplications (onnxruntime's own special
    case); a float division by a constant, a multiplication where exact or feeding only erf; the
    tanh GELU written out, graph.gelu; an image conv whose windows tile it, a matmul of the patches."""

    name = "graph-strength-reduce"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        patterns = GreedyRewritePatternApplier([_TanhGelu(), _PowByConstant(), _DivByConstant(), _PatchConvAsMatmul()])
        PatternRewriteWalker(patterns, apply_recursively=False).rewrite_module(op)
