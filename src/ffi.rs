//! The C ABI: a thin shell over the Rust API. Every entry point converts and checks its
//! arguments, runs inside a panic boundary, returns a `scanrt_status` and leaves a
//! thread-local message readable with `scanrt_last_error_message`.
//!
//! `include/scanrt.h` is generated from this file by cbindgen (build.rs); CI fails when
//! the committed header is stale. Enum-valued arguments travel as `int32_t` so that an
//! out-of-range value from C is an error, never undefined behaviour.
#![allow(non_camel_case_types)]
#![allow(clippy::missing_safety_doc)]

use std::cell::RefCell;
use std::ffi::{c_char, c_void, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::context::{Backend, Buffer, Context, ScanInfo, Stream};
use crate::error::{bail, Error, Result, ScanrtStatus};
use crate::gpu::launch::Workspace;
use crate::scan::RawScan;
use crate::types::{Algorithm, ChoiceReason, DType, Direction, InitValue, Op, ScanDesc, Segments};

/// Major version of the scanrt library this header belongs to.
pub const SCANRT_VERSION_MAJOR: u32 = 0;
/// Minor version of the scanrt library this header belongs to.
pub const SCANRT_VERSION_MINOR: u32 = 2;
/// Patch version of the scanrt library this header belongs to.
pub const SCANRT_VERSION_PATCH: u32 = 0;

/// A scanrt context: one CUDA device (its primary context) or the host backend.
pub struct scanrt_context {
    inner: Context,
    /// `inner.backend_reason()` for C, alive as long as the context.
    backend_reason: CString,
}

/// A stream: created by scanrt, or wrapping an application's `cudaStream_t`.
pub struct scanrt_stream {
    inner: Stream,
}

/// A typed array: scanrt-owned memory or a view of an application's device pointer.
pub struct scanrt_buffer {
    inner: Buffer,
}

/// An initial value, read as the scan's output type.
#[repr(C)]
#[derive(Clone, Copy)]
pub union scanrt_value {
    pub i32: i32,
    pub u32: u32,
    pub i64: i64,
    pub u64: u64,
    pub f32: f32,
    pub f64: f64,
}

/// How a segmented scan finds its segments (`scanrt_scan_desc.segments`). The data at
/// `segment_data` is in memory order, one entry per element; segments are the same for
/// both directions (a backward scan treats a start flag as the end of its traversal).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScanrtSegments {
    /// An unsegmented scan (`segment_data` must be NULL).
    None = 0,
    /// One byte per element; nonzero starts a segment.
    ByteFlags = 1,
    /// Flags packed 32 to a `uint32_t` word: bit i of word w is element 32*w + i.
    BitFlags = 2,
    /// Scan by key: runs of equal consecutive keys of type `key_dtype` (u32, i32, u64, i64).
    Keys = 3,
}

/// What a scan computes. Initialise with `scanrt_scan_desc_init`, then set fields.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct scanrt_scan_desc {
    /// A `scanrt_op` value.
    pub op: i32,
    /// Nonzero for an inclusive scan, zero for exclusive.
    pub inclusive: i32,
    /// Nonzero when `init` holds an initial value (else the operator's identity is used).
    pub has_init: i32,
    /// The initial value, as the output type.
    pub init: scanrt_value,
    /// A `scanrt_algorithm` value (`SCANRT_ALGORITHM_AUTO` by default).
    pub algorithm: i32,
    /// A `scanrt_direction` value.
    pub direction: i32,
    /// Nonzero: bitwise identical results on every run (same GPU architecture and
    /// library version). Free for integer, min, max and bitwise scans; float sums and
    /// products run `SCANRT_ALGORITHM_DETERMINISTIC_SINGLE_PASS` (or the matrix scan).
    pub deterministic: i32,
    /// A `scanrt_segments` value (`SCANRT_SEGMENTS_NONE` by default).
    pub segments: i32,
    /// The key type (a `scanrt_dtype`) when `segments` is `SCANRT_SEGMENTS_KEYS`.
    pub key_dtype: i32,
    /// Flags or keys of a segmented scan: device memory on a GPU context (host memory on
    /// the host backend), at least as many entries as the scan has elements.
    pub segment_data: *const c_void,
}

