//! Radix sorts: the descriptor, `scanrt_sort` and its temporary-memory query.

use std::ffi::c_void;

use super::array::{scanrt_array, view_of};
use super::context::scanrt_context;
use super::stream::scanrt_stream;
use super::support::{boundary, non_null};
use super::versioned::{init_sized, read_versioned, Versioned};
use crate::array::ArrayView;
use crate::context::Context;
use crate::error::Result;
use crate::sort::desc::SortDesc;
use crate::sort::SortArrays;
use crate::stream::Stream;
use crate::tables::{ScanrtStatus, SortOrder};
use crate::types::DType;

/// What a sort computes. Initialise with `scanrt_sort_desc_init`, then set fields.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct scanrt_sort_desc {
    /// `sizeof(scanrt_sort_desc)` as the caller compiled it, set by
    /// `scanrt_sort_desc_init`.
    pub struct_size: usize,
    /// A `scanrt_sort_order` value (`SCANRT_SORT_ASCENDING` by default).
    pub order: i32,
    /// The lowest bit of the ordered key the sort looks at (0 by default).
    pub begin_bit: u32,
    /// One past the highest; `UINT32_MAX` (the default) for the key's width.
    pub end_bit: u32,
    /// Zero; keeps the struct free of padding.
    pub reserved: u32,
}

impl Default for scanrt_sort_desc {
    fn default() -> Self {
        scanrt_sort_desc {
            struct_size: std::mem::size_of::<scanrt_sort_desc>(),
            order: SortOrder::Ascending as i32,
            begin_bit: 0,
            end_bit: u32::MAX,
            reserved: 0,
        }
    }
}

impl Versioned for scanrt_sort_desc {
    const NAME: &'static str = "scanrt_sort_desc";
    const INIT: &'static str = "scanrt_sort_desc_init";
    const V1_SIZE: usize = 24;
    fn with_size(self, struct_size: usize) -> Self {
        scanrt_sort_desc { struct_size, ..self }
    }
}

const _: () = assert!(std::mem::size_of::<scanrt_sort_desc>() >= scanrt_sort_desc::V1_SIZE);

/// Sets the defaults (ascending, every key bit) over the first `size` bytes of `desc`.
/// Call it through the `scanrt_sort_desc_init(desc)` macro.
#[no_mangle]
pub unsafe extern "C" fn scanrt_sort_desc_init_sized(desc: *mut scanrt_sort_desc, size: usize) -> ScanrtStatus {
    boundary(|| init_sized(desc, size, "desc"))
}

fn desc_from_c(d: &scanrt_sort_desc) -> Result<SortDesc> {
    Ok(SortDesc {
        order: SortOrder::from_c(d.order)?,
        begin_bit: d.begin_bit,
        end_bit: (d.end_bit != u32::MAX).then_some(d.end_bit),
    })
}

/// Sorts the 1-D `keys_in` (any integer or float type) into `keys_out` as `desc` says,
/// stable, asynchronously on `stream`. Floats order as -inf < ... < -0 < +0 < ... < +inf <
/// NaN and come back bit for bit. With `values_in`, its elements (any type) follow their
/// keys into `values_out`; with `values_in` NULL and `values_out` given (U32 or U64), the
/// keys' input indices are written there (an argsort). Keys and values may each be sorted
/// in place (output = input). `temp` (NULL: scanrt's pool) is device memory of at least
/// `scanrt_sort_temp_bytes` bytes, 256-byte aligned (as `cudaMalloc`'s is). Bad input
/// returns a status before anything is written.
///
/// Deprecated (kept through 0.x): a `SCANRT_PRIMITIVE_SORT` plan, run by
/// `scanrt_plan_execute`, which takes the application's `cudaStream_t` as it is.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn scanrt_sort(
    ctx: *const scanrt_context,
    stream: *const scanrt_stream,
    keys_in: *const scanrt_array,
    keys_out: *const scanrt_array,
    values_in: *const scanrt_array,
    values_out: *const scanrt_array,
    temp: *mut c_void,
    temp_bytes: usize,
    desc: *const scanrt_sort_desc,
) -> ScanrtStatus {
    boundary(|| {
        let ctx = &non_null(ctx, "ctx")?.inner;
        let stream = &non_null(stream, "stream")?.inner;
        let optional = |p: *const scanrt_array, what: &str| -> Result<Option<ArrayView>> {
            if p.is_null() {
                Ok(None)
            } else {
                // SAFETY: the caller's array, as for the others.
                unsafe { view_of(p, what).map(Some) }
            }
        };
        let temp = if temp.is_null() {
            None
        } else {
            // SAFETY: the caller's temporary memory of `temp_bytes` bytes (range-checked by
            // the driver on a GPU).
            Some(ArrayView::contiguous(temp as u64, DType::U8, &[temp_bytes as u64])?)
        };
        let arrays = SortArrays {
            keys_in: view_of(keys_in, "keys_in")?,
            keys_out: view_of(keys_out, "keys_out")?,
            values_in: optional(values_in, "values_in")?,
            values_out: optional(values_out, "values_out")?,
            temp,
        };
        sort_arrays(ctx, stream, &arrays, &read_versioned(desc, "desc")?)
    })
}

/// Writes to `*bytes` the temporary memory a sort of `n` keys of `key_dtype` needs, with
/// values (or indices) of `value_dtype`, or -1 for keys only.
/// The sort of `scanrt_sort` and of a sort plan.
pub(super) fn sort_arrays(ctx: &Context, stream: &Stream, arrays: &SortArrays, d: &scanrt_sort_desc) -> Result<()> {
    ctx.sort(stream, arrays, &desc_from_c(d)?)
}

#[no_mangle]
pub unsafe extern "C" fn scanrt_sort_temp_bytes(
    ctx: *const scanrt_context,
    n: u64,
    key_dtype: i32,
    value_dtype: i32,
    bytes: *mut u64,
) -> ScanrtStatus {
    boundary(|| {
        let ctx = &non_null(ctx, "ctx")?.inner;
        let key = DType::from_c(key_dtype)?;
        let value = if value_dtype == -1 {
            None
        } else {
            Some(DType::from_c(value_dtype)?)
        };
        let out = super::support::non_null_mut(bytes, "bytes")?;
        *out = ctx.sort_temp_bytes(n, key, value);
        Ok(())
    })
}
