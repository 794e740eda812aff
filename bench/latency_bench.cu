// Small scans at the launch floor: scanrt called through its C ABI from a CUDA
// application (its own non-blocking stream, its own cudaMalloc'd arrays), beside CUB,
// a device-to-device memcpy and an empty launch, all timed the same way in one process.
// Built and run by bench/run_latency_bench.sh; prints CSV lines
//   section,impl,dtype,n,value
// (microseconds, or nanoseconds for the `host_ns` section) and then the summary table
// of the small-scan targets (docs/PERFORMANCE.md, Small scans).
//
// Sections:
//   host_ns      host time of one call: each driver query scanrt makes, the launches
//   back_to_back 1000 calls between one event pair, per call
//   graph        100 calls captured into a graph, replayed, per call
//   pair         median of event pairs around single calls (launch included, as the
//                anchors' method); scanrt's results are checked against CUB's
#include <cub/device/device_scan.cuh>
#include <cuda.h>
#include <cuda/std/functional>
#include <cuda_runtime.h>
#include <scanrt.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "cub_timing.cuh"

#define SCANRT_CHECK(x) do { if ((x) != SCANRT_STATUS_OK) { \
    std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, scanrt_last_error_message()); std::exit(1); } } while (0)

__global__ void empty_kernel(unsigned long long) {}

// Cluster launches, to price them apart from any scan: a cluster barrier and nothing else,
// with the cluster's size given at launch (cudaLaunchKernelEx) or compiled in.
__device__ __forceinline__ void cluster_barrier() {
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
__global__ void cluster_probe(unsigned long long) { cluster_barrier(); }
__global__ void __cluster_dims__(16, 1, 1) cluster_probe_16(unsigned long long) { cluster_barrier(); }
__global__ void __cluster_dims__(8, 1, 1) cluster_probe_8(unsigned long long) { cluster_barrier(); }

static void launch_cluster_probe(unsigned blocks, cudaStream_t s) {
    cudaLaunchConfig_t config = {};
    cudaLaunchAttribute attribute;
    attribute.id = cudaLaunchAttributeClusterDimension;
    attribute.val.clusterDim.x = blocks;
    attribute.val.clusterDim.y = 1;
    attribute.val.clusterDim.z = 1;
    config.gridDim = dim3(blocks);
    config.blockDim = dim3(256);
    config.stream = s;
    config.attrs = &attribute;
    config.numAttrs = 1;
    CHECK(cudaLaunchKernelEx(&config, cluster_probe, 0ull));
}

template <typename T>
__global__ void fill(T* p, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        p[i] = (T)(((unsigned)i * 2654435761u) >> 28);  // 0..15
}

// Every figure of the run, by (section, impl, dtype, n), for the summary.
static std::map<std::string, double> results;

static void report(const char* section, const std::string& impl, const char* dtype, size_t n, double value) {
    std::printf("%s,%s,%s,%zu,%.3f\n", section, impl.c_str(), dtype, n, value);
    results[std::string(section) + "/" + impl + "/" + dtype + "/" + std::to_string(n)] = value;
}

static double get(const char* section, const std::string& impl, const char* dtype, size_t n) {
    auto it = results.find(std::string(section) + "/" + impl + "/" + dtype + "/" + std::to_string(n));
    return it == results.end() ? 0.0 : it->second;
}

// Microseconds between two events recorded on `s` around what `queue` queues.
static double elapsed_us(const std::function<void()>& queue, cudaStream_t s) {
    cudaEvent_t a, b;
    CHECK(cudaEventCreate(&a));
    CHECK(cudaEventCreate(&b));
    CHECK(cudaEventRecord(a, s));
    queue();
    CHECK(cudaEventRecord(b, s));
    CHECK(cudaEventSynchronize(b));
    float ms;
    CHECK(cudaEventElapsedTime(&ms, a, b));
    CHECK(cudaEventDestroy(a));
    CHECK(cudaEventDestroy(b));
    return ms * 1000.0;
}

// Per call, 1000 calls queued back to back between one event pair.
static double back_to_back_us(const std::function<void()>& call, cudaStream_t s) {
    const int calls = 1000;
    for (int i = 0; i < 10; ++i) call();
    CHECK(cudaStreamSynchronize(s));
    return elapsed_us([&] { for (int i = 0; i < calls; ++i) call(); }, s) / calls;
}

// Per call, 100 calls captured into one graph, replayed 10 times between one event pair.
static double graph_us(const std::function<void()>& call, cudaStream_t s) {
    cudaGraph_t g;
    cudaGraphExec_t exec;
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < 100; ++i) call();
    CHECK(cudaStreamEndCapture(s, &g));
    CHECK(cudaGraphInstantiate(&exec, g, 0));
    CHECK(cudaGraphLaunch(exec, s));
    CHECK(cudaStreamSynchronize(s));
    const double us = elapsed_us([&] { for (int r = 0; r < 10; ++r) CHECK(cudaGraphLaunch(exec, s)); }, s);
    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(g));
    return us / 1000;
}

