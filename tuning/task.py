"""Task extraction: the unique kernels of a model after fusion, what the tuner tunes.

    from minimlir.tuning.task import extract_tasks
    tasks = extract_tasks("model.onnx", dims={"batch": 1})
    tasks[0].key, tasks[0].weight, tasks[0].flops, tasks[0].rule     # 'a3f…', 4, 2.3e8, 'conv2d'

The model runs through the graph-level prefix of the `compile` pipeline (graph-fuse, graph-legalize,
loop-fuse); every `loop.kernel` function is one kernel. A task is a class of structurally equal
kernels: the key hashes the kernel's printed IR with its name and value names dropped (weights are
kernel arguments, so they never enter the key), its weight is the number of `graph.call_kernel`
sites calling a kernel of the class (calls per model run), its FLOPs are counted on concrete shapes.
Kernels only graph-lift-params' functions call (weights packed once, when they are bound) are not
tasks: they are not part of a run.

Dynamic dims (an ONNX `dim_param` such as "batch") stay dynamic in the kernel that is compiled and
keyed; to measure it, the tuner needs sizes: the shapes the model calls it with when every named
dim is bound (`dims`, default 1; an unnamed one `dims.get("?", 1)`), from graph-infer-dims'
symbolic dims at its call site (`call_site_shapes`). Where a call's dims depend on tensor data, an
ONNX model is imported once more with the dims bound and the kernel takes its twin's static
shapes (same name, same ranks); failing that every `?` is `dims.get("?", 1)`.

Cold weights (`cache_flush`, TVM's `enable_cpu_cache_flush`): a kernel timed alone in a loop finds
its weights in the caches on every call but the first; in a model whose parameters are larger than
the last-level cache they come from memory on every run (ResNet-50's 118 MB: its F(2x2) Winograd
product, 4 MB of transformed weights, runs 1.03 ms warm and 1.45 ms with them flushed; 1.45 ms
in the model). A task's `cold_args` are the inputs that are parameters (`graph.param` or
`graph.constant`) at every call site; the measuring process flushes them before each timed call.
"auto" (default) sets them when the model's parameters exceed the last-level cache (they cannot
stay cached between runs), "on" always, "off" never (then `cold_args` is empty).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import Any

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp

PREFIX = "compile-whole-module"  # the compile pipeline's own prefix: the kernels it schedules, keyed the same


@dataclass
class Task:
    """One unique kernel: its key, IR (a standalone `func.func` with `loop.kernel`), concrete argument
    shapes for measuring, how often a model run calls it, FLOPs, and the default schedule's trace."""

    key: str
    name: str
    kernel_text: str
    shapes: list[list[int]]
    dtypes: list[str]
    num_outputs: int
    weight: int = 1
    flops: float = 0.0
    flops_by_kind: dict[str, float] = field(default_factory=dict)
    rule: str = ""
    defaults: dict[str, Any] = field(default_factory=dict)
    facts: dict[str, Any] = field(default_factory=dict)
    cold_args: list[int] = field(default_factory=list)  # inputs flushed from the caches before each timed call

    def to_json(self) -> dict:
        return asdict(self)

    @staticmethod
    def from_json(d: dict) -> Task:
        return Task(**d)

    def __str__(self) -> str:
        shapes = ", ".join("x".join(map(str, s)) for s in self.shapes)
        cold = f", timed with argument(s) {', '.join(map(str, self.cold_args))} flushed" if self.cold_args else ""
        return f"{self.name} [{self.rule}] x{self.weight} ({shapes}) {self.flops / 1e6:.1f} MFLOP{cold}"


def kernels_of(module: ModuleOp) -> list[func.FuncOp]:
    from minimlir.dialects import loop

    return [op for op in module.ops if isinstance(op, func.FuncOp) and op.body.blocks and loop.is_kernel(op)]


def normalized_text(kernel: func.FuncOp) -> str:
    """The kernel printed with name `kernel`, no value names, no knob assignment, no in-place mark,
    no checked-mode access names."""
    from xdsl.dialects.builtin import StringAttr

    from minimlir.dialects import loop
    from minimlir.frontend.api import ir_text
    from minimlir.passes.loop.inplace import INPLACE_ATTR
    from minimlir.passes.loop.schedule.default.knobs import KNOBS_ATTR
    from minimlir.passes.to_llvm._checks import SITE_ATTR

    k = kernel.clone()
    k.sym_name = StringAttr("kernel")
    k.attributes.pop(KNOBS_ATTR, None)
    # loop-mark-inplace's mark follows from the structure too: records written before it still match
    k.attributes.pop(INPLACE_ATTR, None)
    for op in k.walk():
        op.attributes.pop(SITE_ATTR, None)  # checked mode's access names: a checked compile finds the records
        if isinstance(op, loop.BlockOp):  # the legalizer's stamps follow from the structure: keys
            loop.unstamp(op)              # stay those of records written before there were stamps
        for r in op.results:
            r.name_hint = None
        for region in op.regions:
            for blk in region.blocks:
                for a in blk.args:
                    a.name_hint = None
    return ir_text(k)


