"""Run graph-level MLIR on NumPy arrays: natively, or with a reference interpreter of the loop level.

    from minimlir.compiler.interpreter import run_graph, assert_outputs, BACKENDS

    @pytest.mark.parametrize("backend", BACKENDS)
    def test_relu(backend):
        x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
        (y,) = run_graph(TEXT, [x], backend=backend)
        assert_outputs([y], [np.maximum(x, 0)])

API (keep it stable: the tests and the tuner use it):

  run_graph(mlir_text, inputs, backend=None, func_name=None, params=None) -> list[np.ndarray]
      backend "interp": parse, run graph-legalize, interpret (always available);
      backend "native": `minimlir.backend.runtime.compile_mlir_text` (graph-to-llvm); raises
      NativeUnavailable (a skip under pytest) when the native back end does not import or fails
      its smoke test;
      backend None: native when available, else the interpreter.
  legalize(mlir_text) -> ModuleOp            parse + graph-legalize + verify
  interpret_kernels(module, func_name, inputs, params=None) -> list[np.ndarray]
      Execute a graph-level function of a legalized module: graph.call_kernel / graph.dim /
      graph.reshape / graph.param / graph.constant + index arith at the graph level, and the
      kernels it calls op by op (loop.for, loop.block with init semantics, mem.*, arith.*, math.*).
      Also runs a kernel directly when `func_name` names one (inputs = all its buffers, written
      in place; returns them).
  native_status() -> (bool, reason)
  assert_outputs(actual, expected, rtol=1e-5, atol=1e-6)   dtype + shape + values
  tensor_type((2, None), "i32", dynamic=()) -> "tensor<2x?xi32>"   (None or an index in `dynamic` is `?`)

The interpreter computes in the IR's element types (np.float32 scalars for f32, ...), so results
match native code up to libm differences. Fresh buffers (kernel outputs, mem.alloc) are poisoned
(NaN / 0x5A5A... / True) so that an element a kernel forgets to write shows up. It is slow (a few
microseconds per op): keep shapes tiny (2x3x5).
"""

from __future__ import annotations

import functools
import math as pymath
from collections.abc import Sequence

import numpy as np
from xdsl.context import Context
from xdsl.dialects import arith, func, math, vector
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    TensorType,
    VectorType,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.parser import Parser

from minimlir.compiler.context import make_context
from minimlir.dialects import graph, loop, mem

BACKENDS = ["interp", "native"]


# --------------------------------------------------------------------------------------------
# Types


def tensor_type(shape: Sequence[int | None], elt: str = "f32", dynamic: Sequence[int] = ()) -> str:
    """The MLIR spelling of a tensor type; a dim that is None or whose index is in `dynamic` is `?`."""
    dims = ["?" if d is None or i in dynamic else str(d) for i, d in enumerate(shape)]
    return f"tensor<{'x'.join(dims + [elt])}>"


def np_dtype(t: Attribute) -> np.dtype:
    """NumPy dtype of a scalar element type (i1 -> bool, index -> int64)."""
    if isinstance(t, VectorType):
        t = t.element_type
    if isinstance(t, Float32Type):
        return np.dtype(np.float32)
    if isinstance(t, Float64Type):
        return np.dtype(np.float64)
    if isinstance(t, Float16Type):
        return np.dtype(np.float16)
    if isinstance(t, IndexType):
        return np.dtype(np.int64)
    if isinstance(t, IntegerType):
        w = t.width.data
        if w == 1:
            return np.dtype(np.bool_)
        return np.dtype({8: np.int8, 16: np.int16, 32: np.int32, 64: np.int64}[w])
    raise NotImplementedError(f"no NumPy dtype for {t}")


def _poison(dtype: np.dtype):
    if dtype.kind == "f":
        return np.nan
    if dtype.kind == "b":
        return True
    return np.array(0x5A5A5A5A5A5A5A5A, dtype=np.uint64).astype(dtype)[()]


def _fresh(shape: Sequence[int], dtype: np.dtype) -> np.ndarray:
    return np.full(tuple(shape), _poison(dtype), dtype=dtype)


def _shape(t: TensorType | MemRefType, dims: Sequence[int]) -> list[int]:
    it = iter(dims)
    shape = [d if d >= 0 else int(next(it)) for d in t.get_shape()]
    return shape


