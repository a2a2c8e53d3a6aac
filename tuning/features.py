"""Features of a scheduled loop nest, the cost model's input (Ansor's per-statement features, summed
up per kernel), plus the knob values of the candidate.

    feats = kernel_features(scheduled_kernel, shapes, assignment)    # a fixed-length list of floats
    FEATURE_NAMES                                                    # what each entry means

Everything is evaluated on concrete argument shapes (`shapes`, as the task measures them): loop trip
counts come from the bounds with each loop variable at its lower bound (the first tile of a guarded
nest), `mem.dim` of an argument from its shape. Per kernel: FLOPs by kind, loop counts and extents
by kind (serial / parallel / vectorize / unroll), vector lanes, unroll factor, parallel extent per
core, and for the heaviest block (most FLOPs): per buffer (the four largest) the bytes it touches,
the distinct 64-byte cache lines one iteration of each of its three innermost loops touches, and
its innermost stride; the register tile footprint (local `mem.alloca` elements) and the arithmetic
intensity (FLOPs per byte touched).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from xdsl.dialects import arith
from xdsl.dialects import math as xmath
from xdsl.ir import BlockArgument, OpResult, SSAValue

from minimlir.dialects import loop, mem

KINDS = ("add", "mul", "fma", "div", "minmax", "special", "cmp", "int")
LOOP_KINDS = ("serial", "parallel", "vectorize", "unroll")
N_BUFFERS = 4
LINE = 64


def _flop_kind(op) -> tuple[str, int] | None:
    if isinstance(op, xmath.FmaOp):
        return "fma", 2
    if isinstance(op, arith.AddfOp | arith.SubfOp):
        return "add", 1
    if isinstance(op, arith.MulfOp):
        return "mul", 1
    if isinstance(op, arith.DivfOp):
        return "div", 1
    if isinstance(op, arith.MaximumfOp | arith.MinimumfOp | arith.MaxnumfOp | arith.MinnumfOp):
        return "minmax", 1
    if isinstance(op, arith.CmpfOp):
        return "cmp", 1
    if op.dialect_name() == "math":
        return "special", 1
    if op.dialect_name() == "arith" and op.results and not isinstance(
            op, arith.ConstantOp) and "index" not in str(op.results[0].type):
        return "int", 1
    return None


class Evaluator:
    """Concrete values of index SSA values of one kernel for given argument shapes."""

    def __init__(self, kernel, shapes: Sequence[Sequence[int]]):
        self.args = list(kernel.body.block.args)
        self.shapes = [list(s) for s in shapes]
        self.memo: dict[SSAValue, int | None] = {}

    def __call__(self, v: SSAValue) -> int | None:
        if v in self.memo:
            return self.memo[v]
        self.memo[v] = None  # cycles
        r = self._eval(v)
        self.memo[v] = r
        return r

    def _eval(self, v: SSAValue) -> int | None:
        if isinstance(v, BlockArgument):
            owner = v.owner.parent_op()
            if isinstance(owner, loop.ForOp) and v is owner.induction_var:
                return self(owner.lb)
            if isinstance(owner, loop.BlockOp):
                return self(owner.bindings[v.index])
            return None
        assert isinstance(v, OpResult)
        op = v.owner
        if isinstance(op, arith.ConstantOp):
            val = getattr(op.value, "value", None)
            return int(val.data) if val is not None and isinstance(val.data, int) else None
        if isinstance(op, mem.DimOp):
            src, idx = op.source, op.index.value.data
            if src in self.args and idx is not None:
                return self.shapes[self.args.index(src)][idx]
            return None
        ops = {arith.AddiOp: lambda a, b: a + b, arith.SubiOp: lambda a, b: a - b,
               arith.MuliOp: lambda a, b: a * b, arith.MinSIOp: min, arith.MaxSIOp: max,
               arith.MinUIOp: min, arith.MaxUIOp: max,
               arith.DivSIOp: lambda a, b: int(a / b) if b else None,
               arith.DivUIOp: lambda a, b: a // b if b else None,
               arith.FloorDivSIOp: lambda a, b: a // b if b else None,
               arith.CeilDivSIOp: lambda a, b: -(-a // b) if b else None,
               arith.CeilDivUIOp: lambda a, b: -(-a // b) if b else None,
               arith.RemSIOp: lambda a, b: a % b if b else None,
               arith.RemUIOp: lambda a, b: a % b if b else None}
        fn = ops.get(type(op))
        if fn is not None and len(op.operands) == 2:
            a, b = self(op.operands[0]), self(op.operands[1])
            return None if a is None or b is None else fn(a, b)
        if isinstance(op, arith.IndexCastOp):
            return self(op.operands[0])
        return None

    def trip(self, l: loop.ForOp) -> int:
        lb, ub, st = self(l.lb), self(l.ub), self(l.step)
        if lb is None or ub is None or not st:
            return 1
        return max(0, -(-(ub - lb) // st))


def _loops_of(blk) -> list[loop.ForOp]:
    out = []
    p = blk.parent_op()
    while p is not None:
        if isinstance(p, loop.ForOp):
            out.append(p)
        p = p.parent_op()
    return out[::-1]


def count_flops(kernel, shapes) -> dict[str, float]:
    """FLOPs by kind of one kernel run on `shapes` (block bodies times their iteration counts)."""
    ev = Evaluator(kernel, shapes)
    out = {k: 0.0 for k in KINDS}
    for blk in [o for o in kernel.walk() if isinstance(o, loop.BlockOp)]:
        iters = math.prod(ev.trip(l) for l in _loops_of(blk))
        for op in blk.body.walk():
            fk = _flop_kind(op)
            if fk is not None:
                out[fk[0]] += fk[1] * iters
    return {k: v for k, v in out.items() if v}


def _knob_names() -> list[str]:
    from minimlir.passes.loop.schedule.default.knobs import declarations

    return [k.name for r in declarations().values() for k in r.knobs]


def knob_vector(assignment: Mapping[str, Any]) -> list[float]:
    from minimlir.passes.loop.schedule.default.knobs import knob_decl

    out = []
    for name in _knob_names():
        if name not in assignment:
            out.append(-1.0)
            continue
        v = assignment[name]
        if isinstance(v, bool):
            out.append(float(v))
        elif isinstance(v, (int, float)):
            out.append(float(v))
        else:
            vals = knob_decl(name).values
            out.append(float(vals.index(v)) if v in vals else -1.0)
    return out


def _base_names() -> list[str]:
    names = [f"log_flops_{k}" for k in KINDS]
    names += [f"n_loops_{k}" for k in LOOP_KINDS] + [f"log_extent_{k}" for k in LOOP_KINDS]
    names += ["max_depth", "vector_lanes", "vector_flop_share", "log_unroll", "parallel_extent",
              "parallel_per_core", "parallel_imbalance", "log_tile_elems", "arith_intensity",
              "log_bytes_total", "n_blocks", "n_allocs"]
    for b in range(N_BUFFERS):
        names += [f"buf{b}_log_bytes", f"buf{b}_stride", f"buf{b}_lines_l1", f"buf{b}_lines_l2",
                  f"buf{b}_lines_l3", f"buf{b}_reuse"]
    return names


FEATURE_NAMES = _base_names() + [f"knob:{n}" for n in _knob_names()]


def _lg(x: float) -> float:
    return math.log2(1.0 + max(0.0, x))


def kernel_features(kernel, shapes, assignment: Mapping[str, Any] | None = None,
                    cores: int | None = None) -> list[float]:
    """The feature vector (FEATURE_NAMES) of a scheduled, not yet lowered kernel."""
    from minimlir.backend.parallel import cpu_count
    from minimlir.passes.loop.schedule.affine import affine_of

    cores = cores or cpu_count()
    ev = Evaluator(kernel, shapes)
    flops = count_flops(kernel, shapes)
    f: dict[str, float] = {f"log_flops_{k}": _lg(flops.get(k, 0.0)) for k in KINDS}
    loops = [o for o in kernel.walk() if isinstance(o, loop.ForOp)]
    for kd in LOOP_KINDS:
        ls = [l for l in loops if l.kind.data == kd]
        f[f"n_loops_{kd}"] = len(ls)
        f[f"log_extent_{kd}"] = _lg(sum(ev.trip(l) for l in ls))
    lanes = [l.attributes["loop.vector_width"].value.data for l in loops
             if l.kind.data == "vectorize" and "loop.vector_width" in l.attributes]
    f["vector_lanes"] = float(max(lanes, default=0))
    blocks = [o for o in kernel.walk() if isinstance(o, loop.BlockOp)]
    f["n_blocks"] = len(blocks)
    total_flops = sum(flops.values()) or 1.0
    vec_flops, best, best_flops = 0.0, None, -1.0
    for blk in blocks:
        ls = _loops_of(blk)
        iters = math.prod(ev.trip(l) for l in ls)
        bf = sum(fk[1] for fk in map(_flop_kind, blk.body.walk()) if fk is not None) * iters
        if any(l.kind.data == "vectorize" for l in ls):
            vec_flops += bf
        if bf > best_flops:
            best, best_flops = blk, bf
    f["vector_flop_share"] = vec_flops / total_flops
    f["max_depth"] = max((len(_loops_of(b)) for b in blocks), default=0)
    par = [l for l in loops if l.kind.data == "parallel"]
    pext = sum(ev.trip(l) for l in par)
    f["parallel_extent"] = _lg(pext)
    f["parallel_per_core"] = pext / cores
    f["parallel_imbalance"] = (math.ceil(pext / cores) * cores / pext) if pext else 0.0
    allocas = [o for o in kernel.walk() if isinstance(o, mem.AllocaOp)]
    f["n_allocs"] = len([o for o in kernel.walk() if isinstance(o, mem.AllocOp)])
    f["log_tile_elems"] = _lg(sum(math.prod(max(d, 1) for d in a.results[0].type.get_shape()) for a in allocas))
    unroll = 1
    bytes_total = 0.0
    bufs: list[list[float]] = []
    if best is not None:
        ls = _loops_of(best)
        unroll = math.prod(ev.trip(l) for l in ls if l.kind.data == "unroll")
        per_buf: dict[SSAValue, list] = {}
        for acc in [o for o in best.body.walk() if isinstance(o, mem.LoadOp | mem.StoreOp)]:
            per_buf.setdefault(acc.memref, []).append(acc)
        for buf, accs in per_buf.items():
            shape = [d if d >= 0 else 1 for d in buf.type.get_shape()]
            if buf in ev.args:
                shape = ev.shapes[ev.args.index(buf)]
            elem = 4
            strides = [math.prod(shape[i + 1:]) for i in range(len(shape))]
            forms = [affine_of(i) for i in accs[0].indices]
            coeff: dict[SSAValue, int] = {}
            if all(fm is not None for fm in forms):
                for fm, st in zip(forms, strides):
                    for a, c in fm.coeffs.items():
                        coeff[a] = coeff.get(a, 0) + c * st
            dep = [l for l in ls if coeff.get(l.induction_var, 0) != 0]
            size_bytes = math.prod(shape) * elem
            touched = min(size_bytes, math.prod(ev.trip(l) for l in dep) * elem) if dep or not ls else elem
            inner_stride = abs(coeff.get(ls[-1].induction_var, 0)) if ls else 0
            lines = []
            for depth in (1, 2, 3):
                inner = ls[-depth:] if len(ls) >= depth else ls
                d_in = [l for l in inner if coeff.get(l.induction_var, 0) != 0]
                elems = math.prod(ev.trip(l) for l in d_in)
                unit = d_in and abs(coeff[d_in[-1].induction_var]) * elem < LINE
                lines.append(_lg(math.ceil(elems * elem / LINE) if unit else elems))
            reuse = (math.prod(ev.trip(l) for l in ls) * elem) / max(touched, elem)
            bytes_total += touched
            bufs.append([_lg(touched), _lg(inner_stride), *lines, _lg(reuse)])
    f["log_unroll"] = _lg(unroll)
    f["log_bytes_total"] = _lg(bytes_total)
    f["arith_intensity"] = total_flops / max(bytes_total, 1.0)
    bufs.sort(key=lambda b: -b[0])
    out = [f.get(n, 0.0) for n in _base_names() if not n.startswith("buf")]
    for b in range(N_BUFFERS):
        out += bufs[b] if b < len(bufs) else [0.0] * 6
    return out + knob_vector(assignment or {})
