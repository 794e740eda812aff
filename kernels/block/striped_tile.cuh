// scanrt kernels, level 3c: a tile scanned in registers, without shared-memory staging
// (the one-wave single pass, device/single_pass_wave.cuh, and the cluster scan).
//
// Layout ("warp-striped groups"). Warp w owns the tile's elements
// [w * 32 * ITEMS, (w + 1) * 32 * ITEMS). Within it, each of CHUNKS = ITEMS / G chunks
// is 32 * G consecutive elements, and lane l holds the group of G consecutive elements
// at l * G in every chunk. G is one 16-byte vector of the narrowest of the input, the
// accumulator and the output type, so every warp load and store instruction covers one
// contiguous span (coalesced) and no element ever passes through shared memory.
// Elements convert to the accumulator as they are read (half types widen to f32) and to
// the output as they are stored (rounded, or narrowed from a wider accumulator).
//
// The scan is the matrix scan on that layout, reduce-then-scan within the registers:
//   1. each lane reduces its groups sequentially (thread level);
//   2. the warp scans each chunk's 32 group totals, chunks in order (warp level);
//   3. the block folds the warp totals before each warp (block level, `fold_warps`);
//   4. once the tile's prefix is known, each lane scans its groups sequentially from
//      their offsets and stores them.
// Every combine keeps sequence order (the earlier value on the left), so non-commutative
// operators and the association order of float sums depend on the tile shape alone.
//
// Segmented scans (SEGMENTED) run the same steps on (value, head) pairs (CarryOf): a
// lane holds the heads of its groups beside their elements (one bit each), a group's
// total restarts at its last head, and step 4 restarts from the initial value at every
// head, as the register-staged kernel's rows do (thread/thread_scan.cuh).
//
// Backward scans (REVERSE) mirror the element index, as tile_io.cuh does: logical
// element e of a tile of `valid` elements is physical element valid - 1 - e of the tile's
// span, so a group's G logical elements are G physical ones read back to front.
#pragma once
#include "block/block_scan.cuh"
#include "block/tile_heads.cuh"

template <typename Op, typename In, typename Out, int THREADS, int ITEMS, bool REVERSE, bool SEGMENTED>
struct StripedTile {
    typedef typename Op::T Acc;
    typedef typename CarryOf<Op, SEGMENTED>::Op_ CarryOp;
    typedef typename CarryOp::T Carry;
    static constexpr int smaller(int a, int b) { return a < b ? a : b; }
    static const int G = 16 / smaller(sizeof(In), smaller(sizeof(Acc), sizeof(Out)));  // elements per group
    static const int CHUNKS = ITEMS / G;
    static const int WARPS = THREADS / 32;
    static const int TILE = THREADS * ITEMS;
    static_assert(ITEMS % G == 0, "ITEMS must hold whole 16-byte vectors of every type");
    static_assert(!SEGMENTED || ITEMS <= 32, "a lane's heads fit one 32-bit mask");

    In raw[ITEMS];           // raw[c * G + k]: logical element k of this lane's group in chunk c
    u32 heads;               // segmented: bit c * G + k, whether that element is a head
    Carry offset[CHUNKS];    // everything in the warp's span before each group
    Carry warp_total;

    // Logical tile offset of element k of this lane's group in chunk c.
    static SCANRT_DEVICE int logical(int warp, int lane, int c, int k) { return warp * 32 * ITEMS + (c * 32 + lane) * G + k; }

    // Loads the tile whose physical span starts at `span` (valid elements). Vector mode:
    // whole tile, span 16-byte aligned; otherwise per element, identity-free (elements
    // past `valid` are never combined: see reduce and store).
    SCANRT_DEVICE void load(const In* span, int valid, bool vector, int warp, int lane) {
#pragma unroll
        for (int c = 0; c < CHUNKS; ++c) {
            const int first = logical(warp, lane, c, 0);
            if (vector) {
                // The group's physical span: [first, first + G) forward, mirrored backward.
                const In* p = span + (REVERSE ? TILE - first - G : first);
                alignas(16) In group[G];
#pragma unroll
                for (int v = 0; v < G * (int)sizeof(In) / 16; ++v)
                    reinterpret_cast<uint4*>(group)[v] = reinterpret_cast<const uint4*>(p)[v];
#pragma unroll
                for (int k = 0; k < G; ++k) raw[c * G + k] = group[REVERSE ? G - 1 - k : k];
            } else {
#pragma unroll
                for (int k = 0; k < G; ++k)
                    if (first + k < valid) raw[c * G + k] = span[logical_index<REVERSE>(first + k, valid)];
            }
        }
    }

