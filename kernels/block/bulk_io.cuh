// scanrt kernels, level 3a (beside tile_io.cuh and transform_io.cuh): how the bulk-copy
// single pass (device/single_pass_bulk.cuh) moves a tile between global memory and one of
// its shared-memory buffers, for each kind of source and destination.
//
// A buffer holds a tile in physical order, TILE * BYTES bytes. It is used three ways in
// turn: the source's arrays as loaded (bulk copies, or the data threads' copy of a partial
// or misaligned tile), then the scanned states parked between rounds (rows of Acc; not for
// states wider than the arrays, which single_pass_bulk.cuh rescans), then the
// destination's arrays as stored. A plain source or destination is one array of the
// accumulator type whose rows sit where the states' rows do, so each thread reads and
// writes only its own row. A transform's arrays (`Gather`, `Scatter`) lie one after the
// other, so a thread's row of one array overlaps other threads' state rows: OVERLAPS says
// the kernel must put a barrier between the two uses.
#pragma once
#include "block/transform_io.cuh"
#include "util/bulk_copy.cuh"

template <typename A, typename B> struct SameType { static const bool value = false; };
template <typename A> struct SameType<A, A> { static const bool value = true; };

// Physical row `row` (ITEMS elements) of an array of T in a buffer, as 16-byte vectors
// where the row is whole vectors: vector v at v ^ swizzle (see ParkedStates).
template <typename T, int ITEMS>
struct BufferRow {
    static const bool VECTORS = ITEMS * sizeof(T) % 16 == 0;
    static SCANRT_DEVICE void read(const T* array, int row, T (&x)[ITEMS], int swizzle = 0) {
        const T* src = array + row * ITEMS;
        if constexpr (VECTORS) {
#pragma unroll
            for (int v = 0; v < ITEMS * (int)sizeof(T) / 16; ++v) {
                const uint4 w = reinterpret_cast<const uint4*>(src)[v ^ swizzle];
                memcpy(&x[v * (16 / sizeof(T))], &w, 16);
            }
        } else {
#pragma unroll
            for (int i = 0; i < ITEMS; ++i) x[i] = src[i];
        }
    }
    static SCANRT_DEVICE void write(T* array, int row, const T (&x)[ITEMS], int swizzle = 0) {
        T* dst = array + row * ITEMS;
        if constexpr (VECTORS) {
#pragma unroll
            for (int v = 0; v < ITEMS * (int)sizeof(T) / 16; ++v) {
                uint4 w;
                memcpy(&w, &x[v * (16 / sizeof(T))], 16);
                reinterpret_cast<uint4*>(dst)[v ^ swizzle] = w;
            }
        } else {
#pragma unroll
            for (int i = 0; i < ITEMS; ++i) dst[i] = x[i];
        }
    }
};

// A thread's row in logical order: backward tiles are physical spans read from their
// end, so logical row r is physical row THREADS - 1 - r, reversed.
template <int THREADS, int ITEMS, bool REVERSE>
struct LogicalRow {
    static SCANRT_DEVICE int physical_row(int tid) { return REVERSE ? THREADS - 1 - tid : tid; }
    static SCANRT_DEVICE int item(int p) { return REVERSE ? ITEMS - 1 - p : p; }  // physical <-> logical
};

// A thread's row of Acc, in logical order, at its physical row of the buffer (plain
// sources and destinations: the array itself), its vectors at v ^ swizzle.
template <typename Acc, int THREADS, int ITEMS, bool REVERSE>
struct StateRow {
    typedef LogicalRow<THREADS, ITEMS, REVERSE> L;
    static SCANRT_DEVICE void read(const unsigned char* buffer, int tid, Acc (&row)[ITEMS], int swizzle = 0) {
        Acc x[ITEMS];
        BufferRow<Acc, ITEMS>::read(reinterpret_cast<const Acc*>(buffer), L::physical_row(tid), x, swizzle);
#pragma unroll
        for (int p = 0; p < ITEMS; ++p) row[L::item(p)] = x[p];
    }
    static SCANRT_DEVICE void write(unsigned char* buffer, int tid, const Acc (&row)[ITEMS], int swizzle = 0) {
        Acc x[ITEMS];
#pragma unroll
        for (int p = 0; p < ITEMS; ++p) x[p] = row[L::item(p)];
        BufferRow<Acc, ITEMS>::write(reinterpret_cast<Acc*>(buffer), L::physical_row(tid), x, swizzle);
    }
};

