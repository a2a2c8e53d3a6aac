"""ONNX function ops: a node of an op the importer has no emitter for, whose ONNX schema defines it
as a function (a FunctionProto body, possibly context dependent: built for the node's attributes
and input types), is replaced by that body before import, as onnxruntime does for the function
ops it has no kernel for. Celu, Mish, RMSNormalization, Attention, GroupNormalization,
NegativeLogLikelihoodLoss, ... thus import as the graph ops of their body.

    Celu(x, alpha=2)   ->   Div(x, alpha) -> Elu -> Mul(alpha)   (opset 12 body)

The body is written against its own opset (e.g. ReduceMean with `axes` as an attribute in a body
for opset 13, inside an opset 23 model): each expanded node keeps the opset of the function it
came from (`Expansion.opsets`), which the importer uses instead of the model's. Bodies may use
function ops themselves; those are expanded in turn (up to MAX_DEPTH rounds). A node is expanded
only when every op of its final body has an emitter; otherwise it stays as it is and the support
table names the op itself ("no importer for this op").

Names: every value and node inside an expansion is prefixed with "<node name or op_index>/<op>/",
so expansions never collide with each other or with the model's names.
"""

from __future__ import annotations

from collections.abc import Callable, Container
from dataclasses import dataclass, field

import onnx
from onnx import AttributeProto, FunctionProto, NodeProto

MAX_DEPTH = 6
"""Rounds of expansion (a body that uses a function op that uses one, ...)."""


@dataclass
class Expansion:
    """The model's nodes with function ops expanded; `opsets[i]` is node i's ai.onnx opset."""

    nodes: list[NodeProto]
    opsets: list[int]
    expanded: dict[str, int] = field(default_factory=dict)
    """op type -> how many nodes of it were replaced by their body."""


def _default_opset(model: onnx.ModelProto) -> int:
    for o in model.opset_import:
        if o.domain in ("", "ai.onnx"):
            return o.version
    return 0


def function_body(
    node: NodeProto, opset: int, input_types: list[onnx.TypeProto | None]
) -> tuple[FunctionProto, int] | None:
    """(the FunctionProto of `node`'s op at `opset`, the ai.onnx opset its body is written for),
    or None when the schema defines no function (or needs input types that are unknown)."""
    if node.domain not in ("", "ai.onnx"):
        return None
    try:
        schema = onnx.defs.get_schema(node.op_type, opset, "")
    except Exception:
        return None
    fn = FunctionProto()
    plain = list(schema.function_opset_versions)
    ctx = list(schema.context_dependent_function_opset_versions)
    versions = sorted(set(plain) | set(ctx))
    if not versions:
        return None
    eligible = [v for v in versions if v <= opset]
    version = max(eligible) if eligible else min(versions)
    try:
        if version in ctx:
            if any(t is None for t in input_types):
                return None
            with_defaults = _with_defaults(node, schema)
            data = schema.get_context_dependent_function_with_opset_version(
                version, with_defaults.SerializeToString(), [t.SerializeToString() for t in input_types])
        else:
            data = schema.get_function_with_opset_version(version)
    except Exception:
        return None
    if not data:
        return None
    fn.ParseFromString(data)
    body_opset = next((o.version for o in fn.opset_import if o.domain in ("", "ai.onnx")), version)
    return fn, body_opset


def _with_defaults(node: NodeProto, schema) -> NodeProto:
    """`node` with the schema's default for every attribute it does not set."""
    out = NodeProto()
    out.CopyFrom(node)
    have = {a.name for a in node.attribute}
    for name, attr in schema.attributes.items():
        if name not in have and attr.default_value is not None and attr.default_value.name:
            a = AttributeProto()
            a.CopyFrom(attr.default_value)
            a.name = name
            out.attribute.append(a)
    return out


