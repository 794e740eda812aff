// scanrt kernels, level 4: the one-wave single pass, for scans whose tiles all fit on
// the device at once (plain and segmented; elements convert to the accumulator as they
// are read and to the output as they are written; fixed-order scans only up to a constant count of tiles, since which
// kernel runs must then depend on n alone: src/scan/launch.rs).
//
// Same protocol as single_pass_scan.cuh (tickets, generation tags, status slots, the
// look-back and its progress argument, the same workspace), but the host launches one
// block per tile, so nothing is worth overlapping with a look-back: there is no next
// tile. What such a scan waits for is latency, and this kernel removes what the
// persistent kernels spend on their pipeline:
//   * no shared-memory staging: the tile stays in registers in warp-striped groups
//     (block/striped_tile.cuh), loaded and stored by coalesced 16-byte accesses;
//   * no dedicated look-back warp: warp 0 looks back once the tile is published, while
//     the other warps wait at the barrier that hands them the prefix;
//   * one ticket per block: a launch draws exactly gridDim.x = num_tiles tickets, so the
//     block that draws ticket num_tiles - 1 hands the header on;
//   * larger tiles (THREADS x ITEMS, tuning.rs `wave_threads`) and LOOKBACK_SLOTS_PER_LANE
//     slots per lane: every tile publishes at about the same time, so a look-back that
//     reaches further in one round trip resolves sooner.
// Its loads wait for the ticket: a block's first ticket hardly ever equals its blockIdx.x
// (measured: 0-4 of 256 blocks on an H100), so loading blockIdx.x's tile while the ticket
// is in flight only adds traffic.
//
// Progress: a block publishes its tile's AGGREGATE before it waits for anything, and it
// waits only for smaller tiles, whose blocks drew their tickets earlier and so are
// running; the argument of single_pass_scan.cuh holds whether or not the whole grid is
// resident.
#pragma once
#include "block/striped_tile.cuh"
#include "device/single_pass_scan.cuh"

template <typename Op, typename In, typename Out, int THREADS, int ITEMS, int LOOKBACK_SLOTS_PER_LANE,
          int SPIN_BEFORE_SLEEP, int SLEEP_NS, bool REVERSE, bool SEGMENTED>
SCANRT_DEVICE void single_pass_scan_wave(const In* in, Out* out, long long n, unsigned long long init_bits,
                                         unsigned long long carry_out, unsigned flags, const void* heads,
                                         void* workspace, long long status_capacity, FaultSink report) {
    typedef typename Op::T Acc;
    typedef PlacedStripedTile<Op, In, Out, THREADS, ITEMS, REVERSE, SEGMENTED> Tile;
    typedef typename Tile::CarryOp CarryOp;
    typedef typename Tile::Carry Carry;
    typedef TilePrefixAgent<CarryOp, LOOKBACK_SLOTS_PER_LANE, SPIN_BEFORE_SLEEP, SLEEP_NS> Agent;
    __shared__ Carry warp_total_s[Tile::WARPS];
    __shared__ Carry prefix_s;
    __shared__ u32 tile_s, generation_s;

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const bool inclusive = flags & FLAG_INCLUSIVE;
    const bool deterministic = flags & FLAG_DETERMINISTIC;
    const Acc init = initial_value<Op>(init_bits, flags);
    const HeadSource head_src = head_source(heads, n, flags);
    // One ticket per block: the block that draws ticket gridDim.x - 1 hands the header on.
    Agent agent(workspace, status_capacity, report, gridDim.x, gridDim.x - 1, first_carry<Op, SEGMENTED>(init),
                deterministic);

    if (tid == 0) {
        const unsigned long long drawn = agent.first_ticket();
        agent.hand_on(drawn);
        generation_s = (u32)(drawn >> 32);
        tile_s = (u32)drawn;
    }
    __syncthreads();
    const u32 generation = generation_s, tile = tile_s;
    if (tile >= gridDim.x) return;  // refused workspace
    const u32 tag = generation_tag(generation);

    Tile t;
    Carry before_warp, aggregate;
    t.scan(in, n, tile, flags & FLAG_VECTOR_IN, head_src, init, warp_total_s, warp, lane, before_warp, aggregate);
    if (tid == 0) agent.publish(tile, aggregate, tag);
    if (warp == 0) {
        const Carry prefix = agent.resolve(tile, aggregate, tag, lane);
        if (lane == 0) prefix_s = prefix;
        if constexpr (!SEGMENTED)
            if (lane == 0 && tile == gridDim.x - 1) write_total(carry_out, Op::combine(prefix, aggregate));
    }
    __syncthreads();
    t.store(out, flags & FLAG_VECTOR_OUT, inclusive, CarryOp::combine(prefix_s, before_warp), init, warp, lane);

    agent.finish(generation, tid);
}
