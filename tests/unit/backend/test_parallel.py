"""Parallel loops on libgomp: outlining keeps the meaning, 1 and 2 threads agree, and repeated
calls reuse libgomp's pool (no thread per call)."""

from __future__ import annotations

import os

import numpy as np
import pytest

import minimlir.compiler.interpreter as H
from minimlir.backend import parallel
from minimlir.dialects import loop
from minimlir.passes.loop.outline_parallel import PARALLEL_BODIES_ATTR, outline_module

native_ok, native_reason = H.native_status()
needs_native = pytest.mark.skipif(not native_ok, reason=native_reason)
needs_gomp = pytest.mark.skipif(not parallel.available(), reason="libgomp not available")

MATMUL = """
func.func @main(%a: tensor<?x?xf32>, %b: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %c = graph.matmul %a, %b : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
  func.return %c : tensor<?x?xf32>
}"""

ELEMENTWISE = """
func.func @main(%x: tensor<?x29xf32>, %y: tensor<29xf32>) -> tensor<?x29xf32> {
  %a = graph.mul %x, %y : (tensor<?x29xf32>, tensor<29xf32>) -> tensor<?x29xf32>
  %b = graph.tanh %a : tensor<?x29xf32>
  func.return %b : tensor<?x29xf32>
}"""


def rand(*shape, seed=0):
    return np.random.default_rng(seed + sum(shape)).standard_normal(shape).astype(np.float32)


@pytest.fixture
def restore_threads():
    yield
    parallel.set_num_threads(0)


def _compile(text):
    from minimlir.backend.runtime import compile_mlir_text

    return compile_mlir_text(text, pipeline="compile", cache=False)


def test_outline_moves_parallel_loop_into_a_function():
    from minimlir.passes.loop.schedule.default import ScheduleConfig, schedule_module

    m = H.legalize(ELEMENTWISE)
    schedule_module(m, ScheduleConfig(width=8))
    assert any(isinstance(o, loop.ForOp) and o.kind.data == "parallel" for o in m.walk())
    made = outline_module(m)
    m.verify()
    assert [f.sym_name.data for f in made] == ["mul_tanh_0__par0"] or len(made) >= 1
    assert PARALLEL_BODIES_ATTR in m.attributes
    assert not any(isinstance(o, loop.ForOp) and o.kind.data == "parallel" for o in m.walk())
    body = made[0]
    assert "loop.parallel_body" in body.attributes
    calls = [o for o in m.walk() if o.name == "func.call" and o.callee.string_value() == body.sym_name.data]
    assert len(calls) == 1 and len(calls[0].operands) == len(body.function_type.inputs.data)


def test_outlined_serial_call_same_as_loop_in_interpreter():
    """Without the llvm-level lowering the call runs the whole range: same results (the interpreter
    runs the func.call of the outlined body)."""
    from minimlir.passes.loop.schedule.default import ScheduleConfig, schedule_module
    from minimlir.passes.loop.schedule import lower_scheduled

    text = ELEMENTWISE.replace("?x", "3x")
    x, y = rand(3, 29), rand(29, seed=1)
    want = H.interpret_kernels(H.legalize(text), None, [x, y])
    m = H.legalize(text)
    schedule_module(m, ScheduleConfig(width=8))
    lower_scheduled(m, 8)
    outline_module(m)
    got = H.interpret_kernels(m, None, [x, y])
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6)


@needs_native
@needs_gomp
@pytest.mark.parametrize("text,shapes", [(MATMUL, [(65, 33), (33, 17)]), (ELEMENTWISE, [(67, 29), (29,)])])
def test_one_and_two_threads_agree(text, shapes, restore_threads):
    prog = _compile(text)
    inputs = [rand(*s, seed=k) for k, s in enumerate(shapes)]
    outs = []
    for n in (1, 2):
        parallel.set_num_threads(n)
        assert parallel.get_num_threads() == n
        outs.append(prog.main(*inputs))
    np.testing.assert_array_equal(outs[0], outs[1])
    ref = inputs[0] @ inputs[1] if text is MATMUL else np.tanh(inputs[0] * inputs[1])
    np.testing.assert_allclose(outs[1], ref, rtol=1e-4, atol=1e-4)


