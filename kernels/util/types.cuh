// scanrt kernels, level 0: element types, the host-kernel contract, and what operators
// are built from.
//
// Everything above this file is generic over `Op`, a struct with
//   typedef ... T;                 // accumulator (= output) type
//   static T identity();
//   static T combine(T a, T b);    // a comes first in sequence order
// which each kernel set's translation unit defines from the operator's definition
// (src/ops.rs: `Limits<T>` and `Wrapping<T>::U` below are what those definitions use).
// NVRTC compiles these sources without the CUDA standard headers, so fixed-width types
// are spelled out here.
#pragma once

typedef unsigned char      u8;
typedef signed char        i8;
typedef unsigned short     u16;
typedef short              i16;
typedef unsigned int       u32;
typedef int                i32;
typedef unsigned long long u64;
typedef long long          i64;
typedef unsigned int       uint32_t;
typedef unsigned long long uint64_t;
typedef long long          int64_t;

// ScanParams, LookbackHeader, FaultReport, the FLAG_* / HEADS_* / FAULT_* constants.
#include "generated/contract.cuh"

#define SCANRT_DEVICE __device__ __forceinline__

// The half types are storage types: kernels read them into float, compute in float, and
// round results to nearest even as they write them, with the PTX conversions that
// cuda_fp16.h and cuda_bf16.h wrap (NVRTC compiles these sources without those headers).
struct alignas(2) f16 {
    u16 bits;
    f16() = default;
    SCANRT_DEVICE explicit f16(float f) { asm("cvt.rn.f16.f32 %0, %1;" : "=h"(bits) : "f"(f)); }
    SCANRT_DEVICE operator float() const { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(bits)); return f; }
};
struct alignas(2) bf16 {
    u16 bits;
    bf16() = default;
    SCANRT_DEVICE explicit bf16(float f) { asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(bits) : "f"(f)); }
    // bf16 is the high half of a binary32: widening is exact.
    SCANRT_DEVICE operator float() const { return __uint_as_float((u32)bits << 16); }
};

template <typename T> struct Limits;
template <> struct Limits<i32> { static SCANRT_DEVICE i32 lowest() { return (i32)0x80000000; } static SCANRT_DEVICE i32 highest() { return 0x7fffffff; } };
template <> struct Limits<u32> { static SCANRT_DEVICE u32 lowest() { return 0u; } static SCANRT_DEVICE u32 highest() { return 0xffffffffu; } };
template <> struct Limits<i64> { static SCANRT_DEVICE i64 lowest() { return (i64)0x8000000000000000ull; } static SCANRT_DEVICE i64 highest() { return 0x7fffffffffffffffll; } };
template <> struct Limits<u64> { static SCANRT_DEVICE u64 lowest() { return 0ull; } static SCANRT_DEVICE u64 highest() { return ~0ull; } };
// Float min/max use the infinities as identities so that every finite value wins.
template <> struct Limits<float> { static SCANRT_DEVICE float lowest() { return __int_as_float(0xff800000); } static SCANRT_DEVICE float highest() { return __int_as_float(0x7f800000); } };
template <> struct Limits<double> { static SCANRT_DEVICE double lowest() { return __longlong_as_double(0xfff0000000000000ll); } static SCANRT_DEVICE double highest() { return __longlong_as_double(0x7ff0000000000000ll); } };

// Integer sum and product wrap modulo 2^bits for signed types too: operators compute in
// `Wrapping<T>::U`, the unsigned type, so there is no undefined behaviour.
template <typename T> struct Wrapping { typedef T U; };
template <> struct Wrapping<i32> { typedef u32 U; };
template <> struct Wrapping<i64> { typedef u64 U; };

// Bit casts between an accumulator and the raw 32/64-bit words the look-back publishes:
// any trivially copyable type of 4 or 8 bytes (a user-defined state included), with
// explicit rows for the built-in types.
template <int SIZE> struct WordOfSize;
template <> struct WordOfSize<4> { typedef u32 W; };
template <> struct WordOfSize<8> { typedef u64 W; };
template <typename T> struct Bits {
    typedef typename WordOfSize<sizeof(T)>::W W;
    static SCANRT_DEVICE W to(T v) { W w; memcpy(&w, &v, sizeof(W)); return w; }
    static SCANRT_DEVICE T from(W w) { T v; memcpy(&v, &w, sizeof(W)); return v; }
};
template <> struct Bits<i32>   { typedef u32 W; static SCANRT_DEVICE W to(i32 v) { return (u32)v; } static SCANRT_DEVICE i32 from(W w) { return (i32)w; } };
template <> struct Bits<u32>   { typedef u32 W; static SCANRT_DEVICE W to(u32 v) { return v; } static SCANRT_DEVICE u32 from(W w) { return w; } };
template <> struct Bits<float> { typedef u32 W; static SCANRT_DEVICE W to(float v) { return __float_as_uint(v); } static SCANRT_DEVICE float from(W w) { return __uint_as_float(w); } };
template <> struct Bits<i64>   { typedef u64 W; static SCANRT_DEVICE W to(i64 v) { return (u64)v; } static SCANRT_DEVICE i64 from(W w) { return (i64)w; } };
template <> struct Bits<u64>   { typedef u64 W; static SCANRT_DEVICE W to(u64 v) { return v; } static SCANRT_DEVICE u64 from(W w) { return w; } };
template <> struct Bits<double>{ typedef u64 W; static SCANRT_DEVICE W to(double v) { return (u64)__double_as_longlong(v); } static SCANRT_DEVICE double from(W w) { return __longlong_as_double((i64)w); } };

// A segmented scan's accumulator (the (flag, data) pairs of seed 002): `value` summarises
// a run of elements from its last segment head on, `head` says whether a head lies in
// the run. Rows, warps, tiles and the look-back combine these pairs with SegmentedOp.
template <typename T> struct Seg {
    T value;
    u32 head;
};

// The flag-pair operator: a right operand that holds a head discards the left value.
// Associative whenever Op is, and never commutative, so every level keeps operand order.
template <typename Op> struct SegmentedOp {
    typedef Seg<typename Op::T> T;
    static SCANRT_DEVICE T identity() { return T{Op::identity(), 0u}; }
    static SCANRT_DEVICE T combine(T a, T b) {
        return T{b.head ? b.value : Op::combine(a.value, b.value), a.head | b.head};
    }
};

// A value as whole 32-bit words, for values wider than 8 bytes that travel by shuffles
// or word by word (user-defined states: their size is a multiple of 4, checked by the host).
template <typename T> struct Words {
    static_assert(sizeof(T) % 4 == 0, "wide values are whole 32-bit words");
    static const int N = sizeof(T) / 4;
    u32 w[N];
    static SCANRT_DEVICE Words of(const T& v) { Words r; memcpy(r.w, &v, sizeof(T)); return r; }
    SCANRT_DEVICE T value() const { T v; memcpy(&v, w, sizeof(T)); return v; }
};

// A 16-byte-or-smaller vector of N elements, for vectorised global accesses.
template <typename T, int N> struct alignas(sizeof(T) * N) Vec { T v[N]; };
