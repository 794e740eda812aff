// scanrt kernels, level 4: stream compaction and partition in one pass, on the look-back
// protocol through the agent (agent/tile_prefix.cuh), carrying the count of selected
// elements before each tile.
//
// Persistent blocks draw tiles (THREADS x ITEMS elements) by ticket, as the scan's
// register-staged kernel does, and overlap each tile's look-back with the next tile. A tile:
//   1. loads its elements in rounds of one 16-byte vector per thread (coalesced), and
//      decides which to keep by the rule (`Rule`: flags, a predicate, or "differs from
//      the previous element");
//   2. ranks the kept elements of each (round, warp) by one warp scan of each thread's
//      counts, all rounds packed in a word, and the (round, warp) totals by one more:
//      every element's rank among the tile's kept ones;
//   3. compacts the tile in shared memory (kept first, then the rejected ones, both in
//      order) and publishes its count; the look-back warp resolves the count before it
//      while the data threads take the next tile;
//   4. writes the kept ones with consecutive, coalesced stores at
//      [prefix, prefix + count) (only those below `capacity`), the rejected ones after
//      the selected of a partition, in reverse from the end of `output` or in order into
//      `rejected`;
//   5. the last tile writes the total count to `num_selected`.
// A run-length encoding (RUN_LENGTHS) keeps the last element of each run and carries,
// beside the count, the index of the last kept element before the tile: each run's length
// is its end's index less the previous end's, written beside its value.
// Stable: elements keep their order. Values move as bits (or, for SELECT_INDICES, their
// indices are written).
#pragma once
#include "agent/tile_prefix.cuh"
#include "block/block_scan.cuh"
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

// The previous and the next lane's value, for any element type (bytes travel in a
// 32-bit word).
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

// What a rule sees besides the elements: the selection data (flags), a comparison's
// operand, the length.
struct SelectSource {
    const void* data;  // byte flags (u8) or bit flags (u32 words); unused by predicates
    unsigned long long operand_bits;  // a comparison's value
    long long n;       // elements in all
};

// Bytes of one tile buffer in dynamic shared memory: the compacted slots (a float
// run-length encoding's: the tile as loaded) and, for a run-length encoding, the
// positions of its run ends.
template <typename T, typename Out, int TILE, int MODE> struct SelectBuffer {
    typedef typename Conditional<MODE == SCANRT_SELECT_INDICES, Out, T>::Type Slot;
    static const bool RUNS = MODE == SCANRT_RUN_LENGTHS;
    static const int SLOTS = TILE * (int)sizeof(Slot);
    static const int BYTES = RUNS ? SLOTS + TILE * 4 : SLOTS;
    Slot* slots;      // kept elements first (a partition's rejected ones after them)
    u32* positions;   // a run-length encoding's run ends (positions in the tile)
    SCANRT_DEVICE SelectBuffer(unsigned char* base)
        : slots(reinterpret_cast<Slot*>(base)), positions(reinterpret_cast<u32*>(base + SLOTS)) {}
};

// Whether a run-length encoding's values come from its runs' first elements in the tile
// as loaded (float types: == elements differ in their bits where zeros of two signs meet)
// or from the runs' ends, compacted (integers: == elements are the same bits).
template <typename T> struct RunValuesFromTile { static const bool VALUE = false; };
template <> struct RunValuesFromTile<float> { static const bool VALUE = true; };
template <> struct RunValuesFromTile<double> { static const bool VALUE = true; };
template <> struct RunValuesFromTile<f16> { static const bool VALUE = true; };
template <> struct RunValuesFromTile<bf16> { static const bool VALUE = true; };

// Out: the output's element type (T, an index type, or a run-length encoding's lengths,
// written to `second_out` beside the values in `out`).
//
// Persistent blocks of THREADS data threads and one look-back warp, as the register-
// staged scan (single_pass_scan.cuh): a tile is loaded, decided, ranked and compacted
// into one of two shared buffers, where it waits ("parked") for the count before it
// while the look-back warp resolves that and the data threads take the next tile into
// the other buffer; then the parked tile is written. The compaction does not depend on
// the prefix, so no tile is held in registers across a look-back.
template <typename T, typename Rule, typename Out, int THREADS, int ITEMS, int LOOKBACK_SLOTS_PER_LANE,
          int SPIN_BEFORE_SLEEP, int SLEEP_NS, int MODE, bool EARLY_TICKET>
