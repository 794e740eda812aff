// scanrt kernels, level 4: the matrix scan (Dotsenko et al., seed 004), reduce-then-scan.
//
//   matrix_reduce      one block per tile: tile_sums[t] = reduction of tile t
//   matrix_scan_sums   one block: tile_sums becomes its exclusive scan, seeded with init
//   matrix_scan_tiles  one block per tile: scan the tile as a matrix with carry-in tile_sums[t]
//
// Three launches and ~3n memory traffic (n read twice, written once), so it tops out
// near 2/3 of copy throughput; in exchange nothing depends on timing: the association
// order is a function of (n, tile shape) alone, so float results are bitwise
// reproducible from run to run. Its scratch (num_tiles accumulators) lives in the
// zero-filled look-back workspace; matrix_scan_tiles zeroes each entry again after
// reading it, so the workspace stays valid for the single-pass scan.
#pragma once
#include "block/block_scan.cuh"
#include "device/scan_params.cuh"

template <typename Op, typename In, int THREADS, int ITEMS>
SCANRT_DEVICE void matrix_reduce(const In* in, long long n, typename Op::T* tile_sums, unsigned flags) {
    typedef typename Op::T Acc;
    const int TILE = THREADS * ITEMS;
    __shared__ Acc warp_scratch[THREADS / 32];
    const int tid = threadIdx.x;
    const long long tile = blockIdx.x;
    const long long base = tile * TILE;
    const long long valid = min((long long)TILE, n - base);
    const int mode = tile_mode(valid, TILE, flags & SCANRT_FLAG_VECTOR_IN);
    TileRegs<In, THREADS, ITEMS> regs;
    regs.load(in + base, valid, mode, tid);
    Acc total = block_reduce_tile<Op>(regs, valid, mode, warp_scratch, tid);
    if (tid == 0) tile_sums[tile] = total;
}

template <typename Op, int THREADS, int ITEMS>
SCANRT_DEVICE void matrix_scan_sums(typename Op::T* tile_sums, long long num_tiles, unsigned long long init_bits,
                                    unsigned flags) {
    typedef typename Op::T Acc;
    typedef BlockMatrixScan<Op, THREADS, ITEMS> Scan;
    const int TILE = THREADS * ITEMS;
    __shared__ typename Scan::Shared shared;
    const int tid = threadIdx.x;
    Acc carry = initial_value<Op>(init_bits, flags);
    for (long long base = 0; base < num_tiles; base += TILE) {
        const long long valid = min((long long)TILE, num_tiles - base);
        TileRegs<Acc, THREADS, ITEMS> regs;
        regs.load(tile_sums + base, valid, SCANRT_MODE_PARTIAL, tid);
        regs.template stage<Op>(shared.matrix, valid, SCANRT_MODE_PARTIAL, tid);
        __syncthreads();
        Scan scan;
        scan.scan_rows(shared, false, tid);
        scan.finish_rows(shared, carry, tid);
        __syncthreads();
        store_tile(shared.matrix, tile_sums + base, valid, SCANRT_MODE_PARTIAL, tid);
        carry = Op::combine(carry, scan.tile_aggregate);
        __syncthreads();
    }
}

template <typename Op, typename In, int THREADS, int ITEMS>
SCANRT_DEVICE void matrix_scan_tiles(const In* in, typename Op::T* out, long long n, typename Op::T* tile_prefix,
                                     unsigned flags) {
    typedef BlockMatrixScan<Op, THREADS, ITEMS> Scan;
    const int TILE = THREADS * ITEMS;
    __shared__ typename Scan::Shared shared;
    const int tid = threadIdx.x;
    const long long tile = blockIdx.x;
    const long long base = tile * TILE;
    const long long valid = min((long long)TILE, n - base);
    TileRegs<In, THREADS, ITEMS> regs;
    regs.load(in + base, valid, tile_mode(valid, TILE, flags & SCANRT_FLAG_VECTOR_IN), tid);
    regs.template stage<Op>(shared.matrix, valid, tile_mode(valid, TILE, flags & SCANRT_FLAG_VECTOR_IN), tid);
    __syncthreads();
    Scan scan;
    scan.scan_rows(shared, flags & SCANRT_FLAG_INCLUSIVE, tid);
    scan.finish_rows(shared, tile_prefix[tile], tid);
    __syncthreads();
    if (tid == 0) tile_prefix[tile] = typename Op::T(0);  // every thread has read it
    store_tile(shared.matrix, out + base, valid, tile_mode(valid, TILE, flags & SCANRT_FLAG_VECTOR_OUT), tid);
}
