// scanrt kernels, level 4: the single pass fed by bulk copies (sm_90+), for large scans.
//
// Same protocol as single_pass_scan.cuh (tickets, generation tags, status slots, the
// look-back warp, and the same workspace, so the two kernels can follow each other on
// one stream); only the tile pipeline differs. Tiles live in a ring of BUFFERS
// shared-memory buffers in plain row order (row r = elements [r * ITEMS, (r+1) * ITEMS)),
// and move between global and shared memory as bulk copies that thread 0 issues:
//
//   the block's seq-th tile, in buffer seq % BUFFERS, LAG = BUFFERS - 2:
//     round seq - 1    thread 0 draws its ticket and issues the bulk load
//     round seq        rows scanned in registers and parked back; AGGREGATE published
//     round seq+LAG-1  handed to the look-back warp (the round after publication, with
//                      the four buffers the host uses)
//     round seq+LAG    prefix folded in (or the rows rescanned from it: BulkTile), bulk
//                      store issued; the store's shared-memory reads drain during the
//                      next round's scan, then the buffer takes seq + BUFFERS
//
// Why this shape. The register-staged kernel holds a tile's loads in registers and L1,
// so it can afford two buffers only (more shared memory starves L1 of the lines its loads
// are in flight in). Bulk loads land in the buffers themselves, so a block keeps the next
// load in flight while it folds and stores, and four buffers still stream at memcpy speed
// with the look-back skipped (measured on an H100 with a debug switch since removed). The
// extra buffers give the look-back slack: a tile reaches the look-back warp one round
// after its publication, when its predecessors have mostly published too, so the warp
// polls less (starting
// look-backs earlier, or running two look-back warps, measured slower), and its prefix
// is needed only one round later. A look-back costs a few polls of L2 that queue behind
// the streaming loads (about a round of a 16 KiB tile), so the host gives this kernel
// larger tiles than the register-staged one: fewer look-backs per byte (tuning.rs).
//
// Progress. Every wait still points to a smaller tile held by a running block: a drawn
// tile is loaded and published by its block's next round, which waits only for the prefix
// of an older tile of the same block, so the argument of single_pass_scan.cuh holds.
//
// Segment heads (flags or keys) are read per row with ordinary loads, as in the
// register-staged kernel (tile_heads.cuh); only the values travel by bulk copy. Rows with
// a pitch (`RowPitch`, bulk_io.cuh) are this kernel's alone: a tile's copies split where
// its rows end.
//
// Tiles that are not whole, or whose global span is not 16-byte aligned, or whose input
// type differs from the accumulator, are copied by the data threads instead (same
// buffers, same rows). Transforms bring their input arrays into the buffer and build the
// states from them as a row is read, and write their output arrays there before the bulk
// stores (block/bulk_io.cuh): a recurrence moves 12 bytes per f32 element, as in the
// register-staged kernel. Small scans use the register-staged kernel, which starts its
// first loads before its ticket returns; the host picks by size (src/scan/tuning.rs), and
// never launches this kernel for a single tile.
#pragma once
#include "block/bulk_io.cuh"
#include "device/single_pass_scan.cuh"

