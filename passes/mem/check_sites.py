"""Name every memory access for checked mode: `check.site = {block, node, buffer}`.

Runs right after graph-legalize (the checked pipelines put it there, see passes/to_llvm/_checks.py), while
each kernel is still one ONNX node and its accesses sit in named `loop.block`s. The names survive
fusion and scheduling on the accesses that are moved or cloned; convert-mem-to-llvm{checks=true}
gives new accesses the names of the other accesses to the same buffer and builds the bounds-check
messages from them (kernel, block, buffer, index values, dims, node).

    %v = mem.load %1[%i] : memref<128xf32> -> f32
  ->
    %v = mem.load %1[%i] {check.site = {block = "add", buffer = "weight 'fc1.bias'", node = "fc1"}}
           : memref<128xf32> -> f32

`node` is the access's own `loc("Node"(…))`, else its block's, else its kernel's; `buffer` is
what the kernel's caller passes there: a model input, a weight, the output of a node, or a local
buffer. Accesses that already carry the attribute are left alone (hand-written names win).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, NameLoc, StringAttr
from xdsl.ir import BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass

from minimlir.dialects import graph, loop, mem
from minimlir.dialects.loop import is_kernel
from minimlir.passes.to_llvm._checks import SITE_ATTR, location_name, set_site


def _arg_name(f: func.FuncOp, index: int) -> str | None:
    attrs = f.arg_attrs
    if attrs is None or index >= len(attrs.data):
        return None
    name = attrs.data[index].data.get("graph.name")
    return name.data if isinstance(name, StringAttr) else None


class _Namer:
    def __init__(self, module: ModuleOp):
        self.calls: dict[str, list[Operation]] = {}  # callee -> call ops (call_kernel and func.call)
        for op in module.walk():
            if isinstance(op, graph.CallKernelOp | func.CallOp):
                self.calls.setdefault(op.callee.string_value(), []).append(op)

    def value(self, v: SSAValue, depth: int = 0) -> str:
        """What a graph-level value is, for a message: input 'x', weight 'w', output of node 'n'."""
        if isinstance(v, BlockArgument):
            f = v.block.parent_op()
            if isinstance(f, func.FuncOp):
                name = _arg_name(f, v.index)
                if name:
                    return f"input '{name}'"
                calls = self.calls.get(f.sym_name.data, [])
                if calls and depth < 8:
                    return self.value(calls[0].operands[v.index], depth + 1)
            return f"%{v.name_hint}" if v.name_hint else f"argument #{v.index}"
        owner = v.owner
        if isinstance(owner, graph.ParamOp):
            return f"weight '{owner.param_name.data}'"
        if isinstance(owner, graph.ConstantOp):
            return "a constant"
        node = location_name(owner.location) if isinstance(owner.location, NameLoc) else ""
        if node:
            return f"output of node '{node}'"
        return f"%{v.name_hint}" if v.name_hint else f"the result of {owner.name}"

    def kernel_args(self, k: func.FuncOp, node: str) -> list[str]:
        n_args = len(k.function_type.inputs.data)
        calls = self.calls.get(k.sym_name.data, [])
        params = k.body.blocks[0].args
        names: list[str] = []
        if calls:
            call = calls[0]
            ins = list(call.args) if isinstance(call, graph.CallKernelOp) else list(call.operands)
            for i in range(n_args):
                if i < len(ins):
                    names.append(self.value(ins[i]))
                else:
                    out = i - len(ins)
                    what = f"output of node '{node}'" if node else "the kernel's output"
                    names.append(what if len(call.results) == 1 else f"{what} #{out}")
        for i in range(len(names), n_args):
            names.append(f"argument #{i}")
        for i, a in enumerate(params):  # the kernel's own name for the argument, when it has one
            if a.name_hint and i < len(names) and f"%{a.name_hint}" != names[i]:
                names[i] = f"%{a.name_hint} ({names[i]})" if not names[i].startswith("argument") else f"%{a.name_hint}"
        return names


def annotate(module: ModuleOp) -> None:
    namer = _Namer(module)
    for f in module.walk():
        if not isinstance(f, func.FuncOp) or not f.body.blocks:
            continue
        fnode = location_name(f.location) if isinstance(f.location, NameLoc) else ""
        if is_kernel(f):
            calls = namer.calls.get(f.sym_name.data, [])
            if not fnode and calls and isinstance(calls[0].location, NameLoc):
                fnode = location_name(calls[0].location)
            arg_names = namer.kernel_args(f, fnode)
        else:
            arg_names = []
        for op in f.walk():
            if not isinstance(op, mem.LoadOp | mem.StoreOp) or SITE_ATTR in op.attributes:
                continue
            block = op.parent_op()
            while block is not None and not isinstance(block, loop.BlockOp | func.FuncOp):
                block = block.parent_op()
            block_name = block.block_name.data if isinstance(block, loop.BlockOp) else ""
            node = ""
            if isinstance(op.location, NameLoc):
                node = location_name(op.location)
            elif isinstance(block, loop.BlockOp) and isinstance(block.location, NameLoc):
                node = location_name(block.location)
            node = node or fnode or location_name(op.location) or location_name(f.location)
            buf = op.memref
            if isinstance(buf, BlockArgument) and buf.block is f.body.blocks[0] and buf.index < len(arg_names):
                buffer = arg_names[buf.index]
            elif isinstance(buf, BlockArgument) and not is_kernel(f):
                buffer = namer.value(buf)
            else:
                hint = f" %{buf.name_hint}" if buf.name_hint else ""
                buffer = f"local buffer{hint} of kernel @{f.sym_name.data}"
            set_site(op, {"block": block_name, "node": node, "buffer": buffer})


@dataclass(frozen=True)
class MemCheckSitesPass(ModulePass):
    """Name every mem.load/mem.store for checked mode (kernel block, ONNX node, buffer)."""

    name = "mem-check-sites"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        annotate(op)
