"""graph-fuse + graph-legalize + loop-fuse compute what graph-legalize alone computes.

Each case runs the same graph function twice through the loop-level interpreter of
`minimlir.compiler.interpreter`: unfused (graph-legalize) and fused (graph-fuse, graph-legalize, loop-fuse),
on random inputs, static and dynamic shapes. Each case also says how many kernel calls the fused
entry function makes, so a test cannot pass by not fusing.
"""

from __future__ import annotations

import numpy as np
import pytest
from minimlir.compiler.interpreter import assert_outputs, interpret_kernels, parse, run_graph
from xdsl.context import Context
from xdsl.dialects import func

from minimlir.dialects import graph, loop
from minimlir.passes.graph.fuse import GraphFusePass, is_primitive
from minimlir.passes.graph.legalize import GraphLegalizePass
from minimlir.passes.loop.fuse import LoopFusePass

RNG = np.random.default_rng(11)


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def fused_module(text: str, **fuse_options):
    module = parse(text)
    module.verify()
    ctx = Context()
    GraphFusePass(**fuse_options).apply(ctx, module)
    module.verify()
    GraphLegalizePass().apply(ctx, module)
    module.verify()
    LoopFusePass().apply(ctx, module)
    module.verify()
    return module


def kernel_calls(module, name: str = "main") -> list[str]:
    entry = next(f for f in module.ops if isinstance(f, func.FuncOp) and f.sym_name.data == name)
    return [op.callee.string_value() for op in entry.walk() if isinstance(op, graph.CallKernelOp)]


def check(text: str, inputs, n_calls: int, **fuse_options):
    expected = run_graph(text, inputs, backend="interp", func_name="main")
    module = fused_module(text, **fuse_options)
    assert not any(is_primitive(f) for f in module.ops)
    calls = kernel_calls(module)
    assert len(calls) == n_calls, calls
    for name in calls:
        kernel = next(f for f in module.ops if isinstance(f, func.FuncOp) and f.sym_name.data == name)
        assert loop.is_kernel(kernel)
    actual = interpret_kernels(module, "main", inputs)
    assert_outputs(actual, expected)
    return module


CONV_ADD_RELU = """
func.func @main(%x: tensor<{n}x2x5x5xf32>, %w: tensor<3x2x3x3xf32>, %b: tensor<3x1x1xf32>) -> tensor<{n}x3x3x3xf32> {{
  %c = graph.conv2d %x, %w : (tensor<{n}x2x5x5xf32>, tensor<3x2x3x3xf32>) -> tensor<{n}x3x3x3xf32>
  %a = graph.add %c, %b : (tensor<{n}x3x3x3xf32>, tensor<3x1x1xf32>) -> tensor<{n}x3x3x3xf32>
  %r = graph.relu %a : tensor<{n}x3x3x3xf32>
  func.return %r : tensor<{n}x3x3x3xf32>
}}
"""


@pytest.mark.parametrize("n", ["1", "?"])
def test_conv_add_relu_is_one_kernel(n):
    module = check(CONV_ADD_RELU.format(n=n), [rand(1, 2, 5, 5), rand(3, 2, 3, 3), rand(3, 1, 1)], 1)
    (name,) = kernel_calls(module)
    kernel = next(f for f in module.ops if isinstance(f, func.FuncOp) and f.sym_name.data == name)
    names = [b.block_name.data for b in loop.blocks_of(kernel)]
    assert names == ["conv2d", "add", "relu"]


MATMUL_SOFTMAX = """
func.func @main(%x: tensor<?x4xf32>, %w: tensor<4x6xf32>, %b: tensor<6xf32>) -> tensor<?x6xf32> {
  %m = graph.matmul %x, %w : (tensor<?x4xf32>, tensor<4x6xf32>) -> tensor<?x6xf32>
  %a = graph.add %m, %b : (tensor<?x6xf32>, tensor<6xf32>) -> tensor<?x6xf32>
  %s = graph.softmax %a axis 1 : tensor<?x6xf32>
  %e = graph.exp %s : tensor<?x6xf32>
  func.return %e : tensor<?x6xf32>
}
"""


