"""The `graph` dialect: whole-tensor ops as the ONNX frontend emits them (the Relax analogue).

    %w = graph.param "fc.weight" : tensor<4x8xf32>
    %y = graph.matmul %x, %w : (tensor<?x4xf32>, tensor<4x8xf32>) -> tensor<?x8xf32>
    %z = graph.add %y, %b : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
    %r = graph.relu %z : tensor<?x8xf32>

Values are builtin `tensor<…>` types; a `?` dim is a run-time value. Shapes in Python are tuples of
ints where a dynamic dim is xDSL's `DYNAMIC_INDEX` (re-exported here as `DYNAMIC`; note that in xDSL
0.74 it is -(2**63), not -1). The shape helpers below accept any negative int as "dynamic" on input
and always return `DYNAMIC` for dynamic dims, so their results can go straight into `TensorType`.

Conventions shared by every op:
- op parameters are properties; integers are `i64` IntegerAttrs, floats `f64` FloatAttrs, booleans
  `i1` IntegerAttrs (BoolAttr, so `if op.keepdims:` works), int lists are `array<i64: …>`
  (`op.perm.get_values()`), axes are already normalized (>= 0);
- result shapes are checked against the inferred shape "compatibly": a dim matches if the two are
  equal or either is `?`;
- ops that create a shape with `?` dims from nothing (reshape, broadcast_to, call_kernel) take one
  `index` operand (`dims`) per `?` of their result(s), in order.
"""

from __future__ import annotations

import math
from abc import ABC
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from xdsl.dialects import math as _math
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    AnyFloat,
    BoolAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    DenseResourceAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    StringAttr,
    SymbolRefAttr,
    TensorType,
    f64,
    i1,
    i64,
)
from xdsl.dialects.builtin import I64 as _I64
from xdsl.ir import Attribute, Dialect, Operation, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    ParsePropInAttrDict,
    IRDLOperation,
    ParamAttrConstraint,
    VarConstraint,
    base,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

import minimlir.dialects._xdsl_compat  # noqa: F401  (parser fixes for the pinned xDSL)
from minimlir.dialects import elementfn as _ef
from minimlir.dialects._fusion import FusionKind, OpPattern
from minimlir.dialects.builder import ElementBuilder

DYNAMIC = DYNAMIC_INDEX
"""The value of a `?` dim in a shape (xDSL's DYNAMIC_INDEX)."""

Shape = Sequence[int]


# ===========================================================================
# Shape helpers (shared with the ONNX importer and the legalizer)
# ===========================================================================


class ShapeError(ValueError):
    """Raised by the shape helpers when shapes do not fit together."""


def is_dynamic(dim: int) -> bool:
    """True for a `?` dim (any negative int, so both -1 and DYNAMIC_INDEX count)."""
    return dim < 0


def _dyn(dim: int) -> int:
    return DYNAMIC if dim < 0 else dim


def format_shape(shape: Shape) -> str:
    """`2x?x4` (the tensor-type spelling), `scalar` for rank 0."""
    return "x".join("?" if d < 0 else str(d) for d in shape) if len(shape) else "scalar"


def dims_compatible(a: int, b: int) -> bool:
    """Two dims are compatible when equal or when either is `?`."""
    return a < 0 or b < 0 or a == b


def num_elements(shape: Shape) -> int | None:
    """The static element count, or None if any dim is `?`."""
    if any(d < 0 for d in shape):
        return None
    return math.prod(shape)


def broadcast_shapes(*shapes: Shape, names: Sequence[str] | None = None) -> list[int]:
    """The NumPy broadcast of `shapes` (right-aligned; 1 stretches; `?` is compatible with anything).

    `?` against 1 or `?` stays `?`; `?` against a static n > 1 gives n. Raises ShapeError naming the
    clashing dims, e.g. "shapes 2x3 and 4 are not broadcast-compatible: dim 1 of shape 0 (3) vs
    dim 0 of shape 1 (4)".
    """
    names = list(names) if names is not None else [f"shape {i}" for i in range(len(shapes))]
    rank = max((len(s) for s in shapes), default=0)
    result: list[int] = []
    for pos in range(rank):  # pos counts from the left of the result
        size = 1
        owner: tuple[str, int] | None = None  # (name, dim) of the static size > 1 we committed to
        dynamic = False
        for name, shape in zip(names, shapes):
            dim = pos - (rank - len(shape))
            if dim < 0:
                continue
            d = shape[dim]
            if d < 0:
                dynamic = True
            elif d != 1:
                if owner is not None and d != size:
                    raise ShapeError(
                        f"shapes {' and '.join(format_shape(s) for s in shapes)} are not "
                        f"broadcast-compatible: dim {owner[1]} of {owner[0]} ({size}) vs "
                        f"dim {dim} of {name} ({d})"
                    )
                size, owner = d, (name, dim)
        result.append(size if owner is not None or not dynamic else DYNAMIC)
    return result


def broadcastable_to(shape: Shape, target: Shape) -> bool:
    """True if `shape` can be broadcast to exactly `target` (unidirectional, `?`-aware)."""
    if len(shape) > len(target):
        return False
    offset = len(target) - len(shape)
    return all(
        d == 1 or dims_compatible(d, target[i + offset]) for i, d in enumerate(shape)
    )


def matmul_result_shape(a: Shape, b: Shape) -> list[int]:
    """NumPy matmul: 1-D operands are promoted (and the added dim dropped), batch dims broadcast."""
    if len(a) == 0 or len(b) == 0:
        raise ShapeError("matmul operands must have rank >= 1")
    a2 = list(a) if len(a) >= 2 else [1, a[0]]
    b2 = list(b) if len(b) >= 2 else [b[0], 1]
    if not dims_compatible(a2[-1], b2[-2]):
        raise ShapeError(
            f"matmul contraction dims clash: lhs dim {len(a) - 1} ({a2[-1]}) vs rhs dim "
            f"{max(len(b) - 2, 0)} ({b2[-2]}) in {format_shape(a)} and {format_shape(b)}"
        )
    batch = broadcast_shapes(a2[:-2], b2[:-2], names=["lhs", "rhs"])
    result = batch + [_dyn(a2[-2]), _dyn(b2[-1])]
    if len(b) == 1:
        result.pop(-1)
    if len(a) == 1:
        result.pop(-2 if len(b) > 1 else -1)
    return result