    // Segmented: the heads of this lane's groups in the tile whose physical span starts
    // at element `start` (`heads`). A whole tile reads each group's start flags and the
    // next group's first (tile_heads.cuh, loads issued for every chunk at once); a
    // partial one asks per element.
    SCANRT_DEVICE void load_heads(const HeadSource& src, long long start, int valid, bool whole, int warp, int lane) {
        heads = 0;
        if (whole) {
            long long q[CHUNKS];  // each group's physical span [q, q + G)
            u32 own[CHUNKS];
#pragma unroll
            for (int c = 0; c < CHUNKS; ++c) {
                const int first = logical(warp, lane, c, 0);
                q[c] = start + (REVERSE ? TILE - first - G : first);
            }
            group_start_flags<G, CHUNKS>(src, q, own);
#pragma unroll
            for (int c = 0; c < CHUNKS; ++c) {
                const u32 mask = REVERSE ? backward_row_mask<G>(own[c], q[c] + G >= src.n || ((own[c] >> G) & 1u))
                                         : forward_row_mask<G>(own[c], q[c]);
                heads |= mask << (c * G);
            }
            return;
        }
#pragma unroll
        for (int c = 0; c < CHUNKS; ++c) {
            const int first = logical(warp, lane, c, 0);
#pragma unroll
            for (int k = 0; k < G; ++k)
                if (first + k < valid && src.template head<REVERSE>(start + logical_index<REVERSE>(first + k, valid)))
                    heads |= 1u << (c * G + k);
        }
    }

    // Element k of this lane's group in chunk c as a carry: itself, or for a segmented
    // scan the pair that restarts from `init` at a head.
    SCANRT_DEVICE Carry element(int c, int k, Acc init) const {
        const Acc x = Acc(raw[c * G + k]);
        if constexpr (SEGMENTED) {
            const bool head = (heads >> (c * G + k)) & 1u;
            return Carry{head ? Op::combine(init, x) : x, head ? 1u : 0u};
        } else {
            return x;
        }
    }

    // Steps 1 and 2: each group's offset within the warp's span, and the warp's total
    // (WHOLE: the tile holds all its elements, so nothing needs a bounds check). `init`:
    // where a segmented scan restarts.
    template <bool WHOLE>
    SCANRT_DEVICE void reduce(int valid, int warp, int lane, Acc init) {
        Carry group_incl[CHUNKS];
#pragma unroll
        for (int c = 0; c < CHUNKS; ++c) {
            Carry total = CarryOp::identity();
#pragma unroll
            for (int k = 0; k < G; ++k)
                if (WHOLE || logical(warp, lane, c, k) < valid) total = CarryOp::combine(total, element(c, k, init));
            group_incl[c] = warp_inclusive_scan<CarryOp>(total, lane);
        }
        warp_total = CarryOp::identity();
#pragma unroll
        for (int c = 0; c < CHUNKS; ++c) {
            const Carry before_lane = shfl_up(group_incl[c], 1);
            offset[c] = lane == 0 ? warp_total : CarryOp::combine(warp_total, before_lane);
            warp_total = CarryOp::combine(warp_total, shfl_idx(group_incl[c], 31));
        }
    }

