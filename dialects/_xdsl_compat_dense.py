"""The dense-literal part of minimlir.dialects._xdsl_compat, alone so every Context gets it without
importing arith (minimlir.compiler.context imports it; _xdsl_compat re-applies it by importing it).

- Hex float literals in dense attributes: xDSL prints non-finite floats as bit patterns
  (`dense<0xFF800000> : tensor<f32>` for -inf) but parses them back as the *integer* 4286578688
  converted to float. MLIR reads a hex literal of a float element type as the bit pattern.
"""

from __future__ import annotations

import struct

from xdsl.dialects.builtin import AnyFloat
from xdsl.parser.attribute_parser import AttrParser

_Element = AttrParser._TensorLiteralElement
_original_to_type = _Element.to_type
_FORMATS = {16: ("<H", "<e"), 32: ("<I", "<f"), 64: ("<Q", "<d")}


def _to_type(self, parser, type):
    if (
        isinstance(type, AnyFloat)
        and isinstance(self.value, int)
        and not isinstance(self.value, bool)
        and not self.is_negative
        and self.span.text.lower().startswith("0x")
        and type.bitwidth in _FORMATS
    ):
        int_fmt, float_fmt = _FORMATS[type.bitwidth]
        return struct.unpack(float_fmt, struct.pack(int_fmt, self.value))[0]
    return _original_to_type(self, parser, type)


if getattr(_Element.to_type, "__name__", "") != "_to_type":
    _Element.to_type = _to_type
