//! One call shape for every primitive: a plan made once from a versioned description
//! (`scanrt_plan_create`), executed on a versioned argument struct
//! (`scanrt_plan_execute`) that names the stream the same way everywhere (the
//! application's `cudaStream_t`, or a `scanrt_stream`) and passes every array as a
//! `scanrt_array`, in the order the primitive's row of `scanrt_primitive` lists them.
//! The older entry points (`scanrt_select`, `scanrt_sort`, ...) run the same code.

use std::ffi::{c_void, CStr, CString};

use super::array::{scan_views, scanrt_array, summed_area_views, views_of};
use super::context::scanrt_context;
use super::scan::{scanrt_scan_desc, scanrt_scan_info, InfoOut};
use super::select::{scanrt_select_desc, select_arrays};
use super::sort::{scanrt_sort_desc, sort_arrays};
use super::stream::scanrt_stream;
use super::support::{boundary, destroy, non_null, non_null_mut, put};
use super::versioned::{caller_size, init_sized, read_versioned, write_prefix, Versioned};
use crate::array::ArrayView;
use crate::context::Context;
use crate::error::{bail, Result};
use crate::scan::carry_views::CarryViews;
use crate::select::SelectArrays;
use crate::sort::SortArrays;
use crate::stream::Stream;
use crate::tables::{Primitive, ScanrtStatus};
use crate::types::DType;

/// What a plan computes: the primitive and its description (the one its row of
/// `scanrt_primitive` names; the others are ignored and may be NULL).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct scanrt_plan_desc {
    /// `sizeof(scanrt_plan_desc)` as the caller compiled it, set by
    /// `scanrt_plan_desc_init`.
    pub struct_size: usize,
    /// A `scanrt_primitive` value (`SCANRT_PRIMITIVE_SCAN` by default).
    pub primitive: i32,
    /// The axis a scan runs along (-1, the last, by default).
    pub axis: i32,
    /// A scan's or summed-area table's description (copied; its segment data is read
    /// when the plan executes).
    pub scan: *const scanrt_scan_desc,
    /// A selection's description (copied, its predicate's text too).
    pub select: *const scanrt_select_desc,
    /// A sort's description (copied; NULL: ascending, every bit).
    pub sort: *const scanrt_sort_desc,
}

impl Default for scanrt_plan_desc {
    fn default() -> Self {
        scanrt_plan_desc {
            struct_size: std::mem::size_of::<scanrt_plan_desc>(),
            primitive: Primitive::Scan as i32,
            axis: -1,
            scan: std::ptr::null(),
            select: std::ptr::null(),
            sort: std::ptr::null(),
        }
    }
}

impl Versioned for scanrt_plan_desc {
    const NAME: &'static str = "scanrt_plan_desc";
    const INIT: &'static str = "scanrt_plan_desc_init";
    const V1_SIZE: usize = 40;
    fn with_size(self, struct_size: usize) -> Self {
        scanrt_plan_desc { struct_size, ..self }
    }
}

const _: () = assert!(std::mem::size_of::<scanrt_plan_desc>() >= scanrt_plan_desc::V1_SIZE);

/// The arguments of one execution of a plan.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct scanrt_args {
    /// `sizeof(scanrt_args)` as the caller compiled it, set by `scanrt_args_init`.
    pub struct_size: usize,
    /// The application's `cudaStream_t` (`CUstream`) the work is queued on: NULL is the
    /// legacy default stream, `cudaStreamPerThread` the thread's own; `scanrt_args_init`
    /// sets `SCANRT_DEFAULT_STREAM`, the one NULL means to the translation unit (the
    /// thread's own under `nvcc --default-stream per-thread`). Ignored on the host backend.
    pub stream: *mut c_void,
    /// A scanrt stream instead (used when not NULL).
    pub stream_handle: *const scanrt_stream,
    /// The arrays, in the order the primitive lists them (`scanrt_primitive`).
    pub arrays: *const scanrt_array,
    /// How many: the primitive's required ones at least, its optional ones at most.
    pub num_arrays: usize,
    /// The caller's temporary memory (a sort's; NULL: scanrt's own pool lends it).
    pub workspace: *mut c_void,
    /// Its size in bytes (`scanrt_plan_workspace_size` says how much it takes).
    pub workspace_bytes: usize,
    /// Where a scan reports the algorithm that ran and why (NULL: nowhere).
    pub info: *mut scanrt_scan_info,
}

impl Default for scanrt_args {
    fn default() -> Self {
        scanrt_args {
            struct_size: std::mem::size_of::<scanrt_args>(),
            stream: std::ptr::null_mut(),
            stream_handle: std::ptr::null(),
            arrays: std::ptr::null(),
            num_arrays: 0,
            workspace: std::ptr::null_mut(),
            workspace_bytes: 0,
            info: std::ptr::null_mut(),
        }
    }
}

impl Versioned for scanrt_args {
    const NAME: &'static str = "scanrt_args";
    const INIT: &'static str = "scanrt_args_init";
    const V1_SIZE: usize = 64;
    fn with_size(self, struct_size: usize) -> Self {
        scanrt_args { struct_size, ..self }
    }
}

