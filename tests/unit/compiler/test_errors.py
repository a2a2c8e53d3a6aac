"""One error hierarchy: the frontend's, the JIT's and the runtime's CompileError are one class, so a
caller who catches it catches every compile failure; InputError is the runtime's ArgumentError."""

import numpy as np
import pytest

from minimlir.compiler.errors import CompileError, InputError, MinimlirError, NativeError


def test_old_names_are_the_same_classes():
    import minimlir.frontend as frontend
    from minimlir.backend import jit, runtime
    from minimlir.frontend import api, onnx_import

    assert frontend.CompileError is api.CompileError is jit.CompileError is runtime.CompileError is CompileError
    assert frontend.InputError is runtime.ArgumentError is InputError
    assert runtime.NativeError is NativeError
    for cls in (CompileError, InputError, NativeError, onnx_import.OnnxImportError,
                onnx_import.UnsupportedModelError):
        assert issubclass(cls, MinimlirError)
    assert issubclass(InputError, ValueError) and issubclass(NativeError, RuntimeError)


def test_one_except_catches_a_frontend_and_a_backend_compile_error():
    from minimlir.backend import jit
    from minimlir.frontend import compile

    with pytest.raises(CompileError, match=r":2:\d+: error: .*%y"):
        compile("func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {\n  func.return %y : tensor<2xf32>\n}\n",
                cache=False)
    with pytest.raises(CompileError, match="unresolved external function"):
        jit.check_symbol_names(["minimlir_no_such_symbol_anywhere"])


def test_input_error_is_raised_for_a_bad_argument():
    from minimlir.frontend import compile

    m = compile("func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {\n"
                "  %y = graph.relu %x : tensor<2xf32>\n  func.return %y : tensor<2xf32>\n}\n", cache=False)
    with pytest.raises(InputError):
        m(np.zeros(3, np.float32))
