"""Graph ops of the second operator-coverage round (issue 14). Part of the `graph` dialect
(graph.py lists them in `Graph`); kept apart from the first ops so that merges stay clean.

    %y = graph.reduce_prod %x axes [1] : tensor<?x4xf32> -> tensor<?x1xf32>
    %y = graph.scatter_elements %x, %i, %u axis 1 {reduction = "add"}
           : (tensor<?x5xf32>, tensor<?x2xi64>, tensor<?x2xf32>) -> tensor<?x5xf32>
    %y = graph.scatter_nd %x, %i, %u : (tensor<4x4xf32>, tensor<2x1xi64>, tensor<2x4xf32>) -> tensor<4x4xf32>
    %v, %i = graph.topk %x k 2 axis 1 {largest = true} : tensor<?x5xf32> -> (tensor<?x2xf32>, tensor<?x2xi64>)
    %c = graph.reduce_sum ... : tensor<i64>          (the number of nonzeros, computed first)
    %y = graph.nonzero %x, %c : (tensor<?x4xf32>, tensor<i64>) -> tensor<2x?xi64>
    %i = graph.max_pool2d_indices %x, %y kernel [2, 2] strides [2, 2]
           : (tensor<1x1x4x4xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xi64>
"""

from __future__ import annotations

from xdsl.dialects.builtin import BoolAttr, DenseArrayBase, IntegerAttr, IntegerType, StringAttr, TensorType, i64
from xdsl.dialects.builtin import I64 as _I64
from xdsl.ir import SSAValue

from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from minimlir.dialects._fusion import FusionKind
from minimlir.dialects._graph_more import _CumulativeOp
from minimlir.dialects.graph import (
    _check_axis,
    _check_same_element_type,
    _check_valid_shape,
    _elt,
    _i64,
    _normalize_axis,
    _bool,
    _check_window_params,
    _ints,
    _ReduceOp,
    _shape,
    _tensor,
    dims_compatible,
    format_shape,
)

SCATTER_REDUCTIONS = ("none", "add", "mul", "max", "min")


def _check_scatter_common(op) -> None:
    _check_valid_shape(op)
    _check_same_element_type(op, [("data", op.data), ("updates", op.updates), ("result", op.result)])
    if _elt(op.indices) not in (i64, IntegerType(32)):
        raise VerifyException(f"indices element type must be i64 or i32, got {_elt(op.indices)}")
    if op.result.type != op.data.type:
        raise VerifyException(f"result type {op.result.type} must be the data type {op.data.type}")
    if op.reduction.data not in SCATTER_REDUCTIONS:
        raise VerifyException(f"reduction must be one of {', '.join(SCATTER_REDUCTIONS)}, got {op.reduction.data}")
    if op.reduction.data != "none" and _elt(op.data) == IntegerType(1):
        raise VerifyException(f"reduction {op.reduction.data} of i1 (bool) is not defined")


@irdl_op_definition
class ScatterElementsOp(IRDLOperation):
    """Copy of `data` with updates written element by element along `axis` (ONNX ScatterElements).

    y = data; y[v with v[axis] := indices[v]] (reduction) = updates[v] for every v of the updates
    (in order; negative indices count from the end)."""

    name = "graph.scatter_elements"

    data = operand_def(TensorType)
    indices = operand_def(TensorType)
    updates = operand_def(TensorType)
    result = result_def(TensorType)
    axis = prop_def(IntegerAttr[_I64])
    reduction = prop_def(StringAttr, default_value=StringAttr("none"))

    irdl_options = (ParsePropInAttrDict(),)
    traits = traits_def(Pure(), FusionKind.OPAQUE)
    assembly_format = ("$data `,` $indices `,` $updates `axis` $axis attr-dict `:` "
                       "functional-type(operands, results)")

    def __init__(self, data: SSAValue, indices: SSAValue, updates: SSAValue, axis: int = 0,
                 reduction: str = "none"):
        axis = _normalize_axis(axis, len(_shape(data)))
        super().__init__(operands=[data, indices, updates], result_types=[data.type],
                         properties={"axis": _i64(axis), "reduction": StringAttr(reduction)})

    def verify_(self) -> None:
        _check_scatter_common(self)
        rank = len(_shape(self.data))
        _check_axis(self.axis.value.data, rank)
        ish, ush = _shape(self.indices), _shape(self.updates)
        if len(ish) != rank or len(ush) != rank:
            raise VerifyException(
                f"indices {format_shape(ish)} and updates {format_shape(ush)} must have the data rank {rank}"
            )
        if not all(dims_compatible(a, b) for a, b in zip(ish, ush)):
            raise VerifyException(f"indices {format_shape(ish)} and updates {format_shape(ush)} must have one shape")


