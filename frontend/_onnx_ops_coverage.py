"""More ONNX op emitters (operator coverage, issue 14, second round), registered in the op table
of `minimlir.frontend._onnx_ops` (which imports this module at its end). Same contract as there:
an emitter gets a `NodeView` and returns one entry per ONNX output; each documents its
decomposition into graph ops.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import IntegerType, i64

from minimlir.dialects import graph
from minimlir.frontend._onnx_ops import (
    _REDUCE,
    _axis,
    _const_input,
    _elem,
    _is_float,
    _shape,
    _ssa,
    conv3d,
    emit_reduce,
    onnx_op,
)
from minimlir.frontend.onnx_import import (
    _DTYPES,
    DYNAMIC,
    FOLD_LIMIT,
    NodeView,
    Unsupported,
    onnx_dtype_name,
)


def _big_const(n: NodeView, array: np.ndarray):
    """A constant result: folded when small, a weight (materialized once) when big."""
    cx = n.cx
    if array.size <= FOLD_LIMIT:
        return cx.from_const(array)
    v = cx.from_const(array, is_weight=True, name=n.proto.output[0])
    cx.weight_locs.setdefault(v.name, cx.loc)
    return v


def _iota(cx, size: int, axis: int, rank: int):
    """0..size-1 (int64) along `axis` of a rank-`rank` tensor of 1s elsewhere (a constant)."""
    shape = [1] * rank
    shape[axis] = size
    return cx.ssa(cx.from_const(np.arange(size, dtype=np.int64).reshape(shape)))


# --------------------------------------------------------------------------------------------
# EyeLike, OneHot, Hardmax


def _check_eye_like(node, opset):
    for a in node.attribute:
        if a.name == "dtype" and a.i not in _DTYPES:
            return f"dtype {onnx_dtype_name(a.i)}"
    return None


@onnx_op("EyeLike", check=_check_eye_like)
def emit_eye_like(n: NodeView) -> list:
    """EyeLike(x, dtype, k) -> a constant: ones on the k-th diagonal of x's (static, 2-D) shape."""
    x = n.input(0)
    if x.rank != 2:
        raise Unsupported(f"EyeLike of a rank-{x.rank} tensor (it must be 2-D)")
    if DYNAMIC in x.shape:
        raise Unsupported("EyeLike of a dynamic shape")
    dt = n.attr("dtype")
    dtype = _DTYPES[x.elem_type if dt is None else int(dt)][0]
    rows, cols = x.shape
    return [_big_const(n, np.eye(rows, cols, int(n.attr("k", 0)), dtype=dtype))]


@onnx_op("OneHot")
def emit_one_hot(n: NodeView) -> list:
    """OneHot(indices, depth, values=[off, on], axis=-1) -> graph.where(graph.eq(idx, iota),
    on, off) with idx = indices (cast to i64; negative + depth) with a unit dim inserted at
    `axis` and iota 0..depth-1 along it; out-of-range indices give an all-off row. depth must be
    a constant; off/on are graph.gather'ed from values."""
    cx = n.cx
    ind = _ssa(n, 0)
    d = _const_input(n, 1, "depth")
    if d is None or d.size != 1:
        raise Unsupported("OneHot: depth must be one number")
    depth = int(np.asarray(d).reshape(-1)[0])
    if depth < 1:
        raise Unsupported(f"OneHot: depth must be >= 1, got {depth}")
    values = _ssa(n, 2)
    if _shape(values) != [2]:
        raise Unsupported(f"OneHot: values must have shape [2], got {_shape(values)}")
    rank = len(_shape(ind)) + 1
    axis = int(n.attr("axis", -1))
    if not -rank <= axis < rank:
        raise Unsupported(f"OneHot: axis {axis} is out of range for a rank-{rank} result")
    axis = _axis(axis, rank)
    if _elem(ind) != i64:
        ind = cx.emit1(graph.CastOp(ind, i64))
    depth_c = cx.scalar(depth, i64)
    neg = cx.emit1(graph.LtOp(ind, cx.scalar(0, i64)))
    ind = cx.emit1(graph.WhereOp(neg, cx.emit1(graph.AddOp(ind, depth_c)), ind))
    dims = cx.dims(ind)
    ind = cx.reshape(ind, dims[:axis] + [1] + dims[axis:])
    hot = cx.emit1(graph.EqOp(ind, _iota(cx, depth, axis, rank)))
    zero = cx.ssa(cx.from_const(np.array(0, np.int64)))
    one = cx.ssa(cx.from_const(np.array(1, np.int64)))
    off = cx.emit1(graph.GatherOp(values, zero, 0))
    on = cx.emit1(graph.GatherOp(values, one, 0))
    return [cx.emit1(graph.WhereOp(hot, on, off))]


