//! Contexts: entering one and restoring the caller's, releasing cudarc's handle the same
//! way, relaxed capture mode, the driver's initialisation, synchronising a context.

use std::sync::Arc;

use cudarc::driver::sys::{self, CUcontext, CUresult};
use cudarc::driver::CudaContext;

use super::check::check;
use crate::error::{bail, Result};

/// Initialises the driver: `NoDriver` without libcuda (or with the toolkit's stub, or a
/// kernel module that does not match it), `NoDevice` when it sees no device, `CudaError`
/// when it is there but fails.
pub(crate) fn init() -> Result<()> {
    // SAFETY: only probes whether libcuda can be dlopen'ed. (Linked rather than loaded,
    // the library is there or the program would not have started.)
    #[cfg(feature = "dynamic-loading")]
    if !unsafe { sys::is_culib_present() } {
        bail!(NoDriver, "no CUDA driver library (libcuda.so) could be loaded");
    }
    // SAFETY: the library is present; cuInit is idempotent.
    match unsafe { sys::cuInit(0) } {
        CUresult::CUDA_SUCCESS => Ok(()),
        CUresult::CUDA_ERROR_NO_DEVICE => bail!(NoDevice, "the CUDA driver found no device"),
        e @ (CUresult::CUDA_ERROR_STUB_LIBRARY | CUresult::CUDA_ERROR_SYSTEM_DRIVER_MISMATCH) => {
            bail!(NoDriver, "cuInit failed ({e:?}): no usable CUDA driver")
        }
        e => bail!(CudaError, "cuInit failed ({e:?}): the CUDA driver is unusable"),
    }
}

/// The thread's current context (NULL: none).
pub(crate) fn current_context() -> Result<CUcontext> {
    let mut current: CUcontext = std::ptr::null_mut();
    // SAFETY: out-pointer to a local; the driver library is loaded.
    check(unsafe { sys::cuCtxGetCurrent(&mut current) }, "cuCtxGetCurrent")?;
    Ok(current)
}

/// Makes `ctx` (NULL: none) the thread's current context, ignoring failure: for putting
/// back a context that was current a moment ago.
///
/// # Safety
/// `ctx` is NULL or a live context.
pub(crate) unsafe fn restore_context(ctx: CUcontext) {
    sys::cuCtxSetCurrent(ctx);
}

/// Waits for all work on the current context.
pub(crate) fn synchronize_current_context() -> Result<()> {
    // SAFETY: no arguments; fails without a current context.
    check(unsafe { sys::cuCtxSynchronize() }, "cuCtxSynchronize")
}

/// Makes `ctx` current for the guard's lifetime and restores the caller's current
/// context (possibly none) on drop, so scanrt never leaves the thread's state changed.
pub(crate) struct CurrentContext {
    previous: CUcontext,
    switched: bool,
}

impl CurrentContext {
    pub fn enter(ctx: CUcontext) -> Result<Self> {
        let previous = current_context()?;
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
        PreserveCurrent(current_context().ok())
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
