// scanrt kernels, level 4 (beside lookback.cuh): look-backs over many chains at once. A
// tile of a strided scan holds W columns, each column one chain of tiles with a status
// slot of its own (slot `t * stride + offset` for the chain's tile t); the protocol of
// lookback.cuh holds per chain unchanged (a tile publishes its AGGREGATE before it waits,
// waits only for smaller tiles of its chain, publishes INCLUSIVE once it knows its
// prefix), so its progress argument does too. What differs is who walks: a lane per
// chain (lane_look_back and lane_look_back_deterministic, one warp), or the whole block
// (ColumnLookBack).
#pragma once
#include "device/lookback.cuh"

// Lane-wise look-back (deterministic mode): each lane of a warp walks back over a chain of
// its own, whose k-th tile has the slot `k * stride + offset` (offset per lane); lanes with
// `active` false (or `tile` 0) take no part but keep the warp together, so the watchdog
// can bound the wait.
// The fold of the chain's tiles before `tile` in a fixed association order: INCLUSIVE of
// the anchor at or below tile - 1 (anchors are the chain's multiples of WINDOW, the only
// tiles that publish INCLUSIVE), then the AGGREGATEs up to tile - 1, folded in order.
template <typename CarryOp, typename Status, int WINDOW, int SPIN_BEFORE_SLEEP, int SLEEP_NS>
SCANRT_DEVICE typename CarryOp::T lane_look_back_deterministic(const Status& status, long long tile, long long stride,
                                                               long long offset, bool active, u32 tag, int lane,
                                                               Watchdog& dog) {
    typedef typename CarryOp::T Carry;
    const long long anchor = tile > 0 ? (tile - 1) / WINDOW * WINDOW : 0;
    Carry value[WINDOW];
    u32 flag[WINDOW];
#pragma unroll
    for (int j = 0; j < WINDOW; ++j) {
        value[j] = CarryOp::identity();
        flag[j] = SCANRT_STATUS_INVALID;
    }
    // The anchor needs its INCLUSIVE value, every later slot any published one.
    auto ready = [&](int j) {
        if (!active || anchor + j >= tile) return true;
        return j == 0 ? flag[j] == SCANRT_STATUS_INCLUSIVE : flag[j] != SCANRT_STATUS_INVALID;
    };
    for (int spins = 0;; ++spins) {
        bool all_ready = true;
#pragma unroll
        for (int j = 0; j < WINDOW; ++j) {
            if (!ready(j)) flag[j] = status.poll((anchor + j) * stride + offset, tag, value[j]);
            all_ready &= ready(j);
        }
        if (__all_sync(SCANRT_FULL_MASK, all_ready)) break;
        if (dog.expired(spins, lane)) break;
        if (spins >= SPIN_BEFORE_SLEEP) __nanosleep(SLEEP_NS);
    }
    Carry prefix = CarryOp::identity();
#pragma unroll
    for (int j = 0; j < WINDOW; ++j)
        if (anchor + j < tile) prefix = CarryOp::combine(prefix, value[j]);
    return prefix;
}

// WINDOW tiles of a chain polled at once, `end` the nearest (slot `t * stride + offset` for
// tile t; tiles before the chain's first count as an INCLUSIVE identity), and folded
// nearest first up to the first INCLUSIVE one or the first still unpublished one: their
// fold, how many tiles it holds, and whether an INCLUSIVE one closed it.
template <typename CarryOp> struct WindowFold {
    typename CarryOp::T value;
    int tiles;
    bool closed;
};
template <typename CarryOp, int WINDOW, typename Status>
SCANRT_DEVICE WindowFold<CarryOp> poll_window(const Status& status, long long end, long long stride, long long offset,
                                              u32 tag) {
    typename CarryOp::T value[WINDOW];
    u32 flag[WINDOW];
    // Issue every poll before looking at any: one round trip.
#pragma unroll
    for (int j = 0; j < WINDOW; ++j) {
        value[j] = CarryOp::identity();
        flag[j] = end - j < 0 ? SCANRT_STATUS_INCLUSIVE : status.poll((end - j) * stride + offset, tag, value[j]);
    }
    WindowFold<CarryOp> fold{CarryOp::identity(), 0, false};
    bool open = true;
#pragma unroll
    for (int j = 0; j < WINDOW; ++j) {
        open = open && flag[j] != SCANRT_STATUS_INVALID;
        if (!open) continue;
        fold.value = CarryOp::combine(value[j], fold.value);
        ++fold.tiles;
        if (flag[j] == SCANRT_STATUS_INCLUSIVE) fold.closed = true, open = false;
    }
    return fold;
}

