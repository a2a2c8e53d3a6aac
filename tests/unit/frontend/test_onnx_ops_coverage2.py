"""ONNX ops of the second operator-coverage round (issue 14), each against onnxruntime (or, for the
OnnxBackend specialization, the numpy formula): Resize, ConvTranspose, Einsum, TopK, ScatterND,
ScatterElements, OneHot, EyeLike, Hardmax, ReduceProd, InstanceNormalization, ... Each family has
an opset/attribute variant and an error case for illegal attributes."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from minimlir.frontend.onnx_backend import OnnxBackend
from minimlir.frontend.onnx_import import UnsupportedModelError, import_onnx

from test_onnx_ops_more import _model, _vi, check_against_ort

F, I64, I32, B, U8 = TensorProto.FLOAT, TensorProto.INT64, TensorProto.INT32, TensorProto.BOOL, TensorProto.UINT8

_rng = np.random.default_rng(1402)


def _f32(*shape):
    return _rng.standard_normal(shape).astype(np.float32)


def _unsupported(model: onnx.ModelProto, match: str) -> None:
    with pytest.raises(UnsupportedModelError, match=match):
        import_onnx(model)


# --------------------------------------------------------------------------------------------
# OnnxBackend: a run-time `axes` input that reaches an op inside an expanded function body


@pytest.mark.parametrize("op,fn", [("ReduceL1", lambda x, a: np.abs(x).sum(axis=a, keepdims=True)),
                                   ("ReduceSumSquare", lambda x, a: (x * x).sum(axis=a, keepdims=True))])
def test_backend_specializes_axes_of_an_expanded_function(op, fn):
    m = _model([helper.make_node(op, ["x", "axes"], ["y"], keepdims=1)],
               [_vi("x", F, [3, 4, 5]), _vi("axes", I64, [1])], [_vi("y", F, None)], 18)
    rep = OnnxBackend.prepare(m)
    assert rep.specialized_on == ["axes"]
    x = _f32(3, 4, 5)
    for axis in (1, 2):
        (y,) = rep.run([x, np.array([axis], np.int64)])
        np.testing.assert_allclose(y, fn(x, axis), rtol=1e-5)
