// scanrt kernels, level 4: the least-significant-digit radix sort, onesweep style
// (Adinets & Merrill 2022): one kernel counts the digits of every pass at once, then one
// launch per 8-bit digit pass (per portion of the input) ranks and scatters each tile in
// a single read and write of the data, finding where its keys of each digit go by a
// decoupled look-back over the tiles' digit counts, on the protocol of lookback.cuh.
//
// Keys are sorted as unsigned words that order like the keys (`OrderedKey`): signed
// integers flip the sign bit; floats map bijectively onto the total order
//   -inf < negative numbers < -0 < +0 < positive numbers < +inf < NaNs,
// positive NaNs before negative ones, so every key, NaN payloads and signs included,
// comes back bit for bit. A descending sort ranks the complement of that word; the sort
// is stable either way (equal keys keep their input order). The first pass reads the
// caller's keys and the last one writes them; the passes between read and write the
// ranked words, so signed, float and descending keys cost what unsigned ones do.
//
// A digit pass's tile (one block, THREADS threads of ITEMS keys):
//   1. draws its tile id (a ticket), loads its keys warp-striped (warp w holds the tile's
//      w-th run of 32 * ITEMS keys; item k of lane l is that run's key 32 k + l, so
//      (warp, item, lane) order is input order);
//   2. counts each warp's keys of each digit (shared atomics);
//   3. per digit d (thread d): the tile's count, published at once for the tiles after
//      it (AGGREGATE; tile 0 INCLUSIVE), and the tile's first slot of d and each warp's;
//   4. per digit: the look-back over the earlier tiles' counts of d (one thread per digit
//      walks its digit back, its warp polling together) gives the keys of d before this
//      tile, and INCLUSIVE is published. Beside it (in a block of two threads per digit
//      the other half of the block, else after it), each key is ranked among the warp's
//      keys of its digit in input order (the key's peers found through a shared-memory
//      mask per digit; the first peer takes the warp's next ranks);
//   5. the keys (and values) go into shared memory in (digit, rank) order;
//   6. the keys go out to `bin start of d + keys of d before the tile + rank`, in runs of
//      consecutive addresses, the values with them (the histogram kernel leaves the bin
//      starts).
// The look-back comes as early as the counts allow because a tile's INCLUSIVE counts
// end its successors' walks: the sooner they appear, the shorter every walk.
// Status slots: 256 per tile (tile * RADIX + digit), 4-byte counts with the launch's tag
// (TileStatus<u32>), so passes follow each other on one workspace with no memset.
// A portion holds fewer than 2^31 keys, so counts fit the slots; the last tile of a
// portion hands each digit's running count to the next portion (`carry_out`).
#pragma once
#include "device/lookback.cuh"

#define SCANRT_RADIX_BITS 8
#define SCANRT_RADIX 256
// Keys a histogram block counts at a time (its grid strides over chunks).
#define SCANRT_HISTOGRAM_CHUNK 16384

// Floats: binary32 and binary64 (by the word's size), binary16 and bfloat16.
enum { SCANRT_KEY_UNSIGNED = 0, SCANRT_KEY_SIGNED = 1, SCANRT_KEY_FLOAT = 2, SCANRT_KEY_F16 = 3, SCANRT_KEY_BF16 = 4 };

