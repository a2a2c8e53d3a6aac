"""graph-lift-params: what a function computes from its weights alone moves to a function of its
own, which the runtime runs once, when the weights are bound (TVM Relax's LiftTransformParams;
onnxruntime's pre-packing at session creation). The function reads the results as params:

    func.func @main(%x: …) -> … {
      %w = graph.param "conv.weight" : tensor<64x32x3x3xf32>
      %r = graph.reshape %w : … -> tensor<2x32x32x3x3xf32>
      %p = graph.transpose %r perm [0, 2, 3, 4, 1] : … -> tensor<2x32x3x3x32xf32>
      %y = graph.conv2d %x, %p weight_tile 32 : …
  ->
    func.func @main__params() -> (tensor<2x32x3x3x32xf32> {graph.name = "main:lifted0"})
        attributes {graph.params_of = "main"} {
      %w = graph.param "conv.weight" : …
      … the reshape and the transpose …
      func.return %p : …
    }
    func.func @main(%x: …) -> … {
      %p = graph.param "main:lifted0" : tensor<2x32x3x3x32xf32>
      %y = graph.conv2d %x, %p weight_tile 32 : …

A value is lifted when it is computed (by pure, region-free graph ops with static tensor results)
from graph.param values, and graph.constant ones, only; involves at least one param and one op
that is not a reshape (a reshape of a weight is a free view, its copy would only cost memory);
and is used by an op that is not weight-only (nor returned: an output must not alias a weight).
Constant-only computations stay (legalizations read some constants' values).

The runtime (backend/runtime.py, the JIT's CompiledProgram) calls `main__params` with the bound
weights the first time a call needs a lifted param, and again after `bind_params`; an artifact
build stores the lifted params as weights of its own (frontend/build.py). Weights changed in
place after that are not seen by the lifted ones: bind them again.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, ModuleOp, StringAttr, TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import Pure

from minimlir.dialects import graph

PARAMS_OF = "graph.params_of"
"""Attribute of a lifted-params function: the function whose lifted params it computes."""


PARAMS_FUNCTIONS = "graph.params_functions"
"""Module attribute: the names of the lifted-params functions (they outlive the func dialect's
attributes: convert-profile-kernels leaves their kernel calls untimed)."""


def _static_tensor(v: SSAValue) -> bool:
    return isinstance(v.type, TensorType) and all(d >= 0 for d in v.type.get_shape())


def _liftable(op: Operation) -> bool:
    return (op.dialect_name() == "graph" and not op.regions and bool(op.results)
            and op.has_trait(Pure) and all(_static_tensor(r) for r in op.results))


def weight_only(v: SSAValue) -> bool:
    """`v` is computed from graph.param / graph.constant values only (by liftable ops)."""
    memo: dict[SSAValue, bool | None] = {}
    stack, order = [v], []
    while stack:  # iterative: weight chains can be long
        u = stack.pop()
        if u in memo:
            continue
        op = u.owner
        if isinstance(op, graph.ParamOp | graph.ConstantOp):
            memo[u] = True
            continue
        if not isinstance(op, Operation) or not _liftable(op):
            memo[u] = False
            continue
        memo[u] = None  # visiting
        order.append(u)
        stack.extend(o for o in op.operands if o not in memo)
    for u in reversed(order):
        memo[u] = all(memo.get(o) is True for o in u.owner.operands)  # type: ignore[union-attr]
    return memo[v] is True


def reads_param(v: SSAValue) -> bool:
    """`v` is, or is computed from, a graph.param: what a pass that moves weight-only work here
    checks, since a computation of constants alone is not lifted."""
    stack, seen = [v], set()
    while stack:
        u = stack.pop()
        if u in seen:
            continue
        seen.add(u)
        if isinstance(u.owner, graph.ParamOp):
            return True
        if isinstance(u.owner, Operation):
            stack.extend(u.owner.operands)
    return False


def is_params_function(f: func.FuncOp) -> bool:
    return PARAMS_OF in f.attributes


def _lift(module: ModuleOp, f: func.FuncOp) -> None:
    block = f.body.blocks[0]
    w: dict[SSAValue, bool] = {}  # weight-only
    has_param: dict[SSAValue, bool] = {}
    real: dict[SSAValue, bool] = {}  # computed by an op other than a reshape
    for op in block.ops:
        for r in op.results:
            if isinstance(op, graph.ParamOp):
                w[r], has_param[r], real[r] = True, True, False
            elif isinstance(op, graph.ConstantOp):
                w[r], has_param[r], real[r] = True, False, False
            elif _liftable(op) and all(w.get(o, False) for o in op.operands):
                w[r] = True
                has_param[r] = any(has_param[o] for o in op.operands)
                real[r] = not isinstance(op, graph.ReshapeOp) or any(real[o] for o in op.operands)
            else:
                w[r] = False
    lifted = []
    for op in block.ops:
        if isinstance(op, graph.ParamOp | graph.ConstantOp):
            continue
        for r in op.results:
            if not (w[r] and has_param[r] and real[r]):
                continue
            users = [u.operation for u in r.uses]
            if any(isinstance(u, func.ReturnOp) for u in users):
                continue
            if any(not all(w.get(x, False) for x in u.results) or not u.results for u in users):
                lifted.append(r)
    if not lifted:
        return
    # the new function: clones of every op the lifted values need, in order
    needed: set[Operation] = set()
    stack = [r.owner for r in lifted]
    while stack:
        op = stack.pop()
        if op in needed:
            continue
        needed.add(op)
        stack.extend(o.owner for o in op.operands)
    name = f.sym_name.data
    taken = {o.sym_name.data for o in module.ops if isinstance(o, func.FuncOp)}
    init_name = f"{name}__params"
    while init_name in taken:
        init_name += "_"
    derived = [f"{name}:lifted{k}" for k in range(len(lifted))]
    init = func.FuncOp(init_name, ([], [r.type for r in lifted]))
    init.attributes[PARAMS_OF] = StringAttr(name)
    init.res_attrs = ArrayAttr([DictionaryAttr({"graph.name": StringAttr(d)}) for d in derived])
    mapping: dict[SSAValue, SSAValue] = {}
    body = init.body.blocks[0]
    for op in block.ops:
        if op in needed:
            c = op.clone(value_mapper=mapping)
            body.add_op(c)
    body.add_op(func.ReturnOp(*[mapping[r] for r in lifted]))
    Rewriter.insert_op(init, InsertPoint.before(f))
    known = module.attributes.get(PARAMS_FUNCTIONS)
    names = list(known.data) if isinstance(known, ArrayAttr) else []
    module.attributes[PARAMS_FUNCTIONS] = ArrayAttr([*names, StringAttr(init_name)])
    # the function reads them as params
    for r, d in zip(lifted, derived):
        p = graph.ParamOp(d, r.type)  # type: ignore[arg-type]
        p.location = r.owner.location  # type: ignore[union-attr]
        Rewriter.insert_op(p, InsertPoint.before(r.owner))  # type: ignore[arg-type]
        r.replace_all_uses_with(p.result)
    for op in reversed(list(block.ops)):  # the weight-only ops nothing reads now
        if op in needed and all(not r.uses for r in op.results):
            op.detach()
            op.erase()


@dataclass(frozen=True)
class GraphLiftParamsPass(ModulePass):
    """Weight-only computations (a packed weight layout, …) move to a `<function>__params`
    function the runtime runs once when the weights are bound; the function reads them as params."""

    name = "graph-lift-params"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for f in list(op.ops):
            if (isinstance(f, func.FuncOp) and f.body.blocks and not is_params_function(f)
                    and f.sym_visibility in (None, StringAttr("public"))
                    and "loop.kernel" not in f.attributes and "graph.primitive" not in f.attributes):
                _lift(op, f)
