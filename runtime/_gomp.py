"""libgomp's wait policy for minimlir's parallel loops: a short spin unless the user chose one.

How long an idle libgomp worker spins before it sleeps decides two costs. libgomp's default
(OMP_WAIT_POLICY unset: GOMP_SPINCOUNT = 300000 pause loops, milliseconds) keeps 2 cores busy
between two kernels, during the Python side of a call and after the call returns: on a machine
where anything else runs (onnxruntime's own spinning pool interleaved in a benchmark, another
process) the spinning worker takes the core the next region's other thread needs (measured on the
BERT-like encoder, 2 cores, load about 3-5: 2-thread medians of 200-1300 ms against 39-60 ms at 1
thread). Passive waiting (spin 0) puts the worker to sleep after every region, and each region then
starts with a futex wake-up: on a virtual machine waking a halted vCPU costs tens of microseconds,
more than a decode step's small kernels take (measured on the 2-vCPU Firecracker VM, GPT-2 decode at
2 threads, benchmarks/decode.py --threads 2: passive 149 tokens/s, spin 30000 4000, onnxruntime
4900; prefill 6.96 ms passive, 0.47 ms spinning).

So by default the worker spins DEFAULT_SPINCOUNT pause loops (a fraction of a millisecond: long
enough to bridge the gaps between the kernels of a call and between the calls of a decode loop,
short enough not to hold a core long after a call returns). libgomp reads GOMP_SPINCOUNT and
OMP_WAIT_POLICY once, when it is loaded (its constructor), so `loading()` sets ours in the process
environment around the dlopen that first loads it (the JIT's load of libgomp, or an artifact's .so
that needs it) and restores the environment after. A user's OMP_WAIT_POLICY or GOMP_SPINCOUNT is
respected (nothing set), and so is MINIMLIR_GOMP_WAIT_POLICY=active|passive (ours only: libgomp's
spin-forever or sleep-at-once). Once libgomp is loaded the policy is fixed for the process.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

DEFAULT_SPINCOUNT = 20000
_USER_VARS = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")


def wait_policy(environ: dict[str, str] | os._Environ | None = None) -> dict[str, str] | None:
    """The variables we would set for libgomp's load; None when the user chose a policy."""
    env = os.environ if environ is None else environ
    if any(v in env for v in _USER_VARS):
        return None
    ours = env.get("MINIMLIR_GOMP_WAIT_POLICY", "").strip().lower()
    if ours in ("active", "passive"):
        return {"OMP_WAIT_POLICY": ours}
    return {"GOMP_SPINCOUNT": str(DEFAULT_SPINCOUNT)}


@contextlib.contextmanager
def loading() -> Iterator[None]:
    """Around the dlopen that may first load libgomp: our wait policy in the environment."""
    policy = wait_policy()
    if policy is None:
        yield
        return
    os.environ.update(policy)
    try:
        yield
    finally:
        for k in policy:
            os.environ.pop(k, None)


__all__ = ["DEFAULT_SPINCOUNT", "loading", "wait_policy"]
