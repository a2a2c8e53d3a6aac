"""The ONNX op table: one emitter per ONNX op type, each documenting its decomposition.

An emitter gets a `NodeView` (attributes, opset, inputs as `Value`s) and returns one entry per
ONNX output: an SSA value, or a `Value` (a folded constant, a symbolic shape). It raises
`Unsupported(reason)` for what it cannot import; the importer collects those for all nodes.
Emitters read inputs with `cx.ssa(v)` (materializing constants lazily) or, for shape inputs,
`cx.sym_of(v)` (a list of ints and `index` SSA values), so shape chains fold.

`graph.slice` starts/ends follow the rule documented on `graph.SliceOp`: for a static dim the
importer normalizes them with `graph.normalize_slice` (ONNX semantics: negative counts from the
end, then clamped; for a negative step an end of -1 means "before index 0"); for a dynamic dim the
raw ONNX values are kept (INT64_MAX = "to the end") and the lowering normalizes at run time.
A start/end known only at run time (symbolic, or read from tensor data with
`Importer.read_indices`) is a `bounds` index operand of graph.slice, normalized at run time too.
Shape inputs of Reshape, Expand and ConstantOfShape are read the same way: ints, graph.dim
values, or elements of a run-time tensor (graph.gather + graph.extract + arith.index_cast).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import TensorProto
from xdsl.dialects.builtin import AnyFloat, Float16Type, TensorType, f32
from xdsl.ir import SSAValue

from minimlir.dialects import graph
from minimlir.frontend.onnx_import import (
    _DTYPES,
    DYNAMIC,
    FOLD_LIMIT,
    INT64_MAX,
    Importer,
    NodeView,
    Unsupported,
    Value,
    element_type,
    onnx_dtype_name,
)


@dataclass(frozen=True)
class OpSpec:
    emit: Callable[[NodeView], list]
    check: Callable[..., str | None] | None = None
    """check(node, opset) -> reason or None; with check_known, check(node, opset, known) where
    known maps value names to the small constants of the model (initializers, Constant nodes)."""
    min_opset: int = 1
    check_known: bool = False


OP_TABLE: dict[str, OpSpec] = {}


def op_key(domain: str, op_type: str) -> str:
    """The OP_TABLE key of `op_type` in `domain`: the op type itself in the default domain (""
    or "ai.onnx"), "<domain>:<op type>" in another one (ai.onnx.ml: frontend/_onnx_ops_ml.py)."""
    return op_type if domain in ("", "ai.onnx") else f"{domain}:{op_type}"


def onnx_op(*op_types: str, check=None, min_opset: int = 1, check_known: bool = False, domain: str = ""):
    """Register the decorated emitter for `op_types` of `domain` (min_opset: of that domain)."""

    def register(fn):
        for t in op_types:
            OP_TABLE[op_key(domain, t)] = OpSpec(fn, check, min_opset, check_known)
        return fn

    return register


# --------------------------------------------------------------------------------------------
# helpers


def _attr(node: onnx.NodeProto, name: str, default=None):
    for a in node.attribute:
        if a.name == name:
            return onnx.helper.get_attribute_value(a)
    return default


def _s(v) -> str:
    return v.decode() if isinstance(v, bytes) else v


def _ssa(n: NodeView, i: int) -> SSAValue:
    v = n.input(i)
    if v is None:
        raise Unsupported(f"missing input {i}")
    return n.cx.ssa(v)


def _shape(x: SSAValue) -> list[int]:
    return [DYNAMIC if d < 0 else d for d in x.type.get_shape()]  # type: ignore[attr-defined]


def _elem(x: SSAValue):
    return x.type.get_element_type()  # type: ignore[attr-defined]


def _is_float(x: SSAValue) -> bool:
    return isinstance(_elem(x), AnyFloat)


def _axis(axis: int, rank: int) -> int:
    if not -rank <= axis < max(rank, 1):
        raise Unsupported(f"axis {axis} out of range for rank {rank}")
    return axis + rank if axis < 0 else axis


def _const_input(n: NodeView, i: int, what: str) -> np.ndarray | None:
    """A constant input (None when absent); dynamic -> Unsupported."""
    v = n.input(i)
    if v is None:
        return None
    if v.const is not None:
        return np.asarray(v.const)
    sym = n.cx.sym_of(v)
    if sym is not None and all(isinstance(e, int) for e in sym):
        return np.array(sym)
    raise Unsupported(f"{what} must be a constant (it is computed at run time)")


def _ints_from(n: NodeView, name: str, input_index: int, since: int, what: str | None = None):
    """An int-list parameter that is an attribute before opset `since`, an input from it on."""
    if n.opset < since:
        v = n.attr(name)
        return None if v is None else [int(e) for e in v]
    c = _const_input(n, input_index, what or name)
    return None if c is None else [int(e) for e in c.reshape(-1)]


def _fold_ok(*vals: Value | None) -> bool:
    return all(v is None or (v.const is not None and v.const.size <= FOLD_LIMIT) for v in vals)


def _dense_dims(dims) -> list[int]:
    return [d if isinstance(d, int) else DYNAMIC for d in dims]


# --------------------------------------------------------------------------------------------
# elementwise


# Unary ops import from what the graph op declares (ONNX, ONNX_ATTRS, NUMPY_FOLD on the class:
# frontend/_onnx_unary.py); Clip and Gelu below are imported by hand, each says why.


_NP_BINARY = {
    "Add": np.add,
    "Sub": np.subtract,
    "Mul": np.multiply,
    "And": np.logical_and,
    "Or": np.logical_or,
    "Equal": np.equal,
    "Greater": np.greater,
    "Less": np.less,
    "GreaterOrEqual": np.greater_equal,
    "LessOrEqual": np.less_equal,
    "Max": np.maximum,
    "Min": np.minimum,
}
_GRAPH_BINARY = {
    "Add": graph.AddOp,
    "Sub": graph.SubOp,
    "Mul": graph.MulOp,
    "Div": graph.DivOp,
    "Pow": graph.PowOp,
    "And": graph.AndOp,
    "Or": graph.OrOp,
    "Equal": graph.EqOp,
    "Greater": graph.GtOp,
    "Less": graph.LtOp,
    "GreaterOrEqual": graph.GeOp,
    "LessOrEqual": graph.LeOp,
    "Max": graph.MaxOp,
    "Min": graph.MinOp,
}
_SYM_BINARY = {"Add": "add", "Sub": "sub", "Mul": "mul", "Div": "div"}


def _check_legacy_broadcast(node: onnx.NodeProto, opset: int) -> str | None:
    if opset < 7 and _attr(node, "axis") is not None:
        return "legacy 'broadcast' with 'axis' (opset < 7)"
    return None


def _binary_values(cx: Importer, op_type: str, a: Value, b: Value) -> Value | SSAValue:
    # Shape arithmetic (dims * dims, dims - 1, ...): stays symbolic.
    sa, sb = cx.sym_of(a), cx.sym_of(b)
    if (
        op_type in _SYM_BINARY
        and sa is not None
        and sb is not None
        and (a.sym is not None or b.sym is not None)
        and a.elem_type == b.elem_type
        and (len(sa) == len(sb) or len(sa) == 1 or len(sb) == 1)
    ):
        n = max(len(sa), len(sb))
        sa, sb = sa * (n // len(sa)), sb * (n // len(sb))
        entries = [cx.iarith(_SYM_BINARY[op_type], x, y) for x, y in zip(sa, sb)]
        return cx.from_sym(entries, scalar=a.rank == 0 and b.rank == 0, elem_type=a.elem_type)
    if _fold_ok(a, b) and a.const is not None and b.const is not None and op_type in _NP_BINARY | {"Div": 0}:
        if op_type == "Div":
            r = np.divide(a.const, b.const)
            if a.const.dtype.kind in "iu":
                r = np.trunc(r)
            return cx.from_const(r.astype(a.const.dtype))
        r = _NP_BINARY[op_type](a.const, b.const)
        return cx.from_const(np.asarray(r if r.dtype == np.bool_ else r.astype(a.const.dtype)))
    lhs, rhs = cx.ssa(a), cx.ssa(b)
    if op_type == "Pow" and _elem(rhs) != _elem(lhs):
        rhs = cx.emit1(graph.CastOp(rhs, _elem(lhs)))
    return cx.emit1(_GRAPH_BINARY[op_type](lhs, rhs))


@onnx_op("Add", "Sub", "Mul", "Div", "Pow", "And", "Or", "Equal", "Greater", "Less", "GreaterOrEqual",
         "LessOrEqual", check=_check_legacy_broadcast)
def emit_binary(n: NodeView) -> list:
    """Add Sub Mul Div Pow And Or Equal Greater Less GreaterOrEqual LessOrEqual ->
    graph.add/sub/mul/div/pow/and/or/eq/gt/lt/ge/le (NumPy broadcasting). Pow with an exponent of
    another type casts the exponent to the base's type (graph.cast). Integer shape arithmetic on
    symbolic shapes is folded into index ops."""
    return [_binary_values(n.cx, n.op_type, n.input(0), n.input(1))]


@onnx_op("Max", "Min", "Sum")
def emit_variadic(n: NodeView) -> list:
    """Max/Min/Sum(x0, x1, ...) -> a left-to-right chain of graph.max/min/add."""
    kind = {"Max": "Max", "Min": "Min", "Sum": "Add"}[n.op_type]
    vals = [v for v in n.inputs if v is not None]
    acc = vals[0]
    for v in vals[1:]:
        r = _binary_values(n.cx, kind, acc, v)
        acc = n.cx.from_ssa(r) if isinstance(r, SSAValue) else r
    return [acc]


@onnx_op("Mean")
def emit_mean(n: NodeView) -> list:
    """Mean(x0, ..., xk-1) -> graph.add chain, then graph.div by a 0-d constant k."""
    cx = n.cx
    vals = [v for v in n.inputs if v is not None]
    acc = cx.ssa(vals[0])
    for v in vals[1:]:
        acc = cx.emit1(graph.AddOp(acc, cx.ssa(v)))
    if len(vals) == 1:
        return [acc]
    return [cx.emit1(graph.DivOp(acc, cx.scalar(float(len(vals)), _elem(acc))))]


@onnx_op("Mod")
def emit_mod(n: NodeView) -> list:
    """Mod(a, b, fmod) -> graph.mod {fmod}: fmod=1 is C's fmod; fmod=0 is np.mod (sign of the
    divisor), which graph.mod has for integers only. For floats with fmod=0:
    r = graph.mod {fmod = true} (C semantics, also for inf/NaN/-0), then
    where(r != 0 and (r < 0) xor (b < 0), r + b, r) (np.mod(-3, inf) = inf), and a zero r takes
    b's sign: where(r == 0, where(b < 0, -0.0, 0.0), ...) (np.mod(0, -2) = -0)."""
    cx = n.cx
    fmod = bool(n.attr("fmod", 0))
    a, b = _ssa(n, 0), _ssa(n, 1)
    if not _is_float(a) or fmod:
        return [cx.emit1(graph.ModOp(a, b, fmod=fmod))]
    r = cx.emit1(graph.ModOp(a, b, fmod=True))
    zero = cx.scalar(0.0, _elem(a))
    is_zero = cx.emit1(graph.EqOp(r, zero))
    b_neg = cx.emit1(graph.LtOp(b, zero))
    signs_differ = cx.emit1(graph.XorOp(cx.emit1(graph.LtOp(r, zero)), b_neg))
    fix = cx.emit1(graph.AndOp(cx.emit1(graph.NotOp(is_zero)), signs_differ))
    y = cx.emit1(graph.WhereOp(fix, cx.emit1(graph.AddOp(r, b)), r))
    signed_zero = cx.emit1(graph.WhereOp(b_neg, cx.scalar(-0.0, _elem(a)), zero))
    return [cx.emit1(graph.WhereOp(is_zero, signed_zero, y))]


