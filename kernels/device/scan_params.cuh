// scanrt kernels, level 4 (shared by the device-wide algorithms): launch flags and the
// per-tile access mode. The host (src/gpu/launch.rs) sets the same bits.
#pragma once
#include "block/tile_io.cuh"

#define SCANRT_FLAG_INCLUSIVE  1u  // inclusive scan (else exclusive)
#define SCANRT_FLAG_HAS_INIT   2u  // init_bits holds an initial value (else the identity)
#define SCANRT_FLAG_VECTOR_IN  4u  // input pointer is 16-byte aligned
#define SCANRT_FLAG_VECTOR_OUT 8u  // output pointer is 16-byte aligned

template <typename Op>
SCANRT_DEVICE typename Op::T initial_value(unsigned long long init_bits, unsigned flags) {
    typedef typename Op::T Acc;
    if (!(flags & SCANRT_FLAG_HAS_INIT)) return Op::identity();
    return Bits<Acc>::from((typename Bits<Acc>::W)init_bits);
}

// Access mode for a tile holding `valid` of its `tile` elements.
SCANRT_DEVICE int tile_mode(long long valid, int tile, bool vector_ok) {
    if (valid < tile) return SCANRT_MODE_PARTIAL;
    return vector_ok ? SCANRT_MODE_VECTOR : SCANRT_MODE_SCALAR;
}
