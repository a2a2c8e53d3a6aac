"""ONNX importer: emitted graph ops and types for small onnx.helper models."""

import io

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh
from xdsl.context import Context
from xdsl.dialects.builtin import DYNAMIC_INDEX, ModuleOp, NameLoc
from xdsl.parser import Parser
from xdsl.printer import Printer

from minimlir.dialects import graph
from minimlir.frontend.onnx_import import (
    OnnxImportError,
    UnsupportedModelError,
    check_support,
    import_onnx,
)

Q = DYNAMIC_INDEX


def model(nodes, inputs, outputs, inits=(), opset=17):
    g = h.make_graph(nodes, "g", inputs, outputs, list(inits))
    return h.make_model(g, opset_imports=[h.make_opsetid("", opset)], ir_version=8)


def vi(name, dtype, shape):
    return h.make_tensor_value_info(name, dtype, shape)


def init(name, array):
    return nh.from_array(np.asarray(array), name)


def fn_of(module: ModuleOp):
    return module.body.block.first_op


def ops_of(module: ModuleOp, cls=None):
    ops = [op for op in fn_of(module).body.block.ops]
    return [op for op in ops if cls is None or isinstance(op, cls)]


def names(module: ModuleOp):
    return [op.name for op in fn_of(module).body.block.ops]


def result_shape(module: ModuleOp, i=0):
    return list(fn_of(module).function_type.outputs.data[i].get_shape())


def printed(module: ModuleOp, debuginfo=False) -> str:
    s = io.StringIO()
    Printer(stream=s, print_debuginfo=debuginfo).print_op(module)
    return s.getvalue()


def conv_add_relu(batch="batch"):
    rng = np.random.RandomState(0)
    nodes = [
        h.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        h.make_node("Add", ["c", "bias2"], ["a"], name="add"),
        h.make_node("Relu", ["a"], ["y"], name="relu"),
    ]
    inits = [
        init("w", rng.randn(4, 3, 3, 3).astype(np.float32)),
        init("b", np.zeros(4, np.float32)),
        init("bias2", rng.randn(4, 1, 1).astype(np.float32)),
    ]
    return model(nodes, [vi("x", T.FLOAT, [batch, 3, 8, 8])], [vi("y", T.FLOAT, None)], inits)


def test_conv_add_relu_ops_types_and_params():
    module, params = import_onnx(conv_add_relu())
    # the per-channel Add after the Conv is folded into the conv's bias at import
    assert names(module) == ["graph.param", "graph.constant", "graph.conv2d", "graph.relu", "func.return"]
    conv = ops_of(module, graph.Conv2dOp)[0]
    assert list(conv.pads.get_values()) == [1, 1, 1, 1]
    assert list(conv.result.type.get_shape()) == [Q, 4, 8, 8]
    assert result_shape(module) == [Q, 4, 8, 8]
    # 108 elements -> a param; 4 elements -> a constant
    assert set(params) == {"w.folded"} and params["w.folded"].shape == (4, 3, 3, 3)
    assert ops_of(module, graph.ParamOp)[0].param_name.data == "w.folded"


def test_embed_weights_inlines_everything():
    module, params = import_onnx(conv_add_relu(), embed_weights=True)
    assert params == {}
    assert not ops_of(module, graph.ParamOp)
    assert len(ops_of(module, graph.ConstantOp)) == 2  # weight and bias (the Add is folded into it)


def test_dim_names_on_arguments():
    module, _ = import_onnx(conv_add_relu())
    arg_attrs = fn_of(module).arg_attrs.data[0].data
    assert [a.data for a in arg_attrs["graph.dim_names"].data] == ["batch", "", "", ""]
    assert arg_attrs["graph.name"].data == "x"
    text = printed(module)
    assert "tensor<?x3x8x8xf32>" in text and 'graph.dim_names = ["batch", "", "", ""]' in text


def test_locations_name_the_node_and_round_trip():
    module, _ = import_onnx(conv_add_relu())
    conv = ops_of(module, graph.Conv2dOp)[0]
    assert isinstance(conv.location, NameLoc) and conv.location.desc.data == "conv"
    text = printed(module, debuginfo=True)
    assert 'loc("conv"("g.onnx":1:0))' in text
    assert 'loc("relu"("g.onnx":3:0))' in text
    ctx = Context(allow_unregistered=True)
    from minimlir.tools.mini_opt import our_dialects
    from xdsl.dialects.builtin import Builtin
    from xdsl.dialects.func import Func
    from xdsl.dialects.arith import Arith

    for d in [Builtin, Func, Arith, *our_dialects()]:
        ctx.load_dialect(d)
    reparsed = Parser(ctx, text).parse_module()
    assert printed(reparsed, debuginfo=True) == text


def shape_chain_model(batch):
    """y = Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 0)), [-1]))."""
    nodes = [
        h.make_node("Shape", ["x"], ["s"]),
        h.make_node("Gather", ["s", "zero"], ["n"], axis=0),
        h.make_node("Unsqueeze", ["n", "ax0"], ["n1"]),
        h.make_node("Concat", ["n1", "m1"], ["shape"], axis=0),
        h.make_node("Reshape", ["x", "shape"], ["y"]),
    ]
    inits = [init("zero", np.array(0, np.int64)), init("ax0", np.array([0], np.int64)), init("m1", np.array([-1], np.int64))]
    return model(nodes, [vi("x", T.FLOAT, [batch, 3, 4])], [vi("y", T.FLOAT, None)], inits)


