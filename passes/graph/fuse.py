"""graph-fuse (TVM's FuseOps): group graph ops that can run as one kernel, outline each group.

    %c = graph.conv2d %x, %w …                 %r = func.call @fused_conv2d_add_relu(%x, %w, %b)
    %a = graph.add %c, %b …            ==>     func.func private @fused_conv2d_add_relu(…)
    %r = graph.relu %a …                           attributes {graph.primitive} { conv2d; add; relu }

Grouping follows TVM's post-dominator algorithm. Every op gets the kind of `_op_pattern.py`
(elementwise < broadcast < injective < reduction < out-elementwise-fusable < opaque) and its
immediate post-dominator `dom` (the nearest op every path from its result passes through; none
if the result is returned or reaches the return by two routes). Nodes are visited producers
first, three times (TVM's phases), and the group of node n is merged into the group of `dom`
together with every op on the paths n -> dom when:

  * n's group is out-elementwise-fusable (conv2d, matmul, pools), phase 0: every edge on the
    paths is elementwise and every op on them at most broadcast (conv -> add(bias) -> relu);
    into a group that holds an out-elementwise-fusable op already only when both are convs (the
    conv rule tiles each conv of a kernel; a second matmul would get the generic schedule);
  * n's group is elementwise/broadcast, any phase: the path kind is at most injective or a
    reduction; ops on the paths at most injective; the `dom` group may be anything but opaque
    (so elementwise chains fuse, and a reduction absorbs its elementwise inputs);
  * n's group is injective, phase 1: every op on the paths at most injective, `dom`'s group at
    most injective or a reduction (injective -> reduce);
  * a reduction's group never fuses into its consumers; opaque ops never fuse, nor does a concat
    whose parts are contiguous (mem-concat-in-place lets its producers write into it);
  * the merged group has at most `max-depth` ops.

Groups of two or more ops are outlined into private functions marked `graph.primitive` (tensor
arguments, tensor results) and called with `func.call`. An index operand of a member
(`graph.reshape … dims(%n)`) is recomputed inside the function from `graph.dim`s of tensors, which
become arguments. graph-legalize then legalizes each primitive function like any other; loop-fuse
turns each into one kernel. `explain=true` emits a remark at each op that was not fused into its
post-dominator, saying why.

Identical groups share one function: a group whose outlined function has the same type and the same
body (printed text; locations are not part of it) as an earlier one calls that one instead, so
repeated blocks (ResNet bottlenecks, DenseNet layers) are legalized, scheduled and compiled once.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    FunctionType,
    IndexType,
    ModuleOp,
    StringAttr,
    TensorType,
    UnitAttr,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException

from minimlir.dialects import graph, loop
from minimlir.passes._diagnostics import emit_error, emit_remark
from minimlir.passes.graph._op_pattern import OpPattern, edge_pattern, op_pattern
from minimlir.passes.mem.concat_in_place import in_place as concat_in_place

PRIMITIVE_ATTR = "graph.primitive"

ELEMWISE = OpPattern.ELEMWISE
BROADCAST = OpPattern.BROADCAST
INJECTIVE = OpPattern.INJECTIVE
COMM_REDUCE = OpPattern.COMM_REDUCE
OUT_EWISE = OpPattern.OUT_EWISE_FUSABLE
OPAQUE = OpPattern.OPAQUE

# Index ops that may be recomputed inside a primitive function (shape arithmetic).
_INDEX_OPS = (
    arith.ConstantOp, arith.AddiOp, arith.SubiOp, arith.MuliOp, arith.FloorDivSIOp,
    arith.CeilDivSIOp, arith.DivSIOp, arith.RemSIOp, arith.MaxSIOp, arith.MinSIOp,
)


def is_primitive(op: Operation) -> bool:
    """Is `op` a func.func outlined by graph-fuse (marked `graph.primitive`)?"""
    return isinstance(op, func.FuncOp) and PRIMITIVE_ATTR in op.attributes


def _opaque(dom: _Node) -> str:
    """Why nothing fuses into `dom`, an opaque node."""
    if concat_in_place(dom.op):
        return f"'{dom.op.name}' stays apart: its parts are contiguous, its producers write into it"
    return f"'{dom.op.name}' is opaque"


def _short(op: Operation) -> str:
    return op.name.split(".", 1)[-1]


def _index_slice(value: SSAValue) -> list[Operation] | None:
    """The ops computing an index value from graph.dim of tensors and constants (producers
    first), or None if it depends on anything else (a block argument, a loaded value)."""
    seen: dict[Operation, None] = {}

    def visit(v: SSAValue) -> bool:
        op = v.owner
        if not isinstance(op, Operation):
            return False
        if op in seen:
            return True
        if isinstance(op, graph.DimOp):
            seen[op] = None
            return True
        if not isinstance(op, _INDEX_OPS):
            return False
        if not all(visit(o) for o in op.operands):
            return False
        seen[op] = None
        return True

    return list(seen) if visit(value) else None


class _Group:
    """A union-find set of nodes; the root holds the pattern and the op count."""

    def __init__(self, op: Operation, pattern: OpPattern):
        self.parent: _Group | None = None
        self.pattern = pattern
        self.anchor = op  # the member with the highest kind (names the group in remarks)
        self.size = 1

    def root(self) -> _Group:
        g = self
        while g.parent is not None:
            g = g.parent
        if g is not self:
            self.parent = g
        return g


class _Node:
    def __init__(self, op: Operation, index: int):
        self.op = op
        self.index = index
        self.pattern = op_pattern(op)
        self.group = _Group(op, self.pattern)
        # (consumer node, edge kind); None as consumer: used outside the block's graph ops
        self.consumers: list[tuple[_Node | None, OpPattern]] = []
        self.dom: _Node | None = None
        self.dom_depth = 0
        self.why: str | None = None


class _Fuser:
    def __init__(self, block: Block, max_depth: int):
        self.max_depth = max_depth
        self.nodes: list[_Node] = []
        self.node_of: dict[Operation, _Node] = {}
        for i, op in enumerate(block.ops):
            if isinstance(op, func.ReturnOp):
                continue
            n = _Node(op, i)
            if n.pattern != OPAQUE:
                if not self._dims_recomputable(op):
                    n.why = "its index operands cannot be recomputed from tensor dims"
                elif concat_in_place(op):
                    n.why = "a concat whose parts are contiguous: its producers write into it (mem-concat-in-place)"
                if n.why is not None:
                    n.pattern = n.group.pattern = OPAQUE
            self.nodes.append(n)
            self.node_of[op] = n
        for n in self.nodes:
            for res in n.op.results:
                for use in res.uses:
                    if isinstance(use.operation, graph.DimOp):
                        continue  # reads only the shape: no data edge (outlining re-links it)
                    c = self.node_of.get(use.operation)
                    kind = edge_pattern(use.operation, res) if c is not None else OPAQUE
                    n.consumers.append((c, kind))
        self._post_dominators()

    @staticmethod
    def _dims_recomputable(op: Operation) -> bool:
        return all(
            _index_slice(o) is not None for o in op.operands if isinstance(o.type, IndexType)
        )

    # -- post-dominator tree (consumers come later in the block: visit in reverse) ----------

    def _lca(self, a: _Node | None, b: _Node | None) -> _Node | None:
        while a is not b:
            if a is None or b is None:
                return None
            if a.dom_depth >= b.dom_depth:
                a = a.dom
            else:
                b = b.dom
        return a

    def _post_dominators(self) -> None:
        for n in reversed(self.nodes):
            if not n.consumers or any(c is None for c, _ in n.consumers):
                n.dom, n.dom_depth = None, 1
                continue
            dom = n.consumers[0][0]
            for c, _ in n.consumers[1:]:
                dom = self._lca(dom, c)
            n.dom = dom
            n.dom_depth = dom.dom_depth + 1 if dom is not None else 1

    def _reaches_back(self, members: set[Operation]) -> bool:
        """Would one call computing `members` depend on itself? Data edges inside a group are
        fine, and so is shape arithmetic (graph.dim and index ops) from a member to a member's
        index operand (outlining recomputes it inside). A path that leaves the group and passes
        an op that is not shape arithmetic before coming back (slice -> graph.dim ->
        graph.from_dims -> add -> gather, with slice and gather fused) is a cycle."""
        stack = [(u.operation, False) for op in members for r in op.results for u in r.uses
                 if u.operation not in members]
        seen: set[tuple[Operation, bool]] = set()
        while stack:
            op, through_data = stack.pop()
            if op in members:
                if through_data:
                    return True
                continue
            if (op, through_data) in seen:
                continue
            seen.add((op, through_data))
            through = through_data or not isinstance(op, (graph.DimOp, *_INDEX_OPS))
            stack.extend((u.operation, through) for r in op.results for u in r.uses)
        return False

    # -- paths -----------------------------------------------------------------------------

    def _path(self, src: _Node, sink: _Node) -> tuple[list[_Node], OpPattern]:
        """Nodes strictly between src and sink on paths src -> sink, and the max edge kind."""
        between: dict[_Node, None] = {}
        edge = ELEMWISE
        stack = [src]
        seen = {src}
        while stack:
            n = stack.pop()
            for c, kind in n.consumers:
                assert c is not None  # sink post-dominates src: no path escapes
                edge = max(edge, kind)
                if c is sink or c in seen:
                    continue
                seen.add(c)
                between[c] = None
                stack.append(c)
        return list(between), edge

    def _try_fuse(self, n: _Node, phase: int) -> None:
        g = n.group.root()
        dom = n.dom
        if g.pattern == OPAQUE or dom is None:
            return
        sink = dom.group.root()
        if sink is g:
            return
        if g.pattern == COMM_REDUCE:
            n.why = f"a reduction ('{n.op.name}') does not fuse into its consumers"
            return
        path, edge = self._path(n, dom)
        path_kinds = [(p, p.group.root().pattern) for p in path]
        dom_name = dom.op.name
        if g.pattern == OUT_EWISE:
            if phase != 0:
                return
            if sink.pattern == OPAQUE:
                n.why = _opaque(dom)
                return
            if edge != ELEMWISE:
                if dom.pattern == COMM_REDUCE:
                    n.why = f"reduction cannot absorb a {_short(g.anchor)} producer"
                else:
                    n.why = (
                        f"the path to it is {edge.label}; a {_short(g.anchor)} only absorbs "
                        "elementwise consumers"
                    )
                return
            bad = [p for p, k in path_kinds if k > BROADCAST]
            if sink.pattern == OUT_EWISE and not all(isinstance(x.anchor, graph.Conv2dOp) for x in (g, sink)):
                # two convs share a kernel (the conv rule tiles each: ResNet's projection shortcut
                # and the residual add); a second matmul would be scheduled by the generic rule
                n.why = f"'{dom_name}' is in a group with a {_short(sink.anchor)} already"
                return
            if sink.pattern > BROADCAST and sink.pattern != OUT_EWISE or bad:
                what = bad[0] if bad else dom
                n.why = f"'{what.op.name}' on the path is {what.group.root().pattern.label}"
                return
        elif g.pattern <= BROADCAST:
            if edge > INJECTIVE and edge != COMM_REDUCE:
                if dom.pattern == OPAQUE:
                    n.why = _opaque(dom)
                else:
                    n.why = f"'{dom_name}' cannot absorb a producer ({dom.pattern.label})"
                return
            bad = [p for p, k in path_kinds if k > INJECTIVE]
            if bad:
                n.why = f"'{bad[0].op.name}' on the path is {bad[0].group.root().pattern.label}"
                return
            if sink.pattern == OPAQUE:
                n.why = _opaque(dom)
                return
        elif g.pattern == INJECTIVE:
            if phase != 1:
                return
            bad = [p for p, k in path_kinds if k > INJECTIVE]
            if bad:
                n.why = f"'{bad[0].op.name}' on the path is {bad[0].group.root().pattern.label}"
                return
            if sink.pattern > INJECTIVE and sink.pattern != COMM_REDUCE:
                n.why = (
                    f"'{dom_name}' is in a {sink.pattern.label} group, which cannot absorb an "
                    "injective producer"
                )
                return
        groups = {g, sink, *(p.group.root() for p in path)}
        if sum(x.size for x in groups) > self.max_depth:
            n.why = f"group reached max-depth {self.max_depth}"
            return
        if self._reaches_back({m.op for m in self.nodes if m.group.root() in groups}):
            n.why = "the group would depend on itself through a shape read (graph.dim) of a member"
            return
        for x in groups:
            if x is not sink:
                x.parent = sink
                if x.pattern > sink.pattern:
                    sink.pattern, sink.anchor = x.pattern, x.anchor
                sink.size += x.size
        n.why = None

    def run(self) -> list[list[_Node]]:
        for phase in (0, 1, 2):
            for n in self.nodes:
                self._try_fuse(n, phase)
        groups: dict[_Group, list[_Node]] = {}
        for n in self.nodes:
            if n.pattern != OPAQUE:
                groups.setdefault(n.group.root(), []).append(n)
        return [members for members in groups.values() if len(members) >= 2]

    def explain(self) -> None:
        for n in self.nodes:
            consumers = [c for c, _ in n.consumers if c is not None]
            if n.pattern == OPAQUE and n.why is None or not consumers:
                continue
            dom = n.dom
            if dom is not None and dom.group.root() is n.group.root():
                continue
            target = dom or consumers[0]
            why = n.why
            if why is None:
                if dom is None:
                    outside = [use.operation for r in n.op.results for use in r.uses]
                    if any(isinstance(o, func.ReturnOp) for o in outside):
                        why = "its result is also returned from the function"
                    elif any(o not in self.node_of for o in outside):
                        why = "its result is also used outside the function body's graph ops"
                    else:
                        why = "its consumers have no common post-dominator"
                else:
                    why = f"'{target.op.name}' is {target.pattern.label}"
            emit_remark(n.op, f"not fused into '{target.op.name}': {why}")


def _body_key(prim: func.FuncOp) -> str:
    """What makes two outlined functions interchangeable: the type and the printed body."""
    from io import StringIO

    from xdsl.printer import Printer

    out = StringIO()
    printer = Printer(stream=out)
    printer.print_attribute(prim.function_type)
    if prim.arg_attrs is not None:  # the arguments' dim labels (equal dims): part of the meaning
        printer.print_attribute(prim.arg_attrs)
    for op in prim.body.block.ops:
        out.write("\n")
        printer.print_op(op)
    return out.getvalue()


class _DimTexts:
    """The symbolic dims graph-infer-dims wrote into a function (`graph.dims` on ops, one string
    per `?`, "?" where opaque; `graph.dim_names` on the arguments): (value, dim) -> its text.
    Equal texts are equal expressions (they are printed from interned expressions). Without
    graph-infer-dims there are none, and graph-fuse labels nothing."""

    def __init__(self, fn: func.FuncOp):
        self.text: dict[tuple[SSAValue, int], str] = {}
        attrs = fn.arg_attrs.data if fn.arg_attrs is not None else ()
        for k, a in enumerate(fn.body.block.args):
            d = attrs[k].data if k < len(attrs) else {}
            names = d.get("graph.dim_names")
            if isinstance(a.type, TensorType) and isinstance(names, ArrayAttr):
                for i, (s, n) in enumerate(zip(a.type.get_shape(), names.data)):
                    if s < 0 and isinstance(n, StringAttr) and n.data:
                        self.text[(a, i)] = n.data
        for op in fn.body.block.ops:
            dims = op.attributes.get("graph.dims")
            if not isinstance(dims, ArrayAttr):
                continue
            it = iter(dims.data)
            for r in op.results:
                if isinstance(r.type, TensorType):
                    for i, s in enumerate(r.type.get_shape()):
                        if s < 0:
                            e = next(it, None)
                            if isinstance(e, StringAttr) and e.data != "?":
                                self.text[(r, i)] = e.data


def _dim_labels(inputs: Sequence[SSAValue], dims: _DimTexts) -> ArrayAttr | None:
    """`graph.dim_names` for the arguments of an outlined function: what the caller's symbolic
    dims (graph-infer-dims') prove about its inputs' dynamic dims, as labels. Dims of one
    expression share a label (`d0`, `d1`, … by first appearance), a dim proved constant is its
    number ("1"); a dim equal to no other input dim gets "" (a symbol of its own), and without
    any label the function has no argument attributes. Inside, FunctionDims then proves the same
    equalities from the labels (graph-legalize's broadcast plans and loop-fuse read them)."""
    texts: list[list[str | None]] = []
    count: dict[str, int] = {}
    for v in inputs:
        row: list[str | None] = []
        if isinstance(v.type, TensorType):
            for i, d in enumerate(v.type.get_shape()):
                e = dims.text.get((v, i)) if d < 0 else None
                row.append(e)
                if e is not None:
                    count[e] = count.get(e, 0) + 1
        texts.append(row)
    labels: dict[str, str] = {}
    rows: list[Attribute] = []
    any_label = False
    for row in texts:
        names = []
        for e in row:
            n = ""
            if e is not None and e.isdigit():
                n = e
            elif e is not None and count[e] > 1:
                n = labels.setdefault(e, f"d{len(labels)}")
            names.append(n)
        if any(names):
            any_label = True
            rows.append(DictionaryAttr({"graph.dim_names": ArrayAttr([StringAttr(n) for n in names])}))
        else:
            rows.append(DictionaryAttr({}))
    return ArrayAttr(rows) if any_label else None


def _outline(members: list[_Node], fn: func.FuncOp, used_names: set[str],
             outlined: dict[str, str] | None = None,
             order: dict[Operation, int] | None = None, fd: _DimTexts | None = None) -> None:
    # `order`: op -> position, taken once before outlining (outlining keeps the relative order
    # of the remaining ops); without it each position is counted (linear per op)
    _position = order.__getitem__ if order is not None else _op_position
    ops = [m.op for m in members]
    member_set = set(ops)
    inputs: list[SSAValue] = []
    slice_ops: dict[Operation, None] = {}

    def add_input(v: SSAValue) -> None:
        if v not in inputs:
            inputs.append(v)

    for op in ops:
        for v in op.operands:
            if isinstance(v.owner, Operation) and v.owner in member_set:
                continue
            if isinstance(v.type, IndexType):
                for ix in _index_slice(v) or ():
                    slice_ops[ix] = None
                    if isinstance(ix, graph.DimOp) and ix.input.owner not in member_set:
                        add_input(ix.input)
            else:
                add_input(v)
    # Shape ops only the group needs move into it; the others stay (and keep their operands).
    internal: set[Operation] = set()
    for ix in sorted(slice_ops, key=_position, reverse=True):
        if all(u.operation in member_set or u.operation in internal for r in ix.results for u in r.uses):
            internal.add(ix)
    inside = member_set | internal
    outputs = [
        r for op in ops for r in op.results if any(u.operation not in inside for u in r.uses)
    ]

    base = "fused_" + "_".join(dict.fromkeys(_short(op) for op in ops[:4]))
    name, k = base, 0
    while name in used_names:
        k += 1
        name = f"{base}_{k}"
    used_names.add(name)

    prim = func.FuncOp(
        name, FunctionType.from_lists([v.type for v in inputs], [r.type for r in outputs])
    )
    body = prim.body.block
    mapping: dict[SSAValue, SSAValue] = dict(zip(inputs, body.args))
    # Block order is a topological order: shape ops and members cloned in it stay valid.
    for op in sorted([*slice_ops, *ops], key=_position):
        clone = op.clone(value_mapper=mapping)
        clone.attributes.pop("graph.dims", None)  # the caller's symbolic dims, not the body's
        body.add_op(clone)
    body.add_op(func.ReturnOp(*[mapping[r] for r in outputs]))
    prim.sym_visibility = StringAttr("private")
    labels = _dim_labels(inputs, fd) if fd is not None else None
    if labels is not None:
        prim.arg_attrs = labels
    prim.attributes[PRIMITIVE_ATTR] = UnitAttr()
    prim.location = ops[-1].location
    if outlined is not None:
        key = _body_key(prim)
        if key in outlined:  # an identical group was outlined before: call that function
            used_names.discard(name)
            prim.erase()
            name, prim = outlined[key], None
        else:
            outlined[key] = name

    call = func.CallOp(name, inputs, [r.type for r in outputs])
    call.location = ops[-1].location
    block = ops[-1].parent
    assert block is not None and fn.parent is not None
    block.insert_op_after(call, ops[-1])
    for old, new in zip(outputs, call.res):
        if fd is not None and isinstance(old.type, TensorType):  # later groups read the call's dims
            for i in range(old.type.get_num_dims()):
                if (old, i) in fd.text:
                    fd.text[(new, i)] = fd.text[(old, i)]
        old.replace_uses_with_if(new, lambda use: use.operation not in inside)
    for op in sorted(inside, key=_position, reverse=True):
        op.detach()
        op.erase()
    if prim is not None:
        fn.parent.insert_op_before(prim, fn)


def _op_position(op: Operation) -> int:
    assert op.parent is not None
    return op.parent.get_operation_index(op)


def _topo_sort(block: Block, fn: func.FuncOp) -> None:
    """Restore def-before-use after outlining (stable: keeps the original order where it can;
    the return stays last)."""
    ops = list(block.ops)
    pos = {op: i for i, op in enumerate(ops)}
    deps: dict[Operation, set[Operation]] = {op: set() for op in ops}
    for op in ops:
        for inner in op.walk():
            for v in inner.operands:
                if isinstance(v.owner, Operation) and v.owner in pos and v.owner is not op:
                    deps[op].add(v.owner)
    users: dict[Operation, list[Operation]] = {op: [] for op in ops}
    for op, ds in deps.items():
        for d in ds:
            users[d].append(op)
    ready = [(pos[op], op) for op in ops if not deps[op]]
    heapq.heapify(ready)
    order: list[Operation] = []
    remaining = {op: len(ds) for op, ds in deps.items()}
    while ready:
        _, op = heapq.heappop(ready)
        order.append(op)
        for u in users[op]:
            remaining[u] -= 1
            if remaining[u] == 0:
                heapq.heappush(ready, (pos[u], u))
    if len(order) != len(ops):
        emit_error(fn, "graph-fuse: outlining created a cycle (internal error)")
    if order == ops:
        return
    for op in ops:
        op.detach()
    for op in order:
        block.add_op(op)


@dataclass(frozen=True)
class GraphFusePass(ModulePass):
    """Outline fusion groups of graph ops into `graph.primitive` functions (TVM's FuseOps)."""

    name = "graph-fuse"

    # 16: a linear layer with the tanh form of GELU is 11 ops (matmul, bias add, x*x*x after
    # graph-strength-reduce, 3 muls, 2 adds, tanh, ...) and must be one kernel, so its epilogue
    # runs on the matmul's output in cache (7 split it after the bias add: 3 kernels)
    max_depth: int = 16
    explain: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.max_depth < 1:
            raise DiagnosticException(f"graph-fuse: max-depth must be >= 1, got {self.max_depth}")
        used_names = {f.sym_name.data for f in op.ops if isinstance(f, func.FuncOp)}
        targets = [
            f for f in op.ops
            if isinstance(f, func.FuncOp) and f.body.blocks
            and not loop.is_kernel(f) and not is_primitive(f)
        ]
        outlined: dict[str, str] = {}  # body key -> function name (identical groups share one)
        for fn in targets:
            if len(fn.body.blocks) != 1:
                continue  # graph functions are straight-line; leave anything else alone
            fuser = _Fuser(fn.body.block, self.max_depth)
            groups = fuser.run()
            if self.explain:
                fuser.explain()
            order = {o: k for k, o in enumerate(fn.body.block.ops)}
            fd = _DimTexts(fn)  # the symbolic dims of the group inputs (graph-infer-dims')
            for members in sorted(groups, key=lambda ms: ms[-1].index):
                _outline(members, fn, used_names, outlined, order, fd)
            _topo_sort(fn.body.block, fn)