@onnx_op("Where")
def emit_where(n: NodeView) -> list:
    """Where(cond, a, b) -> graph.where (3-way broadcasting)."""
    return [n.cx.emit1(graph.WhereOp(_ssa(n, 0), _ssa(n, 1), _ssa(n, 2)))]


def _check_gelu(node, opset):
    a = _s(_attr(node, "approximate", "none"))
    return None if a in ("none", "tanh") else f"approximate='{a}'"


@onnx_op("Gelu", check=_check_gelu)
def emit_gelu(n: NodeView) -> list:
    """Gelu(x, approximate) -> graph.gelu {approximate = "none" | "tanh"}. By hand, not declared on
    graph.gelu: `approximate` is a string attribute, and an unknown one is refused by the check
    before import (with every other node's reason)."""
    x = _ssa(n, 0)
    if not _is_float(x):
        raise Unsupported(f"Gelu of {_elem(x)}")
    return [n.cx.emit1(graph.GeluOp(x, approximate=_s(n.attr("approximate", "none"))))]


@onnx_op("Clip")
def emit_clip(n: NodeView) -> list:
    """Clip(x, min, max) -> graph.clip {min, max} for float x with constant bounds (attributes
    before opset 11, optional inputs from 11); integer x or run-time bounds -> graph.max with the
    lower bound, then graph.min with the upper one (0-d tensors). By hand, not declared on
    graph.clip: the bounds are inputs since opset 11, and the op chosen depends on them."""
    cx = n.cx
    x = _ssa(n, 0)
    if n.opset < 11:
        lo, hi = n.attr("min"), n.attr("max")
        lo_v = hi_v = None
    else:
        lo_v, hi_v = n.input(1), n.input(2)
        lo = float(lo_v.const) if lo_v is not None and lo_v.const is not None else None
        hi = float(hi_v.const) if hi_v is not None and hi_v.const is not None else None
    dynamic = (lo_v is not None and lo_v.const is None) or (hi_v is not None and hi_v.const is None)
    if _is_float(x) and not dynamic:
        if lo is not None and hi is not None and float(lo) > float(hi):
            lo = hi  # ONNX: min > max sets every value to max (as numpy.clip; graph.clip wants min <= max)
        return [cx.emit1(graph.ClipOp(x, min=None if lo is None else float(lo), max=None if hi is None else float(hi)))]
    y = x
    for bound_v, bound, cls in ((lo_v, lo, graph.MaxOp), (hi_v, hi, graph.MinOp)):
        if bound_v is not None:
            y = cx.emit1(cls(y, cx.ssa(bound_v)))
        elif bound is not None:
            y = cx.emit1(cls(y, cx.scalar(bound, _elem(x))))
    return [y]


# --------------------------------------------------------------------------------------------
# type and identity


def _check_cast(node, opset):
    to = _attr(node, "to")
    return None if to in _DTYPES else f"cast to {onnx_dtype_name(to)}"


@onnx_op("Cast", check=_check_cast)
def emit_cast(n: NodeView) -> list:
    """Cast(x, to) -> graph.cast (nothing when the type does not change). Constants are cast at
    import time; a symbolic shape stays symbolic when cast to another integer type."""
    cx = n.cx
    to = int(n.attr("to"))
    x = n.input(0)
    if x.elem_type == to:
        return [x]
    if x.const is not None and x.const.size <= FOLD_LIMIT:
        return [cx.from_const(x.const.astype(_DTYPES[to][0]))]
    if x.sym is not None and to in (TensorProto.INT64, TensorProto.INT32):
        return [cx.from_sym(x.sym, scalar=x.rank == 0, elem_type=to)]
    return [cx.emit1(graph.CastOp(cx.ssa(x), element_type(to)))]


@onnx_op("Identity")
def emit_identity(n: NodeView) -> list:
    """Identity(x) -> x (no op)."""
    return [n.input(0)]


def _check_constant(node, opset):
    for a in node.attribute:
        if a.name not in ("value", "value_float", "value_floats", "value_int", "value_ints"):
            return f"attribute '{a.name}'"
    return None


@onnx_op("Constant", check=_check_constant)
def emit_constant(n: NodeView) -> list:
    """Constant -> a known value: graph.constant when used (≤ 16 elements or --embed-weights),
    else graph.param named after the output (the data goes to the params file)."""
    cx = n.cx
    if n.has_attr("value"):
        array = n.attr("value")
    elif n.has_attr("value_float"):
        array = np.array(n.attr("value_float"), np.float32)
    elif n.has_attr("value_floats"):
        array = np.array(n.attr("value_floats"), np.float32)
    elif n.has_attr("value_int"):
        array = np.array(n.attr("value_int"), np.int64)
    elif n.has_attr("value_ints"):
        array = np.array(n.attr("value_ints"), np.int64)
    else:
        raise Unsupported("no value attribute")
    v = cx.from_const(array, is_weight=True, name=n.proto.output[0])
    cx.weight_locs.setdefault(v.name, cx.loc)
    return [v]


# --------------------------------------------------------------------------------------------
# shape computations


@onnx_op("Shape")
def emit_shape(n: NodeView) -> list:
    """Shape(x)[start:end] -> a symbolic shape: ints for static dims, graph.dim for dynamic ones.
    Only when used as data does it become a tensor (graph.shape, or graph.from_dims for a part)."""
    cx = n.cx
    x = n.input(0)
    rank = x.rank
    start, end = int(n.attr("start", 0)), int(n.attr("end", rank))
    start = min(max(start + rank if start < 0 else start, 0), rank)
    end = min(max(end + rank if end < 0 else end, 0), rank)
    if all(d != DYNAMIC for d in x.shape[start:end]):
        return [cx.from_const(np.array(x.shape[start:end], np.int64))]
    v = cx.from_sym(cx.dims(x)[start:end])
    if (start, end) == (0, rank):
        v.shape_of = cx.ssa(x)
    return [v]


@onnx_op("ConstantOfShape")
def emit_constant_of_shape(n: NodeView) -> list:
    """ConstantOfShape(shape, value) -> a folded constant when small and static, else a 0-d
    graph.constant broadcast to the (symbolic or run-time, see `read_indices`) shape with
    graph.broadcast_to."""
    cx = n.cx
    dims = cx.read_indices(n.input(0))
    if dims is None:
        raise Unsupported("the shape is not a 1-D integer tensor of static length")
    value = n.attr("value")
    value = np.zeros(1, np.float32) if value is None else np.asarray(value).reshape(-1)
    if all(isinstance(d, int) for d in dims):
        # A static shape folds: small results are constants, big ones weights (the light model zoo
        # builds every weight this way), materialized once rather than on every call.
        array = np.full(dims, value[0], value.dtype)
        if array.size <= FOLD_LIMIT:
            return [cx.from_const(array)]
        v = cx.from_const(array, is_weight=True, name=n.proto.output[0])
        cx.weight_locs.setdefault(v.name, cx.loc)
        return [v]
    elem = _DTYPES[_onnx_type_of(value.dtype)][1]
    return [cx.broadcast_to(cx.scalar(value[0].item(), elem), dims)]