def test_shape_chain_folds_when_static():
    module, _ = import_onnx(shape_chain_model(2))
    assert names(module) == ["graph.reshape", "func.return"]
    assert result_shape(module) == [2, 12]


def test_shape_chain_dynamic_uses_dim_and_index_operands():
    module, _ = import_onnx(shape_chain_model("batch"))
    assert names(module) == ["graph.dim", "graph.reshape", "func.return"]
    reshape = ops_of(module, graph.ReshapeOp)[0]
    dim = ops_of(module, graph.DimOp)[0]
    assert list(reshape.dims) == [dim.result]
    assert result_shape(module) == [Q, 12]


def test_shape_used_as_data_becomes_graph_shape():
    nodes = [h.make_node("Shape", ["x"], ["s"]), h.make_node("Cast", ["s"], ["y"], to=T.FLOAT)]
    module, _ = import_onnx(model(nodes, [vi("x", T.FLOAT, ["n", 3])], [vi("y", T.FLOAT, None)]))
    assert names(module) == ["graph.shape", "graph.cast", "func.return"]
    assert result_shape(module) == [2]


def test_dynamic_flatten_multiplies_dims():
    nodes = [h.make_node("Flatten", ["x"], ["y"], axis=2)]
    module, _ = import_onnx(model(nodes, [vi("x", T.FLOAT, ["n", "m", 4, 5])], [vi("y", T.FLOAT, None)]))
    assert names(module) == ["graph.dim", "graph.dim", "arith.muli", "graph.reshape", "func.return"]
    assert result_shape(module) == [Q, 20]


def test_constant_of_shape_dynamic_broadcasts_a_scalar():
    nodes = [
        h.make_node("Shape", ["x"], ["s"]),
        h.make_node("ConstantOfShape", ["s"], ["y"], value=h.make_tensor("v", T.FLOAT, [1], [2.5])),
    ]
    module, _ = import_onnx(model(nodes, [vi("x", T.FLOAT, ["n", 3])], [vi("y", T.FLOAT, None)]))
    assert names(module) == ["graph.dim", "graph.constant", "graph.broadcast_to", "func.return"]
    assert result_shape(module) == [Q, 3]


def test_constant_of_shape_static_folds():
    nodes = [h.make_node("ConstantOfShape", ["s"], ["y"])]
    m = model(nodes, [], [vi("y", T.FLOAT, None)], [init("s", np.array([2, 3], np.int64))])
    module, _ = import_onnx(m)
    assert names(module) == ["graph.constant", "func.return"]
    assert result_shape(module) == [2, 3]


def test_expand_with_symbolic_shape():
    nodes = [h.make_node("Shape", ["x"], ["s"]), h.make_node("Expand", ["b", "s"], ["y"])]
    m = model(nodes, [vi("x", T.FLOAT, ["n", 4]), vi("b", T.FLOAT, [1, 4])], [vi("y", T.FLOAT, None)])
    module, _ = import_onnx(m)
    assert names(module) == ["graph.dim", "graph.broadcast_to", "func.return"]
    assert result_shape(module) == [Q, 4]


def test_range_folds_small_constants():
    nodes = [h.make_node("Range", ["a", "b", "c"], ["y"])]
    inits = [init("a", np.array(0, np.int64)), init("b", np.array(5, np.int64)), init("c", np.array(1, np.int64))]
    module, _ = import_onnx(model(nodes, [], [vi("y", T.INT64, None)], inits))
    assert names(module) == ["graph.constant", "func.return"]
    assert result_shape(module) == [5]


def test_gemm_decomposition():
    nodes = [h.make_node("Gemm", ["a", "b", "c"], ["y"], transB=1, alpha=2.0, beta=0.5)]
    m = model(nodes, [vi("a", T.FLOAT, [2, 3]), vi("b", T.FLOAT, [4, 3]), vi("c", T.FLOAT, [4])], [vi("y", T.FLOAT, None)])
    module, _ = import_onnx(m)
    assert names(module) == [
        "graph.transpose", "graph.matmul", "graph.constant", "graph.mul",
        "graph.constant", "graph.mul", "graph.add", "func.return",
    ]
    assert result_shape(module) == [2, 4]


def test_gemm_transposes_a_weight_once_at_import():
    w = np.arange(40, dtype=np.float32).reshape(8, 5)
    nodes = [
        h.make_node("Gemm", ["a", "w"], ["y"], transB=1),
        h.make_node("Gemm", ["a", "w"], ["z"], transB=1, alpha=2.0),
    ]
    m = model(nodes, [vi("a", T.FLOAT, [2, 5])], [vi("y", T.FLOAT, None), vi("z", T.FLOAT, None)], [init("w", w)])
    module, params = import_onnx(m)
    assert "graph.transpose" not in names(module)
    assert list(params) == ["w.T"]  # one transposed copy for both nodes; the original is unused
    np.testing.assert_array_equal(params["w.T"], w.T)
    assert params["w.T"].flags.c_contiguous


def test_big_static_constant_of_shape_becomes_a_weight():
    nodes = [h.make_node("ConstantOfShape", ["s"], ["w"], value=h.make_tensor("v", T.FLOAT, [1], [0.02])),
             h.make_node("Add", ["x", "w"], ["y"])]
    m = model(nodes, [vi("x", T.FLOAT, [8, 16])], [vi("y", T.FLOAT, None)], [init("s", np.array([8, 16], np.int64))])
    module, params = import_onnx(m)
    assert names(module) == ["graph.param", "graph.add", "func.return"]
    np.testing.assert_array_equal(params["w"], np.full((8, 16), 0.02, np.float32))


