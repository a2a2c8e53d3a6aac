"""graph-pack-weights + graph-lift-params: conv weights packed in the conv rule's panels once, when
the weights are bound, instead of in every call. Checked against numpy and onnxruntime: a conv
reading a packed weight (both backends), models whose params are packed (no packing nest left
in the kernels), a tuned panel other than the packed one, weights bound again, an artifact."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from xdsl.utils.exceptions import VerifyException

from minimlir.backend.runtime import compile_mlir_text
from _references import conv_ref

from minimlir.compiler import driver
from minimlir.compiler.interpreter import BACKENDS, assert_outputs, parse, run_graph, tensor_type as ttype
from minimlir.compiler.pipelines import expand
from minimlir.dialects import loop
from minimlir.frontend import compile

RNG = np.random.default_rng(5)


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def pack(w: np.ndarray, t: int) -> np.ndarray:
    """OIHW -> OIHW{t}o: W[o] at [o // t, …, o % t]."""
    o, c, kh, kw = w.shape
    return np.ascontiguousarray(w.reshape(o // t, t, c, kh, kw).transpose(0, 2, 3, 4, 1))


# xs, (O, C/group, KH, KW), tile, strides, pads, group
PACKED = [
    ((1, 3, 7, 7), (16, 3, 3, 3), 8, (1, 1), (1, 1, 1, 1), 1),
    ((2, 8, 9, 6), (32, 8, 1, 1), 16, (2, 1), (0, 0, 0, 0), 1),
    ((1, 8, 6, 6), (16, 4, 3, 3), 8, (1, 1), (1, 0, 1, 2), 2),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("xs,ws,tile,strides,pads,group", PACKED)
def test_conv_reads_a_packed_weight(backend, xs, ws, tile, strides, pads, group):
    x, w, b = rand(*xs), rand(*ws), rand(ws[0])
    expected = conv_ref(x, w, b, strides, pads, (1, 1), group)
    wp = pack(w, tile)
    xt, wt, bt, yt = ttype(xs), ttype(wp.shape), ttype((ws[0],)), ttype(expected.shape)
    text = (f"func.func @main(%x: {xt}, %w: {wt}, %b: {bt}) -> {yt} {{\n"
            f"  %y = graph.conv2d %x, %w, %b strides {list(strides)} pads {list(pads)} group {group} "
            f"weight_tile {tile} : ({xt}, {wt}, {bt}) -> {yt}\n  func.return %y : {yt}\n}}\n")
    (y,) = run_graph(text, [x, wp, b], backend=backend)
    assert_outputs([y], [expected], rtol=1e-4, atol=1e-5)


def test_packed_weight_shape_is_verified():
    text = ("func.func @main(%x: tensor<1x3x4x4xf32>, %w: tensor<2x3x3x3x4xf32>) -> tensor<1x16x2x2xf32> {\n"
            "  %y = graph.conv2d %x, %w weight_tile 8 : (tensor<1x3x4x4xf32>, tensor<2x3x3x3x4xf32>)"
            " -> tensor<1x16x2x2xf32>\n  func.return %y : tensor<1x16x2x2xf32>\n}\n")
    with pytest.raises(VerifyException, match=r"weight_tile 8 must have shape \(O/8, C/group, KH, KW, 8\)"):
        parse(text).verify()


def _save(path, nodes, inits, x: str, x_shape, y: str):
    """An opset-13 model of `nodes` with one float input and output, saved at `path`."""
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(x, TensorProto.FLOAT, x_shape)],
                          [helper.make_tensor_value_info(y, TensorProto.FLOAT, None)], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=8), path)
    return path


def _conv_model(path, convs, seed=0):
    """x -> conv -> relu -> conv -> … (each (O, C/group, K, group, stride)), random weights as initializers."""
    rng = np.random.default_rng(seed)
    nodes, inits, name = [], [], "x"
    for k, (o, cg, ksz, group, stride) in enumerate(convs):  # noqa: B007
        w = (rng.standard_normal((o, cg, ksz, ksz)) * 0.3).astype(np.float32)
        b = rng.standard_normal(o).astype(np.float32)
        inits += [numpy_helper.from_array(w, f"w{k}"), numpy_helper.from_array(b, f"b{k}")]
        nodes.append(helper.make_node("Conv", [name, f"w{k}", f"b{k}"], [f"c{k}"], group=group,
                                      pads=[ksz // 2] * 4, strides=[stride] * 2))
        nodes.append(helper.make_node("Relu", [f"c{k}"], [f"r{k}"]))
        name = f"r{k}"
    return _save(path, nodes, inits, "x", ["n", convs[0][1] * convs[0][3], 10, 10], name)


CONVS = [(32, 3, 3, 1, 1), (64, 32, 1, 1, 1), (64, 1, 3, 64, 1), (32, 16, 3, 4, 2), (48, 32, 3, 1, 1)]


def small_maps_as_matmuls(monkeypatch):
    """These tests' maps are small (fast to run): let their 1x1 convs take the matmul path from 4
    vectors of pixels, as they would on a 14x14 map or larger."""
    from minimlir.passes.graph import pack_weights as PW

    monkeypatch.setattr(PW, "MATMUL_MIN_PIXEL_VECTORS", 4)


def test_pointwise_convs_on_small_maps_stay_convs():
    """At 16 lanes a 1x1 conv runs as a matmul from 192 pixels (14x14: 196): on 13x13 the conv
    rule's tile is faster (SqueezeNet's 256 -> 1000 1x1 conv: 0.81 ms as a matmul, 0.60 as a conv)."""

    def ops(hw):
        x, w, y = f"tensor<1x64x{hw}x{hw}xf32>", "tensor<256x64x1x1xf32>", f"tensor<1x256x{hw}x{hw}xf32>"
        text = (f"func.func @main(%x: {x}) -> {y} {{\n  %w = graph.param \"w\" : {w}\n"
                f"  %y = graph.conv2d %x, %w : ({x}, {w}) -> {y}\n  func.return %y : {y}\n}}\n")
        m = parse(text)
        driver.lower(m, "graph-pack-weights{width=16}")
        return [o.name for o in m.walk()]

    assert "graph.matmul" in ops(14) and "graph.conv2d" not in ops(14)
    assert "graph.conv2d" in ops(13) and "graph.matmul" not in ops(13)


def test_param_convs_are_packed_once_and_match_onnxruntime(tmp_path, monkeypatch):
    """(graph-layout off: it would run the 1x1 conv blocked, not as the matmul this checks.)"""
    small_maps_as_matmuls(monkeypatch)
    path = _conv_model(tmp_path / "convs.onnx", CONVS)
    sess = ort.InferenceSession(str(path))
    m = compile(path, cache=False, pipeline=expand("compile").replace("graph-layout,", ""))
    lifted = m.program.lifted_params()
    assert len(lifted) == 3  # every conv but the depthwise one and the 1x1 one (a matmul reading W as it is)
    for x in (rand(1, 3, 10, 10), rand(3, 3, 10, 10)):
        np.testing.assert_allclose(m(x)[0], sess.run(None, {"x": x})[0], rtol=1e-4, atol=1e-4)
    # the kernels read the packed params as they are: no packing nest per call
    from minimlir.frontend.api import load

    module = load(path).module
    driver.lower(module, expand("compile-whole-module").replace("graph-layout,", "") + ",loop-schedule{lower=false}")
    blocks = [b.block_name.data for k in module.ops if "loop.kernel" in k.attributes for b in loop.blocks_of(k)]
    assert any(b.startswith("conv2d") for b in blocks)
    assert not [b for b in blocks if b.endswith("_wpack")], blocks


def check_rebinding(path, x: np.ndarray, scaled: str) -> None:
    """Compile `path`, bind its initializers whose names start with `scaled` again doubled: the
    results follow (onnxruntime on the changed model), the packed weights computed again."""
    m = compile(path, cache=False)
    before = m(x)[0]
    model = onnx.load(path)
    new = {i.name: numpy_helper.to_array(i) * (2.0 if i.name.startswith(scaled) else 1.0)
           for i in model.graph.initializer}
    for i in model.graph.initializer:
        i.CopyFrom(numpy_helper.from_array(new[i.name], i.name))
    expected = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})[0]
    m.program.bind_params({**m.program._params, **{k: v for k, v in new.items() if k in m.program._params}})
    got = m(x)[0]
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)
    assert not np.allclose(got, before)


def test_rebinding_the_weights_recomputes_the_packed_ones(tmp_path):
    """The packed weights follow bind_params (computed from the weights bound at the time)."""
    check_rebinding(_conv_model(tmp_path / "convs.onnx", CONVS[:2]), rand(2, 3, 10, 10), "w")


def test_a_tuned_panel_repacks_from_the_packed_layout():
    """loop-schedule with another panel (conv_nv=1: 8 channels) than graph-pack-weights packed
    (16): the kernel repacks from the packed weight, with the same result."""
    w, b, x = rand(32, 8, 3, 3), rand(32), rand(1, 8, 6, 6)
    text = ("func.func @main(%x: tensor<1x8x6x6xf32>) -> tensor<1x32x6x6xf32> {\n"
            '  %w = graph.param "w" : tensor<32x8x3x3xf32>\n  %b = graph.param "b" : tensor<32xf32>\n'
            "  %y = graph.conv2d %x, %w, %b pads [1, 1, 1, 1] : (tensor<1x8x6x6xf32>, tensor<32x8x3x3xf32>,"
            " tensor<32xf32>) -> tensor<1x32x6x6xf32>\n  func.return %y : tensor<1x32x6x6xf32>\n}\n")
    passes = expand("compile").split(",")
    passes[passes.index("graph-pack-weights")] = "graph-pack-weights{width=8}"
    passes[passes.index("loop-schedule")] = "loop-schedule{width=8 conv_nv=1}"
    prog = compile_mlir_text(text, pipeline=",".join(passes), params={"w": w, "b": b}, cache=False)
    expected = conv_ref(x, w, b, (1, 1), (1, 1, 1, 1), (1, 1), 1)
    assert_outputs([prog.main(x)], [expected], rtol=1e-4, atol=1e-5)
    assert set(prog.lifted_params()) == {"main:lifted0"}
    assert prog.lifted_params()["main:lifted0"].shape == (2, 8, 3, 3, 16)


def test_an_artifact_stores_the_packed_weights(tmp_path):
    from minimlir import runtime

    path = _conv_model(tmp_path / "convs.onnx", CONVS[:2])
    m = compile(path, cache=False)
    m.export(tmp_path / "convs.so")
    art = runtime.load(tmp_path / "convs.so")
    x = rand(2, 3, 10, 10)
    np.testing.assert_allclose(art(x)[0], ort.InferenceSession(str(path)).run(None, {"x": x})[0], rtol=1e-4, atol=1e-4)


def test_grouped_pointwise_conv_becomes_a_batched_matmul(tmp_path):
    """ShuffleNet's grouped 1x1 convs (68 channels per group: narrow panels) run as a batched
    matmul over the pixels: same result as onnxruntime at two batch sizes from one compile;
    the 7x7 one (too few pixels for the matmul) and the 3x3 one stay convs."""
    rng = np.random.default_rng(3)
    inits, nodes = [], []
    for k, (o, cg, ksz) in enumerate([(272, 68, 1), (272, 68, 3)]):
        inits += [numpy_helper.from_array(rng.standard_normal((o, cg, ksz, ksz)).astype(np.float32) * 0.2, f"w{k}"),
                  numpy_helper.from_array(rng.standard_normal(o).astype(np.float32), f"b{k}")]
        nodes += [helper.make_node("Conv", [f"x{k}", f"w{k}", f"b{k}"], [f"c{k}"], group=4, pads=[ksz // 2] * 4),
                  helper.make_node("Relu", [f"c{k}"], [f"x{k + 1}"])]
    path = _save(tmp_path / "g.onnx", nodes, inits, "x0", ["n", 272, 14, 14], "x2")
    from minimlir.frontend.api import load

    module = load(path).module
    driver.lower(module, "graph-pack-weights{width=16}")
    names = [o.name for o in module.walk()]
    assert names.count("graph.matmul") == 1 and names.count("graph.conv2d") == 1
    m = compile(path, cache=False)
    sess = ort.InferenceSession(str(path))
    for n in (1, 3):
        x = rand(n, 272, 14, 14)
        np.testing.assert_allclose(m(x)[0], sess.run(None, {"x0": x})[0], rtol=1e-4, atol=1e-4)


def test_per_channel_scale_and_shift_fold_into_the_conv(tmp_path):
    """conv -> Mul by a per-channel weight -> Add of one (a batch norm the exporter left as Mul and
    Add, Inception-v2) is one conv with W*s, b*s + t (computed once): same result as onnxruntime;
    a Mul by an input, or by a per-pixel weight, stays."""
    rng = np.random.default_rng(4)
    w = rng.standard_normal((32, 8, 3, 3)).astype(np.float32)
    inits = [numpy_helper.from_array(w, "w"), numpy_helper.from_array(rng.standard_normal(32).astype(np.float32), "b"),
             numpy_helper.from_array(rng.standard_normal((32, 1, 1)).astype(np.float32), "s"),
             numpy_helper.from_array(rng.standard_normal((1, 32, 1, 1)).astype(np.float32), "t"),
             numpy_helper.from_array(rng.standard_normal((1, 1, 6, 6)).astype(np.float32), "p")]
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1] * 4),
             helper.make_node("Mul", ["s", "c"], ["m"]), helper.make_node("Add", ["m", "t"], ["a"]),
             helper.make_node("Conv", ["a", "w2"], ["c2"], pads=[1] * 4), helper.make_node("Mul", ["c2", "p"], ["y"])]
    inits.append(numpy_helper.from_array(rng.standard_normal((32, 32, 3, 3)).astype(np.float32), "w2"))
    path = _save(tmp_path / "bn.onnx", nodes, inits, "x", ["n", 8, 6, 6], "y")
    from minimlir.frontend.api import load

    module = load(path).module
    driver.lower(module, "graph-pack-weights,graph-lift-params")
    main = next(f for f in module.ops if f.sym_name.data == "main")
    names = [o.name for o in main.walk()]
    assert names.count("graph.conv2d") == 2 and names.count("graph.mul") == 1 and "graph.add" not in names
    m = compile(path, cache=False)
    x = rand(2, 8, 6, 6)
    np.testing.assert_allclose(m(x)[0], ort.InferenceSession(str(path)).run(None, {"x": x})[0], rtol=1e-4, atol=1e-3)


