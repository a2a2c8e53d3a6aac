"""Shared by tests/unit/test_backend_*.py: parse func/arith/math/cf(+llvm) text and lower it.

    module = lower(TEXT)                       # convert-{arith,math,cf,func}-to-llvm
    cm = compile_module(module, cache=False)
"""

from xdsl.context import Context
from xdsl.dialects import get_all_dialects
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser

from minimlir.dialects import llvm_ext as _llvm_ext
from minimlir.passes.to_llvm.arith import ConvertArithToLlvmPass
from minimlir.passes.to_llvm.cf import ConvertCfToLlvmPass
from minimlir.passes.to_llvm.func import ConvertFuncToLlvmPass
from minimlir.passes.to_llvm.math import ConvertMathToLlvmPass


def context() -> Context:
    ctx = Context()
    for name, factory in get_all_dialects().items():
        ctx.register_dialect(name, factory)
    _llvm_ext.load_into(ctx)
    return ctx


def parse(text: str) -> ModuleOp:
    return Parser(context(), text).parse_module()


def lower(text: str, fast_math: bool = False) -> ModuleOp:
    ctx = context()
    module = Parser(ctx, text).parse_module()
    for p in (
        ConvertArithToLlvmPass(fast_math=fast_math),
        ConvertMathToLlvmPass(fast_math=fast_math),
        ConvertCfToLlvmPass(),
        ConvertFuncToLlvmPass(),
    ):
        p.apply(ctx, module)
    module.verify()
    return module
