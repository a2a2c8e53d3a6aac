"""Test-only passes for mini-opt's lit tests, loaded with `--load-pass-plugin`."""

from dataclasses import dataclass
from typing import Literal

from xdsl.context import Context
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, StringAttr, i32
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException

from minimlir.passes._diagnostics import emit_error, emit_remark, emit_warning


@dataclass(frozen=True)
class TestOptionsPass(ModulePass):
    """Record the options it got as a `test.options` attribute on the module."""

    name = "test-options"

    count: int = 1
    ratio: float = 0.5
    flag: bool = False
    sizes: tuple[int, ...] = ()
    label: str = "x"
    mode: Literal["fast", "slow"] = "fast"
    limit: int | None = None

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        text = (
            f"count={self.count} ratio={self.ratio} flag={self.flag} sizes={list(self.sizes)} "
            f"label={self.label!r} mode={self.mode} limit={self.limit}"
        )
        op.attributes["test.options"] = StringAttr(text)


@dataclass(frozen=True)
class TestDiagnosePass(ModulePass):
    """Emit a diagnostic of the given severity on every func.func (error stops at the first)."""

    name = "test-diagnose"

    severity: str = "remark"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for f in op.walk():
            if isinstance(f, func.FuncOp):
                msg = f"function @{f.sym_name.data} has {len(list(f.body.walk()))} ops"
                if self.severity == "remark":
                    emit_remark(f, msg)
                elif self.severity == "warning":
                    emit_warning(f, msg, notes=[(f.body.block.last_op, "its terminator is here")])
                elif self.severity == "plain-error":
                    raise DiagnosticException(msg)
                else:
                    emit_error(f, msg)


@dataclass(frozen=True)
class TestCrashPass(ModulePass):
    """Crash (a bug, not a diagnostic) on a function named @crash; count functions otherwise."""

    name = "test-crash"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for f in op.walk():
            if isinstance(f, func.FuncOp):
                if f.sym_name.data == "crash":
                    raise ZeroDivisionError("division by zero in test-crash")
                f.attributes["test.seen"] = StringAttr("yes")


@dataclass(frozen=True)
class TestBreakIRPass(ModulePass):
    """Leave IR that does not verify: an arith.constant whose value type differs from its result."""

    name = "test-break-ir"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for f in op.walk():
            if isinstance(f, func.FuncOp):
                bad = arith.ConstantOp.create(
                    properties={"value": IntegerAttr(1, 64)}, result_types=[i32]
                )
                bad.location = f.location
                f.body.block.insert_op_before(bad, f.body.block.first_op)  # pyright: ignore
                return
