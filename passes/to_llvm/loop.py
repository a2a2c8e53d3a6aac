"""Lower `loop.for` to a CFG and inline `loop.block` bodies (loop dialect -> cf + arith on index).

`loop.for %i = %lb to %ub step %s { body }` becomes (as MLIR's scf-to-cf):

    ^pred:                           // ops before the loop
      cf.br ^header(%lb : index)
    ^header(%i: index):
      %c = arith.cmpi slt, %i, %ub : index
      cf.cond_br %c, ^body, ^exit
    ^body:                           // the loop body, %i is the header argument
      ...
      %next = arith.addi %i, %s : index
      cf.br ^header(%next : index)
    ^exit:                           // ops after the loop
      ...

`loop.block "name" (%vi = %i, %vk = %k) [spatial, reduce] { body } init { init }` is inlined
in place, every iteration variable replaced by its binding. The init region runs first, when
every reduce variable is 0 (all iteration domains start at 0):

    ^pred:
      %z = arith.cmpi eq, %k, %c0 : index      // one per reduce variable, and-ed together
      cf.cond_br %z, ^init, ^cont
    ^init:
      <init region>
      cf.br ^cont
    ^cont:
      <body region>
      ...

Loops are lowered outermost first, so an inner loop is always in a plain function block when
its turn comes. The result still has `arith`/`cf` ops on `index`: convert-arith-to-llvm and
convert-cf-to-llvm run next (see the `graph-to-llvm` pipeline).

Loop kinds. `parallel`, `vectorize` and `unroll` lower like `serial` for now (LLVM's own
vectorizer and unroller see the plain loop). `KIND_LOWERINGS` is the hook where the scheduling
work plugs in real lowerings (e.g. outline a parallel loop body into a function called by a
thread pool, or emit vector code), keyed by kind.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, cf
from xdsl.dialects.builtin import IndexType, IntegerAttr, ModuleOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter
from xdsl.rewriter import BlockInsertPoint, InsertPoint, Rewriter
from xdsl.utils.exceptions import DiagnosticException

from minimlir.dialects.builder import Builder
from minimlir.dialects.loop import BlockOp, ForOp, YieldOp
from minimlir.passes.to_llvm._conversion import ConversionDriver, check_legal


def _parent_block(op: Operation) -> Block:
    block = op.parent_block()
    if block is None or block.parent is None:
        raise DiagnosticException(f"'{op.name}' must be inside a function body")
    return block


def _split_after(op: Operation) -> Block:
    """Move everything after `op` in its block into a new block right after it."""
    block = _parent_block(op)
    nxt = op.next_op
    if nxt is None:
        raise DiagnosticException(f"'{op.name}' must not be the last op of its block")
    return block.split_before(nxt)


def lower_serial_for(op: ForOp) -> None:
    """The CFG of the module docstring, in place of `op`."""
    pred = _parent_block(op)
    exit_block = _split_after(op)
    header = Block(arg_types=[IndexType()])
    iv = header.args[0]
    old_iv = op.induction_var
    iv.name_hint = old_iv.name_hint
    body = op.body.block
    op.body.detach_block(body)
    Rewriter.insert_block([header, body], BlockInsertPoint.before(exit_block))

    # ^body: the induction variable is the header argument; yield -> step and branch back
    old_iv.replace_all_uses_with(iv)
    body.erase_arg(body.args[0])
    term = body.last_op
    assert isinstance(term, YieldOp)
    step = arith.AddiOp(iv, op.step)
    term.detach()
    term.erase()
    body.add_ops([step, cf.BranchOp(header, step.result)])

    # ^header: test and branch
    cmp = arith.CmpiOp(iv, op.ub, "slt")
    header.add_ops([cmp, cf.ConditionalBranchOp(cmp.result, body, (), exit_block, ())])

    # ^pred: enter with %lb
    lb = op.lb
    op.detach()
    op.erase()
    pred.add_op(cf.BranchOp(header, lb))


# kind -> lowering of one loop.for; the scheduling work replaces entries (parallel: outline
# the body and call a thread pool; vectorize: vector code). All are serial for now.
KIND_LOWERINGS: dict[str, Callable[[ForOp], None]] = {
    "serial": lower_serial_for,
    "parallel": lower_serial_for,
    "vectorize": lower_serial_for,
    "unroll": lower_serial_for,
}


def _inline(
    region_block: Block, bindings: tuple[SSAValue, ...], before: Operation | None, ip: InsertPoint | None = None
) -> None:
    """Move the ops of a block/init region before `before` (or to `ip`), iteration vars -> bindings."""
    term = region_block.last_op
    if isinstance(term, YieldOp):
        term.detach()
        term.erase()
    Rewriter.inline_block(region_block, ip or InsertPoint.before(before), bindings)


def lower_block(op: BlockOp) -> None:
    """Inline a compute block (and its init region under `all reduce vars == 0`)."""
    bindings = tuple(op.bindings)
    if op.has_init:
        _parent_block(op)
        reduce = [b for b, k in zip(bindings, op.kinds) if k == "reduce"]
        assert reduce  # the verifier requires a reduce variable for an init region
        bld = Builder(InsertPoint.before(op))
        zero = bld.emit(arith.ConstantOp(IntegerAttr(0, IndexType())))
        acc: SSAValue | None = None
        for b in reduce:
            eq = bld.emit(bld.make_cmp("eq", b, zero))
            acc = eq if acc is None else bld.emit(arith.AndIOp(acc, eq))
        assert acc is not None

        def init(tb: Builder) -> None:
            _inline(op.init.block, bindings, None, tb.ip)

        bld.if_then(acc, init)
    _inline(op.body.block, bindings, op)
    op.detach()
    op.erase()


def lower_loops(root: Operation) -> None:
    """Lower every loop.for / loop.block under `root`, outermost first."""
    ConversionDriver({ForOp: _lower_for, BlockOp: _lower_block}).run(root)


def _lower_for(op: ForOp, rewriter: PatternRewriter) -> None:
    KIND_LOWERINGS[op.kind.data](op)


def _lower_block(op: BlockOp, rewriter: PatternRewriter) -> None:
    lower_block(op)


@dataclass(frozen=True)
class ConvertLoopToLlvmPass(ModulePass):
    """loop.for -> cf blocks, loop.block -> inlined body (init under `reduce vars == 0`)."""

    name = "convert-loop-to-llvm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        lower_loops(op)
        check_legal(op, ("loop",))  # the conversion driver's one (located) legality check
