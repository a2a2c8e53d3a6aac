"""More graph ops (operator coverage, issue 14): index ops and scans the ONNX importer cannot
decompose exactly into the ops of `minimlir.dialects.graph`. They are part of the `graph` dialect
(graph.py lists them in `Graph`); this module only keeps them apart from the first ops so that
merges stay clean.

    %y = graph.gather_elements %x, %i axis 1 : (tensor<?x4xf32>, tensor<?x2xi64>) -> tensor<?x2xf32>
    %y = graph.gather_nd %x, %i batch_dims 0 : (tensor<4x5xf32>, tensor<3x2xi64>) -> tensor<3xf32>
    %y = graph.cumsum %x axis 1 {exclusive = false, reverse = true} : tensor<?x8xf32>
"""

from __future__ import annotations

from abc import ABC
from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects import math
from xdsl.dialects.builtin import BoolAttr, DenseArrayBase, IntegerAttr, IntegerType, StringAttr, TensorType, i64
from xdsl.dialects.builtin import I64 as _I64
from xdsl.ir import SSAValue
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    VarConstraint,
    base,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from minimlir.dialects._fusion import FusionKind
from minimlir.dialects.graph import (
    DYNAMIC,
    Shape,
    _BinaryOp,
    _UnaryOp,
    _bool,
    _check_axis,
    _check_result_shape,
    _check_same_element_type,
    _check_valid_shape,
    _elt,
    _i64,
    _normalize_axis,
    _shape,
    _ints,
    _tensor,
    dims_compatible,
    format_shape,
    reduce_result_shape,
)

_INDEX_TYPES = (i64, IntegerType(32))


def _check_indices(indices: SSAValue) -> None:
    if _elt(indices) not in _INDEX_TYPES:
        raise VerifyException(f"indices element type must be i64 or i32, got {_elt(indices)}")


@irdl_op_definition
class GatherElementsOp(IRDLOperation):
    """Gather along `axis` element by element (ONNX GatherElements).

    y[i...] = data[i... with i[axis] replaced by indices[i...]]; the result has the indices' shape;
    negative indices count from the end."""

    name = "graph.gather_elements"

    data = operand_def(TensorType)
    indices = operand_def(TensorType)
    result = result_def(TensorType)
    axis = prop_def(IntegerAttr[_I64])

    traits = traits_def(Pure(), FusionKind.OPAQUE)
    assembly_format = "$data `,` $indices `axis` $axis attr-dict `:` functional-type(operands, results)"

    def __init__(self, data: SSAValue, indices: SSAValue, axis: int = 0):
        axis = _normalize_axis(axis, len(_shape(data)))
        super().__init__(
            operands=[data, indices],
            result_types=[_tensor(_shape(indices), _elt(data))],
            properties={"axis": _i64(axis)},
        )

    def verify_(self) -> None:
        _check_valid_shape(self)
        _check_same_element_type(self, [("data", self.data), ("result", self.result)])
        _check_indices(self.indices)
        rank = len(_shape(self.data))
        if len(_shape(self.indices)) != rank:
            raise VerifyException(f"indices rank {len(_shape(self.indices))} must equal data rank {rank}")
        _check_axis(self.axis.value.data, rank)
        _check_result_shape(_shape(self.indices), self.result)


def gather_nd_result_shape(data: Shape, indices: Shape, batch_dims: int) -> list[int]:
    """indices.shape[:-1] + data.shape[batch_dims + k:], k = indices.shape[-1] (static)."""
    if not indices:
        raise VerifyException("indices must have rank >= 1")
    k = indices[-1]
    if k < 0:
        raise VerifyException("the last dim of indices must be static")
    if batch_dims + k > len(data):
        raise VerifyException(
            f"batch_dims {batch_dims} + index depth {k} exceeds the data rank {len(data)}")
    if batch_dims >= len(indices):
        raise VerifyException(f"batch_dims {batch_dims} must be less than the indices rank {len(indices)}")
    for i in range(batch_dims):
        if not dims_compatible(data[i], indices[i]):
            raise VerifyException(
                f"batch dim {i} differs: data {format_shape(data)}, indices {format_shape(indices)}")
    out = [d if d >= 0 else DYNAMIC for d in indices[:-1]]
    for i in range(batch_dims):  # a batch dim static in either operand is static
        if out[i] < 0 and data[i] >= 0:
            out[i] = data[i]
    return out + [d if d >= 0 else DYNAMIC for d in data[batch_dims + k:]]


