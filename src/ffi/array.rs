//! Typed array views: `scanrt_array` (DLPack's fields: a pointer, a type, a shape and
//! strides in elements) and the scan along an axis of one.

use std::ffi::c_void;

use super::context::scanrt_context;
use super::scan::{desc_from_c, scanrt_scan_desc, scanrt_scan_info, InfoOut};
use super::stream::scanrt_stream;
use super::support::{boundary, non_null};
use super::versioned::{caller_size, init_sized, Versioned};
use crate::array::{ArrayView, MAX_DIMS};
use crate::context::Context;
use crate::error::{bail, Result};
use crate::scan::carry_views::CarryViews;
use crate::scan::desc::Segments;
use crate::scan::ScanInfo;
use crate::stream::Stream;
use crate::tables::ScanrtStatus;
use crate::types::DType;

/// A typed view of memory: element `[i0, i1, ...]` of `dtype` at
/// `data + (i0 * strides[0] + i1 * strides[1] + ...) * element size`. The fields of a
/// DLPack `DLTensor` map onto it one to one (`data` = `DLTensor.data + byte_offset`).
/// Device memory on a GPU context, host memory on the host backend. Initialise with
/// `scanrt_array_init`, then set fields.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct scanrt_array {
    /// `sizeof(scanrt_array)` as the caller compiled it, set by `scanrt_array_init`.
    pub struct_size: usize,
    /// The first element (`[0, 0, ...]`).
    pub data: *mut c_void,
    /// A `scanrt_dtype` value.
    pub dtype: i32,
    /// Dimensions (0 to 8).
    pub ndim: i32,
    /// `ndim` extents.
    pub shape: *const i64,
    /// `ndim` strides in elements, or NULL for a row-major (C-contiguous) array.
    pub strides: *const i64,
}

impl Default for scanrt_array {
    fn default() -> Self {
        scanrt_array {
            struct_size: std::mem::size_of::<scanrt_array>(),
            data: std::ptr::null_mut(),
            dtype: DType::U32 as i32,
            ndim: 1,
            shape: std::ptr::null(),
            strides: std::ptr::null(),
        }
    }
}

impl Versioned for scanrt_array {
    const NAME: &'static str = "scanrt_array";
    const INIT: &'static str = "scanrt_array_init";
    const V1_SIZE: usize = 40;
    fn with_size(self, struct_size: usize) -> Self {
        scanrt_array { struct_size, ..self }
    }
}

const _: () = assert!(std::mem::size_of::<scanrt_array>() >= scanrt_array::V1_SIZE);

/// Sets the defaults (a 1-D `SCANRT_DTYPE_U32` array, no data) over the first `size`
/// bytes of `array`. Call it through the `scanrt_array_init(array)` macro.
#[no_mangle]
pub unsafe extern "C" fn scanrt_array_init_sized(array: *mut scanrt_array, size: usize) -> ScanrtStatus {
    boundary(|| init_sized(array, size, "array"))
}

/// `count` (at most `max`) arrays at `p` as views. They lie at the caller's
/// `sizeof(scanrt_array)`, the first one's `struct_size`, which a newer header makes
/// larger than this library's.
///
/// # Safety
/// `p` is NULL or points to `count` arrays as for `view_of`, laid out as the caller
/// compiled them.
pub(super) unsafe fn views_of<'a>(
    p: *const scanrt_array,
    count: usize,
    max: usize,
    what: &str,
) -> Result<Vec<ArrayView<'a>>> {
    if count > max {
        bail!(
            InvalidArgument,
            "{what}: {count} arrays, more than the {max} this call takes"
        );
    }
    if count == 0 {
        return Ok(Vec::new());
    }
    // At most MAX_STRUCT_SIZE (caller_size checks), so the offsets stay small.
    let stride = caller_size(p, what)?;
    (0..count)
        .map(|i| {
            let array = (p as *const u8).add(i * stride) as *const scanrt_array;
            let what = format!("{what}[{i}]");
            if caller_size(array, &what)? != stride {
                bail!(
                    InvalidArgument,
                    "{what}->struct_size differs from the first array's: a list holds structs of one size"
                );
            }
            view_of(array, &what)
        })
        .collect()
}

