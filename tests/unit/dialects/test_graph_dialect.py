"""graph dialect: shape helpers, builders (result-type inference) and verifiers."""

import numpy as np
import pytest
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    DenseIntOrFPElementsAttr,
    IndexType,
    IntegerType,
    TensorType,
    f16,
    f32,
    i1,
    i64,
)
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.test_value import create_ssa_value

from minimlir.dialects import graph as g
from minimlir.dialects.graph import (
    DYNAMIC,
    ShapeError,
    broadcast_shapes,
    conv2d_output_shape,
    matmul_result_shape,
    normalize_slice,
    pool2d_output_shape,
    slice_result_dim,
)

Q = DYNAMIC  # a `?` dim


def t(*shape, elt=f32):
    return TensorType(elt, list(shape))


def val(*shape, elt=f32):
    return create_ssa_value(t(*shape, elt=elt))


# ---------------------------------------------------------------- shape helpers


def test_dynamic_is_xdsl_dynamic_index():
    # xDSL 0.74 spells `?` as -(2**63), not -1: TensorType(f32, [-1]) would print `tensor<-1xf32>`.
    assert DYNAMIC == DYNAMIC_INDEX
    assert str(t(Q, 4)) == "tensor<?x4xf32>"


@pytest.mark.parametrize(
    "shapes, expected",
    [
        (([2, 3], [3]), [2, 3]),
        (([2, 1], [1, 3]), [2, 3]),
        (([], [4]), [4]),
        (([5, 1, 4], [3, 1]), [5, 3, 4]),
        (([Q, 3], [3]), [Q, 3]),
        (([Q, 1], [1, Q]), [Q, Q]),
        (([Q], [1]), [Q]),
        (([Q], [4]), [4]),  # `?` must be 1 or 4 at run time: the result is 4
        (([-1, 4], [2, 1]), [2, 4]),  # -1 is accepted as dynamic on input
        (([-1], [1]), [DYNAMIC]),  # and comes back as DYNAMIC_INDEX
        (([2, 3], [1, 3], [2, 1]), [2, 3]),
    ],
)
def test_broadcast_shapes(shapes, expected):
    assert broadcast_shapes(*shapes) == expected


def test_broadcast_shapes_names_the_clashing_dims():
    with pytest.raises(ShapeError) as e:
        broadcast_shapes([2, 3], [4])
    assert str(e.value) == (
        "shapes 2x3 and 4 are not broadcast-compatible: dim 1 of shape 0 (3) vs dim 0 of shape 1 (4)"
    )
    with pytest.raises(ShapeError, match=r"dim 0 of a \(5\) vs dim 1 of b \(6\)"):
        broadcast_shapes([5, Q], [Q, 6, 1], names=["a", "b"])


@pytest.mark.parametrize(
    "a, b, expected",
    [
        ([2, 3], [3, 4], [2, 4]),
        ([Q, 3], [3, 4], [Q, 4]),
        ([2, Q], [3, 4], [2, 4]),  # `?` contraction dim is compatible
        ([3], [3, 4], [4]),
        ([2, 3], [3], [2]),
        ([3], [3], []),
        ([7, 1, 2, 3], [5, 3, 4], [7, 5, 2, 4]),
        ([Q, 2, 3], [3, 4], [Q, 2, 4]),
        ([3], [6, 3, 4], [6, 4]),
        ([6, 2, 3], [3], [6, 2]),
    ],
)
def test_matmul_result_shape_matches_numpy_rules(a, b, expected):
    assert matmul_result_shape(a, b) == expected
    if all(d >= 0 for d in (*a, *b)):
        assert list(np.matmul(np.zeros(a), np.zeros(b)).shape) == expected


def test_matmul_result_shape_rejects_contraction_clash():
    with pytest.raises(ShapeError, match=r"lhs dim 1 \(3\) vs rhs dim 0 \(4\)"):
        matmul_result_shape([2, 3], [4, 5])
    with pytest.raises(ShapeError, match="rank >= 1"):
        matmul_result_shape([], [4])


