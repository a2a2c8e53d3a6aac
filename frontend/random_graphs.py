"""Random-graph differential testing (NNSmith-style): random valid ONNX graphs, a judge, a shrinker.

    from minimlir.frontend.random_graphs import generate, check, shrink
    model = generate(seed=7, index=3)          # a pure function of (seed, index)
    result = check(model)                      # compile once, run at every size, judge
    if not result.ok:
        small = shrink(model, lambda m: check(m).kind == result.kind)

`generate` builds a typed, shape-correct ONNX graph (opset 18) of 2-8 nodes drawn from the ops
minimlir supports: elementwise unary/binary with NumPy broadcasting, comparisons feeding Where,
MatMul/Gemm, Conv/MaxPool/AveragePool (random strides, pads, dilations, groups, ceil_mode), conv blocks
in whole 16-channel blocks (graph-layout's blocked chains),
Reshape/Transpose/Concat/Slice/Gather/Split/Expand, reductions (keepdims both ways), Softmax,
LogSoftmax, LayerNormalization, Cast. Dims are static (1, primes, sizes >= 16) or dynamic: an input
dim is a `dim_param` symbol, and the graph carries two or three bindings of its symbols (the sizes it
runs at) in its metadata, with the value range of every input. Every dim is tracked as an exact
expression of the symbols (`(N0+2-3)//2+1`), so shapes stay valid at every binding. Value ranges are
tracked by interval arithmetic, so Log/Sqrt see positive inputs, Div a divisor away from 0, Exp a
bounded exponent.

`check` compiles the graph once (`minimlir.frontend.compile(model, cache=False)`) and runs it at
each binding next to onnxruntime on the graph itself (float32) and on its float64 twin (every
float32 tensor made float64; a node onnxruntime has no float64 kernel for runs in float32 between
two Casts). The float64 twin is the judge: an element is wrong when it is neither within tolerance
of the float64 answer nor of onnxruntime's float32 answer (so being more accurate than the float32
reference, e.g. Sigmoid below -18, is never a failure, and an ill-conditioned value where float32
itself cannot do better is not one either). Tolerance: |d| <= atol * max(1, max|ref|) + rtol * |ref|.

`shrink` reduces a failing graph while a predicate still holds: keep one output, rewire an output
to an intermediate (drop everything after it), bypass a node, cut an edge into a fresh input
(values in the range the edge had), drop bindings, shrink symbol values and static input dims.
"""

from __future__ import annotations

import json
import math
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 18
META_KEY = "minimlir.fuzz"
MAX_NUMEL = 6000  # elements of any tensor at the largest binding
RTOL, ATOL = 1e-3, 1e-4

_F, _I64, _I32, _B = "f", "i64", "i32", "b"
_ONNX_TYPE = {_F: TensorProto.FLOAT, _I64: TensorProto.INT64, _I32: TensorProto.INT32, _B: TensorProto.BOOL}
_NP_TYPE = {_F: np.float32, _I64: np.int64, _I32: np.int32, _B: np.bool_}
_KIND_OF = {v: k for k, v in _ONNX_TYPE.items()}

# dims: int (static) or str (an exact Python expression over the symbols, evaluated per binding)
Dim = int | str


def _sl(d: int, start: int, end: int, step: int) -> int:
    return len(range(*slice(start, end, step).indices(d)))


_EVAL_NS = {"_sl": _sl, "__builtins__": {}}


def dim_value(d: Dim, env: dict[str, int]) -> int:
    return d if isinstance(d, int) else int(eval(d, _EVAL_NS, dict(env)))  # noqa: S307 (our own expressions)


def _paren(d: Dim) -> str:
    return str(d) if isinstance(d, int) or d.isidentifier() else f"({d})"