@irdl_op_definition
class GatherNDOp(IRDLOperation):
    """Gather slices by index tuples (ONNX GatherND).

    y[b..., q..., s...] = data[b..., indices[b..., q..., :], s...]: the first `batch_dims` dims are
    shared; each index tuple has indices.shape[-1] entries, negative from the end."""

    name = "graph.gather_nd"

    data = operand_def(TensorType)
    indices = operand_def(TensorType)
    result = result_def(TensorType)
    batch_dims = prop_def(IntegerAttr[_I64])

    traits = traits_def(Pure(), FusionKind.OPAQUE)
    assembly_format = (
        "$data `,` $indices `batch_dims` $batch_dims attr-dict `:` functional-type(operands, results)")

    def __init__(self, data: SSAValue, indices: SSAValue, batch_dims: int = 0):
        shape = gather_nd_result_shape(_shape(data), _shape(indices), batch_dims)
        super().__init__(
            operands=[data, indices],
            result_types=[_tensor(shape, _elt(data))],
            properties={"batch_dims": _i64(batch_dims)},
        )

    def verify_(self) -> None:
        _check_valid_shape(self)
        _check_same_element_type(self, [("data", self.data), ("result", self.result)])
        _check_indices(self.indices)
        bd = self.batch_dims.value.data
        if bd < 0:
            raise VerifyException(f"batch_dims must be >= 0, got {bd}")
        _check_result_shape(gather_nd_result_shape(_shape(self.data), _shape(self.indices), bd), self.result)


class _CumulativeOp(IRDLOperation, ABC):
    """Shared base of the running reductions along `axis` (graph.cumsum, graph.cumprod): the
    result has the input's type; `exclusive` leaves element i out, `reverse` runs from the end.

        %y = graph.cumsum %x axis 1 {exclusive = false, reverse = true} : tensor<?x8xf32>"""

    T: ClassVar = VarConstraint("T", base(TensorType))
    input = operand_def(T)
    result = result_def(T)
    axis = prop_def(IntegerAttr[_I64])
    exclusive = prop_def(BoolAttr, default_value=IntegerAttr.from_bool(False))
    reverse = prop_def(BoolAttr, default_value=IntegerAttr.from_bool(False))

    irdl_options = (ParsePropInAttrDict(),)
    traits = traits_def(Pure(), FusionKind.OPAQUE)
    assembly_format = "$input `axis` $axis attr-dict `:` type($result)"

    def __init__(self, input: SSAValue, axis: int, exclusive: bool = False, reverse: bool = False):
        axis = _normalize_axis(axis, len(_shape(input)))
        super().__init__(
            operands=[input],
            result_types=[input.type],
            properties={"axis": _i64(axis), "exclusive": _bool(exclusive), "reverse": _bool(reverse)},
        )

    def verify_(self) -> None:
        _check_valid_shape(self)
        t = _elt(self.input)
        if t == IntegerType(1):
            raise VerifyException(f"{self.name.split('.', 1)[1]} of i1 (bool) is not defined")
        _check_axis(self.axis.value.data, len(_shape(self.input)))


@irdl_op_definition
class CumSumOp(_CumulativeOp):
    """Running sum along `axis` (ONNX CumSum).

    y[.., i, ..] = sum of x[.., j, ..] for j <= i (j < i when exclusive; j >= i / j > i when reverse)."""

    name = "graph.cumsum"


# --------------------------------------------------------------------------------------------
# elementwise: trigonometric and hyperbolic functions, rounding, bit shifts


def _unary(cls_name: str, op_name: str, doc: str, math_op=None, onnx: str | None = None):
    """A plain unary graph op: `math_op` lowers each element, `onnx` names the ONNX op it imports
    from (_UnaryOp.MATH_OP / ONNX). Adding a unary op is this one line plus its tests: the graph
    dialect takes every unary op class of this package, listed or not."""
    cls = type(cls_name, (_UnaryOp,), {"__doc__": doc, "name": op_name, "__module__": __name__,
                                       "__qualname__": cls_name, "MATH_OP": math_op, "ONNX": onnx,
                                       "__annotations__": {"MATH_OP": ClassVar, "ONNX": ClassVar}})
    return irdl_op_definition(cls)


