"""The default schedule: heuristics that make an untuned kernel fast (TVM's default schedules /
MetaSchedule's first candidate), every choice a knob of a dataclass so a tuner can search them.

    from minimlir.passes._default_schedule import ScheduleConfig, schedule_module
    schedule_module(module, ScheduleConfig.for_host())          # all kernels
    schedule_kernel(kernel, cfg)                                # one kernel

Per kernel, the first matching rule applies (block names are the legalizer's, see
passes/graph_legalize.py):

  * matmul (block "matmul", loops [batch…, i, j, k], one reduce var last): register blocking
    (mr, nv shrink to divisors of static M, N/W when that keeps at least half the tile)
        i -> (i0, i1, i2) = (·, mc/mr, mr)    j -> (j0, j1, j2) = (·, nv, W)    k -> (k0, k1) = (·, kc)
        order  i0 k0 j0 i1 k1 i2 j1 j2     i0 parallel, i2 j1 unrolled, j2 vector (W lanes)
    (static M <= small_m, a matrix-vector product: mr = M, nv = small_nv, kc = small_kc, one
    row block, so each k0 block streams small_kc rows of B, nv*W floats per row visit)
    the init is hoisted in front of k0 (decompose-reduction), so the k1 loop body is mr·nv
    vector FMAs on an accumulator tile LLVM keeps in registers; elementwise consumers fused into
    the kernel are computed per i0 row block (reverse-compute-at), then vectorized.
  * conv2d (block "conv2d", loops n co oh ow ci kh kw, group 1, W | CO static): output channels
    in vectors (TVM's NCHWc x86 schedule). The weights are packed into [co0][ci][kh][kw][nv*W]
    panels and the input into a zero-padded local copy (no clamp/select left in the tile), then
        co -> (co0, cj, cw) = (·, nv, W)      ow -> (ow0, ow1) = (·, rw' | OW, rw' <= rw)
        (when every such rw' < rw/2, as for OW = 13 or 27: the next divisor whose tile still
        fits the registers, rw'*nv <= 24 (16 lanes) or 12)
        order  n co0 oh ow0 | ci kh kw | ow1 cj cw    co0 parallel, ow1 cj unrolled, cw vector
    an rw' x nv*W accumulator tile stays in registers over the whole reduction; the bias init is
    forwarded into the accumulator (conv2d_acc_in). Stride and dilation only change the
    broadcast addresses. Grouped convs (loops n g co oh ow | ci kh kw, static channel counts)
    take the same path with co the channels of one group: panel g*(COg/T) + co0, input channel
    g*CIg + ci of the padded copy. Depthwise convs and groups with fewer than 4 (or not a
    multiple of 4) channels, stride 1: padded copy, reduction outside the output row, the row
    vectorized (_schedule_conv2d_rows). When "conv2d" takes the vector path, the kernel's other
    convs ("conv2d_1", …: a projection shortcut fused into the residual add) take it too, each
    with blocks of its own name. Other group-1 convs: reduction outside the output row,
    init hoisted, co parallel; anything else: generic.
  * first, in every kernel: copy blocks (broadcast, transpose: loads and a store only) whose
    buffer is kernel-local and read only by reduction-free blocks are inlined (inline_copies).
  * anything else: parallelize the outermost loop that legally can be (per top-level nest),
    vectorize the innermost loop when legal (and long enough).

Parallel loops get a step constant of their own (_private_parallel_steps: loop-outline-parallel
maps the step value into the outlined body). Every step is tried under a snapshot: a primitive the kernel refuses (ScheduleError) leaves the
IR as it was and the heuristics fall back, so any kernel stays correct.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from dataclasses import dataclass, field

from xdsl.dialects import arith, func, math
from xdsl.dialects.builtin import AnyFloat, FloatAttr, IndexType, ModuleOp
from xdsl.ir import Operation, OpResult, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from minimlir.dialects import loop, mem
from minimlir.passes._affine import AffineForm, affine_of
from minimlir.passes._schedule import (
    Schedule,
    ScheduleError,
    const_index,
    emit,
    fold_static,
    iconst,
    local_form,
    materialize_form,
    upper_forms,
)


@dataclass(frozen=True)
class MatmulKnobs:
    """Register tile mr x (nv*W), cache tiles mc (rows per parallel chunk) and kc (reduction)."""

    mr: int = 8
    nv: int = 2
    mc: int = 64
    kc: int = 256
    unroll_rows: bool = True
    accumulate_in_registers: bool = True
    pack_b: bool = False  # copy B's kc x (nv*W) tile into a local buffer (cache_read); measured slower
    # static M <= small_m (a matrix-vector product, an FC layer at batch 1): mr = M and a wide,
    # short tile, so each k0 block streams small_kc rows of B sequentially, nv*W floats a visit
    small_m: int = 4
    small_nv: int = 4
    small_kc: int = 8
    fma: bool = True
    parallel: bool = True


@dataclass(frozen=True)
class ConvKnobs:
    """Register tile: up to rw output columns (unrolled) x nv*W output channels (nv vectors)."""

    rw: int = 8
    nv: int = 2
    fma: bool = True
    parallel: bool = True
    vectorize: bool = True
    pad_input: bool = True  # copy the input into a zero-padded local buffer (no select in the tile)


@dataclass(frozen=True)
class GenericKnobs:
    parallel: bool = True
    vectorize: bool = True
    min_vector_extent: int = 8  # static innermost extents below this stay scalar


@dataclass(frozen=True)
class ScheduleConfig:
    """All knobs of the default schedule. `width` is the vector width in f32 lanes."""

    width: int = 8
    registers: int = 0  # vector registers (the register tiles' budget); 0: 32 with 16 lanes, else 16
    matmul: MatmulKnobs = field(default_factory=MatmulKnobs)
    conv2d: ConvKnobs = field(default_factory=ConvKnobs)
    generic: GenericKnobs = field(default_factory=GenericKnobs)
    fuse_consumers: bool = True

    @staticmethod
    def for_host() -> ScheduleConfig:
        """The knobs for the machine being compiled for: the host, or the target an artifact build
        set with backend/_target.py `using` (`mini-compile --target/--cpu`)."""
        from minimlir.backend import _target

        target = _target.current()
        if target is not None:
            return ScheduleConfig(width=target.vector_width, registers=target.vector_registers)
        return ScheduleConfig(width=host_vector_width())

    @property
    def vector_registers(self) -> int:
        return self.registers or (32 if self.width >= 16 else 16)

    def replace(self, **changes) -> ScheduleConfig:
        return dataclasses.replace(self, **changes)


@functools.cache
def host_vector_width() -> int:
    """f32 lanes of the widest vector unit: 16 with AVX-512F, 8 with AVX2 (or AVX), else 4."""
    try:
        import llvmlite.binding as llvm

        from minimlir.backend import _target

        _target.init_llvm()
        feats = llvm.get_host_cpu_features()
    except Exception:  # noqa: BLE001 - no host info: a safe default
        return 8
    if feats.get("avx512f", False):
        return 16
    if feats.get("avx2", False) or feats.get("avx", False):
        return 8
    return 4


# ----------------------------------------------------------------------------------------------
# Transactions: try a group of primitives, roll the kernel back if one refuses.


# Why steps were refused (kernel, message), newest last: for debugging and for tests.
REFUSALS: list[str] = []


def _verify_steps() -> bool:
    """Verify the kernel after every schedule step (MINIMLIR_VERIFY_EACH=1, for pass authors: it
    names the step that broke the IR). Off by default: a big model takes thousands of steps and the
    IR is verified after the pass anyway (mini-opt) or at the end of the pipeline (the API)."""
    import os

    return os.environ.get("MINIMLIR_VERIFY_EACH") == "1"


def _attempt(kernel: func.FuncOp, fn: Callable[[Schedule], object], *, marks_only: bool = False) -> bool:
    """Run fn(Schedule(kernel)); on ScheduleError restore the kernel body and return False.
    `marks_only`: fn only finds loops and applies primitives that check everything before they
    change anything (Schedule.parallel, Schedule.vectorize set the loop kind last), so a refusal
    leaves the kernel as it was and no backup copy is made (most attempts on a big model)."""
    backup = None if marks_only else kernel.body.clone()
    try:
        fn(Schedule(kernel))
        if _verify_steps():
            kernel.verify()
        return True
    except (ScheduleError, AssertionError, ValueError, IndexError) as e:
        REFUSALS.append(f"@{kernel.sym_name.data}: {type(e).__name__}: {e}")
        if backup is None:
            return False
        kernel.body.detach_block(kernel.body.block).erase(safe_erase=False)
        blk = backup.detach_block(backup.block)
        kernel.body.add_block(blk)
        return False


# ----------------------------------------------------------------------------------------------
# Helpers


def _direct_loops(blk: loop.BlockOp) -> list[loop.ForOp] | None:
    """The block's loops if they are exactly one per iteration var, in order, each binding
    the loop variable itself (the legalizer's untouched shape)."""
    loops = loop.block_loops(blk)
    if len(loops) != len(blk.bindings):
        return None
    for l, b in zip(loops, blk.bindings):
        if b is not l.induction_var:
            return None
        if const_index(l.lb) != 0 or const_index(l.step) != 1:
            return None
    return loops


def _contract_fma(blk: loop.BlockOp) -> None:
    """acc + a*b (arith.addf of an arith.mulf with one use) -> math.fma(a, b, acc)."""
    for op in list(blk.body.block.ops):
        if not isinstance(op, arith.AddfOp) or not isinstance(op.result.type, AnyFloat):
            continue
        for mul_side, acc in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
            m = mul_side.owner
            if isinstance(m, arith.MulfOp) and mul_side.has_one_use():
                fma = math.FmaOp(m.lhs, m.rhs, acc)
                from xdsl.rewriter import InsertPoint, Rewriter

                Rewriter.insert_op(fma, InsertPoint.before(op))
                op.result.replace_all_uses_with(fma.result)
                op.detach()
                op.erase()
                m.detach()
                m.erase()
                break


def _cache_accumulator(kernel: func.FuncOp, blk: loop.BlockOp, tile: list[int], name: str,
                       red: loop.ForOp | None = None) -> None:
    """Accumulate the output tile in a local buffer (TVM's cache_write to "local"):

        for k1 { for t... { blk: C[v] = f(C[v], ...) } }
     ->
        for t... { name_in: acc[t] = C[v] }              (before the reduction loop)
        for k1 { for t... { blk: acc[t] = f(acc[t], ...) } }
        for t... { name_out: C[v] = acc[t] }             (after it)

    `tile` gives the static extents of the loops under the reduction loop k1 (the loops right
    around the block, innermost last); the last one is a vector of W lanes inside loop j1, so acc
    is mr x (nv*W). acc is indexed by the tile loops' own variables: after full unrolling every
    access is at a constant offset and LLVM's SROA keeps the tile in registers. `red` (default:
    the loop right outside the tile loops) is the loop the copies go around; every loop from it
    to the tile loops must be a reduction loop."""
    from xdsl.dialects.builtin import MemRefType
    from xdsl.rewriter import InsertPoint, Rewriter

    from minimlir.passes._schedule import emit, iconst

    loops = loop.block_loops(blk)
    t_loops = loops[-len(tile):]
    red = red if red is not None else loops[-1 - len(tile)]
    stores = [op for op in blk.body.walk() if isinstance(op, mem.StoreOp)]
    loads = [op for op in blk.body.walk() if isinstance(op, mem.LoadOp)]
    if len(stores) != 1 or stores[0].parent_block() is not blk.body.block:
        raise ScheduleError("cache accumulator: the block must store once", blk)
    out = stores[0].memref
    outs = [ld for ld in loads if ld.memref is out]
    if len(outs) != 1 or list(outs[0].indices) != list(stores[0].indices):
        raise ScheduleError("cache accumulator: the block must read its output once, where it stores", blk)
    args = list(blk.body.block.args)
    out_forms = [local_form(i, blk) for i in stores[0].indices]
    if any(f is None or not f.atoms <= set(args) for f in out_forms):
        raise ScheduleError("cache accumulator: output indices must be affine in iteration variables", blk)
    elem = stores[0].value.type
    # acc shape: (tile[0], ..., tile[-2] * tile[-1]) with the last two loops merged
    shape = [*tile[:-2], tile[-2] * tile[-1]] if len(tile) >= 2 else list(tile)
    acc_op = mem.AllocaOp(MemRefType(elem, shape))
    entry = kernel.body.block
    Rewriter.insert_op(acc_op, InsertPoint.at_start(entry))
    acc = acc_op.results[0]
    acc.name_hint = name

    def acc_index(ivs: list, ip: InsertPoint) -> list:
        if len(ivs) >= 2:
            last = emit(arith.MuliOp(ivs[-2], iconst(kernel, tile[-1])), ip)
            last = emit(arith.AddiOp(last, ivs[-1]), ip)
            return [*ivs[:-2], last]
        return list(ivs)

    # the block itself
    ip = InsertPoint.before(blk)
    idx = acc_index([l.induction_var for l in t_loops], ip)
    ld = outs[0]
    new_ld = mem.LoadOp(acc, idx, ld.result.type)
    Rewriter.insert_op(new_ld, InsertPoint.before(ld))
    ld.result.replace_all_uses_with(new_ld.result)
    ld.detach()
    ld.erase()
    st = stores[0]
    Rewriter.insert_op(mem.StoreOp(st.value, acc, idx), InsertPoint.before(st))
    st.detach()
    st.erase()
    # copy nests before / after the reduction loop: clones of the tile loops
    spatial = [k for k, kd in enumerate(blk.kinds) if kd == "spatial"]
    if any(args.index(a) not in spatial for f in out_forms for a in f.atoms):
        raise ScheduleError("cache accumulator: output indices use a reduction variable", blk)
    for suffix, where in (("_in", InsertPoint.before(red)), ("_out", InsertPoint.after(red))):
        top = t_loops[0].clone()
        Rewriter.insert_op(top, where)
        clone_blk = next(o for o in top.walk() if isinstance(o, loop.BlockOp))
        cl_loops = [top, *[o for o in top.walk() if isinstance(o, loop.ForOp) and o is not top]]
        bip = InsertPoint.before(clone_blk)
        cidx = acc_index([l.induction_var for l in cl_loops], bip)
        nb = loop.BlockOp(name + suffix, [clone_blk.bindings[k] for k in spatial], ["spatial"] * len(spatial))
        nargs = nb.body.block.args
        sub = {a: AffineForm.atom(nargs[spatial.index(args.index(a))]) for a in args if args.index(a) in spatial}
        oidx = [materialize_form(f.substitute_all(sub), kernel, InsertPoint.before(nb.body.block.last_op))
                for f in out_forms]
        body_ip = InsertPoint.before(nb.body.block.last_op)
        if suffix == "_in":
            v = emit(mem.LoadOp(out, oidx, elem), body_ip)
            Rewriter.insert_op(mem.StoreOp(v, acc, cidx), body_ip)
        else:
            v = emit(mem.LoadOp(acc, cidx, elem), body_ip)
            Rewriter.insert_op(mem.StoreOp(v, out, oidx), body_ip)
        nb.location = blk.location
        Rewriter.insert_op(nb, bip)
        parent = clone_blk.parent_op()
        clone_blk.detach()
        clone_blk.erase()
        # drop index arithmetic that only fed the reduce bindings (it uses the reduction loop)
        changed = True
        while changed:
            changed = False
            for o in list(parent.body.block.ops):  # type: ignore[union-attr]
                if o.dialect_name() == "arith" and all(not r.uses for r in o.results):
                    o.detach()
                    o.erase()
                    changed = True
        # index values from the reduction loop must not survive in the copies
        for o in top.walk():
            for v in o.operands:
                if _defined_in(v, red):
                    raise ScheduleError("cache accumulator: tile bounds depend on the reduction loop", o)


def _forward_init(kernel: func.FuncOp, init: loop.BlockOp, acc_in: loop.BlockOp) -> None:
    """`acc_in` (acc[t] = C[v]) runs right after `init` (C[v] = f(v)) over the same tile: give
    it acc[t] = f(v) and drop the init nest, so C is written once (by acc_out) per tile.

        for t { init: C[v] = f(v) }          for t { acc_in: acc[t] = f(v) }
        for t { acc_in: acc[t] = C[v] }  ->"""
    i_loops, a_loops = loop.block_loops(init), loop.block_loops(acc_in)
    common = 0
    while common < min(len(i_loops), len(a_loops)) and i_loops[common] is a_loops[common]:
        common += 1
    i_own, a_own = i_loops[common:], a_loops[common:]
    if len(i_own) != len(a_own) or not i_own or i_own[0].next_op is not a_own[0]:
        raise ScheduleError("forward init: the init and acc_in nests do not match", acc_in)
    sub = {}
    for il, al in zip(i_own, a_own):
        if any(affine_of(x) is None or affine_of(x) != affine_of(y) for x, y in
               ((il.lb, al.lb), (il.step, al.step))):
            raise ScheduleError("forward init: loop bounds differ", acc_in)
        sub[il.induction_var] = AffineForm.atom(al.induction_var)
    for il, al in zip(i_own, a_own):
        fi, fa = upper_forms(il.ub), upper_forms(al.ub)  # min(...) bounds of guarded tiles
        if fi is None or fa is None or sorted(map(str, (f.substitute_all(sub) for f in fi))) != sorted(
            map(str, fa)
        ):
            raise ScheduleError("forward init: loop bounds differ", acc_in)
    i_stores = [o for o in init.body.walk() if isinstance(o, mem.StoreOp)]
    a_loads = [o for o in acc_in.body.walk() if isinstance(o, mem.LoadOp)]
    if len(i_stores) != 1 or len(a_loads) != 1 or i_stores[0].memref is not a_loads[0].memref:
        raise ScheduleError("forward init: unexpected init / acc_in bodies", acc_in)
    st, ld = i_stores[0], a_loads[0]
    i_args, a_args = list(init.body.block.args), list(acc_in.body.block.args)
    vmap = {}
    for si, li in zip(st.indices, ld.indices):
        if si not in i_args or li not in a_args:
            raise ScheduleError("forward init: indices are not iteration variables", acc_in)
        k, j = i_args.index(si), a_args.index(li)
        fi, fa = affine_of(init.bindings[k]), affine_of(acc_in.bindings[j])
        if fi is None or fa is None or fi.substitute_all(sub) != fa:
            raise ScheduleError("forward init: the blocks bind different points", acc_in)
        vmap[si] = li
    if len(vmap) != len(i_args):
        raise ScheduleError("forward init: init variable not in the stored index", acc_in)
    ip = InsertPoint.before(ld)
    for o in init.body.block.ops:
        if o is st or isinstance(o, loop.YieldOp):
            continue
        Rewriter.insert_op(o.clone(value_mapper=vmap), ip)
    ld.result.replace_all_uses_with(vmap.get(st.value, st.value))
    ld.detach()
    ld.erase()
    i_own[0].detach()
    i_own[0].erase()


def _defined_in(v, op: Operation) -> bool:
    owner = v.owner
    if isinstance(owner, Operation):
        return op.is_ancestor(owner)
    parent = owner.parent_op()
    return parent is not None and op.is_ancestor(parent)


VECTOR_WIDTH_ATTR = "loop.vector_width"


def fit_width(root: Operation, width: int, along: loop.ForOp | None = None,
              buffers: set | None = None) -> int:
    """The widest of width, width/2, … >= 4 that fits the static last dim of every buffer
    accessed under `root` (mem verifies that a vector access fits its last dim); 0 if none.
    Only accesses that move with loop `along` (or to `buffers`) count, if given."""
    w = width
    for op in root.walk():
        if isinstance(op, mem.LoadOp | mem.StoreOp):
            if buffers is not None and op.memref not in buffers:
                continue
            if along is not None:
                forms = [affine_of(i) for i in op.indices]
                if all(f is not None and not f.coeff(along.induction_var) for f in forms):
                    continue
            shape = op.memref.type.get_shape()  # type: ignore[union-attr]
            if shape and shape[-1] >= 0:
                while w >= 4 and shape[-1] < w:
                    w //= 2
    return w if w >= 4 else 0


def _mark_width(for_op: loop.ForOp, width: int) -> None:
    from xdsl.dialects.builtin import IntegerAttr

    for_op.attributes[VECTOR_WIDTH_ATTR] = IntegerAttr(width, 64)


def _later_blocks(kernel: func.FuncOp, blk: loop.BlockOp) -> list[loop.BlockOp]:
    blocks = loop.blocks_of(kernel)
    return blocks[blocks.index(blk) + 1:]


def _fuse_consumers(kernel: func.FuncOp, blk: loop.BlockOp, anchor_of: Callable[[Schedule], loop.ForOp]) -> None:
    """reverse-compute-at every later elementwise block at the anchor loop (each try atomic)."""
    for b in _later_blocks(kernel, blk):
        name = b.block_name.data
        if "reduce" in b.kinds or name.startswith(blk.block_name.data):
            continue

        def go(s: Schedule, name=name):
            s.reverse_compute_at(s.get_block(name), anchor_of(s))

        _attempt(kernel, go)


def _unique_names(kernel: func.FuncOp) -> bool:
    names = [b.block_name.data for b in loop.blocks_of(kernel)]
    return len(names) == len(set(names))


# ----------------------------------------------------------------------------------------------
# matmul


def schedule_matmul(kernel: func.FuncOp, cfg: ScheduleConfig) -> bool:
    k = cfg.matmul
    W = cfg.width
    blk = next((b for b in loop.blocks_of(kernel) if b.block_name.data == "matmul"), None)
    if blk is None or blk.kinds[-1] != "reduce" or blk.kinds.count("reduce") != 1:
        return False
    if _direct_loops(blk) is None or len(blk.kinds) < 3:
        return False
    mr, nv = max(1, k.mr), max(1, k.nv)
    out_bufs = {op.memref for op in blk.body.walk() if isinstance(op, mem.StoreOp)}
    j_var = blk.body.block.args[-2]
    j_bufs = {
        op.memref for op in blk.body.walk()
        if isinstance(op, mem.LoadOp | mem.StoreOp)
        and op.indices and op.indices[-1] is j_var
    }
    W = fit_width(blk, W, buffers=out_bufs | j_bufs)
    if W == 0:
        return False
    # exact register tiles where a static extent allows it (a guarded tile loop has a dynamic
    # trip count, and its accumulator falls back to memory): the largest mr' <= mr dividing M
    # and nv' <= nv dividing N / W, unless that would halve the tile
    loops0 = _direct_loops(blk)
    m_ext, n_ext = const_index(loops0[-3].ub), const_index(loops0[-2].ub)
    kc = k.kc
    small = m_ext is not None and m_ext <= min(mr, k.small_m)
    if small:
        mr, nv, kc = m_ext, max(1, k.small_nv), max(1, k.small_kc)
        if n_ext is not None and n_ext % W:
            # a guarded vector loop keeps the accumulator in memory: narrower vectors that
            # divide N, more of them (about small_nv*W floats per row of B either way)
            w2 = W // 2
            while w2 >= 4 and n_ext % w2:
                w2 //= 2
            if w2 >= 4:
                nv = _largest_divisor(n_ext // w2, nv * W // w2)
                W = w2
    elif m_ext is not None and m_ext % mr:
        d = _largest_divisor(m_ext, mr)
        mr = d if 2 * d > mr else mr
    if n_ext is not None and n_ext % W == 0 and (n_ext // W) % nv:
        nv = _largest_divisor(n_ext // W, nv)
    mc = mr if small else max(mr, (k.mc // mr) * mr)  # small M: one row block

    def main(s: Schedule) -> None:
        b = s.get_block("matmul")
        if k.fma:
            _contract_fma(b)
        *batch, i, j, kk = s.get_loops(b)
        # inner factors first: the register tile loops (i2, j2) stay exact whenever mr | M
        # and W | N, however mc and nv fall; guarded loops are the outer ones
        io, i2 = s.split(i, [None, mr])
        i0, i1 = s.split(io, [None, mc // mr])
        jo, j2 = s.split(j, [None, W])
        j0, j1 = s.split(jo, [None, nv])
        k0, k1 = s.split(kk, [None, kc])
        s.reorder(i0, k0, j0, i1, k1, i2, j1, j2)
        s.decompose_reduction(b, s.get_loops(b)[len(batch) + 1])
        if k.accumulate_in_registers:
            _cache_accumulator(kernel, b, [mr, nv, W], "matmul_acc")

    if not _attempt(kernel, main):
        return False
    b_bufs = j_bufs - out_bufs
    if k.pack_b and len(b_bufs) == 1:
        (b_buf,) = b_bufs

        def pack(s: Schedule) -> None:
            # B's rows are N floats apart: pack the tile the k1 loop streams (kc x nv*W) once
            # per j0 and reuse it for the mc/mr row blocks of i1
            mb = s.get_block("matmul")
            j0 = s.get_loops(mb)[len(mb.bindings) - 1]
            copy = s.cache_read(mb, b_buf, j0, "matmul_pack_b")
            inner = s.get_loops(copy)[-1]
            s.vectorize(inner)
            _mark_width(inner, W)

        _attempt(kernel, pack)
    b = Schedule(kernel).get_block("matmul")
    if cfg.fuse_consumers:
        nb = len(b.bindings)
        _fuse_consumers(kernel, b, lambda s: s.get_loops(s.get_block("matmul"))[nb - 3])

    for name in ("matmul", "matmul_acc_in", "matmul_acc_out"):

        def inner(s: Schedule, name=name) -> None:
            loops = s.get_loops(s.get_block(name))
            i2, j1, j2 = loops[-3], loops[-2], loops[-1]
            s.vectorize(j2)
            _mark_width(j2, W)
            s.unroll(j1, None if const_index(j1.ub) is not None else nv)
            if k.unroll_rows:
                s.unroll(i2, None if const_index(i2.ub) is not None else mr)

        if any(b.block_name.data == name for b in loop.blocks_of(kernel)):
            _attempt(kernel, inner)

    def init(s: Schedule) -> None:
        ib = s.get_block("matmul_init")
        s.vectorize(s.get_loops(ib)[-1])
        _mark_width(s.get_loops(ib)[-1], W)

    _attempt(kernel, init)
    if k.parallel:
        nb = len(b.bindings)
        _attempt(kernel, lambda s: s.parallel(s.get_loops(s.get_block("matmul"))[nb - 3]))
    _schedule_rest(kernel, cfg, skip={"matmul", "matmul_init", "matmul_acc_in", "matmul_acc_out"})
    return True


# ----------------------------------------------------------------------------------------------
# conv2d


def _unclamp(v: SSAValue) -> SSAValue:
    """The index under a clamp chain `minsi(maxsi(t, 0), last)` (either part optional)."""
    while isinstance(v, OpResult) and isinstance(v.owner, arith.MinSIOp | arith.MaxSIOp):
        v = v.owner.lhs
    return v


def _drop_dead(block) -> None:
    """Erase pure arith ops without uses from `block` (repeatedly)."""
    changed = True
    while changed:
        changed = False
        for o in reversed(list(block.ops)):
            if o.dialect_name() == "arith" and all(not r.uses for r in o.results):
                o.detach()
                o.erase()
                changed = True


def _nest(kernel: func.FuncOp, ip: InsertPoint, extents: list[SSAValue], name: str) -> tuple:
    """Loops over `extents` at `ip` with one all-spatial block bound 1:1; returns the top loop,
    the block's iteration variables and an insert point in its body."""
    c0, c1 = iconst(kernel, 0), iconst(kernel, 1)
    ivs, top = [], None
    for e in extents:
        l = loop.ForOp(c0, e, c1)
        Rewriter.insert_op(l, ip)
        top = top or l
        ivs.append(l.induction_var)
        ip = InsertPoint.before(l.body.block.last_op)
    blk = loop.BlockOp(name, ivs, ["spatial"] * len(ivs))
    Rewriter.insert_op(blk, ip)
    return top, list(blk.body.block.args), InsertPoint.before(blk.body.block.last_op)


def _relayout_conv(kernel: func.FuncOp, blk: loop.BlockOp, pad_input: bool, co_tile: int,
                   name: str = "conv2d") -> tuple:
    """Give the conv2d block (n co oh ow | ci kh kw, group 1) operands it can read in vector
    tiles, with two local buffers filled before its nest:

        conv2d_wpack: WT[co0, ci, kh, kw, co1] = W[co0*T + co1, ci, kh, kw]   (T = co_tile)
        conv2d_pad:   XP[n, c, hp, wp] = X[n, c, hp - pt, wp - pl] inside X, else 0

    and the block reads XP[n, ci, oh*s + kh*d, ow*s + kw*d] (affine, no clamp, no select); the
    weight load is returned with WT for _read_weight_panel once the channel loop is split.
    Both buffers are heap-allocated (mem.alloc) and freed at the kernel end."""
    args = list(blk.body.block.args)
    loops = loop.block_loops(blk)
    ubs = [l.ub for l in loops]
    g, dw = None, len(args) == 6
    if len(args) == 8:  # grouped: n g co oh ow | ci kh kw, channels g*COg + co and g*CIg + ci
        g, g_ub = args.pop(1), ubs.pop(1)
    if dw:  # depthwise: n c oh ow | kh kw, input channel c, weight [c, 0, kh, kw]
        args.insert(4, None)
        ubs.insert(4, iconst(kernel, 1))
    n, co, oh, ow, ci, kh, kw = args
    top = loops[0]
    while top.parent_op() is not kernel:
        top = top.parent_op()
    body = blk.body.block
    loads = [op for op in body.ops if isinstance(op, mem.LoadOp)]
    stores = [op for op in body.ops if isinstance(op, mem.StoreOp)]
    co_ext, ci_ext = const_index(ubs[1]), const_index(ubs[4])
    if co_ext is None or co_ext % co_tile:
        raise ScheduleError("conv relayout: the output channels must be a multiple of the tile", blk)
    if g is not None and (ci_ext is None or const_index(g_ub) is None):
        raise ScheduleError("conv relayout: grouped conv with dynamic channel counts", blk)

    def chan(v: SSAValue, c: SSAValue, ext: int | None) -> bool:
        """v is channel c of its group: c (group 1) or g*ext + c."""
        if g is None:
            return v is c
        f = local_form(v, blk)
        return f is not None and f == AffineForm.atom(c) + AffineForm.atom(g) * ext

    if (len(stores) != 1 or len(loads) != 3 or len(stores[0].indices) != 4
            or [stores[0].indices[i] for i in (0, 2, 3)] != [n, oh, ow]
            or not chan(stores[0].indices[1], co, co_ext)):
        raise ScheduleError("conv relayout: unexpected conv2d block", blk)
    y = stores[0].memref
    w_ld = next((l for l in loads if len(l.indices) == 4 and list(l.indices[2:]) == [kh, kw]
                 and (l.indices[1] is ci if ci is not None else const_index(l.indices[1]) == 0)
                 and chan(l.indices[0], co, co_ext)), None)
    x_ld = next((l for l in loads if l is not w_ld and l.memref is not y), None)
    if (w_ld is None or x_ld is None or x_ld.indices[0] is not n
            or not (x_ld.indices[1] is co if dw else chan(x_ld.indices[1], ci, ci_ext))):
        raise ScheduleError("conv relayout: unexpected conv2d operands", blk)
    elem = x_ld.result.type
    rows = co_ext * (const_index(g_ub) if g is not None else 1)  # W's dim 0: all output channels
    ip = InsertPoint.before(top)
    frees = []
    # -- weights
    wt_shape = [iconst(kernel, rows // co_tile), ubs[4], ubs[5], ubs[6], iconst(kernel, co_tile)]
    wt = _local_buffer(elem, wt_shape, ip, frees)
    # pack in co_tile-wide strips: 32 sequential read streams, writes co_tile floats at a time
    p_top, (pc0, pi, ph, pw, pc1), bip = _nest(kernel, ip, wt_shape, f"{name}_wpack")
    p_top.location = blk.location
    pc = emit(arith.AddiOp(emit(arith.MuliOp(pc0, iconst(kernel, co_tile)), bip), pc1), bip)
    v = emit(mem.LoadOp(w_ld.memref, [pc, pi, ph, pw], elem), bip)
    Rewriter.insert_op(mem.StoreOp(v, wt, [pc0, pi, ph, pw, pc1]), bip)
    # -- padded input
    taps = [_unclamp(i) for i in x_ld.indices[2:]]
    uses = list(x_ld.result.uses)
    sel = uses[0].operation if len(uses) == 1 and isinstance(uses[0].operation, arith.SelectOp) else None
    clamped = any(t is not i for t, i in zip(taps, x_ld.indices[2:])) or sel is not None
    if clamped and pad_input:
        if sel is None or sel.lhs is not x_ld.result:
            raise ScheduleError("conv relayout: padded load without a select", x_ld)
        zero = sel.rhs.owner
        if not (isinstance(zero, arith.ConstantOp) and isinstance(zero.value, FloatAttr)
                and zero.value.value.data == 0.0):
            raise ScheduleError("conv relayout: padding value is not 0", sel)
        x = x_ld.memref
        pads, extents, sizes = [], [], []
        for d, (t, ov, kv, o_ub, k_ub) in enumerate(zip(taps, (oh, ow), (kh, kw), ubs[2:4], ubs[5:7])):
            f = local_form(t, blk)
            if f is None or not f.atoms <= {ov, kv} or f.coeff(ov) < 1 or f.coeff(kv) < 1 or f.const > 0:
                raise ScheduleError("conv relayout: tap index is not oh*s + kh*d - pad", x_ld)
            st, dil = f.coeff(ov), f.coeff(kv)
            of, kf = affine_of(o_ub), affine_of(k_ub)
            if of is None or kf is None:
                raise ScheduleError("conv relayout: non-affine extents", blk)
            # every tap, inside or not: (O - 1)*s + (K - 1)*d + 1
            extents.append(materialize_form(fold_static(of * st + kf * dil - st - dil + 1), kernel, ip))
            pads.append(-f.const)
            shape = x.type.get_shape()  # type: ignore[union-attr]
            sizes.append(iconst(kernel, shape[2 + d]) if shape[2 + d] >= 0 else emit(mem.DimOp(x, 2 + d), ip))
        xshape = x.type.get_shape()  # type: ignore[union-attr]
        chans = ubs[4] if g is None and not dw else (
            iconst(kernel, xshape[1]) if xshape[1] >= 0 else emit(mem.DimOp(x, 1), ip))
        xp = _local_buffer(elem, [ubs[0], chans, *extents], ip, frees)
        x_top, (qn, qc, qh, qw), bip = _nest(kernel, ip, [ubs[0], chans, *extents], f"{name}_pad")
        x_top.location = blk.location
        last = [emit(arith.SubiOp(sz, iconst(kernel, 1)), InsertPoint.before(x_top)) for sz in sizes]
        cond, idx = None, []
        for q, pd, sz, lst in zip((qh, qw), pads, sizes, last):
            src = emit(arith.SubiOp(q, iconst(kernel, pd)), bip) if pd else q
            for c in (arith.CmpiOp(src, iconst(kernel, 0), "sge"), arith.CmpiOp(src, sz, "slt")):
                c = emit(c, bip)
                cond = c if cond is None else emit(arith.AndIOp(cond, c), bip)
            idx.append(emit(arith.MinSIOp(emit(arith.MaxSIOp(src, iconst(kernel, 0)), bip), lst), bip))
        v = emit(mem.LoadOp(x, [qn, qc, *idx], elem), bip)
        z = emit(arith.ConstantOp(FloatAttr(0.0, elem)), bip)
        v = emit(arith.SelectOp(cond, v, z), bip)
        Rewriter.insert_op(mem.StoreOp(v, xp, [qn, qc, qh, qw]), bip)
        lip = InsertPoint.before(x_ld)
        new_idx = [emit(arith.AddiOp(t, iconst(kernel, pd)), lip) if pd else t for t, pd in zip(taps, pads)]
        new_x = emit(mem.LoadOp(xp, [n, x_ld.indices[1], *new_idx], elem), lip)
        sel.result.replace_all_uses_with(new_x)
        sel.detach()
        sel.erase()
        x_ld.detach()
        x_ld.erase()
    _drop_dead(body)
    ret = kernel.body.block.last_op
    for f in frees:
        Rewriter.insert_op(mem.DeallocOp(f), InsertPoint.before(ret))
    return w_ld, wt


def _read_weight_panel(kernel: func.FuncOp, w_ld: mem.LoadOp, wt: SSAValue, co0: loop.ForOp,
                       cj: loop.ForOp, cw: loop.ForOp, w: int, group: tuple | None = None) -> None:
    """W[co, ci, kh, kw] -> WT[co0, ci, kh, kw, cj*W + cw] with the output-channel tile loops'
    own variables (co = co0*nv*W + cj*W + cw): one contiguous weight panel per co0 tile.
    The index uses loop variables inside the block (affine, so the analyses and the vector
    lowering read it), which the channel split alone cannot express in block variables."""
    ip = InsertPoint.before(w_ld)
    lane = emit(arith.AddiOp(emit(arith.MuliOp(cj.induction_var, iconst(kernel, w)), ip), cw.induction_var), ip)
    _, ci, kh, kw = w_ld.indices
    panel = co0.induction_var
    if group is not None:  # (g, panels per group): panel g*P + co0
        gv, per = group
        panel = emit(arith.AddiOp(emit(arith.MuliOp(gv, iconst(kernel, per)), ip), panel), ip)
    new_w = emit(mem.LoadOp(wt, [panel, ci, kh, kw, lane], w_ld.result.type), ip)
    w_ld.result.replace_all_uses_with(new_w)
    w_ld.detach()
    w_ld.erase()


def _local_buffer(elem, dims: list[SSAValue], ip: InsertPoint, frees: list) -> SSAValue:
    from xdsl.dialects.builtin import DYNAMIC_INDEX, MemRefType

    shape = [const_index(d) if const_index(d) is not None else DYNAMIC_INDEX for d in dims]
    op = mem.AllocOp(MemRefType(elem, shape), [d for d, e in zip(dims, shape) if e == DYNAMIC_INDEX])
    Rewriter.insert_op(op, ip)
    frees.append(op.results[0])
    return op.results[0]


def _largest_divisor(n: int, at_most: int) -> int:
    return max(d for d in range(1, max(1, at_most) + 1) if n % d == 0)


def _schedule_conv2d_vector(kernel: func.FuncOp, cfg: ScheduleConfig, bname: str = "conv2d",
                            rest: bool = True) -> bool:
    """Output channels in vectors (NCHWc-style, TVM's x86 conv2d): pack the weights into
    [co0][ci][kh][kw][nv*W] panels and the padded input into local buffers (_relayout_conv), then

        co -> (co0, cj, cw) = (., nv, W)     ow -> (ow0, ow1) = (., rw)
        order  n co0 oh ow0 | ci kh kw | ow1 cj cw    co0 parallel, ow1 cj unrolled, cw vector

    so the kw body is nv vector loads of WT, rw broadcasts of XP and rw*nv FMAs on an rw x nv*W
    accumulator tile kept in registers from ci = 0 to the end of the reduction (the init and
    the accumulator copies sit outside ci). Stride and dilation only change the broadcast
    addresses. Needs a static output-channel count that W divides (W halves to fit)."""
    c = cfg.conv2d
    blk = next((b for b in loop.blocks_of(kernel) if b.block_name.data == bname), None)
    loops = _direct_loops(blk) if blk is not None else None
    if loops is None or blk.kinds not in (["spatial"] * 4 + ["reduce"] * 3, ["spatial"] * 5 + ["reduce"] * 3):
        return False
    gr = len(loops) - 7  # 1 with a group loop (n g co oh ow | ci kh kw)
    co_ext, ow_ext = const_index(loops[1 + gr].ub), const_index(loops[3 + gr].ub)
    if co_ext is None:
        return False
    w = cfg.width
    while w >= 4 and co_ext % w:
        w //= 2
    if w < 4:
        return False
    nv = max(1, c.nv)
    while co_ext % (nv * w):
        nv -= 1
    rw = _largest_divisor(ow_ext, c.rw) if ow_ext is not None else max(1, c.rw)
    if ow_ext is not None and 2 * rw < c.rw:
        # OW = 13, 27: the divisors below rw make a thin tile; a larger divisor still fits
        # the registers (about 24 vector accumulators with 32 registers, 12 with 16)
        budget = 24 if cfg.vector_registers >= 32 else 12
        rw = next((d for d in range(c.rw + 1, ow_ext + 1) if ow_ext % d == 0 and d * nv <= budget), rw)

    def main(s: Schedule) -> None:
        b = s.get_block(bname)
        if c.fma:
            _contract_fma(b)
        w_ld, wt = _relayout_conv(kernel, b, c.pad_input, nv * w, bname)
        n, *g, co, oh, ow, ci, kh, kw = s.get_loops(b)
        co0, cj, cw = s.split(co, [None, nv, w])
        ow0, ow1 = s.split(ow, [None, rw])
        n, *g, co0, oh, ow0, ci, kh, kw, ow1, cj, cw = s.reorder(n, *g, co0, oh, ow0, ci, kh, kw, ow1, cj, cw)
        group = (b.body.block.args[1], co_ext // (nv * w)) if gr else None
        _read_weight_panel(kernel, w_ld, wt, co0, cj, cw, w, group)
        s.decompose_reduction(b, s.get_loops(b)[4 + gr])
        _cache_accumulator(kernel, b, [rw, nv, w], f"{bname}_acc", red=s.get_loops(b)[4 + gr])
        # the tile: vector lanes over cw, everything else of the tile unrolled
        ow1, cj, cw = s.get_loops(b)[-3:]
        s.vectorize(cw)
        _mark_width(cw, w)
        s.unroll(cj, None if const_index(cj.ub) is not None else nv)
        s.unroll(ow1, None if const_index(ow1.ub) is not None else rw)

    if not _attempt(kernel, main):
        return False
    _attempt(kernel, lambda s: _forward_init(kernel, s.get_block(f"{bname}_init"), s.get_block(f"{bname}_acc_in")))
    if cfg.fuse_consumers:
        _fuse_consumers(kernel, Schedule(kernel).get_block(bname),
                        lambda s: s.get_loops(s.get_block(bname))[1 + gr])
    for name in (f"{bname}_init", f"{bname}_acc_in", f"{bname}_acc_out"):
        if not any(b.block_name.data == name for b in loop.blocks_of(kernel)):
            continue

        def copies(s: Schedule, name=name, vec=True) -> None:
            *rest, last = s.get_loops(s.get_block(name))[-3:]
            if vec:  # acc_in reads the bias: contiguous along cw
                s.vectorize(last)
                _mark_width(last, w)
            for l in rest if vec else [*rest, last]:
                s.unroll(l, None if const_index(l.ub) is not None else rw)

        if not _attempt(kernel, copies):
            _attempt(kernel, lambda s, name=name: copies(s, name, vec=False))
    if c.parallel:
        for depth in (1 + gr, 0, 1, 2 + gr):
            if _attempt(kernel, lambda s, d=depth: s.parallel(s.get_loops(s.get_block(bname))[d])):
                break
    if rest:
        _schedule_rest(kernel, cfg, skip=_tile_blocks(bname))
    return True


def _tile_blocks(bname: str) -> set[str]:
    return {bname, f"{bname}_init", f"{bname}_acc_in", f"{bname}_acc_out"}


def _schedule_conv2d_rows(kernel: func.FuncOp, cfg: ScheduleConfig) -> bool:
    """Grouped convs the vector path refuses (depthwise, channels per group not a multiple of
    4): padded input copy (_relayout_conv with a 1-channel weight tile), then

        n g co oh | ci kh kw | ow          ow vector (stride 1: contiguous padded rows)

    with the init hoisted in front of ci, so the output row is the accumulator (in L1) and
    each tap is one broadcast weight times a row of the padded input. Depthwise blocks
    (n c oh ow | kh kw) too. Only when the row vectorizes (stride 1): strided rows keep the
    generic schedule, which measured faster than a scalar row over the padded copy."""
    c = cfg.conv2d
    blk = next((b for b in loop.blocks_of(kernel) if b.block_name.data == "conv2d"), None)
    loops = _direct_loops(blk) if blk is not None else None
    if loops is None or blk.kinds not in (["spatial"] * 5 + ["reduce"] * 3, ["spatial"] * 4 + ["reduce"] * 2):
        return False
    dw = len(loops) == 6  # depthwise: n c oh ow | kh kw

    def main(s: Schedule) -> None:
        b = s.get_block("conv2d")
        if c.fma:
            _contract_fma(b)
        w_ld, wt = _relayout_conv(kernel, b, c.pad_input, 1)
        *outer, oh, ow = s.get_loops(b)[:len(loops) - (2 if dw else 3)]
        s.reorder(*outer, oh, *s.get_loops(b)[len(outer) + 2:], ow)
        # WT[c, ci, kh, kw, 0] = W[c, ci, kh, kw]: a copy, but read where W was
        ip = InsertPoint.before(w_ld)
        new_w = emit(mem.LoadOp(wt, [*w_ld.indices, iconst(kernel, 0)], w_ld.result.type), ip)
        w_ld.result.replace_all_uses_with(new_w)
        w_ld.detach()
        w_ld.erase()
        s.decompose_reduction(b, s.get_loops(b)[len(outer) + 1])
        # the row must vectorize (stride 1); strided rows are faster as the generic schedule
        last = s.get_loops(b)[-1]
        w = fit_width(last, cfg.width, along=last)
        if w == 0 or not c.vectorize:
            raise ScheduleError("conv rows: no vector width fits", last)
        s.vectorize(last)
        _mark_width(last, w)

    if not _attempt(kernel, main):
        return False
    if cfg.fuse_consumers:
        _fuse_consumers(kernel, Schedule(kernel).get_block("conv2d"),
                        lambda s: s.get_loops(s.get_block("conv2d"))[1 if dw else 2])
    def vec_init(s: Schedule) -> None:
        last = s.get_loops(s.get_block("conv2d_init"))[-1]
        w = fit_width(last, cfg.width, along=last)
        if w == 0:
            raise ScheduleError("conv rows: no vector width fits", last)
        s.vectorize(last)
        _mark_width(last, w)

    _attempt(kernel, vec_init)
    if c.parallel:
        for depth in ((1, 0) if dw else (1, 2, 0)):
            if _attempt(kernel, lambda s, d=depth: s.parallel(s.get_loops(s.get_block("conv2d"))[d])):
                break
    _schedule_rest(kernel, cfg, skip={"conv2d", "conv2d_init"})
    return True


def schedule_conv2d(kernel: func.FuncOp, cfg: ScheduleConfig) -> bool:
    """Reduction outside the output row: (n, co, oh | ci, kh, kw | ow) with the init hoisted in
    front of ci, so the innermost ow loop has no loop-carried dependence (LLVM vectorizes it;
    the padded input reads are clamped, so loop-lower-vectors cannot); co runs in parallel;
    consumers are computed per output channel."""
    c = cfg.conv2d
    if c.vectorize and _schedule_conv2d_vector(kernel, cfg, rest=False):
        # the kernel's other convs take the vector path too (ResNet's projection shortcut:
        # conv2d and conv2d_1 feed one residual add; generic, conv2d_1 was 3/4 of ResNet-50)
        skip = _tile_blocks("conv2d")
        for b in list(loop.blocks_of(kernel)):
            n = b.block_name.data
            if n.startswith("conv2d_") and n[7:].isdigit() and _schedule_conv2d_vector(kernel, cfg, n, rest=False):
                skip |= _tile_blocks(n)
        _schedule_rest(kernel, cfg, skip=skip)
        return True
    if _schedule_conv2d_rows(kernel, cfg):
        return True
    blk = next((b for b in loop.blocks_of(kernel) if b.block_name.data == "conv2d"), None)
    if blk is None or blk.kinds != ["spatial"] * 4 + ["reduce"] * 3 or _direct_loops(blk) is None:
        return False

    def main(s: Schedule) -> None:
        b = s.get_block("conv2d")
        if c.fma:
            _contract_fma(b)
        n, co, oh, ow, ci, kh, kw = s.get_loops(b)
        s.reorder(n, co, oh, ci, kh, kw, ow)
        s.decompose_reduction(b, s.get_loops(b)[3])

    if not _attempt(kernel, main):
        return False
    _attempt(kernel, lambda s: _forward_init(kernel, s.get_block("conv2d_init"), s.get_block("conv2d_acc_in")))
    if cfg.fuse_consumers:
        _fuse_consumers(kernel, Schedule(kernel).get_block("conv2d"),
                        lambda s: s.get_loops(s.get_block("conv2d"))[1])
    if c.parallel:
        for depth in (1, 0, 2):
            if _attempt(kernel, lambda s, d=depth: s.parallel(s.get_loops(s.get_block("conv2d"))[d])):
                break
    _schedule_rest(kernel, cfg, skip={"conv2d", "conv2d_init"})
    return True


# ----------------------------------------------------------------------------------------------
# generic


def _innermost_loops(root: Operation) -> list[loop.ForOp]:
    return [
        l for l in root.walk()
        if isinstance(l, loop.ForOp) and not any(isinstance(o, loop.ForOp) for o in l.body.walk() if o is not l)
    ]


def _schedule_rest(kernel: func.FuncOp, cfg: ScheduleConfig, skip: set[str] = frozenset()) -> None:
    """Parallelize / vectorize the nests that hold no block of `skip` and are not yet marked."""
    g = cfg.generic
    tops = [op for op in kernel.body.block.ops if isinstance(op, loop.ForOp)]
    for t_index, top in enumerate(tops):
        if any(b.block_name.data in skip for b in loop.blocks_of(top)):
            continue
        if any(isinstance(l, loop.ForOp) and l.kind.data != "serial" for l in top.walk()):
            continue
        if g.vectorize:
            for idx, inner in enumerate(_innermost_loops(top)):
                ext = const_index(inner.ub)
                if ext is not None and ext < max(g.min_vector_extent, 2):
                    continue

                w = fit_width(inner, cfg.width, along=inner)
                if w == 0:
                    continue

                def vec(s: Schedule, t=t_index, idx=idx, w=w) -> None:
                    top_now = [op for op in kernel.body.block.ops if isinstance(op, loop.ForOp)][t]
                    l = _innermost_loops(top_now)[idx]
                    s.vectorize(l)
                    _mark_width(l, w)

                _attempt(kernel, vec, marks_only=True)
        if g.parallel:
            _parallelize_nest(kernel, t_index)


def _parallelize_nest(kernel: func.FuncOp, t_index: int) -> None:
    """Mark the outermost loop of top-level nest #t_index (walking down single-loop bodies,
    skipping loops of extent 1) that may legally run in parallel."""
    depth = 0
    while True:
        top = [op for op in kernel.body.block.ops if isinstance(op, loop.ForOp)][t_index]
        cur: loop.ForOp | None = top
        for _ in range(depth):
            inner = [o for o in cur.body.block.ops if isinstance(o, loop.ForOp)]  # type: ignore[union-attr]
            cur = inner[0] if len(inner) == 1 else None
            if cur is None:
                return
        assert cur is not None
        if cur.kind.data != "serial":
            return
        if const_index(cur.ub) == 1 or not _attempt_parallel(kernel, t_index, depth):
            depth += 1
            if depth > 8:
                return
            continue
        return


def _attempt_parallel(kernel: func.FuncOp, t_index: int, depth: int) -> bool:
    def go(s: Schedule) -> None:
        cur = [op for op in kernel.body.block.ops if isinstance(op, loop.ForOp)][t_index]
        for _ in range(depth):
            cur = [o for o in cur.body.block.ops if isinstance(o, loop.ForOp)][0]
        s.parallel(cur)

    return _attempt(kernel, go, marks_only=True)


# ----------------------------------------------------------------------------------------------
# driver


RULES: list[Callable[[func.FuncOp, ScheduleConfig], bool]] = [schedule_matmul, schedule_conv2d]


def _is_copy_block(blk: loop.BlockOp) -> bool:
    """A block that only moves data (loads, one store, index arithmetic, constants): a
    broadcast, transpose or reshape copy. Recomputing it at each use costs one load."""
    if "reduce" in blk.kinds or blk.has_init:
        return False
    for op in blk.body.block.ops:
        if isinstance(op, mem.LoadOp | mem.StoreOp | loop.YieldOp | arith.ConstantOp):
            continue
        if op.dialect_name() == "arith" and all(isinstance(r.type, IndexType) for r in op.results):
            continue
        return False
    return True


def inline_copies(kernel: func.FuncOp) -> list[str]:
    """compute-inline every copy block (_is_copy_block) that writes a kernel-local buffer read
    only by reduction-free blocks: `broadcast_to` then `transpose` of a splat weight becomes
    one store of the splat, with no intermediate buffer and no strided read of it. Copies that
    feed a reduction (a transpose into matmul) stay: their consumer reads them many times, and
    its schedule wants the contiguous layout. Returns the inlined block names."""
    from minimlir.passes._affine import reads_writes

    done = []
    for blk in list(loop.blocks_of(kernel)):
        if not _is_copy_block(blk):
            continue
        _, writes = reads_writes(blk)
        if len(writes) != 1:
            continue
        (buf,) = writes
        if not isinstance(buf.owner, mem.AllocOp | mem.AllocaOp):
            continue
        readers = [b for b in loop.blocks_of(kernel) if b is not blk and buf in reads_writes(b)[0]]
        if not readers or any("reduce" in b.kinds or b.has_init for b in readers):
            continue
        name = blk.block_name.data
        if _attempt(kernel, lambda s, name=name: s.compute_inline(s.get_block(name))):
            done.append(name)
    return done


def schedule_kernel(kernel: func.FuncOp, cfg: ScheduleConfig) -> str:
    """Apply the first matching rule (else the generic one); returns the rule's name.
    Copy blocks feeding elementwise blocks are inlined first (inline_copies)."""
    rule_name = "generic"
    if _unique_names(kernel):
        inline_copies(kernel)
    if not _unique_names(kernel):
        _schedule_rest(kernel, cfg)
    else:
        for rule in RULES:
            if rule(kernel, cfg):
                rule_name = rule.__name__.removeprefix("schedule_")
                break
        else:
            _schedule_rest(kernel, cfg)
    _private_parallel_steps(kernel)
    return rule_name


def _private_parallel_steps(kernel: func.FuncOp) -> None:
    """Give every parallel loop a step constant of its own. loop-outline-parallel passes the
    step to the outlined body as an argument and maps the step *value* to it, so a shared
    `arith.constant 1` would turn every unit index inside the body (the register tile's
    accumulator offsets) into a run-time value, and LLVM would keep the tile in memory."""
    for l in [o for o in kernel.walk() if isinstance(o, loop.ForOp) and o.kind.data == "parallel"]:
        c = l.step.owner
        if isinstance(c, arith.ConstantOp) and len(list(l.step.uses)) > 1:
            top = l
            while top.parent_op() is not kernel:
                top = top.parent_op()
            mine = c.clone()
            Rewriter.insert_op(mine, InsertPoint.before(top))
            l.operands = [l.lb, l.ub, mine.results[0]]


def schedule_module(module: ModuleOp, cfg: ScheduleConfig | None = None) -> dict[str, str]:
    """Schedule every loop kernel of `module`; returns kernel name -> rule used."""
    cfg = cfg or ScheduleConfig.for_host()
    out = {}
    for k in [op for op in module.walk() if loop.is_kernel(op)]:
        out[k.sym_name.data] = schedule_kernel(k, cfg)  # type: ignore[arg-type]
    return out
