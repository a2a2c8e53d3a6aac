"""The parallel work threshold (passes/loop/schedule/default/threshold.py): a parallel loop with little
work runs serially (static extents: decided when scheduling; a dynamic trip count: a run-time thread
count of 1 below `loop.min_parallel_iters`)."""

from __future__ import annotations

import functools

import numpy as np
import pytest

from minimlir.passes.loop.schedule.default.knobs import declarations
from minimlir.passes.loop.schedule.default.threshold import DEFAULT_MIN_WORK


def _relu_model(shape):
    from onnx import TensorProto, helper

    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"]), ], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m.SerializeToString()


@functools.lru_cache(maxsize=None)
def _compile(shape: tuple):
    from minimlir.frontend import compile as compile_model

    stages: dict[str, str] = {}
    m = compile_model(_relu_model(list(shape)), cache=False, num_threads=2,
                      print_ir=lambda stage, text: stages.__setitem__(stage, text))
    return m, stages


def _final(stages: dict[str, str]) -> str:
    return list(stages.values())[-1]


def test_knob_declared_with_default_first():
    knob = declarations()["parallel"].knob("parallel.min_work")
    assert knob.values[0] == DEFAULT_MIN_WORK and 0 in knob.values


def test_tiny_kernel_is_not_outlined_parallel():
    m, stages = _compile((4, 64))  # 256 elements: far below the threshold
    assert "loop.parallel_body" not in _final(stages) and "GOMP_parallel" not in _final(stages)
    x = np.random.default_rng(0).standard_normal((4, 64)).astype(np.float32)
    np.testing.assert_array_equal(m(x)[0], np.maximum(x, 0))


def test_big_kernel_is_outlined_parallel():
    m, stages = _compile((512, 1024))
    sched = next(t for s, t in stages.items() if "loop-schedule" in s)
    assert "parallel {" in sched and "loop.min_parallel_iters" not in sched  # decided statically
    assert "GOMP_parallel" in _final(stages)
    x = np.random.default_rng(1).standard_normal((512, 1024)).astype(np.float32)
    np.testing.assert_array_equal(m(x)[0], np.maximum(x, 0))


@pytest.mark.parametrize("batch", [1, 300])
def test_dynamic_trip_count_decides_at_run_time(batch):
    m, stages = _compile(("batch", 256))
    sched = next(t for s, t in stages.items() if "loop-schedule" in s)
    assert "loop.min_parallel_iters" in sched
    final = _final(stages)
    assert "GOMP_parallel" in final and "llvm.icmp \"slt\"" in final
    x = np.random.default_rng(batch).standard_normal((batch, 256)).astype(np.float32)
    np.testing.assert_array_equal(m(x)[0], np.maximum(x, 0))
