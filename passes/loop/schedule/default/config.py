"""Knobs of the default schedule: one dataclass per rule, ScheduleConfig holds them all (a tuner
searches these), and the host's vector width."""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass, field


DEFAULT_KC = 256  # the matmul's reduction tile unless kc is set


@dataclass(frozen=True)
class MatmulKnobs:
    """Register tile mr x (nv*W), cache tiles mc (rows per parallel chunk) and kc (reduction)."""

    mr: int = 0  # 0: from the register budget (matmul.register_tile: 6 x 2 with 16 registers, 8 x 2 with 32)
    nv: int = 0
    # 0: the rule's (matmul.row_block_rows: 64 rows, or as many as keep A's block in a quarter of L2
    # where B's panel is packed, since every row block packs B again)
    mc: int = 0
    kc: int = 0  # 0: DEFAULT_KC
    unroll_rows: bool = True
    accumulate_in_registers: bool = True
    # copy B's kc x (nv*W) tile into a local buffer (cache_read) once per row block; None: the
    # rule decides (on for a static M of at least 4 row tiles: 1.3-1.5x faster with 16 registers,
    # 1.2-1.3x with 32 on BERT's matmuls, whose B rows lie 2-8 KB apart)
    pack_b: bool | None = None
    clamp_rows: bool = True  # ragged row tiles compute row min(i, M-1), so they stay in registers
    # dynamic M: a run-time branch per row tile, a ragged tile (M < mr: a decode step) runs one row
    # at a time instead of mr clamped rows (matmul._version_rows)
    row_version: bool = True
    # static M <= small_m (a matrix-vector product, an FC layer at batch 1): mr = M and a wide,
    # short tile, so each k0 block streams small_kc rows of B sequentially, nv*W floats a visit
    small_m: int = 4
    small_nv: int = 4
    small_kc: int = 8
    fma: bool = True
    parallel: bool = True

    def tile_k(self) -> int:
        """The reduction tile: kc, else DEFAULT_KC. A K up to it runs in one pass (the matmul's
        epilogue is applied in registers)."""
        return self.kc or DEFAULT_KC


@dataclass(frozen=True)
class ConvKnobs:
    """Register tile: up to rw output columns (unrolled) x nv*W output channels (nv vectors)."""

    rw: int = 8
    nv: int = 2
    fma: bool = True
    parallel: bool = True
    vectorize: bool = True
    pad_input: bool = True  # copy the input into a zero-padded local buffer (no select in the tile)


@dataclass(frozen=True)
class GenericKnobs:
    parallel: bool = True
    vectorize: bool = True
    min_vector_extent: int = 8  # static innermost extents below this stay scalar
    inline_elementwise: bool = True  # compute-inline elementwise chains (no intermediate buffers)
    fuse_rows: bool = False  # fuse sibling nests level by level (a tuner's choice: slower on softmax rows)
    reassoc_reductions: bool = True  # innermost row reductions may be reassociated (vectorized)
    vectorize_windows: bool = True  # window reductions (pools) run their output loop innermost, vectorized


@dataclass(frozen=True)
class ScheduleConfig:
    """All knobs of the default schedule. `width` is the vector width in f32 lanes."""

    width: int = 8
    registers: int = 0  # vector registers (the register tiles' budget); 0: 32 with 16 lanes, else 16
    matmul: MatmulKnobs = field(default_factory=MatmulKnobs)
    conv2d: ConvKnobs = field(default_factory=ConvKnobs)
    generic: GenericKnobs = field(default_factory=GenericKnobs)
    fuse_consumers: bool = True

    @staticmethod
    def for_host() -> ScheduleConfig:
        """The knobs for the machine being compiled for: the host, or the target an artifact build
        set with backend/_target.py `using` (`mini-compile --target/--cpu`)."""
        from minimlir.backend import _target

        target = _target.current()
        if target is not None:
            return ScheduleConfig(width=target.vector_width, registers=target.vector_registers)
        return ScheduleConfig(width=host_vector_width())

    @property
    def vector_registers(self) -> int:
        return self.registers or (32 if self.width >= 16 else 16)

    def replace(self, **changes) -> ScheduleConfig:
        return dataclasses.replace(self, **changes)


@functools.cache
def host_vector_width() -> int:
    """f32 lanes of the widest vector unit: 16 with AVX-512F, 8 with AVX2 (or AVX), else 4."""
    try:
        import llvmlite.binding as llvm

        from minimlir.backend import _target

        _target.init_llvm()
        feats = llvm.get_host_cpu_features()
    except Exception:  # noqa: BLE001 - no host info: a safe default
        return 8
    if feats.get("avx512f", False):
        return 16
    if feats.get("avx2", False) or feats.get("avx", False):
        return 8
    return 4


