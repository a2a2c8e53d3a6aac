"""graph-strength-reduce against onnxruntime: Pow by a constant 1, 2, 3 (multiplies) and 0.5 (kept as
powf) give onnxruntime's bits, specials included, through one compile."""

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from minimlir.frontend import compile


def _model(dtype: int, np_dtype) -> onnx.ModelProto:
    exps = [1.0, 2.0, 3.0, 0.5]
    nodes = [helper.make_node("Pow", ["x", f"e{k}"], [f"y{k}"]) for k in range(len(exps))]
    inits = [numpy_helper.from_array(np.array(e, np_dtype), f"e{k}") for k, e in enumerate(exps)]
    g = helper.make_graph(
        nodes, "pow", [helper.make_tensor_value_info("x", dtype, ["n", 7])],
        [helper.make_tensor_value_info(f"y{k}", dtype, ["n", 7]) for k in range(len(exps))], inits,
    )
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 15)], ir_version=8)


def test_pow_by_small_constants_matches_onnxruntime_bitwise(tmp_path):
    for dtype, np_dtype in [(TensorProto.FLOAT, np.float32), (TensorProto.DOUBLE, np.float64)]:
        path = tmp_path / f"pow_{np.dtype(np_dtype).name}.onnx"
        onnx.save(_model(dtype, np_dtype), path)
        x = (np.random.default_rng(1).standard_normal((3, 7)) * 50).astype(np_dtype)
        x[0] = [np.nan, np.inf, -np.inf, -0.0, 0.0, 1e30, -1e-30]
        ref = ort.InferenceSession(str(path)).run(None, {"x": x})
        m = compile(path, cache=False)
        got = m(x)
        for k, (r, g) in enumerate(zip(ref, got)):
            assert np.array_equal(r, g, equal_nan=True), (np_dtype, k)


def test_div_by_constant_matches_onnxruntime(tmp_path):
    """x / 4 (a multiply by 0.25: the same bits as onnxruntime's division) and GELU's erf(x / sqrt 2)
    (a multiply by the rounded 1/sqrt 2 feeding erf) through one compile; x / 3 stays a division."""
    c = {"four": 4.0, "s2": 1.4142135, "three": 3.0, "one": 1.0, "half": 0.5}
    nodes = [
        helper.make_node("Div", ["x", "four"], ["q"]),
        helper.make_node("Div", ["x", "three"], ["t"]),
        helper.make_node("Div", ["x", "s2"], ["d"]), helper.make_node("Erf", ["d"], ["e"]),
        helper.make_node("Add", ["e", "one"], ["e1"]), helper.make_node("Mul", ["x", "e1"], ["g"]),
        helper.make_node("Mul", ["g", "half"], ["gelu"]),
    ]
    inits = [numpy_helper.from_array(np.array(v, np.float32), k) for k, v in c.items()]
    g = helper.make_graph(
        nodes, "div", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 64])],
        [helper.make_tensor_value_info(k, TensorProto.FLOAT, ["n", 64]) for k in ("q", "t", "gelu")], inits,
    )
    path = tmp_path / "div.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)
    x = (np.random.default_rng(2).standard_normal((5, 64)) * 3).astype(np.float32)
    x[0, :8] = [np.nan, np.inf, -np.inf, -0.0, 0.0, 1e30, -1e-30, 3e-39]
    q, t, gelu = ort.InferenceSession(str(path)).run(None, {"x": x})
    got = compile(path, cache=False)(x)
    assert np.array_equal(got[0], q, equal_nan=True)
    assert np.array_equal(got[1], t, equal_nan=True)
    # (below x = -3, x * (1 + erf) cancels: erf's few ulp of 1 times |x| is the absolute error)
    np.testing.assert_allclose(got[2], gelu, rtol=2e-6, atol=4 * 2.0**-24 * np.nanmax(np.abs(x[1:])))


def test_patch_conv_as_matmul_matches_onnxruntime(tmp_path):
    """An image conv whose windows tile it (kernel = strides: a ViT's patch embedding), with and
    without a bias, non-square patches, batch 2, becomes a matmul and computes onnxruntime's conv."""
    from minimlir.compiler import driver
    from minimlir.frontend.onnx_import import import_onnx

    rng = np.random.default_rng(3)
    inits = [numpy_helper.from_array((rng.standard_normal((24, 3, 4, 8)) * 0.1).astype(np.float32), "w"),
             numpy_helper.from_array(rng.standard_normal(24).astype(np.float32), "b")]
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["y"], kernel_shape=[4, 8], strides=[4, 8]),
             helper.make_node("Conv", ["x", "w"], ["z"], kernel_shape=[4, 8], strides=[4, 8])]
    g = helper.make_graph(nodes, "patch", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 32, 64])],
                          [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in "yz"], inits)
    path = tmp_path / "patch.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)
    module = import_onnx(path, embed_weights=True)[0]
    driver.lower(module, "graph-strength-reduce")
    text = str(module)
    assert "graph.conv2d" not in text and text.count("graph.matmul") == 2
    x = rng.standard_normal((2, 3, 32, 64)).astype(np.float32)
    ref = ort.InferenceSession(str(path)).run(None, {"x": x})
    got = compile(path, cache=False)(x)
    for r, g_ in zip(ref, got):
        np.testing.assert_allclose(g_, r, rtol=1e-4, atol=1e-4)


