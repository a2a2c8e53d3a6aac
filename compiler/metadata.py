"""The runtime's view of a mem-level module, read right before convert-mem-to-llvm expands the
memref signatures into the native ABI (passes/to_llvm/_memref_abi.py): per public function its
arguments (name, dtype, shape with None for `?`, dim names, params) and results. The JIT wraps
native functions with it; compile() and the AOT artifact store it.

    {"version": 1, "functions": {"main": {"abi": "entry", "args": [...], "results": [...]}}}
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, MemRefType, ModuleOp, StringAttr
from xdsl.ir import Attribute

from minimlir.compiler.errors import InputError
from minimlir.passes.graph._symbolic_dims import checks_of
from minimlir.passes.graph.lift_params import PARAMS_OF
from minimlir.passes.to_llvm._memref_abi import (
    PARAM_ATTR,
    is_entry,
    is_public,
    numpy_dtype_name,
    shape_list,
)

METADATA_VERSION = 1


def _attr_str(d: Mapping[str, Attribute] | None, key: str) -> str | None:
    if d is None:
        return None
    v = d.get(key)
    return v.data if isinstance(v, StringAttr) else None


def _scalar_dtype(t: Attribute) -> str:
    return numpy_dtype_name(t)


def function_metadata(f: func.FuncOp) -> dict[str, Any]:
    """The runtime's view of one mem-level function (see the module docstring)."""
    ftype = f.function_type
    arg_attrs = [d.data for d in f.arg_attrs.data] if f.arg_attrs is not None else None
    res_attrs = [d.data for d in f.res_attrs.data] if f.res_attrs is not None else None
    block_args = f.body.blocks[0].args if f.body.blocks else ()
    args: list[dict[str, Any]] = []
    for k, t in enumerate(ftype.inputs.data):
        d = arg_attrs[k] if arg_attrs is not None else None
        name = _attr_str(d, "graph.name") or (
            block_args[k].name_hint if k < len(block_args) and block_args[k].name_hint else None
        )
        entry: dict[str, Any] = {"name": name or f"arg{k}", "param": _attr_str(d, PARAM_ATTR)}
        if isinstance(t, MemRefType):
            names = d.get("graph.dim_names") if d is not None else None
            entry.update(
                kind="memref",
                dtype=numpy_dtype_name(t.element_type),
                shape=shape_list(t),
                dim_names=[s.data for s in names.data] if isinstance(names, ArrayAttr) else None,
            )
        else:
            entry.update(kind="scalar", dtype=_scalar_dtype(t), shape=[], dim_names=None)
        args.append(entry)
    results: list[dict[str, Any]] = []
    for i, t in enumerate(ftype.outputs.data):
        d = res_attrs[i] if res_attrs is not None else None
        r: dict[str, Any] = {"name": _attr_str(d, "graph.name") or f"result{i}"}
        if isinstance(t, MemRefType):
            r.update(kind="memref", dtype=numpy_dtype_name(t.element_type), shape=shape_list(t))
        else:
            r.update(kind="scalar", dtype=_scalar_dtype(t), shape=[])
        results.append(r)
    abi = "entry" if is_entry(f) else "plain"
    if abi == "plain" and len(results) > 1:
        raise InputError(
            f"function @{f.sym_name.data}: several scalar results are not supported by the runtime"
        )
    meta: dict[str, Any] = {"abi": abi, "args": args, "results": results}
    if PARAMS_OF in f.attributes:  # graph-lift-params: computes these lifted params of that function
        meta["params_of"] = f.attributes[PARAMS_OF].data  # type: ignore[attr-defined]
    if checks := checks_of(f):
        meta["dim_checks"] = checks  # symbolic constraints on the inputs' dims (graph-infer-dims)
    return meta


def collect_metadata(module: ModuleOp, entry: str | Sequence[str] | None = None) -> dict[str, Any]:
    """Metadata of the public functions of a mem-level module (or only those named in `entry`)."""
    wanted = [entry] if isinstance(entry, str) else list(entry) if entry is not None else None
    functions: dict[str, Any] = {}
    for op in module.ops:
        if isinstance(op, func.FuncOp) and op.body.blocks and is_public(op):
            name = op.sym_name.data
            of = op.attributes.get(PARAMS_OF)
            if wanted is None or name in wanted or (isinstance(of, StringAttr) and of.data in wanted):
                functions[name] = function_metadata(op)
    for name in wanted or ():
        if name not in functions:
            raise InputError(f"no public function @{name} in the module")
    return {"version": METADATA_VERSION, "functions": functions}