SinOp = _unary("SinOp", "graph.sin", "Elementwise sin(x).", math.SinOp, "Sin")
CosOp = _unary("CosOp", "graph.cos", "Elementwise cos(x).", math.CosOp, "Cos")
TanOp = _unary("TanOp", "graph.tan", "Elementwise tan(x).", math.TanOp, "Tan")
AsinOp = _unary("AsinOp", "graph.asin", "Elementwise asin(x).", math.AsinOp, "Asin")
AcosOp = _unary("AcosOp", "graph.acos", "Elementwise acos(x).", math.AcosOp, "Acos")
AtanOp = _unary("AtanOp", "graph.atan", "Elementwise atan(x).", math.AtanOp, "Atan")
SinhOp = _unary("SinhOp", "graph.sinh", "Elementwise sinh(x).", math.SinhOp, "Sinh")
CoshOp = _unary("CoshOp", "graph.cosh", "Elementwise cosh(x).", math.CoshOp, "Cosh")
AsinhOp = _unary("AsinhOp", "graph.asinh", "Elementwise asinh(x).", math.AsinhOp, "Asinh")
AcoshOp = _unary("AcoshOp", "graph.acosh", "Elementwise acosh(x).", math.AcoshOp, "Acosh")
AtanhOp = _unary("AtanhOp", "graph.atanh", "Elementwise atanh(x).", math.AtanhOp, "Atanh")
RoundOp = _unary("RoundOp", "graph.round", "Elementwise round to nearest, ties to even (ONNX Round).",
                 math.RoundEvenOp, "Round")

TRIG_OPS = [SinOp, CosOp, TanOp, AsinOp, AcosOp, AtanOp, SinhOp, CoshOp, AsinhOp, AcoshOp, AtanhOp]


@irdl_op_definition
class BitShiftOp(_BinaryOp):
    """Elementwise logical shift lhs << rhs or lhs >> rhs, with broadcasting (ONNX BitShift).

    Unsigned integers; a shift by the bit width or more gives 0."""

    name = "graph.bitshift"
    OPERAND_KIND: ClassVar[str] = "int"

    direction = prop_def(StringAttr)

    def __init__(self, lhs: SSAValue, rhs: SSAValue, direction: str, result_type=None):
        super().__init__(lhs, rhs, result_type, properties={"direction": StringAttr(direction)})

    def verify_(self) -> None:
        super().verify_()
        if self.direction.data not in ("LEFT", "RIGHT"):
            raise VerifyException(f"direction must be LEFT or RIGHT, got {self.direction.data}")


@irdl_op_definition
class ArgMinOp(IRDLOperation):
    """Index (i64) of the minimum along `axis`.

    The first one, or the last with select_last_index (NaN counts as the minimum, as NumPy's
    argmin). Same shape rules as graph.argmax."""

    name = "graph.argmin"

    input = operand_def(TensorType)
    result = result_def(TensorType)

    axis = prop_def(IntegerAttr[_I64])
    keepdims = prop_def(BoolAttr, default_value=IntegerAttr.from_bool(True))
    select_last_index = prop_def(BoolAttr, default_value=IntegerAttr.from_bool(False))

    irdl_options = (ParsePropInAttrDict(),)
    traits = traits_def(Pure(), FusionKind.COMM_REDUCE)
    assembly_format = "$input `axis` $axis attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, axis: int, keepdims: bool = True, select_last_index: bool = False):
        shape = _shape(input)
        axis = _normalize_axis(axis, len(shape))
        super().__init__(
            operands=[input],
            result_types=[_tensor(reduce_result_shape(shape, [axis], keepdims), i64)],
            properties={"axis": _i64(axis), "keepdims": _bool(keepdims),
                        "select_last_index": _bool(select_last_index)},
        )

    def verify_(self) -> None:
        _check_valid_shape(self)
        if _elt(self.result) != i64:
            raise VerifyException(f"result element type must be i64, got {_elt(self.result)}")
        shape = _shape(self.input)
        axis = self.axis.value.data
        _check_axis(axis, len(shape))
        _check_result_shape(reduce_result_shape(shape, [axis], bool(self.keepdims)), self.result)


