"""Task extraction (tuning/task.py): unique kernels after fusion, weights, FLOPs, default traces."""

from __future__ import annotations

from minimlir.tuning.task import extract_tasks, kernel_module, kernels_of, structural_key


def two_matmuls(n2: int = 32) -> str:
    return f"""
func.func @main(%a: tensor<16x32xf32>, %b: tensor<32x32xf32>, %c: tensor<32x{n2}xf32>) -> tensor<16x{n2}xf32> {{
  %x = graph.matmul %a, %b : (tensor<16x32xf32>, tensor<32x32xf32>) -> tensor<16x32xf32>
  %y = graph.relu %x : tensor<16x32xf32>
  %z = graph.matmul %y, %c : (tensor<16x32xf32>, tensor<32x{n2}xf32>) -> tensor<16x{n2}xf32>
  %r = graph.relu %z : tensor<16x{n2}xf32>
  func.return %r : tensor<16x{n2}xf32>
}}"""


def test_equal_kernels_are_one_task_with_their_call_count():
    tasks = extract_tasks(two_matmuls(32))
    mm = [t for t in tasks if t.rule == "matmul"]
    assert len(mm) == 1 and mm[0].weight == 2  # weights (b vs c) are arguments: same key
    assert mm[0].flops == 2 * 16 * 32 * 32 + 16 * 32  # the FMAs and the fused relu
    assert mm[0].shapes == [[16, 32], [32, 32], [16, 32]] and mm[0].num_outputs == 1
    # the default row tile (8 with 32 vector registers, else 4 of 6: the rows of M = 16 it wastes least)
    assert mm[0].defaults["matmul.mr"] in (4, 8) and mm[0].facts["matmul.M"] == 16


def test_different_shapes_are_different_tasks():
    tasks = extract_tasks(two_matmuls(48))
    mm = [t for t in tasks if t.rule == "matmul"]
    assert len(mm) == 2 and {t.weight for t in mm} == {1}
    assert len({t.key for t in mm}) == 2


def test_key_ignores_the_kernel_name_and_is_stable():
    t = extract_tasks(two_matmuls(32))[0]
    k = kernels_of(kernel_module(t))[0]
    assert structural_key(k) == t.key
    k.sym_name = type(k.sym_name)("renamed")
    assert structural_key(k) == t.key


def test_key_ignores_the_in_place_mark():
    """loop-mark-inplace's mark follows from the kernel's structure: a database written before
    the mark existed still matches the marked kernel."""
    from xdsl.dialects.builtin import ArrayAttr, IntegerAttr, i64

    from minimlir.passes.loop.inplace import INPLACE_ATTR

    t = extract_tasks(two_matmuls(32))[0]
    k = kernels_of(kernel_module(t))[0]
    before = structural_key(k)
    k.attributes[INPLACE_ATTR] = ArrayAttr([ArrayAttr([IntegerAttr(0, i64), IntegerAttr(2, i64)])])
    assert structural_key(k) == before


def test_dynamic_onnx_dims_are_bound_for_measuring():
    tasks = extract_tasks("examples/mlp.onnx", dims={"batch": 4})
    first = next(t for t in tasks if t.name == "fused_matmul_add_relu")
    assert first.shapes[0] == [4, 64] and first.shapes[-1] == [4, 128]
    assert "?x64xf32" in first.kernel_text  # the compiled (dynamic) kernel is the one keyed
    assert first.flops == 2 * 4 * 64 * 128 + 2 * 4 * 128


def test_weight_packing_at_bind_time_is_not_a_task():
    """conv_add_relu.onnx's weight is packed by graph-lift-params' function (once, when the weights
    are bound): only the conv kernel the model runs is a task."""
    tasks = extract_tasks("examples/conv_add_relu.onnx", dims={"batch": 1})
    assert [t.rule for t in tasks] == ["conv2d"] and tasks[0].weight == 1


