"""Random-graph differential testing: the generator, the judge, the shrinker, a fixed-seed sample.

The long run is `python benchmarks/fuzz_graphs.py --n 2000 --seed S`; here a sample of 50 graphs of
seed 20261201 is compiled and judged against onnxruntime (float64 twin), and the generator and the
shrinker are tested on their own (the shrinker against fake compilers with an injected fault).
"""

from __future__ import annotations

import collections
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from minimlir.frontend import random_graphs as rg
from minimlir.frontend.onnx_import import check_support

SAMPLE_SEED = 20261201
REPO = Path(__file__).resolve().parents[3]

OP_SET = {
    "Abs", "Neg", "Relu", "Sigmoid", "Tanh", "Erf", "Softplus", "Exp", "Log", "Sqrt", "Reciprocal", "Floor",
    "Ceil", "Sign", "HardSwish", "LeakyRelu", "Elu", "HardSigmoid", "Clip",
    "Add", "Sub", "Mul", "Div", "Max", "Min", "Pow", "Greater", "Less", "Equal", "And", "Or", "Not", "Where",
    "MatMul", "Gemm", "Conv", "MaxPool", "AveragePool", "Reshape", "Transpose", "Concat", "Slice", "Gather",
    "Split", "Expand", "ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "Softmax", "LogSoftmax",
    "LayerNormalization", "Cast",
}


@pytest.fixture(scope="module")
def many():
    return [rg.generate(7, i) for i in range(300)]


# ---------------------------------------------------------------------------------- generator


def test_generated_graphs_are_valid_onnx(many):
    for m in many[:60]:
        onnx.checker.check_model(m, full_check=True)
        onnx.shape_inference.infer_shapes(m, check_type=True, strict_mode=True, data_prop=True)
        assert 2 <= len(m.graph.node) <= 9 or len(m.graph.node) >= 1
        assert rg.metadata(m)["envs"] and len(rg.metadata(m)["envs"]) >= 2


def test_generation_is_a_pure_function_of_seed_and_index():
    a = [rg.generate(11, i).SerializeToString() for i in range(8)]
    b = [rg.generate(11, i).SerializeToString() for i in reversed(range(8))][::-1]
    assert a == b
    assert len(set(a)) == len(a)
    assert rg.generate(12, 0).SerializeToString() != a[0]
    m = rg.generate(11, 3)
    for r in range(len(rg.metadata(m)["envs"])):
        f1, f2 = rg.make_feeds(m, r), rg.make_feeds(m, r)
        assert f1.keys() == f2.keys() and all(np.array_equal(f1[k], f2[k]) for k in f1)


def test_generator_covers_the_op_set_and_dims(many):
    ops = collections.Counter(n.op_type for m in many for n in m.graph.node)
    assert set(ops) == OP_SET, (OP_SET - set(ops), set(ops) - OP_SET)
    attrs = collections.defaultdict(set)
    for m in many:
        for n in m.graph.node:
            for a in n.attribute:
                v = helper.get_attribute_value(a)
                attrs[(n.op_type, a.name)].add(tuple(v) if isinstance(v, list) else v)
    assert {(1,), (0,)} <= {(k,) for k in attrs[("ReduceSum", "keepdims")]} | {(k,) for k in attrs[("ReduceMax", "keepdims")]}
    assert any(s != 1 for v in attrs[("Conv", "strides")] for s in v)
    assert any(d != 1 for v in attrs[("Conv", "dilations")] for d in v)
    assert any(p != 0 for v in attrs[("Conv", "pads")] for p in v)
    assert attrs[("Conv", "group")] - {1}
    assert attrs[("MaxPool", "ceil_mode")] == {1}
    dims, dynamic = set(), 0
    for m in many:
        for vi in m.graph.input:
            for d in vi.type.tensor_type.shape.dim:
                if d.HasField("dim_value"):
                    dims.add(d.dim_value)
                else:
                    dynamic += 1
        for env in rg.metadata(m)["envs"]:
            dims.update(env.values())
    assert dynamic > 50
    assert {1, 2, 3, 5, 7, 13, 16, 17, 31, 37} <= dims


def test_generator_emits_only_supported_ops(many):
    for m in many[:150]:
        bad = [row for row in check_support(m) if row[3] is not None]
        assert not bad, bad


