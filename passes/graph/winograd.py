"""graph-winograd: a 3x3 stride-1 convolution with many channels becomes Winograd's F(2x2, 3x3)
(Lavin and Gray, 2015; TVM's and ncnn's conv2d_winograd): 16 multiplications per 2x2 output tile
and channel pair, not 36, so 2.25x fewer FLOPs in the product that dominates.

    Y = A^T [ (G g G^T) * (B^T d B) ] A        per 4x4 input tile d, 3x3 filter g, 2x2 output tile

in graph ops the default pipeline already makes fast:

  * the filter transform U = G g G^T (16 x C x K) is weight-only: graph-lift-params computes it
    once, at load time;
  * the input transform, one op (`graph.winograd_input`, one kernel): every tile's 4x4 window of
    the input (zero outside it: the conv's padding is never materialized), B^T d B in adds and
    subtracts, stored as (16, tiles, C), the channels innermost;
  * the product: a batched matmul (16, tiles, C) x (16, C, K), the matmul rule's register tiles;
  * the output transform: the 4 x 16 matrix A^T (x) A^T, then a transpose that interleaves the
    2x2 tiles back into rows (and crops an odd size), then the conv's bias. The conv's consumers
    (ReLU, a residual add) fuse with it as they did with the conv.

    %y = graph.conv2d %x, %w, %b pads [1, 1, 1, 1] : (tensor<1x256x14x14xf32>, tensor<256x256x3x3xf32>, …) -> …
  ->
    %u = … G w G^T (weight-only) …                                        : tensor<16x256x256xf32>
    %v = graph.winograd_input %x pads [1, 1] tiles [7, 7] : tensor<1x256x14x14xf32> -> tensor<16x49x256xf32>
    %m = graph.matmul %v, %u : (tensor<16x49x256xf32>, tensor<16x256x256xf32>) -> tensor<16x49x256xf32>
    … graph.matmul by A^T (x) A^T, reshape, transpose, reshape, graph.add %b …

Both layouts: an NCHW input or a channel-blocked one (rank 5, graph-layout's NCHW{B}c), an NCHW
or a blocked result (`block`). Applies to f32 convs with static shapes, group 1, stride and
dilation 1, a weight-only 3x3 filter (not yet packed), and at least `min-channels` input and output
channels: below that the transforms cost what the product saves. Measured on this project's
machines (Zen 1, one thread; `python benchmarks/winograd.py`: a ResNet block of two convs, ReLU and
residual add): 64 channels at 56x56 1.49x faster, 128 at 28x28 1.78x, 256 at 14x14 1.68x, 512 at
7x7 1.03x (hence `min-pixels`); ResNet-50 end to end 1.13x.

The result differs from the direct convolution by rounding only (F(2x2, 3x3)'s transforms are
sums and halves: about 1e-6 relative on unit-scale data).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, Float32Type, ModuleOp, TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from minimlir.dialects import graph
from minimlir.passes.graph.lift_params import weight_only

# F(2x2, 3x3): input transform B^T (4x4), filter transform G (4x3), output transform A^T (2x4)
BT = np.array([[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]], np.float32)
G = np.array([[1, 0, 0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0, 0, 1]], np.float32)
AT = np.array([[1, 1, 1, 0], [0, 1, -1, -1]], np.float32)

MIN_CHANNELS = 64
"""Default `min-channels`: fewer input or output channels and the transforms cost what the product saves."""
MIN_PIXELS = 196
"""Default `min-pixels` (output pixels per image, 14x14): at 7x7 the 2x2 tiles cover 8x8 (31% wasted)
and the batched matmul has 16 rows: ResNet-50's 512-channel convs at 7x7 ran slower."""


def eligible(op: graph.Conv2dOp, min_channels: int = MIN_CHANNELS, min_pixels: int = MIN_PIXELS) -> bool:
    """Whether graph-winograd rewrites `op` (see the module docstring)."""
    xt, wt, rt = op.input.type, op.weight.type, op.result.type
    if not all(isinstance(t, TensorType) and isinstance(t.get_element_type(), Float32Type) for t in (xt, wt, rt)):
        return False
    xs, ws, rs = list(xt.get_shape()), list(wt.get_shape()), list(rt.get_shape())  # type: ignore[union-attr]
    if any(d < 0 for d in xs + ws + rs) or len(ws) != 4 or ws[2:] != [3, 3]:
        return False
    if op.weight_tile.value.data or op.group.value.data != 1:
        return False
    if tuple(op.strides.get_values()) != (1, 1) or tuple(op.dilations.get_values()) != (1, 1):
        return False
    k, c = ws[0], ws[1]
    in_block = xs[4] if len(xs) == 5 else 1
    if len(xs) not in (4, 5) or xs[1] * in_block != c or min(k, c) < min_channels:
        return False
    if rs[2] * rs[3] < min_pixels:
        return False
    if op.bias is not None and list(op.bias.type.get_shape()) != [k]:  # type: ignore[union-attr]
        return False
    return weight_only(op.weight)


