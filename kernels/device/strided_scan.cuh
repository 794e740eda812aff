// scanrt kernels, level 4: the strided scan. It scans along the middle axis of a
// [batches][len][columns] view, element (b, i, c) at
// b * batch_stride + i * row_stride + c * column_stride (any strides, the input's and
// the output's each their own), every (batch, column) an independent sequence. Columns
// of a matrix (a scan along dim 0), rows with a pitch (their rows are its columns), any
// axis of an N-D array, transposed arrays and 1-D arrays with a stride are all this one
// shape, scanned in one pass over the data with no transpose.
//
// A tile is ROWS = (THREADS / W) * ITEMS consecutive rows of a strip of W columns. Its
// chain is (batch, strip): the tiles of a chain follow each other along the scanned
// axis, and each column of the strip is one decoupled look-back of its own
// (lookback_columns.cuh). Tickets number the tiles row-major over the chains (ticket
// t = chain-row r * chains + chain), so every chain's tile r - 1 has a smaller ticket
// than its tile r, and the protocol's progress argument holds unchanged; status slot
// t * W + c is column c's of tile t.
//
// One block per tile, as the one-wave scan (single_pass_wave.cuh): a tile's ticket is
// drawn, loaded, scanned and published at once, so its successors never wait for a
// ticket drawn long before its publication; the SM's other resident blocks stream their
// tiles while one waits. (A persistent form that prefetched its next tile during the
// look-back ran 3-10x slower: every publication then lagged its ticket by a whole tile.)
// A tile moves through shared memory: the block reads it in memory order (along the
// columns when they are adjacent, FLAG_STRIDED_*_ROWS_FAST along the rows when those
// are: pitched rows, transposes), and thread (g, c) = (tid / W, tid % W) takes rows
// g * ITEMS .. + ITEMS of column c:
//   1. each thread scans its ITEMS values sequentially, in place;
//   2. each warp scans its groups' totals per column (shuffles W lanes apart);
//   3. the block folds the warp totals before each warp per column, and the tile's;
//   4. the first W threads publish the column aggregates, and the block looks back
//      (lookback_columns.cuh), WINDOW tiles per poll: below LANE_WISE_CHAINS chains up
//      to 32 threads walk each column's chain, many of whose tiles are in flight
//      together; from there on a lane per column walks its chain (a tile's predecessors
//      are mostly done by then, and the SM's other blocks stream while one warp polls);
//   5. the results go back through shared memory and out in memory order.
// Shared rows are laid out so that
// both the memory-order accesses and step 1's reads hit distinct banks: an XOR swizzle
// for strips of 32 columns, one padding row per thread's ITEMS rows for narrower ones.
//
// Backward scans mirror the row index within each sequence: logical row i is physical
// row len - 1 - i. Every combine keeps sequence order; the association order depends on
// the tile shape alone except for the look-back's, which FLAG_DETERMINISTIC fixes with
// anchors every ANCHORS tiles of a chain (lane_look_back_deterministic).
//
// The elements: one array of a built-in type (`const In*`, results to `Out*`), or a
// user-defined operator's arrays (`StridedGather`: up to four inputs read through
// Op::load, which takes the element's index along the scanned axis; `StridedScatter`:
// up to two outputs written through Op::store), every input at the input's strides and
// every output at the output's.
//
// Carries: the initial value is one scalar for every sequence, or with
// FLAG_PER_SEQUENCE_CARRIES one per sequence at the address `init_bits` (sequence (b, c)
// at b * carry_batch_stride + c * carry_column_stride: the row-major order of the view's
// other axes); `carry_out`, when not 0, receives each sequence's total there.
//
// SUMMED_AREA: the summed-area table of each batch's [len][columns] matrix, inclusive and
// forward, in one pass (summed_area_rows.cuh): each tile's rows are scanned across its
// columns first, and a second look-back along the tile's band carries the rows.
#pragma once
#include "agent/tile_prefix.cuh"
#include "block/transform_io.cuh"
#include "device/lookback_columns.cuh"
#include "device/scan_params.cuh"
#include "device/summed_area_rows.cuh"

