// What the C++ harnesses (cub_bench.cu, cub_select.cu, cub_sort.cu, latency_bench.cu) share:
// a checked CUDA call, the median of per-call CUDA-event pairs and the median host time
// per call, timed as scanrt's benchmarks time.
#pragma once
#include <cuda_runtime.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
    std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); std::exit(1); } } while (0)

template <typename F>
static double median_us(F&& call, int reps, cudaStream_t s) {
    cudaEvent_t a, b;
    CHECK(cudaEventCreate(&a));
    CHECK(cudaEventCreate(&b));
    for (int i = 0; i < 3; ++i) call();  // warm-up
    std::vector<float> t;
    for (int i = 0; i < reps; ++i) {
        CHECK(cudaEventRecord(a, s));
        call();
        CHECK(cudaEventRecord(b, s));
        CHECK(cudaEventSynchronize(b));
        float ms;
        CHECK(cudaEventElapsedTime(&ms, a, b));
        t.push_back(ms * 1000.0f);
    }
    std::sort(t.begin(), t.end());
    CHECK(cudaEventDestroy(a));
    CHECK(cudaEventDestroy(b));
    return t[t.size() / 2];
}

// Median host microseconds per call, measured as bench_compare's host_time_us does: 10
// batches of 100 calls, the stream drained between batches so the launch queue never
// blocks the caller.
template <typename F>
static double host_us(F&& call, cudaStream_t s) {
    std::vector<double> t;
    for (int batch = 0; batch < 10; ++batch) {
        for (int i = 0; i < 100; ++i) {
            auto start = std::chrono::steady_clock::now();
            call();
            t.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count());
        }
        CHECK(cudaStreamSynchronize(s));
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}
