"""Find the first ONNX node whose minimlir result differs from ONNX Runtime's (`mini-run --compare`).

    from minimlir.frontend.compare import compare_with_onnxruntime
    report = compare_with_onnxruntime("model.onnx", {"ids": ids}, rtol=1e-3, atol=1e-4)
    report.ok                      # every compared value within tolerance
    report.first_wrong             # a ValueDiff: node, op_type, output, shape, max_abs, max_rel, kernels
    print(report.format())

How it works:
  1. the original model is compiled as usual (its kernels are the ones a user runs) and run; ONNX
     Runtime runs the same model with graph optimizations off (every node computes its own output).
  2. "expose": a copy of the model whose graph outputs are every node output (typed by ONNX shape
     inference) is compiled by minimlir and run by ONNX Runtime; the values are compared in the
     order of `graph.node` (ONNX's topological order) and the first node with an output beyond
     tolerance (`|got - want| <= atol + rtol * |want|`, NaN equal to NaN) is the answer.
  3. "bisect": where the exposed copy does not compile, or matches everywhere while the original
     compile's outputs do not (exposing outputs changes fusion, so a bug that lives in one fused
     kernel can vanish), the graph is cut after node k (prefix models whose outputs are every value
     still live after k) and the smallest k whose prefix differs is found by binary search.

Kernels. Every node is named by the kernel(s) it became, both in the compile that produced the
compared value and in the original compile: the kernel of a node is the `graph.call_kernel`
callee at the node's location (`loc("<node>"("<file>":<index + 1>:0))`) after graph-fuse,
graph-legalize and loop-fuse; a fusion group (graph-fuse's `fused_*` functions, which identical
groups share) is mapped to all of its members. A node with no kernel was folded at import time
(weights, shape computations) or became a view.

Bad input (a missing file, a feed whose name, dtype, rank or static dim does not match the graph
inputs, a model ONNX Runtime cannot load) raises `CompareError`; a model with ops minimlir does not
import raises the importer's `UnsupportedModelError`, which names every unsupported op.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import helper

from minimlir.frontend.api import TensorSpec
from minimlir.runtime.errors import MinimlirError

__all__ = ["CompareError", "Report", "ValueDiff", "compare_with_onnxruntime", "input_specs"]


class CompareError(MinimlirError):
    """Bad input for a comparison (file, feeds, a model the reference cannot run): a one-line message."""


@dataclass
class ValueDiff:
    """One ONNX value, as minimlir computed it next to ONNX Runtime."""

    node: str  # the node's name (the importer's label: its name, or "<OpType>_<index>")
    op_type: str
    index: int  # the node's position in graph.node
    output: str  # the value's name
    dtype: str
    shape: tuple[int, ...]  # minimlir's
    reference_shape: tuple[int, ...]  # onnxruntime's
    max_abs: float
    max_rel: float
    bad: int  # elements beyond tolerance (all of them when the shapes differ)
    ratio: float = 0.0  # the largest |got - want| / (atol + rtol * |want|): > 1 is beyond tolerance
    worst: tuple[int, ...] | None = None  # index of the largest error
    got: float | None = None  # minimlir's value there
    want: float | None = None  # onnxruntime's value there
    kernels: list[str] = field(default_factory=list)  # in the compile that produced this value
    original_kernels: list[str] = field(default_factory=list)  # in the original model's compile
    inputs: list[tuple[str, str]] = field(default_factory=list)  # first_wrong only: (input, how it compares)

    @property
    def ok(self) -> bool:
        return self.bad == 0

    @property
    def size(self) -> int:
        return int(np.prod(self.reference_shape, dtype=np.int64))


@dataclass
class Report:
    """The outcome of `compare_with_onnxruntime` (see the module docstring)."""

    rtol: float
    atol: float
    method: str  # "expose" or "bisect": how first_wrong was found (or how the intermediates were compared)
    values: list[ValueDiff]  # every compared intermediate, in topological order
    outputs: list[ValueDiff]  # the original compile's outputs
    first_wrong: ValueDiff | None
    nodes: int = 0  # nodes in the model
    not_compared: list[tuple[str, str]] = field(default_factory=list)  # (value, why)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.first_wrong is None and all(d.ok for d in self.outputs)

    @property
    def worst(self) -> ValueDiff | None:
        """The value with the largest error relative to its tolerance."""
        every = [*self.values, *self.outputs]
        if not every:
            return None
        return max(every, key=lambda d: d.ratio)

    def format(self) -> str:
        """What `mini-run --compare` prints."""
        tol = f"rtol={self.rtol:g}, atol={self.atol:g}"
        lines: list[str] = []
        d = self.first_wrong
        if d is not None:
            lines.append(f"first wrong node: '{d.node}' ({d.op_type}), node {d.index + 1} of {self.nodes}, "
                         f"output '{d.output}'")
            shape = f"{d.dtype}[{', '.join(map(str, d.shape))}]"
            if d.shape != d.reference_shape:
                lines.append(f"  shape: {shape}, onnxruntime {d.dtype}[{', '.join(map(str, d.reference_shape))}]"
                             " (shapes differ)")
            else:
                lines.append(f"  shape: {shape}")
                where = ""
                if d.worst is not None:
                    where = (f" at [{', '.join(map(str, d.worst))}] (minimlir {_g(d.got)}, "
                             f"onnxruntime {_g(d.want)})")
                lines.append(f"  max abs error {_g(d.max_abs)}{where}, max rel error {_g(d.max_rel)}")
                lines.append(f"  {d.bad} of {d.size} elements beyond {tol}")
            lines.append(f"  kernel: {_kernels(d.original_kernels)} (original compile)")
            how = "every intermediate exposed" if self.method == "expose" else "the graph cut after this node"
            lines.append(f"  kernel: {_kernels(d.kernels)} (compile with {how})")
            for name, how in d.inputs:
                lines.append(f"  input '{name}': {how}")
        elif not self.ok:
            bad = [o for o in self.outputs if not o.ok]
            lines.append("outputs differ, but no single node was found: " + ", ".join(
                f"'{o.output}' max abs {_g(o.max_abs)}" for o in bad))
        else:
            w = self.worst
            n = len(self.values) or len(self.outputs)
            text = f"compare: all {n} values of {self.nodes} nodes match onnxruntime ({tol})"
            if w is not None:
                text += (f"; worst: '{w.output}' of '{w.node}' ({w.op_type}), "
                         f"max abs {_g(w.max_abs)}, max rel {_g(w.max_rel)}")
            lines.append(text)
        lines += [f"note: {n}" for n in self.notes]
        if self.not_compared:
            lines.append(f"note: {len(self.not_compared)} value(s) not compared: " + "; ".join(
                f"'{v}' ({why})" for v, why in self.not_compared[:5]) + (" ..." if len(self.not_compared) > 5 else ""))
        return "\n".join(lines)


def _kernels(names: Sequence[str]) -> str:
    return ", ".join(names) if names else "none (folded at import time, or a view)"


def _g(x: float | None) -> str:
    return "?" if x is None else f"{x:.6g}"


# --------------------------------------------------------------------------------------------
# Comparing two arrays


def diff_arrays(got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> dict[str, Any]:
    """max_abs, max_rel, bad (elements beyond atol + rtol*|want|), worst index and values there.
    NaN matches NaN, an infinity matches the same infinity; a shape mismatch makes every element bad."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return {"max_abs": float("inf"), "max_rel": float("inf"), "bad": max(int(want.size), 1),
                "ratio": float("inf"), "worst": None, "got": None, "want": None}
    if want.size == 0:
        return {"max_abs": 0.0, "max_rel": 0.0, "bad": 0, "ratio": 0.0, "worst": None, "got": None, "want": None}
    g = got.astype(np.float64)
    w = want.astype(np.float64)
    with np.errstate(all="ignore"):
        same = (g == w) | (np.isnan(g) & np.isnan(w))
        err = np.where(same, 0.0, np.abs(g - w))
        err = np.where(np.isnan(err), np.inf, err)  # inf - inf, or NaN on one side only
        rel = np.where(err == 0, 0.0, err / np.abs(w))
        rel = np.where(np.isnan(rel), np.inf, rel)
        tol = atol + rtol * np.abs(w)
        bad = (err > tol) | np.isinf(err)  # |want| inf or NaN makes tol inf or NaN
        ratio = np.where(err == 0, 0.0, np.where(np.isinf(err), np.inf, err / tol))  # tol 0: inf
    k = int(np.argmax(err))
    worst = tuple(int(i) for i in np.unravel_index(k, want.shape))
    return {"max_abs": float(err.max()), "max_rel": float(rel.max()), "bad": int(np.count_nonzero(bad)),
            "ratio": float(ratio.max()),
            "worst": worst, "got": float(g.flat[k]), "want": float(w.flat[k])}


