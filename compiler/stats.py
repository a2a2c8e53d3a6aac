"""This process's compile counters (tests tell cache hits from misses, and count parses and passes)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class CompileStats:
    compiles: int = 0
    hits: int = 0
    misses: int = 0
    parses: int = 0
    passes_run: int = 0  # every pass run (nested ones included)


_STATS = CompileStats()


def compile_stats() -> CompileStats:
    return _STATS


def reset_compile_stats() -> None:
    global _STATS
    _STATS = CompileStats()