def test_ops_on_weights_only_fold_into_new_weights():
    w = np.linspace(-1, 1, 6 * 20, dtype=np.float32).reshape(6, 20)
    nodes = [
        h.make_node("Transpose", ["w"], ["wt"], perm=[1, 0]),
        h.make_node("Mul", ["wt", "two"], ["w2"]),
        h.make_node("MatMul", ["x", "w2"], ["y"]),
    ]
    inits = [init("w", w), init("two", np.array(2.0, np.float32))]
    m = model(nodes, [vi("x", T.FLOAT, [3, 20])], [vi("y", T.FLOAT, None)], inits)
    module, params = import_onnx(m)
    assert names(module) == ["graph.param", "graph.matmul", "func.return"]
    np.testing.assert_array_equal(params["w2"], w.T * 2)
    assert fn_of(module).body.block.first_op.param_name.data == "w2"


def test_small_shape_computations_still_fold_as_constants():
    # no weight bigger than FOLD_LIMIT involved: the emitters fold, nothing becomes a param
    nodes = [h.make_node("Concat", ["a", "b"], ["s"], axis=0), h.make_node("Reshape", ["x", "s"], ["y"])]
    inits = [init("a", np.array([2], np.int64)), init("b", np.array([6], np.int64))]
    module, params = import_onnx(model(nodes, [vi("x", T.FLOAT, [3, 4])], [vi("y", T.FLOAT, None)], inits))
    assert params == {}
    assert result_shape(module) == [2, 6]


@pytest.mark.parametrize("opset,expected", [(11, ["graph.reshape", "graph.softmax", "graph.reshape"]), (13, ["graph.softmax"])])
def test_softmax_opset_semantics(opset, expected):
    nodes = [h.make_node("Softmax", ["x"], ["y"], axis=1)]
    m = model(nodes, [vi("x", T.FLOAT, [2, 3, 4])], [vi("y", T.FLOAT, None)], opset=opset)
    module, _ = import_onnx(m)
    assert names(module)[:-1] == expected
    if opset == 11:
        assert list(ops_of(module, graph.ReshapeOp)[0].result.type.get_shape()) == [2, 12]
    assert result_shape(module) == [2, 3, 4]


def test_clip_attributes_and_inputs():
    m6 = model([h.make_node("Clip", ["x"], ["y"], min=-1.0, max=1.0)], [vi("x", T.FLOAT, [3])], [vi("y", T.FLOAT, None)], opset=6)
    clip = ops_of(import_onnx(m6)[0], graph.ClipOp)[0]
    assert (clip.min.value.data, clip.max.value.data) == (-1.0, 1.0)
    m13 = model(
        [h.make_node("Clip", ["x", "", "hi"], ["y"])],
        [vi("x", T.FLOAT, [3])], [vi("y", T.FLOAT, None)], [init("hi", np.array(6.0, np.float32))], opset=13,
    )
    clip = ops_of(import_onnx(m13)[0], graph.ClipOp)[0]
    assert clip.min is None and clip.max.value.data == 6.0
    mi = model(
        [h.make_node("Clip", ["x", "lo", "hi"], ["y"])],
        [vi("x", T.INT64, [3])], [vi("y", T.INT64, None)],
        [init("lo", np.array(0, np.int64)), init("hi", np.array(5, np.int64))], opset=13,
    )
    assert names(import_onnx(mi)[0]) == ["graph.constant", "graph.max", "graph.constant", "graph.min", "func.return"]


@pytest.mark.parametrize("opset", [6, 13])
def test_clip_with_min_above_max_gives_max_as_onnxruntime(opset):
    """ONNX (from opset 11): min > max sets every value to max. Constant bounds like that failed the import
    ("internal error: the imported module does not verify: min ... must not be greater than max")."""
    import onnxruntime as ort

    from minimlir.frontend import compile as compile_model

    if opset == 6:
        m = model([h.make_node("Clip", ["x"], ["y"], min=0.5, max=-0.25)], [vi("x", T.FLOAT, [6])],
                  [vi("y", T.FLOAT, None)], opset=6)
    else:
        m = model([h.make_node("Clip", ["x", "lo", "hi"], ["y"])], [vi("x", T.FLOAT, [6])], [vi("y", T.FLOAT, None)],
                  [init("lo", np.array(0.5, np.float32)), init("hi", np.array(-0.25, np.float32))], opset=13)
    x = np.array([-2, -0.5, 0, 0.3, 1, 4], np.float32)
    ref = np.full(6, -0.25, np.float32)
    if opset >= 11:  # (onnxruntime refuses Clip-6 with min > max: that spec leaves it undefined)
        np.testing.assert_array_equal(ort.InferenceSession(m.SerializeToString()).run(None, {"x": x})[0], ref)
    np.testing.assert_array_equal(compile_model(m, cache=False)(x)[0], ref)


@pytest.mark.parametrize("opset", [11, 13, 18])
def test_split_versions(opset):
    x = [vi("x", T.FLOAT, [2, 6])]
    outs = [vi("a", T.FLOAT, None), vi("b", T.FLOAT, None)]
    if opset == 11:
        node, inits = h.make_node("Split", ["x"], ["a", "b"], axis=1, split=[2, 4]), []
    elif opset == 13:
        node, inits = h.make_node("Split", ["x", "s"], ["a", "b"], axis=1), [init("s", np.array([2, 4], np.int64))]
    else:
        node, inits = h.make_node("Split", ["x"], ["a", "b"], axis=1, num_outputs=2), []
    module, _ = import_onnx(model([node], x, outs, inits, opset=opset))
    split = ops_of(module, graph.SplitOp)[0]
    expected = [2, 4] if opset < 18 else [3, 3]
    assert list(split.sizes.get_values()) == expected
    assert [result_shape(module, i) for i in (0, 1)] == [[2, expected[0]], [2, expected[1]]]


