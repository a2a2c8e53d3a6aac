"""Outputs in the buffers of dying inputs (loop-mark-inplace, loop-schedule's check, mem-reuse-inputs),
end to end against onnxruntime: ResNet-style residual adds whose output takes the residual's buffer
(1x1 convs run as matmuls, a 3x3 conv at 13x13), at one and two threads, in checked mode and through
the split lowering. tests/unit/loop/test_inplace.py checks the schedules that may not alias."""

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from minimlir.frontend import api
from minimlir.frontend import _split_lower as sl
from minimlir.passes.loop import inplace


def _conv(rng, inits, name, x, cin, cout, k=1, relu=True, residual=None):
    w = numpy_helper.from_array((rng.standard_normal((cout, cin, k, k)) * 0.2).astype(np.float32), f"{name}_w")
    b = numpy_helper.from_array(rng.standard_normal(cout).astype(np.float32), f"{name}_b")
    inits += [w, b]
    nodes = [helper.make_node("Conv", [x, w.name, b.name], [f"{name}_c"], pads=[k // 2] * 4)]
    y = f"{name}_c"
    if residual is not None:
        nodes.append(helper.make_node("Add", [y, residual], [f"{name}_s"]))
        y = f"{name}_s"
    if relu:
        nodes.append(helper.make_node("Relu", [y], [name]))
    else:
        nodes[-1].output[0] = name
    return nodes


def residual_model():
    """Two bottleneck blocks at 20x20 (1x1 convs run as matmuls; the second block's residual is the
    first block's output), then a block at 13x13 whose 3x3 conv adds the residual (the block's first
    conv's output, read by nothing after)."""
    rng = np.random.default_rng(0)
    inits: list = []
    n = []
    n += _conv(rng, inits, "a", "x", 16, 32)
    n += _conv(rng, inits, "b1", "a", 32, 16)
    n += _conv(rng, inits, "b2", "b1", 16, 16, k=3)
    n += _conv(rng, inits, "b3", "b2", 16, 32, residual="a")
    n += _conv(rng, inits, "c1", "b3", 32, 16)
    n += _conv(rng, inits, "c2", "c1", 16, 32, residual="b3")
    n.append(helper.make_node("GlobalAveragePool", ["c2"], ["pooled"]))
    n += _conv(rng, inits, "r", "y", 16, 64, k=3)
    n += _conv(rng, inits, "t", "r", 64, 64, k=3)
    n += _conv(rng, inits, "s", "t", 64, 64, k=3, residual="r")
    n.append(helper.make_node("GlobalAveragePool", ["s"], ["pooled13"]))
    g = helper.make_graph(
        n, "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 20, 20]),
         helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 13, 13])],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in ("pooled", "pooled13")], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def _check(**kw):
    m = residual_model()
    prog = api.compile(m, cache=False, **kw)
    rng = np.random.default_rng(1)
    feeds = {"x": rng.standard_normal((1, 16, 20, 20)).astype(np.float32),
             "y": rng.standard_normal((1, 16, 13, 13)).astype(np.float32)}
    want = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    got = prog(**feeds)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-4, atol=1e-4)
    return prog, " ".join(prog.remarks)


@pytest.mark.parametrize("threads", [1, 2])
def test_residual_outputs_take_the_residual_buffer(threads):
    _, remarks = _check(num_threads=threads)
    assert "outputs in their inputs' buffers: 3" in remarks
    assert "copies the input first" not in remarks  # every schedule here keeps the promise


def test_in_place_in_checked_mode():
    _, remarks = _check(checks=True)
    assert "outputs in their inputs' buffers: 3" in remarks


def test_split_lowering_sees_the_marks(monkeypatch):
    """The graph-level chunk calls kernels through declarations: they carry the in-place mark."""
    monkeypatch.setattr(sl, "MIN_KERNELS", 1)
    monkeypatch.setenv("MINIMLIR_COMPILE_JOBS", "2")
    prog, remarks = _check()
    assert "lower-split-wall" in prog.timings
    assert "outputs in their inputs' buffers: 3" in remarks


def test_inplace_attribute_names_pairs():
    from xdsl.dialects import func
    k = func.FuncOp.external("k", [], [])
    assert inplace.inplace_pairs(k) == []
    inplace._set_pairs(k, [(1, 3)])
    assert inplace.inplace_pairs(k) == [(1, 3)] and inplace.aliased_args(k) == {1, 3}