/// What a scan call did (optional out parameter of the scan functions).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct scanrt_scan_info {
    /// The `scanrt_backend` that ran the scan (`SCANRT_BACKEND_GPU` or `SCANRT_BACKEND_HOST`).
    pub backend: i32,
    /// The `scanrt_algorithm` that ran (single-pass, deterministic single-pass, matrix, or host).
    pub algorithm: i32,
    /// Why that algorithm ran: a `scanrt_choice_reason`.
    pub reason: i32,
}

thread_local! {
    /// The last failed call's message, NUL-terminated, or empty after a success. Cleared
    /// in place, so a successful call allocates nothing.
    static LAST_ERROR: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Records `message` for `scanrt_last_error_message` ("" clears it). Does nothing on a
/// thread whose thread-locals are being destroyed (a call from a TLS destructor).
fn set_last_error(message: &str) {
    let _ = LAST_ERROR.try_with(|e| {
        if let Ok(mut e) = e.try_borrow_mut() {
            e.clear();
            if !message.is_empty() {
                e.extend(message.bytes().map(|b| if b == 0 { b' ' } else { b }));
                e.push(0);
            }
        }
    });
}

/// The panic boundary and error translation shared by every entry point.
fn boundary(f: impl FnOnce() -> Result<()>) -> ScanrtStatus {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => {
            set_last_error("");
            ScanrtStatus::Ok
        }
        Ok(Err(e)) => {
            set_last_error(&e.message);
            e.status
        }
        Err(_) => {
            set_last_error("internal error: a panic was caught at the scanrt C boundary");
            ScanrtStatus::Panic
        }
    }
}

fn non_null<'a, T>(p: *const T, what: &str) -> Result<&'a T> {
    // SAFETY: non-NULL pointers from C are trusted to point at a live object of the
    // documented type; that is the contract of every entry point.
    unsafe { p.as_ref() }.ok_or_else(|| Error::new(ScanrtStatus::NullArgument, format!("{what} must not be NULL")))
}

fn non_null_mut<'a, T>(p: *mut T, what: &str) -> Result<&'a mut T> {
    // SAFETY: as in non_null.
    unsafe { p.as_mut() }.ok_or_else(|| Error::new(ScanrtStatus::NullArgument, format!("{what} must not be NULL")))
}

/// Makes a handle for `*out`: `*out` is NULL unless `make` succeeds.
fn put<T>(out: *mut *mut T, make: impl FnOnce() -> Result<T>) -> Result<()> {
    let out = non_null_mut(out, "out")?;
    *out = std::ptr::null_mut();
    *out = Box::into_raw(Box::new(make()?));
    Ok(())
}

fn desc_from_c(desc: &scanrt_scan_desc, output: DType) -> Result<ScanDesc> {
    let op = Op::from_raw(desc.op)?;
    let algorithm = Algorithm::from_raw(desc.algorithm)?;
    if algorithm == Algorithm::Host {
        bail!(
            InvalidArgument,
            "SCANRT_ALGORITHM_HOST is reported, not requested; create a host context instead"
        );
    }
    let direction = match desc.direction {
        0 => Direction::Forward,
        1 => Direction::Backward,
        d => bail!(InvalidArgument, "unknown direction value {d}"),
    };
    let segments = match desc.segments {
        0 => Segments::None,
        1 => Segments::ByteFlags,
        2 => Segments::BitFlags,
        3 => Segments::Keys(DType::from_raw(desc.key_dtype)?),
        k => bail!(InvalidArgument, "unknown segments value {k}"),
    };
    // SAFETY: every union member is plain old data; we read the one the output type names.
    let init = (desc.has_init != 0).then(|| unsafe {
        InitValue::from_bits(
            output,
            match output {
                DType::I32 | DType::U32 | DType::F32 | DType::U8 => desc.init.u32 as u64,
                DType::I64 | DType::U64 | DType::F64 => desc.init.u64,
            },
        )
    });
    Ok(ScanDesc {
        op,
        inclusive: desc.inclusive != 0,
        init,
        algorithm,
        direction,
        deterministic: desc.deterministic != 0,
        segments,
    })
}

fn write_info(info: *mut scanrt_scan_info, result: ScanInfo) {
    // SAFETY: NULL is allowed (no report); otherwise the caller passes a writable struct.
    if let Some(info) = unsafe { info.as_mut() } {
        info.backend = result.backend as i32;
        info.algorithm = result.algorithm as i32;
        info.reason = result.reason as i32;
    }
}