# --------------------------------------------------------------------------------------------
# The model and its feeds


def _load(model: Any) -> onnx.ModelProto:
    if isinstance(model, onnx.ModelProto):
        return model
    if not isinstance(model, (str, os.PathLike)):
        raise CompareError(f"expected an ONNX path or ModelProto, got {type(model).__name__}")
    path = Path(model)
    if not path.is_file():
        raise CompareError(f"could not open '{path}': no such file")
    try:
        return onnx.load(str(path))  # with external data: the copies below are self-contained
    except Exception as e:
        text = str(e).strip().splitlines()
        raise CompareError(f"{path}: not a valid ONNX model ({text[0] if text else type(e).__name__})") from None


def _graph_inputs(proto: onnx.ModelProto) -> list[onnx.ValueInfoProto]:
    inits = {t.name for t in proto.graph.initializer}
    return [vi for vi in proto.graph.input if vi.name not in inits]


def input_specs(model: Any) -> list[TensorSpec]:
    """The model's inputs (not initializers) as TensorSpecs: None for a dynamic dim, dim_param names kept."""
    from minimlir.frontend.onnx_import import _DTYPES, onnx_dtype_name

    proto = _load(model)
    specs = []
    for vi in _graph_inputs(proto):
        t = vi.type.tensor_type
        if not vi.type.HasField("tensor_type") or t.elem_type not in _DTYPES:
            what = onnx_dtype_name(t.elem_type) if vi.type.HasField("tensor_type") else "not a tensor"
            raise CompareError(f"input '{vi.name}': unsupported type ({what})")
        shape: list[int | None] = []
        names: list[str] = []
        for d in t.shape.dim:
            shape.append(d.dim_value if d.HasField("dim_value") else None)
            names.append(d.dim_param if d.HasField("dim_param") else "")
        specs.append(TensorSpec(vi.name, _DTYPES[t.elem_type][0], tuple(shape), tuple(names)))
    return specs