def _dim_affine(d: Dim, add: int, div: int = 1, ceil: bool = False) -> Dim:
    """(d + add) // div + 1 (or ceil division) as an exact dim; div=0 means just d + add."""
    if isinstance(d, int):
        if div == 0:
            return d + add
        return (-(-(d + add) // div) if ceil else (d + add) // div) + 1
    inner = _paren(d) if add == 0 else f"{_paren(d)}{add:+d}"
    if div == 0:
        return inner
    if div == 1:
        return f"{_paren(d)}{add + 1:+d}" if add + 1 else _paren(d)
    return f"-(-({inner})//{div})+1" if ceil else f"({inner})//{div}+1"


def _dim_mul(a: Dim, b: Dim) -> Dim:
    if isinstance(a, int) and isinstance(b, int):
        return a * b
    if a == 1:
        return b
    if b == 1:
        return a
    return f"{_paren(a)}*{_paren(b)}"


@dataclass
class Tensor:
    """A value in the graph being built: dtype kind, exact dims, value interval [lo, hi]."""

    name: str
    kind: str
    shape: tuple[Dim, ...]
    lo: float = -1.0
    hi: float = 1.0
    uses: int = 0

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def bound(self) -> float:
        return max(abs(self.lo), abs(self.hi))


class _Retry(Exception):
    """The chosen parameters do not fit; the op generator tries again or gives up."""


class GraphGenerator:
    """Builds one random graph from a numpy Generator; `build()` returns the ModelProto."""

    STATIC_DIMS = (1, 1, 2, 2, 3, 3, 4, 5, 5, 7, 7, 8, 11, 13, 16, 17, 19, 24, 32)
    SYMBOL_VALUES = (1, 2, 3, 4, 5, 7, 8, 11, 13, 16, 17, 19, 23, 31, 32, 37)

    def __init__(self, rng: np.random.Generator, n_nodes: int | None = None):
        self.rng = rng
        self.nodes: list[onnx.NodeProto] = []
        self.inputs: list[Tensor] = []
        self.input_ranges: dict[str, list] = {}
        self.inits: list[onnx.TensorProto] = []
        self.pool: list[Tensor] = []
        self.counter = 0
        self.n_nodes = int(rng.integers(2, 9)) if n_nodes is None else n_nodes
        n_sym = int(rng.choice([0, 1, 1, 2, 2]))
        self.symbols = [f"N{i}" for i in range(n_sym)]
        n_runs = int(rng.choice([2, 2, 3]))
        self.envs: list[dict[str, int]] = [{} for _ in range(n_runs)]
        for s in self.symbols:
            vals = [int(v) for v in rng.choice(self.SYMBOL_VALUES, size=n_runs, replace=False)]
            for env, v in zip(self.envs, vals):
                env[s] = v

    # ---------------------------------------------------------------- helpers

    def fresh(self, prefix: str = "t") -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def choice(self, seq):
        return seq[int(self.rng.integers(len(seq)))]

    def coin(self, p: float = 0.5) -> bool:
        return bool(self.rng.random() < p)

    def values(self, d: Dim) -> list[int]:
        return [dim_value(d, e) for e in self.envs]

    def min_value(self, d: Dim) -> int:
        return min(self.values(d))

    def max_numel(self, shape: Sequence[Dim]) -> int:
        return max(math.prod(dim_value(d, e) for d in shape) for e in self.envs)

    def valid_shape(self, shape: Sequence[Dim]) -> bool:
        return all(self.min_value(d) >= 1 for d in shape) and self.max_numel(shape) <= MAX_NUMEL

    def random_dim(self, allow_sym: bool = True) -> Dim:
        if allow_sym and self.symbols and self.coin(0.35):
            return self.choice(self.symbols)
        return int(self.choice(self.STATIC_DIMS))

    def random_shape(self, rank: int | None = None, allow_sym: bool = True) -> tuple[Dim, ...]:
        for _ in range(50):
            r = int(self.rng.integers(1, 5)) if rank is None else rank
            shape = tuple(self.random_dim(allow_sym) for _ in range(r))
            if self.valid_shape(shape):
                return shape
        return (int(self.choice((1, 2, 3, 5))),) * (1 if rank is None else rank)

    def new_input(self, kind: str, shape: tuple[Dim, ...], lo: float, hi: float) -> Tensor:
        if any(isinstance(d, str) and not d.isidentifier() for d in shape):
            raise _Retry  # an input dim is a number or a symbol, never a derived expression
        t = Tensor(self.fresh("in"), kind, tuple(shape), lo, hi)
        self.inputs.append(t)
        self.input_ranges[t.name] = [lo, hi]
        self.pool.append(t)
        return t

    def new_float_input(self, shape=None, positive: bool = False) -> Tensor:
        shape = self.random_shape() if shape is None else shape
        lo, hi = (0.5, 2.0) if positive else self.choice(
            [(-2.0, 2.0), (-1.0, 1.0), (-3.0, 3.0), (0.1, 1.0), (0.5, 2.0)])
        return self.new_input(_F, shape, lo, hi)

    def weight(self, shape: Sequence[int], lo: float = -1.0, hi: float = 1.0, kind: str = _F) -> str:
        name = self.fresh("w")
        if kind == _F:
            arr = self.rng.uniform(lo, hi, size=tuple(shape)).astype(np.float32)
        else:
            arr = self.rng.integers(int(lo), int(hi) + 1, size=tuple(shape)).astype(_NP_TYPE[kind])
        self.inits.append(numpy_helper.from_array(arr, name))
        return name

    def ints(self, vals: Sequence[int]) -> str:
        name = self.fresh("c")
        self.inits.append(numpy_helper.from_array(np.array(list(vals), dtype=np.int64), name))
        return name

    def add_node(self, op: str, ins: Sequence[str], outs: Sequence[Tensor], **attrs) -> None:
        for t in outs:
            if not self.valid_shape(t.shape):
                raise _Retry
        for name in ins:
            for t in self.pool:
                if t.name == name:
                    t.uses += 1
        self.nodes.append(helper.make_node(op, list(ins), [t.name for t in outs], name=f"n{len(self.nodes)}", **attrs))
        self.pool.extend(outs)

    def out(self, kind: str, shape, lo: float, hi: float) -> Tensor:
        lo, hi = float(lo), float(hi)
        if not (math.isfinite(lo) and math.isfinite(hi)) or max(abs(lo), abs(hi)) > 1e6:
            raise _Retry
        return Tensor(self.fresh(), kind, tuple(shape), lo, hi)

    def pick(self, pred: Callable[[Tensor], bool] = lambda t: True, kind: str | None = _F) -> Tensor | None:
        cands = [t for t in self.pool if (kind is None or t.kind == kind) and pred(t)]
        if not cands:
            return None
        # prefer recent, unused values: graphs become chains and DAGs rather than fans
        weights = np.array([(1.0 + i) * (3.0 if t.uses == 0 else 1.0) for i, t in enumerate(cands)])
        return cands[int(self.rng.choice(len(cands), p=weights / weights.sum()))]

    def broadcast_partner(self, a: Tensor) -> tuple[Dim, ...]:
        """A shape that broadcasts with a's: a suffix of a's dims, some set to 1, maybe longer."""
        k = int(self.rng.integers(0, a.rank + 1))
        shape = [d if not self.coin(0.3) and (isinstance(d, int) or d.isidentifier()) else 1
                 for d in a.shape[a.rank - k:]]
        if self.coin(0.15) and a.rank < 4:
            shape = [int(self.choice((1, 2, 3)))] + shape
        return tuple(shape)

    def partner(self, a: Tensor, kind: str = _F, positive: bool = False, away_from_zero: bool = False) -> Tensor:
        """A second operand that broadcasts with `a`: an existing value, a new input or a weight."""
        def fits(t: Tensor) -> bool:
            if t is a or t.rank > 4:
                return False
            if positive and t.lo <= 0.05:
                return False
            if away_from_zero and not (t.lo >= 0.2 or t.hi <= -0.2):
                return False
            try:
                _broadcast(a.shape, t.shape)
            except _Retry:
                return False
            return True

        t = self.pick(fits, kind) if self.coin(0.4) else None
        if t is not None:
            return t
        shape = self.broadcast_partner(a)
        if kind != _F:
            if self.coin(0.5) or any(isinstance(d, str) for d in shape):
                return self.new_input(kind, shape, -3, 3)
            return Tensor(self.weight([int(d) for d in shape], -3, 3, kind), kind, shape, -3, 3)
        lo, hi = (0.5, 2.0) if (positive or away_from_zero) else (-2.0, 2.0)
        if self.coin(0.5) or any(isinstance(d, str) for d in shape):
            return self.new_input(_F, shape, lo, hi)
        name = self.weight([int(d) for d in shape], lo, hi)
        return Tensor(name, _F, shape, lo, hi)

    # ---------------------------------------------------------------- ops

    def op_unary(self) -> None:
        a = self.pick()
        if a is None:
            raise _Retry
        lo, hi = a.lo, a.hi
        b = a.bound
        table: list[tuple[str, Callable[[], tuple[float, float]] | None, dict]] = [
            ("Abs", lambda: (0.0 if lo <= 0 <= hi else min(abs(lo), abs(hi)), b), {}),
            ("Neg", lambda: (-hi, -lo), {}),
            ("Relu", lambda: (max(lo, 0.0), max(hi, 0.0)), {}),
            ("Sigmoid", lambda: (0.0, 1.0), {}),
            ("Tanh", lambda: (-1.0, 1.0), {}),
            ("Erf", lambda: (-1.0, 1.0), {}),
            ("Softplus", lambda: (0.0, max(hi, 0.0) + 1.0), {}) if hi < 30 else None,
            ("Exp", lambda: (math.exp(lo), math.exp(hi)), {}) if hi <= 4 else None,
            ("Log", lambda: (math.log(lo), math.log(hi)), {}) if lo >= 0.05 else None,
            ("Sqrt", lambda: (math.sqrt(lo), math.sqrt(hi)), {}) if lo >= 0.0 else None,
            ("Reciprocal", lambda: tuple(sorted((1 / lo, 1 / hi))), {}) if (lo >= 0.2 or hi <= -0.2) else None,
            ("Floor", lambda: (math.floor(lo), math.floor(hi)), {}),
            ("Ceil", lambda: (math.ceil(lo), math.ceil(hi)), {}),
            ("Sign", lambda: (-1.0, 1.0), {}),
            ("HardSwish", lambda: (-0.375, max(hi, 0.0)), {}),
            ("LeakyRelu", lambda: (min(lo, lo * 0.1), hi), {"alpha": 0.1}),
            ("Elu", lambda: (min(lo, -1.0), hi), {"alpha": 1.0}),
            ("HardSigmoid", lambda: (0.0, 1.0), {"alpha": 0.2, "beta": 0.5}),
        ]
        op, rng_fn, attrs = self.choice([t for t in table if t is not None])
        lo2, hi2 = rng_fn()
        self.add_node(op, [a.name], [self.out(_F, a.shape, lo2, hi2)], **attrs)

    def op_clip(self) -> None:
        a = self.pick()
        if a is None:
            raise _Retry
        mn = float(np.float32(self.rng.uniform(-1.0, 0.0)))
        mx = float(np.float32(self.rng.uniform(0.1, 1.5)))
        ins = [a.name, self.weight_scalar(mn), self.weight_scalar(mx)]
        self.add_node("Clip", ins, [self.out(_F, a.shape, max(a.lo, mn), min(max(a.hi, mn), mx))])

    def weight_scalar(self, v: float) -> str:
        name = self.fresh("w")
        self.inits.append(numpy_helper.from_array(np.array(v, dtype=np.float32), name))
        return name

    def op_binary(self) -> None:
        a = self.pick()
        if a is None:
            raise _Retry
        op = self.choice(["Add", "Sub", "Mul", "Div", "Max", "Min", "Pow", "Add", "Mul"])
        if op == "Pow":
            if a.lo < 0.1 or a.hi > 4:
                op = "Mul"
        if op == "Div":
            b = self.partner(a, away_from_zero=True)
        elif op == "Pow":
            b = self.partner(a)
            if b.bound > 3:
                raise _Retry
        else:
            b = self.partner(a)
        shape = _broadcast(a.shape, b.shape)
        if self.coin(0.5) and op not in ("Pow", "Div", "Sub"):
            a, b = b, a
        lo, hi = _interval(op, (a.lo, a.hi), (b.lo, b.hi))
        self.add_node(op, [a.name, b.name], [self.out(_F, shape, lo, hi)])

    def op_where(self) -> None:
        a = self.pick()
        if a is None:
            raise _Retry
        cond = self.pick(lambda t: _broadcasts(t.shape, a.shape), kind=_B)
        if cond is None:
            cmp = self.choice(["Greater", "Less", "Equal"])
            if cmp == "Equal":
                x = self.pick(lambda t: _broadcasts(t.shape, a.shape), kind=_I64) or self.new_input(
                    _I64, self.broadcast_partner(a), -2, 2)
                y = self.partner(x, kind=_I64)
            else:
                x = self.pick(lambda t: _broadcasts(t.shape, a.shape)) or a
                y = self.partner(x)
            cs = _broadcast(x.shape, y.shape)
            cond = self.out(_B, cs, 0, 1)
            self.add_node(cmp, [x.name, y.name], [cond])
            if self.coin(0.3):
                if self.coin(0.7):
                    other = self.pick(lambda t: _broadcasts(t.shape, cond.shape) and t is not cond, kind=_B)
                    if other is None:
                        other = self.new_input(_B, self.broadcast_partner(cond), 0, 1)
                    c2 = self.out(_B, _broadcast(cond.shape, other.shape), 0, 1)
                    self.add_node(self.choice(["And", "Or"]), [cond.name, other.name], [c2])
                else:
                    c2 = self.out(_B, cond.shape, 0, 1)
                    self.add_node("Not", [cond.name], [c2])
                cond = c2
        if not _broadcasts(cond.shape, a.shape):
            raise _Retry
        b = self.partner(a)
        shape = _broadcast(_broadcast(cond.shape, a.shape), b.shape)
        ins = [a, b] if self.coin() else [b, a]
        self.add_node("Where", [cond.name, ins[0].name, ins[1].name],
                      [self.out(_F, shape, min(a.lo, b.lo), max(a.hi, b.hi))])

    def op_matmul(self) -> None:
        a = self.pick(lambda t: t.rank >= 1)
        if a is None:
            raise _Retry
        k = a.shape[-1]
        n = int(self.choice((1, 3, 5, 8, 16, 17)))
        if a.rank == 1:
            bshape: tuple[Dim, ...] = (k, n) if self.coin(0.7) else (k,)
        else:
            batch = self.broadcast_partner(Tensor("", _F, a.shape[:-2])) if a.rank > 2 and self.coin(0.4) else ()
            bshape = (*batch, k, n) if self.coin(0.9) else (k,)
        kv = max(self.values(k))
        scale = 1.0 / math.sqrt(kv)
        if any(isinstance(d, str) for d in bshape) or self.coin(0.3):
            b = self.new_input(_F, bshape, -scale * 2, scale * 2)
        else:
            b = Tensor(self.weight([int(d) for d in bshape], -scale * 2, scale * 2), _F, bshape, -2 * scale, 2 * scale)
        shape = _matmul_shape(a.shape, b.shape)
        bound = kv * a.bound * b.bound
        ins = [a.name, b.name]
        self.add_node("MatMul", ins, [self.out(_F, shape, -bound, bound)])

    def op_gemm(self) -> None:
        a = self.pick(lambda t: t.rank == 2)
        if a is None:
            a = self.new_float_input(self.random_shape(2))
        trans_a = self.coin(0.3)
        m, k = (a.shape[1], a.shape[0]) if trans_a else a.shape
        n = int(self.choice((1, 2, 5, 8, 16, 19)))
        trans_b = self.coin(0.5)
        kv = max(self.values(k))
        scale = 1.0 / math.sqrt(kv)
        bshape = (n, k) if trans_b else (k, n)
        if isinstance(k, str):
            b = self.new_input(_F, bshape, -2 * scale, 2 * scale)
        else:
            b = Tensor(self.weight(bshape, -2 * scale, 2 * scale), _F, bshape, -2 * scale, 2 * scale)
        alpha = float(self.choice((1.0, 1.0, 0.5, 2.0)))
        beta = float(self.choice((1.0, 1.0, 0.5)))
        ins = [a.name, b.name]
        bound = kv * a.bound * b.bound * alpha
        if self.coin(0.7):
            cshape = self.choice([(n,), (1, n), (m, n), (m, 1), ()])
            if any(isinstance(d, str) for d in cshape):
                c = self.new_input(_F, cshape, -1.0, 1.0)
            else:
                c = Tensor(self.weight([int(d) for d in cshape]), _F, cshape)
            ins.append(c.name)
            bound += beta
        attrs: dict[str, Any] = {"alpha": alpha, "beta": beta}
        if trans_a:
            attrs["transA"] = 1
        if trans_b:
            attrs["transB"] = 1
        self.add_node("Gemm", ins, [self.out(_F, (m, n), -bound, bound)], **attrs)

    def spatial_input(self) -> Tensor:
        a = self.pick(lambda t: t.rank in (3, 4) and all(self.min_value(d) >= 3 for d in t.shape[2:]))
        if a is None or self.coin(0.3):
            rank = int(self.choice((3, 4, 4)))
            for _ in range(30):
                shape = [self.random_dim() for _ in range(rank)]
                shape[1] = int(self.choice((1, 2, 3, 4, 6, 8)))
                for i in range(2, rank):
                    if self.min_value(shape[i]) < 3:
                        shape[i] = int(self.choice((3, 5, 7, 8, 11, 16, 17)))
                if self.valid_shape(shape):
                    return self.new_float_input(tuple(shape))
            raise _Retry
        return a

    def window(self, x: Tensor, pool: bool) -> tuple[list, list, list, list, bool, list]:
        """Random kernel, strides, pads, dilations (+ ceil_mode for pools) that fit every binding."""
        k = x.rank - 2
        for _ in range(40):
            kernel = [int(self.choice((1, 2, 3, 3, 5))) for _ in range(k)]
            strides = [int(self.choice((1, 1, 2, 3))) for _ in range(k)]
            dil = [int(self.choice((1, 1, 2))) for _ in range(k)]
            if pool and self.coin(0.5):
                dil = [1] * k
            pads = [int(self.rng.integers(0, 3)) for _ in range(2 * k)]
            if pool:  # onnxruntime: pads smaller than the kernel
                pads = [min(p, kernel[i % k] - 1) for i, p in enumerate(pads)]
            ceil = pool and self.coin(0.3)
            outs = []
            ok = True
            for i in range(k):
                eff = (kernel[i] - 1) * dil[i] + 1
                d = _dim_affine(x.shape[2 + i], pads[i] + pads[i + k] - eff, strides[i], ceil)
                if self.min_value(d) < 1 or min(self.values(x.shape[2 + i])) + pads[i] + pads[i + k] < eff:
                    ok = False
                    break
                if ceil:  # the last window must start inside the input or left pad
                    for e in self.envs:
                        if (dim_value(d, e) - 1) * strides[i] >= dim_value(x.shape[2 + i], e) + pads[i]:
                            ok = False
                outs.append(d)
            if ok:
                return kernel, strides, pads, dil, ceil, outs
        raise _Retry

    def op_conv_block(self) -> None:
        """A residual-style block in whole vector blocks of channels, what graph-layout runs in the
        blocked layout: Conv (16 or 32 channels in and out, static map) -> ReLU -> Conv or a pool,
        maybe + a per-channel weight or the block's input."""
        x = self.pick(lambda t: t.rank == 4 and isinstance(t.shape[1], int) and t.shape[1] % 16 == 0
                      and all(isinstance(d, int) and d >= 5 for d in t.shape[2:]))
        if x is None or self.coin(0.5):
            shape = (self.random_dim(), int(self.choice((16, 32))), int(self.choice((5, 7, 9, 13, 14))),
                     int(self.choice((5, 7, 8, 13, 17))))
            if not self.valid_shape(shape):
                raise _Retry
            x = self.new_float_input(shape)
        # often the 3x3 stride-1 conv graph-winograd can compute (`fuzz_graphs.py --winograd`)
        y = self.op_conv(x, group=1, channels=int(self.choice((16, 32))), winograd=self.coin(0.4))
        if self.coin(0.7):
            self.op_unary_named("Relu", y)
            y = self.pool[-1]
        if self.coin(0.5):
            y = self.op_conv(y, group=1, channels=int(self.choice((16, 32))))
        else:
            self.op_pool(y)
            y = self.pool[-1]
        if self.coin(0.4):
            if y.shape == x.shape:
                other = x.name
            else:
                other = self.weight([y.shape[1], 1, 1], -1.0, 1.0)
            lo, hi = y.lo + min(x.lo, -1.0), y.hi + max(x.hi, 1.0)
            self.add_node("Add", [y.name, other], [self.out(_F, y.shape, lo, hi)])

    def op_unary_named(self, op: str, x: Tensor) -> None:
        lo, hi = (max(x.lo, 0.0), max(x.hi, 0.0)) if op == "Relu" else (x.lo, x.hi)
        self.add_node(op, [x.name], [self.out(_F, x.shape, lo, hi)])

    def op_conv(self, x: Tensor | None = None, group: int | None = None, channels: int | None = None,
                winograd: bool = False) -> Tensor:
        x = self.spatial_input() if x is None else x
        c = x.shape[1]
        if not isinstance(c, int):
            raise _Retry
        if winograd and x.rank == 4 and all(isinstance(d, int) and d >= 3 for d in x.shape[2:]):
            p = int(self.choice((0, 1)))  # a 3x3 stride-1 conv, "same" or "valid"
            kernel, strides, pads, dil = [3, 3], [1, 1], [p, p, p, p], [1, 1]
            outs = [d + 2 * p - 2 for d in x.shape[2:]]
        else:
            kernel, strides, pads, dil, _, outs = self.window(x, pool=False)
        groups = [g for g in (1, 2, 3, 4, 8) if c % g == 0]
        g = int(self.choice(groups)) if self.coin(0.5) else 1
        if self.coin(0.15) and c > 1:
            g = c  # depthwise
        o = g * int(self.choice((1, 2, 3)))
        if group is not None:
            g, o = group, channels
        fan = (c // g) * math.prod(kernel)
        scale = 1.0 / math.sqrt(fan)
        w = self.weight([o, c // g, *kernel], -2 * scale, 2 * scale)
        ins = [x.name, w]
        bound = fan * x.bound * 2 * scale
        if self.coin(0.6):
            ins.append(self.weight([o], -0.5, 0.5))
            bound += 0.5
        attrs: dict[str, Any] = {"kernel_shape": kernel}
        if any(s != 1 for s in strides) or self.coin(0.3):
            attrs["strides"] = strides
        if any(pads) or self.coin(0.3):
            attrs["pads"] = pads
        if any(d != 1 for d in dil):
            attrs["dilations"] = dil
        if g != 1:
            attrs["group"] = g
        shape = (x.shape[0], o, *outs)
        y = self.out(_F, shape, -bound, bound)
        self.add_node("Conv", ins, [y], **attrs)
        return y

    def op_pool(self, x: Tensor | None = None) -> None:
        x = self.spatial_input() if x is None else x
        op = self.choice(["MaxPool", "AveragePool"])
        kernel, strides, pads, dil, ceil, outs = self.window(x, pool=True)
        attrs: dict[str, Any] = {"kernel_shape": kernel}
        if op == "AveragePool":
            if any(d != 1 for d in dil):  # AveragePool's dilations are opset 19
                raise _Retry
            if self.coin(0.5):
                attrs["count_include_pad"] = 1
        elif any(d != 1 for d in dil):
            attrs["dilations"] = dil
        if any(s != 1 for s in strides):
            attrs["strides"] = strides
        if any(pads):
            attrs["pads"] = pads
        if ceil:
            attrs["ceil_mode"] = 1
        lo, hi = x.lo, x.hi
        if any(pads):
            lo, hi = (min(lo, 0.0), max(hi, 0.0)) if op == "AveragePool" else (lo, hi)
        self.add_node(op, [x.name], [self.out(_F, (*x.shape[:2], *outs), lo, hi)], **attrs)

    def op_reshape(self) -> None:
        a = self.pick(kind=None)
        if a is None or a.rank == 0:
            raise _Retry
        dims = list(a.shape)
        # merge a random run of adjacent dims, or split a static dim into two factors
        entries: list[int] = []
        out: list[Dim] = []
        if self.coin(0.5) and a.rank >= 2:
            i = int(self.rng.integers(0, a.rank - 1))
            j = int(self.rng.integers(i + 2, a.rank + 1))
            merged: Dim = 1
            for d in dims[i:j]:
                merged = _dim_mul(merged, d)
            new = dims[:i] + [merged] + dims[j:]
        else:
            cands = [i for i, d in enumerate(dims) if isinstance(d, int) and _factors(d)]
            if not cands:
                new = dims + [1] if self.coin() else [1] + dims
            else:
                i = self.choice(cands)
                f = self.choice(_factors(dims[i]))
                new = dims[:i] + [f, dims[i] // f] + dims[i + 1:]
        if len(new) > 5:
            raise _Retry
        # encode: static dims literally, the input's own dims in place by 0, one symbolic dim by -1
        minus_one_used = False
        for pos, d in enumerate(new):
            if isinstance(d, int) and (not self.coin(0.15) or minus_one_used):
                entries.append(d)
            elif pos < len(dims) and dims[pos] == d and self.coin(0.6):
                entries.append(0)
            elif not minus_one_used:
                entries.append(-1)
                minus_one_used = True
            else:
                raise _Retry
            out.append(d)
        self.add_node("Reshape", [a.name, self.ints(entries)], [self.out(a.kind, out, a.lo, a.hi)])

    def op_transpose(self) -> None:
        a = self.pick(lambda t: t.rank >= 2, kind=None)
        if a is None:
            raise _Retry
        perm = [int(p) for p in self.rng.permutation(a.rank)]
        attrs = {"perm": perm} if self.coin(0.85) else {}
        if not attrs:
            perm = list(range(a.rank))[::-1]
        self.add_node("Transpose", [a.name], [self.out(a.kind, [a.shape[p] for p in perm], a.lo, a.hi)], **attrs)

    def op_concat(self) -> None:
        a = self.pick(lambda t: t.rank >= 1, kind=None)
        if a is None:
            raise _Retry
        axis = int(self.rng.integers(0, a.rank))
        parts = [a]
        total: Dim = a.shape[axis]
        for _ in range(int(self.rng.integers(1, 3))):
            other = self.pick(lambda t: t is not a and t.rank == a.rank and all(
                t.shape[i] == a.shape[i] for i in range(a.rank) if i != axis), kind=a.kind)
            if other is None or self.coin(0.4):
                shape = list(a.shape)
                shape[axis] = self.random_dim()
                if a.kind == _F:
                    other = self.new_float_input(tuple(shape))
                elif a.kind == _B:
                    other = self.new_input(_B, tuple(shape), 0, 1)
                else:
                    other = self.new_input(a.kind, tuple(shape), -5, 5)
            parts.append(other)
            d = other.shape[axis]
            total = total + d if isinstance(total, int) and isinstance(d, int) else f"{_paren(total)}+{_paren(d)}"
        shape = list(a.shape)
        shape[axis] = total
        neg = self.coin(0.3)
        self.add_node("Concat", [p.name for p in parts],
                      [self.out(a.kind, shape, min(p.lo for p in parts), max(p.hi for p in parts))],
                      axis=axis - a.rank if neg else axis)

    def op_slice(self) -> None:
        a = self.pick(lambda t: t.rank >= 1, kind=None)
        if a is None:
            raise _Retry
        naxes = int(self.rng.integers(1, a.rank + 1))
        axes = sorted(int(x) for x in self.rng.choice(a.rank, size=naxes, replace=False))
        starts, ends, steps = [], [], []
        shape = list(a.shape)
        for ax in axes:
            d = a.shape[ax]
            dmin = self.min_value(d)
            step = int(self.choice((1, 1, 1, 2, 3, -1, -2)))
            if step > 0:
                s = int(self.rng.integers(-dmin, dmin)) if self.coin(0.8) else 0
                e = self.choice([int(self.rng.integers(-dmin + 1, dmin + 1)), 2**62, dmin + 3, -1])
            else:
                s = self.choice([-1, int(self.rng.integers(0, dmin)), 2**62])
                e = self.choice([-(2**62), int(self.rng.integers(-dmin - 1, dmin - 1))])
            nd = _sl(d, s, e, step) if isinstance(d, int) else f"_sl({d},{s},{e},{step})"
            if self.min_value(nd) < 1:
                raise _Retry
            shape[ax] = nd
            starts.append(s)
            ends.append(e)
            steps.append(step)
        axes_out = [ax - a.rank if self.coin(0.3) else ax for ax in axes]
        ins = [a.name, self.ints(starts), self.ints(ends), self.ints(axes_out)]
        if any(st != 1 for st in steps) or self.coin(0.5):
            ins.append(self.ints(steps))
        self.add_node("Slice", ins, [self.out(a.kind, shape, a.lo, a.hi)])

    def op_gather(self) -> None:
        a = self.pick(lambda t: t.rank >= 1, kind=None)
        if a is None:
            a = self.new_float_input()
        axis = int(self.rng.integers(0, a.rank))
        dmin = self.min_value(a.shape[axis])
        lo = -dmin if self.coin(0.5) else 0
        irank = int(self.choice((0, 1, 1, 2)))
        if irank == 0 or self.coin(0.4):
            ishape: tuple[Dim, ...] = tuple(int(self.choice((1, 2, 3, 5))) for _ in range(irank))
            arr = self.rng.integers(lo, dmin, size=ishape).astype(np.int64)
            name = self.fresh("w")
            self.inits.append(numpy_helper.from_array(arr, name))
            idx = Tensor(name, _I64, ishape, lo, dmin - 1)
        else:
            ishape = self.random_shape(irank)
            idx = self.new_input(_I64, ishape, lo, dmin - 1)
        shape = (*a.shape[:axis], *idx.shape, *a.shape[axis + 1:])
        if len(shape) > 5:
            raise _Retry
        self.add_node("Gather", [a.name, idx.name], [self.out(a.kind, shape, a.lo, a.hi)],
                      axis=axis - a.rank if self.coin(0.2) else axis)

    def op_split(self) -> None:
        a = self.pick(lambda t: any(isinstance(d, int) and d >= 2 for d in t.shape), kind=None)
        if a is None:
            raise _Retry
        axis = self.choice([i for i, d in enumerate(a.shape) if isinstance(d, int) and d >= 2])
        d = a.shape[axis]
        assert isinstance(d, int)
        if self.coin(0.5):
            k = int(self.rng.integers(2, min(d, 4) + 1))
            chunk = -(-d // k)
            sizes = [min(chunk, d - i * chunk) for i in range(k)]
            if min(sizes) < 1:
                raise _Retry
            attrs: dict[str, Any] = {"num_outputs": k}
            ins = [a.name]
        else:
            cut = sorted(int(c) for c in self.rng.choice(np.arange(1, d), size=min(d - 1, int(self.rng.integers(1, 3))),
                                                         replace=False))
            bounds = [0, *cut, d]
            sizes = [bounds[i + 1] - bounds[i] for i in range(len(bounds) - 1)]
            attrs = {}
            ins = [a.name, self.ints(sizes)]
        outs = []
        for s in sizes:
            shape = list(a.shape)
            shape[axis] = s
            outs.append(self.out(a.kind, shape, a.lo, a.hi))
        self.add_node("Split", ins, outs, axis=axis, **attrs)

    def op_expand(self) -> None:
        a = self.pick(lambda t: t.rank <= 3, kind=None)
        if a is None:
            raise _Retry
        target: list[int] = []
        out: list[Dim] = []
        for d in a.shape:
            if d == 1 and self.coin(0.7):
                v = int(self.choice((2, 3, 5, 7)))
                target.append(v)
                out.append(v)
            else:
                target.append(1 if isinstance(d, str) or self.coin(0.5) else d)
                out.append(d)
        if self.coin(0.5):
            v = int(self.choice((1, 2, 3)))
            target.insert(0, v)
            out.insert(0, v)
        self.add_node("Expand", [a.name, self.ints(target)], [self.out(a.kind, out, a.lo, a.hi)])

    def op_reduce(self) -> None:
        a = self.pick(lambda t: t.rank >= 1)
        if a is None:
            raise _Retry
        op = self.choice(["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin"])
        keep = self.coin(0.5)
        if self.coin(0.15):
            axes = list(range(a.rank))
            ins = [a.name]
        else:
            n = int(self.rng.integers(1, a.rank + 1))
            axes = sorted(int(x) for x in self.rng.choice(a.rank, size=n, replace=False))
            ins = [a.name, self.ints([ax - a.rank if self.coin(0.3) else ax for ax in axes])]
        shape = [1 if i in axes else d for i, d in enumerate(a.shape)] if keep else [
            d for i, d in enumerate(a.shape) if i not in axes]
        lo, hi = a.lo, a.hi
        if op == "ReduceSum":
            count = max(math.prod(dim_value(a.shape[i], e) for i in axes) for e in self.envs)
            lo, hi = min(lo * count, lo), max(hi * count, hi)
        self.add_node(op, ins, [self.out(_F, shape, lo, hi)], keepdims=int(keep))

    def op_softmax(self) -> None:
        a = self.pick(lambda t: t.rank >= 1 and t.bound < 1e4)
        if a is None:
            raise _Retry
        op = self.choice(["Softmax", "Softmax", "LogSoftmax"])
        axis = int(self.rng.integers(-a.rank, a.rank))
        if op == "Softmax":
            lo, hi = 0.0, 1.0
        else:
            n = max(max(self.values(a.shape[axis])), 1)
            lo, hi = -(2 * a.bound + math.log(n)) - 1, 0.0
        self.add_node(op, [a.name], [self.out(_F, a.shape, lo, hi)], axis=axis)

    def op_layernorm(self) -> None:
        a = self.pick(lambda t: t.rank >= 1 and t.bound < 1e4)
        if a is None:
            raise _Retry
        axis = int(self.rng.integers(-a.rank, a.rank))
        norm = a.shape[axis:]
        n = max(math.prod(dim_value(d, e) for d in norm) for e in self.envs)
        if any(isinstance(d, str) for d in norm):
            scale = self.new_input(_F, tuple(norm), 0.5, 1.5)
            s_name, s_bound = scale.name, 1.5
        else:
            s_name, s_bound = self.weight([int(d) for d in norm], 0.5, 1.5), 1.5
        ins = [a.name, s_name]
        bound = math.sqrt(n) * s_bound
        if self.coin(0.7):
            if any(isinstance(d, str) for d in norm):
                ins.append(self.new_input(_F, tuple(norm), -0.5, 0.5).name)
            else:
                ins.append(self.weight([int(d) for d in norm], -0.5, 0.5))
            bound += 0.5
        eps = float(self.choice((1e-5, 1e-3)))
        self.add_node("LayerNormalization", ins, [self.out(_F, a.shape, -bound, bound)], axis=axis, epsilon=eps)

    def op_cast(self) -> None:
        a = self.pick(kind=None)
        if a is None:
            raise _Retry
        if a.kind == _F:
            to = self.choice([_I64, _I32, _B, _F]) if a.bound < 1e5 else _B
            if to == _F:
                raise _Retry
            # float -> int truncates toward zero; keep values away from huge
            lo, hi = (math.trunc(a.lo), math.trunc(a.hi)) if to != _B else (0, 1)
            t = self.out(to, a.shape, lo, hi)
            self.add_node("Cast", [a.name], [t], to=_ONNX_TYPE[to])
            if self.coin(0.7):  # back to float, so the rest of the graph can use it
                self.add_node("Cast", [t.name], [self.out(_F, a.shape, lo, hi)], to=TensorProto.FLOAT)
        else:
            to = self.choice([k for k in (_F, _I64, _I32) if k != a.kind])
            self.add_node("Cast", [a.name], [self.out(to, a.shape, a.lo, a.hi)], to=_ONNX_TYPE[to])

    OPS = (
        ("op_unary", 4), ("op_binary", 4), ("op_where", 1.5), ("op_matmul", 1.5), ("op_gemm", 1),
        ("op_conv", 1.5), ("op_conv_block", 1.5), ("op_pool", 1.5), ("op_reshape", 1), ("op_transpose", 1),
        ("op_concat", 1),
        ("op_slice", 1), ("op_gather", 1), ("op_split", 0.7), ("op_expand", 0.7), ("op_reduce", 1.5),
        ("op_softmax", 1), ("op_layernorm", 1), ("op_cast", 0.7), ("op_clip", 0.5),
    )

    # ---------------------------------------------------------------- the graph

    def build(self, name: str = "fuzz") -> onnx.ModelProto:
        names = [n for n, _ in self.OPS]
        w = np.array([w for _, w in self.OPS])
        self.new_float_input()
        tries = 0
        while len(self.nodes) < self.n_nodes and tries < 200:
            tries += 1
            snapshot = (list(self.nodes), list(self.inputs), dict(self.input_ranges), list(self.inits),
                        [(t, t.uses) for t in self.pool], self.counter)
            try:
                getattr(self, names[int(self.rng.choice(len(names), p=w / w.sum()))])()
            except _Retry:
                nodes, inputs, ranges, inits, pool, counter = snapshot
                self.nodes, self.inputs, self.input_ranges, self.inits = nodes, inputs, ranges, inits
                self.pool = [t for t, _ in pool]
                for t, u in pool:
                    t.uses = u
        produced = [t for t in self.pool if t not in self.inputs]
        outs = [t for t in produced if t.uses == 0]
        if not outs:
            outs = [produced[-1]] if produced else []
        outs = outs[-4:]
        if produced and self.coin(0.2):
            extra = self.choice(produced)
            if extra not in outs:
                outs.append(extra)
        used = {i for n in self.nodes for i in n.input}
        inputs = [t for t in self.inputs if t.name in used]
        graph = helper.make_graph(
            self.nodes, name,
            [_value_info(t) for t in inputs],
            [_value_info(t, output=True) for t in outs],
            initializer=[i for i in self.inits if i.name in used],
        )
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="minimlir.fuzz")
        model.ir_version = 9
        meta = {
            "envs": self.envs,
            "inputs": {t.name: [t.lo, t.hi] for t in inputs},
        }
        helper.set_model_props(model, {META_KEY: json.dumps(meta)})
        return model


def _factors(d: int) -> list[int]:
    return [f for f in range(2, d) if d % f == 0]


def _value_info(t: Tensor, output: bool = False) -> onnx.ValueInfoProto:
    dims: list[Any] = []
    for d in t.shape:
        if isinstance(d, int):
            dims.append(d)
        elif d.isidentifier() or not output:
            dims.append(d)
        else:
            dims.append(None)
    return helper.make_tensor_value_info(t.name, _ONNX_TYPE[t.kind], dims)


def _broadcast(a: Sequence[Dim], b: Sequence[Dim]) -> tuple[Dim, ...]:
    """NumPy broadcasting on exact dims: equal, or one side the literal 1 (else _Retry)."""
    out: list[Dim] = []
    for i in range(max(len(a), len(b))):
        x = a[len(a) - 1 - i] if i < len(a) else 1
        y = b[len(b) - 1 - i] if i < len(b) else 1
        if x == y or y == 1:
            out.append(x)
        elif x == 1:
            out.append(y)
        else:
            raise _Retry
    return tuple(reversed(out))


def _broadcasts(a: Sequence[Dim], b: Sequence[Dim]) -> bool:
    try:
        _broadcast(a, b)
        return True
    except _Retry:
        return False


def _matmul_shape(a: Sequence[Dim], b: Sequence[Dim]) -> tuple[Dim, ...]:
    if len(b) == 1:
        if a[-1] != b[0]:
            raise _Retry
        return tuple(a[:-1])
    if len(a) == 1:
        return (*b[:-2], b[-1])
    if a[-1] != b[-2]:
        raise _Retry
    return (*_broadcast(a[:-2], b[:-2]), a[-2], b[-1])


def _interval(op: str, a: tuple[float, float], b: tuple[float, float]) -> tuple[float, float]:
    (al, ah), (bl, bh) = a, b
    if op == "Add":
        return al + bl, ah + bh
    if op == "Sub":
        return al - bh, ah - bl
    if op in ("Mul", "Div", "Pow"):
        if op == "Div":
            cands = [x / y for x in (al, ah) for y in (bl, bh)]
        elif op == "Pow":
            cands = [x**y for x in (al, ah) for y in (bl, bh)]
        else:
            cands = [x * y for x in (al, ah) for y in (bl, bh)]
        return min(cands), max(cands)
    if op == "Max":
        return max(al, bl), max(ah, bh)
    if op == "Min":
        return min(al, bl), min(ah, bh)
    raise ValueError(op)


def generate(seed: int, index: int, n_nodes: int | None = None) -> onnx.ModelProto:
    """Graph `index` of the run seeded `seed`: a pure function of (seed, index), checked valid."""
    for attempt in range(20):
        rng = np.random.default_rng([seed, index, attempt])
        model = GraphGenerator(rng, n_nodes).build(f"fuzz_{seed}_{index}")
        if len(model.graph.node) == 0:
            continue
        try:
            validate(model)
        except Exception:  # a generator bug: try the next attempt, never emit an invalid graph
            if attempt == 19:
                raise
            continue
        meta = metadata(model)
        meta.update({"seed": seed, "index": index})
        set_metadata(model, meta)
        return model
    raise RuntimeError(f"no valid graph for seed {seed} index {index}")


def validate(model: onnx.ModelProto) -> onnx.ModelProto:
    """onnx.checker (full) and strict shape inference; returns the inferred model."""
    onnx.checker.check_model(model, full_check=True)
    return onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True, data_prop=True)


# ==================================================================================== metadata


def metadata(model: onnx.ModelProto) -> dict:
    for p in model.metadata_props:
        if p.key == META_KEY:
            return json.loads(p.value)
    return {"envs": [{}], "inputs": {}}


def set_metadata(model: onnx.ModelProto, meta: dict) -> None:
    for p in model.metadata_props:
        if p.key == META_KEY:
            p.value = json.dumps(meta)
            return
    helper.set_model_props(model, {META_KEY: json.dumps(meta)})


def make_feeds(model: onnx.ModelProto, run: int) -> dict[str, np.ndarray]:
    """The inputs of binding `run`: shapes from the dims and the binding, values from the ranges."""
    meta = metadata(model)
    env = meta["envs"][run]
    seed = [int(meta.get("seed", 0)), int(meta.get("index", 0)), run]
    rng = np.random.default_rng(seed)
    inits = {i.name for i in model.graph.initializer}
    feeds = {}
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        tt = vi.type.tensor_type
        shape = tuple(d.dim_value if d.HasField("dim_value") else env[d.dim_param] for d in tt.shape.dim)
        lo, hi = meta["inputs"].get(vi.name, [-1.0, 1.0])
        kind = _KIND_OF[tt.elem_type]
        if kind == _F:
            v = rng.uniform(lo, hi, size=shape)
        elif kind == _B:
            v = rng.random(size=shape) < 0.5
        else:
            v = rng.integers(int(math.ceil(lo)), int(math.floor(hi)) + 1, size=shape)
        feeds[vi.name] = np.asarray(v).astype(_NP_TYPE[kind])
    return feeds


# ==================================================================================== references


def float64_twin(model: onnx.ModelProto) -> onnx.ModelProto:
    """The same graph with every float32 tensor, initializer and Cast target made float64."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    g = m.graph
    for vi in list(g.input) + list(g.output):
        if vi.type.tensor_type.elem_type == TensorProto.FLOAT:
            vi.type.tensor_type.elem_type = TensorProto.DOUBLE
    del g.value_info[:]
    for i, init in enumerate(g.initializer):
        if init.data_type == TensorProto.FLOAT:
            wide = numpy_helper.to_array(init).astype(np.float64)
            g.initializer[i].CopyFrom(numpy_helper.from_array(wide, init.name))
    for node in g.node:
        if node.op_type == "Cast":
            for a in node.attribute:
                if a.name == "to" and a.i == TensorProto.FLOAT:
                    a.i = TensorProto.DOUBLE
    return m


def _wrap_in_float32(model: onnx.ModelProto, node_name: str) -> bool:
    """Run node `node_name` of a float64 twin in float32: Cast its double inputs down, its
    outputs back up. False if there is no such node (or it has no double input)."""
    g = model.graph
    inferred = onnx.shape_inference.infer_shapes(model)
    types = {vi.name: vi.type.tensor_type.elem_type for vi in
             list(inferred.graph.value_info) + list(inferred.graph.input) + list(inferred.graph.output)}
    types.update({i.name: i.data_type for i in g.initializer})
    for idx, node in enumerate(g.node):
        if node.name != node_name:
            continue
        pre, post = [], []
        for j, x in enumerate(node.input):
            if x and types.get(x) == TensorProto.DOUBLE:
                y = f"{x}__f32_{node_name}"
                pre.append(helper.make_node("Cast", [x], [y], to=TensorProto.FLOAT, name=f"{node_name}_in{j}"))
                node.input[j] = y
        if not pre:
            return False
        for j, x in enumerate(node.output):
            if x and types.get(x) == TensorProto.DOUBLE:
                y = f"{x}__f32"
                post.append(helper.make_node("Cast", [y], [x], to=TensorProto.DOUBLE, name=f"{node_name}_out{j}"))
                node.output[j] = y
        new_nodes = list(g.node[:idx]) + pre + [node] + post + list(g.node[idx + 1:])
        del g.node[:]
        g.node.extend(new_nodes)
        return True
    return False


def ort_session(model: onnx.ModelProto):
    import onnxruntime as ort

    so = ort.SessionOptions()
    # the plain kernels are the reference: onnxruntime 1.31's extended graph optimizations fuse
    # Transpose + MatMul with a 1-D right operand into a wrong FusedMatMul
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 3
    so.intra_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])


def float64_session(model: onnx.ModelProto):
    """onnxruntime on the float64 twin, nodes without a double kernel wrapped to float32.
    Returns (session, [names of the nodes run in float32])."""
    import re

    twin = float64_twin(model)
    wrapped: list[str] = []
    for _ in range(len(model.graph.node) + 1):
        try:
            return ort_session(twin), wrapped
        except Exception as e:  # NOT_IMPLEMENTED: "Could not find an implementation for Conv(11) node with name 'n3'"
            m = re.search(r"node with name '([^']*)'", str(e))
            if not m or not _wrap_in_float32(twin, m.group(1)):
                raise
            wrapped.append(m.group(1))
    raise RuntimeError("float64 twin: too many nodes without a double kernel")


# ==================================================================================== the judge


@dataclass
class RunReport:
    env: dict
    output: str
    max_abs: float  # max |minimlir - float64 reference|
    bad: int  # elements wrong against both references
    total: int
    detail: str = ""


@dataclass
class CheckResult:
    """kind: "ok", "mismatch", "crash" (compile or run error of minimlir) or "invalid" (the
    references themselves reject the graph: not a finding)."""

    kind: str
    message: str = ""
    runs: list[RunReport] = field(default_factory=list)
    sizes_run: int = 0
    compile_seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.kind in ("ok", "invalid")

    @property
    def failing_outputs(self) -> list[str]:
        return sorted({r.output for r in self.runs if r.bad})


def compare(out: np.ndarray, ref64: np.ndarray, ref32: np.ndarray) -> tuple[int, float, str]:
    """(number of wrong elements, max |out - ref64|, a one-line description)."""
    out = np.asarray(out)
    if out.shape != ref32.shape:
        return max(out.size, ref32.size, 1), math.inf, f"shape {out.shape} != {ref32.shape}"
    if out.dtype != ref32.dtype:
        return max(out.size, 1), math.inf, f"dtype {out.dtype} != {ref32.dtype}"
    if out.size == 0:
        return 0, 0.0, ""
    if out.dtype.kind in "biu":
        bad = (out != ref64.astype(out.dtype)) & (out != ref32)
        diff = np.abs(out.astype(np.float64) - ref64.astype(np.float64))
        n = int(bad.sum())
        return n, float(diff.max()), _describe(bad, out, ref64) if n else ""
    o = out.astype(np.float64)
    r64 = ref64.astype(np.float64)
    r32 = ref32.astype(np.float64)
    finite = np.isfinite(r64)
    scale = max(1.0, float(np.abs(r64[finite]).max())) if finite.any() else 1.0

    def close(ref):
        tol = ATOL * scale + RTOL * np.abs(ref)
        with np.errstate(invalid="ignore"):
            near = np.abs(o - ref) <= tol
        same_special = (np.isnan(o) & np.isnan(ref)) | (np.isinf(o) & (o == ref))
        return near | same_special

    bad = ~(close(r64) | close(r32))
    with np.errstate(invalid="ignore"):
        diff = np.abs(o - r64)
    diff = np.where(np.isnan(o) & np.isnan(r64), 0.0, diff)
    n = int(bad.sum())
    return n, float(np.nanmax(diff)) if diff.size else 0.0, _describe(bad, out, r64) if n else ""


def _describe(bad: np.ndarray, out: np.ndarray, ref: np.ndarray) -> str:
    idx = tuple(int(i) for i in np.argwhere(bad)[0])
    return f"first at {list(idx)}: got {out[idx]!r}, float64 reference {float(ref[idx])!r}"


def default_compile(model: onnx.ModelProto):
    from minimlir.frontend import compile

    return compile(model, cache=False)


def check(model: onnx.ModelProto, compile_fn: Callable[[onnx.ModelProto], Callable] = default_compile,
          runs: Sequence[int] | None = None) -> CheckResult:
    """Compile once, run at every binding of the model's metadata, judge against the references."""
    import time

    meta = metadata(model)
    runs = list(range(len(meta["envs"]))) if runs is None else list(runs)
    try:
        s32 = ort_session(model)
        s64, _ = float64_session(model)
        refs = []
        for r in runs:
            feeds = make_feeds(model, r)
            out32 = s32.run(None, feeds)
            feeds64 = {k: v.astype(np.float64) if v.dtype == np.float32 else v for k, v in feeds.items()}
            out64 = s64.run(None, feeds64)
            refs.append((feeds, out32, out64))
    except Exception as e:
        return CheckResult("invalid", f"reference: {type(e).__name__}: {_first_line(e)}")
    t0 = time.time()
    try:
        prog = compile_fn(model)
    except Exception as e:
        return CheckResult("crash", f"compile: {type(e).__name__}: {_first_line(e)}\n{traceback.format_exc()}",
                           compile_seconds=time.time() - t0)
    result = CheckResult("ok", compile_seconds=time.time() - t0)
    names = [o.name for o in model.graph.output]
    for r, (feeds, out32, out64) in zip(runs, refs):
        try:
            outs = prog(**feeds)
        except Exception as e:
            result.kind = "crash"
            result.message = f"run at {meta['envs'][r]}: {type(e).__name__}: {_first_line(e)}\n{traceback.format_exc()}"
            return result
        result.sizes_run += 1
        if len(outs) != len(names):
            result.kind = "mismatch"
            result.message = f"{len(outs)} outputs, expected {len(names)}"
            return result
        for name, o, r32, r64 in zip(names, outs, out32, out64):
            bad, max_abs, detail = compare(o, r64, r32)
            result.runs.append(RunReport(meta["envs"][r], name, max_abs, bad, int(np.asarray(r32).size), detail))
            if bad and result.kind == "ok":
                result.kind = "mismatch"
                result.message = f"output {name} at {meta['envs'][r]}: {bad}/{np.asarray(r32).size} wrong, " \
                                 f"max |diff| {max_abs:.3g}; {detail}"
    return result


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


# ==================================================================================== the shrinker


def _elem_types(model: onnx.ModelProto) -> dict[str, int]:
    return {k: v.type.tensor_type.elem_type for k, v in _value_infos(model).items()}


def _value_infos(model: onnx.ModelProto) -> dict[str, onnx.ValueInfoProto]:
    """name -> inferred ValueInfoProto (dtype and rank; dims as far as inference knows them)."""
    g = onnx.shape_inference.infer_shapes(model).graph
    infos = {vi.name: vi for vi in list(g.value_info) + list(g.input) + list(g.output)}
    for i in g.initializer:
        infos.setdefault(i.name, helper.make_tensor_value_info(i.name, i.data_type, list(i.dims)))
    return infos


def observe(model: onnx.ModelProto) -> dict[str, list[np.ndarray]]:
    """Every tensor's value at every binding (onnxruntime, float32): name -> [array per binding]."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    types = _elem_types(model)
    have = {o.name for o in m.graph.output}
    for node in m.graph.node:
        for o in node.output:
            if o and o not in have and o in types:
                m.graph.output.append(helper.make_tensor_value_info(o, types[o], None))
                have.add(o)
    sess = ort_session(m)
    names = [o.name for o in m.graph.output]
    seen: dict[str, list[np.ndarray]] = {n: [] for n in names}
    for r in range(len(metadata(model)["envs"])):
        feeds = make_feeds(model, r)
        for k, v in feeds.items():
            seen.setdefault(k, []).append(v)
        for n, v in zip(names, sess.run(None, feeds)):
            seen[n].append(np.asarray(v))
    return seen


def prune(model: onnx.ModelProto) -> onnx.ModelProto:
    """Drop nodes, inputs, initializers and metadata ranges nothing reaches an output through."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    g = m.graph
    live = {o.name for o in g.output}
    keep = []
    for node in reversed(list(g.node)):
        if any(o in live for o in node.output):
            keep.append(node)
            live.update(i for i in node.input if i)
    keep.reverse()
    del g.node[:]
    g.node.extend(keep)
    for coll in (g.input, g.initializer):
        kept = [x for x in coll if x.name in live]
        del coll[:]
        coll.extend(kept)
    del g.value_info[:]
    meta = metadata(m)
    meta["inputs"] = {k: v for k, v in meta["inputs"].items() if k in live}
    used_syms = {d.dim_param for vi in g.input for d in vi.type.tensor_type.shape.dim if d.dim_param}
    meta["envs"] = [{k: v for k, v in e.items() if k in used_syms} for e in meta["envs"]]
    set_metadata(m, meta)
    return m


def _with_outputs(model: onnx.ModelProto, names: Sequence[str], infos: dict[str, onnx.ValueInfoProto]
                  ) -> onnx.ModelProto:
    m = onnx.ModelProto()
    m.CopyFrom(model)
    old = {o.name: o for o in m.graph.output}
    outs = []
    for n in names:
        if n in old:
            outs.append(old[n])
            continue
        vi = onnx.ValueInfoProto()
        vi.CopyFrom(infos[n])
        for d in vi.type.tensor_type.shape.dim:  # only numbers and input symbols name an output dim
            if d.HasField("dim_param") and not d.dim_param.isidentifier():
                d.Clear()
        outs.append(vi)
    del m.graph.output[:]
    m.graph.output.extend(outs)
    return prune(m)


def _cut(model: onnx.ModelProto, node_idx: int, in_idx: int, seen: dict[str, list[np.ndarray]],
         types: dict[str, int]) -> onnx.ModelProto | None:
    """Input `in_idx` of node `node_idx` read from a fresh graph input: same dtype, the shapes it
    had at each binding (a dim that varies becomes a symbol), values in the range it had."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    node = m.graph.node[node_idx]
    x = node.input[in_idx]
    if not x or x not in seen or len(seen[x]) != len(metadata(m)["envs"]):
        return None
    meta = metadata(m)
    vals = seen[x]
    rank = vals[0].ndim
    if any(v.ndim != rank for v in vals):
        return None
    dims: list[Any] = []
    for ax in range(rank):
        per_env = [int(v.shape[ax]) for v in vals]
        if len(set(per_env)) == 1:
            dims.append(per_env[0])
            continue
        sym = next((s for s in sorted(meta["envs"][0]) if [e[s] for e in meta["envs"]] == per_env), None)
        if sym is None:
            sym = f"S{len(meta['envs'][0])}"
            while sym in meta["envs"][0]:
                sym += "_"
            for e, v in zip(meta["envs"], per_env):
                e[sym] = v
        dims.append(sym)
    new = f"{x}_cut{node_idx}"
    node.input[in_idx] = new
    m.graph.input.append(helper.make_tensor_value_info(new, types[x], dims))
    flat = [v.reshape(-1) for v in vals if v.size]
    if types[x] == TensorProto.BOOL or not flat:
        lo, hi = 0.0, 1.0
    else:
        lo = float(min(f.min() for f in flat))
        hi = float(max(f.max() for f in flat))
    meta["inputs"][new] = [lo, hi]
    set_metadata(m, meta)
    return prune(m)


def _bypass(model: onnx.ModelProto, node_idx: int, seen: dict[str, list[np.ndarray]]) -> list[onnx.ModelProto]:
    """Node `node_idx` removed, its readers reading one of its inputs of the same type and shapes."""
    node = model.graph.node[node_idx]
    outs = {o.name for o in model.graph.output}
    if len(node.output) != 1 or node.output[0] in outs or node.output[0] not in seen:
        return []
    y = node.output[0]
    res = []
    for x in node.input:
        if not x or x not in seen or len(seen[x]) != len(seen[y]):
            continue
        if all(a.shape == b.shape and a.dtype == b.dtype for a, b in zip(seen[x], seen[y])):
            m = onnx.ModelProto()
            m.CopyFrom(model)
            for n in m.graph.node:
                for j, i in enumerate(n.input):
                    if i == y:
                        n.input[j] = x
            res.append(prune(m))
    return res


def _with_env(model: onnx.ModelProto, envs: list[dict]) -> onnx.ModelProto:
    m = onnx.ModelProto()
    m.CopyFrom(model)
    meta = metadata(m)
    meta["envs"] = envs
    set_metadata(m, meta)
    return m


def _with_input_dim(model: onnx.ModelProto, inp: int, ax: int, value: int) -> onnx.ModelProto:
    m = onnx.ModelProto()
    m.CopyFrom(model)
    d = m.graph.input[inp].type.tensor_type.shape.dim[ax]
    d.Clear()
    d.dim_value = value
    return m


def _candidates(model: onnx.ModelProto, failing_env: int | None):
    """Smaller variants of `model`, roughly the biggest reductions first."""
    infos = _value_infos(model)
    types = {k: v.type.tensor_type.elem_type for k, v in infos.items()}
    try:
        seen = observe(model)
    except Exception:
        seen = {}
    outs = [o.name for o in model.graph.output]
    if len(outs) > 1:
        for o in outs:
            yield f"keep output {o}", _with_outputs(model, [o], infos)
    # rewire the output to an intermediate: everything after it goes
    for node in model.graph.node:
        for o in node.output:
            if o and o not in outs and o in infos and infos[o].type.tensor_type.HasField("shape"):
                yield f"output {o} (of {node.op_type})", _with_outputs(model, [o], infos)
    n = len(model.graph.node)
    for idx in range(n - 1, -1, -1):
        for cand in _bypass(model, idx, seen):
            yield f"bypass {model.graph.node[idx].op_type}", cand
    producers = {o for node in model.graph.node for o in node.output}
    for idx in range(n - 1, -1, -1):
        node = model.graph.node[idx]
        for j, x in enumerate(node.input):
            if x in producers:
                cand = _cut(model, idx, j, seen, types)
                if cand is not None:
                    yield f"cut {x} into {node.op_type}", cand
    envs = metadata(model)["envs"]
    if len(envs) > 1:
        order = ([failing_env] if failing_env is not None else []) + [i for i in range(len(envs)) if i != failing_env]
        for i in order:
            yield f"only binding {envs[i]}", _with_env(model, [envs[i]])
    for s in sorted(envs[0]) if envs else []:
        for v in (1, 2, 3, 4, 5, 8):
            if all(e[s] > v for e in envs):
                yield f"{s}={v}", _with_env(model, [{**e, s: v} for e in envs])
    inits = {i.name for i in model.graph.initializer}
    for i, vi in enumerate(model.graph.input):
        if vi.name in inits:
            continue
        for ax, d in enumerate(vi.type.tensor_type.shape.dim):
            if d.HasField("dim_value") and d.dim_value > 1:
                for v in sorted({1, 2, d.dim_value // 2}):
                    if v < d.dim_value:
                        yield f"{vi.name} dim {ax}={v}", _with_input_dim(model, i, ax, v)


def _size(model: onnx.ModelProto) -> tuple:
    meta = metadata(model)
    elems = 0
    for r in range(len(meta["envs"])):
        for vi in model.graph.input:
            env = meta["envs"][r]
            elems += math.prod(d.dim_value if d.HasField("dim_value") else env.get(d.dim_param, 1)
                               for d in vi.type.tensor_type.shape.dim)
    return (len(model.graph.node), len(model.graph.output), len(meta["envs"]), elems)


def shrink(model: onnx.ModelProto, still_fails: Callable[[onnx.ModelProto], bool], max_checks: int = 150,
           log: Callable[[str], None] | None = None, failing_env: int | None = None) -> onnx.ModelProto:
    """Greedy delta reduction: take the first smaller candidate that still fails, until none does
    (or `max_checks` candidates were tried). Each candidate is valid ONNX (checked) and smaller
    by (nodes, outputs, bindings, input elements)."""
    best = prune(model)
    checks = 0
    progress = True
    while progress and checks < max_checks:
        progress = False
        for what, cand in _candidates(best, failing_env):
            if _size(cand) >= _size(best) or len(cand.graph.node) == 0:
                continue
            try:
                validate(cand)
            except Exception:
                continue
            checks += 1
            if still_fails(cand):
                if log:
                    log(f"shrink: {what} -> {_size(cand)[0]} nodes")
                best = cand
                failing_env = None
                progress = True
                break
            if checks >= max_checks:
                break
    return best


def reproduce_command(path: str) -> str:
    return f"python benchmarks/fuzz_graphs.py --replay {path}"


def report_text(model: onnx.ModelProto, result: CheckResult) -> str:
    """The reproducer's text: the command, the verdict, the graph and the per-binding table."""
    lines = [f"kind: {result.kind}", f"message: {result.message.splitlines()[0] if result.message else ''}"]
    meta = metadata(model)
    lines.append(f"bindings: {meta['envs']}")
    lines.append("graph:")
    for n in model.graph.node:
        attrs = ", ".join(f"{a.name}={helper.get_attribute_value(a)}" for a in n.attribute)
        lines.append(f"  {n.name}: {n.op_type}({', '.join(n.input)}) -> {', '.join(n.output)}"
                     + (f"  [{attrs}]" if attrs else ""))
    inits = {i.name for i in model.graph.initializer}
    for vi in model.graph.input:
        if vi.name not in inits:
            dims = [d.dim_value if d.HasField("dim_value") else d.dim_param for d in vi.type.tensor_type.shape.dim]
            lines.append(f"  input {vi.name}: {TensorProto.DataType.Name(vi.type.tensor_type.elem_type)}{dims}"
                         f" in {meta['inputs'].get(vi.name)}")
    if result.runs:
        lines.append("runs:")
        for r in result.runs:
            lines.append(f"  {r.env} {r.output}: {r.bad}/{r.total} wrong, max |diff| vs float64 {r.max_abs:.4g}"
                         + (f"; {r.detail}" if r.detail else ""))
    return "\n".join(lines) + "\n"
