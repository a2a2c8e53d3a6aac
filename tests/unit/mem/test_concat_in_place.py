"""Concat without copies (mem-concat-in-place), end to end against onnxruntime: the producers of a
channel concat at batch 1 write into its output, at one and two threads, in checked mode, through the
split lowering; concats whose parts are not contiguous keep their copies."""

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from minimlir.frontend import api
from minimlir.frontend import _split_lower as sl


def _conv(rng, name, x, cin, cout, k=1, pads=0):
    w = numpy_helper.from_array((rng.standard_normal((cout, cin, k, k)) * 0.2).astype(np.float32), f"{name}_w")
    b = numpy_helper.from_array(rng.standard_normal(cout).astype(np.float32), f"{name}_b")
    conv = helper.make_node("Conv", [x, w.name, b.name], [f"{name}_c"], pads=[pads] * 4)
    relu = helper.make_node("Relu", [f"{name}_c"], [name])
    return [conv, relu], [w, b]


def _model(nodes, inits, inputs, outputs):
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
                          [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def fire_and_dense(batch=1):
    """A fire module (two branches concatenated, the concat read by a conv) whose left branch is also
    read after the concat and returned; then a dense block (a concat of a concat, the inner concat
    read by the next layer); then a concat with the graph input (a part that must be copied) and a
    concat of one value twice."""
    rng = np.random.default_rng(0)
    nodes, inits = [], []

    def add(ns):
        nodes.extend(ns[0])
        inits.extend(ns[1])

    add(_conv(rng, "sq", "x", 4, 3))
    add(_conv(rng, "e1", "sq", 3, 5))
    add(_conv(rng, "e3", "sq", 3, 6, k=3, pads=1))
    nodes.append(helper.make_node("Concat", ["e1", "e3"], ["fire"], axis=1))        # 11 channels
    add(_conv(rng, "d1", "fire", 11, 4, k=3, pads=1))
    nodes.append(helper.make_node("Concat", ["fire", "d1"], ["dense1"], axis=1))    # 15
    add(_conv(rng, "d2", "dense1", 15, 4))
    nodes.append(helper.make_node("Concat", ["dense1", "d2"], ["dense2"], axis=1))  # 19
    add(_conv(rng, "d3", "dense2", 19, 2))  # (a second reader: graph-fuse keeps the next concat apart)
    nodes.append(helper.make_node("Concat", ["dense2", "x"], ["withx"], axis=1))    # 23
    nodes.append(helper.make_node("Concat", ["d2", "d2"], ["twice"], axis=1))       # 8
    nodes.append(helper.make_node("Add", ["e1", "e1"], ["e1x2"]))                    # e1 read after
    return _model(nodes, inits, [("x", [batch, 4, 7, 9])], ["withx", "twice", "e1x2", "e1", "d3"])


def _check(m, batch=1, **kw):
    prog = api.compile(m, cache=False, **kw)
    x = np.random.default_rng(1).standard_normal((batch, 4, 7, 9)).astype(np.float32)
    want = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    got = prog(x)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-5, atol=1e-5)
    return prog


@pytest.mark.parametrize("threads", [1, 2])
def test_concats_in_place_match_onnxruntime(threads):
    prog = _check(fire_and_dense(), num_threads=threads)
    assert "concats in place: 5" in " ".join(prog.remarks)


def test_concats_in_place_in_checked_mode():
    """Bounds of every part and every read of a part before it is written are checked."""
    prog = _check(fire_and_dense(), checks=True)
    assert "concats in place: 5" in " ".join(prog.remarks)


def test_parts_are_not_contiguous_at_batch_2():
    prog = _check(fire_and_dense(batch=2), batch=2)
    assert "concats in place" not in " ".join(prog.remarks)


def test_split_lowering_sees_the_concat_kernels(monkeypatch):
    """The graph-level chunk calls kernels through declarations: they carry the concat mark too."""
    monkeypatch.setattr(sl, "MIN_KERNELS", 1)
    monkeypatch.setenv("MINIMLIR_COMPILE_JOBS", "2")
    prog = _check(fire_and_dense())
    assert "lower-split-wall" in prog.timings
    assert "concats in place: 5" in " ".join(prog.remarks)


def test_producers_write_into_the_concat_output(tmp_path):
    """After the pass no concat kernel is called and the parts are subranges of the output."""
    api.compile(fire_and_dense(), cache=False, dump_ir=tmp_path)
    (after,) = tmp_path.glob("*-mem-concat-in-place.mlir")
    text = after.read_text()
    main = text[text.index("func.func @main("):]
    main = main[:main.index("\n  }\n")]
    assert "call @concat" not in main
    # in place: e3, fire, d1, dense1, d2, dense2; copied: e1 (a model output), x (an argument),
    # d2 twice (already a part of dense2)
    assert main.count("mem.subrange") == 10
    assert main.count("mem.copy") == 4


def test_matmul_convs_write_into_the_concat(tmp_path):
    """A fire module at 16x16: its 1x1 convs run as matmuls on [1, C, H*W] (graph-pack-weights) and
    the concat, kept apart by graph-fuse, takes their outputs through the reshape; the squeeze conv
    after the concat reads it as a matmul too. (graph-layout off: it would run the 16-channel
    expand convs and the concat blocked.)"""
    from minimlir.compiler.pipelines import expand

    rng = np.random.default_rng(2)
    nodes, inits = [], []
    for ns in (_conv(rng, "sq", "x", 8, 4), _conv(rng, "e1", "sq", 4, 16), _conv(rng, "e3", "sq", 4, 16, k=3, pads=1)):
        nodes += ns[0]
        inits += ns[1]
    nodes.append(helper.make_node("Concat", ["e1", "e3"], ["fire"], axis=1))
    ns = _conv(rng, "sq2", "fire", 32, 8)
    m = _model(nodes + ns[0], inits + ns[1], [("x", [1, 8, 16, 16])], ["sq2"])
    prog = api.compile(m, cache=False, dump_ir=tmp_path, pipeline=expand("compile").replace("graph-layout,", ""))
    x = np.random.default_rng(3).standard_normal((1, 8, 16, 16)).astype(np.float32)
    want = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    np.testing.assert_allclose(prog(x)[0], want[0], rtol=1e-5, atol=1e-5)
    assert "concats in place: 1" in " ".join(prog.remarks)
    (after,) = tmp_path.glob("*-mem-concat-in-place.mlir")
    text = after.read_text()
    main = text[text.index("func.func @main("):]
    main = main[:main.index("\n  }\n")]
    assert "call @fused_matmul" in main
    assert main.count("mem.copy") == 1  # graph-bufferize's copy of the returned reshape, not a part
    # the matmul's [1, 16, 256] buffer is the first part, seen as [1, 16, 16, 16] through a view
    assert "mem.subrange" in main and "-> memref<1x16x256xf32>" in main
