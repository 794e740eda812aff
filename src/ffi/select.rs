//! Selections: the descriptor and `scanrt_select` (compaction, partition, unique).

use std::ffi::{c_char, c_void};

use super::array::{scanrt_array, view_of};
use super::context::scanrt_context;
use super::scan::scanrt_value;
use super::stream::scanrt_stream;
use super::strings::required_text;
use super::support::{boundary, non_null};
use super::versioned::{init_sized, read_versioned, Versioned};
use crate::array::ArrayView;
use crate::context::Context;
use crate::error::Result;
use crate::scalar::InitValue;
use crate::select::desc::{Comparison, Predicate, SelectDesc, Selection};
use crate::select::SelectArrays;
use crate::stream::Stream;
use crate::tables::{ScanrtStatus, SelectOutput, SelectRule};
use crate::types::DType;

/// What a selection computes. Initialise with `scanrt_select_desc_init`, then set fields.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct scanrt_select_desc {
    /// `sizeof(scanrt_select_desc)` as the caller compiled it, set by
    /// `scanrt_select_desc_init`.
    pub struct_size: usize,
    /// A `scanrt_select_rule` value (`SCANRT_SELECT_BYTE_FLAGS` by default).
    pub rule: i32,
    /// A `scanrt_select_output` value (`SCANRT_SELECT_OUTPUT_VALUES` by default).
    pub output: i32,
    /// A comparison's operand, as the element type: `.f32` for F16 and BF16 elements
    /// (rounded to the element type), `.i32` or `.u32` for 1- and 2-byte integers (their
    /// low bits).
    pub operand: scanrt_value,
    /// Nonzero: write at most `capacity` selected elements (selections only; the count
    /// still counts them all).
    pub has_capacity: i32,
    /// Zero; keeps the struct free of padding.
    pub reserved: i32,
    /// See `has_capacity`.
    pub capacity: u64,
    /// `SCANRT_SELECT_PREDICATE`: CUDA source defining `__device__ bool FUNCTION(T x)`.
    pub predicate_source: *const c_char,
    /// `SCANRT_SELECT_PREDICATE`: the function's name.
    pub predicate_function: *const c_char,
}

impl Default for scanrt_select_desc {
    fn default() -> Self {
        scanrt_select_desc {
            struct_size: std::mem::size_of::<scanrt_select_desc>(),
            rule: SelectRule::ByteFlags as i32,
            output: SelectOutput::Values as i32,
            operand: scanrt_value { u64: 0 },
            has_capacity: 0,
            reserved: 0,
            capacity: 0,
            predicate_source: std::ptr::null(),
            predicate_function: std::ptr::null(),
        }
    }
}

impl Versioned for scanrt_select_desc {
    const NAME: &'static str = "scanrt_select_desc";
    const INIT: &'static str = "scanrt_select_desc_init";
    const V1_SIZE: usize = 56;
    fn with_size(self, struct_size: usize) -> Self {
        scanrt_select_desc { struct_size, ..self }
    }
}

const _: () = assert!(std::mem::size_of::<scanrt_select_desc>() >= scanrt_select_desc::V1_SIZE);

/// Sets the defaults (keep by byte flags, write the values, no capacity) over the first
/// `size` bytes of `desc`. Call it through the `scanrt_select_desc_init(desc)` macro.
#[no_mangle]
pub unsafe extern "C" fn scanrt_select_desc_init_sized(desc: *mut scanrt_select_desc, size: usize) -> ScanrtStatus {
    boundary(|| init_sized(desc, size, "desc"))
}

/// The descriptor as the Rust API's, for elements of `dtype`.
pub(super) unsafe fn desc_from_c(d: &scanrt_select_desc, dtype: DType) -> Result<SelectDesc> {
    let operand = || {
        // SAFETY: every member is plain old data; the element type names the one read.
        let bits = unsafe {
            match dtype {
                // As a scan's initial value of half outputs: given as f32, here rounded
                // to the element type (its words are what the elements are compared with).
                DType::F16 => half::f16::from_f32(d.operand.f32).to_bits() as u64,
                DType::BF16 => half::bf16::from_f32(d.operand.f32).to_bits() as u64,
                _ => match dtype.size() {
                    1 => d.operand.u32 as u8 as u64,
                    2 => d.operand.u32 as u16 as u64,
                    4 => d.operand.u32 as u64,
                    _ => d.operand.u64,
                },
            }
        };
        InitValue::from_bits(dtype, bits)
    };
    let compare = |c| Selection::Compare(c, operand());
    let selection = match SelectRule::from_c(d.rule)? {
        SelectRule::ByteFlags => Selection::ByteFlags,
        SelectRule::BitFlags => Selection::BitFlags,
        SelectRule::Equal => compare(Comparison::Equal),
        SelectRule::NotEqual => compare(Comparison::NotEqual),
        SelectRule::Less => compare(Comparison::Less),
        SelectRule::LessEqual => compare(Comparison::LessEqual),
        SelectRule::Greater => compare(Comparison::Greater),
        SelectRule::GreaterEqual => compare(Comparison::GreaterEqual),
        SelectRule::NonZero => Selection::NonZero,
        SelectRule::NotNan => Selection::NotNan,
        SelectRule::RunHeads => Selection::RunHeads,
        SelectRule::Predicate => Selection::Predicate(Predicate {
            source: required_text(d.predicate_source, "desc->predicate_source")?,
            function: required_text(d.predicate_function, "desc->predicate_function")?,
            host: None,
        }),
    };
    Ok(SelectDesc {
        selection,
        output: SelectOutput::from_c(d.output)?,
        capacity: (d.has_capacity != 0).then_some(d.capacity),
    })
}

