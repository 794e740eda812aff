// scanrt kernels, level 3b: the block scans its tile as a matrix (Dotsenko et al.).
//
//   1. each thread scans its row of ITEMS items sequentially (thread level);
//   2. each warp scans the column of its 32 row totals (warp level);
//   3. every warp scans the warp totals (block level; at most 32 of them, read from
//      shared memory), and each thread takes the one before its own warp.
// The result is split in two so that single-pass callers can fetch the tile's prefix
// (the look-back) between computing the block aggregate and finishing the rows:
// `scan_rows` leaves each thread with its scanned row and its in-tile prefix;
// `finish_rows` folds in the tile prefix and writes the rows back.
// Segmented scans run the same levels on (value, head) pairs; rows restart at heads.
// The association order depends only on the tile shape: deterministic.
#pragma once
#include "block/tile_io.cuh"
#include "thread/thread_scan.cuh"
#include "warp/warp_scan.cuh"

// Barrier among the first THREADS threads of the block (the data threads), leaving any
// further warps (the single-pass scan's look-back warp) free to run on.
template <int THREADS>
SCANRT_DEVICE void data_barrier() {
    asm volatile("bar.sync 1, %0;" ::"n"(THREADS) : "memory");
}

// What rows, warps and tiles pass between them: the accumulator itself, or for a
// segmented scan the (value, head) pair under the flag-pair operator.
template <typename Op, bool SEGMENTED> struct CarryOf { typedef Op Op_; };
template <typename Op> struct CarryOf<Op, true> { typedef SegmentedOp<Op> Op_; };

// The value a carry contributes to the elements it reaches (a segmented scan's pair
// carries its value).
template <bool SEGMENTED, typename Carry> SCANRT_DEVICE auto carried_value(Carry c) {
    if constexpr (SEGMENTED) return c.value;
    else return c;
}

template <typename Op, int THREADS, int ITEMS, bool SEGMENTED = false>
struct BlockMatrixScan {
    typedef typename Op::T Acc;
    typedef typename CarryOf<Op, SEGMENTED>::Op_ CarryOp;
    typedef typename CarryOp::T Carry;
    typedef TileMatrix<Acc, THREADS, ITEMS> Matrix;
    static const int WARPS = THREADS / 32;
    static_assert(THREADS % 32 == 0 && WARPS <= 32, "THREADS must be a multiple of 32, at most 1024");

    struct Shared {
        Matrix matrix;
        Carry warp_total[WARPS];
    };

    Acc row[ITEMS];
    Carry thread_prefix;   // everything in the tile before this thread's row
    Carry tile_aggregate;  // the whole tile, valid in every thread after scan_rows
    int open;              // leading row elements before its first head (segmented only)

    // Requires the staged matrix to be visible (a barrier after staging). Only the first
    // THREADS threads call it. Segmented scans pass the row's heads and the initial value
    // every segment starts from; unsegmented scans ignore both.
    SCANRT_DEVICE void scan_rows(Shared& s, bool inclusive, int tid, u32 heads = 0, Acc init = Acc()) {
#pragma unroll
        for (int i = 0; i < ITEMS; ++i) row[i] = s.matrix.cell[tid * Matrix::STRIDE + i];
        scan_row_registers(s.warp_total, inclusive, tid, heads, init);
    }

    // The same, for a row already in `row`; `warp_total` is shared scratch of one carry
    // per warp.
    SCANRT_DEVICE void scan_row_registers(Carry (&warp_total)[WARPS], bool inclusive, int tid, u32 heads = 0,
                                          Acc init = Acc()) {
        const int lane = tid & 31, warp = tid >> 5;
        Carry total;
        if constexpr (SEGMENTED) {
            total = inclusive ? thread_segmented_inclusive_scan<Op>(row, heads, init)
                              : thread_segmented_exclusive_scan<Op>(row, heads, init);
            open = heads ? __ffs(heads) - 1 : ITEMS;
        } else {
            total = inclusive ? thread_inclusive_scan<Op>(row) : thread_exclusive_scan<Op>(row);
            open = ITEMS;
        }
        Carry column = warp_inclusive_scan<CarryOp>(total, lane);
        Carry before_in_warp = shfl_up(column, 1);
        if (lane == 31) warp_total[warp] = column;
        data_barrier<THREADS>();
        // Every warp scans the warp totals in its first WARPS lanes: log-depth, where a
        // fold in each thread would chain WARPS combines (long for user operators).
        Carry totals = warp_inclusive_scan<CarryOp, WARPS>(lane < WARPS ? warp_total[lane] : CarryOp::identity(), lane);
        const Carry total_before = shfl_idx(totals, warp == 0 ? 0 : warp - 1);
        tile_aggregate = shfl_idx(totals, WARPS - 1);
        const Carry before_warp = warp == 0 ? CarryOp::identity() : total_before;
        if (lane == 0) thread_prefix = before_warp;
        else thread_prefix = warp == 0 ? before_in_warp : CarryOp::combine(before_warp, before_in_warp);
    }

    // Writes the scanned rows (without any tile prefix) back to the matrix, so that a
    // caller can park the tile in shared memory instead of registers.
    SCANRT_DEVICE void park_rows(Shared& s, int tid) const {
#pragma unroll
        for (int i = 0; i < ITEMS; ++i) s.matrix.cell[tid * Matrix::STRIDE + i] = row[i];
    }

    // Completes a parked tile: folds `tile_prefix` and the thread's in-tile prefix into
    // its own row (into the row's open elements only, for a segmented scan: a head stops
    // everything before it). Touches only the calling thread's row, so no barrier is
    // needed after park_rows; the caller puts one before the store.
    static SCANRT_DEVICE void finish_parked_rows(Shared& s, Carry tile_prefix, Carry thread_prefix, int open, int tid) {
        const Acc prefix = carried_value<SEGMENTED>(CarryOp::combine(tile_prefix, thread_prefix));
#pragma unroll
        for (int i = 0; i < ITEMS; ++i) {
            Acc& cell = s.matrix.cell[tid * Matrix::STRIDE + i];
            if (!SEGMENTED || i < open) cell = Op::combine(prefix, cell);
        }
    }

    // Folds the tile's exclusive prefix into the rows and writes them back to the matrix.
    // The caller puts a barrier between this and the store.
    SCANRT_DEVICE void finish_rows(Shared& s, Carry tile_prefix, int tid) {
        const Acc prefix = carried_value<SEGMENTED>(CarryOp::combine(tile_prefix, thread_prefix));
#pragma unroll
        for (int i = 0; i < ITEMS; ++i)
            s.matrix.cell[tid * Matrix::STRIDE + i] = (!SEGMENTED || i < open) ? Op::combine(prefix, row[i]) : row[i];
    }
};

// Reduction of a tile straight from registers (no shared-memory matrix): each thread folds
// its loaded items (`Regs::fold`: plain registers, or a transform's elements), warps and
// the block fold the partial results. Fixed association order.
template <typename Op, int THREADS, typename Regs>
SCANRT_DEVICE typename Op::T block_reduce_tile(const Regs& regs, long long valid, int mode,
                                               typename Op::T* warp_scratch, int tid) {
    typedef typename Op::T Acc;
    const int lane = tid & 31, warp = tid >> 5;
    Acc acc = regs.template fold<Op>(valid, mode, tid);
    acc = warp_reduce<Op>(acc, lane);
    if (lane == 0) warp_scratch[warp] = acc;
    data_barrier<THREADS>();
    Acc all = Op::identity();
#pragma unroll
    for (int w = 0; w < THREADS / 32; ++w) all = Op::combine(all, warp_scratch[w]);
    return all;
}