@pytest.mark.parametrize("opset", [11, 13])
def test_squeeze_unsqueeze_versions(opset):
    if opset == 11:
        nodes = [h.make_node("Unsqueeze", ["x"], ["u"], axes=[0, -1]), h.make_node("Squeeze", ["u"], ["y"], axes=[0])]
        inits = []
    else:
        nodes = [h.make_node("Unsqueeze", ["x", "ua"], ["u"]), h.make_node("Squeeze", ["u", "sa"], ["y"])]
        inits = [init("ua", np.array([0, -1], np.int64)), init("sa", np.array([0], np.int64))]
    module, _ = import_onnx(model(nodes, [vi("x", T.FLOAT, ["n", 3])], [vi("y", T.FLOAT, None)], inits, opset=opset))
    assert names(module) == ["graph.dim", "graph.reshape", "graph.reshape", "func.return"]
    assert result_shape(module) == [Q, 3, 1]


@pytest.mark.parametrize("opset", [9, 13])
def test_slice_versions_normalize_static_and_keep_dynamic(opset):
    if opset == 9:
        node, inits = h.make_node("Slice", ["x"], ["y"], starts=[-3, 1], ends=[1000, 2**62], axes=[1, 0]), []
    else:
        node = h.make_node("Slice", ["x", "st", "en", "ax"], ["y"])
        inits = [init("st", np.array([-3, 1])), init("en", np.array([1000, 2**62])), init("ax", np.array([1, 0]))]
    module, _ = import_onnx(model([node], [vi("x", T.FLOAT, ["n", 5])], [vi("y", T.FLOAT, None)], inits, opset=opset))
    s = ops_of(module, graph.SliceOp)[0]
    assert list(s.starts.get_values()) == [1, 2]
    assert list(s.ends.get_values()) == [2**62, 5]
    assert result_shape(module) == [Q, 3]


def test_slice_negative_step_static():
    node = h.make_node("Slice", ["x", "st", "en", "ax", "sp"], ["y"])
    inits = [init("st", np.array([-1])), init("en", np.array([-(2**63)])), init("ax", np.array([0])), init("sp", np.array([-1]))]
    module, _ = import_onnx(model([node], [vi("x", T.FLOAT, [4])], [vi("y", T.FLOAT, None)], inits, opset=13))
    s = ops_of(module, graph.SliceOp)[0]
    assert (list(s.starts.get_values()), list(s.ends.get_values())) == ([3], [-1])
    assert result_shape(module) == [4]


@pytest.mark.parametrize("opset", [2, 18])
def test_pad_versions_and_negative_pads(opset):
    if opset == 2:
        node, inits = h.make_node("Pad", ["x"], ["y"], pads=[0, 2, 0, -1], value=1.5), []
    else:
        node = h.make_node("Pad", ["x", "p", "v", "ax"], ["y"])
        inits = [init("p", np.array([2, -1])), init("v", np.array(1.5, np.float32)), init("ax", np.array([1]))]
    module, _ = import_onnx(model([node], [vi("x", T.FLOAT, [2, 4])], [vi("y", T.FLOAT, None)], inits, opset=opset))
    pad = ops_of(module, graph.PadOp)[0]
    assert list(pad.pads.get_values()) == [0, 2, 0, 0]
    assert names(module) == ["graph.pad", "graph.slice", "func.return"]
    assert result_shape(module) == [2, 5]


@pytest.mark.parametrize("opset", [11, 18])
def test_reduce_axes_attribute_or_input(opset):
    if opset == 11:
        node, inits = h.make_node("ReduceMean", ["x"], ["y"], axes=[-1], keepdims=0), []
    else:
        node, inits = h.make_node("ReduceMean", ["x", "a"], ["y"], keepdims=0), [init("a", np.array([-1]))]
    module, _ = import_onnx(model([node], [vi("x", T.FLOAT, [2, 3, 4])], [vi("y", T.FLOAT, None)], inits, opset=opset))
    r = ops_of(module, graph.ReduceMeanOp)[0]
    assert list(r.axes.get_values()) == [2]
    assert result_shape(module) == [2, 3]


def test_conv1d_via_reshape_and_auto_pad():
    nodes = [h.make_node("Conv", ["x", "w"], ["y"], auto_pad="SAME_UPPER", strides=[2])]
    m = model(nodes, [vi("x", T.FLOAT, [1, 2, 9])], [vi("y", T.FLOAT, None)], [init("w", np.ones((3, 2, 4), np.float32))])
    module, _ = import_onnx(m)
    assert names(module) == ["graph.param", "graph.reshape", "graph.reshape", "graph.conv2d", "graph.reshape", "func.return"]
    conv = ops_of(module, graph.Conv2dOp)[0]
    # out = ceil(9/2) = 5; total pad = (5-1)*2 + 4 - 9 = 3 -> begin 1, end 2 (SAME_UPPER)
    assert list(conv.pads.get_values()) == [0, 1, 0, 2]
    assert result_shape(module) == [1, 3, 5]


