// The comparison side of scanrt's benchmark: CUB DeviceScan and a device-to-device
// cudaMemcpy, timed the same way as scanrt (median of per-call CUDA-event pairs).
// Built with nvcc on the GPU machine by bench/run_gpu_bench.sh; prints CSV lines
//   impl,dtype,n,microseconds
// and, at n = 2^16, back-to-back and graph-replay per-call costs.
#include <cub/device/device_scan.cuh>
#include <cuda_runtime.h>
#include <cuda/std/functional>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "cub_timing.cuh"

__global__ void empty_kernel(unsigned long long) {}

template <typename T>
__global__ void fill(T* p, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        p[i] = (T)((i * 2654435761u) >> 28);
}

template <typename T>
static void bench_type(const char* name, const std::vector<size_t>& sizes, cudaStream_t s) {
    size_t max_n = *std::max_element(sizes.begin(), sizes.end());
    T *in, *out;
    CHECK(cudaMalloc(&in, max_n * sizeof(T)));
    CHECK(cudaMalloc(&out, max_n * sizeof(T)));
    fill<<<1024, 256, 0, s>>>(in, max_n);
    size_t temp_bytes = 0;
    CHECK(cub::DeviceScan::InclusiveSum(nullptr, temp_bytes, in, out, max_n, s));
    void* temp;
    CHECK(cudaMalloc(&temp, temp_bytes));
    for (size_t n : sizes) {
        int reps = n <= (1u << 22) ? 200 : (n <= (1u << 27) ? 30 : 10);
        double cub_us = median_us([&] {
            size_t tb = temp_bytes;
            CHECK(cub::DeviceScan::InclusiveSum(temp, tb, in, out, n, s));
        }, reps, s);
        double cub_ex_us = median_us([&] {
            size_t tb = temp_bytes;
            CHECK(cub::DeviceScan::ExclusiveSum(temp, tb, in, out, n, s));
        }, reps, s);
        double copy_us = median_us([&] { CHECK(cudaMemcpyAsync(out, in, n * sizeof(T), cudaMemcpyDeviceToDevice, s)); }, reps, s);
        std::printf("cub_inclusive,%s,%zu,%.3f\ncub_exclusive,%s,%zu,%.3f\nmemcpy,%s,%zu,%.3f\n", name, n, cub_us, name, n, cub_ex_us, name, n, copy_us);
    }
    // Small-input costs at n = 2^16: 1000 back-to-back calls, and a replayed graph.
    if (std::strcmp(name, "u32") == 0) {
        const size_t n = 1 << 16;
        const int calls = 1000;
        cudaEvent_t a, b;
        CHECK(cudaEventCreate(&a));
        CHECK(cudaEventCreate(&b));
        size_t tb = temp_bytes;
        CHECK(cub::DeviceScan::InclusiveSum(temp, tb, in, out, n, s));
        CHECK(cudaStreamSynchronize(s));
        CHECK(cudaEventRecord(a, s));
        for (int i = 0; i < calls; ++i) CHECK(cub::DeviceScan::InclusiveSum(temp, tb, in, out, n, s));
        CHECK(cudaEventRecord(b, s));
        CHECK(cudaEventSynchronize(b));
        float ms;
        CHECK(cudaEventElapsedTime(&ms, a, b));
        std::printf("cub_back_to_back,u32,%zu,%.3f\n", n, ms * 1000.0 / calls);
        cudaGraph_t g;
        cudaGraphExec_t ge;
        CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
        for (int i = 0; i < 100; ++i) CHECK(cub::DeviceScan::InclusiveSum(temp, tb, in, out, n, s));
        CHECK(cudaStreamEndCapture(s, &g));
        CHECK(cudaGraphInstantiate(&ge, g, 0));
        CHECK(cudaGraphLaunch(ge, s));
        CHECK(cudaStreamSynchronize(s));
        CHECK(cudaEventRecord(a, s));
        for (int r = 0; r < 10; ++r) CHECK(cudaGraphLaunch(ge, s));
        CHECK(cudaEventRecord(b, s));
        CHECK(cudaEventSynchronize(b));
        CHECK(cudaEventElapsedTime(&ms, a, b));
        std::printf("cub_graph,u32,%zu,%.3f\n", n, ms * 1000.0 / 1000);
        // Host time per call: CUB's (two launches), and the runtime's launch of an empty
        // kernel, the floor of any call that launches one (compare bench_compare's
        // empty_launch_host_time, the same floor through the driver API).
        std::printf("cub_host_time,u32,%zu,%.3f\n", n, host_us([&] {
            CHECK(cub::DeviceScan::InclusiveSum(temp, tb, in, out, n, s));
        }, s));
        std::printf("runtime_empty_launch_host_time,u32,%zu,%.3f\n", n, host_us([&] {
            empty_kernel<<<1, 32, 0, s>>>(0);
        }, s));
        CHECK(cudaGetLastError());
    }
    CHECK(cudaFree(temp));
    CHECK(cudaFree(in));
    CHECK(cudaFree(out));
}