def check_feeds(specs: Sequence[TensorSpec], feeds: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """Every input given once, with the graph's dtype, rank and static dims; named dims consistent."""
    by_name = {s.name: s for s in specs}
    unknown = [k for k in feeds if k not in by_name]
    if unknown:
        raise CompareError(f"no input named '{unknown[0]}' (inputs: {', '.join(by_name) or 'none'})")
    missing = [s.name for s in specs if s.name not in feeds]
    if missing:
        raise CompareError(f"missing input(s): {', '.join(missing)}")
    out: dict[str, np.ndarray] = {}
    named: dict[str, tuple[int, str]] = {}
    for s in specs:
        a = np.asarray(feeds[s.name])
        want = "[" + ", ".join((s.dim_names[i] if i < len(s.dim_names) and s.dim_names[i] else "?")
                               if d is None else str(d) for i, d in enumerate(s.shape)) + "]"
        if a.dtype != s.dtype:
            raise CompareError(f"input '{s.name}': expected dtype {s.dtype}, got {a.dtype}")
        if a.ndim != len(s.shape):
            raise CompareError(f"input '{s.name}': expected shape {want}, got {list(a.shape)} (rank {a.ndim})")
        for i, (d, n) in enumerate(zip(s.shape, a.shape)):
            if d is not None and d != n:
                raise CompareError(f"input '{s.name}': expected shape {want}, got {list(a.shape)} (dim {i})")
            name = s.dim_names[i] if i < len(s.dim_names) else ""
            if d is None and name:
                seen = named.setdefault(name, (n, s.name))
                if seen[0] != n:
                    raise CompareError(f"input '{s.name}': dim {i} ('{name}') is {n}, "
                                       f"but '{seen[1]}' has {name}={seen[0]}")
        out[s.name] = np.ascontiguousarray(a)
    return out


@dataclass
class _Node:
    index: int
    label: str
    op_type: str
    outputs: list[str]
    inputs: list[str]


def _nodes(proto: onnx.ModelProto) -> list[_Node]:
    # the importer's labels (frontend.onnx_import._node_label), so kernel locations map back
    return [_Node(i, n.name or f"{n.op_type}_{i}", n.op_type, [o for o in n.output if o], [x for x in n.input if x])
            for i, n in enumerate(proto.graph.node)]


def _types(proto: onnx.ModelProto) -> dict[str, int]:
    """Element type of every value ONNX shape inference knows (0 where it does not)."""
    try:
        inferred = onnx.shape_inference.infer_shapes(proto, strict_mode=False)
    except Exception:
        inferred = proto
    types: dict[str, int] = {}
    g = inferred.graph
    for vi in [*g.value_info, *g.output, *g.input]:
        if vi.type.HasField("tensor_type") and vi.type.tensor_type.elem_type:
            types[vi.name] = vi.type.tensor_type.elem_type
    return types


def _with_outputs(proto: onnx.ModelProto, node_count: int, outputs: Sequence[str], types: Mapping[str, int],
                  name: str) -> onnx.ModelProto:
    """A copy of `proto` with the first `node_count` nodes and exactly `outputs` as graph outputs."""
    declared = {vi.name: vi for vi in proto.graph.output}
    copy = onnx.ModelProto()
    copy.CopyFrom(proto)
    g = copy.graph
    del g.node[node_count:]
    del g.output[:]
    for o in outputs:
        if o in declared:
            g.output.append(declared[o])
        else:
            g.output.append(helper.make_tensor_value_info(o, types[o], None))
    g.name = name
    return copy


# --------------------------------------------------------------------------------------------
# Running both sides


class _Reference:
    """ONNX Runtime, graph optimizations off: each node's output is the node's own result."""

    def __init__(self, notes: list[str]) -> None:
        try:
            import onnxruntime as ort
        except ImportError:
            raise CompareError("onnxruntime is not installed (pip install onnxruntime)") from None
        self.ort = ort
        self.notes = notes
        self.ir_version: int | None = None  # set when onnxruntime refused the model's IR version

    def run(self, proto: onnx.ModelProto, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        import re

        opts = self.ort.SessionOptions()
        opts.graph_optimization_level = self.ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        opts.log_severity_level = 3
        if self.ir_version is not None and proto.ir_version > self.ir_version:
            proto = _with_ir_version(proto, self.ir_version)
        try:
            sess = self.ort.InferenceSession(proto.SerializeToString(), opts, providers=["CPUExecutionProvider"])
        except Exception as e:
            # onnx.helper writes the newest IR version, which an older onnxruntime refuses although
            # the ops (their opset) are the same: run it as the newest IR version it takes.
            m = re.search(r"Unsupported model IR version: (\d+), max supported IR version: (\d+)", str(e))
            if m is None or self.ir_version is not None:
                raise CompareError(f"onnxruntime cannot load the model: {_first_line(e)}") from None
            self.ir_version = int(m.group(2))
            self.notes.append(f"onnxruntime supports IR version <= {self.ir_version}: the model (IR version "
                              f"{m.group(1)}) ran on it as IR version {self.ir_version}")
            return self.run(proto, feeds)
        names = [o.name for o in sess.get_outputs()]
        used = {i.name for i in sess.get_inputs()}
        try:
            results = sess.run(names, {k: v for k, v in feeds.items() if k in used})
        except Exception as e:
            raise CompareError(f"onnxruntime cannot run the model: {_first_line(e)}") from None
        return dict(zip(names, (np.asarray(r) for r in results)))


def _with_ir_version(proto: onnx.ModelProto, version: int) -> onnx.ModelProto:
    copy = onnx.ModelProto()
    copy.CopyFrom(proto)
    copy.ir_version = version
    return copy


def _minimlir(proto: onnx.ModelProto, feeds: Mapping[str, np.ndarray], cache: bool,
              num_threads: int | None, **options: Any) -> dict[str, np.ndarray]:
    from minimlir.frontend.api import compile as compile_model

    m = compile_model(proto, cache=cache, num_threads=num_threads, **options)
    names = m.input_names
    outs = m(**{k: v for k, v in feeds.items() if k in names})
    return {n: np.asarray(o) for n, o in zip(m.output_names, outs)}


def kernel_map(proto: onnx.ModelProto) -> dict[int, list[str]]:
    """Node index -> the kernels its graph ops became in the default compile (see the module docstring)."""
    from xdsl.dialects import func
    from xdsl.dialects.builtin import FileLineColLoc, NameLoc

    from minimlir.dialects import graph
    from minimlir.frontend.api import default_pipeline, lower
    from minimlir.frontend.onnx_import import import_onnx

    def node_index(loc) -> int | None:
        if isinstance(loc, NameLoc) and isinstance(loc.location, FileLineColLoc):
            line = loc.location.line.data
            return line - 1 if line >= 1 else None
        return None

    module, _ = import_onnx(proto)
    fuse = default_pipeline() == "compile"
    groups: dict[tuple[str, int], list[int]] = {}  # (fused function, root node) -> member nodes
    if fuse:
        fuser_cls = _fuser()
        for fn in module.body.block.ops:
            if not isinstance(fn, func.FuncOp) or not fn.body.blocks:
                continue
            for members in fuser_cls(fn.body.block, 7).run():  # graph-fuse's default max-depth
                root = node_index(members[-1].op.location)  # the outlined call's location (graph_fuse._outline)
                if root is not None:
                    groups.setdefault(("", root), []).extend(
                        i for m in members if (i := node_index(m.op.location)) is not None)
        lower(module, "graph-fuse")
        primitives: dict[tuple[str, int], list[int]] = {}
        for op in module.walk():
            if isinstance(op, func.CallOp) and (root := node_index(op.location)) is not None:
                primitives[(op.callee.root_reference.data, root)] = groups.get(("", root), [root])
        groups = primitives
        lower(module, "graph-legalize,loop-fuse")
    else:
        lower(module, "graph-legalize")
    kernels: dict[int, list[str]] = {}
    for op in module.walk():
        if not isinstance(op, graph.CallKernelOp):
            continue
        callee = op.callee.root_reference.data if hasattr(op.callee, "root_reference") else str(op.callee)
        root = node_index(op.location)
        if root is None:
            continue
        for i in groups.get((callee, root), [root]):
            names = kernels.setdefault(i, [])
            if callee not in names:
                names.append(callee)
    return kernels


def _fuser():
    """graph-fuse's grouping (its private `_Fuser`), wherever the pass module lives."""
    from minimlir.passes.graph.fuse import _Fuser
    return _Fuser


# --------------------------------------------------------------------------------------------
# The comparison


def compare_with_onnxruntime(
    model: Any,
    feeds: Mapping[str, Any],
    rtol: float = 1e-3,
    atol: float = 1e-4,
    *,
    method: str = "auto",
    cache: bool = True,
    num_threads: int | None = None,
    checks: bool | None = None,
    tuning_db: str | os.PathLike[str] | None = None,
) -> Report:
    """Run `model` (ONNX path or ModelProto) on minimlir and ONNX Runtime with `feeds` (input name ->
    array) and find the first node whose output differs beyond `atol + rtol * |reference|`.

    `method`: "auto" (expose every intermediate; bisect by prefix graphs where that cannot compile
    or hides the difference), "expose", or "bisect". `cache`: minimlir's compile cache. `checks` and
    `tuning_db`: as `compile` takes them (checked mode; a mini-tune database), for every compile here.
    """
    options: dict[str, Any] = {"checks": checks}
    if tuning_db is not None:
        options["tuning_db"] = tuning_db
    if method not in ("auto", "expose", "bisect"):
        raise ValueError(f"method must be 'auto', 'expose' or 'bisect', got {method!r}")
    if rtol < 0 or atol < 0:
        raise CompareError("tolerances must be >= 0")
    proto = _load(model)
    feeds = check_feeds(input_specs(proto), feeds)
    notes: list[str] = []
    reference = _Reference(notes)
    nodes = _nodes(proto)
    types = _types(proto)
    graph_outputs = [vi.name for vi in proto.graph.output]
    producer = {o: n for n in nodes for o in n.outputs}

    # The original model, as a user runs it (this also reports unsupported ops, naming each).
    got = _minimlir(proto, feeds, cache, num_threads, **options)
    want = reference.run(proto, feeds)
    original_kernels = kernel_map(proto)

    def diff(name: str, got_v: np.ndarray, want_v: np.ndarray, kernels: Mapping[int, list[str]]) -> ValueDiff:
        n = producer.get(name)
        d = diff_arrays(got_v, want_v, rtol, atol)
        return ValueDiff(
            node=n.label if n else "<input>", op_type=n.op_type if n else "", index=n.index if n else -1,
            output=name, dtype=str(want_v.dtype), shape=tuple(got_v.shape), reference_shape=tuple(want_v.shape),
            kernels=list(kernels.get(n.index, [])) if n else [],
            original_kernels=list(original_kernels.get(n.index, [])) if n else [], **d)

    outputs = [diff(o, got[o], want[o], original_kernels) for o in graph_outputs]
    report = Report(rtol, atol, "expose", [], outputs, None, nodes=len(nodes), notes=notes)

    read = {i for n in nodes for i in n.inputs} | set(graph_outputs)
    exposable: list[str] = []
    for n in nodes:
        for o in n.outputs:
            if o not in read:  # Dropout's mask, MaxPool's indices, ...: the importer may not make them
                report.not_compared.append((o, "no node reads it"))
            elif o in graph_outputs or o in types:
                exposable.append(o)
            else:
                report.not_compared.append((o, "its type is unknown to ONNX shape inference"))

    exposed_ok = False
    if method in ("auto", "expose"):
        exposed = _with_outputs(proto, len(nodes), exposable, types, proto.graph.name or "model")
        try:
            got_x = _minimlir(exposed, feeds, cache, num_threads, **options)
        except Exception as e:  # noqa: BLE001 (an op output minimlir cannot return: bisect instead)
            if method == "expose":
                raise
            report.notes.append(f"the model with every intermediate as an output does not compile "
                                f"({_first_line(e)}); bisected by prefix graphs")
        else:
            want_x = reference.run(exposed, feeds)
            kernels_x = kernel_map(exposed)
            exposed_ok = True
            for o in exposable:
                report.values.append(diff(o, got_x[o], want_x[o], kernels_x))
            report.first_wrong = next((d for d in report.values if not d.ok), None)
            if report.first_wrong is None and not all(d.ok for d in outputs):
                report.notes.append("with every intermediate exposed all values match, but the original "
                                    "compile's outputs differ (a fusion-dependent error); bisected by prefix graphs")
    if report.first_wrong is None and (method == "bisect" or (method == "auto" and (
            not exposed_ok or not all(d.ok for d in outputs)))):
        report.method = "bisect"
        _bisect(report, proto, nodes, types, graph_outputs, feeds, reference, diff, cache, num_threads,
                original_bad=not all(d.ok for d in outputs), options=options)
    if report.first_wrong is not None:
        _describe_inputs(report, proto, producer)
    return report


def _describe_inputs(report: Report, proto: onnx.ModelProto, producer: Mapping[str, _Node]) -> None:
    """How each input of the first wrong node compares: it is the first when all of them match."""
    wrong = report.first_wrong
    assert wrong is not None
    node = proto.graph.node[wrong.index]
    compared = {d.output: d for d in report.values}
    inits = {t.name for t in proto.graph.initializer}
    for name in dict.fromkeys(i for i in node.input if i):
        if name in compared:
            d = compared[name]
            src = f" (from '{producer[name].label}')" if name in producer else ""
            state = "matches" if d.ok else "differs"
            how = f"{state}{src}, max abs {_g(d.max_abs)}"
        elif name in inits:
            how = "a weight (the same for both)"
        elif name in producer:
            how = f"from '{producer[name].label}', not compared"
        else:
            how = "a graph input (the same feed for both)"
        wrong.inputs.append((name, how))


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return text[0] if text else type(e).__name__


def _bisect(report: Report, proto, nodes: list[_Node], types, graph_outputs, feeds, reference, diff,
            cache: bool, num_threads: int | None, original_bad: bool, options: dict[str, Any]) -> None:
    """Binary search for the smallest k whose prefix graph (nodes 0..k, outputs: every value still live
    after k, and node k's own) differs; its first differing value (in node order) is first_wrong."""
    later_inputs: list[set[str]] = [set() for _ in nodes]  # values read by nodes after k
    live: set[str] = set(graph_outputs)
    for k in range(len(nodes) - 1, -1, -1):
        later_inputs[k] = set(live)
        live |= set(nodes[k].inputs)
    live_at_all = live  # every value some node reads, and the graph outputs
    produced: list[str] = []
    frontiers: list[list[str]] = []
    for k, n in enumerate(nodes):
        produced.extend(n.outputs)
        frontiers.append([o for o in produced if (o in later_inputs[k] or (o in n.outputs and o in live_at_all))
                          and (o in types or o in graph_outputs)])
    tried: dict[int, list[ValueDiff] | None] = {}

    def run(k: int) -> list[ValueDiff] | None:
        if k not in tried:
            prefix = _with_outputs(proto, k + 1, frontiers[k], types, f"prefix_{k}")
            try:
                got = _minimlir(prefix, feeds, cache, num_threads, **options)
            except Exception as e:  # noqa: BLE001
                report.notes.append(f"the graph cut after node #{k} '{nodes[k].label}' does not compile "
                                    f"({_first_line(e)}); taken as matching")
                tried[k] = None
                return None
            want = reference.run(prefix, feeds)
            kernels = kernel_map(prefix)
            tried[k] = [diff(o, got[o], want[o], kernels) for o in frontiers[k]]
        return tried[k]

    def bad(k: int) -> bool:
        values = run(k)
        return values is not None and any(not d.ok for d in values)

    lo, hi = -1, len(nodes) - 1  # prefix lo matches (the empty one), prefix hi differs
    if not original_bad and not bad(hi):
        report.values = tried.get(hi) or []
        return
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if bad(mid):
            hi = mid
        else:
            lo = mid
    values = run(hi)
    if values is None:  # the prefix does not compile: only the original compile's outputs say it differs
        return
    report.first_wrong = next((d for d in values if not d.ok), None)
    before = [d for d in (tried.get(lo) or []) if d.output not in set(frontiers[hi])]  # the last matching cut
    report.values = sorted([*before, *values], key=lambda d: d.index)
