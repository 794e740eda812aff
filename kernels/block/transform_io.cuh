// scanrt kernels, level 3a (beside tile_io.cuh): the edges of a transform scan.
//
// A transform scan builds each element from its index and up to four input arrays of
// built-in types, `Op::load(i, x0, x1, x2, x3)`, and writes each result to up to two output arrays,
// `Op::store(state, y0, y1)`. Unused slots have the type NoArray and cost nothing. So a
// linear recurrence reads a[] and b[] and writes h[] only: the (a, b) states it scans
// live in registers and shared memory, never in global memory.
//
// The kernels see a transform's inputs as a source (`Gather`, where a plain scan has
// `const In*`) and its outputs as a destination (`Scatter`, where it has `Acc*`): both
// offset like pointers, `RegsOf<Gather>` loads them, and a `store_tile` overload writes
// them, so the register-staged single pass and the matrix scan run transforms unchanged.
// Accesses keep tile_io.cuh's striped layout; in vector mode each array moves VEC
// elements per thread and step, VEC from the widest array (16-byte accesses for it,
// narrower ones for the others: every warp instruction still covers one contiguous span).
#pragma once
#include "block/tile_io.cuh"

// An unused input or output slot.
struct NoArray {};

template <typename T> struct IsArray { static const bool value = true; };
template <> struct IsArray<NoArray> { static const bool value = false; };
template <typename T> struct ElementBytes { static const int value = sizeof(T); };
template <> struct ElementBytes<NoArray> { static const int value = 0; };

template <int A, int B> struct MaxOf { static const int value = A > B ? A : B; };

// Elements per vector access for arrays whose widest element has WIDEST bytes, in rows of
// ITEMS: 16 / WIDEST, halved until it divides ITEMS.
template <int WIDEST, int ITEMS, int V = 16 / WIDEST> struct TransformVec {
    static const int value = ITEMS % V == 0 ? V : TransformVec<WIDEST, ITEMS, V / 2>::value;
};
template <int WIDEST, int ITEMS> struct TransformVec<WIDEST, ITEMS, 1> { static const int value = 1; };

template <typename T> SCANRT_DEVICE const T* offset_array(const T* p, long long k) { return IsArray<T>::value ? p + k : p; }
template <typename T> SCANRT_DEVICE T* offset_array(T* p, long long k) { return IsArray<T>::value ? p + k : p; }

// Element p of an input array, or nothing for an unused slot.
template <typename T> SCANRT_DEVICE T load_or_none(const T* a, long long p) {
    if constexpr (IsArray<T>::value) return a[p];
    else return T();
}

// VEC consecutive elements at `p` (aligned to their size), streaming.
template <typename T, int VEC>
SCANRT_DEVICE void load_vector(const T* p, T* dst) {
    if constexpr (IsArray<T>::value) {
        typedef Vec<T, VEC> V;
        V v;
        if constexpr (sizeof(V) == 16) {
            const uint4 w = load16_streaming(p);
            memcpy(&v, &w, 16);
        } else {
            v = *reinterpret_cast<const V*>(p);
        }
#pragma unroll
        for (int j = 0; j < VEC; ++j) dst[j] = v.v[j];
    }
}
template <typename T, int VEC>
SCANRT_DEVICE void store_vector(T* p, const T (&src)[VEC]) {
    if constexpr (IsArray<T>::value) {
        typedef Vec<T, VEC> V;
        V v;
#pragma unroll
        for (int j = 0; j < VEC; ++j) v.v[j] = src[j];
        if constexpr (sizeof(V) == 16) {
            uint4 w;
            memcpy(&w, &v, 16);
            store16_streaming(p, w);
        } else {
            *reinterpret_cast<V*>(p) = v;
        }
    }
}

// The inputs of a transform scan, offset like a pointer; `index` is the element index
// of a0[0].
template <typename Op, typename I0, typename I1, typename I2, typename I3>
struct Gather {
    const I0* a0;
    const I1* a1;
    const I2* a2;
    const I3* a3;
    long long index;
    SCANRT_DEVICE Gather operator+(long long k) const {
        return Gather{offset_array(a0, k), offset_array(a1, k), offset_array(a2, k), offset_array(a3, k), index + k};
    }
};

// The outputs of a transform scan, offset like a pointer.
template <typename Op, typename O0, typename O1>
struct Scatter {
    O0* d0;
    O1* d1;
    SCANRT_DEVICE Scatter operator+(long long k) const { return Scatter{offset_array(d0, k), offset_array(d1, k)}; }
};

template <typename Op, typename I0, typename I1, typename I2, typename I3, int THREADS, int ITEMS>
struct GatherRegs {
    typedef Gather<Op, I0, I1, I2, I3> Src;
    static const int WIDEST = MaxOf<MaxOf<ElementBytes<I0>::value, ElementBytes<I1>::value>::value,
                                    MaxOf<ElementBytes<I2>::value, ElementBytes<I3>::value>::value>::value;
    static const int VEC = TransformVec<WIDEST, ITEMS>::value;
    I0 r0[ITEMS];
    I1 r1[ITEMS];
    I2 r2[ITEMS];
    I3 r3[ITEMS];
    long long first;  // the element index of the tile's physical start

