"""Work-arounds for bugs of the pinned xDSL (0.74) that break round trips of our IR.

Imported for its effect by dialects/graph.py, so every tool and API that parses minimlir IR has it.
Each fix names the symptom; drop it when the pin moves to a release that fixes it.

- Hex float literals in dense attributes (fixed in _xdsl_compat_dense, which every Context
  imports): xDSL prints non-finite floats as bit patterns (`dense<0xFF800000> : tensor<f32>` for
  -inf) but parses them back as the *integer* 4286578688 converted to float. MLIR reads a hex
  literal of a float element type as the bit pattern.
- Vector comparisons and selects: `arith.cmpi`/`arith.cmpf` on `vector<8xf32>` must give
  `vector<8xi1>` and `arith.select` must take a `vector<8xi1>` condition (MLIR's arith does both;
  loop-lower-vectors emits them). xDSL declares the result and the condition as a scalar i1, so
  vectorized kernels failed to verify (`mini-opt -p compile`, `MINIMLIR_VERIFY_EACH=1`), and a
  parsed vector `cmpi` got an i1 result. MLIR's syntax is kept:
      %c = arith.cmpf olt, %a, %b : vector<8xf32>
      %s = arith.select %c, %a, %b : vector<8xi1>, vector<8xf32>
"""

from __future__ import annotations

from xdsl.dialects import arith
from xdsl.dialects.builtin import IntegerType, VectorType, i1
from xdsl.ir import Attribute
from xdsl.irdl import (
    AnyAttr,
    AnyOf,
    EqAttrConstraint,
    OperandDef,
    ParamAttrConstraint,
    ResultDef,
)
import minimlir.dialects._xdsl_compat_dense  # noqa: F401  (hex float literals; see that file)


# --- vector comparisons and selects -------------------------------------------------------------

_BOOL_LIKE = AnyOf(
    (EqAttrConstraint(i1), ParamAttrConstraint(VectorType, (EqAttrConstraint(i1), AnyAttr(), AnyAttr())))
)


def _bool_like(t: Attribute) -> Attribute:
    """i1 for a scalar operand type, vector<...xi1> of the same shape for a vector one."""
    if isinstance(t, VectorType):
        return VectorType(i1, t.get_shape())
    return IntegerType(1)


def _widen_compare(cls) -> None:
    op_def = cls.get_irdl_definition()
    op_def.results = [(name, ResultDef(_BOOL_LIKE)) for name, _ in op_def.results]
    original = cls.__init__

    def __init__(self, operand1, operand2, *args, **kwargs):
        original(self, operand1, operand2, *args, **kwargs)
        want = _bool_like(self.lhs.type)
        if self.result.type != want:
            self.result._type = want  # noqa: SLF001 (fresh op: no uses yet)

    __init__._minimlir_compat = True
    cls.__init__ = __init__


def _widen_select() -> None:
    op_def = arith.SelectOp.get_irdl_definition()
    op_def.operands = [
        (name, OperandDef(_BOOL_LIKE) if name == "cond" else d) for name, d in op_def.operands
    ]
    original_print = arith.SelectOp.print

    @classmethod
    def parse(cls, parser):
        cond = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        lhs = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        rhs = parser.parse_unresolved_operand()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        first = parser.parse_type()
        if parser.parse_optional_punctuation(",") is None:
            first, result_type = IntegerType(1), first  # `: T`, the scalar form
        else:
            result_type = parser.parse_type()  # `: vector<Nxi1>, T`
        cond_v, lhs_v, rhs_v = parser.resolve_operands([cond, lhs, rhs], [first, result_type, result_type], parser.pos)
        op = cls(cond_v, lhs_v, rhs_v)
        op.attributes.update(attrs)
        return op

    def print(self, printer):
        if not isinstance(self.cond.type, VectorType):
            return original_print(self, printer)
        printer.print_string(" ")
        printer.print_operand(self.cond)
        printer.print_string(", ")
        printer.print_operand(self.lhs)
        printer.print_string(", ")
        printer.print_operand(self.rhs)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.cond.type)
        printer.print_string(", ")
        printer.print_attribute(self.result.type)

    print._minimlir_compat = True
    arith.SelectOp.parse = parse
    arith.SelectOp.print = print


if not getattr(arith.CmpiOp.__init__, "_minimlir_compat", False):
    _widen_compare(arith.CmpiOp)
    _widen_compare(arith.CmpfOp)
if not getattr(arith.SelectOp.print, "_minimlir_compat", False):
    _widen_select()