// The parked states: each thread's StateRow, swizzled. A 16-byte shared access serves
// eight threads at once, in one wavefront when they hit the eight different 16-byte
// groups of banks. Rows of V vectors start on only 8 / gcd(V, 8) groups (a transform's
// twelve 8-byte states, V = 6, conflict two ways), so row r keeps vector v at
// v ^ ((r * G / 8) % G), G = gcd(V, 8): any eight consecutive rows then cover every
// group, and the swizzle stays inside the row (G divides V). Rows of odd V (the plain
// scans' 112-byte rows) are not swizzled.
template <typename Acc, int THREADS, int ITEMS, bool REVERSE>
struct ParkedStates {
    typedef StateRow<Acc, THREADS, ITEMS, REVERSE> Row;
    static const int V = ITEMS * sizeof(Acc) / 16;
    static const int G = !BufferRow<Acc, ITEMS>::VECTORS ? 1 : V % 8 == 0 ? 8 : V % 4 == 0 ? 4 : V % 2 == 0 ? 2 : 1;
    static SCANRT_DEVICE int swizzle(int tid) { return LogicalRow<THREADS, ITEMS, REVERSE>::physical_row(tid) * G / 8 % G; }
    static SCANRT_DEVICE void read(const unsigned char* buffer, int tid, Acc (&row)[ITEMS]) {
        Row::read(buffer, tid, row, swizzle(tid));
    }
    static SCANRT_DEVICE void write(unsigned char* buffer, int tid, const Acc (&row)[ITEMS]) {
        Row::write(buffer, tid, row, swizzle(tid));
    }
};

// Rows with a pitch: element i of a view of rows of `len` elements lies at
// i / len * pitch + i % len; pitch 0: the rows follow each other (index i at i). Only
// plain arrays take a pitch (the host passes 0 for a transform's arrays); the host asks
// for bulk copies of pitched rows only where every row, pitch and tile is whole 16-byte
// vectors, so each run of a tile within one row is one aligned bulk copy.
struct Pitched {
    long long len, pitch;
    SCANRT_DEVICE long long at(long long i) const { return pitch ? i / len * pitch + i % len : i; }
    // Calls f(offset in the span, index in the array, count) for each run of the span
    // [start, start + count) that lies in one row (the whole span when not pitched).
    template <typename F> SCANRT_DEVICE void runs(long long start, int count, F f) const {
        if (!pitch) return f(0, start, count);
        long long row = start / len, column = start % len;
        for (int done = 0; done < count; ++row, column = 0) {
            const int take = (int)min((long long)(count - done), len - column);
            f(done, row * pitch + column, take);
            done += take;
        }
    }
};
// A scan's input and output rows (`len` from the scan's row length).
struct RowPitch {
    long long len, in, out;
    SCANRT_DEVICE Pitched input() const { return Pitched{len, in}; }
    SCANRT_DEVICE Pitched output() const { return Pitched{len, out}; }
};

// Where a tile comes from. Slot s of a buffer holds physical element s - shift of the
// tile (shift = TILE - valid for a partial backward tile, else 0); `start` is the physical
// index of the tile's first element (of the view: `rows` places it in the array).
template <typename Op, typename Src, int THREADS, int ITEMS, bool REVERSE> struct BulkSource;

// A plain array: the buffer holds accumulators, converted by the copy when the input
// type differs (a bulk copy moves bits, so then every tile is copied).
template <typename Op, typename In, int THREADS, int ITEMS, bool REVERSE>
struct BulkSource<Op, const In*, THREADS, ITEMS, REVERSE> {
    typedef typename Op::T Acc;
    static const int TILE = THREADS * ITEMS;
    static const int BYTES = sizeof(Acc);
    static const bool BULK = SameType<In, Acc>::value;
    static const bool OVERLAPS = false;

    // Thread 0: the bulk loads of a whole tile (one per row it spans), completing on
    // `loaded`.
    static SCANRT_DEVICE void issue_loads(unsigned char* buffer, const In* in, long long start, u64* loaded,
                                          const Pitched& rows) {
        mbarrier_arrive_expect_bytes(loaded, TILE * sizeof(Acc));
        rows.runs(start, TILE, [&](int offset, long long at, int count) {
            bulk_load(buffer + offset * sizeof(Acc), in + at, count * sizeof(Acc), loaded);
        });
    }
    // Data threads: the copy of any tile; slots without an element hold the identity.
    static SCANRT_DEVICE void copy_in(unsigned char* buffer, const In* in, long long start, long long valid, int shift,
                                      int tid, const Pitched& rows) {
        Acc* slots = reinterpret_cast<Acc*>(buffer);
        for (int s = tid; s < TILE; s += THREADS) {
            const int p = s - shift;
            slots[s] = p >= 0 && p < valid ? Acc(in[rows.at(start + p)]) : Op::identity();
        }
    }
    static SCANRT_DEVICE void read_row(const unsigned char* buffer, const In*, long long, long long, int, int tid,
                                       Acc (&row)[ITEMS]) {
        StateRow<Acc, THREADS, ITEMS, REVERSE>::read(buffer, tid, row);
    }
};