template <typename Op, int W, int THREADS, int ITEMS>
struct StridedTileShape {
    typedef Op Op_;
    static const int W_ = W;
    static const int ITEMS_ = ITEMS;
    static const int GROUPS = THREADS / W;  // row groups of a tile
    static const int ROWS = GROUPS * ITEMS;  // rows of a tile
    static const int WARPS = THREADS / 32;
    static_assert(W >= 1 && W <= 32 && (W & (W - 1)) == 0, "strips are 1 to 32 columns, a power of two");
    static_assert(THREADS % 32 == 0 && THREADS / 32 <= 32, "whole warps, at most 32");
    // Shared elements: a padding row per ITEMS rows where the layout pads.
    static const int CELLS = W == 32 ? ROWS * W : (ROWS + GROUPS) * W;
    // The shared position of tile row `row`, column `c`.
    static SCANRT_DEVICE int cell(int row, int c) {
        const unsigned r = row;  // never negative: unsigned division is a shift
        if (W == 32) return r * 32 + (c ^ (r & 31));
        return (r + r / ITEMS) * W + c;
    }
    // Tile row and column of thread tid's element k of the tile's memory order (along the
    // rows with ROWS_FAST, else along the columns), as the sum of the thread's part and
    // k's part: an element's address is then the thread's first element's plus an offset
    // the same for the whole block (k is unrolled), so the loops below spend no per-thread
    // 64-bit multiply on it.
    template <bool ROWS_FAST>
    static SCANRT_DEVICE void thread_part(int tid, int& row, int& c) {
        if constexpr (!ROWS_FAST) row = tid / W, c = tid % W;
        else if constexpr (THREADS <= ROWS) row = tid, c = 0;
        else row = tid % ROWS, c = tid / ROWS;
    }
    template <bool ROWS_FAST>
    static SCANRT_DEVICE void item_part(int k, int& row, int& c) {
        if constexpr (!ROWS_FAST) {
            row = k * GROUPS, c = 0;
        } else if constexpr (THREADS <= ROWS) {
            const int per_column = ROWS / THREADS;
            row = k % per_column * THREADS, c = k / per_column;
        } else {
            row = 0, c = k * (THREADS / ROWS);
        }
    }
};

// A tile's place: its chain row, batch and first column, and its valid rows and columns.
struct StridedPlace {
    long long r, chain, batch, c0;
    int rows, cols;
};

// Where a tile lies in one view: element (row, col) of the tile at
// base + row * row_step + col * column_stride (row_step is the row stride, negated for
// backward scans, whose tile rows run back from the end of each sequence).
struct StridedTileIn {
    long long base, row_step, column_stride;
    SCANRT_DEVICE long long at(int row, int col) const { return base + offset(row, col); }
    SCANRT_DEVICE long long offset(int row, int col) const { return row * row_step + col * column_stride; }
};

// Cell t of a grid of `rows` x `cols` cells numbered by anti-diagonals (row + col = 0, 1,
// ...), every cell of one before any of the next: its row and column. Diagonals grow to
// the shorter side's length, hold it, and shrink; the shrinking ones are the growing ones
// of the grid turned half a turn.
SCANRT_DEVICE void diagonal_cell(u32 t, u32 rows, u32 cols, u32& row, u32& col) {
    const unsigned long long m = min(rows, cols), cells = (unsigned long long)rows * cols;
    const unsigned long long growing = m * (m - 1) / 2;  // cells of the diagonals shorter than m
    const bool shrinking = t >= cells - growing;
    const unsigned long long u = shrinking ? cells - 1 - t : t;
    unsigned long long d, k;
    if (u < growing) {
        d = (unsigned long long)((sqrt(8.0 * (double)u + 1.0) - 1.0) * 0.5);
        while ((d + 1) * (d + 2) / 2 <= u) ++d;
        while (d * (d + 1) / 2 > u) --d;
        k = u - d * (d + 1) / 2;
    } else {
        d = m - 1 + (u - growing) / m;
        k = (u - growing) % m;
    }
    row = (u32)((d >= cols ? d - cols + 1 : 0) + k);
    col = (u32)(d - row);
    if (shrinking) row = rows - 1 - row, col = cols - 1 - col;
}