def _onnx_type_of(dtype: np.dtype) -> int:
    for k, (d, _) in _DTYPES.items():
        if d == dtype:
            return k
    raise Unsupported(f"dtype {dtype}")


def _range_scalar(cx: Importer, v: Value, what: str) -> Value:
    if v.rank == 0:
        return v
    if any(d == DYNAMIC for d in v.shape) or int(np.prod(v.shape)) != 1:
        shape = "x".join("?" if d == DYNAMIC else str(d) for d in v.shape)
        raise Unsupported(f"Range: {what} must be a scalar (or a 1-element tensor), got a tensor of shape {shape}")
    if v.const is not None:
        return cx.from_const(v.const.reshape(()))
    return cx.from_ssa(cx.reshape(cx.ssa(v), []))


@onnx_op("Range")
def emit_range(n: NodeView) -> list:
    """Range(start, limit, delta) -> folded when the inputs are constant and the result small,
    else graph.range on 0-d tensors (1-D result of dynamic length). A bound given as a 1-element
    tensor ([1], as onnxruntime accepts) is reshaped to 0-d."""
    cx = n.cx
    a, b, c = (_range_scalar(cx, n.input(i), what) for i, what in enumerate(("start", "limit", "delta")))
    if all(v.const is not None for v in (a, b, c)):
        r = np.arange(a.const.item(), b.const.item(), c.const.item()).astype(a.const.dtype)
        if r.size <= FOLD_LIMIT:
            return [cx.from_const(r)]
        result = TensorType(_DTYPES[a.elem_type][1], [r.size])
        return [cx.emit1(graph.RangeOp(cx.ssa(a), cx.ssa(b), cx.ssa(c), result_type=result))]
    return [cx.emit1(graph.RangeOp(cx.ssa(a), cx.ssa(b), cx.ssa(c)))]


def _reshape_dims(cx: Importer, in_dims, entries, allowzero: bool):
    """Output dims of Reshape: 0 copies the input dim (unless allowzero), one -1 is inferred."""
    if any(isinstance(e, SSAValue) and e in cx.data_indices for e in entries):
        return _reshape_dims_runtime(cx, in_dims, entries, allowzero)
    out: list = []
    infer_at = None
    for i, e in enumerate(entries):
        if isinstance(e, int) and e == 0 and not allowzero:
            if i >= len(in_dims):
                raise Unsupported("Reshape: 0 refers to a dim past the input rank")
            out.append(in_dims[i])
        elif isinstance(e, int) and e == -1:
            if infer_at is not None:
                raise Unsupported("Reshape: more than one -1")
            infer_at = i
            out.append(None)
        elif isinstance(e, int) and e < -1:
            raise Unsupported(f"Reshape: invalid dim {e}")
        else:
            out.append(e)
    if infer_at is not None:
        num = list(in_dims)
        den = [d for d in out if d is not None]
        # Cancel dims that appear on both sides (the same SSA value or the same int).
        for d in list(den):
            for j, m in enumerate(num):
                if m is d or (isinstance(m, int) and isinstance(d, int) and m == d):
                    num.pop(j)
                    den.remove(d)
                    break
        total: int | SSAValue = 1
        for d in num:
            total = cx.iarith("mul", total, d)
        known: int | SSAValue = 1
        for d in den:
            known = cx.iarith("mul", known, d)
        if isinstance(total, int) and isinstance(known, int) and (known == 0 or total % known):
            raise Unsupported(f"Reshape: cannot infer -1 ({total} elements into {known})")
        out[infer_at] = cx.iarith("div", total, known)
    return out


def _reshape_dims_runtime(cx: Importer, in_dims, entries, allowzero: bool):
    """`_reshape_dims` where some entries are read from tensor data at run time: such an entry
    may be 0 (copy the input dim) or -1 (inferred), decided with arith.select on index values:

        d_i = (e_i == 0) ? in_dim_i : e_i               (unless allowzero)
        known = prod over i of ((d_i == -1) ? 1 : d_i)
        out_i = (d_i == -1) ? prod(in_dims) / known : d_i
    """
    out: list = []
    maybe_infer: list[int] = []
    for i, e in enumerate(entries):
        if isinstance(e, int):
            if e == 0 and not allowzero:
                if i >= len(in_dims):
                    raise Unsupported("Reshape: 0 refers to a dim past the input rank")
                e = in_dims[i]
            elif e < -1:
                raise Unsupported(f"Reshape: invalid dim {e}")
            elif e == -1:
                maybe_infer.append(i)
        elif e in cx.data_indices:
            if not allowzero and i < len(in_dims):
                e = cx.iselect_eq(e, 0, in_dims[i], e)
            maybe_infer.append(i)
        out.append(e)
    if not maybe_infer:
        return out
    total: int | SSAValue = 1
    for d in in_dims:
        total = cx.iarith("mul", total, d)
    known: int | SSAValue = 1
    for i, d in enumerate(out):
        if isinstance(d, int) and d == -1:
            continue
        known = cx.iarith("mul", known, cx.iselect_eq(d, -1, 1, d) if i in maybe_infer else d)
    inferred = cx.iarith("div", total, cx.iarith("max", known, 1))
    for i in maybe_infer:
        d = out[i]
        out[i] = inferred if isinstance(d, int) else cx.iselect_eq(d, -1, inferred, d)
    return out


@onnx_op("Reshape")
def emit_reshape(n: NodeView) -> list:
    """Reshape(x, shape) -> graph.reshape with one index operand per dynamic result dim (0 and
    -1 resolved with index arithmetic on graph.dim values). The shape is a constant, a symbolic
    shape (Shape/Gather/Concat/... chains) or a tensor read at run time (`read_indices`: a run-time
    entry that is 0 or -1 is resolved with arith.select); constants are reshaped at import time."""
    cx = n.cx
    x = n.input(0)
    entries = cx.read_indices(n.input(1))
    if entries is None:
        raise Unsupported("the target shape is not a 1-D integer tensor of static length")
    allowzero = bool(n.attr("allowzero", 0)) if n.opset >= 14 else False
    if x.const is not None and x.const.size <= FOLD_LIMIT and all(isinstance(e, int) for e in entries):
        shape = [x.const.shape[i] if e == 0 and not allowzero else e for i, e in enumerate(entries)]
        return [cx.from_const(x.const.reshape(shape))]
    out = _reshape_dims(cx, cx.dims(x), entries, allowzero)
    if x.sym is not None and len(out) <= 1 and all(isinstance(d, int) for d in out):
        return [cx.from_sym(x.sym, scalar=len(out) == 0, elem_type=x.elem_type)]
    return [cx.reshape(cx.ssa(x), out)]


def _broadcast_dims(cx: Importer, a: list, b: list) -> list:
    r = max(len(a), len(b))
    a = [1] * (r - len(a)) + a
    b = [1] * (r - len(b)) + b
    out = []
    for x, y in zip(a, b):
        if isinstance(x, int) and x == 1:
            out.append(y)
        elif isinstance(y, int) and y == 1:
            out.append(x)
        elif isinstance(x, int) and isinstance(y, int):
            if x != y:
                raise Unsupported(f"shapes do not broadcast ({x} vs {y})")
            out.append(x)
        elif isinstance(x, int):
            out.append(x)
        elif isinstance(y, int):
            out.append(y)
        else:
            out.append(x if x is y else cx.iarith("max", x, y))
    return out


@onnx_op("Expand")
def emit_expand(n: NodeView) -> list:
    """Expand(x, shape) -> graph.broadcast_to with the broadcast of x's dims and `shape` (a
    constant, symbolic or run-time shape; dynamic dims as index operands, max() where both are
    dynamic, which also resolves a run-time 1)."""
    cx = n.cx
    x = n.input(0)
    entries = cx.read_indices(n.input(1))
    if entries is None:
        raise Unsupported("the target shape is not a 1-D integer tensor of static length")
    out = _broadcast_dims(cx, cx.dims(x), entries)
    if x.const is not None and all(isinstance(d, int) for d in out) and math.prod(out) <= FOLD_LIMIT:
        return [cx.from_const(np.broadcast_to(x.const, out).copy())]
    return [cx.broadcast_to(cx.ssa(x), out)]


def _axes_list(n: NodeView, since: int) -> list[int] | None:
    return _ints_from(n, "axes", 1, since)


