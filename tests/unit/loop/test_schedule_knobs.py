"""The default schedule's knobs (passes/loop/schedule/default/knobs.py): no assignment = today's schedule, the
traced defaults reproduce it byte for byte, an assignment changes it, bad assignments are refused."""

from __future__ import annotations

import re

import pytest

import _legalize_harness as H
from minimlir.frontend.api import ir_text
from minimlir.passes.loop.schedule import default as D
from minimlir.passes.loop.schedule.default import knobs as K


def _module(text):
    m = H.legalize(text)
    return m


MATMUL = """
func.func @main(%a: tensor<64x96xf32>, %b: tensor<96x128xf32>) -> tensor<64x128xf32> {
  %c = graph.matmul %a, %b : (tensor<64x96xf32>, tensor<96x128xf32>) -> tensor<64x128xf32>
  %r = graph.relu %c : tensor<64x128xf32>
  func.return %r : tensor<64x128xf32>
}"""

CONV = """
func.func @main(%x: tensor<1x16x14x14xf32>, %w: tensor<32x16x3x3xf32>) -> tensor<1x32x14x14xf32> {
  %y = graph.conv2d %x, %w pads [1, 1, 1, 1] : (tensor<1x16x14x14xf32>, tensor<32x16x3x3xf32>) -> tensor<1x32x14x14xf32>
  func.return %y : tensor<1x32x14x14xf32>
}"""


def _kernel(m):
    from minimlir.dialects import loop

    return next(op for op in m.walk() if loop.is_kernel(op))


def _schedule(text, assignment=None):
    m = _module(text)
    if assignment is not None:
        K.set_assignment(_kernel(m), assignment)
    with K.tracing() as traces:
        D.schedule_module(m, D.ScheduleConfig(width=8))
    return ir_text(m), traces[0][1]


@pytest.mark.parametrize("text", [MATMUL, CONV], ids=["matmul", "conv"])
def test_traced_defaults_reproduce_the_default_schedule(text):
    plain, trace = _schedule(text)
    assert trace.values, "the rule read no knob"
    again, trace2 = _schedule(text, dict(trace.values))
    assert again == plain  # byte-identical IR
    assert trace2.values == trace.values and not trace2.unused
    assert K.KNOBS_ATTR not in plain
    assert K.check_assignment(trace.values, trace.facts, trace.values) is None


def test_no_tracing_no_assignment_is_untouched():
    m1, m2 = _module(MATMUL), _module(MATMUL)
    D.schedule_module(m1, D.ScheduleConfig(width=8))
    with K.tracing():
        D.schedule_module(m2, D.ScheduleConfig(width=8))
    assert ir_text(m1) == ir_text(m2)


def test_matmul_trace_names_rule_and_heuristic_choices():
    _, trace = _schedule(MATMUL)
    assert trace.rule == "matmul"
    # width 8: 16 vector registers, the 6 x 2 tile (M = 64: the last row tile is clamped)
    assert trace.values["matmul.mr"] == 6 and trace.values["matmul.nv"] == 2
    assert trace.values["matmul.clamp_rows"] is True and trace.values["matmul.pack_b"] is True
    assert trace.values["matmul.width"] == 8 and trace.facts["matmul.M"] == 64


def test_assignment_changes_the_schedule():
    plain, trace = _schedule(MATMUL)
    a = dict(trace.values, **{"matmul.mr": 4, "matmul.nv": 4, "matmul.order": "ijk"})
    assert K.check_assignment(a, trace.facts, trace.values) is None
    changed, t2 = _schedule(MATMUL, a)
    assert changed != plain
    assert t2.values["matmul.mr"] == 4 and t2.rule == "matmul"
    assert "memref<4x32xf32>" in changed  # the 4 x (4*8) accumulator tile


def test_conv_assignment_changes_the_tile():
    plain, trace = _schedule(CONV)
    assert trace.rule == "conv2d"
    a = dict(trace.values, **{"conv2d.rw": 7, "conv2d.nv": 1, "conv2d.parallel": "oh"})
    assert K.check_assignment(a, trace.facts, trace.values) is None
    changed, _ = _schedule(CONV, a)
    assert changed != plain and "memref<7x8xf32>" in changed


