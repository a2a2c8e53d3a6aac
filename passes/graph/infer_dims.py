"""Symbolic shape inference: write every dynamic dim's expression into the IR.

    func.func @main(%x: tensor<?x3x?x16xf32> {graph.dim_names = ["batch", "", "h", ""]}, …) {
      %y = graph.conv2d %x, %w strides [2, 2] : (…) -> tensor<?x8x?x7xf32>
    ==>
      %y = graph.conv2d %x, %w strides [2, 2] {graph.dims = ["batch", "(h-3)/2+1"]} : (…) -> …

Each op with a dynamic tensor result gets `graph.dims`: one expression per `?` of its results, in
order (`?` where the dim is read from tensor data). The function gets `graph.dim_checks`: what the
inputs must satisfy (dynamic dims that broadcast together are equal or 1; a reshape keeps the
element count), checked by the runtime before any kernel runs. Both are plain attributes: the IR
stays valid without them, and `mini-opt` round-trips them. See `minimlir.passes.graph._symbolic_dims`.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from minimlir.dialects.loop import is_kernel
from minimlir.passes.graph._symbolic_dims import annotate


@dataclass(frozen=True)
class GraphInferDimsPass(ModulePass):
    """Annotate dynamic dims with their symbolic expressions (`graph.dims`, `graph.dim_checks`)."""

    name = "graph-infer-dims"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for f in [o for o in op.walk() if isinstance(o, func.FuncOp)]:
            if is_kernel(f) or not f.body.blocks or len(f.body.blocks) != 1:
                continue
            annotate(f)
