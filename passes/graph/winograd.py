"""graph-winograd: a 3x3 stride-1 convolution with many channels becomes Winograd's F(2x2, 3x3)
(Lavin and Gray, 2015; TVM's and ncnn's conv2d_winograd): 16 multiplications per 2x2 output tile
and channel pair, not 36, so 2.25x fewer FLOPs in the product that dominates. On maps of 28x28
and more, F(4x4, 3x3): 36 per 4x4 tile, not 144, 4x fewer (`tile`, F4_MIN_SIDE below). F(2x2)
is shown here; F(4x4) is the same with 6x6 windows, 36 tile elements and its own B, G, A.

    Y = A^T [ (G g G^T) * (B^T d B) ] A        per 4x4 input tile d, 3x3 filter g, 2x2 output tile

in graph ops the default pipeline already makes fast:

  * the filter transform U = G g G^T (16 x C x K) is weight-only: graph-lift-params computes it
    once, at load time;
  * the input transform, one op (`graph.winograd_input`, one kernel): every tile's 4x4 window of
    the input (zero outside it: the conv's padding is never materialized), B^T d B in adds and
    subtracts, stored as (16, tiles, C), the channels innermost;
  * the product: a batched matmul (16, tiles, C) x (16, C, K), the matmul rule's register tiles;
  * the output transform, one op (`graph.winograd_output`, one kernel): A^T M A per tile and
    channel in adds, the tiles interleaved back into rows (an odd size's extra row or column
    dropped), then the conv's bias. The conv's consumers (ReLU, a residual add) fuse with it as
    they did with the conv.

    %y = graph.conv2d %x, %w, %b pads [1, 1, 1, 1] : (tensor<1x256x14x14xf32>, tensor<256x256x3x3xf32>, …) -> …
  ->
    %u = … G w G^T (weight-only) …                                        : tensor<16x256x256xf32>
    %v = graph.winograd_input %x pads [1, 1] tiles [7, 7] : tensor<1x256x14x14xf32> -> tensor<16x49x256xf32>
    %m = graph.matmul %v, %u : (tensor<16x49x256xf32>, tensor<16x256x256xf32>) -> tensor<16x49x256xf32>
    %o = graph.winograd_output %m tiles [7, 7] size [14, 14] : tensor<16x49x256xf32> -> tensor<1x256x14x14xf32>
    %y = graph.add %o, (reshaped %b)

Both layouts: an NCHW input or a channel-blocked one (rank 5, graph-layout's NCHW{B}c), an NCHW
or a blocked result (`block`). Applies to f32 convs with static shapes, group 1, stride and
dilation 1, a weight-only 3x3 filter (not yet packed), and at least `min-channels` input and output
channels and `min-pixels` output pixels: below that the transforms cost what the product saves.
Measured on this project's machines (Zen 1, one thread; `python benchmarks/winograd.py`: a ResNet
block of two convs, ReLU and residual add; the default's choice): 64 channels at 56x56 2.49x
faster (F(4x4)), 128 at 28x28 2.65x (F(4x4)), 256 at 14x14 1.69x (F(2x2)), 512 at 7x7 1.01x /
1.16x (F(2x2) / F(4x4); direct by default, `min-pixels`); ResNet-50 end to end 1.05 -> 0.89 of
onnxruntime's latency (`python benchmarks/models.py --filter resnet50 [--without graph-winograd]`).

The result differs from the direct convolution by rounding only (about 5e-7 relative for F(2x2, 3x3),
whose transforms are sums and halves, and 5e-6 for F(4x4, 3x3); see F4_MIN_SIDE).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, Float32Type, ModuleOp, StringAttr, TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import PassFailedException

from minimlir.dialects import graph
from minimlir.passes.graph.lift_params import weight_only

# F(2x2, 3x3): input transform B^T (4x4), filter transform G (4x3), output transform A^T (2x4)
BT = np.array([[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]], np.float32)
G = np.array([[1, 0, 0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0, 0, 1]], np.float32)
AT = np.array([[1, 1, 1, 0], [0, 1, -1, -1]], np.float32)
# F(4x4, 3x3) (Lavin and Gray's, interpolation points 0, +-1, +-2, infinity): 6x6, 6x3, 4x6
BT4 = np.array([[4, 0, -5, 0, 1, 0], [0, -4, -4, 1, 1, 0], [0, 4, -4, -1, 1, 0],
                [0, -2, -1, 2, 1, 0], [0, 2, -1, -2, 1, 0], [0, 4, 0, -5, 0, 1]], np.float64)
G4 = np.array([[1 / 4, 0, 0], [-1 / 6, -1 / 6, -1 / 6], [-1 / 6, 1 / 6, -1 / 6],
               [1 / 24, 1 / 12, 1 / 6], [1 / 24, -1 / 12, 1 / 6], [0, 0, 1]], np.float64)
AT4 = np.array([[1, 1, 1, 1, 1, 0], [0, 1, -1, 2, -2, 0], [0, 1, 1, 4, 4, 0], [0, 1, -1, 8, -8, 1]], np.float64)
TRANSFORMS = {2: (BT, G, AT), 4: (BT4, G4, AT4)}
"""Output tile m -> (B^T, G, A^T) of F(m x m, 3x3)."""
F4_MIN_SIDE = 28
"""`tile=0` (auto) takes F(4x4, 3x3) where the output is at least this many rows and columns, else
F(2x2, 3x3): 36 products per 16 outputs, not 64, but its 4x4 tiles waste more of a small map and
leave the batched matmul fewer rows (`python benchmarks/winograd.py`, one thread: two 64-channel
convs at 56x56 direct 12.3 ms, F(2x2) 8.1, F(4x4) 4.9; 128 at 28x28 12.1, 6.7, 4.6; 256 at 14x14
11.3, 6.7, 7.7). F(4x4)'s transforms have entries up to 8 and 1/24: about 5e-6 relative error per
conv on unit-scale data, against 5e-7 for F(2x2) and 1.5e-6 for the direct conv (each against
onnxruntime)."""
ATTR = "graph.algorithm"
"""A conv attribute naming its algorithm (mini-tune's measured choice, tuning/algorithms.py): one of
ALGORITHMS; it overrides the pass's options and thresholds."""
ALGORITHMS = {"direct": 0, "winograd2": 2, "winograd4": 4}
"""Algorithm name -> output tile m of F(m x m, 3x3) (0: the direct conv)."""
MIN_CHANNELS = 64
"""Default `min-channels`: fewer input or output channels and the transforms cost what the product saves."""
MIN_PIXELS = 196
"""Default `min-pixels` (output pixels per image, 14x14): at 7x7 the 2x2 tiles cover 8x8 (31% wasted)
and the batched matmul has 16 rows: ResNet-50's 512-channel convs at 7x7 gained nothing (1.01x)."""


def auto_tile(op: graph.Conv2dOp) -> int:
    """The output tile `tile=0` takes for `op` (F4_MIN_SIDE)."""
    rs = list(op.result.type.get_shape())  # type: ignore[union-attr]
    return 4 if min(rs[2], rs[3]) >= F4_MIN_SIDE else 2


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


def chosen_tile(op: graph.Conv2dOp) -> int | None:
    """The tile `op`'s ATTR asks for (0: direct), or None when it has none."""
    a = op.attributes.get(ATTR)
    if not isinstance(a, StringAttr):
        return None
    if a.data not in ALGORITHMS:
        raise ValueError(f"{ATTR} must be one of {', '.join(ALGORITHMS)}, got '{a.data}'")
    return ALGORITHMS[a.data]


def _const(array: np.ndarray) -> graph.ConstantOp:
    array = array + 0.0  # no -0.0 entries from the products of signs
    t = TensorType(Float32Type(), list(array.shape))
    return graph.ConstantOp(DenseIntOrFPElementsAttr.from_list(t, [float(v) for v in array.ravel()]))


def rewrite(op: graph.Conv2dOp, tile: int = 2) -> None:
    """Replace the eligible conv `op` by its F(m x m, 3x3) form, m = `tile` (2 or 4)."""
    f32 = Float32Type()
    gm = TRANSFORMS[tile][1]
    m, r = tile, tile + 2
    k, c = list(op.weight.type.get_shape())[:2]  # type: ignore[union-attr]
    rs = list(op.result.type.get_shape())  # type: ignore[union-attr]
    out_block = op.block.value.data
    oh, ow = rs[2], rs[3]
    th, tw = -(-oh // m), -(-ow // m)  # m x m output tiles per column and row
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
    gg = matmul(matmul(emit(_const(gm)), g), emit(_const(gm.T.copy())))  # (K*C, r, r)
    u = emit(graph.TransposeOp(reshape(gg, [k, c, r * r]), [2, 1, 0]))  # (r*r, C, K)

    # input transform: V[(a, b), tile, c] = (B^T d B)[a, b] of the tile's r x r window d
    v = emit(graph.WinogradInputOp(op.input, [pt, pl], [th, tw], m))  # (r*r, N*th*tw, C)

    # the product, then the output transform: Y = A^T M A per tile, the tiles interleaved into rows
    prod = matmul(v, u)  # (r*r, N*th*tw, K)
    y = emit(graph.WinogradOutputOp(prod, [th, tw], [oh, ow], m, out_block))
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
    output pixels per image run as Winograd's F(m x m, 3x3), m = `tile` (0: 4 on maps of at least
    28x28, else 2; see F4_MIN_SIDE): a filter transform at load time, an input transform, a batched
    matmul with 2.25x (m = 2) or 4x (m = 4) fewer FLOPs than the direct conv, an output transform
    (see the module docstring).

    A conv's `graph.algorithm` attribute ("direct", "winograd2", "winograd4": mini-tune's measured
    choice, tuning/algorithms.py) overrides the options and the thresholds; `tuning-db` stamps it
    from a mini-tune database first (the compile driver does that itself for `tuning_db=`)."""

    name = "graph-winograd"

    min_channels: int = MIN_CHANNELS
    min_pixels: int = MIN_PIXELS
    tile: int = 0
    tuning_db: str = ""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from minimlir.passes._diagnostics import emit_error

        if self.tile and self.tile not in TRANSFORMS:
            raise PassFailedException(
                f"graph-winograd: tile must be 0 (auto) or one of {sorted(TRANSFORMS)}, got {self.tile}")
        if self.tuning_db:
            from minimlir.passes._diagnostics import emit_remark
            from minimlir.tuning.apply import TuningDbError, stamp_algorithms

            try:
                emit_remark(op, stamp_algorithms(op, self.tuning_db).line())
            except TuningDbError as e:
                emit_error(op, f"graph-winograd: {e}")
        for conv in [o for o in op.walk() if isinstance(o, graph.Conv2dOp)]:
            try:
                chosen = chosen_tile(conv)
            except ValueError as e:
                emit_error(conv, f"graph-winograd: {e}")
            conv.attributes.pop(ATTR, None)
            if chosen is None:
                if eligible(conv, self.min_channels, self.min_pixels):
                    rewrite(conv, self.tile or auto_tile(conv))
            elif chosen and eligible(conv, min_channels=1, min_pixels=1):
                rewrite(conv, chosen)
