"""The mem-plan interval planners: greedy-by-size static offsets and dynamic slot sharing."""

import random

import pytest

from minimlir.passes.mem.plan import (
    align_up,
    lifetimes_overlap,
    max_live_bytes,
    plan_static,
    share_slots,
)


def _random_buffers(rng: random.Random, n: int, ops: int):
    sizes = [rng.choice([0, 1, 4, 60, 64, 65, 100, 256, 1000, 4096]) for _ in range(n)]
    lifetimes = []
    for _ in range(n):
        start = rng.randrange(ops)
        lifetimes.append((start, rng.randrange(start, min(ops, start + ops // 3 + 1))))
    return sizes, lifetimes


@pytest.mark.parametrize("seed", range(40))
def test_static_plan_never_overlaps_live_buffers(seed):
    rng = random.Random(seed)
    sizes, lifetimes = _random_buffers(rng, rng.randrange(1, 30), rng.randrange(2, 40))
    alignment = rng.choice([1, 16, 64])
    offsets, arena = plan_static(sizes, lifetimes, alignment)
    for k, (off, size) in enumerate(zip(offsets, sizes)):
        assert off % alignment == 0
        assert off + size <= arena
        for j in range(k):
            if lifetimes_overlap(lifetimes[k], lifetimes[j]) and sizes[k] and sizes[j]:
                disjoint = off + size <= offsets[j] or offsets[j] + sizes[j] <= off
                assert disjoint, (k, j, offsets, sizes, lifetimes)
    assert arena >= max_live_bytes(sizes, lifetimes)
    # never worse than giving every buffer its own aligned region
    assert arena <= sum(align_up(s, alignment) for s in sizes)


def test_disjoint_lifetimes_share_offset_and_overlapping_do_not():
    offsets, arena = plan_static([64, 64, 64], [(0, 2), (1, 4), (3, 5)])
    assert offsets[0] == offsets[2]          # 0 dies before 2 is born
    assert offsets[0] != offsets[1] and offsets[1] != offsets[2]
    assert arena == 128


def test_largest_first_then_lowest_aligned_fit():
    # The big one goes first at 0; the small ones that overlap it go above it, aligned.
    offsets, arena = plan_static([10, 1000, 10], [(0, 1), (0, 3), (2, 3)], alignment=64)
    assert offsets == [1024, 0, 1024]
    assert arena == 1034


def test_freed_region_below_live_buffers_is_reused():
    # a [0,64) and c [128,192) live throughout; b (64 bytes) fits in the gap [64,128).
    sizes = [64, 128, 64, 64]
    lifetimes = [(0, 9), (0, 1), (0, 9), (5, 9)]
    offsets, arena = plan_static(sizes, lifetimes)
    # 128-byte buffer first at 0; the two 64-byte ones living with it above it.
    assert offsets[1] == 0
    assert sorted([offsets[0], offsets[2]]) == [128, 192]
    assert offsets[3] == 0                   # the 128 bytes at 0 are free again after op 1
    assert arena == 256


def test_empty_plan():
    assert plan_static([], []) == ([], 0)


@pytest.mark.parametrize("seed", range(20))
def test_shared_dynamic_slots_have_same_key_and_disjoint_lifetimes(seed):
    rng = random.Random(seed)
    n = rng.randrange(1, 25)
    keys = [rng.choice(["n", "m", ("n", "m")]) for _ in range(n)]
    _, lifetimes = _random_buffers(rng, n, 30)
    slots = share_slots(keys, lifetimes)
    for k in range(n):
        for j in range(k):
            if slots[k] == slots[j]:
                assert keys[k] == keys[j]
                assert not lifetimes_overlap(lifetimes[k], lifetimes[j])
    # slots are numbered 0.. by first use
    assert sorted(set(slots)) == list(range(len(set(slots))))


def test_share_slots_reuses_only_when_provably_same_size():
    # a and c: same size, disjoint -> share; b: different size -> own slot; d overlaps c -> own slot
    slots = share_slots(["n", "m", "n", "n"], [(0, 1), (0, 5), (2, 3), (3, 4)])
    assert slots == [0, 1, 0, 2]
