// scanrt kernels, level 1: one thread's row of items, scanned sequentially.
//
// In the matrix scan (Dotsenko et al.) each thread owns one row of ITEMS consecutive
// elements; it scans the row with no communication at all, and only the row totals
// travel up to the warp and block levels.
#pragma once
#include "util/types.cuh"

// Row reduction in sequence order: ((x0 . x1) . x2) ...
template <typename Op, int ITEMS>
SCANRT_DEVICE typename Op::T thread_reduce(const typename Op::T (&row)[ITEMS]) {
    typename Op::T acc = row[0];
#pragma unroll
    for (int i = 1; i < ITEMS; ++i) acc = Op::combine(acc, row[i]);
    return acc;
}

// In-place inclusive scan of a row; returns the row total.
template <typename Op, int ITEMS>
SCANRT_DEVICE typename Op::T thread_inclusive_scan(typename Op::T (&row)[ITEMS]) {
#pragma unroll
    for (int i = 1; i < ITEMS; ++i) row[i] = Op::combine(row[i - 1], row[i]);
    return row[ITEMS - 1];
}

// In-place exclusive scan of a row from `running`, what comes before it (row[0] becomes
// it); returns the row total.
template <typename Op, int ITEMS>
SCANRT_DEVICE typename Op::T thread_exclusive_scan(typename Op::T (&row)[ITEMS],
                                                   typename Op::T running = Op::identity()) {
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
        typename Op::T x = row[i];
        row[i] = running;
        running = Op::combine(running, x);
    }
    return running;
}

// Segmented row scans (seed 004, figure 5). Bit i of `heads` marks element i as a segment
// head, where the running value restarts from `init` (every segment starts from the
// initial value). Elements before the row's first head are left relative to the row
// start; the block level folds the carried-in prefix into them. Returns the row's pair:
// the value after its last element and whether it holds a head.
template <typename Op, int ITEMS>
SCANRT_DEVICE Seg<typename Op::T> thread_segmented_inclusive_scan(typename Op::T (&row)[ITEMS], u32 heads,
                                                                  typename Op::T init) {
    typename Op::T running = (heads & 1u) ? Op::combine(init, row[0]) : row[0];
    row[0] = running;
#pragma unroll
    for (int i = 1; i < ITEMS; ++i) {
        // One combine per element: pick its left operand, not between two results.
        running = Op::combine(((heads >> i) & 1u) ? init : running, row[i]);
        row[i] = running;
    }
    return Seg<typename Op::T>{running, heads != 0u};
}

// Exclusive, from `running` as above: a head's own output is `init`.
template <typename Op, int ITEMS>
SCANRT_DEVICE Seg<typename Op::T> thread_segmented_exclusive_scan(typename Op::T (&row)[ITEMS], u32 heads,
                                                                  typename Op::T init,
                                                                  typename Op::T running = Op::identity()) {
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
        if ((heads >> i) & 1u) running = init;
        typename Op::T x = row[i];
        row[i] = running;
        running = Op::combine(running, x);
    }
    return Seg<typename Op::T>{running, heads != 0u};
}

// A row scanned again from `prefix`, everything before it (the bulk-copy kernel's
// rescan), in place, inclusive or exclusive. A segmented row restarts from `init` at its
// heads, as above.
template <typename Op, bool SEGMENTED, int ITEMS>
SCANRT_DEVICE void thread_scan_from(typename Op::T prefix, typename Op::T (&row)[ITEMS], bool inclusive, u32 heads,
                                    typename Op::T init) {
    if (!inclusive) {
        if constexpr (SEGMENTED) thread_segmented_exclusive_scan<Op>(row, heads, init, prefix);
        else thread_exclusive_scan<Op>(row, prefix);
        return;
    }
    typename Op::T running = prefix;
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
        running = Op::combine(SEGMENTED && ((heads >> i) & 1u) ? init : running, row[i]);
        row[i] = running;
    }
}
