"""Adjacent parallel loops merged into one fork-join (passes/loop/schedule/default/merge_parallel.py)."""

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp

import minimlir.compiler.interpreter as H
from minimlir.dialects import loop, mem
from minimlir.passes.loop.schedule.default.merge_parallel import merge_parallel_loops


def parse(text: str) -> ModuleOp:
    module = H.parse(text)
    module.verify()
    return module


KERNEL = """
func.func @k(%x: memref<64x32xf32>, %y: memref<64x32xf32>) attributes {{loop.kernel}} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %t = mem.alloc() : memref<64x32xf32>
  loop.for %i = %c0 to %c64 step %c1 parallel {{
    loop.for %j = %c0 to %c32 step %c1 {{
      %v = mem.load %x[%i, %j] : memref<64x32xf32> -> f32
      mem.store %v, %t[%i, %j] : f32, memref<64x32xf32>
    }}
  }}
  %s = arith.constant 1 : index
  loop.for %i2 = %c0 to %c64 step %s parallel {{
    loop.for %j2 = %c0 to %c32 step %c1 {{
      %w = mem.load %t[{row}, %j2] : memref<64x32xf32> -> f32
      %z = arith.addf %w, %w : f32
      mem.store %z, %y[%i2, %j2] : f32, memref<64x32xf32>
    }}
  }}
  mem.dealloc %t : memref<64x32xf32>
  func.return
}}
"""


def _parallel_loops(module: ModuleOp) -> list[loop.ForOp]:
    return [o for o in module.walk() if isinstance(o, loop.ForOp) and o.kind.data == "parallel"]


def test_row_wise_neighbours_merge():
    m = parse(KERNEL.format(row="%i2"))
    k = next(o for o in m.walk() if isinstance(o, func.FuncOp))
    assert merge_parallel_loops(k) == 1
    m.verify()
    (only,) = _parallel_loops(m)
    stores = [o for o in only.walk() if isinstance(o, mem.StoreOp)]
    assert len(stores) == 2  # both bodies now run in the one parallel loop


def test_other_row_read_is_not_merged():
    # iteration i2 of the second loop reads row 0, written by iteration 0 of the first: no merge
    m = parse(KERNEL.format(row="%c0"))
    k = next(o for o in m.walk() if isinstance(o, func.FuncOp))
    assert merge_parallel_loops(k) == 0
    assert len(_parallel_loops(m)) == 2


def test_different_bounds_not_merged():
    m = parse(KERNEL.format(row="%i2").replace("to %c64 step %s", "to %c32 step %s"))
    k = next(o for o in m.walk() if isinstance(o, func.FuncOp))
    assert merge_parallel_loops(k) == 0


def _gelu_model():
    import math

    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    w = rng.standard_normal((256, 512)).astype(np.float32) * 0.05
    b = rng.standard_normal(512).astype(np.float32)
    nodes = [  # BERT's GELU: a * (erf(a / sqrt2) + 1) * 0.5, the scalars as initializers
        helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Add", ["m", "b"], ["a"]),
        helper.make_node("Div", ["a", "sqrt2"], ["d"]), helper.make_node("Erf", ["d"], ["e"]),
        helper.make_node("Add", ["e", "one"], ["e1"]), helper.make_node("Mul", ["a", "e1"], ["p"]),
        helper.make_node("Mul", ["p", "half"], ["y"]),
    ]
    scalars = [numpy_helper.from_array(np.array(v, np.float32), n)
               for n, v in (("sqrt2", math.sqrt(2.0)), ("one", 1.0), ("half", 0.5))]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [128, 256])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [128, 512])],
                          [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b"), *scalars])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model.SerializeToString(), w, b


def test_matmul_epilogue_is_one_parallel_region():
    import math

    from minimlir.frontend import compile as compile_model

    data, w, b = _gelu_model()
    stages: dict[str, str] = {}
    m = compile_model(data, cache=False, num_threads=2, print_ir=lambda s, t: stages.__setitem__(s, t))
    outlined = next(t for s, t in stages.items() if "outline-parallel" in s)
    bodies = {line.split("@")[1].split("(")[0] for line in outlined.splitlines() if "loop.parallel_body" in line
              and "func.func" in line}
    # (the weight's packing, run once when the weights are bound, is a kernel of its own)
    bodies = {b for b in bodies if "matmul" in b}
    assert 1 <= len(bodies) <= 2, bodies  # the matmul's region and one for the whole epilogue (was 3 without the merge)
    x = np.random.default_rng(1).standard_normal((128, 256)).astype(np.float32)
    a = x.astype(np.float64) @ w + b
    ref = a * (np.vectorize(math.erf)(a / math.sqrt(2.0)) + 1) * 0.5
    np.testing.assert_allclose(m(x)[0], ref, rtol=1e-4, atol=1e-4)
