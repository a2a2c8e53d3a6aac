"""ONNX control flow whose decision is known at compile time: If, Loop and Scan bodies are inlined
into the importing graph, so the branch / iterations compile through the pipeline like any other ops.

Rules (anything else is refused with a reason naming the op and the variant):
- If: the condition is a compile-time constant (after the importer's constant folding): the taken
  branch's nodes are emitted in place, its outputs are the If's outputs. With a run-time condition
  both branches are emitted and each output is Where(cond, then, else), when that is safe (static
  shapes, equal output types, nothing that may fault in the branch not taken: `_if_select`).
- Loop: the trip count M is a constant (or absent) and the initial condition is a constant (or
  absent); the body is unrolled, iteration by iteration, as long as its condition output stays a
  constant true, up to MAX_UNROLL iterations (and MAX_NODES emitted body nodes). Loop-carried values
  flow from one unrolled copy to the next (their shapes may change); scan outputs are stacked along a
  new axis 0. A loop with neither M nor a constant condition is refused.
- Scan (opset 9+): the scan length is the static dim of the scan inputs; the body is unrolled once
  per element (Gather at a constant index along scan_input_axes, in scan_input_directions order), scan
  outputs are stacked along scan_output_axes (reversed for direction 1).
A condition or trip count computed from graph inputs is refused "... computed at run time", the
reason `minimlir.frontend.onnx_backend` specializes on (it recompiles with those inputs' values).

Body values are scoped: names a body defines are visible only inside that copy of the body; it reads
outer values by name, as ONNX allows.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto

from minimlir.frontend._onnx_ops import OP_TABLE, onnx_op
from minimlir.frontend.onnx_import import DYNAMIC, RANDOM_OPS, NodeView, Unsupported, Value

MAX_UNROLL = 256
"""Most iterations a Loop / Scan is unrolled into."""
MAX_NODES = 4096
"""Most body nodes one control-flow op may emit when unrolled."""


_RECORDERS: list[list[tuple[onnx.NodeProto, list, list[Value]]]] = []
"""While the branches of an If with a run-time condition are emitted: every emitted body node (nested
bodies too) with its input and output values, for the checks of `_select_safe`."""

_INDEXING = frozenset({"Gather", "GatherElements", "GatherND", "Scatter", "ScatterElements", "ScatterND",
                       "OneHot", "TensorScatter"})
"""Ops that read or write at positions given by data: out of range in a branch not taken."""


def _emit_body(n: NodeView, graph: onnx.GraphProto, bindings: dict[str, Value], what: str) -> list[Value]:
    """Emit `graph`'s nodes into the importing block with its inputs bound to `bindings`; the values
    of its outputs. Names the body defines are dropped afterwards (scoping)."""
    from minimlir.frontend._onnx_unsupported import no_importer_reason
    from minimlir.frontend.onnx_import import _fold_weights

    cx = n.cx
    saved = dict(cx.values)
    try:
        for init in graph.initializer:
            cx.values[init.name] = cx.from_const(onnx.numpy_helper.to_array(init), name=init.name)
        cx.values.update(bindings)
        for k, node in enumerate(graph.node):
            label = node.name or f"{node.op_type}_{k}"
            where = f"{n.op_type}: {what} node '{label}' ({node.op_type})"
            if node.domain not in ("", "ai.onnx"):
                raise Unsupported(f"{where}: domain '{node.domain}' is not supported")
            spec = OP_TABLE.get(node.op_type)
            if spec is None:
                raise Unsupported(f"{where}: {no_importer_reason(node.op_type)}")
            if n.opset < spec.min_opset:
                raise Unsupported(f"{where}: opset {n.opset} is older than the oldest supported ({spec.min_opset})")
            if spec.check is not None:
                reason = spec.check(node, n.opset, {}) if spec.check_known else spec.check(node, n.opset)
                if reason is not None:
                    raise Unsupported(f"{where}: {reason}")
            missing = [i for i in node.input if i and i not in cx.values]
            if missing:
                raise Unsupported(f"{where}: input '{missing[0]}' is not defined")
            view = NodeView(node, n.opset, [cx.values[i] if i else None for i in node.input], cx)
            try:
                outs = _fold_weights(cx, view)
                if outs is None:
                    outs = _fold_small(view)
                if outs is None:
                    outs = spec.emit(view)
            except Unsupported as e:
                raise Unsupported(f"{where}: {e}") from e
            for i, name in enumerate(node.output):
                if name:
                    if i >= len(outs) or outs[i] is None:
                        raise Unsupported(f"{where}: output {i} is not produced")
                    out = outs[i]
                    cx.values[name] = out if isinstance(out, Value) else cx.from_ssa(out)
            for seen in _RECORDERS:
                seen.append((node, view.inputs, [cx.values[name] for name in node.output if name]))
        results = []
        for o in graph.output:
            if o.name not in cx.values:
                raise Unsupported(f"{n.op_type}: {what} output '{o.name}' is not produced by any node")
            results.append(cx.values[o.name])
        return results
    finally:
        cx.values = saved


_NO_FOLD = frozenset({"Constant", "Dropout", "If", "Loop", "Scan"}) | RANDOM_OPS


def _fold_small(view: NodeView) -> list | None:
    """A body node whose inputs are all small constants (a Split of a constant shape in AffineGrid's
    body, which the emitters keep as graph ops) is evaluated by the onnx reference, so what depends
    on it (an Expand's shape, a Squeeze's dims) stays static as in the main graph. None: not folded."""
    from minimlir.frontend.onnx_import import FOLD_LIMIT, _NP_TO_ONNX, reference_eval

    inputs = [v for v in view.inputs if v is not None]
    if view.proto.op_type in _NO_FOLD or not inputs or any(
            v.const is None or v.const.size > FOLD_LIMIT for v in inputs):
        return None
    results = reference_eval(view)
    if results is None:
        return None
    values = []
    for array in results:
        if array.dtype not in _NP_TO_ONNX or array.size > FOLD_LIMIT:
            return None
        values.append(view.cx.from_const(array.copy()))  # (np.ascontiguousarray makes a 0-d array 1-d)
    full = iter(values)
    return [next(full) if o else None for o in view.proto.output]


def _const_scalar(n: NodeView, i: int, what: str):
    """The constant scalar value of input i, None when the input is absent."""
    v = n.input(i)
    if v is None:
        return None
    if v.const is None:
        folded = _fold_scalar(n, n.proto.input[i])
        if folded is not None:
            v = Value(v.elem_type, list(folded.shape), const=folded)
    if v.const is None:
        how = "branch is inlined" if n.op_type == "If" else "loop is unrolled"
        raise Unsupported(f"{n.op_type}: the {what} is computed at run time (only a compile-time constant "
                          f"{what} is supported: the {how})")
    if v.const.size != 1:
        raise Unsupported(f"{n.op_type}: the {what} has {v.const.size} elements, expected 1")
    return v.const.reshape(()).item()


def _fold_scalar(n: NodeView, name: str, limit: int = 64) -> np.ndarray | None:
    """Constant folding of the small computation producing `name` (e.g. a trip count
    Cast(Relu(Ceil((limit - start) / delta))) whose scalar ops the emitters keep as graph ops):
    the producing nodes back to values with a known constant are evaluated by the onnx reference
    implementation. None when a graph input (or anything not constant) is reached."""
    from onnx.reference import ReferenceEvaluator

    cx = n.cx
    producer = {out: node for node in cx.model.graph.node for out in node.output if out}
    leaves: dict[str, np.ndarray] = {}
    chain: list[onnx.NodeProto] = []
    todo, seen = [name], set()
    while todo:
        x = todo.pop()
        if x in seen or not x:
            continue
        seen.add(x)
        known = cx.values.get(x)
        if known is not None and known.const is not None:
            leaves[x] = known.const
            continue
        node = producer.get(x)
        if node is None or node.domain not in ("", "ai.onnx") or node.attribute and any(
                a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) for a in node.attribute):
            return None
        if node not in chain:
            chain.append(node)
        if len(chain) > limit:
            return None
        todo.extend(node.input)
    order = [node for node in cx.model.graph.node if node in chain]
    g = onnx.helper.make_graph(
        order, "fold",
        [onnx.helper.make_tensor_value_info(k, onnx.helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
         for k, a in leaves.items()],
        [onnx.helper.make_tensor_value_info(name, TensorProto.UNDEFINED, None)])
    model = onnx.helper.make_model(g, opset_imports=[onnx.helper.make_opsetid("", n.opset)])
    try:
        out = np.asarray(ReferenceEvaluator(model).run(None, leaves)[0])
    except Exception:
        return None
    return out if out.size == 1 else None


def _op(n: NodeView, op_type: str, inputs: list[Value], opset: int = 13, **attrs) -> Value:
    """One helper op through its own emitter (Unsqueeze / Concat / Gather at `opset`)."""
    node = onnx.helper.make_node(op_type, [f"in{i}" for i in range(len(inputs))], ["out"], **attrs)
    out = OP_TABLE[op_type].emit(NodeView(node, opset, list(inputs), n.cx))[0]
    return out if isinstance(out, Value) else n.cx.from_ssa(out)


def _stack(n: NodeView, parts: list[Value], axis: int, what: str) -> Value:
    if not parts:
        raise Unsupported(f"{n.op_type}: {what} of zero iterations (its element shape is unknown)")
    axes = n.cx.from_const(np.array([axis], dtype=np.int64))
    rows = [_op(n, "Unsqueeze", [p, axes]) for p in parts]
    return rows[0] if len(rows) == 1 else _op(n, "Concat", rows, axis=axis)


@onnx_op("If")
def emit_if(n: NodeView) -> list:
    c = n.input(0)
    if c is not None and c.const is None and _fold_scalar(n, n.proto.input[0]) is None:
        try:
            return _if_select(n, c)  # a run-time condition
        except Unsupported as e:  # "at run time": OnnxBackend specializes on the condition's inputs
            raise Unsupported(f"If: the condition is computed at run time and the branches cannot be "
                              f"selected ({e})") from e
    cond = _const_scalar(n, 0, "condition")
    branch = n.attr("then_branch") if bool(cond) else n.attr("else_branch")
    name = "then_branch" if bool(cond) else "else_branch"
    outs = _emit_body(n, branch, {}, name)
    if len(outs) < n.num_outputs():
        raise Unsupported(f"If: {name} yields {len(outs)} values, the node has {n.num_outputs()} outputs")
    return outs


def _if_select(n: NodeView, c: Value) -> list:
    """If with a run-time condition: both branches are emitted and each output is
    Where(cond, then, else). Only when that computes what the taken branch computes, without
    faulting in the branch not taken: every value of both branches has a static shape, the outputs
    pairwise the same dtype and shape, and no branch has an integer Div / Mod or an op indexing by
    data (Gather*, Scatter*, OneHot) with non-constant indices."""
    if c.rank and (DYNAMIC in c.shape or int(np.prod(c.shape)) != 1):
        raise Unsupported("If: the condition is not a scalar (or 1-element tensor)")
    outs = {}
    for name in ("then_branch", "else_branch"):
        seen: list[tuple[onnx.NodeProto, list, list[Value]]] = []
        _RECORDERS.append(seen)
        try:
            outs[name] = _emit_body(n, n.attr(name), {}, name)
        finally:
            _RECORDERS.remove(seen)
        _select_safe(n, name, seen)
    then, other = outs["then_branch"], outs["else_branch"]
    if len(then) != len(other) or len(then) < n.num_outputs():
        raise Unsupported(f"If: the branches yield {len(then)} and {len(other)} values for {n.num_outputs()} outputs")
    cond = c if not c.rank else _op(n, "Reshape", [c, n.cx.from_const(np.zeros(0, dtype=np.int64))])
    results: list = []
    for k, (t, e) in enumerate(zip(then, other)):
        if t.elem_type != e.elem_type or list(t.shape) != list(e.shape):
            fmt = lambda v: "x".join(str(d) for d in v.shape) or "scalar"  # noqa: E731
            raise Unsupported(f"If with a run-time condition: output {k} has shape {fmt(t)} in then_branch and "
                              f"{fmt(e)} in else_branch (only branches of equal types are selected)")
        results.append(t if t is e else _op(n, "Where", [cond, t, e]))
    return results


def _select_safe(n: NodeView, branch: str, seen: list[tuple[onnx.NodeProto, list, list[Value]]]) -> None:
    for node, inputs, values in seen:
        where = f"If with a run-time condition: {branch} node '{node.name or node.op_type}' ({node.op_type})"
        if any(DYNAMIC in v.shape for v in values):
            raise Unsupported(f"{where} has a result of dynamic shape (both branches run: only static shapes)")
        if node.op_type in ("Div", "Mod") and any(
                onnx.helper.tensor_dtype_to_np_dtype(v.elem_type).kind in "iub" for v in values):
            raise Unsupported(f"{where}: an integer division may fault in the branch not taken (both branches run)")
        if node.op_type in _INDEXING:
            idx = inputs[1] if len(inputs) > 1 else None
            if idx is None or idx.const is None:
                raise Unsupported(f"{where} indexes by run-time data, which may be out of range in the branch not "
                                  "taken (both branches run)")


@onnx_op("Loop")
def emit_loop(n: NodeView) -> list:
    body: onnx.GraphProto = n.attr("body")
    m = _const_scalar(n, 0, "trip count")
    cond = _const_scalar(n, 1, "condition")
    if m is None and cond is None:
        raise Unsupported("Loop: neither a trip count nor a condition (an infinite loop)")
    carried = [n.input(i) for i in range(2, len(n.proto.input))]
    if any(v is None for v in carried):
        raise Unsupported("Loop: an empty loop-carried input")
    n_carried = len(carried)
    n_scan = len(body.output) - 1 - n_carried
    if len(body.input) != 2 + n_carried or n_scan < 0:
        raise Unsupported(f"Loop: the body has {len(body.input)} inputs and {len(body.output)} outputs for "
                          f"{n_carried} loop-carried values")
    cond_elem = body.input[1].type.tensor_type.elem_type or TensorProto.BOOL
    scans: list[list[Value]] = [[] for _ in range(n_scan)]
    it = 0
    going = True if cond is None else bool(cond)
    while going and (m is None or it < m):
        if it >= MAX_UNROLL or it * len(body.node) > MAX_NODES:
            raise Unsupported(f"Loop: more than {min(MAX_UNROLL, MAX_NODES // max(1, len(body.node)))} "
                              "iterations (unrolled loops only)")
        cond_dtype = onnx.helper.tensor_dtype_to_np_dtype(cond_elem)
        binds = {body.input[0].name: n.cx.from_const(np.array(it, dtype=np.int64)),
                 body.input[1].name: n.cx.from_const(np.array(going, dtype=cond_dtype))}
        binds.update({vi.name: v for vi, v in zip(body.input[2:], carried)})
        outs = _emit_body(n, body, binds, f"body (iteration {it})")
        c = outs[0]
        if c.const is None:
            raise Unsupported("Loop: the body's condition output is not a compile-time constant "
                              "(a loop with a data-dependent exit is not supported)")
        going = bool(c.const.reshape(-1)[0])
        carried = outs[1:1 + n_carried]
        for k in range(n_scan):
            scans[k].append(outs[1 + n_carried + k])
        it += 1
    results = list(carried)
    for k in range(n_scan):
        if k + n_carried < n.num_outputs() and n.output_used(n_carried + k):
            results.append(_stack(n, scans[k], 0, f"scan output {k}"))
        else:
            results.append(None)
    return results


@onnx_op("Scan", min_opset=8)
def emit_scan(n: NodeView) -> list:
    body: onnx.GraphProto = n.attr("body")
    n_scan_in = n.attr("num_scan_inputs")
    if n.opset < 9:
        return _scan8(n, body, n_scan_in)
    inputs = list(n.inputs)
    if any(v is None for v in inputs):
        raise Unsupported("Scan: an empty input")
    n_state = len(inputs) - n_scan_in
    n_scan_out = len(body.output) - n_state
    return _scan(n, body, inputs[:n_state], inputs[n_state:],
                 list(n.attr("scan_input_axes", [0] * n_scan_in)),
                 list(n.attr("scan_input_directions", [0] * n_scan_in)),
                 list(n.attr("scan_output_axes", [0] * n_scan_out)),
                 list(n.attr("scan_output_directions", [0] * n_scan_out)))


def _scan8(n: NodeView, body: onnx.GraphProto, n_scan_in: int) -> list:
    """Scan-8: inputs (sequence_lens, states..., scan inputs...) all with a leading batch axis, scan
    axis 1 of the scan inputs, `directions` per scan input. Unrolled per batch row (a static batch),
    each row as a Scan-9 on the row's values; the rows' results are stacked on axis 0. sequence_lens
    must be absent or a constant equal to the scan length for every row."""
    inputs = list(n.inputs[1:])
    if any(v is None for v in inputs):
        raise Unsupported("Scan (opset 8): an empty input")
    n_state = len(inputs) - n_scan_in
    n_scan_out = len(body.output) - n_state
    batches = {v.shape[0] if v.rank else None for v in inputs}
    if None in batches or DYNAMIC in batches or len(batches) != 1:
        raise Unsupported("Scan (opset 8): the batch axis (axis 0 of every input) must be one static size")
    batch = batches.pop()
    lens = n.input(0)
    if lens is not None:
        full = {v.shape[1] if v.rank > 1 else None for v in inputs[n_state:]}
        if lens.const is None or len(full) != 1 or not np.all(lens.const == next(iter(full))):
            raise Unsupported("Scan (opset 8): sequence_lens must be absent or a constant equal to the scan "
                              "length (shorter sequences are not supported)")
    if batch * len(body.node) > MAX_NODES:
        raise Unsupported(f"Scan (opset 8): a batch of {batch} is too large to unroll")
    dirs = list(n.attr("directions", [0] * n_scan_in))
    rows: list[list[Value]] = []
    for b in range(batch):
        idx = n.cx.from_const(np.array(b, dtype=np.int64))
        row = [_op(n, "Gather", [v, idx], axis=0) for v in inputs]
        rows.append(_scan(n, body, row[:n_state], row[n_state:], [0] * n_scan_in, dirs,
                          [0] * n_scan_out, [0] * n_scan_out))
    return [_stack(n, [r[k] for r in rows], 0, f"output {k}") for k in range(n_state + n_scan_out)]


def _scan(n: NodeView, body: onnx.GraphProto, state: list[Value], scan_in: list[Value], in_axes: list[int],
          in_dirs: list[int], out_axes: list[int], out_dirs: list[int]) -> list[Value]:
    """Scan-9 semantics, unrolled: (final states..., stacked scan outputs...)."""
    n_state = len(state)
    n_scan_out = len(body.output) - n_state
    in_axes = [a + v.rank if a < 0 else a for a, v in zip(in_axes, scan_in)]
    lengths = {v.shape[a] for a, v in zip(in_axes, scan_in)}
    if DYNAMIC in lengths:
        raise Unsupported("Scan: the scan length is a dynamic dim (only a static length is unrolled)")
    if len(lengths) != 1:
        raise Unsupported(f"Scan: the scan inputs have different lengths {sorted(lengths)}")
    length = lengths.pop()
    if length > MAX_UNROLL or length * len(body.node) > MAX_NODES:
        raise Unsupported(f"Scan: a scan of length {length} is too long to unroll")
    outs_by_k: list[list[Value]] = [[] for _ in range(n_scan_out)]
    for t in range(length):
        binds = {vi.name: v for vi, v in zip(body.input[:n_state], state)}
        for j, v in enumerate(scan_in):
            idx = length - 1 - t if in_dirs[j] else t
            binds[body.input[n_state + j].name] = _op(
                n, "Gather", [v, n.cx.from_const(np.array(idx, dtype=np.int64))], axis=in_axes[j])
        outs = _emit_body(n, body, binds, f"body (iteration {t})")
        state = outs[:n_state]
        for k in range(n_scan_out):
            outs_by_k[k].append(outs[n_state + k])
    results = list(state)
    for k in range(n_scan_out):
        parts = outs_by_k[k][::-1] if out_dirs[k] else outs_by_k[k]
        rank = (parts[0].rank if parts else 0) + 1
        axis = out_axes[k] + rank if out_axes[k] < 0 else out_axes[k]
        results.append(_stack(n, parts, axis, f"scan output {k}"))
    return results


def outer_reads(node: onnx.NodeProto) -> list[str]:
    """Outer values the subgraphs of `node` read by name (not defined inside them), nested
    subgraphs included: the importer skips the node when one of them failed to import."""
    out: list[str] = []

    def walk(g: onnx.GraphProto, defined: set[str]) -> None:
        defined = defined | {vi.name for vi in g.input} | {t.name for t in g.initializer}
        for n in g.node:
            out.extend(i for i in n.input if i and i not in defined)
            for a in n.attribute:
                for sub in ([a.g] if a.type == onnx.AttributeProto.GRAPH else list(a.graphs)):
                    walk(sub, defined)
            defined = defined | {o for o in n.output if o}
        out.extend(o.name for o in g.output if o.name not in defined)

    for a in node.attribute:
        for sub in ([a.g] if a.type == onnx.AttributeProto.GRAPH else list(a.graphs)):
            walk(sub, set())
    return out
