"""The --verify-diagnostics matcher and the located verifier."""

from xdsl.dialects.arith import AddiOp
from xdsl.dialects.builtin import FileLineColLoc, IntAttr, NameLoc, StringAttr, UnknownLoc, i32
from xdsl.utils.test_value import create_ssa_value

from minimlir.passes._diagnostics import Diagnostic, format_location
from minimlir.compiler.diagnostics import SourceFile, check_expected, parse_expected, render

SOURCE = """\
func.func @f() {
  // expected-error @+1 {{next line}}
  %0 = "a.b"() : () -> i32
  "c.d"() : () -> ()  // expected-warning {{same line}}
  // expected-remark @below {{below}}
  // expected-note @below {{also below}}
  "e.f"() : () -> ()
  // expected-error @above {{above}}
  // expected-error @-5 {{minus}}
  // expected-error-re @+1 {{op {{[0-9]+}} failed}}
  "g.h"() : () -> ()
  // expected-error @unknown {{nowhere}}
}
"""


def at(line: int, severity: str, message: str) -> Diagnostic:
    loc = FileLineColLoc(StringAttr("in.mlir"), IntAttr(line), IntAttr(3))
    return Diagnostic(severity, message, loc)


def test_designators_resolve_to_lines():
    exps = parse_expected(SourceFile("in.mlir", SOURCE))
    assert [(e.severity, e.line, e.pattern) for e in exps] == [
        ("error", 3, "next line"),
        ("warning", 4, "same line"),
        ("remark", 7, "below"),
        ("note", 7, "also below"),
        ("error", 7, "above"),
        ("error", 4, "minus"),
        ("error", 11, "op {{[0-9]+}} failed"),
        ("error", None, "nowhere"),
    ]


def test_all_matched_is_success():
    src = SourceFile("in.mlir", SOURCE)
    produced = [
        at(3, "error", "the next line error"),
        at(4, "warning", "on the same line"),
        at(4, "error", "minus five"),
        at(7, "remark", "below!"),
        at(7, "note", "also below"),
        at(7, "error", "from above"),
        at(11, "error", "op 42 failed"),
        Diagnostic("error", "nowhere at all", UnknownLoc()),
    ]
    assert check_expected(src, parse_expected(src), produced) == []


def test_mismatches_are_reported_like_mlir():
    src = SourceFile("in.mlir", 'x\n"a.b"() : () -> ()  // expected-error {{wanted}}\n')
    failures = check_expected(src, parse_expected(src), [at(2, "error", "something else"), at(1, "remark", "r")])
    assert failures[0].startswith("in.mlir:2:3: error: unexpected error: something else\n")
    assert failures[1].startswith("in.mlir:1:3: error: unexpected remark: r\n")
    assert failures[2].startswith('in.mlir:2:24: error: expected error "wanted" was not produced\n')
    assert '"a.b"() : () -> ()  // expected-error {{wanted}}\n' + " " * 23 + "^~~" in failures[2]


def test_wrong_severity_does_not_match():
    src = SourceFile("in.mlir", "x  // expected-warning {{msg}}\n")
    assert len(check_expected(src, parse_expected(src), [at(1, "error", "msg")])) == 2


def test_regex_is_only_inside_double_braces():
    src = SourceFile("in.mlir", "x  // expected-error-re {{a.c {{[0-9]+}}}}\n")
    assert check_expected(src, parse_expected(src), [at(1, "error", "a.c 12")]) == []
    assert len(check_expected(src, parse_expected(src), [at(1, "error", "abc 12")])) == 2


def test_render_has_snippet_and_caret():
    src = SourceFile("in.mlir", "line one\n  %0 = bad\n")
    text = render(at(2, "error", "boom"), src)
    assert text == "in.mlir:2:3: error: boom\n  %0 = bad\n  ^\n"


def test_locations_format_like_mlir():
    named = NameLoc(StringAttr("node"), FileLineColLoc(StringAttr("m.onnx"), IntAttr(3), IntAttr(4)))
    assert format_location(named) == "m.onnx:3:4"
    assert format_location(UnknownLoc()) == "loc(unknown)"
    assert format_location(NameLoc(StringAttr("n"), UnknownLoc())) == 'loc("n"(unknown))'


def test_located_verifier_finds_the_failing_op():
    from xdsl.dialects.builtin import ModuleOp
    from xdsl.dialects.test import TestOp

    from minimlir.compiler.diagnostics import LocatedVerifyException, verify_located

    a = create_ssa_value(i32)
    bad = AddiOp.create(operands=[a], result_types=[i32])
    module = ModuleOp([TestOp(), bad])
    try:
        verify_located(module)
    except LocatedVerifyException as e:
        assert e.op is bad
        assert "'arith.addi' op" in e.message
    else:
        raise AssertionError("did not raise")
