// scanrt kernels, level 4 (shared by every single-pass algorithm): the decoupled
// look-back (Merrill & Garland 2016) with dynamic tile ids (PMPP ch. 8): tile status
// slots, tickets and generations, the look-back window, the deterministic anchor
// variant, the watchdog and fault reports. Its correctness argument:
//
// ============================ The protocol ============================
// Every tile t owns a status slot holding (flag, value) with flag one of
//   INVALID      nothing published yet for t in this launch
//   AGGREGATE    value = reduction of tile t alone
//   INCLUSIVE    value = init . x[0] . ... . x[last element of t]
// A block processing tile t:
//   1. loads and scans its tile locally, then publishes AGGREGATE (tile 0 publishes
//      INCLUSIVE = init . aggregate at once);
//   2. its look-back warp walks back over the predecessors t-1, t-2, ... in windows of
//      32 * K slots (K per lane, tuning data), folding the published values until it
//      meets an INCLUSIVE slot: that fold is t's exclusive prefix;
//   3. publishes INCLUSIVE = prefix . aggregate, and writes its outputs.
//
// Dynamic tile ids. Blocks are persistent: each takes tile ids from an atomic ticket,
// in increasing order, until the ticket passes the last tile. A tile id is only ever held
// by a block that is already running, and a block publishes its tile's AGGREGATE before
// it waits for anything, so the smallest unfinished tile always has every predecessor's
// slot valid and makes progress: no deadlock, whatever order the hardware schedules
// blocks in, and however many blocks are resident.
//
// Hiding the wait. Each block has THREADS data threads plus one look-back warp. While
// the look-back warp resolves tile t's prefix, the data threads already take the next
// ticket u, load, scan and publish u's AGGREGATE; only then do they fold t's prefix in
// and store t. So the memory system streams the next tile during the wait, and no
// AGGREGATE ever waits for a look-back. A tile's AGGREGATE waits only for its block's
// previous round, whose look-back concerns a smaller tile id, so every wait still points
// to a smaller tile and the argument above holds.
//
// Memory ordering. A slot's flag and value are published together and read together:
// for 4-byte values in one 64-bit word, written and read with single-copy-atomic relaxed
// gpu-scope accesses; for 8-byte values in a 16-byte slot whose two 64-bit words each
// repeat the status word, so a reader detects a torn read (TileStatus<Carry, 8>). A
// reader therefore never sees a flag without its value, and nothing else is ordered
// through the slots, so relaxed accesses suffice. 16-byte values (a run-length
// encoding's carry, user-defined states of that size) take four such words, each
// repeating the status word (TileStatus<Carry, 16>), and wider values (user-defined states,
// up to MAX_STATE_BYTES) one such word per 32-bit word (TileStatus<Carry, 0>). Every
// 64-bit word of the slots thus holds a tagged status word in its high half, whatever
// the value size, so launches of different sizes may follow each other on a workspace.
//
// One launch, no per-call memset. Slots are tagged with the launch's generation; a
// slot whose tag differs is INVALID. The ticket and the generation share one 64-bit
// header word, [generation:32 | ticket:32], so a block's first atomicAdd returns its
// first tile id and the launch's tag together. Every block draws tickets until one
// passes the last tile, so a launch draws exactly num_tiles + gridDim.x tickets; the
// block that draws the last of them knows every block of the launch has drawn (and so
// knows the tag), and swaps in [generation + 1 | 0] for the next launch in stream order
// (or the next replay of a captured graph). No block waits for the others at the end.
// Tags have 29 bits; in the one launch per 2^29 - 1 before the tags repeat, every block
// also counts itself out at the end and the last one clears every slot, so no stale
// slot can ever match. The workspace must be zero-filled once, when it is created.
//
// Deterministic mode (FLAG_DETERMINISTIC). The fold above depends on which
// predecessors happened to be INCLUSIVE when the warp looked, so float sums can differ
// in their last bits between runs. In this mode only anchor tiles (multiples of
// S = SCANRT_ANCHOR_STRIDE = 128) publish INCLUSIVE, and tile t's prefix is always
//     INCLUSIVE(a) . AGGREGATE(a+1) . ... . AGGREGATE(t-1),   a = S * floor((t-1)/S),
// folded four slots per lane and then across the warp in lane order: a fixed expression
// of (n, tile shape), whatever the timing. Every wait still points to a smaller tile (an
// anchor's INCLUSIVE waits only on the previous anchor's), so the progress argument holds
// unchanged. The anchors form a serial chain of n / (S * tile) hops; S = 128 keeps one
// hop (~1 us) shorter than the time the memory system needs to stream S tiles.
//
// Segmented scans carry (value, head) pairs (SegmentedOp): a slot whose value holds a
// head is as good as INCLUSIVE, so the look-back stops at the tile that holds the
// segment's head, and such a tile publishes INCLUSIVE at once, without waiting. The head
// bit travels in the status word next to the flag.
//
// Backward scans number tiles from the end of the data (tile_io.cuh); the protocol does
// not change.
//
// Inputs of one tile skip all of this: one block, no status, no ticket.
//
// Every single-pass kernel runs this protocol through the steps below (draw_ticket /
// first_ticket, publish_scanned, resolve_prefix, pass_on_header,
// clear_before_tags_repeat), so kernels may follow each other on one workspace and
// stream: today the register-staged persistent scan (single_pass_scan.cuh), the
// bulk-copy one (single_pass_bulk.cuh) and the one-wave one (single_pass_wave.cuh).
// =======================================================================
#pragma once
#include "warp/warp_scan.cuh"