def window_output_size(
    size: int,
    kernel: int,
    stride: int,
    pad_begin: int,
    pad_end: int,
    dilation: int = 1,
    ceil_mode: bool = False,
) -> int:
    """Output length of a sliding window along one spatial dim (ONNX / PyTorch rule).

    floor((size + pads - dilation*(kernel-1) - 1) / stride) + 1, or with ceil instead of floor
    when `ceil_mode`, dropping a last window that would start inside the end padding.
    """
    if size < 0 or kernel < 0:
        return DYNAMIC
    extent = dilation * (kernel - 1) + 1
    span = size + pad_begin + pad_end - extent
    if span < 0:
        raise ShapeError(
            f"window extent {extent} is larger than the padded input {size + pad_begin + pad_end}"
        )
    if not ceil_mode:
        return span // stride + 1
    out = -(-span // stride) + 1
    if (out - 1) * stride >= size + pad_begin:
        out -= 1
    return out


def conv2d_output_shape(
    input_shape: Shape,
    weight_shape: Shape,
    strides: Sequence[int] = (1, 1),
    pads: Sequence[int] = (0, 0, 0, 0),
    dilations: Sequence[int] = (1, 1),
) -> list[int]:
    """NCHW result of a conv2d: (N, O, H_out, W_out); pads are [top, left, bottom, right]."""
    if len(input_shape) != 4 or len(weight_shape) != 4:
        raise ShapeError("conv2d input and weight must have rank 4")
    n, _, h, w = input_shape
    o, _, kh, kw = weight_shape
    return [
        _dyn(n),
        _dyn(o),
        window_output_size(h, kh, strides[0], pads[0], pads[2], dilations[0]),
        window_output_size(w, kw, strides[1], pads[1], pads[3], dilations[1]),
    ]


def blocked_shape(shape: Shape, block: int) -> list[int]:
    """(N, C, H, W) -> (N, C/block, H, W, block): the channel-blocked (NCHW{block}c) activation
    layout of graph-layout; `shape` itself when block is 0."""
    if not block:
        return list(shape)
    n, c, h, w = shape
    return [n, c // block if c >= 0 else -1, h, w, block]


def unblocked_shape(shape: Shape, block: int) -> list[int]:
    """(N, C/block, H, W, block) -> (N, C, H, W); `shape` itself when block is 0."""
    if not block:
        return list(shape)
    if len(shape) != 5 or shape[4] != block:
        raise ShapeError(f"a channel-blocked (block {block}) tensor must have shape (N, C/{block}, H, W, {block}), "
                         f"got {format_shape(shape)}")
    n, cb, h, w, _ = shape
    return [n, cb * block if cb >= 0 else -1, h, w]


def unpacked_weight_shape(weight_shape: Shape, tile: int) -> list[int]:
    """A conv weight's logical (O, C/group, KH, KW) shape: itself, or of an OIHW{tile}o packing."""
    if not tile or len(weight_shape) != 5:
        return list(weight_shape)
    o0, c, kh, kw, t = weight_shape
    return [o0 * t if o0 >= 0 and t >= 0 else -1, c, kh, kw]


def pool2d_output_shape(
    input_shape: Shape,
    kernel: Sequence[int],
    strides: Sequence[int] = (1, 1),
    pads: Sequence[int] = (0, 0, 0, 0),
    dilations: Sequence[int] = (1, 1),
    ceil_mode: bool = False,
) -> list[int]:
    """NCHW result of a 2-D pool: (N, C, H_out, W_out); `ceil_mode` as in ONNX / PyTorch."""
    if len(input_shape) != 4:
        raise ShapeError("pool2d input must have rank 4")
    n, c, h, w = input_shape
    return [
        _dyn(n),
        _dyn(c),
        window_output_size(h, kernel[0], strides[0], pads[0], pads[2], dilations[0], ceil_mode),
        window_output_size(w, kernel[1], strides[1], pads[1], pads[3], dilations[1], ceil_mode),
    ]


def reduce_result_shape(shape: Shape, axes: Sequence[int], keepdims: bool) -> list[int]:
    """Shape after reducing `axes` (normalized): kept as 1 or dropped."""
    out: list[int] = []
    for i, d in enumerate(shape):
        if i in axes:
            if keepdims:
                out.append(1)
        else:
            out.append(_dyn(d))
    return out


def normalize_slice(size: int, start: int, end: int, step: int) -> tuple[int, int]:
    """ONNX Slice normalization of one dim of static `size`: negative values count from the end,
    then start/end are clamped to [0, size] (step > 0) or start to [0, size-1] and end to
    [-1, size-1] (step < 0; end -1 means "before index 0")."""
    if step == 0:
        raise ShapeError("slice step must be non-zero")
    if start < 0:
        start += size
    if end < 0:
        end += size
    if step > 0:
        return min(max(start, 0), size), min(max(end, 0), size)
    return min(max(start, 0), size - 1), min(max(end, -1), size - 1)


def slice_result_dim(size: int, start: int, end: int, step: int) -> int:
    """Length of a slice of one dim. For a static `size`, start/end are already normalized
    (see `normalize_slice`); for a `?` dim the result is `?`."""
    if size < 0:
        return DYNAMIC
    if step > 0:
        return max(0, -(-(end - start) // step))
    return max(0, -(-(start - end) // -step))


def gather_result_shape(data: Shape, indices: Shape, axis: int) -> list[int]:
    """data.shape[:axis] + indices.shape + data.shape[axis+1:]."""
    return [_dyn(d) for d in (*data[:axis], *indices, *data[axis + 1 :])]


# ===========================================================================
# Attribute / type helpers
# ===========================================================================


def _i64(value: int) -> IntegerAttr:
    return IntegerAttr(value, i64)


def _f64(value: float) -> FloatAttr:
    return FloatAttr(float(value), f64)


def _bool(value: bool) -> IntegerAttr:
    return IntegerAttr.from_bool(bool(value))


def _ints(values: Sequence[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, [int(v) for v in values])


def _tensor(shape: Shape, element_type: Attribute) -> TensorType:
    return TensorType(element_type, [_dyn(d) for d in shape])


def _shape(value: SSAValue | Attribute) -> tuple[int, ...]:
    ty = value.type if isinstance(value, SSAValue) else value
    assert isinstance(ty, TensorType)
    return ty.get_shape()


def _elt(value: SSAValue | Attribute) -> Attribute:
    ty = value.type if isinstance(value, SSAValue) else value
    assert isinstance(ty, TensorType)
    return ty.get_element_type()


def _is_float(t: Attribute) -> bool:
    return isinstance(t, AnyFloat)


def _is_int(t: Attribute) -> bool:
    return isinstance(t, IntegerType)


def _normalize_axis(axis: int, rank: int) -> int:
    return axis + rank if axis < 0 else axis


def _check_valid_shape(op: IRDLOperation) -> None:
    """Reject negative static dims (e.g. -1 used instead of DYNAMIC_INDEX: it prints as `-1`)."""
    for v in (*op.operands, *op.results):
        if isinstance(v.type, TensorType):
            for d in v.type.get_shape():
                if d < 0 and d != DYNAMIC_INDEX:
                    raise VerifyException(
                        f"invalid dim {d} in {v.type}: use DYNAMIC_INDEX (`?`) for dynamic dims"
                    )


def _check_result_shape(inferred: Shape, result: SSAValue, what: str = "result") -> None:
    actual = _shape(result)
    if len(actual) != len(inferred) or not all(
        dims_compatible(a, b) for a, b in zip(actual, inferred)
    ):
        raise VerifyException(
            f"{what} shape {format_shape(actual)} does not match the inferred shape "
            f"{format_shape(inferred)}"
        )


def _check_same_element_type(op: IRDLOperation, values: Sequence[tuple[str, SSAValue]]) -> None:
    (first_name, first), *rest = values
    for name, v in rest:
        if _elt(v) != _elt(first):
            raise VerifyException(
                f"element type of {name} ({_elt(v)}) does not match {first_name} ({_elt(first)})"
            )


def _check_axis(axis: int, rank: int, what: str = "axis") -> None:
    if not 0 <= axis < rank:
        raise VerifyException(f"{what} {axis} is out of range for rank {rank} (expected 0..{rank - 1})")


def _check_len(name: str, values: Sequence[int], expected: int) -> None:
    if len(values) != expected:
        raise VerifyException(f"{name} must have {expected} entries, got {len(values)}")


def _check_num_dims(dims: Sequence[SSAValue], types: Sequence[Attribute]) -> None:
    expected = sum(
        1 for t in types if isinstance(t, TensorType) for d in t.get_shape() if d < 0
    )
    if len(dims) != expected:
        raise VerifyException(
            f"expected {expected} dims operand(s), one per `?` in the result type(s), got {len(dims)}"
        )


def _split_props(cls: type[IRDLOperation], attrs: dict[str, Attribute]):
    """Split a parsed attribute dictionary into (properties, attributes) by the op's definition."""
    prop_names = cls.get_irdl_definition().properties.keys()
    props = {k: v for k, v in attrs.items() if k in prop_names}
    return props, {k: v for k, v in attrs.items() if k not in prop_names}


def _print_props_and_attrs(printer: Printer, op: IRDLOperation) -> None:
    """Print non-default properties and the attributes in one `{…}` dictionary (MLIR habit)."""
    defs = op.get_irdl_definition().properties
    shown = {
        k: v
        for k, v in op.properties.items()
        if k not in defs or defs[k].default_value != v
    } | dict(op.attributes)
    printer.print_op_attributes(shown)


# ===========================================================================
# Leaves
# ===========================================================================


@irdl_op_definition
class ParamOp(IRDLOperation):
    """A named weight that lives outside the IR (in the params file): `graph.param "w" : tensor<…>`."""

    name = "graph.param"

    param_name = prop_def(StringAttr)
    result = result_def(TensorType)

    traits = traits_def(Pure(), FusionKind.OPAQUE)
    assembly_format = "$param_name attr-dict `:` type($result)"

    def __init__(self, name: str | StringAttr, type: TensorType):
        if isinstance(name, str):
            name = StringAttr(name)
        super().__init__(result_types=[type], properties={"param_name": name})

    def verify_(self) -> None:
        _check_valid_shape(self)
        if not self.param_name.data:
            raise VerifyException("param_name must not be empty")


_ConstT = VarConstraint("T", base(TensorType))


@irdl_op_definition
class ConstantOp(IRDLOperation):
    """A literal tensor: `graph.constant dense<[1.0, 2.0]> : tensor<2xf32>`."""

    name = "graph.constant"

    T: ClassVar = _ConstT
    value = prop_def(
        ParamAttrConstraint(DenseIntOrFPElementsAttr, (_ConstT, base(Attribute)))
        | ParamAttrConstraint(DenseResourceAttr, (base(StringAttr), _ConstT))
    )
    result = result_def(_ConstT)

    traits = traits_def(Pure(), FusionKind.OPAQUE)
    assembly_format = "attr-dict $value"

    def __init__(self, value: DenseIntOrFPElementsAttr | DenseResourceAttr):
        super().__init__(result_types=[value.get_type()], properties={"value": value})

    def verify_(self) -> None:
        _check_valid_shape(self)
        if any(d < 0 for d in _shape(self.result)):
            raise VerifyException(f"constant type {self.result.type} must be fully static")


# ===========================================================================
# Elementwise binary ops (NumPy broadcasting)
# ===========================================================================


class _BinaryOp(IRDLOperation, ABC):
    """Shared base: `graph.add %a, %b : tensor<4xf32>` when both operands have the same type and the
    result is the inferred one, else `graph.add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> …`."""

    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure(), FusionKind.BROADCAST)

    # "numeric" (int or float), "float", or "int" (signless integers, i1 included)
    OPERAND_KIND: ClassVar[str] = "numeric"

    def __init__(self, lhs: SSAValue, rhs: SSAValue, result_type: Attribute | None = None,
                 properties: dict[str, Attribute] | None = None):
        if result_type is None:
            result_type = self.infer_result_type(lhs.type, rhs.type)
        super().__init__(
            operands=[lhs, rhs], result_types=[result_type], properties=properties or {}
        )

    @classmethod
    def result_element_type(cls, operand_element_type: Attribute) -> Attribute:
        return operand_element_type

    @classmethod
    def infer_result_type(cls, lhs: Attribute, rhs: Attribute) -> TensorType:
        """The broadcast result type; raises VerifyException when the shapes do not broadcast."""
        assert isinstance(lhs, TensorType) and isinstance(rhs, TensorType)
        try:
            shape = broadcast_shapes(lhs.get_shape(), rhs.get_shape(), names=["lhs", "rhs"])
        except ShapeError as e:
            raise VerifyException(str(e)) from e
        return _tensor(shape, cls.result_element_type(lhs.get_element_type()))

    def verify_(self) -> None:
        _check_valid_shape(self)
        _check_same_element_type(self, [("lhs", self.lhs), ("rhs", self.rhs)])
        _check_element_kind(_elt(self.lhs), self.OPERAND_KIND, "operand")
        inferred = self.infer_result_type(self.lhs.type, self.rhs.type)
        if _elt(self.result) != inferred.get_element_type():
            raise VerifyException(
                f"result element type {_elt(self.result)} must be {inferred.get_element_type()}"
            )
        _check_result_shape(inferred.get_shape(), self.result)

    @classmethod
    def parse(cls, parser: Parser):
        lhs = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        rhs = parser.parse_unresolved_operand()
        props, attrs = _split_props(cls, parser.parse_optional_attr_dict())
        parser.parse_punctuation(":")
        if parser.parse_optional_punctuation("(") is not None:
            lhs_type = parser.parse_type()
            parser.parse_punctuation(",")
            rhs_type = parser.parse_type()
            parser.parse_punctuation(")")
            parser.parse_punctuation("->")
            result_type = parser.parse_type()
        else:
            pos = parser.pos
            lhs_type = rhs_type = parser.parse_type()
            if not isinstance(lhs_type, TensorType):
                parser.raise_error(f"expected a tensor type, got {lhs_type}", pos, parser.pos)
            result_type = cls.infer_result_type(lhs_type, rhs_type)
        op = cls.create(
            operands=[parser.resolve_operand(lhs, lhs_type), parser.resolve_operand(rhs, rhs_type)],
            result_types=[result_type],
            properties=props,
            attributes=attrs,
        )
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.lhs)
        printer.print_string(", ")
        printer.print_operand(self.rhs)
        _print_props_and_attrs(printer, self)
        printer.print_string(" : ")
        short = False
        if self.lhs.type == self.rhs.type:
            try:
                short = self.infer_result_type(self.lhs.type, self.rhs.type) == self.result.type
            except VerifyException:
                short = False
        if short:
            printer.print_attribute(self.lhs.type)
        else:
            printer.print_string("(")
            printer.print_attribute(self.lhs.type)
            printer.print_string(", ")
            printer.print_attribute(self.rhs.type)
            printer.print_string(") -> ")
            printer.print_attribute(self.result.type)


def element_kind_ok(t: Attribute, kind: str) -> bool:
    """Whether element type `t` is of `kind`: "numeric", "float", "int", "bool" (i1) or "any"."""
    return {
        "numeric": _is_float(t) or _is_int(t),
        "float": _is_float(t),
        "int": _is_int(t),
        "bool": t == i1,
        "any": True,
    }[kind]


def _check_element_kind(t: Attribute, kind: str, what: str) -> None:
    if not element_kind_ok(t, kind):
        expected = {"numeric": "an integer or float", "float": "a float", "int": "an integer",
                    "bool": "i1"}[kind]
        raise VerifyException(f"{what} element type must be {expected} type, got {t}")


class _CompareOp(_BinaryOp, ABC):
    """Shared base for comparisons: broadcast shape, i1 result."""

    @classmethod
    def result_element_type(cls, operand_element_type: Attribute) -> Attribute:
        return i1


@irdl_op_definition
class AddOp(_BinaryOp):
    """Elementwise lhs + rhs with broadcasting."""

    name = "graph.add"


@irdl_op_definition
class SubOp(_BinaryOp):
    """Elementwise lhs - rhs with broadcasting."""

    name = "graph.sub"


@irdl_op_definition
class MulOp(_BinaryOp):
    """Elementwise lhs * rhs with broadcasting."""

    name = "graph.mul"


@irdl_op_definition
class DivOp(_BinaryOp):
    """Elementwise lhs / rhs with broadcasting (integers: truncating division)."""

    name = "graph.div"


@irdl_op_definition
class PowOp(_BinaryOp):
    """Elementwise lhs ** rhs with broadcasting."""

    name = "graph.pow"


@irdl_op_definition
class MaxOp(_BinaryOp):
    """Elementwise max(lhs, rhs) with broadcasting."""

    name = "graph.max"


@irdl_op_definition
class MinOp(_BinaryOp):
    """Elementwise min(lhs, rhs) with broadcasting."""

    name = "graph.min"


@irdl_op_definition
class ModOp(_BinaryOp):
    """Elementwise remainder, with the divisor's sign (Python %) or the dividend's (C fmod, floats)."""

    name = "graph.mod"

    fmod = prop_def(BoolAttr, default_value=IntegerAttr.from_bool(False))

    def __init__(self, lhs: SSAValue, rhs: SSAValue, fmod: bool = False,
                 result_type: Attribute | None = None):
        super().__init__(lhs, rhs, result_type, properties={"fmod": _bool(fmod)})

    def verify_(self) -> None:
        super().verify_()
        if _is_float(_elt(self.lhs)) and not self.fmod:
            raise VerifyException("float mod requires fmod = true")


@irdl_op_definition
class AndOp(_BinaryOp):
    """Elementwise logical/bitwise and with broadcasting (integer or i1)."""

    name = "graph.and"
    OPERAND_KIND: ClassVar[str] = "int"


@irdl_op_definition
class OrOp(_BinaryOp):
    """Elementwise logical/bitwise or with broadcasting (integer or i1)."""

    name = "graph.or"
    OPERAND_KIND: ClassVar[str] = "int"


@irdl_op_definition
class XorOp(_BinaryOp):
    """Elementwise logical/bitwise xor with broadcasting (integer or i1)."""

    name = "graph.xor"
    OPERAND_KIND: ClassVar[str] = "int"


@irdl_op_definition
class EqOp(_CompareOp):
    """Elementwise lhs == rhs with broadcasting, i1 result."""

    name = "graph.eq"
    OPERAND_KIND: ClassVar[str] = "any"


@irdl_op_definition
class LtOp(_CompareOp):
    """Elementwise lhs < rhs with broadcasting, i1 result."""

    name = "graph.lt"


@irdl_op_definition
class LeOp(_CompareOp):
    """Elementwise lhs <= rhs with broadcasting, i1 result."""

    name = "graph.le"


@irdl_op_definition
class GtOp(_CompareOp):
    """Elementwise lhs > rhs with broadcasting, i1 result."""

    name = "graph.gt"


@irdl_op_definition
class GeOp(_CompareOp):
    """Elementwise lhs >= rhs with broadcasting, i1 result."""

    name = "graph.ge"


# ===========================================================================
# Elementwise unary ops (result type == input type)
# ===========================================================================


class _UnaryOp(IRDLOperation, ABC):
    """Shared base: `graph.relu %x : tensor<?x4xf32>`; the result has the input's type."""

    T: ClassVar = VarConstraint("T", base(TensorType))
    input = operand_def(T)
    result = result_def(T)

    traits = traits_def(Pure(), FusionKind.ELEMWISE)
    assembly_format = "$input attr-dict `:` type($result)"

    ELEMENT_KIND: ClassVar[str] = "float"
    """The input element types it takes ("float", "numeric", "bool"): verified, and the ONNX importer
    refuses others with a reason ("Sigmoid of i32")."""
    # What the rest of the compiler needs to know about a unary op, declared here so that a new
    # one is one class (see dialects/_graph_more.py `_unary` and docs/architecture.md). Its fusion
    # kind is the ELEMWISE trait above; graph-legalize builds `y[i] = element(x[i])`
    # (passes/graph/legalize/unary.py); the ONNX import follows from ONNX / ONNX_ATTRS / NUMPY_FOLD
    # (frontend/_onnx_unary.py).
    ONNX: ClassVar[str | None] = None
    """The ONNX op type it imports from, `Op(x) -> y`; None: not imported, or by a hand-written
    importer (graph.clip, graph.gelu: frontend/_onnx_ops.py says why)."""
    ONNX_ATTRS: ClassVar[dict[str, float]] = {}
    """The ONNX op's float attributes with their ONNX defaults, `{"alpha": 0.01}`: the importer
    passes each to the constructor as the keyword of the same name (the op's property)."""
    NUMPY_FOLD: ClassVar[str | None] = None
    """The NumPy function, by name (`"negative"`: np.negative), that computes the op exactly: the
    importer folds the op with it on small constant inputs (shape arithmetic such as
    LayerNormalization's `ConstantOfShape(Neg(axis))` needs the value at import time)."""
    MATH_OP: ClassVar[type[IRDLOperation] | None] = None
    """Its element function as one op of xDSL's math dialect (the default `element`)."""

    def __init__(self, input: SSAValue, properties: dict[str, Attribute] | None = None):
        super().__init__(
            operands=[input], result_types=[input.type], properties=properties or {}
        )

    def element(self, b: ElementBuilder, x: SSAValue) -> SSAValue:
        """One element of the result, built with `b` from the input element `x` (a scalar of the
        input's element type): `MATH_OP(x)` by default; an op whose element function is more than
        one math op overrides this with the functions of minimlir.dialects.elementfn."""
        if self.MATH_OP is None:
            raise NotImplementedError(f"{self.name} declares no element function (MATH_OP or element)")
        return b.emit(self.MATH_OP(x))  # type: ignore[call-arg]

    def verify_(self) -> None:
        _check_valid_shape(self)
        _check_element_kind(_elt(self.input), self.ELEMENT_KIND, "input")


def unary_op_classes() -> list[type[_UnaryOp]]:
    """Every unary graph op class: the subclasses of `_UnaryOp` at any depth, wherever they are
    defined (graph-legalize and the ONNX importer derive what they do for each from the class)."""
    out, todo = [], list(_UnaryOp.__subclasses__())
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        out.append(cls)
    return out


@irdl_op_definition
class ReluOp(_UnaryOp):
    """Elementwise max(x, 0)."""

    name = "graph.relu"
    ONNX: ClassVar = "Relu"
    ELEMENT_KIND: ClassVar[str] = "numeric"

    def element(self, b: ElementBuilder, x: SSAValue) -> SSAValue:
        return _ef.relu(b, x)


@irdl_op_definition
class SigmoidOp(_UnaryOp):
    """Elementwise 1 / (1 + exp(-x))."""

    name = "graph.sigmoid"
    ONNX: ClassVar = "Sigmoid"

    def element(self, b: ElementBuilder, x: SSAValue) -> SSAValue:
        return _ef.sigmoid(b, x)


@irdl_op_definition
class TanhOp(_UnaryOp):
    """Elementwise tanh(x)."""

    name = "graph.tanh"
    ONNX: ClassVar = "Tanh"
    MATH_OP: ClassVar = _math.TanhOp


@irdl_op_definition
class ExpOp(_UnaryOp):
    """Elementwise exp(x)."""

    name = "graph.exp"
    ONNX: ClassVar = "Exp"
    MATH_OP: ClassVar = _math.ExpOp


@irdl_op_definition
class LogOp(_UnaryOp):
    """Elementwise natural log(x)."""

    name = "graph.log"
    ONNX: ClassVar = "Log"
    MATH_OP: ClassVar = _math.LogOp


@irdl_op_definition
class SqrtOp(_UnaryOp):
    """Elementwise sqrt(x)."""

    name = "graph.sqrt"
    ONNX: ClassVar = "Sqrt"
    MATH_OP: ClassVar = _math.SqrtOp


@irdl_op_definition
class RsqrtOp(_UnaryOp):
    """Elementwise 1 / sqrt(x)."""

    name = "graph.rsqrt"
    MATH_OP: ClassVar = _math.RsqrtOp


@irdl_op_definition
class ErfOp(_UnaryOp):
    """Elementwise error function erf(x)."""

    name = "graph.erf"
    ONNX: ClassVar = "Erf"
    MATH_OP: ClassVar = _math.ErfOp


@irdl_op_definition
class NegOp(_UnaryOp):
    """Elementwise -x."""

    name = "graph.neg"
    ONNX: ClassVar = "Neg"
    NUMPY_FOLD: ClassVar = "negative"
    ELEMENT_KIND: ClassVar[str] = "numeric"

    def element(self, b: ElementBuilder, x: SSAValue) -> SSAValue:
        return b.neg(x)


@irdl_op_definition
class AbsOp(_UnaryOp):
    """Elementwise |x|."""

    name = "graph.abs"
    ONNX: ClassVar = "Abs"
    NUMPY_FOLD: ClassVar = "abs"
    ELEMENT_KIND: ClassVar[str] = "numeric"

    def element(self, b: ElementBuilder, x: SSAValue) -> SSAValue:
        return _ef.abs_(b, x)


@irdl_op_definition
class FloorOp(_UnaryOp):
    """Elementwise floor(x)."""

    name = "graph.floor"
    ONNX: ClassVar = "Floor"
    NUMPY_FOLD: ClassVar = "floor"
    MATH_OP: ClassVar = _math.FloorOp


@irdl_op_definition
class CeilOp(_UnaryOp):
    """Elementwise ceil(x)."""

    name = "graph.ceil"
    ONNX: ClassVar = "Ceil"
    NUMPY_FOLD: ClassVar = "ceil"
    MATH_OP: ClassVar = _math.CeilOp


@irdl_op_definition
class SignOp(_UnaryOp):
    """Elementwise sign(x) in {-1, 0, 1}."""

    name = "graph.sign"
    ONNX: ClassVar = "Sign"
    NUMPY_FOLD: ClassVar = "sign"
    ELEMENT_KIND: ClassVar[str] = "numeric"

    def element(self, b: ElementBuilder, x: SSAValue) -> SSAValue:
        return _ef.sign(b, x)


@irdl_op_definition
class ReciprocalOp(_UnaryOp):
    """Elementwise 1 / x."""

    name = "graph.reciprocal"
    ONNX: ClassVar = "Reciprocal"

    def element(self, b: ElementBuilder, x: SSAValue) -> SSAValue:
        return _ef.reciprocal(b, x)


@irdl_op_definition
class NotOp(_UnaryOp):
    """Elementwise logical not of an i1 tensor."""

    name = "graph.not"
    ONNX: ClassVar = "Not"
    NUMPY_FOLD: ClassVar = "logical_not"
    ELEMENT_KIND: ClassVar[str] = "bool"

    def element(self, b: ElementBuilder, x: SSAValue) -> SSAValue:
        return _ef.logical_not(b, x)


@irdl_op_definition
class SoftplusOp(_UnaryOp):
    """Elementwise log(1 + exp(x))."""

    name = "graph.softplus"
    ONNX: ClassVar = "Softplus"

    def element(self, b: ElementBuilder, x: SSAValue) -> SSAValue:
        return _ef.softplus(b, x)


@irdl_op_definition
class HardSwishOp(_UnaryOp):
    """Elementwise x * relu6(x + 3) / 6."""

    name = "graph.hard_swish"
    ONNX: ClassVar = "HardSwish"

    def element(self, b: ElementBuilder, x: SSAValue) -> SSAValue:
        return _ef.hard_swish(b, x)


@irdl_op_definition
class GeluOp(_UnaryOp):
    """Elementwise GELU, exact (`approximate "none"`, default) or tanh-approximated."""

    name = "graph.gelu"
    # imported by hand (frontend/_onnx_ops.py emit_gelu): ONNX's `approximate` is a string, checked
    # before import so that an unknown one is refused with the others' reasons

    approximate = prop_def(StringAttr, default_value=StringAttr("none"))
    assembly_format = "$input (`approximate` $approximate^)? attr-dict `:` type($result)"

    def __init__(self, input: SSAValue, approximate: str = "none"):
        super().__init__(input, {"approximate": StringAttr(approximate)})

    def verify_(self) -> None:
        super().verify_()
        if self.approximate.data not in ("none", "tanh"):
            raise VerifyException(
                f"approximate must be \"none\" or \"tanh\", got \"{self.approximate.data}\""
            )

    def element(self, b: ElementBuilder, x: SSAValue) -> SSAValue:
        return _ef.gelu(b, x, self.approximate.data)


@irdl_op_definition
class ClipOp(_UnaryOp):
    """Elementwise clamp to [min, max]; a missing bound is unbounded: `graph.clip %x min 0.0 max 6.0`."""

    name = "graph.clip"
    # imported by hand (frontend/_onnx_ops.py emit_clip): ONNX's min/max are inputs since opset 11,
    # possibly computed at run time (then graph.max / graph.min), and integer x uses those too
    ELEMENT_KIND: ClassVar[str] = "numeric"

    min = opt_prop_def(FloatAttr[Float64Type])
    max = opt_prop_def(FloatAttr[Float64Type])
    assembly_format = "$input (`min` $min^)? (`max` $max^)? attr-dict `:` type($result)"

    def __init__(self, input: SSAValue, min: float | None = None, max: float | None = None):
        props: dict[str, Attribute] = {}
        if min is not None:
            props["min"] = _f64(min)
        if max is not None:
            props["max"] = _f64(max)
        super().__init__(input, props)

    def verify_(self) -> None:
        super().verify_()
        if self.min is not None and self.max is not None and self.min.value.data > self.max.value.data:
            raise VerifyException(
                f"min ({self.min.value.data}) must not be greater than max ({self.max.value.data})"
            )

    def element(self, b: ElementBuilder, x: SSAValue) -> SSAValue:
        lo = self.min.value.data if self.min is not None else None
        hi = self.max.value.data if self.max is not None else None
        return _ef.clamp(b, x, lo, hi)


@irdl_op_definition
class LeakyReluOp(_UnaryOp):
    """Elementwise x if x >= 0 else alpha * x."""

    name = "graph.leaky_relu"
    ONNX: ClassVar = "LeakyRelu"
    ONNX_ATTRS: ClassVar = {"alpha": 0.01}

    alpha = prop_def(FloatAttr[Float64Type])
    assembly_format = "$input `alpha` $alpha attr-dict `:` type($result)"

    def __init__(self, input: SSAValue, alpha: float = 0.01):
        super().__init__(input, {"alpha": _f64(alpha)})

    def element(self, b: ElementBuilder, x: SSAValue) -> SSAValue:
        return _ef.leaky_relu(b, x, self.alpha.value.data)


@irdl_op_definition
class EluOp(_UnaryOp):
    """Elementwise x if x > 0 else alpha * (exp(x) - 1)."""

    name = "graph.elu"
    ONNX: ClassVar = "Elu"
    ONNX_ATTRS: ClassVar = {"alpha": 1.0}

    alpha = prop_def(FloatAttr[Float64Type])
    assembly_format = "$input `alpha` $alpha attr-dict `:` type($result)"

    def __init__(self, input: SSAValue, alpha: float = 1.0):
        super().__init__(input, {"alpha": _f64(alpha)})

    def element(self, b: ElementBuilder, x: SSAValue) -> SSAValue:
        return _ef.elu(b, x, self.alpha.value.data)


@irdl_op_definition
class SeluOp(_UnaryOp):
    """Elementwise gamma * (x if x > 0 else alpha * (exp(x) - 1))."""

    name = "graph.selu"
    ONNX: ClassVar = "Selu"
    ONNX_ATTRS: ClassVar = {"alpha": 1.67326319217681884765625, "gamma": 1.05070102214813232421875}

    alpha = prop_def(FloatAttr[Float64Type])
    gamma = prop_def(FloatAttr[Float64Type])
    assembly_format = "$input `alpha` $alpha `gamma` $gamma attr-dict `:` type($result)"

    def __init__(self, input: SSAValue, alpha: float = 1.6732632423543772,
                 gamma: float = 1.0507009873554805):
        super().__init__(input, {"alpha": _f64(alpha), "gamma": _f64(gamma)})

    def element(self, b: ElementBuilder, x: SSAValue) -> SSAValue:
        return _ef.selu(b, x, self.alpha.value.data, self.gamma.value.data)


@irdl_op_definition
class HardSigmoidOp(_UnaryOp):
    """Elementwise max(0, min(1, alpha * x + beta))."""

    name = "graph.hard_sigmoid"
    ONNX: ClassVar = "HardSigmoid"
    ONNX_ATTRS: ClassVar = {"alpha": 0.2, "beta": 0.5}

    alpha = prop_def(FloatAttr[Float64Type])
    beta = prop_def(FloatAttr[Float64Type])
    assembly_format = "$input `alpha` $alpha `beta` $beta attr-dict `:` type($result)"

    def __init__(self, input: SSAValue, alpha: float = 0.2, beta: float = 0.5):
        super().__init__(input, {"alpha": _f64(alpha), "beta": _f64(beta)})

    def element(self, b: ElementBuilder, x: SSAValue) -> SSAValue:
        return _ef.hard_sigmoid(b, x, self.alpha.value.data, self.beta.value.data)


# ===========================================================================
# Linear algebra, convolution, pooling
# ===========================================================================


@irdl_op_definition
class MatMulOp(IRDLOperation):
    """NumPy matmul (1-D promotion, broadcast batch dims): `graph.matmul %a, %b : (…) -> …`.

    With `weight_tile T` (graph-pack-weights) a 2-D right operand B (K, N) is pre-packed in
    column panels, the layout the matmul rule streams (MLAS's and onnxruntime's pre-packed GEMM
    B): a (ceil(N/T), K, T) tensor with B[k, n] at [n floordiv T, k, n mod T], the last panel
    zero-padded; N is the result's last dim.

    %y = graph.matmul %x, %p weight_tile 24 : (tensor<1x128x512xf32>, tensor<86x512x24xf32>) -> tensor<1x128x2048xf32>
    """

    name = "graph.matmul"

    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)

    weight_tile = prop_def(IntegerAttr[_I64], default_value=_i64(0))

    traits = traits_def(Pure(), FusionKind.OUT_EWISE_FUSABLE)
    assembly_format = "$lhs `,` $rhs (`weight_tile` $weight_tile^)? attr-dict `:` functional-type(operands, results)"

    def __init__(self, lhs: SSAValue, rhs: SSAValue, weight_tile: int = 0, cols: int = -1):
        """`cols`: N, for a packed rhs (`weight_tile` > 0), whose shape holds ceil(N/T) panels."""
        try:
            shape = matmul_result_shape(_shape(lhs), unpacked_matmul_rhs(_shape(rhs), weight_tile, cols))
        except ShapeError as e:
            raise VerifyException(str(e)) from e
        super().__init__(operands=[lhs, rhs], result_types=[_tensor(shape, _elt(lhs))],
                         properties={"weight_tile": _i64(weight_tile)})

    @property
    def tile(self) -> int:
        """The column panel of a pre-packed right operand (0: plain)."""
        return self.weight_tile.value.data

    def rhs_shape(self) -> list[int]:
        """The right operand's logical shape, packed or not."""
        rs = _shape(self.result)
        return unpacked_matmul_rhs(_shape(self.rhs), self.tile, rs[-1] if rs else -1)

    def verify_(self) -> None:
        _check_valid_shape(self)
        _check_same_element_type(
            self, [("lhs", self.lhs), ("rhs", self.rhs), ("result", self.result)]
        )
        t = self.tile
        if t < 0:
            raise VerifyException(f"weight_tile must be >= 0, got {t}")
        if t:
            ps, rs = _shape(self.rhs), _shape(self.result)
            n = rs[-1] if rs else -1
            if (len(ps) != 3 or ps[2] != t or min(ps) < 0 or len(_shape(self.lhs)) < 2 or n < 0
                    or ps[0] != -(-n // t)):
                raise VerifyException(
                    f"a right operand packed with weight_tile {t} must have static shape "
                    f"(ceil(N/{t}), K, {t}) for the result's N ({'?' if n < 0 else n}) and a lhs of "
                    f"rank >= 2, got {format_shape(ps)}"
                )
        try:
            shape = matmul_result_shape(_shape(self.lhs), self.rhs_shape())
        except ShapeError as e:
            raise VerifyException(str(e)) from e
        _check_result_shape(shape, self.result)


def unpacked_matmul_rhs(shape: Shape, tile: int, cols: int) -> list[int]:
    """A matmul's logical right operand shape: itself, or (K, cols) of a column-panel packing."""
    if not tile or len(shape) != 3:
        return list(shape)
    return [shape[1], cols]


def _check_window_params(
    kernel: Sequence[int] | None, strides: Sequence[int], pads: Sequence[int],
    dilations: Sequence[int] | None,
) -> None:
    if kernel is not None:
        _check_len("kernel", kernel, 2)
        if any(k < 1 for k in kernel):
            raise VerifyException(f"kernel sizes must be >= 1, got {list(kernel)}")
    _check_len("strides", strides, 2)
    _check_len("pads", pads, 4)
    if any(s < 1 for s in strides):
        raise VerifyException(f"strides must be >= 1, got {list(strides)}")
    if any(p < 0 for p in pads):
        raise VerifyException(f"pads must be >= 0, got {list(pads)}")
    if dilations is not None:
        _check_len("dilations", dilations, 2)
        if any(d < 1 for d in dilations):
            raise VerifyException(f"dilations must be >= 1, got {list(dilations)}")


@irdl_op_definition
class Conv2dOp(IRDLOperation):
    """2-D convolution, NCHW input, (O, C/group, KH, KW) weight, optional (O) bias.

    %y = graph.conv2d %x, %w, %b strides [2, 2] pads [1, 1, 1, 1]
           : (tensor<?x3x224x224xf32>, tensor<64x3x3x3xf32>, tensor<64xf32>) -> tensor<?x64x112x112xf32>

    With `weight_tile T` (graph-pack-weights) the weight is pre-packed in output-channel panels
    (OIHW{T}o, onnxruntime's and TVM's NCHWc weight layout): a (O/T, C/group, KH, KW, T) tensor
    with W[o, c, kh, kw] at [o floordiv T, c, kh, kw, o mod T].

    With `block B` (graph-layout) the result is channel-blocked, NCHW{B}c: Y[n, o, h, w] at
    [n, o floordiv B, h, w, o mod B], a (N, O/B, OH, OW, B) tensor (group 1, O a multiple of B),
    and so is a rank-5 input (C a multiple of B); a rank-4 input is NCHW (a chain's first conv,
    onnxruntime's NCHW-input NCHWc conv: an RGB image's 3 channels make no block).
    """

    name = "graph.conv2d"

    input = operand_def(TensorType)
    weight = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    result = result_def(TensorType)

    strides = prop_def(DenseArrayBase.constr(i64), default_value=_ints((1, 1)))
    pads = prop_def(DenseArrayBase.constr(i64), default_value=_ints((0, 0, 0, 0)))
    dilations = prop_def(DenseArrayBase.constr(i64), default_value=_ints((1, 1)))
    group = prop_def(IntegerAttr[_I64], default_value=_i64(1))
    weight_tile = prop_def(IntegerAttr[_I64], default_value=_i64(0))
    block = prop_def(IntegerAttr[_I64], default_value=_i64(0))

    traits = traits_def(Pure(), FusionKind.OUT_EWISE_FUSABLE)
    assembly_format = (
        "$input `,` $weight (`,` $bias^)? (`strides` $strides^)? (`pads` $pads^)? "
        "(`dilations` $dilations^)? (`group` $group^)? (`weight_tile` $weight_tile^)? (`block` $block^)? "
        "attr-dict `:` functional-type(operands, results)"
    )

    def __init__(
        self,
        input: SSAValue,
        weight: SSAValue,
        bias: SSAValue | None = None,
        strides: Sequence[int] = (1, 1),
        pads: Sequence[int] = (0, 0, 0, 0),
        dilations: Sequence[int] = (1, 1),
        group: int = 1,
        weight_tile: int = 0,
        block: int = 0,
    ):
        try:
            ws = unpacked_weight_shape(_shape(weight), weight_tile)
            xs = unblocked_shape(_shape(input), block if len(_shape(input)) == 5 else 0)
            shape = blocked_shape(conv2d_output_shape(xs, ws, strides, pads, dilations), block)
        except ShapeError as e:
            raise VerifyException(str(e)) from e
        super().__init__(
            operands=[input, weight, bias],
            result_types=[_tensor(shape, _elt(input))],
            properties={
                "strides": _ints(strides),
                "pads": _ints(pads),
                "dilations": _ints(dilations),
                "group": _i64(group),
                "weight_tile": _i64(weight_tile),
                "block": _i64(block),
            },
        )

    @property
    def blocked(self) -> int:
        """The channel block of a blocked (NCHW{B}c) input and result (0: NCHW)."""
        return self.block.value.data

    @property
    def tile(self) -> int:
        """The output-channel panel of a pre-packed weight (0: plain OIHW)."""
        return self.weight_tile.value.data

    def weight_shape(self) -> list[int]:
        """The weight's logical (O, C/group, KH, KW) shape, packed or not."""
        return unpacked_weight_shape(_shape(self.weight), self.tile)

    def verify_(self) -> None:
        _check_valid_shape(self)
        operands = [("input", self.input), ("weight", self.weight)]
        if self.bias is not None:
            operands.append(("bias", self.bias))
        _check_same_element_type(self, operands + [("result", self.result)])
        _check_element_kind(_elt(self.input), "float", "input")
        xs, ws = _shape(self.input), _shape(self.weight)
        b = self.blocked
        if b < 0:
            raise VerifyException(f"block must be >= 0, got {b}")
        if b:
            try:
                xs = unblocked_shape(xs, b if len(xs) != 4 else 0)
            except ShapeError as e:
                raise VerifyException(str(e)) from e
            if self.group.value.data != 1:
                raise VerifyException("a channel-blocked conv2d must have group 1")
            if self.weight_shape()[0] >= 0 and self.weight_shape()[0] % b:
                raise VerifyException(f"block {b} must divide the output channels ({self.weight_shape()[0]})")
        if len(xs) != 4:
            raise VerifyException(f"input must have rank 4 (NCHW), got {format_shape(xs)}")
        if self.tile < 0:
            raise VerifyException(f"weight_tile must be >= 0, got {self.tile}")
        if self.tile:
            if len(ws) != 5 or ws[4] != self.tile or ws[0] < 0:
                raise VerifyException(
                    f"a weight packed with weight_tile {self.tile} must have shape "
                    f"(O/{self.tile}, C/group, KH, KW, {self.tile}) with static O, got {format_shape(ws)}"
                )
            ws = self.weight_shape()
        if len(ws) != 4:
            raise VerifyException(f"weight must have rank 4 (O, C/group, KH, KW), got {format_shape(ws)}")
        strides, pads = self.strides.get_values(), self.pads.get_values()
        dilations, group = self.dilations.get_values(), self.group.value.data
        _check_window_params(None, strides, pads, dilations)
        if group < 1:
            raise VerifyException(f"group must be >= 1, got {group}")
        c, wc, o = xs[1], ws[1], ws[0]
        if c >= 0 and wc >= 0 and c != wc * group:
            raise VerifyException(
                f"input channels ({c}) must equal weight dim 1 ({wc}) * group ({group})"
            )
        if o >= 0 and o % group != 0:
            raise VerifyException(f"output channels ({o}) must be divisible by group ({group})")
        if self.tile and (o // group) % self.tile:
            raise VerifyException(
                f"weight_tile {self.tile} must divide the output channels per group ({o // group})"
            )
        if self.bias is not None:
            bs = _shape(self.bias)
            if len(bs) != 1 or not dims_compatible(bs[0], o):
                raise VerifyException(
                    f"bias shape {format_shape(bs)} must be ({'?' if o < 0 else o}), one per output channel"
                )
        try:
            shape = blocked_shape(conv2d_output_shape(xs, ws, strides, pads, dilations), b)
        except ShapeError as e:
            raise VerifyException(str(e)) from e
        _check_result_shape(shape, self.result)


class _Pool2dOp(IRDLOperation, ABC):
    """Shared base for 2-D windowed pools over NCHW input."""

    input = operand_def(TensorType)
    result = result_def(TensorType)

    # dilations first: the generic form prints defaulted properties in declaration order
    dilations = prop_def(DenseArrayBase.constr(i64), default_value=_ints((1, 1)))
    kernel = prop_def(DenseArrayBase.constr(i64))
    strides = prop_def(DenseArrayBase.constr(i64), default_value=_ints((1, 1)))
    pads = prop_def(DenseArrayBase.constr(i64), default_value=_ints((0, 0, 0, 0)))
    ceil_mode = prop_def(BoolAttr, default_value=IntegerAttr.from_bool(False))
    block = prop_def(IntegerAttr[_I64], default_value=_i64(0))

    irdl_options = (ParsePropInAttrDict(),)  # booleans print as `{ceil_mode = true}`
    traits = traits_def(Pure(), FusionKind.OUT_EWISE_FUSABLE)
    assembly_format = (
        "$input `kernel` $kernel (`strides` $strides^)? (`pads` $pads^)? (`dilations` $dilations^)? "
        "(`block` $block^)? attr-dict `:` type($input) `->` type($result)"
    )

    @property
    def blocked(self) -> int:
        """The channel block of a blocked (NCHW{B}c, graph-layout) input and result (0: NCHW)."""
        return self.block.value.data

    def _build(self, input, kernel, strides, pads, dilations, ceil_mode, block: int = 0,
               **extra: Attribute) -> None:
        try:
            xs = unblocked_shape(_shape(input), block)
            shape = blocked_shape(pool2d_output_shape(xs, kernel, strides, pads, dilations, ceil_mode), block)
        except ShapeError as e:
            raise VerifyException(str(e)) from e
        super().__init__(
            operands=[input],
            result_types=[_tensor(shape, _elt(input))],
            properties={
                "kernel": _ints(kernel),
                "strides": _ints(strides),
                "pads": _ints(pads),
                "dilations": _ints(dilations),
                "ceil_mode": _bool(ceil_mode),
                "block": _i64(block),
                **extra,
            },
        )

    def verify_(self) -> None:
        _check_valid_shape(self)
        _check_same_element_type(self, [("input", self.input), ("result", self.result)])
        xs, b = _shape(self.input), self.blocked
        if b < 0:
            raise VerifyException(f"block must be >= 0, got {b}")
        try:
            xs = unblocked_shape(xs, b)
        except ShapeError as e:
            raise VerifyException(str(e)) from e
        if len(xs) != 4:
            raise VerifyException(f"input must have rank 4 (NCHW), got {format_shape(xs)}")
        kernel, strides, pads = self.kernel.get_values(), self.strides.get_values(), self.pads.get_values()
        dilations = self.dilations.get_values()
        _check_window_params(kernel, strides, pads, dilations)
        try:
            shape = blocked_shape(pool2d_output_shape(xs, kernel, strides, pads, dilations, bool(self.ceil_mode)), b)
        except ShapeError as e:
            raise VerifyException(str(e)) from e
        _check_result_shape(shape, self.result)


@irdl_op_definition
class MaxPool2dOp(_Pool2dOp):
    """2-D max pooling: `graph.max_pool2d %x kernel [3, 3] strides [2, 2] : tensor<…> -> tensor<…>`."""

    name = "graph.max_pool2d"

    def __init__(
        self,
        input: SSAValue,
        kernel: Sequence[int],
        strides: Sequence[int] = (1, 1),
        pads: Sequence[int] = (0, 0, 0, 0),
        dilations: Sequence[int] = (1, 1),
        ceil_mode: bool = False,
        block: int = 0,
    ):
        self._build(input, kernel, strides, pads, dilations, ceil_mode, block)


@irdl_op_definition
class AvgPool2dOp(_Pool2dOp):
    """2-D average pooling; padding counts in the divisor only with `{count_include_pad = true}`."""

    name = "graph.avg_pool2d"

    count_include_pad = prop_def(BoolAttr, default_value=IntegerAttr.from_bool(False))

    def __init__(
        self,
        input: SSAValue,
        kernel: Sequence[int],
        strides: Sequence[int] = (1, 1),
        pads: Sequence[int] = (0, 0, 0, 0),
        ceil_mode: bool = False,
        count_include_pad: bool = False,
        dilations: Sequence[int] = (1, 1),
        block: int = 0,
    ):
        self._build(input, kernel, strides, pads, dilations, ceil_mode, block,
                    count_include_pad=_bool(count_include_pad))


class _GlobalPoolOp(IRDLOperation, ABC):
    """Shared base: reduce every spatial dim of (N, C, spatial…) to 1."""

    input = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure(), FusionKind.COMM_REDUCE)
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    @staticmethod
    def infer_shape(shape: Shape) -> list[int]:
        return [_dyn(shape[0]), _dyn(shape[1])] + [1] * (len(shape) - 2)

    def __init__(self, input: SSAValue):
        shape = _shape(input)
        if len(shape) < 3:
            raise VerifyException(f"input must have rank >= 3 (N, C, spatial...), got {format_shape(shape)}")
        super().__init__(operands=[input], result_types=[_tensor(self.infer_shape(shape), _elt(input))])

    def verify_(self) -> None:
        _check_valid_shape(self)
        _check_same_element_type(self, [("input", self.input), ("result", self.result)])
        shape = _shape(self.input)
        if len(shape) < 3:
            raise VerifyException(f"input must have rank >= 3 (N, C, spatial...), got {format_shape(shape)}")
        _check_result_shape(self.infer_shape(shape), self.result)


@irdl_op_definition
class GlobalAvgPoolOp(_GlobalPoolOp):
    """Mean over all spatial dims: (N, C, H, W) -> (N, C, 1, 1)."""

    name = "graph.global_avg_pool"


@irdl_op_definition
class GlobalMaxPoolOp(_GlobalPoolOp):
    """Max over all spatial dims: (N, C, H, W) -> (N, C, 1, 1)."""

    name = "graph.global_max_pool"


# ===========================================================================
# Normalizations
# ===========================================================================


class _SoftmaxBase(IRDLOperation, ABC):
    """Shared base: softmax-like op along one (normalized) axis, same type."""

    T: ClassVar = VarConstraint("T", base(TensorType))
    input = operand_def(T)
    result = result_def(T)
    axis = prop_def(IntegerAttr[_I64])

    traits = traits_def(Pure(), FusionKind.COMM_REDUCE)
    assembly_format = "$input `axis` $axis attr-dict `:` type($result)"

    def __init__(self, input: SSAValue, axis: int = -1):
        axis = _normalize_axis(axis, len(_shape(input)))
        super().__init__(operands=[input], result_types=[input.type], properties={"axis": _i64(axis)})

    def verify_(self) -> None:
        _check_valid_shape(self)
        _check_element_kind(_elt(self.input), "float", "input")
        _check_axis(self.axis.value.data, len(_shape(self.input)))


@irdl_op_definition
class SoftmaxOp(_SoftmaxBase):
    """exp(x) / sum(exp(x)) along `axis`: `graph.softmax %x axis 1 : tensor<?x10xf32>`."""

    name = "graph.softmax"


@irdl_op_definition
class LogSoftmaxOp(_SoftmaxBase):
    """log(softmax(x)) along `axis`."""

    name = "graph.log_softmax"


@irdl_op_definition
class LayerNormOp(IRDLOperation):
    """(x - mean) / sqrt(var + epsilon) * scale + bias over dims [axis, rank).

    %y = graph.layer_norm %x, %g, %b axis 2 epsilon 1.0e-05 : (…) -> tensor<?x?x768xf32>
    """

    name = "graph.layer_norm"

    input = operand_def(TensorType)
    scale = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    result = result_def(TensorType)

    axis = prop_def(IntegerAttr[_I64])
    epsilon = prop_def(FloatAttr[Float64Type])

    traits = traits_def(Pure(), FusionKind.COMM_REDUCE)
    assembly_format = (
        "$input `,` $scale (`,` $bias^)? `axis` $axis `epsilon` $epsilon attr-dict "
        "`:` functional-type(operands, results)"
    )

    def __init__(self, input: SSAValue, scale: SSAValue, bias: SSAValue | None = None,
                 axis: int = -1, epsilon: float = 1e-5):
        axis = _normalize_axis(axis, len(_shape(input)))
        super().__init__(
            operands=[input, scale, bias],
            result_types=[input.type],
            properties={"axis": _i64(axis), "epsilon": _f64(epsilon)},
        )

    def verify_(self) -> None:
        _check_valid_shape(self)
        operands = [("input", self.input), ("scale", self.scale)]
        if self.bias is not None:
            operands.append(("bias", self.bias))
        _check_same_element_type(self, operands + [("result", self.result)])
        _check_element_kind(_elt(self.input), "float", "input")
        xs = _shape(self.input)
        axis = self.axis.value.data
        _check_axis(axis, len(xs))
        for name, v in operands[1:]:
            if not broadcastable_to(_shape(v), xs[axis:]):
                raise VerifyException(
                    f"{name} shape {format_shape(_shape(v))} does not broadcast to the normalized "
                    f"shape {format_shape(xs[axis:])}"
                )
        _check_result_shape(xs, self.result)


@irdl_op_definition
class BatchNormOp(IRDLOperation):
    """Inference batch norm over channel dim 1: (x - mean) / sqrt(var + epsilon) * scale + bias."""

    name = "graph.batch_norm"

    input = operand_def(TensorType)
    scale = operand_def(TensorType)
    bias = operand_def(TensorType)
    mean = operand_def(TensorType)
    var = operand_def(TensorType)
    result = result_def(TensorType)

    epsilon = prop_def(FloatAttr[Float64Type])

    traits = traits_def(Pure(), FusionKind.BROADCAST)
    assembly_format = (
        "$input `,` $scale `,` $bias `,` $mean `,` $var `epsilon` $epsilon attr-dict "
        "`:` functional-type(operands, results)"
    )

    def __init__(self, input: SSAValue, scale: SSAValue, bias: SSAValue, mean: SSAValue,
                 var: SSAValue, epsilon: float = 1e-5):
        super().__init__(
            operands=[input, scale, bias, mean, var],
            result_types=[input.type],
            properties={"epsilon": _f64(epsilon)},
        )

    def verify_(self) -> None:
        _check_valid_shape(self)
        params = [("scale", self.scale), ("bias", self.bias), ("mean", self.mean), ("var", self.var)]
        _check_same_element_type(self, [("input", self.input), *params, ("result", self.result)])
        _check_element_kind(_elt(self.input), "float", "input")
        xs = _shape(self.input)
        if len(xs) < 2:
            raise VerifyException(f"input must have rank >= 2 (N, C, ...), got {format_shape(xs)}")
        for name, v in params:
            s = _shape(v)
            if len(s) != 1 or not dims_compatible(s[0], xs[1]):
                raise VerifyException(
                    f"{name} shape {format_shape(s)} must be (C) with C = input dim 1 "
                    f"({format_shape(xs[1:2])})"
                )
        _check_result_shape(xs, self.result)


@irdl_op_definition
class LRNOp(IRDLOperation):
    """Local response normalization across channels (dim 1), as ONNX LRN."""

    name = "graph.lrn"

    T: ClassVar = VarConstraint("T", base(TensorType))
    input = operand_def(T)
    result = result_def(T)

    size = prop_def(IntegerAttr[_I64])
    alpha = prop_def(FloatAttr[Float64Type])
    beta = prop_def(FloatAttr[Float64Type])
    bias = prop_def(FloatAttr[Float64Type])

    traits = traits_def(Pure(), FusionKind.OPAQUE)
    assembly_format = (
        "$input `size` $size `alpha` $alpha `beta` $beta `bias` $bias attr-dict `:` type($result)"
    )

    def __init__(self, input: SSAValue, size: int, alpha: float = 1e-4, beta: float = 0.75,
                 bias: float = 1.0):
        super().__init__(
            operands=[input],
            result_types=[input.type],
            properties={"size": _i64(size), "alpha": _f64(alpha), "beta": _f64(beta),
                        "bias": _f64(bias)},
        )

    def verify_(self) -> None:
        _check_valid_shape(self)
        _check_element_kind(_elt(self.input), "float", "input")
        if len(_shape(self.input)) < 2:
            raise VerifyException(
                f"input must have rank >= 2 (N, C, ...), got {format_shape(_shape(self.input))}"
            )
        if self.size.value.data < 1:
            raise VerifyException(f"size must be >= 1, got {self.size.value.data}")


# ===========================================================================
# Reductions
# ===========================================================================


class _ReduceOp(IRDLOperation, ABC):
    """Shared base: reduce over `axes` (normalized, sorted, unique); empty axes = identity."""

    input = operand_def(TensorType)
    result = result_def(TensorType)

    axes = prop_def(DenseArrayBase.constr(i64))
    keepdims = prop_def(BoolAttr, default_value=IntegerAttr.from_bool(True))

    irdl_options = (ParsePropInAttrDict(),)  # booleans print as `{ceil_mode = true}`
    traits = traits_def(Pure(), FusionKind.COMM_REDUCE)
    assembly_format = "$input `axes` $axes attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, axes: Sequence[int], keepdims: bool = True):
        shape = _shape(input)
        axes = sorted({_normalize_axis(a, len(shape)) for a in axes})
        super().__init__(
            operands=[input],
            result_types=[_tensor(reduce_result_shape(shape, axes, keepdims), _elt(input))],
            properties={"axes": _ints(axes), "keepdims": _bool(keepdims)},
        )

    def verify_(self) -> None:
        _check_valid_shape(self)
        _check_same_element_type(self, [("input", self.input), ("result", self.result)])
        _check_element_kind(_elt(self.input), "numeric", "input")
        shape = _shape(self.input)
        axes = self.axes.get_values()
        for a in axes:
            _check_axis(a, len(shape), "reduction axis")
        if list(axes) != sorted(set(axes)):
            raise VerifyException(f"axes {list(axes)} must be sorted and unique")
        _check_result_shape(reduce_result_shape(shape, axes, bool(self.keepdims)), self.result)


@irdl_op_definition
class ReduceSumOp(_ReduceOp):
    """Sum over `axes`: `graph.reduce_sum %x axes [1] : tensor<?x4xf32> -> tensor<?x1xf32>`."""

    name = "graph.reduce_sum"


@irdl_op_definition
class ReduceMeanOp(_ReduceOp):
    """Arithmetic mean over `axes`."""

    name = "graph.reduce_mean"


@irdl_op_definition
class ReduceMaxOp(_ReduceOp):
    """Maximum over `axes`."""

    name = "graph.reduce_max"


@irdl_op_definition
class ReduceMinOp(_ReduceOp):
    """Minimum over `axes`."""

    name = "graph.reduce_min"


@irdl_op_definition
class ArgMaxOp(IRDLOperation):
    """Index (i64) of the maximum along `axis`; the first one, or the last with select_last_index."""

    name = "graph.argmax"

    input = operand_def(TensorType)
    result = result_def(TensorType)

    axis = prop_def(IntegerAttr[_I64])
    keepdims = prop_def(BoolAttr, default_value=IntegerAttr.from_bool(True))
    select_last_index = prop_def(BoolAttr, default_value=IntegerAttr.from_bool(False))

    irdl_options = (ParsePropInAttrDict(),)  # booleans print as `{ceil_mode = true}`
    traits = traits_def(Pure(), FusionKind.COMM_REDUCE)
    assembly_format = "$input `axis` $axis attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, axis: int, keepdims: bool = True,
                 select_last_index: bool = False):
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
        _check_element_kind(_elt(self.input), "numeric", "input")
        if _elt(self.result) != i64:
            raise VerifyException(f"result element type must be i64, got {_elt(self.result)}")
        shape = _shape(self.input)
        axis = self.axis.value.data
        _check_axis(axis, len(shape))
        _check_result_shape(reduce_result_shape(shape, [axis], bool(self.keepdims)), self.result)


# ===========================================================================
# Shape manipulation
# ===========================================================================


@irdl_op_definition
class ReshapeOp(IRDLOperation):
    """Same elements, new shape; one `index` dims operand per `?` in the result, in order.

    %y = graph.reshape %x dims(%n) : tensor<?x4xf32> -> tensor<?x2x2xf32>
    """

    name = "graph.reshape"

    input = operand_def(TensorType)
    dims = var_operand_def(IndexType())
    result = result_def(TensorType)

    traits = traits_def(Pure(), FusionKind.INJECTIVE)
    assembly_format = (
        "$input (`dims` `(` $dims^ `)`)? attr-dict `:` type($input) `->` type($result)"
    )

    def __init__(self, input: SSAValue, result_type: TensorType, dims: Sequence[SSAValue] = ()):
        super().__init__(operands=[input, list(dims)], result_types=[result_type])

    def verify_(self) -> None:
        _check_valid_shape(self)
        _check_same_element_type(self, [("input", self.input), ("result", self.result)])
        _check_num_dims(self.dims, [self.result.type])
        n_in = num_elements(_shape(self.input))
        out = _shape(self.result)
        n_out = num_elements(out)
        if n_in is not None and n_out is not None and n_in != n_out:
            raise VerifyException(
                f"element count mismatch: input {format_shape(_shape(self.input))} has {n_in} "
                f"elements, result {format_shape(out)} has {n_out}"
            )
        if n_in is not None and n_out is None:
            known = math.prod(d for d in out if d >= 0)
            if (known == 0 and n_in != 0) or (known and n_in % known):  # 0 elements: a `?` may be 0
                raise VerifyException(
                    f"element count mismatch: input has {n_in} elements, not a multiple of the "
                    f"static part ({known}) of result {format_shape(out)}"
                )


@irdl_op_definition
class TransposeOp(IRDLOperation):
    """Permute dims: result dim i = input dim perm[i]: `graph.transpose %x perm [1, 0] : … -> …`."""

    name = "graph.transpose"

    input = operand_def(TensorType)
    result = result_def(TensorType)
    perm = prop_def(DenseArrayBase.constr(i64))

    traits = traits_def(Pure(), FusionKind.INJECTIVE)
    assembly_format = "$input `perm` $perm attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, perm: Sequence[int]):
        shape = _shape(input)
        super().__init__(
            operands=[input],
            result_types=[_tensor([shape[p] for p in perm], _elt(input))],
            properties={"perm": _ints(perm)},
        )

    def verify_(self) -> None:
        _check_valid_shape(self)
        _check_same_element_type(self, [("input", self.input), ("result", self.result)])
        shape = _shape(self.input)
        perm = self.perm.get_values()
        if sorted(perm) != list(range(len(shape))):
            raise VerifyException(
                f"perm {list(perm)} is not a permutation of 0..{len(shape) - 1}"
            )
        _check_result_shape([shape[p] for p in perm], self.result)


def _concat_shape(shapes: Sequence[Shape], axis: int) -> list[int]:
    rank = len(shapes[0])
    _check_axis(axis, rank)
    out: list[int] = []
    for i in range(rank):
        if i == axis:
            dims = [s[i] for s in shapes]
            out.append(DYNAMIC if any(d < 0 for d in dims) else sum(dims))
            continue
        size = DYNAMIC
        for k, s in enumerate(shapes):
            if s[i] >= 0:
                if size >= 0 and s[i] != size:
                    raise VerifyException(
                        f"input {k} dim {i} ({s[i]}) does not match the other inputs ({size}); "
                        f"only the concat axis {axis} may differ"
                    )
                size = s[i]
        out.append(size)
    return out


@irdl_op_definition
class ConcatOp(IRDLOperation):
    """Concatenate along `axis`: `graph.concat %a, %b axis 1 : (…, …) -> …`."""

    name = "graph.concat"

    inputs = var_operand_def(TensorType)
    result = result_def(TensorType)
    axis = prop_def(IntegerAttr[_I64])

    traits = traits_def(Pure(), FusionKind.INJECTIVE)
    assembly_format = "$inputs `axis` $axis attr-dict `:` functional-type($inputs, $result)"

    def __init__(self, inputs: Sequence[SSAValue], axis: int):
        shapes = [_shape(x) for x in inputs]
        axis = _normalize_axis(axis, len(shapes[0]))
        super().__init__(
            operands=[list(inputs)],
            result_types=[_tensor(_concat_shape(shapes, axis), _elt(inputs[0]))],
            properties={"axis": _i64(axis)},
        )

    def verify_(self) -> None:
        _check_valid_shape(self)
        if not self.inputs:
            raise VerifyException("expected at least one input")
        _check_same_element_type(
            self, [(f"input {i}", x) for i, x in enumerate(self.inputs)] + [("result", self.result)]
        )
        shapes = [_shape(x) for x in self.inputs]
        for k, s in enumerate(shapes):
            if len(s) != len(shapes[0]):
                raise VerifyException(
                    f"input {k} has rank {len(s)}, input 0 has rank {len(shapes[0])}"
                )
        _check_result_shape(_concat_shape(shapes, self.axis.value.data), self.result)


@dataclass(frozen=True)
class _SliceFusion(FusionKind):
    """Injective; opaque with run-time `bounds`: its kernel reads them from a graph.from_dims buffer
    built at the graph level, which a fused kernel (loop-fuse) cannot hold."""

    def of(self, op: Operation) -> OpPattern:
        return OpPattern.OPAQUE if op.bounds else self.pattern


@irdl_op_definition
class SliceOp(IRDLOperation):
    """Strided slice, one (start, end, step) per dim; negative steps walk backwards.

    %y = graph.slice %x starts [0, 1] ends [2, 4] steps [1, 2] : tensor<2x4xf32> -> tensor<2x2xf32>

    Rule for starts/ends:
    - static dim d: already normalized and clamped (see `normalize_slice`): step > 0:
      0 <= start, end <= d; step < 0: 0 <= start <= d-1 and -1 <= end <= d-1 (end -1 = "before 0").
    - `?` dim: the raw ONNX values, normalized at run time the same way: a negative value v means
      d + v, then clamping; so "to the end" is INT64_MAX (step > 0) / INT64_MIN (step < 0).
    - run-time bounds: the dims listed in `dyn_starts` / `dyn_ends` take their start / end from the
      `bounds` index operands (first one per `dyn_starts` entry, then one per `dyn_ends` entry);
      their `starts` / `ends` entries are placeholders (0). The values are raw ONNX values,
      normalized at run time as for a `?` dim, and the result dim is `?`:

    %y = graph.slice %x starts [0, 0] ends [2, 0] steps [1, 1] dyn_ends [1] bounds(%n)
        : tensor<2x8xf32> -> tensor<2x?xf32>                       (x[:, :n])
    """

    name = "graph.slice"

    input = operand_def(TensorType)
    bounds = var_operand_def(IndexType())
    result = result_def(TensorType)
    starts = prop_def(DenseArrayBase.constr(i64))
    ends = prop_def(DenseArrayBase.constr(i64))
    steps = prop_def(DenseArrayBase.constr(i64))
    dyn_starts = opt_prop_def(DenseArrayBase.constr(i64))
    dyn_ends = opt_prop_def(DenseArrayBase.constr(i64))

    traits = traits_def(Pure(), _SliceFusion(OpPattern.INJECTIVE))
    assembly_format = (
        "$input `starts` $starts `ends` $ends `steps` $steps (`dyn_starts` $dyn_starts^)? "
        "(`dyn_ends` $dyn_ends^)? (`bounds` `(` $bounds^ `)`)? attr-dict "
        "`:` type($input) `->` type($result)"
    )

    @staticmethod
    def infer_shape(shape: Shape, starts: Sequence[int], ends: Sequence[int],
                    steps: Sequence[int], dynamic: Sequence[int] = ()) -> list[int]:
        """`dynamic`: the dims with a run-time start or end (their result dim is `?`)."""
        return [DYNAMIC if i in dynamic else slice_result_dim(d, b, e, s)
                for i, (d, b, e, s) in enumerate(zip(shape, starts, ends, steps))]

    def __init__(self, input: SSAValue, starts: Sequence[int], ends: Sequence[int],
                 steps: Sequence[int] | None = None,
                 dyn_starts: Sequence[tuple[int, SSAValue]] = (),
                 dyn_ends: Sequence[tuple[int, SSAValue]] = ()):
        """`dyn_starts` / `dyn_ends`: (dim, index value) pairs, in increasing dim order."""
        shape = _shape(input)
        steps = steps if steps is not None else [1] * len(shape)
        starts, ends = list(starts), list(ends)
        for i, _ in dyn_starts:
            starts[i] = 0
        for i, _ in dyn_ends:
            ends[i] = 0
        dynamic = {i for i, _ in (*dyn_starts, *dyn_ends)}
        props: dict[str, Attribute] = {
            "starts": _ints(starts), "ends": _ints(ends), "steps": _ints(steps)
        }
        if dyn_starts:
            props["dyn_starts"] = _ints([i for i, _ in dyn_starts])
        if dyn_ends:
            props["dyn_ends"] = _ints([i for i, _ in dyn_ends])
        super().__init__(
            operands=[input, [v for _, v in (*dyn_starts, *dyn_ends)]],
            result_types=[_tensor(self.infer_shape(shape, starts, ends, steps, dynamic), _elt(input))],
            properties=props,
        )

    def dynamic_bounds(self) -> tuple[dict[int, SSAValue], dict[int, SSAValue]]:
        """({dim: start value}, {dim: end value}) of the run-time bounds."""
        ds = self.dyn_starts.get_values() if self.dyn_starts is not None else ()
        de = self.dyn_ends.get_values() if self.dyn_ends is not None else ()
        vals = list(self.bounds)
        return dict(zip(ds, vals[: len(ds)])), dict(zip(de, vals[len(ds):]))

    def verify_(self) -> None:
        _check_valid_shape(self)
        _check_same_element_type(self, [("input", self.input), ("result", self.result)])
        shape = _shape(self.input)
        starts, ends, steps = self.starts.get_values(), self.ends.get_values(), self.steps.get_values()
        for name, values in (("starts", starts), ("ends", ends), ("steps", steps)):
            _check_len(name, values, len(shape))
        dyn: dict[str, tuple[int, ...]] = {}
        for name, prop, values in (("dyn_starts", self.dyn_starts, starts),
                                   ("dyn_ends", self.dyn_ends, ends)):
            dims = prop.get_values() if prop is not None else ()
            if list(dims) != sorted(set(dims)) or any(not 0 <= i < len(shape) for i in dims):
                raise VerifyException(
                    f"{name} must be increasing dims in [0, {len(shape)}), got {list(dims)}"
                )
            for i in dims:
                if values[i] != 0:
                    raise VerifyException(
                        f"{name[4:-1]} of dim {i} comes from an operand: its static entry must be 0, "
                        f"got {values[i]}"
                    )
            dyn[name] = dims
        n_bounds = len(dyn["dyn_starts"]) + len(dyn["dyn_ends"])
        if len(self.bounds) != n_bounds:
            raise VerifyException(
                f"expected {n_bounds} bounds operand(s), one per dyn_starts / dyn_ends entry, "
                f"got {len(self.bounds)}"
            )
        for i, (d, b, e, s) in enumerate(zip(shape, starts, ends, steps)):
            if s == 0:
                raise VerifyException(f"step of dim {i} must be non-zero")
            if d < 0:
                continue
            lo, hi = (0, d) if s > 0 else (-1, d - 1)
            b_ok = i in dyn["dyn_starts"] or 0 <= b <= (d if s > 0 else d - 1)
            e_ok = i in dyn["dyn_ends"] or lo <= e <= hi
            if not (b_ok and e_ok):
                raise VerifyException(
                    f"dim {i} (size {d}): start {b} / end {e} are not normalized for step {s} "
                    f"(expected start in [0, {d if s > 0 else d - 1}], end in [{lo}, {hi}])"
                )
        dynamic = {*dyn["dyn_starts"], *dyn["dyn_ends"]}
        inferred = self.infer_shape(shape, starts, ends, steps, dynamic)
        for i in dynamic:
            if _shape(self.result)[i] >= 0:
                raise VerifyException(f"result dim {i} has a run-time bound: it must be `?`")
        _check_result_shape(inferred, self.result)


@irdl_op_definition
class SplitOp(IRDLOperation):
    """Split along `axis` into one result per entry of `sizes`.

    A -1 size is `?`: the -1 pieces share what the static sizes leave, as ONNX `num_outputs` does
    (each gets ceil(rest / k), the last one the remainder).

    %a, %b = graph.split %x axis 1 sizes [2, 2] : tensor<?x4xf32> -> tensor<?x2xf32>, tensor<?x2xf32>
    """

    name = "graph.split"

    input = operand_def(TensorType)
    outputs = var_result_def(TensorType)
    axis = prop_def(IntegerAttr[_I64])
    sizes = prop_def(DenseArrayBase.constr(i64))

    traits = traits_def(Pure(), FusionKind.INJECTIVE)
    assembly_format = (
        "$input `axis` $axis `sizes` $sizes attr-dict `:` type($input) `->` type($outputs)"
    )

    @staticmethod
    def infer_shapes(shape: Shape, axis: int, sizes: Sequence[int]) -> list[list[int]]:
        return [
            [_dyn(s) if i == axis else _dyn(d) for i, d in enumerate(shape)] for s in sizes
        ]

    def __init__(self, input: SSAValue, axis: int, sizes: Sequence[int]):
        shape = _shape(input)
        axis = _normalize_axis(axis, len(shape))
        super().__init__(
            operands=[input],
            result_types=[[_tensor(s, _elt(input)) for s in self.infer_shapes(shape, axis, sizes)]],
            properties={"axis": _i64(axis), "sizes": _ints(sizes)},
        )

    def verify_(self) -> None:
        _check_valid_shape(self)
        shape = _shape(self.input)
        axis = self.axis.value.data
        _check_axis(axis, len(shape))
        sizes = self.sizes.get_values()
        if any(s < -1 for s in sizes):
            raise VerifyException(f"sizes must be >= 0 or -1 (dynamic), got {list(sizes)}")
        if len(self.outputs) != len(sizes):
            raise VerifyException(f"expected {len(sizes)} results (one per size), got {len(self.outputs)}")
        d = shape[axis]
        static = sum(s for s in sizes if s >= 0)
        if d >= 0 and (static > d or (-1 not in sizes and static != d)):
            raise VerifyException(
                f"sizes {list(sizes)} (sum {static}) do not split dim {axis} of size {d}"
            )
        for k, (r, s) in enumerate(zip(self.outputs, self.infer_shapes(shape, axis, sizes))):
            if _elt(r) != _elt(self.input):
                raise VerifyException(f"result {k} element type {_elt(r)} must be {_elt(self.input)}")
            _check_result_shape(s, r, f"result {k}")


@irdl_op_definition
class GatherOp(IRDLOperation):
    """Take slices of `data` along `axis` at `indices` (i64/i32; negative counts from the end)."""

    name = "graph.gather"

    data = operand_def(TensorType)
    indices = operand_def(TensorType)
    result = result_def(TensorType)
    axis = prop_def(IntegerAttr[_I64])

    traits = traits_def(Pure(), FusionKind.INJECTIVE)
    assembly_format = "$data `,` $indices `axis` $axis attr-dict `:` functional-type(operands, results)"

    def __init__(self, data: SSAValue, indices: SSAValue, axis: int = 0):
        axis = _normalize_axis(axis, len(_shape(data)))
        shape = gather_result_shape(_shape(data), _shape(indices), axis)
        super().__init__(
            operands=[data, indices],
            result_types=[_tensor(shape, _elt(data))],
            properties={"axis": _i64(axis)},
        )

    def verify_(self) -> None:
        _check_valid_shape(self)
        _check_same_element_type(self, [("data", self.data), ("result", self.result)])
        if _elt(self.indices) not in (i64, IntegerType(32)):
            raise VerifyException(f"indices element type must be i64 or i32, got {_elt(self.indices)}")
        axis = self.axis.value.data
        _check_axis(axis, len(_shape(self.data)))
        _check_result_shape(gather_result_shape(_shape(self.data), _shape(self.indices), axis), self.result)


@irdl_op_definition
class WhereOp(IRDLOperation):
    """Elementwise cond ? lhs : rhs, all three broadcast together."""

    name = "graph.where"

    cond = operand_def(TensorType)
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure(), FusionKind.BROADCAST)
    assembly_format = "$cond `,` $lhs `,` $rhs attr-dict `:` functional-type(operands, results)"

    @staticmethod
    def infer_shape(cond: Shape, lhs: Shape, rhs: Shape) -> list[int]:
        try:
            return broadcast_shapes(cond, lhs, rhs, names=["cond", "lhs", "rhs"])
        except ShapeError as e:
            raise VerifyException(str(e)) from e

    def __init__(self, cond: SSAValue, lhs: SSAValue, rhs: SSAValue):
        shape = self.infer_shape(_shape(cond), _shape(lhs), _shape(rhs))
        super().__init__(operands=[cond, lhs, rhs], result_types=[_tensor(shape, _elt(lhs))])

    def verify_(self) -> None:
        _check_valid_shape(self)
        if _elt(self.cond) != i1:
            raise VerifyException(f"cond element type must be i1, got {_elt(self.cond)}")
        _check_same_element_type(self, [("lhs", self.lhs), ("rhs", self.rhs), ("result", self.result)])
        _check_result_shape(
            self.infer_shape(_shape(self.cond), _shape(self.lhs), _shape(self.rhs)), self.result
        )


@irdl_op_definition
class CastOp(IRDLOperation):
    """Elementwise conversion to another element type: `graph.cast %x : tensor<4xf32> -> tensor<4xi64>`."""

    name = "graph.cast"

    input = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure(), FusionKind.ELEMWISE)
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, element_type: Attribute):
        super().__init__(operands=[input], result_types=[_tensor(_shape(input), element_type)])

    def verify_(self) -> None:
        _check_valid_shape(self)
        for what, v in (("input", self.input), ("result", self.result)):
            _check_element_kind(_elt(v), "numeric", what)
        _check_result_shape(_shape(self.input), self.result)


@irdl_op_definition
class PadOp(IRDLOperation):
    """Pad dim i by pads[i] before and pads[rank + i] after (negative crops), constant/reflect/edge.

    %y = graph.pad %x pads [0, 1, 0, 1] mode "reflect" : tensor<2x2xf32> -> tensor<2x4xf32>
    """

    name = "graph.pad"

    input = operand_def(TensorType)
    result = result_def(TensorType)
    pads = prop_def(DenseArrayBase.constr(i64))
    mode = prop_def(StringAttr, default_value=StringAttr("constant"))
    value = prop_def(FloatAttr[Float64Type], default_value=_f64(0.0))

    traits = traits_def(Pure(), FusionKind.INJECTIVE)
    assembly_format = (
        "$input `pads` $pads (`mode` $mode^)? (`value` $value^)? attr-dict "
        "`:` type($input) `->` type($result)"
    )

    @staticmethod
    def infer_shape(shape: Shape, pads: Sequence[int]) -> list[int]:
        r = len(shape)
        return [DYNAMIC if d < 0 else d + pads[i] + pads[r + i] for i, d in enumerate(shape)]

    def __init__(self, input: SSAValue, pads: Sequence[int], mode: str = "constant",
                 value: float = 0.0):
        super().__init__(
            operands=[input],
            result_types=[_tensor(self.infer_shape(_shape(input), pads), _elt(input))],
            properties={"pads": _ints(pads), "mode": StringAttr(mode), "value": _f64(value)},
        )

    def verify_(self) -> None:
        _check_valid_shape(self)
        _check_same_element_type(self, [("input", self.input), ("result", self.result)])
        shape = _shape(self.input)
        pads = self.pads.get_values()
        _check_len("pads", pads, 2 * len(shape))
        if self.mode.data not in ("constant", "reflect", "edge"):
            raise VerifyException(
                f"mode must be \"constant\", \"reflect\" or \"edge\", got \"{self.mode.data}\""
            )
        inferred = self.infer_shape(shape, pads)
        for i, d in enumerate(inferred):
            if d != DYNAMIC and d < 0:
                raise VerifyException(f"pads {list(pads)} make dim {i} negative ({d})")
        if self.mode.data == "reflect":
            r = len(shape)
            for i, d in enumerate(shape):
                if d >= 0 and max(pads[i], pads[r + i]) >= d:
                    raise VerifyException(
                        f"reflect pads of dim {i} must be smaller than its size {d}"
                    )
        _check_result_shape(inferred, self.result)


@irdl_op_definition
class BroadcastToOp(IRDLOperation):
    """Broadcast (NumPy, unidirectional) to the given type; one `index` dims operand per `?` in it.

    %y = graph.broadcast_to %x dims(%n) : tensor<1x4xf32> -> tensor<?x4xf32>
    """

    name = "graph.broadcast_to"

    input = operand_def(TensorType)
    dims = var_operand_def(IndexType())
    result = result_def(TensorType)

    traits = traits_def(Pure(), FusionKind.BROADCAST)
    assembly_format = (
        "$input (`dims` `(` $dims^ `)`)? attr-dict `:` type($input) `->` type($result)"
    )

    def __init__(self, input: SSAValue, result_type: TensorType, dims: Sequence[SSAValue] = ()):
        super().__init__(operands=[input, list(dims)], result_types=[result_type])

    def verify_(self) -> None:
        _check_valid_shape(self)
        _check_same_element_type(self, [("input", self.input), ("result", self.result)])
        _check_num_dims(self.dims, [self.result.type])
        if not broadcastable_to(_shape(self.input), _shape(self.result)):
            raise VerifyException(
                f"input shape {format_shape(_shape(self.input))} does not broadcast to "
                f"{format_shape(_shape(self.result))}"
            )


@irdl_op_definition
class TileOp(IRDLOperation):
    """Repeat the input repeats[i] times along each dim i."""

    name = "graph.tile"

    input = operand_def(TensorType)
    result = result_def(TensorType)
    repeats = prop_def(DenseArrayBase.constr(i64))

    traits = traits_def(Pure(), FusionKind.INJECTIVE)
    assembly_format = "$input `repeats` $repeats attr-dict `:` type($input) `->` type($result)"

    @staticmethod
    def infer_shape(shape: Shape, repeats: Sequence[int]) -> list[int]:
        return [DYNAMIC if d < 0 else d * r for d, r in zip(shape, repeats)]

    def __init__(self, input: SSAValue, repeats: Sequence[int]):
        super().__init__(
            operands=[input],
            result_types=[_tensor(self.infer_shape(_shape(input), repeats), _elt(input))],
            properties={"repeats": _ints(repeats)},
        )

    def verify_(self) -> None:
        _check_valid_shape(self)
        _check_same_element_type(self, [("input", self.input), ("result", self.result)])
        shape = _shape(self.input)
        repeats = self.repeats.get_values()
        _check_len("repeats", repeats, len(shape))
        if any(r < 0 for r in repeats):
            raise VerifyException(f"repeats must be >= 0, got {list(repeats)}")
        _check_result_shape(self.infer_shape(shape, repeats), self.result)


@irdl_op_definition
class TriluOp(IRDLOperation):
    """Keep the upper (or lower with `{upper = false}`) triangle of the last two dims, offset by k."""

    name = "graph.trilu"

    T: ClassVar = VarConstraint("T", base(TensorType))
    input = operand_def(T)
    result = result_def(T)
    upper = prop_def(BoolAttr, default_value=IntegerAttr.from_bool(True))
    k = prop_def(IntegerAttr[_I64], default_value=_i64(0))

    irdl_options = (ParsePropInAttrDict(),)  # booleans print as `{ceil_mode = true}`
    traits = traits_def(Pure(), FusionKind.INJECTIVE)
    assembly_format = "$input (`k` $k^)? attr-dict `:` type($result)"

    def __init__(self, input: SSAValue, upper: bool = True, k: int = 0):
        super().__init__(
            operands=[input], result_types=[input.type],
            properties={"upper": _bool(upper), "k": _i64(k)},
        )

    def verify_(self) -> None:
        _check_valid_shape(self)
        if len(_shape(self.input)) < 2:
            raise VerifyException(f"input must have rank >= 2, got {format_shape(_shape(self.input))}")


@irdl_op_definition
class RangeOp(IRDLOperation):
    """1-D [start, start + delta, …) up to limit (exclusive), from 0-d tensors; length is usually `?`."""

    name = "graph.range"

    start = operand_def(TensorType)
    limit = operand_def(TensorType)
    delta = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure(), FusionKind.OPAQUE)
    assembly_format = "$start `,` $limit `,` $delta attr-dict `:` functional-type(operands, results)"

    def __init__(self, start: SSAValue, limit: SSAValue, delta: SSAValue,
                 result_type: TensorType | None = None):
        if result_type is None:
            result_type = _tensor([DYNAMIC], _elt(start))
        super().__init__(operands=[start, limit, delta], result_types=[result_type])

    def verify_(self) -> None:
        _check_valid_shape(self)
        operands = [("start", self.start), ("limit", self.limit), ("delta", self.delta)]
        _check_same_element_type(self, operands + [("result", self.result)])
        _check_element_kind(_elt(self.start), "numeric", "start")
        for name, v in operands:
            if len(_shape(v)) != 0:
                raise VerifyException(f"{name} must be a 0-d tensor, got {v.type}")
        if len(_shape(self.result)) != 1:
            raise VerifyException(f"result must be 1-D, got {self.result.type}")


RANDOM_DISTRIBUTIONS = ("uniform", "normal")


@irdl_op_definition
class RandomOp(IRDLOperation):
    """A seeded random tensor: uniform on [a, b), or normal with mean a and standard deviation b.
    Element k (row-major) is a pure function of (seed, k): the counter-based generator of
    `elementfn.random_uniform` / `random_normal`, so the value is the same on every call, for any
    tiling or thread count, and a larger dynamic dim only appends elements (in 1-D). Elementwise
    for graph-fuse: element k needs no input, so a consumer's loop computes it in place.

    %u = graph.random "uniform"(0.0, 1.0) seed 42 dims(%n) : tensor<?x4xf32>
    """

    name = "graph.random"

    dims = var_operand_def(IndexType())
    result = result_def(TensorType)
    distribution = prop_def(StringAttr)
    a = prop_def(FloatAttr[Float64Type])
    b = prop_def(FloatAttr[Float64Type])
    seed = prop_def(IntegerAttr[_I64])

    traits = traits_def(Pure(), FusionKind.ELEMWISE)
    assembly_format = (
        "$distribution `(` $a `,` $b `)` `seed` $seed (`dims` `(` $dims^ `)`)? attr-dict `:` type($result)"
    )

    def __init__(self, result_type: TensorType, distribution: str, a: float, b: float, seed: int,
                 dims: Sequence[SSAValue] = ()):
        super().__init__(
            operands=[list(dims)], result_types=[result_type],
            properties={"distribution": StringAttr(distribution), "a": _f64(a), "b": _f64(b),
                        "seed": _i64(seed)},
        )

    def verify_(self) -> None:
        _check_valid_shape(self)
        _check_num_dims(self.dims, [self.result.type])
        if self.distribution.data not in RANDOM_DISTRIBUTIONS:
            raise VerifyException(
                f"distribution must be \"uniform\" or \"normal\", got \"{self.distribution.data}\"")
        if not isinstance(_elt(self.result), Float16Type | Float32Type | Float64Type):
            raise VerifyException(f"result element type must be f16, f32 or f64, got {_elt(self.result)}")


@irdl_op_definition
class DimOp(IRDLOperation):
    """The run-time size of dim `index`: `%n = graph.dim %x, 0 : tensor<?x4xf32>`."""

    name = "graph.dim"

    input = operand_def(TensorType)
    index = prop_def(IntegerAttr[_I64])
    result = result_def(IndexType())

    traits = traits_def(Pure(), FusionKind.OPAQUE)
    assembly_format = "$input `,` $index attr-dict `:` type($input)"

    def __init__(self, input: SSAValue, index: int):
        super().__init__(operands=[input], result_types=[IndexType()],
                         properties={"index": _i64(index)})

    def verify_(self) -> None:
        _check_valid_shape(self)
        _check_axis(self.index.value.data, len(_shape(self.input)), "dim index")


@irdl_op_definition
class ShapeOp(IRDLOperation):
    """The run-time shape as a tensor<rank x i64>: `graph.shape %x : tensor<?x4xf32> -> tensor<2xi64>`."""

    name = "graph.shape"

    input = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure(), FusionKind.OPAQUE)
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue):
        super().__init__(operands=[input], result_types=[_tensor([len(_shape(input))], i64)])

    def verify_(self) -> None:
        _check_valid_shape(self)
        expected = _tensor([len(_shape(self.input))], i64)
        if self.result.type != expected:
            raise VerifyException(f"result type must be {expected}, got {self.result.type}")


