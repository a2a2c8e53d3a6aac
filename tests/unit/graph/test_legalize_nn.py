"""graph-legalize of matmul, conv2d and the pools, executed against NumPy references.

Shapes are tiny and odd (primes, stride 2, pads, dilation 2, groups, ceil_mode); dynamic variants
mark some dims `?` so the kernels read them with mem.dim and the graph computes the result dims.
The pool references are cross-checked against onnxruntime (the ONNX ground truth for ceil_mode
and count_include_pad).
"""

from __future__ import annotations

import numpy as np
import pytest
from minimlir.compiler.interpreter import BACKENDS, assert_outputs, legalize, run_graph, tensor_type as ttype

from minimlir.dialects import loop
from _references import conv_ref  # noqa: F401 (also used by the conv tests below)

RNG = np.random.default_rng(7)


def rand(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def func_text(args, result, body):
    """One graph function `@main(args) -> result` whose body line defines %r."""
    sig = ", ".join(f"%a{i}: {t}" for i, t in enumerate(args))
    return f"func.func @main({sig}) -> {result} {{\n  %r = {body}\n  func.return %r : {result}\n}}\n"


# -- references ------------------------------------------------------------------------------


def pool_out(size, k, s, pb, pe, d, ceil_mode):
    span = size + pb + pe - (d * (k - 1) + 1)
    if not ceil_mode:
        return span // s + 1
    out = -(-span // s) + 1
    if (out - 1) * s >= size + pb:
        out -= 1
    return out


def pool_ref(x, kind, kernel, strides, pads, dilations=(1, 1), ceil_mode=False, include_pad=False):
    n, c, h, w = x.shape
    oh = pool_out(h, kernel[0], strides[0], pads[0], pads[2], dilations[0], ceil_mode)
    ow = pool_out(w, kernel[1], strides[1], pads[1], pads[3], dilations[1], ceil_mode)
    y = np.zeros((n, c, oh, ow), x.dtype)
    for i in range(oh):
        for j in range(ow):
            rows = [i * strides[0] - pads[0] + a * dilations[0] for a in range(kernel[0])]
            cols = [j * strides[1] - pads[1] + b * dilations[1] for b in range(kernel[1])]
            rin = [r for r in rows if 0 <= r < h]
            cin = [q for q in cols if 0 <= q < w]
            win = x[:, :, rin][:, :, :, cin]
            if kind == "max":
                y[:, :, i, j] = win.max(axis=(2, 3)) if win.size else -np.inf
                continue
            if include_pad:  # the taps inside the padded input
                cnt_h = len([r for r in rows if -pads[0] <= r < h + pads[2]])
                cnt_w = len([q for q in cols if -pads[1] <= q < w + pads[3]])
            else:
                cnt_h, cnt_w = len(rin), len(cin)
            y[:, :, i, j] = win.sum(axis=(2, 3), dtype=np.float64) / (cnt_h * cnt_w)
    return y


def ort_pool(x, kind, kernel, strides, pads, dilations=(1, 1), ceil_mode=False, include_pad=False):
    pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper

    attrs = dict(kernel_shape=list(kernel), strides=list(strides), pads=list(pads),
                 ceil_mode=int(ceil_mode))
    if kind == "max":
        attrs["dilations"] = list(dilations)
        node = helper.make_node("MaxPool", ["x"], ["y"], **attrs)
    else:
        node = helper.make_node("AveragePool", ["x"], ["y"], count_include_pad=int(include_pad),
                                dilations=list(dilations), **attrs)
    g = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 19)])
    model.ir_version = 9
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {"x": x})[0]


# -- matmul ------------------------------------------------------------------------------------

