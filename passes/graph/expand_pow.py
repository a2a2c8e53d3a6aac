"""graph-expand-pow: `Pow(x, c)` with a constant small integer exponent c in {1, 2, 3, 4} becomes
multiplications (GELU-tanh's Pow(x, 3)), which vectorize; `math.powf` is a libm call per lane.

    %c = graph.constant dense<3.0> : tensor<f32>
    %y = graph.pow %x, %c : (tensor<128x384xf32>, tensor<f32>) -> tensor<128x384xf32>
  ->
    %s = graph.mul %x, %x : tensor<128x384xf32>
    %y = graph.mul %s, %x : tensor<128x384xf32>

Only float x, an exponent that is one value (a splat) whose broadcast does not change the result's
shape, and float results. x*x is correctly rounded like pow; x*x*x rounds twice (within 2 ulp of
pow); ±inf, NaN, ±0 and overflow come out as pow gives them.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import AnyFloat, DenseIntOrFPElementsAttr, ModuleOp, TensorType
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern, op_type_rewrite_pattern

from minimlir.dialects import graph


def _splat_exponent(op: graph.PowOp) -> float | None:
    c = op.rhs.owner
    if not isinstance(c, graph.ConstantOp) or not isinstance(c.value, DenseIntOrFPElementsAttr):
        return None
    values = c.value.get_values()
    if not values or any(v != values[0] for v in values):
        return None
    return float(values[0])


@dataclass
class ExpandSmallIntegerPow(RewritePattern):
    """pow(x, c) -> x * x [* x [* x]] for c in {1, 2, 3, 4}."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.PowOp, rewriter: PatternRewriter) -> None:
        xt, rt = op.lhs.type, op.result.type
        if not (isinstance(xt, TensorType) and isinstance(xt.element_type, AnyFloat) and xt == rt):
            return
        c = _splat_exponent(op)
        if c not in (1.0, 2.0, 3.0, 4.0):
            return
        x = op.lhs
        if c == 1.0:
            rewriter.replace(op, [], [x])
            return
        sq = graph.MulOp(x, x, rt)
        ops = [sq]
        if c == 3.0:
            ops.append(graph.MulOp(sq.result, x, rt))
        elif c == 4.0:
            ops.append(graph.MulOp(sq.result, sq.result, rt))
        rewriter.replace(op, ops, [ops[-1].result])


@dataclass(frozen=True)
class GraphExpandPowPass(ModulePass):
    """Pow with a constant exponent 1..4 -> multiplications."""

    name = "graph-expand-pow"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(ExpandSmallIntegerPow()).rewrite_module(op)