// Lane-wise look-back (regular mode): each lane walks back over a chain of its own, as
// lane_look_back_deterministic's lanes do, polling WINDOW tiles per round trip and folding
// them nearest first up to the first INCLUSIVE one; a tile still unpublished stops the
// fold there until the next round. Where many chains are in flight, a tile's predecessors
// are mostly done by the time it looks back, and one lane's polls per column cost the SM
// less than the whole block's (ColumnLookBack). Returns the chain's exclusive prefix.
template <typename CarryOp, typename Status, int WINDOW, int SPIN_BEFORE_SLEEP, int SLEEP_NS>
SCANRT_DEVICE typename CarryOp::T lane_look_back(const Status& status, long long tile, long long stride,
                                                 long long offset, bool active, u32 tag, int lane, Watchdog& dog) {
    typedef typename CarryOp::T Carry;
    Carry prefix = CarryOp::identity();
    long long end = tile - 1;  // the nearest tile not yet folded
    bool done = !active || tile <= 0;
    for (int spins = 0;; ++spins) {
        bool progress = false;
        if (!done) {
            const WindowFold<CarryOp> fold = poll_window<CarryOp, WINDOW>(status, end, stride, offset, tag);
            prefix = CarryOp::combine(fold.value, prefix);
            end -= fold.tiles;
            done = fold.closed;
            progress = fold.tiles > 0;
        }
        if (__all_sync(SCANRT_FULL_MASK, done)) break;
        if (dog.expired(spins, lane)) break;  // the output is undefined; the host hears of it
        if (!__any_sync(SCANRT_FULL_MASK, progress) && spins >= SPIN_BEFORE_SLEEP) __nanosleep(SLEEP_NS);
    }
    return prefix;
}

// The whole block's look-back for the W columns of one tile, each column's chain walked
// by PARTS = min(32, THREADS / W) threads at once: thread (p, c) = (tid / W, tid % W)
// polls the WINDOW tiles window_end - p * WINDOW - j of column c's chain, so one round
// trip covers PARTS * WINDOW tiles of every column (a chain whose tiles are all in
// flight, as in a one-wave scan, needs few rounds). Thread c then folds the parts nearest
// first, up to the first part that holds a closing (INCLUSIVE) slot; parts wholly
// published move the column's window on, a part still waiting for a slot stops the fold
// there until the next round. Every thread of the block calls `run`; afterwards (past a
// barrier) `prefix[c]` holds column c's exclusive prefix.
template <typename CarryOp, typename Status, int W, int THREADS, int WINDOW, int SPIN_BEFORE_SLEEP, int SLEEP_NS>
struct ColumnLookBack {
    typedef typename CarryOp::T Carry;
    static const int PARTS = THREADS / W < 32 ? THREADS / W : 32;
    static const u8 WAITING = 0, OPEN = 1, CLOSED = 2;  // what a part found

    struct Shared {
        Carry fold[PARTS][W];
        u8 state[PARTS][W];
        Carry prefix[W];
        long long window_end[W];
        bool done[W];
    };

    // `tile` is the chain's tile index; column c of chain tile t has the slot
    // t * stride + offset + c; columns from `valid_cols` on take no part.
    static SCANRT_DEVICE void run(Shared& s, const Status& status, long long tile, long long stride, long long offset,
                                  int valid_cols, u32 tag, int tid, Watchdog& dog) {
        const int c = tid % W, p = tid / W, lane = tid & 31;
        // Thread c alone writes column c's state, and keeps `done` in a register too, so
        // that between two barriers a column's state is either read or written.
        bool done = tid >= W || tile <= 0 || c >= valid_cols;
        if (tid < W) {
            s.prefix[c] = CarryOp::identity();
            s.window_end[c] = tile - 1;
            s.done[c] = done;
        }
        __syncthreads();
        for (int spins = 0;; ++spins) {
            if (p < PARTS && !s.done[c]) {
                const long long end = s.window_end[c] - (long long)p * WINDOW;
                const WindowFold<CarryOp> fold = poll_window<CarryOp, WINDOW>(status, end, stride, offset + c, tag);
                s.fold[p][c] = fold.value;
                s.state[p][c] = fold.closed ? CLOSED : fold.tiles < WINDOW ? WAITING : OPEN;
            }
            __syncthreads();
            bool progress = false;
            if (!done) {
                Carry window = CarryOp::identity();
                int advanced = 0;
                bool closed = false;
                for (int q = 0; q < PARTS && !closed; ++q) {
                    const u8 state = s.state[q][c];
                    if (state == WAITING) break;
                    window = CarryOp::combine(s.fold[q][c], window);
                    ++advanced;
                    closed = state == CLOSED;
                }
                if (advanced > 0) {
                    s.prefix[c] = CarryOp::combine(window, s.prefix[c]);
                    s.window_end[c] -= (long long)advanced * WINDOW;
                    progress = true;
                }
                done = closed;
                s.done[c] = done;
            }
            const bool pending = !done;
            const bool give_up = dog.expired(spins, lane);  // the output is undefined; the host hears of it
            if (!__syncthreads_or(pending) || __syncthreads_or(give_up)) break;
            if (!__syncthreads_or(progress) && spins >= SPIN_BEFORE_SLEEP) __nanosleep(SLEEP_NS);
        }
    }
};
