"""Every unary graph op legalized from what the op declares: `y[i] = op.element(x[i])`.

    %y = graph.sin %x : tensor<4xf32>            ->   loop.block "sin" … { %v = math.sin %x_i … }
    %y = graph.leaky_relu %x alpha 0.1 : …       ->   loop.block "leaky_relu" … { cmpf, mulf, select }

The element function is the op's `element(b, x)` (dialects/graph.py `_UnaryOp`: `MATH_OP(x)` by
default, or an override written with minimlir.dialects.elementfn), so a new unary op needs no entry
here: `legalization_of` gives this legalization for every `_UnaryOp` subclass, also one defined
after this module was imported.
"""

from __future__ import annotations

from xdsl.ir import Operation

from minimlir.dialects import graph
from minimlir.passes.graph.legalize._common import LEGALIZATIONS, Legalization
from minimlir.passes.graph.legalize.elementwise import build_elementwise
from minimlir.passes.loop._kernel_builder import KernelBuilder


class LegalizeUnary(Legalization):
    """y[i] = op.element(x[i])."""

    def build(self, op: Operation, kb: KernelBuilder) -> None:
        assert isinstance(op, graph._UnaryOp)
        build_elementwise(kb, op.name.split(".", 1)[1], lambda b, v: op.element(b, v[0]))


def legalization_of(op: Operation) -> Legalization | None:
    """The registered legalization of `op`'s class (LEGALIZATIONS), else this one for every unary
    op: also for an op class defined after the legalization modules were imported."""
    found = LEGALIZATIONS.get(type(op))
    if found is None and isinstance(op, graph._UnaryOp):
        found = _UNARY
    return found


_UNARY = LegalizeUnary()