#define SCANRT_STATUS_INVALID   0u
#define SCANRT_STATUS_AGGREGATE 1u
#define SCANRT_STATUS_INCLUSIVE 2u
#define SCANRT_HEAD_BIT         4u           // the carried pair holds a segment head
#define SCANRT_TAG_SHIFT        3            // status word: [tag:29 | head:1 | status:2]
#define SCANRT_ANCHOR_SLOTS_PER_LANE 4       // deterministic mode: look-back slots per lane
#define SCANRT_ANCHOR_STRIDE    (32 * SCANRT_ANCHOR_SLOTS_PER_LANE)  // tiles that publish INCLUSIVE

// The workspace header (`LookbackHeader`), the fault report (`FaultReport`), the fault
// codes and the watchdog's limit are the host-kernel contract (generated/contract.cuh,
// from src/contract.rs): the host initialises, sizes and reads them with the same
// definitions.
SCANRT_DEVICE unsigned long long scanrt_workspace_seal(unsigned long long area_bytes) {
    return WORKSPACE_MAGIC ^ (area_bytes * WORKSPACE_SEAL_MULTIPLIER);
}

SCANRT_DEVICE u64 ld_relaxed(const u64* p) { u64 v; asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory"); return v; }
SCANRT_DEVICE void st_relaxed(u64* p, u64 v) { asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" :: "l"(p), "l"(v) : "memory"); }

// Where a kernel reports a fault: the host's mailbox, and the serial of the call that
// launched the kernel (`ScanParams::call`), so the host can name it.
struct FaultSink {
    FaultReport* report;
    u32 call;
};

// Tells the host which workspace faulted, in which call, and why, in one 64-bit store
// (`fault_word` in src/contract.rs), so two kernels reporting at once never mix theirs.
SCANRT_DEVICE void tell_host(FaultSink sink, const LookbackHeader* header, u32 code) {
    const unsigned long long word =
        ((unsigned long long)header >> 4) << (FAULT_CALL_BITS + FAULT_CODE_BITS) |
        (unsigned long long)(sink.call & ((1u << FAULT_CALL_BITS) - 1u)) << FAULT_CODE_BITS | code;
    *(volatile unsigned long long*)&sink.report->word = word;
}

// Bounds the look-back's waits (WATCHDOG_NS). Called by the whole warp once per
// poll round; lane 0 looks at the clock (every 1024 rounds, so healthy waits pay one
// compare) and the warp leaves together.
struct Watchdog {
    LookbackHeader* header;
    FaultSink report;
    unsigned long long started;  // when the current wait reached 1024 polls
    SCANRT_DEVICE bool expired(int spins, int lane) {
        if ((spins & 1023) != 1023) return false;
        bool give_up = false;
        if (lane == 0) {
            unsigned long long now;
            asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
            if (*(volatile u32*)&header->fault != 0) give_up = true;  // another block gave up
            else if (spins == 1023) started = now;                  // each wait has its own clock
            else if (now - started > WATCHDOG_NS) {
                // The first to give up poisons the workspace and reports; the others follow.
                if (atomicCAS(&header->fault, 0u, FAULT_WATCHDOG) == 0u)
                    tell_host(report, header, FAULT_WATCHDOG);
                give_up = true;
            }
        }
        return __shfl_sync(SCANRT_FULL_MASK, give_up, 0);
    }
};

// How a carry travels through a status slot: its value and its head bit.
template <typename T> struct SlotCodec {
    typedef T Value;
    static SCANRT_DEVICE T value(T v) { return v; }
    static SCANRT_DEVICE u32 head(T) { return 0; }
    static SCANRT_DEVICE T make(T v, u32) { return v; }
};
template <typename T> struct SlotCodec<Seg<T> > {
    typedef T Value;
    static SCANRT_DEVICE T value(Seg<T> v) { return v.value; }
    static SCANRT_DEVICE u32 head(Seg<T> v) { return v.head; }
    static SCANRT_DEVICE Seg<T> make(T v, u32 head) { return Seg<T>{v, head}; }
};

// The slot layout for values of SIZE bytes: 4, 8 and 16 have their own; anything else
// (user-defined states of 12 or 20 to 64 bytes) takes layout 0, a word per value word.
template <int SIZE> struct SlotLayout { static const int KIND = 0; };
template <> struct SlotLayout<4> { static const int KIND = 4; };
template <> struct SlotLayout<8> { static const int KIND = 8; };
template <> struct SlotLayout<16> { static const int KIND = 16; };

SCANRT_DEVICE u32 status_word(u32 tag, u32 flag, u32 head) { return (tag << SCANRT_TAG_SHIFT) | (head ? SCANRT_HEAD_BIT : 0u) | flag; }
SCANRT_DEVICE u32 status_flag(u32 word, u32 tag) { return (word >> SCANRT_TAG_SHIFT) == tag ? (word & 3u) : SCANRT_STATUS_INVALID; }

// Tile status slots; the layout depends on the size of the carried value.
template <typename Carry, int LAYOUT = SlotLayout<sizeof(typename SlotCodec<Carry>::Value)>::KIND> struct TileStatus;

// 4-byte values: one 64-bit word per tile, [status word:32 | value:32].
template <typename Carry> struct TileStatus<Carry, 4> {
    typedef SlotCodec<Carry> Codec;
    static const int SLOT_BYTES = STATUS_SLOT_BYTES_4;
    u64* word;
    SCANRT_DEVICE TileStatus(void* slots, long long) : word((u64*)slots) {}
    SCANRT_DEVICE void publish(long long tile, u32 flag, Carry value, u32 tag) const {
        st_relaxed(word + tile, ((u64)status_word(tag, flag, Codec::head(value)) << 32) | Bits<typename Codec::Value>::to(Codec::value(value)));
    }
    SCANRT_DEVICE u32 poll(long long tile, u32 tag, Carry& value) const {
        u64 w = ld_relaxed(word + tile);
        u32 high = (u32)(w >> 32);
        value = Codec::make(Bits<typename Codec::Value>::from((u32)w), high & SCANRT_HEAD_BIT);
        return status_flag(high, tag);
    }
    SCANRT_DEVICE void clear(long long slots, int tid, int threads) {
        for (long long i = tid; i < slots; i += threads) word[i] = 0;
    }
};

// 8-byte values: a 16-byte slot of two 64-bit words, [status word:32 | low half:32] and
// [status word:32 | high half:32], written by one 16-byte store and read by one 16-byte
// load. The memory model promises single-copy atomicity for each 64-bit word only, so a
// reader accepts the slot only when both words carry the same status word. A slot holds
// at most one publication per (tag, flag) (one AGGREGATE, one INCLUSIVE per launch), so
// matching words come from the same publication; a torn read looks INVALID and is
// simply polled again.
template <typename Carry> struct TileStatus<Carry, 8> {
    typedef SlotCodec<Carry> Codec;
    static const int SLOT_BYTES = STATUS_SLOT_BYTES_8;
    u64* word;  // two per slot
    SCANRT_DEVICE TileStatus(void* slots, long long) : word((u64*)slots) {}
    SCANRT_DEVICE void publish(long long tile, u32 flag, Carry value, u32 tag) const {
        const u64 status = (u64)status_word(tag, flag, Codec::head(value)) << 32;
        const u64 bits = Bits<typename Codec::Value>::to(Codec::value(value));
        asm volatile("st.relaxed.gpu.global.v2.u64 [%0], {%1, %2};"
                     :: "l"(word + 2 * tile), "l"(status | (bits & 0xffffffffu)), "l"(status | (bits >> 32)) : "memory");
    }
    SCANRT_DEVICE u32 poll(long long tile, u32 tag, Carry& value) const {
        u64 low, high;
        asm volatile("ld.relaxed.gpu.global.v2.u64 {%0, %1}, [%2];" : "=l"(low), "=l"(high) : "l"(word + 2 * tile) : "memory");
        const u32 status = (u32)(low >> 32);
        if (status != (u32)(high >> 32)) return SCANRT_STATUS_INVALID;  // torn: two publications
        value = Codec::make(Bits<typename Codec::Value>::from((high << 32) | (low & 0xffffffffu)), status & SCANRT_HEAD_BIT);
        return status_flag(status, tag);
    }
    SCANRT_DEVICE void clear(long long slots, int tid, int threads) {
        for (long long i = tid; i < 2 * slots; i += threads) word[i] = 0;
    }
};

// 16-byte values: a 32-byte slot of four 64-bit words [status word:32 | value word
// i:32], written by two 16-byte stores and read by two 16-byte loads. Each (tile, flag)
// is published once per launch, so four equal status words carry one publication's
// value; a read torn between publications (or launches) shows two status words and is
// simply polled again.
template <typename Carry> struct TileStatus<Carry, 16> {
    typedef SlotCodec<Carry> Codec;
    typedef Words<typename Codec::Value> ValueWords;
    static_assert(ValueWords::N == 4, "four 32-bit words");
    static const int SLOT_BYTES = STATUS_SLOT_BYTES_16;
    u64* word;  // four per slot
    SCANRT_DEVICE TileStatus(void* slots, long long) : word((u64*)slots) {}
    SCANRT_DEVICE void publish(long long tile, u32 flag, Carry value, u32 tag) const {
        const u64 status = (u64)status_word(tag, flag, Codec::head(value)) << 32;
        const ValueWords w = ValueWords::of(Codec::value(value));
        asm volatile("st.relaxed.gpu.global.v2.u64 [%0], {%1, %2};"
                     :: "l"(word + 4 * tile), "l"(status | w.w[0]), "l"(status | w.w[1]) : "memory");
        asm volatile("st.relaxed.gpu.global.v2.u64 [%0], {%1, %2};"
                     :: "l"(word + 4 * tile + 2), "l"(status | w.w[2]), "l"(status | w.w[3]) : "memory");
    }
    SCANRT_DEVICE u32 poll(long long tile, u32 tag, Carry& value) const {
        u64 a, b, c, d;
        asm volatile("ld.relaxed.gpu.global.v2.u64 {%0, %1}, [%2];" : "=l"(a), "=l"(b) : "l"(word + 4 * tile) : "memory");
        asm volatile("ld.relaxed.gpu.global.v2.u64 {%0, %1}, [%2];" : "=l"(c), "=l"(d) : "l"(word + 4 * tile + 2) : "memory");
        const u32 status = (u32)(a >> 32);
        if (status != (u32)(b >> 32) || status != (u32)(c >> 32) || status != (u32)(d >> 32))
            return SCANRT_STATUS_INVALID;  // torn: two publications
        ValueWords w;
        w.w[0] = (u32)a;
        w.w[1] = (u32)b;
        w.w[2] = (u32)c;
        w.w[3] = (u32)d;
        value = Codec::make(w.value(), status & SCANRT_HEAD_BIT);
        return status_flag(status, tag);
    }
    SCANRT_DEVICE void clear(long long slots, int tid, int threads) {
        for (long long i = tid; i < 4 * slots; i += threads) word[i] = 0;
    }
};

// Wider values (user-defined states of 12 or 20 to 64 bytes): the 16-byte layout drawn
// out, one 64-bit word [status word:32 | value word i:32] per 32-bit word of the value,
// padded to an even count (the pad repeats the status word beside a zero), written by
// 16-byte stores and read by 16-byte loads. A reader accepts the slot only when every
// word carries the same status word: each (tile, flag) is published once per launch, so
// they then hold one publication's value; a read torn between publications shows two
// status words and is polled again. So every 64-bit word of every layout holds a tagged
// status word in its high half, and a workspace serves launches of any value size in
// turn: a stale word is an older launch's status, never a value read as one.
template <typename Carry> struct TileStatus<Carry, 0> {
    typedef SlotCodec<Carry> Codec;
    typedef Words<typename Codec::Value> ValueWords;
    static const int PAIRS = (ValueWords::N + 1) / 2;  // 16-byte halves of a slot
    static const int SLOT_BYTES = 16 * PAIRS;
    u64* word;  // 2 * PAIRS per slot
    SCANRT_DEVICE TileStatus(void* slots, long long) : word((u64*)slots) {}
    SCANRT_DEVICE void publish(long long tile, u32 flag, Carry value, u32 tag) const {
        const u64 status = (u64)status_word(tag, flag, Codec::head(value)) << 32;
        const ValueWords w = ValueWords::of(Codec::value(value));
        u64* slot = word + 2 * PAIRS * tile;
#pragma unroll
        for (int p = 0; p < PAIRS; ++p) {
            const u64 low = status | w.w[2 * p];
            const u64 high = status | (2 * p + 1 < ValueWords::N ? w.w[2 * p + 1] : 0u);
            asm volatile("st.relaxed.gpu.global.v2.u64 [%0], {%1, %2};" :: "l"(slot + 2 * p), "l"(low), "l"(high) : "memory");
        }
    }
    SCANRT_DEVICE u32 poll(long long tile, u32 tag, Carry& value) const {
        const u64* slot = word + 2 * PAIRS * tile;
        u64 v[2 * PAIRS];
#pragma unroll
        for (int p = 0; p < PAIRS; ++p)
            asm volatile("ld.relaxed.gpu.global.v2.u64 {%0, %1}, [%2];" : "=l"(v[2 * p]), "=l"(v[2 * p + 1]) : "l"(slot + 2 * p) : "memory");
        const u32 status = (u32)(v[0] >> 32);
        bool whole = true;
#pragma unroll
        for (int i = 1; i < 2 * PAIRS; ++i) whole &= (u32)(v[i] >> 32) == status;
        if (!whole) return SCANRT_STATUS_INVALID;  // torn: two publications
        ValueWords w;
#pragma unroll
        for (int i = 0; i < ValueWords::N; ++i) w.w[i] = (u32)v[i];
        value = Codec::make(w.value(), status & SCANRT_HEAD_BIT);
        return status_flag(status, tag);
    }
    SCANRT_DEVICE void clear(long long slots, int tid, int threads) {
        for (long long i = tid; i < 2 * PAIRS * slots; i += threads) word[i] = 0;
    }
};

// A slot that ends a look-back: INCLUSIVE, or any published pair that holds a segment head.
template <typename Carry>
SCANRT_DEVICE bool closes_lookback(u32 flag, Carry value) {
    return flag == SCANRT_STATUS_INCLUSIVE || (flag != SCANRT_STATUS_INVALID && SlotCodec<Carry>::head(value));
}

// The look-back for `tile` (> 0): the fold of all its predecessors, including the carry
// into tile 0. Walks back over windows of 32 * K slots, all polled at once, so one round
// trip to L2 covers 32 * K predecessors: row j of a window holds the 32 slots
// window_start + 32 j + lane (row K - 1 the nearest), so every poll instruction reads 32
// adjacent slots. (The persistent kernels run K = 1: their look-backs rarely walk far;
// what they wait for is predecessors that have drawn their ticket but not yet published,
// and wider polls only add L2 traffic. The one-wave kernel, whose tiles all publish at
// about the same time, reaches further per round trip: tuning.rs, the rows' wave slots.) Only
// slots still INVALID are polled again. A window is done as soon as every slot above its
// nearest closing slot is published (slots below it do not matter), or, with no closing
// slot, when all are published; then the walk goes on below it.
template <typename CarryOp, typename Status, int K, int SPIN_BEFORE_SLEEP, int SLEEP_NS>
SCANRT_DEVICE typename CarryOp::T look_back(const Status& status, long long tile, u32 tag, int lane, Watchdog& dog) {
    typedef typename CarryOp::T Carry;
    Carry running = CarryOp::identity();
    for (long long window_end = tile - 1;; window_end -= 32 * K) {
        const long long window_start = window_end - (32 * K - 1);
        Carry value[K];
        u32 flag[K];
#pragma unroll
        for (int j = 0; j < K; ++j) {
            value[j] = CarryOp::identity();
            // Slots before tile 0 add nothing and close the walk.
            flag[j] = window_start + 32 * j + lane < 0 ? SCANRT_STATUS_INCLUSIVE : SCANRT_STATUS_INVALID;
        }
        int closing_row, closing_lane;  // the nearest closing slot, or -1
        for (int spins = 0;; ++spins) {
            // Issue every outstanding poll before looking at any result: one round trip.
#pragma unroll
            for (int j = 0; j < K; ++j)
                if (flag[j] == SCANRT_STATUS_INVALID) flag[j] = status.poll(window_start + 32 * j + lane, tag, value[j]);
            bool ready = true;
            closing_row = closing_lane = -1;
#pragma unroll
            for (int j = K - 1; j >= 0; --j) {
                const u32 closing = __ballot_sync(SCANRT_FULL_MASK, closes_lookback(flag[j], value[j]));
                const u32 invalid = __ballot_sync(SCANRT_FULL_MASK, flag[j] == SCANRT_STATUS_INVALID);
                if (closing_row >= 0) continue;  // below the closing slot: does not matter
                if (closing) {
                    closing_row = j;
                    closing_lane = 31 - __clz(closing);
                    ready = ready && (invalid >> closing_lane >> 1) == 0;  // lanes above it
                } else {
                    ready = ready && invalid == 0;
                }
            }
            if (ready) break;
            if (dog.expired(spins, lane)) return running;  // the output is undefined; the host hears of it
            if (spins >= SPIN_BEFORE_SLEEP) __nanosleep(SLEEP_NS);
        }
        // Fold the window in slot order from its nearest closing slot on: row by row, each
        // row in lane order.
        Carry window = CarryOp::identity();
#pragma unroll
        for (int j = 0; j < K; ++j) {
            const bool counts = j > closing_row || (j == closing_row && lane >= closing_lane);
            window = CarryOp::combine(window, warp_reduce<CarryOp>(counts ? value[j] : CarryOp::identity(), lane));
        }
        running = CarryOp::combine(window, running);
        if (closing_row >= 0) return running;
    }
}

// Deterministic look-back for `tile` (> 0): INCLUSIVE of the anchor at or below tile - 1,
// then the AGGREGATEs up to tile - 1 (see the protocol above). Lane l holds the
// ANCHOR_SLOTS_PER_LANE consecutive slots from anchor + l * ANCHOR_SLOTS_PER_LANE and folds
// them in order; the warp then reduces the lane results in lane order. Both orders are
// fixed, so the result is a function of the tile index alone.
template <typename CarryOp, typename Status, int SPIN_BEFORE_SLEEP, int SLEEP_NS>
SCANRT_DEVICE typename CarryOp::T look_back_deterministic(const Status& status, long long tile, u32 tag, int lane,
                                                          Watchdog& dog) {
    typedef typename CarryOp::T Carry;
    const int K = SCANRT_ANCHOR_SLOTS_PER_LANE;
    const long long anchor = (tile - 1) / SCANRT_ANCHOR_STRIDE * SCANRT_ANCHOR_STRIDE;
    const long long first_slot = anchor + (long long)lane * K;
    Carry value[K];
    u32 flag[K];
#pragma unroll
    for (int j = 0; j < K; ++j) {
        value[j] = CarryOp::identity();
        flag[j] = SCANRT_STATUS_INVALID;
    }
    // The anchor's slot needs its INCLUSIVE value, every other slot any published value.
    auto ready = [&](int j) {
        if (first_slot + j >= tile) return true;
        return lane == 0 && j == 0 ? flag[j] == SCANRT_STATUS_INCLUSIVE : flag[j] != SCANRT_STATUS_INVALID;
    };
    for (int spins = 0;; ++spins) {
        bool all_ready = true;
#pragma unroll
        for (int j = 0; j < K; ++j) {
            if (!ready(j)) flag[j] = status.poll(first_slot + j, tag, value[j]);
            all_ready &= ready(j);
        }
        if (__all_sync(SCANRT_FULL_MASK, all_ready)) break;
        if (dog.expired(spins, lane)) break;
        if (spins >= SPIN_BEFORE_SLEEP) __nanosleep(SLEEP_NS);
    }
    Carry lane_fold = CarryOp::identity();
#pragma unroll
    for (int j = 0; j < K; ++j)
        if (first_slot + j < tile) lane_fold = CarryOp::combine(lane_fold, value[j]);
    return warp_reduce<CarryOp>(lane_fold, lane);
}

// The protocol's steps, shared by both single-pass kernels.

// Draws a ticket, [generation | tile id] (thread 0). Nothing waits for the atomic until
// its result is read, so a caller that draws early and reads late hides the round trip,
// which queues behind the memory system's traffic, behind its other work.
SCANRT_DEVICE unsigned long long draw_ticket(LookbackHeader* header) { return atomicAdd(&header->ticket, 1ull); }

// The tag of a launch's status slots: 1..TAG_PERIOD, never 0 (a zero-filled slot).
SCANRT_DEVICE u32 generation_tag(u32 generation) { return 1u + generation % TAG_PERIOD; }

// A block's first ticket (thread 0), or REFUSED_TICKET when the workspace cannot be
// trusted: its seal is not scanrt's, it was poisoned by an earlier fault, or it was
// initialised for fewer slots than the launch's `num_tiles`, or for more than the host
// checked (`host_slots`). The header is read while the ticket is in flight. A refusal is
// reported to the host and poisons the workspace (the refused draw moved its ticket);
// the blocks that see the poison report the first fault with FAULT_POISONED, so
// the host learns the cause whichever block reports last. Refused blocks publish
// nothing and write no output.
#define SCANRT_REFUSED_TICKET 0xffffffffull  // [generation 0 | no tile]
template <typename Status>
SCANRT_DEVICE unsigned long long first_ticket(LookbackHeader* header, FaultSink report, u32 num_tiles,
                                              long long host_slots) {
    const unsigned long long area = *(volatile unsigned long long*)&header->area_bytes;
    const unsigned long long seal = *(volatile unsigned long long*)&header->seal;
    const u32 fault = *(volatile u32*)&header->fault;
    const unsigned long long drawn = draw_ticket(header);
    const long long slots = (long long)(area / Status::SLOT_BYTES);
    u32 code = 0;
    if (seal != scanrt_workspace_seal(area)) code = FAULT_UNINITIALISED;
    else if (fault != 0) code = FAULT_POISONED | (fault & (FAULT_POISONED - 1));
    else if (slots < (long long)num_tiles) code = FAULT_TOO_SMALL;
    else if (slots > host_slots) code = FAULT_LARGER;  // its slots are not all in the range checked
    if (code == 0) return drawn;
    // The refused draw took a tile id nobody will publish: poison the header, so that the
    // launch's other blocks stop waiting for it at once.
    atomicCAS(&header->fault, 0u, code);
    tell_host(report, header, code);
    return SCANRT_REFUSED_TICKET;
}

// The block that drew the launch's last ticket (num_tiles + gridDim.x - 1) hands the
// header to the next launch (thread 0). This reads the ticket, so it waits for it.
SCANRT_DEVICE void pass_on_header(LookbackHeader* header, unsigned long long drawn, u32 last_ticket) {
    if ((u32)drawn == last_ticket) atomicExch(&header->ticket, (unsigned long long)((u32)(drawn >> 32) + 1u) << 32);
}

// A scanned tile's first publication (thread 0): INCLUSIVE when nothing before it can
// matter (tile 0, or a segment head inside it), else AGGREGATE for later look-backs.
template <typename CarryOp, typename Status>
SCANRT_DEVICE void publish_scanned(const Status& status, u32 tile, typename CarryOp::T aggregate,
                                   typename CarryOp::T carry_in, u32 tag) {
    typedef typename CarryOp::T Carry;
    if (tile == 0) status.publish(0, SCANRT_STATUS_INCLUSIVE, CarryOp::combine(carry_in, aggregate), tag);
    else if (SlotCodec<Carry>::head(aggregate)) status.publish(tile, SCANRT_STATUS_INCLUSIVE, aggregate, tag);
    else status.publish(tile, SCANRT_STATUS_AGGREGATE, aggregate, tag);
}

// The look-back warp's work for one published tile: its exclusive prefix (the whole warp
// returns it) and, from lane 0, its INCLUSIVE publication unless publish_scanned already
// made one (in deterministic mode only anchor tiles publish INCLUSIVE).
template <typename CarryOp, typename Status, int K, int SPIN_BEFORE_SLEEP, int SLEEP_NS>
SCANRT_DEVICE typename CarryOp::T resolve_prefix(const Status& status, u32 tile, typename CarryOp::T aggregate,
                                                 typename CarryOp::T carry_in, u32 tag, int lane, bool deterministic,
                                                 Watchdog& dog) {
    typedef typename CarryOp::T Carry;
    if (tile == 0) return carry_in;
    const bool published = SlotCodec<Carry>::head(aggregate);  // INCLUSIVE already
    if (deterministic) {
        const Carry prefix = look_back_deterministic<CarryOp, Status, SPIN_BEFORE_SLEEP, SLEEP_NS>(status, tile, tag, lane, dog);
        if (lane == 0 && !published && tile % SCANRT_ANCHOR_STRIDE == 0)
            status.publish(tile, SCANRT_STATUS_INCLUSIVE, CarryOp::combine(prefix, aggregate), tag);
        return prefix;
    }
    const Carry prefix = look_back<CarryOp, Status, K, SPIN_BEFORE_SLEEP, SLEEP_NS>(status, tile, tag, lane, dog);
    if (lane == 0 && !published) status.publish(tile, SCANRT_STATUS_INCLUSIVE, CarryOp::combine(prefix, aggregate), tag);
    return prefix;
}

// The end of a launch (every thread of the block): in the one launch per 2^29 - 1 before
// the tags repeat, the last block to finish clears every slot (see the protocol). Not
// inlined: inlined, it changed the register allocation of the kernels' main loops (the
// bulk-copy kernel: 57 -> 61 registers, and a 4-byte spill for segmented 8-byte values).
template <typename Status>
__device__ __noinline__ void clear_before_tags_repeat(LookbackHeader* header, Status status, long long status_capacity,
                                            u32 generation, int tid) {
    __shared__ bool last_block;
    if ((generation + 1u) % TAG_PERIOD != 0) return;
    __syncthreads();  // the block's publications come before its count
    if (tid == 0) {
        __threadfence();
        last_block = atomicAdd(&header->finished_blocks, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (!last_block) return;
    status.clear(status_capacity, tid, blockDim.x);
    if (tid == 0) header->finished_blocks = 0;
}