@needs_native
@needs_gomp
def test_no_thread_per_call(restore_threads):
    prog = _compile(MATMUL)
    a, b = rand(40, 30), rand(30, 50, seed=1)
    parallel.set_num_threads(2)
    prog.main(a, b)
    before = len(os.listdir("/proc/self/task"))
    for _ in range(200):
        prog.main(a, b)
    after = len(os.listdir("/proc/self/task"))
    assert after == before


@needs_native
@needs_gomp
def test_llvm_level_dispatch_uses_gomp():
    from minimlir.backend.runtime import _context, run_pipeline
    from xdsl.parser import Parser

    ctx = _context()
    m = Parser(ctx, MATMUL).parse_module()
    run_pipeline(m, "compile", ctx)
    text = str(m)
    assert "llvm.call @GOMP_parallel" in text
    assert "@minimlir_num_threads" in text
    assert PARALLEL_BODIES_ATTR not in m.attributes


@needs_native
@needs_gomp
def test_one_thread_calls_the_body_directly():
    """With one thread (set_num_threads(1), or a loop below the work threshold) the kernel calls
    the outlined body over the whole range itself: GOMP_parallel with one thread still builds a
    team, ~260 ns a region, which a decode step of a small model pays a hundred times."""
    import re

    from minimlir.backend.runtime import _context, run_pipeline
    from xdsl.parser import Parser

    ctx = _context()
    m = Parser(ctx, MATMUL).parse_module()
    run_pipeline(m, "compile", ctx)
    text = str(m)
    bodies = set(re.findall(r"llvm.func internal @(\w+)_omp\(", text))
    assert bodies
    for body in bodies:
        assert re.search(rf"llvm.call @{body}\(", text), f"no direct call of {body}"
    assert re.search(r"llvm.icmp \"eq\" %\S+, %\S+ : i32", text)
    assert "llvm.cond_br" in text


def test_set_num_threads_rejects_negative():
    with pytest.raises(ValueError, match="num_threads must be >= 0"):
        parallel.set_num_threads(-1)


def _gomp_spincount(extra_env: dict[str, str]) -> tuple[str, str]:
    """Load libgomp the way the JIT does in a fresh process: (its GOMP_SPINCOUNT, our env after)."""
    import re
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items()
           if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "MINIMLIR_GOMP_WAIT_POLICY")}
    env.update(extra_env, OMP_DISPLAY_ENV="verbose")
    code = ("import os\nfrom minimlir.backend import parallel\nassert parallel.available()\n"
            "print('after', os.environ.get('OMP_WAIT_POLICY'))")
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    m = re.search(r"GOMP_SPINCOUNT = '(\d+)'", r.stderr)
    assert m, r.stderr
    return m.group(1), r.stdout.split("after ")[-1].strip()


@needs_gomp
def test_idle_workers_spin_briefly_by_default():
    # libgomp's default spins 300000 pause loops after every region: 2 threads on a busy machine
    # ran BERT 3-20x slower than 1 thread; passive (spin 0) made a 2-thread GPT-2 decode step 25x
    # slower on a VM (runtime/_gomp.py). Ours loads it with a short spin and leaves the process
    # environment as it was
    from minimlir.runtime._gomp import DEFAULT_SPINCOUNT

    assert 0 < DEFAULT_SPINCOUNT < 300000
    assert _gomp_spincount({}) == (str(DEFAULT_SPINCOUNT), "None")


@needs_gomp
def test_user_wait_policy_is_respected():
    assert _gomp_spincount({"GOMP_SPINCOUNT": "1234"})[0] == "1234"
    assert _gomp_spincount({"OMP_WAIT_POLICY": "active"})[0] != "0"
    count, after = _gomp_spincount({"MINIMLIR_GOMP_WAIT_POLICY": "active"})
    assert int(count) > 300000 and after == "None"
    assert _gomp_spincount({"MINIMLIR_GOMP_WAIT_POLICY": "passive"})[0] == "0"
