"""One part of a split LLVM module -> object code, in a child process (see jit.compile_split).

    python -m minimlir.backend._llvm_worker TRIPLE CPU FEATURES OPT_LEVEL [pic]  < part.ll  > part.o

Imports only llvmlite (starts in a fraction of a second). The target machine and the -O pipeline
are exactly backend/_target.py's and backend/jit.py's `optimize`, so a part compiles to the code
the whole module would have had for it. Writes the object, then the optimized IR, each preceded by
its length (8 bytes, little endian).
"""

from __future__ import annotations

import sys

import llvmlite.binding as llvm


def compile_part(ir_text: str, triple: str, cpu: str, features: str, opt_level: int,
                 pic: bool = False) -> tuple[bytes, str]:
    """`pic`: position-independent code for a shared library, any target LLVM has (an artifact,
    backend/_target.py `machine_for`); else the JIT's host target machine."""
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    llvm.initialize_native_asmparser()
    if pic:
        llvm.initialize_all_targets()
        llvm.initialize_all_asmprinters()
    target = llvm.Target.from_triple(triple)
    if pic:
        tm = target.create_target_machine(cpu=cpu, features=features, opt=opt_level, reloc="pic",
                                          codemodel="default")
    else:
        tm = target.create_target_machine(cpu=cpu, features=features, opt=opt_level, reloc="default",
                                          codemodel="jitdefault", jit=True)
    mod = llvm.parse_assembly(ir_text)
    mod.verify()
    optimize(mod, tm, opt_level)
    return tm.emit_object(mod), str(mod)


def optimize(mod, tm, opt_level: int) -> None:
    """The default O<n> pipeline of the new pass manager, vectorizers on (backend/jit.py `optimize`)."""
    pto = llvm.create_pipeline_tuning_options(speed_level=opt_level)
    pto.loop_vectorization = opt_level >= 2
    pto.slp_vectorization = opt_level >= 2
    pto.loop_unrolling = opt_level >= 2
    pto.loop_interleaving = opt_level >= 2
    pb = llvm.create_pass_builder(tm, pto)
    mpm = pb.getModulePassManager()
    mpm.run(mod, pb)


def main() -> int:
    triple, cpu, features, opt = sys.argv[1:5]
    obj, ir = compile_part(sys.stdin.read(), triple, cpu, features, int(opt), pic=sys.argv[5:6] == ["pic"])
    out = sys.stdout.buffer
    data = ir.encode()
    out.write(len(obj).to_bytes(8, "little") + obj + len(data).to_bytes(8, "little") + data)
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
