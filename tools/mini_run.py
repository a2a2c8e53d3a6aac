"""mini-run: compile a model (graph-level `.mlir`, llvm-level `.mlir`, or `.onnx`), run it, print the outputs.

    mini-run examples/add_relu.mlir --input x=x.npy --input y='[[1, -2], [3, -4]]'
    mini-run examples/conv_add_relu.mlir --random-inputs --seed 0 --dim batch=2 --benchmark 100
    mini-run model.onnx --random-inputs --output-dir out/ --print-ir-after-all 2> stages.mlir
    mini-run --compare onnxruntime model.onnx --random-inputs --dim batch=2 --rtol 1e-3 --atol 1e-4

Inputs: `--input NAME=FILE.npy`, `--input NAME=LITERAL` (a Python list/number, converted to the input's
dtype), or `--input FILE.npy` (the next input by position). `--random-inputs` fills every input not given
(seeded normal floats, small ints; dynamic dims from `--dim NAME=N` or `--dim INPUT.I=N`, else 1).
The default pipeline (`compile`; `graph-to-llvm` if absent) runs unless the file is already in the llvm dialect.

Output, per result: a header line `NAME: DTYPE[D0, D1, ...] min=... max=... mean=...` (no statistics for
empty tensors, bool counts `true=K`), then the values as NumPy prints them (summarised past 64 elements).
`--benchmark N` adds `benchmark: N runs, median X ms, min Y ms` (after one warm-up run).
`--compare onnxruntime` (ONNX models) runs the model on minimlir and on ONNX Runtime, compares every
node output and prints the first node beyond tolerance (name, op, output, shape, max abs/rel error, the
kernel it was fused into), exit code 1; or a one-line summary with the worst error, exit code 0
(minimlir.frontend.compare); with `--checks` and `--tuning-db` every compile of the comparison is checked
and tuned.
Any error (missing file, malformed IR, unknown entry, bad input) is one `error:` line on stderr, exit code 1;
`MINIMLIR_TRACEBACK=1` adds the traceback. `--checks` (or MINIMLIR_CHECKS=1) compiles in checked mode: an
out-of-bounds access or an output holding never-written values is such an error (`CheckError: …`).
"""

from __future__ import annotations

import argparse
import ast
import os
import statistics
import sys
import time
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

import numpy as np


class UsageError(Exception):
    """A bad command line or input value: printed as one `error:` line."""


class _ArgParser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"mini-run: error: {message}\n")
        raise SystemExit(1)


def build_parser() -> argparse.ArgumentParser:
    p = _ArgParser(
        prog="mini-run",
        description="Compile and run a minimlir model (.mlir or .onnx) on NumPy inputs.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 2)[2] if __doc__ else None,
    )
    a = p.add_argument
    a("file", help="model: graph-level or llvm-level .mlir, or .onnx")
    a("--entry", default=None, help="function to run (default: ONNX main / the only public function)")
    a("--input", "-i", action="append", default=[], metavar="NAME=FILE.npy",
      help="an input: NAME=FILE.npy, NAME=LITERAL, or FILE.npy by position (repeatable)")
    a("--random-inputs", action="store_true", help="generate every input not given with --input")
    a("--seed", type=int, default=0, help="seed for --random-inputs (default 0)")
    a("--dim", action="append", default=[], metavar="NAME=N",
      help="size of a dynamic dim for --random-inputs: a dim name (batch=4) or INPUT.INDEX=N (x.0=4)")
    a("--params", default=None, metavar="FILE", help="params file for graph.param weights (.mlir input)")
    a("--output-dir", "-o", default=None, metavar="DIR", help="save each output as DIR/NAME.npy")
    a("--benchmark", type=int, default=0, metavar="N", help="time N runs; print median and min latency")
    a("--num-threads", type=int, default=None, metavar="N", help="threads for parallel loops")
    a("--pipeline", default=None, help="pass pipeline instead of the default (compile)")
    a("--print-ir-after-all", action="store_true", help="print the input IR and the IR after every pass to stderr")
    a("--dump-ir", default=None, metavar="DIR", help="write the IR after every pass to DIR/NN-PASS.mlir")
    a("--no-cache", action="store_true", help="do not use the JIT's disk cache")
    a("--checks", action="store_true",
      help="checked mode: bounds-check every load/store, poison fresh buffers; a fault is an error "
           "naming kernel, block, buffer, indices and ONNX node (also MINIMLIR_CHECKS=1)")
    a("--tuning-db", default=None, metavar="FILE",
      help="apply the best schedules of a mini-tune record database (prints one summary line)")
    a("--quiet", "-q", action="store_true", help="print only the output headers, not the values")
    a("--remarks", action="store_true", help="print the passes' remarks (e.g. mem-plan's peak bytes) to stderr")
    a("--profile", action="store_true", help="time every kernel; print a table per kernel after the outputs")
    a("--profile-json", default=None, metavar="FILE", help="--profile: also write the profile as JSON to FILE")
    a("--profile-png", default=None, metavar="FILE", help="--profile: also write a bar chart of the top kernels")
    a("--compare", default=None, choices=["onnxruntime"], metavar="onnxruntime",
      help="run the .onnx model on minimlir and onnxruntime; print the first node whose output differs")
    a("--rtol", type=float, default=None, metavar="R", help="--compare: relative tolerance (default 1e-3)")
    a("--atol", type=float, default=None, metavar="A", help="--compare: absolute tolerance (default 1e-4)")
    return p


