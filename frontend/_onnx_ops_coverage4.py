"""ONNX op emitters of the fourth operator-coverage round (issue 14), registered in the op table of
`minimlir.frontend._onnx_ops` (which imports this module at its end). Same contract as there: an
emitter gets a `NodeView` and returns one entry per ONNX output; each documents its
decomposition into graph ops; two need a graph op of their own (graph.nms_select, graph.bitcast).

  QuantizeLinear, DequantizeLinear   per-tensor / per-axis / blocked scales and zero points
                   (graph.reshape / graph.gather of the scale), graph.round (half to even) and
                   graph.clip (saturation) around graph.cast
  DynamicQuantizeLinear   graph.reduce_min/max, the ONNX formula for scale and zero point
  ConvInteger, QLinearConv   graph.conv2d in f64 of the zero-point-centered operands: every
                   partial sum is an integer below 2^53, so this is the exact int32 accumulation;
                   QLinearConv then requantizes as QLinearMatMul does
  Compress         graph.nonzero of the condition (the run-time count sizes the result), graph.gather
  Unique           equality / order matrices of the elements (or slices along axis), reduced; the
                   output order comes from graph.nonzero of a (position, element) mask, whose
                   row-major coordinates list the first occurrences in output order
  NonMaxSuppression   the IoU matrix and graph.topk's score order as graph ops; the greedy
                   selection is graph.nms_select (dialects/_graph_coverage4.py), its keep mask by
                   rank through graph.nonzero
  ReverseSequence  graph.gather_elements with index where(t < len[b], len[b] - 1 - t, t)
  MaxUnpool        graph.scatter_elements of the values into zeros of the output size (flat)
  TensorScatter    graph.where of a graph.gather_elements of the update
  BitCast          graph.bitcast (same width)
  Det              LU with partial pivoting, unrolled over the static size
  RoiAlign, DeformConv   bilinear taps as graph.gather from the flattened input (DeformConv then
                   a grouped graph.matmul)
  MelWeightMatrix  folded at import: a constant computed from its (constant) scalar inputs
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto
from xdsl.dialects.builtin import AnyFloat, Float16Type, IntegerType, Signedness, f32, f64, i1, i64

from minimlir.dialects import graph
from minimlir.frontend._onnx_ops import (
    _DTYPES,
    conv_nd,
    _attr,
    _axis,
    _check_auto_pad,
    _const_input,
    _elem,
    _s,
    _shape,
    _ssa,
    onnx_op,
)
from minimlir.frontend.onnx_import import DYNAMIC, NodeView, Unsupported, onnx_dtype_name

i32 = IntegerType(32)

# ONNX integer element types a quantized tensor may have: (min, max)
_QUANT_INTS = {
    TensorProto.INT8: (-128, 127),
    TensorProto.UINT8: (0, 255),
    TensorProto.INT16: (-32768, 32767),
    TensorProto.UINT16: (0, 65535),
}
_QUANT_REFUSED = {
    TensorProto.FLOAT8E4M3FN, TensorProto.FLOAT8E4M3FNUZ, TensorProto.FLOAT8E5M2, TensorProto.FLOAT8E5M2FNUZ,
    TensorProto.UINT4, TensorProto.INT4, TensorProto.FLOAT4E2M1,
    *(getattr(TensorProto, n) for n in ("UINT2", "INT2", "FLOAT8E8M0", "FLOAT6E2M3", "FLOAT6E3M2")
      if hasattr(TensorProto, n)),
}


def _onnx_elem(el) -> int | None:
    for k, (_, e) in _DTYPES.items():
        if e == el:
            return k
    return None


def _int_bounds(el) -> tuple[int, int]:
    assert isinstance(el, IntegerType)
    w = el.width.data
    if el.signedness.data == Signedness.UNSIGNED:
        return 0, 2 ** w - 1
    return -(2 ** (w - 1)), 2 ** (w - 1) - 1


# --------------------------------------------------------------------------------------------
# QuantizeLinear, DequantizeLinear


def _check_quant(node, opset):
    for a in node.attribute:
        if a.name == "output_dtype" and a.i:
            if node.op_type == "QuantizeLinear" and a.i in _QUANT_REFUSED:
                return f"output_dtype {onnx_dtype_name(a.i)} (8-, 4- and 2-bit float / sub-byte " \
                       f"integer types have no element type here)"
            if node.op_type == "QuantizeLinear" and a.i not in _QUANT_INTS:
                return f"output_dtype {onnx_dtype_name(a.i)}"
            if node.op_type == "DequantizeLinear" and a.i not in (TensorProto.FLOAT, TensorProto.FLOAT16):
                return f"output_dtype {onnx_dtype_name(a.i)}"
        if a.name == "block_size" and a.i < 0:
            return f"block_size must be >= 0, got {a.i}"
        if a.name == "precision" and a.i not in (0, TensorProto.FLOAT):
            return f"precision {onnx_dtype_name(a.i)} (only float32 or the default)"
    return None


def _quant_param(n: NodeView, i: int, what: str, x_shape: list[int], to):
    """Input i (a scale or zero point) cast to `to`, shaped to broadcast against x: a scalar, one
    value per slice along `axis` (reshaped to [D, 1, ...]), or blocked (block_size > 0: dim `axis`
    is ceil(D / block_size), repeated block_size times with graph.gather)."""
    cx = n.cx
    p = _ssa(n, i)
    ps = _shape(p)
    rank = len(x_shape)
    block = int(n.attr("block_size", 0)) if n.opset >= 21 else 0
    size = 1
    for d in ps:
        size = DYNAMIC if d == DYNAMIC or size == DYNAMIC else size * d
    if _elem(p) != to:
        p = cx.emit1(graph.CastOp(p, to))
    if block == 0 and len(ps) <= 1 and size == 1:
        return cx.reshape(p, []) if ps else p
    if n.opset < 13:
        raise Unsupported(f"{n.op_type}: {what} must be a scalar before opset 13 (got shape {ps})")
    axis = _axis(int(n.attr("axis", 1)), rank)
    d = x_shape[axis]
    if block == 0:
        if len(ps) != 1 or ps[0] != d:
            raise Unsupported(f"{n.op_type}: {what} has shape {ps}: it must be a scalar or 1-D with one "
                              f"value per slice along axis {axis} (dim {d})")
        return cx.reshape(p, [d] + [1] * (rank - axis - 1))
    if len(ps) != rank or d == DYNAMIC:
        raise Unsupported(f"{n.op_type}: blocked {what} of shape {ps} for an input of shape {x_shape} "
                          f"(it needs x's rank and a static dim {axis})")
    want = [(-(-d // block) if j == axis else x_shape[j]) for j in range(rank)]
    if any(a != b for a, b in zip(ps, want)):
        raise Unsupported(f"{n.op_type}: blocked {what} has shape {ps}, expected {want} "
                          f"(block_size {block} along axis {axis})")
    idx = cx.ssa(cx.from_const(np.arange(d, dtype=np.int64) // block))
    return cx.emit1(graph.GatherOp(p, idx, axis))


def _quant_out_type(n: NodeView):
    """QuantizeLinear's output type: y_zero_point's, else output_dtype, else uint8."""
    zp = n.input(2)
    od = int(n.attr("output_dtype", 0)) if n.opset >= 21 else 0
    if zp is not None:
        el = _elem(n.cx.ssa(zp))
        if od and _onnx_elem(el) != od:
            raise Unsupported(f"QuantizeLinear: output_dtype {onnx_dtype_name(od)} differs from "
                              f"y_zero_point's type {el}")
        return el
    if od:
        if od not in _QUANT_INTS:
            raise Unsupported(f"QuantizeLinear: output_dtype {onnx_dtype_name(od)}")
        return _DTYPES[od][1]
    return _DTYPES[TensorProto.UINT8][1]


def _check_quant_int(op: str, what: str, el) -> None:
    if not (isinstance(el, IntegerType) and el.width.data in (8, 16) or el == i32 and what == "x"):
        raise Unsupported(f"{op}: {what} of type {el} (int8, uint8, int16, uint16"
                          f"{', int32' if what == 'x' else ''})")


@onnx_op("QuantizeLinear", check=_check_quant, min_opset=10)
def emit_quantize_linear(n: NodeView) -> list:
    """QuantizeLinear(x, y_scale, y_zero_point) -> graph.cast(graph.clip(graph.round(x / scale) +
    zp, qmin, qmax), y's type), computed in f32 (f16 / int32 x is cast first, as onnxruntime
    does): round half to even, then saturate."""
    cx = n.cx
    x = _ssa(n, 0)
    xs = _shape(x)
    el = _elem(x)
    if not (isinstance(el, AnyFloat) or el == i32):
        raise Unsupported(f"QuantizeLinear of {el}")
    if el == f64:
        raise Unsupported("QuantizeLinear of f64")
    y_type = _quant_out_type(n)
    _check_quant_int("QuantizeLinear", "y_zero_point", y_type)
    s = _ssa(n, 1)
    if not isinstance(_elem(s), AnyFloat):
        raise Unsupported(f"QuantizeLinear: y_scale of type {_elem(s)}")
    lo, hi = _int_bounds(y_type)
    xf = x if el == f32 else cx.emit1(graph.CastOp(x, f32))
    scale = _quant_param(n, 1, "y_scale", xs, f32)
    y = cx.emit1(graph.RoundOp(cx.emit1(graph.DivOp(xf, scale))))
    if n.input(2) is not None:
        y = cx.emit1(graph.AddOp(y, _quant_param(n, 2, "y_zero_point", xs, f32)))
    y = cx.emit1(graph.ClipOp(y, float(lo), float(hi)))
    return [cx.emit1(graph.CastOp(y, y_type))]


@onnx_op("DequantizeLinear", check=_check_quant, min_opset=10)
def emit_dequantize_linear(n: NodeView) -> list:
    """DequantizeLinear(x, x_scale, x_zero_point) -> graph.cast(graph.cast(x, i32) - zp, f32) *
    scale (cast to the scale's type, or output_dtype): the integer difference is exact, the
    product is onnxruntime's single f32 rounding."""
    cx = n.cx
    x = _ssa(n, 0)
    xs = _shape(x)
    el = _elem(x)
    _check_quant_int("DequantizeLinear", "x", el)
    s = _ssa(n, 1)
    out = _elem(s)
    if out not in (f32,) and not isinstance(out, Float16Type):
        raise Unsupported(f"DequantizeLinear: x_scale of type {out} (float32 or float16)")
    od = int(n.attr("output_dtype", 0)) if n.opset >= 23 else 0
    if od:
        out = _DTYPES[od][1]
    xi = cx.emit1(graph.CastOp(x, i32)) if el != i32 else x
    if n.input(2) is not None:
        zel = _elem(cx.ssa(n.input(2)))
        if zel != el:
            raise Unsupported(f"DequantizeLinear: x_zero_point's type {zel} differs from x's {el}")
        xi = cx.emit1(graph.SubOp(xi, _quant_param(n, 2, "x_zero_point", xs, i32)))
    y = cx.emit1(graph.MulOp(cx.emit1(graph.CastOp(xi, f32)), _quant_param(n, 1, "x_scale", xs, f32)))
    return [y if out == f32 else cx.emit1(graph.CastOp(y, out))]


@onnx_op("DynamicQuantizeLinear")
def emit_dynamic_quantize_linear(n: NodeView) -> list:
    """DynamicQuantizeLinear(x) -> (y, y_scale, y_zero_point), uint8, the ONNX formula:
    x_min = min(0, reduce_min(x)), x_max = max(0, reduce_max(x)), scale = (x_max - x_min) / 255,
    zp = clip(round((0 - x_min) / scale), 0, 255), y = clip(round(x / scale) + zp, 0, 255).
    A zero range (x all 0) gives scale 1, as onnxruntime (the formula divides 0 by 0 there)."""
    cx = n.cx
    x = _ssa(n, 0)
    if _elem(x) != f32:
        raise Unsupported(f"DynamicQuantizeLinear of {_elem(x)} (float32 only)")
    rank = len(_shape(x))
    axes = list(range(rank))
    zero = cx.scalar(0.0, f32)
    mn = cx.emit1(graph.MinOp(cx.emit1(graph.ReduceMinOp(x, axes, keepdims=False)), zero)) if rank else \
        cx.emit1(graph.MinOp(x, zero))
    mx = cx.emit1(graph.MaxOp(cx.emit1(graph.ReduceMaxOp(x, axes, keepdims=False)), zero)) if rank else \
        cx.emit1(graph.MaxOp(x, zero))
    scale = cx.emit1(graph.DivOp(cx.emit1(graph.SubOp(mx, mn)), cx.scalar(255.0, f32)))
    scale = cx.emit1(graph.WhereOp(cx.emit1(graph.EqOp(scale, zero)), cx.scalar(1.0, f32), scale))
    zp = cx.emit1(graph.RoundOp(cx.emit1(graph.DivOp(cx.emit1(graph.SubOp(zero, mn)), scale))))
    zp = cx.emit1(graph.ClipOp(zp, 0.0, 255.0))
    y = cx.emit1(graph.AddOp(cx.emit1(graph.RoundOp(cx.emit1(graph.DivOp(x, scale)))), zp))
    y = cx.emit1(graph.ClipOp(y, 0.0, 255.0))
    u8 = _DTYPES[TensorProto.UINT8][1]
    return [cx.emit1(graph.CastOp(y, u8)), scale, cx.emit1(graph.CastOp(zp, u8))]


# --------------------------------------------------------------------------------------------
# ConvInteger, QLinearConv


def _check_conv_int(node, opset):
    return _check_auto_pad(node, opset)


def _is_8bit(el) -> bool:
    return isinstance(el, IntegerType) and el.width.data == 8


def _centered_f64(n: NodeView, i_x: int, i_zp: int, what: str, per_channel_len: int | None):
    """graph.cast(x, f64) - graph.cast(zp, f64): a scalar zero point, or (the weight's) one per
    output channel, reshaped to [O, 1, ...]."""
    cx = n.cx
    x = _ssa(n, i_x)
    if not _is_8bit(_elem(x)):
        raise Unsupported(f"{n.op_type}: {what} must be int8 or uint8, got {_elem(x)}")
    xf = cx.emit1(graph.CastOp(x, f64))
    zv = n.input(i_zp)
    if zv is None:
        return xf, x
    z = cx.ssa(zv)
    if _elem(z) != _elem(x):
        raise Unsupported(f"{n.op_type}: {what}'s zero point must have its element type {_elem(x)}")
    zs = _shape(z)
    zf = cx.emit1(graph.CastOp(z, f64))
    size = int(np.prod(zs)) if DYNAMIC not in zs else DYNAMIC
    if len(zs) <= 1 and size == 1:
        zf = cx.reshape(zf, [])
    elif per_channel_len is not None and len(zs) == 1 and zs[0] == per_channel_len:
        zf = cx.reshape(zf, [per_channel_len] + [1] * (len(_shape(x)) - 1))
    else:
        raise Unsupported(f"{n.op_type}: {what}'s zero point has shape {zs}: it must be a scalar"
                          + (" or one value per output channel" if per_channel_len is not None else ""))
    return cx.emit1(graph.SubOp(xf, zf)), x


@onnx_op("ConvInteger", check=_check_conv_int)
def emit_conv_integer(n: NodeView) -> list:
    """ConvInteger(x, w, x_zero_point, w_zero_point) -> graph.cast(graph.conv2d in f64 of
    (x - x_zp) and (w - w_zp), i32); w_zp may be one per output channel."""
    x, _ = _centered_f64(n, 0, 2, "x", None)
    o = _shape(_ssa(n, 1))[0]
    w, _ = _centered_f64(n, 1, 3, "w", None if o == DYNAMIC else o)
    return [n.cx.emit1(graph.CastOp(conv_nd(n, x, w, None), i32))]


@onnx_op("QLinearConv", check=_check_conv_int)
def emit_qlinear_conv(n: NodeView) -> list:
    """QLinearConv(x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, B) -> acc = graph.conv2d
    in f64 of the centered operands + B (int32); y = graph.cast(graph.clip(graph.round(
    graph.cast(acc, f32) * (x_scale * w_scale / y_scale)) + y_zp, qmin, qmax), y's type), the
    scales in f32, w_scale per output channel or scalar (QLinearMatMul's requantization)."""
    cx = n.cx
    o = _shape(_ssa(n, 3))[0]
    olen = None if o == DYNAMIC else o
    x, _ = _centered_f64(n, 0, 2, "x", None)
    w, _ = _centered_f64(n, 3, 5, "w", olen)
    yzp_v = n.input(7)
    if yzp_v is None:
        raise Unsupported("QLinearConv needs y_zero_point (it gives the output type)")
    y_type = _elem(cx.ssa(yzp_v))
    if not _is_8bit(y_type):
        raise Unsupported(f"QLinearConv: y_zero_point must be int8 or uint8, got {y_type}")
    bias = None
    if n.input(8) is not None:
        b = cx.ssa(n.input(8))
        if _elem(b) != i32:
            raise Unsupported(f"QLinearConv: B must be int32, got {_elem(b)}")
        bias = cx.emit1(graph.CastOp(b, f64))
    acc = conv_nd(n, x, w, bias, f"{n.op_type}: ")
    rank = len(_shape(acc))
    scales = []
    for i, what, per in ((1, "x_scale", None), (4, "w_scale", olen), (6, "y_scale", None)):
        s = _ssa(n, i)
        if not isinstance(_elem(s), AnyFloat):
            raise Unsupported(f"QLinearConv: {what} must be a float tensor, got {_elem(s)}")
        ss = _shape(s)
        s = s if _elem(s) == f32 else cx.emit1(graph.CastOp(s, f32))
        if len(ss) <= 1 and (ss == [] or ss[0] == 1):
            scales.append(cx.reshape(s, []))
        elif per is not None and len(ss) == 1 and ss[0] == per:
            scales.append(cx.reshape(s, [per] + [1] * (rank - 2)))
        else:
            raise Unsupported(f"QLinearConv: {what} has shape {ss}: it must be a scalar"
                              + (" or one value per output channel" if i == 4 else ""))
    mult = cx.emit1(graph.DivOp(cx.emit1(graph.MulOp(scales[0], scales[1])), scales[2]))
    y = cx.emit1(graph.RoundOp(cx.emit1(graph.MulOp(cx.emit1(graph.CastOp(acc, f32)), mult))))
    yzp = cx.ssa(yzp_v)
    if len(_shape(yzp)) > 1 or (_shape(yzp) and _shape(yzp)[0] != 1):
        raise Unsupported(f"QLinearConv: y_zero_point has shape {_shape(yzp)}: it must be a scalar")
    yzp = cx.reshape(cx.emit1(graph.CastOp(yzp, f32)), [])
    lo, hi = _int_bounds(y_type)
    y = cx.emit1(graph.ClipOp(cx.emit1(graph.AddOp(y, yzp)), float(lo), float(hi)))
    return [cx.emit1(graph.CastOp(y, y_type))]


# --------------------------------------------------------------------------------------------
# Compress, Unique: data-dependent result sizes through graph.nonzero


def _const(cx, array: np.ndarray):
    return cx.ssa(cx.from_const(array))


def _pick(cx, x, i: int, axis: int = 0):
    """x[i] along `axis` (that dim removed): graph.gather with a 0-d index."""
    return cx.emit1(graph.GatherOp(x, _const(cx, np.array(i, np.int64)), axis))


def _nonzero(cx, mask):
    """graph.nonzero of `mask` with its count (reduce_sum of the mask as i64, 0-d): the
    (rank, ?) coordinates of the true entries in row-major order, `?` read at run time."""
    rank = len(_shape(mask))
    m64 = cx.emit1(graph.CastOp(mask, i64))
    count = cx.emit1(graph.ReduceSumOp(m64, list(range(rank)), keepdims=False))
    return cx.emit1(graph.NonZeroOp(mask, count))


def _iota(cx, size):
    """0..size-1 (i64, 1-D): a constant, or for a run-time size the exclusive graph.cumsum of
    ones broadcast to it (its dim stays the SSA value `size`)."""
    if isinstance(size, int):
        return _const(cx, np.arange(size, dtype=np.int64))
    return cx.emit1(graph.CumSumOp(cx.broadcast_to(cx.scalar(1, i64), [size]), 0, exclusive=True))


def _static_size(shape: list[int]) -> int | None:
    return None if DYNAMIC in shape else int(np.prod(shape, dtype=np.int64))


@onnx_op("Compress", min_opset=9)
def emit_compress(n: NodeView) -> list:
    """Compress(input, condition, axis) -> graph.gather(input, graph.nonzero(condition)[0], axis)
    (no axis: of the flattened input). Entries of a condition longer than the axis select
    nothing (cut off, or masked with iota < dim when a size is known only at run time)."""
    cx = n.cx
    x = _ssa(n, 0)
    c = _ssa(n, 1)
    if _elem(c) != i1:
        raise Unsupported(f"Compress: condition must be bool, got {_elem(c)}")
    if len(_shape(c)) != 1:
        raise Unsupported(f"Compress: condition must be 1-D, got shape {_shape(c)}")
    xs = _shape(x)
    if n.has_attr("axis"):
        axis = _axis(int(n.attr("axis")), len(xs))
        d = cx.dims(x)[axis]
    else:
        d = _prod(cx, cx.dims(x))
        x = cx.reshape(x, [d])
        axis = 0
    length = cx.dims(c)[0]
    if isinstance(length, int) and isinstance(d, int):
        if length > d:
            c = _slice_prefix(cx, c, d)
    else:  # sizes known at run time: entries past the axis select nothing
        dim = cx.reshape(cx.emit1(graph.FromDimsOp([cx.index(d)])), [])
        c = cx.emit1(graph.AndOp(c, cx.emit1(graph.LtOp(_iota(cx, length), dim))))
    idx = _pick(cx, _nonzero(cx, c), 0)
    return [cx.emit1(graph.GatherOp(x, idx, axis))]


def _slice_prefix(cx, c, d: int):
    """c[:d] of a 1-D tensor: graph.gather with constant indices."""
    return cx.emit1(graph.GatherOp(c, _const(cx, np.arange(d, dtype=np.int64)), 0))


def _lex_less(cx, a, size: int, length: int):
    """less[j, i] = slice j < slice i lexicographically, for a [size, length] tensor (i64 0/1):
    at the first k where they differ (exclusive cumsum of `differs` along k is 0), a[j, k] < a[i, k]."""
    aj = cx.reshape(a, [size, 1, length])
    ai = cx.reshape(a, [1, size, length])
    lt = cx.emit1(graph.CastOp(cx.emit1(graph.LtOp(aj, ai)), i64))
    if length == 1:
        return cx.reshape(lt, [size, size])
    ne = cx.emit1(graph.CastOp(cx.emit1(graph.NotOp(cx.emit1(graph.EqOp(aj, ai)))), i64))
    before = cx.emit1(graph.CumSumOp(ne, 2, exclusive=True))
    first = cx.emit1(graph.EqOp(before, _const(cx, np.array(0, np.int64))))
    hit = cx.emit1(graph.MulOp(cx.emit1(graph.CastOp(first, i64)), cx.emit1(graph.MulOp(ne, lt))))
    return cx.emit1(graph.ReduceMaxOp(hit, [2], keepdims=False))


@onnx_op("Unique", min_opset=11)
def emit_unique(n: NodeView) -> list:
    """Unique(X, axis, sorted) -> (Y, indices, inverse_indices, counts), over the N elements
    (no axis) or the N slices along axis, flattened to a [N, L] tensor A:

      E[i, j]   = all_k A[i, k] == A[j, k]                 (graph.eq, graph.reduce_min)
      first[i]  = no j < i with E[i, j]                    (a first occurrence)
      O[j, i]   = group j comes before group i: A[j] < A[i] lexicographically (sorted), or
                  j < the first occurrence of i's value (not sorted; graph.argmax of E[i, :])
      inverse_indices[i] = sum_j first[j] * O[j, i]
      indices   = graph.nonzero(P)[1] with P[r, i] = first[i] and inverse_indices[i] == r: the
                  row-major coordinates list the first occurrences in output order; the count
                  of unique values is sum(first), read at run time as NonZero's
      Y = graph.gather(X, indices, axis), counts = graph.gather(sum_j E[:, j], indices)

    The matrices are N x N (x L): fine for the sizes Unique is used at."""
    cx = n.cx
    x = _ssa(n, 0)
    xs = _shape(x)
    dims = cx.dims(x)
    has_axis = n.has_attr("axis")
    if has_axis:
        axis = _axis(int(n.attr("axis")), len(xs))
        size = dims[axis]
        length = _prod(cx, [d for k, d in enumerate(dims) if k != axis])
        perm = [axis] + [k for k in range(len(xs)) if k != axis]
        a = cx.reshape(cx.emit1(graph.TransposeOp(x, perm)) if axis else x, [size, length])
        data, gaxis = x, axis
    else:
        size, length = _prod(cx, dims), 1
        data = cx.reshape(x, [size])
        a, gaxis = cx.reshape(x, [size, 1]), 0
    if size == 0:
        raise Unsupported("Unique of an empty input")
    srt = bool(n.attr("sorted", 1))
    eq = cx.emit1(graph.EqOp(cx.reshape(a, [size, 1, length]), cx.reshape(a, [1, size, length])))
    e = cx.emit1(graph.ReduceMinOp(cx.emit1(graph.CastOp(eq, i64)), [2], keepdims=False))  # [N, N]
    iota = _iota(cx, size)
    iota_col, iota_row = cx.reshape(iota, [size, 1]), cx.reshape(iota, [1, size])
    lower = cx.emit1(graph.CastOp(cx.emit1(graph.LtOp(iota_row, iota_col)), i64))  # [i, j]: j < i
    dups = cx.emit1(graph.ReduceSumOp(cx.emit1(graph.MulOp(e, lower)), [1], keepdims=False))
    zero = _const(cx, np.array(0, np.int64))
    first = cx.emit1(graph.CastOp(cx.emit1(graph.EqOp(dups, zero)), i64))  # [N]
    if srt:
        order = _lex_less(cx, a, size, length)  # [j, i]
    else:
        firstpos = cx.emit1(graph.ArgMaxOp(e, 1, keepdims=False))  # [N]: the first j with E[i, j]
        order = cx.emit1(graph.CastOp(cx.emit1(graph.LtOp(iota_col, cx.reshape(firstpos, [1, size]))), i64))
    inv = cx.emit1(graph.ReduceSumOp(cx.emit1(graph.MulOp(cx.reshape(first, [size, 1]), order)), [0],
                                     keepdims=False))  # [N]
    at_r = cx.emit1(graph.EqOp(iota_col, cx.reshape(inv, [1, size])))
    p = cx.emit1(graph.AndOp(at_r, cx.reshape(cx.emit1(graph.EqOp(first, _const(cx, np.array(1, np.int64)))),
                                              [1, size])))
    idx = _pick(cx, _nonzero(cx, p), 1)  # [?]
    y = cx.emit1(graph.GatherOp(data, idx, gaxis))
    group = cx.emit1(graph.ReduceSumOp(e, [1], keepdims=False))
    counts = cx.emit1(graph.GatherOp(group, idx, 0))
    return [y, idx, inv, counts][:max(1, n.num_outputs())]


# --------------------------------------------------------------------------------------------
# NonMaxSuppression


def _check_nms(node, opset):
    cpb = _attr(node, "center_point_box", 0)
    return None if cpb in (0, 1) else f"center_point_box must be 0 or 1, got {cpb}"


def _scalar_input(n: NodeView, i: int, what: str, elem):
    """Optional input i as a 0-d tensor of `elem` (a 1-element 1-D tensor is reshaped)."""
    v = n.input(i)
    if v is None:
        return None
    x = n.cx.ssa(v)
    if _static_size(_shape(x)) != 1 or len(_shape(x)) > 1:
        raise Unsupported(f"NonMaxSuppression: {what} must be a scalar, got shape {_shape(x)}")
    if _elem(x) != elem:
        x = n.cx.emit1(graph.CastOp(x, elem))
    return n.cx.reshape(x, [])


def _box_edges(cx, boxes, center: bool):
    """(xmin, xmax, ymin, ymax), each [B, N], as onnxruntime computes them: corners in either
    order (center_point_box 0: [y1, x1, y2, x2]) or center +- half size (1: [xc, yc, w, h])."""
    cols = [_pick(cx, boxes, k, 2) for k in range(4)]
    if center:
        two = cx.scalar(2.0, f32)
        hw, hh = cx.emit1(graph.DivOp(cols[2], two)), cx.emit1(graph.DivOp(cols[3], two))
        return (cx.emit1(graph.SubOp(cols[0], hw)), cx.emit1(graph.AddOp(cols[0], hw)),
                cx.emit1(graph.SubOp(cols[1], hh)), cx.emit1(graph.AddOp(cols[1], hh)))
    y1, x1, y2, x2 = cols
    return (cx.emit1(graph.MinOp(x1, x2)), cx.emit1(graph.MaxOp(x1, x2)),
            cx.emit1(graph.MinOp(y1, y2)), cx.emit1(graph.MaxOp(y1, y2)))


@onnx_op("NonMaxSuppression", check=_check_nms, min_opset=10)
def emit_non_max_suppression(n: NodeView) -> list:
    """NonMaxSuppression(boxes [B, N, 4], scores [B, C, N], max_output_boxes_per_class,
    iou_threshold, score_threshold) -> selected_indices [?, 3] (batch, class, box), onnxruntime's
    algorithm:

      suppress[b, i, j] = IoU(box i, box j) > iou_threshold, with onnxruntime's early outs (an
                          empty intersection, a non-positive area or union never suppresses)
      order, sorted = graph.topk(scores, N) (descending; equal scores: the lower box first)
      valid = sorted > score_threshold (all when absent)
      keep = graph.nms_select(suppress, order, valid, max_output_boxes_per_class)  (by rank)
      coords = graph.nonzero(keep) (b, c, rank: per batch, class, in selection order),
      selected_indices = (b, c, order[b, c, rank])

    The number selected is graph.nonzero's run-time count."""
    cx = n.cx
    boxes, scores = _ssa(n, 0), _ssa(n, 1)
    bs, ss = _shape(boxes), _shape(scores)
    if len(bs) != 3 or bs[2] != 4 or len(ss) != 3:
        raise Unsupported(f"NonMaxSuppression: boxes must be [B, N, 4] and scores [B, C, N], got {bs} and {ss}")
    if _elem(boxes) != f32 or _elem(scores) != f32:
        raise Unsupported(f"NonMaxSuppression of {_elem(boxes)} boxes / {_elem(scores)} scores (float32 only)")
    num = ss[2]
    if num == DYNAMIC:
        raise Unsupported("NonMaxSuppression with a dynamic number of boxes")
    center = bool(n.attr("center_point_box", 0))
    max_out = _scalar_input(n, 2, "max_output_boxes_per_class", i64)
    if max_out is None:
        max_out = cx.scalar(0, i64)
    iou_t = _scalar_input(n, 3, "iou_threshold", f32)
    if iou_t is None:
        iou_t = cx.scalar(0.0, f32)
    score_t = _scalar_input(n, 4, "score_threshold", f32)
    b_len = cx.dims(boxes)[0]

    xmin, xmax, ymin, ymax = _box_edges(cx, boxes, center)

    def pair(v, op):  # [B, N] -> op(v[:, i, None], v[:, None, j]): [B, N, N]
        return cx.emit1(op(cx.reshape(v, [b_len, num, 1]), cx.reshape(v, [b_len, 1, num])))

    ix0, ix1 = pair(xmin, graph.MaxOp), pair(xmax, graph.MinOp)
    iy0, iy1 = pair(ymin, graph.MaxOp), pair(ymax, graph.MinOp)
    inter = cx.emit1(graph.MulOp(cx.emit1(graph.SubOp(ix1, ix0)), cx.emit1(graph.SubOp(iy1, iy0))))
    area = cx.emit1(graph.MulOp(cx.emit1(graph.SubOp(xmax, xmin)), cx.emit1(graph.SubOp(ymax, ymin))))
    a_i, a_j = cx.reshape(area, [b_len, num, 1]), cx.reshape(area, [b_len, 1, num])
    union = cx.emit1(graph.SubOp(cx.emit1(graph.AddOp(a_i, a_j)), inter))
    zero = cx.scalar(0.0, f32)
    conds = [cx.emit1(graph.GtOp(ix1, ix0)), cx.emit1(graph.GtOp(iy1, iy0)), cx.emit1(graph.GtOp(inter, zero)),
             cx.emit1(graph.GtOp(a_i, zero)), cx.emit1(graph.GtOp(a_j, zero)), cx.emit1(graph.GtOp(union, zero)),
             cx.emit1(graph.GtOp(cx.emit1(graph.DivOp(inter, union)), iou_t))]
    sup = conds[0]
    for c in conds[1:]:
        sup = cx.emit1(graph.AndOp(sup, c))
    top = cx.emit(graph.TopKOp(scores, num, 2, largest=True))
    srt, order = top.results
    valid = cx.emit1(graph.GtOp(srt, score_t)) if score_t is not None else _all_true(cx, cx.dims(srt))
    keep = cx.emit1(graph.NmsSelectOp(sup, order, valid, max_out))
    coords = _nonzero(cx, keep)  # [3, ?]
    box = cx.emit1(graph.GatherNDOp(order, cx.emit1(graph.TransposeOp(coords, [1, 0]))))  # [?]
    bc = cx.emit1(graph.GatherOp(coords, _const(cx, np.array([0, 1], np.int64)), 0))  # [2, ?]
    cnt = cx.dims(box)[0]
    out = cx.emit1(graph.ConcatOp([bc, cx.reshape(box, [1, cnt])], 0))  # [3, ?]
    return [cx.emit1(graph.TransposeOp(out, [1, 0]))]


def _all_true(cx, shape):
    return cx.broadcast_to(cx.scalar(True, i1), shape)


# --------------------------------------------------------------------------------------------
# ReverseSequence, MaxUnpool, TensorScatter: index maps for graph.gather_elements / scatter


def _along(cx, v, axis: int, rank: int):
    """A 1-D tensor reshaped to lie along `axis` of a rank-`rank` tensor (1s elsewhere)."""
    dims = [1] * rank
    dims[axis] = cx.dims(v)[0]
    return cx.reshape(v, dims)


def _check_reverse_sequence(node, opset):
    b, t = _attr(node, "batch_axis", 1), _attr(node, "time_axis", 0)
    if {b, t} != {0, 1}:
        return f"batch_axis and time_axis must be 0 and 1 (one each), got {b} and {t}"
    return None


@onnx_op("ReverseSequence", check=_check_reverse_sequence, min_opset=10)
def emit_reverse_sequence(n: NodeView) -> list:
    """ReverseSequence(input, sequence_lens) -> graph.gather_elements(input, idx, time_axis) with
    idx = where(t < len[b], len[b] - 1 - t, t) broadcast to the input's shape (t the time index,
    len[b] clamped to [0, T] so that no index leaves the input)."""
    cx = n.cx
    x = _ssa(n, 0)
    lens = _ssa(n, 1)
    rank = len(_shape(x))
    if rank < 2:
        raise Unsupported(f"ReverseSequence of a rank-{rank} input (it needs batch and time axes)")
    if len(_shape(lens)) != 1 or not isinstance(_elem(lens), IntegerType):
        raise Unsupported(f"ReverseSequence: sequence_lens must be a 1-D integer tensor, got {lens.type}")
    b_ax, t_ax = int(n.attr("batch_axis", 1)), int(n.attr("time_axis", 0))
    dims = cx.dims(x)
    t_len = dims[t_ax]
    if t_len == DYNAMIC or not isinstance(t_len, int):
        raise Unsupported("ReverseSequence with a dynamic time dim")
    lens = cx.emit1(graph.CastOp(lens, i64)) if _elem(lens) != i64 else lens
    lens = cx.emit1(graph.ClipOp(lens, 0.0, float(t_len)))
    ln = _along(cx, lens, b_ax, rank)
    t = _const(cx, np.arange(t_len, dtype=np.int64).reshape([t_len if k == t_ax else 1 for k in range(rank)]))
    rev = cx.emit1(graph.SubOp(cx.emit1(graph.SubOp(ln, cx.scalar(1, i64))), t))
    idx = cx.emit1(graph.WhereOp(cx.emit1(graph.LtOp(t, ln)), rev, t))
    idx = cx.broadcast_to(idx, dims)
    return [cx.emit1(graph.GatherElementsOp(x, idx, t_ax))]


def _prod(cx, dims):
    out = 1
    for d in dims:
        out = cx.iarith("mul", out, d)
    return out


@onnx_op("MaxUnpool", min_opset=9)
def emit_max_unpool(n: NodeView) -> list:
    """MaxUnpool(X, I, output_shape) -> graph.reshape(graph.scatter_elements(zeros, flat I,
    flat X, axis 0), unpooled): I holds flat indices into the whole unpooled tensor, whose spatial
    dims are (in - 1) * stride - pad_begin - pad_end + kernel (the spatial rank does not matter).
    A larger output_shape (a constant) zero-pads that result at the end of each dim, as onnx's
    reference does (onnxruntime instead reads I as indices into the output_shape tensor)."""
    cx = n.cx
    x, ind = _ssa(n, 0), _ssa(n, 1)
    xs = _shape(x)
    k = len(xs) - 2
    kernel = n.attr("kernel_shape")
    if kernel is None or len(kernel) != k:
        raise Unsupported(f"MaxUnpool needs kernel_shape with {k} entries")
    strides = list(n.attr("strides", [1] * k))
    pads = list(n.attr("pads", [0] * (2 * k)))
    if _shape(ind) != xs:
        raise Unsupported(f"MaxUnpool: I has shape {_shape(ind)}, X has {xs}")
    dims = cx.dims(x)
    spatial = []
    for i in range(k):
        if not isinstance(dims[2 + i], int):
            raise Unsupported("MaxUnpool of a dynamic spatial dim")
        spatial.append((dims[2 + i] - 1) * strides[i] - pads[i] - pads[k + i] + kernel[i])
    inferred = list(dims[:2]) + spatial
    extra = [0] * len(xs)
    if n.input(2) is not None:
        out = [int(d) for d in _const_input(n, 2, "output_shape").reshape(-1)]
        if len(out) != len(xs):
            raise Unsupported(f"MaxUnpool: output_shape has {len(out)} entries, expected {len(xs)}")
        for i in (0, 1):
            if isinstance(dims[i], int) and out[i] != dims[i]:
                raise Unsupported(f"MaxUnpool: output_shape {out} changes dim {i} of X")
        extra = [0, 0] + [o - s for o, s in zip(out[2:], spatial)]
        if any(e < 0 for e in extra):
            raise Unsupported(f"MaxUnpool: output_shape {out} is smaller than the unpooled size {spatial}")
    total = _prod(cx, inferred)
    zeros = cx.broadcast_to(cx.scalar(0, _elem(x)), [total])
    count = _prod(cx, dims)
    y = cx.emit1(graph.ScatterElementsOp(zeros, cx.reshape(ind, [count]), cx.reshape(x, [count]), 0))
    y = cx.reshape(y, inferred)
    if any(extra):
        y = cx.emit1(graph.PadOp(y, [0] * len(xs) + extra))
    return [y]


def _check_tensor_scatter(node, opset):
    mode = _s(_attr(node, "mode", "linear"))
    return None if mode in ("linear", "circular") else f"mode '{mode}' (linear or circular)"


@onnx_op("TensorScatter", check=_check_tensor_scatter, min_opset=24)
def emit_tensor_scatter(n: NodeView) -> list:
    """TensorScatter(past_cache, update, write_indices) -> graph.where(0 <= k < S_upd,
    graph.gather_elements(update, clamp(k), axis), past_cache) with k = s - write_indices[b]
    for each cache position s along axis (circular: modulo the cache length): update[b, .., k, ..]
    lands at past[b, .., write_indices[b] + k, ..]."""
    cx = n.cx
    past, upd = _ssa(n, 0), _ssa(n, 1)
    ps, us = _shape(past), _shape(upd)
    rank = len(ps)
    if rank < 2 or len(us) != rank:
        raise Unsupported(f"TensorScatter: past_cache {ps} and update {us} must have the same rank >= 2")
    axis = _axis(int(n.attr("axis", -2)), rank)
    if axis == 0:
        raise Unsupported("TensorScatter: axis must not be the batch axis 0")
    s_max, s_upd = ps[axis], us[axis]
    if DYNAMIC in (s_max, s_upd):
        raise Unsupported("TensorScatter with a dynamic sequence dim")
    circular = _s(n.attr("mode", "linear")) == "circular"
    s = _const(cx, np.arange(s_max, dtype=np.int64).reshape([s_max if j == axis else 1 for j in range(rank)]))
    if n.input(2) is not None:
        w = _ssa(n, 2)
        w = cx.emit1(graph.CastOp(w, i64)) if _elem(w) != i64 else w
        k = cx.emit1(graph.SubOp(s, _along(cx, w, 0, rank)))
    else:
        k = s
    if circular:  # k in (-s_max, s_max) for valid write indices
        k = cx.emit1(graph.ModOp(cx.emit1(graph.AddOp(k, cx.scalar(s_max, i64))), cx.scalar(s_max, i64)))
    inside = cx.emit1(graph.AndOp(cx.emit1(graph.GeOp(k, cx.scalar(0, i64))),
                                  cx.emit1(graph.LtOp(k, cx.scalar(s_upd, i64)))))
    kc = cx.emit1(graph.ClipOp(k, 0.0, float(s_upd - 1)))
    dims = cx.dims(past)
    udims = cx.dims(upd)
    src = cx.emit1(graph.GatherElementsOp(upd, cx.broadcast_to(kc, [*udims[:axis], s_max, *udims[axis + 1:]]), axis))
    return [cx.emit1(graph.WhereOp(cx.broadcast_to(inside, dims), src, past))]


# --------------------------------------------------------------------------------------------
# BitCast


def _check_bitcast(node, opset):
    to = _attr(node, "to")
    if to not in _DTYPES:
        return f"to {onnx_dtype_name(to) if to is not None else '(missing)'}"
    return None


@onnx_op("BitCast", check=_check_bitcast, min_opset=26)
def emit_bitcast(n: NodeView) -> list:
    """BitCast(x, to) -> graph.bitcast between element types of the same width (the spec requires
    it; the shape is kept); bool -> an 8-bit integer is graph.cast (a bool byte is 0 or 1)."""
    cx = n.cx
    x = _ssa(n, 0)
    to = _DTYPES[int(n.attr("to"))][1]
    src = _elem(x)
    if src == to:
        return [x]
    if src == i1:
        if isinstance(to, IntegerType) and to.width.data == 8:
            return [cx.emit1(graph.CastOp(x, to))]
        raise Unsupported(f"BitCast of bool to {to} (a different width: only 8-bit integers)")
    if to == i1:
        raise Unsupported(f"BitCast of {src} to bool (a byte other than 0 / 1 is no bool)")
    from minimlir.dialects._graph_coverage4 import _bit_width

    if _bit_width(src) != _bit_width(to):
        raise Unsupported(f"BitCast between different widths ({src} to {to}): the spec requires the same bit width")
    return [cx.emit1(graph.BitcastOp(x, to))]


# --------------------------------------------------------------------------------------------
# Det

_DET_MAX_N = 32


@onnx_op("Det", min_opset=11)
def emit_det(n: NodeView) -> list:
    """Det(X [..., n, n]) -> LU factorization with partial pivoting, unrolled over the static n,
    in X's float type (batch dims flattened to one). Step k: p = graph.argmax over rows >= k of
    |A[:, k]| (the first largest, as LAPACK), rows k and p swapped (graph.gather_elements with
    a swap index), det *= pivot and the sign flips when p != k; rows below k lose
    (A[i, k] / pivot) * A[k] (nothing when the pivot is 0: the determinant is 0 then)."""
    cx = n.cx
    x = _ssa(n, 0)
    el = _elem(x)
    if not isinstance(el, AnyFloat):
        raise Unsupported(f"Det of {el}")
    xs = _shape(x)
    if len(xs) < 2 or xs[-1] != xs[-2] or xs[-1] == DYNAMIC:
        raise Unsupported(f"Det needs square matrices of a static size in the last two dims, got {xs}")
    size = xs[-1]
    if size > _DET_MAX_N:
        raise Unsupported(f"Det of {size}x{size} matrices (the factorization is unrolled up to {_DET_MAX_N})")
    dims = cx.dims(x)
    batch = dims[:-2]
    m = _prod(cx, batch)
    a = cx.reshape(x, [m, size, size])
    rows = np.arange(size, dtype=np.int64)
    det = cx.broadcast_to(cx.scalar(1.0, el), [m])
    zero, one = cx.scalar(0.0, el), cx.scalar(1.0, el)
    for k in range(size):
        col = cx.emit1(graph.AbsOp(_pick(cx, a, k, 2)))  # [M, n]
        below = _const(cx, (rows >= k).reshape(1, size))
        col = cx.emit1(graph.WhereOp(below, col, cx.scalar(-1.0, el)))
        p = cx.reshape(cx.emit1(graph.ArgMaxOp(col, 1, keepdims=False)), [m, 1])  # [M, 1]
        r = _const(cx, rows.reshape(1, size))
        kk = cx.scalar(k, i64)
        swap = cx.emit1(graph.WhereOp(cx.emit1(graph.EqOp(r, kk)), cx.broadcast_to(p, [m, size]),
                                      cx.emit1(graph.WhereOp(cx.emit1(graph.EqOp(r, p)), cx.broadcast_to(kk, [m, size]),
                                                             cx.broadcast_to(r, [m, size])))))
        a = cx.emit1(graph.GatherElementsOp(a, cx.broadcast_to(cx.reshape(swap, [m, size, 1]), [m, size, size]), 1))
        flip = cx.emit1(graph.WhereOp(cx.emit1(graph.EqOp(cx.reshape(p, [m]), kk)), one, cx.scalar(-1.0, el)))
        pivot = _pick(cx, _pick(cx, a, k, 1), k, 1)  # [M]
        det = cx.emit1(graph.MulOp(det, cx.emit1(graph.MulOp(flip, pivot))))
        if k == size - 1:
            break
        safe = cx.emit1(graph.WhereOp(cx.emit1(graph.EqOp(pivot, zero)), one, pivot))
        factor = cx.emit1(graph.DivOp(_pick(cx, a, k, 2), cx.reshape(safe, [m, 1])))  # [M, n]
        lower = _const(cx, (rows > k).reshape(1, size))
        factor = cx.emit1(graph.WhereOp(cx.emit1(graph.AndOp(lower, cx.emit1(graph.NotOp(
            cx.emit1(graph.EqOp(cx.reshape(pivot, [m, 1]), zero)))))), factor, zero))
        row_k = cx.reshape(_pick(cx, a, k, 1), [m, 1, size])
        a = cx.emit1(graph.SubOp(a, cx.emit1(graph.MulOp(cx.reshape(factor, [m, size, 1]), row_k))))
    return [cx.reshape(det, batch)]


# --------------------------------------------------------------------------------------------
# RoiAlign


def _check_roi_align(node, opset):
    ctm = _s(_attr(node, "coordinate_transformation_mode", "half_pixel"))
    if ctm not in ("half_pixel", "output_half_pixel"):
        return f"coordinate_transformation_mode '{ctm}' (half_pixel or output_half_pixel)"
    mode = _s(_attr(node, "mode", "avg"))
    if mode not in ("avg", "max"):
        return f"mode '{mode}' (avg or max)"
    if _attr(node, "sampling_ratio", 0) <= 0:
        return ("sampling_ratio 0 (adaptive: the sampling grid of each roi depends on its size, known "
                "only at run time); a fixed sampling_ratio > 0 is supported")
    if _attr(node, "output_height", 1) < 1 or _attr(node, "output_width", 1) < 1:
        return "output_height and output_width must be >= 1"
    return None


def _roi_axis(cx, start, size, bins: int, grid: int, extent: int, el):
    """The sample coordinates along one axis, onnxruntime's bilinear set-up: for roi r, bin p and
    sample i, c = start + p * bin + (i + 0.5) * bin / grid, shaped [R, bins, grid]; returns
    (valid, low, high, weight of low, weight of high) with the border rules (outside [-1, extent]:
    no contribution; clamped at 0; at or past extent - 1 both taps are the last row)."""
    r = cx.dims(start)[0]
    b = cx.reshape(cx.emit1(graph.DivOp(size, cx.scalar(float(bins), el))), [r, 1, 1])
    p = _const(cx, np.arange(bins, dtype=_np(el)).reshape(1, bins, 1))
    i = _const(cx, (np.arange(grid) + 0.5).astype(_np(el)).reshape(1, 1, grid))
    c = cx.emit1(graph.AddOp(cx.emit1(graph.AddOp(cx.reshape(start, [r, 1, 1]), cx.emit1(graph.MulOp(p, b)))),
                             cx.emit1(graph.DivOp(cx.emit1(graph.MulOp(i, b)), cx.scalar(float(grid), el)))))
    valid = cx.emit1(graph.NotOp(cx.emit1(graph.OrOp(cx.emit1(graph.LtOp(c, cx.scalar(-1.0, el))),
                                                     cx.emit1(graph.GtOp(c, cx.scalar(float(extent), el)))))))
    c = cx.emit1(graph.MaxOp(c, cx.scalar(0.0, el)))
    low = cx.emit1(graph.FloorOp(c))
    last = cx.scalar(float(extent - 1), el)
    edge = cx.emit1(graph.GeOp(low, last))
    low = cx.emit1(graph.WhereOp(edge, last, low))
    c = cx.emit1(graph.WhereOp(edge, low, c))
    high = cx.emit1(graph.WhereOp(edge, low, cx.emit1(graph.AddOp(low, cx.scalar(1.0, el)))))
    lw = cx.emit1(graph.SubOp(c, low))
    hw = cx.emit1(graph.SubOp(cx.scalar(1.0, el), lw))
    return valid, low, high, hw, lw


def _np(el):
    from minimlir.frontend.onnx_import import numpy_dtype_of

    return numpy_dtype_of(el)


@onnx_op("RoiAlign", check=_check_roi_align, min_opset=10)
def emit_roi_align(n: NodeView) -> list:
    """RoiAlign(X [N, C, H, W], rois [R, 4], batch_indices [R]) -> [R, C, oh, ow], onnxruntime's
    algorithm with a fixed sampling_ratio g: per roi, bin (ph, pw) averages (or takes the max
    of) g x g bilinear samples, each sum of four taps w_k * X[b, c, y_k, x_k] (max mode: the
    largest of the four weighted taps). The sample coordinates and weights are [R, oh, g] and
    [R, ow, g] graph ops; the taps are one graph.gather each from the flattened X at
    ((b * C + c) * H + y) * W + x, then reduced over the g x g samples of each bin."""
    cx = n.cx
    x, rois, bidx = _ssa(n, 0), _ssa(n, 1), _ssa(n, 2)
    el = _elem(x)
    if not isinstance(el, AnyFloat):
        raise Unsupported(f"RoiAlign of {el}")
    xs = _shape(x)
    if len(xs) != 4 or DYNAMIC in xs[1:]:
        raise Unsupported(f"RoiAlign needs X of shape [N, C, H, W] with static C, H, W, got {xs}")
    if len(_shape(rois)) != 2 or _shape(rois)[1] != 4:
        raise Unsupported(f"RoiAlign: rois must be [num_rois, 4], got {_shape(rois)}")
    _, c_len, h, w = xs
    oh, ow = int(n.attr("output_height", 1)), int(n.attr("output_width", 1))
    g = int(n.attr("sampling_ratio", 0))
    scale = float(n.attr("spatial_scale", 1.0))
    ctm = _s(n.attr("coordinate_transformation_mode", "half_pixel" if n.opset >= 16 else "output_half_pixel"))
    half = ctm == "half_pixel"
    mode = _s(n.attr("mode", "avg"))
    if _elem(rois) != el:
        rois = cx.emit1(graph.CastOp(rois, el))
    r_len = cx.dims(rois)[0]
    off = cx.scalar(0.5 if half else 0.0, el)
    sc = cx.scalar(scale, el)
    x1, y1, x2, y2 = (cx.emit1(graph.SubOp(cx.emit1(graph.MulOp(_pick(cx, rois, k, 1), sc)), off)) for k in range(4))
    rw, rh = cx.emit1(graph.SubOp(x2, x1)), cx.emit1(graph.SubOp(y2, y1))
    if not half:
        rw, rh = cx.emit1(graph.MaxOp(rw, cx.scalar(1.0, el))), cx.emit1(graph.MaxOp(rh, cx.scalar(1.0, el)))
    vy, yl, yh, why, wly = _roi_axis(cx, y1, rh, oh, g, h, el)  # [R, oh, g]
    vx, xl, xh, whx, wlx = _roi_axis(cx, x1, rw, ow, g, w, el)  # [R, ow, g]

    def ys(v):
        return cx.reshape(v, [r_len, oh, g, 1, 1])

    def xs_(v):
        return cx.reshape(v, [r_len, 1, 1, ow, g])

    valid = cx.emit1(graph.CastOp(cx.emit1(graph.AndOp(ys(vy), xs_(vx))), el))
    p = oh * g * ow * g
    b = cx.emit1(graph.CastOp(bidx, i64)) if _elem(bidx) != i64 else bidx
    first = cx.emit1(graph.MulOp(cx.reshape(b, [r_len, 1, 1]), cx.scalar(c_len, i64)))
    chans = _const(cx, np.arange(c_len, dtype=np.int64).reshape(1, c_len, 1))
    base = cx.emit1(graph.MulOp(cx.emit1(graph.AddOp(first, chans)), cx.scalar(h * w, i64)))  # [R, C, 1]
    total = _prod(cx, cx.dims(x))
    flat = cx.reshape(x, [total])
    terms = []
    for yv, wy in ((yl, why), (yh, wly)):
        for xv, wx in ((xl, whx), (xh, wlx)):
            pos = cx.emit1(graph.AddOp(cx.emit1(graph.MulOp(ys(yv), cx.scalar(float(w), el))), xs_(xv)))
            pos = cx.reshape(cx.emit1(graph.CastOp(pos, i64)), [r_len, 1, p])
            wt = cx.reshape(cx.emit1(graph.MulOp(cx.emit1(graph.MulOp(ys(wy), xs_(wx))), valid)), [r_len, 1, p])
            vals = cx.emit1(graph.GatherOp(flat, cx.emit1(graph.AddOp(base, pos)), 0))  # [R, C, P]
            terms.append(cx.emit1(graph.MulOp(wt, vals)))
    comb = graph.AddOp if mode == "avg" else graph.MaxOp
    acc = terms[0]
    for t in terms[1:]:
        acc = cx.emit1(comb(acc, t))
    acc = cx.reshape(acc, [r_len, c_len, oh, g, ow, g])
    if mode == "avg":
        y = cx.emit1(graph.DivOp(cx.emit1(graph.ReduceSumOp(acc, [3, 5], keepdims=False)), cx.scalar(float(g * g), el)))
    else:
        y = cx.emit1(graph.ReduceMaxOp(acc, [3, 5], keepdims=False))
    return [y]


# --------------------------------------------------------------------------------------------
# DeformConv


def _check_deform_conv(node, opset):
    ks = _attr(node, "kernel_shape")
    if ks is not None and len(ks) != 2:
        return f"{len(ks)}-D DeformConv (only 2-D)"
    for name in ("group", "offset_group"):
        if _attr(node, name, 1) < 1:
            return f"{name} must be >= 1"
    return None


@onnx_op("DeformConv", check=_check_deform_conv, min_opset=19)
def emit_deform_conv(n: NodeView) -> list:
    """DeformConv(X, W, offset, B, mask) (2-D) -> deformable im2col + graph.matmul. For output
    (i, j) and kernel tap k = (kh, kw), the sample point is (i * sh - pad_t + kh * dh +
    offset_h, j * sw - pad_l + kw * dw + offset_w) of the tap's offset group; its value is
    bilinear over the four neighbouring pixels, each outside the image counting 0 (GridSample
    with zeros padding, align_corners), times the mask. The samples, [N, C, K, oH, oW], are one
    graph.gather per neighbour from the flattened X; per group they are the columns of a
    matmul with W [G, oC/G, C/G * K]; then + B."""
    cx = n.cx
    x, wt, off = _ssa(n, 0), _ssa(n, 1), _ssa(n, 2)
    el = _elem(x)
    if not isinstance(el, AnyFloat):
        raise Unsupported(f"DeformConv of {el}")
    xs, ws, os_ = _shape(x), _shape(wt), _shape(off)
    if len(xs) != 4 or len(ws) != 4 or len(os_) != 4 or DYNAMIC in xs[1:] + ws + os_[1:]:
        raise Unsupported(f"DeformConv needs 2-D X, W, offset with static dims but the batch, got {xs}, {ws}, {os_}")
    _, c_len, h, w = xs
    o_len, cg, kh, kw = ws
    g = int(n.attr("group", 1))
    og = int(n.attr("offset_group", 1))
    kernel = list(n.attr("kernel_shape", [kh, kw]))
    if kernel != [kh, kw]:
        raise Unsupported(f"DeformConv: kernel_shape {kernel} differs from W's {[kh, kw]}")
    sh, sw = n.attr("strides", [1, 1])
    dh, dw = n.attr("dilations", [1, 1])
    pads = list(n.attr("pads", [0, 0, 0, 0]))
    k = kh * kw
    _, oc2, oh, ow = os_
    if c_len != cg * g or o_len % g or c_len % og or oc2 != og * 2 * k:
        raise Unsupported(f"DeformConv: inconsistent shapes X {xs}, W {ws}, offset {os_} for group {g}, "
                          f"offset_group {og}")
    if oh != (h + pads[0] + pads[2] - ((kh - 1) * dh + 1)) // sh + 1 or \
            ow != (w + pads[1] + pads[3] - ((kw - 1) * dw + 1)) // sw + 1:
        raise Unsupported(f"DeformConv: offset's output size {[oh, ow]} does not match the convolution's")
    nb = cx.dims(x)[0]
    off6 = cx.reshape(off, [nb, og, k, 2, oh, ow])
    kk = np.arange(k)
    base_h = ((kk // kw) * dh).reshape(1, 1, k, 1, 1) + (np.arange(oh) * sh - pads[0]).reshape(1, 1, 1, oh, 1)
    base_w = ((kk % kw) * dw).reshape(1, 1, k, 1, 1) + (np.arange(ow) * sw - pads[1]).reshape(1, 1, 1, 1, ow)
    py = cx.emit1(graph.AddOp(_pick(cx, off6, 0, 3), _const(cx, base_h.astype(_np(el)))))  # [N, OG, K, oH, oW]
    px = cx.emit1(graph.AddOp(_pick(cx, off6, 1, 3), _const(cx, base_w.astype(_np(el)))))
    if n.input(4) is not None:
        mask = cx.reshape(_ssa(n, 4), [nb, og, k, oh, ow])
    else:
        mask = None
    y0, x0 = cx.emit1(graph.FloorOp(py)), cx.emit1(graph.FloorOp(px))
    ly, lx = cx.emit1(graph.SubOp(py, y0)), cx.emit1(graph.SubOp(px, x0))
    one = cx.scalar(1.0, el)
    cpg = c_len // og  # channels per offset group
    shape6 = [nb, og, cpg, k, oh, ow]

    def per_channel(v):  # [N, OG, K, oH, oW] -> [N, C, K, oH, oW]
        v = cx.broadcast_to(cx.reshape(v, [nb, og, 1, k, oh, ow]), shape6)
        return cx.reshape(v, [nb, c_len, k, oh, ow])

    total = _prod(cx, cx.dims(x))
    flat = cx.reshape(x, [total])
    chan = _const(cx, np.arange(c_len, dtype=np.int64).reshape(1, c_len, 1, 1, 1))
    batch_iota = _batch_iota(cx, nb)  # [N, 1, 1, 1, 1] i64
    plane = cx.emit1(graph.MulOp(cx.emit1(graph.AddOp(cx.emit1(graph.MulOp(batch_iota, cx.scalar(c_len, i64))), chan)),
                                 cx.scalar(h * w, i64)))  # [N, C, 1, 1, 1]
    acc = None
    for yy, wy in ((y0, cx.emit1(graph.SubOp(one, ly))), (cx.emit1(graph.AddOp(y0, one)), ly)):
        for xx, wx in ((x0, cx.emit1(graph.SubOp(one, lx))), (cx.emit1(graph.AddOp(x0, one)), lx)):
            inside = cx.emit1(graph.AndOp(_within(cx, yy, h - 1.0, el), _within(cx, xx, w - 1.0, el)))
            wgt = cx.emit1(graph.MulOp(cx.emit1(graph.MulOp(wy, wx)), cx.emit1(graph.CastOp(inside, el))))
            if mask is not None:
                wgt = cx.emit1(graph.MulOp(wgt, mask))
            yc = cx.emit1(graph.ClipOp(yy, 0.0, float(h - 1)))
            xc = cx.emit1(graph.ClipOp(xx, 0.0, float(w - 1)))
            pos = cx.emit1(graph.AddOp(cx.emit1(graph.MulOp(yc, cx.scalar(float(w), el))), xc))
            pos = per_channel(cx.emit1(graph.CastOp(pos, i64)))
            vals = cx.emit1(graph.GatherOp(flat, cx.emit1(graph.AddOp(plane, pos)), 0))  # [N, C, K, oH, oW]
            term = cx.emit1(graph.MulOp(vals, per_channel(wgt)))
            acc = term if acc is None else cx.emit1(graph.AddOp(acc, term))
    cols = cx.reshape(acc, [nb, g, cg * k, oh * ow])
    wm = cx.reshape(wt if _elem(wt) == el else cx.emit1(graph.CastOp(wt, el)), [g, o_len // g, cg * k])
    y = cx.reshape(cx.emit1(graph.MatMulOp(wm, cols)), [nb, o_len, oh, ow])
    if n.input(3) is not None:
        y = cx.emit1(graph.AddOp(y, cx.reshape(_ssa(n, 3), [o_len, 1, 1])))
    return [y]


def _within(cx, v, hi: float, el):
    """0 <= v <= hi (i1)."""
    lo_ok = cx.emit1(graph.GeOp(v, cx.scalar(0.0, el)))
    return cx.emit1(graph.AndOp(lo_ok, cx.emit1(graph.LeOp(v, cx.scalar(hi, el)))))


def _batch_iota(cx, nb):
    """0..N-1 as [N, 1, 1, 1, 1] i64."""
    return cx.reshape(_iota(cx, nb), [nb, 1, 1, 1, 1])


def _check_mel(node, opset) -> str | None:
    dt = int(_attr(node, "output_datatype", TensorProto.FLOAT))
    return None if dt in _DTYPES else f"output_datatype {onnx_dtype_name(dt)}"


@onnx_op("MelWeightMatrix", min_opset=17, check=_check_mel)
def emit_mel_weight_matrix(n: NodeView) -> list:
    """MelWeightMatrix(num_mel_bins, dft_length, sample_rate, lower_edge_hertz, upper_edge_hertz)
    -> a constant [dft_length // 2 + 1, num_mel_bins] of type output_datatype, computed at import
    as onnx's reference does (the triangular filters between mel-spaced bin edges). Every input
    must be a constant: its values decide the result's shape; graph inputs are specialized on by
    `OnnxBackend` (ALL_OPERANDS)."""
    vals = [_const_input(n, i, f"MelWeightMatrix input {i}") for i in range(5)]
    if any(v is None for v in vals):
        raise Unsupported("MelWeightMatrix: all five inputs are required")
    num_mel_bins, dft_length, sample_rate = (int(np.asarray(v).reshape(-1)[0]) for v in vals[:3])
    lower, upper = (np.asarray(v).reshape(-1)[0] for v in vals[3:])
    if num_mel_bins <= 0 or dft_length <= 0 or sample_rate <= 0:
        raise Unsupported("MelWeightMatrix: num_mel_bins, dft_length and sample_rate must be positive")
    n_spec = dft_length // 2 + 1
    low_mel = 2595 * np.log1p(lower / 700) / np.log(10)
    high_mel = 2595 * np.log1p(upper / 700) / np.log(10)
    bins = np.arange(0, num_mel_bins + 2)
    mel_step = (high_mel - low_mel) / bins.shape[0]
    bins = 700 * np.expm1((bins * mel_step + low_mel) / 2595 * np.log(10))
    bins = (((dft_length + 1) * bins) // sample_rate).astype(int)
    if bins.min() < 0 or bins.max() >= n_spec:
        raise Unsupported("MelWeightMatrix: a band edge falls outside the spectrogram bins")
    out = np.zeros((n_spec, num_mel_bins))
    for i in range(num_mel_bins):
        lo, center, hi = bins[i], bins[i + 1], bins[i + 2]
        if center == lo:
            out[center, i] = 1
        else:
            for j in range(lo, center + 1):
                out[j, i] = float(j - lo) / float(center - lo)
        if hi > center:
            for j in range(center, hi):
                out[j, i] = float(hi - j) / float(hi - center)
    dtype = _DTYPES[int(n.attr("output_datatype", TensorProto.FLOAT))][0]
    return [n.cx.from_const(out.astype(dtype))]
