"""Speed of the reference interpreter (minimlir.compiler.interpreter), which the loop-level tests
check scheduled kernels against: ops interpreted per second on unscheduled kernels.

    python benchmarks/interpreter.py                          # this checkout's interpreter
    python benchmarks/interpreter.py --module OTHER/compiler/interpreter.py   # another checkout's

`--module` loads that file in place of the installed module (the rest of minimlir is this
checkout's), so two versions run side by side on the same kernels. The op count is the number of
ops the interpreter runs (counted once, with a counting step). Printed per case: seconds (best of
--repeat) and microseconds per op.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time

import numpy as np

CASES = {
    "matmul 48^3 + relu": (
        """
func.func @main(%x: tensor<48x48xf32>, %y: tensor<48x48xf32>) -> tensor<48x48xf32> {
  %z = graph.matmul %x, %y : (tensor<48x48xf32>, tensor<48x48xf32>) -> tensor<48x48xf32>
  %r = graph.relu %z : tensor<48x48xf32>
  func.return %r : tensor<48x48xf32>
}
""", [(48, 48), (48, 48)]),
    "conv 8->8 3x3 on 16x16": (
        """
func.func @main(%x: tensor<1x8x16x16xf32>, %w: tensor<8x8x3x3xf32>) -> tensor<1x8x16x16xf32> {
  %y = graph.conv2d %x, %w pads [1, 1, 1, 1] : (tensor<1x8x16x16xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x16x16xf32>
  func.return %y : tensor<1x8x16x16xf32>
}
""", [(1, 8, 16, 16), (8, 8, 3, 3)]),
}


def load(path: str | None):
    if path is None:
        import minimlir.compiler.interpreter as mod

        return mod
    spec = importlib.util.spec_from_file_location("minimlir_interpreter_under_test", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def count_ops(mod, module, inputs) -> int:
    """The ops one run executes: the installed interpreter's step, counted."""
    import minimlir.compiler.interpreter as ref

    n = 0
    compile_op = ref._Interpreter.compile

    def counting(self, op):
        fn = compile_op(self, op)

        def run(env):
            nonlocal n
            n += 1
            fn(env)

        return run

    ref._Interpreter.compile = counting
    try:
        ref.interpret_kernels(module, None, [a.copy() for a in inputs])
    finally:
        ref._Interpreter.compile = compile_op
    return n


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--module", help="an interpreter.py to time instead of the installed one")
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    mod = load(args.module)
    rng = np.random.default_rng(0)
    print(f"interpreter: {args.module or 'minimlir.compiler.interpreter'}")
    for name, (text, shapes) in CASES.items():
        inputs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
        module = mod.legalize(text)
        ops = count_ops(mod, module, inputs)
        best = float("inf")
        for _ in range(args.repeat):
            t = time.perf_counter()
            mod.interpret_kernels(module, None, [a.copy() for a in inputs])
            best = min(best, time.perf_counter() - t)
        print(f"  {name:24s} {ops:9d} ops  {best:7.2f} s  {best / ops * 1e6:6.2f} us/op")
    return 0


if __name__ == "__main__":
    sys.exit(main())
