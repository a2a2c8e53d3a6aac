"""ONNX op emitters of the third operator-coverage round (issue 14), registered in the op table of
`minimlir.frontend._onnx_ops` (which imports this module at its end). Same contract as there: an
emitter gets a `NodeView` and returns one entry per ONNX output; each documents its
decomposition into graph ops.

  RNN, GRU, LSTM   unrolled over the (static) sequence length: one step's gates are graph.matmul +
                   graph.add + the activations; sequence_lens masks steps (graph.where)
  QLinearMatMul, MatMulInteger   integer matmul through graph.cast to f32/i32 (exact for 8-bit)
  Col2Im           graph.scatter_elements {reduction = "add"} with a constant index map
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import AnyFloat, IntegerType, f32, i64

from minimlir.dialects import graph
from minimlir.frontend._onnx_ops_coverage import _big_const
from minimlir.frontend._onnx_ops import _const_input, _elem, _is_float, _s, _shape, _ssa, onnx_op
from minimlir.frontend.onnx_import import DYNAMIC, NodeView, Unsupported

# --------------------------------------------------------------------------------------------
# RNN, GRU, LSTM

# activation name -> (uses alpha, uses beta, default alpha, default beta)
_RNN_ACTIVATIONS: dict[str, tuple[bool, bool, float, float]] = {
    "Relu": (False, False, 0.0, 0.0),
    "Tanh": (False, False, 0.0, 0.0),
    "Sigmoid": (False, False, 0.0, 0.0),
    "Affine": (True, True, 1.0, 0.0),
    "LeakyRelu": (True, False, 0.01, 0.0),
    "ThresholdedRelu": (True, False, 1.0, 0.0),
    "ScaledTanh": (True, True, 1.0, 1.0),
    "HardSigmoid": (True, True, 0.2, 0.5),
    "Elu": (True, False, 1.0, 0.0),
    "Softsign": (False, False, 0.0, 0.0),
    "Softplus": (False, False, 0.0, 0.0),
}
_RNN_GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}
_RNN_DEFAULT_ACTS = {"RNN": ["Tanh"], "GRU": ["Sigmoid", "Tanh"], "LSTM": ["Sigmoid", "Tanh", "Tanh"]}
_RNN_DIRECTIONS = ("forward", "reverse", "bidirectional")


def _canon_activation(name: str) -> str | None:
    low = name.lower()
    return next((k for k in _RNN_ACTIVATIONS if k.lower() == low), None)


def _rnn_activations(op: str, acts: list[str] | None, alphas: list[float] | None,
                     betas: list[float] | None, num_dirs: int) -> list[list[tuple[str, float, float]]]:
    """Per direction, its activation functions as (name, alpha, beta). alpha/beta are consumed in
    the order of the activations that use them (onnxruntime's reading of the spec)."""
    per_dir = len(_RNN_DEFAULT_ACTS[op])
    names = list(acts) if acts else _RNN_DEFAULT_ACTS[op] * num_dirs
    if len(names) == per_dir and num_dirs == 2:
        names = names * 2
    if len(names) != per_dir * num_dirs:
        raise Unsupported(f"{op}: {len(names)} activations, expected {per_dir * num_dirs} "
                          f"({per_dir} per direction)")
    alphas, betas = list(alphas or []), list(betas or [])
    out = []
    for name in names:
        canon = _canon_activation(name)
        if canon is None:
            raise Unsupported(f"{op}: activation '{name}' (one of {', '.join(_RNN_ACTIVATIONS)})")
        ua, ub, da, db = _RNN_ACTIVATIONS[canon]
        a = alphas.pop(0) if ua and alphas else da
        b = betas.pop(0) if ub and betas else db
        out.append((canon, float(a), float(b)))
    return [out[d * per_dir:(d + 1) * per_dir] for d in range(num_dirs)]


def _check_rnn(node, opset):
    attrs = {a.name: a for a in node.attribute}
    if "direction" in attrs and attrs["direction"].s.decode() not in _RNN_DIRECTIONS:
        return f"direction '{attrs['direction'].s.decode()}' is not one of {', '.join(_RNN_DIRECTIONS)}"
    if "hidden_size" in attrs and attrs["hidden_size"].i < 1:
        return f"hidden_size must be >= 1, got {attrs['hidden_size'].i}"
    if "layout" in attrs and attrs["layout"].i not in (0, 1):
        return f"layout must be 0 or 1, got {attrs['layout'].i}"
    if "clip" in attrs and not attrs["clip"].f > 0:
        return f"clip must be > 0, got {attrs['clip'].f}"
    for a in attrs.get("activations", None) and attrs["activations"].strings or []:
        if _canon_activation(a.decode()) is None:
            return f"activation '{a.decode()}' (one of {', '.join(_RNN_ACTIVATIONS)})"
    return None


def _apply_activation(cx, x, act: tuple[str, float, float]):
    name, alpha, beta = act
    el = _elem(x)
    if name == "Relu":
        return cx.emit1(graph.ReluOp(x))
    if name == "Tanh":
        return cx.emit1(graph.TanhOp(x))
    if name == "Sigmoid":
        return cx.emit1(graph.SigmoidOp(x))
    if name == "Affine":
        return cx.emit1(graph.AddOp(cx.emit1(graph.MulOp(x, cx.scalar(alpha, el))), cx.scalar(beta, el)))
    if name == "LeakyRelu":
        return cx.emit1(graph.LeakyReluOp(x, alpha))
    if name == "ThresholdedRelu":
        keep = cx.emit1(graph.GtOp(x, cx.scalar(alpha, el)))
        return cx.emit1(graph.WhereOp(keep, x, cx.scalar(0.0, el)))
    if name == "ScaledTanh":
        t = cx.emit1(graph.TanhOp(cx.emit1(graph.MulOp(x, cx.scalar(beta, el)))))
        return cx.emit1(graph.MulOp(t, cx.scalar(alpha, el)))
    if name == "HardSigmoid":
        return cx.emit1(graph.HardSigmoidOp(x, alpha, beta))
    if name == "Elu":
        return cx.emit1(graph.EluOp(x, alpha))
    if name == "Softsign":
        den = cx.emit1(graph.AddOp(cx.emit1(graph.AbsOp(x)), cx.scalar(1.0, el)))
        return cx.emit1(graph.DivOp(x, den))
    assert name == "Softplus"
    return cx.emit1(graph.SoftplusOp(x))


def _pick(cx, x, i: int, axis: int = 0):
    """x[i] along `axis` (that dim removed): graph.gather with a 0-d index."""
    return cx.emit1(graph.GatherOp(x, cx.ssa(cx.from_const(np.array(i, np.int64))), axis))


def _split(cx, x, axis: int, sizes: list[int]) -> list:
    return list(cx.emit(graph.SplitOp(x, axis, sizes)).results)


@onnx_op("RNN", "GRU", "LSTM", check=_check_rnn)
def emit_recurrent(n: NodeView) -> list:
    """RNN / GRU / LSTM (X, W, R, B, sequence_lens, initial_h, initial_c, P), unrolled over the
    static sequence length T. Per direction d: XW = graph.matmul(X, W[d]^T) + Wb (+ Rb where the
    gate allows) for all steps at once; then for t = 0..T-1 (reverse: T-1..0) the gates of step t
    are XW[t] + H @ R[d]^T (graph.gather, graph.matmul, graph.split per gate), clipped
    (graph.clip) when `clip` is set, through the activations f, g, h:
      RNN   H = f(x_i + H Ri + bi)
      GRU   z = f(x_z + H Rz), r = f(x_r + H Rr), h = g(x_h + (r*H) Rh + Rbh)   (linear_before_reset=0)
                                           or h = g(x_h + r*(H Rh + Rbh))     (linear_before_reset=1)
            H = (1 - z) * h + z * H
      LSTM  i = f(x_i + H Ri + Pi*C), f = f(x_f + H Rf + Pf*C) (input_forget: f = 1 - i),
            c = g(x_c + H Rc), C = f*C + i*c, o = f(x_o + H Ro + Po*C), H = o * h(C)
    With sequence_lens, a step t >= len[b] keeps batch b's state and writes zeros to Y
    (graph.where on t < len): in reverse the state then starts at t = len[b] - 1, as specified.
    Y stacks the steps (graph.reshape + graph.concat) as [T, dirs, B, H]; layout=1 transposes
    X, initial states and outputs to batch-first."""
    cx = n.cx
    op = n.op_type
    gates = _RNN_GATES[op]
    x = _ssa(n, 0)
    if not _is_float(x):
        raise Unsupported(f"{op} of {_elem(x)}")
    el = _elem(x)
    if len(_shape(x)) != 3:
        raise Unsupported(f"{op}: X must be 3-D, got rank {len(_shape(x))}")
    layout = int(n.attr("layout", 0))
    if layout == 1:
        x = cx.emit1(graph.TransposeOp(x, [1, 0, 2]))
    seq, batch, _ = _shape(x)
    if seq == DYNAMIC:
        raise Unsupported(f"{op} with a dynamic sequence length (the steps are unrolled)")
    direction = _s(n.attr("direction", b"forward"))
    num_dirs = 2 if direction == "bidirectional" else 1
    hidden = n.attr("hidden_size")
    w = _ssa(n, 1)
    r = _ssa(n, 2)
    ws, rs = _shape(w), _shape(r)
    if len(ws) != 3 or len(rs) != 3 or DYNAMIC in ws or DYNAMIC in rs:
        raise Unsupported(f"{op}: W and R must be static 3-D tensors, got {ws} and {rs}")
    if hidden is None:
        hidden = rs[2]
    hidden = int(hidden)
    if ws[0] != num_dirs or rs[0] != num_dirs or ws[1] != gates * hidden or rs[1:] != [gates * hidden, hidden]:
        raise Unsupported(f"{op}: W {ws} / R {rs} do not match {num_dirs} direction(s), "
                          f"{gates} gate(s) of hidden_size {hidden}")
    if _elem(w) != el or _elem(r) != el:
        raise Unsupported(f"{op}: W and R must have X's element type {el}")
    clip = n.attr("clip")
    acts = _rnn_activations(op, [_s(a) for a in n.attr("activations", [])] or None,
                            n.attr("activation_alpha"), n.attr("activation_beta"), num_dirs)
    lbr = int(n.attr("linear_before_reset", 0)) if op == "GRU" else 0
    input_forget = int(n.attr("input_forget", 0)) if op == "LSTM" else 0

    def opt(i):
        v = n.input(i)
        return None if v is None else cx.ssa(v)

    b_in, lens, h0_in, c0_in, p_in = opt(3), opt(4), opt(5), opt(6) if op == "LSTM" else None, \
        opt(7) if op == "LSTM" else None
    if b_in is not None and _shape(b_in) != [num_dirs, 2 * gates * hidden]:
        raise Unsupported(f"{op}: B has shape {_shape(b_in)}, expected {[num_dirs, 2 * gates * hidden]}")
    if p_in is not None and _shape(p_in) != [num_dirs, 3 * hidden]:
        raise Unsupported(f"{op}: P has shape {_shape(p_in)}, expected {[num_dirs, 3 * hidden]}")
    inits = []
    for v, what in ((h0_in, "initial_h"), (c0_in, "initial_c")):
        if v is not None and layout == 1:
            v = cx.emit1(graph.TransposeOp(v, [1, 0, 2]))
        if v is not None and len(_shape(v)) != 3:
            raise Unsupported(f"{op}: {what} must be 3-D")
        inits.append(v)
    masks = None
    if lens is not None:
        if len(_shape(lens)) != 1:
            raise Unsupported(f"{op}: sequence_lens must be 1-D")
        if not isinstance(_elem(lens), IntegerType):
            raise Unsupported(f"{op}: sequence_lens must be an integer tensor")
        lens64 = lens if _elem(lens) == i64 else cx.emit1(graph.CastOp(lens, i64))
        lens64 = cx.reshape(lens64, [cx.dims(lens64)[0], 1])
        masks = [cx.emit1(graph.LtOp(cx.scalar(t, i64), lens64)) for t in range(seq)]

    zero_state = None
    dims_x = cx.dims(x)

    def initial(v, d):
        nonlocal zero_state
        if v is not None:
            return _pick(cx, v, d)
        if zero_state is None:
            zero_state = cx.broadcast_to(cx.scalar(0.0, el), [dims_x[1], hidden])
        return zero_state

    def clipped(v):
        return v if clip is None else cx.emit1(graph.ClipOp(v, -float(clip), float(clip)))

    def step_keep(t, new, old):
        return new if masks is None else cx.emit1(graph.WhereOp(masks[t], new, old))

    ys: list[list] = []  # per direction, per step t (in time order): [B, H]
    finals_h, finals_c = [], []
    for d in range(num_dirs):
        f_act = acts[d]
        wt = cx.emit1(graph.TransposeOp(_pick(cx, w, d), [1, 0]))  # [I, G*H]
        rt = cx.emit1(graph.TransposeOp(_pick(cx, r, d), [1, 0]))  # [H, G*H]
        xw = cx.emit1(graph.MatMulOp(x, wt))  # [T, B, G*H]
        rb_h = None
        if b_in is not None:
            wb, rb = _split(cx, _pick(cx, b_in, d), 0, [gates * hidden, gates * hidden])
            if op == "GRU" and lbr:
                rb_zr, rb_h = _split(cx, rb, 0, [2 * hidden, hidden])
                zeros_h = cx.ssa(cx.from_const(np.zeros(hidden, dtype=_np_dtype(el))))
                rb = cx.emit1(graph.ConcatOp([rb_zr, zeros_h], 0))
            xw = cx.emit1(graph.AddOp(xw, cx.emit1(graph.AddOp(wb, rb))))
        if op == "GRU" and not lbr:
            r_zr, r_h = _split(cx, rt, 1, [2 * hidden, hidden])
        peep = _split(cx, _pick(cx, p_in, d), 0, [hidden] * 3) if p_in is not None else None
        h = initial(inits[0], d)
        c = initial(inits[1], d) if op == "LSTM" else None
        backward = direction == "reverse" or d == 1
        order = range(seq - 1, -1, -1) if backward else range(seq)
        outs: dict[int, object] = {}
        for t in order:
            xt = _pick(cx, xw, t)  # [B, G*H]
            if op == "RNN":
                pre = cx.emit1(graph.AddOp(xt, cx.emit1(graph.MatMulOp(h, rt))))
                h_new = _apply_activation(cx, clipped(pre), f_act[0])
            elif op == "GRU":
                x_z, x_r, x_h = _split(cx, xt, 1, [hidden] * 3)
                if lbr:
                    hr_z, hr_r, hr_h = _split(cx, cx.emit1(graph.MatMulOp(h, rt)), 1, [hidden] * 3)
                else:
                    hr_z, hr_r = _split(cx, cx.emit1(graph.MatMulOp(h, r_zr)), 1, [hidden] * 2)
                z = _apply_activation(cx, clipped(cx.emit1(graph.AddOp(x_z, hr_z))), f_act[0])
                rg = _apply_activation(cx, clipped(cx.emit1(graph.AddOp(x_r, hr_r))), f_act[0])
                if lbr:
                    hh = hr_h if rb_h is None else cx.emit1(graph.AddOp(hr_h, rb_h))
                    pre_h = cx.emit1(graph.AddOp(x_h, cx.emit1(graph.MulOp(rg, hh))))
                else:
                    pre_h = cx.emit1(graph.AddOp(x_h, cx.emit1(graph.MatMulOp(cx.emit1(graph.MulOp(rg, h)), r_h))))
                hc = _apply_activation(cx, clipped(pre_h), f_act[1])
                one_minus_z = cx.emit1(graph.SubOp(cx.scalar(1.0, el), z))
                h_new = cx.emit1(graph.AddOp(cx.emit1(graph.MulOp(one_minus_z, hc)), cx.emit1(graph.MulOp(z, h))))
            else:
                g_i, g_o, g_f, g_c = _split(cx, cx.emit1(graph.AddOp(xt, cx.emit1(graph.MatMulOp(h, rt)))), 1,
                                            [hidden] * 4)
                if peep is not None:
                    g_i = cx.emit1(graph.AddOp(g_i, cx.emit1(graph.MulOp(peep[0], c))))
                    g_f = cx.emit1(graph.AddOp(g_f, cx.emit1(graph.MulOp(peep[2], c))))
                ig = _apply_activation(cx, clipped(g_i), f_act[0])
                if input_forget:
                    fg = cx.emit1(graph.SubOp(cx.scalar(1.0, el), ig))
                else:
                    fg = _apply_activation(cx, clipped(g_f), f_act[0])
                cg = _apply_activation(cx, clipped(g_c), f_act[1])
                c_new = cx.emit1(graph.AddOp(cx.emit1(graph.MulOp(fg, c)), cx.emit1(graph.MulOp(ig, cg))))
                if peep is not None:
                    g_o = cx.emit1(graph.AddOp(g_o, cx.emit1(graph.MulOp(peep[1], c_new))))
                og = _apply_activation(cx, clipped(g_o), f_act[0])
                h_new = cx.emit1(graph.MulOp(og, _apply_activation(cx, c_new, f_act[2])))
                c = step_keep(t, c_new, c)
            outs[t] = h_new if masks is None else cx.emit1(
                graph.WhereOp(masks[t], h_new, cx.scalar(0.0, el)))
            h = step_keep(t, h_new, h)
        ys.append([outs[t] for t in range(seq)])
        finals_h.append(h)
        finals_c.append(c)

    def stack(vals, lead):  # [B, H] values -> concat of [lead..., B, H]
        dims = cx.dims(vals[0])
        parts = [cx.reshape(v, [1] * lead + dims) for v in vals]
        return parts[0] if len(parts) == 1 else cx.emit1(graph.ConcatOp(parts, 0))

    results: list = [None, None, None]
    if n.output_used(0):
        steps = [stack([ys[d][t] for d in range(num_dirs)], 1) for t in range(seq)]  # [dirs, B, H] each
        y = cx.reshape(steps[0], [1] + cx.dims(steps[0])) if seq == 1 else cx.emit1(
            graph.ConcatOp([cx.reshape(s, [1] + cx.dims(s)) for s in steps], 0))
        results[0] = cx.emit1(graph.TransposeOp(y, [2, 0, 1, 3])) if layout == 1 else y
    if n.output_used(1):
        yh = stack(finals_h, 1)
        results[1] = cx.emit1(graph.TransposeOp(yh, [1, 0, 2])) if layout == 1 else yh
    if op == "LSTM" and n.output_used(2):
        yc = stack(finals_c, 1)
        results[2] = cx.emit1(graph.TransposeOp(yc, [1, 0, 2])) if layout == 1 else yc
    return results[:max(1, n.num_outputs())]


def _np_dtype(el):
    from minimlir.frontend.onnx_import import numpy_dtype_of

    return numpy_dtype_of(el)


# --------------------------------------------------------------------------------------------
# QLinearMatMul, MatMulInteger

def _int_info(el) -> tuple[int, int] | None:
    """(min, max) of an 8-bit integer element type (i8 / ui8), else None."""
    if isinstance(el, IntegerType) and el.width.data == 8:
        from xdsl.dialects.builtin import Signedness

        if el.signedness.data == Signedness.UNSIGNED:
            return 0, 255
        return -128, 127
    return None


def _zero_point(n: NodeView, i: int, what: str, axis_len: int | None, row_axis: bool):
    """Input i as i32, shaped to broadcast against the matmul operand (a per-row vector of `a`
    becomes [M, 1]); a missing zero point is None."""
    v = n.input(i)
    if v is None:
        return None
    x = n.cx.ssa(v)
    return _per_axis(n, x, what, axis_len, row_axis, i32)


i32 = IntegerType(32)


def _per_axis(n: NodeView, x, what: str, axis_len: int | None, row_axis: bool, to):
    cx = n.cx
    shape = _shape(x)
    if _elem(x) != to:
        x = cx.emit1(graph.CastOp(x, to))
    size = 1
    for d in shape:
        size = DYNAMIC if d == DYNAMIC or size == DYNAMIC else size * d
    if len(shape) <= 1 and size == 1:
        return cx.reshape(x, [])
    if len(shape) == 1 and axis_len is not None and size == axis_len:
        return cx.reshape(x, [size, 1]) if row_axis else x
    raise Unsupported(f"{n.op_type}: {what} has shape {shape}: it must be a scalar or one value per "
                      f"{'row of a' if row_axis else 'column of b'}")


def _centered(n: NodeView, i_x: int, i_zp: int, what: str, row_axis: bool):
    """graph.cast(x, i32) - graph.cast(zero_point, i32) for input i_x."""
    cx = n.cx
    x = _ssa(n, i_x)
    if _int_info(_elem(x)) is None:
        raise Unsupported(f"{n.op_type}: {what} must be int8 or uint8, got {_elem(x)}")
    shape = _shape(x)
    if len(shape) < 2:
        raise Unsupported(f"{n.op_type}: {what} must have rank >= 2, got rank {len(shape)}")
    axis_len = shape[-2] if row_axis else shape[-1]
    xi = cx.emit1(graph.CastOp(x, i32))
    zp = _zero_point(n, i_zp, f"{what}'s zero point", None if axis_len == DYNAMIC else axis_len, row_axis)
    if zp is not None and n.input(i_zp) is not None and _elem(cx.ssa(n.input(i_zp))) != _elem(x):
        raise Unsupported(f"{n.op_type}: {what}'s zero point must have its element type {_elem(x)}")
    return xi if zp is None else cx.emit1(graph.SubOp(xi, zp)), x


@onnx_op("MatMulInteger")
def emit_matmul_integer(n: NodeView) -> list:
    """MatMulInteger(A, B, a_zero_point, b_zero_point) -> graph.matmul in i32 of
    (graph.cast(A, i32) - a_zp) and (graph.cast(B, i32) - b_zp) (a per-row a_zp is [M, 1], a
    per-column b_zp broadcasts along the last dim)."""
    a, _ = _centered(n, 0, 2, "A", True)
    b, _ = _centered(n, 1, 3, "B", False)
    return [n.cx.emit1(graph.MatMulOp(a, b))]


@onnx_op("QLinearMatMul")
def emit_qlinear_matmul(n: NodeView) -> list:
    """QLinearMatMul(a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp) ->
    acc = graph.matmul in i32 of the zero-point-centered operands; y = graph.cast(graph.clip(
    graph.round(graph.cast(acc, f32) * (a_scale * b_scale / y_scale)) + y_zp, qmin, qmax), y's
    type): the requantization onnxruntime does, in f32 (the scales, f32 or f16, are cast to f32),
    rounding half to even, saturating."""
    cx = n.cx
    a, a_raw = _centered(n, 0, 2, "a", True)
    b, _ = _centered(n, 3, 5, "b", False)
    yzp_v = n.input(7)
    if yzp_v is None:
        raise Unsupported("QLinearMatMul needs y_zero_point (it gives the output type)")
    y_type = _elem(cx.ssa(yzp_v))
    bounds = _int_info(y_type)
    if bounds is None:
        raise Unsupported(f"QLinearMatMul: y_zero_point must be int8 or uint8, got {y_type}")
    acc = cx.emit1(graph.MatMulOp(a, b))
    m_len = _shape(a_raw)[-2]
    n_len = _shape(b)[-1]
    scales = []
    for i, what, ln, row in ((1, "a_scale", m_len, True), (4, "b_scale", n_len, False), (6, "y_scale", None, False)):
        s = _ssa(n, i)
        if not isinstance(_elem(s), AnyFloat):
            raise Unsupported(f"QLinearMatMul: {what} must be a float tensor, got {_elem(s)}")
        scales.append(_per_axis(n, s, what, None if ln == DYNAMIC else ln, row, f32))
    mult = cx.emit1(graph.DivOp(cx.emit1(graph.MulOp(scales[0], scales[1])), scales[2]))
    y = cx.emit1(graph.RoundOp(cx.emit1(graph.MulOp(cx.emit1(graph.CastOp(acc, f32)), mult))))
    yzp = _per_axis(n, cx.ssa(yzp_v), "y_zero_point", None, False, f32)
    y = cx.emit1(graph.ClipOp(cx.emit1(graph.AddOp(y, yzp)), float(bounds[0]), float(bounds[1])))
    return [cx.emit1(graph.CastOp(y, y_type))]


# --------------------------------------------------------------------------------------------
# Col2Im


def col2im_index_map(image: list[int], block: list[int], dilations: list[int], pads: list[int],
                     strides: list[int]) -> tuple[np.ndarray, int]:
    """(for each (kernel offset, block position) pair in Col2Im's input order, the flat output
    position it adds to, or prod(image) for a position in the padding; the number of blocks L)."""
    k = len(image)
    counts = []
    for i in range(k):
        span = dilations[i] * (block[i] - 1) + 1
        c = (image[i] + pads[i] + pads[k + i] - span) // strides[i] + 1
        if c < 1:
            raise Unsupported(f"Col2Im: the block {block} (dilations {dilations}) does not fit the padded "
                              f"image {image}")
        counts.append(c)
    koff = np.indices(block).reshape(k, -1)  # [k, K]
    boff = np.indices(counts).reshape(k, -1)  # [k, L]
    pos = (boff[:, None, :] * np.array(strides)[:, None, None] - np.array(pads[:k])[:, None, None]
           + koff[:, :, None] * np.array(dilations)[:, None, None])  # [k, K, L]
    inside = np.all((pos >= 0) & (pos < np.array(image)[:, None, None]), axis=0)
    flat = np.ravel_multi_index(tuple(np.clip(pos, 0, np.array(image)[:, None, None] - 1)), image)
    return np.where(inside, flat, int(np.prod(image))).reshape(-1).astype(np.int64), int(np.prod(counts))


def _check_col2im(node, opset):
    attrs = {a.name: a for a in node.attribute}
    for name in ("strides", "dilations"):
        if name in attrs and any(v < 1 for v in attrs[name].ints):
            return f"{name} must be >= 1, got {list(attrs[name].ints)}"
    if "pads" in attrs and any(v < 0 for v in attrs["pads"].ints):
        return f"pads must be >= 0, got {list(attrs['pads'].ints)}"
    return None


@onnx_op("Col2Im", check=_check_col2im)
def emit_col2im(n: NodeView) -> list:
    """Col2Im(x [N, C*prod(block), L], image_shape, block_shape) -> graph.scatter_elements
    {reduction = "add"} of x (graph.reshape'd to [N, C, prod(block)*L]) along axis 2 into zeros
    [N, C, prod(image) + 1], with a constant index map (numpy, from the image and block shapes,
    dilations, pads, strides); entries falling in the padding go to the extra last slot, which
    graph.split drops; then graph.reshape to [N, C, *image]. image_shape and block_shape must be
    constants."""
    cx = n.cx
    x = _ssa(n, 0)
    image = [int(v) for v in _const_input(n, 1, "Col2Im image_shape").reshape(-1)]
    block = [int(v) for v in _const_input(n, 2, "Col2Im block_shape").reshape(-1)]
    k = len(image)
    if k < 1 or len(block) != k:
        raise Unsupported(f"Col2Im: image_shape {image} and block_shape {block} must have one length >= 1")
    if any(v < 1 for v in image + block):
        raise Unsupported(f"Col2Im: image_shape {image} and block_shape {block} must be >= 1")
    dil = list(n.attr("dilations", [1] * k))
    strides = list(n.attr("strides", [1] * k))
    pads = list(n.attr("pads", [0] * (2 * k)))
    if len(dil) != k or len(strides) != k or len(pads) != 2 * k:
        raise Unsupported(f"Col2Im: dilations {dil}, strides {strides}, pads {pads} do not match "
                          f"{k} spatial dims")
    shape = _shape(x)
    if len(shape) != 3:
        raise Unsupported(f"Col2Im: the input must be 3-D [N, C*prod(block), L], got rank {len(shape)}")
    kk = int(np.prod(block))
    index, blocks = col2im_index_map(image, block, dil, pads, strides)
    if shape[1] == DYNAMIC or shape[1] % kk:
        raise Unsupported(f"Col2Im: input dim 1 ({shape[1]}) must be a static multiple of prod(block_shape) = {kk}")
    if shape[2] != DYNAMIC and shape[2] != blocks:
        raise Unsupported(f"Col2Im: input dim 2 is {shape[2]}, the geometry gives {blocks} blocks")
    c = shape[1] // kk
    dims = cx.dims(x)
    xr = cx.reshape(x, [dims[0], c, kk * blocks])
    img = int(np.prod(image))
    zeros = cx.broadcast_to(cx.scalar(0, _elem(x)), [dims[0], c, img + 1])
    idx = cx.broadcast_to(cx.ssa(_big_const(n, index.reshape(1, 1, -1))), [dims[0], c, kk * blocks])
    y = cx.emit1(graph.ScatterElementsOp(zeros, idx, xr, axis=2, reduction="add"))
    y = _split(cx, y, 2, [img, 1])[0]
    return [cx.reshape(y, [dims[0], c] + image)]


# --------------------------------------------------------------------------------------------
# GridSample

_GRID_MODES = {16: ("bilinear", "nearest", "bicubic"), 20: ("linear", "nearest", "cubic")}
_GRID_PADDING = ("zeros", "border", "reflection")


def _grid_modes(opset: int) -> tuple[str, ...]:
    return _GRID_MODES[20 if opset >= 20 else 16]


def _check_grid_sample(node, opset):
    attrs = {a.name: a for a in node.attribute}
    mode = attrs["mode"].s.decode() if "mode" in attrs else ("linear" if opset >= 20 else "bilinear")
    if mode not in _grid_modes(opset):
        return f"mode '{mode}' is not one of {', '.join(_grid_modes(opset))} (opset {opset})"
    pad = attrs["padding_mode"].s.decode() if "padding_mode" in attrs else "zeros"
    if pad not in _GRID_PADDING:
        return f"padding_mode '{pad}' is not one of {', '.join(_GRID_PADDING)}"
    if "align_corners" in attrs and attrs["align_corners"].i not in (0, 1):
        return f"align_corners must be 0 or 1, got {attrs['align_corners'].i}"
    return None


def _reflect(cx, x, lo: float, hi: float):
    """Reflect x by the near border until it is within [lo, hi] (elementwise; x float):
    below: d = lo - x, k = floor(d / (hi - lo)), r = d - k (hi - lo), lo + r for even k, else
    hi - r; above the mirror image. A zero-width range (one pixel, aligned corners) gives lo."""
    el = _elem(x)
    rng = hi - lo
    if rng <= 0:
        return cx.broadcast_to(cx.scalar(lo, el), cx.dims(x))
    s = lambda v: cx.scalar(v, el)  # noqa: E731
    e = cx.emit1

    def fold(d):  # (k even, r) for a distance d >= 0 past a border
        k = e(graph.FloorOp(e(graph.DivOp(d, s(rng)))))
        r = e(graph.SubOp(d, e(graph.MulOp(k, s(rng)))))
        half = e(graph.FloorOp(e(graph.MulOp(k, s(0.5)))))
        even = e(graph.EqOp(e(graph.SubOp(k, e(graph.MulOp(half, s(2.0))))), s(0.0)))
        return even, r

    ev_lo, r_lo = fold(e(graph.SubOp(s(lo), x)))
    ev_hi, r_hi = fold(e(graph.SubOp(x, s(hi))))
    from_lo = e(graph.WhereOp(ev_lo, e(graph.AddOp(s(lo), r_lo)), e(graph.SubOp(s(hi), r_lo))))
    from_hi = e(graph.WhereOp(ev_hi, e(graph.SubOp(s(hi), r_hi)), e(graph.AddOp(s(lo), r_hi))))
    y = e(graph.WhereOp(e(graph.LtOp(x, s(lo))), from_lo, x))
    return e(graph.WhereOp(e(graph.GtOp(x, s(hi))), from_hi, y))


def _cubic_coeffs(cx, t) -> list:
    """Keys' cubic convolution weights (a = -0.75) of the taps at -1, 0, 1, 2 for a fraction t."""
    el = _elem(t)
    s = lambda v: cx.scalar(v, el)  # noqa: E731
    e = cx.emit1
    a = -0.75

    def far(x):  # ((a (x) - 5a) x + 8a) x - 4a, for 1 <= x < 2
        return e(graph.SubOp(e(graph.MulOp(e(graph.AddOp(e(graph.MulOp(e(graph.SubOp(e(graph.MulOp(s(a), x)),
                                                                                       s(5 * a))), x)),
                                                          s(8 * a))), x)), s(4 * a)))

    def near(x):  # ((a + 2) x - (a + 3)) x x + 1, for 0 <= x < 1
        inner = e(graph.SubOp(e(graph.MulOp(s(a + 2), x)), s(a + 3)))
        return e(graph.AddOp(e(graph.MulOp(e(graph.MulOp(inner, x)), x)), s(1.0)))

    one_minus = e(graph.SubOp(s(1.0), t))
    return [far(e(graph.AddOp(t, s(1.0)))), near(t), near(one_minus),
            far(e(graph.SubOp(s(2.0), t)))]


@onnx_op("GridSample", check=_check_grid_sample)
def emit_grid_sample(n: NodeView) -> list:
    """GridSample(X [N, C, D1..Dk], grid [N, O1..Om, k]) -> Y [N, C, O1..Om] (k = 2 or 3), as the
    ONNX reference computes it. Per spatial dim i (grid component k-1-i), elementwise on [N, 1, P]
    (P = prod(O)): the coordinate is unnormalized (align_corners: (g+1)/2 (d-1), else
    ((g+1) d - 1)/2), rounded half to even (graph.round) for nearest, and outside the border
    ([0, d-1] aligned, [-0.5, d-0.5] else) clamped (border) or reflected (reflection); its taps
    are x (nearest), floor(x) + 0..1 (linear, weights 1-t, t) or floor(x) - 1..2 (cubic, Keys
    a = -0.75), each tap clamped (border), reflected (reflection) or masked to zero (zeros).
    Every combination of taps over the dims is one graph.gather_elements of X (graph.reshape'd
    to [N, C, prod(D)]) at the flat index, times the product of its weights; their graph.add is Y."""
    cx = n.cx
    x = _ssa(n, 0)
    grid = _ssa(n, 1)
    if not _is_float(x) or not _is_float(grid):
        raise Unsupported(f"GridSample of {_elem(x)} with a {_elem(grid)} grid (both must be float)")
    xs, gs = _shape(x), _shape(grid)
    k = len(xs) - 2
    if k not in (2, 3) or len(gs) != k + 2 or gs[-1] != k:
        raise Unsupported(f"GridSample: X {xs} and grid {gs} must be [N, C, D1..Dk] and [N, O1..Ok, k], k = 2 or 3")
    if n.opset < 20 and k != 2:
        raise Unsupported(f"GridSample before opset 20 takes 4-D inputs, got rank {len(xs)}")
    sizes = xs[2:]
    if DYNAMIC in sizes or DYNAMIC in gs[1:]:
        raise Unsupported("GridSample with dynamic spatial or grid dims")
    mode = _s(n.attr("mode", b"linear" if n.opset >= 20 else b"bilinear"))
    mode = {"bilinear": "linear", "bicubic": "cubic"}.get(mode, mode)
    padding = _s(n.attr("padding_mode", b"zeros"))
    align = bool(n.attr("align_corners", 0))
    gel = _elem(grid)
    s = lambda v: cx.scalar(v, gel)  # noqa: E731
    e = cx.emit1
    out = gs[1:-1]
    points = int(np.prod(out))
    gd = cx.dims(grid)
    xd = cx.dims(x)
    g = cx.reshape(grid, [gd[0], 1, points, k])
    comps = [cx.reshape(c, [gd[0], 1, points]) for c in _split(cx, g, 3, [1] * k)]
    taps_per_dim = []  # per dim: list of (int64 index [N,1,P], weight or None, valid mask or None)
    for i, d in enumerate(sizes):
        c = comps[k - 1 - i]
        if align:
            v = e(graph.MulOp(e(graph.AddOp(c, s(1.0))), s((d - 1) / 2.0)))
            lo, hi = 0.0, float(d - 1)
        else:
            v = e(graph.DivOp(e(graph.SubOp(e(graph.MulOp(e(graph.AddOp(c, s(1.0))), s(float(d)))), s(1.0))),
                              s(2.0)))
            lo, hi = -0.5, d - 0.5
        if mode == "nearest":
            v = e(graph.RoundOp(v))
        if padding == "border":
            v = e(graph.ClipOp(v, 0.0, float(d - 1)))
        elif padding == "reflection":
            v = _reflect(cx, v, lo, hi)
        if mode == "nearest":
            starts, weights = [v], [None]
        else:
            base = e(graph.FloorOp(v))
            t = e(graph.SubOp(v, base))
            if mode == "linear":
                starts = [base, e(graph.AddOp(base, s(1.0)))]
                weights = [e(graph.SubOp(s(1.0), t)), t]
            else:
                starts = [e(graph.AddOp(base, s(float(o)))) for o in (-1, 0, 1, 2)]
                weights = _cubic_coeffs(cx, t)
        taps = []
        for p, w in zip(starts, weights):
            valid = None
            if padding == "zeros":
                valid = e(graph.AndOp(e(graph.GeOp(p, s(0.0))), e(graph.LeOp(p, s(float(d - 1))))))
                p = e(graph.ClipOp(p, 0.0, float(d - 1)))
            elif padding == "border":
                p = e(graph.ClipOp(p, 0.0, float(d - 1)))
            else:
                p = e(graph.ClipOp(_reflect(cx, p, lo, hi), 0.0, float(d - 1)))
            taps.append((e(graph.CastOp(p, i64)), w, valid))
        taps_per_dim.append(taps)
    strides = [int(np.prod(sizes[i + 1:])) for i in range(k)]
    flat_x = cx.reshape(x, [xd[0], xd[1], int(np.prod(sizes))])
    y = None
    for combo in np.ndindex(*[len(t) for t in taps_per_dim]):
        idx, weight, valid = None, None, None
        for i, j in enumerate(combo):
            ti, wi, vi = taps_per_dim[i][j]
            term = ti if strides[i] == 1 else e(graph.MulOp(ti, cx.scalar(strides[i], i64)))
            idx = term if idx is None else e(graph.AddOp(idx, term))
            if wi is not None:
                weight = wi if weight is None else e(graph.MulOp(weight, wi))
            if vi is not None:
                valid = vi if valid is None else e(graph.AndOp(valid, vi))
        picked = e(graph.GatherElementsOp(flat_x, cx.broadcast_to(idx, [xd[0], xd[1], points]), 2))
        if valid is not None:
            mask = e(graph.CastOp(valid, gel))
            weight = mask if weight is None else e(graph.MulOp(weight, mask))
        if weight is not None:
            if _elem(weight) != _elem(x):
                weight = e(graph.CastOp(weight, _elem(x)))
            picked = e(graph.MulOp(picked, weight))
        y = picked if y is None else e(graph.AddOp(y, picked))
    return [cx.reshape(y, [xd[0], xd[1]] + out)]


# --------------------------------------------------------------------------------------------
# AffineGrid


def affine_base_grid(sizes: list[int], align_corners: bool, dtype) -> np.ndarray:
    """[prod(sizes), k + 1]: each point's normalized (x, y[, z], 1), x along the last dim."""
    axes = []
    for s in sizes:
        if align_corners:
            axes.append(np.linspace(-1.0, 1.0, s) if s > 1 else np.zeros(1))
        else:
            axes.append((np.arange(s) * 2.0 + 1.0) / s - 1.0)
    mesh = np.meshgrid(*axes, indexing="ij")  # per dim, [sizes...]
    coords = [m.reshape(-1) for m in reversed(mesh)]  # x (last dim) first
    return np.stack(coords + [np.ones(int(np.prod(sizes)))], axis=1).astype(dtype)


def _check_affine_grid(node, opset):
    for a in node.attribute:
        if a.name == "align_corners" and a.i not in (0, 1):
            return f"align_corners must be 0 or 1, got {a.i}"
    return None


@onnx_op("AffineGrid", check=_check_affine_grid)
def emit_affine_grid(n: NodeView) -> list:
    """AffineGrid(theta [N, k, k+1], size [N, C, D1..Dk], align_corners) -> grid [N, D1..Dk, k]:
    graph.matmul of the constant base grid [1, prod(D), k+1] (numpy: each point's normalized
    coordinates, x first, and a 1) by graph.transpose(theta) [N, k+1, k], graph.reshape'd. size
    must be a constant (k = 2 or 3)."""
    cx = n.cx
    theta = _ssa(n, 0)
    if not _is_float(theta):
        raise Unsupported(f"AffineGrid of {_elem(theta)}")
    size = [int(v) for v in _const_input(n, 1, "AffineGrid size").reshape(-1)]
    k = len(size) - 2
    if k not in (2, 3) or any(v < 1 for v in size[2:]):
        raise Unsupported(f"AffineGrid: size {size} must be [N, C, H, W] or [N, C, D, H, W] with sizes >= 1")
    ts = _shape(theta)
    if len(ts) != 3 or ts[1:] != [k, k + 1]:
        raise Unsupported(f"AffineGrid: theta has shape {ts}, expected [N, {k}, {k + 1}] for size {size}")
    if ts[0] != DYNAMIC and ts[0] != size[0]:
        raise Unsupported(f"AffineGrid: theta's batch {ts[0]} differs from size's {size[0]}")
    base = affine_base_grid(size[2:], bool(n.attr("align_corners", 0)), _np_dtype(_elem(theta)))
    base_v = cx.ssa(_big_const(n, base.reshape(1, *base.shape)))
    grid = cx.emit1(graph.MatMulOp(base_v, cx.emit1(graph.TransposeOp(theta, [0, 2, 1]))))
    return [cx.reshape(grid, [cx.dims(theta)[0]] + size[2:] + [k])]
