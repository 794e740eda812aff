//! Streams: the context, id and capture state of the caller's streams, private streams
//! scanrt creates for one-time work, and events ordering streams after each other.

use cudarc::driver::sys::{self, CUcontext, CUstream};

use super::check::check;
use crate::error::{Error, Result, ScanrtStatus};

/// The context `stream` belongs to.
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

/// The unique id the driver gives a stream (also the legacy and per-thread default
/// streams, and per thread for the latter).
pub(crate) fn stream_id(stream: CUstream) -> Result<u64> {
    let mut id: std::ffi::c_ulonglong = 0;
    // SAFETY: out-pointer to a local; an invalid handle yields an error code.
    check(unsafe { sys::cuStreamGetId(stream, &mut id) }, "cuStreamGetId")?;
    Ok(id)
}

/// Waits on the host for the work queued on `stream`.
///
/// # Safety
/// `stream` is a live stream of the current context (or a default stream).
pub(crate) unsafe fn synchronize_stream(stream: CUstream) -> Result<()> {
    check(sys::cuStreamSynchronize(stream), "cuStreamSynchronize")
}

/// A non-blocking stream of the current context for scanrt's own one-time work,
/// destroyed on drop (its queued work still completes).
pub(crate) struct PrivateStream(CUstream);

impl PrivateStream {
    pub fn new() -> Result<PrivateStream> {
        let mut s: CUstream = std::ptr::null_mut();
        // SAFETY: out-pointer to a local.
        check(
            unsafe { sys::cuStreamCreate(&mut s, sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32) },
            "cuStreamCreate",
        )?;
        Ok(PrivateStream(s))
    }

    pub fn raw(&self) -> CUstream {
        self.0
    }

    pub fn synchronize(&self) -> Result<()> {
        // SAFETY: the stream is alive until drop.
        unsafe { synchronize_stream(self.0) }
    }
}

impl Drop for PrivateStream {
    fn drop(&mut self) {
        // SAFETY: created in `new`, destroyed once.
        unsafe { sys::cuStreamDestroy_v2(self.0) };
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