@irdl_op_definition
class ScatterNDOp(IRDLOperation):
    """Copy of `data` with slices written at index tuples (ONNX ScatterND).

    y = data; y[indices[q..., :], s...] (reduction) = updates[q..., s...]; each tuple has
    indices.shape[-1] (static) entries, negative from the end."""

    name = "graph.scatter_nd"

    data = operand_def(TensorType)
    indices = operand_def(TensorType)
    updates = operand_def(TensorType)
    result = result_def(TensorType)
    reduction = prop_def(StringAttr, default_value=StringAttr("none"))

    irdl_options = (ParsePropInAttrDict(),)
    traits = traits_def(Pure(), FusionKind.OPAQUE)
    assembly_format = "$data `,` $indices `,` $updates attr-dict `:` functional-type(operands, results)"

    def __init__(self, data: SSAValue, indices: SSAValue, updates: SSAValue, reduction: str = "none"):
        super().__init__(operands=[data, indices, updates], result_types=[data.type],
                         properties={"reduction": StringAttr(reduction)})

    def verify_(self) -> None:
        _check_scatter_common(self)
        dsh, ish, ush = _shape(self.data), _shape(self.indices), _shape(self.updates)
        if not ish or ish[-1] < 0:
            raise VerifyException("indices must have rank >= 1 and a static last dim")
        k = ish[-1]
        if k > len(dsh):
            raise VerifyException(f"index depth {k} exceeds the data rank {len(dsh)}")
        want = list(ish[:-1]) + list(dsh[k:])
        if len(ush) != len(want) or not all(dims_compatible(a, b) for a, b in zip(ush, want)):
            raise VerifyException(f"updates {format_shape(ush)} must have shape {format_shape(want)}")


@irdl_op_definition
class ReduceProdOp(_ReduceOp):
    """Product over `axes` (1 for an empty reduction)."""

    name = "graph.reduce_prod"


@irdl_op_definition
class TopKOp(IRDLOperation):
    """The k largest (or smallest) elements along `axis` and their indices (ONNX TopK).

    Sorted best first; equal values in index order (the lower index first)."""

    name = "graph.topk"

    input = operand_def(TensorType)
    values = result_def(TensorType)
    indices = result_def(TensorType)
    k = prop_def(IntegerAttr[_I64])
    axis = prop_def(IntegerAttr[_I64])
    largest = prop_def(BoolAttr, default_value=IntegerAttr.from_bool(True))

    irdl_options = (ParsePropInAttrDict(),)
    traits = traits_def(Pure(), FusionKind.OPAQUE)
    assembly_format = (
        "$input `k` $k `axis` $axis attr-dict `:` type($input) `->` `(` type($values) `,` type($indices) `)`"
    )

    @staticmethod
    def infer_shape(shape, k: int, axis: int) -> list[int]:
        out = list(shape)
        out[axis] = k
        return out

    def __init__(self, input: SSAValue, k: int, axis: int, largest: bool = True):
        shape = _shape(input)
        axis = _normalize_axis(axis, len(shape))
        out = self.infer_shape(shape, k, axis)
        super().__init__(operands=[input], result_types=[_tensor(out, _elt(input)), _tensor(out, i64)],
                         properties={"k": _i64(k), "axis": _i64(axis), "largest": _bool(largest)})

    def verify_(self) -> None:
        _check_valid_shape(self)
        _check_same_element_type(self, [("input", self.input), ("values", self.values)])
        if _elt(self.indices) != i64:
            raise VerifyException(f"indices element type must be i64, got {_elt(self.indices)}")
        shape = _shape(self.input)
        axis, k = self.axis.value.data, self.k.value.data
        _check_axis(axis, len(shape))
        if k < 0 or (shape[axis] >= 0 and k > shape[axis]):
            raise VerifyException(f"k {k} must be in [0, {shape[axis]}] (the axis size)")
        want = self.infer_shape(shape, k, axis)
        for r in (self.values, self.indices):
            got = _shape(r)
            if len(got) != len(want) or not all(dims_compatible(a, b) for a, b in zip(got, want)):
                raise VerifyException(f"result shape {format_shape(got)} must be {format_shape(want)}")


