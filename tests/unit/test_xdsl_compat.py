"""The parser work-arounds in dialects/_xdsl_compat.py."""

import math

from xdsl.context import Context
from xdsl.dialects.builtin import Builtin
from xdsl.dialects.func import Func
from xdsl.parser import Parser

from minimlir.dialects import graph


def _constants(text: str) -> list[list[float]]:
    ctx = Context()
    for d in (Builtin, Func, graph.Graph):
        ctx.load_dialect(d)
    module = Parser(ctx, text).parse_module()
    return [
        [v for v in op.value.get_values()]
        for op in module.walk()
        if isinstance(op, graph.ConstantOp)
    ]


def test_hex_float_literals_are_bit_patterns():
    (f32, f16, f64) = _constants(
        """
        %a = graph.constant dense<[0xFF800000, 0x7F800000, 0x7FC00000, 0x3FC00000]> : tensor<4xf32>
        %b = graph.constant dense<0xFC00> : tensor<f16>
        %c = graph.constant dense<0xFFF0000000000000> : tensor<f64>
        """
    )
    assert f32[0] == -math.inf and f32[1] == math.inf and math.isnan(f32[2]) and f32[3] == 1.5
    assert f16 == [-math.inf]
    assert f64 == [-math.inf]


def test_printed_non_finite_constant_round_trips():
    from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, TensorType, f32

    attr = DenseIntOrFPElementsAttr.from_list(TensorType(f32, [2]), [-math.inf, 2.0])
    text = str(graph.ConstantOp(attr))
    assert "0x" in text.lower()
    (values,) = _constants(text)
    assert values == [-math.inf, 2.0]


def test_integer_hex_literals_unchanged():
    ctx = Context()
    for d in (Builtin, Func, graph.Graph):
        ctx.load_dialect(d)
    module = Parser(ctx, "%a = graph.constant dense<0x10> : tensor<i64>").parse_module()
    (op,) = [o for o in module.walk() if isinstance(o, graph.ConstantOp)]
    assert list(op.value.get_values()) == [16]