def test_dynamic_kernels_are_measured_at_the_bound_dims(tmp_path):
    """An encoder whose sequence length reaches the matmuls through a Shape-derived slice (a dim
    read from tensor data) and whose matmul weights the statically bound twin packs differently:
    the matmul tasks are sized at the bound `seq` from their call sites (graph-infer-dims' dims,
    the data-dependent one from the twin), not at 1 (they were, and their records then made the
    model slower)."""
    import sys
    from pathlib import Path

    import onnx

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "frontend"))
    from test_dynamic_lengths import _encoder_model

    path = tmp_path / "enc.onnx"
    onnx.save(_encoder_model(layers=1, d=128, heads=4), str(path))
    tasks = extract_tasks(str(path), dims={"batch": 1, "seq": 128})
    mms = [t for t in tasks if t.rule == "matmul" and len(t.shapes[0]) == 3]
    assert mms, [t.name for t in tasks]
    for t in mms:
        assert t.shapes[0][:2] == [1, 128] and t.shapes[-1][:2] == [1, 128], (t.name, t.shapes)


def test_cold_args_are_the_weights_when_the_model_outgrows_the_cache(monkeypatch):
    """cache_flush: the tasks of a model whose parameters exceed the last-level cache are timed with
    their weight arguments flushed (they come from memory on every run of such a model); "on" /
    "off" force it. The activation (argument 0) is never flushed: the previous kernel wrote it."""
    import pytest

    from minimlir.tuning import task as T

    def cold(mode):
        return {t.name: t.cold_args for t in extract_tasks("examples/mlp.onnx", dims={"batch": 4}, cache_flush=mode)}

    on = cold("on")
    assert on["fused_matmul_add_relu"] == [1, 2] and on["fused_matmul_add"] == [1, 2]  # weight and bias
    assert on["softmax_0"] == []
    assert all(v == [] for v in cold("off").values())
    weights, nbytes = T.param_args(T._prefixed("examples/mlp.onnx"))
    assert nbytes == 4 * (64 * 128 + 128 + 128 * 10 + 10)
    monkeypatch.setattr(T, "last_level_cache_bytes", lambda: nbytes + 1)  # the weights fit: warm
    assert all(v == [] for v in cold("auto").values())
    monkeypatch.setattr(T, "last_level_cache_bytes", lambda: nbytes - 1)  # they do not: cold
    assert cold("auto") == on
    with pytest.raises(ValueError, match="cache_flush"):
        cold("sometimes")


def test_a_weight_is_cold_only_if_it_is_one_at_every_call_site():
    """Two calls of one task class: the second matmul's right operand is a model input, not a
    parameter, so the class's weight argument is not flushed."""
    import numpy as np

    text = """
func.func @main(%a: tensor<16x32xf32>, %b: tensor<32x32xf32>) -> tensor<16x32xf32> {
  %w = graph.param "w" : tensor<32x32xf32>
  %x = graph.matmul %a, %w : (tensor<16x32xf32>, tensor<32x32xf32>) -> tensor<16x32xf32>
  %y = graph.matmul %x, %b : (tensor<16x32xf32>, tensor<32x32xf32>) -> tensor<16x32xf32>
  func.return %y : tensor<16x32xf32>
}"""
    params = {"w": np.ones((32, 32), "float32")}
    mm = [t for t in extract_tasks(text, params=params, cache_flush="on") if t.rule == "matmul"]
    assert len(mm) == 1 and mm[0].weight == 2 and mm[0].cold_args == []
    one = text.replace("%x, %b", "%x, %w")  # both calls take the parameter: flushed
    mm = [t for t in extract_tasks(one, params=params, cache_flush="on") if t.rule == "matmul"]
    assert len(mm) == 1 and mm[0].weight == 2 and mm[0].cold_args == [1]


def test_list_tasks_shows_the_flushed_arguments(tmp_path):
    import subprocess
    import sys

    def run(*extra):
        return subprocess.run([sys.executable, "-m", "minimlir.tools.mini_tune", "examples/mlp.onnx", "--db",
                               str(tmp_path / "t.jsonl"), "--list-tasks", "--no-algorithms", *extra],
                              capture_output=True, text=True)

    on = run("--cache-flush", "on")
    assert on.returncode == 0, on.stderr
    assert "fused_matmul_add_relu [matmul] x1 (1x64, 64x128, 128, 1x128) 0.0 MFLOP, timed with argument(s) 1, 2 " \
           "flushed" in on.stdout, on.stdout
    default = run()  # auto: 38 KB of weights stay cached
    assert default.returncode == 0 and "flushed" not in default.stdout
    bad = run("--cache-flush", "sometimes")
    assert bad.returncode == 1 and "--cache-flush" in bad.stderr and "Traceback" not in bad.stderr
