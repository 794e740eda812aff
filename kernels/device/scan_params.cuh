// scanrt kernels, level 4 (shared by the device-wide scans): reading the launch flags
// (FLAG_* of the contract, set by src/scan/plan.rs), the per-tile access mode, and what
// a scan starts from.
#pragma once
#include "block/block_scan.cuh"
#include "block/tile_heads.cuh"


// The initial value: the identity, or the bits in `init_bits` (the low bytes for 4-byte
// types). Values wider than 8 bytes (user-defined states) cannot travel in one word:
// `init_bits` is then the address of their bytes (the kernel's own parameter block,
// OperatorParams::init). A carry in device memory (FLAG_INIT_IN_MEMORY) is an address too,
// and with FLAG_INIT_FOLD that of several states to fold.
template <typename Op>
SCANRT_DEVICE typename Op::T initial_value(unsigned long long init_bits, unsigned flags) {
    typedef typename Op::T Acc;
    if (!(flags & FLAG_HAS_INIT)) return Op::identity();
    if constexpr (sizeof(Acc) == 4 || sizeof(Acc) == 8)
        if (!(flags & FLAG_INIT_IN_MEMORY)) return Bits<Acc>::from((typename Bits<Acc>::W)init_bits);
    const char* states = (const char*)init_bits;
    Acc v;
    if (!(flags & FLAG_INIT_FOLD)) {
        memcpy(&v, states, sizeof(Acc));
        return v;
    }
    // A few states (one per earlier rank), read by each thread that asks: a loop here
    // costs less than a launch of their scan. The host passes at least two.
    const unsigned count = flags >> INIT_FOLD_COUNT_SHIFT;
    const bool descending = (flags & FLAG_INIT_FOLD_DESCENDING) != 0;
    for (unsigned i = 0; i < count; ++i) {
        Acc next;
        memcpy(&next, states + (descending ? count - 1 - i : i) * sizeof(Acc), sizeof(Acc));
        v = i == 0 ? next : Op::combine(v, next);
    }
    return v;
}

// Writes an unsegmented scan's total (the initial value combined with every element) to
// `carry_out`, when the host asked for it (the one thread that knows it calls this).
template <typename Acc> SCANRT_DEVICE void write_total(unsigned long long carry_out, const Acc& total) {
    if (carry_out) memcpy((void*)carry_out, &total, sizeof(Acc));
}

// The carry into the first tile: the initial value, or for a segmented scan nothing at
// all (element 0 is always a head, and every head restarts from the initial value).
template <typename Op, bool SEGMENTED>
SCANRT_DEVICE typename CarryOf<Op, SEGMENTED>::Op_::T first_carry(typename Op::T init) {
    if constexpr (SEGMENTED) return SegmentedOp<Op>::identity();
    else return init;
}

SCANRT_DEVICE HeadSource head_source(const void* heads, long long n, unsigned flags) {
    return HeadSource{heads, n, (flags >> HEADS_KIND_SHIFT) & HEADS_KIND_MASK, (flags & FLAG_VECTOR_HEADS) != 0};
}

// Access mode for a tile holding `valid` of its `tile` elements.
SCANRT_DEVICE int tile_mode(long long valid, int tile, bool vector_ok) {
    if (valid < tile) return SCANRT_MODE_PARTIAL;
    return vector_ok ? SCANRT_MODE_VECTOR : SCANRT_MODE_SCALAR;
}
