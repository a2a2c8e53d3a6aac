"""minimlir.frontend.compile: ONNX path / ModelProto / .mlir text, calls by position and name, argument
checks before native code runs, one compile for every batch size, dump_ir, collected remarks."""

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto
from onnx import helper as h

from minimlir.frontend import CompiledModel, CompileError, InputError, UnsupportedModelError, compile

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
CONV_ONNX = EXAMPLES / "conv_add_relu.onnx"

ADD_RELU = """
func.func @add_relu(%x: tensor<?x3xf32>, %y: tensor<3xf32>) -> tensor<?x3xf32> {
  %s = graph.add %x, %y : (tensor<?x3xf32>, tensor<3xf32>) -> tensor<?x3xf32>
  %r = graph.relu %s : tensor<?x3xf32>
  func.return %r : tensor<?x3xf32>
}
"""


@pytest.fixture(scope="module")
def conv() -> CompiledModel:
    return compile(CONV_ONNX)


@pytest.fixture(scope="module")
def add_relu() -> CompiledModel:
    return compile(ADD_RELU)


def _ort(path, **feeds):
    import onnxruntime as ort

    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, feeds)


def test_onnx_path_matches_onnxruntime_by_position_and_name(conv):
    x = np.random.default_rng(0).standard_normal((2, 3, 16, 16)).astype(np.float32)
    (ref,) = _ort(CONV_ONNX, x=x)
    by_pos = conv(x)
    by_name = conv(x=x)
    assert isinstance(by_pos, list) and len(by_pos) == 1
    np.testing.assert_allclose(by_pos[0], ref, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(by_name[0], by_pos[0])
    np.testing.assert_array_equal(conv.run(x)[0], by_pos[0])
    assert conv.input_names == ["x"] and conv.output_names == ["y"]
    assert conv.inputs[0].shape == (None, 3, 16, 16) and conv.inputs[0].dim_names[0] == "batch"


def test_one_compile_serves_every_batch_size(conv):
    for batch in (1, 3):
        x = np.random.default_rng(batch).standard_normal((batch, 3, 16, 16)).astype(np.float32)
        (y,) = conv(x)
        (ref,) = _ort(CONV_ONNX, x=x)
        assert y.shape == (batch, 8, 16, 16)
        np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-5)


def test_model_proto_and_out_array():
    proto = onnx.load(str(CONV_ONNX))
    m = compile(proto)
    x = np.ones((1, 3, 16, 16), np.float32)
    out = np.empty((1, 8, 16, 16), np.float32)
    (y,) = m(x, out=[out])
    assert y is out
    np.testing.assert_allclose(out, _ort(CONV_ONNX, x=x)[0], rtol=1e-5, atol=1e-5)


def test_mlir_text_values(add_relu):
    x = np.array([[1, -2, 3], [-4, 5, -6]], np.float32)
    y = np.array([0.5, 0.5, 0.5], np.float32)
    (r,) = add_relu(x, y=y)
    np.testing.assert_array_equal(r, [[1.5, 0, 3.5], [0, 5.5, 0]])
    assert add_relu.input_names == ["x", "y"]


def _no_native(model):
    def fail(*a, **k):
        raise AssertionError("native code must not run")

    model._fn, saved = fail, model._fn
    return saved


@pytest.mark.parametrize(
    "args, kwargs, message",
    [
        ((np.zeros((2, 3), np.float32),), {}, r"missing input\(s\): y"),
        ((np.zeros((2, 3), np.float32), np.zeros(3, np.float32), np.zeros(3, np.float32)), {},
         r"takes 2 input\(s\) \(x, y\), got 3 positional"),
        ((np.zeros((2, 3)), np.zeros(3, np.float32)), {}, r"input 'x': expected dtype float32, got float64"),
        ((np.zeros((2, 4), np.float32), np.zeros(3, np.float32)), {}, r"input 'x': dim 1 must be 3"),
        ((np.zeros(3, np.float32), np.zeros(3, np.float32)), {}, r"input 'x': expected rank 2"),
        ((np.zeros((2, 3), np.float32),), {"z": np.zeros(3, np.float32)}, r"no input named 'z'"),
        ((np.zeros((2, 3), np.float32), np.zeros(3, np.float32)), {"x": np.zeros((2, 3), np.float32)},
         r"input 'x' given both by position and by name"),
    ],
)
def test_bad_arguments_raise_before_native_code(add_relu, args, kwargs, message):
    saved = _no_native(add_relu)
    try:
        with pytest.raises(InputError, match=message):
            add_relu(*args, **kwargs)
    finally:
        add_relu._fn = saved