// The tiles of a strided scan: where each lies. Tile counts fit 32 bits (the host
// checks), so a place takes 32-bit divisions. Tickets run row-major over the chains
// (ticket r * chains + chain); with DIAGONAL (a summed-area table's) over each batch's
// `bands` x `strips` tiles by anti-diagonals, so that both tiles a table's tile waits for
// (above it and to its left) are about a diagonal's length of tickets before it.
template <int W, int ROWS, bool REVERSE, bool DIAGONAL = false>
struct StridedTiles {
    long long len, columns;
    u32 strips, chains, bands;

    SCANRT_DEVICE StridedPlace place_of(u32 ticket) const {
        StridedPlace p;
        u32 chain, r;
        if (DIAGONAL) {
            const u32 per_batch = bands * strips, batch = ticket / per_batch;
            u32 strip_of_batch;
            diagonal_cell(ticket - batch * per_batch, bands, strips, r, strip_of_batch);
            chain = batch * strips + strip_of_batch;
        } else {
            chain = ticket % chains;
            r = ticket / chains;
        }
        const u32 strip = chain % strips;
        p.r = r;
        p.chain = chain;
        p.batch = chain / strips;
        p.c0 = (long long)strip * W;
        p.rows = (int)min((long long)ROWS, len - p.r * ROWS);
        p.cols = (int)min((long long)W, columns - p.c0);
        return p;
    }
    // The index along the scanned axis of the tile's row 0, and the step to row 1.
    SCANRT_DEVICE long long first_index(const StridedPlace& p) const { return REVERSE ? len - 1 - p.r * ROWS : p.r * ROWS; }
    static SCANRT_DEVICE long long index_step() { return REVERSE ? -1 : 1; }
    // The tile `p` in a view with these strides.
    SCANRT_DEVICE StridedTileIn in_view(const StridedPlace& p, long long batch_stride, long long row_stride,
                                         long long column_stride) const {
        const long long first = REVERSE ? len - 1 - p.r * ROWS : p.r * ROWS;
        return StridedTileIn{p.batch * batch_stride + first * row_stride + p.c0 * column_stride,
                             REVERSE ? -row_stride : row_stride, column_stride};
    }
};

// A user-defined operator's input arrays, all at the input's strides.
template <typename Op, typename I0, typename I1, typename I2, typename I3>
struct StridedGather {
    const I0* a0;
    const I1* a1;
    const I2* a2;
    const I3* a3;
};

// A user-defined operator's output arrays, all at the output's strides.
template <typename Op, typename O0, typename O1>
struct StridedScatter {
    O0* d0;
    O1* d1;
};

// Calls visit(k, at, row, col, inside) for each of thread tid's ITEMS elements of tile
// `p` in memory order: `at` its position in `view`, (row, col) its place in the tile,
// `inside` whether that lies within the tile's valid rows and columns (a constant true for
// whole tiles, which take a loop without checks).
template <typename Shape, bool ROWS_FAST, typename Visit>
SCANRT_DEVICE void for_each_element(const StridedTileIn& view, const StridedPlace& p, int tid, Visit visit) {
    int row_t, col_t;
    Shape::template thread_part<ROWS_FAST>(tid, row_t, col_t);
    const long long first = view.at(row_t, col_t);
    if (p.rows == Shape::ROWS && p.cols == Shape::W_) {
#pragma unroll
        for (int k = 0; k < Shape::ITEMS_; ++k) {
            int row_k, col_k;
            Shape::template item_part<ROWS_FAST>(k, row_k, col_k);
            visit(k, first + view.offset(row_k, col_k), row_t + row_k, col_t + col_k, true);
        }
    } else {
#pragma unroll
        for (int k = 0; k < Shape::ITEMS_; ++k) {
            int row_k, col_k;
            Shape::template item_part<ROWS_FAST>(k, row_k, col_k);
            const int row = row_t + row_k, col = col_t + col_k;
            visit(k, first + view.offset(row_k, col_k), row, col, row < p.rows && col < p.cols);
        }
    }
}

