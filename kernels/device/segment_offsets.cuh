// scanrt kernels, level 4 (beside the scans): segments given by offsets (a CSR array:
// segment i is [offsets[i], offsets[i+1])) become the bit flags the segmented scans read.
// Each offset below n sets its element's bit, with one atomic OR per offset: a prepass of
// count atomics, where reading the offsets inside every tile would cost each tile a
// binary search. Offsets at or past n, and negative ones, set nothing; repeated offsets
// (empty segments) set one bit. The host zeroes the flags first.
//
// With carries per segment (FLAG_SEGMENT_CARRIES, block/segment_carries.cuh) the prepass
// also writes the segment table after the flags, and the totals of empty segments: their
// initial states, which no element of the scan reaches.
#pragma once
#include "block/segment_carries.cuh"
#include "device/scan_params.cuh"

template <typename Op>
SCANRT_DEVICE void offsets_to_head_bits(const void* offsets, long long count, long long n, u32* bits, u32 kind,
                                        u32 flags, unsigned long long init_bits, unsigned long long carry_out,
                                        const StateBytes& wide_init) {
    typedef typename Op::T Acc;
    const long long stride = (long long)gridDim.x * blockDim.x;
    const long long first = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    for (long long i = first; i < count; i += stride) {
        const u64 at = read_offset(offsets, kind, i);
        if (at < (u64)n) atomicOr(bits + (at >> 5), 1u << (at & 31));
    }
    if (!(flags & FLAG_SEGMENT_CARRIES)) return;
    if (first == 0)
        *(SegmentTable*)((char*)bits + segment_table_offset(n)) = SegmentTable{(u64)offsets, count, kind, 0u};
    if (carry_out == 0) return;
    const bool inits = flags & FLAG_INIT_IN_MEMORY;
    // The scalar initial value: its bits in `init_bits`, or a wide state's bytes.
    const Acc init = inits ? Op::identity()
                           : initial_value<Op>(sizeof(Acc) == 4 || sizeof(Acc) == 8 ? init_bits : (unsigned long long)&wide_init, flags);
    for (long long s = first; s + 1 < count; s += stride)
        if (read_offset(offsets, kind, s) >= read_offset(offsets, kind, s + 1) || read_offset(offsets, kind, s) >= (u64)n)
            ((Acc*)carry_out)[s] = inits ? ((const Acc*)init_bits)[s] : init;
}
