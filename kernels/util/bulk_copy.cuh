// scanrt kernels, level 0: Hopper's bulk asynchronous copies (the TMA engine's 1-D form)
// and the shared-memory barriers that count their bytes, as thin PTX wrappers (sm_90+).
//
// A bulk load moves a 16-byte-aligned run of global memory straight into shared memory:
// no registers, no L1 lines held while it is in flight. Its completion is counted on an
// mbarrier in bytes (`arrive_expect_tx` announces them), and threads wait on the
// barrier's phase parity. A bulk store reads shared memory in the async proxy, so the
// threads that wrote that memory first fence it into that proxy (fence_proxy_async).
#pragma once
#include "util/types.cuh"

SCANRT_DEVICE u32 shared_address(const void* p) { return (u32)__cvta_generic_to_shared(p); }

SCANRT_DEVICE void mbarrier_init(u64* barrier, u32 arrivals) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(shared_address(barrier)), "r"(arrivals) : "memory");
}
// Makes initialised barriers visible to the async proxy (the copy engine) before use.
SCANRT_DEVICE void mbarrier_init_fence() { asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }

SCANRT_DEVICE void mbarrier_arrive(u64* barrier) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(shared_address(barrier)) : "memory");
}
SCANRT_DEVICE void mbarrier_arrive_expect_bytes(u64* barrier, u32 bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(shared_address(barrier)), "r"(bytes)
                 : "memory");
}
// Waits until the barrier's phase with the given parity has completed (acquire).
SCANRT_DEVICE void mbarrier_wait(u64* barrier, u32 parity) {
    asm volatile(
        "{\n\t.reg .pred done;\n"
        "WAIT:\n\t"
        "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n\t"
        "@!done bra WAIT;\n}" ::"r"(shared_address(barrier)),
        "r"(parity)
        : "memory");
}

// Global -> shared, `bytes` a multiple of 16, both addresses 16-byte aligned; completes
// `bytes` of the barrier's expected transaction count.
SCANRT_DEVICE void bulk_load(void* shared_dst, const void* global_src, u32 bytes, u64* barrier) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                     shared_address(shared_dst)),
                 "l"(global_src), "r"(bytes), "r"(shared_address(barrier))
                 : "memory");
}
// Shared -> global as one bulk group of the issuing thread.
SCANRT_DEVICE void bulk_store(void* global_dst, const void* shared_src, u32 bytes) {
    asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(global_dst),
                 "r"(shared_address(shared_src)), "r"(bytes)
                 : "memory");
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}
// The issuing thread's bulk stores have finished reading shared memory (it may be reused).
SCANRT_DEVICE void bulk_stores_read() { asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory"); }
// The issuing thread's bulk stores are complete.
SCANRT_DEVICE void bulk_stores_done() { asm volatile("cp.async.bulk.wait_group 0;" ::: "memory"); }
// Orders this thread's generic-proxy writes to shared memory before later bulk copies.
SCANRT_DEVICE void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }

SCANRT_DEVICE u32 dynamic_shared_bytes() {
    u32 bytes;
    asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(bytes));
    return bytes;
}