# --------------------------------------------------------------------------------------------
# Parsing and legalization


@functools.cache
def _context() -> Context:
    return make_context()


def parse(mlir_text: str) -> ModuleOp:
    return Parser(_context().clone(), mlir_text).parse_module()


def legalize(mlir_text: str) -> ModuleOp:
    """Parse, run graph-legalize, verify."""
    from minimlir.passes.graph.legalize import GraphLegalizePass

    module = parse(mlir_text)
    module.verify()
    GraphLegalizePass().apply(_context(), module)
    module.verify()
    return module


def _entry_name(module: ModuleOp) -> str:
    for op in module.ops:
        if isinstance(op, func.FuncOp) and not loop.is_kernel(op):
            return op.sym_name.data
    raise ValueError("module has no graph-level function")


# --------------------------------------------------------------------------------------------
# Interpreter


class InterpError(Exception):
    pass


def _int_div_trunc(a, b):
    """C division (toward zero) on NumPy integers, scalar or array."""
    if np.any(np.asarray(b) == 0):
        raise InterpError("integer division by zero")
    q = np.abs(a) // np.abs(b)
    return np.where((np.asarray(a) < 0) != (np.asarray(b) < 0), -q, q).astype(np.result_type(a))[()]


def _as(value, t: Attribute):
    """Cast a Python/NumPy value to the scalar (or vector) representation of type t."""
    if isinstance(t, IndexType):
        return int(value)
    return np.asarray(value).astype(np_dtype(t))[()]


def _shrui(a, b):
    """Logical (zero-filling) shift right: the bits as unsigned, shifted, as the signed type again."""
    a = np.asarray(a)
    unsigned = np.dtype(f"u{a.dtype.itemsize}")
    return (a.astype(unsigned) >> np.asarray(b).astype(unsigned)).astype(a.dtype)[()]


def _cmpi(pred: str, a, b):
    if pred in ("ult", "ule", "ugt", "uge"):
        width = np.asarray(a).dtype.itemsize * 8 if not isinstance(a, int) else 64
        mask = (1 << width) - 1 if np.asarray(a).dtype != np.bool_ else 1
        a = np.asarray(a).astype(np.uint64) & np.uint64(mask) if np.asarray(a).dtype != np.bool_ else np.asarray(a)
        b = np.asarray(b).astype(np.uint64) & np.uint64(mask) if np.asarray(b).dtype != np.bool_ else np.asarray(b)
        pred = pred[1:]
    elif pred.startswith("s"):
        pred = pred[1:]
    r = {
        "eq": lambda: a == b,
        "ne": lambda: a != b,
        "lt": lambda: a < b,
        "le": lambda: a <= b,
        "gt": lambda: a > b,
        "ge": lambda: a >= b,
    }[pred]()
    return np.asarray(r, dtype=np.bool_)[()]


