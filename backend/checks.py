"""Checked mode, runtime side: the native helpers checked code calls, and the errors it raises.

Code compiled with checks (`compile(..., checks=True)`, `MINIMLIR_CHECKS=1`, `mini-run --checks`,
`convert-mem-to-llvm{checks=true}`; instrumentation in passes/to_llvm/_checks.py) calls two functions that
this module compiles once per process (a small LLVM module, its own MCJIT engine) and registers as
process symbols, as backend/parallel.py does for libgomp:

* `__minimlir_check_fail(site, rank, i0..i7, d0..d7)`: an access was out of bounds. The first call
  (a `cmpxchg` on the record's first word: first writer wins, also across the threads of a parallel
  loop) stores the site and the index and dim values; every call counts.
* `__minimlir_poison(ptr, nbytes, word)`: fill a fresh buffer with an 8-byte pattern.

A checked call (NativeFunction in backend/runtime.py) clears the record, runs, then raises
`CheckError` if the record holds a violation (the faulting accesses were skipped, so nothing was
touched out of bounds), or if an output holds the poison pattern (a value that was never written:
a signaling NaN payload for floats, even after arithmetic quieted it; the sentinel for int32/int64;
a byte that is neither 0 nor 1 for bool). The record is one per process: checked calls run one at a
time (a lock).
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from minimlir.passes.to_llvm import _checks as _ir
from minimlir.runtime.errors import MinimlirError

RECORD_WORDS = 4 + 2 * _ir.MAX_RANK  # site, count, rank, pad, indices, dims
_lock = threading.Lock()
_installed: dict[str, Any] = {}
calls = 0  # checked calls run in this process (tests use it to see that checks were on)


class CheckError(MinimlirError, RuntimeError):
    """Checked mode caught a fault: an out-of-bounds access or an output read before written."""

    def __init__(self, message: str, *, kind: str, kernel: str = "", block: str = "", buffer: str = "",
                 node: str = "", indices: tuple[int, ...] = (), dims: tuple[int, ...] = (),
                 count: int = 0, outputs: Sequence[str] = ()):
        super().__init__(message)
        self.kind = kind  # "out-of-bounds" or "uninitialized"
        self.kernel, self.block, self.buffer, self.node = kernel, block, buffer, node
        self.indices, self.dims, self.count = indices, dims, count
        self.outputs = list(outputs)


def _helper_ir() -> str:
    n = _ir.MAX_RANK
    params = ", ".join([f"i64 %i{k}" for k in range(n)] + [f"i64 %d{k}" for k in range(n)])
    stores = []
    for slot, name in [(2, "%rank")] + [(4 + k, f"%i{k}") for k in range(n)] + [(4 + n + k, f"%d{k}") for k in range(n)]:
        stores.append(f"  %p{slot} = getelementptr inbounds [{RECORD_WORDS} x i64], ptr @__minimlir_check_record, i64 0, i64 {slot}")
        stores.append(f"  store i64 {name}, ptr %p{slot}, align 8")
    body = "\n".join(stores)
    return f"""
@__minimlir_check_record = global [{RECORD_WORDS} x i64] zeroinitializer, align 64

define void @{_ir.FAIL_FN}(ptr %site, i64 %rank, {params}) noinline {{
entry:
  %cnt = getelementptr inbounds [{RECORD_WORDS} x i64], ptr @__minimlir_check_record, i64 0, i64 1
  %old = atomicrmw add ptr %cnt, i64 1 monotonic
  %s = ptrtoint ptr %site to i64
  %pair = cmpxchg ptr @__minimlir_check_record, i64 0, i64 %s seq_cst seq_cst
  %won = extractvalue {{ i64, i1 }} %pair, 1
  br i1 %won, label %write, label %done
write:
{body}
  br label %done
done:
  ret void
}}

