//! Scans: the descriptor, the scan entry points, caller workspaces.

use std::ffi::c_void;

use super::buffer::scanrt_buffer;
use super::context::scanrt_context;
use super::stream::scanrt_stream;
use super::support::{boundary, non_null, non_null_mut};
use super::versioned::{caller_size, init_sized, read_versioned, write_prefix, Versioned};
use crate::error::{bail, Result};
use crate::runtime::workspace::Workspace;
use crate::scalar::InitValue;
use crate::scan::desc::{ScanDesc, Segments};
use crate::scan::plan::ScanIo;
use crate::scan::ScanInfo;
use crate::stream::Stream;
use crate::tables::ScanrtStatus;
use crate::tables::{Algorithm, Direction, Op, SegmentKind};
use crate::types::DType;

/// An initial value, read as the scan's accumulator type (its output type unless the
/// descriptor names another).
#[repr(C)]
#[derive(Clone, Copy)]
pub union scanrt_value {
    /// For `SCANRT_DTYPE_I32` outputs.
    pub i32: i32,
    /// For `SCANRT_DTYPE_U32` outputs (and the low byte for `SCANRT_DTYPE_U8`).
    pub u32: u32,
    /// For `SCANRT_DTYPE_I64` outputs.
    pub i64: i64,
    /// For `SCANRT_DTYPE_U64` outputs.
    pub u64: u64,
    /// For `SCANRT_DTYPE_F32` outputs, and `SCANRT_DTYPE_F16` and `_BF16` ones (which
    /// accumulate in f32).
    pub f32: f32,
    /// For `SCANRT_DTYPE_F64` outputs.
    pub f64: f64,
}

/// What a scan computes. Initialise with `scanrt_scan_desc_init`, then set fields.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct scanrt_scan_desc {
    /// `sizeof(scanrt_scan_desc)` as the caller compiled it, set by the
    /// `scanrt_scan_desc_init` macro. Later releases append fields; the library reads only
    /// those this size covers and takes the defaults for the rest.
    pub struct_size: usize,
    /// A `scanrt_op` value.
    pub op: i32,
    /// Nonzero for an inclusive scan, zero for exclusive.
    pub inclusive: i32,
    /// Nonzero when `init` holds an initial value (else the operator's identity is used).
    pub has_init: i32,
    /// The initial value, as the accumulator type (by default the output type; f32 for
    /// f16 and bf16 outputs).
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
    /// The type (a `scanrt_dtype`) of the keys when `segments` is `SCANRT_SEGMENTS_KEYS`,
    /// of the offsets when it is `SCANRT_SEGMENTS_OFFSETS`.
    pub key_dtype: i32,
    /// Flags, keys or offsets of a segmented scan: device memory on a GPU context (host
    /// memory on the host backend); flags and keys have at least as many entries as the
    /// scan has elements, offsets `num_offsets`.
    pub segment_data: *const c_void,
    /// The row length when `segments` is `SCANRT_SEGMENTS_ROWS` (since 0.4).
    pub row_length: u64,
    /// Nonzero when `accumulator` names the type the operator combines in (since 0.4);
    /// zero: the output type.
    pub has_accumulator: i32,
    /// A `scanrt_dtype` wider than the output, each result narrowed as it is written
    /// (`SCANRT_DTYPE_F64` for `SCANRT_DTYPE_F32` data and results).
    pub accumulator: i32,
    /// The number of offsets when `segments` is `SCANRT_SEGMENTS_OFFSETS` (the segments
    /// and one, as a CSR array holds).
    pub num_offsets: u64,
}

/// What a scan call did (optional out parameter of the scan functions). Initialise with
/// `scanrt_scan_info_init`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct scanrt_scan_info {
    /// `sizeof(scanrt_scan_info)` as the caller compiled it, set by the
    /// `scanrt_scan_info_init` macro; the library writes only the fields this size covers.
    pub struct_size: usize,
    /// The `scanrt_backend` that ran the scan (`SCANRT_BACKEND_GPU` or `SCANRT_BACKEND_HOST`).
    pub backend: i32,
    /// The `scanrt_algorithm` that ran (single-pass, deterministic single-pass, matrix, or host).
    pub algorithm: i32,
    /// Why that algorithm ran: a `scanrt_choice_reason`.
    pub reason: i32,
    /// Zero; keeps the struct free of padding, so the next field appended changes its size.
    pub reserved: i32,
}

