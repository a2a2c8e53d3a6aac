"""graph-legalize of the elementwise ops, executed (interpreter and, when it works, native code)
against NumPy. Shapes are tiny and odd (1, 7, 13) on purpose; dynamic dims are fed sizes that
exercise run-time broadcasting (a `?` that is 1)."""

import math

import numpy as np
import pytest
from minimlir.compiler.interpreter import (
    BACKENDS, assert_outputs, interpret_kernels, legalize, run_graph, tensor_type as tt,
)

from minimlir.dialects import graph, loop

RNG = np.random.default_rng(1234)


def randn(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def randint(*shape, lo=-9, hi=10, dtype=np.int32):
    return RNG.integers(lo, hi, size=shape).astype(dtype)


def binary_fn(op, a_shape, b_shape, out_shape, elt="f32", out_elt=None, attrs=""):
    a, b, r = tt(a_shape, elt), tt(b_shape, elt), tt(out_shape, out_elt or elt)
    return f"""
func.func @f(%a: {a}, %b: {b}) -> {r} {{
  %r = graph.{op} %a, %b {attrs} : ({a}, {b}) -> {r}
  func.return %r : {r}
}}"""


def unary_fn(op, shape, elt="f32", attrs=""):
    t = tt(shape, elt)
    return f"""
func.func @f(%x: {t}) -> {t} {{
  %y = graph.{op} %x {attrs} : {t}
  func.return %y : {t}
}}"""


def c_div(a, b):
    q = np.abs(a) // np.abs(b)
    return np.where((a < 0) != (b < 0), -q, q).astype(a.dtype)


def f32(ref):
    """Reference computed in float64, rounded once to float32."""
    return lambda *xs: np.asarray(ref(*[x.astype(np.float64) for x in xs])).astype(np.float32)


# -- binary, float, with broadcasting ----------------------------------------------------------

FLOAT_BINARY = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": np.divide,
    "max": np.maximum,
    "min": np.minimum,
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("op", sorted(FLOAT_BINARY))
def test_float_binary_broadcast(op, backend):
    a, b = randn(2, 3, 7), randn(3, 1)
    text = binary_fn(op, (2, 3, 7), (3, 1), (2, 3, 7))
    assert_outputs(run_graph(text, [a, b], backend=backend), [FLOAT_BINARY[op](a, b)])


@pytest.mark.parametrize("backend", BACKENDS)
def test_pow_float(backend):
    a, b = np.abs(randn(13)) + 0.1, randn(13)
    text = binary_fn("pow", (13,), (13,), (13,))
    assert_outputs(run_graph(text, [a, b], backend=backend), [f32(np.power)(a, b)])


# -- binary, integer ---------------------------------------------------------------------------

INT_BINARY = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": c_div,  # ONNX / C: toward zero
    "max": np.maximum,
    "min": np.minimum,
    "and": np.bitwise_and,
    "or": np.bitwise_or,
    "xor": np.bitwise_xor,
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("op", sorted(INT_BINARY))
def test_int_binary(op, backend):
    a = randint(2, 7)
    b = randint(7)
    b[b == 0] = 3
    text = binary_fn(op, (2, 7), (7,), (2, 7), elt="i32")
    assert_outputs(run_graph(text, [a, b], backend=backend), [INT_BINARY[op](a, b)])


@pytest.mark.parametrize("backend", BACKENDS)
def test_pow_int(backend):
    a, b = randint(7, lo=-4, hi=5, dtype=np.int64), randint(7, lo=0, hi=6, dtype=np.int64)
    text = binary_fn("pow", (7,), (7,), (7,), elt="i64")
    assert_outputs(run_graph(text, [a, b], backend=backend), [np.power(a, b)])


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("op,ref", [("and", np.logical_and), ("or", np.logical_or), ("xor", np.logical_xor),
                                    ("max", np.logical_or), ("min", np.logical_and)])
def test_bool_binary(op, ref, backend):
    a = np.array([[True, False, True, False]])
    b = np.array([[True], [False]])
    text = binary_fn(op, (1, 4), (2, 1), (2, 4), elt="i1")
    assert_outputs(run_graph(text, [a, b], backend=backend), [ref(a, b)])


# -- mod ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("elt,dtype,fmod", [("i32", np.int32, False), ("i32", np.int32, True),
                                            ("i64", np.int64, False), ("i64", np.int64, True),
                                            ("f32", np.float32, True)])  # ONNX: float mod needs fmod=1
