"""Resize and Upsample (operator coverage, issue 14), registered in the op table of
`minimlir.frontend._onnx_ops` (which imports this module at its end).

Resize is separable: resizing an N-D tensor is a 1-D resize along each resized axis in turn. Along
one axis of static input size `n` and output size `m`, every output position `o` reads a fixed set
of input positions with fixed weights, both known at import time from the attributes:

    y[.., o, ..] = sum_t w[o, t] * x[.., idx[o, t], ..]        t < T (taps)

`axis_taps` computes `idx` (m, T) and `w` (m, T) in float64 from the coordinate transformation
(half_pixel, half_pixel_symmetric, pytorch_half_pixel, align_corners, asymmetric,
tf_crop_and_resize), the mode (nearest: T = 1 with the nearest_mode rounding, or for Resize-10 and Upsample
onnxruntime's: floor when upsampling, ceil when downsampling; linear: the triangle
kernel, T = 2; cubic: the cubic convolution kernel with cubic_coeff_a, T = 4) and antialias (when
downsampling, the kernel is stretched by 1/scale: more taps, weights normalized), exclude_outside
(taps outside [0, n) get weight 0, the rest renormalized); indices outside are clamped (edge).
Each axis then imports as T graph.gather ops along the axis with constant index vectors, times a
constant weight column, summed (graph.mul / graph.add: one fused elementwise kernel with the
gathers); nearest is a single gather (exact for every dtype, uint8 images included).
tf_crop_and_resize positions whose source coordinate falls outside the input are set to
extrapolation_value (graph.where with a constant mask).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from xdsl.dialects.builtin import Float64Type, i64
from xdsl.ir import SSAValue

from minimlir.dialects import graph
from minimlir.frontend._onnx_ops import _const_input, _elem, _is_float, _s, _shape, _ssa, onnx_op
from minimlir.frontend.onnx_import import DYNAMIC, NodeView, Unsupported, numpy_dtype_of

COORD_MODES = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
               "asymmetric", "tf_crop_and_resize")
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


def source_coords(mode: str, n: int, m: int, scale: float, roi: tuple[float, float] | None) -> np.ndarray:
    """The input coordinate (float64) of each of the m output positions."""
    o = np.arange(m, dtype=np.float64)
    length = scale * n  # the unrounded output length
    if mode == "align_corners":
        return np.zeros(m) if length == 1 else o * (n - 1) / (length - 1)
    if mode == "asymmetric":
        return o / scale
    if mode == "tf_crop_and_resize":
        lo, hi = roi if roi is not None else (0.0, 1.0)
        if length == 1:
            return np.full(m, (hi - lo) * (n - 1) / 2) + lo * (n - 1)
        return o * (hi - lo) * (n - 1) / (length - 1) + lo * (n - 1)
    if mode == "pytorch_half_pixel":
        return np.full(m, -0.5) if length == 1 else (o + 0.5) / scale - 0.5
    if mode == "half_pixel":
        return (o + 0.5) / scale - 0.5
    assert mode == "half_pixel_symmetric"
    offset = n / 2 * (1 - m / length)  # centers the rounded output on the input
    return offset + (o + 0.5) / scale - 0.5


def _cubic(t: np.ndarray, a: float) -> np.ndarray:
    t = np.abs(t)
    near = ((a + 2) * t - (a + 3)) * t * t + 1
    far = ((a * t - 5 * a) * t + 8 * a) * t - 4 * a
    return np.where(t <= 1, near, np.where(t < 2, far, 0.0))


def axis_taps(n: int, m: int, scale: float, *, mode: str, coord_mode: str, nearest_mode: str,
              cubic_a: float, antialias: bool, exclude_outside: bool,
              roi: tuple[float, float] | None) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """(indices (m, T) int64 in [0, n), weights (m, T) float64, extrapolated (m,) bool or None)."""
    x = source_coords(coord_mode, n, m, scale, roi)
    outside = None
    if coord_mode == "tf_crop_and_resize":
        outside = (x < 0) | (x > n - 1)
    if mode == "nearest":
        frac = x - np.floor(x)
        if nearest_mode == "round_prefer_floor":
            i = np.where(frac <= 0.5, np.floor(x), np.floor(x) + 1)
        elif nearest_mode == "round_prefer_ceil":
            i = np.where(frac < 0.5, np.floor(x), np.floor(x) + 1)
        elif nearest_mode == "floor":
            i = np.floor(x)
        elif nearest_mode == "ceil" or (nearest_mode == "simple" and scale < 1):
            i = np.ceil(x)
        else:  # simple (Resize-10, Upsample), upsampling
            i = np.floor(x)
        return np.clip(i, 0, n - 1).astype(np.int64)[:, None], np.ones((m, 1)), outside
    support = 1 if mode == "linear" else 2
    s = min(scale, 1.0) if antialias else 1.0
    first = math.floor(-support / s) + 1  # the first tap's offset from `base`
    taps = 2 - 2 * first
    # base: the input position left of x (an integer x counts as the right end of its interval)
    base = np.ceil(x) - 1
    idx = base[:, None] + first + np.arange(taps)[None, :]
    t = (idx - x[:, None]) * s
    w = np.clip(1 - np.abs(t), 0, 1) if mode == "linear" else _cubic(t, cubic_a)
    if antialias:
        w = w / w.sum(axis=1, keepdims=True)
    if exclude_outside:
        w = np.where((idx < 0) | (idx >= n), 0.0, w)
        total = w.sum(axis=1, keepdims=True)
        w = w / np.where(total == 0, 1.0, total)
    return np.clip(idx, 0, n - 1).astype(np.int64), w, outside


def resize_axis(cx, x, axis: int, idx: np.ndarray, w: np.ndarray, outside: np.ndarray | None,
                extrapolation: float):
    """x resized along `axis` by the taps (see the module docstring)."""
    rank = len(_shape(x))
    elem = _elem(x)
    dtype = numpy_dtype_of(elem)
    col = [1] * rank
    col[axis] = idx.shape[0]
    live = [t for t in range(idx.shape[1]) if np.any(w[:, t] != 0)] or [0]
    y = None
    for t in live:
        g = cx.emit1(graph.GatherOp(x, cx.ssa(cx.from_const(idx[:, t].copy())), axis))
        if idx.shape[1] == 1 and np.all(w[:, t] == 1):
            y = g
            break
        term = cx.emit1(graph.MulOp(g, cx.ssa(cx.from_const(w[:, t].astype(dtype).reshape(col)))))
        y = term if y is None else cx.emit1(graph.AddOp(y, term))
    if outside is not None and outside.any():
        mask = cx.ssa(cx.from_const(outside.reshape(col)))
        y = cx.emit1(graph.WhereOp(mask, cx.scalar(extrapolation, elem), y))
    return y


def dynamic_axis_unsupported(scale: float | None, by_sizes: bool, mode: str, coord_mode: str, antialias: bool,
                             exclude_outside: bool) -> str | None:
    """Why an axis of run-time size cannot be resized by `resize_dynamic_axis`, or None."""
    if by_sizes:
        return "a constant output size needs a static input size"
    if scale is not None and Fraction(scale).denominator > 1 << 20:
        return f"scale {scale} is not a ratio p/q with a small power-of-two q (the output size floor(n*scale) is exact)"
    if coord_mode == "tf_crop_and_resize":
        return "tf_crop_and_resize needs a static input size"
    if antialias and mode != "nearest" and (scale is None or scale < 1):
        return "antialias when downsampling needs a static input size"
    if exclude_outside:
        return "exclude_outside needs a static input size"
    return None


def resize_dynamic_axis(cx, x, axis: int, scale: float | None, size=None, *, mode: str, coord_mode: str,
                        nearest_mode: str, cubic_a: float):
    """x resized along `axis`, whose size n is known only at run time, by a constant `scale`: the
    output size is m = floor(n * scale) = (n * p) // q (scale = p/q exactly), and the taps of
    `axis_taps` are computed in the graph, in float64 like axis_taps, from o = 0 .. m-1
    (an exclusive graph.cumsum of ones of length m, so the dim stays the symbolic m). With
    `scale` None, the output size is `size` (an int or index value from Resize's sizes) and the
    scale m / n is computed at run time too:

        src = source coordinate of o (the coordinate mode, with n and m as run-time scalars)
        nearest: idx = clamp(round(src), 0, n-1); y = gather(x, idx, axis)
        linear / cubic: base = ceil(src) - 1; for each tap t: idx_t = base + first + t,
            w_t = kernel(idx_t - src); y = sum_t gather(x, clamp(idx_t, 0, n-1), axis) * w_t
    """
    dims = cx.dims(x)
    rank = len(dims)
    nin = dims[axis]
    if scale is None:
        m = size
    else:
        frac = Fraction(scale)
        m = cx.iarith("div", cx.iarith("mul", nin, frac.numerator), frac.denominator)
    f64, elem = Float64Type(), _elem(x)

    def const(v):
        return v if isinstance(v, SSAValue) else cx.scalar(float(v), f64)

    def binop(cls, a, b):
        return cx.emit1(cls(a, b))

    def dim_f64(d):
        return cx.emit1(graph.CastOp(cx.emit1(graph.FromDimsOp([cx.index(d)])), f64))

    n_f, m_f = dim_f64(nin), dim_f64(m)
    if scale is None:
        scale = cx.emit1(graph.DivOp(m_f, n_f))
    o = cx.emit1(graph.CumSumOp(cx.broadcast_to(const(1.0), [m]), 0, exclusive=True))
    if coord_mode == "asymmetric":
        src = binop(graph.DivOp, o, const(scale))
    elif coord_mode == "align_corners":
        length = binop(graph.MulOp, n_f, const(scale))  # the unrounded output length
        den = binop(graph.SubOp, length, const(1.0))
        one = binop(graph.LeOp, length, const(1.0))
        ratio = binop(graph.DivOp, binop(graph.SubOp, n_f, const(1.0)),
                      cx.emit1(graph.WhereOp(one, const(1.0), den)))
        src = cx.emit1(graph.WhereOp(one, const(0.0), binop(graph.MulOp, o, ratio)))
    else:
        src = binop(graph.SubOp, binop(graph.DivOp, binop(graph.AddOp, o, const(0.5)), const(scale)), const(0.5))
        if coord_mode == "pytorch_half_pixel":
            src = cx.emit1(graph.WhereOp(binop(graph.LeOp, binop(graph.MulOp, n_f, const(scale)), const(1.0)),
                                         const(-0.5), src))
        elif coord_mode == "half_pixel_symmetric":
            length = binop(graph.MulOp, n_f, const(scale))
            offset = binop(graph.MulOp, binop(graph.DivOp, n_f, const(2.0)),
                           binop(graph.SubOp, const(1.0), binop(graph.DivOp, m_f, length)))
            src = binop(graph.AddOp, offset, src)
    last = binop(graph.SubOp, n_f, const(1.0))
    col = [1] * rank
    col[axis] = m

    def gather(pos):  # pos: float64 positions, clamped to [0, n-1] and gathered along `axis`
        pos = binop(graph.MinOp, binop(graph.MaxOp, pos, const(0.0)), last)
        return cx.emit1(graph.GatherOp(x, cx.emit1(graph.CastOp(pos, i64)), axis))

    if mode == "nearest":
        fl = cx.emit1(graph.FloorOp(src))
        if nearest_mode in ("round_prefer_floor", "round_prefer_ceil"):
            part = binop(graph.SubOp, src, fl)
            cmp = graph.LeOp if nearest_mode == "round_prefer_floor" else graph.LtOp
            pos = cx.emit1(graph.WhereOp(binop(cmp, part, const(0.5)), fl, binop(graph.AddOp, fl, const(1.0))))
        elif nearest_mode == "ceil" or (nearest_mode == "simple" and scale < 1):  # simple: a float scale
            pos = cx.emit1(graph.CeilOp(src))
        else:  # floor, and simple when upsampling
            pos = fl
        return gather(pos)
    first, taps = (0, 2) if mode == "linear" else (-1, 4)
    base = binop(graph.SubOp, cx.emit1(graph.CeilOp(src)), const(1.0))
    y = None
    for t in range(taps):
        pos = binop(graph.AddOp, base, const(first + t))
        d = cx.emit1(graph.AbsOp(binop(graph.SubOp, pos, src)))
        if mode == "linear":
            w = binop(graph.MaxOp, binop(graph.SubOp, const(1.0), d), const(0.0))
        else:
            a = cubic_a
            near = binop(graph.AddOp, binop(graph.MulOp, binop(graph.MulOp, binop(
                graph.SubOp, binop(graph.MulOp, const(a + 2), d), const(a + 3)), d), d), const(1.0))
            far = binop(graph.SubOp, binop(graph.MulOp, binop(graph.AddOp, binop(graph.MulOp, binop(
                graph.SubOp, binop(graph.MulOp, const(a), d), const(5 * a)), d), const(8 * a)), d), const(4 * a))
            w = cx.emit1(graph.WhereOp(binop(graph.LeOp, d, const(1.0)), near, cx.emit1(graph.WhereOp(
                binop(graph.LtOp, d, const(2.0)), far, const(0.0)))))
        w = cx.reshape(cx.emit1(graph.CastOp(w, elem)), col)
        term = binop(graph.MulOp, gather(pos), w)
        y = term if y is None else binop(graph.AddOp, y, term)
    return y


def _check_resize(node, opset):
    attrs = {a.name: a for a in node.attribute}

    def s(name, default):
        a = attrs.get(name)
        return a.s.decode() if a is not None else default

    mode = s("mode", "nearest")
    if mode not in ("nearest", "linear", "cubic") or (node.op_type == "Upsample" and mode == "cubic"):
        return f"mode '{mode}' is not a {node.op_type} mode"
    if node.op_type == "Resize" and opset >= 11:
        cm = s("coordinate_transformation_mode", "half_pixel")
        if cm not in COORD_MODES:
            return f"coordinate_transformation_mode '{cm}' is not one of {', '.join(COORD_MODES)}"
        nm = s("nearest_mode", "round_prefer_floor")
        if nm not in NEAREST_MODES:
            return f"nearest_mode '{nm}' is not one of {', '.join(NEAREST_MODES)}"
        kp = s("keep_aspect_ratio_policy", "stretch")
        if kp not in ("stretch", "not_larger", "not_smaller"):
            return f"keep_aspect_ratio_policy '{kp}' is not stretch, not_larger or not_smaller"
        if mode == "nearest" and "antialias" in attrs and attrs["antialias"].i:
            return "antialias is defined for linear and cubic modes only"
    return None


@onnx_op("Resize", "Upsample", check=_check_resize)
def emit_resize(n: NodeView) -> list:
    """Resize(x, roi, scales, sizes) / Upsample(x, scales) -> per resized axis, graph.gather
    taps with constant indices, weighted and summed (see the module docstring). roi, scales and
    sizes must be constants; a resized dim of run-time size needs scales, and its taps are
    computed in the graph (`resize_dynamic_axis`)."""
    cx = n.cx
    x = _ssa(n, 0)
    shape = _shape(x)
    rank = len(shape)
    mode = _s(n.attr("mode", b"nearest"))
    legacy = n.op_type == "Upsample" or n.opset < 11
    if legacy:  # Upsample-7/9, Resize-10: scales only, asymmetric; nearest rounds down when
        # upsampling and up when downsampling (onnxruntime's "simple" nearest mode)
        coord_mode, nearest_mode = "asymmetric", "simple"
        scales_in = n.attr("scales") if n.op_type == "Upsample" and n.opset < 9 else None
        if scales_in is None:
            scales_in = _const_input(n, 1, "scales")
        scales = None if scales_in is None else [float(v) for v in np.asarray(scales_in).reshape(-1)]
        sizes, roi, axes = None, None, list(range(rank))
        cubic_a, antialias, exclude_outside, extrapolation, policy = -0.75, False, False, 0.0, "stretch"
    else:
        coord_mode = _s(n.attr("coordinate_transformation_mode", b"half_pixel"))
        nearest_mode = _s(n.attr("nearest_mode", b"round_prefer_floor"))
        cubic_a = float(n.attr("cubic_coeff_a", -0.75))
        antialias = bool(n.attr("antialias", 0))
        exclude_outside = bool(n.attr("exclude_outside", 0))
        extrapolation = float(n.attr("extrapolation_value", 0.0))
        policy = _s(n.attr("keep_aspect_ratio_policy", b"stretch"))
        axes = [a + rank if a < 0 else a for a in (n.attr("axes") or range(rank))]
        if sorted(set(axes)) != sorted(axes) or any(not 0 <= a < rank for a in axes):
            raise Unsupported(f"Resize: axes {list(n.attr('axes'))} are not distinct axes of a rank-{rank} input")
        roi_c = _const_input(n, 1, "roi") if coord_mode == "tf_crop_and_resize" else None
        sc = _const_input(n, 2, "scales")
        try:
            sz = _const_input(n, 3, "sizes")
        except Unsupported:
            # sizes computed from shapes (e.g. a ViT's position grid resized to the image's patch
            # grid): symbolic output dims, resized by `resize_dynamic_axis` with scale m / n
            sz = cx.sym_of(n.input(3))
            if sz is None or all(isinstance(v, int) for v in sz):
                raise
        scales = None if sc is None or sc.size == 0 else [float(v) for v in sc.reshape(-1)]
        if isinstance(sz, list):
            sizes = [v if not isinstance(v, int) else int(v) for v in sz]
        else:
            sizes = None if sz is None or sz.size == 0 else [int(v) for v in sz.reshape(-1)]
        if (scales is None) == (sizes is None):
            raise Unsupported("Resize needs exactly one of scales and sizes")
        roi = None if roi_c is None or roi_c.size == 0 else [float(v) for v in roi_c.reshape(-1)]
        if roi is not None and len(roi) != 2 * len(axes):
            raise Unsupported(f"Resize: roi has {len(roi)} values, expected {2 * len(axes)}")
    if mode != "nearest" and not _is_float(x):
        raise Unsupported(f"{n.op_type} mode '{mode}' of {_elem(x)}")
    count = len(scales if scales is not None else sizes)
    if count != len(axes):
        raise Unsupported(f"{n.op_type}: {count} scales/sizes for {len(axes)} axes")
    if scales is not None and any(not v > 0 for v in scales):
        raise Unsupported(f"{n.op_type}: scales must be positive, got {scales}")
    run_time_sizes = sizes is not None and not all(isinstance(v, int) for v in sizes)
    if run_time_sizes and (policy != "stretch" or antialias):
        raise Unsupported(f"{n.op_type}: sizes computed at run time need keep_aspect_ratio_policy stretch and "
                          "no antialias")
    if sizes is not None and any(isinstance(v, int) and v < 0 for v in sizes):
        raise Unsupported(f"Resize: sizes must be >= 0, got {sizes}")
    # per resized axis: (input size, output size, scale)
    plan = []
    if run_time_sizes:
        targets = [(a, v, v / shape[a] if isinstance(v, int) and shape[a] > 0 else None)
                   for a, v in zip(axes, sizes)]
    elif sizes is not None:
        ratios = [sizes[k] / shape[a] if shape[a] > 0 else 1.0 for k, a in enumerate(axes)]
        if policy != "stretch":
            r = min(ratios) if policy == "not_larger" else max(ratios)
            ratios = [r] * len(axes)
            sizes = [int(r * shape[a] + 0.5) for a in axes]
        targets = list(zip(axes, sizes, ratios))
    else:
        targets = [(a, int(math.floor(shape[a] * s)) if shape[a] >= 0 else DYNAMIC, s)
                   for a, s in zip(axes, scales)]
    for k, (a, m, s) in enumerate(targets):
        nin = shape[a]
        if nin == m and s == 1.0 and (roi is None or (roi[k], roi[k + len(axes)]) == (0.0, 1.0)):
            continue  # identity along this axis
        if s is None or isinstance(m, SSAValue):  # the output size is computed at run time
            why = dynamic_axis_unsupported(None, False, mode, coord_mode, antialias, exclude_outside)
            if why:
                raise Unsupported(f"{n.op_type} to a run-time size (axis {a}): {why}")
            plan.append((a, -1, m, None, None))
            continue
        if nin < 0:
            why = dynamic_axis_unsupported(s, sizes is not None, mode, coord_mode, antialias, exclude_outside)
            if why:
                raise Unsupported(f"{n.op_type} of a dynamic dim (axis {a}): {why}")
            plan.append((a, nin, m, s, None))
            continue
        if nin == 0 or m == 0:
            raise Unsupported(f"{n.op_type} to or from an empty axis")
        plan.append((a, nin, m, s, None if roi is None else (roi[k], roi[k + len(axes)])))
    y = x
    for a, nin, m, s, r in plan:
        if nin < 0:
            y = resize_dynamic_axis(cx, y, a, s, m if s is None else None, mode=mode, coord_mode=coord_mode,
                                    nearest_mode=nearest_mode, cubic_a=cubic_a)
            continue
        idx, w, outside = axis_taps(nin, m, s, mode=mode, coord_mode=coord_mode, nearest_mode=nearest_mode,
                                    cubic_a=cubic_a, antialias=antialias, exclude_outside=exclude_outside, roi=r)
        y = resize_axis(cx, y, a, idx, w, outside, extrapolation)
    return [y]
