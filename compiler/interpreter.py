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
    """Runs functions op by op. Each block is compiled once, on its first run, into a list of
    closures, one per op, that read and write their values in `env` (a dict keyed by the id() of
    the SSA value: xDSL's SSAValue hashes in Python) with the op's operands, types and constants
    looked up at compile time; the loop nest of a kernel then costs a closure call per op."""

    def __init__(self, module: ModuleOp, params: dict[str, np.ndarray] | None):
        self.module = module
        self.params = params or {}
        self.funcs = {op.sym_name.data: op for op in module.ops if isinstance(op, func.FuncOp)}
        # id -> the freed array itself: holding it keeps its id from being reused by a new array
        self.freed: dict[int, np.ndarray] = {}
        self._plans: dict[int, tuple[list, list | None]] = {}  # id(block) -> (op closures, returned values)
        self._values: dict[int, SSAValue] = {}  # id -> value, for the message of a value used before definition

    # -- values ------------------------------------------------------------------------------

    def key(self, v: SSAValue) -> int:
        self._values[id(v)] = v
        return id(v)

    def reader(self, v: SSAValue):
        """A closure env -> the value of `v` (with the deallocated-buffer check for buffers)."""
        k = self.key(v)
        if not isinstance(v.type, TensorType | MemRefType):
            return lambda env: env[k]
        freed = self.freed

        def read(env):
            value = env[k]
            if id(value) in freed:
                raise InterpError(f"use of a deallocated buffer ({v.type})")
            return value

        return read

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
            env[self.key(a)] = v
        try:
            with np.errstate(all="ignore"):  # NumPy's float warnings: the IR's semantics are IEEE's
                return self.run_block(block, env) or []
        except KeyError as e:  # a closure read a value no op had written yet
            v = self._values.get(e.args[0]) if e.args and isinstance(e.args[0], int) else None
            if v is None:
                raise
            raise InterpError(f"value {v} used before definition") from None

    def plan(self, block: Block) -> tuple[list, list | None]:
        """The block's op closures, and the readers of the values it returns (None: it yields)."""
        p = self._plans.get(id(block))
        if p is None:
            fns, returned = [], None
            for op in block.ops:
                if isinstance(op, func.ReturnOp):
                    returned = [self.reader(v) for v in op.arguments]
                    break
                if isinstance(op, loop.YieldOp):
                    break
                fns.append(self.compile(op))
            p = self._plans[id(block)] = (fns, returned)
        return p

    def run_block(self, block: Block, env: dict):
        """Run the ops of a block; returns the func.return values if it returns, else None."""
        fns, returned = self.plan(block)
        for fn in fns:
            fn(env)
        return None if returned is None else [r(env) for r in returned]

    # -- one op ------------------------------------------------------------------------------

    def compile(self, op: Operation):
        """The op's closure, from the first rule of _COMPILE_RULES that takes its class (an op no rule
        takes fails when it runs, not before)."""
        return (_rule(type(op)) or _compile_unsupported)(self, op)


# -- one op: a compiler per op kind, found by class, returning the op's closure env -> None ------


def _compile_unsupported(self: _Interpreter, op: Operation):
    def run(env):
        raise InterpError(f"interpreter: unsupported op {op.name}")

    return run


def _compile_callkernelop(self: _Interpreter, op: Operation):
    args = [self.reader(a) for a in op.args]
    dims = [self.reader(d) for d in op.dims]
    outs = [(self.key(r), r.type.get_shape(), np_dtype(r.type.get_element_type())) for r in op.outputs]
    callee = op.callee.root_reference.data

    def run(env):
        values = [a(env) for a in args]
        it = iter(int(d(env)) for d in dims)
        fresh = [_fresh([d if d >= 0 else next(it) for d in shape], dt) for _, shape, dt in outs]
        self.call(callee, [*values, *fresh])
        for (k, _, _), o in zip(outs, fresh):
            env[k] = o

    return run


def _compile_dim(self: _Interpreter, op: Operation):
    """graph.dim and mem.dim: the size of dim `index` of the one operand."""
    src, k, index = self.reader(op.operands[0]), self.key(op.result), op.index.value.data

    def run(env):
        env[k] = int(src(env).shape[index])

    return run


def _compile_reshapeop(self: _Interpreter, op: Operation):
    src, dims, k, t = self.reader(op.input), [self.reader(d) for d in op.dims], self.key(op.result), op.result.type

    def run(env):
        env[k] = np.ascontiguousarray(src(env)).reshape(_shape(t, [d(env) for d in dims]))

    return run


