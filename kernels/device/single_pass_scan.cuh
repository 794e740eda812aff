// scanrt kernels, level 4: the single-pass scan with decoupled look-back
// (Merrill & Garland 2016) and dynamic tile ids (PMPP ch. 8, seed 003).
//
// ============================ The protocol ============================
// Every tile t owns a status slot holding (flag, value) with flag one of
//   INVALID      nothing published yet for t in this launch
//   AGGREGATE    value = reduction of tile t alone
//   INCLUSIVE    value = init . x[0] . ... . x[last element of t]
// A block processing tile t:
//   1. loads and scans its tile locally, then publishes AGGREGATE (tile 0 publishes
//      INCLUSIVE = init . aggregate at once);
//   2. its look-back warp walks back over the predecessors t-1, t-2, ... 32 at a time (one lane
//      per slot), waiting until all 32 slots of the window are valid, folding their
//      values until it meets an INCLUSIVE slot: that fold is t's exclusive prefix;
//   3. publishes INCLUSIVE = prefix . aggregate, and writes its outputs.
//
// Dynamic tile ids. Blocks are persistent: each takes tile ids from an atomic ticket,
// in increasing order, until the ticket passes the last tile. A tile id is only ever held
// by a block that is already running, and a block publishes its tile's AGGREGATE before
// it waits for anything, so the smallest unfinished tile always has every predecessor's
// slot valid and makes progress: no deadlock, whatever order the hardware schedules
// blocks in, and however many blocks are resident.
//
// Hiding the wait. Each block has THREADS data threads plus one look-back warp. While
// the look-back warp resolves tile t's prefix, the data threads already take the next
// ticket u, load, scan and publish u's AGGREGATE; only then do they fold t's prefix in
// and store t. So the memory system streams the next tile during the wait, and no
// AGGREGATE ever waits for a look-back. A tile's AGGREGATE waits only for its block's
// previous round, whose look-back concerns a smaller tile id, so every wait still points
// to a smaller tile and the argument above holds.
//
// Memory ordering. For 4-byte accumulators the flag and value share one 64-bit word,
// written and read with single-copy-atomic relaxed gpu-scope accesses: a reader sees a
// flag only together with its value. For 8-byte accumulators the value is written
// first (relaxed), then the flag with release semantics; a reader loads the flag with
// acquire semantics before it loads the value, so a valid flag implies a visible value.
//
// One launch, no per-call memset. Slots are tagged with the launch's generation; a
// slot whose tag differs is INVALID. The workspace header holds the generation, the
// ticket and a count of finished blocks. Every block reads the generation when it
// starts; the last block to finish (the one whose increment of the finished count
// reaches gridDim.x) resets the ticket and the count and advances the generation. No
// block reads the header after that, so all blocks of a launch agree on the tag, and
// the next launch in stream order (or the next replay of a captured graph) starts
// clean. Tags have 30 bits; once per 2^30 - 1 launches the last block also clears every
// slot before the tags repeat, so no stale slot can ever match. The workspace must be
// zero-filled once, when it is created.
//
// Inputs of one tile skip all of this: one block, no status, no ticket.
// =======================================================================
#pragma once
#include "block/block_scan.cuh"
#include "device/scan_params.cuh"

#define SCANRT_STATUS_INVALID   0u
#define SCANRT_STATUS_AGGREGATE 1u
#define SCANRT_STATUS_INCLUSIVE 2u
#define SCANRT_TAG_PERIOD       0x3fffffffu  // tags run 1..2^30-1; 0 never matches

struct LookbackHeader {
    u32 generation;
    u32 finished_blocks;
    u32 ticket;
    u32 reserved;
};