def test_maxpool_same_lower_and_ceil_mode():
    nodes = [h.make_node("MaxPool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_LOWER")]
    module, _ = import_onnx(model(nodes, [vi("x", T.FLOAT, [1, 1, 6, 6])], [vi("y", T.FLOAT, None)]))
    pool = ops_of(module, graph.MaxPool2dOp)[0]
    assert list(pool.pads.get_values()) == [1, 1, 0, 0]
    assert result_shape(module) == [1, 1, 3, 3]


def test_gather_negative_constant_index_normalized_and_dynamic_wrapped():
    nodes = [h.make_node("Gather", ["x", "i"], ["y"], axis=1)]
    m = model(nodes, [vi("x", T.FLOAT, [2, 5])], [vi("y", T.FLOAT, None)], [init("i", np.array([-1, 0], np.int64))])
    module, _ = import_onnx(m)
    const = ops_of(module, graph.ConstantOp)[0]
    assert list(const.value.get_values()) == [4, 0]
    nodes = [h.make_node("Gather", ["x", "i"], ["y"], axis=0)]
    m = model(nodes, [vi("x", T.FLOAT, ["n", 5]), vi("i", T.INT64, [3])], [vi("y", T.FLOAT, None)])
    module, _ = import_onnx(m)
    assert "graph.where" in names(module) and result_shape(module) == [3, 5]


def test_layer_norm_extra_outputs_decomposed():
    node = h.make_node("LayerNormalization", ["x", "s"], ["y", "mean", "inv"], axis=-1)
    m = model([node], [vi("x", T.FLOAT, [2, 4])], [vi(o, T.FLOAT, None) for o in ("y", "mean", "inv")], [init("s", np.ones(4, np.float32))])
    module, _ = import_onnx(m)
    assert "graph.layer_norm" in names(module) and "graph.rsqrt" in names(module)
    assert [result_shape(module, i) for i in range(3)] == [[2, 4], [2, 1], [2, 1]]


def test_unsupported_lists_every_problem_at_once():
    nodes = [
        h.make_node("Relu", ["x"], ["a"]),
        h.make_node("DFT", ["a"], ["b"], name="dft"),
        h.make_node("Pad", ["x", "p"], ["c"], mode="circular"),
        h.make_node("Cast", ["x"], ["d"], to=T.BFLOAT16),
        h.make_node("Foo", ["a"], ["e"], domain="com.example"),
        h.make_node("Relu", ["b"], ["f"]),
    ]
    m = h.make_model(
        h.make_graph(nodes, "g", [vi("x", T.FLOAT, [2])], [vi(o, T.FLOAT, None) for o in "cdef"], [init("p", np.array([1, 1]))]),
        opset_imports=[h.make_opsetid("", 17), h.make_opsetid("com.example", 1)],
    )
    with pytest.raises(UnsupportedModelError) as e:
        import_onnx(m)
    got = {(p.op_type, p.reason) for p in e.value.problems}
    assert got == {
        ("DFT", "no importer for this op: signal processing with complex values (not implemented yet)"),
        ("Pad", "mode 'circular'"),
        ("Cast", "cast to bfloat16"),
        ("Foo", "domain 'com.example' is not supported"),
    }
    rows = check_support(m)
    assert ("Relu", 17, 2, None) in rows and ("Pad", 17, 1, "mode 'circular'") in rows


def test_bad_inputs_give_one_line_errors(tmp_path):
    with pytest.raises(OnnxImportError, match="no such file"):
        import_onnx(tmp_path / "missing.onnx")
    junk = tmp_path / "junk.onnx"
    junk.write_bytes(b"\xff\xff\xff this is not protobuf")
    with pytest.raises(OnnxImportError, match="not a valid ONNX model"):
        import_onnx(junk)
    good = tmp_path / "good.onnx"
    onnx.save(conv_add_relu(), good)
    truncated = tmp_path / "truncated.onnx"
    truncated.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    with pytest.raises(OnnxImportError, match="truncated.onnx"):
        import_onnx(truncated)


def test_declared_shape_contradicting_initializer():
    nodes = [h.make_node("Add", ["x", "w"], ["y"])]
    m = model(nodes, [vi("x", T.FLOAT, [3]), vi("w", T.FLOAT, [4])], [vi("y", T.FLOAT, None)], [init("w", np.ones(3, np.float32))])
    with pytest.raises(OnnxImportError, match=r"initializer 'w' has shape \[3\] but the graph declares \[4\]"):
        import_onnx(m)


def test_declared_output_shape_contradicting_the_op_is_an_error():
    """A shape the model itself declares must agree with the op's (here a Relu of [3] declared [4])."""
    m = model([h.make_node("Relu", ["x"], ["y"], name="r")], [vi("x", T.FLOAT, [3])], [vi("y", T.FLOAT, [4])])
    with pytest.raises(OnnxImportError, match="node 'r' \\(Relu\\): output 'y' has shape 3 but the model declares 4"):
        import_onnx(m)


def test_ceil_mode_pool_whose_last_window_starts_in_the_padding():
    """MaxPool 2x2/2, pads 1, ceil_mode on 9 rows: the 6th window would start in the bottom padding,
    so onnxruntime (and the op's definition) gives 5 rows. ONNX shape inference says 6 and the import
    rejected the model ("has shape 1x2x5x6 but the model declares 1x2x6x6"); a shape only inference
    gives is not a declaration."""
    ort = pytest.importorskip("onnxruntime")
    from minimlir.frontend import compile as compile_model

    nodes = [h.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1),
             h.make_node("Relu", ["y"], ["z"])]
    m = model(nodes, [vi("x", T.FLOAT, [1, 2, 9, 10])], [vi("z", T.FLOAT, None)])
    x = np.random.default_rng(0).standard_normal((1, 2, 9, 10)).astype(np.float32)
    want = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    assert want.shape == (1, 2, 5, 6)
    (got,) = compile_model(m, cache=False)(x)
    np.testing.assert_array_equal(np.asarray(got), want)