SCANRT_DEVICE void select_tile_pass(const T* in, SelectSource source, Out* out, void* second_out,
                                    unsigned long long* num_selected, long long n, unsigned long long capacity,
                                    unsigned flags, void* workspace, long long status_capacity, FaultSink report) {
    const bool RUNS = MODE == SCANRT_RUN_LENGTHS;
    const bool PARTITION = MODE == SCANRT_PARTITION_REVERSED || MODE == SCANRT_PARTITION_TWO;
    typedef typename Conditional<RUNS, RunEndsOp, SelectCountOp>::Type CarryOp;
    typedef typename CarryOp::T Carry;
    typedef TilePrefixAgent<CarryOp, LOOKBACK_SLOTS_PER_LANE, SPIN_BEFORE_SLEEP, SLEEP_NS> Agent;
    const int VEC = VectorWidth<T>::VEC < ITEMS ? VectorWidth<T>::VEC : ITEMS;
    const int ROUNDS = ITEMS / VEC, WARPS = THREADS / 32, TILE = THREADS * ITEMS, GROUPS = ROUNDS * WARPS;
    static_assert(GROUPS <= 32, "one warp scans the (round, warp) totals");
    static_assert(ITEMS <= 32, "a thread's kept elements fit one 32-bit mask");
    static_assert(ITEMS % VEC == 0 && 32 % VEC == 0, "whole vectors, each within a word of bit flags");
    // A (round, warp) group keeps at most 32 * VEC elements: fields of FIELD bits hold
    // every count and prefix of the packed ranking without carrying into the next.
    const int FIELD = 6 + (VEC >= 2) + (VEC >= 4) + (VEC >= 8) + (VEC >= 16);
    const u32 FIELD_MASK = (1u << FIELD) - 1u;
    typedef typename Conditional<ROUNDS * FIELD <= 32, u32, u64>::Type Packed;
    static_assert(ROUNDS * FIELD <= 64, "the packed counts fit 64 bits");
    typedef SelectBuffer<T, Out, TILE, MODE> Buffer;
    extern __shared__ __align__(16) unsigned char buffers_s[];  // two Buffer::BYTES
    __shared__ u32 group_total_s[32];
    __shared__ int group_last_s[32];
    // Each (round, warp) group's first and last element, and the elements on either side
    // of the tile, for rules that compare neighbours.
    __shared__ T group_first_s[Rule::NEIGHBOURS ? 32 : 1], group_last_value_s[Rule::NEIGHBOURS ? 32 : 1];
    __shared__ T edge_s[2];
    __shared__ Carry aggregate_s[2];  // aggregate_s[b]: the tile parked in buffer b
    __shared__ u32 kept_s[2];
    __shared__ Carry prefix_s;        // the parked tile's prefix, the look-back's answer
    __shared__ u32 next_tile_s, generation_s;

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const bool lookback_warp = tid >= THREADS;
    const u32 num_tiles = (u32)((n + TILE - 1) / TILE);
    Agent agent(workspace, status_capacity, report, num_tiles, num_tiles + gridDim.x - 1, CarryOp::identity(),
                false);

    // What a data thread holds of the tile it loaded ahead: its elements (element (r, j)
    // is tile element (r * THREADS + tid) * VEC + j), the rule's data for them (flags),
    // and for thread 0 the elements on either side of the tile.
    struct Loaded {
        T x[ROUNDS][VEC];
        typename Rule::Data data[ROUNDS];
        T edge[2];
    };
    // Issues the loads of `tile` (data threads); they are consumed by take_tile, after
    // the parked tile is written.
    auto load_tile = [&](u32 tile, Loaded& l) {
        const long long base = (long long)tile * TILE;
        const int valid = (int)min((long long)TILE, n - base);
        const bool vector = valid == TILE && (flags & FLAG_VECTOR_IN);
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
                for (int j = 0; j < VEC; ++j) l.x[r][j] = v.v[j];
            } else {
#pragma unroll
                for (int j = 0; j < VEC; ++j) l.x[r][j] = e + j < valid ? in[base + e + j] : T();
            }
            l.data[r] = Rule::template load<VEC>(source, base + e, valid - e, flags);
        }
        if constexpr (Rule::NEIGHBOURS) {
            if (tid == 0) {
                l.edge[0] = base > 0 ? in[base - 1] : T();
                l.edge[1] = base + TILE < n ? in[base + TILE] : T();
            }
        }
    };
    // Decides, ranks and compacts the loaded `tile` into buffer `b`, and publishes its
    // aggregate (data threads).
    auto take_tile = [&](u32 tile, const Loaded& l, int b) {
        const long long base = (long long)tile * TILE;
        const int valid = (int)min((long long)TILE, n - base);
        const auto& x = l.x;
        if constexpr (Rule::NEIGHBOURS) {
            // Neighbours across lanes come by shuffles; across groups and tiles, through
            // shared memory (no dependent global load on the way to the decision).
#pragma unroll
            for (int r = 0; r < ROUNDS; ++r) {
                if (lane == 0) group_first_s[r * WARPS + warp] = x[r][0];
                if (lane == 31) group_last_value_s[r * WARPS + warp] = x[r][VEC - 1];
            }
            if (tid == 0) {
                edge_s[0] = l.edge[0];
                edge_s[1] = l.edge[1];
            }
            data_barrier<THREADS>();
        }
        // Decide, and rank the kept elements within each (round, warp) group: the thread's
        // kept count of every round packed into one word, one warp scan of the words.
        u32 keep = 0;       // bit r * VEC + j: element (r, j) is kept
        Packed counts = 0;  // field r: the thread's kept elements in round r
#pragma unroll
        for (int r = 0; r < ROUNDS; ++r) {
            const int e = (r * THREADS + tid) * VEC, g = r * WARPS + warp;
            T before = T(), after = T();
            if constexpr (Rule::NEIGHBOURS) {
                before = shfl_up_any(x[r][VEC - 1]);
                after = shfl_down_any(x[r][0]);
                if (lane == 0) before = g > 0 ? group_last_value_s[g - 1] : edge_s[0];
                if (lane == 31) after = g + 1 < GROUPS ? group_first_s[g + 1] : edge_s[1];
            }
            const u32 bits = Rule::template decide<VEC>(x[r], l.data[r], before, after, source, base + e, valid - e);
            keep |= bits << (r * VEC);
            counts |= (Packed)__popc(bits) << (FIELD * r);
            if constexpr (RUNS) {
                const int last = bits ? e + 31 - __clz(bits) : -1;
                const int group_last = __reduce_max_sync(SCANRT_FULL_MASK, last + 1) - 1;
                if (lane == 0) group_last_s[g] = group_last;
            }
        }
        Packed inclusive = counts;  // no field carries: a group keeps at most 32 * VEC
#pragma unroll
        for (int d = 1; d < 32; d <<= 1) {
            const Packed other = shfl_up(inclusive, d);
            if (lane >= d) inclusive += other;
        }
        const Packed group_rank = inclusive - counts;  // field r: kept elements of lower lanes
        if (lane == 31) {
#pragma unroll
            for (int r = 0; r < ROUNDS; ++r) group_total_s[r * WARPS + warp] = (u32)(inclusive >> (FIELD * r)) & FIELD_MASK;
        }
        data_barrier<THREADS>();
        // The groups' offsets (one warp), the tile's count, its publication.
        if (warp == 0) {
            const u32 t = lane < GROUPS ? group_total_s[lane] : 0u;
            u32 inclusive = t;
#pragma unroll
            for (int d = 1; d < 32; d <<= 1) {
                const u32 other = __shfl_up_sync(SCANRT_FULL_MASK, inclusive, d);
                if (lane >= d) inclusive += other;
            }
            const u32 kept = __shfl_sync(SCANRT_FULL_MASK, inclusive, 31);
            int last = -1;  // the tile's last kept position: groups come in tile order
            if constexpr (RUNS)
                last = __reduce_max_sync(SCANRT_FULL_MASK, (lane < GROUPS ? group_last_s[lane] : -1) + 1) - 1;
            __syncwarp();
            if (lane < GROUPS) group_total_s[lane] = inclusive - t;
            if (lane == 0) {
                const Carry aggregate = CarryOp::make(kept, last < 0 ? -1 : base + last);
                agent.publish(tile, aggregate, generation_tag(generation_s));
                aggregate_s[b] = aggregate;
                kept_s[b] = kept;
            }
        }
        data_barrier<THREADS>();
        // Compact: kept elements at their ranks, a partition's rejected ones after them in
        // order; a run-length encoding's run ends with their positions (float ones keep
        // the whole tile instead of the ends' values).
        const u32 kept = kept_s[b];
        Buffer buffer(buffers_s + b * Buffer::BYTES);
#pragma unroll
        for (int r = 0; r < ROUNDS; ++r) {
            const u32 offset = group_total_s[r * WARPS + warp] + ((u32)(group_rank >> (FIELD * r)) & FIELD_MASK);
            const int e = (r * THREADS + tid) * VEC;
            const u32 mine = (keep >> (r * VEC)) & ((1u << VEC) - 1u);
#pragma unroll
            for (int j = 0; j < VEC; ++j) {
                const u32 k = offset + __popc(mine & ((1u << j) - 1u));
                const bool kept_here = (mine >> j) & 1u;
                if constexpr (RUNS && RunValuesFromTile<T>::VALUE) buffer.slots[e + j] = x[r][j];
                if (kept_here) {
                    if constexpr (MODE == SCANRT_SELECT_INDICES) buffer.slots[k] = (Out)(base + e + j);
                    else if constexpr (!(RUNS && RunValuesFromTile<T>::VALUE)) buffer.slots[k] = x[r][j];
                    if constexpr (RUNS) buffer.positions[k] = e + j;
                } else if constexpr (PARTITION) {
                    if (e + j < valid) buffer.slots[kept + (e + j - k)] = x[r][j];
                }
            }
        }
    };
    // Writes the parked `tile` of buffer `b`, whose predecessors kept `carry` (data threads).
    auto write_tile = [&](u32 tile, int b, Carry carry) {
        const long long base = (long long)tile * TILE;
        const int valid = (int)min((long long)TILE, n - base);
        const u64 prefix = CarryOp::count(carry);
        const u32 kept = kept_s[b];
        Buffer buffer(buffers_s + b * Buffer::BYTES);
        if constexpr (RUNS) {
            for (int s = tid; s < (int)kept; s += THREADS) {
                // A run ends at each kept element and began after the previous end. Its
                // value is its first element's: in the tile unless the run began in an
                // earlier one, or (integers) its end's, the same bits.
                const u64 p = prefix + s;
                const long long end = base + buffer.positions[s];
                const long long previous = s > 0 ? base + buffer.positions[s - 1] : carry.last;
                if constexpr (RunValuesFromTile<T>::VALUE) {
                    const long long first = previous + 1;
                    ((T*)out)[p] = first >= base ? buffer.slots[first - base] : in[first];
                } else {
                    ((T*)out)[p] = buffer.slots[s];
                }
                ((Out*)second_out)[p] = (Out)(end - previous);
            }
        } else if constexpr (PARTITION) {
            // The kept slots to out + prefix; the rejected ones after the rejected of the
            // tiles before, in reverse from the end of `out` or in order into `rejected`.
            // One loop over every slot, choosing each one's destination, rather than a
            // loop per side with a ragged end each (2% faster on the H200).
            const long long rejected_before = base - (long long)prefix;
            const long long kept_at = (long long)prefix;
            T* rejected_out = MODE == SCANRT_PARTITION_REVERSED ? (T*)out : (T*)second_out;
            // Slot s >= kept goes to rejected_at - s (reversed) or rejected_at + s.
            const long long rejected_at = MODE == SCANRT_PARTITION_REVERSED
                                              ? n - 1 - rejected_before + (long long)kept
                                              : rejected_before - (long long)kept;
#pragma unroll 4
            for (int s = tid; s < valid; s += THREADS) {
                T* to = s < (int)kept ? (T*)out + (kept_at + s)
                                      : rejected_out + (MODE == SCANRT_PARTITION_REVERSED ? rejected_at - s
                                                                                          : rejected_at + s);
                *to = buffer.slots[s];
            }
        } else {
            // The kept elements below `capacity`, from out + prefix. A thread copies a few
            // (8 of a half-kept tile of 4-byte elements): unrolled 4 deep (the compiler's
            // 16 measured 1-2% slower on the H200).
            const int writable = prefix >= capacity ? 0 : (int)min((u64)kept, capacity - prefix);
            Out* destination = out + prefix;
#pragma unroll 4
            for (int s = tid; s < writable; s += THREADS) destination[s] = buffer.slots[s];
        }
        if (tile == num_tiles - 1 && tid == 0) {
            // The host checked that a 32-bit count holds n.
            if (flags & SELECT_FLAG_COUNT_U32) *(unsigned*)num_selected = (unsigned)(prefix + kept);
            else *num_selected = prefix + kept;
        }
    };

    // Each round overlaps the look-back of the parked tile (look-back warp) with taking
    // the loaded tile and issuing the loads of the block's next one (data threads); then
    // the parked tile is written while those loads are in flight. With EARLY_TICKET the
    // next ticket is drawn before the tile is taken, so the atomic's round trip hides
    // behind that work instead of delaying the next loads; but the ticket is then held
    // longer before its tile publishes, and the look-backs behind it wait longer, which
    // costs the kernels whose tiles take least (kernels.rs's `early_ticket` says which).
    Loaded loaded;
    if (tid == 0) {
        const unsigned long long drawn = agent.first_ticket();
        agent.hand_on(drawn);
        generation_s = (u32)(drawn >> 32);
        next_tile_s = (u32)drawn;
    }
    __syncthreads();
    // The tile in `loaded` (none: num_tiles or more), known to every thread.
    u32 current = next_tile_s;
    if (!lookback_warp && current < num_tiles) load_tile(current, loaded);
    u32 parked_tile = num_tiles;  // none
    int buffer = 0;               // the parked tile's buffer
    for (;;) {
        if (lookback_warp) {
            if (parked_tile < num_tiles) {
                const Carry prefix =
                    agent.resolve(parked_tile, aggregate_s[buffer], generation_tag(generation_s), lane);
                if (lane == 0) prefix_s = prefix;
            }
        } else if (current < num_tiles) {
            unsigned long long drawn = 0;
            if (EARLY_TICKET && tid == 0) drawn = agent.draw();  // read after the tile is taken
            take_tile(current, loaded, buffer ^ 1);
            if (tid == 0) {
                if (!EARLY_TICKET) drawn = agent.draw();
                agent.hand_on(drawn);
                next_tile_s = (u32)drawn;
            }
            data_barrier<THREADS>();
            const u32 upcoming = next_tile_s;
            if (upcoming < num_tiles) load_tile(upcoming, loaded);
        }
        __syncthreads();  // the parked tile's prefix is known; the current one is parked
        if (!lookback_warp && parked_tile < num_tiles) write_tile(parked_tile, buffer, prefix_s);
        if (current >= num_tiles) break;
        const u32 upcoming = next_tile_s;  // drawn this round (every thread reads it)
        __syncthreads();  // the written buffer is free; next_tile_s may be drawn again
        buffer ^= 1;
        parked_tile = current;
        current = upcoming;
    }
    agent.finish(generation_s, tid);
}

