// scanrt kernels, level 4 (beside the scans): segments given by offsets (a CSR array:
// segment i is [offsets[i], offsets[i+1])) become the bit flags the segmented scans read.
// Each offset below n sets its element's bit, with one atomic OR per offset: a prepass of
// count atomics, where reading the offsets inside every tile would cost each tile a
// binary search. Offsets at or past n, and negative ones, set nothing; repeated offsets
// (empty segments) set one bit. The host zeroes the flags first.
#pragma once
#include "util/types.cuh"

#define SCANRT_OFFSETS_U32 0
#define SCANRT_OFFSETS_I32 1
#define SCANRT_OFFSETS_64  2  // u64 and i64: a negative i64 reads as 2^63 or more, past n

SCANRT_DEVICE void offsets_to_head_bits(const void* offsets, long long count, long long n, u32* bits, u32 kind) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride) {
        u64 at;
        if (kind == SCANRT_OFFSETS_64) {
            at = ((const u64*)offsets)[i];
        } else if (kind == SCANRT_OFFSETS_I32) {
            const i32 v = ((const i32*)offsets)[i];
            at = v < 0 ? ~0ull : (u64)v;
        } else {
            at = ((const u32*)offsets)[i];
        }
        if (at < (u64)n) atomicOr(bits + (at >> 5), 1u << (at & 31));
    }
}
