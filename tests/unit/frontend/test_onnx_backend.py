"""OnnxBackend: prepare/run, run_node, supports_device, run-time specialization of shape inputs."""

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto
from onnx import helper as h

from minimlir.frontend.onnx_backend import OnnxBackend, parameter_inputs, specialize

CONV_ONNX = Path(__file__).resolve().parents[3] / "examples" / "conv_add_relu.onnx"


def test_supports_device():
    assert OnnxBackend.supports_device("CPU")
    assert not OnnxBackend.supports_device("CUDA")
    assert not OnnxBackend.supports_device("TPU")
    with pytest.raises(ValueError, match="CPU only"):
        OnnxBackend.prepare(str(CONV_ONNX), "CUDA")


def test_prepare_run_matches_onnxruntime_for_two_batch_sizes():
    import onnxruntime as ort

    rep = OnnxBackend.prepare(str(CONV_ONNX))
    session = ort.InferenceSession(str(CONV_ONNX), providers=["CPUExecutionProvider"])
    assert rep.specialized_on == [] and rep.input_names == ["x"]
    for batch in (1, 2):
        x = np.random.default_rng(batch).standard_normal((batch, 3, 16, 16)).astype(np.float32)
        (y,) = rep.run([x])
        np.testing.assert_allclose(y, session.run(None, {"x": x})[0], rtol=1e-5, atol=1e-5)
        (y2,) = rep.run({"x": x})
        np.testing.assert_array_equal(y, y2)


def test_run_node_single_op():
    x = np.array([[-1, 2], [3, -4]], np.float32)
    (y,) = OnnxBackend.run_node(h.make_node("Relu", ["x"], ["y"]), [x])
    np.testing.assert_array_equal(y, [[0, 2], [3, 0]])
    a = np.arange(6, dtype=np.int64).reshape(2, 3)
    (s,) = OnnxBackend.run_node(h.make_node("Add", ["a", "b"], ["s"]), [a, np.int64(10) * np.ones(3, np.int64)])
    assert s.dtype == np.int64 and s.tolist() == [[10, 11, 12], [13, 14, 15]]


def test_run_node_with_axes_input_specializes_and_caches():
    # Unsqueeze's axes decide the result's rank: the importer needs them as a constant.
    node = h.make_node("Unsqueeze", ["x", "axes"], ["y"])
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    (y,) = OnnxBackend.run_node(node, [x, np.array([0], np.int64)])
    np.testing.assert_array_equal(y, x[None])

    graph = h.make_graph(
        [node], "unsqueeze",
        [h.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]), h.make_tensor_value_info("axes", TensorProto.INT64, [1])],
        [h.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])
    rep = OnnxBackend.prepare(model)
    assert rep.specialized_on == ["axes"]
    (a,) = rep.run([x, np.array([1], np.int64)])
    (b,) = rep.run([x + 1, np.array([1], np.int64)])
    (c,) = rep.run([x, np.array([-1], np.int64)])
    assert a.shape == (2, 1, 3) and c.shape == (2, 3, 1)
    np.testing.assert_array_equal(b, (x + 1)[:, None, :])
    assert len(rep._specialized) == 2  # one compile per distinct axes value


def test_parameter_inputs_follow_producers():
    # shape -> Cast -> Reshape: the graph input behind the Cast is the one to specialize on.
    nodes = [
        h.make_node("Cast", ["s32"], ["s64"], to=TensorProto.INT64, name="cast"),
        h.make_node("Reshape", ["x", "s64"], ["y"], name="reshape"),
        h.make_node("Relu", ["y"], ["z"], name="relu"),
    ]
    graph = h.make_graph(
        nodes, "g",
        [h.make_tensor_value_info("x", TensorProto.FLOAT, [6]), h.make_tensor_value_info("s32", TensorProto.INT32, [2])],
        [h.make_tensor_value_info("z", TensorProto.FLOAT, None)],
    )
    model = h.make_model(graph)
    assert parameter_inputs(model, {"reshape"}) == ["s32"]
    assert parameter_inputs(model, {"relu"}) == []
    special = specialize(model, {"s32": np.array([2, 3], np.int32)})
    assert [vi.name for vi in special.graph.input] == ["x"]
    assert [i.name for i in special.graph.initializer] == ["s32"]
    assert [vi.name for vi in model.graph.input] == ["x", "s32"]  # the original is untouched


