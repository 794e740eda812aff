// scanrt kernels, level 3a: moving one tile between global memory, registers and the
// padded shared-memory matrix.
//
// A tile is THREADS * ITEMS consecutive elements, seen as a matrix of THREADS rows of
// ITEMS items (row r is the r-th run of ITEMS elements). Global accesses are striped
// across the block so every warp instruction touches one contiguous span:
//   * vector mode (pointer 16-byte aligned, whole tile): 16-byte accesses;
//   * scalar mode (any alignment, whole tile): one element per thread per step;
//   * partial mode (the last, short tile): scalar with a bounds check.
// Loads land in registers first (`TileRegs`), so a caller can issue them early and
// consume them later; `stage` then converts them to the accumulator type and writes
// them into shared memory, where each row is padded by one element so that the threads
// of a warp reading their rows hit distinct banks.
//
// Backward scans (REVERSE) traverse the data from its end without copying it: global
// accesses stay ascending and coalesced over the tile's physical span, and only the
// shared-memory index is mirrored, so logical element e of a tile of `valid` elements is
// physical element valid - 1 - e. `tile_span` gives that physical span.
#pragma once
#include "util/types.cuh"

#define SCANRT_MODE_VECTOR  0
#define SCANRT_MODE_SCALAR  1
#define SCANRT_MODE_PARTIAL 2

// Physical start of logical tile `tile` (of TILE elements; the last one holds `valid`).
template <bool REVERSE>
SCANRT_DEVICE long long tile_start(long long tile, int TILE, long long valid, long long n) {
    return REVERSE ? n - tile * TILE - valid : tile * TILE;
}

// Shared-matrix slot of the element at physical offset p of a tile of `valid` elements.
template <bool REVERSE>
SCANRT_DEVICE int logical_index(int p, long long valid) {
    return REVERSE ? (int)valid - 1 - p : p;
}

template <typename Acc, int THREADS, int ITEMS>
struct TileMatrix {
    static const int TILE = THREADS * ITEMS;
    static const int STRIDE = ITEMS + 1; // padded row length, in elements
    Acc cell[THREADS * STRIDE];
    static SCANRT_DEVICE int index(int e) { return e + e / ITEMS; }

    // The slots of one 16-byte vector of VEC elements at physical offset p of a whole
    // tile (p a multiple of VEC) are vector_slot(p) + j * vector_step(): a vector never
    // crosses a row (VEC divides ITEMS), so one index per vector suffices, and the
    // vectors of one thread differ by constants (THREADS * VEC is a whole number of
    // rows). Writing it this way keeps the compiler from holding a register per element.
    template <bool REVERSE, int VEC>
    static SCANRT_DEVICE int vector_slot(int first_p, int r) {
        static_assert((THREADS * VEC) % ITEMS == 0, "a block-wide step of vectors must be whole rows");
        const int step = THREADS * VEC / ITEMS * STRIDE;  // slots between vector r and r + 1
        return REVERSE ? index(TILE - 1 - first_p) - r * step : index(first_p) + r * step;
    }
    template <bool REVERSE> static SCANRT_DEVICE int vector_step() { return REVERSE ? -1 : 1; }
};

// 16-byte streaming (evict-first) accesses: the scan touches every byte exactly once.
SCANRT_DEVICE uint4 load16_streaming(const void* p) { return __ldcs(reinterpret_cast<const uint4*>(p)); }
SCANRT_DEVICE void store16_streaming(void* p, uint4 v) { __stcs(reinterpret_cast<uint4*>(p), v); }

// Elements per 16-byte vector access of type T: 16 / sizeof(T) where that divides, else
// 1 (wide user-defined states are accessed one element at a time: VECTORS is false).
template <typename T> struct VectorWidth {
    static const bool VECTORS = sizeof(T) <= 16 && 16 % sizeof(T) == 0;
    static const int VEC = VECTORS ? 16 / sizeof(T) : 1;
};

template <typename In, int THREADS, int ITEMS>
struct TileRegs {
    static const int TILE = THREADS * ITEMS;
    static const int VEC = VectorWidth<In>::VEC;     // elements per 16-byte load
    static_assert(ITEMS % VEC == 0, "ITEMS must be a multiple of the 16-byte vector width");
    In raw[ITEMS];

    // The loaded elements folded in register order, as Op's accumulators (the thread's
    // part of block_reduce_tile).
    template <typename Op>
    SCANRT_DEVICE typename Op::T fold(long long valid, int mode, int tid) const {
        typedef typename Op::T Acc;
        Acc acc = Op::identity();
#pragma unroll
        for (int r = 0; r < ITEMS; ++r)
            if (mode != SCANRT_MODE_PARTIAL || r * THREADS + tid < valid) acc = Op::combine(acc, Acc(raw[r]));
        return acc;
    }

