"""The base of minimlir's one error hierarchy, free of xDSL so the artifact loader can raise it.

    MinimlirError
      InputError        a call's arguments do not fit the compiled signature (also a ValueError)
        DimCheckError   the inputs' dims break a symbolic constraint of the model
      NativeError       the native function returned a non-zero status (also a RuntimeError)
      LoadError         (minimlir.runtime) an artifact cannot be loaded
      CompileError      (minimlir.compiler.errors) the input does not parse, verify or lower

`minimlir.compiler.errors` re-exports these and adds `CompileError`.
"""

from __future__ import annotations


class MinimlirError(Exception):
    """Base of every error minimlir raises on purpose (a bug raises anything else)."""


class InputError(MinimlirError, ValueError):
    """An argument does not match the compiled signature (raised before native code runs; the
    message names the input)."""


class DimCheckError(InputError):
    """The inputs' dims break a symbolic constraint of the model (`graph.dim_checks`)."""


class NativeError(MinimlirError, RuntimeError):
    """The native function returned a non-zero status."""