@onnx_op("Unsqueeze")
def emit_unsqueeze(n: NodeView) -> list:
    """Unsqueeze(x, axes) -> graph.reshape inserting 1s (axes: attribute before opset 13,
    input from 13). A scalar symbolic dim becomes a 1-element symbolic shape."""
    cx = n.cx
    x = n.input(0)
    axes = _axes_list(n, 13)
    if axes is None:
        raise Unsupported("missing axes")
    rank = x.rank + len(axes)
    axes = sorted(_axis(a, rank) for a in axes)
    if x.sym is not None and x.rank == 0 and axes == [0]:
        return [cx.from_sym(x.sym, elem_type=x.elem_type)]
    if x.const is not None and x.const.size <= FOLD_LIMIT:
        return [cx.from_const(np.expand_dims(x.const, tuple(axes)))]
    dims = list(cx.dims(x))
    for a in axes:
        dims.insert(a, 1)
    return [cx.reshape(cx.ssa(x), dims)]


@onnx_op("Squeeze")
def emit_squeeze(n: NodeView) -> list:
    """Squeeze(x, axes) -> graph.reshape dropping the axes (all static 1-dims when no axes;
    a dynamic dim there is unsupported since it may or may not be 1)."""
    cx = n.cx
    x = n.input(0)
    axes = _axes_list(n, 13)
    if axes is None:
        if DYNAMIC in x.shape:
            raise Unsupported("Squeeze without axes on a tensor with dynamic dims")
        axes = [i for i, d in enumerate(x.shape) if d == 1]
    axes = sorted({_axis(a, x.rank) for a in axes})
    for a in axes:
        if x.shape[a] not in (1, DYNAMIC):
            raise Unsupported(f"Squeeze of dim {a} of size {x.shape[a]}")
    if x.sym is not None and x.rank == 1 and axes == [0]:
        return [cx.from_sym(x.sym, scalar=True, elem_type=x.elem_type)]
    if x.const is not None and x.const.size <= FOLD_LIMIT:
        return [cx.from_const(np.squeeze(x.const, tuple(axes)))]
    dims = [d for i, d in enumerate(cx.dims(x)) if i not in axes]
    return [cx.reshape(cx.ssa(x), dims)]


def _flatten_dims(cx: Importer, dims, axis: int) -> tuple[int | SSAValue, int | SSAValue]:
    """(prod(dims[:axis]), prod(dims[axis:])): the 2-D shape Flatten and legacy Softmax use."""
    a: int | SSAValue = 1
    b: int | SSAValue = 1
    for d in dims[:axis]:
        a = cx.iarith("mul", a, d)
    for d in dims[axis:]:
        b = cx.iarith("mul", b, d)
    return a, b


@onnx_op("Flatten")
def emit_flatten(n: NodeView) -> list:
    """Flatten(x, axis) -> graph.reshape to (prod(dims[:axis]), prod(dims[axis:]))."""
    cx = n.cx
    x = n.input(0)
    axis = int(n.attr("axis", 1))
    axis = axis + x.rank if axis < 0 else axis
    a, b = _flatten_dims(cx, cx.dims(x), axis)
    return [cx.reshape(cx.ssa(x), [a, b])]


@onnx_op("Concat")
def emit_concat(n: NodeView) -> list:
    """Concat(xs, axis) -> graph.concat; 1-D symbolic/constant shapes concatenate symbolically."""
    cx = n.cx
    vals = [v for v in n.inputs if v is not None]
    rank = vals[0].rank
    axis = _axis(int(n.attr("axis", 0)), rank)
    syms = [cx.sym_of(v) for v in vals]
    if rank == 1 and all(s is not None for s in syms) and len({v.elem_type for v in vals}) == 1:
        return [cx.from_sym([e for s in syms for e in s], elem_type=vals[0].elem_type)]
    if all(v.const is not None for v in vals) and sum(v.const.size for v in vals) <= FOLD_LIMIT:
        return [cx.from_const(np.concatenate([v.const for v in vals], axis))]
    xs = [cx.ssa(v) for v in vals if 0 not in v.shape]
    if len(xs) == 1:
        return [xs[0]]
    return [cx.emit1(graph.ConcatOp(xs, axis))]


@onnx_op("Gather")
def emit_gather(n: NodeView) -> list:
    """Gather(data, indices, axis) -> graph.gather. Constant negative indices are normalized at
    import time; run-time indices get `where(i < 0, i + dim, i)` (graph.lt/add/where). Gathering
    from a symbolic shape with constant indices picks its entries (no op)."""
    cx = n.cx
    data, idx = n.input(0), n.input(1)
    axis = _axis(int(n.attr("axis", 0)), data.rank)
    idx_c = idx.const if idx.const is not None else None
    dsym = cx.sym_of(data) if data.rank == 1 else None
    if dsym is not None and idx_c is not None and idx_c.ndim <= 1 and (data.sym is not None or data.const is not None):
        picked = [dsym[int(i)] for i in idx_c.reshape(-1)]
        return [cx.from_sym(picked, scalar=idx_c.ndim == 0, elem_type=data.elem_type)]
    if data.const is not None and idx_c is not None and data.const.size <= FOLD_LIMIT:
        return [cx.from_const(np.take(data.const, idx_c, axis=axis))]
    dim = data.shape[axis]
    if idx_c is not None and (dim != DYNAMIC or (idx_c >= 0).all()):
        if dim != DYNAMIC:
            idx_c = np.where(idx_c < 0, idx_c + dim, idx_c)
            if ((idx_c < 0) | (idx_c >= dim)).any():
                raise Unsupported(f"Gather: constant index out of range for dim {dim}")
        indices = cx.ssa(cx.from_const(idx_c.astype(idx.const.dtype)))
    else:
        indices = cx.ssa(idx)
        elem = _elem(indices)
        dim_t = cx.ssa(cx.from_sym([cx.dims(data)[axis]], scalar=True, elem_type=idx.elem_type))
        neg = cx.emit1(graph.LtOp(indices, cx.scalar(0, elem)))
        wrapped = cx.emit1(graph.AddOp(indices, dim_t))
        indices = cx.emit1(graph.WhereOp(neg, wrapped, indices))
    return [cx.emit1(graph.GatherOp(cx.ssa(data), indices, axis))]


def _py_end(e: int, step: int) -> int | None:
    """A normalized end as a Python slice bound (-1 with a negative step: through index 0)."""
    return None if (step < 0 and e == -1) else e


@onnx_op("Slice")
def emit_slice(n: NodeView) -> list:
    """Slice(x, starts, ends, axes, steps) -> graph.slice with one (start, end, step) per dim
    (attributes before opset 10, inputs from 10). starts/ends may be symbolic or read from tensor
    data at run time (`read_indices`, e.g. x[:, :seq] with seq from Shape): such a bound becomes a
    `bounds` index operand of graph.slice (`dyn_starts` / `dyn_ends` name its dims), normalized
    at run time. axes and steps must be constant. Slicing a symbolic shape with known bounds
    slices the list; constants are sliced at import time."""
    cx = n.cx
    x = n.input(0)
    if n.opset < 10:
        starts, ends, axes, steps = n.attr("starts"), n.attr("ends"), n.attr("axes"), None
        starts = [int(v) for v in np.asarray(starts).reshape(-1)]
        ends = [int(v) for v in np.asarray(ends).reshape(-1)]
    else:
        starts = cx.read_indices(n.input(1))
        ends = cx.read_indices(n.input(2))
        if starts is None or ends is None:
            raise Unsupported("starts/ends must be 1-D integer tensors of static length")
        axes = _const_input(n, 3, "axes")
        steps = _const_input(n, 4, "steps")
    axes = list(range(len(starts))) if axes is None else [_axis(int(a), x.rank) for a in np.asarray(axes).reshape(-1)]
    steps = [1] * len(starts) if steps is None else [int(v) for v in np.asarray(steps).reshape(-1)]
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise Unsupported("Slice: starts, ends, axes and steps differ in length")
    if 0 in steps:
        raise Unsupported("Slice: step 0")
    full_s: list = [0] * x.rank
    full_e: list = [d if d != DYNAMIC else INT64_MAX for d in x.shape]
    full_st = [1] * x.rank
    for a, s, e, st in zip(axes, starts, ends, steps):
        dim = x.shape[a]
        if dim != DYNAMIC:
            ns, ne = graph.normalize_slice(dim, s if isinstance(s, int) else 0, e if isinstance(e, int) else 0, st)
            s, e = (ns if isinstance(s, int) else s), (ne if isinstance(e, int) else e)
        full_s[a], full_e[a], full_st[a] = s, e, st
    static = all(isinstance(v, int) for v in (*full_s, *full_e))
    xs = cx.sym_of(x) if x.rank == 1 else None
    if static and xs is not None and (x.sym is not None or x.const is not None):
        e = _py_end(full_e[0], full_st[0])
        return [cx.from_sym(xs[full_s[0] : e : full_st[0]], elem_type=x.elem_type)]
    if static and x.const is not None and x.const.size <= FOLD_LIMIT:
        sl = tuple(slice(s, _py_end(e, st), st) for s, e, st in zip(full_s, full_e, full_st))
        return [cx.from_const(x.const[sl].copy())]
    xv = cx.ssa(x)
    whole = [d if d != DYNAMIC else INT64_MAX for d in x.shape]
    if static and full_s == [0] * x.rank and full_st == [1] * x.rank and full_e == whole:
        return [xv]
    dyn_s = [(i, v) for i, v in enumerate(full_s) if not isinstance(v, int)]
    dyn_e = [(i, v) for i, v in enumerate(full_e) if not isinstance(v, int)]
    return [cx.emit1(graph.SliceOp(xv, [v if isinstance(v, int) else 0 for v in full_s],
                                   [v if isinstance(v, int) else 0 for v in full_e], full_st,
                                   dyn_starts=dyn_s, dyn_ends=dyn_e))]


