"""ONNX ops with random output (issue 14): RandomUniform(Like), RandomNormal(Like), Bernoulli,
Multinomial, and Dropout (inference mode, and training mode with a seeded mask). Registered in
the op table of `minimlir.frontend._onnx_ops` (which imports this module at its end); same
contract as there.

Every draw is a `graph.random`: a counter-based generator, so element k of a tensor is a pure
function of (seed, k) (dialects/elementfn.py, `random_uniform` / `random_normal`). Hence:

* a compiled model returns the same sample on every call and for every thread count (a new sample
  needs a new seed, i.e. another model); onnxruntime draws a new one per call from its own
  generator (std::mt19937 / Philox), so no output matches it bit for bit unless it does not depend
  on the draw (a Dropout ratio of 0, or training_mode false);
* the seed is the node's `seed` attribute (ONNX's float seed: its integer value when it is one,
  else the bits of the double); without one it is fixed, derived from the node's name and first
  output name (`node_seed`), so compiling a model twice gives the same samples and two nodes of
  one model different ones.
"""

from __future__ import annotations

import hashlib
import struct

from onnx import TensorProto
from xdsl.dialects.builtin import TensorType, f32, f64, i1, i64
from xdsl.ir import Attribute, SSAValue

from minimlir.dialects import graph
from minimlir.frontend._onnx_ops import _attr, _elem, _ssa, onnx_op
from minimlir.frontend.onnx_import import DYNAMIC, NodeView, Unsupported, element_type, onnx_dtype_name

_FLOATS = (TensorProto.FLOAT16, TensorProto.FLOAT, TensorProto.DOUBLE)


def node_seed(n: NodeView) -> int:
    """The generator seed of a node (an i64): its `seed` attribute (Dropout's is an int; the other
    ops' is a float: its value when integral, else the bits of the double), else a hash of the
    node's name and first output name."""
    seed = n.attr("seed")
    if seed is None:
        text = f"{n.name}\0{n.proto.output[0] if n.proto.output else ''}"
        return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little", signed=True)
    if isinstance(seed, float):
        if seed.is_integer() and -(2**63) <= seed < 2**63:
            return int(seed)
        return struct.unpack("<q", struct.pack("<d", seed))[0]
    return int(seed)


def _draw(n: NodeView, dims, t: Attribute, distribution: str, a: float, b: float) -> SSAValue:
    """graph.random of shape `dims` (ints and `index` values) and element type `t`."""
    cx = n.cx
    shape = [d if isinstance(d, int) else DYNAMIC for d in dims]
    y = cx.emit1(graph.RandomOp(TensorType(t, shape), distribution, a, b, node_seed(n),
                                [d for d in dims if not isinstance(d, int)]))
    cx._remember_dims(y, dims)
    return y


def _compute_type(t: Attribute) -> Attribute:
    """The type uniform draws are compared in: f64 for f64, else f32 (an f16 draw has 11 bits)."""
    return f64 if t == f64 else f32


def _float_dtype(n: NodeView, default: int | None) -> Attribute:
    dtype = n.attr("dtype", default)
    if dtype is None:
        raise Unsupported("no dtype attribute and the input is not a float tensor")
    if int(dtype) not in _FLOATS:
        raise Unsupported(f"dtype {onnx_dtype_name(int(dtype))} (float16, float or double)")
    return element_type(int(dtype))


def _check_float_dtype(node, opset):
    dtype = _attr(node, "dtype")
    if dtype is not None and int(dtype) not in _FLOATS:
        return f"dtype {onnx_dtype_name(int(dtype))} (float16, float or double)"
    return None


def _params(n: NodeView) -> tuple[str, float, float]:
    if n.op_type.startswith("RandomUniform"):
        return "uniform", float(n.attr("low", 0.0)), float(n.attr("high", 1.0))
    return "normal", float(n.attr("mean", 0.0)), float(n.attr("scale", 1.0))


