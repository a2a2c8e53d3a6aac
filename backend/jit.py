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

Large modules are compiled in parts (`compile_split`, used by the runtime's compile path): the
functions are grouped (a kernel with the parallel bodies it references stays together; the entry
functions are a group of their own), the groups are packed into one part per core by size, and the
parts are optimized and code-generated at once, one in this process and the others in child
processes (backend/_llvm_worker.py: llvmlite's C API calls hold one process-wide lock, so threads
would not run in parallel; a part whose child fails is compiled here). MINIMLIR_LLVM_JOBS=n sets the
number of parts (1: no split; default: the cores this process may use). All objects are loaded into
one MCJIT engine. A function called from
another part gets external linkage there (so it is no longer inlined across parts); the code of
every function is otherwise what the whole module gives.
"""

from __future__ import annotations

import ctypes
import os
import re
import subprocess
import sys
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

from minimlir.backend import _target, cache as _cache, parallel
from minimlir.compiler.errors import CompileError
from minimlir.dialects import llvm_ext as _llvm_ext
from minimlir.passes.to_llvm._common import reconcile_casts
from minimlir.runtime._malloc import keep_pages

_llvm_lock = threading.RLock()


# CompileError (minimlir.compiler.errors): the module cannot be turned into native code (non-llvm op
# left, invalid LLVM IR, …); the same class frontend.compile raises.

# ---------------------------------------------------------------- llvm dialect -> LLVM IR


def _checked_copy(module: ModuleOp, copy: bool = True) -> ModuleOp:
    if copy:
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


def to_llvm_ir(module: ModuleOp, copy: bool = True) -> str:
    """Textual LLVM IR (unoptimized) of an llvm-dialect module, with the host triple.
    `copy=False` folds leftover casts in `module` itself instead of in a clone (for callers that
    own the module and drop it afterwards: saves a clone of the whole module)."""
    module = _checked_copy(module, copy)
    _llvm_ext.install_llvmlite_hooks()
    try:
        ir_module = convert_module(module, fallback_target_triple=_target.host_triple())
    except (NotImplementedError, KeyError, AssertionError, TypeError) as e:
        raise CompileError(f"cannot translate to LLVM IR: {e}") from e
    # xDSL's translation drops the linkage and `no_inline`: restore them (internal lets LLVM inline and drop)
    for op in module.ops:
        if isinstance(op, llvm_d.FuncOp) and op.body.blocks:
            linkage = op.linkage.linkage.data
            if linkage in ("internal", "private"):
                ir_module.get_global(op.sym_name.data).linkage = linkage
            if op.no_inline is not None:  # a kernel (passes/to_llvm/func.py says why)
                ir_module.get_global(op.sym_name.data).attributes.add("noinline")
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


_DECLARE = re.compile(r'^declare\s+.*?@("(?:[^"\\]|\\.)*"|[-\w.$]+)\(', re.M)
_EXTERNAL_GLOBAL = re.compile(r'^@("(?:[^"\\]|\\.)*"|[-\w.$]+)\s*=\s*external\s', re.M)


def declared_symbols(ir_text: str) -> tuple[list[str], list[str]]:
    """(declared functions other than llvm.* intrinsics, declared global variables) of LLVM IR text."""

    def unquote(name: str) -> str:
        return name[1:-1] if name.startswith('"') else name

    functions = [unquote(n) for n in _DECLARE.findall(ir_text)]
    return [f for f in functions if not f.startswith("llvm.")], [unquote(n) for n in _EXTERNAL_GLOBAL.findall(ir_text)]


def check_symbol_names(functions: list[str]) -> None:
    """check_symbols for function names (from `declared_symbols`)."""
    _target.init_llvm()
    for name in functions:
        if not llvm.address_of_symbol(name):
            raise CompileError(f"unresolved external function '{name}' (not in this process or libm)")


def parse_ir(ir_text: str) -> llvm.ModuleRef:
    _target.init_llvm()
    try:
        mod = llvm.parse_assembly(ir_text)
        mod.verify()
    except RuntimeError as e:
        raise CompileError(f"invalid LLVM IR: {e}") from e
    return mod


def optimize(mod: llvm.ModuleRef, tm: llvm.TargetMachine, opt_level: int = 3) -> None:
    """Run the default O<n> pipeline of the new pass manager, vectorizers on (the one the split
    compile's worker processes run: backend/_llvm_worker.py)."""
    from minimlir.backend._llvm_worker import optimize as run_pipeline

    run_pipeline(mod, tm, opt_level)


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
        self.timings: dict[str, float] = {}  # filled by the runtime's compile path
        parallel.ensure_pinned()  # code that may run parallel loops is loaded (not at compile time)
        keep_pages()  # buffers keep their pages between calls (runtime/_malloc.py)

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
        """Host assembly of the optimized module (of each part, for a split compile)."""
        with _llvm_lock:
            return "".join(self._tm.emit_assembly(parse_ir(part)) for part in self.llvm_ir.split(PART_MARKER))


def _engine_from_object(obj: bytes | list[bytes], tm: llvm.TargetMachine) -> llvm.ExecutionEngine:
    empty = llvm.parse_assembly("")
    empty.triple = _target.host_triple()
    engine = llvm.create_mcjit_compiler(empty, tm)
    for o in unpack_objects(obj) if isinstance(obj, bytes) else obj:
        engine.add_object_file(llvm.ObjectFileRef.from_data(o))
    engine.finalize_object()
    return engine


# ---------------------------------------------------------------- split compilation

PART_MARKER = "\n; ---- minimlir: next part ----\n"
_OBJS_MAGIC = b"MMLOBJS1"
SPLIT_MIN_BYTES = 300_000
"""Modules with less LLVM IR text than this compile in one piece (a child process costs ~0.3 s)."""

_DEFINE = re.compile(r'define\s+(?:(internal|private)\s+)?.*?@("(?:[^"\\]|\\.)*"|[-\w.$]+)\(')
_SYMBOL = re.compile(r'@("(?:[^"\\]|\\.)*"|[-\w.$]+)')


def pack_objects(objs: list[bytes]) -> bytes:
    """Several object files as one blob (one cache entry); a single object stays as it is."""
    if len(objs) == 1:
        return objs[0]
    return _OBJS_MAGIC + b"".join(len(o).to_bytes(8, "little") + o for o in objs)


def unpack_objects(blob: bytes) -> list[bytes]:
    if not blob.startswith(_OBJS_MAGIC):
        return [blob]
    objs, pos = [], len(_OBJS_MAGIC)
    while pos < len(blob):
        n = int.from_bytes(blob[pos : pos + 8], "little")
        objs.append(blob[pos + 8 : pos + 8 + n])
        pos += 8 + n
    return objs


def split_ir(ir_text: str, parts: int) -> list[str] | None:
    """The module as `parts` modules that together define every function once, or None if it
    cannot be split (a global with a definition that is not an internal constant, odd syntax)."""
    header: list[str] = []
    funcs: dict[str, tuple[str | None, list[str]]] = {}  # name -> (linkage, lines)
    order: list[str] = []
    lines = ir_text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("define "):
            m = _DEFINE.match(line)
            if m is None:
                return None
            body = [line]
            i += 1
            while i < len(lines) and lines[i] != "}":
                body.append(lines[i])
                i += 1
            if i == len(lines):
                return None
            body.append("}")
            funcs[m.group(2)] = (m.group(1), body)
            order.append(m.group(2))
        elif line.startswith("@") and "=" in line and not re.search(r"=\s*external\s", line):
            if not re.search(r"=\s*(internal|private)\s+(unnamed_addr\s+)?constant\s", line):
                return None  # a defined, shared global: it must exist once
            header.append(line)
        else:
            header.append(line)
        i += 1
    if len(order) < 2:
        return None
    refs = {name: {s for ln in body[1:] for s in _SYMBOL.findall(ln) if s in funcs and s != name}
            for name, (_, body) in funcs.items()}
    # Units: internal functions connected by references (a kernel and its parallel bodies); each
    # exported function (the entry points) is a unit of its own, so cutting its calls is allowed.
    parent = {n: n for n in order}

    def find(n: str) -> str:
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    for n in order:
        if funcs[n][0] is None:
            continue
        for r in refs[n]:
            if funcs[r][0] is not None:
                parent[find(r)] = find(n)
    units: dict[str, list[str]] = {}
    for n in order:
        units.setdefault(find(n), []).append(n)
    if len(units) < 2:
        return None
    size = {u: sum(len(ln) for n in ns for ln in funcs[n][1]) for u, ns in units.items()}
    bins: list[list[str]] = [[] for _ in range(min(parts, len(units)))]
    load = [0] * len(bins)
    for u in sorted(units, key=lambda u: -size[u]):
        k = load.index(min(load))
        bins[k].extend(units[u])
        load[k] += size[u]
    where = {n: k for k, b in enumerate(bins) for n in b}
    exported = {r for n in order for r in refs[n] if where[r] != where[n]}
    out = []
    for k, members in enumerate(bins):
        text = list(header)
        wanted = set(members)
        for n in members:
            body = funcs[n][1]
            if n in exported and funcs[n][0] is not None:
                body = [re.sub(r"^define\s+(internal|private)\s+", "define ", body[0], count=1)] + body[1:]
            text.extend(body)
        for r in sorted({r for n in members for r in refs[n]} - wanted):
            head = re.sub(r"^define\s+(?:(?:internal|private)\s+)?", "declare ", funcs[r][1][0], count=1)
            text.append(head)
        out.append("\n".join(text) + "\n")
    return out


def compile_split(ir_text: str, tm: llvm.TargetMachine, opt_level: int, parts: int | None = None,
                  target: Any = None, with_ir: bool = True) -> tuple[list[bytes], str]:
    """Optimize and code-generate `ir_text` in parts in parallel: (objects, optimized IR of the parts
    joined by PART_MARKER). One part (no child process) when the module is small or one core.
    `target`: an artifact's backend/_target.py Target (`tm` is its machine_for): the children make
    position-independent code for it instead of the JIT's host code. `with_ir=False` (one part only):
    no optimized IR text (printing it costs a good share of a small module's codegen), "" instead."""
    if parts is None:
        env = os.environ.get("MINIMLIR_LLVM_JOBS", "")
        if env.isdigit() and int(env) > 0:
            parts = int(env)
        else:
            from minimlir.backend.parallel import cpu_count

            parts = cpu_count()
    pieces = split_ir(ir_text, parts) if parts > 1 and len(ir_text) >= SPLIT_MIN_BYTES else None
    if pieces is None or len(pieces) < 2:
        with _llvm_lock:
            mod = parse_ir(ir_text)
            optimize(mod, tm, opt_level)
            return [tm.emit_object(mod)], str(mod) if with_ir else ""
    cmd = [sys.executable, "-m", "minimlir.backend._llvm_worker", _target.host_triple(), _target.host_cpu(),
           _target.host_features(), str(opt_level)]
    if target is not None:
        cmd[3:6] = [target.triple, target.cpu, target.features]
        cmd.append("pic")
    # the child finds minimlir (and llvmlite) where this process does, installed or not
    child_env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    children = []
    for piece in pieces[1:]:
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=child_env)
        writer = threading.Thread(target=_feed, args=(proc, piece.encode()), daemon=True)
        writer.start()
        children.append((proc, writer))
    results: list[tuple[bytes, str] | None] = [None] * len(pieces)
    try:
        with _llvm_lock:
            mod = parse_ir(pieces[0])
            optimize(mod, tm, opt_level)
            results[0] = (tm.emit_object(mod), str(mod))
    finally:
        for k, (proc, writer) in enumerate(children, start=1):
            writer.join()  # the child reads all of its input before it writes anything
            assert proc.stdout is not None and proc.stderr is not None
            out = proc.stdout.read()
            proc.stderr.read()  # drain it (small: a traceback at most); the part is recompiled here
            proc.wait()
            if proc.returncode != 0 or len(out) < 16:
                # the child could not run (or LLVM rejected the part): compile the part here, so
                # invalid IR raises CompileError as it would without the split
                with _llvm_lock:
                    mod = parse_ir(pieces[k])
                    optimize(mod, tm, opt_level)
                    results[k] = (tm.emit_object(mod), str(mod))
                continue
            n = int.from_bytes(out[:8], "little")
            obj = out[8 : 8 + n]
            m = int.from_bytes(out[8 + n : 16 + n], "little")
            results[k] = (obj, out[16 + n : 16 + n + m].decode())
    assert all(r is not None for r in results)
    return [r[0] for r in results], PART_MARKER.join(r[1] for r in results)  # type: ignore[index]


def _feed(proc: subprocess.Popen, data: bytes) -> None:
    try:
        assert proc.stdin is not None
        proc.stdin.write(data)
        proc.stdin.close()
    except OSError:
        pass


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