def test_mod(elt, dtype, fmod, backend):
    if dtype == np.float32:
        a = (randn(13) * 10).astype(np.float32)
        b = np.array([3.5, -3.5, 2.0, -2.0, 0.75, 1.0, -1.25, 7.0, -7.0, 3.0, 0.5, -0.5, 5.5], np.float32)
        a[:4] = [7.0, -7.0, 6.0, -6.0]  # exact multiples and signs of zero
    else:
        a = randint(13, lo=-20, hi=21, dtype=dtype)
        b = np.array([3, -3, 4, -4, 5, -5, 7, -7, 2, -2, 1, -1, 6], dtype)
        a[:2] = [6, -6]
    text = binary_fn("mod", (13,), (13,), (13,), elt=elt, attrs="{fmod = true}" if fmod else "")
    expected = np.fmod(a, b) if fmod else np.mod(a, b)
    assert_outputs(run_graph(text, [a, b], backend=backend), [expected.astype(dtype)])


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype,elt", [(np.float32, "f32"), (np.float64, "f64"), (np.float16, "f16")])
def test_fmod_ieee_edge_cases(dtype, elt, backend):
    """C fmod of inf / NaN / signed zeros: fmod(finite, ±inf) = x, the sign of x also on zeros."""
    inf, nan = np.inf, np.nan
    a = np.array([0, -0.0, -3, 3, -1, 1, inf, -inf, 1, 1, nan, 1, -4, 4], dtype)
    b = np.array([-2, 2, inf, inf, -inf, -inf, 2, 2, 0, -0.0, 2, nan, 2, -2], dtype)
    text = binary_fn("mod", (14,), (14,), (14,), elt=elt, attrs="{fmod = true}")
    (y,) = run_graph(text, [a, b], backend=backend)
    with np.errstate(invalid="ignore"):
        expected = np.fmod(a, b)
    assert_outputs([y], [expected])
    real = ~np.isnan(expected)  # the sign of a NaN is not specified
    assert np.signbit(y[real]).tolist() == np.signbit(expected[real]).tolist()


# -- comparisons -------------------------------------------------------------------------------

COMPARE = {"eq": np.equal, "lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("op", sorted(COMPARE))
@pytest.mark.parametrize("elt,make", [("f32", lambda *s: np.round(randn(*s))),
                                      ("i64", lambda *s: randint(*s, lo=-2, hi=3, dtype=np.int64)),
                                      ("i1", lambda *s: RNG.integers(0, 2, size=s).astype(bool))])
def test_compare(op, elt, make, backend):
    a, b = make(3, 5), make(5)
    if elt == "f32":
        a[0, 0] = np.nan  # ordered compares: NaN compares false
    text = binary_fn(op, (3, 5), (5,), (3, 5), elt=elt, out_elt="i1")
    assert_outputs(run_graph(text, [a, b], backend=backend), [COMPARE[op](a, b)])


# -- dynamic shapes and run-time broadcasting -------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("a_shape,b_shape", [((2, 7), (2, 7)), ((2, 7), (1, 7)), ((1, 7), (2, 7)),
                                             ((2, 1), (2, 7)), ((1, 1), (1, 1))])
def test_dynamic_vs_dynamic(a_shape, b_shape, backend):
    """`?x?` + `?x?`: either side may be 1 at run time; the result dims are max(dims)."""
    a, b = randn(*a_shape), randn(*b_shape)
    text = binary_fn("sub", (None, None), (None, None), (None, None))
    assert_outputs(run_graph(text, [a, b], backend=backend), [a - b])


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("n", [1, 7])
def test_dynamic_vs_static(n, backend):
    """`?` against a static 7: the `?` operand may be 1 or 7; the static-1 operand reads index 0."""
    a, b, c = randn(n, 7), randn(7), randn(1, 1)
    text = binary_fn("mul", (None, 7), (7,), (None, 7))
    assert_outputs(run_graph(text, [a, b], backend=backend), [a * b])
    text = binary_fn("add", (None, None), (1, 1), (None, None))
    assert_outputs(run_graph(text, [a, c], backend=backend), [a + c])
    # a `?` against a static 7 where the result keeps the static 7: the `?` may be 1
    text = binary_fn("add", (None,), (2, 7), (2, 7))
    a1, b2 = randn(n), randn(2, 7)
    assert_outputs(run_graph(text, [a1, b2], backend=backend), [a1 + b2])


def test_dynamic_sole_provider_stays_affine():
    """A `?` dim that no other operand can widen is read at the plain iteration variable."""
    module = legalize(binary_fn("add", (None, 7), (1, 7), (None, 7)))
    muls = [o for o in module.walk() if o.name == "arith.muli"]
    assert muls == []
    module = legalize(binary_fn("add", (None, 7), (None, 7), (None, 7)))
    assert len([o for o in module.walk() if o.name == "arith.muli"]) == 2