def test_conv2d_output_shape():
    assert conv2d_output_shape([1, 3, 224, 224], [64, 3, 7, 7], (2, 2), (3, 3, 3, 3)) == [1, 64, 112, 112]
    assert conv2d_output_shape([Q, 3, 8, 10], [4, 3, 3, 3], (1, 2), (1, 0, 1, 0)) == [Q, 4, 8, 4]
    assert conv2d_output_shape([1, 3, Q, 9], [4, 3, 3, 3], dilations=(2, 2)) == [1, 4, Q, 5]
    with pytest.raises(ShapeError, match="window extent 5 is larger than the padded input 4"):
        conv2d_output_shape([1, 3, 4, 4], [4, 3, 3, 3], dilations=(2, 2))


def test_pool2d_output_shape_floor_and_ceil():
    assert pool2d_output_shape([1, 8, 7, 7], (2, 2), (2, 2)) == [1, 8, 3, 3]
    assert pool2d_output_shape([1, 8, 7, 7], (2, 2), (2, 2), ceil_mode=True) == [1, 8, 4, 4]
    # ceil mode drops a last window that would start inside the end padding
    assert pool2d_output_shape([1, 1, 5, 5], (2, 2), (2, 2), (1, 1, 1, 1), ceil_mode=True) == [1, 1, 3, 3]
    assert pool2d_output_shape([Q, 8, Q, 7], (3, 3), (2, 2), (1, 1, 1, 1)) == [Q, 8, Q, 4]


@pytest.mark.parametrize(
    "size, kernel, stride, pad, ceil, dilation",
    [(5, 2, 2, 1, 1, 1), (7, 2, 2, 0, 1, 1), (8, 3, 3, 1, 1, 1), (9, 2, 2, 1, 1, 2),
     (10, 3, 4, 1, 1, 1), (7, 3, 2, 1, 0, 1)],
)
def test_pool2d_output_shape_agrees_with_onnxruntime(size, kernel, stride, pad, ceil, dilation):
    # ONNX's own shape inference does not drop the window that starts in the padding; ORT does.
    ort = pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper

    node = helper.make_node(
        "MaxPool", ["x"], ["y"], kernel_shape=[kernel] * 2, strides=[stride] * 2,
        pads=[pad] * 4, ceil_mode=ceil, dilations=[dilation] * 2,
    )
    graph = helper.make_graph(
        [node], "pool", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, size, size])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=9)
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    (y,) = sess.run(None, {"x": np.zeros((1, 1, size, size), np.float32)})
    expected = pool2d_output_shape(
        [1, 1, size, size], [kernel] * 2, [stride] * 2, [pad] * 4, [dilation] * 2, bool(ceil)
    )
    assert list(y.shape) == expected


@pytest.mark.parametrize(
    "size, start, end, step",
    [(8, 0, 2**63 - 1, 1), (8, -3, -1, 1), (8, 7, -(2**63), -1), (8, -1, 2, -2), (8, 10, 3, -1),
     (5, 1, 100, 3), (5, 3, 1, 1)],
)
def test_normalize_slice_and_slice_result_dim_match_python_slicing(size, start, end, step):
    b, e = normalize_slice(size, start, end, step)
    # Python slicing with clamped ONNX bounds; a normalized end of -1 means "before index 0".
    expected = len(range(size)[b : (None if e == -1 else e) : step])
    assert slice_result_dim(size, b, e, step) == expected
    assert slice_result_dim(Q, start, end, step) == DYNAMIC


# ---------------------------------------------------------------- builders


def test_binary_builders_broadcast_and_keep_element_type():
    add = g.AddOp(val(Q, 3), val(3))
    add.verify()
    assert add.result.type == t(Q, 3)
    mul = g.MulOp(val(Q, 1), val(1, Q))
    assert mul.result.type == t(Q, Q)
    sub = g.SubOp(val(2, 3, elt=i64), val(elt=i64))
    assert sub.result.type == t(2, 3, elt=i64)
    mod = g.ModOp(val(4), val(4), fmod=True)
    mod.verify()
    assert mod.fmod and not g.ModOp(val(4, elt=i64), val(4, elt=i64)).fmod


