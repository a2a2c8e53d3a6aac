"""AOT: an llvm-dialect module -> an object file or a shared library, loadable without us.

    emit_object(module, "k.o")                  # llc-equivalent (PIC, host CPU by default)
    emit_shared_library(module, "libk.so")      # + `cc -shared … -lm`
    ctypes.CDLL("libk.so").axpy(...)            # no llvmlite, no xDSL needed

`cpu="generic", features=""` gives a library that runs on any CPU of the architecture.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from xdsl.dialects.builtin import ModuleOp

from minimlir.backend import _target
from minimlir.backend.jit import CompileError, _llvm_lock, optimize, parse_ir, to_llvm_ir


def object_code(
    module: ModuleOp, opt_level: int = 3, *, cpu: str | None = None, features: str | None = None
) -> bytes:
    """Position-independent object code for `module`, optimized at `opt_level`."""
    ir_text = to_llvm_ir(module)
    from minimlir.backend.checks import is_checked

    if is_checked(ir_text):
        raise CompileError("a module compiled in checked mode (convert-mem-to-llvm{checks=true}) runs only "
                           "in the JIT runtime, which provides its check helpers: compile it without checks")
    with _llvm_lock:
        tm = _target.target_machine(
            opt_level, reloc="pic", codemodel="default", jit=False, cpu=cpu, features=features
        )
        mod = parse_ir(ir_text)
        optimize(mod, tm, opt_level)
        return tm.emit_object(mod)


def emit_object(module: ModuleOp, path: str | os.PathLike[str], opt_level: int = 3, **target) -> Path:
    path = Path(path)
    path.write_bytes(object_code(module, opt_level, **target))
    return path


def emit_shared_library(
    module: ModuleOp, path: str | os.PathLike[str], opt_level: int = 3, **target
) -> Path:
    """Compile `module` and link it into a shared library with the system C compiler."""
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        raise CompileError("no C compiler (cc/gcc/clang) found to link a shared library")
    path = Path(path)
    with tempfile.TemporaryDirectory() as tmp:
        obj = emit_object(module, Path(tmp) / "module.o", opt_level, **target)
        proc = subprocess.run(
            [cc, "-shared", "-o", str(path), str(obj), "-lm"], capture_output=True, text=True
        )
        if proc.returncode != 0:
            raise CompileError(f"linking {path} failed:\n{proc.stderr}")
    return path
