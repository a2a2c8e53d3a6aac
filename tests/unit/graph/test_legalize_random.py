"""graph.random: its legalization against an independent NumPy model of the generator (splitmix64
of the seed's key and the element's row-major index; uniform = top bits scaled to [0, 1), normal =
Box-Muller on draws 2k and 2k + 1), in the reference interpreter and natively (the default,
scheduled pipeline); the verifier; the i64 element ops it is built from."""

from __future__ import annotations

import numpy as np
import pytest
from minimlir.compiler.interpreter import BACKENDS, run_graph, tensor_type as tt
from xdsl.dialects.builtin import IndexType, TensorType, f32, i32
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.test_value import create_ssa_value

from minimlir.dialects import elementfn, graph

_GAMMA = np.uint64(0x9E3779B97F4A7C15)


def _mix(z: np.ndarray) -> np.ndarray:
    z = z.astype(np.uint64)
    with np.errstate(over="ignore"):
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def _bits(seed: int, counters: np.ndarray) -> np.ndarray:
    key = _mix(np.array([seed % 2**64], np.uint64))[0]
    with np.errstate(over="ignore"):
        return _mix(key + (counters.astype(np.uint64) + np.uint64(1)) * _GAMMA)


def _unit(bits: np.ndarray, dtype) -> np.ndarray:
    m = {np.float16: 11, np.float32: 24, np.float64: 53}[dtype]
    return (bits >> np.uint64(64 - m)).astype(dtype) * dtype(2.0**-m)


def reference(distribution: str, a: float, b: float, seed: int, shape, dtype) -> np.ndarray:
    """The generator, written again in NumPy (uint64 arithmetic wraps like the kernel's i64)."""
    k = np.arange(int(np.prod(shape)), dtype=np.uint64)
    if distribution == "uniform":
        u = _unit(_bits(seed, k), dtype)
        y = u if (a, b) == (0.0, 1.0) else dtype(a) + u * dtype(b - a)
        return y.reshape(shape)
    ct = np.float64 if dtype == np.float64 else np.float32
    u1, u2 = _unit(_bits(seed, 2 * k), ct), _unit(_bits(seed, 2 * k + 1), ct)
    z = np.sqrt(ct(-2.0) * np.log(ct(1.0) - u1)) * np.cos(ct(2.0 * np.pi) * u2)
    return (ct(a) + ct(b) * z).astype(dtype).reshape(shape)


_ELT = {np.float16: "f16", np.float32: "f32", np.float64: "f64"}


def _program(distribution, a, b, seed, shape, dtype, dynamic=()):
    """@main(%x: the shape, dynamic dims `?`) -> graph.random of x's shape."""
    t = tt(shape, _ELT[dtype], dynamic)
    dims = "".join(f"  %d{i} = graph.dim %x, {i} : {t}\n" for i in dynamic)
    operands = f" dims({', '.join(f'%d{i}' for i in dynamic)})" if dynamic else ""
    return (f"func.func @main(%x: {t}) -> {t} {{\n{dims}"
            f"  %r = graph.random \"{distribution}\"({a}, {b}) seed {seed}{operands} : {t}\n"
            f"  func.return %r : {t}\n}}\n")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("shape,dynamic,seed,a,b", [
    ((7,), (0,), 0, 0.0, 1.0),
    ((3, 5), (1,), 42, -2.0, 3.0),
    ((2, 3, 4), (0, 2), -(2**63), 0.0, 1.0),
])
def test_uniform_is_the_reference_bit_for_bit(backend, dtype, shape, dynamic, seed, a, b):
    x = np.zeros(shape, dtype)
    (y,) = run_graph(_program("uniform", a, b, seed, shape, dtype, dynamic), [x], backend=backend)
    want = reference("uniform", a, b, seed, shape, dtype)
    assert y.dtype == dtype and y.shape == shape
    np.testing.assert_array_equal(y, want)
    assert (y >= a).all() and (y < b).all()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype,rtol", [(np.float16, 1e-3), (np.float32, 2e-6), (np.float64, 1e-12)])
def test_normal_matches_the_reference(backend, dtype, rtol):
    shape = (4, 9)
    x = np.zeros(shape, dtype)
    (y,) = run_graph(_program("normal", 1.5, 0.5, 7, shape, dtype, (0,)), [x], backend=backend)
    want = reference("normal", 1.5, 0.5, 7, shape, dtype)
    assert y.dtype == dtype
    np.testing.assert_allclose(y.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=rtol)


def test_a_larger_dim_appends_elements_and_the_schedule_does_not_matter():
    """Element k depends on (seed, k) only: a 1-D result of 5000 elements (a parallel, tiled
    kernel in the default pipeline) starts with the 3 elements of the small one."""
    small = run_graph(_program("uniform", 0.0, 1.0, 3, (3,), np.float32, (0,)), [np.zeros(3, np.float32)],
                      backend="native")[0]
    big = run_graph(_program("uniform", 0.0, 1.0, 3, (5000,), np.float32, (0,)), [np.zeros(5000, np.float32)],
                    backend="native")[0]
    np.testing.assert_array_equal(big[:3], small)
    np.testing.assert_array_equal(big, reference("uniform", 0.0, 1.0, 3, (5000,), np.float32))


def test_seed_key_is_mix64():
    assert elementfn.mix64(0) == int(_mix(np.array([0], np.uint64))[0]) == 0
    assert elementfn.mix64(2**64 - 1) == int(_mix(np.array([2**64 - 1], np.uint64))[0])


def test_verifier():
    n = create_ssa_value(IndexType())
    graph.RandomOp(TensorType(f32, [graph.DYNAMIC, 4]), "normal", 0.0, 1.0, 5, [n]).verify()
    with pytest.raises(VerifyException, match="distribution must be"):
        graph.RandomOp(TensorType(f32, [4]), "gamma", 0.0, 1.0, 5).verify()
    with pytest.raises(VerifyException, match="must be f16, f32 or f64"):
        graph.RandomOp(TensorType(i32, [4]), "uniform", 0.0, 1.0, 5).verify()
    with pytest.raises(VerifyException, match="one per `\\?`"):
        graph.RandomOp(TensorType(f32, [graph.DYNAMIC]), "uniform", 0.0, 1.0, 5).verify()