# --------------------------------------------------------------------------------------------
# Inputs


def parse_dims(items: Sequence[str]) -> dict[str, int]:
    dims: dict[str, int] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise UsageError(f"--dim '{item}': expected NAME=N")
        try:
            n = int(value)
        except ValueError:
            raise UsageError(f"--dim '{item}': '{value}' is not an integer") from None
        if n < 0:
            raise UsageError(f"--dim '{item}': a dim cannot be negative")
        dims[name] = n
    return dims


def _read_value(text: str, what: str, dtype: np.dtype | None) -> np.ndarray:
    """FILE.npy, or a Python literal converted to `dtype`."""
    path = Path(text)
    if text.endswith(".npy") or path.is_file():
        if not path.is_file():
            raise UsageError(f"{what}: no such file '{text}'")
        try:
            return np.load(path, allow_pickle=False)
        except Exception as e:
            raise UsageError(f"{what}: cannot read '{text}' as a .npy file ({_one_line(e)})") from None
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        raise UsageError(f"{what}: '{text}' is neither a .npy file nor a literal such as [[1, 2], [3, 4]]") from None
    try:
        return np.asarray(value, dtype=dtype)
    except (TypeError, ValueError) as e:
        raise UsageError(f"{what}: cannot convert '{text}' to {dtype} ({_one_line(e)})") from None


def collect_inputs(specs, items: Sequence[str]) -> dict[str, np.ndarray] | list[np.ndarray]:
    """`--input` values by name (graph-level signature known) or by position (`specs` is None)."""
    if specs is None:
        out: list[np.ndarray] = []
        for item in items:
            name, sep, value = item.partition("=")
            if sep and not Path(item).is_file():
                raise UsageError(f"--input {item}: this module has no input names (llvm level); pass FILE.npy in order")
            out.append(_read_value(item, f"input #{len(out)}", None))
        return out
    by_name = {s.name: s for s in specs}
    given: dict[str, np.ndarray] = {}
    position = 0
    for item in items:
        name, sep, value = item.partition("=")
        if sep and name in by_name:
            spec = by_name[name]
        elif sep and not Path(item).is_file():
            names = ", ".join(by_name) or "none"
            raise UsageError(f"--input {item}: no input named '{name}' (inputs: {names})")
        else:
            value = item
            while position < len(specs) and specs[position].name in given:
                position += 1
            if position >= len(specs):
                raise UsageError(f"--input {item}: too many inputs (the entry takes {len(specs)})")
            spec = specs[position]
        if spec.name in given:
            raise UsageError(f"input '{spec.name}' given twice")
        given[spec.name] = _read_value(value, f"input '{spec.name}'", spec.dtype)
    return given