@pytest.mark.parametrize("rows", [1, 3])
def test_matmul_softmax_two_groups(rows):
    # matmul+add | softmax | exp: the reduction neither absorbs the matmul nor fuses forward.
    check(MATMUL_SOFTMAX, [rand(rows, 4), rand(4, 6), rand(6)], 3)


DIAMOND = """
func.func @main(%x: tensor<?x5xf32>, %y: tensor<5xf32>) -> (tensor<?x5xf32>, tensor<?x1xf32>) {
  %t = graph.sub %x, %y : (tensor<?x5xf32>, tensor<5xf32>) -> tensor<?x5xf32>
  %e = graph.exp %t : tensor<?x5xf32>
  %h = graph.tanh %t : tensor<?x5xf32>
  %a = graph.mul %e, %h : (tensor<?x5xf32>, tensor<?x5xf32>) -> tensor<?x5xf32>
  %s = graph.reduce_sum %a axes [1] : tensor<?x5xf32> -> tensor<?x1xf32>
  func.return %a, %s : tensor<?x5xf32>, tensor<?x1xf32>
}
"""


def test_diamond_with_returned_intermediate():
    # sub/exp/tanh/mul fuse (mul post-dominates sub); %a is returned, so the reduction stays out.
    check(DIAMOND, [rand(3, 5), rand(5)], 2)


INJECTIVE_REDUCE = """
func.func @main(%x: tensor<?x6xf32>) -> tensor<3x1xf32> {
  %n = graph.dim %x, 0 : tensor<?x6xf32>
  %r = graph.reshape %x dims(%n) : tensor<?x6xf32> -> tensor<?x2x3xf32>
  %t = graph.transpose %r perm [2, 1, 0] : tensor<?x2x3xf32> -> tensor<3x2x?xf32>
  %e = graph.abs %t : tensor<3x2x?xf32>
  %s = graph.reduce_max %e axes [1, 2] : tensor<3x2x?xf32> -> tensor<3x1x1xf32>
  %o = graph.reshape %s : tensor<3x1x1xf32> -> tensor<3x1xf32>
  func.return %o : tensor<3x1xf32>
}
"""


@pytest.mark.parametrize("rows", [1, 4])
def test_injective_into_reduce_dynamic(rows):
    # reshape, transpose and abs fuse into the reduction (the last reshape stays: reductions do
    # not fuse forward, and a single reshape is not outlined).
    check(INJECTIVE_REDUCE, [rand(rows, 6)], 1)


CHAIN = """
func.func @main(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = graph.neg %x : tensor<2x3xf32>
  %1 = graph.exp %0 : tensor<2x3xf32>
  %2 = graph.sigmoid %1 : tensor<2x3xf32>
  %3 = graph.abs %2 : tensor<2x3xf32>
  %4 = graph.sqrt %3 : tensor<2x3xf32>
  func.return %4 : tensor<2x3xf32>
}
"""


@pytest.mark.parametrize("depth,calls", [(7, 1), (2, 3), (1, 5)])
def test_max_depth(depth, calls):
    check(CHAIN, [rand(2, 3)], calls, max_depth=depth)


SCALE_SOFTMAX = """
func.func @main(%x: tensor<?x7xf32>, %s: tensor<7xf32>, %g: tensor<7xf32>) -> tensor<?x7xf32> {
  %m = graph.mul %x, %s : (tensor<?x7xf32>, tensor<7xf32>) -> tensor<?x7xf32>
  %p = graph.softmax %m axis 1 : tensor<?x7xf32>
  %q = graph.layer_norm %x, %g axis 1 epsilon 1.0e-05 : (tensor<?x7xf32>, tensor<7xf32>) -> tensor<?x7xf32>
  %r = graph.add %p, %q : (tensor<?x7xf32>, tensor<?x7xf32>) -> tensor<?x7xf32>
  func.return %r : tensor<?x7xf32>
}
"""


def test_reductions_absorb_elementwise_inputs():
    # mul -> softmax is one kernel (softmax's own scratch buffers come along); layer_norm and
    # the final add stay alone: a reduction does not fuse into its consumers.
    module = check(SCALE_SOFTMAX, [rand(3, 7), rand(7), rand(7)], 3)
    assert kernel_calls(module)[0].startswith("fused_mul_softmax")
