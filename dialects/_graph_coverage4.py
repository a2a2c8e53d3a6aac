"""Graph ops of the fourth operator-coverage round (issue 14). Part of the `graph` dialect
(graph.py lists them in `Graph`); kept apart from the other ops so that merges stay clean.

    %k = graph.nms_select %sup, %order, %valid, %max
           : (tensor<1x6x6xi1>, tensor<1x2x6xi64>, tensor<1x2x6xi1>, tensor<i64>) -> tensor<1x2x6xi1>
    %y = graph.bitcast %x : tensor<?x3xf32> -> tensor<?x3xi32>
"""

from __future__ import annotations

from xdsl.dialects.builtin import AnyFloat, IntegerType, TensorType, i1, i64
from xdsl.ir import Attribute
from xdsl.ir import SSAValue
from xdsl.irdl import IRDLOperation, irdl_op_definition, operand_def, result_def, traits_def
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from minimlir.dialects._fusion import FusionKind
from minimlir.dialects.graph import _check_valid_shape, _elt, _shape, _tensor, dims_compatible


@irdl_op_definition
class NmsSelectOp(IRDLOperation):
    """The greedy selection of non-maximum suppression (ONNX NonMaxSuppression's core).

    For each (batch b, class c), the candidates in rank order r = 0..N-1 are box `order[b, c, r]`
    (ranked by descending score); candidate r is kept when `valid[b, c, r]`, fewer than
    `max_per_class` (0-d i64) are kept before it, and no kept earlier candidate r' has
    `suppress[b, order[b, c, r'], order[b, c, r]]`. The result `keep[b, c, r]` (i1) is indexed by
    rank, so graph.nonzero of it lists the selections per batch, class, in selection order."""

    name = "graph.nms_select"

    suppress = operand_def(TensorType)
    order = operand_def(TensorType)
    valid = operand_def(TensorType)
    max_per_class = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure(), FusionKind.OPAQUE)
    assembly_format = (
        "$suppress `,` $order `,` $valid `,` $max_per_class attr-dict `:` functional-type(operands, results)"
    )

    def __init__(self, suppress: SSAValue, order: SSAValue, valid: SSAValue, max_per_class: SSAValue):
        super().__init__(operands=[suppress, order, valid, max_per_class],
                         result_types=[_tensor(_shape(order), i1)])

    def verify_(self) -> None:
        _check_valid_shape(self)
        ss, os_, vs = _shape(self.suppress), _shape(self.order), _shape(self.valid)
        if len(ss) != 3 or not dims_compatible(ss[1], ss[2]) or _elt(self.suppress) != i1:
            raise VerifyException(f"suppress must be i1 of shape [B, N, N], got {self.suppress.type}")
        if len(os_) != 3 or _elt(self.order) != i64:
            raise VerifyException(f"order must be i64 of shape [B, C, N], got {self.order.type}")
        if not (dims_compatible(os_[0], ss[0]) and dims_compatible(os_[2], ss[1])):
            raise VerifyException(f"order {self.order.type} does not match suppress {self.suppress.type}")
        if _elt(self.valid) != i1 or len(vs) != 3 or not all(dims_compatible(a, b) for a, b in zip(vs, os_)):
            raise VerifyException(f"valid must be i1 of order's shape, got {self.valid.type}")
        if _shape(self.max_per_class) != () or _elt(self.max_per_class) != i64:
            raise VerifyException(f"max_per_class must be a 0-d i64 tensor, got {self.max_per_class.type}")
        rs = _shape(self.result)
        if _elt(self.result) != i1 or len(rs) != 3 or not all(dims_compatible(a, b) for a, b in zip(rs, os_)):
            raise VerifyException(f"the result must be i1 of order's shape, got {self.result.type}")


def _bit_width(t: Attribute) -> int | None:
    if isinstance(t, IntegerType):
        return t.width.data
    if isinstance(t, AnyFloat):
        return t.bitwidth
    return None


@irdl_op_definition
class BitcastOp(IRDLOperation):
    """Elementwise reinterpretation of each element's bits as another type of the same width.

    `graph.bitcast %x : tensor<3xf32> -> tensor<3xi32>` (ONNX BitCast between equal widths);
    i1 is not a bit pattern of its own here, so it takes no part."""

    name = "graph.bitcast"

    input = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure(), FusionKind.ELEMWISE)
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, element_type: Attribute):
        super().__init__(operands=[input], result_types=[_tensor(_shape(input), element_type)])

    def verify_(self) -> None:
        _check_valid_shape(self)
        a, b = _elt(self.input), _elt(self.result)
        wa, wb = _bit_width(a), _bit_width(b)
        if wa is None or wb is None or wa != wb or wa == 1:
            raise VerifyException(f"bitcast needs element types of the same width (not i1), got {a} and {b}")
        if _shape(self.input) != _shape(self.result):
            raise VerifyException(f"the result shape {_shape(self.result)} must be the input's {_shape(self.input)}")


COVERAGE4_OPS = [NmsSelectOp, BitcastOp]