def test_float64_twin_runs_double_kernels_and_wraps_the_others():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N0", 2, 5, 5])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    w = numpy_helper.from_array(np.ones((3, 2, 3, 3), np.float32), "w")
    g = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["c"], name="conv"),
                           helper.make_node("Sigmoid", ["c"], ["y"], name="sig")], "g", [x], [y], [w])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
    m.ir_version = 9
    rg.set_metadata(m, {"envs": [{"N0": 1}], "inputs": {"x": [-1, 1]}})
    sess, wrapped = rg.float64_session(m)
    assert wrapped == ["conv"]  # onnxruntime has no double Conv; Sigmoid runs in double
    (out,) = sess.run(None, {"x": rg.make_feeds(m, 0)["x"].astype(np.float64)})
    assert out.dtype == np.float64 and out.shape == (1, 3, 3, 3)


# ---------------------------------------------------------------------------------- judge


def test_reference_sessions_run_the_plain_kernels():
    """onnxruntime 1.31's extended graph optimizations turn Transpose + MatMul with a 1-D right
    operand into a wrong FusedMatMul (found as fuzzer seed 1 graph 97); the reference runs the
    graph unoptimized."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [5, 11])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [11])
    wv = np.linspace(-1, 1, 5).astype(np.float32)
    g = helper.make_graph([helper.make_node("Transpose", ["x"], ["t"]), helper.make_node("MatMul", ["t", "w"], ["y"])],
                          "g", [x], [y], [numpy_helper.from_array(wv, "w")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
    m.ir_version = 9
    xv = np.random.default_rng(0).uniform(-1, 1, (5, 11)).astype(np.float32)
    (out,) = rg.ort_session(m).run(None, {"x": xv})
    np.testing.assert_allclose(out, xv.T @ wv, rtol=1e-5, atol=1e-6)


def test_judge_does_not_count_being_more_accurate_than_float32():
    x = np.array([-20.0, -18.5, 0.0, 3.0])
    ref64 = 1 / (1 + np.exp(-x))
    ref32 = ref64.astype(np.float32)
    ref32[0] = 0.0  # onnxruntime's float32 Sigmoid below about -18
    ours = ref64.astype(np.float32)
    assert rg.compare(ours, ref64, ref32)[0] == 0
    wrong = ours.copy()
    wrong[3] += 1e-2
    bad, max_abs, detail = rg.compare(wrong, ref64, ref32)
    assert bad == 1 and max_abs > 9e-3 and "[3]" in detail
    assert rg.compare(ours[:3], ref64, ref32)[0] > 0  # shape
    assert rg.compare(np.array([1, 2]), np.array([1, 3]), np.array([1, 3]))[0] == 1


# ---------------------------------------------------------------------------------- shrinker


def _perturbing(op: str):
    """A fake compiler: onnxruntime, with 0.5 added to every output of `op`."""
    def compile_fn(model):
        m = onnx.ModelProto()
        m.CopyFrom(model)
        nodes = []
        for n in m.graph.node:
            nodes.append(n)
            if n.op_type == op:
                y = n.output[0]
                n.output[0] = y + "_raw"
                nodes.append(helper.make_node("Add", [y + "_raw", "__half"], [y]))
        del m.graph.node[:]
        m.graph.node.extend(nodes)
        m.graph.initializer.append(numpy_helper.from_array(np.array(0.5, np.float32), "__half"))
        sess = rg.ort_session(m)
        return lambda **feeds: sess.run(None, feeds)
    return compile_fn


def _find(op: str, min_nodes: int = 5) -> onnx.ModelProto:
    for i in range(400):
        m = rg.generate(3, i)
        ops = [n.op_type for n in m.graph.node]
        if op in ops and ops[0] != op and len(ops) >= min_nodes:
            return m
    raise AssertionError(f"no graph with {op}")


@pytest.mark.parametrize("op", ["Softmax", "Conv", "MaxPool"])
def test_shrinker_reduces_an_injected_mismatch_to_the_op(op):
    fake = _perturbing(op)
    model = _find(op)
    res = rg.check(model, fake)
    assert res.kind == "mismatch"
    small = rg.shrink(model, lambda m: rg.check(m, fake).kind == "mismatch")
    assert [n.op_type for n in small.graph.node] == [op]
    assert len(rg.metadata(small)["envs"]) == 1
    assert rg.check(small, fake).kind == "mismatch" and rg.check(small, lambda m: _perturbing("None")(m)).ok
    rg.validate(small)


def test_shrinker_reduces_a_crash_to_the_op():
    def crashes_on_gemm(model):
        if any(n.op_type == "Gemm" for n in model.graph.node):
            raise RuntimeError("injected: Gemm")
        return _perturbing("None")(model)

    model = _find("Gemm")
    assert rg.check(model, crashes_on_gemm).kind == "crash"
    small = rg.shrink(model, lambda m: rg.check(m, crashes_on_gemm).kind == "crash")
    assert [n.op_type for n in small.graph.node] == ["Gemm"]


def test_replay_command_shows_the_mismatch(tmp_path):
    model = rg.generate(SAMPLE_SEED, 0, n_nodes=2)
    path = tmp_path / "case.onnx"
    onnx.save(model, path)
    cmd = rg.reproduce_command(str(path)).split()
    assert cmd[:2] == ["python", "benchmarks/fuzz_graphs.py"]
    p = subprocess.run([sys.executable, *cmd[1:]], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "kind: ok" in p.stdout and "runs:" in p.stdout
    (tmp_path / "bad.onnx").write_text("not onnx")
    p = subprocess.run([sys.executable, "benchmarks/fuzz_graphs.py", "--replay", str(tmp_path / "bad.onnx")],
                       cwd=REPO, capture_output=True, text=True, timeout=600)
    assert p.returncode == 1 and "error: cannot load" in p.stderr and "Traceback" not in p.stderr


# ---------------------------------------------------------------------------------- the sample


@pytest.mark.parametrize("index", range(50))
def test_fixed_seed_sample_matches_onnxruntime(index, monkeypatch):
    monkeypatch.setenv("MINIMLIR_COMPILE_JOBS", "1")
    model = rg.generate(SAMPLE_SEED, index, n_nodes=2 + index % 3)  # small graphs: 50 in about a minute
    res = rg.check(model)
    assert res.kind == "ok", f"{res.message}\n{rg.report_text(model, res)}"
    assert res.sizes_run >= 2


def _winograd_convs(model: onnx.ModelProto) -> int:
    """Convs graph-winograd can compute once the graph's dynamic dims are bound."""
    from minimlir.frontend.api import load, lower, make_context
    from minimlir.passes.graph.winograd import eligible
    from minimlir.tuning.algorithms import convs_of

    m = onnx.ModelProto()
    m.CopyFrom(model)
    for inp in m.graph.input:
        for d in inp.type.tensor_type.shape.dim:
            if d.dim_param:
                d.Clear()
                d.dim_value = 3
    del m.graph.value_info[:]
    ctx = make_context()
    loaded = load(m, ctx=ctx)
    lower(loaded.module, "graph-strength-reduce,graph-layout", ctx=ctx)
    return sum(eligible(c, 1, 1) for c in convs_of(loaded.module))


@pytest.mark.parametrize("tile", [2, 4])
@pytest.mark.parametrize("index", [9, 89])  # graphs of seed 133 whose conv block starts with a 3x3 stride-1 conv
def test_winograd_sample_matches_onnxruntime(index, tile, monkeypatch):
    """`fuzz_graphs.py --winograd M`'s mode on two graphs: every conv Winograd can compute runs as
    F(M x M, 3x3) whatever its size (what a tuning database may choose)."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    import fuzz_graphs

    monkeypatch.setenv("MINIMLIR_COMPILE_JOBS", "1")
    monkeypatch.setenv(fuzz_graphs.WINOGRAD_ENV, str(tile))
    model = rg.generate(133, index)
    assert _winograd_convs(model) >= 1
    progs = []

    def compile_fn(m):
        progs.append(fuzz_graphs._check_options()["compile_fn"](m))
        return progs[-1]

    res = rg.check(model, compile_fn=compile_fn)
    assert res.kind == "ok", f"{res.message}\n{rg.report_text(model, res)}"
    assert res.sizes_run >= 2
    assert f"graph-winograd{{min-channels=1 min-pixels=1 tile={tile}}}" in progs[0].pipeline