MATMUL_CASES = [
    # (lhs shape, rhs shape, dynamic dims of lhs, dynamic dims of rhs)
    ((3, 5), (5, 2), (), ()),
    ((5,), (5, 3), (), ()),
    ((3, 5), (5,), (), ()),
    ((5,), (5,), (), ()),
    ((2, 3, 5), (5, 4), (0,), ()),
    ((2, 1, 3, 5), (3, 5, 2), (), ()),  # broadcast batch 2x1 vs 3 -> 2x3
    ((3, 3, 5), (1, 5, 2), (0, 1, 2), (2,)),  # dynamic batch, M, K; static 1 broadcast
    ((1, 3, 5), (2, 5, 2), (0,), (0,)),  # ? vs ?: 1 at run time broadcasts
    ((4, 3, 5), (4, 5, 2), (0,), (0,)),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("sa,sb,da,db", MATMUL_CASES)
def test_matmul(backend, sa, sb, da, db):
    a, b = rand(*sa), rand(*sb)
    expected = a @ b
    res_dyn = ()
    if da or db:
        res_dyn = tuple(range(len(expected.shape)))  # conservative: every dim `?` in the result
        from minimlir.dialects.graph import matmul_result_shape

        sa_t = [-1 if i in da else d for i, d in enumerate(sa)]
        sb_t = [-1 if i in db else d for i, d in enumerate(sb)]
        rshape = matmul_result_shape(sa_t, sb_t)
        res_dyn = tuple(i for i, d in enumerate(rshape) if d < 0)
    text = func_text(
        [ttype(sa, dynamic=da), ttype(sb, dynamic=db)],
        ttype(expected.shape, dynamic=res_dyn),
        f"graph.matmul %a0, %a1 : ({ttype(sa, dynamic=da)}, {ttype(sb, dynamic=db)}) -> "
        f"{ttype(expected.shape, dynamic=res_dyn)}",
    )
    (y,) = run_graph(text, [a, b], backend=backend)
    assert_outputs([y], [expected], rtol=1e-5, atol=1e-5)


def test_matmul_int():
    a = RNG.integers(-5, 5, (3, 4)).astype(np.int64)
    b = RNG.integers(-5, 5, (4, 2)).astype(np.int64)
    text = func_text([ttype((3, 4), "i64"), ttype((4, 2), "i64")], ttype((3, 2), "i64"),
                     "graph.matmul %a0, %a1 : (tensor<3x4xi64>, tensor<4x2xi64>) -> tensor<3x2xi64>")
    (y,) = run_graph(text, [a, b], backend="interp")
    assert_outputs([y], [a @ b])


# -- conv2d ----------------------------------------------------------------------------------

CONV_CASES = [
    # (x shape, w shape, strides, pads, dilations, group, bias)
    ((1, 3, 5, 5), (2, 3, 3, 3), (1, 1), (0, 0, 0, 0), (1, 1), 1, False),
    ((2, 3, 7, 5), (4, 3, 3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 1, True),
    ((1, 3, 7, 7), (2, 3, 3, 2), (1, 2), (2, 0, 1, 3), (2, 1), 1, True),  # asymmetric, dilation 2
    ((1, 3, 5, 7), (3, 1, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 3, True),  # depthwise
    ((1, 3, 5, 5), (6, 1, 3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 3, False),  # depthwise, multiplier 2
    ((1, 4, 5, 5), (6, 2, 2, 3), (1, 2), (0, 1, 1, 0), (2, 1), 2, True),  # 2 groups of 2 channels
]


def _conv_text(xs, ws, strides, pads, dilations, group, bias, ys, dyn=()):
    xt, wt, yt = ttype(xs, dynamic=dyn), ttype(ws), ttype(ys, dynamic=dyn)
    args = [xt, wt] + ([ttype((ws[0],))] if bias else [])
    operands = "%a0, %a1" + (", %a2" if bias else "")
    body = (f"graph.conv2d {operands} strides {list(strides)} pads {list(pads)} "
            f"dilations {list(dilations)} group {group} : ({', '.join(args)}) -> {yt}")
    return func_text(args, yt, body)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("xs,ws,strides,pads,dilations,group,bias", CONV_CASES)
def test_conv2d(backend, xs, ws, strides, pads, dilations, group, bias):
    x, w = rand(*xs), rand(*ws)
    b = rand(ws[0]) if bias else None
    expected = conv_ref(x, w, b, strides, pads, dilations, group)
    text = _conv_text(xs, ws, strides, pads, dilations, group, bias, expected.shape)
    (y,) = run_graph(text, [x, w] + ([b] if bias else []), backend=backend)
    assert_outputs([y], [expected], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", [1, 2, 4])
def test_conv2d_dynamic_batch_and_spatial(backend, case):
    xs, ws, strides, pads, dilations, group, bias = CONV_CASES[case]
    x, w = rand(*xs), rand(*ws)
    b = rand(ws[0]) if bias else None
    expected = conv_ref(x, w, b, strides, pads, dilations, group)
    text = _conv_text(xs, ws, strides, pads, dilations, group, bias, expected.shape, dyn=(0, 2, 3))
    (y,) = run_graph(text, [x, w] + ([b] if bias else []), backend=backend)
    assert_outputs([y], [expected], rtol=1e-4, atol=1e-5)


def test_conv2d_unpadded_loads_stay_affine():
    from minimlir.dialects import mem
    from minimlir.passes.loop.schedule.affine import indices_of

    xs, ws = (1, 3, 5, 5), (2, 3, 3, 3)
    module = legalize(_conv_text(xs, ws, (2, 1), (0, 0, 0, 0), (2, 1), 1, False, (1, 2, 1, 3)))
    loads = [op for op in module.walk() if isinstance(op, mem.LoadOp)]
    assert loads and all(indices_of(op) is not None for op in loads)
    assert not any(op.name in ("arith.select", "arith.minsi") for op in module.walk())


# -- pools -----------------------------------------------------------------------------------

POOL_CASES = [
    # (x shape, kernel, strides, pads, dilations, ceil_mode)
    ((1, 3, 5, 5), (2, 2), (2, 2), (0, 0, 0, 0), (1, 1), False),
    ((2, 3, 7, 5), (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), False),
    ((1, 3, 7, 7), (3, 2), (2, 2), (1, 0, 1, 1), (1, 1), True),
    ((1, 3, 6, 5), (3, 3), (2, 2), (0, 0, 0, 0), (1, 1), True),
    ((1, 2, 7, 7), (2, 3), (1, 2), (1, 1, 0, 1), (2, 2), False),  # dilation 2
    ((1, 2, 7, 6), (2, 2), (3, 2), (1, 0, 1, 1), (2, 1), True),  # dilation + ceil_mode
]


def _pool_text(kind, xs, kernel, strides, pads, dilations, ceil_mode, include_pad, ys, dyn=()):
    xt, yt = ttype(xs, dynamic=dyn), ttype(ys, dynamic=dyn)
    attrs = [f"ceil_mode = {str(ceil_mode).lower()}"]
    extra = ""
    if kind == "max" or tuple(dilations) != (1, 1):
        extra = f" dilations {list(dilations)}"
    if kind == "max":
        op = "graph.max_pool2d"
    else:
        attrs.append(f"count_include_pad = {str(include_pad).lower()}")
        op = "graph.avg_pool2d"
    body = (f"{op} %a0 kernel {list(kernel)} strides {list(strides)} pads {list(pads)}{extra} "
            f"{{{', '.join(attrs)}}} : {xt} -> {yt}")
    return func_text([xt], yt, body)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("xs,kernel,strides,pads,dilations,ceil_mode", POOL_CASES)
def test_max_pool2d(backend, xs, kernel, strides, pads, dilations, ceil_mode):
    x = rand(*xs)
    expected = pool_ref(x, "max", kernel, strides, pads, dilations, ceil_mode)
    text = _pool_text("max", xs, kernel, strides, pads, dilations, ceil_mode, False, expected.shape)
    (y,) = run_graph(text, [x], backend=backend)
    assert_outputs([y], [expected])


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("include_pad", [False, True])
@pytest.mark.parametrize("xs,kernel,strides,pads,dilations,ceil_mode", POOL_CASES)
def test_avg_pool2d(backend, xs, kernel, strides, pads, dilations, ceil_mode, include_pad):
    x = rand(*xs)
    expected = pool_ref(x, "avg", kernel, strides, pads, dilations, ceil_mode, include_pad)
    text = _pool_text("avg", xs, kernel, strides, pads, dilations, ceil_mode, include_pad,
                      expected.shape)
    (y,) = run_graph(text, [x], backend=backend)
    assert_outputs([y], [expected], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kind,include_pad", [("max", False), ("avg", False), ("avg", True)])
def test_pool2d_dynamic(backend, kind, include_pad):
    xs, kernel, strides, pads, dilations, ceil_mode = POOL_CASES[2]
    x = rand(*xs)
    expected = pool_ref(x, kind, kernel, strides, pads, dilations, ceil_mode, include_pad)
    text = _pool_text(kind, xs, kernel, strides, pads, dilations, ceil_mode, include_pad,
                      expected.shape, dyn=(0, 2, 3))
    (y,) = run_graph(text, [x], backend=backend)
    assert_outputs([y], [expected], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kind,include_pad", [("max", False), ("avg", False), ("avg", True)])
@pytest.mark.parametrize("case", [1, 2, 3, 5])
def test_pool_reference_matches_onnxruntime(kind, include_pad, case):
    xs, kernel, strides, pads, dilations, ceil_mode = POOL_CASES[case]
    x = rand(*xs)
    ours = pool_ref(x, kind, kernel, strides, pads, dilations, ceil_mode, include_pad)
    theirs = ort_pool(x, kind, kernel, strides, pads, dilations, ceil_mode, include_pad)
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kind", ["avg", "max"])
@pytest.mark.parametrize("xs,dyn", [((2, 3, 5, 7), ()), ((2, 3, 5), (0, 2)), ((1, 2, 3, 2, 5), (0, 3))])
def test_global_pool(backend, kind, xs, dyn):
    x = rand(*xs)
    axes = tuple(range(2, len(xs)))
    expected = x.mean(axis=axes, keepdims=True) if kind == "avg" else x.max(axis=axes, keepdims=True)
    xt, yt = ttype(xs, dynamic=dyn), ttype(expected.shape, dynamic=tuple(d for d in dyn if d < 2))
    text = func_text([xt], yt, f"graph.global_{kind}_pool %a0 : {xt} -> {yt}")
    (y,) = run_graph(text, [x], backend=backend)
    assert_outputs([y], [expected], rtol=1e-5, atol=1e-6)


def test_identical_convs_share_one_kernel():
    xt, wt, yt = ttype((1, 3, 5, 5)), ttype((2, 3, 3, 3)), ttype((1, 2, 3, 3))
    text = (f"func.func @main(%x: {xt}, %w: {wt}, %v: {wt}) -> ({yt}, {yt}) {{\n"
            f"  %a = graph.conv2d %x, %w : ({xt}, {wt}) -> {yt}\n"
            f"  %b = graph.conv2d %x, %v : ({xt}, {wt}) -> {yt}\n"
            f"  func.return %a, %b : {yt}, {yt}\n}}\n")
    module = legalize(text)
    kernels = [op for op in module.ops if loop.is_kernel(op)]
    assert len(kernels) == 1
