"""ONNX -> graph dialect.

    module, params = import_onnx("model.onnx")          # params: name -> np.ndarray (or memmap)

builds

    builtin.module {
      func.func @main(%x: tensor<?x3x8x8xf32> {graph.dim_names = ["batch", "", "", ""], graph.name = "x"})
          -> (tensor<?x4x8x8xf32> {graph.name = "y"}) {
        %w = graph.param "conv.weight" : tensor<4x3x3x3xf32> loc("conv.weight"("model.onnx":0:0))
        %c = graph.conv2d %x, %w ... loc("conv"("model.onnx":1:0))
        ...
      }
    }

How it works:
  1. load: `onnx.load(path, load_external_data=False)`; external initializers are mapped with
     `np.memmap` by (location, offset, length), so a large model is never read into memory twice.
  2. `onnx.shape_inference.infer_shapes` (non-strict): its value_info gives types where our own
     shape computation has nothing; our types (from the graph ops' constructors) win otherwise.
  3. one pass over the nodes in order, through the op table in `minimlir.frontend._onnx_ops`
     (one emitter per ONNX op type, each documenting its decomposition). Unsupported ops,
     attributes or dtypes are collected, not raised one by one: the import ends with one
     `UnsupportedModelError` listing every (op, opset, reason).
  4. dead ops (shape computations that were folded) are dropped, the module is verified.

Values. Every ONNX value is a `Value`: a known constant (`const`, a NumPy array: initializers,
Constant nodes, folded shape computations), a symbolic shape tensor (`sym`: a list of Python ints
and `index` SSA values, for the 0-d/1-d int64 tensors that Shape/Gather/Concat/... compute), or an
SSA value. SSA values are materialized lazily: a constant becomes `graph.constant` (≤ 16 elements,
or `embed_weights`) or `graph.param "name"` (weights, stored in the params dict); a symbolic shape
becomes `graph.shape` / `graph.from_dims`. Reshape, Expand and ConstantOfShape read a symbolic
shape directly and pass its dynamic entries as `index` operands, so a shape chain
Shape -> Gather -> Unsqueeze -> Concat -> Reshape costs one `graph.dim` per dynamic dim and no
tensor ops, and folds completely when the dims are static.

Shape values known only at run time. When the shape (or Slice starts/ends) is a real tensor
(a graph input, or computed by ops that do not stay symbolic: Where, Cast to float, ...),
`Importer.read_indices` reads its elements at the graph level (graph.gather of one element,
graph.extract, arith.index_cast) into `index` values; the op then gets them as index operands
(Reshape resolves a run-time 0 / -1 entry with arith.select; graph.slice normalizes run-time
bounds itself). graph.range reads its 0-d operands the same way in its shape function.

Locations. Every op carries `loc("<node name>"("<model file>":<node index + 1>:0))` (a NameLoc
around a FileLineColLoc whose line is the node's 1-based position in `graph.node`); weights carry
`loc("<initializer name>"("<model file>":0:0))`. Read it with `op.location`; print it with
`Printer(print_debuginfo=True)` (`mini-opt --print-debuginfo`); xDSL's parser reads it back.

Dynamic dims. An ONNX `dim_param` ("batch") or an unknown dim becomes `?`; the names are kept on
the function argument as `graph.dim_names` (one string per dim, "" for static/unnamed dims).
Inputs and outputs also carry their ONNX name as `graph.name`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    ArrayAttr,
    BytesAttr,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    FileLineColLoc,
    FunctionType,
    IndexType,
    IntAttr,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    NameLoc,
    StringAttr,
    TensorType,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from minimlir.frontend._onnx_base import (  # noqa: F401 (re-exported: defined without onnx, for the api)
    DTYPES_BY_NAME,
    OnnxImportError,
    Problem,
    Unsupported,
    UnsupportedModelError,
    numpy_dtype_of,
)

DYNAMIC = DYNAMIC_INDEX
"""A `?` dim in a shape list (xDSL's DYNAMIC_INDEX, as in `minimlir.dialects.graph`)."""
SMALL_CONSTANT = 16
"""Constants with at most this many elements always become `graph.constant`."""
FOLD_LIMIT = 64
"""Shape computations are folded at import time when their result has at most this many elements."""
INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)

# ONNX element type -> (NumPy dtype, xDSL element type): the table is in _onnx_base (no onnx needed)
_DTYPES: dict[int, tuple[np.dtype, Attribute]] = {getattr(TensorProto, n): v for n, v in DTYPES_BY_NAME.items()}
_NP_TO_ONNX = {np_dtype: onnx_type for onnx_type, (np_dtype, _) in _DTYPES.items()}


def onnx_dtype_name(elem_type: int) -> str:
    try:
        return TensorProto.DataType.Name(elem_type).lower()
    except ValueError:
        return f"dtype#{elem_type}"


def dtype_reason(elem_type: int) -> str:
    """Why an ONNX element type is refused: `dtype NAME`, with the family when there is one."""
    name = onnx_dtype_name(elem_type)
    if name.startswith(("float8", "float6", "float4", "int4", "uint4", "int2", "uint2")):
        return f"dtype {name} (8-, 6- and 4-bit floats and 4- and 2-bit integers have no element type)"
    return f"dtype {name}"


def element_type(elem_type: int) -> Attribute:
    """xDSL element type of an ONNX element type (raises Unsupported)."""
    if elem_type not in _DTYPES:
        raise Unsupported(dtype_reason(elem_type))
    return _DTYPES[elem_type][1]


