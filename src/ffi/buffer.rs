//! Buffers: allocation, wrapping device pointers, copies, queries.

use std::ffi::c_void;

use super::context::scanrt_context;
use super::stream::scanrt_stream;
use super::support::{boundary, non_null, non_null_mut, put};
use crate::buffer::Buffer;
use crate::error::{bail, Result};
use crate::stream::Stream;
use crate::tables::DType;
use crate::tables::ScanrtStatus;

/// A typed array: scanrt-owned memory or a view of an application's device pointer.
pub struct scanrt_buffer {
    pub(crate) inner: Buffer,
}

/// Allocates a buffer of `len` elements of `dtype` (a `scanrt_dtype`): device memory on
/// a GPU context, host memory on the host backend.
#[no_mangle]
pub unsafe extern "C" fn scanrt_buffer_create(
    ctx: *const scanrt_context,
    dtype: i32,
    len: u64,
    out: *mut *mut scanrt_buffer,
) -> ScanrtStatus {
    boundary(|| {
        put(out, || {
            Ok(scanrt_buffer {
                inner: Buffer::new(&non_null(ctx, "ctx")?.inner, DType::from_c(dtype)?, len)?,
            })
        })
    })
}

/// Wraps an application's device allocation of `len` elements (never freed by scanrt).
/// Fails with `SCANRT_STATUS_NOT_DEVICE_MEMORY` for host pointers and
/// `SCANRT_STATUS_BUFFER_TOO_SMALL` when the allocation is shorter than `len` elements.
#[no_mangle]
pub unsafe extern "C" fn scanrt_buffer_wrap_device(
    ctx: *const scanrt_context,
    device_ptr: *mut c_void,
    dtype: i32,
    len: u64,
    out: *mut *mut scanrt_buffer,
) -> ScanrtStatus {
    boundary(|| {
        put(out, || {
            Ok(scanrt_buffer {
                inner: Buffer::wrap_device(&non_null(ctx, "ctx")?.inner, device_ptr, DType::from_c(dtype)?, len)?,
            })
        })
    })
}

fn copy_checked(buffer: &Buffer, stream: &Stream, host: *mut c_void, n: u64, to_buffer: bool) -> Result<()> {
    if n > buffer.len() {
        bail!(
            BufferTooSmall,
            "{n} elements requested but the buffer holds {}",
            buffer.len()
        );
    }
    if n > 0 && host.is_null() {
        bail!(NullArgument, "host pointer must not be NULL");
    }
    buffer.copy_bytes(stream, host, (n * buffer.dtype().size() as u64) as usize, to_buffer)
}

/// Copies `n` elements from host memory into the start of the buffer; returns when done.
#[no_mangle]
pub unsafe extern "C" fn scanrt_buffer_upload(
    buffer: *mut scanrt_buffer,
    stream: *const scanrt_stream,
    host: *const c_void,
    n: u64,
) -> ScanrtStatus {
    boundary(|| {
        // Shared, as every other thread may hold the buffer too (the copy needs no more).
        copy_checked(
            &non_null(buffer as *const scanrt_buffer, "buffer")?.inner,
            &non_null(stream, "stream")?.inner,
            host as *mut c_void,
            n,
            true,
        )
    })
}

/// Copies the first `n` elements of the buffer into host memory, after the work queued
/// on `stream`; returns when done.
#[no_mangle]
pub unsafe extern "C" fn scanrt_buffer_download(
    buffer: *const scanrt_buffer,
    stream: *const scanrt_stream,
    host: *mut c_void,
    n: u64,
) -> ScanrtStatus {
    boundary(|| {
        copy_checked(
            &non_null(buffer, "buffer")?.inner,
            &non_null(stream, "stream")?.inner,
            host,
            n,
            false,
        )
    })
}

/// Writes the buffer's length in elements to `*out`.
#[no_mangle]
pub unsafe extern "C" fn scanrt_buffer_length(buffer: *const scanrt_buffer, out: *mut u64) -> ScanrtStatus {
    boundary(|| {
        *non_null_mut(out, "out")? = non_null(buffer, "buffer")?.inner.len();
        Ok(())
    })
}

/// Writes the buffer's element type (a `scanrt_dtype` value) to `*out`.
#[no_mangle]
pub unsafe extern "C" fn scanrt_buffer_dtype(buffer: *const scanrt_buffer, out: *mut i32) -> ScanrtStatus {
    boundary(|| {
        *non_null_mut(out, "out")? = non_null(buffer, "buffer")?.inner.dtype() as i32;
        Ok(())
    })
}

/// Writes the buffer's element address to `*out`: a device pointer on a GPU context.
/// `*out` is NULL after a failure, as a handle out-parameter is.
#[no_mangle]
pub unsafe extern "C" fn scanrt_buffer_pointer(buffer: *const scanrt_buffer, out: *mut *mut c_void) -> ScanrtStatus {
    boundary(|| {
        let out = non_null_mut(out, "out")?;
        *out = std::ptr::null_mut();
        *out = non_null(buffer, "buffer")?.inner.addr() as *mut c_void;
        Ok(())
    })
}

/// Destroys a buffer (NULL is a no-op); owned device memory is freed.
#[no_mangle]
pub unsafe extern "C" fn scanrt_buffer_destroy(buffer: *mut scanrt_buffer) {
    super::support::destroy(buffer)
}