def test_comparison_builders_give_i1():
    for cls in (g.EqOp, g.LtOp, g.LeOp, g.GtOp, g.GeOp):
        op = cls(val(Q, 3), val(3))
        op.verify()
        assert op.result.type == t(Q, 3, elt=i1)


def test_binary_builder_rejects_non_broadcastable_shapes():
    with pytest.raises(
        VerifyException, match=r"not broadcast-compatible: dim 1 of lhs \(3\) vs dim 0 of rhs \(4\)"
    ):
        g.AddOp(val(2, 3), val(4))


def test_add_verifier_rejects_clash_in_explicit_result_type():
    a, b = val(2, 3), val(4)
    op = g.AddOp(a, b, result_type=t(2, 3))
    with pytest.raises(VerifyException, match="shapes 2x3 and 4 are not broadcast-compatible"):
        op.verify()


def test_result_shape_check_is_dynamic_aware():
    g.AddOp(val(Q, 3), val(3), result_type=t(5, 3)).verify()  # refining ? to 5 is fine
    g.AddOp(val(2, 3), val(3), result_type=t(Q, 3)).verify()  # and so is forgetting it
    with pytest.raises(VerifyException, match="result shape 2x4 does not match the inferred shape 2x3"):
        g.AddOp(val(2, 3), val(3), result_type=t(2, 4)).verify()


def test_minus_one_dims_are_rejected():
    x = create_ssa_value(TensorType(f32, [-1, 4]))
    with pytest.raises(VerifyException, match="invalid dim -1 .* use DYNAMIC_INDEX"):
        g.ReluOp(x).verify()


def test_unary_builders_keep_type_and_store_params():
    x = val(Q, 4)
    for cls in (g.ReluOp, g.SigmoidOp, g.TanhOp, g.ExpOp, g.LogOp, g.SqrtOp, g.RsqrtOp, g.ErfOp,
                g.NegOp, g.AbsOp, g.FloorOp, g.CeilOp, g.SignOp, g.ReciprocalOp, g.SoftplusOp,
                g.HardSwishOp):
        op = cls(x)
        op.verify()
        assert op.result.type == x.type
    g.NotOp(val(4, elt=i1)).verify()
    assert g.GeluOp(x, approximate="tanh").approximate.data == "tanh"
    assert g.GeluOp(x).approximate.data == "none"
    clip = g.ClipOp(x, min=0.0)
    assert clip.min.value.data == 0.0 and clip.max is None
    assert g.EluOp(x, alpha=0.5).alpha.value.data == 0.5
    selu = g.SeluOp(x)
    assert selu.alpha.value.data == pytest.approx(1.6732632)
    assert selu.gamma.value.data == pytest.approx(1.0507010)
    hs = g.HardSigmoidOp(x, alpha=0.1, beta=0.6)
    assert (hs.alpha.value.data, hs.beta.value.data) == (0.1, 0.6)
    assert g.LeakyReluOp(x).alpha.value.data == 0.01


def test_float_only_unary_rejects_integers():
    with pytest.raises(VerifyException, match="input element type must be a float type, got i32"):
        g.ExpOp(val(4, elt=IntegerType(32))).verify()


def test_matmul_builder():
    op = g.MatMulOp(val(Q, 2, 3), val(3, 4))
    op.verify()
    assert op.result.type == t(Q, 2, 4)
    assert g.MatMulOp(val(3), val(3)).result.type == t()


