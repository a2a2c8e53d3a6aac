"""graph-strength-reduce: a float power by the constant 1, 2 or 3 becomes multiplications, a
float division by a constant becomes a multiplication where that is exact or feeds only erf, and
a convolution of an image whose windows tile it (a ViT's patch embedding) becomes a matmul.

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
    if not isinstance(owner, graph.ConstantOp):
        return None
    value = owner.value
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
    case); a float division by a constant, a multiplication where exact or feeding only erf; an
    image conv whose windows tile it, a matmul of the patches."""

    name = "graph-strength-reduce"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        patterns = GreedyRewritePatternApplier([_PowByConstant(), _DivByConstant(), _PatchConvAsMatmul()])
        PatternRewriteWalker(patterns, apply_recursively=False).rewrite_module(op)