// Unsigned words in the keys' order, and back (W: the key's bits as an unsigned word).
template <typename W, int KIND> struct OrderedKey;
template <typename W> struct OrderedKey<W, SCANRT_KEY_UNSIGNED> {
    static SCANRT_DEVICE W to(W b) { return b; }
    static SCANRT_DEVICE W from(W k) { return k; }
};
template <typename W> struct OrderedKey<W, SCANRT_KEY_SIGNED> {
    static constexpr W SIGN = (W)((W)1 << (8 * sizeof(W) - 1));
    static SCANRT_DEVICE W to(W b) { return (W)(b ^ SIGN); }
    static SCANRT_DEVICE W from(W k) { return (W)(k ^ SIGN); }
};
// A binary float of MANTISSA bits in W. With M the mantissa mask, negative NaNs (bits
// above ~M) keep their bits; other negative numbers map to ~b - M (-inf to 0, -0 to
// SIGN - M - 1); positive numbers and NaNs to b + SIGN - M (+0 to SIGN - M). The three
// ranges are disjoint and together cover every word.
template <typename W, int MANTISSA> struct OrderedFloat {
    static constexpr W SIGN = (W)((W)1 << (8 * sizeof(W) - 1));
    static constexpr W M = (W)(((W)1 << MANTISSA) - 1);
    static SCANRT_DEVICE W to(W b) {
        if (b > (W)~M) return b;
        if (b & SIGN) return (W)(~b - M);
        return (W)(b + (SIGN - M));
    }
    static SCANRT_DEVICE W from(W k) {
        if (k > (W)~M) return k;
        if (k >= (W)(SIGN - M)) return (W)(k - (SIGN - M));
        return (W)~(W)(k + M);
    }
};
template <typename W> struct OrderedKey<W, SCANRT_KEY_FLOAT> : OrderedFloat<W, sizeof(W) == 4 ? 23 : 52> {};
template <typename W> struct OrderedKey<W, SCANRT_KEY_F16> : OrderedFloat<W, 10> {};
template <typename W> struct OrderedKey<W, SCANRT_KEY_BF16> : OrderedFloat<W, 7> {};

// The word a sort ranks: ordered, complemented when descending.
template <typename W, int KIND, bool DESCENDING> struct RankedKey {
    static SCANRT_DEVICE W of(W bits) {
        const W k = OrderedKey<W, KIND>::to(bits);
        return DESCENDING ? (W)~k : k;
    }
    static SCANRT_DEVICE W bits_of(W ranked) { return OrderedKey<W, KIND>::from(DESCENDING ? (W)~ranked : ranked); }
    static SCANRT_DEVICE u32 digit(W bits, u32 shift, u32 mask) { return (u32)(of(bits) >> shift) & mask; }
};

// Digit counts summed across digits (64-bit: bin starts exceed 2^32 past 2^32 keys).
struct CountSum64 {
    typedef unsigned long long T;
    static SCANRT_DEVICE T identity() { return 0; }
    static SCANRT_DEVICE T combine(T a, T b) { return a + b; }
};

// Exclusive sum over the first SCANRT_RADIX threads' values (one per digit); every
// thread of the block calls it. `warp_totals` holds RADIX / 32 values.
template <typename Op>
SCANRT_DEVICE typename Op::T digit_exclusive_sum(typename Op::T v, typename Op::T* warp_totals, int tid) {
    const int lane = tid & 31, warp = tid >> 5;
    typename Op::T inclusive = warp_inclusive_scan<Op>(v, lane);
    if (lane == 31 && tid < SCANRT_RADIX) warp_totals[warp] = inclusive;
    __syncthreads();
    typename Op::T before = Op::identity();
    for (int w = 0; w < warp && w < SCANRT_RADIX / 32; ++w) before += warp_totals[w];
    __syncthreads();  // warp_totals may be reused
    return before + inclusive - v;
}

