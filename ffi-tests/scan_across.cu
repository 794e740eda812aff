// An NCCL application scanning one logical array split over every GPU of this machine:
// one thread per rank (as one process per rank would), each with its own communicator
// (ncclCommInitRank), CUDA stream and device memory, calling scanrt_scan_across with its
// chunk; checked against a sequential scan of the whole array.
#include <cuda_runtime.h>
#include <nccl.h>
#include <scanrt.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#define CUDA_CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
    std::fprintf(stderr, "%s failed: %s\n", #x, cudaGetErrorString(e_)); std::exit(1); } } while (0)
#define NCCL_CHECK(x) do { ncclResult_t r_ = (x); if (r_ != ncclSuccess) { \
    std::fprintf(stderr, "%s failed: %s\n", #x, ncclGetErrorString(r_)); std::exit(1); } } while (0)
#define SCANRT_CHECK(x) do { scanrt_status s_ = (x); if (s_ != SCANRT_STATUS_OK) { \
    std::fprintf(stderr, "%s failed: %s: %s\n", #x, scanrt_status_string(s_), scanrt_last_error_message()); std::exit(1); } } while (0)

// Element i of the logical array.
static uint64_t element(uint64_t i) { return (i * 2654435761u) >> 20 & 0xffff; }

int main() {
    int ranks = 0;
    CUDA_CHECK(cudaGetDeviceCount(&ranks));
    ncclUniqueId id;
    NCCL_CHECK(ncclGetUniqueId(&id));  // with several processes: made by rank 0, sent to the others
    // Unequal chunks: rank r holds chunk_length(r) consecutive elements.
    auto chunk_length = [](int r) { return (size_t)(1 << 22) + 1000 * (size_t)r; };
    std::vector<size_t> first(ranks + 1, 0);
    for (int r = 0; r < ranks; r++) first[r + 1] = first[r] + chunk_length(r);
    std::vector<std::vector<uint64_t>> results(ranks);

    std::vector<std::thread> threads;
    for (int rank = 0; rank < ranks; rank++) {
        threads.emplace_back([&, rank] {
            CUDA_CHECK(cudaSetDevice(rank));
            ncclComm_t comm;
            NCCL_CHECK(ncclCommInitRank(&comm, ranks, id, rank));
            cudaStream_t stream;
            CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
            const size_t n = chunk_length(rank);
            std::vector<uint64_t> chunk(n);
            for (size_t i = 0; i < n; i++) chunk[i] = element(first[rank] + i);
            uint64_t *in, *out;
            CUDA_CHECK(cudaMalloc(&in, n * 8));
            CUDA_CHECK(cudaMalloc(&out, n * 8));
            CUDA_CHECK(cudaMemcpyAsync(in, chunk.data(), n * 8, cudaMemcpyHostToDevice, stream));

            scanrt_context* ctx = nullptr;
            scanrt_stream* s = nullptr;
            SCANRT_CHECK(scanrt_context_create(SCANRT_BACKEND_GPU, rank, &ctx));
            SCANRT_CHECK(scanrt_stream_wrap(ctx, stream, &s));
            const int64_t shape = (int64_t)n;
            scanrt_array a, b;
            SCANRT_CHECK(scanrt_array_init(&a));
            SCANRT_CHECK(scanrt_array_init(&b));
            a.data = in, a.dtype = SCANRT_DTYPE_U64, a.ndim = 1, a.shape = &shape;
            b.data = out, b.dtype = SCANRT_DTYPE_U64, b.ndim = 1, b.shape = &shape;
            scanrt_scan_desc desc;
            SCANRT_CHECK(scanrt_scan_desc_init(&desc));
            desc.inclusive = 0;  // exclusive: rank r's first element is the sum of every earlier rank's
            SCANRT_CHECK(scanrt_scan_across(ctx, comm, s, &a, &b, nullptr, &desc, nullptr));

            results[rank].resize(n);
            CUDA_CHECK(cudaMemcpyAsync(results[rank].data(), out, n * 8, cudaMemcpyDeviceToHost, stream));
            CUDA_CHECK(cudaStreamSynchronize(stream));
            scanrt_stream_destroy(s);
            scanrt_context_destroy(ctx);
            CUDA_CHECK(cudaFree(in));
            CUDA_CHECK(cudaFree(out));
            CUDA_CHECK(cudaStreamDestroy(stream));
            NCCL_CHECK(ncclCommDestroy(comm));
        });
    }
    for (auto& t : threads) t.join();

    uint64_t running = 0, wrong = 0;
    for (int r = 0; r < ranks; r++)
        for (size_t i = 0; i < results[r].size(); i++) {
            wrong += results[r][i] != running;
            running += element(first[r] + i);
        }
    std::printf("scan_across: exclusive u64 sum of %zu elements over %d GPUs: %s\n", first[ranks], ranks,
                wrong ? "WRONG" : "ok");
    return wrong ? 1 : 0;
}
