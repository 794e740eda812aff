// scanrt kernels, level 3c: the segment heads of a thread's row, for segmented scans.
//
// Segments arrive as *start flags in physical (forward) order*, s(p), in one of four forms
// (SCANRT_HEADS_*): a byte per element (nonzero = starts a segment), bits packed 32 to a
// u32 word (bit i of word w = element 32w + i), or keys of 4 or 8 bytes (an element starts
// a segment where its key differs from the previous element's key: scan by key). The
// segments are the same in both directions; the traversal's heads follow from s:
//   forward   element p is a head iff p == 0     or s(p)
//   backward  element p is a head iff p == n - 1 or s(p + 1)
// i.e. a backward scan treats a start flag as the end of its segment (seed 004, 4.2.1).
// The block level wants, per data thread, a mask of the heads in its row of ITEMS logical
// elements (bit i = element tid * ITEMS + i of the tile).
#pragma once
#include "block/tile_io.cuh"

#define SCANRT_HEADS_BYTES 0
#define SCANRT_HEADS_BITS  1
#define SCANRT_HEADS_KEYS4 2
#define SCANRT_HEADS_KEYS8 3

struct HeadSource {
    const void* data;
    long long n;
    unsigned kind;   // SCANRT_HEADS_*
    bool vector_ok;  // byte flags whose rows may be read as one aligned vector (set by the host)

    SCANRT_DEVICE bool starts(long long p) const {
        switch (kind) {
        case SCANRT_HEADS_BYTES: return __ldg((const u8*)data + p) != 0;
        case SCANRT_HEADS_BITS: return (__ldg((const u32*)data + (p >> 5)) >> (p & 31)) & 1u;
        case SCANRT_HEADS_KEYS4: return p > 0 && __ldg((const u32*)data + p) != __ldg((const u32*)data + p - 1);
        default: return p > 0 && __ldg((const u64*)data + p) != __ldg((const u64*)data + p - 1);
        }
    }
    template <bool REVERSE>
    SCANRT_DEVICE bool head(long long p) const {
        return REVERSE ? (p == n - 1 || starts(p + 1)) : (p == 0 || starts(p));
    }
};

// One bit per nonzero byte of a 4-byte word (bit j = byte j).
SCANRT_DEVICE u32 nonzero_bytes(u32 w) {
    u32 m = __vcmpne4(w, 0u) & 0x01010101u;
    return (m | (m >> 7) | (m >> 14) | (m >> 21)) & 0xfu;
}

// Start flags of ITEMS consecutive bytes at an ITEMS-aligned address (bit j = byte j).
template <int ITEMS>
SCANRT_DEVICE u32 load_byte_flags(const u8* p) {
    if constexpr (ITEMS == 16) {
        const uint4 v = __ldg(reinterpret_cast<const uint4*>(p));
        return nonzero_bytes(v.x) | nonzero_bytes(v.y) << 4 | nonzero_bytes(v.z) << 8 | nonzero_bytes(v.w) << 12;
    } else {
        static_assert(ITEMS == 8, "byte-flag vectors cover rows of 8 or 16 items");
        const uint2 v = __ldg(reinterpret_cast<const uint2*>(p));
        return nonzero_bytes(v.x) | nonzero_bytes(v.y) << 4;
    }
}

// Heads of this thread's row in the tile whose physical span starts at `start`. All data
// threads call it (the backward byte path shuffles within the warp).
template <int THREADS, int ITEMS, bool REVERSE>
SCANRT_DEVICE u32 row_heads(const HeadSource& src, long long start, long long valid, int tid) {
    const int TILE = THREADS * ITEMS;
    constexpr bool ROW_IS_A_VECTOR = ITEMS == 16 || ITEMS == 8;
    if (ROW_IS_A_VECTOR && src.kind == SCANRT_HEADS_BYTES && src.vector_ok && valid == TILE) {
        const u8* flags = (const u8*)src.data;
        if (!REVERSE) {
            const long long q = start + tid * ITEMS;  // the row's physical span, ascending
            return load_byte_flags<ROW_IS_A_VECTOR ? ITEMS : 16>(flags + q) | (q == 0 ? 1u : 0u);
        }
        // Backward: logical element i of the row is physical q + ITEMS - 1 - i, whose head
        // flag is s(q + ITEMS - i). Bits 1.. come from this row's own bytes, reversed; bit 0
        // needs s(q + ITEMS), the first byte of the previous thread's row.
        const long long q = start + TILE - (long long)(tid + 1) * ITEMS;
        const u32 own = load_byte_flags<ROW_IS_A_VECTOR ? ITEMS : 16>(flags + q);
        u32 next = __shfl_up_sync(0xffffffffu, own & 1u, 1);
        if ((tid & 31) == 0) next = q + ITEMS < src.n ? (flags[q + ITEMS] != 0) : 1u;
        const u32 reversed = __brev(own) >> (32 - ITEMS);  // bit i = s(q + ITEMS - 1 - i)
        return ((reversed << 1) & ((1u << ITEMS) - 1u)) | next;
    }
    u32 mask = 0;
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
        const int e = tid * ITEMS + i;
        if (e < valid && src.template head<REVERSE>(start + logical_index<REVERSE>(e, valid))) mask |= 1u << i;
    }
    return mask;
}