    // Issues the loads of tile elements [0, valid) starting at `src`.
    SCANRT_DEVICE void load(const In* src, long long valid, int mode, int tid) {
        // Types without vectors take the bounds-checked path for whole tiles too.
        if (VectorWidth<In>::VECTORS && mode == SCANRT_MODE_VECTOR) {
#pragma unroll
            for (int r = 0; r < ITEMS / VEC; ++r) {
                int e = (r * THREADS + tid) * VEC;
                uint4 w = load16_streaming(src + e);
                const In* parts = reinterpret_cast<const In*>(&w);
#pragma unroll
                for (int j = 0; j < VEC; ++j) raw[r * VEC + j] = parts[j];
            }
        } else if (mode == SCANRT_MODE_SCALAR) {
#pragma unroll
            for (int r = 0; r < ITEMS; ++r) raw[r] = src[r * THREADS + tid];
        } else {
#pragma unroll
            for (int r = 0; r < ITEMS; ++r) {
                int e = r * THREADS + tid;
                if (e < valid) raw[r] = src[e];
            }
        }
    }

    // Writes the loaded elements, converted to Acc, into the shared matrix at their logical
    // positions; slots past `valid` become the identity so that row scans need no bounds
    // checks (the physical offsets >= valid are exactly the logical ones, either way).
    template <typename Op, bool REVERSE = false>
    SCANRT_DEVICE void stage(TileMatrix<typename Op::T, THREADS, ITEMS>& m, long long valid, int mode, int tid) const {
        typedef typename Op::T Acc;
        typedef TileMatrix<Acc, THREADS, ITEMS> M;
        if (VectorWidth<In>::VECTORS && mode == SCANRT_MODE_VECTOR) {
#pragma unroll
            for (int r = 0; r < ITEMS / VEC; ++r) {
                const int slot = M::template vector_slot<REVERSE, VEC>(tid * VEC, r);
#pragma unroll
                for (int j = 0; j < VEC; ++j) m.cell[slot + j * M::template vector_step<REVERSE>()] = Acc(raw[r * VEC + j]);
            }
        } else {
#pragma unroll
            for (int r = 0; r < ITEMS; ++r) {
                int p = r * THREADS + tid;
                if (p < valid) m.cell[M::index(logical_index<REVERSE>(p, valid))] = Acc(raw[r]);
                else m.cell[M::index(p)] = Op::identity();
            }
        }
    }
};

// Stores tile elements [0, valid) from the shared matrix to the tile's physical span `dst`.
template <bool REVERSE = false, typename Acc, int THREADS, int ITEMS>
SCANRT_DEVICE void store_tile(const TileMatrix<Acc, THREADS, ITEMS>& m, Acc* dst, long long valid, int mode, int tid) {
    typedef TileMatrix<Acc, THREADS, ITEMS> M;
    const int VEC = VectorWidth<Acc>::VEC;
    static_assert(ITEMS % VectorWidth<Acc>::VEC == 0, "ITEMS must be a multiple of the 16-byte vector width");
    if (VectorWidth<Acc>::VECTORS && mode == SCANRT_MODE_VECTOR) {
#pragma unroll
        for (int r = 0; r < ITEMS / VEC; ++r) {
            const int p = (r * THREADS + tid) * VEC;
            const int slot = M::template vector_slot<REVERSE, VEC>(tid * VEC, r);
            uint4 w;
            Acc* parts = reinterpret_cast<Acc*>(&w);
#pragma unroll
            for (int j = 0; j < VEC; ++j) parts[j] = m.cell[slot + j * M::template vector_step<REVERSE>()];
            store16_streaming(dst + p, w);
        }
    } else {
#pragma unroll
        for (int r = 0; r < ITEMS; ++r) {
            int p = r * THREADS + tid;
            if (mode != SCANRT_MODE_PARTIAL || p < valid) dst[p] = m.cell[M::index(logical_index<REVERSE>(p, valid))];
        }
    }
}

// The registers a tile of source `Src` loads into: TileRegs for a plain array; a
// transform's inputs bring their own (block/transform_io.cuh).
template <typename Src, int THREADS, int ITEMS> struct RegsOf;
template <typename In, int THREADS, int ITEMS> struct RegsOf<const In*, THREADS, ITEMS> {
    typedef TileRegs<In, THREADS, ITEMS> Type;
};