@onnx_op("RandomUniform", "RandomNormal", check=_check_float_dtype)
def emit_random(n: NodeView) -> list:
    """RandomUniform(shape, dtype, low, high, seed) / RandomNormal(shape, dtype, mean, scale, seed)
    -> graph.random "uniform"(low, high) / "normal"(mean, scale) of the static `shape`."""
    shape = [int(d) for d in n.attr("shape", [])]
    if any(d < 0 for d in shape):
        raise Unsupported(f"negative dim in shape {shape}")
    return [_draw(n, shape, _float_dtype(n, TensorProto.FLOAT), *_params(n))]


@onnx_op("RandomUniformLike", "RandomNormalLike", check=_check_float_dtype)
def emit_random_like(n: NodeView) -> list:
    """Random{Uniform,Normal}Like(x) -> graph.random of x's shape (its dims: graph.dim), element
    type `dtype`, else x's (which must then be a float type)."""
    x = n.input(0)
    default = x.elem_type if x.elem_type in _FLOATS else None
    return [_draw(n, n.cx.dims(x), _float_dtype(n, default), *_params(n))]


@onnx_op("Bernoulli")
def emit_bernoulli(n: NodeView) -> list:
    """Bernoulli(p) -> graph.cast(graph.lt(u, p)) to `dtype` (default p's type), u = graph.random
    uniform on [0, 1) of p's shape (in f32, f64 for f64 p): 1 with probability p (ONNX's function
    body draws u > p, probability 1 - p, against the op's text and onnxruntime)."""
    cx = n.cx
    p = _ssa(n, 0)
    pt = _elem(p)
    if n.input(0).elem_type not in _FLOATS:
        raise Unsupported(f"Bernoulli of {pt} (float16, float or double)")
    out_t = element_type(int(n.attr("dtype", n.input(0).elem_type)))
    ct = _compute_type(pt)
    u = _draw(n, cx.dims(p), ct, "uniform", 0.0, 1.0)
    hit = cx.emit1(graph.LtOp(u, p if pt == ct else cx.emit1(graph.CastOp(p, ct))))
    return [hit if out_t == i1 else cx.emit1(graph.CastOp(hit, out_t))]


def _check_multinomial(node, opset):
    dtype = int(_attr(node, "dtype", TensorProto.INT32))
    if dtype not in (TensorProto.INT32, TensorProto.INT64):
        return f"dtype {onnx_dtype_name(dtype)} (int32 or int64)"
    if int(_attr(node, "sample_size", 1)) < 1:
        return "sample_size < 1"
    return None


@onnx_op("Multinomial", check=_check_multinomial)
def emit_multinomial(n: NodeView) -> list:
    """Multinomial(x: [B, C] unnormalized log-probabilities, sample_size s) -> [B, s] class indices:
    cdf = graph.cumsum(graph.softmax(x)) along C, u = graph.random uniform [B, s], and sample j of
    row b is the number of classes c with cdf[b, c] <= u[b, j] * cdf[b, C-1] (graph.le of the two
    reshaped to [B, 1, C] and [B, s, 1], graph.reduce_sum over C), at most C - 1; in `dtype`."""
    cx = n.cx
    x = _ssa(n, 0)
    if n.input(0).elem_type not in _FLOATS:
        raise Unsupported(f"Multinomial of {_elem(x)} (float16, float or double)")
    if len(x.type.get_shape()) != 2:
        raise Unsupported(f"input of rank {len(x.type.get_shape())} (must be [batch, classes])")
    s = int(n.attr("sample_size", 1))
    out_t = element_type(int(n.attr("dtype", TensorProto.INT32)))
    ct = _compute_type(_elem(x))
    if _elem(x) != ct:
        x = cx.emit1(graph.CastOp(x, ct))
    batch, classes = cx.dims(x)
    cdf = cx.emit1(graph.CumSumOp(cx.emit1(graph.SoftmaxOp(x, 1)), 1))
    total = cx.emit1(graph.ReduceMaxOp(cdf, [1], keepdims=True))  # cdf[:, C-1]: cdf never decreases
    u = _draw(n, [batch, s], ct, "uniform", 0.0, 1.0)
    thresholds = cx.reshape(cx.emit1(graph.MulOp(u, total)), [batch, s, 1])
    below = cx.emit1(graph.LeOp(cx.reshape(cdf, [batch, 1, classes]), thresholds))
    count = cx.emit1(graph.ReduceSumOp(cx.emit1(graph.CastOp(below, i64)), [2], keepdims=False))
    last = cx.ssa(cx.from_sym([cx.iarith("sub", classes, 1)], scalar=True))
    index = cx.emit1(graph.MinOp(count, last))
    return [index if out_t == i64 else cx.emit1(graph.CastOp(index, out_t))]


