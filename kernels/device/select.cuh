// scanrt kernels, level 4: stream compaction and partition in one pass, on the look-back
// protocol through the agent (agent/tile_prefix.cuh), carrying the count of selected
// elements before each tile.
//
// One block per tile (THREADS x ITEMS elements; the host launches one block per tile and
// tiles are drawn by ticket, so the look-back waits only on running blocks). A tile:
//   1. loads its elements in rounds of one 16-byte vector per thread (coalesced), and
//      decides which to keep by the rule (`Rule`: flags, a predicate, or "differs from
//      the previous element");
//   2. ranks the kept elements of each (round, warp) by ballots, and the (round, warp)
//      totals by one warp scan: every element's rank among the tile's kept ones;
//   3. publishes the tile's count, resolves the count before it (one warp);
//   4. compacts the tile in shared memory (kept first, then the rejected ones, both in
//      order), and writes the kept ones with consecutive, coalesced stores at
//      [prefix, prefix + count) (only those below `capacity`), the rejected ones after
//      the selected of a partition, in reverse from the end of `output` or in order into
//      `rejected`;
//   5. the last tile writes the total count to `num_selected`.
// A run-length encoding (RUN_LENGTHS) keeps the last element of each run and carries,
// beside the count, the index of the last kept element before the tile: each run's length
// is its end's index less the previous end's, written beside its first element.
// Stable: elements keep their order. Values move as bits (or, for SELECT_INDICES, their
// indices are written).
#pragma once
#include "agent/tile_prefix.cuh"
#include "block/tile_io.cuh"

#define SCANRT_SELECT_VALUES    0
#define SCANRT_SELECT_INDICES   1
#define SCANRT_PARTITION_REVERSED 2
#define SCANRT_PARTITION_TWO    3
#define SCANRT_RUN_LENGTHS      4

template <bool C, typename A, typename B> struct Conditional { typedef A Type; };
template <typename A, typename B> struct Conditional<false, A, B> { typedef B Type; };

// The look-back carry: how many elements the tiles before kept.
struct SelectCountOp {
    typedef u64 T;
    static const bool COMMUTATIVE = true;
    static SCANRT_DEVICE T identity() { return 0; }
    static SCANRT_DEVICE T combine(T a, T b) { return a + b; }
    static SCANRT_DEVICE u64 count(T c) { return c; }
    static SCANRT_DEVICE T make(u64 count, long long) { return count; }
};

// A run-length encoding's carry: the runs ended before, and the index of the last
// element that ended one (-1: none), from which the next run's length follows.
struct RunEnds {
    u64 count;
    long long last;
};
struct RunEndsOp {
    typedef RunEnds T;
    static const bool COMMUTATIVE = false;
    static SCANRT_DEVICE T identity() { return T{0, -1}; }
    static SCANRT_DEVICE T combine(T a, T b) { return T{a.count + b.count, b.count ? b.last : a.last}; }
    static SCANRT_DEVICE u64 count(T c) { return c.count; }
    static SCANRT_DEVICE T make(u64 count, long long last) { return T{count, last}; }
};

// What a rule sees of one element: its value, its index, the one before it (for runs),
// and the selection data (flags).
struct SelectSource {
    const void* data;  // byte flags (u8) or bit flags (u32 words); unused by predicates
    unsigned long long operand_bits;  // a comparison's value
    long long n;       // elements in all
};

// Out: the output's element type (T, an index type, or a run-length encoding's lengths,
// written to `second_out` beside the values in `out`).
template <typename T, typename Rule, typename Out, int THREADS, int ITEMS, int LOOKBACK_SLOTS_PER_LANE,
          int SPIN_BEFORE_SLEEP, int SLEEP_NS, int MODE>