/// Selects elements of `input` as `desc` says, in order, into `output` (a partition also
/// writes the rejected ones: at the end of `output` in reverse, or into `rejected`), and
/// writes how many were selected to `*num_selected` (device memory on a GPU context, so the
/// caller never waits for it; host memory on the host backend), asynchronously on
/// `stream`. `input` and byte `flags` are C-contiguous arrays of any shape, read in memory
/// order (as NumPy's `x[mask]`); the other arrays are 1-D; `flags` is the byte or bit flags
/// of a flag selection (else NULL). The output holds n elements (or the capacity's); values may be selected in place
/// (`output` = `input`). Bad input returns a status before anything is written. A
/// user-defined predicate runs on GPU contexts only.
///
/// Deprecated (kept through 0.x): a `SCANRT_PRIMITIVE_SELECT` plan, run by
/// `scanrt_plan_execute`, which takes the application's `cudaStream_t` as it is.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn scanrt_select(
    ctx: *const scanrt_context,
    stream: *const scanrt_stream,
    input: *const scanrt_array,
    flags: *const scanrt_array,
    output: *const scanrt_array,
    rejected: *const scanrt_array,
    num_selected: *mut u64,
    desc: *const scanrt_select_desc,
) -> ScanrtStatus {
    boundary(|| {
        let ctx = &non_null(ctx, "ctx")?.inner;
        let stream = &non_null(stream, "stream")?.inner;
        let input = view_of(input, "input")?;
        let optional = |p: *const scanrt_array, what: &str| -> Result<Option<ArrayView>> {
            if p.is_null() {
                Ok(None)
            } else {
                // SAFETY: the caller's array, as for the others.
                unsafe { view_of(p, what).map(Some) }
            }
        };
        let flags = optional(flags, "flags")?;
        let output = view_of(output, "output")?;
        let rejected = optional(rejected, "rejected")?;
        non_null(num_selected as *const u64, "num_selected")?;
        // SAFETY: the caller's count, one u64 (range-checked by the driver on a GPU).
        let count = ArrayView::contiguous(num_selected as *mut c_void as u64, DType::U64, &[1])?;
        let arrays = SelectArrays {
            input,
            flags,
            output,
            rejected,
            lengths: None,
            num_selected: count,
        };
        select_arrays(ctx, stream, arrays, &read_versioned(desc, "desc")?)
    })
}

/// The selection of `scanrt_select` and of a select plan.
///
/// # Safety
/// `d`'s predicate strings are NUL-terminated (or NULL).
pub(super) unsafe fn select_arrays(
    ctx: &Context,
    stream: &Stream,
    arrays: SelectArrays,
    d: &scanrt_select_desc,
) -> Result<()> {
    let desc = desc_from_c(d, arrays.input.dtype())?;
    ctx.select(stream, &arrays, &desc)
}

/// Run-length encodes `input` (C-contiguous, of any shape: its elements in memory order):
/// the value of each run of equal elements (`==`: every
/// NaN is a run of its own) into `values`, its length into `lengths` (U32 or U64), and the
/// number of runs into `*num_runs` (device memory on a GPU context, host memory on the
/// host backend), in one pass, asynchronously on `stream`. Both outputs hold n elements.
///
/// Deprecated (kept through 0.x): a `SCANRT_PRIMITIVE_RUN_LENGTH_ENCODE` plan, run by
/// `scanrt_plan_execute`, which takes the application's `cudaStream_t` as it is.
#[no_mangle]
pub unsafe extern "C" fn scanrt_run_length_encode(
    ctx: *const scanrt_context,
    stream: *const scanrt_stream,
    input: *const scanrt_array,
    values: *const scanrt_array,
    lengths: *const scanrt_array,
    num_runs: *mut u64,
) -> ScanrtStatus {
    boundary(|| {
        let ctx = &non_null(ctx, "ctx")?.inner;
        let stream = &non_null(stream, "stream")?.inner;
        let (input, values, lengths) = (
            view_of(input, "input")?,
            view_of(values, "values")?,
            view_of(lengths, "lengths")?,
        );
        non_null(num_runs as *const u64, "num_runs")?;
        // SAFETY: the caller's count, one u64 (range-checked by the driver on a GPU).
        let count = ArrayView::contiguous(num_runs as *mut c_void as u64, DType::U64, &[1])?;
        ctx.run_length_encode(stream, &input, &values, &lengths, &count)
    })
}