/// The library version as `major * 10000 + minor * 100 + patch`; compare with the
/// `SCANRT_VERSION_*` macros to detect a header/library mismatch.
#[no_mangle]
pub extern "C" fn scanrt_version() -> u32 {
    SCANRT_VERSION_MAJOR * 10000 + SCANRT_VERSION_MINOR * 100 + SCANRT_VERSION_PATCH
}

/// A static, human-readable name for a status code ("unknown status" for other values).
#[no_mangle]
pub extern "C" fn scanrt_status_string(status: i32) -> *const c_char {
    let s: &'static [u8] = match ScanrtStatus::from_raw(status) {
        Some(ScanrtStatus::Ok) => b"ok\0",
        Some(ScanrtStatus::NullArgument) => b"null argument\0",
        Some(ScanrtStatus::InvalidArgument) => b"invalid argument\0",
        Some(ScanrtStatus::UnsupportedCombination) => b"unsupported operator/type combination\0",
        Some(ScanrtStatus::BufferTooSmall) => b"buffer too small\0",
        Some(ScanrtStatus::PartialOverlap) => b"input and output partially overlap\0",
        Some(ScanrtStatus::NotDeviceMemory) => b"not device memory\0",
        Some(ScanrtStatus::ContextMismatch) => b"object of another context\0",
        Some(ScanrtStatus::NoDriver) => b"no CUDA driver\0",
        Some(ScanrtStatus::NoDevice) => b"no CUDA device\0",
        Some(ScanrtStatus::CompileError) => b"kernel compilation failed\0",
        Some(ScanrtStatus::CudaError) => b"CUDA error\0",
        Some(ScanrtStatus::LengthOverflow) => b"length overflow\0",
        Some(ScanrtStatus::WrongBackend) => b"wrong backend\0",
        Some(ScanrtStatus::Panic) => b"internal panic\0",
        Some(ScanrtStatus::OutOfMemory) => b"out of memory\0",
        Some(ScanrtStatus::WorkspaceFault) => b"workspace fault\0",
        None => b"unknown status\0",
    };
    s.as_ptr() as *const c_char
}

/// A static, human-readable explanation of a `scanrt_choice_reason` ("unknown reason"
/// for other values).
#[no_mangle]
pub extern "C" fn scanrt_choice_reason_string(reason: i32) -> *const c_char {
    let s: &'static [u8] = match reason {
        r if r == ChoiceReason::Requested as i32 => b"the descriptor named the algorithm\0",
        r if r == ChoiceReason::Fastest as i32 => b"auto: the single-pass look-back is the fastest path\0",
        r if r == ChoiceReason::OrderIndependent as i32 => {
            b"auto, deterministic: the operator does not depend on association order, so the single pass is reproducible as it is\0"
        }
        r if r == ChoiceReason::Deterministic as i32 => {
            b"deterministic float sum or product: the fixed-order single pass (anchor tiles), faster than the matrix scan\0"
        }
        r if r == ChoiceReason::HostBackend as i32 => b"the context runs on the host backend\0",
        _ => b"unknown reason\0",
    };
    s.as_ptr() as *const c_char
}

