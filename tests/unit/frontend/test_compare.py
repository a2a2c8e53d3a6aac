"""minimlir.frontend.compare: the first node whose minimlir output differs from onnxruntime's.

Wrong results are injected at the pass level (a Relu or Mul lowering that computes the wrong thing,
everywhere or only inside one kind of fused kernel), compiled without the disk cache (the patch is
not part of the source fingerprint) in one process (MINIMLIR_COMPILE_JOBS=1).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from minimlir.dialects import graph
from minimlir.frontend import compare as cmp
from minimlir.frontend.compare import CompareError, compare_with_onnxruntime, diff_arrays
from minimlir.frontend.onnx_import import UnsupportedModelError
from minimlir.passes.graph.legalize import elementwise as ew
from minimlir.tools import mini_run

INPUTS = Path(__file__).resolve().parents[2] / "lit" / "tools" / "mini-run" / "Inputs"
_spec = importlib.util.spec_from_file_location("compare_models", INPUTS / "compare_models.py")
models = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(models)

FUSED = "fused_matmul_add_relu_mul"  # fc, bias, act and scale in the original compile


@pytest.fixture(autouse=True)
def _one_job(monkeypatch):
    monkeypatch.setenv("MINIMLIR_COMPILE_JOBS", "1")


def _feeds(batch=3, seed=0):
    return {"x": np.random.default_rng(seed).standard_normal((batch, 8)).astype(np.float32)}


def _break_relu(monkeypatch, only_fused=False):
    """Relu computes max(x, 0) + 0.25 (only_fused: only in a fused kernel with one result)."""
    good = graph.ReluOp.element

    def broken(op, b, x):
        fn = op.parent_op()
        fused = fn is not None and "graph.primitive" in fn.attributes and len(fn.function_type.outputs.data) == 1
        y = good(op, b, x)
        return b.add(y, b.const(0.25, x.type)) if fused or not only_fused else y

    monkeypatch.setattr(graph.ReluOp, "element", broken)


def _compare(model, feeds, **kw):
    return compare_with_onnxruntime(model, feeds, 1e-3, 1e-4, cache=False, **kw)


def test_correct_model_matches():
    model = models.mlp()
    model.ir_version = 14  # onnx.helper's default, newer than onnxruntime 1.31 takes: run as its newest
    report = _compare(model, _feeds())
    assert report.ok and report.first_wrong is None and report.method == "expose"
    assert report.notes == ["onnxruntime supports IR version <= 13: the model (IR version 14) ran on it as IR version 13"]
    assert [d.node for d in report.values] == ["fc", "bias", "act", "scale", "probs"]
    assert all(d.ok and d.shape == (3, 16) for d in report.values)
    by_node = {d.node: d for d in report.values}
    for node in ("fc", "bias", "act", "scale"):
        assert by_node[node].original_kernels == [FUSED]
    assert by_node["probs"].original_kernels == ["softmax_0"]
    assert by_node["act"].kernels == ["relu_0"]  # exposed: every intermediate is an output
    assert report.worst is not None and report.worst.max_abs < 1e-4
    assert report.format().startswith("compare: all 5 values of 5 nodes match onnxruntime (rtol=0.001, atol=0.0001)")


def test_broken_relu_is_the_first_wrong_node(monkeypatch):
    _break_relu(monkeypatch)
    report = _compare(models.mlp(), _feeds())
    d = report.first_wrong
    assert not report.ok and report.method == "expose"
    assert (d.node, d.op_type, d.output, d.index, d.shape) == ("act", "Relu", "a", 2, (3, 16))
    assert d.max_abs == pytest.approx(0.25) and d.bad == 48
    assert d.original_kernels == [FUSED] and d.kernels == ["relu_0"]
    assert d.inputs == [("hb", "matches (from 'bias'), max abs 0")]
    text = report.format()
    assert "first wrong node: 'act' (Relu), node 3 of 5, output 'a'" in text
    assert f"kernel: {FUSED} (original compile)" in text
    # the nodes before it match, the ones after it are wrong too (but not first)
    by_node = {v.node: v for v in report.values}
    assert by_node["fc"].ok and by_node["bias"].ok and not by_node["scale"].ok


def test_broken_mul_later_in_the_graph(monkeypatch):
    good = ew._BINARY[graph.MulOp]
    monkeypatch.setitem(ew._BINARY, graph.MulOp, lambda b, x, y, op: b.add(good(b, x, y, op), x))
    report = _compare(models.mlp(), _feeds(batch=16))
    d = report.first_wrong
    assert (d.node, d.op_type, d.output) == ("scale", "Mul", "z")
    assert d.original_kernels == [FUSED] and d.kernels == ["mul_0"]
    assert ("a", "matches (from 'act'), max abs 0") in d.inputs and ("s", "a weight (the same for both)") in d.inputs


def test_fusion_only_error_is_found_by_bisection(monkeypatch):
    # wrong only in a fused kernel with one result: exposing the intermediates hides it
    _break_relu(monkeypatch, only_fused=True)
    report = _compare(models.mlp(), _feeds())
    d = report.first_wrong
    assert report.method == "bisect" and not report.ok
    assert any(not o.ok for o in report.outputs)
    assert (d.node, d.output) == ("act", "a")
    assert d.original_kernels == [FUSED] and d.kernels == ["fused_matmul_add_relu"]
    assert d.inputs == [("hb", "matches (from 'bias'), max abs 0")]
    assert "fusion-dependent" in report.format()


def test_forced_bisection_finds_the_same_node(monkeypatch):
    _break_relu(monkeypatch)
    bisected = _compare(models.mlp(), _feeds(), method="bisect")
    assert bisected.method == "bisect" and bisected.first_wrong.node == "act"
    assert bisected.first_wrong.kernels == ["fused_matmul_add_relu"]  # the graph cut after 'act'


def test_bisect_when_the_exposed_model_does_not_compile(monkeypatch):
    _break_relu(monkeypatch)
    real = cmp._minimlir

    def refuse_exposed(proto, *args, **kw):
        if len(proto.graph.output) == 5:  # every node output
            from minimlir.frontend.api import CompileError

            raise CompileError("error: cannot return that intermediate")
        return real(proto, *args, **kw)

    monkeypatch.setattr(cmp, "_minimlir", refuse_exposed)
    report = _compare(models.mlp(), _feeds())
    assert report.method == "bisect" and report.first_wrong.node == "act"
    assert "does not compile (error: cannot return that intermediate)" in report.format()


def _embedding_model():
    """The issue-9 reproducer's shape: Gather(emb, ids) + Slice(pos, 0, seq) with dynamic batch and seq."""
    rng = np.random.default_rng(1)
    inits = [numpy_helper.from_array(rng.standard_normal((97, 16)).astype(np.float32), "emb"),
             numpy_helper.from_array(rng.standard_normal((64, 16)).astype(np.float32), "pos"),
             numpy_helper.from_array(np.array([1], np.int64), "one"),
             numpy_helper.from_array(np.array([0], np.int64), "zero")]
    nodes = [helper.make_node("Gather", ["emb", "ids"], ["tok"], name="embed"),
             helper.make_node("Shape", ["ids"], ["shape"], name="shape"),
             helper.make_node("Gather", ["shape", "one"], ["seq"], name="seq_len"),
             helper.make_node("Slice", ["pos", "zero", "seq", "zero"], ["p"], name="positions"),
             helper.make_node("Add", ["tok", "p"], ["y"], name="sum")]
    g = helper.make_graph(nodes, "embed", [helper.make_tensor_value_info("ids", TensorProto.INT64, ["batch", "seq"])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "seq", 16])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def test_shape_computations_and_int_values_are_compared(seq=16):
    ids = np.random.default_rng(seq).integers(0, 97, (2, seq)).astype(np.int64)
    report = _compare(_embedding_model(), {"ids": ids})
    assert report.ok, report.format()
    by_node = {d.node: d for d in report.values}
    assert by_node["shape"].dtype == "int64" and by_node["shape"].shape == (2,)
    assert by_node["seq_len"].shape == (1,) and by_node["positions"].shape == (seq, 16)
    assert by_node["shape"].original_kernels == []  # folded into dims at import time
    assert "none (folded at import time, or a view)" not in report.format()  # only a wrong node's kernels print