/// The fields every scan shares, operator scans included: algorithm, direction,
/// segments.
pub(crate) fn traversal_from_c(desc: &scanrt_scan_desc) -> Result<(Algorithm, Direction, Segments)> {
    let algorithm = Algorithm::from_c(desc.algorithm)?;
    if algorithm == Algorithm::Host {
        bail!(
            InvalidArgument,
            "SCANRT_ALGORITHM_HOST is reported, not requested; create a host context instead"
        );
    }
    let direction = Direction::from_c(desc.direction)?;
    let segments = match SegmentKind::from_c(desc.segments)? {
        kind @ (SegmentKind::Keys | SegmentKind::Offsets) => {
            Segments::of_kind(kind, DType::from_c(desc.key_dtype)?, desc.num_offsets)
        }
        kind => Segments::of_kind(kind, DType::U32, desc.row_length),
    };
    Ok((algorithm, direction, segments))
}

pub(crate) fn desc_from_c(desc: &scanrt_scan_desc, output: DType) -> Result<ScanDesc> {
    let op = Op::from_c(desc.op)?;
    let (algorithm, direction, segments) = traversal_from_c(desc)?;
    let accumulator = match desc.has_accumulator {
        0 => None,
        _ => Some(DType::from_c(desc.accumulator)?),
    };
    let init_type = accumulator.unwrap_or(output.default_accumulator());
    // SAFETY: every union member is plain old data; we read the one the accumulator
    // type names.
    let init = (desc.has_init != 0).then(|| unsafe {
        InitValue::from_bits(
            init_type,
            match init_type.size() {
                1 => desc.init.u32 as u8 as u64,
                4 => desc.init.u32 as u64,
                _ => desc.init.u64,
            },
        )
    });
    Ok(ScanDesc {
        op,
        inclusive: desc.inclusive != 0,
        init,
        accumulator,
        algorithm,
        direction,
        deterministic: desc.deterministic != 0,
        segments,
    })
}

impl Default for scanrt_scan_desc {
    /// Inclusive sum, no initial value, automatic algorithm, forward, not required
    /// deterministic, unsegmented.
    fn default() -> Self {
        scanrt_scan_desc {
            struct_size: std::mem::size_of::<scanrt_scan_desc>(),
            op: Op::Sum as i32,
            inclusive: 1,
            has_init: 0,
            init: scanrt_value { u64: 0 },
            algorithm: Algorithm::Auto as i32,
            direction: Direction::Forward as i32,
            deterministic: 0,
            segments: SegmentKind::None as i32,
            key_dtype: DType::U32 as i32,
            segment_data: std::ptr::null(),
            row_length: 0,
            has_accumulator: 0,
            accumulator: DType::F64 as i32,
            num_offsets: 0,
        }
    }
}

impl Versioned for scanrt_scan_desc {
    const NAME: &'static str = "scanrt_scan_desc";
    const INIT: &'static str = "scanrt_scan_desc_init";
    const V1_SIZE: usize = 64;
    fn with_size(self, struct_size: usize) -> Self {
        scanrt_scan_desc { struct_size, ..self }
    }
}

impl Default for scanrt_scan_info {
    fn default() -> Self {
        scanrt_scan_info {
            struct_size: std::mem::size_of::<scanrt_scan_info>(),
            backend: 0,
            algorithm: 0,
            reason: 0,
            reserved: 0,
        }
    }
}

impl Versioned for scanrt_scan_info {
    const NAME: &'static str = "scanrt_scan_info";
    const INIT: &'static str = "scanrt_scan_info_init";
    const V1_SIZE: usize = 24;
    fn with_size(self, struct_size: usize) -> Self {
        scanrt_scan_info { struct_size, ..self }
    }
}

