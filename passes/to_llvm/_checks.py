"""Checked mode: the instrumentation convert-mem-to-llvm{checks=true} adds, and its site names.

Two kinds of checks (the runtime side is backend/checks.py):

* Bounds. Every `mem.load` / `mem.store` with indices gets a guard; a vector access checks all of
  its lanes along the last dim. The access goes through a pointer that is the real one when every
  index is in bounds, else a per-function scratch slot, so nothing outside the buffer is touched
  (a faulting load yields garbage, a faulting store is dropped), and the first violation is recorded:

      ^bb:   %ok = and(icmp ult %i0, %d0, …, icmp ule (%j + lanes), %dlast)
             %p = select %ok, %addr, %scratch
             cond_br %ok, ^cont, ^bad
      ^bad:  llvm.call @__minimlir_check_fail(@__mm_site.<fn>.<n>, rank, i0..i7, d0..d7)
             br ^cont
      ^cont: load/store through %p …

  `@__mm_site.<fn>.<n>` is an internal constant string: kernel, block, buffer, ONNX node, access
  (load/store, lanes, element type). The runtime reads it at the address the record holds, so the
  table travels with the code (disk cache, split compiles) and needs no registry.
* Poison. Every fresh buffer (heap `mem.alloc`, result buffers, arena `mem.slot`s where the slot's
  lifetime starts, stack `mem.alloca` where it is allocated) is filled by
  `@__minimlir_poison(ptr, bytes, word)` with a pattern: a signaling NaN for floats, a sentinel for
  ints (`POISON_WORDS`), so a read before write shows in the result.

Site names come from the `check.site` attribute that the `mem-check-sites` pass (passes/mem/check_sites.py)
puts on every access right after graph-legalize, while each kernel is still one ONNX node with named
blocks; accesses that scheduling created later inherit the names of the accesses to the same buffer
in the same function. Without the pass the lowering names what it still can (kernel, buffer by
argument position, the op's or function's location).
"""

from __future__ import annotations

import re

from xdsl.dialects import func, llvm
from xdsl.dialects.builtin import (
    BFloat16Type,
    DictionaryAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    IntAttr,
    IntegerAttr,
    IntegerType,
    MemRefType,
    NameLoc,
    StringAttr,
    UnrealizedConversionCastOp,
    VectorType,
    i1,
    i8,
    i64,
)
from xdsl.ir import Attribute, Block, BlockArgument, Operation, SSAValue
from xdsl.rewriter import BlockInsertPoint, Rewriter

from minimlir.dialects import mem

SITE_ATTR = "check.site"
FAIL_FN = "__minimlir_check_fail"
POISON_FN = "__minimlir_poison"
MAX_RANK = 8  # indices/dims passed to the fail function (higher ranks: the first 8)
SEP = "\x1f"  # field separator in a site string (the runtime splits on it)

# One 8-byte pattern word per element size / kind: the element pattern repeated.
POISON_F16 = 0x7D5A  # sNaN (quiet bit 9 clear)
POISON_BF16 = 0x7FA5
POISON_F32 = 0x7FA5A5A5  # sNaN (quiet bit 22 clear), payload 0x25A5A5
POISON_F64 = 0x7FF5A5A5A5A5A5A5  # sNaN (quiet bit 51 clear)
POISON_I8 = 0xA5  # a bool byte that is neither 0 nor 1
POISON_I16 = 0x7E5A
POISON_I32 = 0x7E5A5A5A
POISON_I64 = 0x7E5A5A5A5A5A5A5A


