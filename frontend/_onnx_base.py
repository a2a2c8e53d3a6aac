"""The part of minimlir.frontend.onnx_import that needs no `onnx` package: the importer's errors and its
element types. minimlir.frontend.api uses these on every compile (of `.mlir` too), so `import onnx`
(the largest import of a tool's start, ~0.5 s) waits until a model is ONNX. onnx_import re-exports all of
them: the very same objects.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import IntegerType, Signedness, f16, f32, f64
from xdsl.ir import Attribute

from minimlir.compiler.errors import MinimlirError

# ONNX element type (its TensorProto.DataType name) -> (NumPy dtype, xDSL element type)
DTYPES_BY_NAME: dict[str, tuple[np.dtype, Attribute]] = {
    "FLOAT": (np.dtype(np.float32), f32),
    "FLOAT16": (np.dtype(np.float16), f16),
    "DOUBLE": (np.dtype(np.float64), f64),
    "INT64": (np.dtype(np.int64), IntegerType(64)),
    "INT32": (np.dtype(np.int32), IntegerType(32)),
    "INT16": (np.dtype(np.int16), IntegerType(16)),
    "INT8": (np.dtype(np.int8), IntegerType(8)),
    "BOOL": (np.dtype(np.bool_), IntegerType(1)),
    # unsigned integers (uint8 images): `ui8` ... in the IR, unsigned compare/divide/extend in kernels
    "UINT8": (np.dtype(np.uint8), IntegerType(8, Signedness.UNSIGNED)),
    "UINT16": (np.dtype(np.uint16), IntegerType(16, Signedness.UNSIGNED)),
    "UINT32": (np.dtype(np.uint32), IntegerType(32, Signedness.UNSIGNED)),
    "UINT64": (np.dtype(np.uint64), IntegerType(64, Signedness.UNSIGNED)),
}


def numpy_dtype_of(elem: Attribute) -> np.dtype:
    for np_dtype, xdsl_type in DTYPES_BY_NAME.values():
        if xdsl_type == elem:
            return np_dtype
    raise Unsupported(f"element type {elem}")


# --------------------------------------------------------------------------------------------
# Errors


class OnnxImportError(MinimlirError):
    """The model is malformed (missing file, not ONNX, inconsistent shapes): a one-line message."""


class Unsupported(Exception):
    """Raised by an emitter: this node cannot be imported (the message is the reason)."""


@dataclass(frozen=True)
class Problem:
    op_type: str
    opset: int
    node: str
    reason: str


class UnsupportedModelError(MinimlirError):
    """The model uses ops, attributes or dtypes the importer does not support: all listed in `.problems`."""

    def __init__(self, problems: Sequence[Problem]):
        self.problems = list(problems)
        rows = sorted({(p.op_type, p.opset, p.reason) for p in self.problems})
        lines = [f"  {op} (opset {opset}): {reason}" for op, opset, reason in rows]
        super().__init__(
            f"unsupported model: {len(rows)} problem(s)\n" + "\n".join(lines)
        )


for _cls in (OnnxImportError, Unsupported, Problem, UnsupportedModelError):
    _cls.__module__ = "minimlir.frontend.onnx_import"  # where users import them from (reprs, pickles)