def random_inputs(specs, given: dict[str, np.ndarray], dims: dict[str, int], seed: int) -> dict[str, np.ndarray]:
    """Fill in every input not given: floats ~ N(0, 1), ints in [0, 10), bools fair; seeded."""
    rng = np.random.default_rng(seed)
    used = set()
    out = dict(given)
    for spec in specs:
        if spec.name in out:
            continue
        shape = []
        for i, d in enumerate(spec.shape):
            if d is not None:
                shape.append(d)
                continue
            dim_name = spec.dim_names[i] if i < len(spec.dim_names) else ""
            key = f"{spec.name}.{i}"
            if key in dims:
                shape.append(dims[key])
                used.add(key)
            elif dim_name and dim_name in dims:
                shape.append(dims[dim_name])
                used.add(dim_name)
            else:
                shape.append(1)
        if np.issubdtype(spec.dtype, np.floating):
            out[spec.name] = rng.standard_normal(shape).astype(spec.dtype)
        elif spec.dtype == np.bool_:
            out[spec.name] = rng.integers(0, 2, shape).astype(np.bool_)
        else:
            out[spec.name] = rng.integers(0, 10, shape).astype(spec.dtype)
    unknown = set(dims) - used
    if unknown:
        raise UsageError(f"--dim {', '.join(sorted(unknown))}: no dynamic dim of that name in the inputs")
    return out


# --------------------------------------------------------------------------------------------
# Printing


def describe(name: str, array: np.ndarray) -> str:
    """`y: float32[2, 3] min=... max=... mean=...`."""
    head = f"{name}: {array.dtype}[{', '.join(map(str, array.shape))}]"
    if array.size == 0:
        return head + " (empty)"
    if array.dtype == np.bool_:
        return head + f" true={int(np.count_nonzero(array))}"
    if np.issubdtype(array.dtype, np.floating):
        with np.errstate(all="ignore"):
            a64 = array.astype(np.float64)
            return head + f" min={_g(a64.min())} max={_g(a64.max())} mean={_g(a64.mean())}"
    return head + f" min={array.min()} max={array.max()} sum={int(array.astype(np.int64).sum())}"


def _g(x: float) -> str:
    return f"{x:.6g}"


def format_values(array: np.ndarray) -> str:
    with np.printoptions(precision=6, threshold=64, edgeitems=3, linewidth=100, suppress=True):
        return np.array2string(array, separator=", ")


def _one_line(e: BaseException) -> str:
    text = str(e).strip()
    if isinstance(e, KeyError) and e.args:
        text = str(e.args[0])
    return text.splitlines()[0] if text else type(e).__name__