def test_run_model_and_wrong_input_count():
    x = np.ones((1, 3, 16, 16), np.float32)
    (y,) = OnnxBackend.run_model(onnx.load(str(CONV_ONNX)), [x])
    assert y.shape == (1, 8, 16, 16)
    rep = OnnxBackend.prepare(str(CONV_ONNX))
    with pytest.raises(ValueError, match=r"takes 1 input\(s\) \(x\), got 2"):
        rep.run([x, x])


def _squeeze_of_expand(x_shape):
    # Expand by a shape given as an input: the result's dims are computed at run time, and a
    # Squeeze without axes needs them (AffineGrid's function body does this with its `size` input)
    graph = h.make_graph(
        [h.make_node("Expand", ["x", "shape"], ["e"], name="expand"),
         h.make_node("Squeeze", ["e"], ["y"], name="squeeze")],
        "g",
        [h.make_tensor_value_info("x", TensorProto.FLOAT, x_shape),
         h.make_tensor_value_info("shape", TensorProto.INT64, [3])],
        [h.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    return h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])


def test_dims_computed_from_an_input_value_specialize_on_it():
    from minimlir.frontend.onnx_import import UnsupportedModelError

    rep = OnnxBackend.prepare(_squeeze_of_expand([1, 1, 3]))
    assert rep.specialized_on == ["shape"]  # the integer input, not the float data
    x = np.arange(3, dtype=np.float32).reshape(1, 1, 3)
    (a,) = rep.run([x, np.array([1, 1, 3], np.int64)])
    (b,) = rep.run([x, np.array([2, 1, 3], np.int64)])
    np.testing.assert_array_equal(a, x.reshape(3))
    np.testing.assert_array_equal(b, np.broadcast_to(x, (2, 1, 3)).reshape(2, 3))
    # with a dynamic input dim the dims are not (only) values: no specialization, the error stands
    with pytest.raises(UnsupportedModelError, match="Squeeze without axes"):
        OnnxBackend.prepare(_squeeze_of_expand(["n", 1, 3]))


def test_a_nested_if_on_a_value_its_branch_reads_specializes_on_it():
    # outer If (constant condition) -> then_branch: If(n == 1) whose branches yield different
    # shapes, so it cannot be a run-time select; `n` is read by the branch, not an operand of the
    # outer If (AffineGrid's align_corners=1 body)
    one = h.make_tensor("one", TensorProto.INT64, [], [1])
    inner = h.make_node(
        "If", ["is_one"], ["r"], name="inner",
        then_branch=h.make_graph([h.make_node("Identity", ["x"], ["t"])], "t", [],
                                 [h.make_tensor_value_info("t", TensorProto.FLOAT, None)]),
        else_branch=h.make_graph([h.make_node("Concat", ["x", "x"], ["c"], axis=0)], "e", [],
                                 [h.make_tensor_value_info("c", TensorProto.FLOAT, None)]))
    branch = h.make_graph([h.make_node("Equal", ["n", "one"], ["is_one"]), inner], "b", [],
                          [h.make_tensor_value_info("r", TensorProto.FLOAT, None)])
    outer = h.make_node("If", ["yes"], ["y"], name="outer", then_branch=branch, else_branch=branch)
    graph = h.make_graph(
        [outer], "g",
        [h.make_tensor_value_info("x", TensorProto.FLOAT, [2]), h.make_tensor_value_info("n", TensorProto.INT64, [])],
        [h.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        initializer=[one, h.make_tensor("yes", TensorProto.BOOL, [], [True])],
    )
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])
    assert parameter_inputs(model, {"outer"}) == ["n"]
    rep = OnnxBackend.prepare(model)
    assert rep.specialized_on == ["n"]
    x = np.array([1, 2], np.float32)
    np.testing.assert_array_equal(rep.run([x, np.int64(1)])[0], x)
    np.testing.assert_array_equal(rep.run([x, np.int64(3)])[0], np.concatenate([x, x]))
