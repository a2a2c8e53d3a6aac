"""libgomp's wait policy for minimlir's parallel loops: passive unless the user chose one.

libgomp's default (OMP_WAIT_POLICY unset) keeps an idle worker spinning for GOMP_SPINCOUNT =
300000 pause loops (milliseconds) after each parallel region, so between two kernels, during the
Python side of a call and after the call returns, a 2-thread model keeps 2 cores busy. On a
machine where anything else runs (onnxruntime's own spinning pool interleaved in a benchmark,
another process), the spinning worker takes the core the other thread of the next region needs:
measured on the BERT-like encoder (benchmarks/transformers.py, 2 cores, load about 3-5) 2-thread
medians of 200-1300 ms against 39-60 ms at 1 thread; passive waiting: 44-170 ms, never slower
than about 1.5x of the 1-thread run.

libgomp reads the policy once, when it is loaded (its constructor), so `loading()` sets
OMP_WAIT_POLICY=passive in the process environment around the dlopen that first loads it (the
JIT's load of libgomp, or an artifact's .so that needs it) and restores the environment after.
A user's OMP_WAIT_POLICY or GOMP_SPINCOUNT is respected (nothing set), and so is
MINIMLIR_GOMP_WAIT_POLICY=active|passive (ours only). Once libgomp is loaded the policy is fixed
for the process.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

DEFAULT_WAIT_POLICY = "passive"
_USER_VARS = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")


def wait_policy(environ: dict[str, str] | os._Environ | None = None) -> str | None:
    """The OMP_WAIT_POLICY we would set for libgomp's load; None when the user chose one."""
    env = os.environ if environ is None else environ
    if any(v in env for v in _USER_VARS):
        return None
    ours = env.get("MINIMLIR_GOMP_WAIT_POLICY", "").strip().lower()
    return ours if ours in ("active", "passive") else DEFAULT_WAIT_POLICY


@contextlib.contextmanager
def loading() -> Iterator[None]:
    """Around the dlopen that may first load libgomp: our wait policy in the environment."""
    policy = wait_policy()
    if policy is None:
        yield
        return
    os.environ["OMP_WAIT_POLICY"] = policy
    try:
        yield
    finally:
        os.environ.pop("OMP_WAIT_POLICY", None)


__all__ = ["DEFAULT_WAIT_POLICY", "loading", "wait_policy"]