def test_result_dims_max_of_dynamic_dims():
    module = legalize(binary_fn("add", (None,), (None,), (None,)))
    call = next(o for o in module.walk() if isinstance(o, graph.CallKernelOp))
    (dim,) = call.dims
    assert dim.owner.name == "arith.maxsi"
    assert {o.owner.name for o in dim.owner.operands} == {"graph.dim"}


# -- unary -------------------------------------------------------------------------------------


def _erf(x):
    return np.vectorize(math.erf)(x)


def _gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))


def _elu(x, alpha):
    return np.where(x > 0, x, alpha * np.expm1(x))


UNARY = {
    # name: (attrs, reference in float64, input transform)
    "relu": ("", lambda x: np.maximum(x, 0), None),
    "sigmoid": ("", lambda x: 1 / (1 + np.exp(-x)), None),
    "tanh": ("", np.tanh, None),
    "exp": ("", np.exp, None),
    "log": ("", np.log, np.abs),
    "sqrt": ("", np.sqrt, np.abs),
    "rsqrt": ("", lambda x: 1 / np.sqrt(x), lambda x: np.abs(x) + 0.1),
    "erf": ("", _erf, None),
    "neg": ("", np.negative, None),
    "abs": ("", np.abs, None),
    "floor": ("", np.floor, None),
    "ceil": ("", np.ceil, None),
    "sign": ("", np.sign, lambda x: np.where(np.abs(x) < 0.3, 0, x)),
    "reciprocal": ("", lambda x: 1 / x, None),
    "softplus": ("", lambda x: np.log1p(np.exp(x)), lambda x: x * 10),
    "hard_swish": ("", lambda x: x * np.clip(x / 6 + 0.5, 0, 1), lambda x: x * 4),
    "gelu": ("", lambda x: 0.5 * x * (1 + _erf(x / np.sqrt(2))), None),
    "gelu_tanh": ('approximate "tanh"', _gelu_tanh, None),
    "clip": ("min -0.5 max 0.75", lambda x: np.clip(x, -0.5, 0.75), None),
    "clip_min": ("min 0.0", lambda x: np.maximum(x, 0), None),
    "clip_max": ("max 0.25", lambda x: np.minimum(x, 0.25), None),
    "clip_none": ("", lambda x: x, None),
    "leaky_relu": ("alpha 0.1", lambda x: np.where(x >= 0, x, 0.1 * x), None),
    "elu": ("alpha 1.5", lambda x: _elu(x, 1.5), None),
    "selu": ("alpha 1.6732632423543772 gamma 1.0507009873554805",
             lambda x: 1.0507009873554805 * _elu(x, 1.6732632423543772), None),
    "hard_sigmoid": ("alpha 0.2 beta 0.5", lambda x: np.clip(0.2 * x + 0.5, 0, 1), lambda x: x * 4),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_float(name, backend):
    attrs, ref, prep = UNARY[name]
    op = name.split("_")[0] if name.startswith(("gelu", "clip")) else name
    x = randn(2, 13)
    if prep is not None:
        x = prep(x).astype(np.float32)
    (y,) = run_graph(unary_fn(op, (None, 13), attrs=attrs), [x], backend=backend)
    # libm / LLVM intrinsics are within a few ulp of the float64 reference, rounded once
    assert_outputs([y], [f32(ref)(x)], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name,ref", [("relu", lambda x: np.maximum(x, 0)), ("neg", np.negative),
                                      ("abs", np.abs), ("sign", np.sign)])
def test_unary_int(name, ref, backend):
    x = randint(7, dtype=np.int64)
    x[0] = 0
    (y,) = run_graph(unary_fn(name, (7,), elt="i64"), [x], backend=backend)
    assert_outputs([y], [ref(x)])


@pytest.mark.parametrize("backend", BACKENDS)
def test_clip_int(backend):
    x = randint(13, dtype=np.int32)
    (y,) = run_graph(unary_fn("clip", (13,), elt="i32", attrs="min -2.0 max 3.0"), [x], backend=backend)
    assert_outputs([y], [np.clip(x, -2, 3)])


@pytest.mark.parametrize("backend", BACKENDS)
def test_not(backend):
    x = np.array([[True, False, False]])
    (y,) = run_graph(unary_fn("not", (1, 3), elt="i1"), [x], backend=backend)
    assert_outputs([y], [~x])


