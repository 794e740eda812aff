// scanrt kernels, level 4: the first pass of a summed-area table (src/scan/summed_area.rs).
// The strided scan's column pass reads a table in strips of 32 columns; to scan each row
// across its strip it needs the fold of the row's earlier strips. This pass reads the
// input once and writes the total of every row's every strip, `totals[(b * len + i) *
// strips + s]`, which a scan of rows then turns into those carries: the table costs three
// moves of each element (read here, read and written by the column pass) instead of the
// four of two scans.
//
// A warp takes 8 consecutive strips of one row: lane l loads column 32 s + l of each (all
// loads in flight at once; coalesced where the columns are adjacent). The lanes then fold
// the 8 strips at once by halving: at distance 1, 2 and 4 each lane pair keeps half of
// its strips and combines them with its partner's copies, then at 8 and 16 whole; 9
// shuffles for the 8 totals where a tree per strip takes 40, so the pass is bound by its
// loads. Every step combines two adjacent runs of columns, the earlier on the left, as the
// row scan of two passes would: ties of min and max keep the earlier operand, and the
// totals are a fixed function of the input. Lane l ends with strip 4 b0 + 2 b1 + b2 of
// its group (b the bits of l).
#pragma once
#include "warp/warp_scan.cuh"

// Lane pair (l, l ^ D) combines the strips the lower keeps (the first half of `from`) or
// the higher keeps (the second half), the lower lane's columns on the left.
template <typename Op, int N, int D>
SCANRT_DEVICE void halve(const typename Op::T (&from)[N], typename Op::T (&to)[N / 2], int lane) {
    const bool higher = lane & D;
#pragma unroll
    for (int k = 0; k < N / 2; ++k) {
        const typename Op::T keep = higher ? from[N / 2 + k] : from[k];
        const typename Op::T other = shfl_idx(higher ? from[k] : from[N / 2 + k], lane ^ D);
        to[k] = higher ? Op::combine(other, keep) : Op::combine(keep, other);
    }
}

template <typename Op, typename In, int THREADS>
SCANRT_DEVICE void strip_totals(const In* in, typename Op::T* totals, long long batch_stride, long long row_stride,
                                long long column_stride, long long batches, long long len, long long columns) {
    typedef typename Op::T Acc;
    const int STRIPS = 8;  // strips per warp
    const int lane = threadIdx.x & 31;
    const long long strips = (columns + 31) / 32;
    const long long groups_per_row = (strips + STRIPS - 1) / STRIPS;
    const long long groups = batches * len * groups_per_row;
    const long long warps = (long long)gridDim.x * (THREADS / 32);
    for (long long g = (long long)blockIdx.x * (THREADS / 32) + threadIdx.x / 32; g < groups; g += warps) {
        const long long row = g / groups_per_row, s0 = g % groups_per_row * STRIPS;
        const long long b = row / len, i = row % len;
        const In* base = in + b * batch_stride + i * row_stride;
        Acc v8[STRIPS];
#pragma unroll
        for (int k = 0; k < STRIPS; ++k) {
            const long long c = (s0 + k) * 32 + lane;
            v8[k] = c < columns ? Acc(base[c * column_stride]) : Op::identity();
        }
        Acc v4[4], v2[2], v1[1];
        halve<Op, 8, 1>(v8, v4, lane);
        halve<Op, 4, 2>(v4, v2, lane);
        halve<Op, 2, 4>(v2, v1, lane);
        Acc total = v1[0];
#pragma unroll
        for (int d = 8; d < 32; d <<= 1) {
            const Acc other = shfl_idx(total, lane ^ d);
            total = lane & d ? Op::combine(other, total) : Op::combine(total, other);
        }
        const int strip = 4 * (lane & 1) + (lane & 2) + ((lane >> 2) & 1);
        if (lane < STRIPS && s0 + strip < strips) totals[row * strips + s0 + strip] = total;
    }
}