def _instantiate(node: NodeProto, fn: FunctionProto, prefix: str, schema_node: NodeProto) -> list[NodeProto]:
    """The body of `fn` for one call `node`: formal inputs/outputs renamed to the node's values,
    internal values prefixed, attribute references (`ref_attr_name`) replaced by the node's
    attributes (or the schema defaults, in `schema_node`)."""
    names: dict[str, str] = {}
    for i, formal in enumerate(fn.input):
        names[formal] = node.input[i] if i < len(node.input) else ""
    for i, formal in enumerate(fn.output):
        if i < len(node.output) and node.output[i]:
            names[formal] = node.output[i]
    attrs = {a.name: a for a in schema_node.attribute}
    for a in fn.attribute_proto:  # function-level defaults (FunctionProto.attribute_proto)
        attrs.setdefault(a.name, a)

    def rename(n: str) -> str:
        if n == "":
            return ""
        return names.get(n, prefix + n)

    return [_rewrite(inner, prefix + (inner.name or f"{inner.op_type}_{k}"), rename, attrs)
            for k, inner in enumerate(fn.node)]


def _rewrite(inner: NodeProto, name: str, rename: Callable[[str], str], attrs: dict) -> NodeProto:
    """`inner` with its values renamed and attribute references resolved, in the subgraphs of its
    attributes too (an If / Loop in a function body reads the body's values by name)."""
    new = NodeProto()
    new.CopyFrom(inner)
    del new.input[:]
    new.input.extend(rename(n) for n in inner.input)
    del new.output[:]
    new.output.extend(rename(n) for n in inner.output)
    new.name = name
    del new.attribute[:]
    for a in inner.attribute:
        if a.ref_attr_name:
            src = attrs.get(a.ref_attr_name)
            if src is None:
                continue  # not set and no default: the inner op's own default applies
            b = AttributeProto()
            b.CopyFrom(src)
            b.name = a.name
            new.attribute.append(b)
        elif a.type == AttributeProto.GRAPH:
            b = AttributeProto()
            b.CopyFrom(a)
            _rewrite_graph(b.g, name + "/" + a.name + "/", rename, attrs)
            new.attribute.append(b)
        elif a.type == AttributeProto.GRAPHS:
            b = AttributeProto()
            b.CopyFrom(a)
            for k, g in enumerate(b.graphs):
                _rewrite_graph(g, f"{name}/{a.name}{k}/", rename, attrs)
            new.attribute.append(b)
        else:
            new.attribute.append(a)
    return new


def _rewrite_graph(g: onnx.GraphProto, prefix: str, rename: Callable[[str], str], attrs: dict) -> None:
    """Rename the values of subgraph `g` in place (see `_rewrite`)."""
    for vi in list(g.input) + list(g.output) + list(g.value_info):
        vi.name = rename(vi.name)
    for init in g.initializer:
        init.name = rename(init.name)
    nodes = [_rewrite(n, prefix + (n.name or f"{n.op_type}_{k}"), rename, attrs) for k, n in enumerate(g.node)]
    del g.node[:]
    g.node.extend(nodes)


def expand_functions(
    model: onnx.ModelProto,
    supported: Container[str],
    infer: Callable[[onnx.ModelProto], onnx.ModelProto],
) -> Expansion | None:
    """Expand the function ops of `model`'s graph that the importer lacks (see the module
    docstring); None when there is nothing to expand. `infer` is shape inference (for the input
    types of context-dependent functions)."""
    base_opset = _default_opset(model)
    g = model.graph
    if not any(n.domain in ("", "ai.onnx") and n.op_type not in supported for n in g.node):
        return None
    # (node, opset, index of the original node it came from)
    items: list[tuple[NodeProto, int, int]] = [(n, base_opset, i) for i, n in enumerate(g.node)]
    touched: set[int] = set()
    counts: dict[str, int] = {}
    for _ in range(MAX_DEPTH):
        pending = [k for k, (n, _, _) in enumerate(items) if n.domain in ("", "ai.onnx") and n.op_type not in supported]
        if not pending:
            break
        types = _value_types(model, items, infer)
        changed = False
        new_items: list[tuple[NodeProto, int, int]] = []
        pend = set(pending)
        for k, (n, opset, root) in enumerate(items):
            if k not in pend:
                new_items.append((n, opset, root))
                continue
            prefix = f"{n.name or f'{n.op_type}_{k}'}/{n.op_type}/"
            in_types = [types.get(i) if i else None for i in n.input]
            call, casts_in, casts_out = n, [], []
            if any(_is_half(t) for t in in_types):
                call, in_types, casts_in, casts_out = _widen_half(n, in_types, types, prefix)
            got = function_body(call, opset, in_types)
            if got is None:
                new_items.append((n, opset, root))
                continue
            fn, body_opset = got
            schema = onnx.defs.get_schema(n.op_type, opset, "")
            new_items.extend((c, opset, root) for c in casts_in)
            for inner in _instantiate(call, fn, prefix, _with_defaults(call, schema)):
                new_items.append((inner, body_opset, root))
            new_items.extend((c, opset, root) for c in casts_out)
            counts[n.op_type] = counts.get(n.op_type, 0) + 1
            touched.add(root)
            changed = True
        items = new_items
        if not changed:
            break
    if not touched:
        return None
    bad = {root for n, _, root in items
           if root in touched and (n.domain not in ("", "ai.onnx") or n.op_type not in supported)}
    nodes: list[NodeProto] = []
    opsets: list[int] = []
    for i, orig in enumerate(g.node):
        if i in bad or i not in touched:
            nodes.append(orig)
            opsets.append(base_opset)
            continue
        for n, opset, root in items:
            if root == i:
                nodes.append(n)
                opsets.append(opset)
    if not touched - bad:
        return None
    expanded: dict[str, int] = {}
    for i in sorted(touched - bad):
        expanded[g.node[i].op_type] = expanded.get(g.node[i].op_type, 0) + 1
    return Expansion(nodes, opsets, expanded)