// Loads tile `p` from `in` in memory order into the shared tile (identity past its valid
// rows and columns). `index` and `step`: the index along the scanned axis of tile row 0
// and the step per row (what Op::load takes; plain arrays ignore them).
template <typename Shape, bool ROWS_FAST, typename In, typename Acc>
SCANRT_DEVICE void stage(const In* in, const StridedTileIn& src, const StridedPlace& p, long long, long long, int tid,
                         Acc* tile) {
    typedef typename Shape::Op_ Op;
    In raw[Shape::ITEMS_];
    for_each_element<Shape, ROWS_FAST>(src, p, tid, [&](int k, long long at, int, int, bool inside) {
        if (inside) raw[k] = in[at];
    });
    for_each_element<Shape, ROWS_FAST>(src, p, tid, [&](int k, long long, int row, int col, bool inside) {
        tile[Shape::cell(row, col)] = inside ? Acc(raw[k]) : Op::identity();
    });
}
template <typename Shape, bool ROWS_FAST, typename Op, typename I0, typename I1, typename I2, typename I3, typename Acc>
SCANRT_DEVICE void stage(const StridedGather<Op, I0, I1, I2, I3>& in, const StridedTileIn& src, const StridedPlace& p,
                         long long index, long long step, int tid, Acc* tile) {
    I0 r0[Shape::ITEMS_];
    I1 r1[Shape::ITEMS_];
    I2 r2[Shape::ITEMS_];
    I3 r3[Shape::ITEMS_];
    for_each_element<Shape, ROWS_FAST>(src, p, tid, [&](int k, long long at, int, int, bool inside) {
        if (inside) {
            r0[k] = in.a0[at];
            r1[k] = load_or_none(in.a1, at);
            r2[k] = load_or_none(in.a2, at);
            r3[k] = load_or_none(in.a3, at);
        }
    });
    for_each_element<Shape, ROWS_FAST>(src, p, tid, [&](int k, long long, int row, int col, bool inside) {
        tile[Shape::cell(row, col)] = inside ? Op::load(index + row * step, r0[k], r1[k], r2[k], r3[k]) : Op::identity();
    });
}

// Writes the shared tile's results to tile `p` of `out` in memory order.
template <typename Shape, bool ROWS_FAST, typename Out, typename Acc>
SCANRT_DEVICE void unstage(Out* out, const StridedTileIn& dst, const StridedPlace& p, int tid, const Acc* tile) {
    for_each_element<Shape, ROWS_FAST>(dst, p, tid, [&](int, long long at, int row, int col, bool inside) {
        if (inside) out[at] = Out(tile[Shape::cell(row, col)]);
    });
}
template <typename Shape, bool ROWS_FAST, typename Op, typename O0, typename O1, typename Acc>
SCANRT_DEVICE void unstage(const StridedScatter<Op, O0, O1>& out, const StridedTileIn& dst, const StridedPlace& p,
                           int tid, const Acc* tile) {
    for_each_element<Shape, ROWS_FAST>(dst, p, tid, [&](int, long long at, int row, int col, bool inside) {
        if (inside) {
            O0 y0;
            O1 y1;
            Op::store(tile[Shape::cell(row, col)], y0, y1);
            out.d0[at] = y0;
            if constexpr (IsArray<O1>::value) out.d1[at] = y1;
        }
    });
}

template <typename Op, typename Src, typename Dst, int W, int THREADS, int ITEMS, int WINDOW, int ANCHORS,
          int LANE_WISE_CHAINS, int SPIN_BEFORE_SLEEP, int SLEEP_NS, bool REVERSE, bool SUMMED_AREA = false>