def _gelu_tanh_model(forms: dict[str, list], dtype=TensorProto.FLOAT, np_dtype=np.float32) -> onnx.ModelProto:
    consts = {"one": 1.0, "half": 0.5, "k": 0.044715, "three": 3.0, "sp": 0.7978846, "k2": 0.05}
    inits = [numpy_helper.from_array(np.array(v, np_dtype), k) for k, v in consts.items()]
    nodes = [n for ns in forms.values() for n in ns]
    g = helper.make_graph(nodes, "gelu", [helper.make_tensor_value_info("x", dtype, ["n", 64])],
                          [helper.make_tensor_value_info(k, dtype, ["n", 64]) for k in forms], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def _gelu_forms() -> dict[str, list]:
    """GELU's tanh approximation as the exporters write it, in four orders; and two near misses."""
    mk = helper.make_node

    def inner(p: str, cube: list, k: str = "k") -> list:  # sqrt(2/pi) * (x + k * x^3) -> {p}u
        return [*cube, mk("Mul", [f"{p}c", k], [f"{p}kc"]), mk("Add", ["x", f"{p}kc"], [f"{p}s"]),
                mk("Mul", [f"{p}s", "sp"], [f"{p}u"]), mk("Tanh", [f"{p}u"], [f"{p}t"])]

    pow3 = lambda p: [mk("Pow", ["x", "three"], [f"{p}c"])]  # noqa: E731
    muls = lambda p: [mk("Mul", ["x", "x"], [f"{p}x2"]), mk("Mul", ["x", f"{p}x2"], [f"{p}c"])]  # noqa: E731
    return {
        # torch.onnx (dynamo): (x * 0.5) * (tanh(u) + 1)
        "torch": [*inner("a", pow3("a")), mk("Add", ["at", "one"], ["a1"]), mk("Mul", ["x", "half"], ["ah"]),
                  mk("Mul", ["ah", "a1"], ["torch"])],
        # (x * (1 + tanh(u))) * 0.5, x^3 as two multiplies
        "late_half": [*inner("b", muls("b")), mk("Add", ["one", "bt"], ["b1"]), mk("Mul", ["x", "b1"], ["bg"]),
                      mk("Mul", ["bg", "half"], ["late_half"])],
        # x * (0.5 * (1 + tanh(u)))
        "half_first": [*inner("c", pow3("c")), mk("Add", ["ct", "one"], ["c1"]), mk("Mul", ["half", "c1"], ["ch"]),
                       mk("Mul", ["ch", "x"], ["half_first"])],
        # near misses: 0.05 for 0.044715, and 0.5 * (1 + tanh(u)) without the x
        "wrong_k": [*inner("d", pow3("d"), "k2"), mk("Add", ["dt", "one"], ["d1"]), mk("Mul", ["x", "half"], ["dh"]),
                    mk("Mul", ["dh", "d1"], ["wrong_k"])],
        "no_x": [*inner("e", pow3("e")), mk("Add", ["et", "one"], ["e1"]), mk("Mul", ["e1", "half"], ["no_x"])],
    }


def test_tanh_gelu_is_recognized_in_the_exporters_orders():
    """The three GELU forms become one graph.gelu each; the near misses keep their tanh."""
    from minimlir.compiler import driver
    from minimlir.dialects import graph
    from minimlir.frontend.onnx_import import import_onnx

    module = import_onnx(_gelu_tanh_model(_gelu_forms()), embed_weights=True)[0]
    driver.lower(module, "graph-strength-reduce")
    ops = [o for o in module.walk()]
    gelus = [o for o in ops if isinstance(o, graph.GeluOp)]
    assert len(gelus) == 3 and all(g.approximate.data == "tanh" and g.input.name_hint == "x" for g in gelus)
    assert sum(isinstance(o, graph.TanhOp) for o in ops) == 2  # wrong_k and no_x
    assert not any(isinstance(o, graph.PowOp) for o in ops)  # the recognized forms' cubes are gone


def test_tanh_gelu_matches_onnxruntime_and_float64(tmp_path):
    """Recognized or not, every form computes onnxruntime's values; the GELU, x / (1 + exp(a)),
    a = -2u, is within (|a| + 4) ulp of float64 across the range (exp's condition number |a| times
    the rounding of a in f32, plus the few ulp of the exp and the division), including x < -3 where
    the tanh form (and onnxruntime) lose their digits to 1 + tanh(u) ~ 0; it keeps NaN and +-0 / inf."""
    path = tmp_path / "gelu.onnx"
    onnx.save(_gelu_tanh_model(_gelu_forms()), path)
    x = (np.random.default_rng(4).standard_normal((6, 64)) * 3).astype(np.float32)
    x[0, :6] = [np.nan, np.inf, -0.0, 0.0, 1e30, -1e-30]
    x[1] = np.linspace(-12, 4, 64, dtype=np.float32)
    ref = ort.InferenceSession(str(path)).run(None, {"x": x})
    got = compile(path, cache=False)(x)
    for k, (r, g) in enumerate(zip(ref, got)):
        np.testing.assert_allclose(g, r, rtol=2e-6, atol=4 * 2.0**-24 * np.nanmax(np.abs(x[1:])), err_msg=str(k))
    x64 = x.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        a = -2 * np.sqrt(2 / np.pi) * (x64 + 0.044715 * x64**3)
        exact = x64 / (1 + np.exp(a))
        exact[0, 1] = np.inf
    bound = (np.abs(a) + 4) * 2.0**-23 * np.abs(exact) + 1e-37
    for g in got[:3]:
        assert np.array_equal(np.isnan(g), np.isnan(exact))
        ok = np.isfinite(exact)
        assert np.all(np.abs(g[ok] - exact[ok]) <= bound[ok]), np.max(np.abs(g[ok] - exact[ok]) / bound[ok])
        assert g[0, 1] == np.inf
        assert np.signbit(g[0, 2]) and not np.signbit(g[0, 3])  # -0 -> -0, 0 -> 0
