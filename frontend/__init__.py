"""Frontends: ONNX import into the graph dialect, and the user-facing entry point.

    from minimlir.frontend import compile
    m = compile("model.onnx")
    (y,) = m(x)
"""

from minimlir.passes import _moved as _moved  # old module names (minimlir.frontend.params, …) keep importing

from minimlir.frontend.api import (
    CompiledModel,
    CompileError,
    InputError,
    OnnxImportError,
    TensorSpec,
    UnsupportedModelError,
    compile,
)
from minimlir.backend.checks import CheckError


__all__ = [
    "CheckError",
    "CompiledModel",
    "CompileError",
    "InputError",
    "OnnxImportError",
    "TensorSpec",
    "UnsupportedModelError",
    "compile",
]