# --------------------------------------------------------------------------------------------
# Comparing arrays


def test_diff_arrays_tolerance_and_special_values():
    want = np.array([1.0, 0.0, np.nan, np.inf, -np.inf], np.float32)
    assert diff_arrays(want.copy(), want, 0, 0)["bad"] == 0  # NaN == NaN, inf == inf
    d = diff_arrays(np.array([1.002, 1e-4, np.nan, np.inf, -np.inf], np.float32), want, 1e-3, 1e-4)
    assert d["bad"] == 1 and d["worst"] == (0,)  # 1e-4 <= atol; 0.002 > 1e-4 + 1e-3 * 1
    assert diff_arrays(np.array([0.0, 0, 1.0, np.inf, -np.inf], np.float32), want, 1, 1)["bad"] == 1  # 1 vs NaN
    assert diff_arrays(np.array([1.0, 0, np.nan, -np.inf, -np.inf], np.float32), want, 1, 1)["bad"] == 1  # -inf vs inf
    shape = diff_arrays(np.zeros((2, 3)), np.zeros((3, 2)), 1, 1)
    assert shape["bad"] == 6 and shape["max_abs"] == np.inf
    ints = diff_arrays(np.array([3, 4], np.int64), np.array([3, 5], np.int64), 1e-3, 1e-4)
    assert ints["bad"] == 1 and ints["max_abs"] == 1 and ints["got"] == 4 and ints["want"] == 5


