// scanrt kernels, level 4: the strided scan. It scans along the middle axis of a
// [batches][len][columns] view, element (b, i, c) at
// b * batch_stride + i * row_stride + c * column_stride (any strides, the input's and
// the output's each their own; columns are adjacent in the input wherever the host
// finds such an axis), every (batch, column) an independent sequence. Columns of a
// matrix (a scan along dim 0), any axis of an N-D array whose later axes are contiguous,
// rows with a pitch (columns = 1), and 1-D arrays with a stride are all this one shape,
// scanned in one pass over the data with no transpose.
//
// A tile is ROWS = (THREADS / W) * ITEMS consecutive rows of a strip of W adjacent
// columns. Its chain is (batch, strip): the tiles of a chain follow each other along the
// scanned axis, and each column of the strip is one decoupled look-back of its own
// (lookback.cuh's lane-wise look-back: lane c walks column c's chain). Tickets number the
// tiles row-major over the chains (ticket t = chain-row r * chains + chain), so every
// chain's tile r - 1 has a smaller ticket than its tile r, and the protocol's progress
// argument holds unchanged; status slot t * W + c is column c's of tile t.
//
// One block per tile, as the one-wave kernel (single_pass_wave.cuh): the block loads its
// tile through shared memory (global accesses in memory order, W columns by ROWS rows,
// so a warp reads whole rows of a strip), and thread (g, c) = (tid / W, tid % W) takes
// rows g * ITEMS .. + ITEMS of column c:
//   1. each thread scans its ITEMS values sequentially;
//   2. each warp scans its groups' totals per column (shuffles W lanes apart);
//   3. the block folds the warp totals before each warp per column, and the tile's;
//   4. warp 0 publishes the W aggregates and looks back (lane c for column c), the other
//      warps wait at the barrier that hands them the prefixes;
//   5. the results go back through shared memory and out in memory order.
// Shared memory rows are padded by W elements per ITEMS rows, so step 1's reads (ITEMS
// apart per group) hit distinct banks for every W.
//
// Backward scans mirror the row index within each sequence: logical row i is physical
// row len - 1 - i. Every combine keeps sequence order; the association order depends on
// the tile shape alone except for the look-back's, which FLAG_DETERMINISTIC fixes with
// anchors every WINDOW tiles of a chain.
//
// Carries: the initial value is one scalar for every sequence, or with
// FLAG_PER_SEQUENCE_CARRIES one per sequence at the address `init_bits` (batch-major:
// b * columns + c); `carry_out`, when not 0, receives each sequence's total there.
#pragma once
#include "agent/tile_prefix.cuh"
#include "device/scan_params.cuh"

template <typename Op, typename In, typename Out, int W, int THREADS, int ITEMS>
struct StridedTileShape {
    typedef typename Op::T Acc;
    static const int GROUPS = THREADS / W;     // row groups of a tile
    static const int ROWS = GROUPS * ITEMS;    // rows of a tile
    static const int WARPS = THREADS / 32;
    static const int PADDED = (ROWS + GROUPS) * W;  // shared elements, ITEMS rows + 1 per group
    static_assert(W >= 1 && W <= 32 && (W & (W - 1)) == 0, "strips are 1 to 32 columns, a power of two");
    static_assert(THREADS % 32 == 0 && THREADS / 32 <= 32, "whole warps, at most 32");
    // The shared position of tile row `row`, column `c`.
    static SCANRT_DEVICE int cell(int row, int c) { return (row + row / ITEMS) * W + c; }
};

template <typename Op, typename In, typename Out, int W, int THREADS, int ITEMS, int WINDOW, int SPIN_BEFORE_SLEEP,
          int SLEEP_NS, bool REVERSE>