# --------------------------------------------------------------------------------------------
# Values


@dataclass(eq=False)
class Value:
    """One ONNX value during import (see the module docstring)."""

    elem_type: int  # ONNX element type
    shape: list[int]  # DYNAMIC for `?`
    ssa: SSAValue | None = None
    const: np.ndarray | None = None
    sym: list[int | SSAValue] | None = None
    name: str = ""
    is_weight: bool = False  # an initializer or Constant node: big ones become graph.param
    shape_of: SSAValue | None = None  # sym is the shape of this tensor (materialized as graph.shape)

    @property
    def rank(self) -> int:
        return len(self.shape)


# --------------------------------------------------------------------------------------------
# Loading


def _load_model(model: str | os.PathLike[str] | onnx.ModelProto) -> tuple[onnx.ModelProto, Path | None]:
    if isinstance(model, onnx.ModelProto):
        return model, None
    path = Path(model)
    if not path.is_file():
        raise OnnxImportError(f"{path}: no such file")
    try:
        proto = onnx.load(str(path), load_external_data=False)
    except Exception as e:  # protobuf DecodeError, RuntimeWarning, ...
        reason = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise OnnxImportError(f"{path}: not a valid ONNX model ({reason})") from None
    if not proto.HasField("graph") or not proto.graph.output:
        raise OnnxImportError(f"{path}: not a valid ONNX model (no graph or no outputs)")
    return proto, path


def tensor_to_array(tensor: TensorProto, base_dir: Path | None) -> np.ndarray:
    """A TensorProto as an array; external data is memory-mapped, not read."""
    if tensor.data_type not in _DTYPES:
        raise Unsupported(f"dtype {onnx_dtype_name(tensor.data_type)} (tensor '{tensor.name}')")
    dtype = _DTYPES[tensor.data_type][0]
    shape = tuple(tensor.dims)
    if tensor.data_location == TensorProto.EXTERNAL:
        info = {e.key: e.value for e in tensor.external_data}
        if base_dir is None or "location" not in info:
            raise OnnxImportError(f"tensor '{tensor.name}': external data without a model path")
        file = base_dir / info["location"]
        offset = int(info.get("offset", 0))
        count = int(np.prod(shape, dtype=np.int64))
        nbytes = count * dtype.itemsize
        if "length" in info and int(info["length"]) != nbytes:
            raise OnnxImportError(
                f"tensor '{tensor.name}': external length {info['length']} != {nbytes} bytes "
                f"for shape {list(shape)}"
            )
        if not file.is_file():
            raise OnnxImportError(f"tensor '{tensor.name}': external data file {file} not found")
        if offset + nbytes > file.stat().st_size:
            raise OnnxImportError(f"tensor '{tensor.name}': external data {file} is truncated")
        if nbytes == 0:
            return np.zeros(shape, dtype)
        return np.memmap(file, dtype=dtype, mode="r", offset=offset, shape=shape)
    try:
        return numpy_helper.to_array(tensor)
    except Exception as e:
        raise OnnxImportError(f"tensor '{tensor.name}': bad data ({e})") from None


def _type_of(vi: onnx.ValueInfoProto) -> tuple[int, list[int], list[str]] | None:
    """(elem_type, shape, dim names) of a tensor ValueInfo, None when the rank is unknown."""
    if not vi.type.HasField("tensor_type"):
        return None
    tt = vi.type.tensor_type
    if not tt.HasField("shape"):
        return (tt.elem_type, None, None)  # type: ignore[return-value]
    shape, names = [], []
    for d in tt.shape.dim:
        if d.HasField("dim_value") and d.dim_value >= 0:
            shape.append(d.dim_value)
            names.append("")
        else:
            shape.append(DYNAMIC)
            names.append(d.dim_param if d.HasField("dim_param") else "")
    return (tt.elem_type, shape, names)


# --------------------------------------------------------------------------------------------
# The importer


@dataclass
class NodeView:
    """One ONNX node as the emitters see it: attributes, opset, inputs as `Value`s."""

    proto: onnx.NodeProto
    opset: int
    inputs: list[Value | None]
    cx: Importer

    @property
    def op_type(self) -> str:
        return self.proto.op_type

    @property
    def name(self) -> str:
        return self.proto.name

    def attr(self, name: str, default=None):
        for a in self.proto.attribute:
            if a.name == name:
                if a.type == onnx.AttributeProto.TENSOR:
                    return tensor_to_array(a.t, self.cx.base_dir)
                return onnx.helper.get_attribute_value(a)
        return default

    def has_attr(self, name: str) -> bool:
        return any(a.name == name for a in self.proto.attribute)

    def input(self, i: int) -> Value | None:
        return self.inputs[i] if i < len(self.inputs) else None

    def num_outputs(self) -> int:
        """Outputs actually requested (trailing empty names do not count)."""
        outs = list(self.proto.output)
        while outs and not outs[-1]:
            outs.pop()
        return len(outs)

    def output_used(self, i: int) -> bool:
        return i < len(self.proto.output) and bool(self.proto.output[i])


