"""graph-legalize of reductions and normalizations, executed against NumPy (float64 references
rounded once to the element type)."""

import numpy as np
import pytest
from minimlir.compiler.interpreter import (
    BACKENDS, assert_outputs, interpret_kernels, legalize, run_graph, tensor_type as tt,
)

from minimlir.dialects import loop, mem

RNG = np.random.default_rng(99)


def randn(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def dyn(shape, mask):
    """The shape with the dims where mask is True made dynamic."""
    return tuple(None if m else d for d, m in zip(shape, mask))


def reduced(shape, axes, keep):
    if keep:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def f64(ref, dtype=np.float32):
    return lambda *xs: np.asarray(ref(*[np.asarray(x, np.float64) for x in xs])).astype(dtype)


# -- reduce_* ----------------------------------------------------------------------------------

REDUCE = {"reduce_sum": np.sum, "reduce_mean": np.mean, "reduce_max": np.max, "reduce_min": np.min}


def reduce_fn(op, in_shape, axes, keep, elt="f32"):
    out_shape = reduced(in_shape, axes, keep)
    it, ot = tt(in_shape, elt), tt(out_shape, elt)
    attrs = "" if keep else "{keepdims = false}"
    return f"""
func.func @f(%x: {it}) -> {ot} {{
  %y = graph.{op} %x axes {list(axes)} {attrs} : {it} -> {ot}
  func.return %y : {ot}
}}"""


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("op", sorted(REDUCE))
@pytest.mark.parametrize("axes,keep", [((1,), True), ((0, 2), False), ((2,), False), ((0, 1, 2), True), ((), True)])
@pytest.mark.parametrize("dynamic", [False, True])
def test_reduce_float(op, axes, keep, dynamic, backend):
    shape = (2, 3, 7)
    x = randn(*shape)
    text = reduce_fn(op, dyn(shape, [dynamic, False, dynamic]), axes, keep)
    expected = f64(lambda v: REDUCE[op](v, axis=axes, keepdims=keep))(x) if axes else x
    assert_outputs(run_graph(text, [x], backend=backend), [expected])


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("op", ["reduce_sum", "reduce_max", "reduce_min"])
def test_reduce_int(op, backend):
    x = RNG.integers(-100, 100, size=(13, 2)).astype(np.int64)
    text = reduce_fn(op, (None, 2), (0,), False, elt="i64")
    assert_outputs(run_graph(text, [x], backend=backend), [REDUCE[op](x, axis=0)])


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("op", ["reduce_max", "reduce_min"])
def test_reduce_bool(op, backend):
    """i1: false < true (a signed max would read true as -1)."""
    x = np.array([[True, True], [True, False], [False, True], [False, False]])
    text = reduce_fn(op, (4, 2), (1,), True, elt="i1")
    assert_outputs(run_graph(text, [x], backend=backend), [REDUCE[op](x, axis=1, keepdims=True)])


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("op,elt,dtype,expected", [
    ("reduce_sum", "f32", np.float32, 0.0), ("reduce_max", "f32", np.float32, -np.inf),
    ("reduce_min", "f32", np.float32, np.inf), ("reduce_mean", "f32", np.float32, np.nan),
    ("reduce_max", "i1", np.bool_, False), ("reduce_min", "i1", np.bool_, True),
    ("reduce_max", "i32", np.int32, np.iinfo(np.int32).min), ("reduce_sum", "i64", np.int64, 0)])
def test_reduce_empty_axis_gives_the_identity(op, elt, dtype, expected, backend):
    x = np.zeros((2, 0, 3), dtype)
    text = reduce_fn(op, (2, 0, 3), (1,), True, elt=elt)
    assert_outputs(run_graph(text, [x], backend=backend), [np.full((2, 1, 3), expected, dtype)])


@pytest.mark.parametrize("backend", BACKENDS)
def test_reduce_max_propagates_nan(backend):
    x = randn(2, 3)
    x[1, 1] = np.nan
    text = reduce_fn("reduce_max", (2, 3), (1,), False)
    assert_outputs(run_graph(text, [x], backend=backend), [np.max(x, axis=1)])


def test_reduce_kernel_shape():
    """Reduced dims are innermost `reduce` vars; mean divides in a second block. A reduced dim
    that is dynamic (0 at run time would leave the result unwritten) gets an identity fill first."""
    module = legalize(reduce_fn("reduce_mean", (None, 3, 7), (0, 2), True))
    blocks = [b for b in module.walk() if isinstance(b, loop.BlockOp)]
    assert [b.block_name.data for b in blocks] == ["reduce_mean_empty", "reduce_mean", "reduce_mean_div"]
    assert blocks[1].kinds == ["spatial", "reduce", "reduce"]
    assert blocks[1].has_init and not blocks[2].has_init


# -- argmax ------------------------------------------------------------------------------------


def argmax_fn(in_shape, axis, keep, last, elt="f32"):
    out_shape = reduced(in_shape, (axis,), keep)
    it, ot = tt(in_shape, elt), tt(out_shape, "i64")
    attrs = []
    if not keep:
        attrs.append("keepdims = false")
    if last:
        attrs.append("select_last_index = true")
    attr_text = "{" + ", ".join(attrs) + "}" if attrs else ""
    return f"""
func.func @f(%x: {it}) -> {ot} {{
  %y = graph.argmax %x axis {axis} {attr_text} : {it} -> {ot}
  func.return %y : {ot}
}}"""


def np_argmax(x, axis, keep, last):
    if last:
        flipped = np.flip(x, axis=axis)
        r = x.shape[axis] - 1 - np.argmax(flipped, axis=axis)
    else:
        r = np.argmax(x, axis=axis)
    r = r.astype(np.int64)
    return np.expand_dims(r, axis) if keep else r


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("axis", [0, 1, 2])
@pytest.mark.parametrize("keep", [True, False])
@pytest.mark.parametrize("last", [False, True])
def test_argmax_ties(axis, keep, last, backend):
    # few distinct values: ties everywhere, so first vs last index matters
    x = RNG.integers(0, 3, size=(2, 7, 3)).astype(np.float32)
    text = argmax_fn(dyn((2, 7, 3), [True, False, True]), axis, keep, last)
    assert_outputs(run_graph(text, [x], backend=backend), [np_argmax(x, axis, keep, last)])


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("last", [False, True])
def test_argmax_int_and_negative(last, backend):
    x = RNG.integers(-5, 0, size=(3, 13)).astype(np.int32)
    text = argmax_fn((3, 13), 1, False, last, elt="i32")
    assert_outputs(run_graph(text, [x], backend=backend), [np_argmax(x, 1, False, last)])


@pytest.mark.parametrize("backend", BACKENDS)
def test_argmax_nan_is_max(backend):
    x = np.array([[1.0, np.nan, 5.0, np.nan], [-np.inf, -np.inf, -np.inf, -np.inf]], np.float32)
    text = argmax_fn((2, 4), 1, False, False)
    assert_outputs(run_graph(text, [x], backend=backend), [np.array([1, 0], np.int64)])


# -- softmax / log_softmax ---------------------------------------------------------------------


def softmax_ref(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def log_softmax_ref(x, axis):
    s = x - x.max(axis=axis, keepdims=True)
    return s - np.log(np.exp(s).sum(axis=axis, keepdims=True))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("op,ref", [("softmax", softmax_ref), ("log_softmax", log_softmax_ref)])
@pytest.mark.parametrize("axis", [0, 1, 2])
@pytest.mark.parametrize("dynamic", [False, True])
def test_softmax(op, ref, axis, dynamic, backend):
    shape = (2, 3, 7)
    x = randn(*shape) * 4
    x[0, 0, 0] = 80.0  # exp would overflow without the max shift
    t = tt(dyn(shape, [dynamic, dynamic, False]))
    text = f"""
func.func @f(%x: {t}) -> {t} {{
  %y = graph.{op} %x axis {axis} : {t}
  func.return %y : {t}
}}"""
    assert_outputs(run_graph(text, [x], backend=backend), [f64(lambda v: ref(v, axis))(x)])


def test_softmax_blocks_and_scratch():
    t = tt((2, 7))
    text = f"""
func.func @f(%x: {t}) -> {t} {{
  %y = graph.softmax %x axis 1 : {t}
  func.return %y : {t}
}}"""
    module = legalize(text)
    names = [b.block_name.data for b in module.walk() if isinstance(b, loop.BlockOp)]
    assert names == ["softmax_max", "softmax_exp", "softmax_sum", "softmax_rcp", "softmax_norm"]
    assert len([o for o in module.walk() if isinstance(o, mem.AllocaOp)]) == 2
    assert not any(isinstance(o, mem.AllocOp) for o in module.walk())
    dyn_text = text.replace(t, tt((None, 7)))
    module = legalize(dyn_text)
    assert len([o for o in module.walk() if isinstance(o, mem.AllocOp)]) == 2
    assert len([o for o in module.walk() if isinstance(o, mem.DeallocOp)]) == 2


# -- layer_norm --------------------------------------------------------------------------------


def layer_norm_ref(x, scale, bias, axis, eps):
    axes = tuple(range(axis, x.ndim))
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    y = (x - mean) / np.sqrt(var + eps) * scale
    return y + bias if bias is not None else y


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("axis,scale_shape", [(2, (7,)), (1, (3, 7)), (1, (1, 7)), (0, (7,))])
@pytest.mark.parametrize("with_bias", [True, False])
@pytest.mark.parametrize("dynamic", [False, True])
def test_layer_norm(axis, scale_shape, with_bias, dynamic, backend):
    shape = (2, 3, 7)
    x = randn(*shape) + 3.0
    scale, bias = randn(*scale_shape), randn(*scale_shape)
    xt = tt(dyn(shape, [dynamic, dynamic, False]))
    st = tt(scale_shape)
    operands = "%x, %g, %b" if with_bias else "%x, %g"
    types = f"{xt}, {st}, {st}" if with_bias else f"{xt}, {st}"
    text = f"""
func.func @f(%x: {xt}, %g: {st}, %b: {st}) -> {xt} {{
  %y = graph.layer_norm {operands} axis {axis} epsilon 1.0e-05 : ({types}) -> {xt}
  func.return %y : {xt}
}}"""
    expected = f64(lambda v, g, b: layer_norm_ref(v, g, b if with_bias else None, axis, 1e-5))(x, scale, bias)
    # f32 mean / centering of values ~3 is off by a few ulp(3) ~ 1e-6 absolute, carried into
    # O(1) outputs; outputs near 0 cannot meet rtol, so atol is a few such ulps, not 1e-6.
    assert_outputs(run_graph(text, [x, scale, bias], backend=backend), [expected], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("backend", BACKENDS)
def test_layer_norm_large_mean_is_stable(backend):
    """x = 1000 + N(0, 1): a one-pass E[x^2] - E[x]^2 in f32 loses ~10% of the variance (ulp of
    7e6 is 0.5); the two-pass variance is only off by the centering error ulp(1000)/2 ~ 3e-5."""
    x = randn(2, 13) + 1000.0
    g = np.ones(13, np.float32)
    text = f"""
func.func @f(%x: {tt((2, 13))}, %g: {tt((13,))}) -> {tt((2, 13))} {{
  %y = graph.layer_norm %x, %g axis 1 epsilon 1.0e-05 : ({tt((2, 13))}, {tt((13,))}) -> {tt((2, 13))}
  func.return %y : {tt((2, 13))}
}}"""
    expected = f64(lambda v, s: layer_norm_ref(v, s, None, 1, 1e-5))(x, g)
    assert_outputs(run_graph(text, [x, g], backend=backend), [expected], rtol=0, atol=2e-4)


@pytest.mark.parametrize("backend", BACKENDS)
def test_layer_norm_dynamic_scale(backend):
    """A `?` scale dim may be 1 at run time (broadcast to the normalized shape)."""
    x, scale = randn(3, 7), randn(1)
    text = f"""
func.func @f(%x: {tt((3, None))}, %g: {tt((None,))}) -> {tt((3, None))} {{
  %y = graph.layer_norm %x, %g axis 1 epsilon 1.0e-03 : ({tt((3, None))}, {tt((None,))}) -> {tt((3, None))}
  func.return %y : {tt((3, None))}
}}"""
    expected = f64(lambda v, g: layer_norm_ref(v, g, None, 1, 1e-3))(x, scale)
    assert_outputs(run_graph(text, [x, scale], backend=backend), [expected])


# -- batch_norm --------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("shape,dynamic", [((2, 3), False), ((2, 3, 5), True), ((1, 7, 2, 3), True)])
def test_batch_norm(shape, dynamic, backend):
    x = randn(*shape)
    c = shape[1]
    scale, bias, mean = randn(c), randn(c), randn(c)
    var = np.abs(randn(c)) + 0.5
    xt = tt(dyn(shape, [dynamic] + [False] * (len(shape) - 1)))
    ct = tt((c,))
    text = f"""
func.func @f(%x: {xt}, %s: {ct}, %b: {ct}, %m: {ct}, %v: {ct}) -> {xt} {{
  %y = graph.batch_norm %x, %s, %b, %m, %v epsilon 1.0e-05 : ({xt}, {ct}, {ct}, {ct}, {ct}) -> {xt}
  func.return %y : {xt}
}}"""
    bshape = (1, c) + (1,) * (len(shape) - 2)

    def ref(x, s, b, m, v):
        r = lambda a: a.reshape(bshape)  # noqa: E731
        return (x - r(m)) / np.sqrt(r(v) + 1e-5) * r(s) + r(b)

    expected = f64(ref)(x, scale, bias, mean, var)
    assert_outputs(run_graph(text, [x, scale, bias, mean, var], backend=backend), [expected])


# -- lrn ---------------------------------------------------------------------------------------


def lrn_ref(x, size, alpha, beta, bias):
    c = x.shape[1]
    sq = np.zeros_like(x)
    lo, hi = (size - 1) // 2, int(np.ceil((size - 1) / 2))
    for ch in range(c):
        a, b = max(0, ch - lo), min(c - 1, ch + hi)
        sq[:, ch] = (x[:, a: b + 1] ** 2).sum(axis=1)
    return x / (bias + alpha / size * sq) ** beta


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("size", [1, 2, 3, 5])
@pytest.mark.parametrize("dynamic", [False, True])
def test_lrn(size, dynamic, backend):
    shape = (2, 7, 3, 2)
    x = randn(*shape)
    t = tt(dyn(shape, [dynamic, dynamic, False, dynamic]))
    text = f"""
func.func @f(%x: {t}) -> {t} {{
  %y = graph.lrn %x size {size} alpha 0.5 beta 0.75 bias 2.0 : {t}
  func.return %y : {t}
}}"""
    expected = f64(lambda v: lrn_ref(v, size, 0.5, 0.75, 2.0))(x)
    assert_outputs(run_graph(text, [x], backend=backend), [expected])


@pytest.mark.parametrize("backend", BACKENDS)
def test_reduce_to_rank0_and_argmax_of_vector(backend):
    x = randn(2, 3)
    text = reduce_fn("reduce_sum", (2, 3), (0, 1), False)
    assert_outputs(run_graph(text, [x], backend=backend), [f64(np.sum)(x)])
    v = np.array([1, 5, 2, 5, -1, 0, 5], np.float32)
    for last in (False, True):
        text = argmax_fn((None,), 0, False, last)
        assert_outputs(run_graph(text, [v], backend=backend), [np_argmax(v, 0, False, last)])


# -- the interpreter itself (it is the oracle for schedule primitives) --------------------------

TILED_SUM = """
func.func private @k(%x: memref<2x8xf32>, %y: memref<2xf32>) attributes {loop.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  loop.for %i = %c0 to %c2 step %c1 {
    loop.for %ko = %c0 to %c2 step %c1 {
      loop.for %ki = %c0 to %c4 step %c1 {
        %t = arith.muli %ko, %c4 : index
        %k = arith.addi %t, %ki : index
        loop.block "sum" (%vi = %i, %vk = %k) [spatial, reduce] {
          %a = mem.load %y[%vi] : memref<2xf32> -> f32
          %b = mem.load %x[%vi, %vk] : memref<2x8xf32> -> f32
          %s = arith.addf %a, %b : f32
          mem.store %s, %y[%vi] : f32, memref<2xf32>
        } init {
          %z = arith.constant 0.0 : f32
          mem.store %z, %y[%vi] : f32, memref<2xf32>
        }
      }
    }
  }
  func.return
}
"""


def test_interpreter_runs_init_once_per_spatial_point_under_split_reduce_loops():
    from minimlir.compiler.interpreter import parse

    x, y = randn(2, 8), np.full(2, 123.0, np.float32)
    interpret_kernels(parse(TILED_SUM), "k", [x, y])
    assert_outputs([y], [f64(lambda v: v.sum(axis=1))(x)])


def test_interpreter_reports_out_of_bounds_access():
    from minimlir.compiler.interpreter import InterpError, parse

    text = TILED_SUM.replace("memref<2x8xf32>", "memref<2x7xf32>")
    with pytest.raises(InterpError, match=r"mem.load out of bounds: index \[0, 7\] into shape \[2, 7\]"):
        interpret_kernels(parse(text), "k", [randn(2, 7), np.zeros(2, np.float32)])