// ---- Rules: which elements a selection keeps --------------------------------------------
// `load` reads what a rule needs besides the elements (issued a tile ahead); `decide`
// returns bit j set where element j of a vector of VEC, at index i, is kept; `left`
// elements of the tile remain from i (elements past them are never kept). `before` and
// `after` are the elements on either side of the vector, for rules with NEIGHBOURS.

// A rule loads what it reads besides the elements (`Data`, by `load`, a tile ahead) and
// decides from it.
struct NoData {};

// Byte flags: element i is kept when flags[i] != 0. A vector's flags are loaded as its
// kept bits (up to 16 flags: four words when aligned).
struct KeepByteFlags {
    static const bool NEIGHBOURS = false;
    typedef u32 Data;
    template <int VEC>
    static SCANRT_DEVICE u32 load(SelectSource s, long long i, int left, unsigned flags) {
        const u8* f = (const u8*)s.data + i;
        u32 bits = 0;
        if (left >= VEC && (flags & FLAG_VECTOR_HEADS) && VEC >= 4) {
#pragma unroll
            for (int w = 0; w < VEC / 4; ++w) {
                const u32 word = *reinterpret_cast<const u32*>(f + 4 * w);
#pragma unroll
                for (int b = 0; b < 4; ++b) bits |= (u32)(((word >> (8 * b)) & 0xffu) != 0) << (4 * w + b);
            }
        } else {
#pragma unroll
            for (int j = 0; j < VEC; ++j) bits |= (u32)(j < left && f[j] != 0) << j;
        }
        return bits;
    }
    template <int VEC, typename T>
    static SCANRT_DEVICE u32 decide(const T (&)[VEC], u32 bits, T, T, SelectSource, long long, int) {
        return bits;
    }
};

