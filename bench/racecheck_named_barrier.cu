// Does compute-sanitizer racecheck model partial named barriers? The single-pass kernel's
// data threads sync among themselves with `bar.sync 1, THREADS` while its look-back warp
// never joins that barrier; both meet at __syncthreads(). racecheck reports hazards
// between thread 0's store to a shared variable and the look-back warp's load of it
// after such a __syncthreads(). These kernels reproduce that hand-over with nothing
// else around it; every one is race-free by the PTX barrier semantics:
//   with_named_barrier    data threads use bar.sync 1 before the store (as scanrt does)
//   without_named_barrier the same hand-over with no named barrier
//   pipeline[+mbarrier][+atomics]  the bulk-copy kernel's ring of hand-overs, through
//                         named barriers (bar.arrive / bar.sync) or mbarriers, the values
//                         stored and loaded plainly or with shared-memory atomics
//   rounds [spin|named|fenced]  the kernel's round structure around the hand-overs
//                         (fenced: the data threads pass bar.sync 1 between their store
//                         and the __syncthreads() that hands it over)
// Run:
//   nvcc -arch=sm_90 -lineinfo -o rc bench/racecheck_named_barrier.cu
//   compute-sanitizer --tool racecheck ./rc [all|with|without|rounds[+spin][+named][+fenced]]
// Observed on an H100 (CUDA 13.0, 2026-11-23): racecheck reports hazards on the
// hand-overs of `with_named_barrier` (in some runs, not all) and of `rounds` (every run,
// whether or not the loop itself uses the named barrier or the look-back warp spins),
// and never on `without_named_barrier`. So a named barrier that only some warps execute
// is enough for racecheck to report hand-overs that __syncthreads() orders, the pattern
// of its reports on scanrt_single_pass. A `bar.sync 1` of the data threads between their
// store and the __syncthreads() (`fenced`) does not silence the reports here, but it did
// in scanrt_single_pass: 47 hazards on the sanitizer subset before, 0 after (fourth
// session), so the kernel keeps that barrier after publishing a tile's aggregate.
// `pipeline` and `pipeline+mbarrier` each report 1 hazard (seventh session), with correct
// totals and synccheck clean: racecheck does not follow these producer/consumer hand-overs
// with either primitive, so moving the bulk-copy kernel to mbarriers would not quiet it
// (and measured 1.5-2% slower there).
#include <cstdio>
#include <cstring>

constexpr int DATA_THREADS = 256;

__global__ void with_named_barrier(int* out) {
    __shared__ int scratch[DATA_THREADS];
    __shared__ int handed_over;
    const int tid = threadIdx.x;
    if (tid < DATA_THREADS) {
        scratch[tid] = tid;
        asm volatile("bar.sync 1, %0;" ::"n"(DATA_THREADS) : "memory");
        const int s = scratch[(tid + 1) % DATA_THREADS];
        asm volatile("bar.sync 1, %0;" ::"n"(DATA_THREADS) : "memory");
        if (tid == 0) handed_over = s + 1;
    }
    __syncthreads();
    if (tid >= DATA_THREADS) out[blockIdx.x * 32 + tid - DATA_THREADS] = handed_over;
}

__global__ void without_named_barrier(int* out) {
    __shared__ int handed_over;
    const int tid = threadIdx.x;
    if (tid == 0) handed_over = blockIdx.x + 2;
    __syncthreads();
    if (tid >= DATA_THREADS) out[blockIdx.x * 32 + tid - DATA_THREADS] = handed_over;
}

// The single-pass kernel's round structure: a prologue hand-over, then rounds in which
// the look-back warp spins (ballots, __nanosleep) while the data threads work behind named
// barriers, and the two sides exchange values across __syncthreads().
__global__ void rounds(int* out, int num_rounds, bool spin, bool named, bool fenced) {
    __shared__ int scratch[DATA_THREADS];
    __shared__ int aggregate_s, prefix_s;
    const int tid = threadIdx.x, lane = tid & 31;
    const bool lookback_warp = tid >= DATA_THREADS;
    if (!lookback_warp) {
        scratch[tid] = tid;
        asm volatile("bar.sync 1, %0;" ::"n"(DATA_THREADS) : "memory");
        if (tid == 0) aggregate_s = scratch[5];
    }
    __syncthreads();
    int total = 0;
    for (int round = 0; round < num_rounds; ++round) {
        if (lookback_warp) {
            const int aggregate = aggregate_s;
            for (int spins = 0; spin && spins < 3 + round % 4; ++spins) {
                if (__all_sync(0xffffffffu, spins > 100)) break;
                __nanosleep(32);
            }
            if (lane == 0) prefix_s = aggregate + round;
        } else {
            if (named) {
                scratch[tid] = tid + round;
                asm volatile("bar.sync 1, %0;" ::"n"(DATA_THREADS) : "memory");
                total += scratch[(tid + round) % DATA_THREADS];
                asm volatile("bar.sync 1, %0;" ::"n"(DATA_THREADS) : "memory");
            }
        }
        __syncthreads();
        if (!lookback_warp) {
            total += prefix_s;
            if (tid == 0) aggregate_s = total;
            // fenced: the data threads' own barrier between the store and __syncthreads()
            if (fenced) asm volatile("bar.sync 1, %0;" ::"n"(DATA_THREADS) : "memory");
        }
        __syncthreads();
    }
    if (!lookback_warp) out[blockIdx.x * DATA_THREADS + tid] = total;
}