def test_softplus_large_inputs_do_not_overflow():
    x = np.array([-100.0, -20.0, 0.0, 20.0, 100.0], np.float32)
    (y,) = run_graph(unary_fn("softplus", (5,)), [x], backend="interp")
    assert_outputs([y], [f32(lambda v: np.logaddexp(0, v))(x)])


# -- where, cast -------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_where_three_way_broadcast(backend):
    c = RNG.integers(0, 2, size=(2, 1, 5)).astype(bool)
    a, b = randn(3, 1), randn(1)
    ct, at, bt, rt = tt((2, 1, 5), "i1"), tt((3, 1)), tt((1,)), tt((2, 3, 5))
    text = f"""
func.func @f(%c: {ct}, %a: {at}, %b: {bt}) -> {rt} {{
  %r = graph.where %c, %a, %b : ({ct}, {at}, {bt}) -> {rt}
  func.return %r : {rt}
}}"""
    assert_outputs(run_graph(text, [c, a, b], backend=backend), [np.where(c, a, b)])


@pytest.mark.parametrize("backend", BACKENDS)
def test_where_dynamic(backend):
    c = np.array([True, False, True])
    a, b = randn(2, 3), randn(1)
    ct, at, bt, rt = tt((None,), "i1"), tt((None, None)), tt((None,)), tt((None, None))
    text = f"""
func.func @f(%c: {ct}, %a: {at}, %b: {bt}) -> {rt} {{
  %r = graph.where %c, %a, %b : ({ct}, {at}, {bt}) -> {rt}
  func.return %r : {rt}
}}"""
    assert_outputs(run_graph(text, [c, a, b], backend=backend), [np.where(c, a, b)])


CASTS = [
    ("f32", "i32", np.float32, np.int32),
    ("f32", "i64", np.float32, np.int64),
    ("f32", "i1", np.float32, np.bool_),
    ("f32", "f64", np.float32, np.float64),
    ("f64", "f32", np.float64, np.float32),
    ("i32", "f32", np.int32, np.float32),
    ("i64", "i32", np.int64, np.int32),
    ("i32", "i64", np.int32, np.int64),
    ("i32", "i1", np.int32, np.bool_),
    ("i1", "f32", np.bool_, np.float32),
    ("i1", "i64", np.bool_, np.int64),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("src,dst,sdt,ddt", CASTS)
def test_cast(src, dst, sdt, ddt, backend):
    if sdt == np.bool_:
        x = np.array([True, False, True, True, False, False, True])
    elif np.dtype(sdt).kind == "f":
        x = (randn(7) * 5).astype(sdt)
        x[:3] = [0.0, -2.7, 2.7]  # truncation toward zero; 0 -> false
    else:
        x = randint(7, dtype=sdt)
        x[0] = 0
    st, dt = tt((None,), src), tt((None,), dst)
    text = f"""
func.func @f(%x: {st}) -> {dt} {{
  %y = graph.cast %x : {st} -> {dt}
  func.return %y : {dt}
}}"""
    to_int = np.dtype(sdt).kind == "f" and np.dtype(ddt).kind == "i"
    expected = (x != 0) if ddt == np.bool_ else (np.trunc(x) if to_int else x).astype(ddt)
    assert_outputs(run_graph(text, [x], backend=backend), [expected])


# -- kernels -----------------------------------------------------------------------------------


def test_identical_ops_share_a_kernel_and_the_interpreter_runs_kernels_directly():
    t = tt((3,))
    text = f"""
func.func @f(%x: {t}) -> {t} {{
  %a = graph.relu %x : {t}
  %b = graph.relu %a : {t}
  func.return %b : {t}
}}"""
    module = legalize(text)
    kernels = [o for o in module.ops if loop.is_kernel(o)]
    assert [k.sym_name.data for k in kernels] == ["relu_0"]
    x, y = np.array([-1.0, 0.5, 2.0], np.float32), np.zeros(3, np.float32)
    interpret_kernels(module, "relu_0", [x, y])
    assert_outputs([y], [np.maximum(x, 0)])


def test_op_without_legalization_fails_at_its_location(monkeypatch):
    from xdsl.utils.exceptions import DiagnosticException

    from minimlir.passes.graph.legalize._common import LEGALIZATIONS
    from minimlir.passes.graph.legalize import _load_legalizations

    _load_legalizations()
    monkeypatch.delitem(LEGALIZATIONS, graph.AddOp)  # (a unary op legalizes from its class: always)
    with pytest.raises(DiagnosticException, match="failed to legalize operation 'graph.add'") as info:
        legalize(binary_fn("add", (3,), (3,), (3,)))
    assert info.value.op.name == "graph.add"
