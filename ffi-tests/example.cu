// A CUDA application using scanrt with its own memory and its own stream: cudaMalloc'd
// buffers, a cudaStream_t, a fill kernel of its own, then scans, a stream compaction and
// an argsort through scanrt's C ABI, each checked against a sequential loop on the host.
#include <cuda_runtime.h>
#include <scanrt.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#define CUDA_CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
    std::fprintf(stderr, "%s failed: %s\n", #x, cudaGetErrorString(e_)); std::exit(1); } } while (0)
#define SCANRT_CHECK(x) do { scanrt_status s_ = (x); if (s_ != SCANRT_STATUS_OK) { \
    std::fprintf(stderr, "%s failed: %s: %s\n", #x, scanrt_status_string(s_), scanrt_last_error_message()); std::exit(1); } } while (0)

__global__ void fill(unsigned* p, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        p[i] = (unsigned)((i * 2654435761u) >> 28);
}

static const char* algorithm_name(int a) {
    switch (a) {
        case SCANRT_ALGORITHM_SINGLE_PASS: return "single-pass";
        case SCANRT_ALGORITHM_MATRIX: return "matrix";
        case SCANRT_ALGORITHM_HOST: return "host";
        default: return "?";
    }
}

int main() {
    const size_t n = (1u << 24) + 3;
    unsigned *in, *out;
    CUDA_CHECK(cudaMalloc(&in, n * sizeof(unsigned)));
    CUDA_CHECK(cudaMalloc(&out, n * sizeof(unsigned)));
    cudaStream_t stream;
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    fill<<<512, 256, 0, stream>>>(in, n);
    CUDA_CHECK(cudaGetLastError());

    scanrt_context* ctx = nullptr;
    SCANRT_CHECK(scanrt_context_create(SCANRT_BACKEND_GPU, 0, &ctx));

    std::vector<unsigned> host_in(n), got(n), want(n);
    CUDA_CHECK(cudaMemcpyAsync(host_in.data(), in, n * sizeof(unsigned), cudaMemcpyDeviceToHost, stream));
    CUDA_CHECK(cudaStreamSynchronize(stream));

    int failures = 0;
    for (int variant = 0; variant < 2; ++variant) {
        scanrt_scan_desc desc;
        SCANRT_CHECK(scanrt_scan_desc_init(&desc));
        if (variant == 1) {  // exclusive max seeded with 3
            desc.op = SCANRT_OP_MAX;
            desc.inclusive = 0;
            desc.has_init = 1;
            desc.init.u32 = 3;
        }
        scanrt_scan_info info; scanrt_scan_info_init(&info);
        SCANRT_CHECK(scanrt_scan_device(ctx, stream, in, SCANRT_DTYPE_U32, out, SCANRT_DTYPE_U32, n, &desc, &info));
        CUDA_CHECK(cudaMemcpyAsync(got.data(), out, n * sizeof(unsigned), cudaMemcpyDeviceToHost, stream));
        CUDA_CHECK(cudaStreamSynchronize(stream));

        unsigned running = variant == 0 ? 0u : 3u;
        for (size_t i = 0; i < n; ++i) {
            unsigned next = variant == 0 ? running + host_in[i] : (host_in[i] > running ? host_in[i] : running);
            want[i] = variant == 0 ? next : running;
            running = next;
        }
        size_t bad = 0;
        for (size_t i = 0; i < n; ++i) bad += got[i] != want[i];
        std::printf("example_cuda: %s over %zu u32 ran %s: %zu mismatches\n", variant == 0 ? "inclusive sum" : "exclusive max",
                    n, algorithm_name(info.algorithm), bad);
        failures += bad != 0;
    }
    {
        // Stream compaction on the same stream by a predicate of the application's own
        // (compiled once by NVRTC): keep the values with bit 2 set, about half, with the
        // count left in device memory for the next kernel; copied back here only to check.
        scanrt_stream* s = nullptr;
        SCANRT_CHECK(scanrt_stream_wrap(ctx, stream, &s));
        unsigned long long* d_count;
        CUDA_CHECK(cudaMalloc(&d_count, sizeof *d_count));
        const int64_t len = (int64_t)n;
        scanrt_array a, b;
        scanrt_array_init(&a);
        scanrt_array_init(&b);
        a.data = in, a.dtype = SCANRT_DTYPE_U32, a.ndim = 1, a.shape = &len;
        b.data = out, b.dtype = SCANRT_DTYPE_U32, b.ndim = 1, b.shape = &len;
        scanrt_select_desc d;
        SCANRT_CHECK(scanrt_select_desc_init(&d));
        d.rule = SCANRT_SELECT_PREDICATE;
        d.predicate_source = "__device__ bool bit2(unsigned x) { return (x & 4u) != 0; }";
        d.predicate_function = "bit2";
        SCANRT_CHECK(scanrt_select(ctx, s, &a, nullptr, &b, nullptr, (uint64_t*)d_count, &d));
        unsigned long long count = 0;
        CUDA_CHECK(cudaMemcpyAsync(&count, d_count, sizeof count, cudaMemcpyDeviceToHost, stream));
        CUDA_CHECK(cudaMemcpyAsync(got.data(), out, n * sizeof(unsigned), cudaMemcpyDeviceToHost, stream));
        CUDA_CHECK(cudaStreamSynchronize(stream));
        size_t kept = 0, bad = 0;
        for (size_t i = 0; i < n; ++i)
            if (host_in[i] & 4u) bad += kept >= count || got[kept++] != host_in[i];
        bad += kept != count;
        std::printf("example_cuda: kept %llu of %zu u32 with bit 2 set: %zu mismatches\n", count, n, bad);
        failures += bad != 0;
        CUDA_CHECK(cudaFree(d_count));

        // An argsort on the same stream: the values, largest first, with the index each
        // came from (equal values keep their input order), into the application's memory.
        unsigned* d_indices;
        CUDA_CHECK(cudaMalloc(&d_indices, n * sizeof(unsigned)));
        scanrt_array idx;
        scanrt_array_init(&idx);
        idx.data = d_indices, idx.dtype = SCANRT_DTYPE_U32, idx.ndim = 1, idx.shape = &len;
        scanrt_sort_desc sd;
        SCANRT_CHECK(scanrt_sort_desc_init(&sd));
        sd.order = SCANRT_SORT_DESCENDING;
        SCANRT_CHECK(scanrt_sort(ctx, s, &a, &b, nullptr, &idx, nullptr, 0, &sd));
        std::vector<unsigned> indices(n);
        CUDA_CHECK(cudaMemcpyAsync(got.data(), out, n * sizeof(unsigned), cudaMemcpyDeviceToHost, stream));
        CUDA_CHECK(cudaMemcpyAsync(indices.data(), d_indices, n * sizeof(unsigned), cudaMemcpyDeviceToHost, stream));
        CUDA_CHECK(cudaStreamSynchronize(stream));
        bad = 0;
        for (size_t i = 0; i < n; ++i) {
            bad += indices[i] >= n || got[i] != host_in[indices[i] < n ? indices[i] : 0];
            if (i > 0) bad += got[i - 1] < got[i] || (got[i - 1] == got[i] && indices[i - 1] >= indices[i]);
        }
        std::printf("example_cuda: argsort of %zu u32, descending: %zu mismatches\n", n, bad);
        failures += bad != 0;
        CUDA_CHECK(cudaFree(d_indices));
        scanrt_stream_destroy(s);
    }
    scanrt_context_destroy(ctx);
    CUDA_CHECK(cudaStreamDestroy(stream));
    CUDA_CHECK(cudaFree(in));
    CUDA_CHECK(cudaFree(out));
    if (failures) return 1;
    std::printf("example_cuda: OK\n");
    return 0;
}