// Named barriers (0 is __syncthreads(), 1 the data threads' data_barrier). The data threads
// and the look-back warp meet only through these, one pair per buffer, used as producer
// and consumer (bar.arrive / bar.sync, THREADS + 32 threads):
//   handoff(b): the tile in buffer b is published (or the block has no more tiles);
//   prefix(b):  its exclusive prefix is in prefix_s[b].
// A buffer is reused only after both sides are done with it, so no barrier ever collects
// arrivals of two uses at once.
template <int BUFFERS> struct PipelineBarriers {
    static_assert(2 + 2 * BUFFERS <= 16, "a block has 16 named barriers");
    static SCANRT_DEVICE int handoff(int buffer) { return 2 + buffer; }
    static SCANRT_DEVICE int prefix(int buffer) { return 2 + BUFFERS + buffer; }
};
SCANRT_DEVICE void named_barrier_arrive(int id, int threads) {
    asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(threads) : "memory");
}
SCANRT_DEVICE void named_barrier_sync(int id, int threads) {
    asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

// A value handed between the data threads and the look-back warp (a tile id, an
// aggregate, a prefix) travels through shared memory one 32-bit word at a time, by
// shared-memory atomics. The named barriers above order every hand-over; the atomics only
// let compute-sanitizer racecheck see that. It does not follow bar.arrive / bar.sync
// hand-overs between warps, but accepts atomic accesses (a reduced program showing both,
// bench/racecheck_named_barrier.cu, is in the git history).
template <typename V> struct Handover {
    static_assert(sizeof(V) % 4 == 0, "handed-over values are whole 32-bit words");
    static const int WORDS = sizeof(V) / 4;
    static SCANRT_DEVICE void store(V* slot, const V& value) {
        const u32* words = reinterpret_cast<const u32*>(&value);
#pragma unroll
        for (int i = 0; i < WORDS; ++i) atomicExch(reinterpret_cast<u32*>(slot) + i, words[i]);
    }
    // Warp-collective: lane 0 loads, every lane of the warp gets the value.
    static SCANRT_DEVICE V load(V* slot, int lane) {
        V value;
        u32* words = reinterpret_cast<u32*>(&value);
#pragma unroll
        for (int i = 0; i < WORDS; ++i) {
            const u32 word = lane == 0 ? atomicAdd(reinterpret_cast<u32*>(slot) + i, 0u) : 0u;
            words[i] = __shfl_sync(SCANRT_FULL_MASK, word, 0);
        }
        return value;
    }
};

// A buffer holds a tile's arrays (the accumulator's, for plain ones). Scanned states park
// there between rounds when they fit. A transform whose states are wider than its arrays
// (logcumsumexp: 8-byte states of 4-byte arrays) rescans its rows from the inputs still in
// the buffer once the prefix is known instead: one more row read, no parked rows, and
// buffers of the arrays' size, so more blocks fit on an SM.
template <typename Op, typename Src, typename Dst, int THREADS, int ITEMS> struct BulkTile {
    static const int BYTES =
        MaxOf<BulkSource<Op, Src, THREADS, ITEMS, false>::BYTES, BulkDestination<Op, Dst, THREADS, ITEMS, false>::BYTES>::value;
    static const bool RESCAN = BYTES < (int)sizeof(typename Op::T);
};

// Launched with THREADS data threads plus one look-back warp (blockDim.x = THREADS + 32)
// and BUFFERS * THREADS * ITEMS * BulkTile::BYTES bytes of dynamic shared memory.
template <typename Op, typename Src, typename Dst, int THREADS, int ITEMS, int BUFFERS, int LOOKBACK_SLOTS_PER_LANE,
          int SPIN_BEFORE_SLEEP, int SLEEP_NS, bool REVERSE, bool SEGMENTED>
SCANRT_DEVICE void single_pass_scan_bulk(Src src, Dst dst, long long n, unsigned long long init_bits,
                                         unsigned long long carry_out, unsigned flags,
                                         const void* heads, RowPitch pitch, void* workspace, long long status_capacity,
                                         FaultSink report) {
    typedef typename Op::T Acc;
    typedef BulkSource<Op, Src, THREADS, ITEMS, REVERSE> Source;
    typedef BulkDestination<Op, Dst, THREADS, ITEMS, REVERSE> Destination;
    typedef BlockMatrixScan<Op, THREADS, ITEMS, SEGMENTED> Scan;
    typedef typename Scan::CarryOp CarryOp;
    typedef typename Scan::Carry Carry;
    typedef TilePrefixAgent<CarryOp, LOOKBACK_SLOTS_PER_LANE, SPIN_BEFORE_SLEEP, SLEEP_NS> Agent;
    typedef PipelineBarriers<BUFFERS> Barriers;
    typedef ParkedStates<Acc, THREADS, ITEMS, REVERSE> Parking;
    static_assert(BUFFERS >= 3, "one buffer loads, one is scanned, one drains its store");

    const int TILE = THREADS * ITEMS, PIPELINE = THREADS + 32, LAG = BUFFERS - 2;
    // The look-back warp gets one round per tile: the hand-over comes HANDOFF_DELAY rounds
    // after the tile's publication, its prefix is needed LAG rounds after it.
    const int HANDOFF_DELAY = LAG - 1;
    typedef BulkTile<Op, Src, Dst, THREADS, ITEMS> Buffer;
    const u32 BUFFER_BYTES = TILE * Buffer::BYTES;

    extern __shared__ __align__(128) unsigned char dynamic_shared[];
    if (dynamic_shared_bytes() < BUFFERS * BUFFER_BYTES) return;  // launched wrongly: write nothing
    __shared__ __align__(8) u64 loaded[BUFFERS];  // mbarrier: buffer b holds its tile's input
    // Handed over (Handover): the tile in buffer b (>= num_tiles: none, stop), its
    // aggregate, its exclusive prefix.
    __shared__ u32 tile_s[BUFFERS];
    __shared__ Carry aggregate_s[BUFFERS];
    __shared__ Carry prefix_s[BUFFERS];
    __shared__ Carry warp_total[2][THREADS / 32];  // by seq parity: one round's reads vs the next's writes
    __shared__ u32 generation_s;

    const int tid = threadIdx.x, lane = tid & 31;
    const bool lookback_warp = tid >= THREADS;
    const bool inclusive = flags & FLAG_INCLUSIVE;
    const bool deterministic = flags & FLAG_DETERMINISTIC;
    const bool vector_in = (flags & FLAG_VECTOR_IN) && Source::BULK, vector_out = flags & FLAG_VECTOR_OUT;
    const Acc init = initial_value<Op>(init_bits, flags);
    const Carry carry_in = first_carry<Op, SEGMENTED>(init);
    const HeadSource head_src = head_source(heads, n, flags);
    const Pitched in_rows = pitch.input(), out_rows = pitch.output();
    const u32 num_tiles = (u32)((n + TILE - 1) / TILE);
    auto buffer_of = [&](u32 seq) { return dynamic_shared + (seq % BUFFERS) * BUFFER_BYTES; };
    auto valid_of = [&](u32 tile) { return min((long long)TILE, n - (long long)tile * TILE); };
    auto bulk_loads = [&](u32 tile) { return vector_in && valid_of(tile) == TILE; };

    // Thread 0: brings `tile` into the buffer of `seq`, as one bulk load when it can.
    auto issue_load = [&](u32 seq, u32 tile) {
        const int b = seq % BUFFERS;
        Handover<u32>::store(&tile_s[b], tile);
        if (tile < num_tiles && bulk_loads(tile)) {
            Source::issue_loads(buffer_of(seq), src, tile_start<REVERSE>(tile, TILE, TILE, n), &loaded[b], in_rows);
        } else {
            mbarrier_arrive(&loaded[b]);  // the data threads copy it (or there is nothing)
        }
    };
    // Slot s of a buffer holds physical element s - shift of its tile (bulk_io.cuh).
    auto shift_of = [&](u32 tile) { return REVERSE ? TILE - (int)valid_of(tile) : 0; };
    // What a data thread keeps of a parked tile: its in-tile prefix and, for a segmented
    // scan, its row's heads.
    struct Parked {
        Carry thread_prefix;
        u32 heads;
    };
    // Data threads: scans the loaded tile of `seq` in its buffer (copying it in first when
    // no bulk load brought it) and parks the rows there without the tile prefix (or leaves
    // the inputs there, to be rescanned).
    auto scan_tile = [&](u32 seq, u32 tile, bool bulk_loaded, Carry& aggregate) -> Parked {
        unsigned char* buffer = buffer_of(seq);
        const long long valid = valid_of(tile), start = tile_start<REVERSE>(tile, TILE, valid, n);
        u32 row_head_bits = 0;
        if constexpr (SEGMENTED) row_head_bits = row_heads<THREADS, ITEMS, REVERSE>(head_src, start, valid, tid);
        if (!bulk_loaded) {
            Source::copy_in(buffer, src, start, valid, shift_of(tile), tid, in_rows);
            data_barrier<THREADS>();
        }
        Scan scan;
        Source::read_row(buffer, src, start, valid, shift_of(tile), tid, scan.row);
        scan.scan_row_registers(warp_total[seq & 1], inclusive, tid, row_head_bits, init);
        // The block scan's barrier orders every thread's row reads before any states
        // replace them (a transform's arrays overlap other threads' rows).
        if constexpr (!Buffer::RESCAN) Parking::write(buffer, tid, scan.row);
        aggregate = scan.tile_aggregate;
        return Parked{scan.thread_prefix, row_head_bits};
    };
    // Data threads: folds the prefix into the parked tile of `seq` (into the row's open
    // elements only, for a segmented scan), or rescans its rows from the prefix, and
    // stores it.
    auto finish_tile = [&](u32 seq, u32 tile, Parked parked, Carry tile_prefix) {
        unsigned char* buffer = buffer_of(seq);
        const long long valid = valid_of(tile), start = tile_start<REVERSE>(tile, TILE, valid, n);
        const Acc prefix = carried_value<SEGMENTED>(CarryOp::combine(tile_prefix, parked.thread_prefix));
        Acc row[ITEMS];
        if constexpr (Buffer::RESCAN) {
            Source::read_row(buffer, src, start, valid, shift_of(tile), tid, row);
            thread_scan_from<Op, SEGMENTED>(prefix, row, inclusive, parked.heads, init);
            data_barrier<THREADS>();  // every input row read before outputs replace them
        } else {
            Parking::read(buffer, tid, row);
            const int open = parked.heads ? __ffs(parked.heads) - 1 : ITEMS;  // before the first head
#pragma unroll
            for (int i = 0; i < ITEMS; ++i)
                if (!SEGMENTED || i < open) row[i] = Op::combine(prefix, row[i]);
            if constexpr (Destination::OVERLAPS) data_barrier<THREADS>();  // every state read before outputs replace them
        }
        Destination::write_row(buffer, tid, row);
        if (valid == TILE && vector_out) {
            fence_proxy_async();
            data_barrier<THREADS>();
            if (tid == 0) Destination::issue_stores(dst, start, buffer, out_rows);
        } else {
            data_barrier<THREADS>();
            Destination::copy_out(buffer, dst, start, valid, shift_of(tile), tid, out_rows);
        }
    };

    if (num_tiles < 2) return;  // the host scans one tile with the register-staged kernel: write nothing
    Agent agent(workspace, status_capacity, report, num_tiles, num_tiles + gridDim.x - 1, carry_in, deterministic);
    if (tid == 0) {
        for (int b = 0; b < BUFFERS; ++b) mbarrier_init(&loaded[b], 1);
        mbarrier_init_fence();
        const unsigned long long drawn = agent.first_ticket();
        agent.hand_on(drawn);
        generation_s = (u32)(drawn >> 32);
        issue_load(0, (u32)drawn);  // a refused ticket names no tile: the block ends at once
    }
    __syncthreads();
    const u32 generation = generation_s;
    const u32 tag = generation_tag(generation);

    if (lookback_warp) {
        // Resolves the block's tiles in the order they were scanned.
        for (u32 seq = 0;; ++seq) {
            const int b = seq % BUFFERS;
            named_barrier_sync(Barriers::handoff(b), PIPELINE);
            const u32 tile = Handover<u32>::load(&tile_s[b], lane);
            if (tile >= num_tiles) break;
            const Carry aggregate = Handover<Carry>::load(&aggregate_s[b], lane);
            const Carry prefix = agent.resolve(tile, aggregate, tag, lane);
            if (lane == 0) Handover<Carry>::store(&prefix_s[b], prefix);
            if constexpr (!SEGMENTED)
                if (lane == 0 && tile == num_tiles - 1) write_total(carry_out, Op::combine(prefix, aggregate));
            named_barrier_arrive(Barriers::prefix(b), PIPELINE);
        }
    } else {
        // The parked tiles: at the start of round seq, parked[LAG - k] belongs to seq - k.
        // Each round shifts them down by one (finishing parked[0]).
        Parked parked[LAG];
        auto shift_parked = [&]() {
#pragma unroll
            for (int i = 0; i + 1 < LAG; ++i) parked[i] = parked[i + 1];
        };
        auto finish_parked = [&](int seq) {
            if (seq >= 0) {
                const int b = seq % BUFFERS;
                named_barrier_sync(Barriers::prefix(b), PIPELINE);
                finish_tile(seq, Handover<u32>::load(&tile_s[b], lane), parked[0],
                            Handover<Carry>::load(&prefix_s[b], lane));
            }
            shift_parked();
        };
        // Once the tickets run out (round `stopped`), LAG more rounds finish what is
        // parked: one loop, so the tile pipeline is inlined once (NVRTC time).
        u32 stopped = ~0u;
        for (u32 seq = 0; seq < stopped || seq - stopped < (u32)LAG; ++seq) {
            const int b = seq % BUFFERS;
            Parked scanned = {};
            if (seq < stopped) {
                unsigned long long drawn = 0;
                mbarrier_wait(&loaded[b], (seq / BUFFERS) & 1);
                const u32 tile = Handover<u32>::load(&tile_s[b], lane);
                if (tile >= num_tiles) {
                    for (int h = (int)seq - HANDOFF_DELAY; h < (int)seq; ++h)
                        if (h >= 0) named_barrier_arrive(Barriers::handoff(h % BUFFERS), PIPELINE);
                    named_barrier_arrive(Barriers::handoff(b), PIPELINE);  // tile_s[b]: no more tiles
                    stopped = seq;
                } else {
                    if (tid == 0) drawn = agent.draw();  // read after the scan: its latency hides behind it
                    Carry aggregate;
                    scanned = scan_tile(seq, tile, bulk_loads(tile), aggregate);
                    if (tid == 0) {
                        agent.publish(tile, aggregate, tag);
                        Handover<Carry>::store(&aggregate_s[b], aggregate);
                    }
                    // A tile goes to the look-back warp only HANDOFF_DELAY rounds after its
                    // publication (see the top of the file).
                    if ((int)seq >= HANDOFF_DELAY)
                        named_barrier_arrive(Barriers::handoff((seq - HANDOFF_DELAY) % BUFFERS), PIPELINE);
                    if (tid == 0) {
                        agent.hand_on(drawn);
                        bulk_stores_read();  // the buffer of seq + 1 was stored from in the last round
                        issue_load(seq + 1, (u32)drawn);
                    }
                }
            }
            finish_parked((int)seq - LAG);
            parked[LAG - 1] = scanned;
        }
        if (tid == 0) bulk_stores_done();
    }

    agent.finish(generation, tid);
}
