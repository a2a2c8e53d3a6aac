"""graph-strength-reduce: a float power by the constant 1, 2 or 3 becomes multiplications.

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
"""

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, Float32Type, Float64Type, ModuleOp, TensorType
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from minimlir.dialects import graph


def constant_exponent(op: graph.PowOp) -> float | None:
    """The exponent's value when it is a graph.constant splat, else None."""
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


class _PowByConstant(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.PowOp, rewriter: PatternRewriter) -> None:
        x = op.lhs
        if not isinstance(x.type, TensorType) or op.result.type != x.type:
            return
        if not isinstance(x.type.get_element_type(), Float32Type | Float64Type):
            return
        exponent = constant_exponent(op)
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

@dataclass(frozen=True)
class GraphStrengthReducePass(ModulePass):
    """Float graph.pow by a constant 1, 2 or 3 becomes multiplications (onnxruntime's own special case)."""

    name = "graph-strength-reduce"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(_PowByConstant(), apply_recursively=False).rewrite_module(op)
