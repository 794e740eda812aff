// scanrt kernels, level 4 (shared by the device-wide algorithms): launch flags, the
// per-tile access mode, and what a scan starts from. The host (src/gpu/launch.rs) sets
// the same bits.
#pragma once
#include "block/block_scan.cuh"
#include "block/tile_heads.cuh"

#define SCANRT_FLAG_INCLUSIVE     1u   // inclusive scan (else exclusive)
#define SCANRT_FLAG_HAS_INIT      2u   // init_bits holds an initial value (else the identity)
#define SCANRT_FLAG_VECTOR_IN     4u   // input tiles are 16-byte aligned (forward: the pointer; backward: its end)
#define SCANRT_FLAG_VECTOR_OUT    8u   // output tiles likewise
#define SCANRT_FLAG_DETERMINISTIC 16u  // single-pass: timing-independent look-back (anchor tiles)
#define SCANRT_FLAG_VECTOR_HEADS  32u  // byte flags or keys aligned like the tiles (see HeadSource)
#define SCANRT_HEADS_KIND_SHIFT   6    // bits 6-7: the SCANRT_HEADS_* kind of a segmented scan

template <typename Op>
SCANRT_DEVICE typename Op::T initial_value(unsigned long long init_bits, unsigned flags) {
    typedef typename Op::T Acc;
    if (!(flags & SCANRT_FLAG_HAS_INIT)) return Op::identity();
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
    return HeadSource{heads, n, (flags >> SCANRT_HEADS_KIND_SHIFT) & 3u, (flags & SCANRT_FLAG_VECTOR_HEADS) != 0};
}

// Access mode for a tile holding `valid` of its `tile` elements.
SCANRT_DEVICE int tile_mode(long long valid, int tile, bool vector_ok) {
    if (valid < tile) return SCANRT_MODE_PARTIAL;
    return vector_ok ? SCANRT_MODE_VECTOR : SCANRT_MODE_SCALAR;
}