SCANRT_DEVICE void select_tile_pass(const T* in, SelectSource source, Out* out, void* second_out,
                                    unsigned long long* num_selected, long long n, unsigned long long capacity,
                                    unsigned flags, void* workspace, long long status_capacity, FaultSink report) {
    const bool RUNS = MODE == SCANRT_RUN_LENGTHS;
    typedef typename Conditional<RUNS, RunEndsOp, SelectCountOp>::Type CarryOp;
    typedef typename CarryOp::T Carry;
    typedef TilePrefixAgent<CarryOp, LOOKBACK_SLOTS_PER_LANE, SPIN_BEFORE_SLEEP, SLEEP_NS> Agent;
    const int VEC = VectorWidth<T>::VEC < ITEMS ? VectorWidth<T>::VEC : ITEMS;
    const int ROUNDS = ITEMS / VEC, WARPS = THREADS / 32, TILE = THREADS * ITEMS;
    static_assert(ROUNDS * WARPS <= 32, "one warp scans the (round, warp) totals");
    // Partitions keep every element of the tile in the buffer; selections the kept ones.
    typedef typename Conditional<MODE == SCANRT_SELECT_INDICES, Out, T>::Type Slot;
    __shared__ Slot buffer_s[TILE];
    // Run-length encodings keep each kept element's position in the tile too.
    __shared__ u32 position_s[RUNS ? TILE : 1];
    __shared__ u32 round_total_s[32];
    __shared__ int round_last_s[32];
    __shared__ Carry prefix_s;
    __shared__ u32 tile_s, generation_s, kept_s;

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const u32 num_tiles = gridDim.x;
    Agent agent(workspace, status_capacity, report, num_tiles, num_tiles - 1, CarryOp::identity(), false);
    if (tid == 0) {
        const unsigned long long drawn = agent.first_ticket();
        agent.hand_on(drawn);
        generation_s = (u32)(drawn >> 32);
        tile_s = (u32)drawn;
    }
    __syncthreads();
    const u32 generation = generation_s, tile = tile_s;
    if (tile >= num_tiles) return;  // refused workspace
    const u32 tag = generation_tag(generation);
    const long long base = (long long)tile * TILE;
    const int valid = (int)min((long long)TILE, n - base);
    const bool vector = valid == TILE && (flags & FLAG_VECTOR_IN);

    // 1. Load and decide. Element (r, j) of this thread is tile element (r * THREADS + tid) * VEC + j.
    T x[ROUNDS][VEC];
    bool keep[ROUNDS][VEC];
#pragma unroll
    for (int r = 0; r < ROUNDS; ++r) {
        const int e = (r * THREADS + tid) * VEC;
        if (vector) {
            // Streaming (evict-first) 16-byte loads: every element is read once.
            Vec<T, VEC> v;
            if constexpr (sizeof(v) == 16) {
                const uint4 w = load16_streaming(in + base + e);
                memcpy(&v, &w, 16);
            } else {
                v = *reinterpret_cast<const Vec<T, VEC>*>(in + base + e);
            }
#pragma unroll
            for (int j = 0; j < VEC; ++j) x[r][j] = v.v[j];
        } else {
#pragma unroll
            for (int j = 0; j < VEC; ++j) x[r][j] = e + j < valid ? in[base + e + j] : T();
        }
        Rule::template decide<VEC>(x[r], in, source, base + e, valid - e, lane, flags, keep[r]);
    }

    // 2. Ranks within (round, warp) by ballots; the (round, warp) totals scanned by warp 0.
    u32 rank[ROUNDS][VEC];
    const u32 below = (1u << lane) - 1u;
#pragma unroll
    for (int r = 0; r < ROUNDS; ++r) {
        u32 before = 0, total = 0;
        u32 mine = 0;
#pragma unroll
        for (int j = 0; j < VEC; ++j) {
            const u32 ballot = __ballot_sync(SCANRT_FULL_MASK, keep[r][j]);
            before += __popc(ballot & below);
            total += __popc(ballot);
        }
        int last = -1;  // the tile position of this lane's last kept element
#pragma unroll
        for (int j = 0; j < VEC; ++j) {
            rank[r][j] = before + mine;
            mine += keep[r][j];
            if (keep[r][j]) last = (r * THREADS + tid) * VEC + j;
        }
        if constexpr (RUNS) last = __reduce_max_sync(SCANRT_FULL_MASK, last + 1) - 1;
        if (lane == 0) {
            round_total_s[r * WARPS + warp] = total;
            round_last_s[r * WARPS + warp] = last;
        }
    }
    __syncthreads();
    if (warp == 0) {
        const u32 t = lane < ROUNDS * WARPS ? round_total_s[lane] : 0u;
        u32 inclusive = t;
#pragma unroll
        for (int d = 1; d < 32; d <<= 1) {
            const u32 other = __shfl_up_sync(SCANRT_FULL_MASK, inclusive, d);
            if (lane >= d) inclusive += other;
        }
        const u32 kept = __shfl_sync(SCANRT_FULL_MASK, inclusive, 31);
        // The tile's last kept position: the (round, warp) entries come in tile order.
        int last = -1;
        if constexpr (RUNS) {
            last = lane < ROUNDS * WARPS ? round_last_s[lane] : -1;
            last = __reduce_max_sync(SCANRT_FULL_MASK, last + 1) - 1;
        }
        const Carry aggregate = CarryOp::make(kept, last < 0 ? -1 : base + last);
        // 3. What the tiles before kept.
        if (lane == 0) agent.publish(tile, aggregate, tag);
        const Carry prefix = agent.resolve(tile, aggregate, tag, lane);
        __syncwarp();
        if (lane < ROUNDS * WARPS) round_total_s[lane] = inclusive - t;
        if (lane == 0) {
            prefix_s = prefix;
            kept_s = kept;
        }
    }
    __syncthreads();
    const Carry carry = prefix_s;
    const u64 prefix = CarryOp::count(carry);
    const u32 kept = kept_s;

    // 4. Compact in shared memory: kept elements at their ranks, rejected ones (of a
    //    partition) after them in order.
#pragma unroll
    for (int r = 0; r < ROUNDS; ++r) {
        const u32 offset = round_total_s[r * WARPS + warp];
        const int e = (r * THREADS + tid) * VEC;
#pragma unroll
        for (int j = 0; j < VEC; ++j) {
            const u32 k = offset + rank[r][j];
            if (keep[r][j]) {
                if constexpr (MODE == SCANRT_SELECT_INDICES) buffer_s[k] = (Out)(base + e + j);
                else buffer_s[k] = x[r][j];
                if constexpr (RUNS) position_s[k] = e + j;
            } else if constexpr (MODE == SCANRT_PARTITION_REVERSED || MODE == SCANRT_PARTITION_TWO) {
                if (e + j < valid) buffer_s[kept + (e + j - k)] = x[r][j];
            }
        }
    }
    __syncthreads();
    for (int s = tid; s < (int)kept; s += THREADS) {
        const u64 p = prefix + s;
        if constexpr (RUNS) {
            // A run ends at each kept element; it began after the previous end.
            const long long end = base + position_s[s];
            const long long previous = s > 0 ? base + position_s[s - 1] : carry.last;
            // The run's value is its first element's (== holds across a run, the bits may
            // not: -0.0 and +0.0), as unique keeps it: read back, a recent line.
            ((T*)out)[p] = in[previous + 1];
            ((Out*)second_out)[p] = (Out)(end - previous);
        } else if (p < capacity) {
            out[p] = buffer_s[s];
        }
    }
    if constexpr (MODE == SCANRT_PARTITION_REVERSED || MODE == SCANRT_PARTITION_TWO) {
        const u64 rejected_before = (u64)base - prefix;
        for (int s = (int)kept + tid; s < valid; s += THREADS) {
            const u64 q = rejected_before + (s - kept);
            if constexpr (MODE == SCANRT_PARTITION_REVERSED) out[n - 1 - q] = buffer_s[s];
            else ((T*)second_out)[q] = buffer_s[s];
        }
    }
    // 5. The total, from the last tile.
    if (tile == num_tiles - 1 && tid == 0) *num_selected = prefix + kept;
    agent.finish(generation, tid);
}

