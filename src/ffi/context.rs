//! Contexts: creation, backend, kernel preparation and packs, workspace trimming, faults.

use std::ffi::{c_char, CStr, CString};

use super::support::{boundary, non_null, non_null_mut, put};
use crate::context::{Backend, Context};
use crate::error::bail;
use crate::tables::ScanrtStatus;
use crate::tables::{DType, Op};

/// A scanrt context: one CUDA device (its primary context) or the host backend.
pub struct scanrt_context {
    pub(crate) inner: Context,
    /// `inner.backend_reason()` for C, alive as long as the context.
    pub(crate) backend_reason: CString,
}

/// Creates a context. `backend` is a `scanrt_backend`; `device` is the CUDA device
/// ordinal (ignored by the host backend). `SCANRT_BACKEND_AUTO` falls back to the host
/// only when the CUDA driver, every device or NVRTC is missing, and says so in
/// `scanrt_context_backend_reason`; any other failure (an ordinal out of range, a broken
/// driver) is returned. `SCANRT_BACKEND_GPU` fails with `SCANRT_STATUS_NO_DRIVER`,
/// `SCANRT_STATUS_NO_DEVICE` or `SCANRT_STATUS_COMPILE_ERROR` (no NVRTC). `*out` is
/// NULL after a failure, as with every function that makes a handle.
#[no_mangle]
pub unsafe extern "C" fn scanrt_context_create(
    backend: i32,
    device: i32,
    out: *mut *mut scanrt_context,
) -> ScanrtStatus {
    boundary(|| {
        put(out, || {
            let backend = Backend::from_c(backend)?;
            if device < 0 {
                bail!(InvalidArgument, "device ordinal {device} is negative");
            }
            let inner = Context::new(backend, device as usize)?;
            let backend_reason = CString::new(inner.backend_reason().replace('\0', " ")).unwrap_or_default();
            Ok(scanrt_context { inner, backend_reason })
        })
    })
}

/// Destroys a context (NULL is a no-op). Streams and buffers made from it stay usable
/// until they are destroyed themselves.
#[no_mangle]
pub unsafe extern "C" fn scanrt_context_destroy(ctx: *mut scanrt_context) {
    super::support::destroy(ctx)
}

/// Writes the context's `scanrt_backend` (GPU or host) to `*out`.
#[no_mangle]
pub unsafe extern "C" fn scanrt_context_backend(ctx: *const scanrt_context, out: *mut i32) -> ScanrtStatus {
    boundary(|| {
        let ctx = non_null(ctx, "ctx")?;
        *non_null_mut(out, "out")? = ctx.inner.backend() as i32;
        Ok(())
    })
}

/// Why the context runs where it runs: for `SCANRT_BACKEND_AUTO`, what it found (the
/// GPU and NVRTC usable, or which of them is missing). A static-lifetime empty string
/// for NULL; otherwise valid until the context is destroyed.
#[no_mangle]
pub unsafe extern "C" fn scanrt_context_backend_reason(ctx: *const scanrt_context) -> *const c_char {
    match ctx.as_ref() {
        Some(ctx) => ctx.backend_reason.as_ptr(),
        None => c"".as_ptr(),
    }
}

/// Compiles (or loads from the disk cache) the kernels for one type pair and operator
/// now rather than at the first scan.
#[no_mangle]
pub unsafe extern "C" fn scanrt_context_prepare(
    ctx: *const scanrt_context,
    input_dtype: i32,
    output_dtype: i32,
    op: i32,
) -> ScanrtStatus {
    boundary(|| {
        let ctx = non_null(ctx, "ctx")?;
        ctx.inner.prepare(
            DType::from_c(input_dtype)?,
            DType::from_c(output_dtype)?,
            Op::from_c(op)?,
        )
    })
}

/// Releases the look-back workspaces the context keeps per stream that no call is using
/// right now, and those of streams that were destroyed (waiting for the device when there
/// are any). Graphs keep their own workspaces. The pool never holds more than 256
/// streams' workspaces; this returns them all.
#[no_mangle]
pub unsafe extern "C" fn scanrt_context_trim(ctx: *const scanrt_context) -> ScanrtStatus {
    boundary(|| non_null(ctx, "ctx")?.inner.trim())
}

/// Returns `SCANRT_STATUS_WORKSPACE_FAULT` when a kernel of this context refused its
/// workspace or gave up a look-back since the last call (the message names the
/// workspace), else `SCANRT_STATUS_OK`. Every scan call checks this first.
#[no_mangle]
pub unsafe extern "C" fn scanrt_context_check_faults(ctx: *const scanrt_context) -> ScanrtStatus {
    boundary(|| non_null(ctx, "ctx")?.inner.check_faults())
}

/// Looks for kernel packs (`scanrt-kernels-sm_<N>.pack`, from `scanrt-pack build`) in the
/// directory `path` too, before the places beside the library (a `$SCANRT_KERNEL_PACK_DIR`
/// that is set still names the only one). An architecture no pack served so far is
/// looked for again; a pack already in use stays. `SCANRT_STATUS_NULL_ARGUMENT` for NULL,
/// `SCANRT_STATUS_INVALID_ARGUMENT` for an empty path.
#[no_mangle]
pub unsafe extern "C" fn scanrt_add_kernel_pack_dir(path: *const c_char) -> ScanrtStatus {
    boundary(|| {
        if path.is_null() {
            bail!(NullArgument, "path must not be NULL");
        }
        // SAFETY: a non-NULL path is NUL-terminated (the function's contract).
        let bytes = unsafe { CStr::from_ptr(path) }.to_bytes();
        if bytes.is_empty() {
            bail!(InvalidArgument, "path is empty");
        }
        let dir = <std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(bytes);
        crate::add_kernel_pack_dir(std::path::Path::new(dir));
        Ok(())
    })
}
