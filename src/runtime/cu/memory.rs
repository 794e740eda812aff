//! Device memory: allocations (plain, stream-ordered, from a pool, mapped host memory),
//! memsets and copies, and what the driver knows about an address.

use std::ffi::c_void;

use cudarc::driver::sys::{self, CUdeviceptr, CUstream};

use super::check::check;
use crate::error::Result;

/// What the driver knows about a device pointer.
pub(crate) struct PointerInfo {
    pub memory_type: u32,
    pub device_ordinal: i32,
    pub range_start: CUdeviceptr,
    pub range_size: usize,
}

pub(crate) fn pointer_info(ptr: CUdeviceptr) -> Result<PointerInfo> {
    let mut memory_type: u32 = 0;
    let mut device_ordinal: i32 = -1;
    let mut range_start: CUdeviceptr = 0;
    let mut range_size: usize = 0;
    let mut attrs = [
        sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
        sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
        sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
        sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_RANGE_SIZE,
    ];
    let mut data: [*mut c_void; 4] = [
        &mut memory_type as *mut u32 as *mut c_void,
        &mut device_ordinal as *mut i32 as *mut c_void,
        &mut range_start as *mut CUdeviceptr as *mut c_void,
        &mut range_size as *mut usize as *mut c_void,
    ];
    // SAFETY: each data slot points at a local of the size the attribute returns
    // (u32 memory type, int ordinal, CUdeviceptr start, size_t size). For pointers the
    // driver does not know, cuPointerGetAttributes leaves defaults and succeeds.
    check(
        unsafe { sys::cuPointerGetAttributes(4, attrs.as_mut_ptr(), data.as_mut_ptr(), ptr) },
        "cuPointerGetAttributes",
    )?;
    Ok(PointerInfo {
        memory_type,
        device_ordinal,
        range_start,
        range_size,
    })
}

/// Whether `memory_type` (of [`PointerInfo`]) is memory kernels may address: device or
/// managed memory.
pub(crate) fn is_device_memory_type(memory_type: u32) -> bool {
    memory_type == sys::CUmemorytype::CU_MEMORYTYPE_DEVICE as u32
        || memory_type == sys::CUmemorytype::CU_MEMORYTYPE_UNIFIED as u32
}

/// Whether `ptr` is page-locked host memory that kernels address at the same address
/// (`cudaMallocHost`, `cudaHostAlloc`, registered memory mapped under unified addressing).
pub(crate) fn is_mapped_host_memory(ptr: CUdeviceptr) -> Result<bool> {
    let mut memory_type: u32 = 0;
    let mut device_pointer: CUdeviceptr = 0;
    // SAFETY: out-pointers to locals of the attributes' sizes (u32; CUdeviceptr). A
    // pointer the driver does not know (pageable memory) is an error: not mapped.
    unsafe {
        let known = sys::cuPointerGetAttribute(
            &mut memory_type as *mut u32 as *mut c_void,
            sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
            ptr,
        );
        if known != sys::CUresult::CUDA_SUCCESS || memory_type != sys::CUmemorytype::CU_MEMORYTYPE_HOST as u32 {
            return Ok(false);
        }
        check(
            sys::cuPointerGetAttribute(
                &mut device_pointer as *mut CUdeviceptr as *mut c_void,
                sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_DEVICE_POINTER,
                ptr,
            ),
            "cuPointerGetAttribute",
        )?;
    }
    Ok(device_pointer == ptr)
}

/// Whether `memory_type` (of [`PointerInfo`]) is device memory proper (not managed).
pub(crate) fn is_plain_device_memory_type(memory_type: u32) -> bool {
    memory_type == sys::CUmemorytype::CU_MEMORYTYPE_DEVICE as u32
}

/// `bytes` of device memory of the current context (none for 0 bytes: address 0).
pub(crate) fn alloc(bytes: usize) -> Result<CUdeviceptr> {
    let mut ptr = 0;
    if bytes > 0 {
        // SAFETY: out-pointer to a local.
        check(unsafe { sys::cuMemAlloc_v2(&mut ptr, bytes) }, "cuMemAlloc")?;
    }
    Ok(ptr)
}

