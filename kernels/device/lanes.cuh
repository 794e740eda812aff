// scanrt kernels, level 4: rows of lanes. The narrow columns of a row-major matrix (rows
// of 8 or 16 bytes, src/scan/strided/lanes.rs) run the flat scan's kernels with a row as
// one element (`Lanes`) and the operator applied lane by lane (`LanesOp`), each lane its
// own column: the rows are then read and written as plain consecutive elements, in
// 16-byte vectors where the launch flags say the arrays are aligned.
//
// Only the translation units of such sets include this file (before their entry points:
// src/scan/translation_unit.rs), so the other sets' sources, and their cached binaries,
// do not depend on it.
#pragma once
#include "device/scan_params.cuh"

// A row of N elements, one per column. Aligned as one element: a view's rows need not be
// 16-byte aligned.
template <typename E, int N> struct Lanes {
    typedef E Element;
    E v[N];
    static SCANRT_DEVICE Lanes broadcast(E x) {
        Lanes r;
#pragma unroll
        for (int i = 0; i < N; ++i) r.v[i] = x;
        return r;
    }
};

// `Op` applied lane by lane: each lane combines in sequence order, so associativity,
// commutativity and each lane's association order are Op's.
template <typename Op, int N> struct LanesOp {
    typedef Lanes<typename Op::T, N> T;
    static const bool COMMUTATIVE = Op::COMMUTATIVE;
    static SCANRT_DEVICE T identity() { return T::broadcast(Op::identity()); }
    static SCANRT_DEVICE T combine(T a, T b) {
        T r;
#pragma unroll
        for (int i = 0; i < N; ++i) r.v[i] = Op::combine(a.v[i], b.v[i]);
        return r;
    }
};

// The initial value of a scan of rows of lanes: an initial value travels as the bits of
// one element (`init_bits`) and starts every lane; a carry in memory is a whole row (never
// a fold of several: FLAG_INIT_FOLD is a scan across GPUs', which takes no rows of lanes).
template <typename LanesOpT>
SCANRT_DEVICE typename LanesOpT::T lanes_initial_value(unsigned long long init_bits, unsigned flags) {
    typedef typename LanesOpT::T Row;
    typedef typename Row::Element E;
    if (!(flags & FLAG_HAS_INIT)) return LanesOpT::identity();
    if (!(flags & FLAG_INIT_IN_MEMORY)) return Row::broadcast(Bits<E>::from((typename Bits<E>::W)init_bits));
    Row v;
    memcpy(&v, (const void*)init_bits, sizeof(Row));
    return v;
}

// What every kernel of the set reads its initial value with (device/scan_params.cuh's
// `initial_value`), specialised for the set's operator `OP`.
#define SCANRT_LANES_INITIAL_VALUE(OP)                                                                 \
    template <>                                                                                        \
    SCANRT_DEVICE OP::T initial_value<OP>(unsigned long long init_bits, unsigned flags) {              \
        return lanes_initial_value<OP>(init_bits, flags);                                             \
    }
