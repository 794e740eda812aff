// An application built with `nvcc --default-stream per-thread`: 8 host threads pass NULL
// (each thread's own default stream there) to scanrt_scan_device, 200 u32 inclusive sums
// of 1-4 Mi elements per thread, every 8th checked against a sequential scan. The header
// maps NULL to cudaStreamPerThread in such a translation unit; the threads' streams share
// that handle and must still get a workspace each. Exits 0 with 0 mismatches, and never
// hangs (ctest's timeout).
#include <cuda_runtime.h>
#include <scanrt.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#ifndef CUDA_API_PER_THREAD_DEFAULT_STREAM
#error "build with --default-stream per-thread"
#endif

#define CUDA_CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
    std::fprintf(stderr, "%s failed: %s\n", #x, cudaGetErrorString(e_)); std::exit(1); } } while (0)

int main() {
    scanrt_context* ctx = nullptr;
    if (scanrt_context_create(SCANRT_BACKEND_GPU, 0, &ctx) != SCANRT_STATUS_OK) {
        std::fprintf(stderr, "no GPU context: %s\n", scanrt_last_error_message());
        return 1;
    }
    std::atomic<int> mismatches{0}, failures{0}, checks{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t) {
        threads.emplace_back([&, t] {
            const size_t max_n = 4u << 20;
            unsigned *in, *out;
            CUDA_CHECK(cudaMalloc(&in, max_n * sizeof(unsigned)));
            CUDA_CHECK(cudaMalloc(&out, max_n * sizeof(unsigned)));
            std::vector<unsigned> host(max_n), got(max_n);
            unsigned long long rng = 0x9E3779B97F4A7C15ull * (t + 1);
            scanrt_scan_desc desc;
            scanrt_scan_desc_init(&desc);
            for (int call = 0; call < 200; ++call) {
                rng = rng * 6364136223846793005ull + 1442695040888963407ull;
                const size_t n = (1u << 20) + (size_t)((rng >> 33) % (3u << 20));
                const bool check = call % 8 == 0;
                if (check) {
                    for (size_t i = 0; i < n; ++i) host[i] = (unsigned)((i * 2654435761u + call) >> 20);
                    CUDA_CHECK(cudaMemcpy(in, host.data(), n * sizeof(unsigned), cudaMemcpyHostToDevice));
                }
                if (scanrt_scan_device(ctx, NULL, in, SCANRT_DTYPE_U32, out, SCANRT_DTYPE_U32, n, &desc, NULL) !=
                    SCANRT_STATUS_OK) {
                    std::fprintf(stderr, "thread %d call %d: %s\n", t, call, scanrt_last_error_message());
                    ++failures;
                    return;
                }
                if (check) {
                    CUDA_CHECK(cudaMemcpy(got.data(), out, n * sizeof(unsigned), cudaMemcpyDeviceToHost));
                    unsigned running = 0;
                    for (size_t i = 0; i < n; ++i) {
                        running += host[i];
                        if (got[i] != running) { ++mismatches; break; }
                    }
                    ++checks;
                }
            }
            CUDA_CHECK(cudaStreamSynchronize(cudaStreamPerThread));
            CUDA_CHECK(cudaFree(in));
            CUDA_CHECK(cudaFree(out));
        });
    }
    for (auto& th : threads) th.join();
    scanrt_context_destroy(ctx);
    std::printf("per-thread default streams: 8 threads x 200 scans, %d checks, %d mismatches, %d failed calls\n",
                checks.load(), mismatches.load(), failures.load());
    return mismatches == 0 && failures == 0 ? 0 : 1;
}
