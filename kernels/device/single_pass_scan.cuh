// scanrt kernels, level 4: the single-pass scan with decoupled look-back
// (Merrill & Garland 2016) and dynamic tile ids (PMPP ch. 8, seed 003).
//
// The protocol, and why it neither deadlocks nor reads a stale or torn value, is
// device/lookback.cuh; the kernel reaches it through the block's TilePrefixAgent
// (agent/tile_prefix.cuh). This kernel hides each look-back behind the next tile's loads:
// while its look-back warp resolves tile t's prefix, the data threads load, scan and
// publish the block's next tile.
#pragma once
#include "agent/tile_prefix.cuh"
#include "block/block_scan.cuh"
#include "device/scan_params.cuh"
#include "block/transform_io.cuh"
#include "block/segment_carries.cuh"

// Launched with THREADS data threads plus one look-back warp (blockDim.x = THREADS + 32).
// Reads `in` (a `const In*`, or a transform's Gather) and writes `out` (an `Acc*`, or a
// transform's Scatter: block/transform_io.cuh).
template <typename Op, typename Src, typename Dst, int THREADS, int ITEMS, int LOOKBACK_SLOTS_PER_LANE,
          int SPIN_BEFORE_SLEEP, int SLEEP_NS, bool REVERSE, bool SEGMENTED>