// A transform's input arrays, one after the other in the buffer; rows are built by
// Op::load from the element index and one element of each array.
template <typename Op, typename I0, typename I1, typename I2, typename I3, int THREADS, int ITEMS, bool REVERSE>
struct BulkSource<Op, Gather<Op, I0, I1, I2, I3>, THREADS, ITEMS, REVERSE> {
    typedef typename Op::T Acc;
    typedef Gather<Op, I0, I1, I2, I3> Src;
    static const int TILE = THREADS * ITEMS;
    static const int B0 = ElementBytes<I0>::value, B1 = ElementBytes<I1>::value, B2 = ElementBytes<I2>::value,
                     B3 = ElementBytes<I3>::value;
    static const int BYTES = B0 + B1 + B2 + B3;
    static const bool BULK = true;
    static const bool OVERLAPS = true;

    template <typename T>
    static SCANRT_DEVICE T* array(unsigned char* buffer, int offset_bytes) {
        return reinterpret_cast<T*>(buffer + offset_bytes * TILE);
    }
    template <typename T>
    static SCANRT_DEVICE const T* array(const unsigned char* buffer, int offset_bytes) {
        return reinterpret_cast<const T*>(buffer + offset_bytes * TILE);
    }
    template <typename T>
    static SCANRT_DEVICE void load_array(unsigned char* buffer, int offset_bytes, const T* a, long long start, u64* loaded) {
        if constexpr (IsArray<T>::value) bulk_load(array<T>(buffer, offset_bytes), a + start, TILE * sizeof(T), loaded);
    }
    static SCANRT_DEVICE void issue_loads(unsigned char* buffer, const Src& src, long long start, u64* loaded,
                                          const Pitched&) {
        mbarrier_arrive_expect_bytes(loaded, TILE * BYTES);
        load_array(buffer, 0, src.a0, start, loaded);
        load_array(buffer, B0, src.a1, start, loaded);
        load_array(buffer, B0 + B1, src.a2, start, loaded);
        load_array(buffer, B0 + B1 + B2, src.a3, start, loaded);
    }
    template <typename T>
    static SCANRT_DEVICE void copy_array(unsigned char* buffer, int offset_bytes, const T* a, long long start,
                                         long long valid, int shift, int tid) {
        if constexpr (IsArray<T>::value) {
            T* slots = array<T>(buffer, offset_bytes);
            for (int s = tid; s < TILE; s += THREADS) {
                const int p = s - shift;
                if (p >= 0 && p < valid) slots[s] = a[start + p];
            }
        }
    }
    static SCANRT_DEVICE void copy_in(unsigned char* buffer, const Src& src, long long start, long long valid, int shift,
                                      int tid, const Pitched&) {
        copy_array(buffer, 0, src.a0, start, valid, shift, tid);
        copy_array(buffer, B0, src.a1, start, valid, shift, tid);
        copy_array(buffer, B0 + B1, src.a2, start, valid, shift, tid);
        copy_array(buffer, B0 + B1 + B2, src.a3, start, valid, shift, tid);
    }
    template <typename T>
    static SCANRT_DEVICE void read_array(const unsigned char* buffer, int offset_bytes, int row, T (&x)[ITEMS]) {
        if constexpr (IsArray<T>::value) BufferRow<T, ITEMS>::read(array<T>(buffer, offset_bytes), row, x);
    }
    // States of this thread's row; slots without an element are the identity. `index` is
    // the element index of the source's first element (src.index).
    static SCANRT_DEVICE void read_row(const unsigned char* buffer, const Src& src, long long start, long long valid,
                                       int shift, int tid, Acc (&row)[ITEMS]) {
        typedef LogicalRow<THREADS, ITEMS, REVERSE> L;
        const int r = L::physical_row(tid);
        I0 x0[ITEMS];
        I1 x1[ITEMS];
        I2 x2[ITEMS];
        I3 x3[ITEMS];
        read_array(buffer, 0, r, x0);
        read_array(buffer, B0, r, x1);
        read_array(buffer, B0 + B1, r, x2);
        read_array(buffer, B0 + B1 + B2, r, x3);
        const long long first = src.index + start + r * ITEMS - shift;
        if (valid == TILE) {  // whole tiles (shift 0) need no bounds
#pragma unroll
            for (int p = 0; p < ITEMS; ++p) row[L::item(p)] = Op::load(first + p, x0[p], x1[p], x2[p], x3[p]);
        } else {
#pragma unroll
            for (int p = 0; p < ITEMS; ++p) {
                // One unsigned compare: e < 0 wraps above every valid count (at most TILE).
                const int e = r * ITEMS + p - shift;
                row[L::item(p)] = (u32)e < (u32)valid ? Op::load(first + p, x0[p], x1[p], x2[p], x3[p]) : Op::identity();
            }
        }
    }
};