def structural_key(kernel: func.FuncOp) -> str:
    return hashlib.sha256(normalized_text(kernel).encode()).hexdigest()[:20]


def call_counts(module: ModuleOp, lifted: bool = False) -> dict[str, int]:
    """Calls of each kernel by the model's functions (`lifted`: by graph-lift-params' functions,
    which run once when the weights are bound, instead)."""
    from minimlir.dialects import graph
    from minimlir.passes.graph.lift_params import PARAMS_OF

    out: dict[str, int] = {}
    for fn in module.ops:
        if not isinstance(fn, func.FuncOp) or (PARAMS_OF in fn.attributes) != lifted:
            continue
        for op in fn.walk():
            if isinstance(op, graph.CallKernelOp):
                name = op.callee.root_reference.data if hasattr(op.callee, "root_reference") else str(op.callee)
                out[name] = out.get(name, 0) + 1
    return out


def bind_time_kernels(module: ModuleOp) -> set[str]:
    """Kernels only graph-lift-params' functions call (weights packed once, when bound): not tasks."""
    return set(call_counts(module, lifted=True)) - set(call_counts(module))


def _prefixed(model: Any, params=None, before_winograd=None) -> ModuleOp:
    from minimlir.frontend import api

    ctx = api.make_context()
    loaded = api.load(model, params=params, ctx=ctx)
    module = loaded.module
    if api.graph_level(module):
        api.lower(module, PREFIX, ctx=ctx, name=loaded.name, source_text=loaded.text,
                  before={"graph-winograd": before_winograd} if before_winograd else None)
    return module


def _static_onnx(model: Any, dims: dict[str, int]):
    """The ONNX model with every named input dim bound (`dims`, default 1); None if not ONNX."""
    import os

    import onnx

    if isinstance(model, onnx.ModelProto):
        proto = onnx.ModelProto()
        proto.CopyFrom(model)
    elif isinstance(model, (str, os.PathLike)) and str(model).endswith(".onnx"):
        proto = onnx.load(str(model))
    else:
        return None
    changed = False
    for inp in proto.graph.input:
        t = inp.type.tensor_type
        for d in t.shape.dim:
            if d.HasField("dim_param") or not d.HasField("dim_value"):
                name = d.dim_param
                d.Clear()
                d.dim_value = int(dims.get(name, dims.get("?", 1)))
                changed = True
    return proto if changed else None


CACHE_FLUSH = ("auto", "on", "off")


def extract_tasks(model: Any, *, dims: dict[str, int] | None = None, params=None,
                  module: ModuleOp | None = None, before_winograd=None, cache_flush: str = "auto") -> list[Task]:
    """The unique kernels of `model` (ONNX path / ModelProto, `.mlir` path or text), heaviest
    (weight x FLOPs) first. `module`: the model already through the prefix (skips loading).
    `before_winograd(module)`: called before graph-winograd (the tuner stamps its conv algorithm
    choices there, tuning/algorithms.py, so the kernels are those a compile with the database has).
    `cache_flush`: auto | on | off, which tasks get `cold_args` (the module docstring)."""
    dims = dict(dims or {})
    module = module if module is not None else _prefixed(model, params, before_winograd)
    weights, weight_bytes = param_args(module)
    cold = weights_cold(cache_flush, weight_bytes)
    twins: dict[str, func.FuncOp] = {}
    static = _static_onnx(model, dims) if module is not None else None
    if static is not None:
        twins = {k.sym_name.data: k for k in kernels_of(_prefixed(static, before_winograd=before_winograd))}
    counts = call_counts(module)
    once = bind_time_kernels(module)
    at_calls = call_site_shapes(module, dims, twins)
    tasks: dict[str, Task] = {}
    for k in kernels_of(module):
        name = k.sym_name.data
        if name in once:
            continue
        key = structural_key(k)
        if key in tasks:
            tasks[key].weight += counts.get(name, 1)
            if cold:
                tasks[key].cold_args = sorted(set(tasks[key].cold_args) & weights.get(name, set()))
            continue
        types = list(k.function_type.inputs.data)
        # the shapes the model calls it with at these dims (exact), else the twin's, else ? -> 1
        shapes = at_calls.get(name) or _twin_shapes(types, twins.get(name), dims)
        dtypes = [_np_dtype(t.get_element_type()) for t in types]
        task = Task(key=key, name=name, kernel_text=_standalone(k), shapes=shapes, dtypes=dtypes,
                    num_outputs=_num_outputs(module, name), weight=counts.get(name, 1))
        _fill_analysis(task)
        if cold:
            task.cold_args = sorted(weights.get(name, set()))
        tasks[key] = task
    return sorted(tasks.values(), key=lambda t: -t.weight * max(t.flops, 1.0))


