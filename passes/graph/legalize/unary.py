"""Plain unary graph ops legalized from what the op declares: `y[i] = MATH_OP(x[i])`.

    %y = graph.sin %x : tensor<4xf32>   ->   loop.block "sin" … { %v = math.sin %x_i … }

Every `_UnaryOp` subclass with a `MATH_OP` (dialects/graph.py) and no legalization of its own gets
this one, so a new such op needs no entry here (dialects/_graph_more.py `_unary`).
"""

from __future__ import annotations

from xdsl.ir import Operation

from minimlir.dialects import graph
from minimlir.passes.graph.legalize._common import LEGALIZATIONS, Legalization
from minimlir.passes.graph.legalize.elementwise import build_elementwise
from minimlir.passes.loop._kernel_builder import KernelBuilder


class LegalizeDeclaredUnary(Legalization):
    """y[i] = op.MATH_OP(x[i])."""

    def build(self, op: Operation, kb: KernelBuilder) -> None:
        math_cls = type(op).MATH_OP
        build_elementwise(kb, op.name.split(".", 1)[1], lambda b, v: b.emit(math_cls(v[0])))


def declared_unary_ops() -> list[type[graph._UnaryOp]]:
    """Every unary graph op class (any depth of subclassing) that declares a MATH_OP."""
    out, todo = [], list(graph._UnaryOp.__subclasses__())
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if cls.MATH_OP is not None:
            out.append(cls)
    return out


def legalization_of(op: Operation) -> Legalization | None:
    """The registered legalization of `op`'s class, else the declared one of a MATH_OP unary op
    (registered on first use)."""
    found = LEGALIZATIONS.get(type(op))
    if found is None and isinstance(op, graph._UnaryOp) and type(op).MATH_OP is not None:
        found = LEGALIZATIONS[type(op)] = _DECLARED
    return found


_DECLARED = LegalizeDeclaredUnary()
for _cls in declared_unary_ops():
    LEGALIZATIONS.setdefault(_cls, _DECLARED)