@onnx_op("Hardmax")
def emit_hardmax(n: NodeView) -> list:
    """Hardmax(x, axis) -> graph.cast(graph.eq(iota along axis, graph.argmax(x, axis, keepdims)))
    (1 at the first maximum). Before opset 13 the input is coerced to 2-D at `axis`
    (graph.reshape) and the hardmax taken over the flattened trailing dims."""
    cx = n.cx
    x = _ssa(n, 0)
    if not _is_float(x):
        raise Unsupported(f"Hardmax of {_elem(x)}")
    rank = len(_shape(x))
    legacy = n.opset < 13
    axis = int(n.attr("axis", 1 if legacy else -1))
    if not -rank <= axis < max(rank, 1) + (1 if legacy else 0):
        raise Unsupported(f"Hardmax: axis {axis} is out of range for a rank-{rank} input")
    axis = axis + rank if axis < 0 else axis
    dims = cx.dims(x)
    if legacy:
        outer = 1
        inner = 1
        for dd in dims[:axis]:
            outer = cx.iarith("mul", outer, dd)
        for dd in dims[axis:]:
            inner = cx.iarith("mul", inner, dd)
        x2 = cx.reshape(x, [outer, inner])
        return [cx.reshape(_hardmax_along(cx, x2, 1), dims)]
    return [_hardmax_along(cx, x, axis)]


def _hardmax_along(cx, x, axis: int):
    size = _shape(x)[axis]
    if size == DYNAMIC:
        raise Unsupported("Hardmax along a dynamic dim")
    am = cx.emit1(graph.ArgMaxOp(x, axis=axis, keepdims=True))
    hot = cx.emit1(graph.EqOp(am, _iota(cx, size, axis, len(_shape(x)))))
    return cx.emit1(graph.CastOp(hot, _elem(x)))


# --------------------------------------------------------------------------------------------
# InstanceNormalization


@onnx_op("InstanceNormalization")
def emit_instance_norm(n: NodeView) -> list:
    """InstanceNormalization(x, scale, B, epsilon) over the spatial axes 2..: m = reduce_mean(x),
    d = x - m, y = d * rsqrt(reduce_mean(d * d) + eps) * scale + B (scale, B reshaped to
    [C, 1, ...]; two-pass variance)."""
    cx = n.cx
    x = _ssa(n, 0)
    if not _is_float(x):
        raise Unsupported(f"InstanceNormalization of {_elem(x)}")
    rank = len(_shape(x))
    if rank < 3:
        raise Unsupported(f"InstanceNormalization of a rank-{rank} input (it needs N, C and spatial dims)")
    eps = float(n.attr("epsilon", 1e-5))
    axes = list(range(2, rank))
    mean = cx.emit1(graph.ReduceMeanOp(x, axes, keepdims=True))
    d = cx.emit1(graph.SubOp(x, mean))
    var = cx.emit1(graph.ReduceMeanOp(cx.emit1(graph.MulOp(d, d)), axes, keepdims=True))
    rstd = cx.emit1(graph.RsqrtOp(cx.emit1(graph.AddOp(var, cx.scalar(eps, _elem(x))))))
    y = cx.emit1(graph.MulOp(d, rstd))
    c = cx.dims(x)[1]
    for i in (1, 2):
        p = _ssa(n, i)
        if len(_shape(p)) != 1:
            raise Unsupported(f"InstanceNormalization: input {i} must be 1-D (one value per channel)")
        p = cx.reshape(p, [c] + [1] * (rank - 2))
        y = cx.emit1((graph.MulOp if i == 1 else graph.AddOp)(y, p))
    return [y]


# --------------------------------------------------------------------------------------------
# ReduceProd


_REDUCE["ReduceProd"] = (graph.ReduceProdOp, 18)
onnx_op("ReduceProd")(emit_reduce)


# --------------------------------------------------------------------------------------------
# Einsum


