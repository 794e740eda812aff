// scanrt kernels, level 2: a warp scans one column of 32 values with shuffles.
//
// Kogge-Stone over shfl_up keeps sequence order (the lower lane's value is always the
// left operand), so the result is the same for commutative and non-commutative
// operators, and its association order is fixed (bitwise reproducible for floats).
#pragma once
#include "util/types.cuh"

#define SCANRT_FULL_MASK 0xffffffffu

// Values of 4 or 8 bytes travel as one or two 32-bit shuffles, wider ones word by word;
// `shuffle` moves one 32-bit word.
template <typename T, typename Shuffle>
SCANRT_DEVICE T shuffle_words(T v, Shuffle shuffle) {
    if constexpr (sizeof(T) == 8) {
        u64 w = Bits<T>::to(v);
        const u32 lo = shuffle((u32)w), hi = shuffle((u32)(w >> 32));
        return Bits<T>::from((typename Bits<T>::W)(((u64)hi << 32) | lo));
    } else if constexpr (sizeof(T) == 4) {
        return Bits<T>::from((typename Bits<T>::W)shuffle((u32)Bits<T>::to(v)));
    } else {
        Words<T> w = Words<T>::of(v);
#pragma unroll
        for (int i = 0; i < Words<T>::N; ++i) w.w[i] = shuffle(w.w[i]);
        return w.value();
    }
}

template <typename T>
SCANRT_DEVICE T shfl_up(T v, int delta) {
    return shuffle_words(v, [delta](u32 w) { return __shfl_up_sync(SCANRT_FULL_MASK, w, delta); });
}

template <typename T>
SCANRT_DEVICE T shfl_down(T v, int delta) {
    return shuffle_words(v, [delta](u32 w) { return __shfl_down_sync(SCANRT_FULL_MASK, w, delta); });
}

template <typename T>
SCANRT_DEVICE T shfl_idx(T v, int src) {
    return shuffle_words(v, [src](u32 w) { return __shfl_sync(SCANRT_FULL_MASK, w, src); });
}

// Segment pairs travel as their value and their head bit.
template <typename T>
SCANRT_DEVICE Seg<T> shfl_up(Seg<T> v, int delta) {
    return Seg<T>{shfl_up(v.value, delta), __shfl_up_sync(SCANRT_FULL_MASK, v.head, delta)};
}
template <typename T>
SCANRT_DEVICE Seg<T> shfl_idx(Seg<T> v, int src) {
    return Seg<T>{shfl_idx(v.value, src), __shfl_sync(SCANRT_FULL_MASK, v.head, src)};
}

// Inclusive scan of lanes 0 .. LANES - 1 (what lanes from LANES on get is no scan of
// anything); all lanes must call it.
template <typename Op, int LANES = 32>
SCANRT_DEVICE typename Op::T warp_inclusive_scan(typename Op::T v, int lane) {
#pragma unroll
    for (int d = 1; d < LANES; d <<= 1) {
        // Every lane combines and selects: a branch around the combine would issue the
        // same instructions for the warp, plus the branch's own.
        const typename Op::T combined = Op::combine(shfl_up(v, d), v);
        v = lane >= d ? combined : v;
    }
    return v;
}

// Reduction of the 32 lanes in lane order, returned to every lane.
template <typename Op>
SCANRT_DEVICE typename Op::T warp_reduce(typename Op::T v, int lane) {
    return shfl_idx(warp_inclusive_scan<Op>(v, lane), 31);
}