/// Frees memory from [`alloc`] (0: nothing), ignoring failure (a drop path). cuMemFree
/// waits for outstanding work that uses it.
///
/// # Safety
/// `ptr` came from [`alloc`] in the current context and is freed once.
pub(crate) unsafe fn free(ptr: CUdeviceptr) {
    if ptr != 0 {
        sys::cuMemFree_v2(ptr);
    }
}

/// `bytes` of device memory from the device's default pool, ready in stream order.
///
/// # Safety
/// `stream` is a live stream of the current context.
pub(crate) unsafe fn alloc_async(bytes: usize, stream: CUstream) -> Result<CUdeviceptr> {
    let mut ptr: CUdeviceptr = 0;
    check(sys::cuMemAllocAsync(&mut ptr, bytes, stream), "cuMemAllocAsync")?;
    Ok(ptr)
}

/// Frees stream-ordered memory after the work queued on `stream`.
///
/// # Safety
/// `ptr` came from a stream-ordered allocation of the current context, is freed once and
/// is not used by work ordered after this; `stream` is live.
pub(crate) unsafe fn free_async(ptr: CUdeviceptr, stream: CUstream) -> Result<()> {
    check(sys::cuMemFreeAsync(ptr, stream), "cuMemFreeAsync")
}

/// A memory pool of scanrt's own on one device, destroyed on drop.
pub(crate) struct MemoryPool(sys::CUmemoryPool);

// SAFETY: a memory pool handle is a driver object usable from any thread.
unsafe impl Send for MemoryPool {}
unsafe impl Sync for MemoryPool {}

impl MemoryPool {
    /// A pool of device memory on `ordinal` that keeps all freed memory until trimmed.
    /// The caller has entered the device's context.
    pub fn keeping_freed_memory(ordinal: usize) -> Result<MemoryPool> {
        // SAFETY: zeroed properties are valid defaults; the fields set name this device.
        let mut props: sys::CUmemPoolProps = unsafe { std::mem::zeroed() };
        props.allocType = sys::CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED;
        props.location.type_ = sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE;
        props.location.id = ordinal as i32;
        let mut pool: sys::CUmemoryPool = std::ptr::null_mut();
        // SAFETY: out-pointer to a local; the properties outlive the call.
        check(unsafe { sys::cuMemPoolCreate(&mut pool, &props) }, "cuMemPoolCreate")?;
        let pool = MemoryPool(pool);
        let mut keep_all: u64 = u64::MAX;
        // SAFETY: the pool is alive; the attribute takes a u64.
        check(
            unsafe {
                sys::cuMemPoolSetAttribute(
                    pool.0,
                    sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                    &mut keep_all as *mut u64 as *mut c_void,
                )
            },
            "cuMemPoolSetAttribute",
        )?;
        Ok(pool)
    }

    /// `bytes` (at least 1) of device memory, ready in stream order on `stream`; freed
    /// with [`free_async`].
    ///
    /// # Safety
    /// `stream` is a live stream of the pool's device's context, which is current.
    pub unsafe fn alloc_async(&self, bytes: usize, stream: CUstream) -> Result<CUdeviceptr> {
        let mut ptr: CUdeviceptr = 0;
        check(
            sys::cuMemAllocFromPoolAsync(&mut ptr, bytes.max(1), self.0, stream),
            "cuMemAllocFromPoolAsync",
        )?;
        Ok(ptr)
    }

    /// Returns the freed memory the pool keeps to the driver. The caller has entered the
    /// device's context.
    pub fn trim(&self) -> Result<()> {
        // SAFETY: the pool is alive; trimming never touches memory in use.
        check(unsafe { sys::cuMemPoolTrimTo(self.0, 0) }, "cuMemPoolTrimTo")
    }
}

impl Drop for MemoryPool {
    fn drop(&mut self) {
        // SAFETY: created in `keeping_freed_memory`, destroyed once; the owner made sure
        // nothing allocated from it is still in use.
        unsafe { sys::cuMemPoolDestroy(self.0) };
    }
}

