"""ONNX import of the plain unary graph ops, from what each op declares: a `_UnaryOp` subclass with
`ONNX = "Sin"` imports `Sin(x) -> y` as that op (dialects/graph.py), so a new unary op needs no
entry here. Float-only ops (ELEMENT_KIND "float") refuse other element types with a reason."""

from __future__ import annotations

from minimlir.dialects import graph
from minimlir.frontend._onnx_ops import OP_TABLE, _elem, _is_float, _ssa, onnx_op
from minimlir.frontend.onnx_import import NodeView, Unsupported


def _emitter(op_cls: type[graph._UnaryOp]):
    def emit(n: NodeView) -> list:
        x = _ssa(n, 0)
        if op_cls.ELEMENT_KIND == "float" and not _is_float(x):
            raise Unsupported(f"{n.op_type} of {_elem(x)}")
        return [n.cx.emit1(op_cls(x))]

    emit.__doc__ = f"{op_cls.ONNX}(x) -> {op_cls.name} x"
    emit.__name__ = f"emit_{op_cls.__name__}"
    return emit


def declared_onnx_unary_ops() -> list[type[graph._UnaryOp]]:
    """Every unary graph op class (any depth of subclassing) that names its ONNX op."""
    out, todo = [], list(graph._UnaryOp.__subclasses__())
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if cls.ONNX is not None:
            out.append(cls)
    return sorted(out, key=lambda c: c.ONNX)


def register_declared() -> None:
    """Add an emitter for every declared ONNX unary op not registered by hand (idempotent)."""
    for cls in declared_onnx_unary_ops():
        if cls.ONNX not in OP_TABLE:
            onnx_op(cls.ONNX)(_emitter(cls))


register_declared()
