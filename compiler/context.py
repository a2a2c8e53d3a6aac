"""The one xDSL context minimlir compiles in: every xDSL dialect and ours, each registered by name and
loaded (imported) when the input first uses it.

Two of xDSL's dialects are loaded with our fixes applied first: `llvm` with the ops of
minimlir.dialects.llvm_ext, `arith` with the vector compare/select fixes of
minimlir.dialects._xdsl_compat. The dense-literal parser fix applies to every context.
"""

from __future__ import annotations

from xdsl.context import Context
from xdsl.ir import Dialect

import minimlir.dialects._xdsl_compat_dense  # noqa: F401  (hex float literals: any dialect's dense attrs)
from minimlir.compiler.discovery import our_dialect_factories, xdsl_universe


def _llvm() -> Dialect:
    from minimlir.dialects import llvm_ext

    return llvm_ext.llvm.LLVM


def _arith() -> Dialect:
    import minimlir.dialects._xdsl_compat  # noqa: F401
    from xdsl.dialects.arith import Arith

    return Arith


_PATCHED = {"llvm": _llvm, "arith": _arith}


def register_dialects(ctx: Context) -> None:
    """Register (not load) xDSL's dialects and ours in `ctx`; ours do not replace one of xDSL's."""
    for name, factory in xdsl_universe().all_dialects.items():
        if name not in ctx.registered_dialect_names:
            ctx.register_dialect(name, _PATCHED.get(name, factory))
    for name, factory in our_dialect_factories().items():
        if name not in ctx.registered_dialect_names:
            ctx.register_dialect(name, factory)


def make_context() -> Context:
    """A context with xDSL's dialects and ours (minimlir.compiler.discovery), loaded when first used."""
    ctx = Context()
    register_dialects(ctx)
    return ctx
