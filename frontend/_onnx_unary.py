"""ONNX import of the unary graph ops, from what each op declares (dialects/graph.py `_UnaryOp`), so
a new unary op needs no entry here:

- `ONNX = "LeakyRelu"`: the ONNX op type `LeakyRelu(x) -> y` imports as that op;
- `ONNX_ATTRS = {"alpha": 0.01}`: its float attributes with their ONNX defaults, passed to the
  op's constructor as keywords (`graph.LeakyReluOp(x, alpha=...)`);
- `NUMPY_FOLD = "negative"`: a small constant input is folded at import time with np.negative;
- `ELEMENT_KIND`: other element types are refused with a reason ("Sigmoid of i32").

Unary ops with more to their import are imported by hand in frontend/_onnx_ops.py and declare no
ONNX name (Clip, Gelu; each says why).
"""

from __future__ import annotations

import numpy as np

from minimlir.dialects import graph
from minimlir.frontend._onnx_ops import OP_TABLE, _elem, _ssa, onnx_op
from minimlir.frontend.onnx_import import FOLD_LIMIT, NodeView, Unsupported


def _emitter(op_cls: type[graph._UnaryOp]):
    attrs, fold = dict(op_cls.ONNX_ATTRS), op_cls.NUMPY_FOLD

    def emit(n: NodeView) -> list:
        v = n.input(0)
        if fold is not None and v is not None and v.const is not None and v.const.size <= FOLD_LIMIT:
            return [n.cx.from_const(np.asarray(getattr(np, fold)(v.const)).astype(v.const.dtype))]
        x = _ssa(n, 0)
        if not graph.element_kind_ok(_elem(x), op_cls.ELEMENT_KIND):
            raise Unsupported(f"{n.op_type} of {_elem(x)}")
        kwargs = {name: float(n.attr(name, default)) for name, default in attrs.items()}
        return [n.cx.emit1(op_cls(x, **kwargs))]

    args = "".join(f", {name}={default}" for name, default in attrs.items())
    props = " {" + ", ".join(attrs) + "}" if attrs else ""
    emit.__doc__ = f"{op_cls.ONNX}(x{args}) -> {op_cls.name} x{props}" + (
        f" (folded on small constants: np.{fold})" if fold else "")
    emit.__name__ = f"emit_{op_cls.__name__}"
    emit.declared_by = op_cls  # type: ignore[attr-defined]
    return emit


def declared_onnx_unary_ops() -> list[type[graph._UnaryOp]]:
    """Every unary graph op class (any depth of subclassing) that names its ONNX op."""
    return sorted((c for c in graph.unary_op_classes() if c.ONNX is not None), key=lambda c: c.ONNX)


def register_declared() -> None:
    """Add an emitter for every declared ONNX unary op (idempotent; also for an op class defined
    after this module was imported). An op type both declared and imported by hand is a bug."""
    for cls in declared_onnx_unary_ops():
        spec = OP_TABLE.get(cls.ONNX)
        if spec is None:
            onnx_op(cls.ONNX)(_emitter(cls))
        elif getattr(spec.emit, "declared_by", None) is not cls:
            raise RuntimeError(f"ONNX {cls.ONNX} is imported by hand and declared by {cls.name}: keep one")


register_declared()