def test_pointwise_convs_become_matmuls_with_their_epilogue(tmp_path, monkeypatch):
    """ResNet's bottleneck: 1x1 convs (group 1, stride 1) run as matmuls over the pixels, the
    residual add and ReLU applied to the (N, O, H*W) matmul result (fused into its kernel, not
    behind a reshape); a projection shortcut's two matmuls are two kernels, the add in one of
    them. A 1x1 conv reading a concat, one feeding a concat and a strided one stay convs. Same
    result as onnxruntime at two batch sizes from one compile."""
    small_maps_as_matmuls(monkeypatch)
    rng = np.random.default_rng(7)
    inits = []

    def w(name, *shape):
        inits.append(numpy_helper.from_array((rng.standard_normal(shape) * 0.2).astype(np.float32), name))
        return name

    c = lambda i, ws, o, **kw: helper.make_node("Conv", [i, w(f"{o}_w", *ws), w(f"{o}_b", ws[0])], [o], **kw)  # noqa: E731
    nodes = [
        c("x", (16, 32, 1, 1), "a"), helper.make_node("Relu", ["a"], ["ar"]),
        c("ar", (16, 16, 3, 3), "b", pads=[1] * 4), helper.make_node("Relu", ["b"], ["br"]),
        c("br", (32, 16, 1, 1), "e"), helper.make_node("Add", ["e", "x"], ["s"]), helper.make_node("Relu", ["s"], ["y1"]),
        c("y1", (48, 32, 1, 1), "p"), c("y1", (48, 32, 1, 1), "q"),  # projection: two 1x1 convs into one add
        helper.make_node("Add", ["p", "q"], ["pq"]), helper.make_node("Relu", ["pq"], ["y2"]),
        c("y2", (16, 48, 1, 1), "u"), helper.make_node("Relu", ["y2"], ["r2"]),
        helper.make_node("Concat", ["u", "r2"], ["cat"], axis=1),
        c("cat", (8, 64, 1, 1), "v"), c("v", (8, 8, 1, 1), "z", strides=[2, 2]),
    ]
    path = _save(tmp_path / "bottleneck.onnx", nodes, inits, "x", ["n", 32, 10, 10], "z")
    from minimlir.frontend.api import load

    module = load(path).module
    driver.lower(module, "graph-pack-weights{width=16}")
    main = next(f for f in module.ops if f.sym_name.data == "main")
    ops = list(main.walk())
    names = [o.name for o in ops]
    assert names.count("graph.matmul") == 4 and names.count("graph.conv2d") == 4, names
    # the ReLUs (and residual adds) after a matmul work on its (N, O, H*W) result
    assert [len(o.results[0].type.get_shape()) for o in ops if o.name == "graph.relu"] == [3, 4, 3, 3, 4]
    driver.lower(module, "graph-infer-dims,graph-lift-params,graph-fuse")
    kernels = [f for f in module.ops if "graph.primitive" in f.attributes]
    assert all(sum(o.name == "graph.matmul" for o in f.walk()) <= 1 for f in kernels)
    assert [f for f in kernels if [o.name for o in f.walk() if o.name != "func.return"][1:] and
            {"graph.matmul", "graph.relu"} <= {o.name for o in f.walk()} and
            sum(o.name == "graph.add" for o in f.walk()) == 2], "a matmul + bias + residual + ReLU kernel"
    m = compile(path, cache=False)
    sess = ort.InferenceSession(str(path))
    for n in (1, 3):
        x = rand(n, 32, 10, 10)
        np.testing.assert_allclose(m(x)[0], sess.run(None, {"x": x})[0], rtol=1e-4, atol=1e-4)