def test_conv2d_builder_and_channel_checks():
    x, w, b = val(Q, 3, 224, 224), val(64, 3, 7, 7), val(64)
    op = g.Conv2dOp(x, w, b, strides=(2, 2), pads=(3, 3, 3, 3))
    op.verify()
    assert op.result.type == t(Q, 64, 112, 112)
    assert op.strides.get_values() == (2, 2) and op.group.value.data == 1
    dw = g.Conv2dOp(val(1, 32, Q, Q), val(32, 1, 3, 3), pads=(1, 1, 1, 1), group=32)
    dw.verify()
    assert dw.result.type == t(1, 32, Q, Q)
    with pytest.raises(VerifyException, match=r"input channels \(6\) must equal weight dim 1 \(3\)"):
        g.Conv2dOp(val(1, 6, 8, 8), val(4, 3, 3, 3)).verify()
    with pytest.raises(VerifyException, match=r"bias shape 5 must be \(4\)"):
        g.Conv2dOp(val(1, 3, 8, 8), val(4, 3, 3, 3), val(5)).verify()


def test_pool_builders():
    x = val(Q, 8, 7, 7)
    mp = g.MaxPool2dOp(x, (2, 2), strides=(2, 2), ceil_mode=True)
    mp.verify()
    assert mp.result.type == t(Q, 8, 4, 4) and mp.ceil_mode
    ap = g.AvgPool2dOp(x, (3, 3), pads=(1, 1, 1, 1), count_include_pad=True)
    ap.verify()
    assert ap.result.type == t(Q, 8, 7, 7) and ap.count_include_pad and not ap.ceil_mode
    for cls in (g.GlobalAvgPoolOp, g.GlobalMaxPoolOp):
        op = cls(val(Q, 8, 5, 5, 5))
        op.verify()
        assert op.result.type == t(Q, 8, 1, 1, 1)


def test_normalization_builders_normalize_axis():
    x = val(Q, Q, 16)
    sm = g.SoftmaxOp(x, axis=-1)
    sm.verify()
    assert sm.axis.value.data == 2 and sm.result.type == x.type
    g.LogSoftmaxOp(x, 0).verify()
    ln = g.LayerNormOp(x, val(16), val(16), axis=-1, epsilon=1e-6)
    ln.verify()
    assert ln.axis.value.data == 2 and ln.epsilon.value.data == 1e-6
    g.LayerNormOp(x, val(16)).verify()
    c = val(8)
    g.BatchNormOp(val(Q, 8, 4, 4), c, c, c, c).verify()
    g.LRNOp(val(1, 8, 4, 4), size=5).verify()


def test_reduce_builders():
    x = val(Q, 4, 5)
    op = g.ReduceSumOp(x, [-1, 1], keepdims=False)
    op.verify()
    assert op.axes.get_values() == (1, 2) and not op.keepdims
    assert op.result.type == t(Q)
    assert g.ReduceMeanOp(x, [0]).result.type == t(1, 4, 5)
    assert g.ReduceMaxOp(x, [2]).result.type == t(Q, 4, 1)
    assert g.ReduceMinOp(x, []).result.type == x.type
    am = g.ArgMaxOp(x, -2, keepdims=False, select_last_index=True)
    am.verify()
    assert am.result.type == t(Q, 5, elt=i64) and am.select_last_index


def test_reshape_and_broadcast_to_take_one_dim_per_question_mark():
    n = create_ssa_value(IndexType())
    x = val(Q, 4)
    r = g.ReshapeOp(x, t(Q, 2, 2), dims=[n])
    r.verify()
    assert list(r.dims) == [n]
    with pytest.raises(VerifyException, match="expected 1 dims operand"):
        g.ReshapeOp(x, t(Q, 2, 2)).verify()
    g.ReshapeOp(val(2, 6), t(3, 4)).verify()
    with pytest.raises(VerifyException, match="element count mismatch"):
        g.ReshapeOp(val(2, 6), t(5, 2)).verify()
    g.BroadcastToOp(val(1, 4), t(Q, 4), dims=[n]).verify()
    with pytest.raises(VerifyException, match="does not broadcast to"):
        g.BroadcastToOp(val(2, 4), t(3, 4)).verify()