const _: () = assert!(std::mem::size_of::<scanrt_args>() >= scanrt_args::V1_SIZE);

/// A plan of one context: what it computes, checked once, executed any number of times
/// from any thread.
pub struct scanrt_plan {
    ctx: Context,
    what: Planned,
}

enum Planned {
    Scan {
        desc: scanrt_scan_desc,
        axis: i32,
    },
    SummedAreaTable(scanrt_scan_desc),
    /// The description, its predicate's text pointing into the strings beside it.
    Select(scanrt_select_desc, #[allow(dead_code)] Option<(CString, CString)>),
    RunLengthEncode,
    Sort(scanrt_sort_desc),
}

impl Planned {
    /// The (fewest, most) arrays an execution takes.
    fn arrays(&self) -> (usize, usize) {
        match self {
            Planned::Scan { .. } => (2, 4),
            Planned::SummedAreaTable(_) => (2, 2),
            Planned::Select(..) => (5, 5),
            Planned::RunLengthEncode => (4, 4),
            Planned::Sort(_) => (2, 4),
        }
    }
    /// Whether array `i` may be left out (NULL data).
    fn optional(&self, i: usize) -> bool {
        match self {
            Planned::Scan { .. } | Planned::Sort(_) => i >= 2,
            Planned::Select(..) => i == 1 || i == 3,
            Planned::SummedAreaTable(_) | Planned::RunLengthEncode => false,
        }
    }
}

/// Sets the defaults over the first `size` bytes of `desc`. Call it through the
/// `scanrt_plan_desc_init(desc)` macro.
#[no_mangle]
pub unsafe extern "C" fn scanrt_plan_desc_init_sized(desc: *mut scanrt_plan_desc, size: usize) -> ScanrtStatus {
    boundary(|| init_sized(desc, size, "desc"))
}

/// Sets the defaults over the first `size` bytes of `args`, with `default_stream` as its
/// stream. Call it through the `scanrt_args_init(args)` macro, which passes
/// `SCANRT_DEFAULT_STREAM`.
#[no_mangle]
pub unsafe extern "C" fn scanrt_args_init_sized(
    args: *mut scanrt_args,
    size: usize,
    default_stream: *mut c_void,
) -> ScanrtStatus {
    boundary(|| {
        init_sized(args, size, "args")?;
        let with_stream = scanrt_args {
            stream: default_stream,
            ..read_versioned(args, "args")?
        };
        write_prefix(args, &with_stream.with_size(size), size);
        Ok(())
    })
}

/// Makes a plan of `ctx` for what `desc` describes: its description is read and checked
/// now (an unknown primitive, a missing or malformed description are errors here), and
/// copied, so the caller may free it. `*out` is NULL on failure.
#[no_mangle]
pub unsafe extern "C" fn scanrt_plan_create(
    ctx: *const scanrt_context,
    desc: *const scanrt_plan_desc,
    out: *mut *mut scanrt_plan,
) -> ScanrtStatus {
    boundary(|| {
        put(out, || {
            let ctx = non_null(ctx, "ctx")?.inner.clone();
            let d = read_versioned(desc, "desc")?;
            let what = match Primitive::from_c(d.primitive)? {
                Primitive::Scan => Planned::Scan {
                    desc: read_versioned(d.scan, "desc->scan")?,
                    axis: d.axis,
                },
                Primitive::SummedAreaTable => Planned::SummedAreaTable(read_versioned(d.scan, "desc->scan")?),
                Primitive::Select => {
                    let mut select = read_versioned(d.select, "desc->select")?;
                    let owned = owned_predicate(&mut select)?;
                    // Decoded once now, so that a bad rule or output fails here (the
                    // operand takes the input's type at each execution).
                    super::select::desc_from_c(&select, DType::U32)?;
                    Planned::Select(select, owned)
                }
                Primitive::RunLengthEncode => Planned::RunLengthEncode,
                Primitive::Sort if d.sort.is_null() => Planned::Sort(scanrt_sort_desc::default()),
                Primitive::Sort => Planned::Sort(read_versioned(d.sort, "desc->sort")?),
            };
            Ok(scanrt_plan { ctx, what })
        })
    })
}

/// Copies the predicate's text into strings the plan owns and points `select` at them.
unsafe fn owned_predicate(select: &mut scanrt_select_desc) -> Result<Option<(CString, CString)>> {
    if select.predicate_source.is_null() || select.predicate_function.is_null() {
        return Ok(None);
    }
    let source = CStr::from_ptr(select.predicate_source).to_owned();
    let function = CStr::from_ptr(select.predicate_function).to_owned();
    // The strings' buffers stay where they are when the pair moves into the plan.
    select.predicate_source = source.as_ptr();
    select.predicate_function = function.as_ptr();
    Ok(Some((source, function)))
}

/// Destroys a plan (NULL is a no-op). Work it queued runs on.
#[no_mangle]
pub unsafe extern "C" fn scanrt_plan_destroy(plan: *mut scanrt_plan) {
    destroy(plan);
}

/// Writes to `*bytes` the temporary memory an execution of `plan` on `args`' arrays takes
/// in `args->workspace` (0: none; a scan's look-back workspace comes from scanrt's pool).
#[no_mangle]
pub unsafe extern "C" fn scanrt_plan_workspace_size(
    plan: *const scanrt_plan,
    args: *const scanrt_args,
    bytes: *mut usize,
) -> ScanrtStatus {
    boundary(|| {
        let plan = non_null(plan, "plan")?;
        let args = read_versioned(args, "args")?;
        let out = non_null_mut(bytes, "bytes")?;
        let arrays = plan.arrays_of(&args)?;
        *out = match plan.what {
            Planned::Sort(_) => {
                let keys = arrays[0].as_ref().expect("never optional");
                let values = arrays.get(2).and_then(|v| v.as_ref()).map(|v| v.dtype());
                let n = keys.len().unwrap_or(0);
                usize::try_from(plan.ctx.sort_temp_bytes(n, keys.dtype(), values)).unwrap_or(usize::MAX)
            }
            _ => 0,
        };
        Ok(())
    })
}

/// Runs `plan` on `args`: asynchronously on the stream `args` names for a GPU context.
/// Bad input returns a status before anything is written, as the plan's older entry
/// point does.
#[no_mangle]
pub unsafe extern "C" fn scanrt_plan_execute(plan: *const scanrt_plan, args: *const scanrt_args) -> ScanrtStatus {
    boundary(|| {
        let plan = non_null(plan, "plan")?;
        let args = read_versioned(args, "args")?;
        let arrays = plan.arrays_of(&args)?;
        let info = InfoOut::check(args.info)?;
        let borrowed;
        let stream = match args.stream_handle.as_ref() {
            Some(handle) => &handle.inner,
            None => {
                borrowed = Stream::borrowed(&plan.ctx, args.stream, false);
                &borrowed
            }
        };
        let ctx = &plan.ctx;
        let required = |i: usize| arrays[i].clone().expect("never optional");
        let optional = |i: usize| arrays.get(i).cloned().flatten();
        match &plan.what {
            Planned::Scan { desc, axis } => {
                let (carry_in, carry_out) = (optional(2), optional(3));
                let carries = CarryViews {
                    carry_in: carry_in.as_ref(),
                    carry_out: carry_out.as_ref(),
                };
                info.write(scan_views(
                    ctx,
                    stream,
                    &required(0),
                    &required(1),
                    *axis,
                    &carries,
                    desc,
                )?);
            }
            Planned::SummedAreaTable(desc) => {
                info.write(summed_area_views(ctx, stream, &required(0), &required(1), desc)?);
            }
            Planned::Select(desc, _) => {
                let arrays = SelectArrays {
                    input: required(0),
                    flags: optional(1),
                    output: required(2),
                    rejected: optional(3),
                    lengths: None,
                    num_selected: required(4),
                };
                select_arrays(ctx, stream, arrays, desc)?;
            }
            Planned::RunLengthEncode => {
                ctx.run_length_encode(stream, &required(0), &required(1), &required(2), &required(3))?;
            }
            Planned::Sort(desc) => {
                let temp = if args.workspace.is_null() {
                    None
                } else {
                    // SAFETY: the caller's temporary memory of `workspace_bytes` bytes
                    // (range-checked by the driver on a GPU).
                    Some(ArrayView::contiguous(
                        args.workspace as u64,
                        DType::U8,
                        &[args.workspace_bytes as u64],
                    )?)
                };
                let arrays = SortArrays {
                    keys_in: required(0),
                    keys_out: required(1),
                    values_in: optional(2),
                    values_out: optional(3),
                    temp,
                };
                sort_arrays(ctx, stream, &arrays, desc)?;
            }
        }
        Ok(())
    })
}

impl scanrt_plan {
    /// `args`' arrays as views, `None` for an optional one with NULL data; as many as the
    /// primitive takes.
    unsafe fn arrays_of<'a>(&self, args: &scanrt_args) -> Result<Vec<Option<ArrayView<'a>>>> {
        let (required, most) = self.what.arrays();
        if args.num_arrays < required || args.num_arrays > most {
            bail!(
                InvalidArgument,
                "args->num_arrays is {}: this plan takes {}",
                args.num_arrays,
                if required == most {
                    format!("{required} arrays")
                } else {
                    format!("{required} to {most} arrays")
                }
            );
        }
        // Every array is at the first one's struct size (views_of checks each).
        let stride = caller_size(args.arrays, "args->arrays")?;
        (0..args.num_arrays)
            .map(|i| {
                let array = (args.arrays as *const u8).add(i * stride) as *const scanrt_array;
                if self.what.optional(i) && (*array).data.is_null() {
                    return Ok(None);
                }
                Ok(views_of(array, 1, 1, &format!("args->arrays[{i}]"))?.pop())
            })
            .collect()
    }
}