@irdl_op_definition
class CumProdOp(_CumulativeOp):
    """Running product along `axis` (ONNX CumProd).

    y[.., i, ..] = product of x[.., j, ..] for j <= i (j < i when exclusive; j >= i / j > i when
    reverse); same attributes as graph.cumsum."""

    name = "graph.cumprod"


@irdl_op_definition
class MaxPool2dIndicesOp(IRDLOperation):
    """Where each max of a graph.max_pool2d came from (ONNX MaxPool's Indices output).

    For each output point, the flat index into the NCHW input of the first window tap (in kh,
    kw order, pads excluded) equal to the pooled value `pooled`: ((n*C + c)*H + h)*W + w, or
    with storage_order 1 ((n*C + c)*W + w)*H + h. Same window properties as graph.max_pool2d."""

    name = "graph.max_pool2d_indices"

    input = operand_def(TensorType)
    pooled = operand_def(TensorType)
    result = result_def(TensorType)
    dilations = prop_def(DenseArrayBase.constr(i64), default_value=_ints((1, 1)))
    kernel = prop_def(DenseArrayBase.constr(i64))
    strides = prop_def(DenseArrayBase.constr(i64), default_value=_ints((1, 1)))
    pads = prop_def(DenseArrayBase.constr(i64), default_value=_ints((0, 0, 0, 0)))
    ceil_mode = prop_def(BoolAttr, default_value=IntegerAttr.from_bool(False))
    storage_order = prop_def(IntegerAttr[_I64], default_value=_i64(0))

    irdl_options = (ParsePropInAttrDict(),)
    traits = traits_def(Pure(), FusionKind.OPAQUE)
    assembly_format = (
        "$input `,` $pooled `kernel` $kernel (`strides` $strides^)? (`pads` $pads^)? "
        "(`dilations` $dilations^)? attr-dict `:` functional-type(operands, results)")

    def __init__(self, input: SSAValue, pooled: SSAValue, kernel, strides, pads, dilations,
                 ceil_mode: bool = False, storage_order: int = 0):
        super().__init__(
            operands=[input, pooled], result_types=[_tensor(_shape(pooled), i64)],
            properties={"kernel": _ints(kernel), "strides": _ints(strides), "pads": _ints(pads),
                        "dilations": _ints(dilations), "ceil_mode": _bool(ceil_mode),
                        "storage_order": _i64(storage_order)})

    def verify_(self) -> None:
        _check_valid_shape(self)
        _check_same_element_type(self, [("input", self.input), ("pooled", self.pooled)])
        if len(_shape(self.input)) != 4 or len(_shape(self.pooled)) != 4:
            raise VerifyException("input and pooled must have rank 4 (NCHW)")
        _check_window_params(self.kernel.get_values(), self.strides.get_values(), self.pads.get_values(),
                             self.dilations.get_values())
        if self.storage_order.value.data not in (0, 1):
            raise VerifyException(f"storage_order must be 0 or 1, got {self.storage_order.value.data}")
        if _elt(self.result) != i64 or _shape(self.result) != _shape(self.pooled):
            raise VerifyException("the result must be i64 of the pooled shape")


@irdl_op_definition
class NonZeroOp(IRDLOperation):
    """The coordinates of the nonzero elements of `input`, in row-major order (ONNX NonZero).

    The result is (rank, count), i64; its second dim is data-dependent: `count` is a 0-d i64
    tensor holding the number of nonzeros (computed before, e.g. reduce_sum of x != 0), which
    the graph level reads (graph.extract) to size the result, as graph.range's length."""

    name = "graph.nonzero"

    input = operand_def(TensorType)
    count = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure(), FusionKind.OPAQUE)
    assembly_format = "$input `,` $count attr-dict `:` functional-type(operands, results)"

    def __init__(self, input: SSAValue, count: SSAValue):
        super().__init__(operands=[input, count], result_types=[_tensor([len(_shape(input)), -1], i64)])

    def verify_(self) -> None:
        _check_valid_shape(self)
        if _shape(self.count) != () or _elt(self.count) != i64:
            raise VerifyException(f"count must be a 0-d i64 tensor, got {self.count.type}")
        rank = len(_shape(self.input))
        rs = _shape(self.result)
        if _elt(self.result) != i64 or len(rs) != 2 or rs[0] != rank:
            raise VerifyException(f"the result must be i64 of shape [{rank}, ?], got {self.result.type}")


COVERAGE_REDUCE = [ReduceProdOp]
COVERAGE_OPS = [ReduceProdOp, ScatterElementsOp, ScatterNDOp, TopKOp, CumProdOp, MaxPool2dIndicesOp, NonZeroOp]