/// The caller's array as a view.
///
/// # Safety
/// `array` points to a `scanrt_array` whose shape and strides hold `ndim` entries and
/// whose memory is valid for them.
pub(super) unsafe fn view_of<'a>(array: *const scanrt_array, what: &str) -> Result<ArrayView<'a>> {
    caller_size(array, what)?;
    let a = non_null(array, what)?;
    let dtype = DType::from_c(a.dtype)?;
    let ndim = match usize::try_from(a.ndim) {
        Ok(d) if d <= MAX_DIMS => d,
        _ => bail!(
            InvalidArgument,
            "{what}->ndim is {}; an array has 0 to {MAX_DIMS} dimensions",
            a.ndim
        ),
    };
    let entries = |p: *const i64, name: &str| -> Result<&[i64]> {
        if ndim == 0 {
            return Ok(&[]);
        }
        // SAFETY: the caller's shape and strides hold ndim entries.
        Ok(unsafe { std::slice::from_raw_parts(non_null(p, name)?, ndim) })
    };
    let shape = entries(a.shape, &format!("{what}->shape"))?;
    if let Some(d) = shape.iter().find(|&&d| d < 0) {
        bail!(InvalidArgument, "{what}->shape has a negative extent ({d})");
    }
    let shape: Vec<u64> = shape.iter().map(|&d| d as u64).collect();
    if a.strides.is_null() {
        ArrayView::contiguous(a.data as u64, dtype, &shape)
    } else {
        ArrayView::strided(a.data as u64, dtype, &shape, entries(a.strides, "strides")?)
    }
}

/// Scans `input` along `axis` (negative counts from the last, as NumPy does) into
/// `output`, an array of the same shape, on `stream`, asynchronously on a GPU. A 1-D
/// array is one scan (segmented as `desc` says, its segment data at `desc->segment_data`);
/// along an axis of a larger array each sequence along it is scanned on its own. Any
/// strides (`strides` in elements: columns, row pitches, transposes, negative strides),
/// the input's and the output's each their own, in one pass; axes other than `axis` that
/// nest into no single stride of columns and of batches return
/// `SCANRT_STATUS_UNSUPPORTED_COMBINATION`, an output that reaches an element twice or
/// overlaps the input without being it `SCANRT_STATUS_INVALID_ARGUMENT`. Device pointers
/// are checked with the driver as for `scanrt_scan_device`. `info` may be NULL.
///
/// Deprecated (kept through 0.x): a `SCANRT_PRIMITIVE_SCAN` plan, run by
/// `scanrt_plan_execute`, which takes the application's `cudaStream_t` as it is.
#[no_mangle]
pub unsafe extern "C" fn scanrt_scan_array(
    ctx: *const scanrt_context,
    stream: *const scanrt_stream,
    input: *const scanrt_array,
    output: *const scanrt_array,
    axis: i32,
    desc: *const scanrt_scan_desc,
    info: *mut scanrt_scan_info,
) -> ScanrtStatus {
    boundary(|| {
        scan_array(
            ctx,
            stream,
            input,
            output,
            axis,
            std::ptr::null(),
            std::ptr::null(),
            desc,
            info,
        )
    })
}

/// `scanrt_scan_array` with carries in memory (device memory on a GPU, host memory on
/// the host backend): the scan starts from `carry_in`'s first element (instead of
/// `desc`'s initial value) and writes its total, the initial value combined with every
/// element in traversal order (the initial value when `input` is empty), to `carry_out`'s
/// first element, so that chunked, streaming and multi-GPU scans chain on the device.
/// Each may be NULL; both are arrays of the scan's accumulator type and may be the same
/// element. For an array of several dimensions each sequence along `axis` is a scan of
/// its own: `carry_out` holds one total per sequence and `carry_in` one value for all or
/// one per sequence, in the row-major order of the other axes. A 1-D scan segmented by
/// offsets (`SCANRT_SEGMENTS_OFFSETS`) takes carries per segment: `num_offsets - 1`
/// elements each, segment s starting from `carry_in[s]` and its total going to
/// `carry_out[s]` (an empty segment's is its initial value); they must not overlap, and
/// the offsets must not decrease. Other segmented scans take no carries
/// (`SCANRT_STATUS_UNSUPPORTED_COMBINATION`).
///
/// Deprecated (kept through 0.x): a `SCANRT_PRIMITIVE_SCAN` plan, run by
/// `scanrt_plan_execute`, which takes the application's `cudaStream_t` as it is.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn scanrt_scan_array_carried(
    ctx: *const scanrt_context,
    stream: *const scanrt_stream,
    input: *const scanrt_array,
    output: *const scanrt_array,
    axis: i32,
    carry_in: *const scanrt_array,
    carry_out: *const scanrt_array,
    desc: *const scanrt_scan_desc,
    info: *mut scanrt_scan_info,
) -> ScanrtStatus {
    boundary(|| scan_array(ctx, stream, input, output, axis, carry_in, carry_out, desc, info))
}