# --------------------------------------------------------------------------------------------
# Winograd F(2x2, 3x3)'s input transform (graph-winograd)


WINOGRAD_TILES = (2, 4)
"""The output tiles m of F(m x m, 3x3) graph.winograd_input computes (graph-winograd's transforms)."""


def winograd_input_shape(shape: Shape, tiles: Sequence[int], tile: int = 2) -> list[int]:
    """((m+2)^2, N * th * tw, C) for an NCHW input (N, C, H, W) or a blocked one (N, C/B, H, W, B)."""
    if len(shape) not in (4, 5):
        raise VerifyException(f"input must be NCHW (rank 4) or channel-blocked (rank 5), got rank {len(shape)}")
    if any(d == DYNAMIC for d in shape):
        raise VerifyException(f"input shape {format_shape(shape)} must be static")
    if len(tiles) != 2 or min(tiles) < 1:
        raise VerifyException(f"tiles must be two positive counts, got {list(tiles)}")
    if tile not in WINOGRAD_TILES:
        raise VerifyException(f"tile must be one of {list(WINOGRAD_TILES)}, got {tile}")
    channels = shape[1] * (shape[4] if len(shape) == 5 else 1)
    return [(tile + 2) ** 2, shape[0] * tiles[0] * tiles[1], channels]


@irdl_op_definition
class WinogradInputOp(IRDLOperation):
    """Winograd F(m x m, 3x3)'s input transform (graph-winograd): B^T d B of every tile's window.

    m = `tile` (2 by default, or 4): for every m x m output tile (i, j) of every image n and every channel c,
    the r x r input window d (r = m + 2) at rows m*i - pads[0] … + r - 1 and columns
    m*j - pads[1] … (zero outside the input) becomes V = B^T d B, stored as
    V[r*a + b, (n * th + i) * tw + j, c] (the batched matmul's left operand).

    %v = graph.winograd_input %x pads [1, 1] tiles [7, 7] : tensor<1x32x14x14x8xf32> -> tensor<16x49x256xf32>
    %v = graph.winograd_input %x pads [1, 1] tiles [4, 4] tile 4 : tensor<1x256x14x14xf32> -> tensor<36x16x256xf32>

    The input is NCHW or channel-blocked (N, C/B, H, W, B); c is the logical channel either way."""

    name = "graph.winograd_input"

    input = operand_def(TensorType)
    result = result_def(TensorType)
    pads = prop_def(DenseArrayBase.constr(i64))
    tiles = prop_def(DenseArrayBase.constr(i64))
    tile = prop_def(IntegerAttr[_I64], default_value=_i64(2))

    traits = traits_def(Pure(), FusionKind.OPAQUE)
    assembly_format = (
        "$input `pads` $pads `tiles` $tiles (`tile` $tile^)? attr-dict `:` type($input) `->` type($result)"
    )

    def __init__(self, input: SSAValue, pads: Sequence[int], tiles: Sequence[int], tile: int = 2):
        super().__init__(
            operands=[input],
            result_types=[_tensor(winograd_input_shape(_shape(input), tiles, tile), _elt(input))],
            properties={"pads": _ints(pads), "tiles": _ints(tiles), "tile": _i64(tile)},
        )

    def verify_(self) -> None:
        _check_valid_shape(self)
        _check_same_element_type(self, [("input", self.input), ("result", self.result)])
        pads = self.pads.get_values()
        if len(pads) != 2 or min(pads) < 0:
            raise VerifyException(f"pads must be two non-negative counts (top, left), got {list(pads)}")
        shape = winograd_input_shape(_shape(self.input), self.tiles.get_values(), self.tile.value.data)
        _check_result_shape(shape, self.result)