def weights_cold(cache_flush: str, weight_bytes: int) -> bool:
    """Whether a model with `weight_bytes` of parameters is timed with cold weights under
    `cache_flush` (auto: when they exceed the last-level cache)."""
    if cache_flush not in CACHE_FLUSH:
        raise ValueError(f"cache_flush must be one of {', '.join(CACHE_FLUSH)}, not {cache_flush!r}")
    return cache_flush == "on" or (cache_flush == "auto" and weight_bytes > last_level_cache_bytes())


def param_args(module: ModuleOp) -> tuple[dict[str, set[int]], int]:
    """Per kernel, the arguments that are parameters (`graph.param` / `graph.constant` results) at
    every call site of the model's functions; and the bytes of all parameters those functions use."""
    import math

    import numpy as np
    from xdsl.dialects.builtin import TensorType

    from minimlir.dialects import graph
    from minimlir.passes.graph.lift_params import PARAMS_OF

    out: dict[str, set[int]] = {}
    seen: set[int] = set()
    total = 0
    for fn in module.ops:
        if not isinstance(fn, func.FuncOp) or PARAMS_OF in fn.attributes:
            continue
        for op in fn.walk():
            if isinstance(op, (graph.ParamOp, graph.ConstantOp)) and id(op) not in seen:
                seen.add(id(op))
                t = op.results[0].type
                if isinstance(t, TensorType) and all(d >= 0 for d in t.get_shape()):
                    total += math.prod(t.get_shape()) * np.dtype(_np_dtype(t.get_element_type())).itemsize
            elif isinstance(op, graph.CallKernelOp):
                name = op.callee.root_reference.data
                here = {i for i, a in enumerate(op.args) if isinstance(a.owner, (graph.ParamOp, graph.ConstantOp))}
                out[name] = out[name] & here if name in out else here
    return out, total


def last_level_cache_bytes() -> int:
    """The size of the host's last-level cache (32 MiB when the system does not tell)."""
    from pathlib import Path

    sizes = []  # Linux: one entry per cache level of the first core; the largest is the last level
    for f in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*/size"):
        try:
            txt = f.read_text().strip().upper()
            sizes.append(int(txt[:-1]) * {"K": 1 << 10, "M": 1 << 20}.get(txt[-1], 1) if txt[-1] in "KM" else int(txt))
        except (OSError, ValueError, IndexError):
            continue
    return max(sizes, default=32 << 20)


def _twin_shapes(types: list, twin: func.FuncOp | None, dims: dict[str, int]) -> list[list[int]]:
    """The static twin's argument shapes where its ranks match the kernel's; else every `?` is
    `dims.get("?", 1)`."""
    twin_types = list(twin.function_type.inputs.data) if twin is not None else None
    if twin_types is not None and [len(t.get_shape()) for t in twin_types] != [len(t.get_shape()) for t in types]:
        twin_types = None
    srcs = twin_types if twin_types is not None else types
    return [[d if d >= 0 else int(dims.get("?", 1)) for d in t.get_shape()] for t in srcs]


class _Env(dict):
    """Symbol values for `dims`: a named dim (an ONNX dim_param) or an unnamed one ("?"), default 1;
    a value read from tensor data (an opaque symbol) has none (KeyError)."""

    def __init__(self, dims: dict[str, int]):
        super().__init__()
        self.bound = dims

    def __missing__(self, name: str) -> int:
        from minimlir.passes.graph._symbolic_dims import OPAQUE

        if name.startswith(OPAQUE):
            raise KeyError(name)
        return int(self.bound.get(name, self.bound.get("?", 1)))


def _twin_args(kernel: func.FuncOp, twin: func.FuncOp | None) -> list[list[int] | None] | None:
    """Per argument, the twin's shape where it can be this argument bound (same rank, the same size
    wherever the kernel's dim is static; a weight the twin packed differently is None); None when
    the arity differs."""
    if twin is None:
        return None
    ks = [list(t.get_shape()) for t in kernel.function_type.inputs.data]
    ts = [list(t.get_shape()) for t in twin.function_type.inputs.data]
    if len(ks) != len(ts):
        return None
    return [b if len(a) == len(b) and all(d < 0 or d == e for d, e in zip(a, b)) else None for a, b in zip(ks, ts)]