def test_layout_builders():
    tr = g.TransposeOp(val(Q, 3, 4), [2, 0, 1])
    tr.verify()
    assert tr.result.type == t(4, Q, 3) and tr.perm.get_values() == (2, 0, 1)
    cat = g.ConcatOp([val(2, 3), val(Q, 3), val(4, 3)], axis=-2)
    cat.verify()
    assert cat.result.type == t(Q, 3) and cat.axis.value.data == 0
    assert g.ConcatOp([val(2, 3), val(2, 5)], 1).result.type == t(2, 8)
    tile = g.TileOp(val(Q, 3), [2, 3])
    tile.verify()
    assert tile.result.type == t(Q, 9)
    pad = g.PadOp(val(2, Q), [1, 0, 1, 2], mode="edge")
    pad.verify()
    assert pad.result.type == t(4, Q) and pad.mode.data == "edge"
    tri = g.TriluOp(val(3, 3), upper=False, k=-1)
    tri.verify()
    assert not tri.upper and tri.k.value.data == -1


def test_slice_split_gather_builders():
    x = val(Q, 8)
    sl = g.SliceOp(x, [0, 7], [2**63 - 1, -1], [1, -2])
    sl.verify()
    assert sl.result.type == t(Q, 4)
    assert g.SliceOp(val(6), [1], [5]).result.type == t(4)  # steps default to 1
    sp = g.SplitOp(x, -1, [3, 5])
    sp.verify()
    assert [r.type for r in sp.results] == [t(Q, 3), t(Q, 5)]
    dyn = g.SplitOp(x, 0, [-1, -1])
    dyn.verify()
    assert [r.type for r in dyn.results] == [t(Q, 8), t(Q, 8)]
    ga = g.GatherOp(x, val(2, 3, elt=IntegerType(32)), axis=1)
    ga.verify()
    assert ga.result.type == t(Q, 2, 3)
    with pytest.raises(VerifyException, match="indices element type must be i64 or i32, got f32"):
        g.GatherOp(x, val(3)).verify()


def test_where_cast_and_shape_builders():
    w = g.WhereOp(val(Q, 1, elt=i1), val(4), val())
    w.verify()
    assert w.result.type == t(Q, 4)
    c = g.CastOp(val(Q, 3), f16)
    c.verify()
    assert c.result.type == t(Q, 3, elt=f16)
    s = g.ShapeOp(val(Q, 3, 2))
    s.verify()
    assert s.result.type == t(3, elt=i64)
    d = g.DimOp(val(Q, 3), 0)
    d.verify()
    assert d.result.type == IndexType() and d.index.value.data == 0
    n = create_ssa_value(IndexType())
    fd = g.FromDimsOp([n, n, n])
    fd.verify()
    assert fd.result.type == t(3, elt=i64)
    r = g.RangeOp(val(elt=i64), val(elt=i64), val(elt=i64))
    r.verify()
    assert r.result.type == t(Q, elt=i64)


def test_param_constant_and_call_kernel():
    p = g.ParamOp("fc.weight", t(4, 8))
    p.verify()
    assert p.param_name.data == "fc.weight" and p.result.type == t(4, 8)
    c = g.ConstantOp(DenseIntOrFPElementsAttr.from_list(t(2, elt=i64), [3, -1]))
    c.verify()
    assert c.result.type == t(2, elt=i64)
    n = create_ssa_value(IndexType())
    k = g.CallKernelOp("k", [val(Q, 4), val(4)], [t(Q, 4), t(Q)], dims=[n, n])
    k.verify()
    assert k.callee.root_reference.data == "k" and len(k.results) == 2
    with pytest.raises(VerifyException, match="expected 2 dims operand"):
        g.CallKernelOp("k", [val(Q, 4)], [t(Q, 4), t(Q)], dims=[n]).verify()


def test_every_op_has_a_one_line_docstring_and_a_custom_syntax():
    for op in g.Graph.operations:
        assert op.__doc__ and op.__doc__.strip().splitlines()[0].endswith("."), op.name
        has_format = op.get_irdl_definition().assembly_format is not None
        assert has_format or "parse" in vars(op) or any(
            "parse" in vars(base) for base in op.__mro__[1:] if base.__module__ == g.__name__
        ), op.name
