"""Read a symbol's bytes out of an ELF64 shared object without loading it (no dlopen, no code run).

    read_symbol("model.so", "minimlir_metadata")   # -> bytes of the object, from the file
    elf_machine("model.so")                        # -> "x86_64", "aarch64", ...

Only what the artifact loader needs: the ELF header, the section headers, the dynamic symbol table
(.dynsym/.dynstr), and the program headers (every loadable segment must lie inside the file: a
truncated `.so` is reported here instead of faulting inside dlopen).
"""

from __future__ import annotations

import mmap
import os
import struct

MACHINES = {62: "x86_64", 183: "aarch64", 3: "x86", 40: "arm", 243: "riscv64"}


class ElfError(ValueError):
    """Not a (complete) ELF64 little-endian shared object; the message names the file."""


def _read(path: str | os.PathLike[str]) -> bytes | mmap.mmap:
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size == 0:
            raise ElfError(f"{path}: empty file (not a shared object)")
        return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)


def _header(data, path) -> tuple:
    if len(data) < 64 or data[:4] != b"\x7fELF":
        truncated = len(data) < 64 and data[:4] == b"\x7fELF"
        raise ElfError(f"{path}: not an ELF file" + (" (truncated)" if truncated else ""))
    if data[4] != 2 or data[5] != 1:
        raise ElfError(f"{path}: not a 64-bit little-endian ELF file")
    (e_type, e_machine, _, _, e_phoff, e_shoff, _, _, e_phentsize, e_phnum, e_shentsize, e_shnum,
     _) = struct.unpack_from("<HHIQQQIHHHHHH", data, 16)
    if e_type != 3:
        raise ElfError(f"{path}: not a shared object (ELF type {e_type})")
    return e_machine, e_phoff, e_phentsize, e_phnum, e_shoff, e_shentsize, e_shnum


def elf_machine(path: str | os.PathLike[str]) -> str:
    data = _read(path)
    try:
        machine = _header(data, path)[0]
    finally:
        data.close()
    return MACHINES.get(machine, f"machine {machine}")


def read_symbol(path: str | os.PathLike[str], name: str) -> tuple[str, bytes]:
    """(the file's machine, the bytes of the dynamic symbol `name`), checking that the file is whole."""
    data = _read(path)
    try:
        return _read_symbol(data, path, name)
    finally:
        data.close()


def _read_symbol(data, path, name: str) -> tuple[str, bytes]:
    size = len(data)
    machine, phoff, phentsize, phnum, shoff, shentsize, shnum = _header(data, path)
    if phoff + phnum * phentsize > size or shoff + shnum * shentsize > size or shnum == 0:
        raise ElfError(f"{path}: truncated (the ELF headers lie beyond the end of the file, {size} bytes)")
    for k in range(phnum):
        p_type, _, p_offset, _, _, p_filesz, _, _ = struct.unpack_from("<IIQQQQQQ", data, phoff + k * phentsize)
        if p_type == 1 and p_offset + p_filesz > size:  # PT_LOAD
            raise ElfError(f"{path}: truncated (a loadable segment ends at byte {p_offset + p_filesz}, "
                           f"the file has {size})")
    sections = []
    for k in range(shnum):
        (_, sh_type, _, sh_addr, sh_offset, sh_size, sh_link, _, _, sh_entsize) = struct.unpack_from(
            "<IIQQQQIIQQ", data, shoff + k * shentsize)
        if sh_type != 8 and sh_offset + sh_size > size:  # SHT_NOBITS has no file bytes
            raise ElfError(f"{path}: truncated (section {k} ends at byte {sh_offset + sh_size}, the file has {size})")
        sections.append((sh_type, sh_addr, sh_offset, sh_size, sh_link, sh_entsize))
    dynsym = next((s for s in sections if s[0] == 11), None)  # SHT_DYNSYM
    if dynsym is None:
        raise ElfError(f"{path}: no dynamic symbol table (not a minimlir artifact)")
    strtab = sections[dynsym[4]]
    want = name.encode()
    entsize = dynsym[5] or 24
    for off in range(dynsym[2], dynsym[2] + dynsym[3], entsize):
        st_name, _, _, st_shndx, st_value, st_size = struct.unpack_from("<IBBHQQ", data, off)
        start = strtab[2] + st_name
        end = data.find(b"\0", start, strtab[2] + strtab[3])
        if end < 0 or data[start:end] != want:
            continue
        if st_shndx == 0 or st_shndx >= len(sections):
            break
        sec = sections[st_shndx]
        file_off = st_value - sec[1] + sec[2]
        if file_off < sec[2] or file_off + st_size > sec[2] + sec[3]:
            raise ElfError(f"{path}: symbol '{name}' lies outside its section")
        return MACHINES.get(machine, f"machine {machine}"), bytes(data[file_off : file_off + st_size])
    raise ElfError(f"{path}: no symbol '{name}' (not a minimlir artifact)")
