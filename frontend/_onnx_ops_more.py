"""More ONNX op emitters (operator coverage, issue 14), registered in the op table of
`minimlir.frontend._onnx_ops` (which imports this module at its end). Same contract as there: an
emitter gets a `NodeView` and returns one entry per ONNX output; each documents its decomposition.
"""

from __future__ import annotations

import math

import numpy as np
from onnx import TensorProto
from xdsl.dialects.builtin import IntegerType, Signedness

from minimlir.dialects import graph
from minimlir.frontend._onnx_ops import _axis, _const_input, _elem, _is_float, _ssa, onnx_op
from minimlir.frontend.onnx_import import (
    _DTYPES,
    FOLD_LIMIT,
    NodeView,
    Unsupported,
    element_type,
    numpy_dtype_of,
    onnx_dtype_name,
)

# --------------------------------------------------------------------------------------------
# float classification


@onnx_op("IsNaN")
def emit_isnan(n: NodeView) -> list:
    """IsNaN(x) -> graph.not(graph.eq(x, x)) (ordered compare: false only for NaN)."""
    cx = n.cx
    x = _ssa(n, 0)
    if not _is_float(x):
        raise Unsupported(f"IsNaN of {_elem(x)}")
    return [cx.emit1(graph.NotOp(cx.emit1(graph.EqOp(x, x))))]


@onnx_op("IsInf")
def emit_isinf(n: NodeView) -> list:
    """IsInf(x, detect_positive=1, detect_negative=1) -> graph.eq(x, +inf) / graph.eq(x, -inf)
    (graph.or of both); neither detected -> graph.broadcast_to of a 0-d false."""
    cx = n.cx
    x = _ssa(n, 0)
    if not _is_float(x):
        raise Unsupported(f"IsInf of {_elem(x)}")
    pos, neg = bool(n.attr("detect_positive", 1)), bool(n.attr("detect_negative", 1))
    parts = []
    if pos:
        parts.append(cx.emit1(graph.EqOp(x, cx.scalar(math.inf, _elem(x)))))
    if neg:
        parts.append(cx.emit1(graph.EqOp(x, cx.scalar(-math.inf, _elem(x)))))
    if not parts:
        return [cx.broadcast_to(cx.scalar(False, IntegerType(1)), cx.dims(x))]
    if len(parts) == 2:
        return [cx.emit1(graph.OrOp(*parts))]
    return parts


# --------------------------------------------------------------------------------------------
# index ops and scans


@onnx_op("GatherElements")
def emit_gather_elements(n: NodeView) -> list:
    """GatherElements(data, indices, axis) -> graph.gather_elements {axis} (negative indices
    wrap in the kernel)."""
    data = _ssa(n, 0)
    axis = _axis(int(n.attr("axis", 0)), len(data.type.get_shape()))
    return [n.cx.emit1(graph.GatherElementsOp(data, _ssa(n, 1), axis))]


@onnx_op("GatherND")
def emit_gather_nd(n: NodeView) -> list:
    """GatherND(data, indices, batch_dims=0) -> graph.gather_nd {batch_dims} (the last dim of
    indices, the depth of each index tuple, must be static)."""
    data, ind = _ssa(n, 0), _ssa(n, 1)
    ishape = ind.type.get_shape()
    if not ishape or ishape[-1] < 0:
        raise Unsupported("GatherND with a dynamic index depth (last dim of indices)")
    return [n.cx.emit1(graph.GatherNDOp(data, ind, int(n.attr("batch_dims", 0))))]


@onnx_op("CumSum")
def emit_cumsum(n: NodeView) -> list:
    """CumSum(x, axis, exclusive=0, reverse=0) -> graph.cumsum {axis, exclusive, reverse}
    (axis: a constant 0-d or 1-element tensor)."""
    x, axis, exclusive, reverse = scan_operands(n, "CumSum", check_range=False)
    return [n.cx.emit1(graph.CumSumOp(x, axis, exclusive=exclusive, reverse=reverse))]


def scan_operands(n: NodeView, op: str, check_range: bool = True) -> tuple:
    """CumSum/CumProd's (x, axis, exclusive, reverse): x not bool, axis a constant 0-d or
    1-element tensor (normalized; out of range -> Unsupported naming the op when check_range)."""
    x = _ssa(n, 0)
    if _elem(x) == IntegerType(1):
        raise Unsupported(f"{op} of bool")
    a = _const_input(n, 1, "axis")
    if a is None or a.size != 1:
        raise Unsupported(f"{op}: axis must be one integer")
    rank = len(x.type.get_shape())
    axis = int(a.reshape(-1)[0])
    if check_range and not -rank <= axis < rank:
        raise Unsupported(f"{op}: axis {axis} is out of range for a rank-{rank} input")
    return x, _axis(axis, rank), bool(n.attr("exclusive", 0)), bool(n.attr("reverse", 0))


