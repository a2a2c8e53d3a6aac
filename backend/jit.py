"""JIT: an llvm-dialect `ModuleOp` -> native code in this process.

    module (llvm dialect)
      │ reconcile leftover casts, check that only llvm.* ops remain
      │ xdsl.backend.llvm.convert.convert_module (+ passes/_llvm_ext.py hooks)
      ▼
    LLVM IR text ── parse, verify ── O3 (new pass manager, loop + SLP vectorizer,
      │                               host CPU name + features: AVX2/AVX-512/FMA)
      ▼
    object code (cached on disk, backend/cache.py) ── MCJIT ── function addresses

    cm = compile_module(module)               # opt_level=3, cache=True
    f = cm.get_function("add")                # ctypes callable, signature from llvm.func
    cm.llvm_ir                                # optimized LLVM IR text
    cm.asm()                                  # host assembly
"""

from __future__ import annotations

import ctypes
import os
import threading
from pathlib import Path
from typing import Any

import llvmlite.binding as llvm
from xdsl.backend.llvm.convert import convert_module
from xdsl.dialects import llvm as llvm_d
from xdsl.dialects.builtin import (
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerType,
    ModuleOp,
)
from xdsl.ir import Attribute
from xdsl.utils.exceptions import DiagnosticException

from minimlir.backend import _target, cache as _cache
from minimlir.passes import _llvm_ext
from minimlir.passes._llvm_common import reconcile_casts

_llvm_lock = threading.RLock()


class CompileError(DiagnosticException):
    """The module cannot be turned into native code (non-llvm op left, invalid LLVM IR, …)."""


# ---------------------------------------------------------------- llvm dialect -> LLVM IR


def _checked_copy(module: ModuleOp) -> ModuleOp:
    module = module.clone()
    reconcile_casts(module)
    for op in module.walk():
        if op is module:
            continue
        if not op.name.startswith("llvm."):
            raise CompileError(
                f"cannot compile operation '{op.name}': the module must be fully lowered "
                "to the llvm dialect (run convert-to-llvm)"
            )
    return module


def to_llvm_ir(module: ModuleOp) -> str:
    """Textual LLVM IR (unoptimized) of an llvm-dialect module, with the host triple."""
    module = _checked_copy(module)
    _llvm_ext.install_llvmlite_hooks()
    try:
        ir_module = convert_module(module, fallback_target_triple=_target.host_triple())
    except (NotImplementedError, KeyError, AssertionError, TypeError) as e:
        raise CompileError(f"cannot translate to LLVM IR: {e}") from e
    # xDSL's translation drops the linkage: restore it (internal lets LLVM inline and drop)
    for op in module.ops:
        if isinstance(op, llvm_d.FuncOp) and op.body.blocks:
            linkage = op.linkage.linkage.data
            if linkage in ("internal", "private"):
                ir_module.get_global(op.sym_name.data).linkage = linkage
    return str(ir_module)


def check_symbols(mod: llvm.ModuleRef) -> None:
    """Every external function the module calls must exist in this process (MCJIT would
    otherwise resolve it to address 0 and the call would crash)."""
    for fn in mod.functions:
        if fn.is_declaration and not fn.name.startswith("llvm."):
            if not llvm.address_of_symbol(fn.name):
                raise CompileError(
                    f"unresolved external function '{fn.name}' (not in this process or libm)"
                )


def parse_ir(ir_text: str) -> llvm.ModuleRef:
    _target.init_llvm()
    try:
        mod = llvm.parse_assembly(ir_text)
        mod.verify()
    except RuntimeError as e:
        raise CompileError(f"invalid LLVM IR: {e}") from e
    return mod


def optimize(mod: llvm.ModuleRef, tm: llvm.TargetMachine, opt_level: int = 3) -> None:
    """Run the default O<n> pipeline of the new pass manager, vectorizers on."""
    pto = llvm.create_pipeline_tuning_options(speed_level=opt_level)
    pto.loop_vectorization = opt_level >= 2
    pto.slp_vectorization = opt_level >= 2
    pto.loop_unrolling = opt_level >= 2
    pto.loop_interleaving = opt_level >= 2
    pb = llvm.create_pass_builder(tm, pto)
    mpm = pb.getModulePassManager()
    mpm.run(mod, pb)


# ---------------------------------------------------------------- ctypes signatures


def _ctype(t: Attribute) -> Any:
    if isinstance(t, llvm_d.LLVMVoidType):
        return None
    if isinstance(t, IntegerType):
        return {1: ctypes.c_bool, 8: ctypes.c_int8, 16: ctypes.c_int16, 32: ctypes.c_int32,
                64: ctypes.c_int64}[t.width.data]
    if isinstance(t, Float32Type):
        return ctypes.c_float
    if isinstance(t, Float64Type):
        return ctypes.c_double
    if isinstance(t, Float16Type):
        return ctypes.c_uint16
    if isinstance(t, llvm_d.LLVMPointerType):
        return ctypes.c_void_p
    raise CompileError(f"no ctypes equivalent of {t} (use pointer arguments for vectors/structs)")


