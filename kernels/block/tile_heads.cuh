// scanrt kernels, level 3c: the segment heads of a thread's row, for segmented scans.
//
// Segments arrive as *start flags in physical (forward) order*, s(p), in one of five forms
// (HEADS_*): a byte per element (nonzero = starts a segment), bits packed 32 to a
// u32 word (bit i of word w = element 32w + i), keys of 4 or 8 bytes (an element starts
// a segment where its key differs from the previous element's key: scan by key), or rows
// of one length (batched sequences: s(p) iff p is a multiple of the length, no data). The
// segments are the same in both directions; the traversal's heads follow from s:
//   forward   element p is a head iff p == 0     or s(p)
//   backward  element p is a head iff p == n - 1 or s(p + 1)
// i.e. a backward scan treats a start flag as the end of its segment (seed 004, 4.2.1).
// The block level wants, per data thread, a mask of the heads in its row of ITEMS logical
// elements (bit i = element tid * ITEMS + i of the tile).
//
// In whole tiles a thread reads its row's segment data at once: 16 byte flags as one
// vector, bit flags as one 64-bit window of packed words, keys as 16-byte vectors; the
// one flag or key it needs from the neighbouring row comes from the neighbouring lane by
// a shuffle. The last, partial tile asks per element.
#pragma once
#include "block/tile_io.cuh"
#include "warp/warp_scan.cuh"


struct HeadSource {
    const void* data;
    long long n;
    unsigned kind;   // HEADS_*
    bool vector_ok;  // byte flags or keys whose rows may be read as aligned vectors (set by the host)

    // HEADS_ROWS: `data` holds the row length (at least 1, checked by the host).
    SCANRT_DEVICE long long row_length() const { return (long long)data; }

