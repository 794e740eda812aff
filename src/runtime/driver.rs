//! Thin checked wrappers over the few raw CUDA driver calls scanrt makes outside
//! cudarc's safe layer (context switching, pointer queries, capture state, launches).

use std::ffi::c_void;
use std::sync::Arc;

use cudarc::driver::sys::{self, CUcontext, CUdeviceptr, CUresult, CUstream};
use cudarc::driver::CudaContext;

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

/// The graph `stream` is being captured into, if it is. A stream whose capture was
/// invalidated is an error (the capture has failed already).
pub(crate) fn capture_graph(stream: CUstream) -> Result<Option<sys::CUgraph>> {
    let mut status = sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
    let mut graph: sys::CUgraph = std::ptr::null_mut();
    // SAFETY: out-pointers to locals; the optional outputs may be NULL.
    check(
        unsafe {
            sys::cuStreamGetCaptureInfo_v3(
                stream,
                &mut status,
                std::ptr::null_mut(),
                &mut graph,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            )
        },
        "cuStreamGetCaptureInfo",
    )?;
    match status {
        sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE => Ok(None),
        sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_ACTIVE => Ok(Some(graph)),
        _ => Err(Error::new(
            ScanrtStatus::CudaError,
            "the stream's capture was invalidated by an earlier call",
        )),
    }
}

/// An `Arc<CudaContext>` whose release leaves the thread's current context as it was:
/// cudarc's drop makes the context current and does not restore the caller's.
pub(crate) struct SharedContext(std::mem::ManuallyDrop<Arc<CudaContext>>);

impl SharedContext {
    pub fn new(ctx: Arc<CudaContext>) -> SharedContext {
        SharedContext(std::mem::ManuallyDrop::new(ctx))
    }
}

impl Clone for SharedContext {
    fn clone(&self) -> Self {
        SharedContext::new(Arc::clone(&self.0))
    }
}

impl std::ops::Deref for SharedContext {
    type Target = Arc<CudaContext>;
    fn deref(&self) -> &Arc<CudaContext> {
        &self.0
    }
}

impl Drop for SharedContext {
    fn drop(&mut self) {
        let _restore = PreserveCurrent::new();
        // SAFETY: dropped once, here.
        unsafe { std::mem::ManuallyDrop::drop(&mut self.0) };
    }
}

/// Puts the thread's current context back on drop, whatever happened in between (for
/// cudarc drops, which bind their own context).
pub(crate) struct PreserveCurrent(Option<CUcontext>);

impl PreserveCurrent {
    pub fn new() -> PreserveCurrent {
        let mut previous: CUcontext = std::ptr::null_mut();
        // SAFETY: out-pointer to a local.
        let ok = unsafe { sys::cuCtxGetCurrent(&mut previous) } == CUresult::CUDA_SUCCESS;
        PreserveCurrent(ok.then_some(previous))
    }
}

impl Drop for PreserveCurrent {
    fn drop(&mut self) {
        if let Some(previous) = self.0 {
            // SAFETY: restores the handle that was current (NULL allowed).
            unsafe { sys::cuCtxSetCurrent(previous) };
        }
    }
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

/// Launches `f` with its parameters laid out in `params` (the driver's parameter buffer:
/// each parameter at its natural alignment, as in a `#[repr(C)]` struct of them).
///
/// # Safety
/// `params` must hold the kernel's parameters, and every pointer among them must stay
/// valid until the kernel completes.
pub(crate) unsafe fn launch_with_buffer(
    f: sys::CUfunction,
    grid: u32,
    block: u32,
    shared_bytes: u32,
    stream: CUstream,
    params: &[u8],
) -> Result<()> {
    with_parameter_buffer(params, |extra| {
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
                std::ptr::null_mut(),
                extra,
            ),
            "cuLaunchKernel",
        )
    })
}

/// [`launch_with_buffer`] of a grid of `blocks` blocks that form one thread-block
/// cluster (sm_90+).
///
/// # Safety
/// As [`launch_with_buffer`]; `f` may form clusters of `blocks` blocks
/// ([`max_cluster_blocks`]).
pub(crate) unsafe fn launch_cluster_with_buffer(
    f: sys::CUfunction,
    blocks: u32,
    block: u32,
    shared_bytes: u32,
    stream: CUstream,
    params: &[u8],
) -> Result<()> {
    let mut attribute = cluster_attribute(blocks);
    let config = launch_config(blocks, block, shared_bytes, stream, &mut attribute);
    with_parameter_buffer(params, |extra| {
        check(
            sys::cuLaunchKernelEx(&config, f, std::ptr::null_mut(), extra),
            "cuLaunchKernelEx",
        )
    })
}