@irdl_op_definition
class FromDimsOp(IRDLOperation):
    """Build a 1-D i64 tensor from index values: `graph.from_dims(%a, %b) : tensor<2xi64>`."""

    name = "graph.from_dims"

    dims = var_operand_def(IndexType())
    result = result_def(TensorType)

    traits = traits_def(Pure(), FusionKind.OPAQUE)
    assembly_format = "`(` $dims `)` attr-dict `:` type($result)"

    def __init__(self, dims: Sequence[SSAValue]):
        super().__init__(operands=[list(dims)], result_types=[_tensor([len(dims)], i64)])

    def verify_(self) -> None:
        _check_valid_shape(self)
        expected = _tensor([len(self.dims)], i64)
        if self.result.type != expected:
            raise VerifyException(f"result type must be {expected}, got {self.result.type}")


@irdl_op_definition
class ExtractOp(IRDLOperation):
    """The single element of a 0-d tensor as a scalar: `%s = graph.extract %t : tensor<f32> -> f32`.

    Graph-level shape functions use it to read run-time values (graph.range's length).
    """

    name = "graph.extract"

    input = operand_def(TensorType)
    result = result_def()

    traits = traits_def(Pure(), FusionKind.OPAQUE)
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue):
        super().__init__(operands=[input], result_types=[_elt(input)])

    def verify_(self) -> None:
        _check_valid_shape(self)
        if len(_shape(self.input)) != 0:
            raise VerifyException(f"input must be a 0-d tensor, got {self.input.type}")
        if self.result.type != _elt(self.input):
            raise VerifyException(
                f"result type {self.result.type} must be the element type {_elt(self.input)}"
            )


