"""The default schedule recognises kernels by what legalization stamped on their blocks (`kind`,
`groups`, `depthwise`, …), not by block names or argument counts; a rule's refusal is a
ScheduleError (rolled back), anything else a rule raises is a bug and fails the pass."""

from __future__ import annotations

import pytest
from xdsl.dialects.builtin import StringAttr

import minimlir.compiler.interpreter as H
from minimlir.compiler import driver
from minimlir.compiler.errors import CompileError
from minimlir.dialects import loop
from minimlir.frontend import api
from minimlir.passes.loop.schedule import default as D
from minimlir.passes.loop.schedule.api import ScheduleError
from minimlir.passes.loop.schedule.default import transaction

MATMUL = """
func.func @main(%a: tensor<8x16xf32>, %b: tensor<16x32xf32>) -> tensor<8x32xf32> {
  %c = graph.matmul %a, %b : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  func.return %c : tensor<8x32xf32>
}"""


def conv_text(c_in: int, c_out: int, group: int) -> str:
    x, w, y = f"tensor<1x{c_in}x6x6xf32>", f"tensor<{c_out}x{c_in // group}x3x3xf32>", f"tensor<1x{c_out}x4x4xf32>"
    return f"""
func.func @main(%x: {x}, %w: {w}) -> {y} {{
  %y = graph.conv2d %x, %w strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1] group {group} : ({x}, {w}) -> {y}
  func.return %y : {y}
}}"""


def _kernel(module):
    return next(op for op in module.walk() if loop.is_kernel(op))


def test_legalization_stamps_the_kernel_kind_and_its_parameters():
    (mm,) = loop.blocks_of(_kernel(H.legalize(MATMUL)))
    assert loop.block_kind(mm) == "matmul"
    (dw,) = loop.blocks_of(_kernel(H.legalize(conv_text(8, 8, 8))))
    assert loop.block_kind(dw) == "conv2d" and "depthwise" in dw.attributes
    assert loop.int_param(dw, "groups", 1) == 8
    assert [a.value.data for a in dw.attributes["strides"].data] == [1, 1]
    (gr,) = loop.blocks_of(_kernel(H.legalize(conv_text(8, 16, 2))))
    assert loop.int_param(gr, "groups", 1) == 2 and "depthwise" not in gr.attributes
    (plain,) = loop.blocks_of(_kernel(H.legalize(conv_text(4, 8, 1))))
    assert loop.int_param(plain, "groups", 1) == 1 and "depthwise" not in plain.attributes
    # the attributes print and parse back
    text = api.ir_text(H.legalize(conv_text(8, 8, 8)))
    assert 'kind = "conv2d"' in text and "depthwise" in text
    assert api.ir_text(api.parse_mlir(text)) == text


def test_rules_match_the_kind_not_the_block_name():
    cfg = D.ScheduleConfig(width=4)
    renamed = H.legalize(MATMUL)
    (blk,) = loop.blocks_of(_kernel(renamed))
    blk.block_name = StringAttr("product")  # any name: the kind says what it is
    assert D.schedule_kernel(_kernel(renamed), cfg) == "matmul"
    unstamped = H.legalize(MATMUL)
    (blk,) = loop.blocks_of(_kernel(unstamped))
    del blk.attributes[loop.KIND_ATTR]  # named "matmul", but nothing says it is one
    assert D.schedule_kernel(_kernel(unstamped), cfg) == "generic"


def test_depthwise_is_the_attribute_not_the_argument_count():
    cfg = D.ScheduleConfig(width=4)
    m = H.legalize(conv_text(8, 8, 8))
    assert D.schedule_kernel(_kernel(m), cfg) == "conv2d"  # the depthwise rows path
    m = H.legalize(conv_text(8, 8, 8))
    (blk,) = loop.blocks_of(_kernel(m))
    del blk.attributes["depthwise"]  # same loops, but not declared depthwise: no conv path takes it
    assert D.schedule_kernel(_kernel(m), cfg) == "generic"


def test_a_refusal_rolls_the_kernel_back():
    m = H.legalize(MATMUL)
    k = _kernel(m)
    before = api.ir_text(m)

    def refuse(s):
        s.split(loop.block_loops(s.get_block("matmul"))[0], [None, 2])
        raise ScheduleError("not my shape")

    assert transaction.attempt(k, refuse) is False
    assert api.ir_text(m) == before
    assert transaction.REFUSALS[-1].endswith("ScheduleError: not my shape")


@pytest.mark.parametrize("bug", [IndexError, AssertionError, ValueError, ZeroDivisionError])
def test_a_bug_in_a_rule_is_not_a_refusal(bug):
    k = _kernel(H.legalize(MATMUL))

    def buggy(s):
        raise bug("a bug in the rule")

    with pytest.raises(bug):
        transaction.attempt(k, buggy)


def test_a_bug_in_a_rule_fails_the_pass_loudly(monkeypatch):
    def buggy_rule(kernel, cfg):
        return transaction.attempt(kernel, lambda s: s.get_loops(s.get_block("matmul"))[99])

    monkeypatch.setattr(D, "RULES", [buggy_rule, *D.RULES])
    m = H.legalize(MATMUL)
    with pytest.raises(CompileError, match=r"pass 'loop-schedule' crashed: IndexError"):
        driver.lower(m, "loop-schedule", name="m.mlir")


def test_tuning_keys_do_not_see_the_stamps():
    from minimlir.tuning.task import structural_key

    stamped = _kernel(H.legalize(conv_text(8, 8, 8)))
    bare = _kernel(H.legalize(conv_text(8, 8, 8)))
    for b in loop.blocks_of(bare):
        loop.unstamp(b)
    assert "depthwise" not in api.ir_text(bare) and "depthwise" in api.ir_text(stamped)
    assert structural_key(stamped) == structural_key(bare)