def parse_einsum(equation: str, ranks: list[int]) -> tuple[list[list[str]], list[str]]:
    """(each operand's subscripts, the output's), with "..." expanded into upper-case letters
    (right-aligned across operands, as broadcasting) and the implicit output (ellipsis dims,
    then the letters used once, in alphabetical order) made explicit. Raises Unsupported."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise Unsupported(f"Einsum: equation '{equation}' has {len(terms)} operands, the node {len(ranks)}")
    ell_max = 0
    parsed_raw = []
    for term, rank in zip(terms, ranks):
        if term.count("...") > 1 or "." in term.replace("...", ""):
            raise Unsupported(f"Einsum: bad ellipsis in '{term}'")
        letters = term.replace("...", "")
        if not all(c.isascii() and c.isalpha() for c in letters):
            raise Unsupported(f"Einsum: subscripts must be letters, got '{term}'")
        n_ell = rank - len(letters)
        if n_ell < 0 or (n_ell > 0 and "..." not in term):
            raise Unsupported(f"Einsum: '{term}' does not match an operand of rank {rank}")
        ell_max = max(ell_max, n_ell)
        parsed_raw.append((term, n_ell))
    if ell_max > 26:
        raise Unsupported("Einsum: too many ellipsis dims")
    ell = [f"#{i}" for i in range(ell_max)]  # placeholders, never letters

    def expand(term: str, n_ell: int) -> list[str]:
        head, dots, tail = term.partition("...")
        return list(head) + (ell[ell_max - n_ell:] if dots else []) + list(tail)

    ops = [expand(t, k) for t, k in parsed_raw]
    if arrow:
        if rhs.count("...") > 1 or "." in rhs.replace("...", ""):
            raise Unsupported(f"Einsum: bad ellipsis in the output '{rhs}'")
        out = expand(rhs, ell_max) if "..." in rhs else list(rhs)
        known = {c for o in ops for c in o}
        for c in out:
            if c not in known:
                raise Unsupported(f"Einsum: output subscript '{c}' is not an input subscript")
        if len(set(out)) != len(out):
            raise Unsupported(f"Einsum: output subscripts '{rhs}' repeat a letter")
    else:
        counts: dict[str, int] = {}
        for o in ops:
            for c in o:
                if not c.startswith("#"):
                    counts[c] = counts.get(c, 0) + 1
        out = ell + sorted(c for c, k in counts.items() if k == 1)
    return ops, out


def _diagonal(cx, x, subs: list[str]) -> tuple[object, list[str]]:
    """x with every repeated subscript reduced to its diagonal (graph.transpose the two dims
    last, graph.reshape them into one, graph.gather every (n+1)-th element)."""
    while True:
        dup = next((c for c in subs if subs.count(c) > 1), None)
        if dup is None:
            return x, subs
        p = subs.index(dup)
        q = subs.index(dup, p + 1)
        shape = _shape(x)
        if shape[p] != shape[q] or shape[p] == DYNAMIC:
            raise Unsupported(
                f"Einsum: diagonal over dims of sizes {shape[p]} and {shape[q]} (must be equal and static)"
            )
        nd = shape[p]
        rest = [i for i in range(len(shape)) if i not in (p, q)]
        x = cx.emit1(graph.TransposeOp(x, rest + [p, q])) if rest + [p, q] != list(range(len(shape))) else x
        dims = cx.dims(x)
        x = cx.reshape(x, dims[:-2] + [nd * nd])
        idx = cx.ssa(cx.from_const(np.arange(nd, dtype=np.int64) * (nd + 1)))
        x = cx.emit1(graph.GatherOp(x, idx, len(rest)))
        subs = [subs[i] for i in rest] + [dup]


@onnx_op("Einsum")
def emit_einsum(n: NodeView) -> list:
    """Einsum(x..., equation) -> repeated subscripts to diagonals, then each operand transposed
    (graph.transpose) and unit-padded (graph.reshape) to one order of all subscripts (output
    ones first), multiplied with broadcasting (graph.mul), summed over the contracted ones
    (graph.reduce_sum): y[out] = sum over the rest of the product. An operand's subscripts
    that appear nowhere else are summed first."""
    cx = n.cx
    eq = n.attr("equation")
    eq = eq.decode() if isinstance(eq, bytes) else eq
    if not eq:
        raise Unsupported("Einsum needs an equation")
    xs = [_ssa(n, i) for i in range(len([i for i in n.proto.input if i]))]
    if not xs:
        raise Unsupported("Einsum needs at least one input")
    ops, out = parse_einsum(eq, [len(_shape(x)) for x in xs])
    order = list(out) + sorted({c for o in ops for c in o} - set(out))
    terms = []
    for k, (x, subs) in enumerate(zip(xs, ops)):
        x, subs = _diagonal(cx, x, list(subs))
        elsewhere = set(out) | {c for j, o in enumerate(ops) if j != k for c in o}
        alone = [i for i, c in enumerate(subs) if c not in elsewhere]
        if alone:  # summed right away
            x = cx.emit1(graph.ReduceSumOp(x, alone, keepdims=False))
            subs = [c for i, c in enumerate(subs) if i not in alone]
        perm = sorted(range(len(subs)), key=lambda i: order.index(subs[i]))
        if perm != list(range(len(subs))):
            x = cx.emit1(graph.TransposeOp(x, perm))
            subs = [subs[i] for i in perm]
        terms.append((x, subs))
    # every operand gets one dim per subscript still in play (a 1 where it has none)
    used = [c for c in order if any(c in subs for _, subs in terms)]
    y = None
    for x, subs in terms:
        if len(subs) != len(used):
            dims = cx.dims(x)
            x = cx.reshape(x, [dims[subs.index(c)] if c in subs else 1 for c in used])
        y = x if y is None else cx.emit1(graph.MulOp(y, x))
    contracted = [i for i, c in enumerate(used) if c not in out]
    if contracted:
        y = cx.emit1(graph.ReduceSumOp(y, contracted, keepdims=False))
    return [y]


# --------------------------------------------------------------------------------------------
# ConvTranspose


def conv_transpose_geometry(in_sizes, kernel, strides, dilations, out_pad, pads, out_shape, auto_pad):
    """(head pads, output sizes) per spatial dim, as onnxruntime resolves them: an output_shape
    (or SAME_* auto_pad: in * stride) fixes the output and the total padding is split, the extra
    half at the end (SAME_UPPER) or at the start (otherwise); else explicit pads."""
    k = len(in_sizes)
    full = [s * (i - 1) + op + (kk - 1) * d + 1
            for i, kk, s, d, op in zip(in_sizes, kernel, strides, dilations, out_pad)]
    if out_shape is None and auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        out_shape = [i * s for i, s in zip(in_sizes, strides)]
    if out_shape is not None:
        heads = []
        for f, o in zip(full, out_shape):
            total = max(0, f - o)
            heads.append(total // 2 if auto_pad == "SAME_UPPER" else total - total // 2)
        return heads, list(out_shape)
    pads = list(pads) if pads is not None else [0] * (2 * k)
    return pads[:k], [f - pads[i] - pads[k + i] for i, f in enumerate(full)]


def _check_conv_transpose(node, opset):
    attrs = {a.name: a for a in node.attribute}
    ap = attrs["auto_pad"].s.decode() if "auto_pad" in attrs else "NOTSET"
    if ap not in ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"):
        return f"auto_pad '{ap}' is not NOTSET, SAME_UPPER, SAME_LOWER or VALID"
    for name in ("strides", "dilations"):
        if name in attrs and any(v < 1 for v in attrs[name].ints):
            return f"{name} must be >= 1, got {list(attrs[name].ints)}"
    if "group" in attrs and attrs["group"].i < 1:
        return f"group must be >= 1, got {attrs['group'].i}"
    return None


@onnx_op("ConvTranspose", check=_check_conv_transpose)
def emit_conv_transpose(n: NodeView) -> list:
    """ConvTranspose(x, w, b) as a stride-1 graph.conv2d over the zero-upsampled input:
    x (N, C, H, W) -> reshape (N, C, H, 1, W, 1) -> graph.pad to (N, C, H, sh, W, sw) -> reshape
    (N, C, H*sh, W*sw) -> graph.pad by (k-1)*d - head at the start and out + head - in*s at the
    end (negative pads crop) -> graph.conv2d {dilations, group} with the weight (C, M/g, kh, kw)
    regrouped to (M, C/g, kh, kw) and flipped spatially (numpy for a constant weight, else
    graph.reshape / graph.transpose / graph.slice steps -1). 1-D: through a unit H dim; 3-D: the
    same steps over (D, H, W), then the stride-1 3-D conv `conv3d` (a static depth)."""
    cx = n.cx
    x = _ssa(n, 0)
    w_v = n.input(1)
    rank = len(_shape(x))
    k = rank - 2
    if k not in (1, 2, 3):
        raise Unsupported(f"{k}-D kernel (ConvTranspose is imported for 1-D, 2-D and 3-D)")
    if k == 3 and _shape(x)[2] == DYNAMIC:
        raise Unsupported("ConvTranspose 3-D with a dynamic depth (the depth planes are unrolled at import)")
    if not _is_float(x):
        raise Unsupported(f"ConvTranspose of {_elem(x)}")
    # a constant 3-D weight is re-laid out once at import: the original is never emitted
    w = None if k == 3 and w_v is not None and w_v.const is not None else _ssa(n, 1)
    wshape = _shape(w) if w is not None else list(w_v.shape)
    if len(wshape) != rank or DYNAMIC in wshape:
        raise Unsupported(f"ConvTranspose: the weight must be a static rank-{rank} tensor")
    group = int(n.attr("group", 1))
    cin = _shape(x)[1]
    if cin != DYNAMIC and (cin % group or cin != wshape[0]):
        raise Unsupported(f"ConvTranspose: {cin} input channels, weight {wshape}, group {group}")
    kernel = list(n.attr("kernel_shape") or wshape[2:])
    if kernel != wshape[2:]:
        raise Unsupported(f"ConvTranspose: kernel_shape {kernel} differs from the weight's {wshape[2:]}")
    strides = list(n.attr("strides", [1] * k))
    dilations = list(n.attr("dilations", [1] * k))
    out_pad = list(n.attr("output_padding", [0] * k))
    in_sizes = _shape(x)[2:]
    dynamic = DYNAMIC in in_sizes
    ap = n.attr("auto_pad", b"NOTSET")
    ap = ap.decode() if isinstance(ap, bytes) else ap
    pads = n.attr("pads")
    if ap == "VALID":
        pads = [0] * (2 * k)
    out_shape = n.attr("output_shape")
    if out_shape is not None:
        out_shape = [int(v) for v in out_shape][-k:]
    for name, vals in (("strides", strides), ("dilations", dilations), ("output_padding", out_pad)):
        if len(vals) != k:
            raise Unsupported(f"ConvTranspose: {name} has {len(vals)} values for {k} spatial dims")
    if pads is not None and len(pads) != 2 * k:
        raise Unsupported(f"ConvTranspose: pads has {len(pads)} values for {k} spatial dims")
    if any(op >= max(s, d) for op, s, d in zip(out_pad, strides, dilations)):
        raise Unsupported(f"ConvTranspose: output_padding {out_pad} must be smaller than the stride or dilation")
    if dynamic and out_shape is not None:
        raise Unsupported("ConvTranspose with an output_shape and dynamic spatial dims")
    if dynamic:
        # out - in*stride does not depend on `in` (SAME_*: 0; pads: extra - both pads), so the
        # paddings stay static; a size-1 placeholder gives them (outs are not used below)
        heads, outs = conv_transpose_geometry([1] * k, kernel, strides, dilations, out_pad, pads, None, ap)
        outs = [o - s for o, s in zip(outs, strides)]  # out - in*stride, per dim
    else:
        heads, outs = conv_transpose_geometry(in_sizes, kernel, strides, dilations, out_pad, pads, out_shape, ap)
        if any(o <= 0 for o in outs):
            raise Unsupported(f"ConvTranspose: output size {outs} is not positive")
    cout = wshape[1] * group
    # the weight as a conv weight (M, C/g, *kernel), flipped
    wt_v = None
    if w_v.const is not None:
        def flip(a):
            wc = np.asarray(a).reshape([group, wshape[0] // group, wshape[1]] + kernel)
            wc = np.swapaxes(wc, 1, 2).reshape([cout, wshape[0] // group] + kernel)
            return np.ascontiguousarray(wc[(slice(None), slice(None)) + (slice(None, None, -1),) * k])

        if k == 3 and w_v.name:  # conv3d re-lays it out again, once per weight
            wt_v = cx.derived_weight(w_v, f"flipped.g{group}", flip)
        else:
            wt_v = cx.from_const(flip(w_v.const), is_weight=w_v.is_weight,
                                 name=f"{n.proto.name or 'convtranspose'}.weight")
        wt = None if k == 3 else cx.ssa(wt_v)
    else:
        wt = cx.reshape(w, [group, wshape[0] // group, wshape[1]] + kernel)
        wt = cx.emit1(graph.TransposeOp(wt, [0, 2, 1] + list(range(3, 3 + k))))
        wt = cx.reshape(wt, [cout, wshape[0] // group] + kernel)
        wt = cx.emit1(graph.SliceOp(wt, [0, 0] + [kk - 1 for kk in kernel], [cout, wshape[0] // group] + [-1] * k,
                                    [1, 1] + [-1] * k))
    if k == 1:
        dims = cx.dims(x)
        x = cx.reshape(x, [dims[0], dims[1], 1, dims[2]])
        wt = cx.reshape(wt, [cout, wshape[0] // group, 1, kernel[0]])
        in_sizes, kernel, strides, dilations = [1] + in_sizes, [1] + kernel, [1] + strides, [1] + dilations
        heads, outs = [0] + heads, [0 if dynamic else 1] + outs
    dims = cx.dims(x)
    if any(s > 1 for s in strides):
        sp = dims[2:]
        x = cx.reshape(x, dims[:2] + [v for d in sp for v in (d, 1)])
        x = cx.emit1(graph.PadOp(x, [0] * (2 + 2 * len(sp)) + [0, 0] + [v for s in strides for v in (0, s - 1)]))
        x = cx.reshape(x, dims[:2] + [cx.iarith("mul", d, s) for d, s in zip(sp, strides)])
    begin = [(kk - 1) * d - h for kk, d, h in zip(kernel, dilations, heads)]
    if dynamic:  # outs holds out - in*stride
        end = [o + h for o, h in zip(outs, heads)]
    else:
        end = [o + h - i * s for o, h, i, s in zip(outs, heads, in_sizes, strides)]
    if any(begin) or any(end):
        x = cx.emit1(graph.PadOp(x, [0, 0] + begin + [0, 0] + end))
    b = cx.ssa(n.input(2)) if n.input(2) is not None else None
    if k == 3:
        return [conv3d(cx, x, wt, b, [1, 1, 1], [0] * 6, dilations, group, "ConvTranspose: ", wt_v)]
    y = cx.emit1(graph.Conv2dOp(x, wt, bias=b, strides=[1, 1], pads=[0, 0, 0, 0], dilations=dilations, group=group))
    if k == 1:
        d = cx.dims(y)
        y = cx.reshape(y, [d[0], d[1], d[3]])
    return [y]


# --------------------------------------------------------------------------------------------
# ScatterElements / Scatter, ScatterND


def _scatter_reduction(n: NodeView) -> str:
    r = n.attr("reduction", b"none")
    r = r.decode() if isinstance(r, bytes) else r
    allowed = (
        ("none",) if n.opset < 16 else ("none", "add", "mul") if n.opset < 18 else ("none", "add", "mul", "max", "min")
    )
    if r not in allowed:
        raise Unsupported(f"{n.op_type}: reduction '{r}' is not one of {', '.join(allowed)} (opset {n.opset})")
    return r


def _scatter_indices(cx, ind):
    if _elem(ind) not in (i64, IntegerType(32)):
        raise Unsupported(f"indices of {_elem(ind)}")
    return ind


@onnx_op("ScatterElements", "Scatter")
def emit_scatter_elements(n: NodeView) -> list:
    """ScatterElements(data, indices, updates, axis, reduction) (and the deprecated Scatter)
    -> graph.scatter_elements {axis, reduction}."""
    cx = n.cx
    data, ind, upd = _ssa(n, 0), _scatter_indices(cx, _ssa(n, 1)), _ssa(n, 2)
    rank = len(_shape(data))
    axis = int(n.attr("axis", 0))
    if not -rank <= axis < rank:
        raise Unsupported(f"{n.op_type}: axis {axis} is out of range for a rank-{rank} input")
    if len(_shape(ind)) != rank or _shape(ind) != _shape(upd):
        raise Unsupported(
            f"{n.op_type}: indices {_shape(ind)} and updates {_shape(upd)} must have one shape of rank {rank}"
        )
    return [cx.emit1(graph.ScatterElementsOp(data, ind, upd, _axis(axis, rank), _scatter_reduction(n)))]


@onnx_op("ScatterND")
def emit_scatter_nd(n: NodeView) -> list:
    """ScatterND(data, indices, updates, reduction) -> graph.scatter_nd {reduction} (the index
    depth, the last dim of indices, must be static)."""
    cx = n.cx
    data, ind, upd = _ssa(n, 0), _scatter_indices(cx, _ssa(n, 1)), _ssa(n, 2)
    ish, dsh = _shape(ind), _shape(data)
    if not ish or ish[-1] == DYNAMIC:
        raise Unsupported("ScatterND with a dynamic index depth (last dim of indices)")
    if ish[-1] > len(dsh):
        raise Unsupported(f"ScatterND: index depth {ish[-1]} exceeds the data rank {len(dsh)}")
    want = ish[:-1] + dsh[ish[-1]:]
    if len(_shape(upd)) != len(want):
        raise Unsupported(f"ScatterND: updates {_shape(upd)} must have shape {want}")
    return [cx.emit1(graph.ScatterNDOp(data, ind, upd, _scatter_reduction(n)))]


# --------------------------------------------------------------------------------------------
# TopK


@onnx_op("TopK")
def emit_topk(n: NodeView) -> list:
    """TopK(x, k, axis=-1, largest=1, sorted=1) -> graph.topk {k, axis, largest} (values, i64
    indices; always sorted, which sorted=0 allows). k is an attribute before opset 10, then a
    constant 1-element input."""
    cx = n.cx
    x = _ssa(n, 0)
    rank = len(_shape(x))
    if n.opset < 10:
        k = n.attr("k")
        if k is None:
            raise Unsupported("TopK needs k")
        k = int(k)
    else:
        kc = _const_input(n, 1, "k")
        if kc is None or kc.size != 1:
            raise Unsupported("TopK: k must be one integer")
        k = int(kc.reshape(-1)[0])
    axis = int(n.attr("axis", -1))
    if not -rank <= axis < rank:
        raise Unsupported(f"TopK: axis {axis} is out of range for a rank-{rank} input")
    axis = _axis(axis, rank)
    size = _shape(x)[axis]
    if k < 0 or (size != DYNAMIC and k > size):
        raise Unsupported(f"TopK: k {k} must be in [0, {size}] (the axis size)")
    if _elem(x) == IntegerType(1):
        raise Unsupported("TopK of bool")
    largest = bool(n.attr("largest", 1)) if n.opset >= 11 else True
    op = cx.emit(graph.TopKOp(x, k, axis, largest))
    return [op.results[0], op.results[1]]


# --------------------------------------------------------------------------------------------
# CumProd


@onnx_op("CumProd")
def emit_cumprod(n: NodeView) -> list:
    """CumProd(x, axis, exclusive=0, reverse=0) -> graph.cumprod {axis, exclusive, reverse}
    (axis: a constant 0-d or 1-element tensor)."""
    from minimlir.frontend._onnx_ops_more import scan_operands

    x, axis, exclusive, reverse = scan_operands(n, "CumProd")
    return [n.cx.emit1(graph.CumProdOp(x, axis, exclusive=exclusive, reverse=reverse))]


# --------------------------------------------------------------------------------------------
# LpPool, LpNormalization


def _pow_const(cx, x, p: float):
    """x ** p: graph.mul for p = 2, graph.sqrt for p = 1/2, else graph.pow with a 0-d constant."""
    if p == 1:
        return x
    if p == 2:
        return cx.emit1(graph.MulOp(x, x))
    if p == 0.5:
        return cx.emit1(graph.SqrtOp(x))
    return cx.emit1(graph.PowOp(x, cx.scalar(p, _elem(x))))


def _check_lp_pool(node, opset):
    from minimlir.frontend._onnx_ops import _check_pool

    for a in node.attribute:
        if a.name == "p" and (a.f if a.type == a.FLOAT else a.i) <= 0:
            return "p must be positive"
    return _check_pool(node, opset)


@onnx_op("LpPool", check=_check_lp_pool)
def emit_lp_pool(n: NodeView) -> list:
    """LpPool(x, p=2, kernel_shape, strides, pads, dilations, ceil_mode) -> (window sum of |x|^p)^(1/p):
    graph.avg_pool2d {count_include_pad} of |x|^p (graph.abs; graph.mul for p = 2) times the
    kernel size, then ^(1/p) (graph.sqrt for p = 2); 1-D via reshape, 3-D as two 2-D pools."""
    from minimlir.frontend._onnx_ops import (
        _pads_2d, _pool3d, _pool_params, _squeeze_spatial, _to_2d, _unsqueeze_spatial,
    )

    cx = n.cx
    x = _ssa(n, 0)
    if not _is_float(x):
        raise Unsupported(f"LpPool of {_elem(x)}")
    p = float(n.attr("p", 2))
    k, kernel, strides, dilations, pads = _pool_params(n, x)
    ceil_mode = bool(n.attr("ceil_mode", 0))

    def make(v, kern, st, pd, dil):
        return graph.AvgPool2dOp(
            v, kern, strides=st, pads=pd, ceil_mode=ceil_mode, count_include_pad=True, dilations=dil
        )

    xp = _pow_const(cx, cx.emit1(graph.AbsOp(x)) if p != 2 else x, p)
    if k == 3:
        y = _pool3d(cx, xp, kernel, strides, dilations, pads, make)
    else:
        if k == 1:
            xp = _unsqueeze_spatial(cx, xp)
        y = cx.emit1(make(xp, _to_2d(k, kernel, 1), _to_2d(k, strides, 1), _pads_2d(k, pads), _to_2d(k, dilations, 1)))
        if k == 1:
            y = _squeeze_spatial(cx, y)
    y = cx.emit1(graph.MulOp(y, cx.scalar(float(np.prod(kernel)), _elem(x))))
    return [_pow_const(cx, y, 1.0 / p)]


@onnx_op("LpNormalization")
def emit_lp_normalization(n: NodeView) -> list:
    """LpNormalization(x, axis=-1, p=2) -> x / graph.reduce_sum(|x|^p, axis, keepdims)^(1/p)
    (p = 1: sum |x|; p = 2: sqrt of the sum of squares); a zero norm gives 0 (graph.where), as
    onnxruntime."""
    cx = n.cx
    x = _ssa(n, 0)
    if not _is_float(x):
        raise Unsupported(f"LpNormalization of {_elem(x)}")
    p = int(n.attr("p", 2))
    if p not in (1, 2):
        raise Unsupported(f"LpNormalization: p must be 1 or 2, got {p}")
    rank = len(_shape(x))
    axis = int(n.attr("axis", -1))
    if not -rank <= axis < rank:
        raise Unsupported(f"LpNormalization: axis {axis} is out of range for a rank-{rank} input")
    axis = _axis(axis, rank)
    t = cx.emit1(graph.AbsOp(x)) if p == 1 else cx.emit1(graph.MulOp(x, x))
    norm = cx.emit1(graph.ReduceSumOp(t, [axis], keepdims=True))
    if p == 2:
        norm = cx.emit1(graph.SqrtOp(norm))
    zero = cx.scalar(0.0, _elem(x))
    y = cx.emit1(graph.DivOp(x, norm))
    return [cx.emit1(graph.WhereOp(cx.emit1(graph.EqOp(norm, zero)), zero, y))]


# --------------------------------------------------------------------------------------------
# MaxPool with its Indices output (replaces the first round's single-output registration)


def _check_maxpool_indices(node, opset):
    from minimlir.frontend._onnx_ops import _check_pool

    so = next((a.i for a in node.attribute if a.name == "storage_order"), 0)
    if so not in (0, 1):
        return f"storage_order must be 0 or 1, got {so}"
    return _check_pool(node, opset)


@onnx_op("MaxPool", check=_check_maxpool_indices)
def emit_max_pool_with_indices(n: NodeView) -> list:
    """MaxPool(x) -> graph.max_pool2d (see `emit_max_pool`); the Indices output (when used) ->
    graph.max_pool2d_indices of x and the pooled values (1-D and 2-D; flat NCHW indices,
    column-major within a plane with storage_order 1)."""
    from minimlir.frontend._onnx_ops import (
        _pads_2d,
        _pool_params,
        _squeeze_spatial,
        _to_2d,
        _unsqueeze_spatial,
        emit_max_pool,
    )

    (y,) = emit_max_pool(n)
    if n.num_outputs() < 2 or not n.output_used(1):
        return [y, None] if n.num_outputs() >= 2 else [y]
    cx = n.cx
    x = _ssa(n, 0)
    k, kernel, strides, dilations, pads = _pool_params(n, x)
    if k == 3:
        raise Unsupported("the Indices output of a 3-D MaxPool")
    so = int(n.attr("storage_order", 0))
    y4 = cx.ssa(y) if not hasattr(y, "type") else y
    if k == 1:
        x = _unsqueeze_spatial(cx, x)
        y4 = _unsqueeze_spatial(cx, y4)
    ind = cx.emit1(graph.MaxPool2dIndicesOp(x, y4, _to_2d(k, kernel, 1), _to_2d(k, strides, 1), _pads_2d(k, pads),
                                            _to_2d(k, dilations, 1), bool(n.attr("ceil_mode", 0)), so))
    if k == 1:
        # flat indices of the (N, C, 1, L) view are those of (N, C, L)
        ind = _squeeze_spatial(cx, ind)
    return [y, ind]


# --------------------------------------------------------------------------------------------
# NonZero: a data-dependent result dim


@onnx_op("NonZero")
def emit_nonzero(n: NodeView) -> list:
    """NonZero(x) -> count = graph.reduce_sum(graph.cast(graph.not(graph.eq(x, 0)), i64)) over
    all axes (0-d), then graph.nonzero(x, count): (rank, ?) i64 coordinates whose `?` is the
    count, read at run time (see graph.nonzero). NaN counts as nonzero."""
    cx = n.cx
    x = _ssa(n, 0)
    rank = len(_shape(x))
    if rank == 0:
        raise Unsupported("NonZero of a 0-d tensor")
    nz = cx.emit1(graph.NotOp(cx.emit1(graph.EqOp(x, cx.scalar(0, _elem(x))))))
    count = cx.emit1(graph.ReduceSumOp(cx.emit1(graph.CastOp(nz, i64)), list(range(rank)), keepdims=False))
    return [cx.emit1(graph.NonZeroOp(x, count))]


@onnx_op("GlobalLpPool")
def emit_global_lp_pool(n: NodeView) -> list:
    """GlobalLpPool(x, p=2) -> graph.reduce_sum(|x|^p) over the spatial axes (keepdims)^(1/p)."""
    cx = n.cx
    x = _ssa(n, 0)
    if not _is_float(x):
        raise Unsupported(f"GlobalLpPool of {_elem(x)}")
    rank = len(_shape(x))
    if rank < 3:
        raise Unsupported(f"GlobalLpPool of a rank-{rank} input (it needs N, C and spatial dims)")
    p = float(n.attr("p", 2))
    if p <= 0:
        raise Unsupported("p must be positive")
    xp = _pow_const(cx, cx.emit1(graph.AbsOp(x)) if p != 2 else x, p)
    s = cx.emit1(graph.ReduceSumOp(xp, list(range(2, rank)), keepdims=True))
    return [_pow_const(cx, s, 1.0 / p)]
