"""graph-legalize (TVM's LegalizeOps): every graph op becomes a loop kernel, called with
graph.call_kernel (destination passing: the kernel writes into result buffers the caller provides).

    %y = graph.relu %x : tensor<?x4xf32>
  becomes
    %n = graph.dim %x, 0 : tensor<?x4xf32>
    %y = graph.call_kernel @relu_0(%x) dims(%n) : (tensor<?x4xf32>) -> tensor<?x4xf32>
    func.func private @relu_0(%x: memref<?x4xf32>, %y: memref<?x4xf32>) attributes {loop.kernel} {…}

How each op family is legalized lives in the `_legalize_*.py` modules beside this one (each registers
its ops with `@legalizes`, see `_legalize_common.py`); all of them are imported here, so adding a
module adds legalizations. graph.param, graph.constant, graph.dim, graph.reshape and
graph.call_kernel stay: they are the graph-level vocabulary graph-bufferize consumes.
Identical ops (same name, properties and types) share one kernel.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import MemRefType, ModuleOp, TensorType
from xdsl.dialects.builtin import UnregisteredOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from minimlir.dialects import graph, loop
from minimlir.passes._diagnostics import emit_error
from minimlir.passes.loop._kernel_builder import KernelBuilder
from minimlir.passes.graph.legalize._common import LEGALIZATIONS, GraphDims  # noqa: F401 (re-exported)
from minimlir.passes.graph.legalize.unary import legalization_of

# Ops that stay at the graph level after legalization.
# graph.from_dims and graph.extract move index / scalar values between the graph level and
# tensors: kernels take memrefs only, so graph-bufferize lowers them (stores / a load).
KEPT = (
    graph.ParamOp, graph.ConstantOp, graph.DimOp, graph.ReshapeOp, graph.CallKernelOp,
    graph.FromDimsOp, graph.ExtractOp,
)


def _load_legalizations() -> None:
    """Import every op-family module of this package (each adds its ops to LEGALIZATIONS)."""
    for info in pkgutil.iter_modules(__path__):
        if not info.name.startswith("_"):
            importlib.import_module(f"{__name__}.{info.name}")


def as_memref(t: TensorType) -> MemRefType:
    return MemRefType(t.element_type, t.get_shape())


def _op_name(op: Operation) -> str:
    """The op's name, also for ops of unregistered dialects (parsed in generic form)."""
    if isinstance(op, UnregisteredOp):
        return op.op_name.data
    return op.name


def _kernel_name(op: Operation) -> str:
    return op.name.split(".", 1)[1]


@dataclass(frozen=True)
class GraphLegalizePass(ModulePass):
    """Lower every graph op to a loop kernel called through graph.call_kernel."""

    name = "graph-legalize"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from minimlir.passes.graph._symbolic_dims import FunctionDims, broadcast_facts  # (imports this package)

        _load_legalizations()
        kernels: dict[tuple, str] = {}
        used_names = {o.sym_name.data for o in op.ops if isinstance(o, func.FuncOp)}
        graph_funcs = [f for f in op.ops if isinstance(f, func.FuncOp) and not loop.is_kernel(f)]
        for f in graph_funcs:
            # the symbolic dims (graph-infer-dims'; in a fused function from graph-fuse's argument
            # labels): which operand dims equal the result's, for the broadcast plans
            fd = FunctionDims(f) if len(f.body.blocks) == 1 else None
            for g_op in list(f.walk()):
                op_name = _op_name(g_op)
                if not op_name.startswith("graph.") or isinstance(g_op, KEPT):
                    continue
                legalization = legalization_of(g_op)  # unary ops: also what the op declares
                if legalization is None:
                    emit_error(g_op, f"failed to legalize operation '{op_name}'")
                key = legalization.kernel_key(g_op)
                facts = broadcast_facts(g_op, fd) if fd is not None and g_op.parent is f.body.block else ()
                if any(any(r) for r in facts):
                    key = (*key, ("dim_facts", facts))
                dims = GraphDims(g_op)
                tensor_args = [v for v in g_op.operands if isinstance(v.type, TensorType)]
                tensor_args += legalization.extra_args(g_op, dims)
                if key not in kernels:
                    base = _kernel_name(g_op)
                    n = 0
                    while f"{base}_{n}" in used_names:
                        n += 1
                    name = f"{base}_{n}"
                    used_names.add(name)
                    kb = KernelBuilder(
                        name,
                        [as_memref(v.type) for v in tensor_args],
                        [as_memref(r.type) for r in g_op.results],
                    )
                    kb.dim_facts = facts
                    try:
                        legalization.build(g_op, kb)
                    except NotImplementedError as e:
                        emit_error(g_op, f"failed to legalize operation '{g_op.name}': {e}")
                    kernel = kb.finish()
                    kernel.location = g_op.location
                    kernel.attributes.update(legalization.kernel_attributes(g_op))
                    op.body.block.add_op(kernel)
                    kernels[key] = name
                result_dims = [dims.index(d) for d in legalization.result_dims(g_op, dims)]
                call = graph.CallKernelOp(
                    kernels[key], tensor_args, [r.type for r in g_op.results], result_dims
                )
                call.location = g_op.location
                Rewriter.insert_op(call, InsertPoint.before(g_op))
                for old, new in zip(g_op.results, call.results):
                    if fd is not None and isinstance(old.type, TensorType):  # later ops' facts
                        for i in range(old.type.get_num_dims()):
                            fd.dims[(new, i)] = fd.dim(old, i)
                    old.replace_all_uses_with(new)
                g_op.detach()
                g_op.erase()