/// The most blocks, up to `most`, that `f` (launched with `block` threads and
/// `shared_bytes`) can group in one cluster on the current context's device; 0 where it
/// cannot form clusters (before sm_90).
pub(crate) fn max_cluster_blocks(f: sys::CUfunction, block: u32, shared_bytes: u32, most: u32) -> u32 {
    if most > 8 {
        // SAFETY: a loaded function and a valid attribute; a device that refuses
        // non-portable sizes keeps its limit of 8.
        let allowed = unsafe {
            sys::cuFuncSetAttribute(
                f,
                sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED,
                1,
            )
        };
        if allowed != CUresult::CUDA_SUCCESS {
            return max_cluster_blocks(f, block, shared_bytes, 8);
        }
    }
    (1..=most)
        .rev()
        .find(|&blocks| {
            let mut attribute = cluster_attribute(blocks);
            let config = launch_config(blocks, block, shared_bytes, std::ptr::null_mut(), &mut attribute);
            let mut clusters = 0;
            // SAFETY: out-pointer to a local; the config points at a live attribute.
            let r = unsafe { sys::cuOccupancyMaxActiveClusters(&mut clusters, f, &config) };
            r == CUresult::CUDA_SUCCESS && clusters > 0
        })
        .unwrap_or(0)
}

fn cluster_attribute(blocks: u32) -> sys::CUlaunchAttribute {
    // SAFETY: a plain C struct and union, for which all-zero bytes are valid.
    let mut attribute: sys::CUlaunchAttribute = unsafe { std::mem::zeroed() };
    attribute.id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attribute.value.clusterDim.x = blocks;
    attribute.value.clusterDim.y = 1;
    attribute.value.clusterDim.z = 1;
    attribute
}

fn launch_config(
    grid: u32,
    block: u32,
    shared_bytes: u32,
    stream: CUstream,
    attribute: &mut sys::CUlaunchAttribute,
) -> sys::CUlaunchConfig {
    sys::CUlaunchConfig {
        gridDimX: grid,
        gridDimY: 1,
        gridDimZ: 1,
        blockDimX: block,
        blockDimY: 1,
        blockDimZ: 1,
        sharedMemBytes: shared_bytes,
        hStream: stream,
        attrs: attribute,
        numAttrs: 1,
    }
}

/// Runs `launch` with the `extra` argument that passes `params` as one parameter buffer.
fn with_parameter_buffer(params: &[u8], launch: impl FnOnce(*mut *mut c_void) -> Result<()>) -> Result<()> {
    let mut size = params.len();
    let mut extra = [
        sys::CU_LAUNCH_PARAM_BUFFER_POINTER_AS_INT as usize as *mut c_void,
        params.as_ptr() as *mut c_void,
        sys::CU_LAUNCH_PARAM_BUFFER_SIZE_AS_INT as usize as *mut c_void,
        &mut size as *mut usize as *mut c_void,
        std::ptr::null_mut(), // CU_LAUNCH_PARAM_END
    ];
    launch(extra.as_mut_ptr())
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

/// A CUDA event without timing, to order streams after each other's work.
pub(crate) struct Event(sys::CUevent);

impl Event {
    /// A new event of the current context.
    pub fn new() -> Result<Event> {
        let mut event = std::ptr::null_mut();
        // SAFETY: out-pointer to a local.
        check(
            unsafe { sys::cuEventCreate(&mut event, sys::CUevent_flags::CU_EVENT_DISABLE_TIMING as u32) },
            "cuEventCreate",
        )?;
        Ok(Event(event))
    }

    /// Records the work queued on `stream` so far.
    ///
    /// # Safety
    /// `stream` is a live stream of the event's context.
    pub unsafe fn record(&self, stream: CUstream) -> Result<()> {
        check(sys::cuEventRecord(self.0, stream), "cuEventRecord")
    }

    /// Makes `stream` wait for the work last recorded.
    ///
    /// # Safety
    /// As `record`.
    pub unsafe fn wait_on(&self, stream: CUstream) -> Result<()> {
        check(sys::cuStreamWaitEvent(stream, self.0, 0), "cuStreamWaitEvent")
    }

    /// Waits on the host for the work last recorded.
    pub fn synchronize(&self) -> Result<()> {
        // SAFETY: the event is alive.
        check(unsafe { sys::cuEventSynchronize(self.0) }, "cuEventSynchronize")
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        // SAFETY: the event is alive; the driver releases it once recorded work completes.
        unsafe {
            sys::cuEventDestroy_v2(self.0);
        }
    }
}
