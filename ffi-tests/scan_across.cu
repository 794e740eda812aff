// An NCCL application scanning one logical array split over every GPU of this machine:
// one thread per rank (as one process per rank would), each with its own communicator
// (ncclCommInitRank), CUDA stream and device memory, calling scanrt_scan_across with its
// chunk; then the single-process form (scanrt_multi_gpu) from one thread, with a built-in
// sum and a user-defined linear recurrence, backward. Each is checked against a sequential
// scan of the whole array.
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

// The single-process form: every GPU from this thread, without an NCCL setup of the
// application's own. A u64 inclusive sum, then h[i] = a[i] h[i+1] + b[i] backward (f64,
// a in {-1, 1} and small integer b: every h is exact) with a user-defined operator.
template <typename Length>
static bool single_process_forms(int ranks, const std::vector<size_t>& first, Length chunk_length) {
    std::vector<scanrt_context*> ctxs(ranks);
    std::vector<cudaStream_t> streams(ranks);
    std::vector<scanrt_stream*> wrapped(ranks);
    for (int r = 0; r < ranks; r++) {
        CUDA_CHECK(cudaSetDevice(r));
        CUDA_CHECK(cudaStreamCreateWithFlags(&streams[r], cudaStreamNonBlocking));
        SCANRT_CHECK(scanrt_context_create(SCANRT_BACKEND_GPU, r, &ctxs[r]));
        SCANRT_CHECK(scanrt_stream_wrap(ctxs[r], streams[r], &wrapped[r]));
    }
    scanrt_multi_gpu* group = nullptr;
    SCANRT_CHECK(scanrt_multi_gpu_create(ctxs.data(), ranks, &group));

    // Device arrays per rank: x (u64) and its sums; a, b (f64) and h.
    std::vector<uint64_t*> x(ranks), sums(ranks);
    std::vector<double*> a(ranks), b(ranks), h(ranks);
    std::vector<std::vector<double>> host_a(ranks), host_b(ranks);
    std::vector<int64_t> shapes(ranks);
    std::vector<scanrt_array> in(ranks), out(ranks);
    for (int r = 0; r < ranks; r++) {
        CUDA_CHECK(cudaSetDevice(r));
        const size_t n = chunk_length(r);
        std::vector<uint64_t> chunk(n);
        host_a[r].resize(n), host_b[r].resize(n);
        for (size_t i = 0; i < n; i++) {
            chunk[i] = element(first[r] + i);
            host_a[r][i] = (chunk[i] % 3 == 0) ? -1.0 : 1.0;
            host_b[r][i] = (double)(chunk[i] % 9) - 4.0;
        }
        CUDA_CHECK(cudaMalloc(&x[r], n * 8));
        CUDA_CHECK(cudaMalloc(&sums[r], n * 8));
        CUDA_CHECK(cudaMalloc(&a[r], n * 8));
        CUDA_CHECK(cudaMalloc(&b[r], n * 8));
        CUDA_CHECK(cudaMalloc(&h[r], n * 8));
        CUDA_CHECK(cudaMemcpy(x[r], chunk.data(), n * 8, cudaMemcpyHostToDevice));
        CUDA_CHECK(cudaMemcpy(a[r], host_a[r].data(), n * 8, cudaMemcpyHostToDevice));
        CUDA_CHECK(cudaMemcpy(b[r], host_b[r].data(), n * 8, cudaMemcpyHostToDevice));
        shapes[r] = (int64_t)n;
        SCANRT_CHECK(scanrt_array_init(&in[r]));
        SCANRT_CHECK(scanrt_array_init(&out[r]));
        in[r].data = x[r], in[r].dtype = SCANRT_DTYPE_U64, in[r].ndim = 1, in[r].shape = &shapes[r];
        out[r].data = sums[r], out[r].dtype = SCANRT_DTYPE_U64, out[r].ndim = 1, out[r].shape = &shapes[r];
    }

    scanrt_scan_desc desc;
    SCANRT_CHECK(scanrt_scan_desc_init(&desc));
    SCANRT_CHECK(scanrt_multi_gpu_scan(group, (const scanrt_stream* const*)wrapped.data(), in.data(), out.data(),
                                       nullptr, &desc));

    std::vector<scanrt_operator*> ops(ranks);
    std::vector<const void*> inputs(2 * ranks);
    std::vector<void*> outputs(ranks);
    std::vector<uint64_t> lengths(ranks);
    for (int r = 0; r < ranks; r++) {
        SCANRT_CHECK(scanrt_operator_create_linear_recurrence(ctxs[r], SCANRT_DTYPE_F64, &ops[r]));
        inputs[2 * r] = a[r], inputs[2 * r + 1] = b[r], outputs[r] = h[r], lengths[r] = chunk_length(r);
    }
    desc.direction = SCANRT_DIRECTION_BACKWARD;
    SCANRT_CHECK(scanrt_multi_gpu_operator_scan(group, (const scanrt_operator* const*)ops.data(),
                                                (void* const*)streams.data(), inputs.data(), 2, outputs.data(), 1,
                                                lengths.data(), &desc, nullptr, nullptr));

    uint64_t running = 0, wrong_sums = 0, wrong_h = 0;
    for (int r = 0; r < ranks; r++) {
        CUDA_CHECK(cudaSetDevice(r));
        std::vector<uint64_t> got(lengths[r]);
        CUDA_CHECK(cudaMemcpyAsync(got.data(), sums[r], lengths[r] * 8, cudaMemcpyDeviceToHost, streams[r]));
        CUDA_CHECK(cudaStreamSynchronize(streams[r]));
        for (size_t i = 0; i < got.size(); i++) {
            running += element(first[r] + i);
            wrong_sums += got[i] != running;
        }
    }
    double state = 0.0;
    for (int r = ranks - 1; r >= 0; r--) {
        CUDA_CHECK(cudaSetDevice(r));
        std::vector<double> got(lengths[r]);
        CUDA_CHECK(cudaMemcpyAsync(got.data(), h[r], lengths[r] * 8, cudaMemcpyDeviceToHost, streams[r]));
        CUDA_CHECK(cudaStreamSynchronize(streams[r]));
        for (size_t i = lengths[r]; i-- > 0;) {
            state = host_a[r][i] * state + host_b[r][i];
            wrong_h += got[i] != state;
        }
    }
    std::printf("scanrt_multi_gpu: inclusive u64 sum over %d GPUs: %s; backward linear recurrence (user operator): %s\n",
                ranks, wrong_sums ? "WRONG" : "ok", wrong_h ? "WRONG" : "ok");

    scanrt_multi_gpu_destroy(group);
    for (int r = 0; r < ranks; r++) {
        scanrt_operator_destroy(ops[r]);
        scanrt_stream_destroy(wrapped[r]);
        scanrt_context_destroy(ctxs[r]);
        CUDA_CHECK(cudaSetDevice(r));
        for (void* p : {(void*)x[r], (void*)sums[r], (void*)a[r], (void*)b[r], (void*)h[r]}) CUDA_CHECK(cudaFree(p));
        CUDA_CHECK(cudaStreamDestroy(streams[r]));
    }
    return !wrong_sums && !wrong_h;
}

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
    return (wrong || !single_process_forms(ranks, first, chunk_length)) ? 1 : 0;
}