def _compile_paramop(self: _Interpreter, op: Operation):
    name, k, dtype = op.param_name.data, self.key(op.result), np_dtype(op.result.type.get_element_type())

    def run(env):
        if name not in self.params:
            raise InterpError(f"no value for graph.param \"{name}\"")
        env[k] = np.asarray(self.params[name], dtype=dtype)

    return run


def _compile_graph_constant(self: _Interpreter, op: Operation):
    value, t, k = op.value, op.result.type, self.key(op.result)

    def run(env):
        env[k] = _dense(value, t)

    return run


def _compile_extractop(self: _Interpreter, op: Operation):
    src, k, t = self.reader(op.input), self.key(op.result), op.result.type

    def run(env):
        env[k] = _as(np.asarray(src(env))[()], t)

    return run


def _compile_fromdimsop(self: _Interpreter, op: Operation):
    dims, k = [self.reader(d) for d in op.dims], self.key(op.result)

    def run(env):
        env[k] = np.array([int(d(env)) for d in dims], dtype=np.int64)

    return run


def _compile_forop(self: _Interpreter, op: Operation):
    lb, ub, st = self.reader(op.lb), self.reader(op.ub), self.reader(op.step)
    body = op.body.block
    iv = self.key(body.args[0])

    def run(env):
        fns, _ = self.plan(body)
        for i in range(int(lb(env)), int(ub(env)), int(st(env))):
            env[iv] = i
            for fn in fns:
                fn(env)

    return run


def _compile_blockop(self: _Interpreter, op: Operation):
    bindings = [self.reader(b) for b in op.bindings]
    reduce = [i for i, k in enumerate(op.kinds) if k == "reduce"]
    init = op.init.block if op.has_init else None
    init_args = [self.key(a) for a in init.args] if init is not None else []
    body = op.body.block
    body_args = [self.key(a) for a in body.args]

    def run(env):
        vals = [int(b(env)) for b in bindings]
        if init is not None and all(vals[i] == 0 for i in reduce):
            for a, v in zip(init_args, vals):
                env[a] = v
            self.run_block(init, env)
        for a, v in zip(body_args, vals):
            env[a] = v
        self.run_block(body, env)

    return run


def _out_of_bounds(buf: np.ndarray, idx: tuple[int, ...]) -> bool:
    if len(idx) != buf.ndim:
        return True
    for i, s in zip(idx, buf.shape):
        if not 0 <= i < s:
            return True
    return False


def _address(self: _Interpreter, op: Operation, memref: SSAValue, indices, n: int | None, what: str):
    """A closure env -> (buffer, index) of a load or store of `n` lanes (None: a scalar), bounds-checked."""
    src, idxs = self.reader(memref), [self.reader(i) for i in indices]

    def at(env):
        buf = src(env)
        idx = tuple([int(i(env)) for i in idxs])
        if _out_of_bounds(buf, idx):
            raise InterpError(f"{op.name} out of bounds: index {list(idx)} into shape {list(buf.shape)}")
        if n is not None and idx[-1] + n > buf.shape[-1]:
            raise InterpError(f"vector {what} out of bounds: {idx} + {n} in {buf.shape}")
        return buf, idx

    return at


def _compile_loadop(self: _Interpreter, op: Operation):
    n = op.result.type.get_shape()[0] if isinstance(op.result.type, VectorType) else None
    at, k = _address(self, op, op.memref, op.indices, n, "load"), self.key(op.result)

    def run(env):
        buf, idx = at(env)
        env[k] = buf[idx] if n is None else buf[idx[:-1]][idx[-1]: idx[-1] + n].copy()

    return run


def _compile_storeop(self: _Interpreter, op: Operation):
    n = op.value.type.get_shape()[0] if isinstance(op.value.type, VectorType) else None
    at, val = _address(self, op, op.memref, op.indices, n, "store"), self.reader(op.value)

    def run(env):
        buf, idx = at(env)
        if n is None:
            buf[idx] = val(env)
        else:
            buf[idx[:-1]][idx[-1]: idx[-1] + n] = val(env)

    return run


def _compile_allocop(self: _Interpreter, op: Operation):
    t, dims, k = op.result.type, [self.reader(d) for d in op.dims], self.key(op.result)
    dtype = np_dtype(t.get_element_type())

    def run(env):
        env[k] = _fresh(_shape(t, [d(env) for d in dims]), dtype)

    return run


def _compile_deallocop(self: _Interpreter, op: Operation):
    src = self.reader(op.memref)

    def run(env):
        buf = src(env)
        self.freed[id(buf)] = buf

    return run


