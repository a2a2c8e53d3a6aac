"""minimlir as an ONNX backend (`onnx.backend.base.Backend`): the interface of ONNX's conformance suite.

    from minimlir.frontend.onnx_backend import OnnxBackend

    rep = OnnxBackend.prepare("model.onnx")               # or a ModelProto; device "CPU" only
    (y,) = rep.run([x])                                   # a list (or dict by name) of arrays
    (y,) = OnnxBackend.run_node(node, [a, b])             # one NodeProto, inputs as arrays
    OnnxBackend.supports_device("CPU")                    # True; anything else False

`prepare` compiles once with `minimlir.frontend.compile`; the same rep serves every input size the
model's dynamic dims (`dim_param` / unknown dims) allow.

Specialization. Our importer needs some node inputs as constants: shapes (Reshape, Expand,
ConstantOfShape), axes (Squeeze, Reduce* from opset 13/18), pads, Slice starts/ends, Tile repeats,
Clip bounds... ONNX's node tests often feed them as graph inputs. When `prepare` fails for exactly that
reason ("... computed at run time"), the rep records which graph inputs reach those operands and compiles
nothing yet. `run` then turns those inputs into initializers holding the given values, compiles that
specialized model, and caches it by the values (dtype, shape, bytes), so calling again with the same
axes/shape reuses the compiled code. The remaining inputs are passed as usual. `rep.specialized_on`
lists the specialized inputs (empty for an ordinary model).

A dim the importer calls dynamic in a model whose graph inputs all have static shapes can only come
from a value computed at run time (a `size` input feeding Expand, Split and If branches, as in
AffineGrid's function body): such a problem is treated the same way, specializing on the integer and
bool graph inputs that reach the node. The trace goes through control-flow nodes: an If/Loop/Scan
output depends on the outer values its bodies read, not only on the node's operands.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper
from onnx.backend.base import Backend, BackendRep, Device, DeviceType

from minimlir.frontend.api import CompiledModel, InputError, compile
from minimlir.frontend.onnx_import import (
    NEEDS_CONSTANT,
    UnsupportedModelError,
    _node_label,
    resolved_by_specializing,
    static_input_shapes,
)

ALL_OPERANDS = {"ConstantOfShape", "Range", "MelWeightMatrix"}
"""Ops whose every operand is a shape parameter (others: operand 0 is the data)."""

CONTROL_OPERANDS = {"If": 1, "Loop": 2}
"""Control-flow ops decided at compile time (`minimlir.frontend._onnx_control_flow`): their first
operands (If's condition; Loop's trip count and condition) are the parameters, the rest is data."""


def _load(model: onnx.ModelProto | str | os.PathLike[str]) -> onnx.ModelProto:
    if isinstance(model, onnx.ModelProto):
        return model
    return onnx.load(os.fspath(model))  # external data next to the file is loaded too


def _outer_reads(node: onnx.NodeProto) -> list[str]:
    """The outer-scope values the subgraphs of `node` (If branches, Loop/Scan bodies, nested) read."""
    out: list[str] = []
    for attr in node.attribute:
        graphs = [attr.g] if attr.type == onnx.AttributeProto.GRAPH else list(attr.graphs)
        for g in graphs:
            local = {i.name for i in g.input} | {i.name for i in g.initializer}
            for inner in g.node:
                out.extend(i for i in inner.input if i and i not in local)
                out.extend(i for i in _outer_reads(inner) if i not in local)
                local.update(o for o in inner.output if o)
    return out


def parameter_inputs(model: onnx.ModelProto, problem_nodes: set[str],
                     dynamic_nodes: set[str] = frozenset()) -> list[str]:
    """Graph inputs that reach a shape-like operand of one of `problem_nodes` (labels as the importer
    names nodes), directly or through other nodes (Cast, Concat, an If's branches, ...): the inputs to
    specialize on. For `dynamic_nodes` (a dim computed at run time, see the module docstring) every
    operand and outer read counts, and for those (and for what control-flow bodies read) only integer
    and bool inputs are returned."""
    from minimlir.frontend.onnx_import import _expand_functions

    # the importer names the nodes of expanded function bodies ("ReduceL1_0/ReduceSum/..."):
    # trace through the same expansion (it keeps the graph inputs' names)
    graph = _expand_functions(model)[0].graph
    initializers = {i.name for i in graph.initializer}
    graph_inputs = [vi.name for vi in graph.input if vi.name not in initializers]
    producer = {out: node for node in graph.node for out in node.output if out}

    def trace(wanted: list[str]) -> set[str]:
        seen: set[str] = set()
        found: set[str] = set()
        while wanted:
            name = wanted.pop()
            if name in seen:
                continue
            seen.add(name)
            if name in graph_inputs:
                found.add(name)
            elif name in producer:
                wanted.extend(i for i in producer[name].input if i)
                wanted.extend(_outer_reads(producer[name]))
        return found

    wanted: list[str] = []
    dynamic: list[str] = []
    for index, node in enumerate(graph.node):
        label = _node_label(node, index)
        if label in dynamic_nodes:
            dynamic.extend(name for name in node.input if name)
            dynamic.extend(_outer_reads(node))
        if label in problem_nodes:
            if node.op_type in CONTROL_OPERANDS:
                wanted.extend(name for name in node.input[:CONTROL_OPERANDS[node.op_type]] if name)
                # the problem may be a nested node's (an If in a branch whose condition is computed
                # from a value the branch reads): the integer values the bodies read count too
                dynamic.extend(_outer_reads(node))
                continue
            start = 0 if node.op_type in ALL_OPERANDS else 1
            wanted.extend(name for name in node.input[start:] if name)
    found = trace(wanted)
    if dynamic:
        float_types = {onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE, onnx.TensorProto.FLOAT16,
                       onnx.TensorProto.BFLOAT16}
        elem = {vi.name: vi.type.tensor_type.elem_type for vi in graph.input}
        found |= {n for n in trace(dynamic) if elem.get(n) not in float_types}
    return [n for n in graph_inputs if n in found]


def specialize(model: onnx.ModelProto, values: Mapping[str, np.ndarray]) -> onnx.ModelProto:
    """A copy of `model` in which the graph inputs named in `values` are initializers with those values."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    keep = [vi for vi in m.graph.input if vi.name not in values]
    for name, value in values.items():
        m.graph.initializer.append(numpy_helper.from_array(np.asarray(value), name))
    del m.graph.input[:]
    m.graph.input.extend(keep)
    return m


class OnnxBackendRep(BackendRep):
    """A prepared model: `run(inputs)` -> list of outputs (see the module docstring)."""

    def __init__(self, model: onnx.ModelProto, compiled: CompiledModel | None, specialized_on: list[str],
                 options: Mapping[str, Any]):
        self.model = model
        self.compiled = compiled
        self.specialized_on = specialized_on
        self.options = dict(options)
        self.input_names = [vi.name for vi in model.graph.input
                            if vi.name not in {i.name for i in model.graph.initializer}]
        self.output_names = [vi.name for vi in model.graph.output]
        self._specialized: dict[tuple, CompiledModel] = {}

    def _named(self, inputs: Any) -> dict[str, Any]:
        if isinstance(inputs, Mapping):
            return dict(inputs)
        if isinstance(inputs, np.ndarray):
            inputs = [inputs]
        inputs = list(inputs)
        if len(inputs) > len(self.input_names):
            raise InputError(
                f"the model takes {len(self.input_names)} input(s) ({', '.join(self.input_names)}), "
                f"got {len(inputs)}"
            )
        return dict(zip(self.input_names, inputs))

    def run(self, inputs: Any, **kwargs: Any) -> list[np.ndarray]:  # type: ignore[override]
        named = self._named(inputs)
        if not self.specialized_on:
            assert self.compiled is not None
            return self.compiled(**named)
        missing = [n for n in self.specialized_on if n not in named]
        if missing:
            raise InputError(f"missing input(s): {', '.join(missing)}")
        fixed = {n: np.asarray(named.pop(n)) for n in self.specialized_on}
        key = tuple((n, a.dtype.str, a.shape, a.tobytes()) for n, a in fixed.items())
        compiled = self._specialized.get(key)
        if compiled is None:
            compiled = compile(specialize(self.model, fixed), **self.options)
            self._specialized[key] = compiled
        return compiled(**named)


class OnnxBackend(Backend):
    """minimlir behind ONNX's backend interface (CPU only)."""

    @classmethod
    def supports_device(cls, device: str) -> bool:
        try:
            return Device(device).type == DeviceType.CPU
        except Exception:
            return False

    @classmethod
    def _check_device(cls, device: str) -> None:
        if not cls.supports_device(device):
            raise ValueError(f"minimlir runs on CPU only (device '{device}' is not supported)")

    @classmethod
    def prepare(cls, model: Any, device: str = "CPU", **kwargs: Any) -> OnnxBackendRep:  # type: ignore[override]
        """Compile `model` (ModelProto or path). Keyword options go to `minimlir.frontend.compile`
        (num_threads, cache, pipeline, dump_ir)."""
        cls._check_device(device)
        options = {k: v for k, v in kwargs.items() if k in ("num_threads", "cache", "pipeline", "dump_ir")}
        # A path goes to the importer as a path: clear errors for bad files, external data memory-mapped.
        source = model if isinstance(model, onnx.ModelProto) else os.fspath(model)
        try:
            compiled = compile(source, **options)
            proto = model if isinstance(model, onnx.ModelProto) else onnx.load(source, load_external_data=False)
        except UnsupportedModelError as e:
            proto = _load(model)  # with its external data: specialized copies are compiled from memory
            problems = {p.node for p in e.problems if NEEDS_CONSTANT in p.reason}
            static = static_input_shapes(proto)
            dynamic = {p.node for p in e.problems if resolved_by_specializing(p.reason, static)} - problems
            if not problems | dynamic or len(problems | dynamic) != len({p.node for p in e.problems}):
                raise
            inputs = parameter_inputs(proto, problems, dynamic)
            if not inputs:
                raise
            return OnnxBackendRep(proto, None, inputs, options)
        return OnnxBackendRep(proto, compiled, [], options)

    @classmethod
    def run_model(cls, model: Any, inputs: Any, device: str = "CPU", **kwargs: Any) -> list[np.ndarray]:  # type: ignore[override]
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(  # type: ignore[override]
        cls,
        node: onnx.NodeProto,
        inputs: Sequence[Any],
        device: str = "CPU",
        outputs_info: Sequence[tuple[Any, Sequence[int]]] | None = None,
        **kwargs: Any,
    ) -> list[np.ndarray]:
        """Run one node on `inputs` (arrays for the node's non-empty inputs, in order).

        The node becomes a one-node model whose input types are the arrays' dtypes and shapes;
        output types come from `outputs_info` ((numpy dtype, shape) per output) or shape inference.
        `opset_version=` picks the opset (default: the newest onnx knows)."""
        cls._check_device(device)
        opset = kwargs.pop("opset_version", None) or onnx.defs.onnx_opset_version()
        names = [n for n in node.input if n]
        if len(inputs) != len(names):
            raise InputError(
                f"node '{node.name or node.op_type}' has {len(names)} input(s), got {len(inputs)} array(s)"
            )
        arrays = [np.asarray(a) for a in inputs]
        value_infos = [
            helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
            for n, a in zip(names, arrays)
        ]
        outputs = []
        for i, name in enumerate(o for o in node.output if o):
            if outputs_info is not None and i < len(outputs_info):
                dtype, shape = outputs_info[i]
                outputs.append(
                    helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(np.dtype(dtype)), shape)
                )
            else:
                outputs.append(helper.make_empty_tensor_value_info(name))
        graph = helper.make_graph([node], f"{node.op_type.lower()}_node", value_infos, outputs)
        domain = node.domain if node.domain not in ("", "ai.onnx") else ""
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid(domain, opset)])
        model = onnx.shape_inference.infer_shapes(model)
        return cls.prepare(model, device, **kwargs).run(arrays)


prepare = OnnxBackend.prepare
run_model = OnnxBackend.run_model
run_node = OnnxBackend.run_node
supports_device = OnnxBackend.supports_device
