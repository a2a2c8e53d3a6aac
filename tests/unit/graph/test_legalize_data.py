"""graph-legalize of the data-movement ops, executed against NumPy (static, dynamic, odd sizes)."""

from __future__ import annotations

import numpy as np
import pytest
from minimlir.compiler.interpreter import BACKENDS, assert_outputs, legalize, run_graph, tensor_type as tt

from minimlir.dialects import graph, mem
from minimlir.passes.loop.schedule.affine import indices_of

RNG = np.random.default_rng(11)
INT64_MAX, INT64_MIN = 2**63 - 1, -(2**63)


def rand(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def one_op(args, results, body):
    """`@main(%a0, …) -> results` whose body defines %r (or %r#k for several results)."""
    sig = ", ".join(f"%a{i}: {t}" for i, t in enumerate(args))
    n = len(results)
    lhs = "%r" if n == 1 else f"%r:{n}"
    rets = "%r" if n == 1 else ", ".join(f"%r#{k}" for k in range(n))
    rt = ", ".join(results)
    return (f"func.func @main({sig}) -> ({rt}) {{\n  {lhs} = {body}\n"
            f"  func.return {rets} : {rt}\n}}\n")


def all_loads_affine(text):
    module = legalize(text)
    return all(indices_of(op) is not None for op in module.walk() if isinstance(op, mem.LoadOp))


# -- transpose -------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("shape,perm,dyn", [
    ((3, 5), (1, 0), ()),
    ((2, 3, 5), (2, 0, 1), (0, 2)),
    ((2, 1, 3, 2), (3, 1, 0, 2), (0,)),
])
def test_transpose(backend, shape, perm, dyn):
    x = rand(*shape)
    y_shape = [shape[p] for p in perm]
    ydyn = tuple(k for k, p in enumerate(perm) if p in dyn)
    text = one_op([tt(shape, dynamic=dyn)], [tt(y_shape, dynamic=ydyn)],
                  f"graph.transpose %a0 perm {list(perm)} : {tt(shape, dynamic=dyn)} -> {tt(y_shape, dynamic=ydyn)}")
    (y,) = run_graph(text, [x], backend=backend)
    assert_outputs([y], [np.transpose(x, perm)])
    assert all_loads_affine(text)