SCANRT_DEVICE void single_pass_scan(Src in, Dst out, long long n, unsigned long long init_bits,
                                    unsigned long long carry_out, unsigned flags, const void* heads, void* workspace, long long status_capacity,
                                    FaultSink report) {
    typedef typename Op::T Acc;
    typedef BlockMatrixScan<Op, THREADS, ITEMS, SEGMENTED> Scan;
    typedef typename Scan::CarryOp CarryOp;
    typedef typename Scan::Carry Carry;
    typedef TilePrefixAgent<CarryOp, LOOKBACK_SLOTS_PER_LANE, SPIN_BEFORE_SLEEP, SLEEP_NS> Agent;
    const int TILE = THREADS * ITEMS;
    // Two shared tiles: the one waiting for its prefix stays parked in shared memory while
    // the next one is staged and scanned in the other (registers hold one tile at most).
    __shared__ typename Scan::Shared shared[2];
    __shared__ u32 next_tile_s;
    __shared__ u32 generation_s;
    __shared__ Carry aggregate_s[2];  // aggregate_s[b]: the aggregate of the tile in shared[b]
    __shared__ Carry tile_prefix_s;   // the parked tile's exclusive prefix, the look-back's answer

    const int tid = threadIdx.x, lane = tid & 31;
    const bool lookback_warp = tid >= THREADS;
    const bool inclusive = flags & FLAG_INCLUSIVE;
    const bool deterministic = flags & FLAG_DETERMINISTIC;
    const bool vector_in = flags & FLAG_VECTOR_IN, vector_out = flags & FLAG_VECTOR_OUT;
    const HeadSource head_src = head_source(heads, n, flags);
    // Carries per segment (block/segment_carries.cuh): segments by offsets only, whose
    // bit flags are followed by their table. Made from the parameters where used, so
    // nothing of them stays in registers across the tile loop.
    const bool segment_carries = SEGMENTED && (flags & FLAG_SEGMENT_CARRIES);
    const bool segment_inits = segment_carries && (flags & FLAG_INIT_IN_MEMORY);
    auto carries = [&] { return SegmentCarries<Acc>::of(heads, n, init_bits, carry_out, flags); };
    const Acc init = segment_inits ? Op::identity() : initial_value<Op>(init_bits, flags);
    const Carry carry_in = first_carry<Op, SEGMENTED>(init);
    // Tile ids are 32-bit, like the ticket (the host launches at most 2^31 - 1 tiles);
    // element offsets are 64-bit.
    const u32 num_tiles = (u32)((n + TILE - 1) / TILE);
    // A scan of one tile takes the same rounds without the protocol: no ticket, no
    // publication, no look-back, no workspace.
    const bool one_tile = num_tiles == 1;
    Agent agent(workspace, status_capacity, report, num_tiles, num_tiles + gridDim.x - 1, carry_in, deterministic);

    // What a data thread keeps of a scanned, parked tile (registers are the scarce
    // resource here: the tile's aggregate goes to shared memory instead).
    struct Parked {
        Carry thread_prefix;
        int open;
    };
    // Each data thread's segment ends in the row of each parked tile, for totals per
    // segment (shared, not registers: the tile loop has none to spare).
    __shared__ u32 ends_s[SEGMENTED ? 2 : 1][SEGMENTED ? THREADS : 1];
    typedef typename RegsOf<Src, THREADS, ITEMS>::Type Regs;
    // Issues the loads of `tile` into registers (data threads only).
    auto load_tile = [&](long long tile, Regs& regs) {
        const long long valid = min((long long)TILE, n - tile * TILE);
        regs.load(in + tile_start<REVERSE>(tile, TILE, valid, n), valid, tile_mode(valid, TILE, vector_in), tid);
    };
    // Stages, scans and parks the loaded `tile` in shared[buffer] (data threads only),
    // and publishes its first status from thread 0 at once: INCLUSIVE when nothing before
    // it can matter (tile 0, or a segment head inside it), else AGGREGATE for the
    // look-backs of later tiles. The look-back warp finds the aggregate in
    // aggregate_s[buffer]. (The caller's __syncthreads() orders that hand-over; the data
    // threads' own barrier before it costs little and keeps compute-sanitizer racecheck
    // from misreporting it, as a reduced program in the git history showed:
    // bench/racecheck_named_barrier.cu.)
    auto scan_and_publish = [&](int buffer, u32 tile, const Regs& regs) -> Parked {
        const long long valid = min((long long)TILE, n - (long long)tile * TILE);
        const long long start = tile_start<REVERSE>(tile, TILE, valid, n);
        // Flags are read while the tile's loads are in flight; keys (a row of them per
        // thread) only once the loaded values are staged, so the two never hold
        // registers at the same time.
        const bool keys = head_src.kind >= HEADS_KEYS4;
        u32 row = 0;
        if constexpr (SEGMENTED) if (!keys) row = row_heads<THREADS, ITEMS, REVERSE>(head_src, start, valid, tid);
        regs.template stage<Op, REVERSE>(shared[buffer].matrix, valid, tile_mode(valid, TILE, vector_in), tid);
        if constexpr (SEGMENTED) if (keys) row = row_heads<THREADS, ITEMS, REVERSE>(head_src, start, valid, tid);
        data_barrier<THREADS>();
        Acc* own_row = &shared[buffer].matrix.cell[tid * Scan::Matrix::STRIDE];
        if constexpr (SEGMENTED) {
            if (segment_inits) segment_inits_at_heads<Op, ITEMS, REVERSE, true>(own_row, row, start, valid, tid, carries());
            if (segment_carries && carry_out != 0)
                ends_s[buffer][tid] = row_segment_ends<ITEMS, REVERSE>(head_src, row, tile, TILE, start, valid, n, tid);
        }
        Scan scan;
        scan.scan_rows(shared[buffer], inclusive, tid, row, init);
        scan.park_rows(shared[buffer], tid);
        if constexpr (SEGMENTED)
            if (segment_inits && !inclusive)
                segment_inits_at_heads<Op, ITEMS, REVERSE, false>(own_row, row, start, valid, tid, carries());
        if (tid == 0) {
            if (!one_tile) agent.publish(tile, scan.tile_aggregate, generation_tag(generation_s));
            aggregate_s[buffer] = scan.tile_aggregate;
        }
        data_barrier<THREADS>();
        return Parked{scan.thread_prefix, scan.open};
    };
    // Folds the prefix into the parked tile and stores it (data threads only).
    auto finish_tile = [&](int buffer, long long tile, const Parked& parked, Carry prefix) {
        const long long valid = min((long long)TILE, n - tile * TILE);
        const long long start = tile_start<REVERSE>(tile, TILE, valid, n);
        Scan::finish_parked_rows(shared[buffer], prefix, parked.thread_prefix, parked.open, tid);
        if constexpr (SEGMENTED)
            if (segment_carries && carry_out != 0)
                write_segment_totals<Op, ITEMS, REVERSE>(&shared[buffer].matrix.cell[tid * Scan::Matrix::STRIDE],
                                                         ends_s[buffer][tid], inclusive, in, start, valid, tid,
                                                         carries());
        data_barrier<THREADS>();
        store_tile<REVERSE>(shared[buffer].matrix, out + start, valid, tile_mode(valid, TILE, vector_out), tid);
    };
    // Each round overlaps the look-back of the parked tile (look-back warp) with loading,
    // scanning and publishing the AGGREGATE of the block's next tile (data threads), then
    // finishes the parked tile. The first round has nothing parked. The tile pipeline is
    // written once, in this loop: each inlined copy of it costs NVRTC time on every cold
    // compile.
    u32 parked_tile = num_tiles;  // none
    Parked parked = {};
    int buffer = 0;  // shared[buffer] holds the parked tile
    for (bool first_round = true;; first_round = false) {
        Parked next = {};
        if (lookback_warp) {
            if (parked_tile < num_tiles) {
                const Carry prefix = one_tile ? carry_in
                                              : agent.resolve(parked_tile, aggregate_s[buffer],
                                                              generation_tag(generation_s), lane);
                if (lane == 0) tile_prefix_s = prefix;
                if constexpr (!SEGMENTED)
                    if (lane == 0 && parked_tile == num_tiles - 1)
                        write_total(carry_out, Op::combine(prefix, aggregate_s[buffer]));
            }
        } else {
            // Blocks mostly draw their first tickets in launch order, so each starts
            // loading tile blockIdx.x (< num_tiles) while its first ticket is in flight,
            // and loads again only if it drew another: small scans do not wait for the
            // atomic before their loads.
            Regs regs;
            if (first_round) load_tile(blockIdx.x, regs);
            if (tid == 0) {
                u32 upcoming = first_round ? 0 : num_tiles;
                if (!one_tile) {
                    const unsigned long long drawn = first_round ? agent.first_ticket() : agent.draw();
                    agent.hand_on(drawn);
                    if (first_round) generation_s = (u32)(drawn >> 32);
                    upcoming = (u32)drawn;
                }
                next_tile_s = upcoming;
            }
            data_barrier<THREADS>();
            const u32 upcoming = next_tile_s;
            if (upcoming < num_tiles) {
                if (!first_round || upcoming != blockIdx.x) load_tile(upcoming, regs);
                next = scan_and_publish(buffer ^ 1, upcoming, regs);
            }
        }
        __syncthreads();  // the prefix is known; the next tile is scanned and parked
        const u32 upcoming = next_tile_s;
        if (!lookback_warp && parked_tile < num_tiles) finish_tile(buffer, parked_tile, parked, tile_prefix_s);
        if (upcoming >= num_tiles) break;
        __syncthreads();  // the finished buffer is free; next_tile_s may be drawn again
        buffer ^= 1;
        parked_tile = upcoming;
        parked = next;
    }
    if (one_tile) return;
    agent.finish(generation_s, tid);
}