@irdl_op_definition
class CallKernelOp(IRDLOperation):
    """Run the loop kernel @callee on `args` into fresh result buffers (the call_tir boundary).

    The kernel takes the args then one output buffer per result (destination-passing style). There
    is one `index` dims operand per `?` over all result types, in order.

    %y = graph.call_kernel @k(%a, %b) dims(%n) : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
    """

    name = "graph.call_kernel"

    args = var_operand_def(TensorType)
    dims = var_operand_def(IndexType())
    callee = prop_def(SymbolRefAttr)
    outputs = var_result_def(TensorType)

    traits = traits_def(FusionKind.OPAQUE)  # a kernel call is never fused again
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    assembly_format = (
        "$callee `(` $args `)` (`dims` `(` $dims^ `)`)? attr-dict `:` functional-type($args, $outputs)"
    )

    def __init__(self, callee: str | SymbolRefAttr, args: Sequence[SSAValue],
                 result_types: Sequence[Attribute], dims: Sequence[SSAValue] = ()):
        if isinstance(callee, str):
            callee = SymbolRefAttr(callee)
        super().__init__(
            operands=[list(args), list(dims)],
            result_types=[list(result_types)],
            properties={"callee": callee},
        )

    def verify_(self) -> None:
        _check_valid_shape(self)
        _check_num_dims(self.dims, [r.type for r in self.outputs])