SCANRT_DEVICE u64 ld_relaxed(const u64* p) { u64 v; asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory"); return v; }
SCANRT_DEVICE void st_relaxed(u64* p, u64 v) { asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" :: "l"(p), "l"(v) : "memory"); }
SCANRT_DEVICE u32 ld_acquire(const u32* p) { u32 v; asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory"); return v; }
SCANRT_DEVICE void st_release(u32* p, u32 v) { asm volatile("st.release.gpu.global.u32 [%0], %1;" :: "l"(p), "r"(v) : "memory"); }

// Tile status slots; the layout depends on the accumulator's size.
template <typename Acc, int SIZE = sizeof(Acc)> struct TileStatus;

// 4-byte accumulator: one 64-bit word per tile, [tag:30 | flag:2 | value:32].
template <typename Acc> struct TileStatus<Acc, 4> {
    u64* word;
    static SCANRT_DEVICE long long bytes(long long slots) { return slots * 8; }
    SCANRT_DEVICE explicit TileStatus(void* slots) : word((u64*)slots) {}
    SCANRT_DEVICE void publish(long long tile, u32 flag, Acc value, u32 tag) {
        st_relaxed(word + tile, ((u64)((tag << 2) | flag) << 32) | Bits<Acc>::to(value));
    }
    SCANRT_DEVICE u32 poll(long long tile, u32 tag, Acc& value) const {
        u64 w = ld_relaxed(word + tile);
        u32 high = (u32)(w >> 32);
        value = Bits<Acc>::from((u32)w);
        return (high >> 2) == tag ? (high & 3u) : SCANRT_STATUS_INVALID;
    }
    SCANRT_DEVICE void clear(long long slots, int tid, int threads) {
        for (long long i = tid; i < slots; i += threads) word[i] = 0;
    }
};

// 8-byte accumulator: a flag word plus one value array per flag kind, so a value is
// never overwritten while a reader may hold the flag that announced it.
template <typename Acc> struct TileStatus<Acc, 8> {
    u32* flag_word;
    u64* aggregate;
    u64* inclusive;
    long long slots;
    static SCANRT_DEVICE long long bytes(long long slots) { return slots * 20 + 8; }
    SCANRT_DEVICE TileStatus(void* base, long long slots_) : slots(slots_) {
        aggregate = (u64*)base;
        inclusive = aggregate + slots;
        flag_word = (u32*)(inclusive + slots);
    }
    SCANRT_DEVICE void publish(long long tile, u32 flag, Acc value, u32 tag) {
        u64* dst = flag == SCANRT_STATUS_INCLUSIVE ? inclusive : aggregate;
        st_relaxed(dst + tile, Bits<Acc>::to(value));
        st_release(flag_word + tile, (tag << 2) | flag);
    }
    SCANRT_DEVICE u32 poll(long long tile, u32 tag, Acc& value) const {
        u32 f = ld_acquire(flag_word + tile);
        u32 flag = (f >> 2) == tag ? (f & 3u) : SCANRT_STATUS_INVALID;
        if (flag != SCANRT_STATUS_INVALID)
            value = Bits<Acc>::from(ld_relaxed((flag == SCANRT_STATUS_INCLUSIVE ? inclusive : aggregate) + tile));
        return flag;
    }
    SCANRT_DEVICE void clear(long long, int tid, int threads) {
        for (long long i = tid; i < slots; i += threads) flag_word[i] = 0;
    }
};

template <typename Acc> SCANRT_DEVICE TileStatus<Acc, 4> make_status(void* slots, long long, TileStatus<Acc, 4>*) { return TileStatus<Acc, 4>(slots); }
template <typename Acc> SCANRT_DEVICE TileStatus<Acc, 8> make_status(void* slots, long long cap, TileStatus<Acc, 8>*) { return TileStatus<Acc, 8>(slots, cap); }

// Warp 0's look-back for `tile` (> 0): returns the fold of all predecessors, which
// includes init through tile 0's INCLUSIVE value. All 32 lanes call it.
template <typename Op, typename Status, int SPIN_BEFORE_SLEEP, int SLEEP_NS>
SCANRT_DEVICE typename Op::T look_back(const Status& status, long long tile, u32 tag, int lane) {
    typedef typename Op::T Acc;
    Acc running = Op::identity();
    for (long long window_end = tile - 1;; window_end -= 32) {
        const long long slot = window_end - 31 + lane;  // lane 31 holds the nearest predecessor
        Acc value = Op::identity();
        // Slots before tile 0 count as an empty inclusive prefix.
        u32 flag = slot < 0 ? SCANRT_STATUS_INCLUSIVE : SCANRT_STATUS_INVALID;
        for (int spins = 0;; ++spins) {
            if (flag == SCANRT_STATUS_INVALID) flag = status.poll(slot, tag, value);
            if (__all_sync(SCANRT_FULL_MASK, flag != SCANRT_STATUS_INVALID)) break;
            if (spins >= SPIN_BEFORE_SLEEP) __nanosleep(SLEEP_NS);
        }
        const u32 inclusive_lanes = __ballot_sync(SCANRT_FULL_MASK, flag == SCANRT_STATUS_INCLUSIVE);
        const int first = inclusive_lanes ? 31 - __clz(inclusive_lanes) : 0;
        const Acc window = warp_reduce<Op>(lane >= first ? value : Op::identity(), lane);
        running = Op::combine(window, running);
        if (inclusive_lanes) return running;
    }
}

// Launched with THREADS data threads plus one look-back warp (blockDim.x = THREADS + 32).
template <typename Op, typename In, int THREADS, int ITEMS, int SPIN_BEFORE_SLEEP, int SLEEP_NS>
SCANRT_DEVICE void single_pass_scan(const In* in, typename Op::T* out, long long n, unsigned long long init_bits,
                                    unsigned flags, void* workspace, long long status_capacity) {
    typedef typename Op::T Acc;
    typedef BlockMatrixScan<Op, THREADS, ITEMS> Scan;
    typedef TileStatus<Acc> Status;
    const int TILE = THREADS * ITEMS;
    // Two shared tiles: the one waiting for its prefix stays parked in shared memory while
    // the next one is staged and scanned in the other (registers hold one tile at most).
    __shared__ typename Scan::Shared shared[2];
    __shared__ long long next_tile_s;
    __shared__ u32 tag_s;
    __shared__ Acc lookback_aggregate_s;  // aggregate of the tile the look-back warp works on
    __shared__ Acc tile_prefix_s;         // its exclusive prefix, the look-back's answer
    __shared__ bool last_block_s;

    const int tid = threadIdx.x, lane = tid & 31;
    const bool lookback_warp = tid >= THREADS;
    const bool inclusive = flags & SCANRT_FLAG_INCLUSIVE;
    const bool vector_in = flags & SCANRT_FLAG_VECTOR_IN, vector_out = flags & SCANRT_FLAG_VECTOR_OUT;
    const Acc init = initial_value<Op>(init_bits, flags);
    const long long num_tiles = (n + TILE - 1) / TILE;

    // What a data thread keeps of a scanned, parked tile.
    struct Parked {
        Acc thread_prefix;
        Acc aggregate;
    };
    // Loads, stages, scans and parks `tile` in shared[buffer] (data threads only).
    auto scan_tile = [&](int buffer, long long tile) -> Parked {
        const long long valid = min((long long)TILE, n - tile * TILE);
        const int mode = tile_mode(valid, TILE, vector_in);
        TileRegs<In, THREADS, ITEMS> regs;
        regs.load(in + tile * TILE, valid, mode, tid);
        regs.template stage<Op>(shared[buffer].matrix, valid, mode, tid);
        data_barrier<THREADS>();
        Scan scan;
        scan.scan_rows(shared[buffer], inclusive, tid);
        scan.park_rows(shared[buffer], tid);
        return Parked{scan.thread_prefix, scan.tile_aggregate};
    };
    // Folds the prefix into the parked tile and stores it (data threads only).
    auto finish_tile = [&](int buffer, long long tile, const Parked& parked, Acc prefix) {
        const long long valid = min((long long)TILE, n - tile * TILE);
        Scan::finish_parked_rows(shared[buffer], prefix, parked.thread_prefix, tid);
        data_barrier<THREADS>();
        store_tile(shared[buffer].matrix, out + tile * TILE, valid, tile_mode(valid, TILE, vector_out), tid);
    };

    if (num_tiles == 1) {  // the single-block path: no look-back, no workspace
        if (lookback_warp) return;
        finish_tile(0, 0, scan_tile(0, 0), init);
        return;
    }

    LookbackHeader* header = (LookbackHeader*)workspace;
    Status status = make_status<Acc>(header + 1, status_capacity, (Status*)0);
    if (tid == 0) {
        tag_s = 1u + (*(volatile u32*)&header->generation) % SCANRT_TAG_PERIOD;
        next_tile_s = atomicAdd(&header->ticket, 1u);
    }
    __syncthreads();
    const u32 tag = tag_s;
    long long tile = next_tile_s;
    int buffer = 0;
    Parked current = {}, next = {};
    if (!lookback_warp && tile < num_tiles) {
        current = scan_tile(buffer, tile);
        if (tid == 0) {
            if (tile == 0) status.publish(0, SCANRT_STATUS_INCLUSIVE, Op::combine(init, current.aggregate), tag);
            else status.publish(tile, SCANRT_STATUS_AGGREGATE, current.aggregate, tag);
            lookback_aggregate_s = current.aggregate;
        }
    }
    __syncthreads();

    // Each round overlaps the look-back of `tile` (look-back warp) with loading, scanning
    // and publishing the AGGREGATE of the block's next tile (data threads).
    while (tile < num_tiles) {
        if (lookback_warp) {
            Acc prefix = init;
#ifndef SCANRT_DEBUG_SKIP_LOOKBACK
            if (tile > 0) {
                prefix = look_back<Op, Status, SPIN_BEFORE_SLEEP, SLEEP_NS>(status, tile, tag, lane);
                if (lane == 0) status.publish(tile, SCANRT_STATUS_INCLUSIVE, Op::combine(prefix, lookback_aggregate_s), tag);
            }
#endif
            if (lane == 0) tile_prefix_s = prefix;
        } else {
            if (tid == 0) next_tile_s = atomicAdd(&header->ticket, 1u);
            data_barrier<THREADS>();
            const long long upcoming = next_tile_s;
            if (upcoming < num_tiles) {
                next = scan_tile(buffer ^ 1, upcoming);
                if (tid == 0) status.publish(upcoming, SCANRT_STATUS_AGGREGATE, next.aggregate, tag);
            }
        }
        __syncthreads();  // the prefix is known; the next tile is scanned and parked
        const long long upcoming = next_tile_s;
        if (!lookback_warp) {
            finish_tile(buffer, tile, current, tile_prefix_s);
            current = next;
            if (tid == 0) lookback_aggregate_s = next.aggregate;
        }
        __syncthreads();  // the look-back warp may read the new aggregate; the finished buffer is free
        buffer ^= 1;
        tile = upcoming;
    }

    // End of launch: the last block to finish resets the header for the next launch.
    if (tid == 0) {
        __threadfence();
        last_block_s = atomicAdd(&header->finished_blocks, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (!last_block_s) return;
    const u32 next_generation = *(volatile u32*)&header->generation + 1u;
    if (next_generation % SCANRT_TAG_PERIOD == 0) {
        status.clear(status_capacity, tid, blockDim.x);
        __syncthreads();
    }
    if (tid == 0) {
        header->ticket = 0;
        header->finished_blocks = 0;
        __threadfence();
        *(volatile u32*)&header->generation = next_generation;
    }
}
