"""graph-pack-weights on matmuls: a weight B (K, N) packed once, when the weights are bound, in the
column panels the matmul rule streams (`weight_tile`), instead of the rule copying each panel of
B in every call (onnxruntime pre-packs its GEMMs' constant B at session creation too). Checked
against numpy and onnxruntime: a matmul reading a packed B (both backends, ragged last panels),
the verifier, models whose weights are packed (no per-call packing nest left), a tuned panel
other than the packed one, weights bound again."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from xdsl.utils.exceptions import VerifyException

from minimlir.backend.runtime import compile_mlir_text
from minimlir.compiler import driver
from minimlir.compiler.interpreter import BACKENDS, assert_outputs, parse, run_graph, tensor_type as ttype
from minimlir.compiler.pipelines import expand
from minimlir.dialects import loop
from minimlir.frontend import compile
from minimlir.frontend.api import load
from minimlir.passes.loop.schedule.default.config import ScheduleConfig
from minimlir.passes.loop.schedule.default.matmul import matmul_weight_panel

RNG = np.random.default_rng(11)


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def pack(b: np.ndarray, t: int) -> np.ndarray:
    """(K, N) -> (ceil(N/t), K, t): B[k, n] at [n // t, k, n % t], the last panel zero-padded."""
    k, n = b.shape
    p = -(-n // t)
    padded = np.zeros((k, p * t), np.float32)
    padded[:, :n] = b
    return np.ascontiguousarray(padded.reshape(k, p, t).transpose(1, 0, 2))


# lhs shape, N, tile: whole panels, a ragged last panel, N below one panel, a batched lhs
PACKED = [((16, 20), 48, 24), ((9, 20), 40, 24), ((7, 5), 5, 8), ((2, 12, 8), 36, 16)]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("a_shape,n,tile", PACKED)
def test_matmul_reads_a_packed_weight(backend, a_shape, n, tile):
    a, b = rand(*a_shape), rand(a_shape[-1], n)
    bp = pack(b, tile)
    at, bt, yt = ttype(a_shape), ttype(bp.shape), ttype((*a_shape[:-1], n))
    text = (f"func.func @main(%a: {at}, %b: {bt}) -> {yt} {{\n"
            f"  %y = graph.matmul %a, %b weight_tile {tile} : ({at}, {bt}) -> {yt}\n  func.return %y : {yt}\n}}\n")
    (y,) = run_graph(text, [a, bp], backend=backend)
    assert_outputs([y], [a @ b], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("b_type,y_type,match", [
    ("tensor<2x8x16xf32>", "tensor<4x40xf32>", r"weight_tile 16 must have static shape \(ceil\(N/16\), K, 16\) "
                                                r"for the result's N \(40\)"),
    ("tensor<3x8x8xf32>", "tensor<4x40xf32>", r"must have static shape"),
    ("tensor<3x9x16xf32>", "tensor<4x40xf32>", r"lhs.*rhs|contraction|K"),
])
def test_packed_matmul_shapes_are_verified(b_type, y_type, match):
    text = (f"func.func @main(%a: tensor<4x8xf32>, %b: {b_type}) -> {y_type} {{\n"
            f"  %y = graph.matmul %a, %b weight_tile 16 : (tensor<4x8xf32>, {b_type}) -> {y_type}\n"
            f"  func.return %y : {y_type}\n}}\n")
    with pytest.raises(VerifyException, match=match):
        parse(text).verify()


def _linear_model(path, m, k, n, gelu=False, seed=0):
    """x (1, m, k) @ W (k, n) + b, then an erf GELU or not; W and b initializers."""
    rng = np.random.default_rng(seed)
    inits = [numpy_helper.from_array((rng.standard_normal((k, n)) * 0.1).astype(np.float32), "w"),
             numpy_helper.from_array(rng.standard_normal(n).astype(np.float32), "b")]
    nodes = [helper.make_node("MatMul", ["x", "w"], ["mm"]), helper.make_node("Add", ["mm", "b"], ["y0"])]
    out = "y0"
    if gelu:
        inits += [numpy_helper.from_array(np.array(np.sqrt(2.0), np.float32), "s"),
                  numpy_helper.from_array(np.array(1.0, np.float32), "one"),
                  numpy_helper.from_array(np.array(0.5, np.float32), "half")]
        nodes += [helper.make_node("Div", ["y0", "s"], ["d"]), helper.make_node("Erf", ["d"], ["e"]),
                  helper.make_node("Add", ["e", "one"], ["e1"]), helper.make_node("Mul", ["y0", "e1"], ["g"]),
                  helper.make_node("Mul", ["g", "half"], ["y"])]
        out = "y"
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, m, k])],
                          [helper.make_tensor_value_info(out, TensorProto.FLOAT, None)], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)
    return path