def test_named_dynamic_dims_must_agree():
    two = """
    func.func @f(%a: tensor<?xf32> {graph.name = "a", graph.dim_names = ["n"]},
                 %b: tensor<?xf32> {graph.name = "b", graph.dim_names = ["n"]}) -> tensor<?xf32> {
      %s = graph.add %a, %b : tensor<?xf32>
      func.return %s : tensor<?xf32>
    }
    """
    m = compile(two)
    _no_native(m)
    with pytest.raises(InputError, match=r"input 'b': dim 0 \('n'\) is 3, but 'a' has n=2"):
        m(np.zeros(2, np.float32), np.zeros(3, np.float32))


def test_dump_ir_writes_every_stage(tmp_path):
    m = compile(ADD_RELU, dump_ir=tmp_path / "ir", cache=False)
    files = sorted(p.name for p in (tmp_path / "ir").iterdir())
    assert files[0] == "00-input.mlir"
    stages = [f[3:-5] for f in files]
    assert stages.index("graph-legalize") < stages.index("graph-bufferize") < stages.index("mem-plan")
    assert "graph.relu" in (tmp_path / "ir" / files[0]).read_text()
    assert "llvm.func @add_relu" in (tmp_path / "ir" / files[-1]).read_text()
    assert [int(f[:2]) for f in files] == list(range(len(files)))
    assert m(np.ones((1, 3), np.float32), np.ones(3, np.float32))[0].tolist() == [[2, 2, 2]]


def test_remarks_are_collected_not_printed(capfd):
    m = compile(ADD_RELU)
    captured = capfd.readouterr()
    assert "peak bytes" not in captured.err
    assert any("peak bytes" in r for r in m.remarks)


def test_graph_param_bound_by_pointer():
    text = """
    func.func @scale(%x: tensor<4xf32>) -> tensor<4xf32> {
      %w = graph.param "w" : tensor<4xf32>
      %y = graph.mul %x, %w : tensor<4xf32>
      func.return %y : tensor<4xf32>
    }
    """
    w = np.array([1, 2, 3, 4], np.float32)
    m = compile(text, params={"w": w})
    np.testing.assert_array_equal(m(np.full(4, 2, np.float32))[0], [2, 4, 6, 8])
    with pytest.raises(CompileError, match="parameter 'w' has no value"):
        compile(text)
    with pytest.raises(CompileError, match=r"parameter 'w' is float32\[3\], the IR expects float32\[4\]"):
        compile(text, params={"w": w[:3]})


def test_malformed_mlir_is_a_located_error(tmp_path):
    path = tmp_path / "bad.mlir"
    path.write_text("func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {\n  %y = graph.relu %z : tensor<2xf32>\n"
                    "  func.return %y : tensor<2xf32>\n}\n")
    with pytest.raises(CompileError, match=r"bad\.mlir:\d+:\d+: error: .*%z"):
        compile(path)


def test_entry_selection_errors():
    two = ADD_RELU + ADD_RELU.replace("@add_relu", "@other")
    with pytest.raises(CompileError, match=r"several public functions \(@add_relu, @other\)"):
        compile(two)
    with pytest.raises(CompileError, match=r"no entry point @nope"):
        compile(ADD_RELU, entry="nope")
    assert compile(two, entry="other").entry == "other"


def test_unsupported_onnx_op_names_the_op():
    graph = h.make_graph(
        [h.make_node("DFT", ["x"], ["y"], name="dft")], "g",
        [h.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
        [h.make_tensor_value_info("y", TensorProto.FLOAT, [None])],
    )
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])
    with pytest.raises(UnsupportedModelError, match="DFT"):
        compile(model)


def test_missing_file():
    with pytest.raises(FileNotFoundError, match="nothere.onnx: no such file"):
        compile("nothere.onnx")
