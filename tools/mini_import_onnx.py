"""mini-import-onnx: ONNX model -> graph-dialect IR (+ a params file with the weights).

    mini-import-onnx model.onnx -o model.mlir             # weights -> model.params (beside -o)
    mini-import-onnx model.onnx -o model.mlir --params w.params
    mini-import-onnx model.onnx --embed-weights           # weights inline as graph.constant, IR to stdout
    mini-import-onnx --check model.onnx                   # support table, no import
    mini-import-onnx --ops                                # every ONNX op: how it imports, or why not

Ops carry their ONNX node as a location, printed as `loc("node"("model.onnx":3:0))`
(`--strip-debuginfo` drops them). Exit code 1 with a one-line error for a bad model, or with a
table of every unsupported (op, opset, reason) for an unsupported one.
"""

from __future__ import annotations

import argparse
import io
import sys
from pathlib import Path


def _print_module(module, stream, debuginfo: bool) -> None:
    from xdsl.printer import Printer

    Printer(stream=stream, print_debuginfo=debuginfo).print_op(module)
    stream.write("\n")


def _support_table(rows, out) -> None:
    out.write(f"{'op type':<24} {'opset':>5} {'count':>5}  status\n")
    for op, opset, count, reason in rows:
        status = "supported" if reason is None else f"unsupported: {reason}"
        out.write(f"{op:<24} {opset:>5} {count:>5}  {status}\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mini-import-onnx", description=__doc__.splitlines()[0])
    parser.add_argument("model", nargs="?", help="the .onnx file")
    parser.add_argument("-o", "--output", help="output .mlir file (default: stdout)")
    parser.add_argument("--params", help="params file (default: <output stem>.params, or <model stem>.params)")
    parser.add_argument("--embed-weights", action="store_true", help="inline weights as graph.constant")
    parser.add_argument("--check", action="store_true", help="print the op support table and exit")
    parser.add_argument("--strip-debuginfo", action="store_true", help="do not print op locations")
    parser.add_argument("--ops", action="store_true",
                        help="print every ai.onnx op of the installed onnx package: imported by an emitter, "
                             "as its function body, or not (and why), then exit")
    args = parser.parse_args(argv)
    if args.ops:
        from minimlir.frontend._onnx_unsupported import op_coverage

        rows = op_coverage()
        sys.stdout.write(f"{'op type':<28} {'opset':>5}  {'status':<8} why\n")
        for op, opset, status, why in rows:
            sys.stdout.write(f"{op:<28} {opset:>5}  {status:<8} {why}\n".rstrip() + "\n")
        counts = {s: sum(r[2] == s for r in rows) for s in ("emitter", "function", "no")}
        sys.stdout.write(f"{len(rows)} ops: {counts['emitter']} by an emitter, {counts['function']} as a function "
                         f"body, {counts['no']} not supported\n")
        return 0
    if args.model is None:
        parser.error("the model is required (except with --ops)")

    from minimlir.frontend.onnx_import import (
        OnnxImportError,
        UnsupportedModelError,
        check_support,
        import_onnx,
    )
    from minimlir.compiler.params import save_params

    prog = "mini-import-onnx"
    try:
        if args.check:
            rows = check_support(args.model)
            _support_table(rows, sys.stdout)
            return 0 if all(r[3] is None for r in rows) else 1
        module, params = import_onnx(args.model, embed_weights=args.embed_weights)
    except UnsupportedModelError as e:
        sys.stderr.write(f"{prog}: error: {args.model}: unsupported model\n")
        counts: dict = {}
        for p in e.problems:
            key = (p.op_type, p.opset, p.reason)
            counts[key] = counts.get(key, 0) + 1
        _support_table(sorted((op, o, n, r) for (op, o, r), n in counts.items()), sys.stderr)
        return 1
    except OnnxImportError as e:
        msg = str(e)
        if not msg.startswith(args.model):
            msg = f"{args.model}: {msg}"
        sys.stderr.write(f"{prog}: error: {msg}\n")
        return 1

    if params and not args.embed_weights:
        if args.params:
            params_path = Path(args.params)
        elif args.output:
            params_path = Path(args.output).with_suffix(".params")
        else:
            params_path = Path(args.model).with_suffix(".params")
        from xdsl.dialects.builtin import StringAttr

        try:
            save_params(params_path, params)
        except OSError as e:
            sys.stderr.write(f"{prog}: error: cannot write {params_path}: {e.strerror}\n")
            return 1
        module.attributes["graph.params_file"] = StringAttr(params_path.name)

    text = io.StringIO()
    _print_module(module, text, not args.strip_debuginfo)
    if args.output:
        try:
            Path(args.output).write_text(text.getvalue())
        except OSError as e:
            sys.stderr.write(f"{prog}: error: cannot write {args.output}: {e.strerror}\n")
            return 1
    else:
        sys.stdout.write(text.getvalue())
    return 0


if __name__ == "__main__":
    sys.exit(main())
