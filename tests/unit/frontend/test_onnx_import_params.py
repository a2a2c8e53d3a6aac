"""The params file format, and weights of models with external data."""

import json
import struct

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

from minimlir.dialects import graph
from minimlir.frontend.onnx_import import OnnxImportError, import_onnx
from minimlir.compiler.params import ALIGNMENT, MAGIC, ParamsFormatError, load_params, read_index, save_params


def sample():
    rng = np.random.RandomState(1)
    return {
        "conv.weight": rng.randn(4, 3, 3, 3).astype(np.float32),
        "scalar": np.array(7, np.int64),
        "empty": np.zeros((0, 3), np.float16),
        "mask": np.array([True, False, True]),
        "big_endian": np.arange(5, dtype=">f8"),
    }


def test_round_trip_is_a_readonly_memmap(tmp_path):
    path = tmp_path / "w.params"
    params = sample()
    save_params(path, params)
    loaded = load_params(path)
    assert list(loaded) == list(params)
    for name, array in params.items():
        assert loaded[name].shape == array.shape
        assert loaded[name].dtype == array.dtype.newbyteorder("=")
        np.testing.assert_array_equal(loaded[name], array)
        assert not loaded[name].flags.writeable
    assert isinstance(loaded["conv.weight"], np.memmap)


def test_layout_header_index_and_alignment(tmp_path):
    path = tmp_path / "w.params"
    save_params(path, sample())
    raw = path.read_bytes()
    magic, version, _, index_len = struct.unpack_from("<8sIIQ", raw)
    assert (magic, version) == (MAGIC, 1)
    index = json.loads(raw[24 : 24 + index_len])["tensors"]
    assert index == read_index(path)
    w = index["conv.weight"]
    assert w["dtype"] == "float32" and w["shape"] == [4, 3, 3, 3] and w["nbytes"] == 4 * 108
    for entry in index.values():
        assert entry["offset"] % ALIGNMENT == 0
    np.testing.assert_array_equal(
        np.frombuffer(raw[w["offset"] : w["offset"] + w["nbytes"]], np.float32).reshape(4, 3, 3, 3),
        sample()["conv.weight"],
    )


def test_bad_params_files(tmp_path):
    bad = tmp_path / "bad.params"
    bad.write_bytes(b"NOTPARAMS" + b"\0" * 40)
    with pytest.raises(ParamsFormatError, match="bad magic"):
        load_params(bad)
    good = tmp_path / "good.params"
    save_params(good, {"w": np.ones(100, np.float32)})
    cut = tmp_path / "cut.params"
    cut.write_bytes(good.read_bytes()[:200])
    with pytest.raises(ParamsFormatError, match="outside the data section"):
        load_params(cut)
    with pytest.raises(ValueError, match="unsupported dtype"):
        save_params(tmp_path / "c.params", {"c": np.array([1 + 2j])})


def mlp(rng):
    nodes = [
        h.make_node("MatMul", ["x", "w1"], ["h"], name="fc1"),
        h.make_node("Relu", ["h"], ["r"], name="relu"),
        h.make_node("MatMul", ["r", "w2"], ["y"], name="fc2"),
    ]
    inits = [nh.from_array(rng.randn(8, 32).astype(np.float32), "w1"), nh.from_array(rng.randn(32, 4).astype(np.float32), "w2")]
    g = h.make_graph(nodes, "mlp", [h.make_tensor_value_info("x", T.FLOAT, ["batch", 8])], [h.make_tensor_value_info("y", T.FLOAT, None)], inits)
    return h.make_model(g, opset_imports=[h.make_opsetid("", 17)])


def test_external_data_is_memory_mapped(tmp_path):
    rng = np.random.RandomState(0)
    m = mlp(rng)
    expected = {t.name: nh.to_array(t) for t in m.graph.initializer}
    path = tmp_path / "model.onnx"
    onnx.save_model(m, path, save_as_external_data=True, all_tensors_to_one_file=True, location="model.onnx.data", size_threshold=0)
    assert (tmp_path / "model.onnx.data").stat().st_size >= 4 * (8 * 32 + 32 * 4)
    module, params = import_onnx(path, params_path=tmp_path / "model.params")
    assert set(params) == {"w1", "w2"}
    for name, array in expected.items():
        assert isinstance(params[name], np.memmap)
        np.testing.assert_array_equal(params[name], array)
    loaded = load_params(tmp_path / "model.params")
    np.testing.assert_array_equal(loaded["w2"], expected["w2"])
    assert module.attributes["graph.params_file"].data == "model.params"
    param_ops = [op for op in module.walk() if isinstance(op, graph.ParamOp)]
    assert sorted(op.param_name.data for op in param_ops) == ["w1", "w2"]


def test_truncated_external_data_is_an_error(tmp_path):
    m = mlp(np.random.RandomState(0))
    path = tmp_path / "model.onnx"
    onnx.save_model(m, path, save_as_external_data=True, all_tensors_to_one_file=True, location="model.onnx.data", size_threshold=0)
    data = tmp_path / "model.onnx.data"
    data.write_bytes(data.read_bytes()[:100])
    with pytest.raises(OnnxImportError, match="truncated"):
        import_onnx(path)
    data.unlink()
    with pytest.raises(OnnxImportError, match="not found"):
        import_onnx(path)