// The bulk-copy kernel's hand-over (single_pass_bulk.cuh): a ring of BUFFERS slots, the
// data threads' thread 0 hands slot b's value to the look-back warp, whose lane 0 hands a
// prefix back, which the data threads read LAG rounds later. `mbarrier` selects the
// hand-over: named barriers used as producer/consumer (bar.arrive, bar.sync of all
// DATA_THREADS + 32 threads) or shared-memory mbarriers of one arrival each (arrive with
// release semantics, try_wait.parity with acquire semantics).
constexpr int BUFFERS = 4, LAG = 2;
__device__ __forceinline__ unsigned smem(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void mb_arrive(unsigned long long* b) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem(b)) : "memory");
}
__device__ __forceinline__ void mb_wait(unsigned long long* b, unsigned parity) {
    asm volatile("{\n\t.reg .pred done;\nW:\n\tmbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n\t@!done bra W;\n}"
                 ::"r"(smem(b)), "r"(parity) : "memory");
}
// `atomics`: the handed-over values are written with atomicExch and read with atomicAdd(p, 0).
__device__ __forceinline__ void put(int* p, int v, bool atomics) { if (atomics) atomicExch(p, v); else *p = v; }
__device__ __forceinline__ int get(int* p, bool atomics) { return atomics ? atomicAdd(p, 0) : *p; }
__global__ void pipeline(int* out, int num_rounds, bool mbarrier, bool atomics) {
    __shared__ int value_s[BUFFERS], prefix_s[BUFFERS];
    __shared__ unsigned long long handoff[BUFFERS], prefix_ready[BUFFERS];
    const int tid = threadIdx.x, lane = tid & 31, threads = DATA_THREADS + 32;
    if (tid < BUFFERS) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem(&handoff[tid])) : "memory");
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem(&prefix_ready[tid])) : "memory");
    }
    __syncthreads();
    if (tid >= DATA_THREADS) {
        for (int seq = 0; seq < num_rounds; ++seq) {
            const int b = seq % BUFFERS;
            if (mbarrier) mb_wait(&handoff[b], (seq / BUFFERS) & 1);
            else asm volatile("bar.sync %0, %1;" ::"r"(2 + b), "r"(threads) : "memory");
            const int v = get(&value_s[b], atomics);
            if (lane == 0) put(&prefix_s[b], v + 1, atomics);
            if (!mbarrier) asm volatile("bar.arrive %0, %1;" ::"r"(2 + BUFFERS + b), "r"(threads) : "memory");
            else if (lane == 0) mb_arrive(&prefix_ready[b]);
        }
    } else {
        int total = 0;
        for (int seq = 0; seq < num_rounds + LAG; ++seq) {
            const int b = seq % BUFFERS;
            if (seq < num_rounds) {
                if (tid == 0) put(&value_s[b], seq, atomics);
                if (mbarrier) { if (tid == 0) mb_arrive(&handoff[b]); }
                else asm volatile("bar.arrive %0, %1;" ::"r"(2 + b), "r"(threads) : "memory");
            }
            const int f = seq - LAG;
            if (f >= 0) {
                const int fb = f % BUFFERS;
                if (mbarrier) mb_wait(&prefix_ready[fb], (f / BUFFERS) & 1);
                else asm volatile("bar.sync %0, %1;" ::"r"(2 + BUFFERS + fb), "r"(threads) : "memory");
                total += get(&prefix_s[fb], atomics);
            }
            // The data threads' own barrier of each round (the tile scan's), which keeps
            // them within one round of thread 0.
            asm volatile("bar.sync 1, %0;" ::"n"(DATA_THREADS) : "memory");
        }
        out[blockIdx.x * DATA_THREADS + tid] = total;
    }
}

int main(int argc, char** argv) {
    const int blocks = 4;
    const char* which = argc > 1 ? argv[1] : "all";
    const bool all = strcmp(which, "all") == 0;
    int* out;
    cudaMalloc(&out, blocks * 32 * sizeof(int));
    int host[blocks * 32];
    if (all || strcmp(which, "with") == 0) {
        with_named_barrier<<<blocks, DATA_THREADS + 32>>>(out);
        cudaMemcpy(host, out, sizeof host, cudaMemcpyDeviceToHost);
        printf("with_named_barrier: look-back warp read %d (expect 2)\n", host[0]);
    }
    if (all || strcmp(which, "without") == 0) {
        without_named_barrier<<<blocks, DATA_THREADS + 32>>>(out);
        cudaMemcpy(host, out, sizeof host, cudaMemcpyDeviceToHost);
        printf("without_named_barrier: look-back warp read %d (expect 2)\n", host[0]);
    }
    if (all || strncmp(which, "rounds", 6) == 0) {
        int* totals;
        cudaMalloc(&totals, blocks * DATA_THREADS * sizeof(int));
        const bool spin = all || strstr(which, "spin"), named = all || strstr(which, "named");
        const bool fenced = strstr(which, "fenced") != nullptr;
        rounds<<<blocks, DATA_THREADS + 32>>>(totals, 8, spin, named, fenced);
        cudaDeviceSynchronize();
        printf("rounds (%s): done\n", which);
        cudaFree(totals);
    }
    if (all || strncmp(which, "pipeline", 8) == 0) {
        int* totals;
        cudaMalloc(&totals, blocks * DATA_THREADS * sizeof(int));
        const bool mbarrier = strstr(which, "mbarrier") != nullptr, atomics = strstr(which, "atomics") != nullptr;
        pipeline<<<blocks, DATA_THREADS + 32>>>(totals, 64, mbarrier, atomics);
        int first = 0;
        cudaMemcpy(&first, totals, sizeof first, cudaMemcpyDeviceToHost);
        printf("pipeline (%s): total %d (expect %d)\n", mbarrier ? "mbarrier" : "named barriers", first, 64 * 65 / 2);
        cudaFree(totals);
    }
    cudaFree(out);
    return 0;
}