def _kernel_blocks(path) -> list[str]:
    module = load(path).module
    driver.lower(module, expand("compile-whole-module") + ",loop-schedule{lower=false}")
    return [b.block_name.data for k in module.ops if "loop.kernel" in k.attributes for b in loop.blocks_of(k)]


@pytest.mark.parametrize("m,k,n,gelu", [(64, 96, 200, True), (48, 64, 128, False)])
def test_matmul_weights_are_packed_once_and_match_onnxruntime(tmp_path, m, k, n, gelu):
    """The weight is packed once, in the panel the rule streams (ragged N: the last panel
    padded), and the kernel reads it as it is: no per-call copy of B's panels (the `_pack_b`
    nest each call ran before). Same result as onnxruntime."""
    path = _linear_model(tmp_path / "lin.onnx", m, k, n, gelu)
    mod = compile(path, cache=False)
    tile = matmul_weight_panel(m, k, n, ScheduleConfig.for_host())
    assert tile > 0
    assert [v.shape for v in mod.program.lifted_params().values()] == [(-(-n // tile), k, tile)]
    x = rand(1, m, k)
    np.testing.assert_allclose(mod(x)[0], ort.InferenceSession(str(path)).run(None, {"x": x})[0],
                               rtol=1e-4, atol=1e-4)
    blocks = _kernel_blocks(path)
    assert any(b.startswith("matmul") for b in blocks)
    assert not [b for b in blocks if b.endswith("_pack_b") or b.endswith("_repack_b")], blocks


def test_a_small_m_keeps_its_weight():
    """A matmul the rule does not pack B for (M = 1, a decode step or a classifier at batch 1)
    reads the weight as it is: nothing packed, nothing lifted."""
    assert matmul_weight_panel(1, 512, 1000, ScheduleConfig.for_host()) == 0
    text = ("func.func @main(%x: tensor<1x64xf32>) -> tensor<1x40xf32> {\n"
            '  %w = graph.param "w" : tensor<64x40xf32>\n'
            "  %y = graph.matmul %x, %w : (tensor<1x64xf32>, tensor<64x40xf32>) -> tensor<1x40xf32>\n"
            "  func.return %y : tensor<1x40xf32>\n}\n")
    m = parse(text)
    driver.lower(m, "graph-pack-weights")
    assert not [o for o in m.walk() if o.name == "graph.matmul" and o.tile]


def test_a_tuned_matmul_panel_repacks_from_the_packed_layout():
    """loop-schedule with another panel (nv=1: 8 columns) than graph-pack-weights packed in (16):
    the kernel repacks B from the packed layout per call, with the same result; N ragged."""
    w, x = rand(64, 36), rand(1, 32, 64)
    text = ("func.func @main(%x: tensor<1x32x64xf32>) -> tensor<1x32x36xf32> {\n"
            '  %w = graph.param "w" : tensor<64x36xf32>\n'
            "  %y = graph.matmul %x, %w : (tensor<1x32x64xf32>, tensor<64x36xf32>) -> tensor<1x32x36xf32>\n"
            "  func.return %y : tensor<1x32x36xf32>\n}\n")
    passes = expand("compile").split(",")
    passes[passes.index("graph-pack-weights")] = "graph-pack-weights{width=8}"
    for sched, blocks in (("loop-schedule{width=8 nv=1}", {"matmul_repack_b"}), ("loop-schedule{width=8}", set())):
        passes[[i for i, p in enumerate(passes) if p.startswith("loop-schedule")][0]] = sched
        prog = compile_mlir_text(text, pipeline=",".join(passes), params={"w": w}, cache=False)
        assert_outputs([prog.main(x)], [x @ w], rtol=1e-4, atol=1e-4)
        assert [v.shape for v in prog.lifted_params().values()] == [(3, 64, 16)]
        module = parse(text)
        driver.lower(module, ",".join(passes[:passes.index(sched)]) + "," + sched.replace("}", " lower=false}"))
        names = {b.block_name.data for k in module.ops if "loop.kernel" in k.attributes for b in loop.blocks_of(k)}
        assert {n for n in names if n.endswith("pack_b")} == blocks, names


def test_rebinding_the_weights_recomputes_the_packed_matmul_weight(tmp_path):
    from test_pack_weights import check_rebinding

    check_rebinding(_linear_model(tmp_path / "lin.onnx", 48, 64, 40), rand(1, 48, 64), "w")