const _: () = assert!(std::mem::size_of::<scanrt_scan_desc>() >= scanrt_scan_desc::V1_SIZE);
const _: () = assert!(std::mem::size_of::<scanrt_scan_info>() >= scanrt_scan_info::V1_SIZE);

/// Where a scan reports what it did, and the caller's `struct_size`: checked before the
/// scan runs (so that a bad `info` fails the call before anything is written), written
/// after it.
pub(crate) struct InfoOut(*mut scanrt_scan_info, usize);

impl InfoOut {
    /// # Safety
    /// `info` is NULL (no report) or points to a writable struct of at least its
    /// `struct_size` bytes.
    pub(crate) unsafe fn check(info: *mut scanrt_scan_info) -> Result<InfoOut> {
        if info.is_null() {
            return Ok(InfoOut(info, 0));
        }
        Ok(InfoOut(info, caller_size(info, "info")?))
    }

    pub(crate) fn write(self, result: ScanInfo) {
        let InfoOut(info, size) = self;
        if info.is_null() {
            return;
        }
        let full = scanrt_scan_info {
            struct_size: size,
            backend: result.backend as i32,
            algorithm: result.algorithm as i32,
            reason: result.reason as i32,
            reserved: 0,
        };
        // SAFETY: `check` saw a struct of `size` bytes.
        unsafe { write_prefix(info, &full, size) };
    }
}

/// Fills the first `size` bytes of `desc` with the defaults (inclusive sum, no initial
/// value, automatic algorithm, forward, not required deterministic, unsegmented) and sets
/// `desc->struct_size` to `size`. Call it through the `scanrt_scan_desc_init(desc)` macro,
/// which passes `sizeof *desc` as the caller compiled it, so that a library with a longer
/// struct never writes past the caller's.
#[no_mangle]
pub unsafe extern "C" fn scanrt_scan_desc_init_sized(desc: *mut scanrt_scan_desc, size: usize) -> ScanrtStatus {
    boundary(|| init_sized(desc, size, "desc"))
}

/// Clears the first `size` bytes of `info` and sets `info->struct_size` to `size`, ready
/// to pass to a scan. Call it through the `scanrt_scan_info_init(info)` macro.
#[no_mangle]
pub unsafe extern "C" fn scanrt_scan_info_init_sized(info: *mut scanrt_scan_info, size: usize) -> ScanrtStatus {
    boundary(|| init_sized(info, size, "info"))
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
        let info = InfoOut::check(info)?;
        let c_desc = read_versioned(desc, "desc")?;
        let desc = desc_from_c(&c_desc, output.dtype())?;
        let io = ScanIo {
            segments: c_desc.segment_data as u64,
            ..ctx.buffer_io(input, output)?
        };
        let plan = ctx.plan(input.dtype(), output.dtype(), input.len(), &desc)?;
        // SAFETY: the buffers are live allocations of `ctx` of the checked lengths; the
        // segment data is range-checked against its allocation by the GPU path, and is
        // host memory the caller vouches for on the host backend (as for scanrt_scan_device).
        info.write(plan.execute(stream, &io, None)?);
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
    let output_dtype = DType::from_c(output_dtype)?;
    let info = InfoOut::check(info)?;
    let c_desc = read_versioned(desc, "desc")?;
    let desc = desc_from_c(&c_desc, output_dtype)?;
    let input_dtype = DType::from_c(input_dtype)?;
    ctx.gpu()?; // device pointers need a GPU context
    let plan = ctx.plan(input_dtype, output_dtype, n, &desc)?;
    let io = ScanIo::new(input as u64, output as u64).with_segments(c_desc.segment_data as u64);
    // The raw handle is checked with the driver by the execution itself.
    let stream = Stream::borrowed(ctx, cuda_stream, false);
    info.write(plan.execute(&stream, &io, workspace)?);
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
        let output_dtype = DType::from_c(output_dtype)?;
        let desc = desc_from_c(&read_versioned(desc, "desc")?, output_dtype)?;
        let plan = ctx.plan(DType::from_c(input_dtype)?, output_dtype, n, &desc)?;
        *non_null_mut(bytes, "bytes")? = plan.workspace_bytes();
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
            &Stream::borrowed(ctx, cuda_stream, false),
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
