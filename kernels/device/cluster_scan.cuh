// scanrt kernels, level 4: small scans in one thread-block cluster (sm_90+), one launch,
// no workspace.
//
// A scan (plain or segmented) of at most one cluster of tiles (16 blocks where the device
// can hold such a cluster, else 8) needs no look-back: the host launches the whole grid as one cluster,
// so every block is resident at once and the hardware cluster barrier orders them.
//   1. each block loads and reduces its tile in registers (block/striped_tile.cuh, as
//      the one-wave kernel) and leaves the tile's aggregate in its shared memory;
//   2. the cluster barrier; warp 0 of block b reads the aggregates of blocks 0 .. b-1
//      through distributed shared memory and folds them in block order;
//   3. each block stores its tile from that prefix.
// What the look-back protocol pays for a small scan, this kernel does not: no ticket,
// no workspace header and its checks, no status slots published through L2 and polled
// back (H100, u32 2^16 in a replayed graph: docs/PERFORMANCE.md, Small scans). Nothing
// waits for anything outside the cluster, so there is nothing to time out.
//
// The tile and the fold keep sequence order, so the association order (float sums) is a
// function of n and the tile shape alone: deterministic scans take this kernel too, up
// to the portable cluster size (src/scan/launch.rs).
#pragma once
#include "block/striped_tile.cuh"
#include "device/scan_params.cuh"

// This block's rank in its cluster.
SCANRT_DEVICE u32 cluster_rank() {
    u32 rank;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    return rank;
}
// Every thread of the cluster arrives (releasing its shared-memory writes) ...
SCANRT_DEVICE void cluster_arrive() { asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory"); }
// ... and waits for all the others (acquiring theirs).
SCANRT_DEVICE void cluster_wait() { asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory"); }
// The address of `local` (this block's shared memory) in block `rank`'s shared memory,
// as a generic address.
template <typename T>
SCANRT_DEVICE const T* cluster_peer(const T* local, u32 rank) {
    unsigned long long peer;
    asm volatile("mapa.u64 %0, %1, %2;" : "=l"(peer) : "l"(local), "r"(rank));
    return (const T*)peer;
}

template <typename Op, typename In, typename Out, int THREADS, int ITEMS, bool REVERSE, bool SEGMENTED>
SCANRT_DEVICE void cluster_scan(const In* in, Out* out, long long n, unsigned long long init_bits,
                                unsigned long long carry_out, unsigned flags, const void* heads) {
    typedef typename Op::T Acc;
    typedef PlacedStripedTile<Op, In, Out, THREADS, ITEMS, REVERSE, SEGMENTED> Tile;
    typedef typename Tile::CarryOp CarryOp;
    typedef typename Tile::Carry Carry;
    __shared__ Carry warp_total_s[Tile::WARPS];
    __shared__ Carry aggregate_s;  // read by the cluster's later blocks
    __shared__ Carry prefix_s;

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    // Read before the first cluster barrier: the last block writes the total after it,
    // and the carry out may be the carry in (chained scans).
    const Acc init = initial_value<Op>(init_bits, flags);
    const Carry carry_in = first_carry<Op, SEGMENTED>(init);
    // The grid is one cluster (at most 32 blocks: one lane per earlier block below).
    const u32 tile = cluster_rank();

    Tile t;
    Carry before_warp, aggregate;
    t.scan(in, n, tile, flags & FLAG_VECTOR_IN, head_source(heads, n, flags), init, warp_total_s, warp, lane,
           before_warp, aggregate);
    if (tid == 0) aggregate_s = aggregate;
    cluster_arrive();
    cluster_wait();
    if (warp == 0) {
        const Carry earlier = (u32)lane < tile ? *cluster_peer(&aggregate_s, lane) : CarryOp::identity();
        const Carry prefix = CarryOp::combine(carry_in, warp_reduce<CarryOp>(earlier, lane));
        if (lane == 0) {
            prefix_s = prefix;
            if constexpr (!SEGMENTED)
                if (tile == gridDim.x - 1) write_total(carry_out, Op::combine(prefix, aggregate));
        }
    }
    // Done with the peers' shared memory; none may leave before every block is (below).
    cluster_arrive();
    __syncthreads();
    t.store(out, flags & FLAG_VECTOR_OUT, flags & FLAG_INCLUSIVE, CarryOp::combine(prefix_s, before_warp), init, warp,
            lane);
    cluster_wait();
}