    SCANRT_DEVICE bool starts(long long p) const {
        switch (kind) {
        case HEADS_BYTES: return __ldg((const u8*)data + p) != 0;
        case HEADS_BITS: return (__ldg((const u32*)data + (p >> 5)) >> (p & 31)) & 1u;
        case HEADS_KEYS4: return p > 0 && __ldg((const u32*)data + p) != __ldg((const u32*)data + p - 1);
        case HEADS_ROWS: return p % row_length() == 0;
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

// Start flags of the ITEMS elements from physical q (bit j = s(q + j)) and, in bit
// ITEMS, s(q + ITEMS): a 64-bit window of the packed words.
SCANRT_DEVICE u32 load_bit_flags(const u32* words, long long n, long long q) {
    const long long w = q >> 5;
    const u32 low = __ldg(words + w);
    const u32 high = (w + 1) * 32 < n ? __ldg(words + w + 1) : 0u;
    return __funnelshift_r(low, high, (u32)(q & 31));
}

// Row masks from physical start flags. `own` holds s(q + j) in bit j for the row's
// physical span [q, q + ITEMS). Forward, logical element i is physical q + i, a head iff
// s(q + i) (or q + i == 0). Backward, logical element i is physical q + ITEMS - 1 - i, a
// head iff s(q + ITEMS - i); i >= 1 reverses bits 1.. of `own`, and i = 0 needs `after`,
// the flag s(q + ITEMS) of the next physical row (or the end of the array).
template <int ITEMS>
SCANRT_DEVICE u32 forward_row_mask(u32 own, long long q) {
    return (own & ((1u << ITEMS) - 1u)) | (q == 0 ? 1u : 0u);
}
template <int ITEMS>
SCANRT_DEVICE u32 backward_row_mask(u32 own, bool after) {
    const u32 reversed = __brev(own) >> (32 - ITEMS);  // bit i = s(q + ITEMS - 1 - i)
    return ((reversed << 1) & ((1u << ITEMS) - 1u)) | (after ? 1u : 0u);
}

// Start flags of the row at physical q from keys (bit j, j >= 1: key j differs from key
// j - 1), plus the neighbouring row's flag the direction needs: forward s(q) in bit 0,
// backward s(q + ITEMS) in *after. The keys come as 16-byte vectors when aligned; the
// neighbouring row's boundary key comes from the neighbouring lane.
template <typename K, int ITEMS, bool REVERSE>
SCANRT_DEVICE u32 key_row_flags(const K* keys, bool vector_ok, long long n, long long q, bool* after) {
    K k[ITEMS];
    constexpr int VEC = 16 / sizeof(K);
    if ((ITEMS % VEC) == 0 && vector_ok) {
#pragma unroll
        for (int r = 0; r < ITEMS / VEC; ++r) {
            const uint4 v = __ldg(reinterpret_cast<const uint4*>(keys + q) + r);
            const K* parts = reinterpret_cast<const K*>(&v);
#pragma unroll
            for (int j = 0; j < VEC; ++j) k[r * VEC + j] = parts[j];
        }
    } else {
#pragma unroll
        for (int j = 0; j < ITEMS; ++j) k[j] = __ldg(keys + q + j);
    }
    u32 own = 0;
#pragma unroll
    for (int j = 1; j < ITEMS; ++j) own |= (k[j] != k[j - 1] ? 1u : 0u) << j;
    const bool first_lane = (threadIdx.x & 31) == 0;
    if (!REVERSE) {  // the previous physical row is the previous lane's
        K before = shfl_up(k[ITEMS - 1], 1);
        if (first_lane && q > 0) before = __ldg(keys + q - 1);
        return own | (q > 0 && before != k[0] ? 1u : 0u);
    }
    K next = shfl_up(k[0], 1);  // backward, the next physical row is the previous lane's
    if (first_lane && q + ITEMS < n) next = __ldg(keys + q + ITEMS);
    *after = q + ITEMS >= n || next != k[ITEMS - 1];
    return own;
}

// Start flags of rows of `length` elements for physical q .. q + ITEMS (bit j = s(q + j)).
template <int ITEMS>
SCANRT_DEVICE u32 row_start_flags(long long length, long long q) {
    // One remainder per row, in 32 bits where both fit (a 64-bit one costs several times
    // as much, and batched scans pay it in every thread of every tile).
    const unsigned long long uq = q, ulength = length;
    const unsigned long long r = ((uq | ulength) >> 32) == 0 ? (u32)uq % (u32)ulength : uq % ulength;
    u32 own = 0;
    for (unsigned long long j = r == 0 ? 0 : ulength - r; j <= ITEMS; j += ulength) own |= 1u << j;
    return own;
}

// Start flags of the groups of G elements from each physical q[c] (whole groups inside
// the array) for the striped tile (block/striped_tile.cuh): bit j of own[c] is
// s(q[c] + j) for j < G, bit G is s(q[c] + G) (0 past the end). One switch on the form,
// then straight-line loads for every chunk, all issued before any is used.
template <typename K, int G>
SCANRT_DEVICE u32 key_group_flags(const K* keys, long long n, long long q) {
    K k[G + 2];  // keys q - 1 .. q + G
    k[0] = q > 0 ? __ldg(keys + q - 1) : K();
#pragma unroll
    for (int j = 0; j < G; ++j) k[j + 1] = __ldg(keys + q + j);
    k[G + 1] = q + G < n ? __ldg(keys + q + G) : K();
    u32 own = 0;
#pragma unroll
    for (int j = 0; j < G; ++j) own |= (q + j > 0 && k[j + 1] != k[j] ? 1u : 0u) << j;
    return own | (q + G < n && k[G + 1] != k[G] ? 1u : 0u) << G;
}
template <int G, int CHUNKS>
SCANRT_DEVICE void group_start_flags(const HeadSource& src, const long long (&q)[CHUNKS], u32 (&own)[CHUNKS]) {
    static_assert(G < 32, "a group's flags and the next one's fit in 32 bits");
    const u32 below_next = (1u << G) - 1u;
    switch (src.kind) {
    case HEADS_BITS:
#pragma unroll
        for (int c = 0; c < CHUNKS; ++c) {
            const u32 window = load_bit_flags((const u32*)src.data, src.n, q[c]);
            own[c] = (window & below_next) | (q[c] + G < src.n ? window & (1u << G) : 0u);
        }
        break;
    case HEADS_ROWS:
#pragma unroll
        for (int c = 0; c < CHUNKS; ++c)
            own[c] = row_start_flags<G>(src.row_length(), q[c]) & (q[c] + G < src.n ? 2u * below_next + 1u : below_next);
        break;
    case HEADS_BYTES: {
        const u8* flags = (const u8*)src.data;
        u8 b[CHUNKS][G + 1];
#pragma unroll
        for (int c = 0; c < CHUNKS; ++c) {
#pragma unroll
            for (int j = 0; j < G; ++j) b[c][j] = __ldg(flags + q[c] + j);
            b[c][G] = q[c] + G < src.n ? __ldg(flags + q[c] + G) : (u8)0;
        }
#pragma unroll
        for (int c = 0; c < CHUNKS; ++c) {
            own[c] = 0;
#pragma unroll
            for (int j = 0; j <= G; ++j) own[c] |= (b[c][j] != 0 ? 1u : 0u) << j;
        }
        break;
    }
    case HEADS_KEYS4:
#pragma unroll
        for (int c = 0; c < CHUNKS; ++c) own[c] = key_group_flags<u32, G>((const u32*)src.data, src.n, q[c]);
        break;
    default:
#pragma unroll
        for (int c = 0; c < CHUNKS; ++c) own[c] = key_group_flags<u64, G>((const u64*)src.data, src.n, q[c]);
    }
}

// Heads of this thread's row in the tile whose physical span starts at `start`. All data
// threads call it (whole tiles shuffle within the warp).
template <int THREADS, int ITEMS, bool REVERSE>
SCANRT_DEVICE u32 row_heads(const HeadSource& src, long long start, long long valid, int tid) {
    static_assert(ITEMS < 32, "a row's heads and its neighbour's flag fit in 32 bits");
    const int TILE = THREADS * ITEMS;
    constexpr bool ROW_IS_A_VECTOR = ITEMS == 16 || ITEMS == 8;
    // The row's physical span [q, q + ITEMS): forward rows ascend, backward rows descend.
    const long long q = REVERSE ? start + TILE - (long long)(tid + 1) * ITEMS : start + (long long)tid * ITEMS;
    const bool whole_rows = src.kind != HEADS_BYTES || (ROW_IS_A_VECTOR && src.vector_ok);
    if (valid == TILE && whole_rows) {
        u32 own = 0;
        bool after = false;  // backward only: s(q + ITEMS)
        if (src.kind == HEADS_ROWS) {
            own = row_start_flags<ITEMS>(src.row_length(), q);
            after = q + ITEMS >= src.n || ((own >> ITEMS) & 1u);
        } else if (src.kind == HEADS_BITS) {
            own = load_bit_flags((const u32*)src.data, src.n, q);
            after = q + ITEMS >= src.n || ((own >> ITEMS) & 1u);
        } else if (src.kind == HEADS_KEYS4) {
            own = key_row_flags<u32, ITEMS, REVERSE>((const u32*)src.data, src.vector_ok, src.n, q, &after);
        } else if (src.kind == HEADS_KEYS8) {
            own = key_row_flags<u64, ITEMS, REVERSE>((const u64*)src.data, src.vector_ok, src.n, q, &after);
        } else {  // aligned byte flags
            own = load_byte_flags<ROW_IS_A_VECTOR ? ITEMS : 16>((const u8*)src.data + q);
            if (REVERSE) {  // s(q + ITEMS) is the first byte of the previous lane's row
                after = __shfl_up_sync(SCANRT_FULL_MASK, own & 1u, 1);
                if ((tid & 31) == 0) after = q + ITEMS >= src.n || ((const u8*)src.data)[q + ITEMS] != 0;
            }
        }
        return REVERSE ? backward_row_mask<ITEMS>(own, after) : forward_row_mask<ITEMS>(own, q);
    }
    u32 mask = 0;
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
        const int e = tid * ITEMS + i;
        if (e < valid && src.template head<REVERSE>(start + logical_index<REVERSE>(e, valid))) mask |= 1u << i;
    }
    return mask;
}