/// The summed-area table of `input` over its last two axes (earlier axes are a batch of
/// tables) into `output`, an array of the same shape (any strides): each element combines
/// every input element above and to the left of it, itself included (excluded for
/// exclusive scans; backward scans combine from the last row and column), with `desc`'s
/// built-in operator, as two strided scans on `stream`. `desc` takes no initial value and
/// no segments (`SCANRT_STATUS_INVALID_ARGUMENT`). `info` may be NULL.
///
/// Deprecated (kept through 0.x): a `SCANRT_PRIMITIVE_SUMMED_AREA_TABLE` plan, run by
/// `scanrt_plan_execute`, which takes the application's `cudaStream_t` as it is.
#[no_mangle]
pub unsafe extern "C" fn scanrt_summed_area_table(
    ctx: *const scanrt_context,
    stream: *const scanrt_stream,
    input: *const scanrt_array,
    output: *const scanrt_array,
    desc: *const scanrt_scan_desc,
    info: *mut scanrt_scan_info,
) -> ScanrtStatus {
    boundary(|| {
        let ctx = &non_null(ctx, "ctx")?.inner;
        let stream = &non_null(stream, "stream")?.inner;
        let input = view_of(input, "input")?;
        let output = view_of(output, "output")?;
        let info = InfoOut::check(info)?;
        let c_desc = super::versioned::read_versioned(desc, "desc")?;
        info.write(summed_area_views(ctx, stream, &input, &output, &c_desc)?);
        Ok(())
    })
}

/// The table of `scanrt_summed_area_table` and of a summed-area plan, on views.
pub(super) fn summed_area_views(
    ctx: &Context,
    stream: &Stream,
    input: &ArrayView,
    output: &ArrayView,
    c_desc: &scanrt_scan_desc,
) -> Result<ScanInfo> {
    ctx.summed_area_table(stream, input, output, &desc_from_c(c_desc, output.dtype())?)
}

/// Both scans of arrays: segmented ones (segment data at `desc->segment_data`) take
/// carries only by offsets, one per segment.
#[allow(clippy::too_many_arguments)]
unsafe fn scan_array(
    ctx: *const scanrt_context,
    stream: *const scanrt_stream,
    input: *const scanrt_array,
    output: *const scanrt_array,
    axis: i32,
    carry_in: *const scanrt_array,
    carry_out: *const scanrt_array,
    desc: *const scanrt_scan_desc,
    info: *mut scanrt_scan_info,
) -> Result<()> {
    let ctx = &non_null(ctx, "ctx")?.inner;
    let stream = &non_null(stream, "stream")?.inner;
    let input = view_of(input, "input")?;
    let output = view_of(output, "output")?;
    let carry_in = (!carry_in.is_null())
        .then(|| view_of(carry_in, "carry_in"))
        .transpose()?;
    let carry_out = (!carry_out.is_null())
        .then(|| view_of(carry_out, "carry_out"))
        .transpose()?;
    let info = InfoOut::check(info)?;
    let c_desc = super::versioned::read_versioned(desc, "desc")?;
    let carries = CarryViews {
        carry_in: carry_in.as_ref(),
        carry_out: carry_out.as_ref(),
    };
    info.write(scan_views(ctx, stream, &input, &output, axis, &carries, &c_desc)?);
    Ok(())
}

/// The scan of `scanrt_scan_array_carried` and of a scan plan, on views.
///
/// # Safety
/// `c_desc`'s segment data is as `scanrt_scan_desc` documents it.
pub(super) unsafe fn scan_views(
    ctx: &Context,
    stream: &Stream,
    input: &ArrayView,
    output: &ArrayView,
    axis: i32,
    carries: &CarryViews,
    c_desc: &scanrt_scan_desc,
) -> Result<ScanInfo> {
    let desc = desc_from_c(c_desc, output.dtype())?;
    if desc.segments.has_data() {
        let (dtype, entries) = match desc.segments {
            Segments::ByteFlags => (DType::U8, input.len().unwrap_or(0)),
            Segments::BitFlags => (DType::U32, input.len().unwrap_or(0).div_ceil(32)),
            Segments::Keys(k) => (k, input.len().unwrap_or(0)),
            Segments::Offsets { dtype, count } => (dtype, count),
            Segments::None | Segments::Rows(_) => unreachable!("segments without data"),
        };
        // SAFETY: the caller vouches for host segment data on the host backend; a GPU
        // context range-checks device memory with the driver.
        let segments = ArrayView::contiguous(c_desc.segment_data as u64, dtype, &[entries])?;
        ctx.scan_array_segmented_carried(stream, input, &segments, output, &desc, carries)
    } else {
        ctx.scan_array_carried(stream, input, output, axis as isize, &desc, carries)
    }
}
