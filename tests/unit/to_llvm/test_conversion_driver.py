"""The conversion driver (passes/to_llvm/_conversion.py): type dispatch, phases, rewriter semantics,
the located legality check."""

from __future__ import annotations

import pytest
from xdsl.dialects import arith, func, llvm
from xdsl.ir import Operation
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from minimlir.compiler.errors import CompileError
from minimlir.compiler.parsing import parse_module
from minimlir.passes._diagnostics import OpDiagnosticException
from minimlir.passes.to_llvm._conversion import ConversionDriver, convert

SRC = """
func.func @f(%a: i32, %b: i32) -> i32 {
  %c = arith.constant 1 : i32
  %s = arith.addi %a, %c : i32
  %m = arith.muli %s, %b : i32
  func.return %m : i32
}
"""


class AddiToLlvm(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.AddiOp, rewriter: PatternRewriter) -> None:
        rewriter.replace(op, [llvm.AddOp(op.lhs, op.rhs)])


def test_dispatch_calls_only_the_pattern_of_the_ops_class():
    module = parse_module(SRC, "t.mlir")
    seen: list[str] = []

    def on_muli(op: Operation, rewriter: PatternRewriter) -> None:
        seen.append(op.name)

    driver = ConversionDriver({arith.AddiOp: AddiToLlvm(), arith.MuliOp: on_muli})
    driver.run(module)
    assert seen == ["arith.muli"]  # never asked about arith.constant, func.*, the new llvm.add
    names = [o.name for o in module.walk()]
    assert "llvm.add" in names and "arith.addi" not in names
    # the answer is cached per class; unhandled classes are cached as None
    assert driver.patterns_for(arith.ConstantOp) is None and arith.ConstantOp in driver._dispatch
    assert driver.patterns_for(arith.AddiOp) is not None


def test_a_dialect_key_covers_its_ops_and_phases_run_in_order():
    module = parse_module(SRC, "t.mlir")
    order: list[tuple[int, str]] = []

    def phase(k: int):
        return lambda op, rewriter: order.append((k, op.name))

    ConversionDriver([{"arith": phase(1)}, {func.ReturnOp: phase(2), arith.MuliOp: phase(2)}]).run(module)
    assert order == [(1, "arith.constant"), (1, "arith.addi"), (1, "arith.muli"),
                     (2, "arith.muli"), (2, "func.return")]


def test_ops_erased_by_an_earlier_rewrite_are_skipped():
    module = parse_module(SRC, "t.mlir")
    visited: list[str] = []

    def erase_mul_too(op: Operation, rewriter: PatternRewriter) -> None:
        visited.append(op.name)
        if isinstance(op, arith.AddiOp):
            mul = next(iter(op.result.uses)).operation
            mul.result.replace_all_uses_with(op.result)
            rewriter.erase(mul)

    ConversionDriver({arith.AddiOp: erase_mul_too, arith.MuliOp: erase_mul_too}).run(module)
    assert visited == ["arith.addi"]


def test_legality_error_is_located_at_the_op():
    module = parse_module(SRC, "t.mlir")
    const = next(o for o in module.walk() if isinstance(o, arith.ConstantOp))
    with pytest.raises(OpDiagnosticException, match="failed to legalize operation 'arith.constant'") as info:
        convert(module, {arith.AddiOp: AddiToLlvm()}, illegal=("arith",))
    assert info.value.op is const  # the first op left, with its location


def test_located_error_reaches_the_user_as_file_line_col():
    from minimlir.compiler.driver import lower

    src = "func.func @g(%a: i32, %b: i32) -> i32 {\n  %s, %o = arith.addui_extended %a, %b : i32, i1\n  func.return %s : i32\n}\n"
    with pytest.raises(CompileError, match=r"g\.mlir:2:\d+: error: failed to legalize operation 'arith.addui_extended'"):
        lower(parse_module(src, "g.mlir"), "convert-arith-to-llvm", name="g.mlir", source_text=src)


def test_erase_dead_sweeps_trivially_dead_ops_once():
    module = parse_module(SRC.replace("  func.return %m", "  %dead = arith.subi %a, %b : i32\n  func.return %m"), "t.mlir")
    ConversionDriver({func.ReturnOp: lambda op, rw: None}, erase_dead=True).run(module)
    names = [o.name for o in module.walk()]
    assert "arith.subi" not in names and "arith.muli" in names  # only the dead one goes