# --------------------------------------------------------------------------------------------
# Bad input


def test_bad_input(tmp_path):
    path = tmp_path / "mlp.onnx"
    onnx.save(models.mlp(), path)
    with pytest.raises(CompareError, match="could not open '.*missing.onnx': no such file"):
        _compare(tmp_path / "missing.onnx", _feeds())
    (tmp_path / "junk.onnx").write_bytes(b"\x00\x01not a model")
    with pytest.raises(CompareError, match="not a valid ONNX model"):
        _compare(tmp_path / "junk.onnx", _feeds())
    with pytest.raises(CompareError, match=r"input 'x': expected shape \[batch, 8\], got \[3, 4\] \(dim 1\)"):
        _compare(path, {"x": np.zeros((3, 4), np.float32)})
    with pytest.raises(CompareError, match=r"input 'x': expected shape \[batch, 8\], got \[8\] \(rank 1\)"):
        _compare(path, {"x": np.zeros(8, np.float32)})
    with pytest.raises(CompareError, match="input 'x': expected dtype float32, got float64"):
        _compare(path, {"x": np.zeros((3, 8))})
    with pytest.raises(CompareError, match=r"no input named 'z' \(inputs: x\)"):
        _compare(path, {"z": np.zeros((3, 8), np.float32)})
    with pytest.raises(CompareError, match="missing input"):
        _compare(path, {})
    with pytest.raises(UnsupportedModelError) as e:
        _compare(models.unsupported(), {"x": np.zeros(4, np.float32)})
    assert {p.op_type for p in e.value.problems} == {"MaxRoiPool", "STFT", "DFT"}


def test_named_dims_must_agree():
    m = models.mlp()
    m.graph.input.append(helper.make_tensor_value_info("extra", TensorProto.FLOAT, ["batch"]))
    with pytest.raises(CompareError, match=r"input 'extra': dim 0 \('batch'\) is 2, but 'x' has batch=3"):
        _compare(m, {"x": np.zeros((3, 8), np.float32), "extra": np.zeros(2, np.float32)})


# --------------------------------------------------------------------------------------------
# mini-run --compare: exit codes and messages