def test_undefined_input_names_the_node():
    m = model([h.make_node("Relu", ["nope"], ["y"], name="r")], [], [vi("y", T.FLOAT, None)])
    with pytest.raises(OnnxImportError, match="node 'r' \\(Relu\\): input 'nope' is not defined"):
        import_onnx(m)


def test_dynamic_result_types_agree_with_onnxruntime():
    ort = pytest.importorskip("onnxruntime")
    nodes = [
        h.make_node("Shape", ["x"], ["s"]),
        h.make_node("Gather", ["s", "one"], ["seq"], axis=0),
        h.make_node("Unsqueeze", ["seq", "ax0"], ["seq1"]),
        h.make_node("Concat", ["m1", "seq1", "four"], ["shape"], axis=0),
        h.make_node("Reshape", ["x", "shape"], ["r"]),
        h.make_node("Transpose", ["r"], ["t"], perm=[0, 2, 1]),
        h.make_node("MatMul", ["t", "w"], ["y"]),
    ]
    inits = [
        init("one", np.array(1, np.int64)), init("ax0", np.array([0], np.int64)),
        init("m1", np.array([-1], np.int64)), init("four", np.array([4], np.int64)),
        init("w", np.ones((5, 2), np.float32)),
    ]
    m = model(nodes, [vi("x", T.FLOAT, ["batch", "seq", 4])], [vi("y", T.FLOAT, None)], inits)
    module, _ = import_onnx(m)
    ours = result_shape(module)
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    for batch, seq in ((1, 5), (3, 5)):
        (y,) = sess.run(None, {"x": np.zeros((batch, seq, 4), np.float32)})
        assert len(ours) == y.ndim
        assert all(d == Q or d == s for d, s in zip(ours, y.shape)), (ours, y.shape)


def _dropout_model(ratio, training, with_mask=True):
    outs = ["y", "m"] if with_mask else ["y"]
    node = h.make_node("Dropout", ["x", "r", "t"], outs)
    inits = [init("r", np.array(ratio, np.float32)), init("t", np.array(training))]
    out_vi = [vi("y", T.FLOAT, [2, 3])] + ([vi("m", T.BOOL, [2, 3])] if with_mask else [])
    return model([node], [vi("x", T.FLOAT, [2, 3])], out_vi, inits)


def test_training_dropout_with_ratio_zero_is_identity():
    m = _dropout_model(0.0, True)
    assert all(r[3] is None for r in check_support(m))
    module, _ = import_onnx(m)
    assert names(module) == ["graph.constant", "graph.broadcast_to", "func.return"]


def test_training_dropout_with_ratio_draws_a_seeded_mask():
    """Training mode with a nonzero ratio imports (frontend/_onnx_ops_random.py): a graph.random
    mask; in inference mode the ratio is ignored and nothing is drawn."""
    m = _dropout_model(0.5, True)
    assert all(r[3] is None for r in check_support(m))
    module, _ = import_onnx(m)
    assert "graph.random" in names(module) and "graph.where" in names(module)
    assert all(r[3] is None for r in check_support(_dropout_model(0.5, False)))
    module, _ = import_onnx(_dropout_model(0.5, False))
    assert names(module) == ["graph.constant", "graph.broadcast_to", "func.return"]


def test_check_support_reports_what_the_emitters_reject():
    """One source of truth: a problem found only while emitting (a 4-D Conv) is a row too, and
    an operand that must be constant but is a graph input is not (OnnxBackend specializes)."""
    conv = h.make_node("Conv", ["x", "w"], ["y"])
    m = model([conv], [vi("x", T.FLOAT, [1, 1, 3, 3, 3, 3]), vi("w", T.FLOAT, [1, 1, 1, 1, 1, 1])],
              [vi("y", T.FLOAT, None)])
    with pytest.raises(UnsupportedModelError) as e:
        import_onnx(m)
    (problem,) = e.value.problems
    assert ("Conv", 17, 1, problem.reason) in check_support(m)
    tile = h.make_node("Tile", ["x", "r"], ["y"])
    m = model([tile], [vi("x", T.FLOAT, [2, 3]), vi("r", T.INT64, [2])], [vi("y", T.FLOAT, None)])
    with pytest.raises(UnsupportedModelError, match="at run time"):
        import_onnx(m)
    assert check_support(m) == [("Tile", 17, 1, None)]


def test_pad_wrap_is_slices_and_concat():
    from minimlir.frontend.onnx_backend import OnnxBackend

    node = h.make_node("Pad", ["x", "p"], ["y"], mode="wrap")
    m = model([node], [vi("x", T.FLOAT, [2, 3])], [vi("y", T.FLOAT, [5, 4])],
              [init("p", np.array([1, 0, 2, 1], np.int64))])
    module, _ = import_onnx(m)
    assert names(module).count("graph.concat") == 2 and "graph.pad" not in names(module)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    (y,) = OnnxBackend.prepare(m).run([x])
    np.testing.assert_array_equal(y, np.pad(x, [(1, 2), (0, 1)], mode="wrap"))
    too_big = model([node], [vi("x", T.FLOAT, [2, 3])], [vi("y", T.FLOAT, None)],
                    [init("p", np.array([3, 0, 0, 0], np.int64))])
    with pytest.raises(UnsupportedModelError, match="wrap"):
        import_onnx(too_big)