# --------------------------------------------------------------------------------------------
# types and sizes


def _check_cast_like(node, opset):
    return None  # the target dtype is checked at import (it is the second input's)


@onnx_op("CastLike", check=_check_cast_like)
def emit_cast_like(n: NodeView) -> list:
    """CastLike(x, target) -> Cast(x, to=target's element type): graph.cast (nothing when the type
    is the same; constants cast at import time; a symbolic shape stays symbolic for int64/int32)."""
    cx = n.cx
    x, like = n.input(0), n.input(1)
    if x is None or like is None:
        raise Unsupported("CastLike needs two inputs")
    to = like.elem_type
    if to not in _DTYPES:
        raise Unsupported(f"cast to {onnx_dtype_name(to)}")
    if x.elem_type == to:
        return [x]
    if x.const is not None and x.const.size <= FOLD_LIMIT:
        return [cx.from_const(x.const.astype(_DTYPES[to][0]))]
    if x.sym is not None and to in (TensorProto.INT64, TensorProto.INT32):
        return [cx.from_sym(x.sym, scalar=x.rank == 0, elem_type=to)]
    return [cx.emit1(graph.CastOp(cx.ssa(x), element_type(to)))]


@onnx_op("Size")
def emit_size(n: NodeView) -> list:
    """Size(x) -> the product of x's dims as a 0-d int64: a constant when static, else symbolic
    (index arithmetic on graph.dim values, materialized only when used as data)."""
    cx = n.cx
    total: int | object = 1
    for d in cx.dims(n.input(0)):
        total = cx.iarith("mul", total, d)
    return [cx.from_sym([total], scalar=True)]


# --------------------------------------------------------------------------------------------
# elementwise: trigonometric and hyperbolic functions, rounding, bitwise ops


# Sin … Atanh and Round import from what they declare (ONNX = …: frontend/_onnx_unary.py)


@onnx_op("Xor")
def emit_xor(n: NodeView) -> list:
    """Xor(a, b) (bool) -> graph.xor (broadcasting)."""
    return [n.cx.emit1(graph.XorOp(_ssa(n, 0), _ssa(n, 1)))]


@onnx_op("BitwiseAnd", "BitwiseOr", "BitwiseXor")
def emit_bitwise(n: NodeView) -> list:
    """BitwiseAnd/Or/Xor(a, b) (integers) -> graph.and/or/xor (broadcasting)."""
    cls = {"BitwiseAnd": graph.AndOp, "BitwiseOr": graph.OrOp, "BitwiseXor": graph.XorOp}[n.op_type]
    a, b = _ssa(n, 0), _ssa(n, 1)
    if _is_float(a):
        raise Unsupported(f"{n.op_type} of {_elem(a)}")
    return [n.cx.emit1(cls(a, b))]


@onnx_op("BitwiseNot")
def emit_bitwise_not(n: NodeView) -> list:
    """BitwiseNot(x) -> graph.xor(x, all ones) (a 0-d constant of x's type)."""
    cx = n.cx
    x = _ssa(n, 0)
    if _is_float(x):
        raise Unsupported(f"BitwiseNot of {_elem(x)}")
    ones = np.invert(np.zeros((), numpy_dtype_of(_elem(x))))
    return [cx.emit1(graph.XorOp(x, cx.scalar(ones.item(), _elem(x))))]


@onnx_op("BitShift")
def emit_bitshift(n: NodeView) -> list:
    """BitShift(x, y, direction) -> graph.bitshift {direction} (unsigned integers; signed ones
    from opset 28: arithmetic right shift)."""
    x = _ssa(n, 0)
    t = _elem(x)
    if not isinstance(t, IntegerType) or t.width.data == 1:
        raise Unsupported(f"BitShift of {t}")
    if t.signedness.data != Signedness.UNSIGNED and n.opset < 28:
        raise Unsupported(f"BitShift of {t} before opset 28")
    direction = n.attr("direction")
    direction = direction.decode() if isinstance(direction, bytes) else direction
    return [n.cx.emit1(graph.BitShiftOp(x, _ssa(n, 1), direction))]


@onnx_op("ArgMin")
def emit_argmin(n: NodeView) -> list:
    """ArgMin(x, axis, keepdims, select_last_index) -> graph.argmin (i64)."""
    x = _ssa(n, 0)
    axis = _axis(int(n.attr("axis", 0)), len(x.type.get_shape()))
    return [n.cx.emit1(graph.ArgMinOp(x, axis=axis, keepdims=bool(n.attr("keepdims", 1)),
                                      select_last_index=bool(n.attr("select_last_index", 0))))]
