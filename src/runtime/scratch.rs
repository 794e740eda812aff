//! Temporary device memory of one call (a sort's second buffer and its digit counts):
//! stream-ordered allocations from a memory pool of scanrt's own. The pool keeps freed
//! memory for the next call (release threshold: unlimited, until `Context::trim`), where
//! the device's default pool would hand it back to the driver at every synchronisation
//! and the next call would map it again; and the application's default pool stays as the
//! application configured it. Under stream capture the allocation and its free become the
//! graph's memory nodes.

use crate::error::Result;
use crate::runtime::cu::{self, CUdeviceptr, CUstream, MemoryPool};

/// scanrt's memory pool on one device.
pub(crate) struct ScratchPool {
    pool: MemoryPool,
}

impl ScratchPool {
    /// A pool of device memory on `ordinal`. The caller has entered the device's context.
    pub fn new(ordinal: usize) -> Result<ScratchPool> {
        Ok(ScratchPool {
            pool: MemoryPool::keeping_freed_memory(ordinal)?,
        })
    }

    /// `bytes` of device memory, ready in stream order on `stream`.
    ///
    /// # Safety
    /// `stream` is a live stream of the pool's device's context, which is current; the
    /// memory is freed with `free` on a stream that orders after every use.
    pub unsafe fn alloc(&self, bytes: usize, stream: CUstream) -> Result<CUdeviceptr> {
        self.pool.alloc_async(bytes, stream)
    }

    /// Frees `ptr` after the work queued on `stream`.
    ///
    /// # Safety
    /// `ptr` came from `alloc` and is not used by work ordered after this.
    pub unsafe fn free(&self, ptr: CUdeviceptr, stream: CUstream) -> Result<()> {
        cu::free_async(ptr, stream)
    }

    /// Returns the freed memory the pool keeps to the driver. The caller has entered the
    /// device's context.
    pub fn trim(&self) -> Result<()> {
        self.pool.trim()
    }
}
