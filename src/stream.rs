//! Streams: owned by scanrt, or an application's `CUstream` / `cudaStream_t`.

use std::ffi::c_void;
use std::sync::Arc;

use cudarc::driver::CudaStream;

use crate::context::Context;
use crate::error::{bail, Result};
use crate::runtime::cu::{self, CUstream, PreserveCurrent};
use crate::runtime::workspace::{self, Workspace};

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
            unsafe { cu::synchronize_stream(self.raw) }?;
        }
        Ok(())
    }
}

/// The stream entry points of a context.
impl Context {
    /// A new stream owned by scanrt (a no-op stream on the host backend).
    pub fn new_stream(&self) -> Result<Stream> {
        let cuda = match self.engine().device() {
            None => None,
            Some(d) => {
                let _current = d.enter()?;
                Some(d.ctx.new_stream()?)
            }
        };
        Ok(Stream::owned(self, cuda))
    }

    /// Adopts an application's `CUstream` / `cudaStream_t` (NULL = the legacy default
    /// stream) without taking ownership: scanrt never destroys it.
    ///
    /// # Safety
    /// The stream must stay valid while the returned `Stream` is used.
    pub unsafe fn borrow_stream(&self, raw: *mut c_void) -> Result<Stream> {
        let d = self.gpu()?;
        let _current = d.enter()?;
        d.check_stream(raw as CUstream)?;
        Ok(Stream::borrowed(self, raw, true))
    }

    /// Initialises a caller-provided workspace on `stream` (zero-fills it and writes its
    /// sealed header). Required before its first use, and again after a `WorkspaceFault`
    /// names it; a kernel refuses a workspace that was not initialised, or was
    /// initialised for fewer tiles than its scan needs.
    pub fn init_workspace(&self, stream: &Stream, workspace: Workspace) -> Result<()> {
        let d = self.gpu()?;
        self.check_stream_owner(stream)?;
        let _current = d.enter()?;
        if !stream.verified() {
            d.check_stream(stream.raw() as CUstream)?;
        }
        d.check_workspace(workspace)?;
        // SAFETY: the range was just checked to be device memory of this device, aligned
        // and long enough for the header.
        unsafe { workspace::initialise(workspace.ptr, workspace.bytes, stream.raw() as CUstream) }
    }

    /// `ContextMismatch` unless `stream` was made or adopted by this context.
    pub(crate) fn check_stream_owner(&self, stream: &Stream) -> Result<()> {
        if !self.same(&stream.ctx) {
            bail!(ContextMismatch, "the stream was created by another scanrt context");
        }
        Ok(())
    }
}