def _cmpf(pred: str, a, b):
    a, b = np.asarray(a), np.asarray(b)
    unordered = np.isnan(a) | np.isnan(b)
    if pred == "false":
        r = np.zeros_like(unordered)
    elif pred == "true":
        r = np.ones_like(unordered)
    elif pred == "ord":
        r = ~unordered
    elif pred == "uno":
        r = unordered
    else:
        base = {"eq": a == b, "ne": a != b, "lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b}[pred[1:]]
        r = (base & ~unordered) if pred[0] == "o" else (base | unordered)
    return np.asarray(r, dtype=np.bool_)[()]


def _erf(x):
    return np.vectorize(pymath.erf, otypes=[np.float64])(x).astype(np.asarray(x).dtype)[()]


_UNARY_MATH = {
    math.ExpOp: np.exp,
    math.Exp2Op: np.exp2,
    math.ExpM1Op: np.expm1,
    math.LogOp: np.log,
    math.Log2Op: np.log2,
    math.Log10Op: np.log10,
    math.Log1pOp: np.log1p,
    math.SqrtOp: np.sqrt,
    math.RsqrtOp: lambda x: (np.asarray(1, dtype=np.asarray(x).dtype) / np.sqrt(x))[()],
    math.TanhOp: np.tanh,
    math.ErfOp: _erf,
    math.AbsFOp: np.abs,
    math.AbsIOp: np.abs,
    math.FloorOp: np.floor,
    math.CeilOp: np.ceil,
    math.TruncOp: np.trunc,
    math.RoundEvenOp: np.rint,
    math.RoundOp: lambda x: (np.sign(x) * np.floor(np.abs(x) + np.asarray(0.5, np.asarray(x).dtype)))[()],
    math.SinOp: np.sin,
    math.CosOp: np.cos,
    math.AtanOp: np.arctan,
}

_BINARY = {
    arith.AddfOp: lambda a, b: a + b,
    arith.SubfOp: lambda a, b: a - b,
    arith.MulfOp: lambda a, b: a * b,
    arith.DivfOp: lambda a, b: a / b,
    arith.MaximumfOp: np.maximum,
    arith.MinimumfOp: np.minimum,
    arith.MaxnumfOp: np.fmax,
    arith.MinnumfOp: np.fmin,
    arith.AddiOp: lambda a, b: a + b,
    arith.SubiOp: lambda a, b: a - b,
    arith.MuliOp: lambda a, b: a * b,
    arith.DivSIOp: _int_div_trunc,
    arith.RemSIOp: lambda a, b: a - _int_div_trunc(a, b) * b,
    arith.FloorDivSIOp: lambda a, b: a // b,
    arith.CeilDivSIOp: lambda a, b: -((-a) // b),
    arith.MaxSIOp: lambda a, b: np.maximum(a, b) if not isinstance(a, int) else max(a, b),
    arith.MinSIOp: lambda a, b: np.minimum(a, b) if not isinstance(a, int) else min(a, b),
    arith.AndIOp: lambda a, b: a & b,
    arith.OrIOp: lambda a, b: a | b,
    arith.XOrIOp: lambda a, b: a ^ b,
    arith.ShLIOp: lambda a, b: a << b,
    arith.ShRSIOp: lambda a, b: a >> b,
    arith.ShRUIOp: _shrui,
    math.PowFOp: np.power,
    math.CopySignOp: np.copysign,
    math.Atan2Op: np.arctan2,
}

_CASTS = (
    arith.ExtFOp, arith.TruncFOp, arith.SIToFPOp, arith.FPToSIOp, arith.ExtSIOp, arith.TruncIOp,
    arith.IndexCastOp,
)


class _Interpreter:
    def __init__(self, module: ModuleOp, params: dict[str, np.ndarray] | None):
        self.module = module
        self.params = params or {}
        self.funcs = {op.sym_name.data: op for op in module.ops if isinstance(op, func.FuncOp)}
        # id -> the freed array itself: holding it keeps its id from being reused by a new array
        self.freed: dict[int, np.ndarray] = {}

    # -- values ------------------------------------------------------------------------------

    def get(self, env: dict, v: SSAValue):
        try:
            value = env[v]
        except KeyError:
            raise InterpError(f"value {v} used before definition") from None
        if isinstance(value, np.ndarray) and id(value) in self.freed:
            raise InterpError(f"use of a deallocated buffer ({v.type})")
        return value

    # -- functions ---------------------------------------------------------------------------

    def call(self, name: str, args: Sequence) -> list:
        f = self.funcs.get(name)
        if f is None:
            raise InterpError(f"no function @{name}")
        block = f.body.block
        if len(block.args) != len(args):
            raise InterpError(f"@{name} takes {len(block.args)} argument(s), got {len(args)}")
        env: dict = {}
        for a, v in zip(block.args, args):
            if isinstance(a.type, TensorType | MemRefType):
                expected = np_dtype(a.type.get_element_type())
                if v.dtype != expected:
                    raise InterpError(f"argument {a.index} of @{name}: dtype {v.dtype}, expected {expected}")
                shape = a.type.get_shape()
                if len(shape) != v.ndim or any(d >= 0 and d != s for d, s in zip(shape, v.shape)):
                    raise InterpError(f"argument {a.index} of @{name}: shape {v.shape} vs {a.type}")
            env[a] = v
        return self.run_block(block, env) or []

    def run_block(self, block: Block, env: dict):
        """Run the ops of a block; returns the func.return values if it returns."""
        for op in block.ops:
            if isinstance(op, func.ReturnOp):
                return [self.get(env, v) for v in op.arguments]
            if isinstance(op, loop.YieldOp):
                return None
            self.step(op, env)
        return None

    # -- one op ------------------------------------------------------------------------------

    def getter(self, env: dict):
        return lambda v: self.get(env, v)

    def step(self, op: Operation, env: dict) -> None:
        """Run one op: its handler is the first rule of _STEP_RULES that takes its class (cached)."""
        cls = type(op)
        handler = _STEP_HANDLERS.get(cls)
        if handler is None:
            handler = _STEP_HANDLERS[cls] = next((h for t, h in _STEP_RULES if issubclass(cls, t)), _step_unsupported)
        handler(self, op, env)

    @staticmethod
    def _check_bounds(buf: np.ndarray, idx: tuple[int, ...], op: Operation) -> None:
        if len(idx) != buf.ndim or any(not (0 <= i < s) for i, s in zip(idx, buf.shape)):
            raise InterpError(f"{op.name} out of bounds: index {list(idx)} into shape {list(buf.shape)}")


# -- one op: a handler per op kind, found by class (was an isinstance chain: 28 checks an op) ----


def _step_callkernelop(self, op: Operation, env: dict) -> None:
    g = self.getter(env)
    args = [g(a) for a in op.args]
    dims = iter(int(g(d)) for d in op.dims)
    outs = []
    for r in op.outputs:
        t = r.type
        shape = [d if d >= 0 else next(dims) for d in t.get_shape()]
        outs.append(_fresh(shape, np_dtype(t.get_element_type())))
    self.call(op.callee.root_reference.data, [*args, *outs])
    for r, o in zip(op.outputs, outs):
        env[r] = o


def _step_dim(self, op: Operation, env: dict) -> None:
    """graph.dim and mem.dim: the size of dim `index` of the one operand."""
    env[op.result] = int(self.get(env, op.operands[0]).shape[op.index.value.data])


def _step_reshapeop(self, op: Operation, env: dict) -> None:
    g = self.getter(env)
    shape = _shape(op.result.type, [g(d) for d in op.dims])
    env[op.result] = np.ascontiguousarray(g(op.input)).reshape(shape)


def _step_paramop(self, op: Operation, env: dict) -> None:
    name = op.param_name.data
    if name not in self.params:
        raise InterpError(f"no value for graph.param \"{name}\"")
    env[op.result] = np.asarray(self.params[name], dtype=np_dtype(op.result.type.get_element_type()))


def _step_graph_constant(self, op: Operation, env: dict) -> None:
    env[op.result] = _dense(op.value, op.result.type)


def _step_extractop(self, op: Operation, env: dict) -> None:
    g = self.getter(env)
    env[op.result] = _as(np.asarray(g(op.input))[()], op.result.type)


def _step_fromdimsop(self, op: Operation, env: dict) -> None:
    g = self.getter(env)
    env[op.result] = np.array([int(g(d)) for d in op.dims], dtype=np.int64)


def _step_forop(self, op: Operation, env: dict) -> None:
    g = self.getter(env)
    lb, ub, st = int(g(op.lb)), int(g(op.ub)), int(g(op.step))
    body = op.body.block
    for i in range(lb, ub, st):
        env[body.args[0]] = i
        self.run_block(body, env)


def _step_blockop(self, op: Operation, env: dict) -> None:
    g = self.getter(env)
    vals = [int(g(b)) for b in op.bindings]
    if op.has_init and all(v == 0 for v, k in zip(vals, op.kinds) if k == "reduce"):
        for a, v in zip(op.init.block.args, vals):
            env[a] = v
        self.run_block(op.init.block, env)
    for a, v in zip(op.body.block.args, vals):
        env[a] = v
    self.run_block(op.body.block, env)


def _step_loadop(self, op: Operation, env: dict) -> None:
    g = self.getter(env)
    buf = g(op.memref)
    idx = tuple(int(g(i)) for i in op.indices)
    self._check_bounds(buf, idx, op)
    if isinstance(op.result.type, VectorType):
        n = op.result.type.get_shape()[0]
        if idx[-1] + n > buf.shape[-1]:
            raise InterpError(f"vector load out of bounds: {idx} + {n} in {buf.shape}")
        env[op.result] = buf[idx[:-1]][idx[-1]: idx[-1] + n].copy()
    else:
        env[op.result] = buf[idx]


def _step_storeop(self, op: Operation, env: dict) -> None:
    g = self.getter(env)
    buf = g(op.memref)
    idx = tuple(int(g(i)) for i in op.indices)
    self._check_bounds(buf, idx, op)
    v = g(op.value)
    if isinstance(op.value.type, VectorType):
        n = op.value.type.get_shape()[0]
        if idx[-1] + n > buf.shape[-1]:
            raise InterpError(f"vector store out of bounds: {idx} + {n} in {buf.shape}")
        buf[idx[:-1]][idx[-1]: idx[-1] + n] = v
    else:
        buf[idx] = v


def _step_allocop(self, op: Operation, env: dict) -> None:
    g = self.getter(env)
    t = op.result.type
    env[op.result] = _fresh(_shape(t, [g(d) for d in op.dims]), np_dtype(t.get_element_type()))


def _step_deallocop(self, op: Operation, env: dict) -> None:
    g = self.getter(env)
    buf = g(op.memref)
    self.freed[id(buf)] = buf


def _step_viewop(self, op: Operation, env: dict) -> None:
    g = self.getter(env)
    shape = _shape(op.result.type, [g(d) for d in op.dims])
    src = g(op.source)
    view = src.reshape(shape)
    assert np.shares_memory(view, src)
    env[op.result] = view


def _step_subrangeop(self, op: Operation, env: dict) -> None:
    g = self.getter(env)
    src = g(op.source)
    n = int(np.prod(op.result.type.get_shape(), dtype=np.int64))
    off = int(g(op.offset))
    flat = src.reshape(-1)
    view = flat[off:off + n].reshape(tuple(op.result.type.get_shape()))
    assert np.shares_memory(view, src)
    env[op.result] = view


def _step_copyop(self, op: Operation, env: dict) -> None:
    g = self.getter(env)
    g(op.target)[...] = g(op.source)


def _step_fillop(self, op: Operation, env: dict) -> None:
    g = self.getter(env)
    g(op.memref)[...] = g(op.value)


def _step_arith_constant(self, op: Operation, env: dict) -> None:
    env[op.result] = _const(op.value, op.result.type)


def _step_binary(self, op: Operation, env: dict) -> None:
    lhs, rhs = op.operands
    a, b = self.get(env, lhs), self.get(env, rhs)
    result = op.results[0]
    if type(a) is int and type(b) is int and isinstance(result.type, IndexType):
        env[result] = int(_BINARY[type(op)](a, b))  # index arithmetic: Python ints, no NumPy state
        return
    with np.errstate(all="ignore"):
        r = _BINARY[type(op)](a, b)
    env[result] = _as(r, result.type)


def _step_unary_math(self, op: Operation, env: dict) -> None:
    g = self.getter(env)
    with np.errstate(all="ignore"):
        r = _UNARY_MATH[type(op)](g(op.operands[0]))
    env[op.results[0]] = _as(r, op.results[0].type)


def _step_negfop(self, op: Operation, env: dict) -> None:
    g = self.getter(env)
    env[op.result] = -g(op.operand)


def _step_cmpiop(self, op: Operation, env: dict) -> None:
    g = self.getter(env)
    from xdsl.dialects.arith import CMPI_COMPARISON_OPERATIONS as P

    env[op.result] = _cmpi(P[op.predicate.value.data], g(op.lhs), g(op.rhs))


def _step_cmpfop(self, op: Operation, env: dict) -> None:
    g = self.getter(env)
    from xdsl.dialects.arith import CMPF_COMPARISON_OPERATIONS as P

    env[op.result] = _cmpf(P[op.predicate.value.data], g(op.lhs), g(op.rhs))


def _step_selectop(self, op: Operation, env: dict) -> None:
    g = self.getter(env)
    c, a, b = g(op.cond), g(op.lhs), g(op.rhs)
    env[op.result] = _as(np.where(c, a, b), op.result.type) if np.ndim(c) else (a if c else b)


def _step_uitofpop(self, op: Operation, env: dict) -> None:
    g = self.getter(env)
    x = np.asarray(g(op.input))
    if x.dtype != np.bool_:
        x = x.astype(np.dtype(f"u{x.dtype.itemsize}"))
    env[op.result] = _as(x, op.result.type)


def _step_casts(self, op: Operation, env: dict) -> None:
    g = self.getter(env)
    with np.errstate(all="ignore"):
        x = g(op.operands[0])
        if isinstance(op, arith.FPToSIOp):
            x = np.trunc(x)
        if isinstance(op, arith.TruncIOp) and op.result.type == IntegerType(1):
            x = np.asarray(x) & 1
        env[op.results[0]] = _as(x, op.results[0].type)


def _step_fpowiop(self, op: Operation, env: dict) -> None:
    g = self.getter(env)
    env[op.result] = _as(np.power(g(op.lhs), np.asarray(g(op.rhs), dtype=np.float64)), op.result.type)


def _step_fmaop(self, op: Operation, env: dict) -> None:
    g = self.getter(env)
    a, b, c = (g(v) for v in op.operands)
    env[op.result] = _as(a * b + c, op.result.type)


def _step_shuffleop(self, op: Operation, env: dict) -> None:
    g = self.getter(env)
    both = np.concatenate([np.atleast_1d(g(op.v1)), np.atleast_1d(g(op.v2))])
    env[op.result] = both[np.asarray(op.mask.get_values(), dtype=np.int64)]


def _step_unsupported(self, op: Operation, env: dict) -> None:
    raise InterpError(f"interpreter: unsupported op {op.name}")


# the first rule whose class (or union) the op's class is a subclass of handles it, in the order of the
# old isinstance chain; the _BINARY and _UNARY_MATH ops, matched by exact class, are in _STEP_HANDLERS
_STEP_RULES = [
    (graph.CallKernelOp, _step_callkernelop),
    (graph.DimOp, _step_dim),
    (graph.ReshapeOp, _step_reshapeop),
    (graph.ParamOp, _step_paramop),
    (graph.ConstantOp, _step_graph_constant),
    (graph.ExtractOp, _step_extractop),
    (graph.FromDimsOp, _step_fromdimsop),
    (loop.ForOp, _step_forop),
    (loop.BlockOp, _step_blockop),
    (mem.LoadOp, _step_loadop),
    (mem.StoreOp, _step_storeop),
    (mem.AllocOp | mem.AllocaOp, _step_allocop),
    (mem.DeallocOp, _step_deallocop),
    (mem.DimOp, _step_dim),
    (mem.ViewOp, _step_viewop),
    (mem.SubrangeOp, _step_subrangeop),
    (mem.CopyOp, _step_copyop),
    (mem.FillOp, _step_fillop),
    (arith.ConstantOp, _step_arith_constant),
    (arith.NegfOp, _step_negfop),
    (arith.CmpiOp, _step_cmpiop),
    (arith.CmpfOp, _step_cmpfop),
    (arith.SelectOp, _step_selectop),
    (arith.UIToFPOp | arith.ExtUIOp, _step_uitofpop),
    (_CASTS, _step_casts),
    (math.FPowIOp, _step_fpowiop),
    (math.FmaOp, _step_fmaop),
    (vector.ShuffleOp, _step_shuffleop),
]
_STEP_HANDLERS: dict[type, object] = {
    **{c: _step_binary for c in _BINARY},
    **{c: _step_unary_math for c in _UNARY_MATH},
}


def _const(value: Attribute, t: Attribute):
    if isinstance(value, IntegerAttr):
        v = value.value.data
        if isinstance(t, IndexType):
            return int(v)
        if t == IntegerType(1):
            return np.bool_(v & 1)
        return _as(v, t)
    if isinstance(value, FloatAttr):
        return _as(value.value.data, t)
    if isinstance(value, DenseIntOrFPElementsAttr):
        return _dense(value, t)
    raise InterpError(f"unsupported constant {value}")


def _dense(value: Attribute, t: Attribute) -> np.ndarray:
    if not isinstance(value, DenseIntOrFPElementsAttr):
        raise InterpError(f"unsupported constant attribute {type(value).__name__}")
    dtype = np_dtype(t.get_element_type())
    vals = np.array(value.get_values())
    shape = t.get_shape()
    if dtype == np.bool_:
        vals = vals.astype(np.int64) & 1
    if vals.size == 1 and int(np.prod(shape)) != 1:
        return np.full(shape, vals.reshape(()), dtype=dtype)
    return vals.astype(dtype).reshape(shape)


def interpret_kernels(
    module: ModuleOp,
    func_name: str | None,
    inputs: Sequence[np.ndarray],
    params: dict[str, np.ndarray] | None = None,
) -> list[np.ndarray]:
    """Execute `func_name` (default: the first non-kernel function) of a legalized module."""
    interp = _Interpreter(module, params)
    name = func_name or _entry_name(module)
    args = [np.asarray(x, order="C") for x in inputs] if not loop.is_kernel(interp.funcs.get(name)) else list(inputs)
    results = interp.call(name, args)
    if loop.is_kernel(interp.funcs[name]):
        return list(inputs)
    return [np.array(r) if not isinstance(r, np.ndarray) else r for r in results]


# --------------------------------------------------------------------------------------------
# Native back end


_SMOKE = """
func.func @smoke(%x: tensor<?x3xf32>) -> tensor<?x3xf32> {
  %y = graph.relu %x : tensor<?x3xf32>
  func.return %y : tensor<?x3xf32>
}
"""


def _call_native(compiled, name: str, inputs: Sequence[np.ndarray], params):
    fn = getattr(compiled, name, None)
    if fn is None:
        try:
            fn = compiled[name]
        except (TypeError, KeyError):
            fn = None
    if fn is None:
        raise AttributeError(f"compiled module has no entry point {name!r}")
    out = fn(*inputs)
    if isinstance(out, tuple | list):
        return [np.asarray(o) for o in out]
    return [np.asarray(out)]


class NativeUnavailable(RuntimeError):
    """run_graph(backend="native") when the native back end does not work here (the reason is the
    message); tests/unit/conftest.py turns it into a skip."""


@functools.cache
def native_status() -> tuple[bool, str]:
    """(available, reason): the native back end imports and runs a smoke test correctly."""
    try:
        from minimlir.backend.runtime import compile_mlir_text  # noqa: F401
    except Exception as e:  # noqa: BLE001 (any import failure means "not available")
        return False, f"native back end not available: {type(e).__name__}: {e}"
    try:
        x = np.array([[-1, 2, -3], [4, -5, 6]], dtype=np.float32)
        (y,) = _call_native(compile_mlir_text(_SMOKE), "smoke", [x], None)
        if not np.array_equal(y, np.maximum(x, 0)):
            return False, "native back end smoke test gave a wrong result"
    except Exception as e:  # noqa: BLE001
        return False, f"native back end smoke test failed: {type(e).__name__}: {e}"
    return True, "ok"


def run_graph(
    mlir_text: str,
    inputs: Sequence[np.ndarray],
    backend: str | None = None,
    func_name: str | None = None,
    params: dict[str, np.ndarray] | None = None,
) -> list[np.ndarray]:
    """Run the graph-level function `func_name` (default: the first one) on `inputs`."""
    if backend is None:
        backend = "native" if native_status()[0] else "interp"
    if backend == "interp":
        module = legalize(mlir_text)
        return interpret_kernels(module, func_name, inputs, params)
    if backend == "native":
        ok, reason = native_status()
        if not ok:
            raise NativeUnavailable(reason)
        from minimlir.backend.runtime import compile_mlir_text

        name = func_name or _entry_name(parse(mlir_text))
        return _call_native(compile_mlir_text(mlir_text), name, inputs, params)
    raise ValueError(f"unknown backend {backend!r} (expected 'interp' or 'native')")


def assert_outputs(
    actual: Sequence[np.ndarray],
    expected: Sequence[np.ndarray],
    rtol: float = 1e-5,
    atol: float = 1e-6,
) -> None:
    """Same count, dtypes and shapes; values within tolerance (exact for ints and bools)."""
    assert len(actual) == len(expected), f"{len(actual)} outputs, expected {len(expected)}"
    for k, (a, e) in enumerate(zip(actual, expected)):
        e = np.asarray(e)
        assert a.dtype == e.dtype, f"output {k}: dtype {a.dtype}, expected {e.dtype}"
        assert a.shape == e.shape, f"output {k}: shape {a.shape}, expected {e.shape}"
        if e.dtype.kind in "fc":
            np.testing.assert_allclose(a, e, rtol=rtol, atol=atol, err_msg=f"output {k}")
        else:
            np.testing.assert_array_equal(a, e, err_msg=f"output {k}")