// ---- Rules: which elements a selection keeps --------------------------------------------

// Byte flags: element i is kept when flags[i] != 0.
struct KeepByteFlags {
    template <int VEC, typename T>
    static SCANRT_DEVICE void decide(const T (&)[VEC], const T*, SelectSource s, long long i, int left, int,
                                     unsigned flags, bool (&keep)[VEC]) {
        const u8* f = (const u8*)s.data + i;
        if (left >= VEC && (flags & FLAG_VECTOR_HEADS) && VEC >= 4) {
#pragma unroll
            for (int w = 0; w < VEC / 4; ++w) {
                const u32 word = *reinterpret_cast<const u32*>(f + 4 * w);
#pragma unroll
                for (int b = 0; b < 4; ++b) keep[4 * w + b] = (word >> (8 * b)) & 0xffu;
            }
        } else {
#pragma unroll
            for (int j = 0; j < VEC; ++j) keep[j] = j < left && f[j] != 0;
        }
    }
};

// Bit flags: bit i % 32 of word i / 32.
struct KeepBitFlags {
    template <int VEC, typename T>
    static SCANRT_DEVICE void decide(const T (&)[VEC], const T*, SelectSource s, long long i, int left, int,
                                     unsigned, bool (&keep)[VEC]) {
        // VEC divides 32 and i is a multiple of VEC: the bits lie in one word.
        const u32 word = left > 0 ? ((const u32*)s.data)[i >> 5] : 0u;
#pragma unroll
        for (int j = 0; j < VEC; ++j) keep[j] = j < left && ((word >> ((i + j) & 31)) & 1u);
    }
};

