"""mini-compile: a model -> one deployable shared object, run later without the compiler.

    mini-compile model.onnx -o model.so                   # weights embedded up to 64 MiB, else model.params
    mini-compile model.onnx -o model.so --weights separate
    mini-compile model.mlir -o model.so --cpu generic     # any x86-64 CPU (SSE2)
    mini-compile model.onnx -o model.so --target aarch64-linux-gnu   # cross: Debian's gcc-aarch64-linux-gnu
    mini-compile model.onnx -o model.so --emit-header     # + model.h, the C interface

Run it with `minimlir.runtime.load("model.so")` (numpy + ctypes only) or from C (model.h,
examples/c/main.c). The artifact's format is described in backend/artifact.py. Exit code 1 with a
one-line error for a bad model, bad options or a failing C compiler.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from pathlib import Path


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="mini-compile", description=__doc__.splitlines()[0])
    p.add_argument("model", help="the .onnx or graph-level .mlir file")
    p.add_argument("-o", "--output", required=True, help="the shared object to write (model.so)")
    p.add_argument("--weights", choices=("auto", "embed", "separate"), default="auto",
                   help="embed: in the .so's .rodata; separate: <output stem>.params beside it, mapped at "
                        "load time; auto (default): embed up to 64 MiB of weights")
    p.add_argument("--cpu", default=None,
                   help="host (this machine's CPU and features: the default for the host's architecture), "
                        "generic (the architecture's baseline: the default for another one) or a CPU name "
                        "(x86-64-v3, skylake-avx512, neoverse-n1, ...)")
    p.add_argument("--target", default=None,
                   help="target triple: x86_64-linux-gnu (default: the host's) or aarch64-linux-gnu")
    p.add_argument("--emit-header", action="store_true", help="also write <output stem>.h (the C interface)")
    p.add_argument("--tuning-db", default=None, help="a tuning record database (mini-tune) to schedule with")
    p.add_argument("--params", default=None, help="weights of a .mlir model (default: its graph.params_file)")
    p.add_argument("--entry", default=None, help="the function to export (default: main / the only one)")
    p.add_argument("--no-cache", action="store_true", help="do not use the compile cache")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    prog = "mini-compile"
    from minimlir.backend._target import TargetError
    from minimlir.backend.artifact import ArtifactError
    from minimlir.frontend.build import build
    from minimlir.frontend.api import CompileError, InputError, OnnxImportError, UnsupportedModelError

    try:
        if not Path(args.model).is_file():
            raise FileNotFoundError(f"{args.model}: no such file")
        info = build(args.model, args.output, weights=args.weights, cpu=args.cpu, target=args.target,
                     tuning_db=args.tuning_db, emit_header=args.emit_header, params=args.params,
                     entry=args.entry, cache=not args.no_cache)
    except CompileError as e:
        sys.stderr.write(f"{str(e).strip()}\n")
        return 1
    except UnsupportedModelError as e:
        sys.stderr.write(f"{prog}: error: {str(e).rstrip()}\n")
        return 1
    except (ArtifactError, TargetError, InputError, OnnxImportError, FileNotFoundError, OSError) as e:
        sys.stderr.write(f"{prog}: error: {str(e).strip()}\n")
        return 1
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # a compiler bug: one line, the traceback on request
        if os.environ.get("MINIMLIR_TRACEBACK") == "1":
            traceback.print_exc()
        first = str(e).strip().splitlines()[0] if str(e).strip() else ""
        sys.stderr.write(f"{prog}: error: {type(e).__name__}: {first}\n")
        return 1
    where = f" + {info.params_path}" if info.params_path else ""
    header = f", header {info.header_path}" if info.header_path else ""
    target = info.metadata["target"]
    print(f"wrote {info.path}{where} (weights {info.weights}, {info.params_bytes} bytes; "
          f"{target['triple']}, cpu {target['cpu']}{header})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