# -- concat / split --------------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("shapes,axis,dyn", [
    (((2, 3), (2, 5)), 1, ()),
    (((1, 3), (3, 3), (2, 3)), 0, ()),
    (((2, 3), (2, 1), (2, 4)), 1, ((1,), (), (0, 1))),  # dynamic concat axis and other dim
])
def test_concat(backend, shapes, axis, dyn):
    xs = [rand(*s) for s in shapes]
    dyn = dyn or tuple(() for _ in shapes)
    expected = np.concatenate(xs, axis)
    in_types = [tt(s, dynamic=d) for s, d in zip(shapes, dyn)]
    rdyn = tuple(sorted({i for d in dyn for i in d if i == axis}
                        | {i for i in range(len(shapes[0])) if i != axis and all(i in d for d in dyn)}))
    out_t = tt(expected.shape, dynamic=rdyn)
    ops = ", ".join(f"%a{i}" for i in range(len(xs)))
    text = one_op(in_types, [out_t], f"graph.concat {ops} axis {axis} : ({', '.join(in_types)}) -> {out_t}")
    (y,) = run_graph(text, xs, backend=backend)
    assert_outputs([y], [expected])
    assert all_loads_affine(text)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("shape,axis,sizes,dyn", [
    ((3, 7), 1, (2, 5), ()),
    ((5, 2), 0, (1, 3, 1), ()),
    ((2, 7), 1, (2, -1, -1), (1,)),  # ONNX num_outputs style: rest 5 -> 3, 2
    ((4, 3), 0, (1, -1), (0,)),  # dynamic input axis, static + dynamic pieces
])
def test_split(backend, shape, axis, sizes, dyn):
    x = rand(*shape)
    d = shape[axis]
    rest = d - sum(s for s in sizes if s >= 0)
    k = sum(1 for s in sizes if s < 0)
    share = -(-rest // k) if k else 0
    actual_sizes, seen = [], 0
    for s in sizes:
        if s >= 0:
            actual_sizes.append(s)
        else:
            seen += 1
            actual_sizes.append(share if seen < k else rest - share * (k - 1))
    expected = np.split(x, np.cumsum(actual_sizes)[:-1], axis)
    xt = tt(shape, dynamic=dyn)
    rts = []
    for s in sizes:
        rshape = list(shape)
        rshape[axis] = max(s, 0)
        rdyn = tuple(i for i in dyn if i != axis) + ((axis,) if s < 0 else ())
        rts.append(tt(rshape, dynamic=rdyn))
    text = one_op([xt], rts, f"graph.split %a0 axis {axis} sizes {list(sizes)} : {xt} -> {', '.join(rts)}")
    ys = run_graph(text, [x], backend=backend)
    assert_outputs(ys, expected)


# -- slice -----------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("shape,starts,ends,steps,dyn,np_slices", [
    ((5, 7), (1, 0), (4, 7), (1, 2), (), (slice(1, 4), slice(0, 7, 2))),
    ((5, 7), (4, 6), (-1, 0), (-1, -3), (), (slice(4, None, -1), slice(6, 0, -3))),
    # dynamic dims take raw ONNX values: negatives count from the end, INT64_MAX/MIN = "to the end"
    ((5, 7), (-4, 1), (INT64_MAX, INT64_MAX), (2, 3), (0, 1), (slice(-4, None, 2), slice(1, None, 3))),
    ((5, 7), (-1, 100), (INT64_MIN, -8), (-2, -1), (0, 1), (slice(-1, None, -2), slice(100, -8, -1))),
    ((6, 3), (2, 0), (-1, 3), (1, 1), (0,), (slice(2, -1), slice(0, 3))),
    ((4, 3), (3, 0), (9, 3), (1, 1), (0,), (slice(3, 9), slice(0, 3))),  # clamped end
    ((4, 3), (3, 0), (1, 3), (1, 1), (0,), (slice(3, 1), slice(0, 3))),  # empty
])
def test_slice(backend, shape, starts, ends, steps, dyn, np_slices):
    x = rand(*shape)
    expected = x[np_slices]
    xt = tt(shape, dynamic=dyn)
    yt = tt(expected.shape, dynamic=dyn)
    text = one_op([xt], [yt], f"graph.slice %a0 starts {list(starts)} ends {list(ends)} "
                              f"steps {list(steps)} : {xt} -> {yt}")
    (y,) = run_graph(text, [x], backend=backend)
    assert_outputs([y], [expected])
    assert all_loads_affine(text)


# -- gather ----------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("shape,ind,axis,elt,dyn", [
    ((5, 3), [[0, 4], [-1, 2], [-5, 1]], 0, "i64", ()),
    ((2, 5, 3), [3, -2, 0, 4], 1, "i32", (0,)),
    ((3, 4), 2, 1, "i64", ()),  # scalar index drops the axis
    ((4, 3), [1, -1], 0, "i32", (0, 1)),
])
def test_gather(backend, shape, ind, axis, elt, dyn):
    x = rand(*shape)
    idx = np.array(ind, dtype=np.int64 if elt == "i64" else np.int32)
    expected = np.take(x, idx, axis=axis)
    xt = tt(shape, dynamic=dyn)
    it = tt(idx.shape, elt)
    rdyn = tuple(i if i < axis else i - 1 + idx.ndim for i in dyn if i != axis)
    yt = tt(expected.shape, dynamic=rdyn)
    text = one_op([xt, it], [yt], f"graph.gather %a0, %a1 axis {axis} : ({xt}, {it}) -> {yt}")
    (y,) = run_graph(text, [x, idx], backend=backend)
    assert_outputs([y], [expected])