// Median nanoseconds of a host call that queues nothing (10 x 1000 calls).
static double query_ns(const std::function<void()>& call) {
    std::vector<double> t;
    for (int batch = 0; batch < 10; ++batch) {
        auto start = std::chrono::steady_clock::now();
        for (int i = 0; i < 1000; ++i) call();
        t.push_back(std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count() / 1000);
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

template <typename T> struct Dtype;
template <> struct Dtype<unsigned> { static constexpr int code = SCANRT_DTYPE_U32; static constexpr const char* name = "u32"; };
template <> struct Dtype<unsigned long long> { static constexpr int code = SCANRT_DTYPE_U64; static constexpr const char* name = "u64"; };
template <> struct Dtype<float> { static constexpr int code = SCANRT_DTYPE_F32; static constexpr const char* name = "f32"; };
template <> struct Dtype<double> { static constexpr int code = SCANRT_DTYPE_F64; static constexpr const char* name = "f64"; };

// One type's arrays and its calls: scanrt (plain, deterministic, segmented by byte
// flags), CUB (InclusiveSum, InclusiveSumByKey on keys laid out as the same segments)
// and memcpy, each at any n up to the arrays' length.
template <typename T>
struct Calls {
    static constexpr size_t SEGMENT = 1024;
    scanrt_context* ctx;
    cudaStream_t s;
    size_t max_n;
    T *in, *out, *cub_out;
    unsigned* keys;
    unsigned char* flags;
    void* temp;
    size_t temp_bytes;

    Calls(scanrt_context* ctx, cudaStream_t s, size_t max_n) : ctx(ctx), s(s), max_n(max_n) {
        CHECK(cudaMalloc(&in, max_n * sizeof(T)));
        CHECK(cudaMalloc(&out, max_n * sizeof(T)));
        CHECK(cudaMalloc(&cub_out, max_n * sizeof(T)));
        CHECK(cudaMalloc(&keys, max_n * sizeof(unsigned)));
        CHECK(cudaMalloc(&flags, max_n));
        fill<<<1024, 256, 0, s>>>(in, max_n);
        std::vector<unsigned> k(max_n);
        std::vector<unsigned char> f(max_n);
        for (size_t i = 0; i < max_n; ++i) k[i] = (unsigned)(i / SEGMENT), f[i] = i % SEGMENT == 0;
        CHECK(cudaMemcpy(keys, k.data(), max_n * sizeof(unsigned), cudaMemcpyHostToDevice));
        CHECK(cudaMemcpy(flags, f.data(), max_n, cudaMemcpyHostToDevice));
        size_t a = 0, b = 0;
        CHECK(cub::DeviceScan::InclusiveSum(nullptr, a, in, out, max_n, s));
        CHECK(cub::DeviceScan::InclusiveSumByKey(nullptr, b, keys, in, out, max_n, cuda::std::equal_to<>{}, s));
        temp_bytes = std::max(a, b);
        CHECK(cudaMalloc(&temp, temp_bytes));
    }
    ~Calls() {
        for (void* p : {(void*)in, (void*)out, (void*)cub_out, (void*)keys, (void*)flags, temp}) cudaFree(p);
    }

    void scanrt(size_t n, bool deterministic = false, bool segmented = false) const {
        scanrt_scan_desc desc;
        scanrt_scan_desc_init(&desc);
        desc.deterministic = deterministic;
        if (segmented) {
            desc.segments = SCANRT_SEGMENTS_BYTE_FLAGS;
            desc.segment_data = flags;
        }
        SCANRT_CHECK(scanrt_scan_device(ctx, s, in, Dtype<T>::code, out, Dtype<T>::code, n, &desc, nullptr));
    }
    void cub(size_t n, bool segmented = false) const {
        size_t bytes = temp_bytes;
        if (segmented)
            CHECK(cub::DeviceScan::InclusiveSumByKey(temp, bytes, keys, in, cub_out, n, cuda::std::equal_to<>{}, s));
        else
            CHECK(cub::DeviceScan::InclusiveSum(temp, bytes, in, cub_out, n, s));
    }
    void memcpy(size_t n) const { CHECK(cudaMemcpyAsync(out, in, n * sizeof(T), cudaMemcpyDeviceToDevice, s)); }

    // Whether scanrt's last result equals CUB's (integer sums exactly; float sums to a
    // relative 1e-4, as their association orders differ).
    bool agrees(size_t n) const {
        CHECK(cudaStreamSynchronize(s));
        std::vector<T> a(n), b(n);
        CHECK(cudaMemcpy(a.data(), out, n * sizeof(T), cudaMemcpyDeviceToHost));
        CHECK(cudaMemcpy(b.data(), cub_out, n * sizeof(T), cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < n; ++i) {
            const double x = (double)a[i], y = (double)b[i];
            if (x != y && std::abs(x - y) > 1e-4 * std::max(std::abs(x), std::abs(y))) {
                std::fprintf(stderr, "%s n=%zu: scanrt and CUB differ at %zu (%g, %g)\n", Dtype<T>::name, n, i, x, y);
                return false;
            }
        }
        return true;
    }
};

// Event-pair medians of scanrt, CUB and memcpy (and, for floats, scanrt's deterministic
// scan; for u32, segmented scans beside CUB's by key) at each n.
template <typename T>
static bool pairs(scanrt_context* ctx, cudaStream_t s, const std::vector<size_t>& sizes, bool segmented) {
    Calls<T> c(ctx, s, sizes.back());
    const char* name = Dtype<T>::name;
    bool ok = true;
    for (size_t n : sizes) {
        report("pair", "memcpy", name, n, median_us([&] { c.memcpy(n); }, 200, s));
        report("pair", "cub", name, n, median_us([&] { c.cub(n); }, 200, s));
        report("pair", "scanrt", name, n, median_us([&] { c.scanrt(n); }, 200, s));
        ok &= c.agrees(n);
        if (T(0.5) != T(0)) {
            report("pair", "scanrt_deterministic", name, n, median_us([&] { c.scanrt(n, true); }, 200, s));
            ok &= c.agrees(n);
        }
        if (segmented) {
            report("pair", "cub_by_key", name, n, median_us([&] { c.cub(n, true); }, 200, s));
            report("pair", "scanrt_byte_flags", name, n, median_us([&] { c.scanrt(n, false, true); }, 200, s));
            ok &= c.agrees(n);
        }
    }
    return ok;
}

// Host time of each driver query a scan call may make, of the launches, and of whole calls.
static void host_breakdown(scanrt_context* ctx, cudaStream_t s) {
    const size_t n = 1 << 16;
    Calls<unsigned> c(ctx, s, n);
    CUstream cs = (CUstream)s;
    report("host_ns", "cuCtxGetCurrent", "-", 0, query_ns([&] { CUcontext x; cuCtxGetCurrent(&x); }));
    report("host_ns", "cuStreamGetCtx", "-", 0, query_ns([&] { CUcontext x; cuStreamGetCtx(cs, &x); }));
    report("host_ns", "cuStreamGetId", "-", 0, query_ns([&] { unsigned long long id; cuStreamGetId(cs, &id); }));
    // Through the runtime, whose signature is the same in CUDA 12 and 13 (scanrt calls
    // the driver's cuStreamGetCaptureInfo_v3 directly).
    report("host_ns", "cudaStreamGetCaptureInfo", "-", 0, query_ns([&] {
        cudaStreamCaptureStatus st;
        cudaStreamGetCaptureInfo(s, &st);
    }));
    report("host_ns", "cuPointerGetAttributes_4", "-", 0, query_ns([&] {
        unsigned type = 0;
        int ordinal = -1;
        CUdeviceptr start = 0;
        size_t size = 0;
        CUpointer_attribute attrs[4] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                        CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, CU_POINTER_ATTRIBUTE_RANGE_SIZE};
        void* data[4] = {&type, &ordinal, &start, &size};
        cuPointerGetAttributes(4, attrs, data, (CUdeviceptr)c.in);
    }));
    report("host_ns", "cuPointerGetAttribute_buffer_id", "-", 0, query_ns([&] {
        unsigned long long id;
        cuPointerGetAttribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, (CUdeviceptr)c.in);
    }));
    auto launches = [&](const char* impl, const std::function<void()>& call) {
        report("host_ns", impl, "u32", n, host_us(call, s) * 1000);
    };
    launches("empty_launch", [&] { empty_kernel<<<1, 32, 0, s>>>(0); });
    launches("memcpy", [&] { c.memcpy(n); });
    launches("cub", [&] { c.cub(n); });
    launches("scanrt", [&] { c.scanrt(n); });
    launches("scanrt_one_tile_4096", [&] { c.scanrt(4096); });
}

// Host and graph time of cluster launches against plain ones of the same blocks.
static void cluster_launches(cudaStream_t s) {
    CHECK(cudaFuncSetAttribute(cluster_probe, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    CHECK(cudaFuncSetAttribute(cluster_probe_16, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    const std::pair<const char*, std::function<void()>> calls[] = {
        {"plain_16x256", [&] { empty_kernel<<<16, 256, 0, s>>>(0); }},
        {"plain_1x256", [&] { empty_kernel<<<1, 256, 0, s>>>(0); }},
        {"cluster_at_launch_16", [&] { launch_cluster_probe(16, s); }},
        {"cluster_at_launch_8", [&] { launch_cluster_probe(8, s); }},
        {"cluster_at_launch_2", [&] { launch_cluster_probe(2, s); }},
        {"cluster_compiled_16", [&] { cluster_probe_16<<<16, 256, 0, s>>>(0); }},
        {"cluster_compiled_8", [&] { cluster_probe_8<<<8, 256, 0, s>>>(0); }},
        {"no_cluster_1_block", [&] { cluster_probe<<<1, 256, 0, s>>>(0); }},
    };
    for (const auto& [impl, call] : calls) {
        report("host_ns", impl, "-", 0, host_us(call, s) * 1000);
        report("graph", impl, "-", 0, graph_us(call, s));
        CHECK(cudaGetLastError());
    }
}

static void small_calls(scanrt_context* ctx, cudaStream_t s) {
    const size_t n = 1 << 16;
    Calls<unsigned> c(ctx, s, n);
    const std::pair<const char*, std::function<void()>> calls[] = {
        {"empty_launch", [&] { empty_kernel<<<1, 32, 0, s>>>(0); }},
        {"memcpy", [&] { c.memcpy(n); }},
        {"cub", [&] { c.cub(n); }},
        {"scanrt", [&] { c.scanrt(n); }},
    };
    for (const auto& [impl, call] : calls) {
        report("back_to_back", impl, "u32", n, back_to_back_us(call, s));
        report("graph", impl, "u32", n, graph_us(call, s));
    }
}

static void summary() {
    auto ratio = [](double a, double b) { return b > 0 ? a / b : 0.0; };
    std::printf("\n%-58s %9s %9s %9s  %s\n", "case (u32 unless said)", "scanrt", "CUB", "memcpy", "target");
    auto row = [](const char* what, double scanrt, double cub, double copy, const char* target) {
        std::printf("%-58s %9.3f %9.3f %9.3f  %s\n", what, scanrt, cub, copy, target);
    };
    const size_t k16 = 1 << 16;
    row("2^16 in a replayed graph, us per scan (empty launch below)", get("graph", "scanrt", "u32", k16),
        get("graph", "cub", "u32", k16), get("graph", "memcpy", "u32", k16), "<= 2.6 us");
    row("  empty launch in the graph, us", get("graph", "empty_launch", "u32", k16), 0, 0, "");
    for (int k : {12, 20, 22}) {
        const size_t n = size_t(1) << k;
        const double copy = get("pair", "memcpy", "u32", n);
        std::string what = "2^" + std::to_string(k) + ", time / memcpy time";
        row(what.c_str(), ratio(get("pair", "scanrt", "u32", n), copy), ratio(get("pair", "cub", "u32", n), copy), 1.0,
            k == 12 ? "<= 1.05" : "<= 1.10");
    }
    const double empty = get("back_to_back", "empty_launch", "u32", k16);
    row("2^16 back to back, per call / an empty launch's", ratio(get("back_to_back", "scanrt", "u32", k16), empty),
        ratio(get("back_to_back", "cub", "u32", k16), empty), ratio(get("back_to_back", "memcpy", "u32", k16), empty),
        "<= 1.15");
    row("  empty launch back to back, us", empty, 0, 0, "");
    for (int k : {16, 18, 20, 22}) {
        const size_t n = size_t(1) << k;
        std::string what = "deterministic f32 / regular f32, 2^" + std::to_string(k);
        row(what.c_str(), ratio(get("pair", "scanrt_deterministic", "f32", n), get("pair", "scanrt", "f32", n)), 0, 0,
            "<= 1.05");
    }
    double worst_scanrt = 1e9, worst_cub = 1e9;
    for (int k = 10; k <= 22; ++k) {
        const size_t n = size_t(1) << k;
        const double copy = get("pair", "memcpy", "u32", n);
        worst_scanrt = std::min(worst_scanrt, ratio(copy, get("pair", "scanrt", "u32", n)));
        worst_cub = std::min(worst_cub, ratio(copy, get("pair", "cub", "u32", n)));
    }
    row("2^10 .. 2^22, throughput / memcpy, lowest of the sweep", worst_scanrt, worst_cub, 1.0, ">= 0.90");
    for (const char* t : {"u64", "f32", "f64"}) {
        for (int k : {16, 18, 20, 22}) {
            const size_t n = size_t(1) << k;
            const double copy = get("pair", "memcpy", t, n);
            std::string what = std::string(t) + " 2^" + std::to_string(k) + ", time / memcpy time";
            row(what.c_str(), ratio(get("pair", "scanrt", t, n), copy), ratio(get("pair", "cub", t, n), copy), 1.0,
                k == 16 ? "" : "<= 1.10 (2^20, 2^22)");
        }
    }
    for (int k : {16, 18, 20, 22}) {
        const size_t n = size_t(1) << k;
        const double copy = get("pair", "memcpy", "u32", n);
        std::string what = "segmented u32 (byte flags; CUB by key) 2^" + std::to_string(k) + ", time / memcpy";
        row(what.c_str(), ratio(get("pair", "scanrt_byte_flags", "u32", n), copy),
            ratio(get("pair", "cub_by_key", "u32", n), copy), 1.0, "");
    }
}

int main() {
    CHECK(cudaFree(nullptr));  // the runtime's primary context, which scanrt joins
    scanrt_context* ctx;
    SCANRT_CHECK(scanrt_context_create(SCANRT_BACKEND_GPU, 0, &ctx));
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    std::printf("section,impl,dtype,n,value\n");
    host_breakdown(ctx, s);
    cluster_launches(s);
    small_calls(ctx, s);
    std::vector<size_t> sweep, mid = {1 << 16, 1 << 18, 1 << 20, 1 << 22};
    for (int k = 10; k <= 22; ++k) sweep.push_back(size_t(1) << k);
    bool ok = pairs<unsigned>(ctx, s, sweep, true);
    ok &= pairs<unsigned long long>(ctx, s, mid, false);
    ok &= pairs<float>(ctx, s, mid, false);
    ok &= pairs<double>(ctx, s, mid, false);
    summary();
    CHECK(cudaStreamDestroy(s));
    scanrt_context_destroy(ctx);
    if (!ok) std::printf("RESULTS DIFFER (see stderr)\n");
    return ok ? 0 : 1;
}