# --------------------------------------------------------------------------------------------
# Dropout


def _check_dropout(node, opset):
    """Opset < 7 in training mode (is_test=0) with its mask output: not imported (the old op's
    training semantics are not implemented); every later Dropout is."""
    if opset < 7 and _attr(node, "is_test", 0) == 0 and len(node.output) > 1:
        return "training mode (is_test=0)"
    return None


def _scalar_input(n: NodeView, i: int) -> tuple[object, SSAValue | None]:
    """(constant value or None, run-time 0-d tensor or None) of optional input i."""
    v = n.input(i)
    if v is None:
        return None, None
    if v.const is not None:
        return v.const.reshape(-1)[0], None
    return None, n.cx.ssa(v)


@onnx_op("Dropout", check=_check_dropout)
def emit_dropout(n: NodeView) -> list:
    """Dropout(x, ratio=0.5, training_mode=false) -> x, and the optional mask a `true` broadcast to
    x's shape, in inference mode (training_mode absent or a constant false) or with a constant ratio
    of 0. Otherwise (training_mode true or known only at run time, ratio a constant or a run-time
    0-d tensor), with u = graph.random uniform [0, 1) of x's shape:

        keep = u >= ratio                    y = where(keep, x * (1 / (1 - ratio)), 0)
        training_mode at run time t:        y = where(t, y, x), mask = keep or not t

    A ratio of 0 keeps every element and multiplies by exactly 1: y = x, mask all true."""
    cx = n.cx
    x = n.input(0)
    training, t_value = (None, None) if n.opset < 12 else _scalar_input(n, 2)
    ratio, r_value = (None, None) if n.opset < 12 else _scalar_input(n, 1)
    inference = n.opset < 12 or (t_value is None and not bool(training))
    if inference or (r_value is None and ratio is not None and float(ratio) == 0.0):
        outs: list = [x]
        if n.output_used(1):
            outs.append(cx.broadcast_to(cx.scalar(True, i1), cx.dims(x)))
        return outs
    xs = cx.ssa(x)
    t = _elem(xs)
    if x.elem_type not in _FLOATS:
        raise Unsupported(f"Dropout of {t} in training mode (float16, float or double)")
    ct = _compute_type(t)
    if r_value is None:
        r_value = cx.scalar(0.5 if ratio is None else float(ratio), ct)
    elif _elem(r_value) != ct:
        r_value = cx.emit1(graph.CastOp(r_value, ct))
    u = _draw(n, cx.dims(xs), ct, "uniform", 0.0, 1.0)
    keep = cx.emit1(graph.GeOp(u, r_value))
    one = cx.scalar(1.0, ct)
    scale = cx.emit1(graph.DivOp(one, cx.emit1(graph.SubOp(one, r_value))))
    if t != ct:
        scale = cx.emit1(graph.CastOp(scale, t))
    y = cx.emit1(graph.WhereOp(keep, cx.emit1(graph.MulOp(xs, scale)), cx.scalar(0.0, t)))
    mask = keep
    if t_value is not None:  # training_mode known at run time
        y = cx.emit1(graph.WhereOp(t_value, y, xs))
        mask = cx.emit1(graph.OrOp(keep, cx.emit1(graph.NotOp(t_value))))
    return [y, mask] if n.output_used(1) else [y]

