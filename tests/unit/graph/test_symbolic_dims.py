"""Symbolic dims: compile time linear in depth with a dynamic batch (issue 11)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "benchmarks"))

from depth_sweep import build  # noqa: E402


def test_deep_dynamic_chain_plans_in_linear_time():
    """24 squeeze-excite residual blocks with a dynamic batch: every broadcasting Mul's dim was
    built from both inputs' dims, and mem-plan printed the doubling tree of them (2^24 nodes: this
    never finished). Now fuse + legalize + bufferize + mem-plan take a few seconds."""
    code = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(ROOT / 'benchmarks')!r})
        from depth_sweep import build
        from minimlir.frontend.api import lower
        from minimlir.frontend.onnx_import import import_onnx
        module = import_onnx(build(24, True))[0]
        lower(module, "graph-fuse,graph-legalize,loop-fuse,graph-bufferize,mem-plan")
        print("ok")
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip().endswith("ok")


def test_deep_dynamic_chain_matches_onnxruntime(tmp_path):
    import onnx
    import onnxruntime as ort

    from minimlir.frontend import compile as compile_model

    model = build(6, True)
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    m = compile_model(path, cache=False)
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    for batch in (1, 3):
        x = np.random.default_rng(batch).normal(size=(batch, 4, 8, 8)).astype(np.float32)
        (got,) = m(x)
        (want,) = sess.run(None, {"x": x})
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


# -- symbolic dims in the importer, the IR and the runtime's input checks -----------------------

from onnx import TensorProto, helper  # noqa: E402

from minimlir.frontend import InputError  # noqa: E402
from minimlir.frontend import compile as compile_model  # noqa: E402
from minimlir.frontend.onnx_import import import_onnx  # noqa: E402


def _model(nodes, inputs, outputs, inits=()):
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def _add_model():
    return _model(
        [helper.make_node("Add", ["x", "y"], ["z"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", None]),
         helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", None])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, ["batch", None])])


def test_importer_names_every_dynamic_dim_and_prints_expressions():
    module, _ = import_onnx(_add_model())
    text = str(module)
    assert 'graph.dim_names = ["batch", "x.dim1"]' in text
    assert 'graph.dim_names = ["batch", "y.dim1"]' in text
    assert 'graph.dims = ["batch", "max(x.dim1, y.dim1)"]' in text
    assert 'graph.dim_checks = [{kind = "bcast", lhs = "x.dim1", rhs = "y.dim1", op = "graph.add", loc = "Add_0"}]' in text


def test_reshape_minus_one_is_batch_times_seq():
    from onnx import numpy_helper

    shape = numpy_helper.from_array(np.array([-1, 8, 64], np.int64), "shape")
    m = _model([helper.make_node("Reshape", ["x", "shape"], ["y"])],
               [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", 512])],
               [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [shape])
    text = str(import_onnx(m)[0])
    assert 'graph.dims = ["batch*seq"]' in text
    assert "graph.dim_checks" not in text  # the element count is provably the same
    c = compile_model(m, cache=False)
    x = np.arange(2 * 3 * 512, dtype=np.float32).reshape(2, 3, 512)
    np.testing.assert_array_equal(c(x)[0], x.reshape(-1, 8, 64))


def test_inputs_that_do_not_broadcast_are_an_input_error():
    """x.dim1 = 3 with y.dim1 = 5: the Add kernel ran over max(3, 5) columns of both inputs
    (reading past x); now the call fails before any kernel runs, naming the input and the dim."""
    c = compile_model(_add_model(), cache=False)
    x = np.ones((2, 3), np.float32)
    np.testing.assert_array_equal(c(x, np.ones((2, 3), np.float32))[0], 2 * x)
    np.testing.assert_array_equal(c(x, np.ones((2, 1), np.float32))[0], 2 * x)
    with pytest.raises(InputError, match=r"input 'x': dim 1 \('x\.dim1'\) is 3: graph\.add \(Add_0\) "
                                         r"broadcasts x\.dim1 = 3 with y\.dim1 = 5, which must be equal or 1"):
        c(x, np.ones((2, 5), np.float32))


def test_impossible_reshape_is_an_input_error():
    from onnx import numpy_helper

    shape = numpy_helper.from_array(np.array([-1, 4], np.int64), "shape")
    m = _model([helper.make_node("Reshape", ["x", "shape"], ["z"])],
               [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 6])],
               [helper.make_tensor_value_info("z", TensorProto.FLOAT, [None, 4])], [shape])
    c = compile_model(m, cache=False)
    assert c(np.ones((2, 6), np.float32))[0].shape == (3, 4)
    with pytest.raises(InputError, match=r"input 'x': dim 0 \('batch'\) is 3, which makes graph\.reshape "
                                         r"\(Reshape_0\) impossible: 6\*batch = 18 must equal 4\*\(\(6\*batch\)/4\) = 16"):
        c(np.ones((3, 6), np.float32))


def test_two_inputs_that_must_share_seq():
    """mask is [batch, seq'] with its own unnamed dim; the model adds it to x [batch, seq]."""
    m = _model([helper.make_node("Add", ["x", "mask"], ["y"])],
               [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq"]),
                helper.make_tensor_value_info("mask", TensorProto.FLOAT, ["batch", None])],
               [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "seq"])])
    c = compile_model(m, cache=False)
    with pytest.raises(InputError, match=r"input 'x': dim 1 \('seq'\) is 4: .* broadcasts mask\.dim1 = 7 with seq = 4"):
        c(np.ones((2, 4), np.float32), np.ones((2, 7), np.float32))


def test_one_entry_expression_per_distinct_dim():
    """After graph-simplify-dims, every call of a dynamic-batch chain uses the one `batch` value."""
    from minimlir.frontend.api import lower

    module = import_onnx(build(4, True))[0]
    lower(module, "graph-infer-dims,graph-fuse,graph-legalize,loop-fuse,graph-simplify-dims")
    main = next(f for f in module.ops if getattr(f, "sym_name", None) and f.sym_name.data == "main")
    from minimlir.dialects import graph

    dims = [op for op in main.body.block.ops if isinstance(op, graph.DimOp)]
    assert len(dims) == 1
    calls = [op for op in main.body.block.ops if isinstance(op, graph.CallKernelOp)]
    assert calls and all(list(c.dims) == [dims[0].result] for c in calls)


# a sample (squeeze-excite + depthwise, grouped convs): `python benchmarks/dynamic_batch.py` runs all
# four toy models (and mobilenetv3's arena has its own test in tests/unit/mem/test_plan_dynamic_batch.py)
@pytest.mark.parametrize("name", ["efficientnet", "regnet"])
def test_dynamic_batch_models_match_onnxruntime(tmp_path, name):
    import onnx
    import onnxruntime as ort

    from dynamic_models import MODELS, SIZE

    path = tmp_path / f"{name}.onnx"
    onnx.save(MODELS[name](dynamic=True, tiny=True), path)
    c = compile_model(path, cache=False)
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    for batch in (1, 3):
        x = np.random.default_rng(batch).normal(size=(batch, 3, SIZE, SIZE)).astype(np.float32)
        np.testing.assert_allclose(c(x)[0], sess.run(None, {"x": x})[0], rtol=1e-4, atol=1e-4)