def call_site_shapes(module: ModuleOp, dims: dict[str, int],
                     twins: dict[str, func.FuncOp] | None = None) -> dict[str, list[list[int]]]:
    """Each kernel with a dynamic argument -> its arguments' shapes (the call's args, then one output
    buffer per result) at its first call site that can be sized: graph-infer-dims' symbolic dims
    evaluated at `dims`. A dim read from tensor data (an opaque symbol: a Shape op's value, say)
    takes its size from the kernel's static twin (`twins`: the same model imported with the dims
    bound), the same size wherever the same expression recurs; a call with such a dim and no
    matching twin is not sized here (extract_tasks falls back further)."""
    from minimlir.dialects import graph
    from minimlir.passes.graph._symbolic_dims import FunctionDims
    from minimlir.passes.graph.lift_params import PARAMS_OF

    twins = twins or {}
    dynamic = {k.sym_name.data: k for k in kernels_of(module)
               if any(d < 0 for t in k.function_type.inputs.data for d in t.get_shape())}
    out: dict[str, list[list[int]]] = {}
    env = _Env(dims)
    for fn in module.ops:
        if (not isinstance(fn, func.FuncOp) or not fn.body.blocks or len(fn.body.blocks) != 1
                or fn.sym_name.data in dynamic or PARAMS_OF in fn.attributes):
            continue
        calls = [op for op in fn.body.block.ops if isinstance(op, graph.CallKernelOp)
                 and op.callee.root_reference.data in dynamic and op.callee.root_reference.data not in out]
        if not calls:
            continue
        try:
            fd = FunctionDims(fn)
        except Exception:  # noqa: BLE001 - a function the analysis does not cover: the fallback applies
            continue
        for op in calls:
            name = op.callee.root_reference.data
            if name in out:
                continue
            kernel = dynamic[name]
            types = [list(t.get_shape()) for t in kernel.function_type.inputs.data]
            values = list(op.args) + list(op.outputs)
            if len(values) != len(types):
                continue
            twin = _twin_args(kernel, twins.get(name))
            shapes, from_twin, ok = [], {}, True
            for i, v in enumerate(values):
                row = []
                tw = twin[i] if twin is not None else None
                for j, e in enumerate(fd.shape(v)):
                    try:
                        size = e.evaluate(env)
                        if tw is not None and tw[j] != size:  # the twin is not this kernel bound
                            twin, tw = None, None
                    except (KeyError, ZeroDivisionError):
                        size = tw[j] if tw is not None else -1
                        if size < 0 or from_twin.setdefault(e, size) != size:
                            ok = False
                            break
                    row.append(size)
                if not ok:
                    break
                shapes.append(row)
            if ok and all(len(sh) == len(t) and all(d < 0 or d == c for d, c in zip(t, sh)) and min(sh, default=0) >= 0
                          for sh, t in zip(shapes, types)):
                out[name] = shapes
    return out


def _np_dtype(t) -> str:
    from minimlir.frontend._onnx_base import numpy_dtype_of  # no onnx import for a .mlir model

    return str(numpy_dtype_of(t))


def _num_outputs(module: ModuleOp, name: str) -> int:
    from minimlir.dialects import graph

    for op in module.walk():
        if isinstance(op, graph.CallKernelOp) and op.callee.root_reference.data == name:
            return len(op.results)
    return 1


def _standalone(kernel: func.FuncOp) -> str:
    from minimlir.frontend.api import ir_text

    return ir_text(kernel)


def kernel_module(task: Task, assignment: dict | None = None) -> ModuleOp:
    """A module holding only the task's kernel (with `assignment` attached)."""
    from minimlir.frontend.api import parse_mlir
    from minimlir.passes.loop.schedule.default.knobs import set_assignment

    m = parse_mlir("builtin.module {\n" + task.kernel_text + "}\n", f"<task {task.name}>")
    if assignment is not None:
        set_assignment(kernels_of(m)[0], assignment)
    return m


def _fill_analysis(task: Task) -> None:
    """FLOPs (on the concrete shapes) and the default schedule's trace: rule, knob values, facts."""
    from minimlir.passes.loop.schedule.default import ScheduleConfig, schedule_module
    from minimlir.passes.loop.schedule.default.knobs import tracing
    from minimlir.tuning.features import count_flops

    m = kernel_module(task)
    k = kernels_of(m)[0]
    task.flops_by_kind = count_flops(k, task.shapes)
    task.flops = float(sum(v for kd, v in task.flops_by_kind.items() if kd not in ("int", "cmp")))
    with tracing() as traces:
        schedule_module(m, ScheduleConfig.for_host())
    tr = traces[0][1]
    task.rule, task.defaults, task.facts = tr.rule, dict(tr.values), dict(tr.facts)


def dumps(tasks: list[Task]) -> str:
    return json.dumps([t.to_json() for t in tasks])
