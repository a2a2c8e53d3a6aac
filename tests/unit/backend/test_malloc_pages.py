"""Buffers keep their pages between calls (runtime/_malloc.py): a function whose arena and
result are several MB page-faults them in once, not on every call. Each case runs in a fresh
process (glibc's thresholds are per process, and the suite's own allocations move them)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

CHILD = r"""
import json, resource, sys
import numpy as np
from minimlir.backend.runtime import compile_mlir_text

t = "tensor<1024x1024xf32>"
text = f'''func.func @main(%x: {t}) -> {t} {{
  %a = graph.add %x, %x : ({t}, {t}) -> {t}
  %b = graph.exp %a : {t}
  %c = graph.transpose %b perm [1, 0] : {t} -> {t}
  %y = graph.mul %c, %b : ({t}, {t}) -> {t}
  func.return %y : {t}
}}'''
prog = compile_mlir_text(text, pipeline="compile", cache=False)
x = np.full((1024, 1024), 0.5, np.float32)
for _ in range(3):
    y = prog.main(x)
    del y
r0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(10):
    y = prog.main(x)
    del y
per_call = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - r0) / 10
print(json.dumps({"faults": per_call}))
"""


def _faults_per_call(env: dict) -> float:
    out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=300,
                         env={**os.environ, **env})
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])["faults"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc")
def test_a_call_does_not_fault_its_buffers_in_again():
    # 4 MB result + 4 MB intermediate (the transposed value): 2048 pages a call with glibc's defaults
    assert _faults_per_call({"MINIMLIR_MALLOC_TUNE": "1"}) < 100


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc")
def test_opting_out_keeps_glibc_defaults():
    assert _faults_per_call({"MINIMLIR_MALLOC_TUNE": "0"}) > 500
