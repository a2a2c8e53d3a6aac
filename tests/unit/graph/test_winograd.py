"""graph-winograd: 3x3 stride-1 convs as Winograd's F(2x2, 3x3). The input transform op against a
numpy reference on both backends (NCHW and channel-blocked input, padding, odd sizes); whole
models against onnxruntime with and without graph-layout (the blocked and the NCHW form), odd and
asymmetric padding, batch 2, no bias, a residual add fused after it; the default pipeline applies
it to a 64-channel 14x14 conv and lifts the filter transform to load time."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from minimlir.compiler import driver
from minimlir.compiler.interpreter import BACKENDS, assert_outputs, run_graph, tensor_type as ttype
from minimlir.compiler.pipelines import expand
from minimlir.frontend import compile
from minimlir.frontend.api import load
from minimlir.passes.graph.winograd import AT, BT, G

RNG = np.random.default_rng(11)
SMALL = "graph-winograd{min-channels=8 min-pixels=1}"


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def input_transform_ref(x: np.ndarray, pads, tiles) -> np.ndarray:
    """V[4a + b, (n*th + i)*tw + j, c] = (B^T d B)[a, b], d the 4x4 window at (2i - pt, 2j - pl)."""
    n, c, h, w = x.shape
    th, tw = tiles
    xp = np.zeros((n, c, 2 * th + 2, 2 * tw + 2), np.float64)
    rows, cols = min(h, 2 * th + 2 - pads[0]), min(w, 2 * tw + 2 - pads[1])
    xp[:, :, pads[0]:pads[0] + rows, pads[1]:pads[1] + cols] = x[:, :, :rows, :cols]
    v = np.zeros((16, n * th * tw, c))
    for i in range(th):
        for j in range(tw):
            d = xp[:, :, 2 * i:2 * i + 4, 2 * j:2 * j + 4]  # (n, c, 4, 4)
            t = np.einsum("ab,ncbd,ed->naec", BT, d, BT).reshape(n, 16, c)
            v[:, np.arange(n) * th * tw + i * tw + j, :] = t.transpose(1, 0, 2)
    return v.astype(np.float32)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("shape,pads,tiles,block", [
    ((1, 3, 6, 6), (1, 1), (3, 3), 0),    # whole tiles, zero border
    ((2, 5, 7, 5), (1, 0), (4, 2), 0),    # odd rows: the last tile reads past the input (zeros)
    ((1, 16, 5, 6), (2, 1), (3, 3), 8),   # channel-blocked input (N, C/8, H, W, 8)
])
def test_input_transform_matches_numpy(backend, shape, pads, tiles, block):
    x = rand(*shape)
    xin = x.reshape(shape[0], shape[1] // block, block, *shape[2:]).transpose(0, 1, 3, 4, 2) if block else x
    ref = input_transform_ref(x, pads, tiles)
    text = f"""
    func.func @f(%x: {ttype(xin.shape)}) -> {ttype(ref.shape)} {{
      %v = graph.winograd_input %x pads {list(pads)} tiles {list(tiles)} : {ttype(xin.shape)} -> {ttype(ref.shape)}
      func.return %v : {ttype(ref.shape)}
    }}"""
    assert_outputs(run_graph(text, [np.ascontiguousarray(xin)], backend), [ref], rtol=1e-5, atol=1e-5)


def test_transform_matrices_compute_a_convolution():
    """A^T [(G g G^T) * (B^T d B)] A is the 2x2 valid correlation of a 4x4 tile with a 3x3 filter."""
    d, g = RNG.standard_normal((4, 4)), RNG.standard_normal((3, 3))
    y = AT @ ((G @ g @ G.T) * (BT @ d @ BT.T)) @ AT.T
    direct = np.array([[np.sum(d[r:r + 3, s:s + 3] * g) for s in range(2)] for r in range(2)])
    np.testing.assert_allclose(y, direct, rtol=1e-5, atol=1e-5)


def _model(path, n, c, k, h, w, pads=(1, 1, 1, 1), bias=True, residual=False):
    w1 = (RNG.standard_normal((k, c, 3, 3)) / np.sqrt(9 * c)).astype(np.float32)
    inits = [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(rand(k), "b")]
    nodes = [helper.make_node("Conv", ["x", "w1"] + (["b"] if bias else []), ["c"], pads=list(pads))]
    out = "c"
    if residual:  # y = relu(conv(x) + x)
        nodes.append(helper.make_node("Add", ["c", "x"], ["s"]))
        out = "s"
    nodes.append(helper.make_node("Relu", [out], ["y"]))
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n, c, h, w])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


def _ops(path, pipeline: str) -> list[str]:
    module = load(path).module
    driver.lower(module, pipeline)
    return [op.name for op in module.walk()]


@pytest.mark.parametrize("layout", [True, False], ids=["blocked", "nchw"])
@pytest.mark.parametrize("case", [
    dict(n=2, c=16, k=24, h=7, w=9),                              # odd size: the last tile cropped
    dict(n=1, c=16, k=16, h=10, w=11, pads=(0, 2, 1, 0)),         # asymmetric padding
    dict(n=1, c=16, k=16, h=8, w=8, bias=False, residual=True),   # no bias, a residual add after it
], ids=["odd", "asymmetric", "residual"])
def test_models_match_onnxruntime(tmp_path, case, layout):
    path = str(_model(tmp_path / "m.onnx", **case))
    pipeline = expand("compile").replace("graph-winograd,", SMALL + ",")
    front = "graph-strength-reduce,graph-layout," + SMALL
    if not layout:
        pipeline, front = pipeline.replace("graph-layout,", ""), front.replace("graph-layout,", "")
    ops = _ops(path, front)
    assert "graph.winograd_input" in ops and "graph.conv2d" not in ops
    x = rand(case["n"], case["c"], case["h"], case["w"])
    ours = compile(path, cache=False, pipeline=pipeline)(x)[0]
    ref = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(ours, ref, rtol=1e-4, atol=1e-4)


def test_default_pipeline_takes_wide_convs_and_lifts_the_filter_transform(tmp_path):
    path = str(_model(tmp_path / "wide.onnx", 1, 64, 64, 14, 14, residual=True))
    front = expand("compile-whole-module").split(",graph-pack-weights")[0]  # (…, graph-layout, graph-winograd)
    assert front.endswith("graph-winograd")
    assert "graph.winograd_input" in _ops(path, front)
    model = compile(path, cache=False)
    (u,) = [v for v in model.program.lifted_params().values() if v.shape == (16, 64, 64)]
    w = numpy_helper.to_array(onnx.load(path).graph.initializer[0])
    np.testing.assert_allclose(u, np.einsum("xi,kcij,yj->xyck", G, w, G).reshape(16, 64, 64), rtol=1e-5, atol=1e-6)
    x = rand(1, 64, 14, 14)
    ref = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(model(x)[0], ref, rtol=1e-4, atol=1e-4)
    # narrower convs and smaller maps keep the direct conv
    for args in ((1, 32, 64, 14, 14), (1, 64, 64, 7, 7)):
        small = str(_model(tmp_path / "small.onnx", *args))
        assert "graph.winograd_input" not in _ops(small, front)
