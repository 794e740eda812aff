// scanrt kernels, level 3c (beside tile_heads.cuh): carries per segment, for segments
// given by offsets (FLAG_SEGMENT_CARRIES). Segment s is [offsets[s], offsets[s + 1]),
// s < count - 1; the segments are the same in both directions.
//   - With FLAG_INIT_IN_MEMORY, `init_bits` holds one initial state per segment: the
//     head of segment s (its first element in traversal order) starts from inits[s].
//   - With `carry_out`, the end of segment s (its last element in traversal order)
//     writes its inclusive value to totals[s]; the offsets prepass writes the totals of
//     empty segments (their initial states).
// Elements outside [offsets[0], offsets[count - 1]) form segments of their own, with
// the scalar initial value (or the identity) and no total. Offsets must not decrease;
// where they do, every read and write still stays inside the tables, but which
// segment's carry an element takes is unspecified.
//
// A head or an end finds its segment by a binary search of the offsets (log2(count)
// loads, mostly from L1/L2): segments of thousands of elements cost the scan nothing
// measurable, segments of one element a search per element. The table (offsets, count,
// kind) follows the bit flags the prepass makes, so the kernels' parameters stay those
// of every scan.
#pragma once
#include "block/tile_heads.cuh"
#include "block/transform_io.cuh"

// Offset i of a table of `kind` (OFFSETS_*), as an unsigned position: a negative one
// reads as past every element.
SCANRT_DEVICE u64 read_offset(const void* offsets, unsigned kind, long long i) {
    if (kind == OFFSETS_64) return __ldg((const u64*)offsets + i);
    if (kind == OFFSETS_I32) {
        const i32 v = __ldg((const i32*)offsets + i);
        return v < 0 ? ~0ull : (u64)v;
    }
    return __ldg((const u32*)offsets + i);
}

// Bytes from the bit flags of n elements to their table (contract.rs's twin).
SCANRT_DEVICE long long segment_table_offset(long long n) { return ((n + 31) / 32 * 4 + 15) / 16 * 16; }

template <typename Acc>
struct SegmentCarries {
    SegmentTable table;
    const Acc* inits;  // one per segment, or null: the scalar initial value
    Acc* totals;       // one per segment, or null

    SCANRT_DEVICE static SegmentCarries of(const void* bits, long long n, unsigned long long init_bits,
                                           unsigned long long carry_out, unsigned flags) {
        SegmentCarries c;
        c.table = *(const SegmentTable*)((const char*)bits + segment_table_offset(n));
        c.inits = (flags & FLAG_INIT_IN_MEMORY) ? (const Acc*)init_bits : nullptr;
        c.totals = (Acc*)carry_out;
        return c;
    }
    SCANRT_DEVICE u64 offset(long long i) const { return read_offset((const void*)table.offsets, table.kind, i); }

    // The segment holding physical element p: the last s < count - 1 with
    // offsets[s] <= p, where p < offsets[s + 1]; -1 when no segment holds it.
    SCANRT_DEVICE long long segment_of(long long p) const {
        long long lo = 0, hi = table.count - 1;  // the answer lies in [lo, hi)
        if (hi <= 0 || offset(0) > (u64)p) return -1;
        while (hi - lo > 1) {
            const long long mid = lo + (hi - lo) / 2;
            if (offset(mid) <= (u64)p) lo = mid;
            else hi = mid;
        }
        return (u64)p < offset(lo + 1) ? lo : -1;
    }
};

// Each head of the calling thread's row (`heads` its mask, `row` its cells of the shared
// matrix) takes its segment's initial state: before the row scan it is folded into the
// staged element (FOLD), so the row scan starts the segment from the identity; after an
// exclusive row scan of folded heads it is the head's own result (the row scan wrote the
// identity there).
template <typename Op, int ITEMS, bool REVERSE, bool FOLD>
SCANRT_DEVICE void segment_inits_at_heads(typename Op::T* row, u32 heads, long long start, long long valid, int tid,
                                          const SegmentCarries<typename Op::T>& carries) {
    for (u32 h = heads; h != 0u; h &= h - 1u) {
        const int i = __ffs(h) - 1;
        const long long s = carries.segment_of(start + logical_index<REVERSE>(tid * ITEMS + i, valid));
        if (s >= 0) row[i] = FOLD ? Op::combine(carries.inits[s], row[i]) : carries.inits[s];
    }
}

// The ends in the calling thread's row of tile `tile` (bit i: logical element i is the
// last of its segment in traversal order): the element before each head, and the row's
// last valid element when the next one heads a segment or the array ends.
template <int ITEMS, bool REVERSE>
SCANRT_DEVICE u32 row_segment_ends(const HeadSource& src, u32 heads, long long tile, int TILE, long long start,
                                   long long valid, long long n, int tid) {
    const int first = tid * ITEMS;
    if (first >= valid) return 0u;
    const int last = (int)min((long long)ITEMS, valid - first) - 1;  // the row's last valid item
    u32 ends = (heads >> 1) & ((1u << last) - 1u);
    const long long next = tile * TILE + first + last + 1;  // its logical successor
    const bool end = next >= n || src.template head<REVERSE>(REVERSE ? n - 1 - next : next);
    return ends | (end ? 1u : 0u) << last;
}

// Element p of a plain input, as the accumulator.
template <typename Op, typename In>
SCANRT_DEVICE typename Op::T element_at(const In* in, long long p) {
    return typename Op::T(in[p]);
}
// Element p of a transform's inputs, built by Op::load.
template <typename Op, typename I0, typename I1, typename I2, typename I3>
SCANRT_DEVICE typename Op::T element_at(const Gather<Op, I0, I1, I2, I3>& in, long long p) {
    return Op::load(in.index + p, in.a0[p], load_or_none(in.a1, p), load_or_none(in.a2, p), load_or_none(in.a3, p));
}

// After a tile's rows are final (`row`: the calling thread's cells): each end writes
// its segment's total, its inclusive value (an exclusive result combined with its own
// element, read again from `in`: the tile's outputs are not stored yet, so an in-place
// scan still finds it).
template <typename Op, int ITEMS, bool REVERSE, typename Src>
SCANRT_DEVICE void write_segment_totals(const typename Op::T* row, u32 ends, bool inclusive, const Src& in,
                                        long long start, long long valid, int tid,
                                        const SegmentCarries<typename Op::T>& carries) {
    for (u32 e = ends; e != 0u; e &= e - 1u) {
        const int i = __ffs(e) - 1;
        const long long p = start + logical_index<REVERSE>(tid * ITEMS + i, valid);
        const long long s = carries.segment_of(p);
        if (s < 0) continue;
        carries.totals[s] = inclusive ? row[i] : Op::combine(row[i], element_at<Op>(in, p));
    }
}