# --------------------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> int:
    from minimlir.frontend.api import compile as compile_model

    path = Path(args.file)
    if not path.is_file():
        raise UsageError(f"could not open input file '{args.file}': no such file")
    if args.benchmark < 0:
        raise UsageError("--benchmark N: N must be >= 0")
    if args.num_threads is not None and args.num_threads < 1:
        raise UsageError("--num-threads N: N must be >= 1")
    dims = parse_dims(args.dim)
    if args.compare:
        return run_compare(args, path, dims)
    if args.rtol is not None or args.atol is not None:
        raise UsageError("--rtol/--atol only apply with --compare")
    if (args.profile_json or args.profile_png) and not args.profile:
        raise UsageError("--profile-json/--profile-png need --profile")

    def print_ir(stage: str, text: str) -> None:
        header = "Input" if stage == "input" else f"After {stage}"
        sys.stderr.write(f"// -----// IR Dump {header} //----- //\n{text.rstrip()}\n\n")
        sys.stderr.flush()

    model = compile_model(
        path,
        entry=args.entry,
        num_threads=args.num_threads,
        dump_ir=args.dump_ir,
        cache=not args.no_cache,
        pipeline=args.pipeline,
        params=args.params,
        print_ir=print_ir if args.print_ir_after_all else None,
        checks=True if args.checks else None,
        **({"tuning_db": args.tuning_db} if args.tuning_db else {}),
        **({"profile": True} if args.profile else {}),
    )
    if args.remarks:
        for r in model.remarks:
            sys.stderr.write(r + "\n")

    given = collect_inputs(model.inputs, args.input)
    if isinstance(given, dict):
        if args.random_inputs or (args.benchmark and not args.input):  # --benchmark alone: random inputs
            given = random_inputs(model.inputs, given, dims, args.seed)
        elif dims:
            raise UsageError("--dim only applies with --random-inputs")
        missing = [s.name for s in model.inputs if s.name not in given]
        if missing:
            raise UsageError(f"missing input(s): {', '.join(missing)} (give --input NAME=FILE.npy or --random-inputs)")
        outputs = model(**given)
    else:
        if args.random_inputs:
            raise UsageError("--random-inputs needs a graph-level module (input types unknown at the llvm level)")
        outputs = model(*given)

    names = model.output_names or [f"output{i}" for i in range(len(outputs))]
    for name, out in zip(names, outputs):
        out = np.asarray(out)
        print(describe(name, out))
        if not args.quiet:
            print(format_values(out))
    if args.output_dir:
        out_dir = Path(args.output_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        for name, out in zip(names, outputs):
            np.save(out_dir / f"{_safe(name)}.npy", np.asarray(out))
    if args.benchmark:
        feed = given
        times = []
        (model(**feed) if isinstance(feed, dict) else model(*feed))  # warm-up
        for _ in range(args.benchmark):
            t = time.perf_counter()
            model(**feed) if isinstance(feed, dict) else model(*feed)
            times.append(time.perf_counter() - t)
        print(
            f"benchmark: {args.benchmark} runs, median {statistics.median(times) * 1e3:.3f} ms, "
            f"min {min(times) * 1e3:.3f} ms"
        )
    if args.profile:
        from minimlir.frontend import profile as _profile

        print(f"profile: {model.runs} run(s), per kernel, slowest first")
        print(_profile.format_table(model.profile()))
        if args.profile_json:
            _profile.write_json(model, args.profile_json)
        if args.profile_png:
            _profile.write_png(model.profile(), args.profile_png, title=f"{path.name}: kernels by time")
    sys.stdout.flush()
    return 0


_NOT_WITH_COMPARE = {
    "entry": "--entry", "params": "--params", "output_dir": "--output-dir", "benchmark": "--benchmark",
    "pipeline": "--pipeline", "print_ir_after_all": "--print-ir-after-all", "dump_ir": "--dump-ir",
    "remarks": "--remarks", "profile": "--profile", "profile_json": "--profile-json", "profile_png": "--profile-png",
}


def run_compare(args: argparse.Namespace, path: Path, dims: dict[str, int]) -> int:
    """`--compare onnxruntime`: print the first wrong node (exit 1) or the worst match (exit 0)."""
    from minimlir.frontend.compare import compare_with_onnxruntime, input_specs

    flags = [flag for key, flag in _NOT_WITH_COMPARE.items() if getattr(args, key)]
    if flags:
        raise UsageError(f"{', '.join(flags)}: not with --compare")
    if path.suffix == ".mlir":
        raise UsageError("--compare onnxruntime needs an .onnx model (onnxruntime cannot run .mlir)")
    rtol = 1e-3 if args.rtol is None else args.rtol
    atol = 1e-4 if args.atol is None else args.atol
    if rtol < 0 or atol < 0:
        raise UsageError("--rtol/--atol must be >= 0")
    specs = input_specs(path)
    given = collect_inputs(specs, args.input)
    assert isinstance(given, dict)
    if args.random_inputs:
        given = random_inputs(specs, given, dims, args.seed)
    elif dims:
        raise UsageError("--dim only applies with --random-inputs")
    missing = [s.name for s in specs if s.name not in given]
    if missing:
        raise UsageError(f"missing input(s): {', '.join(missing)} (give --input NAME=FILE.npy or --random-inputs)")
    report = compare_with_onnxruntime(path, given, rtol, atol, cache=not args.no_cache,
                                      num_threads=args.num_threads, checks=True if args.checks else None,
                                      tuning_db=args.tuning_db or None)
    print(report.format())
    sys.stdout.flush()
    return 0 if report.ok else 1


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in name) or "output"


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from minimlir.frontend.api import CompileError, InputError, OnnxImportError, UnsupportedModelError

    def compare_error() -> tuple[type[Exception], ...]:  # only --compare imports it (and onnx)
        compare = sys.modules.get("minimlir.frontend.compare")
        return (compare.CompareError,) if compare is not None else ()

    try:
        return run(args)
    except CompileError as e:
        sys.stderr.write(f"{str(e).strip().splitlines()[0]}\n")
    except UnsupportedModelError as e:
        sys.stderr.write(f"mini-run: error: {str(e).rstrip()}\n")
    except (UsageError, InputError, OnnxImportError, *compare_error(), FileNotFoundError) as e:
        sys.stderr.write(f"mini-run: error: {_one_line(e)}\n")
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # the runtime's own errors (native return codes, out= mismatches), bugs
        if os.environ.get("MINIMLIR_TRACEBACK") == "1":
            traceback.print_exc()
        sys.stderr.write(f"mini-run: error: {type(e).__name__}: {_one_line(e)}\n")
    return 1


if __name__ == "__main__":
    sys.exit(main())