define void @{_ir.POISON_FN}(ptr %p, i64 %n, i64 %word) noinline {{
entry:
  %words = lshr i64 %n, 3
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %inext, %body ]
  %more = icmp ult i64 %i, %words
  br i1 %more, label %body, label %tail
body:
  %q = getelementptr i64, ptr %p, i64 %i
  store i64 %word, ptr %q, align 1
  %inext = add i64 %i, 1
  br label %loop
tail:
  %start = shl i64 %words, 3
  br label %tloop
tloop:
  %j = phi i64 [ %start, %tail ], [ %jnext, %tbody ]
  %tmore = icmp ult i64 %j, %n
  br i1 %tmore, label %tbody, label %done
tbody:
  %k = and i64 %j, 7
  %sh = shl i64 %k, 3
  %w = lshr i64 %word, %sh
  %b = trunc i64 %w to i8
  %r = getelementptr i8, ptr %p, i64 %j
  store i8 %b, ptr %r, align 1
  %jnext = add i64 %j, 1
  br label %tloop
done:
  ret void
}}
"""


def install() -> None:
    """Compile the helpers and register them as process symbols (once per process)."""
    if _installed:
        return
    import llvmlite.binding as llvm

    from minimlir.backend import _target, jit

    with jit._llvm_lock:
        if _installed:
            return
        tm = _target.target_machine(2)
        mod = jit.parse_ir(_helper_ir())
        mod.triple = _target.host_triple()
        engine = llvm.create_mcjit_compiler(mod, tm)
        engine.finalize_object()
        record = engine.get_global_value_address("__minimlir_check_record")
        for name in (_ir.FAIL_FN, _ir.POISON_FN):
            llvm.add_symbol(name, engine.get_function_address(name))
        _installed.update(engine=engine, module=mod, record=record)


def is_checked(llvm_ir: str) -> bool:
    """Whether compiled code (its LLVM IR text) was built in checked mode."""
    return _ir.FAIL_FN in llvm_ir or _ir.POISON_FN in llvm_ir


def _record() -> Any:
    install()
    return (ctypes.c_int64 * RECORD_WORDS).from_address(_installed["record"])


class CheckedCall:
    """`with CheckedCall(function) as c: status = cfunc(...)`; then `c.raise_violation()` and
    `c.raise_poison(results, result_meta)`."""

    def __init__(self, function: str):
        self.function = function

    def __enter__(self) -> CheckedCall:
        global calls
        _lock.acquire()
        calls += 1
        ctypes.memset(ctypes.addressof(_record()), 0, RECORD_WORDS * 8)
        return self

    def __exit__(self, *exc: Any) -> None:
        rec = _record()
        self.words = list(rec)
        ctypes.memset(ctypes.addressof(rec), 0, RECORD_WORDS * 8)
        _lock.release()

    def violation(self) -> CheckError | None:
        words = self.words
        if not words[0]:
            return None
        site = ctypes.string_at(words[0]).decode("utf-8", "replace").split(_ir.SEP)
        site += [""] * (8 - len(site))
        kernel, block, buffer, node, access, lanes, elem, mtype = site[:8]
        rank, count = words[2], words[1]
        shown = min(rank, _ir.MAX_RANK)
        indices = tuple(words[4 : 4 + shown])
        dims = tuple(words[4 + _ir.MAX_RANK : 4 + _ir.MAX_RANK + shown])
        if access == "slot":  # mem-plan's slot does not fit in its arena (passes/to_llvm/_checks.py)
            offset, nbytes = words[4], words[5]
            arena_bytes = words[4 + _ir.MAX_RANK]
            at = f" (at {node})" if node else ""
            msg = (f"arena overflow in @{kernel}{at}: {buffer} of type {mtype} needs bytes "
                   f"[{offset}, {offset + nbytes}) but the arena has {arena_bytes} bytes "
                   f"(in a call of @{self.function}; the call stopped before any kernel touched it)")
            return CheckError(msg, kind="arena-overflow", kernel=kernel, buffer=buffer, node=node,
                              indices=(offset, nbytes), dims=(arena_bytes,), count=count)
        n_lanes = int(lanes) if lanes.isdigit() else 1
        idx_text = [str(i) for i in indices]
        if n_lanes > 1 and idx_text and shown == rank:
            idx_text[-1] = f"{indices[-1]}..{indices[-1] + n_lanes - 1}"
        more = ", …" if rank > shown else ""
        what = f"vector<{n_lanes}x{elem}> {access}" if n_lanes > 1 else f"{access}"
        where = f"kernel @{kernel}" + (f", block '{block}'" if block else "")
        node_text = f" (ONNX node '{node}')" if node and not node[:1].isdigit() and ":" not in node else (
            f" (at {node})" if node else "")
        msg = (f"out-of-bounds {what} in {where}{node_text}: buffer {buffer} ({mtype}) "
               f"index [{', '.join(idx_text)}{more}] is outside its dims [{', '.join(map(str, dims))}{more}]")
        if count > 1:
            msg += f"; {count} faulting accesses in this call of @{self.function} (the first is shown)"
        else:
            msg += f" (in a call of @{self.function})"
        msg += "; the faulting accesses were skipped"
        return CheckError(msg, kind="out-of-bounds", kernel=kernel, block=block, buffer=buffer, node=node,
                          indices=indices, dims=dims, count=count)


def poison_mask(array: np.ndarray) -> np.ndarray | None:
    """Where `array` holds the checked-mode poison pattern (None: no pattern for this dtype)."""
    dt = array.dtype
    if dt == np.float32:
        bits = array.view(np.uint32)
        keep = np.uint32(~(0x80000000 | 0x00400000) & 0xFFFFFFFF)
        return (bits & keep) == np.uint32(_ir.POISON_F32 & int(keep))
    if dt == np.float64:
        bits = array.view(np.uint64)
        keep = np.uint64(~(0x8000000000000000 | 0x0008000000000000) & 0xFFFFFFFFFFFFFFFF)
        return (bits & keep) == np.uint64(_ir.POISON_F64 & int(keep))
    if dt == np.float16:
        bits = array.view(np.uint16)
        keep = np.uint16(~(0x8000 | 0x0200) & 0xFFFF)
        return (bits & keep) == np.uint16(_ir.POISON_F16 & int(keep))
    if dt == np.int32:
        return array == np.int32(_ir.POISON_I32)
    if dt == np.int64:
        return array == np.int64(_ir.POISON_I64)
    if dt == np.bool_:
        return array.view(np.uint8) > 1
    return None


def poisoned_outputs(function: str, results: Sequence[np.ndarray], names: Sequence[str]) -> CheckError | None:
    """A CheckError naming every output that holds poison (values no kernel wrote), or None."""
    found = []
    for k, (arr, name) in enumerate(zip(results, names)):
        mask = poison_mask(np.asarray(arr))
        if mask is None or not mask.any():
            continue
        first = tuple(int(i) for i in np.argwhere(mask)[0])
        found.append((k, name, int(mask.sum()), first, mask.size))
    if not found:
        return None
    parts = [f"output #{k} '{name}' holds {n} of {size} poison values (first at index {list(first)})"
             for k, name, n, first, size in found]
    msg = (f"uninitialized read in @{function}: " + "; ".join(parts)
           + ": they come from memory no kernel wrote (checked mode fills fresh buffers with a "
             "signaling-NaN / sentinel pattern)")
    return CheckError(msg, kind="uninitialized", outputs=[f[1] for f in found])