    // Issues the loads of tile elements [0, valid) starting at `src`.
    SCANRT_DEVICE void load(const Src& src, long long valid, int mode, int tid) {
        first = src.index;
        if (mode == SCANRT_MODE_VECTOR) {
#pragma unroll
            for (int r = 0; r < ITEMS / VEC; ++r) {
                const int e = (r * THREADS + tid) * VEC;
                load_vector<I0, VEC>(src.a0 + e, r0 + r * VEC);
                load_vector<I1, VEC>(offset_array(src.a1, e), r1 + r * VEC);
                load_vector<I2, VEC>(offset_array(src.a2, e), r2 + r * VEC);
                load_vector<I3, VEC>(offset_array(src.a3, e), r3 + r * VEC);
            }
        } else {
#pragma unroll
            for (int r = 0; r < ITEMS; ++r) {
                const int e = r * THREADS + tid;
                if (mode == SCANRT_MODE_SCALAR || e < valid) {
                    r0[r] = src.a0[e];
                    if constexpr (IsArray<I1>::value) r1[r] = src.a1[e];
                    if constexpr (IsArray<I2>::value) r2[r] = src.a2[e];
                    if constexpr (IsArray<I3>::value) r3[r] = src.a3[e];
                }
            }
        }
    }

    // Register i, loaded from physical tile offset p.
    SCANRT_DEVICE typename Op::T element(int i, int p) const { return Op::load(first + p, r0[i], r1[i], r2[i], r3[i]); }

    // As TileRegs::fold, each element built by Op::load.
    template <typename Op_>
    SCANRT_DEVICE typename Op::T fold(long long valid, int mode, int tid) const {
        typename Op::T acc = Op::identity();
        if (mode == SCANRT_MODE_VECTOR) {
#pragma unroll
            for (int r = 0; r < ITEMS / VEC; ++r)
#pragma unroll
                for (int j = 0; j < VEC; ++j) acc = Op::combine(acc, element(r * VEC + j, (r * THREADS + tid) * VEC + j));
        } else {
#pragma unroll
            for (int r = 0; r < ITEMS; ++r) {
                const int p = r * THREADS + tid;
                if (mode != SCANRT_MODE_PARTIAL || p < valid) acc = Op::combine(acc, element(r, p));
            }
        }
        return acc;
    }

    // As TileRegs::stage, each element built by Op::load.
    template <typename Op_, bool REVERSE = false>
    SCANRT_DEVICE void stage(TileMatrix<typename Op::T, THREADS, ITEMS>& m, long long valid, int mode, int tid) const {
        typedef TileMatrix<typename Op::T, THREADS, ITEMS> M;
        if (mode == SCANRT_MODE_VECTOR) {
#pragma unroll
            for (int r = 0; r < ITEMS / VEC; ++r) {
                const int slot = M::template vector_slot<REVERSE, VEC>(tid * VEC, r);
#pragma unroll
                for (int j = 0; j < VEC; ++j)
                    m.cell[slot + j * M::template vector_step<REVERSE>()] = element(r * VEC + j, (r * THREADS + tid) * VEC + j);
            }
        } else {
#pragma unroll
            for (int r = 0; r < ITEMS; ++r) {
                const int p = r * THREADS + tid;
                if (p < valid) m.cell[M::index(logical_index<REVERSE>(p, valid))] = element(r, p);
                else m.cell[M::index(p)] = Op::identity();
            }
        }
    }
};

template <typename Op, typename I0, typename I1, typename I2, typename I3, int THREADS, int ITEMS>
struct RegsOf<Gather<Op, I0, I1, I2, I3>, THREADS, ITEMS> {
    typedef GatherRegs<Op, I0, I1, I2, I3, THREADS, ITEMS> Type;
};

// Stores tile elements [0, valid) from the shared matrix through Op::store.
template <bool REVERSE = false, typename Op, typename O0, typename O1, typename Acc, int THREADS, int ITEMS>
SCANRT_DEVICE void store_tile(const TileMatrix<Acc, THREADS, ITEMS>& m, Scatter<Op, O0, O1> dst, long long valid,
                              int mode, int tid) {
    typedef TileMatrix<Acc, THREADS, ITEMS> M;
    const int VEC = TransformVec<MaxOf<ElementBytes<O0>::value, ElementBytes<O1>::value>::value, ITEMS>::value;
    if (mode == SCANRT_MODE_VECTOR) {
#pragma unroll
        for (int r = 0; r < ITEMS / VEC; ++r) {
            const int p = (r * THREADS + tid) * VEC;
            const int slot = M::template vector_slot<REVERSE, VEC>(tid * VEC, r);
            O0 y0[VEC];
            O1 y1[VEC];
#pragma unroll
            for (int j = 0; j < VEC; ++j) Op::store(m.cell[slot + j * M::template vector_step<REVERSE>()], y0[j], y1[j]);
            store_vector<O0, VEC>(dst.d0 + p, y0);
            store_vector<O1, VEC>(offset_array(dst.d1, p), y1);
        }
    } else {
#pragma unroll
        for (int r = 0; r < ITEMS; ++r) {
            const int p = r * THREADS + tid;
            if (mode == SCANRT_MODE_SCALAR || p < valid) {
                O0 y0;
                O1 y1;
                Op::store(m.cell[M::index(logical_index<REVERSE>(p, valid))], y0, y1);
                dst.d0[p] = y0;
                if constexpr (IsArray<O1>::value) dst.d1[p] = y1;
            }
        }
    }
}
