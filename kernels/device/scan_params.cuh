// scanrt kernels, level 4 (shared by the device-wide scans): reading the launch flags
// (FLAG_* of the contract, set by src/scan/plan.rs), the per-tile access mode, and what
// a scan starts from.
#pragma once
#include "block/block_scan.cuh"
#include "block/tile_heads.cuh"


template <typename Op>
SCANRT_DEVICE typename Op::T initial_value(unsigned long long init_bits, unsigned flags) {
    typedef typename Op::T Acc;
    if (!(flags & FLAG_HAS_INIT)) return Op::identity();
    return Bits<Acc>::from((typename Bits<Acc>::W)init_bits);
}

// The carry into the first tile: the initial value, or for a segmented scan nothing at
// all (element 0 is always a head, and every head restarts from the initial value).
template <typename Op, bool SEGMENTED>
SCANRT_DEVICE typename CarryOf<Op, SEGMENTED>::Op_::T first_carry(typename Op::T init) {
    if constexpr (SEGMENTED) return SegmentedOp<Op>::identity();
    else return init;
}

SCANRT_DEVICE HeadSource head_source(const void* heads, long long n, unsigned flags) {
    return HeadSource{heads, n, (flags >> HEADS_KIND_SHIFT) & 3u, (flags & FLAG_VECTOR_HEADS) != 0};
}

// Access mode for a tile holding `valid` of its `tile` elements.
SCANRT_DEVICE int tile_mode(long long valid, int tile, bool vector_ok) {
    if (valid < tile) return SCANRT_MODE_PARTIAL;
    return vector_ok ? SCANRT_MODE_VECTOR : SCANRT_MODE_SCALAR;
}