// Bit flags: bit i % 32 of word i / 32.
struct KeepBitFlags {
    static const bool NEIGHBOURS = false;
    typedef u32 Data;
    template <int VEC>
    static SCANRT_DEVICE u32 load(SelectSource s, long long i, int left, unsigned) {
        // VEC divides 32 and i is a multiple of VEC: the bits lie in one word.
        if (left <= 0) return 0;
        const u32 word = ((const u32*)s.data)[i >> 5] >> (i & 31);
        const u32 in_range = left >= VEC ? (1u << VEC) - 1u : (1u << left) - 1u;
        return word & in_range;
    }
    template <int VEC, typename T>
    static SCANRT_DEVICE u32 decide(const T (&)[VEC], u32 bits, T, T, SelectSource, long long, int) {
        return bits;
    }
};

// A predicate on the value (`Pred::test(x, operand, index)`).
template <typename Pred>
struct KeepIf {
    static const bool NEIGHBOURS = false;
    typedef NoData Data;
    template <int VEC>
    static SCANRT_DEVICE NoData load(SelectSource, long long, int, unsigned) { return NoData(); }
    template <int VEC, typename T>
    static SCANRT_DEVICE u32 decide(const T (&x)[VEC], NoData, T, T, SelectSource s, long long i, int left) {
        T operand;
        memcpy(&operand, &s.operand_bits, sizeof(T));  // the low bytes (little-endian)
        u32 bits = 0;
#pragma unroll
        for (int j = 0; j < VEC; ++j) bits |= (u32)(j < left && Pred::test(x[j], operand, i + j)) << j;
        return bits;
    }
};