/// Page-locked host memory mapped into the device's address space: `(host, device)`
/// addresses of `bytes` bytes, usable from every context. Freed with [`free_mapped_host`].
pub(crate) fn alloc_mapped_host(bytes: usize) -> Result<(*mut c_void, CUdeviceptr)> {
    let mut host: *mut c_void = std::ptr::null_mut();
    let mut device: CUdeviceptr = 0;
    // SAFETY: out-pointers to locals; the allocation is freed if the second call fails.
    unsafe {
        check(
            sys::cuMemHostAlloc(
                &mut host,
                bytes,
                sys::CU_MEMHOSTALLOC_DEVICEMAP | sys::CU_MEMHOSTALLOC_PORTABLE,
            ),
            "cuMemHostAlloc",
        )?;
        if let Err(e) = check(
            sys::cuMemHostGetDevicePointer_v2(&mut device, host, 0),
            "cuMemHostGetDevicePointer",
        ) {
            sys::cuMemFreeHost(host);
            return Err(e);
        }
    }
    Ok((host, device))
}

/// Frees memory from [`alloc_mapped_host`], ignoring failure (a drop path).
///
/// # Safety
/// `host` came from [`alloc_mapped_host`], is freed once, and nothing uses it any more.
pub(crate) unsafe fn free_mapped_host(host: *mut c_void) {
    sys::cuMemFreeHost(host);
}

/// Zero-fills `bytes` bytes of device memory at `ptr`, ordered on `stream` (capturable).
///
/// # Safety
/// `[ptr, ptr + bytes)` is device memory of the current context, `stream` a live stream
/// of it.
pub(crate) unsafe fn zero_async(ptr: CUdeviceptr, bytes: usize, stream: CUstream) -> Result<()> {
    check(sys::cuMemsetD8Async(ptr, 0, bytes, stream), "cuMemsetD8Async")
}

/// Copies `bytes` from `src` to `dst`, stream-ordered on `stream`.
///
/// # Safety
/// Both ranges are device memory of the current context and do not overlap; `stream` is
/// a live stream of it.
pub(crate) unsafe fn copy_async(dst: CUdeviceptr, src: CUdeviceptr, bytes: usize, stream: CUstream) -> Result<()> {
    check(sys::cuMemcpyDtoDAsync_v2(dst, src, bytes, stream), "cuMemcpyDtoDAsync")
}

/// Writes `value` (a multiple of 4 bytes) at the device address `dst` on `stream`, one
/// 32-bit memset per word: no host buffer has to outlive the call, and graphs capture it.
///
/// # Safety
/// `dst` must be device memory of `value.len()` bytes, 4-byte aligned.
pub(crate) unsafe fn fill_async(dst: CUdeviceptr, value: &[u8], stream: CUstream) -> Result<()> {
    for (i, word) in value.chunks_exact(4).enumerate() {
        let word = u32::from_ne_bytes(word.try_into().expect("4 bytes"));
        check(
            sys::cuMemsetD32Async(dst + 4 * i as u64, word, 1, stream),
            "cuMemsetD32Async",
        )?;
    }
    Ok(())
}

/// Writes `value` (a multiple of 4 bytes) `count` times back to back from the device
/// address `dst` on `stream`: one strided 32-bit memset per word of the value.
///
/// # Safety
/// `dst` must be device memory of `count * value.len()` bytes, 4-byte aligned.
pub(crate) unsafe fn fill_repeated_async(dst: CUdeviceptr, value: &[u8], count: u64, stream: CUstream) -> Result<()> {
    for (i, word) in value.chunks_exact(4).enumerate() {
        let word = u32::from_ne_bytes(word.try_into().expect("4 bytes"));
        check(
            sys::cuMemsetD2D32Async(dst + 4 * i as u64, value.len(), word, 1, count as usize, stream),
            "cuMemsetD2D32Async",
        )?;
    }
    Ok(())
}

/// Copies `bytes` between host memory and device memory on `stream`: asynchronous for
/// page-locked host memory; pageable memory is staged by the driver at its own speed.
///
/// # Safety
/// `host` holds `bytes` bytes (writable when `to_host`) and stays alive until the copy
/// completes; `device` is device memory of the current context; `stream` a live stream.
pub(crate) unsafe fn copy_host_async(
    host: *mut std::ffi::c_void,
    device: CUdeviceptr,
    bytes: usize,
    to_host: bool,
    stream: CUstream,
) -> Result<()> {
    if to_host {
        check(
            sys::cuMemcpyDtoHAsync_v2(host, device, bytes, stream),
            "cuMemcpyDtoHAsync",
        )
    } else {
        check(
            sys::cuMemcpyHtoDAsync_v2(device, host, bytes, stream),
            "cuMemcpyHtoDAsync",
        )
    }
}
