"""The per-kernel profiler (frontend/profile.py, graph-profile-nodes, convert-profile-kernels)."""

import json
from pathlib import Path

import numpy as np

from minimlir.frontend import api, profile

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
MLP = EXAMPLES / "mlp.onnx"


def _x(m):
    spec = m.inputs[0]
    return np.random.default_rng(0).standard_normal([d or 2 for d in spec.shape]).astype(np.float32)


def test_kernels_nodes_calls_and_percentages(tmp_path):
    m = api.compile(MLP, profile=True, cache=tmp_path, num_threads=1)
    plain = api.compile(MLP, cache=False, num_threads=1)
    x = _x(m)
    for _ in range(3):
        np.testing.assert_allclose(m(x)[0], plain(x)[0], rtol=1e-6)  # profiling does not change the values
    rows = {r["kernel"]: r for r in m.profile()}
    assert rows["fused_matmul_add_relu"]["nodes"] == ["fc1", "relu"]
    assert rows["fused_matmul_add"]["nodes"] == ["fc2"]
    assert rows["softmax_0"]["nodes"] == ["softmax"]
    assert all(r["calls"] == 3 and r["ns"] > 0 for r in rows.values())
    assert abs(sum(r["percent"] for r in rows.values()) - 100.0) < 1e-6
    r = rows["fused_matmul_add_relu"]
    assert r["gflops"] is not None and r["gflops"] > 0 and r["gbs"] > 0
    # the JSON document
    path = tmp_path / "p.json"
    profile.write_json(m, path)
    doc = json.loads(path.read_text())
    assert doc["version"] == 1 and doc["runs"] == 3
    assert set(doc["kernels"][0]) == {"kernel", "nodes", "calls", "ns", "ms", "percent", "flops", "bytes",
                                     "gflops", "gbs"}
    # a cache hit has the kernel table too
    again = api.compile(MLP, profile=True, cache=tmp_path, num_threads=1)
    assert again.program.cache_hit
    again(x)
    assert {r["kernel"]: r["nodes"] for r in again.profile()} == {k: v["nodes"] for k, v in rows.items()}
    m.reset_profile()
    assert all(r["calls"] == 0 for r in m.profile())


def test_flops_and_bytes_of_a_conv_at_the_call_batch(tmp_path):
    m = api.compile(EXAMPLES / "conv_add_relu.onnx", profile=True, cache=False, num_threads=1)
    m(np.zeros((2, 3, 16, 16), np.float32))
    (row,) = m.profile()
    # 2*N*O*H*W*(C*KH*KW) for the conv, one per output element for the relu; at batch 2
    assert row["flops"] == 2 * 2 * 8 * 16 * 16 * 27 + 2 * 8 * 16 * 16
    assert row["bytes"] == 4 * (2 * 3 * 16 * 16 + 8 * 3 * 3 * 3 + 8 + 2 * 8 * 16 * 16)


def test_flops_of_a_matmul_count_multiply_and_add(tmp_path):
    """2*M*N*K for a matmul, as for a conv (it counted M*N*K: every matmul's GFLOP/s was half)."""
    from onnx import TensorProto, helper, numpy_helper

    w = numpy_helper.from_array(np.ones((24, 40), np.float32), "w")
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 24])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    m = api.compile(model, profile=True, cache=False, num_threads=1)
    m(np.zeros((8, 24), np.float32))
    (row,) = m.profile()
    assert row["flops"] == 2 * 8 * 40 * 24


def test_ir_identical_with_profiling_off_and_cache_keys_differ():
    def llvm_ir(pipeline):
        out = {}
        api.compile(MLP, cache=False, pipeline=pipeline, print_ir=lambda s, t: out.__setitem__(s, t))
        return out
    plain = llvm_ir(None)
    prof = llvm_ir(profile.profile_pipeline(api.default_pipeline()))
    last_plain = plain[list(plain)[-1]]
    assert "minimlir_prof_counters" not in last_plain and "clock_gettime" not in last_plain
    assert "minimlir_prof_counters" in prof["convert-profile-kernels"]
    # without the profiler's passes, the pipeline's output is the same as the unprofiled one
    assert "minimlir.profile_kernels" in prof["convert-parallel-to-llvm"]
    assert _strip_attr(prof["convert-parallel-to-llvm"]) == last_plain
    ident = ["x"]
    assert api.api_cache_key(ident, api.default_pipeline(), None) != api.api_cache_key(
        ident, profile.profile_pipeline(api.default_pipeline()), None)


def _strip_attr(text: str) -> str:
    """The IR without the `minimlir.profile_kernels` module attribute graph-profile-nodes leaves."""
    import re

    text = re.sub(r'builtin.module attributes \{"?minimlir.profile_kernels"? = ".*?(?<!\\)"\} \{',
                  "builtin.module {", text, count=1)
    return text


def test_png_written(tmp_path):
    m = api.compile(MLP, profile=True, cache=False, num_threads=1)
    m(_x(m))
    profile.write_png(m.profile(), tmp_path / "p.png")
    assert (tmp_path / "p.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