@pytest.mark.parametrize("bad, why", [
    ({"matmul.mr": 9}, "not one of"),
    ({"matmul.nope": 1}, "unknown knob"),
    ({"matmul.pack_b": 1}, "not one of"),
])
def test_illegal_values_are_refused(bad, why):
    _, trace = _schedule(MATMUL)
    assert why in K.check_assignment(dict(trace.values, **bad), trace.facts, trace.values)


def test_rule_checks_refuse_unbuildable_tiles():
    _, trace = _schedule(MATMUL)
    assert "multiple of mr" in K.check_assignment(dict(trace.values, **{"matmul.mr": 6, "matmul.mc": 64,
                                                                        "matmul.whole_m": False}),
                                                  trace.facts, trace.values)
    assert "registers" in K.check_assignment(dict(trace.values, **{"matmul.mr": 16, "matmul.nv": 6,
                                                                   "matmul.mc": 64}), trace.facts)
    _, ct = _schedule(CONV)
    assert "divide" in K.check_assignment(dict(ct.values, **{"conv2d.nv": 3}), ct.facts, ct.values)


def test_every_rule_declares_its_knobs():
    decls = K.declarations()
    assert {"matmul", "conv2d", "conv2d_rows", "generic"} <= set(decls)
    for rule in decls.values():
        for k in rule.knobs:
            assert k.name.startswith(rule.rule + ".") and len(k.values) >= 2


def _mm(m, k, n):
    return f"""
func.func @main(%a: tensor<{m}x{k}xf32>, %b: tensor<{k}x{n}xf32>) -> tensor<{m}x{n}xf32> {{
  %c = graph.matmul %a, %b : (tensor<{m}x{k}xf32>, tensor<{k}x{n}xf32>) -> tensor<{m}x{n}xf32>
  func.return %c : tensor<{m}x{n}xf32>
}}"""


def _conv(ow, co=32):
    x, w, y = f"tensor<1x8x{ow}x{ow}xf32>", f"tensor<{co}x8x3x3xf32>", f"tensor<1x{co}x{ow}x{ow}xf32>"
    return f"""
func.func @main(%x: {x}, %w: {w}) -> {y} {{
  %y = graph.conv2d %x, %w pads [1, 1, 1, 1] : ({x}, {w}) -> {y}
  func.return %y : {y}
}}"""


@pytest.mark.parametrize("text", [_mm(6, 32, 64), _mm(3, 16, 40), _mm(70, 24, 24), _conv(13), _conv(27), _conv(7)],
                         ids=["mm6", "mm3", "mm70", "conv13", "conv27", "conv7"])
def test_heuristic_choices_are_declared_values(text):
    """Lookup checks records without the kernel's trace: every value a heuristic picks must be a
    declared one, or a record of the default schedule would be refused."""
    _, trace = _schedule(text)
    assert K.check_assignment(trace.values) is None, trace.values


BLOCKED_CONV = """
func.func @main(%x: tensor<1x2x10x10x8xf32>, %w: tensor<16x16x3x3xf32>) -> tensor<1x2x10x10x8xf32> {
  %y = graph.conv2d %x, %w pads [1, 1, 1, 1] block 8 : (tensor<1x2x10x10x8xf32>, tensor<16x16x3x3xf32>) -> tensor<1x2x10x10x8xf32>
  func.return %y : tensor<1x2x10x10x8xf32>
}"""


def test_blocked_conv_refuses_a_width_other_than_its_block():
    """A channel-blocked conv's vector is its channel block: a width of 4 on a block of 8 (a legal
    value of conv2d.width) computed wrong sums and crashed (56 WRONG_RESULT and 3 SIGSEGV of 256
    tuning trials on ResNet-50's convs). The check refuses it before a build, and the rule does not
    build a 4-lane tile from a record that carries it."""
    plain, trace = _schedule(BLOCKED_CONV)
    assert trace.rule == "conv2d" and trace.values["conv2d.width"] == 8 and trace.facts["conv2d.block"] == 8
    assert "memref<" in plain and "x8xf32>" in plain
    a = dict(trace.values, **{"conv2d.width": 4})
    assert "block of 8" in K.check_assignment(a, trace.facts, trace.values)
    bad, _ = _schedule(BLOCKED_CONV, a)
    assert not re.search(r"loop.vector_width = 4\b", bad)  # no 4-lane loop (the unfixed rule built one)