@pytest.mark.parametrize("op,attrs", [
    ("MaxPool", dict(kernel_shape=[2, 3, 2], strides=[2, 1, 2], pads=[1, 0, 0, 0, 1, 1],
                     dilations=[1, 2, 1], ceil_mode=1)),
    ("AveragePool", dict(kernel_shape=[3, 2, 2], strides=[1, 2, 1], pads=[1, 1, 0, 1, 0, 1],
                         count_include_pad=1, ceil_mode=1)),
    ("AveragePool", dict(kernel_shape=[2, 2, 3], strides=[2, 1, 1], pads=[0, 1, 1, 1, 0, 1],
                         dilations=[2, 1, 1], count_include_pad=0)),
])
def test_pool_3d_as_two_2d_pools_matches_onnxruntime(op, attrs):
    ort = pytest.importorskip("onnxruntime")
    from minimlir.frontend.onnx_backend import OnnxBackend

    node = h.make_node(op, ["x"], ["y"], **attrs)
    m = model([node], [vi("x", T.FLOAT, ["n", 2, 5, 6, 5])], [vi("y", T.FLOAT, None)], opset=19)
    module, _ = import_onnx(m)
    pools = [o for o in names(module) if o.startswith("graph.") and o.endswith("pool2d")]
    assert len(pools) == 2
    x = np.random.default_rng(3).standard_normal((2, 2, 5, 6, 5)).astype(np.float32)
    (y,) = OnnxBackend.prepare(m).run([x])
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(y, sess.run(None, {"x": x})[0], rtol=1e-5, atol=1e-6)