@dataclass
class Importer:
    """State of one import: the block being built, the value table, the collected problems."""

    model: onnx.ModelProto
    file_label: str
    base_dir: Path | None
    embed_weights: bool = False
    block: Block = field(default_factory=Block)
    values: dict[str, Value] = field(default_factory=dict)
    value_info: dict[str, tuple[int, list[int] | None, list[str] | None]] = field(default_factory=dict)
    declared: set[str] | None = None
    """The values whose shapes the model itself declares (its value_info, inputs, outputs): only
    those must agree with our shapes. None: all of `value_info` (shapes given directly)."""
    params: dict[str, np.ndarray] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    loc: Attribute | None = None
    _index_consts: dict[int, SSAValue] = field(default_factory=dict)
    _dims: dict[tuple[SSAValue, int], SSAValue] = field(default_factory=dict)
    data_indices: set[SSAValue] = field(default_factory=set)
    """Index values read from tensor data (`read_indices`): unlike dims they may be 0 or negative."""
    weight_locs: dict[str, Attribute] = field(default_factory=dict)
    """Location of each weight (initializer or Constant node), used when it is materialized."""
    aliases: dict[str, Value] = field(default_factory=dict)
    """Outputs of nodes another node's emitter has absorbed (a BatchNormalization folded into the
    Conv before it): the node is not emitted, its output is this value."""
    _consumers: dict[str, list[onnx.NodeProto]] | None = None
    node_opsets: list[int] | None = None
    """The ai.onnx opset of each node when function ops were expanded (`_onnx_functions`): a
    function body keeps the opset it is written for."""
    derived: dict[tuple[str, str], Value] = field(default_factory=dict)
    """Weights computed from weights inside an emitter ((weight name, what) -> value), e.g. Gemm's
    transposed B: one folded copy however many nodes use it."""

    def consumers(self, name: str) -> list[onnx.NodeProto] | None:
        """The nodes reading value `name`; None when it is a graph output (read outside too)."""
        if self._consumers is None:
            self._consumers = {}
            for node in self.model.graph.node:
                for i in node.input:
                    if i:
                        self._consumers.setdefault(i, []).append(node)
            for vi in self.model.graph.output:
                self._consumers[vi.name] = None  # type: ignore[assignment]
        if name in self._consumers and self._consumers[name] is None:
            return None
        return self._consumers.get(name, [])

    def derived_weight(self, v: Value, what: str, fn) -> Value:
        """The weight `fn(v.const)`, named "<v.name>.<what>", computed once per (weight, what)."""
        key = (v.name, what)
        if key not in self.derived:
            name = f"{v.name}.{what}"
            self.derived[key] = self.from_const(np.ascontiguousarray(fn(v.const)), is_weight=True, name=name)
            if v.name in self.weight_locs:
                self.weight_locs.setdefault(name, self.weight_locs[v.name])
        return self.derived[key]

    # ---- emitting

    def emit(self, op: Operation) -> Operation:
        if self.loc is not None:
            op.location = self.loc  # type: ignore[assignment]
        self.block.add_op(op)
        return op

    def emit1(self, op: Operation) -> SSAValue:
        return self.emit(op).results[0]

    # ---- values

    def from_ssa(self, ssa: SSAValue) -> Value:
        t = ssa.type
        assert isinstance(t, TensorType), t
        elem = t.get_element_type()
        onnx_type = _NP_TO_ONNX[numpy_dtype_of(elem)]
        return Value(onnx_type, [DYNAMIC if d < 0 else d for d in t.get_shape()], ssa=ssa)

    def from_const(self, array: np.ndarray, *, is_weight: bool = False, name: str = "") -> Value:
        array = np.asanyarray(array)  # keeps np.memmap views of external data
        if array.dtype not in _NP_TO_ONNX:
            raise Unsupported(f"dtype {array.dtype}")
        return Value(_NP_TO_ONNX[array.dtype], list(array.shape), const=array, is_weight=is_weight, name=name)

    def from_sym(
        self, entries: Sequence[int | SSAValue], *, scalar: bool = False, elem_type=TensorProto.INT64
    ) -> Value:
        """A symbolic shape tensor; a plain constant when every entry is known."""
        entries = list(entries)
        if all(isinstance(e, int) for e in entries):
            array = np.array(entries, dtype=_DTYPES[elem_type][0])
            return self.from_const(array.reshape(()) if scalar else array)
        return Value(elem_type, [] if scalar else [len(entries)], sym=entries)

    def sym_of(self, v: Value | None) -> list[int | SSAValue] | None:
        """Entries of a 0-d/1-d integer shape tensor that is known or symbolic, else None."""
        if v is None:
            return None
        if v.sym is not None:
            return list(v.sym)
        if v.const is not None and v.const.ndim <= 1 and v.const.dtype.kind in "iub" and v.const.size <= FOLD_LIMIT:
            return [int(e) for e in v.const.reshape(-1)]
        return None

    def ssa(self, v: Value) -> SSAValue:
        """The SSA value of `v`, materialized on first use."""
        if v.ssa is not None:
            return v.ssa
        if v.const is not None:
            v.ssa = self._materialize_const(v)
        elif v.sym is not None:
            v.ssa = self._materialize_sym(v)
        else:  # pragma: no cover - every Value has one of the three
            raise AssertionError("empty value")
        return v.ssa

    def _materialize_const(self, v: Value) -> SSAValue:
        from minimlir.dialects import graph

        array = v.const
        assert array is not None
        ttype = TensorType(_DTYPES[v.elem_type][1], array.shape)
        if v.is_weight and array.size > SMALL_CONSTANT and not self.embed_weights:
            name = v.name
            if name in self.params and self.params[name] is not array:
                raise OnnxImportError(f"two different weights are named '{name}'")
            self.params[name] = array
            op = graph.ParamOp(name, ttype)
        else:
            op = graph.ConstantOp(dense_attr(array, ttype))
        if v.is_weight and v.name in self.weight_locs:
            saved, self.loc = self.loc, self.weight_locs[v.name]
            try:
                return self.emit1(op)
            finally:
                self.loc = saved
        return self.emit1(op)

    def _materialize_sym(self, v: Value) -> SSAValue:
        from minimlir.dialects import graph

        entries = v.sym
        assert entries is not None
        # Shape(x) used as data: graph.shape %x is cheaper than rebuilding it dim by dim.
        src = v.shape_of
        if src is not None:
            t = self.emit1(graph.ShapeOp(src))
        else:
            t = self.emit1(graph.FromDimsOp([self.index(e) for e in entries]))
        if v.rank == 0:
            t = self.emit1(graph.ReshapeOp(t, TensorType(IntegerType(64), []), dims=[]))
        if v.elem_type != TensorProto.INT64:
            t = self.emit1(graph.CastOp(t, _DTYPES[v.elem_type][1]))
        return t

    # ---- index arithmetic (folds Python ints)

    def index(self, v: int | SSAValue) -> SSAValue:
        if isinstance(v, SSAValue):
            return v
        if v not in self._index_consts:
            op = arith.ConstantOp(IntegerAttr(v, IndexType()))
            # Constants go first in the block so that they dominate every later use.
            if self.block.first_op is not None:
                self.block.insert_op_before(op, self.block.first_op)
            else:
                self.block.add_op(op)
            self._index_consts[v] = op.result
        return self._index_consts[v]

    def read_indices(self, v: Value | None) -> list[int | SSAValue] | None:
        """Entries of a 0-d/1-d integer tensor as ints and `index` values: `sym_of(v)` when it is
        known or symbolic; otherwise (a tensor computed at run time, of static length <=
        FOLD_LIMIT) each element is read at the graph level:

            %e = graph.gather %t, %k axis 0 : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
            %s = graph.extract %e : tensor<i64> -> i64
            %i = arith.index_cast %s : i64 to index

        Those values are in `data_indices` (they may be 0 or -1 where a dim would not be).
        None when `v` is no such tensor."""
        from minimlir.dialects import graph

        sym = self.sym_of(v)
        if sym is not None or v is None:
            return sym
        if v.rank > 1 or DYNAMIC in v.shape or v.elem_type == TensorProto.BOOL:
            return None
        if v.elem_type not in (TensorProto.INT64, TensorProto.INT32, TensorProto.INT16, TensorProto.INT8):
            return None
        n = 1 if v.rank == 0 else v.shape[0]
        if n > FOLD_LIMIT:
            return None
        t = self.ssa(v)
        out: list[int | SSAValue] = []
        for k in range(n):
            e = t if v.rank == 0 else self.emit1(graph.GatherOp(t, self.scalar(k, IntegerType(64)), 0))
            i = self.emit1(arith.IndexCastOp(self.emit1(graph.ExtractOp(e)), IndexType()))
            self.data_indices.add(i)
            out.append(i)
        return out

    def iselect_eq(self, a: SSAValue, c: int, then: int | SSAValue, other: int | SSAValue) -> SSAValue:
        """a == c ? then : other, on index values."""
        eq = self.emit1(arith.CmpiOp(a, self.index(c), "eq"))
        return self.emit1(arith.SelectOp(eq, self.index(then), self.index(other)))

    def iarith(self, kind: str, a: int | SSAValue, b: int | SSAValue) -> int | SSAValue:
        """a (kind) b on dims: add sub mul div (floor, dims are ≥ 0) max."""
        if isinstance(a, int) and isinstance(b, int):
            return {"add": a + b, "sub": a - b, "mul": a * b, "div": a // b if b else 0, "max": max(a, b)}[kind]
        if kind == "mul" and (a == 1 or b == 1):
            return b if a == 1 else a
        if kind in ("add", "sub") and b == 0:
            return a
        if kind == "div" and b == 1:
            return a
        cls = {
            "add": arith.AddiOp, "sub": arith.SubiOp, "mul": arith.MuliOp,
            "div": arith.FloorDivSIOp, "max": arith.MaxSIOp,
        }[kind]
        return self.emit1(cls(self.index(a), self.index(b)))

    def dims(self, v: Value | SSAValue) -> list[int | SSAValue]:
        """The dims of a tensor: ints where static, `graph.dim` results where dynamic."""
        from minimlir.dialects import graph

        ssa = v if isinstance(v, SSAValue) else None
        shape = list(ssa.type.get_shape()) if ssa is not None else list(v.shape)  # type: ignore[union-attr]
        out: list[int | SSAValue] = []
        for i, d in enumerate(shape):
            if d >= 0:
                out.append(d)
                continue
            if ssa is None:
                ssa = self.ssa(v)  # type: ignore[arg-type]
            key = (ssa, i)
            if key not in self._dims:
                self._dims[key] = self.emit1(graph.DimOp(ssa, i))
            out.append(self._dims[key])
        return out

    # ---- shape ops with symbolic dims

    def reshape(self, x: SSAValue, dims: Sequence[int | SSAValue]) -> SSAValue:
        from minimlir.dialects import graph

        return self._to_dims(graph.ReshapeOp, x, dims)

    def _remember_dims(self, y: SSAValue, dims: Sequence[int | SSAValue]) -> None:
        """The dynamic dims of a result we built are known SSA values: `dims(y)` reuses them."""
        for i, d in enumerate(dims):
            if isinstance(d, SSAValue):
                self._dims[(y, i)] = d

    def broadcast_to(self, x: SSAValue, dims: Sequence[int | SSAValue]) -> SSAValue:
        from minimlir.dialects import graph

        return self._to_dims(graph.BroadcastToOp, x, dims)

    def _to_dims(self, op_cls, x: SSAValue, dims: Sequence[int | SSAValue]) -> SSAValue:
        """`op_cls(x)` (graph.reshape or graph.broadcast_to) with result dims `dims`, an SSA
        value per run-time dim; `x` itself when it already has that static shape."""
        shape = [d if isinstance(d, int) else DYNAMIC for d in dims]
        if list(x.type.get_shape()) == shape and all(d >= 0 for d in shape):
            return x
        t = TensorType(x.type.get_element_type(), shape)
        y = self.emit1(op_cls(x, t, dims=[d for d in dims if not isinstance(d, int)]))
        self._remember_dims(y, dims)
        return y

    def scalar(self, value: float | int | bool, elem: Attribute) -> SSAValue:
        """A 0-d graph.constant of element type `elem`."""
        from minimlir.dialects import graph

        array = np.array(value, dtype=numpy_dtype_of(elem))
        return self.emit1(graph.ConstantOp(dense_attr(array, TensorType(elem, []))))



def dense_attr(array: np.ndarray, ttype: TensorType) -> DenseIntOrFPElementsAttr:
    array = np.require(np.asarray(array), dtype=array.dtype.newbyteorder("<"), requirements="C")
    return DenseIntOrFPElementsAttr(ttype, BytesAttr(array.tobytes()))


def _location(name: str, file_label: str, line: int) -> Attribute:
    return NameLoc(StringAttr(name), FileLineColLoc(StringAttr(file_label), IntAttr(line), IntAttr(0)))


def _opsets(model: onnx.ModelProto) -> dict[str, int]:
    out = {}
    for o in model.opset_import:
        out["" if o.domain == "ai.onnx" else o.domain] = o.version
    return out


def _node_label(node: onnx.NodeProto, index: int) -> str:
    return node.name or f"{node.op_type}_{index}"


def _static_problems(model: onnx.ModelProto, value_info,
                     node_opsets: list[int] | None = None) -> list[tuple[onnx.NodeProto, int, str | None]]:
    """(node, opset, reason or None) for every node, from op type, attributes and dtypes only."""
    from minimlir.frontend._onnx_ops import OP_TABLE, op_key
    from minimlir.frontend._onnx_unsupported import domain_reason, no_importer_reason

    opsets = _opsets(model)
    known = _known_constants(model)
    out = []
    for k, node in enumerate(model.graph.node):
        domain = "" if node.domain in ("", "ai.onnx") else node.domain
        opset = opsets.get(domain, 0)
        if node_opsets is not None and domain == "":
            opset = node_opsets[k]
        reason = None
        key = op_key(domain, node.op_type)
        if domain != "" and key not in OP_TABLE:
            reason = domain_reason(node.domain, node.op_type)
        elif key not in OP_TABLE:
            reason = no_importer_reason(node.op_type)
        else:
            spec = OP_TABLE[key]
            if opset < spec.min_opset:
                reason = f"opset {opset} is older than the oldest supported ({spec.min_opset})"
            if reason is None:
                for name in list(node.input) + list(node.output):
                    info = value_info.get(name)
                    if name and info is not None and info[0] not in _DTYPES and info[0] != 0:
                        reason = dtype_reason(info[0])
                        break
            if reason is None and spec.check is not None:
                reason = spec.check(node, opset, known) if spec.check_known else spec.check(node, opset)
        out.append((node, opset, reason))
    return out


def _known_constants(model: onnx.ModelProto) -> dict[str, np.ndarray]:
    """Small constants visible without running anything: embedded initializers and Constant
    nodes' `value` (for the checks that depend on a value: an op registered with check_known)."""
    known: dict[str, np.ndarray] = {}
    tensors = [(t.name, t) for t in model.graph.initializer]
    for node in model.graph.node:
        if node.op_type == "Constant" and node.output:
            for a in node.attribute:
                if a.name == "value" and a.type == onnx.AttributeProto.TENSOR:
                    tensors.append((node.output[0], a.t))
    for name, t in tensors:
        if t.data_location != TensorProto.EXTERNAL and t.data_type in _DTYPES and np.prod(t.dims) <= FOLD_LIMIT:
            try:
                known[name] = numpy_helper.to_array(t)
            except Exception:
                continue
    return known


def _declared(model: onnx.ModelProto) -> set[str]:
    """The values the model itself gives a shape (before ONNX shape inference adds its own)."""
    return {name for name, t in _collect_value_info(model).items() if t[1] is not None}


def _collect_value_info(model: onnx.ModelProto) -> dict:
    info = {}
    for vi in list(model.graph.value_info) + list(model.graph.output) + list(model.graph.input):
        t = _type_of(vi)
        if t is not None:
            info[vi.name] = t
    return info


def _expand_functions(proto: onnx.ModelProto) -> tuple[onnx.ModelProto, list[int] | None, dict[str, int]]:
    """(the model with its function ops expanded, each node's opset, op -> nodes expanded); the
    model itself when there is nothing to expand (see `minimlir.frontend._onnx_functions`)."""
    from minimlir.frontend._onnx_functions import expand_functions, expanded_model
    from minimlir.frontend._onnx_ops import OP_TABLE

    expansion = expand_functions(proto, OP_TABLE, _infer)
    if expansion is None:
        return proto, None, {}
    return expanded_model(proto, expansion), expansion.opsets, expansion.expanded


def _infer(model: onnx.ModelProto) -> onnx.ModelProto:
    try:
        return onnx.shape_inference.infer_shapes(model, strict_mode=False, data_prop=True)
    except Exception:
        return model


NEEDS_CONSTANT = "at run time"
"""In an emitter's reason when an operand must be a constant but is computed at run time (a graph
input): `minimlir.frontend.onnx_backend` resolves those by specializing on the input's value."""


def static_input_shapes(model: onnx.ModelProto) -> bool:
    """Every graph input declares a shape of fixed dims. Then a dim the importer calls dynamic can
    only have been computed from a value (an integer input feeding Expand, Range, an If's
    branches...), and specializing on the integer inputs makes it static."""
    for vi in model.graph.input:
        t = vi.type.tensor_type
        if not t.HasField("shape") or any(not d.HasField("dim_value") for d in t.shape.dim):
            return False
    return True


def resolved_by_specializing(reason: str, static_inputs: bool) -> bool:
    """A problem `OnnxBackend` resolves by specializing on graph inputs' values: an operand that must
    be a constant (NEEDS_CONSTANT), or, when the inputs' shapes are static, a dynamic dim."""
    return NEEDS_CONSTANT in reason or (static_inputs and "dynamic" in reason)


def check_support(model: str | os.PathLike[str] | onnx.ModelProto) -> list[tuple[str, int, int, str | None]]:
    """The support table: (op type, opset, count, reason or None if supported).

    One source of truth with `import_onnx`: the static rules (op type, opset, dtypes, each op's
    `check`) and then the import itself, whose emitters reject what depends on shapes or constant
    values (a 3-D kernel, a Multinomial of rank 3, ...). Graph inputs and initializers the import
    rejects are rows too ("<input>", "<initializer>"). Not counted as problems: operands that must
    be constants but are graph inputs ("... at run time": OnnxBackend specializes on their values),
    dynamic dims of a model whose inputs have static shapes (computed from values: the same;
    `resolved_by_specializing`), and malformed models (the import raises OnnxImportError for those)."""
    proto, path = _load_model(model)
    info = _collect_value_info(_infer(proto))
    declared = _declared(proto)
    proto, node_opsets, expanded = _expand_functions(proto)
    static = _static_problems(proto, info, node_opsets)
    reasons = [reason for _, _, reason in static]
    extra: list[tuple[str, int, str]] = []
    cx = Importer(proto, "check.onnx", path.parent if path is not None else None)
    cx.value_info = info
    cx.declared = declared
    cx.node_opsets = node_opsets
    index = {_node_label(node, i): i for i, (node, _, _) in enumerate(static)}
    try:
        _build(cx)
    except UnsupportedModelError as e:
        static_inputs = static_input_shapes(proto)
        for p in e.problems:
            if resolved_by_specializing(p.reason, static_inputs):
                continue
            if p.node in index and p.op_type not in ("<input>", "<initializer>"):
                reasons[index[p.node]] = p.reason
            else:
                extra.append((p.op_type, p.opset, p.reason))
    except OnnxImportError:
        pass
    counts: dict[tuple[str, int, str | None], int] = {}
    keys = [(node.op_type, opset, reason) for (node, opset, _), reason in zip(static, reasons)] + extra
    for key in keys:
        counts[key] = counts.get(key, 0) + 1
    return sorted(((op, opset, n, r) for (op, opset, r), n in counts.items()), key=lambda r: (r[0], r[3] or ""))


def import_onnx(
    model: str | Path | onnx.ModelProto,
    *,
    embed_weights: bool = False,
    params_path: str | os.PathLike[str] | None = None,
) -> tuple[ModuleOp, dict[str, np.ndarray]]:
    """Import an ONNX model as a graph-dialect module with `func.func @main`.

    Returns the module and the weights (name -> array; empty with `embed_weights`). With
    `params_path`, the weights are also written there (see `minimlir.compiler.params`).
    Raises `OnnxImportError` for a malformed model and `UnsupportedModelError` (all problems at
    once) for a model using unsupported ops, attributes or dtypes.
    """
    proto, path = _load_model(model)
    file_label = path.name if path is not None else (proto.graph.name or "<memory>") + ".onnx"
    inferred = _infer(proto)
    declared = _declared(proto)
    proto, node_opsets, _ = _expand_functions(proto)
    cx = Importer(
        proto,
        file_label,
        path.parent if path is not None else None,
        embed_weights=embed_weights,
    )
    cx.value_info = _collect_value_info(inferred)
    cx.declared = declared
    cx.node_opsets = node_opsets
    module = _build(cx)
    if params_path is not None:
        from minimlir.compiler.params import save_params

        save_params(params_path, cx.params)
        module.attributes["graph.params_file"] = StringAttr(Path(params_path).name)
    return module, cx.params


def _build(cx: Importer) -> ModuleOp:
    from minimlir.frontend._onnx_ops import OP_TABLE, op_key

    graph_proto = cx.model.graph
    # Initializers (and their declared shapes).
    poisoned: set[str] = set()
    declared = {vi.name: _type_of(vi) for vi in list(graph_proto.input) + list(graph_proto.value_info)}
    for init in graph_proto.initializer:
        try:
            array = tensor_to_array(init, cx.base_dir)
        except Unsupported as e:
            cx.problems.append(Problem("<initializer>", 0, init.name, str(e)))
            poisoned.add(init.name)
            continue
        d = declared.get(init.name)
        if d is not None and d[1] is not None:
            if len(d[1]) != array.ndim or any(s not in (DYNAMIC, a) for s, a in zip(d[1], array.shape)):
                raise OnnxImportError(
                    f"initializer '{init.name}' has shape {list(array.shape)} but the graph declares "
                    f"{['?' if s == DYNAMIC else s for s in d[1]]}"
                )
            if d[0] != init.data_type:
                raise OnnxImportError(
                    f"initializer '{init.name}' has dtype {onnx_dtype_name(init.data_type)} but the "
                    f"graph declares {onnx_dtype_name(d[0])}"
                )
        cx.values[init.name] = cx.from_const(array, is_weight=True, name=init.name)
        cx.weight_locs[init.name] = _location(init.name, cx.file_label, 0)

    # Function arguments: graph inputs that are not initializers.
    arg_types: list[Attribute] = []
    arg_attrs: list[DictionaryAttr] = []
    arg_names: list[str] = []
    for vi in graph_proto.input:
        if vi.name in cx.values:
            continue
        t = _type_of(vi)
        if t is None or t[1] is None:
            what = "is not a tensor (sequence/optional/map)" if t is None else "has unknown rank"
            cx.problems.append(Problem("<input>", 0, vi.name, f"graph input {what}"))
            poisoned.add(vi.name)
            continue
        elem_type, shape, names = t
        if elem_type not in _DTYPES:
            cx.problems.append(Problem("<input>", 0, vi.name, dtype_reason(elem_type)))
            poisoned.add(vi.name)
            continue
        arg_types.append(TensorType(_DTYPES[elem_type][1], shape))
        attrs: dict[str, Attribute] = {"graph.name": StringAttr(vi.name)}
        if DYNAMIC in shape:  # every dynamic dim is a symbol: its dim_param, or a fresh name
            names = [n or (f"{vi.name}.dim{i}" if d == DYNAMIC else "") for i, (n, d) in enumerate(zip(names, shape))]
            attrs["graph.dim_names"] = ArrayAttr([StringAttr(n) for n in names])
        arg_attrs.append(DictionaryAttr(attrs))
        arg_names.append(vi.name)
    cx.block = Block(arg_types=arg_types)
    for name, arg in zip(arg_names, cx.block.args):
        arg.name_hint = _hint(name)
        arg.location = _location(name, cx.file_label, 0)  # type: ignore[assignment]
        cx.values[name] = cx.from_ssa(arg)

    # Nodes.
    static = _static_problems(cx.model, cx.value_info, cx.node_opsets)
    for index, (node, opset, reason) in enumerate(static):
        label = _node_label(node, index)
        if reason is not None:
            cx.problems.append(Problem(node.op_type, opset, label, reason))
            poisoned.update(node.output)
            continue
        missing = [i for i in node.input if i and i not in cx.values and i not in poisoned]
        if missing:
            raise OnnxImportError(f"node '{label}' ({node.op_type}): input '{missing[0]}' is not defined")
        reads = list(node.input)
        if any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) for a in node.attribute):
            from minimlir.frontend._onnx_control_flow import outer_reads

            reads += outer_reads(node)  # values an If / Loop / Scan body reads by name
        if any(i in poisoned for i in reads):
            poisoned.update(node.output)
            continue
        cx.loc = _location(label, cx.file_label, index + 1)
        if node.output and node.output[0] in cx.aliases:
            cx.values[node.output[0]] = cx.aliases.pop(node.output[0])
            cx.loc = None
            continue
        view = NodeView(node, opset, [cx.values[i] if i else None for i in node.input], cx)
        try:
            outs = _fold_weights(cx, view)
            if outs is None:
                outs = OP_TABLE[op_key(node.domain, node.op_type)].emit(view)
        except Unsupported as e:
            cx.problems.append(Problem(node.op_type, opset, label, str(e)))
            poisoned.update(node.output)
            continue
        except OnnxImportError:
            raise
        except Exception as e:  # a verifier/shape error: bad model or importer bug, name the node
            msg = str(e).strip().splitlines()[-1] if str(e).strip() else type(e).__name__
            raise OnnxImportError(f"node '{label}' ({node.op_type}): {msg}") from e
        for i, name in enumerate(node.output):
            if not name:
                continue
            if i >= len(outs) or outs[i] is None:
                raise Unsupported(f"{node.op_type}: output {i} is not produced")  # pragma: no cover
            out = outs[i]
            value = cx.from_ssa(out) if isinstance(out, SSAValue) else out
            _check_against_inference(cx, label, node.op_type, name, value)
            cx.values[name] = value
        cx.loc = None

    if cx.problems:
        raise UnsupportedModelError(cx.problems)

    # Results.
    cx.loc = None
    results: list[SSAValue] = []
    res_attrs: list[DictionaryAttr] = []
    for vi in graph_proto.output:
        if vi.name not in cx.values:
            raise OnnxImportError(f"graph output '{vi.name}' is not produced by any node")
        results.append(cx.ssa(cx.values[vi.name]))
        res_attrs.append(DictionaryAttr({"graph.name": StringAttr(vi.name)}))
    cx.block.add_op(func.ReturnOp(*results))
    _drop_dead_ops(cx.block)

    fn = func.FuncOp(
        "main",
        FunctionType.from_lists(arg_types, [r.type for r in results]),
        Region(cx.block),
        arg_attrs=ArrayAttr(arg_attrs),
        res_attrs=ArrayAttr(res_attrs),
    )
    module = ModuleOp([fn])
    from minimlir.passes.graph._symbolic_dims import annotate

    annotate(fn)  # graph.dims / graph.dim_checks: the symbolic dims a reader sees
    try:
        module.verify()
    except Exception as e:
        raise OnnxImportError(f"internal error: the imported module does not verify: {e}") from e
    return module