/// The message of the last failed call on this thread ("" after a successful call).
/// Valid until the next scanrt call on this thread.
#[no_mangle]
pub extern "C" fn scanrt_last_error_message() -> *const c_char {
    const EMPTY: &[u8] = b"\0";
    LAST_ERROR
        .try_with(|e| match e.try_borrow() {
            Ok(e) if !e.is_empty() => e.as_ptr() as *const c_char,
            _ => EMPTY.as_ptr() as *const c_char,
        })
        .unwrap_or(EMPTY.as_ptr() as *const c_char)
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
            let backend = match backend {
                0 => Backend::Auto,
                1 => Backend::Gpu,
                2 => Backend::Host,
                b => bail!(InvalidArgument, "unknown backend value {b}"),
            };
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
    if !ctx.is_null() {
        let _ = catch_unwind(AssertUnwindSafe(|| drop(Box::from_raw(ctx))));
    }
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
        None => b"\0".as_ptr() as *const c_char,
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
            DType::from_raw(input_dtype)?,
            DType::from_raw(output_dtype)?,
            Op::from_raw(op)?,
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
    if !stream.is_null() {
        let _ = catch_unwind(AssertUnwindSafe(|| drop(Box::from_raw(stream))));
    }
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
                inner: Buffer::new(&non_null(ctx, "ctx")?.inner, DType::from_raw(dtype)?, len)?,
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
                inner: Buffer::wrap_device(&non_null(ctx, "ctx")?.inner, device_ptr, DType::from_raw(dtype)?, len)?,
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
        copy_checked(
            &non_null_mut(buffer, "buffer")?.inner,
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
    if !buffer.is_null() {
        let _ = catch_unwind(AssertUnwindSafe(|| drop(Box::from_raw(buffer))));
    }
}

/// Fills `desc` with the defaults: inclusive sum, no initial value, automatic
/// algorithm, forward, not required deterministic, unsegmented.
#[no_mangle]
pub unsafe extern "C" fn scanrt_scan_desc_init(desc: *mut scanrt_scan_desc) -> ScanrtStatus {
    boundary(|| {
        *non_null_mut(desc, "desc")? = scanrt_scan_desc {
            op: Op::Sum as i32,
            inclusive: 1,
            has_init: 0,
            init: scanrt_value { u64: 0 },
            algorithm: Algorithm::Auto as i32,
            direction: Direction::Forward as i32,
            deterministic: 0,
            segments: ScanrtSegments::None as i32,
            key_dtype: DType::U32 as i32,
            segment_data: std::ptr::null(),
        };
        Ok(())
    })
}

/// Scans `input` into `output` (buffers of `ctx`) on `stream`, asynchronously on a GPU.
/// `output` may be `input` (in place). `info` may be NULL.
#[no_mangle]
pub unsafe extern "C" fn scanrt_scan(
    ctx: *const scanrt_context,
    stream: *const scanrt_stream,
    input: *const scanrt_buffer,
    output: *mut scanrt_buffer,
    desc: *const scanrt_scan_desc,
    info: *mut scanrt_scan_info,
) -> ScanrtStatus {
    boundary(|| {
        let ctx = &non_null(ctx, "ctx")?.inner;
        let stream = &non_null(stream, "stream")?.inner;
        let input = &non_null(input, "input")?.inner;
        let output = &non_null(output as *const scanrt_buffer, "output")?.inner;
        let c_desc = non_null(desc, "desc")?;
        let desc = desc_from_c(c_desc, output.dtype())?;
        let req = ctx.buffer_request(input, output, c_desc.segment_data as u64)?;
        // SAFETY: the buffers are live allocations of `ctx` of the checked lengths; the
        // segment data is range-checked against its allocation by the GPU path, and is
        // host memory the caller vouches for on the host backend (as for scanrt_scan_device).
        write_info(info, ctx.scan_raw(stream, &req, &desc, None)?);
        Ok(())
    })
}

#[allow(clippy::too_many_arguments)]
unsafe fn scan_device(
    ctx: *const scanrt_context,
    cuda_stream: *mut c_void,
    input: *const c_void,
    input_dtype: i32,
    output: *mut c_void,
    output_dtype: i32,
    n: u64,
    desc: *const scanrt_scan_desc,
    workspace: Option<Workspace>,
    info: *mut scanrt_scan_info,
) -> Result<()> {
    let ctx = &non_null(ctx, "ctx")?.inner;
    let output_dtype = DType::from_raw(output_dtype)?;
    let c_desc = non_null(desc, "desc")?;
    let desc = desc_from_c(c_desc, output_dtype)?;
    let req = RawScan {
        segments: c_desc.segment_data as u64,
        ..RawScan::new(
            input as u64,
            DType::from_raw(input_dtype)?,
            output as u64,
            output_dtype,
            n,
        )
    };
    let stream = Stream::borrowed(ctx, cuda_stream)?;
    write_info(info, ctx.scan_raw(&stream, &req, &desc, workspace)?);
    Ok(())
}

/// Scans `n` elements at device pointer `input` into device pointer `output` on the
/// application's `cuda_stream` (a `cudaStream_t`; NULL = legacy default stream),
/// asynchronously. Scratch comes from the context's per-stream workspace pool.
/// Pointers are checked with the driver: host memory, allocations shorter than `n`
/// elements and partial overlaps are rejected before anything is written.
#[no_mangle]
pub unsafe extern "C" fn scanrt_scan_device(
    ctx: *const scanrt_context,
    cuda_stream: *mut c_void,
    input: *const c_void,
    input_dtype: i32,
    output: *mut c_void,
    output_dtype: i32,
    n: u64,
    desc: *const scanrt_scan_desc,
    info: *mut scanrt_scan_info,
) -> ScanrtStatus {
    boundary(|| {
        scan_device(
            ctx,
            cuda_stream,
            input,
            input_dtype,
            output,
            output_dtype,
            n,
            desc,
            None,
            info,
        )
    })
}

/// Writes to `*bytes` the workspace size `scanrt_scan_device_with_workspace` needs for
/// this scan (0 when none is needed).
#[no_mangle]
pub unsafe extern "C" fn scanrt_scan_workspace_size(
    ctx: *const scanrt_context,
    input_dtype: i32,
    output_dtype: i32,
    n: u64,
    desc: *const scanrt_scan_desc,
    bytes: *mut usize,
) -> ScanrtStatus {
    boundary(|| {
        let ctx = &non_null(ctx, "ctx")?.inner;
        let output_dtype = DType::from_raw(output_dtype)?;
        let desc = desc_from_c(non_null(desc, "desc")?, output_dtype)?;
        // Placeholder addresses: the size depends only on types and n.
        let req = RawScan {
            segments: if desc.segments == Segments::None { 0 } else { 1 << 44 },
            ..RawScan::new(16, DType::from_raw(input_dtype)?, 1 << 40, output_dtype, n)
        };
        *non_null_mut(bytes, "bytes")? = ctx.workspace_size(&req, &desc)?;
        Ok(())
    })
}

/// Initialises a workspace on `cuda_stream`: zero-fills it and writes its sealed header
/// (16-byte aligned, at least 32 bytes). Required before its first use and after a
/// `SCANRT_STATUS_WORKSPACE_FAULT` names it; afterwards it may serve any number of scans
/// of any type, one at a time (stream order), inside captured CUDA graphs too. Kernels
/// refuse a workspace that was not initialised, or was initialised for fewer tiles than
/// their scan needs (the next call returns `SCANRT_STATUS_WORKSPACE_FAULT`).
#[no_mangle]
pub unsafe extern "C" fn scanrt_workspace_init(
    ctx: *const scanrt_context,
    cuda_stream: *mut c_void,
    workspace: *mut c_void,
    bytes: usize,
) -> ScanrtStatus {
    boundary(|| {
        let ctx = &non_null(ctx, "ctx")?.inner;
        if workspace.is_null() {
            bail!(NullArgument, "workspace must not be NULL");
        }
        ctx.init_workspace(
            &Stream::borrowed(ctx, cuda_stream)?,
            Workspace {
                ptr: workspace as u64,
                bytes,
            },
        )
    })
}

/// `scanrt_scan_device` with a caller-provided workspace (see
/// `scanrt_scan_workspace_size` and `scanrt_workspace_init`): no allocation at all,
/// for CUDA-graph capture and memory-constrained applications. The workspace must be
/// 16-byte aligned (as `cudaMalloc` returns it).
#[no_mangle]
pub unsafe extern "C" fn scanrt_scan_device_with_workspace(
    ctx: *const scanrt_context,
    cuda_stream: *mut c_void,
    input: *const c_void,
    input_dtype: i32,
    output: *mut c_void,
    output_dtype: i32,
    n: u64,
    desc: *const scanrt_scan_desc,
    workspace: *mut c_void,
    workspace_bytes: usize,
    info: *mut scanrt_scan_info,
) -> ScanrtStatus {
    boundary(|| {
        let ws = Workspace {
            ptr: workspace as u64,
            bytes: workspace_bytes,
        };
        if workspace.is_null() && workspace_bytes > 0 {
            bail!(
                NullArgument,
                "workspace is NULL but workspace_bytes is {workspace_bytes}"
            );
        }
        scan_device(
            ctx,
            cuda_stream,
            input,
            input_dtype,
            output,
            output_dtype,
            n,
            desc,
            Some(ws),
            info,
        )
    })
}