@onnx_op("Split")
def emit_split(n: NodeView) -> list:
    """Split(x, split | num_outputs, axis) -> graph.split {sizes} (split: attribute before opset
    13, input from 13; equal parts of a static dim are computed, ceil-sized as in opset 18; of a
    dynamic dim they are -1 sizes, which graph.split shares at run time)."""
    cx = n.cx
    x = n.input(0)
    axis = _axis(int(n.attr("axis", 0)), x.rank)
    sizes = n.attr("split") if n.opset < 13 else _const_input(n, 1, "split")
    k = len(n.proto.output)
    if sizes is not None and len(np.asarray(sizes).reshape(-1)) > 0:
        sizes = [int(s) for s in np.asarray(sizes).reshape(-1)]
    else:
        dim = x.shape[axis]
        k = int(n.attr("num_outputs", k))
        if dim == DYNAMIC:
            sizes = [-1] * k  # graph.split shares a dynamic dim as num_outputs does
        else:
            chunk = -(-dim // k)
            sizes = [min(chunk, dim - i * chunk) for i in range(k)]
    return list(cx.emit(graph.SplitOp(cx.ssa(x), axis, sizes)).results)


@onnx_op("Transpose")
def emit_transpose(n: NodeView) -> list:
    """Transpose(x, perm) -> graph.transpose {perm} (default: reversed dims)."""
    x = _ssa(n, 0)
    rank = len(_shape(x))
    perm = n.attr("perm")
    perm = list(range(rank))[::-1] if perm is None else [int(p) for p in perm]
    if perm == list(range(rank)):
        return [x]
    return [n.cx.emit1(graph.TransposeOp(x, perm))]


@onnx_op("Tile")
def emit_tile(n: NodeView) -> list:
    """Tile(x, repeats) -> graph.tile {repeats} (repeats must be constant)."""
    reps = _const_input(n, 1, "repeats")
    return [n.cx.emit1(graph.TileOp(_ssa(n, 0), [int(r) for r in reps.reshape(-1)]))]


@onnx_op("Trilu")
def emit_trilu(n: NodeView) -> list:
    """Trilu(x, k, upper) -> graph.trilu {upper, k} (k must be constant)."""
    k = _const_input(n, 1, "k")
    k = 0 if k is None else int(k.reshape(-1)[0])
    return [n.cx.emit1(graph.TriluOp(_ssa(n, 0), upper=bool(n.attr("upper", 1)), k=k))]


def _check_pad(node, opset):
    mode = _s(_attr(node, "mode", "constant"))
    return None if mode in ("constant", "reflect", "edge", "wrap") else f"mode '{mode}'"


def _wrap_pad(cx: Importer, y: SSAValue, pads: list[int]) -> SSAValue:
    """Pad mode 'wrap' per padded dim: graph.concat(y[d-b:], y, y[:e]) along it (b, e <= d)."""
    rank = len(_shape(y))
    for i in range(rank):
        b, e = pads[i], pads[i + rank]
        if not b and not e:
            continue
        shape = _shape(y)
        d = shape[i]
        if d == DYNAMIC:
            raise Unsupported("Pad mode 'wrap' on a dynamic dim")
        if b > d or e > d:
            raise Unsupported("Pad mode 'wrap' with pads larger than the dim")
        ends = [s if s != DYNAMIC else INT64_MAX for s in shape]

        def part(lo: int, hi: int) -> SSAValue:
            starts, stops = [0] * rank, list(ends)
            starts[i], stops[i] = lo, hi
            return cx.emit1(graph.SliceOp(y, starts, stops, [1] * rank))

        parts = ([part(d - b, d)] if b else []) + [y] + ([part(0, e)] if e else [])
        y = cx.emit1(graph.ConcatOp(parts, i))
    return y


@onnx_op("Pad", check=_check_pad)
def emit_pad(n: NodeView) -> list:
    """Pad(x, pads, value, axes, mode) -> graph.pad {pads (begins, then ends), mode, value};
    mode 'wrap' -> graph.slice + graph.concat per padded dim (static dims, pads <= dim);
    negative pads (cropping) become a graph.slice after the pad."""
    cx = n.cx
    x = n.input(0)
    rank = x.rank
    mode = _s(n.attr("mode", "constant"))
    if n.opset < 11:
        pads = [int(p) for p in n.attr("pads", n.attr("paddings"))]
        value = float(n.attr("value", 0.0))
    else:
        pads = [int(p) for p in _const_input(n, 1, "pads").reshape(-1)]
        cv = _const_input(n, 2, "constant_value")
        value = 0.0 if cv is None or cv.size == 0 else float(cv.reshape(-1)[0])
        axes = _const_input(n, 3, "axes")
        if axes is not None:
            axes = [_axis(int(a), rank) for a in axes.reshape(-1)]
            full = [0] * (2 * rank)
            for i, a in enumerate(axes):
                full[a], full[a + rank] = pads[i], pads[i + len(axes)]
            pads = full
    if len(pads) != 2 * rank:
        raise Unsupported(f"Pad: {len(pads)} pads for rank {rank}")
    y = cx.ssa(x)
    pos = [max(p, 0) for p in pads]
    if any(pos) and mode == "wrap":
        y = _wrap_pad(cx, y, pos)
    elif any(pos):
        y = cx.emit1(graph.PadOp(y, pos, mode=mode, value=value))
    if any(p < 0 for p in pads):
        shape = _shape(y)
        starts = [-min(p, 0) for p in pads[:rank]]
        ends = [d + min(p, 0) if d != DYNAMIC else (min(p, 0) or INT64_MAX) for d, p in zip(shape, pads[rank:])]
        y = cx.emit1(graph.SliceOp(y, starts, ends, [1] * rank))
    return [y]


# --------------------------------------------------------------------------------------------
# linear algebra, convolution, pooling


@onnx_op("MatMul")
def emit_matmul(n: NodeView) -> list:
    """MatMul(a, b) -> graph.matmul (NumPy semantics). float16 accumulates in float32, as
    onnxruntime does: graph.cast both to f32, graph.matmul, graph.cast back."""
    a, b = _ssa(n, 0), _ssa(n, 1)
    if isinstance(_elem(a), Float16Type) and isinstance(_elem(b), Float16Type):
        cx = n.cx
        y = cx.emit1(graph.MatMulOp(cx.emit1(graph.CastOp(a, f32)), cx.emit1(graph.CastOp(b, f32))))
        return [cx.emit1(graph.CastOp(y, _elem(a)))]
    return [n.cx.emit1(graph.MatMulOp(a, b))]


@onnx_op("Gemm")
def emit_gemm(n: NodeView) -> list:
    """Gemm(A, B, C, alpha, beta, transA, transB) -> graph.transpose (transA/transB), graph.matmul,
    graph.mul by a 0-d alpha (if != 1), graph.add of C (times a 0-d beta if != 1)."""
    cx = n.cx
    operands = []
    for i, flag in ((0, "transA"), (1, "transB")):
        v = n.input(i)
        if v is None:
            raise Unsupported(f"missing input {i}")
        if not n.attr(flag, 0):
            operands.append(cx.ssa(v))
        elif v.is_weight and v.const is not None:  # a weight is transposed once, at import time
            operands.append(cx.ssa(cx.derived_weight(v, "T", np.transpose)))
        else:
            operands.append(cx.emit1(graph.TransposeOp(cx.ssa(v), [1, 0])))
    a, b = operands
    y = cx.emit1(graph.MatMulOp(a, b))
    alpha, beta = float(n.attr("alpha", 1.0)), float(n.attr("beta", 1.0))
    if alpha != 1.0:
        y = cx.emit1(graph.MulOp(y, cx.scalar(alpha, _elem(y))))
    c = n.input(2)
    if c is not None and beta != 0.0:
        cv = cx.ssa(c)
        if beta != 1.0:
            cv = cx.emit1(graph.MulOp(cv, cx.scalar(beta, _elem(cv))))
        y = cx.emit1(graph.AddOp(y, cv))
    return [y]


def _check_auto_pad(node, opset, max_kernel_rank: int = 2):
    ap = _s(_attr(node, "auto_pad", "NOTSET"))
    if ap not in ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"):
        return f"auto_pad '{ap}'"
    ks = _attr(node, "kernel_shape")
    if ks is not None and not 1 <= len(ks) <= max_kernel_rank:
        return f"{len(ks)}-D kernel (only 1-D to {max_kernel_rank}-D)"
    return None


def _check_conv(node, opset):
    return _check_auto_pad(node, opset, max_kernel_rank=3)


def _check_pool(node, opset):
    return _check_auto_pad(node, opset, max_kernel_rank=3)


def _spatial_pads(n: NodeView, in_spatial: list[int], kernel, strides, dilations) -> list[int]:
    """ONNX pads [b0, b1, ..., e0, e1, ...] with auto_pad resolved (needs static dims for SAME)."""
    k = len(kernel)
    ap = _s(n.attr("auto_pad", "NOTSET"))
    if ap == "VALID":
        return [0] * (2 * k)
    if ap in ("SAME_UPPER", "SAME_LOWER"):
        pads = [0] * (2 * k)
        for i in range(k):
            if in_spatial[i] == DYNAMIC:
                raise Unsupported(f"auto_pad {ap} with a dynamic spatial dim")
            out = -(-in_spatial[i] // strides[i])
            total = max(0, (out - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1 - in_spatial[i])
            small, big = total // 2, total - total // 2
            pads[i], pads[i + k] = (small, big) if ap == "SAME_UPPER" else (big, small)
        return pads
    pads = n.attr("pads")
    return [0] * (2 * k) if pads is None else [int(p) for p in pads]


def _to_2d(k, vals, fill):
    """1-D parameters -> 2-D with a leading unit spatial dim."""
    return ([fill] + list(vals)) if k == 1 else list(vals)


def _pads_2d(k, pads):
    if k == 1:
        return [0, pads[0], 0, pads[1]]
    return [pads[0], pads[1], pads[2], pads[3]]


def _unsqueeze_spatial(cx: Importer, x: SSAValue) -> SSAValue:
    """(N, C, L) -> (N, C, 1, L)."""
    d = cx.dims(x)
    return cx.reshape(x, [d[0], d[1], 1, d[2]])


def _squeeze_spatial(cx: Importer, y: SSAValue) -> SSAValue:
    """(N, C, 1, L) -> (N, C, L)."""
    d = cx.dims(y)
    return cx.reshape(y, [d[0], d[1], d[3]])


def conv_nd(n: NodeView, x, w, bias, who: str = "", w_value: Value | None = None):
    """graph.conv2d of `x` and `w` with the node's conv attributes (strides, pads with auto_pad
    resolved, dilations, group); a 1-D conv goes through a unit spatial dim, a 3-D one is
    composed (`conv3d`; `w_value` is the weight's Value: when it is a known constant its layout
    change is done at import, and `w` may then be None). `who` prefixes the refusals (e.g. "ConvInteger: ")."""
    cx = n.cx
    k = len(_shape(x)) - 2
    if k not in (1, 2, 3):
        raise Unsupported(f"{who}{k}-D convolution (only 1-D, 2-D and 3-D)")
    kernel = n.attr("kernel_shape") or (_shape(w) if w is not None else w_value.shape)[2:]
    if DYNAMIC in kernel:
        raise Unsupported(f"{who}kernel with dynamic size")
    strides = list(n.attr("strides", [1] * k))
    dilations = list(n.attr("dilations", [1] * k))
    pads = _spatial_pads(n, _shape(x)[2:], kernel, strides, dilations)
    group = int(n.attr("group", 1))
    if k == 3:
        return conv3d(cx, x, w, bias, strides, pads, dilations, group, who, w_value)
    if k == 1:
        x = _unsqueeze_spatial(cx, x)
        wd = cx.dims(w)
        w = cx.reshape(w, [wd[0], wd[1], 1, wd[2]])
    y = cx.emit1(graph.Conv2dOp(x, w, bias=bias, strides=_to_2d(k, strides, 1), pads=_pads_2d(k, pads),
                                dilations=_to_2d(k, dilations, 1), group=group))
    return _squeeze_spatial(cx, y) if k == 1 else y


CONV3D_MAX_TAPS = 4096  # OD * KD: the depth-unrolled copy of the input is OD*KD/D times its size


def conv3d(cx: Importer, x, w, bias, strides, pads, dilations, group: int, who: str = "",
           w_value: Value | None = None):
    """A 3-D conv, x (N, C, D, H, W) * w (O, C/g, KD, KH, KW) (pads [front, top, left, back,
    bottom, right]; `w` None: `w_value` is a constant), as one graph.conv2d whose batch
    holds the output depth planes and whose channels hold the depth taps:

        xp = graph.pad x on D by (pad_front, pad_back)               (N, C, Dp, H, W)
        xg = graph.gather xp, [od*sd + kd*dd for od, kd] axis 2       (N, C, OD*KD, H, W)
        reshape (N, g, C/g, OD, KD, H*W), transpose (N, OD, g, KD, C/g, H*W),
        reshape (N*OD, g*KD*C/g, H, W)
        y = graph.conv2d with w as (O, KD*C/g, KH, KW) {H, W strides/pads/dilations, group g}
        reshape (N, OD, O, OH, OW), transpose -> (N, O, OD, OH, OW)

    Output channel o of group j reads the channels (j, kd, c) = sum over kd of conv2d(plane
    od*sd + kd*dd - pad_front, w[:, :, kd]); padded planes are zeros. D must be static."""
    xd = cx.dims(x)
    wshape = _shape(w) if w is not None else list(w_value.shape)
    if len(wshape) != 5 or DYNAMIC in wshape:
        raise Unsupported(f"{who}3-D convolution needs a static rank-5 weight, got {wshape}")
    cout, cg, kd_, kh, kw = wshape
    depth = xd[2]
    if not isinstance(depth, int):
        raise Unsupported(f"{who}3-D convolution with a dynamic depth (the depth planes are unrolled at import)")
    sd, dd = strides[0], dilations[0]
    pf, pb = pads[0], pads[3]
    od = (depth + pf + pb - dd * (kd_ - 1) - 1) // sd + 1
    if od <= 0:
        raise Unsupported(f"{who}3-D convolution with output depth {od}")
    if od * kd_ > CONV3D_MAX_TAPS:
        raise Unsupported(f"{who}3-D convolution with {od} output planes x {kd_} depth taps "
                          f"(above {CONV3D_MAX_TAPS}: the input would be copied {od * kd_} planes deep)")
    c = xd[1]
    if not isinstance(c, int) or c % group or c // group != cg:
        raise Unsupported(f"{who}3-D convolution: {c} input channels, weight {wshape}, group {group}")
    if pf or pb:
        x = cx.emit1(graph.PadOp(x, [0, 0, pf, 0, 0] + [0, 0, pb, 0, 0]))
    taps = np.array([o * sd + t * dd for o in range(od) for t in range(kd_)], dtype=np.int64)
    x = cx.emit1(graph.GatherOp(x, cx.ssa(cx.from_const(taps)), axis=2))
    hw = cx.iarith("mul", xd[3], xd[4])
    x = cx.reshape(x, [xd[0], group, cg, od, kd_, hw])
    x = cx.emit1(graph.TransposeOp(x, [0, 3, 1, 4, 2, 5]))
    x = cx.reshape(x, [cx.iarith("mul", xd[0], od), group * kd_ * cg, xd[3], xd[4]])

    def fold(a):  # (O, C/g, KD, KH, KW) -> (O, KD*C/g, KH, KW)
        return np.transpose(a, (0, 2, 1, 3, 4)).reshape(cout, kd_ * cg, kh, kw)

    if w_value is not None and w_value.const is not None:
        if w_value.name:  # once per weight
            w = cx.ssa(cx.derived_weight(w_value, "conv3d", fold))
        else:
            w = cx.ssa(cx.from_const(np.ascontiguousarray(fold(w_value.const))))
    else:
        w = cx.emit1(graph.TransposeOp(w, [0, 2, 1, 3, 4]))
        w = cx.reshape(w, [cout, kd_ * cg, kh, kw])
    y = cx.emit1(graph.Conv2dOp(x, w, bias=bias, strides=list(strides[1:]), pads=[pads[1], pads[2], pads[4], pads[5]],
                                dilations=list(dilations[1:]), group=group))
    yd = cx.dims(y)
    y = cx.reshape(y, [xd[0], od, cout, yd[2], yd[3]])
    return cx.emit1(graph.TransposeOp(y, [0, 2, 1, 3, 4]))


@onnx_op("Conv", check=_check_conv)
def emit_conv(n: NodeView) -> list:
    """Conv(x, w, b) -> graph.conv2d {strides, pads [top, left, bottom, right], dilations, group};
    auto_pad is resolved to explicit pads; 1-D conv: graph.reshape x (N,C,L)->(N,C,1,L) and w
    (O,C/g,K)->(O,C/g,1,K), conv2d, reshape back."""
    cx = n.cx
    folded = _conv_batch_norm(n)
    x = _ssa(n, 0)
    w_v = folded[0] if folded is not None else n.input(1)
    if len(_shape(x)) == 5 and w_v is not None and w_v.const is not None:
        w = None  # conv3d re-lays the constant out at import: the original is never emitted
    elif folded is not None:
        w = cx.ssa(folded[0])
    else:
        w = _ssa(n, 1)
    if folded is not None:
        b = cx.ssa(folded[1])
    else:
        b = cx.ssa(n.input(2)) if n.input(2) is not None else None
    out = conv_nd(n, x, w, b, w_value=w_v)
    if folded is not None:
        for name in folded[2]:
            cx.aliases[name] = cx.from_ssa(out)
    return [out]


def _batch_norm_consts(cx: Importer, bn: onnx.NodeProto) -> tuple[np.ndarray, np.ndarray] | None:
    """(scale, shift) of an inference BatchNormalization whose parameters are all known weights:
    y = x * scale + shift per channel, computed in float64 (None: not foldable)."""
    if bool(_attr(bn, "training_mode", 0)) or len([o for o in bn.output if o]) != 1:
        return None
    vals = [cx.values.get(i) if i else None for i in bn.input[1:5]]
    if len(vals) != 4 or any(v is None or v.const is None for v in vals):
        return None
    gamma, beta, mean, var = (v.const.astype(np.float64).reshape(-1) for v in vals)  # type: ignore[union-attr]
    eps = float(_attr(bn, "epsilon", 1e-5))
    scale = gamma / np.sqrt(var + eps)
    return scale, beta - mean * scale


def _per_channel(cx: Importer, node: onnx.NodeProto, current: str, channels: int, rank: int) -> np.ndarray | None:
    """The other operand of a binary `node` reading `current`, as one float64 value per channel
    (dim 1 of a rank-`rank` tensor), when it is a known weight that broadcasts that way; else None."""
    others = [i for i in node.input if i != current]
    if len(node.input) != 2 or len(others) != 1 or node.input[0] != current and node.op_type == "Sub":
        return None
    v = cx.values.get(others[0])
    if v is None or v.const is None or v.const.dtype.kind != "f" or v.const.ndim > rank:
        return None
    shape = (1,) * (rank - v.const.ndim) + tuple(v.const.shape)
    if shape[0] != 1 or any(d != 1 for d in shape[2:]) or shape[1] not in (1, channels):
        return None
    return np.broadcast_to(v.const.astype(np.float64).reshape(-1), (channels,))


def _conv_batch_norm(n: NodeView):
    """Conv followed by a chain of per-channel affine ops, each the only reader of the one before:
    inference BatchNormalization with known statistics, Mul / Add / Sub by a known per-channel (or
    scalar) weight. They fold into the Conv's weight and bias once, at import time (ONNX Runtime's
    Conv+BN / Conv+Mul / Conv+Add fusions): (folded weight, folded bias, names of the absorbed
    outputs), else None. The absorbed nodes are not emitted: their outputs are the Conv's."""
    cx = n.cx
    w, b = n.input(1), n.input(2)
    if w is None or w.const is None or (b is not None and b.const is None) or w.const.dtype.kind != "f":
        return None
    channels = w.const.shape[0]
    rank = w.const.ndim  # the Conv output has the weight's rank
    scale = np.ones(channels)
    shift = b.const.astype(np.float64).reshape(-1) if b is not None else np.zeros(channels)
    current, absorbed = n.proto.output[0], []
    while True:
        readers = cx.consumers(current)
        if not readers or len(readers) != 1 or (readers[0].domain or "") not in ("", "ai.onnx"):
            break
        nxt = readers[0]
        outs = [o for o in nxt.output if o]
        if len(outs) != 1 or nxt.output[0] != outs[0]:
            break
        if nxt.op_type == "BatchNormalization" and nxt.input[0] == current:
            consts = _batch_norm_consts(cx, nxt)
            if consts is None or consts[0].shape[0] != channels:
                break
            s_, t_ = consts
        elif nxt.op_type in ("Mul", "Add", "Sub"):
            c = _per_channel(cx, nxt, current, channels, rank)
            if c is None:
                break
            s_, t_ = (c, np.zeros(channels)) if nxt.op_type == "Mul" else (
                np.ones(channels), c if nxt.op_type == "Add" else -c)
        else:
            break
        scale, shift = scale * s_, shift * s_ + t_
        current = nxt.output[0]
        absorbed.append(current)
    if not absorbed:
        return None
    dtype = w.const.dtype
    wf = (w.const.astype(np.float64) * scale.reshape((-1,) + (1,) * (w.const.ndim - 1))).astype(dtype)
    # named after the conv's weight and bias ("conv.weight.folded"); a weight shared by two convs
    # gets the absorbed node's output name too
    wname = f"{w.name}.folded"
    bname = f"{b.name if b is not None else w.name + '.bias'}.folded"
    if (wname, "folded") in cx.derived or (bname, "folded") in cx.derived:
        wname, bname = f"{wname}.{absorbed[-1]}", f"{bname}.{absorbed[-1]}"
    wv = cx.from_const(np.ascontiguousarray(wf), is_weight=True, name=wname)
    bv = cx.from_const(shift.astype(dtype), is_weight=True, name=bname)
    cx.derived[(wname, "folded")], cx.derived[(bname, "folded")] = wv, bv
    for v, src in ((wv, w), (bv, b if b is not None else w)):
        if src.name in cx.weight_locs:
            cx.weight_locs.setdefault(v.name, cx.weight_locs[src.name])
    return wv, bv, absorbed


def _check_maxpool(node, opset):
    if len([o for o in node.output if o]) > 1:
        return "the Indices output"
    if int(_attr(node, "storage_order", 0)) != 0:
        return "storage_order=1"
    return _check_pool(node, opset)


def _pool_params(n: NodeView, x: SSAValue):
    rank = len(_shape(x))
    k = rank - 2
    if k not in (1, 2, 3):
        raise Unsupported(f"{k}-D pooling (only 1-D to 3-D)")
    kernel = list(n.attr("kernel_shape"))
    strides = list(n.attr("strides", [1] * k))
    dilations = list(n.attr("dilations", [1] * k))
    pads = _spatial_pads(n, _shape(x)[2:], kernel, strides, dilations)
    return k, kernel, strides, dilations, pads


def _pool3d(cx: Importer, x: SSAValue, kernel, strides, dilations, pads, make) -> SSAValue:
    """A 3-D pool as two 2-D pools (max, sum and the in-range tap count all factor over dims):
    (N, C, D, H, W) -> reshape (N, C, D, H*W) -> pool [kd, 1] -> (N, C, D', H*W)
    -> reshape (N, C*D', H, W) -> pool [kh, kw] -> (N, C*D', H', W') -> reshape (N, C, D', H', W')."""
    n, c, d, h, w = cx.dims(x)
    y = cx.reshape(x, [n, c, d, cx.iarith("mul", h, w)])
    y = cx.emit1(make(y, [kernel[0], 1], [strides[0], 1], [pads[0], 0, pads[3], 0], [dilations[0], 1]))
    d2 = cx.dims(y)[2]
    y = cx.reshape(y, [n, cx.iarith("mul", c, d2), h, w])
    y = cx.emit1(make(y, kernel[1:], strides[1:], [pads[1], pads[2], pads[4], pads[5]], dilations[1:]))
    _, _, h2, w2 = cx.dims(y)
    return cx.reshape(y, [n, c, d2, h2, w2])


def _emit_pool(n: NodeView, make) -> list:
    """1-D: reshape to (N, C, 1, L) and back; 2-D: one op; 3-D: `_pool3d`."""
    cx = n.cx
    x = _ssa(n, 0)
    k, kernel, strides, dilations, pads = _pool_params(n, x)
    if k == 3:
        return [_pool3d(cx, x, kernel, strides, dilations, pads, make)]
    if k == 1:
        x = _unsqueeze_spatial(cx, x)
    y = cx.emit1(make(x, _to_2d(k, kernel, 1), _to_2d(k, strides, 1), _pads_2d(k, pads), _to_2d(k, dilations, 1)))
    return [_squeeze_spatial(cx, y) if k == 1 else y]


@onnx_op("MaxPool", check=_check_maxpool)
def emit_max_pool(n: NodeView) -> list:
    """MaxPool(x) -> graph.max_pool2d {kernel, strides, pads, dilations, ceil_mode}; auto_pad is
    resolved; 1-D pooling via reshape to (N, C, 1, L) and back; 3-D as two 2-D pools."""
    ceil_mode = bool(n.attr("ceil_mode", 0))
    return _emit_pool(
        n,
        lambda x, kernel, strides, pads, dilations: graph.MaxPool2dOp(
            x, kernel, strides=strides, pads=pads, dilations=dilations, ceil_mode=ceil_mode
        ),
    )


@onnx_op("AveragePool", check=_check_pool)
def emit_avg_pool(n: NodeView) -> list:
    """AveragePool(x) -> graph.avg_pool2d {kernel, strides, pads, dilations, ceil_mode,
    count_include_pad}; auto_pad is resolved; 1-D via reshape; 3-D as two 2-D pools (the
    average over a box is the average over D of averages over (H, W): the counts factor)."""
    ceil_mode = bool(n.attr("ceil_mode", 0))
    include_pad = bool(n.attr("count_include_pad", 0))
    return _emit_pool(
        n,
        lambda x, kernel, strides, pads, dilations: graph.AvgPool2dOp(
            x, kernel, strides=strides, pads=pads, ceil_mode=ceil_mode,
            count_include_pad=include_pad, dilations=dilations,
        ),
    )


@onnx_op("GlobalAveragePool")
def emit_global_avg_pool(n: NodeView) -> list:
    """GlobalAveragePool(x) -> graph.global_avg_pool (N, C, 1, ..., 1)."""
    return [n.cx.emit1(graph.GlobalAvgPoolOp(_ssa(n, 0)))]


@onnx_op("GlobalMaxPool")
def emit_global_max_pool(n: NodeView) -> list:
    """GlobalMaxPool(x) -> graph.global_max_pool (N, C, 1, ..., 1)."""
    return [n.cx.emit1(graph.GlobalMaxPoolOp(_ssa(n, 0)))]


# --------------------------------------------------------------------------------------------
# normalization, softmax, reductions


def _check_batchnorm(node, opset):
    training = bool(_attr(node, "training_mode", 0))
    if training and opset < 14:
        return "training mode (opset < 14)"
    if len([o for o in node.output if o]) > 1 and not (training and opset >= 14):
        return "training mode (more than one output)"
    if opset < 9 and _attr(node, "spatial", 1) != 1:
        return "spatial=0"
    return None


@onnx_op("BatchNormalization", check=_check_batchnorm)
def emit_batch_norm(n: NodeView) -> list:
    """BatchNormalization(x, scale, b, mean, var) in inference mode -> graph.batch_norm {epsilon}.
    training_mode=1 (opset >= 14) normalizes with the batch statistics over axes [0, 2, ...]:
    m = graph.reduce_mean(x, keepdims), v = reduce_mean((x - m)^2) (population variance), both
    reshaped to (C); y = graph.batch_norm(x, scale, b, m, v); the running statistics outputs are
    mean * momentum + m * (1 - momentum) and var * momentum + v * (1 - momentum)."""
    cx = n.cx
    eps = float(n.attr("epsilon", 1e-5))
    consts = _batch_norm_consts(cx, n.proto)
    x = n.input(0)
    dtype = _DTYPES[x.elem_type][0] if x is not None and x.elem_type in _DTYPES else None
    if consts is not None and dtype is not None and dtype.kind == "f" and x.rank >= 2:
        # known statistics: y = x * scale + shift, computed once here (no sqrt and divide per element)
        shape = (-1,) + (1,) * (x.rank - 2)
        name = n.proto.output[0]
        sv = cx.from_const(consts[0].astype(dtype).reshape(shape), is_weight=True, name=f"{name}.scale")
        tv = cx.from_const(consts[1].astype(dtype).reshape(shape), is_weight=True, name=f"{name}.shift")
        y = cx.emit1(graph.MulOp(cx.ssa(x), cx.ssa(sv)))
        return [cx.emit1(graph.AddOp(y, cx.ssa(tv)))]
    args = [_ssa(n, i) for i in range(5)]
    if not n.attr("training_mode", 0):
        return [cx.emit1(graph.BatchNormOp(*args, epsilon=eps))]
    x, scale, bias, mean, var = args
    rank = len(_shape(x))
    axes = [0] + list(range(2, rank))
    channels = [cx.dims(x)[1]]
    m = cx.emit1(graph.ReduceMeanOp(x, axes, keepdims=True))
    centered = cx.emit1(graph.SubOp(x, m))
    v = cx.emit1(graph.ReduceMeanOp(cx.emit1(graph.MulOp(centered, centered)), axes, keepdims=True))
    m, v = cx.reshape(m, channels), cx.reshape(v, channels)
    outs: list = [cx.emit1(graph.BatchNormOp(x, scale, bias, m, v, epsilon=eps))]
    momentum = float(n.attr("momentum", 0.9))
    for running, batch in ((mean, m), (var, v)):
        a = cx.emit1(graph.MulOp(running, cx.scalar(momentum, _elem(running))))
        b = cx.emit1(graph.MulOp(batch, cx.scalar(1.0 - momentum, _elem(batch))))
        outs.append(cx.emit1(graph.AddOp(a, b)))
    return outs


@onnx_op("LayerNormalization")
def emit_layer_norm(n: NodeView) -> list:
    """LayerNormalization(x, scale, bias, axis, epsilon) -> graph.layer_norm (normalizes over
    [axis, rank)). The optional Mean and InvStdDev outputs are decomposed: mean =
    graph.reduce_mean(x, [axis, rank), keepdims), inv_std = graph.rsqrt(reduce_mean((x - mean)^2)
    + epsilon)."""
    cx = n.cx
    x = _ssa(n, 0)
    rank = len(_shape(x))
    axis = _axis(int(n.attr("axis", -1)), rank)
    eps = float(n.attr("epsilon", 1e-5))
    bias = cx.ssa(n.input(2)) if n.input(2) is not None else None
    outs: list = [cx.emit1(graph.LayerNormOp(x, _ssa(n, 1), bias, axis=axis, epsilon=eps))]
    if n.output_used(1) or n.output_used(2):
        axes = list(range(axis, rank))
        mean = cx.emit1(graph.ReduceMeanOp(x, axes, keepdims=True))
        centered = cx.emit1(graph.SubOp(x, mean))
        var = cx.emit1(graph.ReduceMeanOp(cx.emit1(graph.MulOp(centered, centered)), axes, keepdims=True))
        inv_std = cx.emit1(graph.RsqrtOp(cx.emit1(graph.AddOp(var, cx.scalar(eps, _elem(x))))))
        outs += [mean, inv_std]
    return outs


@onnx_op("LRN")
def emit_lrn(n: NodeView) -> list:
    """LRN(x, size, alpha, beta, bias) -> graph.lrn."""
    return [
        n.cx.emit1(
            graph.LRNOp(
                _ssa(n, 0),
                size=int(n.attr("size")),
                alpha=float(n.attr("alpha", 1e-4)),
                beta=float(n.attr("beta", 0.75)),
                bias=float(n.attr("bias", 1.0)),
            )
        )
    ]


def _with_inputs(n: NodeView, inputs: list) -> NodeView:
    """`n` with other input values (the same node, attributes and opset)."""
    return NodeView(n.proto, n.opset, inputs, n.cx)


@onnx_op("Softmax", "LogSoftmax")
def emit_softmax(n: NodeView) -> list:
    """Softmax/LogSoftmax(x, axis) -> graph.softmax/log_softmax {axis}. Before opset 13 the input
    is coerced to 2-D at `axis` (default 1): graph.reshape to (prod(d[:axis]), prod(d[axis:])),
    softmax on axis 1, reshape back (skipped when axis is the last dim: same result). float16 is
    computed in float32 (graph.cast around it), as onnxruntime does."""
    cx = n.cx
    x = _ssa(n, 0)
    if isinstance(_elem(x), Float16Type):
        y = emit_softmax(_with_inputs(n, [cx.from_ssa(cx.emit1(graph.CastOp(x, f32)))]))[0]
        return [cx.emit1(graph.CastOp(y, _elem(x)))]
    rank = len(_shape(x))
    cls = graph.SoftmaxOp if n.op_type == "Softmax" else graph.LogSoftmaxOp
    if n.opset >= 13:
        return [cx.emit1(cls(x, _axis(int(n.attr("axis", -1)), rank)))]
    axis = _axis(int(n.attr("axis", 1)), rank)
    if axis == rank - 1:
        return [cx.emit1(cls(x, axis))]
    dims = cx.dims(x)
    a, b = _flatten_dims(cx, dims, axis)
    y = cx.emit1(cls(cx.reshape(x, [a, b]), 1))
    return [cx.reshape(y, dims)]


_REDUCE = {
    "ReduceSum": (graph.ReduceSumOp, 13),
    "ReduceMean": (graph.ReduceMeanOp, 18),
    "ReduceMax": (graph.ReduceMaxOp, 18),
    "ReduceMin": (graph.ReduceMinOp, 18),
}


@onnx_op(*_REDUCE)
def emit_reduce(n: NodeView) -> list:
    """ReduceSum/Mean/Max/Min(x, axes, keepdims) -> graph.reduce_* {axes (normalized, sorted),
    keepdims}. axes is an attribute before opset 13 (ReduceSum) / 18 (the others), an input after;
    no axes = all axes, unless noop_with_empty_axes (then the input is returned)."""
    cx = n.cx
    cls, since = _REDUCE[n.op_type]
    x = _ssa(n, 0)
    rank = len(_shape(x))
    axes = _axes_list(n, since)
    if not axes:
        if n.attr("noop_with_empty_axes", 0):
            return [x]
        axes = list(range(rank))
    axes = sorted({_axis(a, rank) for a in axes})
    return [cx.emit1(cls(x, axes, keepdims=bool(n.attr("keepdims", 1))))]


@onnx_op("ArgMax")
def emit_argmax(n: NodeView) -> list:
    """ArgMax(x, axis, keepdims, select_last_index) -> graph.argmax (i64)."""
    x = _ssa(n, 0)
    axis = _axis(int(n.attr("axis", 0)), len(_shape(x)))
    return [
        n.cx.emit1(
            graph.ArgMaxOp(
                x,
                axis=axis,
                keepdims=bool(n.attr("keepdims", 1)),
                select_last_index=bool(n.attr("select_last_index", 0)),
            )
        )
    ]



# More emitters (operator coverage) live in their own module and register themselves here.
from minimlir.frontend import _onnx_ops_more  # noqa: E402,F401
from minimlir.frontend import _onnx_unary  # noqa: E402,F401  (the unary ops that declare ONNX =)
from minimlir.frontend import _onnx_ops_resize  # noqa: E402,F401
from minimlir.frontend import _onnx_ops_coverage  # noqa: E402,F401
from minimlir.frontend import _onnx_ops_coverage3  # noqa: E402,F401
from minimlir.frontend import _onnx_ops_coverage4  # noqa: E402,F401
from minimlir.frontend import _onnx_ops_random  # noqa: E402,F401  (random ops and Dropout)
from minimlir.frontend import _onnx_ops_ml  # noqa: E402,F401  (the ai.onnx.ml domain)
from minimlir.frontend import _onnx_control_flow  # noqa: E402,F401
