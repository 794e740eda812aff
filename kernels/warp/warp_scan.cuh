// scanrt kernels, level 2: a warp scans one column of 32 values with shuffles.
//
// Kogge-Stone over shfl_up keeps sequence order (the lower lane's value is always the
// left operand), so the result is the same for commutative and non-commutative
// operators, and its association order is fixed (bitwise reproducible for floats).
#pragma once
#include "util/types.cuh"

#define SCANRT_FULL_MASK 0xffffffffu

// Values of 4 or 8 bytes travel as one or two 32-bit shuffles, wider ones word by word.
template <typename T>
SCANRT_DEVICE T shfl_up(T v, int delta) {
    if constexpr (sizeof(T) == 8) {
        u64 w = Bits<T>::to(v);
        u32 lo = __shfl_up_sync(SCANRT_FULL_MASK, (u32)w, delta);
        u32 hi = __shfl_up_sync(SCANRT_FULL_MASK, (u32)(w >> 32), delta);
        return Bits<T>::from((typename Bits<T>::W)(((u64)hi << 32) | lo));
    } else if constexpr (sizeof(T) == 4) {
        return Bits<T>::from((typename Bits<T>::W)__shfl_up_sync(SCANRT_FULL_MASK, (u32)Bits<T>::to(v), delta));
    } else {
        Words<T> w = Words<T>::of(v);
#pragma unroll
        for (int i = 0; i < Words<T>::N; ++i) w.w[i] = __shfl_up_sync(SCANRT_FULL_MASK, w.w[i], delta);
        return w.value();
    }
}

template <typename T>
SCANRT_DEVICE T shfl_idx(T v, int src) {
    if constexpr (sizeof(T) == 8) {
        u64 w = Bits<T>::to(v);
        u32 lo = __shfl_sync(SCANRT_FULL_MASK, (u32)w, src);
        u32 hi = __shfl_sync(SCANRT_FULL_MASK, (u32)(w >> 32), src);
        return Bits<T>::from((typename Bits<T>::W)(((u64)hi << 32) | lo));
    } else if constexpr (sizeof(T) == 4) {
        return Bits<T>::from((typename Bits<T>::W)__shfl_sync(SCANRT_FULL_MASK, (u32)Bits<T>::to(v), src));
    } else {
        Words<T> w = Words<T>::of(v);
#pragma unroll
        for (int i = 0; i < Words<T>::N; ++i) w.w[i] = __shfl_sync(SCANRT_FULL_MASK, w.w[i], src);
        return w.value();
    }
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
