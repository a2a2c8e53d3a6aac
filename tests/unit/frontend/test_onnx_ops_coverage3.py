"""ONNX ops of the third operator-coverage round (issue 14), each against onnxruntime: RNN, GRU,
LSTM, QLinearMatMul, MatMulInteger, Col2Im, and float16 MatMul/Softmax accumulating in float32.
Each family has an opset/attribute variant and an error case for illegal attributes; shapes are
small and each model is compiled once (dynamic batch: two batch sizes from one compile)."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from minimlir.frontend.api import compile as mini_compile
from minimlir.frontend.onnx_import import UnsupportedModelError, import_onnx

from test_onnx_ops_more import _model, _vi, check_against_ort

F, F16, I32, I64, U8, I8 = (TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.INT32, TensorProto.INT64,
                            TensorProto.UINT8, TensorProto.INT8)

_rng = np.random.default_rng(1403)


def _f32(*shape, scale=1.0):
    return (_rng.standard_normal(shape) * scale).astype(np.float32)


def _unsupported(model: onnx.ModelProto, match: str) -> None:
    with pytest.raises(UnsupportedModelError, match=match):
        import_onnx(model)


# --------------------------------------------------------------------------------------------
# RNN / GRU / LSTM

_GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}


def _recurrent_model(op, opset, seq, inp, hidden, attrs, optional=(), layout=0, outputs=("Y", "Y_h")):
    """X, W, R (and the optional inputs named in `optional`: B, sequence_lens, initial_h,
    initial_c, P) as graph inputs, the batch dynamic."""
    dirs = 2 if attrs.get("direction") == "bidirectional" else 1
    g = _GATES[op]
    xs = [seq, "n", inp] if layout == 0 else ["n", seq, inp]
    state = [dirs, "n", hidden] if layout == 0 else ["n", dirs, hidden]
    shapes = {"B": [dirs, 2 * g * hidden], "sequence_lens": ["n"], "initial_h": state, "initial_c": state,
              "P": [dirs, 3 * hidden]}
    names = ["X", "W", "R", "B", "sequence_lens", "initial_h", "initial_c", "P"]
    ins = [_vi("X", F, xs), _vi("W", F, [dirs, g * hidden, inp]), _vi("R", F, [dirs, g * hidden, hidden])]
    node_ins = ["X", "W", "R"]
    for name in names[3:]:
        if name in optional:
            ins.append(_vi(name, I32 if name == "sequence_lens" else F, shapes[name]))
            node_ins.append(name)
        elif any(o in optional for o in names[names.index(name):]):
            node_ins.append("")
    if layout:
        attrs = {**attrs, "layout": 1}
    outs = [_vi(o, F, None) for o in outputs if o]
    node = helper.make_node(op, node_ins, list(outputs), hidden_size=hidden, **attrs)
    return _model([node], ins, outs, opset)


def _recurrent_feeds(op, batch, seq, inp, hidden, attrs, optional, layout=0):
    dirs = 2 if attrs.get("direction") == "bidirectional" else 1
    g = _GATES[op]
    feeds = {"X": _f32(seq, batch, inp) if layout == 0 else _f32(batch, seq, inp),
             "W": _f32(dirs, g * hidden, inp, scale=0.5), "R": _f32(dirs, g * hidden, hidden, scale=0.5)}
    state = (dirs, batch, hidden) if layout == 0 else (batch, dirs, hidden)
    gen = {"B": lambda: _f32(dirs, 2 * g * hidden, scale=0.3),
           "sequence_lens": lambda: _rng.integers(1, seq + 1, batch).astype(np.int32),
           "initial_h": lambda: _f32(*state), "initial_c": lambda: _f32(*state),
           "P": lambda: _f32(dirs, 3 * hidden, scale=0.3)}
    for name in ("B", "sequence_lens", "initial_h", "initial_c", "P"):
        if name in optional:
            feeds[name] = gen[name]()
    return feeds


@pytest.mark.parametrize("op,opset,attrs,optional,outputs", [
    # every optional input, both directions, clip, peepholes, input_forget, non-default
    # activations with alpha/beta; variable lengths
    ("LSTM", 7, {"direction": "bidirectional", "clip": 2.5, "input_forget": 1,
                 "activations": ["Sigmoid", "Softsign", "ScaledTanh"] * 2, "activation_alpha": [0.9, 0.8],
                 "activation_beta": [1.1, 1.2]},
     ("B", "sequence_lens", "initial_h", "initial_c", "P"), ("Y", "Y_h", "Y_c")),
    # reverse with sequence_lens (each batch's state starts at its own last step),
    # linear_before_reset, HardSigmoid's alpha/beta
    ("GRU", 14, {"direction": "reverse", "linear_before_reset": 1,
                 "activations": ["HardSigmoid", "Tanh"], "activation_alpha": [0.3], "activation_beta": [0.4]},
     ("B", "sequence_lens"), ("Y", "Y_h")),
    ("RNN", 22, {"activations": ["LeakyRelu"], "activation_alpha": [0.2]}, ("B", "initial_h"), ("", "Y_h")),
])
def test_recurrent_dynamic_batch(op, opset, attrs, optional, outputs):
    seq, inp, hidden = 2, 2, 3
    m = _recurrent_model(op, opset, seq, inp, hidden, attrs, optional, outputs=outputs)
    feeds = [_recurrent_feeds(op, b, seq, inp, hidden, attrs, optional) for b in (1, 3)]
    check_against_ort(m, feeds, graph_ops=("graph.matmul",), rtol=1e-5, atol=1e-6)


def test_recurrent_layout_1_is_layout_0_transposed():
    """layout=1 (batch first; onnxruntime's CPU provider refuses it): the same numbers as the
    layout-0 model run by onnxruntime on transposed inputs."""
    op, seq, inp, hidden, attrs, optional = "RNN", 2, 2, 3, {"direction": "bidirectional"}, ("B", "initial_h")
    m1 = _recurrent_model(op, 22, seq, inp, hidden, attrs, optional, layout=1, outputs=("Y", "Y_h"))
    m0 = _recurrent_model(op, 22, seq, inp, hidden, attrs, optional, layout=0, outputs=("Y", "Y_h"))
    compiled = mini_compile(m1, cache=False)
    sess = ort.InferenceSession(m0.SerializeToString(), providers=["CPUExecutionProvider"])
    for batch in (1, 2):
        f1 = _recurrent_feeds(op, batch, seq, inp, hidden, attrs, optional, layout=1)
        f0 = {**f1, "X": f1["X"].transpose(1, 0, 2), "initial_h": f1["initial_h"].transpose(1, 0, 2)}
        y, yh = sess.run(None, f0)
        out_y, out_yh = compiled(*f1.values())
        np.testing.assert_allclose(out_y, y.transpose(2, 0, 1, 3), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(out_yh, yh.transpose(1, 0, 2), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("attrs,match", [
    ({"direction": "sideways"}, "direction 'sideways'"),
    ({"activations": ["Gelu"]}, "activation 'Gelu'"),
    ({"clip": -1.0}, "clip must be > 0"),
])
def test_recurrent_illegal_attributes(attrs, match):
    _unsupported(_recurrent_model("RNN", 14, 2, 2, 2, attrs), match)


def test_recurrent_wrong_weight_shape_and_dynamic_sequence():
    m = _recurrent_model("GRU", 14, 2, 2, 3, {})
    m.graph.node[0].attribute[0].i = 4  # hidden_size 4 against weights of 3
    _unsupported(m, "do not match 1 direction")
    m = _recurrent_model("RNN", 14, 2, 2, 3, {})
    m.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "t"
    _unsupported(m, "dynamic sequence length")


# --------------------------------------------------------------------------------------------
# QLinearMatMul / MatMulInteger


def _qmm_model(opset, elem, a_shape, b_shape, b_scale_len=1, a_zp=True):
    inits = [helper.make_tensor("a_scale", F, [], [0.05]),
             helper.make_tensor("b_scale", F, [b_scale_len] if b_scale_len > 1 else [], [0.02 * (i + 1) for i in range(b_scale_len)]),
             helper.make_tensor("y_scale", F, [], [0.07]),
             helper.make_tensor("a_zp", elem, [], [3 if a_zp else 0]),
             helper.make_tensor("b_zp", elem, [b_scale_len] if b_scale_len > 1 else [], [1 + i for i in range(b_scale_len)]),
             helper.make_tensor("y_zp", elem, [], [5])]
    node = helper.make_node("QLinearMatMul", ["a", "a_scale", "a_zp", "b", "b_scale", "b_zp", "y_scale", "y_zp"], ["y"])
    return _model([node], [_vi("a", elem, a_shape), _vi("b", elem, b_shape)], [_vi("y", elem, None)], opset, inits)


def _ints(dtype, *shape):
    info = np.iinfo(dtype)
    return _rng.integers(info.min, info.max + 1, shape).astype(dtype)


@pytest.mark.parametrize("opset,elem,dtype,b_cols", [(10, U8, np.uint8, 1), (21, I8, np.int8, 3)])
def test_qlinear_matmul_saturates_like_onnxruntime(opset, elem, dtype, b_cols):
    """Random full-range 8-bit values: many results saturate at both ends; a per-column b scale
    and zero point (b_cols > 1); a dynamic batch dim."""
    m = _qmm_model(opset, elem, ["n", 2, 5], [5, 3], b_scale_len=b_cols)
    feeds = [{"a": _ints(dtype, b, 2, 5), "b": _ints(dtype, 5, 3)} for b in (1, 2)]
    check_against_ort(m, feeds, graph_ops=("graph.matmul", "graph.round", "graph.clip"))


def test_qlinear_matmul_illegal_scale_shape():
    m = _qmm_model(21, U8, [2, 5], [5, 3], b_scale_len=2)  # 2 scales for 3 columns
    _unsupported(m, "has shape \\[2\\]: it must be a scalar or one value per column of b")


def test_matmul_integer_per_column_zero_point():
    node = helper.make_node("MatMulInteger", ["a", "b", "azp", "bzp"], ["y"])
    inits = [helper.make_tensor("azp", U8, [], [250]), helper.make_tensor("bzp", U8, [3], [1, 7, 200])]
    m = _model([node], [_vi("a", U8, [4, 6]), _vi("b", U8, [6, 3])], [_vi("y", I32, None)], 10, inits)
    check_against_ort(m, [{"a": _ints(np.uint8, 4, 6), "b": _ints(np.uint8, 6, 3)}])


def test_matmul_integer_of_int16_is_unsupported():
    node = helper.make_node("MatMulInteger", ["a", "b"], ["y"])
    m = _model([node], [_vi("a", TensorProto.INT16, [2, 2]), _vi("b", TensorProto.INT16, [2, 2])],
               [_vi("y", I32, None)], 10)
    _unsupported(m, "A must be int8 or uint8")


# --------------------------------------------------------------------------------------------
# Col2Im


def _col2im_model(image, block, attrs, c=2):
    k = len(image)
    dil, strides = attrs.get("dilations", [1] * k), attrs.get("strides", [1] * k)
    pads = attrs.get("pads", [0] * 2 * k)
    counts = [(image[i] + pads[i] + pads[k + i] - (dil[i] * (block[i] - 1) + 1)) // max(strides[i], 1) + 1
              for i in range(k)]
    inits = [helper.make_tensor("image", I64, [k], image), helper.make_tensor("block", I64, [k], block)]
    node = helper.make_node("Col2Im", ["x", "image", "block"], ["y"], **attrs)
    shape = ["n", c * int(np.prod(block)), int(np.prod(counts))]
    return _model([node], [_vi("x", F, shape)], [_vi("y", F, None)], 18, inits), shape


@pytest.mark.parametrize("image,block,attrs", [
    ([5, 6], [2, 3], {"strides": [2, 1], "pads": [1, 0, 1, 2], "dilations": [2, 1]}),
    ([3, 4, 3], [2, 2, 2], {}),
])
def test_col2im_dynamic_batch(image, block, attrs):
    m, shape = _col2im_model(image, block, attrs)
    feeds = [{"x": _f32(b, *shape[1:])} for b in (1, 2)]
    check_against_ort(m, feeds, graph_ops=("graph.scatter_elements",), rtol=1e-6, atol=1e-6)


def test_col2im_illegal_attributes():
    _unsupported(_col2im_model([4, 4], [2, 2], {"strides": [0, 1]})[0], "strides must be >= 1")


# --------------------------------------------------------------------------------------------
# float16 MatMul / Softmax accumulate in float32


def test_float16_matmul_softmax_accumulate_in_float32():
    """A long float16 dot product (K = 256) and a softmax: onnxruntime accumulates in f32 and
    rounds once; so do we (one f16 rounding: within f16's 1e-3)."""
    nodes = [helper.make_node("MatMul", ["a", "b"], ["s"]), helper.make_node("Softmax", ["s"], ["y"], axis=-1)]
    m = _model(nodes, [_vi("a", F16, [3, 256]), _vi("b", F16, [256, 8])], [_vi("y", F16, None)], 13)
    a = _rng.standard_normal((3, 256)).astype(np.float16) * np.float16(0.1)
    b = _rng.standard_normal((256, 8)).astype(np.float16)
    check_against_ort(m, [{"a": a, "b": b}], graph_ops=("graph.cast",), rtol=1e-3, atol=1e-4)


# --------------------------------------------------------------------------------------------
# GridSample


def _grid_model(opset, attrs, x_shape, grid_shape):
    node = helper.make_node("GridSample", ["x", "grid"], ["y"], **attrs)
    return _model([node], [_vi("x", F, x_shape), _vi("grid", F, grid_shape)], [_vi("y", F, None)], opset)


@pytest.mark.parametrize("opset,attrs,x_shape,grid_shape", [
    (16, {"mode": "bicubic", "padding_mode": "reflection"}, [3, 4], [2, 3]),
    (22, {"mode": "nearest", "padding_mode": "zeros", "align_corners": 1}, [3, 4], [2, 3]),
    (20, {"mode": "linear", "padding_mode": "border", "align_corners": 1}, [2, 3, 2], [2, 2, 2]),
])
def test_grid_sample_dynamic_batch(opset, attrs, x_shape, grid_shape):
    """Grid points up to 1.6x outside [-1, 1]: every padding mode's out-of-range rule is used."""
    k = len(x_shape)
    m = _grid_model(opset, attrs, ["n", 2, *x_shape], ["n", *grid_shape, k])
    feeds = [{"x": _f32(b, 2, *x_shape), "grid": _rng.uniform(-1.6, 1.6, (b, *grid_shape, k)).astype(np.float32)}
             for b in (1, 2)]
    check_against_ort(m, feeds, graph_ops=("graph.gather_elements",), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("opset,attrs,match", [
    (16, {"mode": "linear"}, "mode 'linear' is not one of bilinear"),
    (20, {"padding_mode": "wrap"}, "padding_mode 'wrap'"),
])
def test_grid_sample_illegal_attributes(opset, attrs, match):
    _unsupported(_grid_model(opset, attrs, [1, 1, 3, 3], [1, 2, 2, 2]), match)


# --------------------------------------------------------------------------------------------
# AffineGrid


def _affine_model(size, attrs):
    k = len(size) - 2
    node = helper.make_node("AffineGrid", ["theta", "size"], ["grid"], **attrs)
    inits = [helper.make_tensor("size", I64, [len(size)], size)]
    return _model([node], [_vi("theta", F, [size[0], k, k + 1])], [_vi("grid", F, None)], 20, inits)


@pytest.mark.parametrize("size,attrs", [([2, 3, 4, 5], {}), ([1, 1, 2, 3, 4], {"align_corners": 1})])
def test_affine_grid(size, attrs):
    k = len(size) - 2
    check_against_ort(_affine_model(size, attrs), [{"theta": _f32(size[0], k, k + 1)}], rtol=1e-5, atol=1e-6)


def test_affine_grid_illegal():
    _unsupported(_affine_model([1, 1, 2, 2], {"align_corners": 2}), "align_corners must be 0 or 1")
    m = _affine_model([1, 1, 2, 2], {})
    m.graph.input[0].type.tensor_type.shape.dim[2].dim_value = 4  # theta [1, 2, 4]
    _unsupported(m, "theta has shape \\[1, 2, 4\\]")