RANDOM_OPS = frozenset({"RandomUniform", "RandomUniformLike", "RandomNormal", "RandomNormalLike", "Bernoulli",
                        "Multinomial"})
"""Ops whose output is a sample (frontend/_onnx_ops_random.py): never evaluated by the onnx
reference at import time, whose generator is not ours."""

_NO_FOLD = frozenset({"Constant", "Dropout"}) | RANDOM_OPS


def reference_eval(view: NodeView) -> list[np.ndarray] | None:
    """`view`'s node evaluated by the onnx package's reference implementation on its inputs' known
    constants (every present input has one): an array per present output, or None when the
    reference cannot evaluate it."""
    from onnx import helper
    from onnx.reference import ReferenceEvaluator

    node = view.proto
    names = [f"in{i}" if name else "" for i, name in enumerate(node.input)]
    outs = [f"out{i}" if name else "" for i, name in enumerate(node.output)]
    copy = helper.make_node(node.op_type, names, outs, domain=node.domain)
    copy.attribute.extend(node.attribute)
    feeds = {n: v.const for n, v in zip(names, view.inputs) if n and v is not None}
    graph_proto = helper.make_graph(
        [copy], "fold",
        [helper.make_tensor_value_info(n, _NP_TO_ONNX[np.dtype(a.dtype)], a.shape) for n, a in feeds.items()],
        [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None) for o in outs if o],
    )
    model = helper.make_model(graph_proto, opset_imports=[helper.make_opsetid("", view.opset)])
    try:
        return [np.asarray(a) for a in ReferenceEvaluator(model).run(None, feeds)]
    except Exception:  # the reference cannot evaluate it
        return None