// Counts every pass's digits of one chunk of keys into `histograms[pass][digit]`; the
// last block then makes them each digit's bin start.
// Each lane counts into a copy of the block's counters of its own, lane % COPIES's: copy c
// of counter i lies at i * COPIES + c, so a warp's increments meet in a bank at most
// 32 / COPIES at a time whatever the digits (src/sort/kernels.rs `histogram_shape` picks
// COPIES). The kernel is bound by the rate of its shared atomics (an increment a pass a
// key): for 2^28 u32 keys on an H200 it took 535 us with one set of counters (uniform
// digits collide about 3.5 ways a warp), and the sort about 40 us less with copies,
// against 250 us for a read of the keys at a copy's speed. `counts_s` holds
// MAX_PASSES * RADIX * COPIES words (dynamic shared memory, sized by the host).
template <typename W, int KIND, bool DESCENDING, int THREADS, int COPIES>
SCANRT_DEVICE void radix_histogram(const W* keys, long long n, unsigned long long* histograms, u32 begin_bit,
                                   u32 end_bit, u32 flags) {
    typedef RankedKey<W, KIND, DESCENDING> Ranked;
    const int MAX_PASSES = sizeof(W) * 8 / SCANRT_RADIX_BITS;
    const int PER_VECTOR = 16 / sizeof(W);
    // The chunk's 16-byte vectors each thread loads before counting them, so that they
    // are in flight together.
    const int VECTORS_PER_THREAD = SCANRT_HISTOGRAM_CHUNK / PER_VECTOR / THREADS;
    static_assert(VECTORS_PER_THREAD >= 1 && SCANRT_HISTOGRAM_CHUNK % (PER_VECTOR * THREADS) == 0,
                  "a chunk is whole vectors for every thread");
    static_assert(THREADS >= SCANRT_RADIX && 32 % COPIES == 0, "a thread per digit; copies divide a warp");
    extern __shared__ u32 counts_s[];
    const int tid = threadIdx.x, lane = tid & 31;
    // At least one pass, as the host counts them (a pass over no bits copies), so the
    // finished blocks' counter lies where the host left room for it.
    const u32 passes = max(1u, (end_bit - begin_bit + SCANRT_RADIX_BITS - 1) / SCANRT_RADIX_BITS);
    for (int i = tid; i < (int)passes * SCANRT_RADIX * COPIES; i += THREADS) counts_s[i] = 0;
    __syncthreads();
    u32* my_counts = counts_s + lane % COPIES;
    auto count = [&](W bits) {
        const W k = Ranked::of(bits);
#pragma unroll
        for (int p = 0; p < MAX_PASSES; ++p) {
            if (p < (int)passes) {
                const u32 shift = begin_bit + p * SCANRT_RADIX_BITS;
                const u32 width = end_bit - shift < SCANRT_RADIX_BITS ? end_bit - shift : SCANRT_RADIX_BITS;
                const u32 digit = (u32)(k >> shift) & ((1u << width) - 1u);
                atomicAdd(&my_counts[(p * SCANRT_RADIX + digit) * COPIES], 1u);
            }
        }
    };
    // Chunks of SCANRT_HISTOGRAM_CHUNK keys, grid-strided: a block counts fewer than 2^32
    // keys (the host sizes the grid so).
    for (long long start = (long long)blockIdx.x * SCANRT_HISTOGRAM_CHUNK; start < n;
         start += (long long)gridDim.x * SCANRT_HISTOGRAM_CHUNK) {
        const int len = (int)(n - start < SCANRT_HISTOGRAM_CHUNK ? n - start : SCANRT_HISTOGRAM_CHUNK);
        const W* chunk = keys + start;
        int scalar_from = 0;
        if (flags & SORT_FLAG_VECTOR_IN) {  // chunks start 16-byte aligned (CHUNK is a multiple of 16)
            const int vectors = len / PER_VECTOR;
            uint4 word[VECTORS_PER_THREAD];
#pragma unroll
            for (int j = 0; j < VECTORS_PER_THREAD; ++j) {
                const int v = tid + j * THREADS;
                if (v < vectors) word[j] = reinterpret_cast<const uint4*>(chunk)[v];
            }
#pragma unroll
            for (int j = 0; j < VECTORS_PER_THREAD; ++j) {
                if (tid + j * THREADS < vectors) {
                    W w[PER_VECTOR];
                    memcpy(w, &word[j], 16);
#pragma unroll
                    for (int e = 0; e < PER_VECTOR; ++e) count(w[e]);
                }
            }
            scalar_from = vectors * PER_VECTOR;
        }
        for (int i = scalar_from + tid; i < len; i += THREADS) count(chunk[i]);
    }
    __syncthreads();
    // Each counter's copies summed, a lane starting at its own copy (conflict-free reads).
    for (int i = tid; i < (int)passes * SCANRT_RADIX; i += THREADS) {
        u32 sum = 0;
#pragma unroll
        for (int c = 0; c < COPIES; ++c) sum += counts_s[i * COPIES + (c + lane) % COPIES];
        if (sum) atomicAdd(&histograms[i], (unsigned long long)sum);
    }

    // The last block to finish turns every pass's counts into its digits' bin starts
    // (exclusive sums), so that no tile of a digit pass scans them again. Its counter
    // follows the counts (zero-filled with them).
    __shared__ bool last_s;
    __shared__ unsigned long long totals_s[SCANRT_RADIX / 32];
    __threadfence();  // this block's counts are in L2 before its arrival is
    __syncthreads();
    if (tid == 0) last_s = atomicAdd(&histograms[passes * SCANRT_RADIX], 1ull) == gridDim.x - 1;
    __syncthreads();
    if (!last_s) return;
    __threadfence();
    for (u32 p = 0; p < passes; ++p) {
        const unsigned long long c = tid < SCANRT_RADIX ? __ldcg(&histograms[p * SCANRT_RADIX + tid]) : 0;
        const unsigned long long start = digit_exclusive_sum<CountSum64>(c, totals_s, tid);
        if (tid < SCANRT_RADIX) histograms[p * SCANRT_RADIX + tid] = start;
    }
}

