"""The one xDSL context minimlir compiles in: every xDSL dialect (registered lazily) and ours."""

from __future__ import annotations

from xdsl.context import Context
from minimlir.compiler.discovery import our_dialects
from minimlir.dialects import llvm_ext  # noqa: F401


def make_context() -> Context:
    """A context with xDSL's dialects (lazily) and ours (minimlir.compiler.discovery)."""
    from xdsl.universe import Universe

    ctx = Context()
    for name, factory in Universe.get_multiverse().all_dialects.items():
        ctx.register_dialect(name, factory)
    for dialect in our_dialects():
        if dialect.name in ctx.registered_dialect_names:
            continue
        ctx.register_dialect(dialect.name, lambda d=dialect: d)
    return ctx