def winograd_output_shape(shape: Shape, tiles: Sequence[int], tile: int, size: Sequence[int],
                          block: int) -> list[int]:
    """(N, K, OH, OW), or (N, K/B, OH, OW, B) with a block B, for a product M of shape
    ((m+2)^2, N * th * tw, K)."""
    if len(shape) != 3 or any(d == DYNAMIC for d in shape):
        raise VerifyException(f"input must be a static ((m+2)^2, tiles, K) tensor, got {format_shape(shape)}")
    if tile not in WINOGRAD_TILES:
        raise VerifyException(f"tile must be one of {list(WINOGRAD_TILES)}, got {tile}")
    if len(tiles) != 2 or min(tiles) < 1 or len(size) != 2 or min(size) < 1:
        raise VerifyException(f"tiles {list(tiles)} and size {list(size)} must be two positive counts each")
    th, tw = tiles
    if shape[0] != (tile + 2) ** 2 or shape[1] % (th * tw):
        raise VerifyException(f"input {format_shape(shape)} does not hold {(tile + 2) ** 2} tile elements of "
                              f"a multiple of {th * tw} tiles")
    if not (tile * (th - 1) < size[0] <= tile * th and tile * (tw - 1) < size[1] <= tile * tw):
        raise VerifyException(f"size {list(size)} is not covered by exactly {list(tiles)} tiles of {tile}")
    n, k = shape[1] // (th * tw), shape[2]
    if block:
        if block < 1 or k % block:
            raise VerifyException(f"block {block} does not divide the {k} channels")
        return [n, k // block, size[0], size[1], block]
    return [n, k, size[0], size[1]]


@irdl_op_definition
class WinogradOutputOp(IRDLOperation):
    """Winograd F(m x m, 3x3)'s output transform (graph-winograd): A^T M A, tiles into rows.

    The product M ((m+2)^2, N * th * tw, K) of graph.winograd_input's result and the transformed filter becomes
    Y = A^T M A per tile and channel, the m x m tiles interleaved into rows of `size` (the last
    tiles' rows and columns past it dropped), NCHW or channel-blocked (`block`, NCHW{B}c).

    %y = graph.winograd_output %m tiles [7, 7] size [14, 14] : tensor<16x49x256xf32> -> tensor<1x256x14x14xf32>
    %y = graph.winograd_output %m tiles [4, 4] size [14, 14] tile 4 block 8
        : tensor<36x16x256xf32> -> tensor<1x32x14x14x8xf32>"""

    name = "graph.winograd_output"

    input = operand_def(TensorType)
    result = result_def(TensorType)
    tiles = prop_def(DenseArrayBase.constr(i64))
    size = prop_def(DenseArrayBase.constr(i64))
    tile = prop_def(IntegerAttr[_I64], default_value=_i64(2))
    block = prop_def(IntegerAttr[_I64], default_value=_i64(0))

    traits = traits_def(Pure(), FusionKind.OUT_EWISE_FUSABLE)
    assembly_format = (
        "$input `tiles` $tiles `size` $size (`tile` $tile^)? (`block` $block^)? attr-dict "
        "`:` type($input) `->` type($result)"
    )

    def __init__(self, input: SSAValue, tiles: Sequence[int], size: Sequence[int], tile: int = 2, block: int = 0):
        shape = winograd_output_shape(_shape(input), tiles, tile, size, block)
        super().__init__(
            operands=[input],
            result_types=[_tensor(shape, _elt(input))],
            properties={"tiles": _ints(tiles), "size": _ints(size), "tile": _i64(tile), "block": _i64(block)},
        )

    def verify_(self) -> None:
        _check_valid_shape(self)
        _check_same_element_type(self, [("input", self.input), ("result", self.result)])
        shape = winograd_output_shape(_shape(self.input), self.tiles.get_values(), self.tile.value.data,
                                      self.size.get_values(), self.block.value.data)
        _check_result_shape(shape, self.result)


MORE_REDUCE = [ArgMinOp]
MORE_ELEMENTWISE = [*TRIG_OPS, RoundOp]
MORE_BROADCAST = [BitShiftOp]
MORE_OPS = [GatherElementsOp, GatherNDOp, CumSumOp, *MORE_ELEMENTWISE, BitShiftOp, ArgMinOp, WinogradInputOp,
            WinogradOutputOp]
