// CUB's side of the selection benchmark (bench/run_select_bench.sh): DeviceSelect::Flagged,
// DeviceSelect::If, DevicePartition::Flagged, DeviceSelect::Unique and
// DeviceRunLengthEncode::Encode (u32 lengths), and a device-to-
// device copy, timed as scanrt is (median of per-call CUDA-event pairs; temporary storage
// allocated once). Data: byte flags set with probability 1/2, values 0..99 (If keeps
// x < 50), runs of mean length 2 for Unique. Prints CSV lines  impl,dtype,n,microseconds.
#include <cub/device/device_partition.cuh>
#include <cub/device/device_run_length_encode.cuh>
#include <cub/device/device_select.cuh>
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "cub_timing.cuh"

struct Below50 {
    template <typename T> __host__ __device__ bool operator()(const T& x) const { return x < T(50); }
};

template <typename T>
static void run(const char* name, size_t n, cudaStream_t s) {
    std::vector<T> values(n);
    std::vector<unsigned char> flags(n);
    unsigned long long state = 12345;
    T run_value = 0;
    for (size_t i = 0; i < n; ++i) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        flags[i] = (state >> 33) & 1;
        if ((state >> 40) & 1) run_value = T((state >> 45) % 100);
        values[i] = run_value;  // runs of mean length 2, values 0..99
    }
    T *in, *out;
    unsigned char* f;
    unsigned long long* count;
    CHECK(cudaMalloc(&in, n * sizeof(T)));
    CHECK(cudaMalloc(&out, n * sizeof(T)));
    CHECK(cudaMalloc(&f, n));
    CHECK(cudaMalloc(&count, 8));
    CHECK(cudaMemcpy(in, values.data(), n * sizeof(T), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(f, flags.data(), n, cudaMemcpyHostToDevice));
    size_t bytes = 0, b;
    void* temp = nullptr;
    cub::DeviceSelect::Flagged(nullptr, b, in, f, out, count, (int64_t)n, s); bytes = std::max(bytes, b);
    cub::DeviceSelect::If(nullptr, b, in, out, count, (int64_t)n, Below50(), s); bytes = std::max(bytes, b);
    cub::DevicePartition::Flagged(nullptr, b, in, f, out, count, (int64_t)n, s); bytes = std::max(bytes, b);
    cub::DeviceSelect::Unique(nullptr, b, in, out, count, (int64_t)n, s); bytes = std::max(bytes, b);
    unsigned* lengths;
    CHECK(cudaMalloc(&lengths, n * sizeof(unsigned)));
    cub::DeviceRunLengthEncode::Encode(nullptr, b, in, out, lengths, count, (int64_t)n, s); bytes = std::max(bytes, b);
    CHECK(cudaMalloc(&temp, bytes));
    const int reps = n >= (1u << 26) ? 10 : 50;
    auto line = [&](const char* impl, double us) { std::printf("%s,%s,%zu,%.3f\n", impl, name, n, us); };
    line("cub_select_flagged", median_us([&] { size_t t = bytes; cub::DeviceSelect::Flagged(temp, t, in, f, out, count, (int64_t)n, s); }, reps, s));
    line("cub_select_if", median_us([&] { size_t t = bytes; cub::DeviceSelect::If(temp, t, in, out, count, (int64_t)n, Below50(), s); }, reps, s));
    line("cub_partition_flagged", median_us([&] { size_t t = bytes; cub::DevicePartition::Flagged(temp, t, in, f, out, count, (int64_t)n, s); }, reps, s));
    line("cub_unique", median_us([&] { size_t t = bytes; cub::DeviceSelect::Unique(temp, t, in, out, count, (int64_t)n, s); }, reps, s));
    line("cub_run_length_encode", median_us([&] { size_t t = bytes; cub::DeviceRunLengthEncode::Encode(temp, t, in, out, lengths, count, (int64_t)n, s); }, reps, s));
    CHECK(cudaFree(lengths));
    CHECK(cudaFree(temp));
    CHECK(cudaFree(in));
    CHECK(cudaFree(out));
    CHECK(cudaFree(f));
    CHECK(cudaFree(count));
}

int main() {
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    for (size_t n : {size_t(1) << 20, size_t(1) << 24, size_t(1) << 28}) {
        run<unsigned>("u32", n, s);
        run<float>("f32", n, s);
        run<unsigned long long>("u64", n, s);
    }
    return 0;
}