from minimlir.dialects._graph_more import (  # noqa: E402, F401  (they use the helpers above; re-exported)
    MORE_OPS,
    AcoshOp,
    AcosOp,
    ArgMinOp,
    AsinhOp,
    AsinOp,
    AtanhOp,
    AtanOp,
    BitShiftOp,
    CoshOp,
    CosOp,
    CumSumOp,
    GatherElementsOp,
    GatherNDOp,
    RoundOp,
    SinhOp,
    SinOp,
    TanOp,
    WinogradInputOp,
    WinogradOutputOp,
)

from minimlir.dialects._graph_coverage import (  # noqa: E402  (they use the helpers above)
    COVERAGE_OPS,
    CumProdOp,  # noqa: F401  (graph.CumProdOp)
    MaxPool2dIndicesOp,  # noqa: F401  (graph.MaxPool2dIndicesOp)
    NonZeroOp,  # noqa: F401  (graph.NonZeroOp)
    ReduceProdOp,  # noqa: F401  (graph.ReduceProdOp)
    ScatterElementsOp,  # noqa: F401  (graph.ScatterElementsOp)
    ScatterNDOp,  # noqa: F401  (graph.ScatterNDOp)
    TopKOp,  # noqa: F401  (graph.TopKOp)
)
from minimlir.dialects._graph_coverage4 import (  # noqa: E402  (they use the helpers above)
    COVERAGE4_OPS,
    BitcastOp,  # noqa: F401  (graph.BitcastOp)
    NmsSelectOp,  # noqa: F401  (graph.NmsSelectOp)
)