SCANRT_DEVICE void strided_scan(Src in, Dst out, long long in_batch_stride, long long in_row_stride,
                                long long out_batch_stride, long long out_row_stride, long long in_column_stride,
                                long long out_column_stride, long long batches, long long len, long long columns,
                                unsigned long long init_bits, unsigned long long carry_out,
                                long long carry_batch_stride, long long carry_column_stride, unsigned flags,
                                void* workspace, long long status_capacity, FaultSink report) {
    typedef StridedTileShape<Op, W, THREADS, ITEMS> Shape;
    typedef typename Op::T Acc;
    typedef TilePrefixAgent<Op, 1, SPIN_BEFORE_SLEEP, SLEEP_NS> Agent;
    typedef ColumnLookBack<Op, typename Agent::Status, W, THREADS, WINDOW, SPIN_BEFORE_SLEEP, SLEEP_NS> LookBack;
    typedef SummedAreaRows<SUMMED_AREA, Op, typename Agent::Status, W, Shape::ROWS, THREADS, WINDOW, SPIN_BEFORE_SLEEP,
                           SLEEP_NS>
        TableRows;
    const int ROWS = Shape::ROWS, WARPS = Shape::WARPS;
    __shared__ Acc tile_s[Shape::CELLS];
    __shared__ Acc warp_total_s[WARPS][W];
    __shared__ typename LookBack::Shared look_back_s;
    __shared__ typename PickType<SUMMED_AREA, typename TableRows::Shared, char>::T table_s;
    __shared__ u32 ticket_s, generation_s;
    __shared__ StridedPlace place_s;

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int g = tid / W, c = tid % W;
    const bool inclusive = flags & FLAG_INCLUSIVE;
    const bool deterministic = flags & FLAG_DETERMINISTIC;
    const bool per_sequence = flags & FLAG_PER_SEQUENCE_CARRIES;
    const bool in_rows_fast = flags & FLAG_STRIDED_IN_ROWS_FAST;
    const bool out_rows_fast = flags & FLAG_STRIDED_OUT_ROWS_FAST;
    const u32 strips = (u32)((columns + W - 1) / W);
    const u32 chains = (u32)(batches * strips);
    const long long chain_tiles = (len + ROWS - 1) / ROWS;
    // A summed-area table's tiles carry their rows along the band where it has tiles to
    // their left.
    const bool rows_chained = SUMMED_AREA && TableRows::CHAINED && strips > 1;
    // One block per tile, one ticket per block: the block that draws ticket
    // gridDim.x - 1 hands the header on.
    Agent agent(workspace, status_capacity, report, gridDim.x, gridDim.x - 1, Op::identity(), deterministic);
    const StridedTiles<W, ROWS, REVERSE, SUMMED_AREA> tiles{len, columns, strips, chains, (u32)chain_tiles};

    if (tid == 0) {
        // The workspace holds W slots per tile (a summed-area table's, W + ROWS).
        const int slots = W + (SUMMED_AREA ? TableRows::SLOTS : 0);
        const unsigned long long drawn =
            first_ticket<typename Agent::Status>(agent.header, report, gridDim.x * slots, status_capacity);
        agent.hand_on(drawn);
        generation_s = (u32)(drawn >> 32);
        ticket_s = (u32)drawn;
        if ((u32)drawn < gridDim.x) place_s = tiles.place_of((u32)drawn);
    }
    __syncthreads();
    const u32 generation = generation_s, ticket = ticket_s;
    if (ticket >= gridDim.x) return;  // refused workspace
    const u32 tag = generation_tag(generation);
    const StridedPlace p = place_s;

    // Load and stage the tile in memory order (identity past its valid rows and columns).
    const StridedTileIn src = tiles.in_view(p, in_batch_stride, in_row_stride, in_column_stride);
    const long long index = tiles.first_index(p), step = tiles.index_step();
    if (in_rows_fast) stage<Shape, true>(in, src, p, index, step, tid, tile_s);
    else stage<Shape, false>(in, src, p, index, step, tid, tile_s);
    __syncthreads();
    if constexpr (SUMMED_AREA && W > 1) {
        TableRows::template scan_rows<Shape>(tile_s, table_s, tid);
        __syncthreads();
    }

    // 1. The thread's rows, scanned sequentially in place: the scanned rows wait in
    //    shared memory, not registers, through the look-back (registers bound the
    //    blocks an SM holds).
    Acc scanned = tile_s[Shape::cell(g * ITEMS, c)];
#pragma unroll
    for (int k = 1; k < ITEMS; ++k) {
        const int at = Shape::cell(g * ITEMS + k, c);
        scanned = Op::combine(scanned, tile_s[at]);
        tile_s[at] = scanned;
    }
    // 2. Per column across the warp's groups (lanes W apart hold the same column).
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

    // A table's rows carry what lies left of the tile; its columns' aggregates then
    // include every carry of its rows.
    if constexpr (SUMMED_AREA) {
        if (rows_chained) {
            // Row slots after the column slots, band by band: strip k's row r at
            // band_first + k * ROWS + r.
            const long long band_first = (long long)gridDim.x * W + (p.batch * chain_tiles + p.r) * strips * ROWS;
            TableRows::carry_rows(table_s, agent.status, band_first, (u32)(p.c0 / W), p.rows, tag, tid, agent.dog);
            aggregate = Op::combine(table_s.carries, aggregate);
        }
    }

    // 4. Publish the column aggregates (tile 0 of a chain: INCLUSIVE from its carry), then
    //    look back.
    const bool column = tid < W && c < p.cols;
    const long long sequence = p.batch * carry_batch_stride + (p.c0 + c) * carry_column_stride;
    Acc carry_in = Op::identity();
    if (column && p.r == 0) {
        if (per_sequence) carry_in = ((const Acc*)init_bits)[sequence];
        else carry_in = initial_value<Op>(init_bits, flags);
    }
    // Column c of a tile's slot: by ticket, a table's by place (chain by chain).
    const long long slot = (SUMMED_AREA ? p.chain * chain_tiles + p.r : (long long)ticket) * W + c;
    if (column) {
        if (p.r == 0) agent.status.publish(slot, SCANRT_STATUS_INCLUSIVE, Op::combine(carry_in, aggregate), tag);
        else agent.status.publish(slot, SCANRT_STATUS_AGGREGATE, aggregate, tag);
    }
    // Column c of chain tile r: slot first_slot + r * stride + c.
    const long long stride = SUMMED_AREA ? W : (long long)chains * W;
    const long long first_slot = SUMMED_AREA ? p.chain * chain_tiles * W : p.chain * W;
    if (deterministic) {
        if (warp == 0) {
            const Acc before = lane_look_back_deterministic<Op, typename Agent::Status, ANCHORS, SPIN_BEFORE_SLEEP,
                                                            SLEEP_NS>(agent.status, p.r, stride, first_slot + lane,
                                                                      lane < W && lane < p.cols, tag, lane, agent.dog);
            if (lane < W) look_back_s.prefix[lane] = before;
        }
    } else if (chains >= (u32)LANE_WISE_CHAINS) {
        if (warp == 0) {
            const Acc before = lane_look_back<Op, typename Agent::Status, WINDOW, SPIN_BEFORE_SLEEP, SLEEP_NS>(
                agent.status, p.r, stride, first_slot + lane, lane < W && lane < p.cols, tag, lane, agent.dog);
            if (lane < W) look_back_s.prefix[lane] = before;
        }
    } else {
        LookBack::run(look_back_s, agent.status, p.r, stride, first_slot, p.cols, tag, tid, agent.dog);
    }
    // The first W threads: the column's prefix (its carry in tile 0 of a chain), its
    // INCLUSIVE publication, its total at the chain's end; then every thread's. (Thread
    // c < W wrote look_back_s.prefix[c] itself in each look-back, so no barrier comes
    // before it reads it.)
    if (tid < W) {
        const Acc prefix = p.r > 0 ? look_back_s.prefix[c] : carry_in;
        const bool inclusive_slot = deterministic ? p.r % ANCHORS == 0 : true;
        if (column && p.r > 0 && inclusive_slot)
            agent.status.publish(slot, SCANRT_STATUS_INCLUSIVE, Op::combine(prefix, aggregate), tag);
        if (column && carry_out && p.r == chain_tiles - 1) ((Acc*)carry_out)[sequence] = Op::combine(prefix, aggregate);
        look_back_s.prefix[c] = prefix;
    }
    __syncthreads();

    // 5. Each element's result, back through shared memory, out in memory order.
    const Acc running = Op::combine(Op::combine(look_back_s.prefix[c], before_warp), before_in_warp);
    Acc before = running;  // exclusive: the running prefix of the rows before row k
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        const int at = Shape::cell(g * ITEMS + k, c);
        const Acc through = Op::combine(running, tile_s[at]);
        if constexpr (SUMMED_AREA) {
            // Inclusive only: the row carries down to this row, then the tile's table.
            tile_s[at] = rows_chained ? Op::combine(table_s.row[g * ITEMS + k], through) : through;
        } else {
            tile_s[at] = inclusive ? through : before;
        }
        before = through;
    }
    __syncthreads();
    const StridedTileIn dst = tiles.in_view(p, out_batch_stride, out_row_stride, out_column_stride);
    if (out_rows_fast) unstage<Shape, true>(out, dst, p, tid, tile_s);
    else unstage<Shape, false>(out, dst, p, tid, tile_s);
    agent.finish(generation, tid);
}