def _fold_weights(cx: Importer, view: NodeView) -> list | None:
    """Weight folding (ONNX Runtime's and TVM's constant folding): a node whose inputs are all
    known constants, at least one of them a weight bigger than FOLD_LIMIT, is evaluated at import
    time by the onnx package's reference implementation; its outputs become weights (graph.param
    when big), so weight preprocessing (a transposed or rescaled initializer, ...) does not run on
    every call. Small shape computations are folded by the op emitters themselves; None: not folded.
    """
    node = view.proto
    if node.op_type in _NO_FOLD or node.domain not in ("", "ai.onnx"):
        return None
    inputs = [v for v in view.inputs if v is not None]
    if not inputs or any(v.const is None for v in inputs):
        return None
    if not any(v.is_weight and v.const.size > FOLD_LIMIT for v in inputs):
        return None
    results = reference_eval(view)
    if results is None:
        return None
    values: list = []
    for name, array in zip((o for o in node.output if o), results):
        if array.dtype not in _NP_TO_ONNX:
            return None
        values.append(cx.from_const(array.copy(), is_weight=True, name=name))  # (ascontiguousarray: 0-d -> [1])
        cx.weight_locs.setdefault(name, cx.loc)
    full = iter(values)
    return [next(full) if o else None for o in node.output]


