// scanrt kernels, level 4: what the strided scan (strided_scan.cuh) adds to build a
// summed-area table in one pass over the data. The strided scan's chains run down the
// columns of a strip; a table's tile also needs what lies to its left, so its rows form a
// second chain, along the band of tiles at the same rows.
//
// For tile (band i, strip j) with first row Y0 and first column X0, and the operator's
// combine written +:
//   S(y, x) = L2(y, x) + C(y) + A(x)
// where L2 is the tile's own table (its rows scanned, then its columns), C(y) the
// combine over the tile's rows up to y of each row's carry (every element left of X0 in
// that row: the row chain's look-back over the band), and A(x) = S(Y0 - 1, x), the
// table's row above the tile (the column chain's look-back down the strip). So the
// column chain's aggregate for column x is the tile's column of scanned rows, combined
// with every carry of its rows: S(Y1 - 1, x) less S(Y0 - 1, x). The row chain publishes
// first (its aggregates need nothing), the column chain once the rows' carries are
// known; each waits only on tiles with smaller tickets (strip j - 1, band i - 1), so the
// protocol's progress argument holds. Tickets run by anti-diagonals of tiles
// (strided_scan.cuh's DIAGONAL), so both are about a diagonal's length of tickets back:
// a chain whose tiles follow each other closely (the strided scan's row-major order puts
// a table's rows so) waits on tiles still loading at every step.
//
// Only strips of 32 columns have a row chain (a narrower strip holds all the columns).
// Status slots go by place, not ticket: column chains first (chain by chain), then the
// row chains, band by band (row r of strip k at band_first + k * ROWS + r).
#pragma once
#include "device/lookback_columns.cuh"

// A if ON, else B (a summed-area table's shared memory, none for the plain scan).
template <bool ON, typename A, typename B> struct PickType { typedef A T; };
template <typename A, typename B> struct PickType<false, A, B> { typedef B T; };

// ON: the kernel builds tables (a plain scan's kernel names the type too, with no rows
// chained, whatever its tile's shape).
template <bool ON, typename Op, typename Status, int W, int ROWS, int THREADS, int WINDOW, int SPIN_BEFORE_SLEEP,
          int SLEEP_NS>
struct SummedAreaRows {
    typedef typename Op::T Acc;
    static const bool CHAINED = ON && W == 32;
    // Row chain slots per tile.
    static const int SLOTS = CHAINED ? ROWS : 0;
    typedef ColumnLookBack<Op, Status, CHAINED ? ROWS : 1, THREADS, WINDOW, SPIN_BEFORE_SLEEP, SLEEP_NS> RowLookBack;
    static_assert(!CHAINED || (ROWS % 32 == 0 && ROWS <= THREADS), "a thread per row, whole warps");

    struct Shared {
        // Each row's aggregate, then the inclusive combine of the carries down the rows.
        Acc row[CHAINED ? ROWS : 1];
        Acc warp_total[CHAINED ? ROWS / 32 : 1];
        // Every carry of the tile's rows combined.
        Acc carries;
        typename RowLookBack::Shared look_back;
    };

    // Scans each row of the shared tile across its W columns in place (rows of tile row
    // r at Shape::cell(r, c)); keeps each row's aggregate for the row chain.
    template <typename Shape>
    static SCANRT_DEVICE void scan_rows(Acc* tile, Shared& s, int tid) {
        for (int row = tid; row < ROWS; row += THREADS) {
            Acc run = tile[Shape::cell(row, 0)];
#pragma unroll
            for (int c = 1; c < W; ++c) {
                const int at = Shape::cell(row, c);
                run = Op::combine(run, tile[at]);
                tile[at] = run;
            }
            if (CHAINED) s.row[row] = run;
        }
    }

    // The row chain of the tile at strip `strip` of the band whose slots start at
    // `band_first` (`valid_rows` rows): publishes each row's aggregate, looks back along
    // the band, publishes the rows' INCLUSIVE values, and leaves in `s.row` the inclusive
    // combine of the carries down the rows, in `s.carries` their total. Every thread
    // calls it, after scan_rows and a barrier.
    static SCANRT_DEVICE void carry_rows(Shared& s, const Status& status, long long band_first, u32 strip,
                                         int valid_rows, u32 tag, int tid, Watchdog& dog) {
        const int lane = tid & 31, warp = tid >> 5;
        const bool row = tid < valid_rows;
        const long long slot = band_first + (long long)strip * ROWS + tid;
        Acc aggregate = Op::identity();
        if (row) {
            aggregate = s.row[tid];
            status.publish(slot, strip == 0 ? SCANRT_STATUS_INCLUSIVE : SCANRT_STATUS_AGGREGATE, aggregate, tag);
        }
        RowLookBack::run(s.look_back, status, strip, ROWS, band_first, valid_rows, tag, tid, dog);
        if (tid < ROWS) {  // whole warps
            // Thread r wrote look_back.prefix[r] itself (identity for strip 0 and past the
            // valid rows).
            const Acc carry = s.look_back.prefix[tid];
            if (row && strip > 0) status.publish(slot, SCANRT_STATUS_INCLUSIVE, Op::combine(carry, aggregate), tag);
            const Acc down = warp_inclusive_scan<Op>(carry, lane);
            if (lane == 31) s.warp_total[warp] = down;
            s.row[tid] = down;
        }
        __syncthreads();
        if (tid < ROWS) {
            Acc before = Op::identity();
            for (int w = 0; w < warp; ++w) before = Op::combine(before, s.warp_total[w]);
            const Acc down = Op::combine(before, s.row[tid]);
            s.row[tid] = down;
            if (tid == ROWS - 1) s.carries = down;
        }
        __syncthreads();
    }
};