// The look-back of `tile` (> 0) for the digit of each lane of a warp: the sum of that
// digit's counts over every earlier tile, up to the nearest tile that published its
// INCLUSIVE count. Each lane polls a window of WINDOW tiles at once (one round trip to L2
// covers them; the warp's lanes read adjacent slots), folds them nearest first, and
// polls again only the slots still unpublished before the nearest INCLUSIVE one; a window
// with none moves the walk on below it. The warp polls together, so the watchdog can
// bound the wait.
template <int WINDOW, int SPIN_BEFORE_SLEEP, int SLEEP_NS>
SCANRT_DEVICE u32 digit_look_back(const TileStatus<u32>& status, u32 tile, u32 digit, u32 tag, int lane,
                                  Watchdog& dog) {
    u32 prefix = 0;
    long long window_end = (long long)tile - 1;  // the nearest tile of the window
    bool done = false;
    u32 value[WINDOW], flag[WINDOW];
#pragma unroll
    for (int j = 0; j < WINDOW; ++j) flag[j] = SCANRT_STATUS_INVALID;
    for (int spins = 0;; ++spins) {
        if (!done) {
#pragma unroll
            for (int j = 0; j < WINDOW; ++j) {
                const long long t = window_end - j;
                if (t < 0) {
                    flag[j] = SCANRT_STATUS_INCLUSIVE;  // before tile 0: nothing, and the end
                    value[j] = 0;
                } else if (flag[j] == SCANRT_STATUS_INVALID) {
                    flag[j] = status.poll(t * SCANRT_RADIX + digit, tag, value[j]);
                }
            }
            // Nearest first: the window is usable up to its first INCLUSIVE slot if every
            // slot before it is published.
            bool ready = true, closed = false;
            u32 sum = 0;
#pragma unroll
            for (int j = 0; j < WINDOW; ++j) {
                if (closed || !ready) continue;
                if (flag[j] == SCANRT_STATUS_INVALID) ready = false;
                else {
                    sum += value[j];
                    closed = flag[j] == SCANRT_STATUS_INCLUSIVE;
                }
            }
            if (ready) {
                prefix += sum;
                done = closed;
                window_end -= WINDOW;
#pragma unroll
                for (int j = 0; j < WINDOW; ++j) flag[j] = SCANRT_STATUS_INVALID;
            } else if (spins >= SPIN_BEFORE_SLEEP) {
                __nanosleep(SLEEP_NS);
            }
        }
        if (__all_sync(SCANRT_FULL_MASK, done)) break;
        if (dog.expired(spins, lane)) break;  // the output is undefined; the host hears of it
    }
    return prefix;
}

// An element's index as a value (an argsort's first pass; V is u32 or u64 there).
template <typename V> SCANRT_DEVICE V index_value(unsigned long long i) {
    V v{};
    memcpy(&v, &i, sizeof(V) < 8 ? sizeof(V) : 8);
    return v;
}

// One tile of one digit pass (see the top of this file). V is the values' word (any
// size; read only when HAS_VALUES).
template <typename W, int KIND, bool DESCENDING, typename V, bool HAS_VALUES, int THREADS, int ITEMS,
          int LOOKBACK_WINDOW, int SPIN_BEFORE_SLEEP, int SLEEP_NS>
