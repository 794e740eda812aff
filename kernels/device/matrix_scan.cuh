// scanrt kernels, level 4: the matrix scan (Dotsenko et al., seed 004), reduce-then-scan.
//
//   matrix_reduce      one block per tile: tile_sums[t] = reduction of tile t
//   matrix_scan_sums   one block: tile_sums becomes its exclusive scan, seeded with init
//   matrix_scan_tiles  one block per tile: scan the tile as a matrix with carry-in tile_sums[t]
//
// Three launches and ~3n memory traffic (n read twice, written once), so it tops out
// near 2/3 of copy throughput; in exchange nothing depends on timing: the association
// order is a function of (n, tile shape) alone, so float results are bitwise
// reproducible from run to run. Its scratch (num_tiles carries) lives in the zero-filled
// look-back workspace; matrix_scan_tiles zeroes each entry again after reading it, so
// the workspace stays valid for the single-pass scan.
//
// Backward scans mirror the traversal (tile t is the t-th tile from the end, see
// tile_io.cuh); segmented scans carry (value, head) pairs between tiles, and their tile
// reduction goes through the shared matrix so that it keeps the sequence order the
// flag-pair operator needs.
#pragma once
#include "block/block_scan.cuh"
#include "device/scan_params.cuh"
#include "block/transform_io.cuh"

template <typename Op, typename Src, int THREADS, int ITEMS, bool REVERSE, bool SEGMENTED>
SCANRT_DEVICE void matrix_reduce(Src in, long long n, typename CarryOf<Op, SEGMENTED>::Op_::T* tile_sums,
                                 unsigned long long init_bits, unsigned flags, const void* heads) {
    typedef typename Op::T Acc;
    typedef BlockMatrixScan<Op, THREADS, ITEMS, SEGMENTED> Scan;
    const int TILE = THREADS * ITEMS;
    const int tid = threadIdx.x;
    const long long tile = blockIdx.x;
    const long long valid = min((long long)TILE, n - tile * TILE);
    const long long start = tile_start<REVERSE>(tile, TILE, valid, n);
    const int mode = tile_mode(valid, TILE, flags & FLAG_VECTOR_IN);
    typename RegsOf<Src, THREADS, ITEMS>::Type regs;
    regs.load(in + start, valid, mode, tid);
    if constexpr (SEGMENTED || !Op::COMMUTATIVE) {
        // Through the shared matrix, in sequence order: the flag-pair operator and
        // user-defined operators need not commute.
        __shared__ typename Scan::Shared shared;
        regs.template stage<Op, REVERSE>(shared.matrix, valid, mode, tid);
        u32 row = 0;
        if constexpr (SEGMENTED) row = row_heads<THREADS, ITEMS, REVERSE>(head_source(heads, n, flags), start, valid, tid);
        __syncthreads();
        Scan scan;
        scan.scan_rows(shared, true, tid, row, initial_value<Op>(init_bits, flags));
        if (tid == 0) tile_sums[tile] = scan.tile_aggregate;
    } else {
        // A commutative operator may fold the registers in load order.
        __shared__ Acc warp_scratch[THREADS / 32];
        Acc total = block_reduce_tile<Op, THREADS>(regs, valid, mode, warp_scratch, tid);
        if (tid == 0) tile_sums[tile] = total;
    }
}

// SUM_ITEMS: the row length used to scan the tile sums (smaller than the data tiles' for
// 16-byte segment pairs, to stay inside static shared memory).
template <typename Op, int THREADS, int SUM_ITEMS, bool SEGMENTED>
SCANRT_DEVICE void matrix_scan_sums(typename CarryOf<Op, SEGMENTED>::Op_::T* tile_sums, long long num_tiles,
                                    unsigned long long init_bits, unsigned long long carry_out, unsigned flags) {
    typedef typename CarryOf<Op, SEGMENTED>::Op_ CarryOp;
    typedef typename CarryOp::T Carry;
    typedef BlockMatrixScan<CarryOp, THREADS, SUM_ITEMS> Scan;
    const int TILE = THREADS * SUM_ITEMS;
    __shared__ typename Scan::Shared shared;
    const int tid = threadIdx.x;
    Carry carry = first_carry<Op, SEGMENTED>(initial_value<Op>(init_bits, flags));
    for (long long base = 0; base < num_tiles; base += TILE) {
        const long long valid = min((long long)TILE, num_tiles - base);
        TileRegs<Carry, THREADS, SUM_ITEMS> regs;
        regs.load(tile_sums + base, valid, SCANRT_MODE_PARTIAL, tid);
        regs.template stage<CarryOp>(shared.matrix, valid, SCANRT_MODE_PARTIAL, tid);
        __syncthreads();
        Scan scan;
        scan.scan_rows(shared, false, tid);
        scan.finish_rows(shared, carry, tid);
        __syncthreads();
        store_tile(shared.matrix, tile_sums + base, valid, SCANRT_MODE_PARTIAL, tid);
        carry = CarryOp::combine(carry, scan.tile_aggregate);
        __syncthreads();
    }
    if constexpr (!SEGMENTED)
        if (tid == 0) write_total(carry_out, carry);
}

template <typename Op, typename Src, typename Dst, int THREADS, int ITEMS, bool REVERSE, bool SEGMENTED>
SCANRT_DEVICE void matrix_scan_tiles(Src in, Dst out, long long n,
                                     typename CarryOf<Op, SEGMENTED>::Op_::T* tile_prefix,
                                     unsigned long long init_bits, unsigned flags, const void* heads) {
    typedef BlockMatrixScan<Op, THREADS, ITEMS, SEGMENTED> Scan;
    const int TILE = THREADS * ITEMS;
    __shared__ typename Scan::Shared shared;
    const int tid = threadIdx.x;
    const long long tile = blockIdx.x;
    const long long valid = min((long long)TILE, n - tile * TILE);
    const long long start = tile_start<REVERSE>(tile, TILE, valid, n);
    typename RegsOf<Src, THREADS, ITEMS>::Type regs;
    regs.load(in + start, valid, tile_mode(valid, TILE, flags & FLAG_VECTOR_IN), tid);
    regs.template stage<Op, REVERSE>(shared.matrix, valid, tile_mode(valid, TILE, flags & FLAG_VECTOR_IN), tid);
    u32 row = 0;
    if constexpr (SEGMENTED) row = row_heads<THREADS, ITEMS, REVERSE>(head_source(heads, n, flags), start, valid, tid);
    __syncthreads();
    Scan scan;
    // The initial value is in the tile prefixes; segment heads restart from it. (An
    // unsegmented scan does not read it again: its carry out may have replaced it.)
    const typename Op::T init = SEGMENTED ? initial_value<Op>(init_bits, flags) : Op::identity();
    scan.scan_rows(shared, flags & FLAG_INCLUSIVE, tid, row, init);
    scan.finish_rows(shared, tile_prefix[tile], tid);
    __syncthreads();
    if (tid == 0) tile_prefix[tile] = typename Scan::Carry{};  // every thread has read it
    store_tile<REVERSE>(shared.matrix, out + start, valid, tile_mode(valid, TILE, flags & FLAG_VECTOR_OUT), tid);
}