def test_batchnorm_training_mode_uses_batch_statistics():
    from minimlir.frontend.onnx_backend import OnnxBackend

    node = h.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y", "rm", "rv"],
                       training_mode=1, momentum=0.8, epsilon=1e-3)
    rng = np.random.default_rng(5)
    s, b, mean = (rng.standard_normal(3).astype(np.float32) for _ in range(3))
    var = rng.random(3).astype(np.float32)
    inits = [init("s", s), init("b", b), init("m", mean), init("v", var)]
    m = model([node], [vi("x", T.FLOAT, ["n", 3, 4])],
              [vi("y", T.FLOAT, None), vi("rm", T.FLOAT, [3]), vi("rv", T.FLOAT, [3])], inits, opset=15)
    assert all(r[3] is None for r in check_support(m))
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    y, rm, rv = OnnxBackend.prepare(m).run([x])
    bm, bv = x.mean(axis=(0, 2)), x.var(axis=(0, 2))
    ref = (x - bm[:, None]) / np.sqrt(bv[:, None] + 1e-3) * s[:, None] + b[:, None]
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(rm, mean * 0.8 + bm * 0.2, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(rv, var * 0.8 + bv * 0.2, rtol=1e-5, atol=1e-6)
    old = model([node], [vi("x", T.FLOAT, [2, 3, 4])], [vi("y", T.FLOAT, None)], inits, opset=9)
    assert ("BatchNormalization", 9, 1, "training mode (opset < 14)") in check_support(old)


def test_reshape_of_an_empty_tensor_to_run_time_dims_verifies():
    """0 elements reshaped to (?, ?, ?): a dynamic dim may be 0 (test_reshape_allowzero_reordered)."""
    node = h.make_node("Reshape", ["x", "s"], ["y"], allowzero=1)
    m = model([node], [vi("x", T.FLOAT, [0, 3, 4]), vi("s", T.INT64, [3])], [vi("y", T.FLOAT, None)], opset=14)
    module, _ = import_onnx(m)
    assert result_shape(module) == [Q, Q, Q]


def _bn_inits(c, rng, prefix="bn"):
    return [
        init(f"{prefix}_s", rng.uniform(0.5, 1.5, c).astype(np.float32)),
        init(f"{prefix}_b", rng.standard_normal(c).astype(np.float32)),
        init(f"{prefix}_m", rng.standard_normal(c).astype(np.float32)),
        init(f"{prefix}_v", rng.uniform(0.5, 2.0, c).astype(np.float32)),
    ]


def _bn(x, y, prefix="bn"):
    return h.make_node("BatchNormalization", [x, f"{prefix}_s", f"{prefix}_b", f"{prefix}_m", f"{prefix}_v"], [y],
                       epsilon=1e-3)


@pytest.mark.parametrize("with_bias", [True, False])
def test_conv_then_batch_norm_folds_into_the_conv_weights(with_bias):
    import onnxruntime as ort

    from minimlir.frontend import compile as compile_model

    rng = np.random.default_rng(3)
    inits = [init("w", rng.standard_normal((24, 3, 3, 3)).astype(np.float32)), *_bn_inits(24, rng)]
    conv_in = ["x", "w"]
    if with_bias:
        inits.append(init("cb", rng.standard_normal(24).astype(np.float32)))
        conv_in.append("cb")
    nodes = [h.make_node("Conv", conv_in, ["c"], pads=[1, 1, 1, 1]), _bn("c", "y")]
    m = model(nodes, [vi("x", T.FLOAT, [1, 3, 8, 8])], [vi("y", T.FLOAT, None)], inits)
    module, params = import_onnx(m)
    assert names(module) == ["graph.param", "graph.param", "graph.conv2d", "func.return"]
    assert sorted(params) == (["cb.folded", "w.folded"] if with_bias else ["w.bias.folded", "w.folded"])
    x = rng.standard_normal((1, 3, 8, 8)).astype(np.float32)
    (ref,) = ort.InferenceSession(m.SerializeToString()).run(None, {"x": x})
    np.testing.assert_allclose(compile_model(m, cache=False)(x)[0], ref, rtol=1e-4, atol=1e-5)


def test_batch_norm_with_known_statistics_is_a_scale_and_shift():
    import onnxruntime as ort

    from minimlir.frontend import compile as compile_model

    rng = np.random.default_rng(4)
    # the Conv output has two readers: the BN is not folded into it, but its statistics are known
    inits = [init("w", rng.standard_normal((20, 3, 1, 1)).astype(np.float32)), *_bn_inits(20, rng)]
    nodes = [h.make_node("Conv", ["x", "w"], ["c"]), _bn("c", "n"), h.make_node("Add", ["n", "c"], ["y"])]
    m = model(nodes, [vi("x", T.FLOAT, [2, 3, 5, 5])], [vi("y", T.FLOAT, None)], inits)
    module, params = import_onnx(m)
    assert "graph.batch_norm" not in names(module)
    assert {"n.scale", "n.shift"} <= set(params) and params["n.scale"].shape == (20, 1, 1)
    x = rng.standard_normal((2, 3, 5, 5)).astype(np.float32)
    (ref,) = ort.InferenceSession(m.SerializeToString()).run(None, {"x": x})
    np.testing.assert_allclose(compile_model(m, cache=False)(x)[0], ref, rtol=1e-4, atol=1e-5)


def test_batch_norm_of_run_time_statistics_stays_batch_norm():
    nodes = [h.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"])]
    ins = [vi("x", T.FLOAT, [2, 3, 4]), *(vi(n, T.FLOAT, [3]) for n in "sbmv")]
    module, _ = import_onnx(model(nodes, ins, [vi("y", T.FLOAT, None)]))
    assert names(module) == ["graph.batch_norm", "func.return"]


def test_conv_absorbs_a_chain_of_per_channel_affine_ops():
    import onnxruntime as ort

    from minimlir.frontend import compile as compile_model

    rng = np.random.default_rng(5)
    inits = [
        init("w", rng.standard_normal((12, 4, 3, 3)).astype(np.float32)), *_bn_inits(12, rng),
        init("mul_c", rng.uniform(0.5, 2.0, (12, 1, 1)).astype(np.float32)),
        init("add_c", np.array(0.25, np.float32)),
        init("sub_c", rng.standard_normal((1, 12, 1, 1)).astype(np.float32)),
        init("map", rng.standard_normal((1, 1, 6, 6)).astype(np.float32)),  # not per channel
    ]
    nodes = [
        h.make_node("Conv", ["x", "w"], ["c"]), _bn("c", "n"),
        h.make_node("Mul", ["mul_c", "n"], ["m"]), h.make_node("Add", ["m", "add_c"], ["a"]),
        h.make_node("Sub", ["a", "sub_c"], ["s"]), h.make_node("Mul", ["s", "map"], ["t"]),
        h.make_node("Relu", ["t"], ["y"]),
    ]
    m = model(nodes, [vi("x", T.FLOAT, [1, 4, 8, 8])], [vi("y", T.FLOAT, None)], inits)
    module, params = import_onnx(m)
    kept = [n for n in names(module) if n not in ("graph.param", "graph.constant")]
    assert kept == ["graph.conv2d", "graph.mul", "graph.relu", "func.return"]
    assert {"w.folded", "map"} == set(params)  # the 12-element bias is a graph.constant
    x = rng.standard_normal((1, 4, 8, 8)).astype(np.float32)
    (ref,) = ort.InferenceSession(m.SerializeToString()).run(None, {"x": x})
    np.testing.assert_allclose(compile_model(m, cache=False)(x)[0], ref, rtol=1e-4, atol=1e-5)


def test_conv_output_read_twice_or_returned_is_not_folded():
    rng = np.random.default_rng(6)
    inits = [init("w", rng.standard_normal((8, 4, 1, 1)).astype(np.float32)), *_bn_inits(8, rng)]
    nodes = [h.make_node("Conv", ["x", "w"], ["c"]), _bn("c", "y")]
    m = model(nodes, [vi("x", T.FLOAT, [1, 4, 4, 4])], [vi("y", T.FLOAT, None), vi("c", T.FLOAT, None)], inits)
    module, params = import_onnx(m)
    assert "w" in params and not any(k.endswith("folded") for k in params)


def test_weight_folding_keeps_a_0d_result_0d():
    """A node folded at import time (a weight bigger than FOLD_LIMIT) whose result is 0-d stays
    0-d (np.ascontiguousarray made it [1]: y below came out with shape [1] instead of scalar)."""
    import onnxruntime as ort

    from minimlir.backend.runtime import compile_mlir_text

    w = np.arange(100, dtype=np.float32) / 100
    nodes = [h.make_node("ReduceSum", ["w"], ["s"], keepdims=0), h.make_node("Add", ["x", "s"], ["y"])]
    g = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", T.FLOAT, [])],
                     [h.make_tensor_value_info("y", T.FLOAT, None)],
                     initializer=[nh.from_array(w, "w")])
    model = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    model.ir_version = 8
    module, params = import_onnx(model)
    out = np.asarray(compile_mlir_text(module, params=params, cache=False)(np.array(0.5, np.float32)))
    (ref,) = ort.InferenceSession(model.SerializeToString()).run(None, {"x": np.array(0.5, np.float32)})
    assert out.shape == ref.shape == ()
    np.testing.assert_allclose(out, ref, rtol=1e-6)
