//! Streams: scanrt-owned, or wrapping an application's `cudaStream_t`.

use std::ffi::c_void;

use super::context::scanrt_context;
use super::support::{boundary, non_null, put};
use crate::stream::Stream;
use crate::tables::ScanrtStatus;

/// A stream: created by scanrt, or wrapping an application's `cudaStream_t`.
pub struct scanrt_stream {
    pub(crate) inner: Stream,
}

/// Creates a stream owned by scanrt (a no-op stream on the host backend).
#[no_mangle]
pub unsafe extern "C" fn scanrt_stream_create(
    ctx: *const scanrt_context,
    out: *mut *mut scanrt_stream,
) -> ScanrtStatus {
    boundary(|| {
        put(out, || {
            Ok(scanrt_stream {
                inner: non_null(ctx, "ctx")?.inner.new_stream()?,
            })
        })
    })
}

/// Wraps an application's `cudaStream_t` / `CUstream` (NULL = the legacy default
/// stream). scanrt never destroys it; it must outlive the wrapper.
#[no_mangle]
pub unsafe extern "C" fn scanrt_stream_wrap(
    ctx: *const scanrt_context,
    cuda_stream: *mut c_void,
    out: *mut *mut scanrt_stream,
) -> ScanrtStatus {
    boundary(|| {
        put(out, || {
            Ok(scanrt_stream {
                inner: non_null(ctx, "ctx")?.inner.borrow_stream(cuda_stream)?,
            })
        })
    })
}

/// Blocks until all work queued on the stream has finished.
#[no_mangle]
pub unsafe extern "C" fn scanrt_stream_synchronize(stream: *const scanrt_stream) -> ScanrtStatus {
    boundary(|| non_null(stream, "stream")?.inner.synchronize())
}

/// Destroys a stream wrapper (NULL is a no-op); an owned stream is destroyed too.
#[no_mangle]
pub unsafe extern "C" fn scanrt_stream_destroy(stream: *mut scanrt_stream) {
    super::support::destroy(stream)
}
