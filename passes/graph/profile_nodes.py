"""graph-profile-nodes: record, for the profiler, the ONNX nodes and the work of every kernel.

Runs right after graph-fuse and again right after graph-legalize (only in profiled pipelines; the
second run names the kernels of the ops graph-fuse left alone, by their `graph.call_kernel`). For
every `func.call` of a fused function from a public function it records, in the module attribute
`minimlir.profile_kernels` (JSON: callee -> {"nodes", "flops", "bytes"}):
- nodes: the names in the `loc("NodeName"(...))` locations of the graph ops outlined into it;
- flops per call: 2·M·N·K for graph.matmul, 2·(output elements)·(C/group·KH·KW) for graph.conv2d,
  one per output element for every other op;
- bytes per call: the sizes of the function's inputs and results.
Counts are polynomials in the dynamic dims, {power: coefficient}: a tensor with d `?` dims
contributes its static product at power d (the runtime evaluates them when every dynamic dim of
the call has one value, e.g. the batch; otherwise GFLOP/s and GB/s are n/a).
"""

import json
from collections import defaultdict

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, NameLoc, StringAttr, TensorType
from xdsl.passes import ModulePass

ATTR = "minimlir.profile_kernels"


def _poly(t) -> dict[int, int]:
    if not isinstance(t, TensorType):
        return {}
    n, d = 1, 0
    for s in t.get_shape():
        if s < 0:
            d += 1
        else:
            n *= s
    return {d: n}


def _mul(p: dict[int, int], k: int) -> dict[int, int]:
    return {d: c * k for d, c in p.items()}


def _add(acc: dict[int, int], p: dict[int, int]) -> None:
    for d, c in p.items():
        acc[d] = acc.get(d, 0) + c


def _elem_bytes(t) -> int:
    try:
        return t.element_type.bitwidth // 8
    except AttributeError:
        return 4


def _flops(op) -> dict[int, int]:
    if not op.results:
        return {}
    out = _poly(op.results[0].type)
    if op.name == "graph.matmul":
        shape = op.operands[0].type.get_shape()
        return _mul(out, 2 * max(shape[-1], 1))  # a multiply and an add per K
    if op.name == "graph.conv2d":
        w = op.weight_shape()
        k = 1
        for s in w[1:]:
            k *= s
        return _mul(out, 2 * k)
    return out


def _nodes(fn: func.FuncOp) -> list[str]:
    names: dict[str, None] = {}
    for op in fn.walk():
        loc = getattr(op, "location", None)
        if isinstance(loc, NameLoc) and op.name.startswith("graph.") and op.name not in ("graph.dim",):
            names[loc.desc.data] = None
    return list(names)


def _work(op, types) -> dict:
    nbytes: dict[int, int] = {}
    for t in types:
        _add(nbytes, _mul(_poly(t), _elem_bytes(t)))
    return {"flops": _flops(op) if op is not None else {}, "bytes": nbytes}


def _link(module: ModuleOp, table: dict) -> None:
    """After graph-legalize: the kernels of unfused ops (`graph.call_kernel` in a public function)."""
    stash = table.pop("@unfused", {})
    for fn in module.ops:
        if not isinstance(fn, func.FuncOp) or (fn.sym_visibility is not None and fn.sym_visibility.data == "private"):
            continue
        for call in fn.walk():
            if call.name != "graph.call_kernel":
                continue
            name = call.properties["callee"].string_value() if "callee" in call.properties else \
                call.attributes["callee"].string_value()
            loc = call.location.desc.data if isinstance(call.location, NameLoc) else None
            short = name.rsplit("_", 1)[0]
            info = stash.get(f"{loc}|{short}") or {"flops": {}, "bytes": {}}
            table.setdefault(name, {"nodes": [loc] if loc else [], **info})


def record(module: ModuleOp) -> dict:
    previous = module.attributes.get(ATTR)
    if isinstance(previous, StringAttr):  # the second run, after graph-legalize
        table = json.loads(previous.data)
        _link(module, table)
        module.attributes[ATTR] = StringAttr(json.dumps(table))
        return table
    fns = {op.sym_name.data: op for op in module.ops if isinstance(op, func.FuncOp)}
    table: dict = {"@unfused": {}}
    for fn in fns.values():
        if fn.sym_visibility is not None and fn.sym_visibility.data == "private":
            continue
        for call in fn.walk():
            if call.name.startswith("graph.") and isinstance(call.location, NameLoc) and call.results \
                    and call.name not in ("graph.dim", "graph.param", "graph.constant"):
                key = f"{call.location.desc.data}|{call.name.removeprefix('graph.')}"
                types = [*(v.type for v in call.operands), *(r.type for r in call.results)]
                table["@unfused"][key] = _work(call, types)
                continue
            if not isinstance(call, func.CallOp):
                continue
            name = call.callee.string_value()
            callee = fns.get(name)
            if callee is None or name in table or not callee.body.blocks:
                continue
            flops: dict[int, int] = defaultdict(int)
            for op in callee.walk():
                if op.name.startswith("graph.") and op.name not in ("graph.dim", "graph.param", "graph.constant"):
                    _add(flops, _flops(op))
            nbytes: dict[int, int] = {}
            for t in [*callee.function_type.inputs.data, *callee.function_type.outputs.data]:
                _add(nbytes, _mul(_poly(t), _elem_bytes(t)))
            table[name] = {"nodes": _nodes(callee), "flops": dict(flops), "bytes": nbytes}
    module.attributes[ATTR] = StringAttr(json.dumps(table))
    return table


class GraphProfileNodesPass(ModulePass):
    """Record each fused kernel's ONNX nodes, FLOPs and bytes for the profiler."""

    name = "graph-profile-nodes"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        record(op)