def _compile_viewop(self: _Interpreter, op: Operation):
    t, dims, src, k = op.result.type, [self.reader(d) for d in op.dims], self.reader(op.source), self.key(op.result)

    def run(env):
        shape = _shape(t, [d(env) for d in dims])
        s = src(env)
        view = s.reshape(shape)
        assert np.shares_memory(view, s)
        env[k] = view

    return run


def _compile_subrangeop(self: _Interpreter, op: Operation):
    src, off, k = self.reader(op.source), self.reader(op.offset), self.key(op.result)
    shape = tuple(op.result.type.get_shape())
    n = int(np.prod(shape, dtype=np.int64))

    def run(env):
        s = src(env)
        o = int(off(env))
        view = s.reshape(-1)[o:o + n].reshape(shape)
        assert np.shares_memory(view, s)
        env[k] = view

    return run


def _compile_copyop(self: _Interpreter, op: Operation):
    dst, src = self.reader(op.target), self.reader(op.source)

    def run(env):
        dst(env)[...] = src(env)

    return run


def _compile_fillop(self: _Interpreter, op: Operation):
    dst, val = self.reader(op.memref), self.reader(op.value)

    def run(env):
        dst(env)[...] = val(env)

    return run


def _compile_arith_constant(self: _Interpreter, op: Operation):
    value, k = _const(op.value, op.result.type), self.key(op.result)
    if isinstance(value, np.ndarray):  # a vector: a fresh array each run, as the op makes one
        def run_array(env):
            env[k] = value.copy()

        return run_array

    def run(env):
        env[k] = value

    return run


def _caster(t: Attribute):
    """value -> its representation as type t (_as, with the dtype looked up once)."""
    if isinstance(t, IndexType):
        return int
    dtype = np_dtype(t)
    return lambda value: np.asarray(value).astype(dtype)[()]


def _compile_binary(self: _Interpreter, op: Operation):
    lhs, rhs = op.operands
    a, b, k = self.reader(lhs), self.reader(rhs), self.key(op.results[0])
    f, t = _BINARY[type(op)], op.results[0].type
    cast = _caster(t)
    if isinstance(t, IndexType):
        def run_index(env):
            env[k] = int(f(a(env), b(env)))  # index arithmetic: Python ints, no NumPy state

        return run_index

    def run(env):
        env[k] = cast(f(a(env), b(env)))

    return run


def _compile_unary_math(self: _Interpreter, op: Operation):
    x, k = self.reader(op.operands[0]), self.key(op.results[0])
    f, cast = _UNARY_MATH[type(op)], _caster(op.results[0].type)

    def run(env):
        env[k] = cast(f(x(env)))

    return run


def _compile_negfop(self: _Interpreter, op: Operation):
    x, k = self.reader(op.operand), self.key(op.result)

    def run(env):
        env[k] = -x(env)

    return run


def _compile_cmpiop(self: _Interpreter, op: Operation):
    from xdsl.dialects.arith import CMPI_COMPARISON_OPERATIONS as P

    pred, a, b, k = P[op.predicate.value.data], self.reader(op.lhs), self.reader(op.rhs), self.key(op.result)
    fast = {"eq": int.__eq__, "ne": int.__ne__, "slt": int.__lt__, "sle": int.__le__, "sgt": int.__gt__,
            "sge": int.__ge__}.get(pred) if isinstance(op.lhs.type, IndexType) else None
    true, false = np.bool_(True), np.bool_(False)

    def run(env):
        x, y = a(env), b(env)
        if fast is not None and type(x) is int and type(y) is int:
            env[k] = true if fast(x, y) else false
        else:
            env[k] = _cmpi(pred, x, y)

    return run


def _compile_cmpfop(self: _Interpreter, op: Operation):
    from xdsl.dialects.arith import CMPF_COMPARISON_OPERATIONS as P

    pred, a, b, k = P[op.predicate.value.data], self.reader(op.lhs), self.reader(op.rhs), self.key(op.result)

    def run(env):
        env[k] = _cmpf(pred, a(env), b(env))

    return run


def _compile_selectop(self: _Interpreter, op: Operation):
    c, a, b, k, t = self.reader(op.cond), self.reader(op.lhs), self.reader(op.rhs), self.key(op.result), op.result.type

    def run(env):
        cond, x, y = c(env), a(env), b(env)
        env[k] = _as(np.where(cond, x, y), t) if np.ndim(cond) else (x if cond else y)

    return run


def _compile_uitofpop(self: _Interpreter, op: Operation):
    src, k, cast = self.reader(op.input), self.key(op.result), _caster(op.result.type)

    def run(env):
        x = np.asarray(src(env))
        if x.dtype != np.bool_:
            x = x.astype(np.dtype(f"u{x.dtype.itemsize}"))
        env[k] = cast(x)

    return run


