// CUB's side of the sort benchmark (bench/run_primitives_bench.sh sort):
// DeviceRadixSort::SortKeys (u32, i32, u64, f32 keys), SortKeysDescending (u32) and
// SortPairs (u32 keys and values),
// timed as scanrt is (median of per-call CUDA-event pairs; temporary storage allocated
// once). Keys: uniform random bits (the same generator as benches/compare/sort.rs).
// Prints CSV lines  impl,dtype,n,microseconds.
#include <cub/device/device_radix_sort.cuh>
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "cub_timing.cuh"

// Keys with uniform random bits: f32 keys are random bit patterns too (NaNs included,
// as CUB and scanrt both sort every pattern).
template <typename K>
static std::vector<K> random_keys(size_t n) {
    std::vector<K> keys(n);
    unsigned long long state = 12345;
    for (size_t i = 0; i < n; ++i) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        unsigned long long bits = state ^ (state >> 29);
        std::memcpy(&keys[i], &bits, sizeof(K));
    }
    return keys;
}

template <typename K, bool PAIRS, bool DESC = false>
static void run(const char* name, size_t n, cudaStream_t s) {
    std::vector<K> keys = random_keys<K>(n);
    K *in, *out;
    unsigned *vin = nullptr, *vout = nullptr;
    CHECK(cudaMalloc(&in, n * sizeof(K)));
    CHECK(cudaMalloc(&out, n * sizeof(K)));
    CHECK(cudaMemcpy(in, keys.data(), n * sizeof(K), cudaMemcpyHostToDevice));
    if (PAIRS) {
        CHECK(cudaMalloc(&vin, n * 4));
        CHECK(cudaMalloc(&vout, n * 4));
        CHECK(cudaMemset(vin, 1, n * 4));
    }
    size_t bytes = 0;
    void* temp = nullptr;
    if (PAIRS) cub::DeviceRadixSort::SortPairs(nullptr, bytes, in, out, vin, vout, (int64_t)n, 0, 8 * (int)sizeof(K), s);
    else if (DESC) cub::DeviceRadixSort::SortKeysDescending(nullptr, bytes, in, out, (int64_t)n, 0, 8 * (int)sizeof(K), s);
    else cub::DeviceRadixSort::SortKeys(nullptr, bytes, in, out, (int64_t)n, 0, 8 * (int)sizeof(K), s);
    CHECK(cudaMalloc(&temp, bytes));
    const int reps = n >= (1u << 26) ? 10 : 50;
    double us = median_us([&] {
        size_t t = bytes;
        if (PAIRS) cub::DeviceRadixSort::SortPairs(temp, t, in, out, vin, vout, (int64_t)n, 0, 8 * (int)sizeof(K), s);
        else if (DESC) cub::DeviceRadixSort::SortKeysDescending(temp, t, in, out, (int64_t)n, 0, 8 * (int)sizeof(K), s);
        else cub::DeviceRadixSort::SortKeys(temp, t, in, out, (int64_t)n, 0, 8 * (int)sizeof(K), s);
    }, reps, s);
    std::printf("cub_%s,%s,%zu,%.3f\n", PAIRS ? "sort_pairs" : DESC ? "sort_keys_descending" : "sort_keys", name, n, us);
    CHECK(cudaFree(temp));
    CHECK(cudaFree(in));
    CHECK(cudaFree(out));
    if (PAIRS) {
        CHECK(cudaFree(vin));
        CHECK(cudaFree(vout));
    }
}

int main() {
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    for (size_t n : {size_t(1) << 20, size_t(1) << 24, size_t(1) << 28}) {
        run<unsigned, false>("u32", n, s);
        run<unsigned, true>("u32", n, s);
        run<unsigned, false, true>("u32", n, s);
        run<int, false>("i32", n, s);
        run<unsigned long long, false>("u64", n, s);
        run<float, false>("f32", n, s);
    }
    return 0;
}