def test_cli_exit_codes(tmp_path, monkeypatch, capsys):
    path = tmp_path / "mlp.onnx"
    onnx.save(models.mlp(), path)
    args = ["--compare", "onnxruntime", str(path), "--random-inputs", "--dim", "batch=4", "--no-cache"]
    # (the matching run, exit 0, is in tests/lit/mini-run/compare.test)
    assert mini_run.main(["--compare", "onnxruntime", str(path), "--input", "x=[[1, 2]]"]) == 1
    assert "mini-run: error: input 'x': expected shape [batch, 8], got [1, 2] (dim 1)" in capsys.readouterr().err
    assert mini_run.main(["--compare", "onnxruntime", str(tmp_path / "nope.onnx")]) == 1
    assert "no such file" in capsys.readouterr().err
    assert mini_run.main([*args, "--benchmark", "3"]) == 1
    assert "--benchmark: not with --compare" in capsys.readouterr().err
    assert mini_run.main([*args, "--rtol", "-1"]) == 1
    assert "--rtol/--atol must be >= 0" in capsys.readouterr().err
    assert mini_run.main([str(path), "--random-inputs", "--atol", "1e-3"]) == 1
    assert "--rtol/--atol only apply with --compare" in capsys.readouterr().err
    onnx.save(models.unsupported(), tmp_path / "u.onnx")
    assert mini_run.main(["--compare", "onnxruntime", str(tmp_path / "u.onnx"), "--random-inputs"]) == 1
    err = capsys.readouterr().err
    assert all(op in err for op in ("MaxRoiPool", "STFT", "DFT")) and "Traceback" not in err

    _break_relu(monkeypatch)
    assert mini_run.main(args) == 1
    out = capsys.readouterr().out
    assert "first wrong node: 'act' (Relu), node 3 of 5, output 'a'" in out
    assert "shape: float32[4, 16]" in out


def test_kernel_map_follows_groups_that_share_one_function():
    # two identical fc -> bias -> relu groups: graph-fuse outlines one function and calls it twice
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)
             for name, shape in (("W1", (8, 8)), ("W2", (8, 8)), ("b1", (8,)), ("b2", (8,)))]
    nodes = [helper.make_node("MatMul", ["x", "W1"], ["h1"], name="fc1"),
             helper.make_node("Add", ["h1", "b1"], ["a1"], name="bias1"),
             helper.make_node("Relu", ["a1"], ["r1"], name="act1"),
             helper.make_node("MatMul", ["r1", "W2"], ["h2"], name="fc2"),
             helper.make_node("Add", ["h2", "b2"], ["a2"], name="bias2"),
             helper.make_node("Relu", ["a2"], ["r2"], name="act2"),
             helper.make_node("Softmax", ["r2"], ["y"], name="probs")]
    g = helper.make_graph(nodes, "two", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["b", 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["b", 8])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    assert cmp.kernel_map(m) == {i: ["fused_matmul_add_relu"] for i in range(6)} | {6: ["softmax_0"]}


def test_cli_compare_compiles_as_asked(tmp_path, monkeypatch, capsys):
    """--checks and --tuning-db reach every compile of --compare (they were ignored: a "checked"
    comparison ran unchecked)."""
    from minimlir.frontend import api

    path = tmp_path / "mlp.onnx"
    onnx.save(models.mlp(), path)
    db = tmp_path / "t.jsonl"
    db.write_text("")
    seen = []
    real = api.compile

    def spy(model, **kw):
        seen.append({k: kw.get(k) for k in ("checks", "tuning_db")})
        return real(model, **kw)

    monkeypatch.setattr(api, "compile", spy)
    args = ["--compare", "onnxruntime", str(path), "--random-inputs", "--dim", "batch=4", "--no-cache"]
    assert mini_run.main([*args, "--checks", "--tuning-db", str(db)]) == 0
    assert seen and all(s == {"checks": True, "tuning_db": str(db)} for s in seen), seen
    assert "tuning: 0 of " in capsys.readouterr().err
    seen.clear()
    assert mini_run.main(args) == 0
    assert seen and all(s == {"checks": None, "tuning_db": None} for s in seen), seen
    assert mini_run.main([*args, "--tuning-db", str(tmp_path / "none.jsonl")]) == 1
    assert "none.jsonl': no such file" in capsys.readouterr().err
