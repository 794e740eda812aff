// scanrt kernels, agent level: one block's side of the decoupled look-back, as one
// object over the protocol of device/lookback.cuh (as CUB's tile-prefix callback sits
// over its tile state). A single-pass algorithm (the scan's three kernels, and later
// select, partition and radix-sort passes) draws its tiles, publishes their aggregates,
// resolves their prefixes and ends its launch through it, and writes only its tile
// pipeline: how a tile is loaded, reduced, finished with its prefix and stored.
//
//   TilePrefixAgent<CarryOp, ...> agent(workspace, status_capacity, report, num_tiles,
//                                       last_ticket, carry_in, deterministic);
//   thread 0:        drawn = agent.first_ticket(); agent.hand_on(drawn);  (later: draw())
//   thread 0:        agent.publish(tile, aggregate, tag);
//   look-back warp:  prefix = agent.resolve(tile, aggregate, tag, lane);
//   every thread:    agent.finish(generation, tid);
//
// The agent holds what the protocol needs per launch (the header and status slots, the
// fault sink, the tile and ticket counts, the carry into tile 0, the watchdog). The
// launch's generation (from the first ticket) travels through shared memory and its tag
// is passed in, as the kernels hold it: kept in the agent, it would be one more register
// live across the persistent kernels' loops, which run at their register caps.
#pragma once
#include "device/lookback.cuh"

template <typename CarryOp, int LOOKBACK_SLOTS_PER_LANE, int SPIN_BEFORE_SLEEP, int SLEEP_NS>
struct TilePrefixAgent {
    typedef typename CarryOp::T Carry;
    typedef TileStatus<Carry> Status;

    LookbackHeader* header;
    Status status;
    FaultSink report;
    long long status_capacity;
    u32 num_tiles;
    // The ticket whose block hands the header on to the next launch: the launch draws
    // num_tiles tickets for tiles and one more per block that finds none left.
    u32 last_ticket;
    Carry carry_in;
    bool deterministic;
    Watchdog dog;

    SCANRT_DEVICE TilePrefixAgent(void* workspace, long long status_capacity, FaultSink report, u32 num_tiles,
                                  u32 last_ticket, Carry carry_in, bool deterministic)
        : header((LookbackHeader*)workspace),
          status((LookbackHeader*)workspace + 1, status_capacity),
          report(report),
          status_capacity(status_capacity),
          num_tiles(num_tiles),
          last_ticket(last_ticket),
          carry_in(carry_in),
          deterministic(deterministic),
          dog{(LookbackHeader*)workspace, report, 0} {}

    // Thread 0: the block's first ticket, [generation | tile], after the workspace's
    // checks; a refused one names no tile (>= num_tiles) and the block writes nothing.
    SCANRT_DEVICE unsigned long long first_ticket() const {
        return ::first_ticket<Status>(header, report, num_tiles, status_capacity);
    }
    // Thread 0: a further ticket. Its result is read late (hand_on, or the tile id), so
    // the round trip hides behind the caller's work in between.
    SCANRT_DEVICE unsigned long long draw() const { return draw_ticket(header); }
    // Thread 0, for every drawn ticket: the block that drew the launch's last one hands
    // the header on.
    SCANRT_DEVICE void hand_on(unsigned long long drawn) const { pass_on_header(header, drawn, last_ticket); }
    // Thread 0: a scanned tile's aggregate (INCLUSIVE where nothing before it matters),
    // with the launch's tag (generation_tag).
    SCANRT_DEVICE void publish(u32 tile, Carry aggregate, u32 tag) const {
        publish_scanned<CarryOp>(status, tile, aggregate, carry_in, tag);
    }
    // One warp: the published tile's exclusive prefix, and its INCLUSIVE publication.
    SCANRT_DEVICE Carry resolve(u32 tile, Carry aggregate, u32 tag, int lane) {
        return resolve_prefix<CarryOp, Status, LOOKBACK_SLOTS_PER_LANE, SPIN_BEFORE_SLEEP, SLEEP_NS>(
            status, tile, aggregate, carry_in, tag, lane, deterministic, dog);
    }
    // Every thread of the block, at the end of the launch (`generation`: the first
    // ticket's).
    SCANRT_DEVICE void finish(u32 generation, int tid) const {
        clear_before_tags_repeat(header, status, status_capacity, generation, tid);
    }
};
