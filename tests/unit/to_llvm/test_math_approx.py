"""convert-math-to-polynomials (passes/to_llvm/math_approx.py): accuracy of the exp/tanh/erf expansions
(vector lanes and the scalar remainder) over a dense sweep of f32 inputs against float64 NumPy, the
special values, and the coefficients' derivation. Bounds (max error in f32 ulp): exp <= 2, tanh <= 3, erf <= 3."""

from __future__ import annotations

import math

import numpy as np
import pytest

from minimlir.passes.to_llvm import math_approx as ma

N = (1 << 21) + 5  # every 2048th f32 bit pattern: all exponents, both signs, subnormals; the
# last 5 (not a whole vector) in the vector loop's scalar remainder, which gets the same expansion


@pytest.fixture(scope="module")
def kernels():
    """One compiled model computing Exp, Tanh and Erf of a [N] input, with the final IR text."""
    from onnx import TensorProto, helper

    from minimlir.frontend import compile as compile_model

    nodes = [helper.make_node(op, ["x"], [o]) for op, o in (("Exp", "e"), ("Tanh", "t"), ("Erf", "r"))]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [N])],
                          [helper.make_tensor_value_info(o, TensorProto.FLOAT, [N]) for o in "etr"])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    stages: list[str] = []
    compiled = compile_model(m.SerializeToString(), cache=False, print_ir=lambda stage, text: stages.append(text))
    return compiled, stages[-1]


def _sweep() -> np.ndarray:
    x = (np.arange(N, dtype=np.uint64) * 2048 + 7).astype(np.uint32).view(np.float32)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 1.1754942e-38, 88.72283, 88.72284,
                        88.7229, 89.0, 89.5, -87.33654, -87.33655, -103.27893, -103.972, -104.0, -104.5,
                        0.55, np.nextafter(np.float32(0.55), np.float32(0)), 0.9, np.nextafter(np.float32(0.9),
                        np.float32(0)), 3.92, np.nextafter(np.float32(3.92), np.float32(0)), 9.0, 1e30, -1e30],
                       np.float32)
    x = x.copy()
    x[: len(special)] = special
    x[-5:] = special[[2, 4, 8, 12, 16]]  # inf, nan, 88.72284 ... in the scalar remainder
    return x


def _ulp(y: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """|y - ref| in units of the f32 spacing at ref (0 where y is ref rounded, NaN for NaN)."""
    with np.errstate(over="ignore", invalid="ignore"):
        r32 = ref.astype(np.float32)
        err = np.abs(y.astype(np.float64) - ref) / np.spacing(np.abs(r32)).astype(np.float64)
    err[(y == r32) | (np.isnan(y) & np.isnan(ref))] = 0.0
    err[np.isnan(y) != np.isnan(ref)] = np.inf
    return err


def test_no_libm_calls_remain(kernels):
    _, final = kernels
    for fn in ("@expf", "@tanhf", "@erff", "llvm.intr.exp("):
        assert fn not in final


def test_accuracy_sweep(kernels):
    compiled, _ = kernels
    x = _sweep()
    e, t, r = (np.asarray(v) for v in compiled(x))
    with np.errstate(over="ignore", invalid="ignore"):  # NaN payloads; exp overflowing to inf
        x64 = x.astype(np.float64)
        ref_exp = np.exp(x64)
    near = np.abs(x64) < 8  # erf is +-1 in f32 beyond, and math.erf per element is slow
    ref_erf = np.where(np.isnan(x64), np.nan, np.sign(x64))
    ref_erf[near] = [math.erf(v) for v in x64[near]]
    bounds = {"exp": 2.0, "tanh": 3.0, "erf": 3.0}
    for name, y, ref in (("exp", e, ref_exp), ("tanh", t, np.tanh(x64)), ("erf", r, ref_erf)):
        err = _ulp(y, ref)
        worst = int(np.argmax(err))
        assert err[worst] <= bounds[name], f"{name}({x[worst]!r}) = {y[worst]!r}, want {ref[worst]!r}: {err[worst]} ulp"


def test_special_values(kernels):
    compiled, _ = kernels
    x = np.zeros(N, np.float32)
    x[:6] = [np.inf, -np.inf, np.nan, -0.0, 89.0, -104.0]
    x[-5:] = [np.inf, -np.inf, np.nan, -0.0, 89.0]  # the scalar remainder
    out = [np.asarray(v) for v in compiled(x)]
    for part in (slice(0, 6), slice(N - 5, N)):
        e, t, r = (v[part] for v in out)
        assert e[0] == np.inf and e[1] == 0.0 and np.isnan(e[2]) and e[3] == 1.0 and e[4] == np.inf
        assert t[0] == 1.0 and t[1] == -1.0 and np.isnan(t[2]) and t[3] == 0.0 and np.signbit(t[3])
        assert r[0] == 1.0 and r[1] == -1.0 and np.isnan(r[2]) and r[3] == 0.0 and np.signbit(r[3])
    assert out[0][5] == 0.0


def _lawson(t, target, scale, deg, iters=60):
    a = np.vander(t, deg + 1, increasing=True)
    w = np.ones_like(t) / len(t)
    for _ in range(iters):
        sw = np.sqrt(w) / scale
        c, *_ = np.linalg.lstsq(a * sw[:, None], target * sw, rcond=None)
        w = w * np.abs(a @ c - target) / scale
        w /= w.sum()
    return c


def _cheb(a, b, n=4000):
    k = np.arange(n)
    return (a + b) / 2 + (b - a) / 2 * np.cos(np.pi * (k + 0.5) / n)


def test_coefficients_are_the_documented_fit():
    r = _cheb(-math.log(2) / 2, math.log(2) / 2)
    r = r[np.abs(r) > 1e-6]
    fits = {"EXP_Q": _lawson(r, (np.expm1(r) - r) / r**2, np.exp(r) / r**2, 4)}
    x = _cheb(1e-4, ma.TANH_SMALL)
    s = x * x
    fits["TANH_P"] = _lawson(s, (np.tanh(x) / x - 1) / s, np.tanh(x) / x / s, 5)
    x = _cheb(1e-4, ma.ERF_SMALL)
    ex = np.array([math.erf(v) for v in x])
    fits["ERF_P"] = _lawson(x * x, ex / x, ex / x, 6)
    x = _cheb(ma.ERF_SMALL, ma.ERF_ONE)
    ec = np.array([math.erfc(v) for v in x])
    fits["ERFC_LOG"] = _lawson(x, np.log(ec), (1 - ec) / ec, 6)
    for name, fit in fits.items():
        np.testing.assert_allclose(getattr(ma, name), fit.astype(np.float32), rtol=1e-5, err_msg=name)
