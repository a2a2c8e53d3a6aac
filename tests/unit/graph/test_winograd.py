"""graph-winograd: 3x3 stride-1 convs as Winograd's F(2x2, 3x3) and F(4x4, 3x3). The transform
matrices against the direct correlation; the input transform op against a numpy reference on both
backends (NCHW and channel-blocked input, padding, odd sizes, both tiles), and the output transform
op (the tiles interleaved, cropped, blocked); whole models against
onnxruntime with and without graph-layout (the blocked and the NCHW form), odd and asymmetric
padding, batch 2, no bias, a residual add fused after it, both tiles; the default pipeline applies
F(2x2) to a 64-channel 14x14 conv and F(4x4) at 28x28, and lifts the filter transform to load time."""

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
from minimlir.passes.graph.winograd import TRANSFORMS

RNG = np.random.default_rng(11)
SMALL = "graph-winograd{min-channels=1 min-pixels=1}"


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def input_transform_ref(x: np.ndarray, pads, tiles, m: int = 2) -> np.ndarray:
    """V[r*a + b, (n*th + i)*tw + j, c] = (B^T d B)[a, b], d the r x r window (r = m + 2) at
    (m*i - pt, m*j - pl)."""
    n, c, h, w = x.shape
    th, tw = tiles
    r, bt = m + 2, TRANSFORMS[m][0]
    xp = np.zeros((n, c, m * th + 2, m * tw + 2), np.float64)
    rows, cols = min(h, m * th + 2 - pads[0]), min(w, m * tw + 2 - pads[1])
    xp[:, :, pads[0]:pads[0] + rows, pads[1]:pads[1] + cols] = x[:, :, :rows, :cols]
    v = np.zeros((r * r, n * th * tw, c))
    for i in range(th):
        for j in range(tw):
            d = xp[:, :, m * i:m * i + r, m * j:m * j + r]  # (n, c, r, r)
            t = np.einsum("ab,ncbd,ed->naec", bt, d, bt).reshape(n, r * r, c)
            v[:, np.arange(n) * th * tw + i * tw + j, :] = t.transpose(1, 0, 2)
    return v.astype(np.float32)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("shape,pads,tiles,block,m", [
    ((1, 3, 6, 6), (1, 1), (3, 3), 0, 2),    # whole tiles, zero border
    ((2, 5, 7, 5), (1, 0), (4, 2), 0, 2),    # odd rows: the last tile reads past the input (zeros)
    ((1, 16, 5, 6), (2, 1), (3, 3), 8, 2),   # channel-blocked input (N, C/8, H, W, 8)
    ((1, 3, 9, 7), (1, 1), (3, 2), 0, 4),    # F(4x4): 6x6 windows, the last ones past the input
    ((2, 16, 8, 8), (0, 2), (2, 2), 8, 4),   # F(4x4), blocked, batch 2
])
def test_input_transform_matches_numpy(backend, shape, pads, tiles, block, m):
    x = rand(*shape)
    xin = x.reshape(shape[0], shape[1] // block, block, *shape[2:]).transpose(0, 1, 3, 4, 2) if block else x
    ref = input_transform_ref(x, pads, tiles, m)
    attr = f" tile {m}" if m != 2 else ""
    text = f"""
    func.func @f(%x: {ttype(xin.shape)}) -> {ttype(ref.shape)} {{
      %v = graph.winograd_input %x pads {list(pads)} tiles {list(tiles)}{attr} : {ttype(xin.shape)} -> {ttype(ref.shape)}
      func.return %v : {ttype(ref.shape)}
    }}"""
    assert_outputs(run_graph(text, [np.ascontiguousarray(xin)], backend), [ref], rtol=1e-5, atol=1e-4)


def output_transform_ref(prod: np.ndarray, tiles, size, m: int, block: int) -> np.ndarray:
    """Y[n, k, m*i + p, m*j + q] = (A^T M A)[p, q] of tile (n, i, j), cropped to `size`; blocked
    (N, K/B, OH, OW, B) with a block."""
    th, tw = tiles
    r, at = m + 2, TRANSFORMS[m][2]
    k = prod.shape[2]
    n = prod.shape[1] // (th * tw)
    t = prod.astype(np.float64).reshape(r, r, n, th, tw, k)
    y = np.einsum("pa,abnijk,qb->nkipjq", at, t, at).reshape(n, k, m * th, m * tw)[:, :, :size[0], :size[1]]
    if block:
        y = y.reshape(n, k // block, block, *size).transpose(0, 1, 3, 4, 2)
    return np.ascontiguousarray(y).astype(np.float32)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("n,k,tiles,size,m,block", [
    (1, 3, (3, 3), (6, 6), 2, 0),     # whole tiles
    (2, 5, (4, 2), (7, 3), 2, 0),     # odd rows and columns: the last tiles' extra ones dropped
    (1, 16, (2, 3), (7, 10), 4, 8),   # F(4x4), blocked, cropped
])
def test_output_transform_matches_numpy(backend, n, k, tiles, size, m, block):
    prod = rand((m + 2) ** 2, n * tiles[0] * tiles[1], k)
    ref = output_transform_ref(prod, tiles, size, m, block)
    attrs = (f" tile {m}" if m != 2 else "") + (f" block {block}" if block else "")
    text = f"""
    func.func @f(%m: {ttype(prod.shape)}) -> {ttype(ref.shape)} {{
      %y = graph.winograd_output %m tiles {list(tiles)} size {list(size)}{attrs} : {ttype(prod.shape)} -> {ttype(ref.shape)}
      func.return %y : {ttype(ref.shape)}
    }}"""
    assert_outputs(run_graph(text, [prod], backend), [ref], rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("m", sorted(TRANSFORMS))
def test_transform_matrices_compute_a_convolution(m):
    """A^T [(G g G^T) * (B^T d B)] A is the m x m valid correlation of an (m+2)^2 tile with a 3x3 filter."""
    bt, gm, at = TRANSFORMS[m]
    d, g = RNG.standard_normal((m + 2, m + 2)), RNG.standard_normal((3, 3))
    y = at @ ((gm @ g @ gm.T) * (bt @ d @ bt.T)) @ at.T
    direct = np.array([[np.sum(d[r:r + 3, s:s + 3] * g) for s in range(m)] for r in range(m)])
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
@pytest.mark.parametrize("case,m", [
    (dict(n=2, c=16, k=24, h=7, w=9), 2),                              # odd size: the last tile cropped
    (dict(n=1, c=16, k=16, h=10, w=11, pads=(0, 2, 1, 0)), 2),         # asymmetric padding
    (dict(n=1, c=16, k=16, h=8, w=8, bias=False, residual=True), 2),   # no bias, a residual add after it
    (dict(n=2, c=16, k=24, h=9, w=10), 4),                             # F(4x4), cropped rows and columns
    # what a tuning database may choose below the thresholds (tuning/algorithms.py)
    (dict(n=1, c=1, k=1, h=1, w=1), 4),                                # one pixel: one tile, mostly padding
    (dict(n=1, c=3, k=5, h=3, w=4, pads=(0, 0, 0, 0)), 2),             # no padding: a 1x2 output
    (dict(n=1, c=16, k=16, h=5, w=5, pads=(0, 0, 0, 0)), 4),           # a 3x3 output in one ragged tile
    (dict(n=1, c=24, k=8, h=6, w=7), 4),                               # channels not a whole vector block
], ids=["odd", "asymmetric", "residual", "f4", "one-pixel", "valid", "valid-f4", "ragged-channels"])
def test_models_match_onnxruntime(tmp_path, case, m, layout):
    path = str(_model(tmp_path / "m.onnx", **case))
    small = SMALL.replace("}", f" tile={m}}}")
    pipeline = expand("compile").replace("graph-winograd,", small + ",")
    front = "graph-strength-reduce,graph-layout," + small
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
    g = TRANSFORMS[2][1]
    np.testing.assert_allclose(u, np.einsum("xi,kcij,yj->xyck", g, w, g).reshape(16, 64, 64), rtol=1e-5, atol=1e-6)
    x = rand(1, 64, 14, 14)
    ref = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(model(x)[0], ref, rtol=1e-4, atol=1e-4)
    # narrower convs and smaller maps keep the direct conv
    for args in ((1, 32, 64, 14, 14), (1, 64, 64, 7, 7)):
        small = str(_model(tmp_path / "small.onnx", *args))
        assert "graph.winograd_input" not in _ops(small, front)
    # from 28x28 on, F(4x4): 36 tile elements
    big = load(str(_model(tmp_path / "big.onnx", 1, 64, 64, 28, 28))).module
    driver.lower(big, front)
    (v,) = [op for op in big.walk() if op.name == "graph.winograd_input"]
    assert v.tile.value.data == 4 and list(v.result.type.get_shape()) == [36, 49, 64]