// The first of each run of equal elements (==: every NaN starts a run, -0.0 == +0.0).
struct KeepRunHeads {
    static const bool NEIGHBOURS = true;
    typedef NoData Data;
    template <int VEC>
    static SCANRT_DEVICE NoData load(SelectSource, long long, int, unsigned) { return NoData(); }
    template <int VEC, typename T>
    static SCANRT_DEVICE u32 decide(const T (&x)[VEC], NoData, T before, T, SelectSource, long long i, int left) {
        u32 bits = 0;
#pragma unroll
        for (int j = 0; j < VEC; ++j) {
            const T previous = j == 0 ? before : x[j - 1];
            // Element 0 is i == 0, j == 0 (i is a multiple of VEC): no 64-bit sum per
            // element, which pushed f32's kernel past its registers.
            bits |= (u32)(j < left && ((i == 0 && j == 0) || !(x[j] == previous))) << j;
        }
        return bits;
    }
};

// The last of each run of equal elements (a run-length encoding's ends).
struct KeepRunEnds {
    static const bool NEIGHBOURS = true;
    typedef NoData Data;
    template <int VEC>
    static SCANRT_DEVICE NoData load(SelectSource, long long, int, unsigned) { return NoData(); }
    template <int VEC, typename T>
    static SCANRT_DEVICE u32 decide(const T (&x)[VEC], NoData, T, T after, SelectSource s, long long i, int left) {
        const long long last = s.n - 1 - i;  // the array's last element is j == last
        u32 bits = 0;
#pragma unroll
        for (int j = 0; j < VEC; ++j) {
            const T next = j + 1 < VEC ? x[j + 1] : after;
            bits |= (u32)(j < left && (j == last || !(x[j] == next))) << j;
        }
        return bits;
    }
};
