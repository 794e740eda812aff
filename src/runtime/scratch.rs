//! Temporary device memory of one call (a sort's second buffer and its digit counts):
//! stream-ordered allocations from a memory pool of scanrt's own. The pool keeps freed
//! memory for the next call (release threshold: unlimited, until `Context::trim`), where
//! the device's default pool would hand it back to the driver at every synchronisation
//! and the next call would map it again; and the application's default pool stays as the
//! application configured it. Under stream capture the allocation and its free become the
//! graph's memory nodes.

use cudarc::driver::sys::{self, CUdeviceptr, CUstream};

use crate::error::Result;
use crate::runtime::driver::check;

/// scanrt's memory pool on one device.
pub(crate) struct ScratchPool {
    pool: sys::CUmemoryPool,
}

// SAFETY: a memory pool handle is a driver object usable from any thread.
unsafe impl Send for ScratchPool {}
unsafe impl Sync for ScratchPool {}

impl ScratchPool {
    /// A pool of device memory on `ordinal`. The caller has entered the device's context.
    pub fn new(ordinal: usize) -> Result<ScratchPool> {
        // SAFETY: zeroed properties are valid defaults; the fields set name this device.
        let mut props: sys::CUmemPoolProps = unsafe { std::mem::zeroed() };
        props.allocType = sys::CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED;
        props.location.type_ = sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE;
        props.location.id = ordinal as i32;
        let mut pool: sys::CUmemoryPool = std::ptr::null_mut();
        // SAFETY: out-pointer to a local; the properties outlive the call.
        check(unsafe { sys::cuMemPoolCreate(&mut pool, &props) }, "cuMemPoolCreate")?;
        let mut keep_all: u64 = u64::MAX;
        // SAFETY: the pool was just created; the attribute takes a u64.
        let kept = check(
            unsafe {
                sys::cuMemPoolSetAttribute(
                    pool,
                    sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                    &mut keep_all as *mut u64 as *mut std::ffi::c_void,
                )
            },
            "cuMemPoolSetAttribute",
        );
        let pool = ScratchPool { pool };
        kept.map(|_| pool)
    }

    /// `bytes` of device memory, ready in stream order on `stream`.
    ///
    /// # Safety
    /// `stream` is a live stream of the pool's device's context, which is current; the
    /// memory is freed with `free` on a stream that orders after every use.
    pub unsafe fn alloc(&self, bytes: usize, stream: CUstream) -> Result<CUdeviceptr> {
        let mut ptr: CUdeviceptr = 0;
        check(
            sys::cuMemAllocFromPoolAsync(&mut ptr, bytes.max(1), self.pool, stream),
            "cuMemAllocFromPoolAsync",
        )?;
        Ok(ptr)
    }

    /// Frees `ptr` after the work queued on `stream`.
    ///
    /// # Safety
    /// `ptr` came from `alloc` and is not used by work ordered after this.
    pub unsafe fn free(&self, ptr: CUdeviceptr, stream: CUstream) -> Result<()> {
        check(sys::cuMemFreeAsync(ptr, stream), "cuMemFreeAsync")
    }

    /// Returns the freed memory the pool keeps to the driver. The caller has entered the
    /// device's context.
    pub fn trim(&self) -> Result<()> {
        // SAFETY: the pool is alive; trimming never touches memory in use.
        check(unsafe { sys::cuMemPoolTrimTo(self.pool, 0) }, "cuMemPoolTrimTo")
    }
}

impl Drop for ScratchPool {
    fn drop(&mut self) {
        // SAFETY: the device is being closed; its queued work was synchronised by the
        // owner (GpuDevice), and nothing allocated from the pool is still in use.
        unsafe {
            sys::cuMemPoolDestroy(self.pool);
        }
    }
}