def _initializers(seed):
    """(w, inits): w(name, *shape) appends a random initializer to inits and returns its name."""
    rng = np.random.default_rng(seed)
    inits = []

    def w(name, *shape):
        inits.append(numpy_helper.from_array((rng.standard_normal(shape) * 0.2).astype(np.float32), name))
        return name

    return w, inits


@pytest.mark.parametrize("o,expected", [(1000, 1024), (120, 128), (88, 96), (24, 32), (1008, 1024), (40, 48),
                                        (64, 64), (48, 48), (272, 288), (10, 10), (8, 8), (1030, 1056), (100, 112)])
def test_padded_channel_counts(o, expected):
    """The vector width (16) divides the padded count; at most half as much work again, and two
    vectors' panels where that adds no more than 1/16."""
    from minimlir.passes.graph.pack_weights import _config_for, padded_channels

    assert padded_channels(o, _config_for(16)) == expected


def test_ragged_output_channels_compute_padded_and_slice(tmp_path):
    """Convs whose output channels the vector width does not divide (SqueezeNet's 1000: one 8-lane
    vector panel, half the speed) compute zero-padded weights' channels and slice the first O after
    their ReLU / Clip chain; a residual add stops the chain (the slice comes before it); a conv
    without bias too. Same result as onnxruntime at two batch sizes from one compile."""
    w, inits = _initializers(11)
    nodes = [
        helper.make_node("Conv", ["x", w("w0", 40, 8, 3, 3), w("b0", 40)], ["a"], pads=[1] * 4),
        helper.make_node("Relu", ["a"], ["ar"]),
        helper.make_node("Clip", ["ar", "lo", "hi"], ["ac"]),
        helper.make_node("Conv", ["ac", w("w1", 40, 40, 3, 3)], ["b"], pads=[1] * 4),
        helper.make_node("Add", ["b", "ac"], ["s"]), helper.make_node("Relu", ["s"], ["sr"]),
        helper.make_node("Conv", ["sr", w("w2", 120, 40, 1, 1), w("b2", 120)], ["c"], strides=[2, 2]),
        helper.make_node("Relu", ["c"], ["y"]),
    ]
    inits += [numpy_helper.from_array(np.array(v, np.float32), n) for n, v in (("lo", 0.1), ("hi", 1.5))]
    path = _save(tmp_path / "ragged.onnx", nodes, inits, "x", ["n", 8, 9, 9], "y")
    from minimlir.frontend.api import load

    module = load(path).module
    driver.lower(module, "graph-pack-weights{width=16}")
    main = next(f for f in module.ops if f.sym_name.data == "main")
    ops = list(main.walk())
    convs = [o for o in ops if o.name == "graph.conv2d"]
    assert [o.result.type.get_shape()[1] for o in convs] == [48, 48, 128]
    assert all(o.tile for o in convs)
    # (the third conv, 1x1 stride 2, reads a subsampled input: the slice of 40 channels)
    slices = [o for o in ops if o.name == "graph.slice" and set(o.steps.get_values()) == {1}]
    assert [s.result.type.get_shape()[1] for s in slices] == [40, 40, 120]
    # the first slice reads the Clip (ReLU and Clip on 48 channels), the second the conv itself
    assert [s.input.owner.name for s in slices] == ["graph.clip", "graph.conv2d", "graph.relu"]
    m = compile(path, cache=False)
    sess = ort.InferenceSession(str(path))
    for n in (1, 3):
        x = rand(n, 8, 9, 9)
        np.testing.assert_allclose(m(x)[0], sess.run(None, {"x": x})[0], rtol=1e-4, atol=1e-4)


