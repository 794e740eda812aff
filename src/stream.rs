//! Streams: owned by scanrt, or an application's `CUstream` / `cudaStream_t`.

use std::ffi::c_void;
use std::sync::Arc;

use cudarc::driver::sys::{self, CUstream};
use cudarc::driver::CudaStream;

use crate::context::Context;
use crate::error::Result;
use crate::runtime::driver::{check, PreserveCurrent};

/// A stream: owned by scanrt, or borrowed from the application.
pub struct Stream {
    pub(crate) ctx: Context,
    raw: CUstream,
    /// The driver confirmed the stream belongs to the context's device (owned streams,
    /// and streams wrapped with `Context::borrow_stream`), so scans need not ask again.
    verified: bool,
    owned: Option<Arc<CudaStream>>,
}

// SAFETY: a CUstream handle may be used from any thread; the owned wrapper is Send+Sync.
unsafe impl Send for Stream {}
unsafe impl Sync for Stream {}

impl Drop for Stream {
    /// Destroys an owned stream (work queued on it still completes) and leaves the
    /// thread's current context as it was (cudarc's drop binds the stream's context).
    fn drop(&mut self) {
        if let Some(owned) = self.owned.take() {
            let _restore = PreserveCurrent::new();
            drop(owned);
        }
    }
}

impl Stream {
    /// A stream owned by scanrt (`None` on the host backend: a no-op stream).
    pub(crate) fn owned(ctx: &Context, cuda: Option<Arc<CudaStream>>) -> Stream {
        Stream {
            ctx: ctx.clone(),
            raw: cuda.as_ref().map_or(std::ptr::null_mut(), |s| s.cu_stream()),
            verified: true,
            owned: cuda,
        }
    }

    /// An application's stream; `verified` when the driver confirmed its context.
    pub(crate) fn borrowed(ctx: &Context, raw: *mut c_void, verified: bool) -> Stream {
        Stream {
            ctx: ctx.clone(),
            raw: raw as CUstream,
            verified,
            owned: None,
        }
    }

    pub(crate) fn verified(&self) -> bool {
        self.verified
    }

    /// The raw `CUstream` (NULL on the host backend).
    pub fn raw(&self) -> *mut c_void {
        self.raw as *mut c_void
    }

    /// Waits until all work queued on the stream has finished.
    pub fn synchronize(&self) -> Result<()> {
        if let Ok(d) = self.ctx.gpu() {
            let _current = d.enter()?;
            // SAFETY: the stream belongs to this context (checked when it was made, or by
            // the caller's contract for raw handles).
            check(unsafe { sys::cuStreamSynchronize(self.raw) }, "cuStreamSynchronize")?;
        }
        Ok(())
    }
}
