"""The one error hierarchy. Every error minimlir raises on purpose is a `MinimlirError`:

    MinimlirError
      CompileError      the input does not parse, verify, lower or become native code
                        (`str(e)`: `file:line:col: error: …`, one or more lines; `.pass_name` when a
                        pass failed). Also a DiagnosticException, as xDSL's own errors are.
      InputError        a call's arguments do not fit the compiled signature (also a ValueError)
        DimCheckError   the inputs' dims break a symbolic constraint of the model
      NativeError       the native function returned a non-zero status (also a RuntimeError)
      LoadError         (minimlir.runtime) a compiled artifact cannot be loaded
      OnnxImportError / UnsupportedModelError   (minimlir.frontend.onnx_import) a model the importer
                        cannot read / does not support

The old names are these classes: `minimlir.frontend.CompileError`, `minimlir.backend.jit.CompileError`
and `minimlir.backend.runtime.CompileError` are `CompileError`; `minimlir.backend.runtime.ArgumentError`
is `InputError`. The classes other than `CompileError` live in `minimlir.runtime.errors`, which the
artifact loader (numpy + ctypes, no xDSL) raises too.
"""

from __future__ import annotations

from xdsl.utils.exceptions import DiagnosticException

from minimlir.runtime.errors import DimCheckError, InputError, MinimlirError, NativeError

__all__ = ["CompileError", "DimCheckError", "InputError", "MinimlirError", "NativeError", "error_text"]


class CompileError(MinimlirError, DiagnosticException):
    """The IR does not parse, verify, lower or compile: `str(e)` is `file:line:col: error: ...`."""

    pass_name: str | None = None


def error_text(e: BaseException) -> str:
    """`e` as one `error: …` diagnostic text: its message, prefixed with `error: ` unless it already
    names a severity (located errors do: `f.mlir:3:5: error: …`)."""
    text = str(e).strip() or type(e).__name__
    return text if "error:" in text.splitlines()[0] else f"error: {text}"