_LISTED_OPS = [
        ParamOp, ConstantOp,
        AddOp, SubOp, MulOp, DivOp, PowOp, MaxOp, MinOp, ModOp, AndOp, OrOp, XorOp,
        EqOp, LtOp, LeOp, GtOp, GeOp,
        ReluOp, SigmoidOp, TanhOp, ExpOp, LogOp, SqrtOp, RsqrtOp, ErfOp, NegOp, AbsOp, FloorOp,
        CeilOp, SignOp, ReciprocalOp, NotOp, SoftplusOp, HardSwishOp,
        GeluOp, ClipOp, LeakyReluOp, EluOp, SeluOp, HardSigmoidOp,
        MatMulOp, Conv2dOp, MaxPool2dOp, AvgPool2dOp, GlobalAvgPoolOp, GlobalMaxPoolOp,
        SoftmaxOp, LogSoftmaxOp, LayerNormOp, BatchNormOp, LRNOp,
        ReduceSumOp, ReduceMeanOp, ReduceMaxOp, ReduceMinOp, ArgMaxOp,
        ReshapeOp, TransposeOp, ConcatOp, SliceOp, SplitOp, GatherOp, WhereOp, CastOp, PadOp,
        BroadcastToOp, TileOp, TriluOp, RangeOp, RandomOp, DimOp, ShapeOp, FromDimsOp, ExtractOp,
        CallKernelOp,
        *MORE_OPS,
        *COVERAGE_OPS,
        *COVERAGE4_OPS,
]

Graph = Dialect(
    "graph",
    [
        *_LISTED_OPS,
        # a unary op needs no entry in a list: every `_UnaryOp` class of this package is in the dialect
        *[c for c in unary_op_classes() if c not in _LISTED_OPS and c.__module__.startswith("minimlir.dialects.")],
    ],
    [],
)
