//! Thin checked wrappers over the few raw CUDA driver calls scanrt makes outside
//! cudarc's safe layer (context switching, pointer queries, capture state, launches).

use std::ffi::c_void;

use cudarc::driver::sys::{self, CUcontext, CUdeviceptr, CUresult, CUstream};

use crate::error::{Error, Result, ScanrtStatus};

pub(crate) fn check(r: CUresult, call: &str) -> Result<()> {
    if r == CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(Error::new(ScanrtStatus::CudaError, format!("{call} failed: {r:?}")))
    }
}

/// Makes `ctx` current for the guard's lifetime and restores the caller's current
/// context (possibly none) on drop, so scanrt never leaves the thread's state changed.
pub(crate) struct CurrentContext {
    previous: CUcontext,
    switched: bool,
}

impl CurrentContext {
    pub fn enter(ctx: CUcontext) -> Result<Self> {
        let mut previous: CUcontext = std::ptr::null_mut();
        // SAFETY: out-pointer to a local; the driver library is loaded (a context exists).
        check(unsafe { sys::cuCtxGetCurrent(&mut previous) }, "cuCtxGetCurrent")?;
        let switched = previous != ctx;
        if switched {
            // SAFETY: `ctx` is a live context retained by the owning CudaContext.
            check(unsafe { sys::cuCtxSetCurrent(ctx) }, "cuCtxSetCurrent")?;
        }
        Ok(CurrentContext { previous, switched })
    }
}

impl Drop for CurrentContext {
    fn drop(&mut self) {
        if self.switched {
            // SAFETY: restores the handle that was current on entry (NULL is allowed).
            unsafe { sys::cuCtxSetCurrent(self.previous) };
        }
    }
}

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

pub(crate) fn stream_context(stream: CUstream) -> Result<CUcontext> {
    let mut ctx: CUcontext = std::ptr::null_mut();
    // SAFETY: out-pointer to a local; an invalid stream handle yields an error code.
    check(unsafe { sys::cuStreamGetCtx(stream, &mut ctx) }, "cuStreamGetCtx")?;
    Ok(ctx)
}

pub(crate) fn is_capturing(stream: CUstream) -> Result<bool> {
    let mut status = sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
    // SAFETY: out-pointer to a local.
    check(
        unsafe { sys::cuStreamIsCapturing(stream, &mut status) },
        "cuStreamIsCapturing",
    )?;
    Ok(status != sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE)
}

/// Runs `f` with this thread's stream-capture mode relaxed, so that one-time setup
/// (allocating a workspace) is legal while some stream is being captured.
pub(crate) fn with_relaxed_capture<T>(f: impl FnOnce() -> Result<T>) -> Result<T> {
    let mut mode = sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED;
    // SAFETY: exchanges the thread-local mode; restored below.
    check(
        unsafe { sys::cuThreadExchangeStreamCaptureMode(&mut mode) },
        "cuThreadExchangeStreamCaptureMode",
    )?;
    let out = f();
    // SAFETY: puts back the mode saved above.
    unsafe { sys::cuThreadExchangeStreamCaptureMode(&mut mode) };
    out
}

/// Launches `f` with raw kernel parameters and `shared_bytes` of dynamic shared memory.
///
/// # Safety
/// `params` must match the kernel's parameter list in number, order and types, and every
/// pointer passed must stay valid until the kernel completes.
pub(crate) unsafe fn launch(
    f: sys::CUfunction,
    grid: u32,
    block: u32,
    shared_bytes: u32,
    stream: CUstream,
    params: &mut [*mut c_void],
) -> Result<()> {
    check(
        sys::cuLaunchKernel(
            f,
            grid,
            1,
            1,
            block,
            1,
            1,
            shared_bytes,
            stream,
            params.as_mut_ptr(),
            std::ptr::null_mut(),
        ),
        "cuLaunchKernel",
    )
}