def _hint(name: str) -> str | None:
    import re

    hint = re.sub(r"[^A-Za-z0-9_$.]", "_", name)
    if not hint or hint[0].isdigit():
        hint = "v" + hint
    return hint


def _check_against_inference(cx: Importer, label: str, op_type: str, name: str, value: Value) -> None:
    """A static dim we computed must agree with the shape the model declares (else the model is
    inconsistent). Shapes only ONNX shape inference gave are not checked: it can be wrong where
    onnxruntime and the op's definition agree with us (a ceil_mode pool whose last window would
    start in the padding: ONNX infers one more output, onnxruntime drops that window and warns
    that the inferred shape does not match), and a wrong dim propagates to everything after it."""
    info = cx.value_info.get(name)
    if info is None or info[1] is None or (cx.declared is not None and name not in cx.declared):
        return
    shape = value.shape
    if len(info[1]) != len(shape) or any(
        a >= 0 and b >= 0 and a != b for a, b in zip(info[1], shape)
    ):
        fmt = lambda s: "x".join("?" if d < 0 else str(d) for d in s)  # noqa: E731
        raise OnnxImportError(
            f"node '{label}' ({op_type}): output '{name}' has shape {fmt(shape) or 'scalar'} but the "
            f"model declares {fmt(info[1]) or 'scalar'}"
        )


def _drop_dead_ops(block: Block) -> None:
    """Erase ops none of whose results is used (folded shape computations); graph ops are pure."""
    changed = True
    while changed:
        changed = False
        for op in reversed(list(block.ops)):
            if op.results and all(not r.uses for r in op.results):
                block.erase_op(op)
                changed = True