# -- pad -------------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("shape,pads,mode,value,dyn", [
    ((3, 5), (1, 2, 0, 3), "constant", 1.5, ()),
    ((3, 5), (2, -1, -1, 2), "constant", 0.0, ()),  # negative pads crop
    ((3, 5), (1, 2, 0, 3), "constant", -2.0, (0, 1)),
    ((3, 5), (2, 3, 1, 4), "reflect", 0.0, ()),
    ((4, 3), (3, 0, 2, 2), "reflect", 0.0, (0,)),
    ((3, 5), (2, 0, 3, 1), "edge", 0.0, ()),
    ((1, 2, 3), (0, 1, 4, 0, 3, 0), "edge", 0.0, (1, 2)),
])
def test_pad(backend, shape, pads, mode, value, dyn):
    x = rand(*shape)
    r = len(shape)
    begin, end = pads[:r], pads[r:]
    crop = tuple(slice(max(0, -b), s - max(0, -e)) for b, e, s in zip(begin, end, shape))
    width = [(max(b, 0), max(e, 0)) for b, e in zip(begin, end)]
    kw = {"constant_values": value} if mode == "constant" else {}
    expected = np.pad(x[crop], width, mode=mode, **kw)
    xt, yt = tt(shape, dynamic=dyn), tt(expected.shape, dynamic=dyn)
    text = one_op([xt], [yt], f'graph.pad %a0 pads {list(pads)} mode "{mode}" value {float(value)} : {xt} -> {yt}')
    (y,) = run_graph(text, [x], backend=backend)
    assert_outputs([y], [expected])
    if mode == "constant":
        assert all_loads_affine(text)


def test_pad_int_constant():
    x = RNG.integers(-9, 9, (2, 3)).astype(np.int32)
    text = one_op([tt((2, 3), "i32")], [tt((4, 4), "i32")],
                  'graph.pad %a0 pads [1, 0, 1, 1] mode "constant" value 7.0 : tensor<2x3xi32> -> tensor<4x4xi32>')
    (y,) = run_graph(text, [x], backend="interp")
    assert_outputs([y], [np.pad(x, ((1, 1), (0, 1)), constant_values=7)])


# -- broadcast_to / tile / trilu -------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_broadcast_to_static(backend):
    x = rand(3, 1)
    text = one_op([tt((3, 1))], [tt((2, 3, 5))],
                  "graph.broadcast_to %a0 : tensor<3x1xf32> -> tensor<2x3x5xf32>")
    (y,) = run_graph(text, [x], backend=backend)
    assert_outputs([y], [np.broadcast_to(x, (2, 3, 5))])
    assert all_loads_affine(text)


BCAST_DYN = """
func.func @main(%x: tensor<?x1xf32>, %y: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %n = graph.dim %y, 0 : tensor<?x?xf32>
  %m = graph.dim %y, 1 : tensor<?x?xf32>
  %r = graph.broadcast_to %x dims(%n, %m) : tensor<?x1xf32> -> tensor<?x?xf32>
  func.return %r : tensor<?x?xf32>
}
"""

BCAST_SAME = """
func.func @main(%x: tensor<?x1xf32>) -> tensor<?x4xf32> {
  %n = graph.dim %x, 0 : tensor<?x1xf32>
  %r = graph.broadcast_to %x dims(%n) : tensor<?x1xf32> -> tensor<?x4xf32>
  func.return %r : tensor<?x4xf32>
}
"""


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("rows", [1, 3])  # a `?` that is 1 at run time broadcasts
def test_broadcast_to_dynamic(backend, rows):
    x, shape_src = rand(rows, 1), rand(3, 4)
    (y,) = run_graph(BCAST_DYN, [x, shape_src], backend=backend)
    assert_outputs([y], [np.broadcast_to(x, (3, 4))])