def _compile_casts(self: _Interpreter, op: Operation):
    src, k, cast = self.reader(op.operands[0]), self.key(op.results[0]), _caster(op.results[0].type)
    trunc = isinstance(op, arith.FPToSIOp)
    to_i1 = isinstance(op, arith.TruncIOp) and op.result.type == IntegerType(1)

    def run(env):
        x = src(env)
        if trunc:
            x = np.trunc(x)
        if to_i1:
            x = np.asarray(x) & 1
        env[k] = cast(x)

    return run


def _compile_fpowiop(self: _Interpreter, op: Operation):
    a, b, k, cast = self.reader(op.lhs), self.reader(op.rhs), self.key(op.result), _caster(op.result.type)

    def run(env):
        env[k] = cast(np.power(a(env), np.asarray(b(env), dtype=np.float64)))

    return run


def _compile_fmaop(self: _Interpreter, op: Operation):
    (a, b, c), k, cast = (self.reader(v) for v in op.operands), self.key(op.result), _caster(op.result.type)

    def run(env):
        env[k] = cast(a(env) * b(env) + c(env))

    return run


def _compile_shuffleop(self: _Interpreter, op: Operation):
    a, b, k = self.reader(op.v1), self.reader(op.v2), self.key(op.result)
    mask = np.asarray(op.mask.get_values(), dtype=np.int64)

    def run(env):
        env[k] = np.concatenate([np.atleast_1d(a(env)), np.atleast_1d(b(env))])[mask]

    return run


def _compile_broadcastop(self: _Interpreter, op: Operation):
    """vector.broadcast of a scalar: a splat."""
    src, k, n = self.reader(op.source), self.key(op.vector), op.vector.type.get_shape()[0]

    def run(env):
        env[k] = np.full((n,), src(env))

    return run


def _compile_func_call(self: _Interpreter, op: Operation):
    """func.call (e.g. of a parallel loop's outlined body): the callee on the operands, here."""
    callee = op.callee.string_value()
    args, keys = [self.reader(v) for v in op.arguments], [self.key(r) for r in op.results]

    def run(env):
        for k, v in zip(keys, self.call(callee, [a(env) for a in args])):
            env[k] = v

    return run


# the first rule whose class (or union) the op's class is a subclass of compiles it, in the order of the
# old isinstance chain; the _BINARY and _UNARY_MATH ops, matched by exact class, are in _COMPILERS
_COMPILE_RULES = [
    (graph.CallKernelOp, _compile_callkernelop),
    (graph.DimOp, _compile_dim),
    (graph.ReshapeOp, _compile_reshapeop),
    (graph.ParamOp, _compile_paramop),
    (graph.ConstantOp, _compile_graph_constant),
    (graph.ExtractOp, _compile_extractop),
    (graph.FromDimsOp, _compile_fromdimsop),
    (loop.ForOp, _compile_forop),
    (loop.BlockOp, _compile_blockop),
    (mem.LoadOp, _compile_loadop),
    (mem.StoreOp, _compile_storeop),
    (mem.AllocOp | mem.AllocaOp, _compile_allocop),
    (mem.DeallocOp, _compile_deallocop),
    (mem.DimOp, _compile_dim),
    (mem.ViewOp, _compile_viewop),
    (mem.SubrangeOp, _compile_subrangeop),
    (mem.CopyOp, _compile_copyop),
    (mem.FillOp, _compile_fillop),
    (arith.ConstantOp, _compile_arith_constant),
    (arith.NegfOp, _compile_negfop),
    (arith.CmpiOp, _compile_cmpiop),
    (arith.CmpfOp, _compile_cmpfop),
    (arith.SelectOp, _compile_selectop),
    (arith.UIToFPOp | arith.ExtUIOp, _compile_uitofpop),
    (_CASTS, _compile_casts),
    (math.FPowIOp, _compile_fpowiop),
    (math.FmaOp, _compile_fmaop),
    (vector.ShuffleOp, _compile_shuffleop),
    (vector.BroadcastOp, _compile_broadcastop),
    (func.CallOp, _compile_func_call),
]
_COMPILERS: dict[type, object] = {
    **{c: _compile_binary for c in _BINARY},
    **{c: _compile_unary_math for c in _UNARY_MATH},
}


def _rule(cls: type):
    """The compiler of an op class (None: no rule takes it), cached by class."""
    try:
        return _COMPILERS[cls]
    except KeyError:
        rule = _COMPILERS[cls] = next((c for t, c in _COMPILE_RULES if issubclass(cls, t)), None)
        return rule


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