SCANRT_DEVICE void strided_scan(const In* in, Out* out, long long in_batch_stride, long long in_row_stride,
                                long long out_batch_stride, long long out_row_stride, long long in_column_stride,
                                long long out_column_stride, long long batches, long long len,
                                long long columns, unsigned long long init_bits, unsigned long long carry_out,
                                unsigned flags, void* workspace, long long status_capacity, FaultSink report) {
    typedef StridedTileShape<Op, In, Out, W, THREADS, ITEMS> Shape;
    typedef typename Op::T Acc;
    typedef TilePrefixAgent<Op, 1, SPIN_BEFORE_SLEEP, SLEEP_NS> Agent;
    const int ROWS = Shape::ROWS, WARPS = Shape::WARPS;
    __shared__ Acc tile_s[Shape::PADDED];
    __shared__ Acc warp_total_s[WARPS][W];
    __shared__ Acc prefix_s[W];
    __shared__ u32 tile_id_s, generation_s;

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int g = tid / W, c = tid % W;
    const bool inclusive = flags & FLAG_INCLUSIVE;
    const bool deterministic = flags & FLAG_DETERMINISTIC;
    const bool per_sequence = flags & FLAG_PER_SEQUENCE_CARRIES;
    const long long strips = (columns + W - 1) / W;
    const long long chains = batches * strips;
    const long long chain_tiles = (len + ROWS - 1) / ROWS;
    // One ticket per block: the block that draws ticket gridDim.x - 1 hands the header on.
    Agent agent(workspace, status_capacity, report, gridDim.x, gridDim.x - 1, Op::identity(), deterministic);

    if (tid == 0) {
        const unsigned long long drawn = ::first_ticket<typename Agent::Status>(agent.header, report, gridDim.x * W,
                                                                               status_capacity);
        agent.hand_on(drawn);
        generation_s = (u32)(drawn >> 32);
        tile_id_s = (u32)drawn;
    }
    __syncthreads();
    const u32 generation = generation_s, ticket = tile_id_s;
    if (ticket >= gridDim.x) return;  // refused workspace
    const u32 tag = generation_tag(generation);
    const long long r = ticket / chains, chain = ticket % chains;
    const long long batch = chain / strips, c0 = (chain % strips) * W;
    const int valid_rows = (int)min((long long)ROWS, len - r * ROWS);
    const int valid_cols = (int)min((long long)W, columns - c0);
    // Physical row of tile row `row`.
    auto physical_row = [&](int row) {
        const long long i = r * ROWS + row;
        return REVERSE ? len - 1 - i : i;
    };

    // Load in memory order: element e of the tile is row e / W, column e % W.
    const In* in_strip = in + batch * in_batch_stride + c0 * in_column_stride;
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        const int e = k * THREADS + tid, row = e / W, col = e % W;
        Acc v = Op::identity();
        if (row < valid_rows && col < valid_cols) v = Acc(in_strip[physical_row(row) * in_row_stride + col * in_column_stride]);
        tile_s[Shape::cell(row, col)] = v;
    }
    __syncthreads();

    // 1. The thread's rows, scanned sequentially.
    Acc v[ITEMS];
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        v[k] = tile_s[Shape::cell(g * ITEMS + k, c)];
        if (k > 0) v[k] = Op::combine(v[k - 1], v[k]);
    }
    // 2. Per column across the warp's groups (lanes W apart hold the same column).
    Acc scanned = v[ITEMS - 1];
#pragma unroll
    for (int d = W; d < 32; d <<= 1) {
        const Acc other = shfl_up(scanned, d);
        if (lane >= d) scanned = Op::combine(other, scanned);
    }
    Acc before_in_warp = shfl_up(scanned, W);
    if (lane < W) before_in_warp = Op::identity();
    if (lane >= 32 - W) warp_total_s[warp][lane - (32 - W)] = scanned;
    __syncthreads();
    // 3. The warps before this one, and the whole tile, per column.
    Acc before_warp = Op::identity(), aggregate = Op::identity();
#pragma unroll
    for (int w = 0; w < WARPS; ++w) {
        if (w == warp) before_warp = aggregate;
        aggregate = Op::combine(aggregate, warp_total_s[w][c]);
    }

    // 4. Warp 0: lane c publishes and resolves column c of the tile.
    if (warp == 0) {
        const bool active = lane < W && lane < valid_cols;
        const long long sequence = batch * columns + c0 + lane;
        Acc carry_in = Op::identity();
        if (r == 0 && active) {
            if (per_sequence) carry_in = ((const Acc*)init_bits)[sequence];
            else carry_in = initial_value<Op>(init_bits, flags);
        }
        const long long slot = (long long)ticket * W + lane;
        if (active) {
            if (r == 0) agent.status.publish(slot, SCANRT_STATUS_INCLUSIVE, Op::combine(carry_in, aggregate), tag);
            else agent.status.publish(slot, SCANRT_STATUS_AGGREGATE, aggregate, tag);
        }
        const long long stride = chains * W, offset = chain * W + lane;
        Acc prefix = carry_in;
        if (deterministic) {
            const Acc before = lane_look_back_deterministic<Op, typename Agent::Status, WINDOW, SPIN_BEFORE_SLEEP,
                                                            SLEEP_NS>(agent.status, r, stride, offset, active, tag,
                                                                      lane, agent.dog);
            if (r > 0) prefix = before;
            if (active && r > 0 && r % WINDOW == 0)
                agent.status.publish(slot, SCANRT_STATUS_INCLUSIVE, Op::combine(prefix, aggregate), tag);
        } else {
            const Acc before = lane_look_back<Op, typename Agent::Status, WINDOW, SPIN_BEFORE_SLEEP, SLEEP_NS>(
                agent.status, r, stride, offset, active, tag, lane, agent.dog);
            if (r > 0) prefix = before;
            if (active && r > 0) agent.status.publish(slot, SCANRT_STATUS_INCLUSIVE, Op::combine(prefix, aggregate), tag);
        }
        if (lane < W) prefix_s[lane] = prefix;
        if (active && carry_out && r == chain_tiles - 1)
            ((Acc*)carry_out)[sequence] = Op::combine(prefix, aggregate);
    }
    __syncthreads();

    // 5. Each element's result, back through shared memory, out in memory order.
    Acc running = Op::combine(Op::combine(prefix_s[c], before_warp), before_in_warp);
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        const Acc result = inclusive ? Op::combine(running, v[k]) : (k == 0 ? running : Op::combine(running, v[k - 1]));
        tile_s[Shape::cell(g * ITEMS + k, c)] = result;
    }
    __syncthreads();
    Out* out_strip = out + batch * out_batch_stride + c0 * out_column_stride;
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        const int e = k * THREADS + tid, row = e / W, col = e % W;
        if (row < valid_rows && col < valid_cols)
            out_strip[physical_row(row) * out_row_stride + col * out_column_stride] = Out(tile_s[Shape::cell(row, col)]);
    }
    agent.finish(generation, tid);
}