    // Step 4: scans each group from `prefix` (everything before the warp's span) and
    // stores it into the tile's physical span `span` (a segmented scan restarts from
    // `init` at each head).
    SCANRT_DEVICE void store(Out* span, int valid, bool vector, bool inclusive, Carry prefix, Acc init, int warp,
                             int lane) const {
#pragma unroll
        for (int c = 0; c < CHUNKS; ++c) {
            const int first = logical(warp, lane, c, 0);
            Acc running = carried_value<SEGMENTED>(CarryOp::combine(prefix, offset[c]));
            Acc group[G];
#pragma unroll
            for (int k = 0; k < G; ++k) {
                if (SEGMENTED && ((heads >> (c * G + k)) & 1u)) running = init;
                const Acc next = Op::combine(running, Acc(raw[c * G + k]));
                group[k] = inclusive ? next : running;
                running = next;
            }
            if (vector) {
                Out* p = span + (REVERSE ? TILE - first - G : first);
                alignas(16) Out ordered[G];
#pragma unroll
                for (int k = 0; k < G; ++k) ordered[k] = Out(group[REVERSE ? G - 1 - k : k]);
#pragma unroll
                for (int v = 0; v < G * (int)sizeof(Out) / 16; ++v)
                    reinterpret_cast<uint4*>(p)[v] = reinterpret_cast<const uint4*>(ordered)[v];
            } else {
#pragma unroll
                for (int k = 0; k < G; ++k)
                    if (first + k < valid) span[logical_index<REVERSE>(first + k, valid)] = Out(group[k]);
            }
        }
    }
};

// Step 3 (every thread of the block): from the warp totals in shared memory, in warp
// order, everything before warp `warp` and the whole tile.
template <typename Op, int WARPS>
SCANRT_DEVICE void fold_warps(const typename Op::T* warp_total, int warp, typename Op::T& before_warp,
                              typename Op::T& aggregate) {
    before_warp = aggregate = Op::identity();
#pragma unroll
    for (int w = 0; w < WARPS; ++w) {
        if (w == warp) before_warp = aggregate;
        aggregate = Op::combine(aggregate, warp_total[w]);
    }
}

// One block's tile of a scan of n elements, scanned in registers: where the tile lies,
// and the steps the one-wave and cluster kernels share around their different ways of
// finding the tile's prefix.
template <typename Op, typename In, typename Out, int THREADS, int ITEMS, bool REVERSE, bool SEGMENTED>
struct PlacedStripedTile {
    typedef typename Op::T Acc;
    typedef StripedTile<Op, In, Out, THREADS, ITEMS, REVERSE, SEGMENTED> Tile;
    typedef typename Tile::CarryOp CarryOp;
    typedef typename Tile::Carry Carry;
    static const int WARPS = Tile::WARPS;
    Tile t;
    long long start;  // the tile's physical span
    int valid;
    bool whole;

    // Steps 1 to 3 for tile `tile` (every thread of the block; one __syncthreads): loads
    // it (16-byte vectors where `vector_in` and the tile is whole) and, segmented, its
    // heads, reduces it and folds the warp totals through `warp_total_s`: `before_warp`
    // is everything in the tile before this thread's warp, `aggregate` the whole tile.
    SCANRT_DEVICE void scan(const In* in, long long n, u32 tile, bool vector_in, const HeadSource& heads, Acc init,
                            Carry* warp_total_s, int warp, int lane, Carry& before_warp, Carry& aggregate) {
        const long long valid_ll = min((long long)Tile::TILE, n - (long long)tile * Tile::TILE);
        valid = (int)valid_ll;
        start = tile_start<REVERSE>(tile, Tile::TILE, valid_ll, n);
        whole = valid == Tile::TILE;
        t.load(in + start, valid, whole && vector_in, warp, lane);
        if constexpr (SEGMENTED) t.load_heads(heads, start, valid, whole, warp, lane);
        if (whole) t.template reduce<true>(valid, warp, lane, init);
        else t.template reduce<false>(valid, warp, lane, init);
        if (lane == 31) warp_total_s[warp] = t.warp_total;
        __syncthreads();
        fold_warps<CarryOp, WARPS>(warp_total_s, warp, before_warp, aggregate);
    }

    // Step 4: stores the tile from `prefix`, everything before this thread's warp.
    SCANRT_DEVICE void store(Out* out, bool vector_out, bool inclusive, Carry prefix, Acc init, int warp,
                             int lane) const {
        t.store(out + start, valid, whole && vector_out, inclusive, prefix, init, warp, lane);
    }
};