template <typename T>
__global__ void fill_keys(T* p, size_t n, size_t segment) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        p[i] = (T)(i / segment);
}

// InclusiveSumByKey over u32 values with u32 keys in runs of 1024 (scanrt's segmented
// benchmark uses the same segments), at 2^20, 2^24 and 2^28.
static void bench_by_key(cudaStream_t s) {
    const size_t max_n = size_t(1) << 28;
    unsigned *keys, *in, *out;
    CHECK(cudaMalloc(&keys, max_n * 4));
    CHECK(cudaMalloc(&in, max_n * 4));
    CHECK(cudaMalloc(&out, max_n * 4));
    fill<<<1024, 256, 0, s>>>(in, max_n);
    fill_keys<<<1024, 256, 0, s>>>(keys, max_n, 1024);
    size_t temp_bytes = 0;
    CHECK(cub::DeviceScan::InclusiveSumByKey(nullptr, temp_bytes, keys, in, out, max_n, cuda::std::equal_to<>{}, s));
    void* temp;
    CHECK(cudaMalloc(&temp, temp_bytes));
    const size_t sizes[] = {size_t(1) << 20, size_t(1) << 24, size_t(1) << 28};
    auto run = [&](const char* label, size_t n) {
        int reps = n <= (1u << 22) ? 200 : (n <= (1u << 27) ? 30 : 10);
        double us = median_us([&] {
            size_t tb = temp_bytes;
            CHECK(cub::DeviceScan::InclusiveSumByKey(temp, tb, keys, in, out, n, cuda::std::equal_to<>{}, s));
        }, reps, s);
        std::printf("%s,u32,%zu,%.3f\n", label, n, us);
    };
    for (size_t n : sizes) run("cub_by_key", n);
    // The segments of scanrt's offsets benchmark (benches/compare/features.rs: lengths 1 to
    // 10^4 from the same generator), as keys: CUB 3.0 (CUDA 13.0) has no scan by offsets
    // (DeviceSegmentedScan came with CCCL 3.3).
    for (size_t n : sizes) {
        std::vector<unsigned> host(n);
        unsigned long long state = 0x0FF5E7ull;
        size_t at = 0;
        for (unsigned segment = 0; at < n; segment++) {
            state = state * 6364136223846793005ull + 1442695040888963407ull;
            const size_t len = 1 + (state >> 33) % 10000;
            for (size_t i = at; i < at + len && i < n; i++) host[i] = segment;
            at += len;
        }
        CHECK(cudaMemcpy(keys, host.data(), n * 4, cudaMemcpyHostToDevice));
        run("cub_by_key_offsets", n);
    }
    CHECK(cudaFree(temp));
    CHECK(cudaFree(keys));
    CHECK(cudaFree(in));
    CHECK(cudaFree(out));
}

int main(int argc, char** argv) {
    // argv: dtype list and sizes, e.g. "u32,f32,u64,f64" "1024,1048576"
    if (argc < 3) { std::fprintf(stderr, "usage: cub_bench DTYPES SIZES\n"); return 2; }
    std::vector<size_t> sizes;
    for (char* tok = std::strtok(argv[2], ","); tok; tok = std::strtok(nullptr, ",")) sizes.push_back(std::strtoull(tok, nullptr, 10));
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    std::string types = argv[1];
    if (types.find("u32") != std::string::npos) bench_type<unsigned>("u32", sizes, s);
    if (types.find("f32") != std::string::npos) bench_type<float>("f32", sizes, s);
    if (types.find("u64") != std::string::npos) bench_type<unsigned long long>("u64", sizes, s);
    if (types.find("f64") != std::string::npos) bench_type<double>("f64", sizes, s);
    bench_by_key(s);
    return 0;
}