// Where a tile goes; slots as for BulkSource.
template <typename Op, typename Dst, int THREADS, int ITEMS, bool REVERSE> struct BulkDestination;

// A plain array of accumulators (Acc = Op::T): each thread writes its finished row over
// its parked row.
template <typename Op, typename Acc, int THREADS, int ITEMS, bool REVERSE>
struct BulkDestination<Op, Acc*, THREADS, ITEMS, REVERSE> {
    static const int TILE = THREADS * ITEMS;
    static const int BYTES = sizeof(Acc);
    static const bool OVERLAPS = false;
    static SCANRT_DEVICE void write_row(unsigned char* buffer, int tid, const Acc (&row)[ITEMS]) {
        StateRow<Acc, THREADS, ITEMS, REVERSE>::write(buffer, tid, row);
    }
    // Thread 0, after the rows are written and fenced for the async proxy: one bulk store
    // per row the tile spans.
    static SCANRT_DEVICE void issue_stores(Acc* out, long long start, const unsigned char* buffer, const Pitched& rows) {
        rows.runs(start, TILE, [&](int offset, long long at, int count) {
            bulk_store(out + at, buffer + offset * sizeof(Acc), count * sizeof(Acc));
        });
    }
    static SCANRT_DEVICE void copy_out(const unsigned char* buffer, Acc* out, long long start, long long valid, int shift,
                                       int tid, const Pitched& rows) {
        const Acc* slots = reinterpret_cast<const Acc*>(buffer);
        for (int s = tid; s < TILE; s += THREADS) {
            const int p = s - shift;
            if (p >= 0 && p < valid) out[rows.at(start + p)] = slots[s];
        }
    }
};

// A transform's output arrays, one after the other in the buffer, written by Op::store.
template <typename Op, typename O0, typename O1, int THREADS, int ITEMS, bool REVERSE>
struct BulkDestination<Op, Scatter<Op, O0, O1>, THREADS, ITEMS, REVERSE> {
    typedef typename Op::T Acc;
    typedef Scatter<Op, O0, O1> Dst;
    static const int TILE = THREADS * ITEMS;
    static const int B0 = ElementBytes<O0>::value, B1 = ElementBytes<O1>::value;
    static const int BYTES = B0 + B1;
    static const bool OVERLAPS = true;

    static SCANRT_DEVICE void write_row(unsigned char* buffer, int tid, const Acc (&row)[ITEMS]) {
        typedef LogicalRow<THREADS, ITEMS, REVERSE> L;
        const int r = L::physical_row(tid);
        O0 y0[ITEMS];
        O1 y1[ITEMS];
#pragma unroll
        for (int p = 0; p < ITEMS; ++p) Op::store(row[L::item(p)], y0[p], y1[p]);
        BufferRow<O0, ITEMS>::write(reinterpret_cast<O0*>(buffer), r, y0);
        if constexpr (IsArray<O1>::value) BufferRow<O1, ITEMS>::write(reinterpret_cast<O1*>(buffer + B0 * TILE), r, y1);
    }
    static SCANRT_DEVICE void issue_stores(const Dst& dst, long long start, const unsigned char* buffer,
                                           const Pitched&) {
        bulk_store(dst.d0 + start, buffer, TILE * sizeof(O0));
        if constexpr (IsArray<O1>::value) bulk_store(dst.d1 + start, buffer + B0 * TILE, TILE * sizeof(O1));
    }
    static SCANRT_DEVICE void copy_out(const unsigned char* buffer, const Dst& dst, long long start, long long valid,
                                       int shift, int tid, const Pitched&) {
        const O0* y0 = reinterpret_cast<const O0*>(buffer);
        const O1* y1 = reinterpret_cast<const O1*>(buffer + B0 * TILE);
        for (int s = tid; s < TILE; s += THREADS) {
            const int p = s - shift;
            if (p >= 0 && p < valid) {
                dst.d0[start + p] = y0[s];
                if constexpr (IsArray<O1>::value) dst.d1[start + p] = y1[s];
            }
        }
    }
};