def _repeat(value: int, nbytes: int) -> int:
    word = 0
    for k in range(8 // nbytes):
        word |= value << (8 * nbytes * k)
    return word - (1 << 64) if word >= 1 << 63 else word  # as a signed i64 constant


def poison_word(element: Attribute) -> int:
    """The 8-byte fill word for buffers of `element`."""
    if isinstance(element, Float16Type):
        return _repeat(POISON_F16, 2)
    if isinstance(element, BFloat16Type):
        return _repeat(POISON_BF16, 2)
    if isinstance(element, Float32Type):
        return _repeat(POISON_F32, 4)
    if isinstance(element, Float64Type):
        return _repeat(POISON_F64, 8)
    if isinstance(element, IntegerType):
        width = element.width.data
        if width <= 8:
            return _repeat(POISON_I8, 1)
        if width <= 16:
            return _repeat(POISON_I16, 2)
        if width <= 32:
            return _repeat(POISON_I32, 4)
        return _repeat(POISON_I64, 8)
    return _repeat(POISON_I8, 1)


def location_name(loc: Attribute | None) -> str:
    """The ONNX node name of a `loc("Node"(...))`, else `file:line:col`, else ""."""
    if isinstance(loc, NameLoc):
        return loc.desc.data
    if loc is None:
        return ""
    from minimlir.passes._diagnostics import file_line_col

    pos = file_line_col(loc)
    return f"{pos[0]}:{pos[1]}:{pos[2]}" if pos is not None else ""


def site_of(op: Operation) -> dict[str, str]:
    attr = op.attributes.get(SITE_ATTR)
    if isinstance(attr, DictionaryAttr):
        return {k: v.data for k, v in attr.data.items() if isinstance(v, StringAttr)}
    return {}


def set_site(op: Operation, site: dict[str, str]) -> None:
    op.attributes[SITE_ATTR] = DictionaryAttr({k: StringAttr(v) for k, v in site.items()})


def kernel_name(f: func.FuncOp) -> str:
    """The kernel a function belongs to: outlined parallel bodies `k__par0` belong to `k`."""
    return re.sub(r"(__par\d+)+$", "", f.sym_name.data)


def _memref_root(v: SSAValue) -> SSAValue:
    """Look through the casts that rebuild memrefs from (ptr, dims) during the lowering."""
    while isinstance(v.owner, UnrealizedConversionCastOp):
        if len(v.owner.results) != 1 or not v.owner.inputs:
            break
        v = v.owner.inputs[0]
    return v


def _describe_local(v: SSAValue, f: func.FuncOp) -> str:
    if isinstance(v, BlockArgument):
        if v.block is f.body.blocks[0]:
            return f"%{v.name_hint}" if v.name_hint else f"argument #{v.index}"
        return "a block argument"
    hint = f"%{v.name_hint}" if v.name_hint else ""
    owner = v.owner
    kind = {"mem.alloca": "stack buffer", "mem.alloc": "heap buffer", "mem.slot": "arena buffer",
            "mem.view": "view"}.get(owner.name, "buffer") if isinstance(owner, Operation) else "buffer"
    return f"{kind} {hint}".strip()


class Instrumenter:
    """The checked-mode part of one module's mem -> llvm rewrite (see the module docstring).

    Built before the lowering starts (it reads the access sites while memrefs are still values)."""

    def __init__(self, module: Operation):
        self.module = module
        self.sites: dict[Operation, str] = {}  # access -> site string
        self.counters: dict[str, int] = {}
        self.scratch: dict[func.FuncOp, tuple[SSAValue, int]] = {}
        funcs = [f for f in module.walk() if isinstance(f, func.FuncOp) and f.body.blocks]
        self.accesses: dict[func.FuncOp, list[Operation]] = {}
        self.by_buffer: dict[SSAValue, list[dict[str, str]]] = {}  # memref value -> known sites
        self.callers: dict[str, list[func.CallOp]] = {}
        for op in module.walk():
            if isinstance(op, func.CallOp):
                self.callers.setdefault(op.callee.string_value(), []).append(op)
        for f in funcs:
            accesses = self.accesses[f] = [op for op in f.walk() if isinstance(op, mem.LoadOp | mem.StoreOp)]
            for op in accesses:
                site = site_of(op)
                if site:
                    self.by_buffer.setdefault(_memref_root(op.memref), []).append(site)
        for f in funcs:
            self._collect(f)

    # ------------------------------------------------------------ site names

    def _known(self, buf: SSAValue, depth: int = 0) -> list[dict[str, str]]:
        """Sites known for buffer `buf`, following function arguments to the (single) caller's value:
        an outlined parallel body's argument is its kernel's buffer."""
        known = self.by_buffer.get(buf, [])
        if known or depth > 4 or not isinstance(buf, BlockArgument):
            return known
        f = buf.block.parent_op()
        if not isinstance(f, func.FuncOp) or buf.block is not f.body.blocks[0]:
            return known
        calls = self.callers.get(f.sym_name.data, [])
        if len(calls) != 1 or buf.index >= len(calls[0].arguments):
            return known
        return self._known(_memref_root(calls[0].arguments[buf.index]), depth + 1)

    def _collect(self, f: func.FuncOp) -> None:
        accesses = self.accesses[f]
        fsites = [site_of(op) for op in accesses if site_of(op)]
        fnode = location_name(f.location) if isinstance(f.location, NameLoc) else ""
        if not fnode:  # an outlined body or a scheduled kernel: the one node its named accesses have
            nodes = {s.get("node", "") for s in fsites} - {""}
            fnode = nodes.pop() if len(nodes) == 1 else location_name(f.location)
        blocks = sorted({s.get("block", "") for s in fsites} - {""}, key=len, reverse=True)
        for op in accesses:
            site = site_of(op)
            buf = _memref_root(op.memref)
            if not site:
                known = self._known(buf)
                site = {}
                for key in ("block", "node", "buffer"):
                    values = sorted({s.get(key, "") for s in known} - {""})
                    if values:
                        site[key] = " or ".join(values)
                if not site.get("block") and buf.name_hint:
                    # scheduling's own buffers are named after their block (%matmul_acc)
                    site["block"] = next((b for b in blocks if buf.name_hint.startswith(b)), "")
            if not site.get("node") and site.get("block"):  # the node of that block's named accesses
                nodes = {s.get("node", "") for s in fsites if s.get("block") == site["block"]} - {""}
                if len(nodes) == 1:
                    site["node"] = nodes.pop()
            if not site.get("node"):
                site["node"] = location_name(op.location) if isinstance(op.location, NameLoc) else fnode
            if not site.get("buffer"):
                site["buffer"] = _describe_local(buf, f)
            t = op.memref.type
            assert isinstance(t, MemRefType)
            vtype = op.result.type if isinstance(op, mem.LoadOp) else op.value.type
            lanes = vtype.get_shape()[-1] if isinstance(vtype, VectorType) else 1
            fields = [
                kernel_name(f), site.get("block", ""), site["buffer"], site["node"],
                "load" if isinstance(op, mem.LoadOp) else "store", str(lanes), str(t.element_type),
                str(t),
            ]
            self.sites[op] = SEP.join(x.replace(SEP, " ") for x in fields)

    def _site_global(self, f: func.FuncOp, text: str) -> str:
        fname = f.sym_name.data
        n = self.counters.get(fname, 0)
        self.counters[fname] = n + 1
        name = f"__mm_site.{fname}.{n}"
        data = text.encode("utf-8") + b"\x00"
        g = llvm.GlobalOp(
            llvm.LLVMArrayType(IntAttr(len(data)), i8), name, "internal",
            constant=True, value=StringAttr(data.decode("utf-8")),
        )
        self.module.body.block.add_op(g)  # type: ignore[attr-defined]
        return name

    # ------------------------------------------------------------ bounds

    def guard(self, low, b, op: Operation, memref_index: int, ptr: SSAValue) -> SSAValue:
        """Emit the bounds check of access `op` (anchored at `b`, `ptr` its address); returns the
        pointer to access through (`ptr`, or the scratch slot when an index is out of bounds)."""
        from minimlir.passes.to_llvm.mem import _const_int, _dims, element_bytes

        t = op.operands[memref_index].type
        assert isinstance(t, MemRefType)
        indices = list(op.indices)
        dims = _dims(t, low.desc(op, memref_index)[1])
        vtype = op.result.type if isinstance(op, mem.LoadOp) else op.value.type
        lanes = vtype.get_shape()[-1] if isinstance(vtype, VectorType) else 1
        access_bytes = lanes * element_bytes(t.element_type)
        if not indices:
            return ptr
        conds: list[SSAValue] = []
        bad_const = False
        idx_vals: list = []
        rank = len(indices)
        for k, (idx, d) in enumerate(zip(indices, dims)):
            c = _const_int(idx)
            i = c if c is not None else low.as_i64(idx)
            idx_vals.append(i)
            width = lanes if k == rank - 1 else 1
            if isinstance(i, int) and isinstance(d, int):
                if not (0 <= i and i + width <= d):
                    bad_const = True
                continue
            conds.append(b.icmp(i, d, "ult"))
            if width > 1:
                end = b(llvm.AddOp(b.value(i), b.const(width))).results[0]
                conds.append(b.icmp(end, d, "ule"))
        if bad_const:
            ok = b.const(0, i1)
        elif not conds:
            return ptr
        else:
            ok = conds[0]
            for c in conds[1:]:
                ok = b(llvm.AndOp(ok, c)).results[0]
        fn = _func_of_op(op)
        scratch = self.scratch_ptr(low, fn, access_bytes)
        site = self._site_global(fn, self.sites.get(op) or self._fallback_site(op, fn, t))
        pred = op.parent_block()
        assert pred is not None
        # the pointer is a block argument (a phi): in bounds the address, else the scratch slot
        cont = pred.split_before(op, arg_types=[llvm.LLVMPointerType()])
        bad = Block()
        Rewriter.insert_block(bad, BlockInsertPoint.before(cont))
        pred.add_op(llvm.CondBrOp(ok, cont, [ptr], bad, []))
        bad.add_op(llvm.BrOp(cont, scratch))
        from minimlir.passes.to_llvm.mem import _Emitter

        bb = _Emitter(bad.last_op, low)
        args = [bb(llvm.AddressOfOp(site, llvm.LLVMPointerType())).results[0], bb.const(rank)]
        args += [bb.value(v) for v in idx_vals[:MAX_RANK]] + [bb.const(0)] * (MAX_RANK - min(rank, MAX_RANK))
        args += [bb.value(d) for d in list(dims)[:MAX_RANK]] + [bb.const(0)] * (MAX_RANK - min(rank, MAX_RANK))
        low.declare(FAIL_FN, [llvm.LLVMPointerType(), *([i64] * (1 + 2 * MAX_RANK))], None)
        bb(llvm.CallOp(FAIL_FN, *args))
        safe = cont.args[0]
        return safe

    def guard_slot(self, low, b, op: Operation, arena_op: Operation | None, offset, nbytes) -> Block | None:
        """Check that slot `op` (bytes [offset, offset + nbytes) of its arena) fits in the arena.
        Returns the block that continues when it fits (the slot's poison goes there), or None when
        that is known statically. When it does not fit: record it and, in an entry function, free
        the arena and what is live, and return status 3 (the runtime raises CheckError); elsewhere
        skip the poison and go on."""
        from minimlir.passes.to_llvm.mem import _dims

        arena_t = op.operands[0].type
        assert isinstance(arena_t, MemRefType)
        (arena_bytes,) = _dims(arena_t, low.desc(op, 0)[1])
        end = b.add(offset, nbytes)
        if isinstance(end, int) and isinstance(arena_bytes, int):
            if end <= arena_bytes:
                return None
            ok = b.const(0, i1)
        else:
            ok = b.icmp(end, arena_bytes, "ule")
        fn = _func_of_op(op)
        t = op.results[0].type
        name = f"%{op.results[0].name_hint}" if op.results[0].name_hint else "a slot"
        text = SEP.join([fn.sym_name.data, "", f"arena {name}", location_name(op.location), "slot", "1",
                         str(t.element_type if isinstance(t, MemRefType) else t), str(t)])
        site = self._site_global(fn, text)
        pred = op.parent_block()
        assert pred is not None
        cont = pred.split_before(op)
        fill, bad = Block(), Block()
        Rewriter.insert_block([fill, bad], BlockInsertPoint.before(cont))
        pred.add_op(llvm.CondBrOp(ok, fill, [], bad, []))
        fill.add_op(llvm.BrOp(cont))
        bad.add_op(llvm.UnreachableOp())
        from minimlir.passes.to_llvm.mem import _Emitter

        bb = _Emitter(bad.last_op, low)
        zeros = [bb.const(0)] * (MAX_RANK - 2)
        args = [bb(llvm.AddressOfOp(site, llvm.LLVMPointerType())).results[0], bb.const(2),
                bb.value(offset), bb.value(nbytes), *zeros, bb.value(arena_bytes), bb.const(0), *zeros]
        low.declare(FAIL_FN, [llvm.LLVMPointerType(), *([i64] * (1 + 2 * MAX_RANK))], None)
        bb(llvm.CallOp(FAIL_FN, *args))
        if fn in low.results_arg and arena_op is not None:
            from xdsl.dialects import func as func_d

            low.declare("free", [llvm.LLVMPointerType()], None)
            for buf in [*low.live_before.get(arena_op, ()), arena_op]:
                ptr = low.heap_ptr.get(buf)
                if ptr is not None:
                    bb(llvm.CallOp("free", ptr))
            code = bb.const(3, IntegerType(32))
            bad.last_op.detach()
            bad.add_op(func_d.ReturnOp(code))
        else:
            bad.last_op.detach()
            bad.add_op(llvm.BrOp(cont))
        return fill

    def _fallback_site(self, op: Operation, f: func.FuncOp, t: MemRefType) -> str:
        return SEP.join([kernel_name(f), "", "a buffer", location_name(f.location), op.name[4:], "1",
                         str(t.element_type), str(t)])

    def scratch_ptr(self, low, f: func.FuncOp, nbytes: int) -> SSAValue:
        """A stack slot of at least `nbytes` in `f`'s entry block (one per function, grown if needed)."""
        have = self.scratch.get(f)
        if have is not None and have[1] >= nbytes:
            return have[0]
        size = max(256, nbytes)
        ptr = low.hoisted_alloca(f, size, i8)
        self.scratch[f] = (ptr, size)
        return ptr

    # ------------------------------------------------------------ poison

    def poison(self, low, b, ptr: SSAValue, nbytes, element: Attribute) -> None:
        """Fill `nbytes` at `ptr` with the poison pattern of `element` (before `b`'s anchor)."""
        if isinstance(nbytes, int) and nbytes <= 0:
            return
        low.declare(POISON_FN, [llvm.LLVMPointerType(), i64, i64], None)
        b(llvm.CallOp(POISON_FN, ptr, b.value(nbytes), b.const(poison_word(element))))


def _func_of_op(op: Operation) -> func.FuncOp:
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, func.FuncOp):
        parent = parent.parent_op()
    assert parent is not None
    return parent


_ = (IntegerAttr,)