_HALF = (onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16)


def _is_half(t: onnx.TypeProto | None) -> bool:
    return t is not None and t.HasField("tensor_type") and t.tensor_type.elem_type in _HALF


def _widen_half(node: NodeProto, in_types: list, types: dict, prefix: str):
    """A function op called on float16/bfloat16 values is expanded on float32 ones: its half
    inputs are cast to float32, the body runs in float32, and its half outputs are rounded once at
    the end. That is how a kernel computes such an op (onnxruntime's fused Attention, LayerNorm, ...
    accumulate in float32) and what the ONNX reference computes for the op itself; a body in half
    precision would round after every step (e.g. Attention's QK^T before its Softmax) and drift by
    an ulp or more from the op's result. Returns (the call on float32 values, its input types, the
    input casts, the output casts)."""
    call = NodeProto()
    call.CopyFrom(node)
    if any(name and types.get(name) is None for name in node.output):
        return node, in_types, [], []  # an output of unknown type: keep the body as it is
    casts_in: list[NodeProto] = []
    new_types = []
    for i, (name, t) in enumerate(zip(node.input, in_types)):
        if not _is_half(t):
            new_types.append(t)
            continue
        wide = f"{prefix}widen{i}"
        casts_in.append(onnx.helper.make_node("Cast", [name], [wide], name=f"{prefix}Cast_in{i}",
                                              to=onnx.TensorProto.FLOAT))
        call.input[i] = wide
        w = onnx.TypeProto()
        w.CopyFrom(t)
        w.tensor_type.elem_type = onnx.TensorProto.FLOAT
        new_types.append(w)
    casts_out: list[NodeProto] = []
    for j, name in enumerate(node.output):
        t = types.get(name) if name else None
        if not _is_half(t):
            continue
        wide = f"{prefix}wide_out{j}"
        call.output[j] = wide
        casts_out.append(onnx.helper.make_node("Cast", [wide], [name], name=f"{prefix}Cast_out{j}",
                                               to=t.tensor_type.elem_type))
    return call, new_types, casts_in, casts_out


def _value_types(model: onnx.ModelProto, items, infer) -> dict[str, onnx.TypeProto]:
    """Types of the values of the partly expanded graph, by shape inference (best effort)."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    del m.graph.node[:]
    m.graph.node.extend(n for n, _, _ in items)
    m = infer(m)
    out: dict[str, onnx.TypeProto] = {}
    for vi in list(m.graph.input) + list(m.graph.value_info) + list(m.graph.output):
        if vi.type.HasField("tensor_type") and vi.type.tensor_type.elem_type:
            out[vi.name] = vi.type
    for init in m.graph.initializer:
        if init.name not in out:
            out[init.name] = onnx.helper.make_tensor_type_proto(init.data_type, list(init.dims))
    return out


def expanded_model(model: onnx.ModelProto, expansion: Expansion) -> onnx.ModelProto:
    """A copy of `model` whose graph holds the expanded nodes (same inputs, outputs, initializers)."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    del m.graph.node[:]
    m.graph.node.extend(expansion.nodes)
    return m
