"""The one conversion driver of the `convert-*-to-llvm` passes: one walk, type dispatch, rewriter
semantics, one located legality check.

    convert(module,
            [{func.CallOp: LowerCall(), func.ReturnOp: LowerReturn()},   # phase 1
             {func.FuncOp: LowerFunc()}],                                # phase 2
            illegal=("func",))

A pattern table maps an op class (or a dialect name, `"arith"`, for one pattern that covers a
whole dialect) to a pattern: a `RewritePattern` (called as `match_and_rewrite(op, rewriter)` with
an xDSL `PatternRewriter` on the op: `rewriter.replace`, `insert_op`, `erase_op`,
`replace_value_with_new_type` for block arguments) or a function `fn(op, rewriter)`. The module
is walked once; an op is looked up by its class (the answer is cached per class, so no pattern is
tried on an op it does not handle). Phases run in order over the ops that walk found (ops erased
by an earlier rewrite are skipped): a conversion whose patterns depend on each other's results
(calls before the functions whose bodies move) states that order as phases.

The end is one legality check (`check_legal`, in _common.py): the first op of an `illegal` dialect left is
reported at its location, as mlir-opt does:

    f.mlir:3:8: error: failed to legalize operation 'arith.addui_extended'

and casts left by the rewrite are folded (`finalize`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from xdsl.ir import Operation
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern
from xdsl.rewriter import Rewriter
from xdsl.transforms.dead_code_elimination import is_trivially_dead

from minimlir.passes.to_llvm._common import check_legal, finalize

__all__ = ["ConversionDriver", "Pattern", "PatternTable", "check_legal", "convert"]

PatternFn = Callable[[Operation, PatternRewriter], None]
Pattern = RewritePattern | PatternFn
PatternTable = Mapping[type[Operation] | str, Pattern]


def _as_fn(p: Pattern) -> PatternFn:
    return p.match_and_rewrite if isinstance(p, RewritePattern) else p  # type: ignore[return-value]


class ConversionDriver:
    """Type-dispatched rewriting in phases (see the module docstring)."""

    def __init__(self, phases: Sequence[PatternTable] | PatternTable, *, erase_dead: bool = False):
        """`erase_dead`: also erase every op that is trivially dead when the walk reaches it (one
        forward sweep, in the first phase), as xDSL's greedy pattern applier does."""
        self.erase_dead = erase_dead
        if isinstance(phases, Mapping):
            phases = [phases]
        self.phases: list[tuple[dict[type[Operation], PatternFn], dict[str, PatternFn]]] = []
        for table in phases:
            by_type = {k: _as_fn(p) for k, p in table.items() if not isinstance(k, str)}
            by_dialect = {k: _as_fn(p) for k, p in table.items() if isinstance(k, str)}
            self.phases.append((by_type, by_dialect))
        # op class -> for each phase, its pattern (or None); computed once per class
        self._dispatch: dict[type[Operation], tuple[PatternFn | None, ...] | None] = {}

    def patterns_for(self, op_type: type[Operation]) -> tuple[PatternFn | None, ...] | None:
        """The pattern of each phase for ops of `op_type` (None: no phase handles it)."""
        try:
            return self._dispatch[op_type]
        except KeyError:
            pass
        dialect = op_type.name.split(".", 1)[0] if isinstance(getattr(op_type, "name", None), str) else ""
        found = tuple(by_type.get(op_type) or by_dialect.get(dialect) for by_type, by_dialect in self.phases)
        entry = found if any(f is not None for f in found) else None
        self._dispatch[op_type] = entry
        return entry

    def collect(self, root: Operation) -> list[tuple[Operation, tuple[PatternFn | None, ...]]]:
        """One walk: every op some phase handles, in walk (pre-)order."""
        out = []
        dispatch = self._dispatch
        none = (None,) * len(self.phases)
        for op in root.walk():
            t = type(op)
            entry = dispatch[t] if t in dispatch else self.patterns_for(t)
            if entry is not None:
                out.append((op, entry))
            elif self.erase_dead:
                out.append((op, none))
        return out

    def run(self, root: Operation) -> None:
        """Apply every phase to the ops of one walk of `root`."""
        work = self.collect(root)
        for k in range(len(self.phases)):
            for op, entry in work:
                if op.parent is None:
                    continue  # erased by an earlier rewrite
                if k == 0 and self.erase_dead and is_trivially_dead(op):
                    Rewriter.erase_op(op)
                    continue
                fn = entry[k]
                if fn is not None:
                    fn(op, PatternRewriter(op))


def convert(
    module: Operation,
    phases: Sequence[PatternTable] | PatternTable,
    illegal: Iterable[str],
    *,
    fold_casts: bool = True,
    erase_dead: bool = False,
) -> None:
    """Run the patterns (one walk, type dispatch), then fold the casts the rewrite left and check
    that no op of `illegal` remains (one located error)."""
    ConversionDriver(phases, erase_dead=erase_dead).run(module)
    if fold_casts:
        finalize(module, illegal)
    else:
        check_legal(module, illegal)