def test_strided_pointwise_conv_reads_a_subsampled_input(tmp_path, monkeypatch):
    """ResNet's projection shortcut (1x1, stride 2, no padding) is a strided slice of its input and
    a stride-1 1x1 conv (then a matmul where that pays): same result as onnxruntime at two batch
    sizes and an odd input size; a padded strided 1x1 conv and a 3x3 stride-2 one stay as they are."""
    small_maps_as_matmuls(monkeypatch)
    w, inits = _initializers(12)
    nodes = [
        helper.make_node("Conv", ["x", w("wa", 32, 16, 1, 1), w("ba", 32)], ["a"], strides=[2, 2]),
        helper.make_node("Conv", ["x", w("wb", 32, 16, 3, 3), w("bb", 32)], ["b"], strides=[2, 2], pads=[1] * 4),
        helper.make_node("Add", ["a", "b"], ["s"]), helper.make_node("Relu", ["s"], ["r"]),
        helper.make_node("Conv", ["r", w("wc", 16, 32, 1, 1)], ["y"], strides=[2, 2], pads=[1, 1, 1, 1]),
    ]
    path = _save(tmp_path / "proj.onnx", nodes, inits, "x", ["n", 16, 19, 19], "y")
    from minimlir.frontend.api import load

    module = load(path).module
    driver.lower(module, "graph-pack-weights{width=16}")
    main = next(f for f in module.ops if f.sym_name.data == "main")
    ops = list(main.walk())
    slices = [o for o in ops if o.name == "graph.slice"]
    assert len(slices) == 1 and list(slices[0].steps.get_values()) == [1, 1, 2, 2]
    assert list(slices[0].result.type.get_shape())[1:] == [16, 10, 10]
    # the subsampled conv is a matmul over its 100 pixels now; the other two keep their stride
    assert [list(o.strides.get_values()) for o in ops if o.name == "graph.conv2d"] == [[2, 2], [2, 2]]
    assert sum(o.name == "graph.matmul" for o in ops) == 1
    m = compile(path, cache=False)
    sess = ort.InferenceSession(str(path))
    for n in (1, 3):
        x = rand(n, 16, 19, 19)
        np.testing.assert_allclose(m(x)[0], sess.run(None, {"x": x})[0], rtol=1e-4, atol=1e-4)