def _const(array: np.ndarray) -> graph.ConstantOp:
    array = array + 0.0  # no -0.0 entries from the products of signs
    t = TensorType(Float32Type(), list(array.shape))
    return graph.ConstantOp(DenseIntOrFPElementsAttr.from_list(t, [float(v) for v in array.ravel()]))


def rewrite(op: graph.Conv2dOp) -> None:
    """Replace the eligible conv `op` by its F(2x2, 3x3) form."""
    f32 = Float32Type()
    xs = list(op.input.type.get_shape())  # type: ignore[union-attr]
    k, c = list(op.weight.type.get_shape())[:2]  # type: ignore[union-attr]
    rs = list(op.result.type.get_shape())  # type: ignore[union-attr]
    out_block = op.block.value.data
    n = xs[0]
    oh, ow = rs[2], rs[3]
    th, tw = -(-oh // 2), -(-ow // 2)  # 2x2 output tiles per column and row
    pt, pl = op.pads.get_values()[:2]  # (the bottom and right pads only set the output size)
    new: list[Operation] = []

    def emit(o: Operation) -> SSAValue:
        new.append(o)
        return o.results[0]

    def reshape(v: SSAValue, shape: list[int]) -> SSAValue:
        return emit(graph.ReshapeOp(v, TensorType(f32, shape)))

    def matmul(a: SSAValue, b: SSAValue) -> SSAValue:
        return emit(graph.MatMulOp(a, b))

    # filter transform, weight-only: U[(x, y), c, k] = (G g_kc G^T)[x, y]
    g = reshape(op.weight, [k * c, 3, 3])
    gg = matmul(matmul(emit(_const(G)), g), emit(_const(G.T.copy())))  # (K*C, 4, 4)
    u = emit(graph.TransposeOp(reshape(gg, [k, c, 16]), [2, 1, 0]))  # (16, C, K)

    # input transform: V[(a, b), tile, c] = (B^T d B)[a, b] of the tile's 4x4 window d
    v = emit(graph.WinogradInputOp(op.input, [pt, pl], [th, tw]))  # (16, N*th*tw, C)

    # the product, then the output transform
    m = matmul(v, u)  # (16, N*th*tw, K)
    y = matmul(emit(_const(np.kron(AT, AT))), reshape(m, [16, n * th * tw * k]))  # (4, …): (r, s) of a tile
    if out_block:  # (r, s, N, th, tw, K/B, B) -> (N, K/B, th, r, tw, s, B)
        kb = k // out_block
        y = emit(graph.TransposeOp(reshape(y, [2, 2, n, th, tw, kb, out_block]), [2, 5, 3, 0, 4, 1, 6]))
        full = [n, kb, 2 * th, 2 * tw, out_block]
    else:  # (r, s, N, th, tw, K) -> (N, K, th, r, tw, s)
        y = emit(graph.TransposeOp(reshape(y, [2, 2, n, th, tw, k]), [2, 5, 3, 0, 4, 1]))
        full = [n, k, 2 * th, 2 * tw]
    y = reshape(y, full)
    if (2 * th, 2 * tw) != (oh, ow):  # an odd size: the last tile's extra row / column
        ends = list(full)
        ends[2], ends[3] = oh, ow
        y = emit(graph.SliceOp(y, [0] * len(full), ends, [1] * len(full)))
    if op.bias is not None:
        bshape = [1, k // out_block, 1, 1, out_block] if out_block else [1, k, 1, 1]
        y = emit(graph.AddOp(y, reshape(op.bias, bshape), op.result.type))
    for o in new:
        o.location = op.location
        Rewriter.insert_op(o, InsertPoint.before(op))
    op.result.replace_all_uses_with(y)
    op.detach()
    op.erase()


@dataclass(frozen=True)
class GraphWinogradPass(ModulePass):
    """3x3 stride-1 convs with at least `min-channels` input and output channels and `min-pixels`
    output pixels per image run as Winograd's
    F(2x2, 3x3): a filter transform at load time, an input transform, a batched matmul with 2.25x
    fewer FLOPs than the direct conv, an output transform (see the module docstring)."""

    name = "graph-winograd"

    min_channels: int = MIN_CHANNELS
    min_pixels: int = MIN_PIXELS

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for conv in [o for o in op.walk() if isinstance(o, graph.Conv2dOp)]:
            if eligible(conv, self.min_channels, self.min_pixels):
                rewrite(conv)