def signatures(module: ModuleOp) -> dict[str, llvm_d.LLVMFunctionType]:
    """Function types of the functions defined in `module` with external linkage."""
    return {
        op.sym_name.data: op.function_type
        for op in module.ops
        if isinstance(op, llvm_d.FuncOp)
        and op.body.blocks
        and op.linkage.linkage.data not in ("internal", "private")
    }


class CompiledModule:
    """Native code for one module, alive as long as this object (or a function from it) is."""

    def __init__(
        self,
        engine: llvm.ExecutionEngine,
        sigs: dict[str, llvm_d.LLVMFunctionType],
        llvm_ir: str,
        tm: llvm.TargetMachine,
        *,
        cache_hit: bool = False,
        keepalive: tuple[Any, ...] = (),
    ):
        self._engine = engine
        self._sigs = sigs
        self._tm = tm
        self._keepalive = keepalive
        self.llvm_ir = llvm_ir
        self.cache_hit = cache_hit

    @property
    def function_names(self) -> list[str]:
        return list(self._sigs)

    def address(self, name: str) -> int:
        with _llvm_lock:
            addr = self._engine.get_function_address(name)
        if not addr:
            raise KeyError(f"no function '{name}' in the compiled module")
        return addr

    def get_function(self, name: str) -> Any:
        """A ctypes callable for `name`, typed from its llvm.func signature."""
        if name not in self._sigs:
            raise KeyError(f"no function '{name}' in the compiled module (have: {', '.join(self._sigs)})")
        ft = self._sigs[name]
        proto = ctypes.CFUNCTYPE(_ctype(ft.output), *[_ctype(t) for t in ft.inputs.data])
        fn = proto(self.address(name))
        fn._minimlir_owner = self  # keep the engine (and the code) alive
        return fn

    def asm(self) -> str:
        """Host assembly of the optimized module."""
        with _llvm_lock:
            return self._tm.emit_assembly(parse_ir(self.llvm_ir))


def _engine_from_object(obj: bytes, tm: llvm.TargetMachine) -> llvm.ExecutionEngine:
    empty = llvm.parse_assembly("")
    empty.triple = _target.host_triple()
    engine = llvm.create_mcjit_compiler(empty, tm)
    engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
    engine.finalize_object()
    return engine


def compile_module(
    module: ModuleOp,
    opt_level: int = 3,
    cache: bool | str | os.PathLike[str] = True,
) -> CompiledModule:
    """Compile an llvm-dialect module for the host CPU and load it with MCJIT.

    `cache`: True (the default folder: $MINIMLIR_CACHE_DIR or ~/.cache/minimlir), False,
    or a folder. A hit skips LLVM optimization and code generation entirely."""
    sigs = signatures(module)
    ir_text = to_llvm_ir(module)
    with _llvm_lock:
        tm = _target.target_machine(opt_level)
        if cache is False:
            mod = parse_ir(ir_text)
            check_symbols(mod)
            optimize(mod, tm, opt_level)
            opt_ir = str(mod)
            engine = llvm.create_mcjit_compiler(mod, tm)
            engine.finalize_object()
            return CompiledModule(engine, sigs, opt_ir, tm, keepalive=(mod,))

        directory = _cache.cache_dir(None if cache is True else Path(cache))
        key = _cache.cache_key(ir_text, opt_level)
        entry = _cache.load(directory, key)
        if entry is not None:
            obj, opt_ir = entry
            return CompiledModule(_engine_from_object(obj, tm), sigs, opt_ir, tm, cache_hit=True)
        mod = parse_ir(ir_text)
        check_symbols(mod)
        optimize(mod, tm, opt_level)
        opt_ir = str(mod)
        obj = tm.emit_object(mod)
        _cache.store(directory, key, obj, opt_ir)
        return CompiledModule(_engine_from_object(obj, tm), sigs, opt_ir, tm)


def compile_ir(ir_text: str, opt_level: int = 3) -> llvm.ExecutionEngine:
    """JIT textual LLVM IR (e.g. mlir-translate's output); returns the engine."""
    with _llvm_lock:
        tm = _target.target_machine(opt_level)
        mod = parse_ir(ir_text)
        check_symbols(mod)
        optimize(mod, tm, opt_level)
        engine = llvm.create_mcjit_compiler(mod, tm)
        engine.finalize_object()
        engine._minimlir_module = mod  # type: ignore[attr-defined]
        return engine