// A predicate on the value (`Pred::test(x, operand)`).
template <typename Pred>
struct KeepIf {
    template <int VEC, typename T>
    static SCANRT_DEVICE void decide(const T (&x)[VEC], const T*, SelectSource s, long long i, int left, int,
                                     unsigned, bool (&keep)[VEC]) {
        T operand;
        memcpy(&operand, &s.operand_bits, sizeof(T));  // the low bytes (little-endian)
#pragma unroll
        for (int j = 0; j < VEC; ++j) keep[j] = j < left && Pred::test(x[j], operand, i + j);
    }
};

// The next lane's value, for any element type.
template <typename T>
SCANRT_DEVICE T shfl_down_any(T v) {
    if constexpr (sizeof(T) == 8) {
        u64 w;
        memcpy(&w, &v, 8);
        const u32 lo = __shfl_down_sync(SCANRT_FULL_MASK, (u32)w, 1);
        const u32 hi = __shfl_down_sync(SCANRT_FULL_MASK, (u32)(w >> 32), 1);
        w = ((u64)hi << 32) | lo;
        memcpy(&v, &w, 8);
    } else {
        u32 w = 0;
        memcpy(&w, &v, sizeof(T));
        w = __shfl_down_sync(SCANRT_FULL_MASK, w, 1);
        memcpy(&v, &w, sizeof(T));
    }
    return v;
}

// The previous lane's value, for any element type (bytes travel in a 32-bit word).
template <typename T>
SCANRT_DEVICE T shfl_up_any(T v) {
    if constexpr (sizeof(T) < 4) {
        u32 w = 0;
        memcpy(&w, &v, sizeof(T));
        w = __shfl_up_sync(SCANRT_FULL_MASK, w, 1);
        memcpy(&v, &w, sizeof(T));
        return v;
    } else {
        return shfl_up(v, 1);
    }
}

// The last of each run of equal elements (a run-length encoding's ends).
struct KeepRunEnds {
    template <int VEC, typename T>
    static SCANRT_DEVICE void decide(const T (&x)[VEC], const T* in, SelectSource s, long long i, int left, int lane,
                                     unsigned, bool (&keep)[VEC]) {
        // The element after this thread's last: the next lane's first, or for lane 31
        // the one after in memory.
        T after = shfl_down_any(x[0]);
        if (lane == 31 && left > 0 && i + VEC < s.n) after = in[i + VEC];
#pragma unroll
        for (int j = 0; j < VEC; ++j) {
            const T next = j + 1 < VEC ? x[j + 1] : after;
            keep[j] = j < left && (i + j == s.n - 1 || !(x[j] == next));
        }
    }
};

// The first of each run of equal elements (==: every NaN starts a run, -0.0 == +0.0).
struct KeepRunHeads {
    template <int VEC, typename T>
    static SCANRT_DEVICE void decide(const T (&x)[VEC], const T* in, SelectSource, long long i, int left, int lane,
                                     unsigned, bool (&keep)[VEC]) {
        // The element before this thread's first: the previous lane's last (its vector
        // precedes this one), or for lane 0 the one before in memory.
        T before = shfl_up_any(x[VEC - 1]);
        if (lane == 0 && i > 0 && left > 0) before = in[i - 1];
#pragma unroll
        for (int j = 0; j < VEC; ++j) {
            const T previous = j == 0 ? before : x[j - 1];
            keep[j] = j < left && (i + j == 0 || !(x[j] == previous));
        }
    }
};