@pytest.mark.parametrize("backend", BACKENDS)
def test_broadcast_to_same_dynamic_dim_is_affine(backend):
    x = rand(3, 1)
    (y,) = run_graph(BCAST_SAME, [x], backend=backend)
    assert_outputs([y], [np.broadcast_to(x, (3, 4))])
    assert all_loads_affine(BCAST_SAME)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("shape,repeats,dyn", [
    ((2, 3), (3, 1), ()),
    ((1, 3, 2), (2, 2, 3), ()),
    ((3, 2), (2, 3), (0, 1)),
])
def test_tile(backend, shape, repeats, dyn):
    x = rand(*shape)
    expected = np.tile(x, repeats)
    xt, yt = tt(shape, dynamic=dyn), tt(expected.shape, dynamic=dyn)
    text = one_op([xt], [yt], f"graph.tile %a0 repeats {list(repeats)} : {xt} -> {yt}")
    (y,) = run_graph(text, [x], backend=backend)
    assert_outputs([y], [expected])
    if not dyn:
        assert all_loads_affine(text)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("shape,upper,k,dyn", [
    ((4, 5), True, 0, ()),
    ((4, 5), False, 0, ()),
    ((2, 5, 3), True, 1, (0, 1)),
    ((3, 4), False, -1, (1,)),
    ((3, 4), True, -2, ()),
])
def test_trilu(backend, shape, upper, k, dyn):
    x = rand(*shape)
    expected = np.triu(x, k) if upper else np.tril(x, k)
    xt = tt(shape, dynamic=dyn)
    text = one_op([xt], [xt], f"graph.trilu %a0 k {k} {{upper = {str(upper).lower()}}} : {xt}")
    (y,) = run_graph(text, [x], backend=backend)
    assert_outputs([y], [expected])
    assert all_loads_affine(text)


# -- range / shape / from_dims ---------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("elt,start,limit,delta", [
    ("f32", 0.5, 3.2, 0.7),
    ("f32", 3.0, -1.0, -1.5),
    ("i64", 2, 11, 3),
    ("i64", 10, -3, -4),
    ("i32", 5, 5, 1),  # empty
    ("i64", 5, 1, 2),  # wrong direction: empty
])
def test_range(backend, elt, start, limit, delta):
    dt = {"f32": np.float32, "i64": np.int64, "i32": np.int32}[elt]
    s, l, d = (np.array(v, dtype=dt) for v in (start, limit, delta))
    # ONNX Range: n = max(ceil((limit - start) / delta), 0), y[i] = start + i * delta
    n = max(int(np.ceil((float(l) - float(s)) / float(d))), 0)
    expected = (s + np.arange(n).astype(dt) * d).astype(dt)
    st = f"tensor<{elt}>"
    text = one_op([st] * 3, [f"tensor<?x{elt}>"],
                  f"graph.range %a0, %a1, %a2 : ({st}, {st}, {st}) -> tensor<?x{elt}>")
    (y,) = run_graph(text, [s, l, d], backend=backend)
    assert_outputs([y], [expected])


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("shape,dyn", [((3, 1, 5), (0, 2)), ((2,), ()), ((), ())])
def test_shape(backend, shape, dyn):
    x = rand(*shape)
    xt = tt(shape, dynamic=dyn)
    rt = f"tensor<{len(shape)}xi64>"
    text = one_op([xt], [rt], f"graph.shape %a0 : {xt} -> {rt}")
    (y,) = run_graph(text, [x], backend=backend)
    assert_outputs([y], [np.array(shape, dtype=np.int64)])


FROM_DIMS = """
func.func @main(%x: tensor<?x3x?xf32>) -> tensor<3xi64> {
  %a = graph.dim %x, 0 : tensor<?x3x?xf32>
  %b = graph.dim %x, 2 : tensor<?x3x?xf32>
  %c = arith.muli %a, %b : index
  %r = graph.from_dims(%b, %c, %a) : tensor<3xi64>
  func.return %r : tensor<3xi64>
}
"""


@pytest.mark.parametrize("backend", BACKENDS)
def test_from_dims_stays_at_graph_level(backend):
    module = legalize(FROM_DIMS)
    assert any(isinstance(op, graph.FromDimsOp) for op in module.walk())
    (y,) = run_graph(FROM_DIMS, [rand(2, 3, 5)], backend=backend)
    assert_outputs([y], [np.array([5, 10, 2], dtype=np.int64)])