SCANRT_DEVICE void radix_onesweep_tile(const W* keys_in, W* keys_out, const V* values_in, V* values_out,
                                       const unsigned long long* bin_starts, const unsigned long long* carry_in,
                                       unsigned long long* carry_out, void* workspace, long long status_capacity,
                                       FaultSink report, long long n, unsigned long long index_base, u32 shift,
                                       u32 end_bit, u32 flags) {
    typedef RankedKey<W, KIND, DESCENDING> Ranked;
    typedef TileStatus<u32> Status;
    const int WARPS = THREADS / 32, TILE = THREADS * ITEMS, WARP_ITEMS = 32 * ITEMS;
    // The threads that walk the look-back, one per digit: the upper half of a block of
    // two threads per digit (its lower half ranks meanwhile), else the first RADIX.
    const int LOOKBACK_FIRST = THREADS >= 2 * SCANRT_RADIX ? THREADS - SCANRT_RADIX : 0;
    static_assert(THREADS >= SCANRT_RADIX, "one thread per digit");
    static_assert(TILE < 65536, "ranks fit 16 bits");
    extern __shared__ __align__(16) unsigned char tile_s[];  // TILE keys, then TILE values (first the warps' digit masks)
    __shared__ u32 warp_first_s[WARPS][SCANRT_RADIX];       // counts, then each warp's next slot
    __shared__ u32 local_start_s[SCANRT_RADIX];              // the tile's first slot of digit d
    __shared__ u32 count_s[SCANRT_RADIX];                    // the tile's keys of digit d
    __shared__ unsigned long long carried_s[SCANRT_RADIX];   // the earlier portions' keys of d
    __shared__ unsigned long long out_base_s[SCANRT_RADIX];  // bin start of d, then the output index of slot 0
    __shared__ unsigned long long totals_s[SCANRT_RADIX / 32];
    __shared__ u32 tile_id_s, generation_s;

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    LookbackHeader* header = (LookbackHeader*)workspace;
    Status status(header + 1, status_capacity);
    const u32 num_tiles = (u32)((n + TILE - 1) / TILE);
    if (tid == 0) {
        const unsigned long long drawn = first_ticket<Status>(header, report, num_tiles * SCANRT_RADIX, status_capacity);
        pass_on_header(header, drawn, num_tiles - 1);  // one ticket per block
        tile_id_s = (u32)drawn;
        generation_s = (u32)(drawn >> 32);
    }
    for (int i = tid; i < WARPS * SCANRT_RADIX; i += THREADS) {
        (&warp_first_s[0][0])[i] = 0;
        ((u32*)tile_s)[i] = 0;  // the warps' digit masks of step 4
    }
    __syncthreads();
    const u32 tile = tile_id_s;
    if (tile < num_tiles) {
        const u32 tag = generation_tag(generation_s);
        const u32 width = end_bit - shift < SCANRT_RADIX_BITS ? end_bit - shift : SCANRT_RADIX_BITS;
        const u32 mask = (1u << width) - 1u;
        const long long first = (long long)tile * TILE;
        const int valid = (int)(n - first < TILE ? n - first : TILE);
        // The digit's bin start and the earlier portions' keys of it, read now so that
        // their round trips overlap the tile's loads.
        if (tid < SCANRT_RADIX) {
            out_base_s[tid] = bin_starts[tid];
            carried_s[tid] = carry_in[tid];
        }

        // 1. Load warp-striped.
        const W* tile_keys = keys_in + first;
        W key[ITEMS];
        const int warp_first = warp * WARP_ITEMS;
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) {
            const int e = warp_first + 32 * k + lane;
            key[k] = e < valid ? tile_keys[e] : (W)0;
        }
        // The tile holds the ranked words.
        if (!(flags & SORT_FLAG_RANKED_IN)) {
#pragma unroll
            for (int k = 0; k < ITEMS; ++k) key[k] = Ranked::of(key[k]);
        }

        // 2. Count each warp's keys of each digit (independent shared atomics: they
        // pipeline). Padding past the end counts as the highest digit, whose slots come
        // after every real key; it is left out of the published count.
        auto digit_of = [&](int k) {
            return warp_first + 32 * k + lane < valid ? (u32)(key[k] >> shift) & mask : mask;
        };
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) atomicAdd(&warp_first_s[warp][digit_of(k)], 1u);
        __syncthreads();

        // 3. Per digit: the tile's count, published at once for the tiles after it; the
        // tile's first slot of the digit, and each warp's.
        u32 count = 0;
        if (tid < SCANRT_RADIX) {
            for (int w = 0; w < WARPS; ++w) {
                const u32 c = warp_first_s[w][tid];
                warp_first_s[w][tid] = count;
                count += c;
            }
            if (tid == (int)mask) count -= TILE - valid;
            status.publish((long long)tile * SCANRT_RADIX + tid,
                           tile == 0 ? SCANRT_STATUS_INCLUSIVE : SCANRT_STATUS_AGGREGATE, count, tag);
            count_s[tid] = count;
        }
        const u32 local_start = (u32)digit_exclusive_sum<CountSum64>(count, totals_s, tid);
        if (tid < SCANRT_RADIX) {
            local_start_s[tid] = local_start;
            for (int w = 0; w < WARPS; ++w) warp_first_s[w][tid] += local_start;
        }
        __syncthreads();

        // 4. The look-back, by the look-back threads: the keys of d before this tile,
        // hence where the tile's keys of d go.
        if (tid >= LOOKBACK_FIRST && tid < LOOKBACK_FIRST + SCANRT_RADIX) {
            const int d = tid - LOOKBACK_FIRST;
            u32 before = 0;
            if (tile > 0) {
                Watchdog dog{header, report, 0};
                before = digit_look_back<LOOKBACK_WINDOW, SPIN_BEFORE_SLEEP, SLEEP_NS>(status, tile, d, tag, lane, dog);
                status.publish((long long)tile * SCANRT_RADIX + d, SCANRT_STATUS_INCLUSIVE, before + count_s[d], tag);
            }
            out_base_s[d] += carried_s[d] + before - local_start_s[d];  // wraps; + slot does not
            if (carry_out && tile == num_tiles - 1) carry_out[d] = carried_s[d] + before + count_s[d];
        }
        // Rank within the warp in input order, beside the look-back: the lanes holding the
        // same digit find each other through one shared-memory OR per key into the warp's
        // mask of that digit (eight ballots, one per digit bit, cost more: 6.4 against 7.2
        // ms for 2^28 u32 keys); the first of them takes the warp's next slots of the digit
        // and clears the mask for the next item.
        u32* peers_s = (u32*)tile_s + warp * SCANRT_RADIX;  // before step 5 writes the tile there
        const u32 lanes_below = (1u << lane) - 1u;
        // Two 16-bit slots a register (slots are below 65536), so that larger tiles keep
        // their keys and slots in registers.
        u32 slots[(ITEMS + 1) / 2] = {};
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) {
            const u32 d = digit_of(k);
            atomicOr(&peers_s[d], 1u << lane);
            __syncwarp();
            const u32 peers = peers_s[d];
            __syncwarp();
            const u32 below = __popc(peers & lanes_below);
            u32 taken = 0;
            if (below == 0) {
                taken = warp_first_s[warp][d];
                warp_first_s[warp][d] = taken + __popc(peers);
                peers_s[d] = 0;
            }
            __syncwarp();  // the mask is clear before the next item's ORs
            const u32 slot = __shfl_sync(SCANRT_FULL_MASK, taken, __ffs(peers) - 1) + below;
            slots[k / 2] |= slot << (16 * (k % 2));
        }
        // The values' loads, in flight while the block waits for the look-back.
        V value[HAS_VALUES ? ITEMS : 1];
        if constexpr (HAS_VALUES) {
            const V* tile_values = values_in + first;
#pragma unroll
            for (int k = 0; k < ITEMS; ++k) {
                const int e = warp_first + 32 * k + lane;
                if (flags & SORT_FLAG_INDICES) value[k] = index_value<V>(index_base + first + e);
                else if (e < valid) value[k] = tile_values[e];
            }
        }
        __syncthreads();  // every warp's masks are done with; out_base_s is set

        // 5. Keys (and values) into shared memory in (digit, rank) order.
        W* keys_s = (W*)tile_s;
        V* values_s = (V*)(tile_s + TILE * sizeof(W));
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) {
            const u32 slot = (slots[k / 2] >> (16 * (k % 2))) & 0xffffu;
            keys_s[slot] = key[k];
            if constexpr (HAS_VALUES) values_s[slot] = value[k];
        }
        __syncthreads();

        // 6. Out in runs of consecutive addresses; each slot's digit is read again from its
        // key.
        const bool ranked_out = flags & SORT_FLAG_RANKED_OUT;
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) {
            const int slot = k * THREADS + tid;
            if (slot < valid) {
                const W ranked = keys_s[slot];
                const unsigned long long at = out_base_s[(u32)(ranked >> shift) & mask] + slot;
                keys_out[at] = ranked_out ? ranked : Ranked::bits_of(ranked);
                if constexpr (HAS_VALUES) values_out[at] = values_s[slot];
            }
        }
    }
    clear_before_tags_repeat(header, status, status_capacity, generation_s, tid);
}
