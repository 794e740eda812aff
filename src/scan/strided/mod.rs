//! Scans along any axis of a strided array: columns of a matrix (a scan along dim 0),
//! rows with a pitch, an inner axis of an N-D array, transposed arrays, 1-D arrays with a
//! stride. `layout` reduces a view pair to the `[batches][len][columns]` form, the GPU
//! scans it in one pass over the data (`kernels`, kernels/device/strided_scan.cuh: one
//! decoupled look-back per column), the host backend one sequence at a time (`host`).
//! Each sequence may start from its own carry and hand its total on (`CarryViews` of one
//! value per sequence).

pub(crate) mod host;
pub(crate) mod kernels;
pub(crate) mod layout;

use std::sync::Arc;

use cudarc::driver::sys::CUstream;

use crate::array::ArrayView;
use crate::context::Context;
use crate::contract::{
    StridedParams, FLAG_DETERMINISTIC, FLAG_HAS_INIT, FLAG_INCLUSIVE, FLAG_INIT_IN_MEMORY, FLAG_PER_SEQUENCE_CARRIES,
    FLAG_STRIDED_IN_ROWS_FAST, FLAG_STRIDED_OUT_ROWS_FAST,
};
use crate::engine::{Engine, GpuEngine};
use crate::error::{bail, Result};
use crate::runtime::calls::CallLabel;
use crate::runtime::{driver, launch_workspace};
use crate::scan::carry_views::{CarryViews, CheckedCarry};
use crate::scan::checks::check_carries;
use crate::scan::desc::{ScanDesc, Segments};
use crate::scan::operator_model::{BuiltinOperator, Carries};
use crate::scan::plan::choose_algorithm;
use crate::scan::ScanInfo;
use crate::stream::Stream;
use crate::tables::{Algorithm, Backend, ChoiceReason};
use crate::types::{DType, ScanTypes};
use host::SequenceCarries;
use kernels::{StridedKernels, StridedSpec};
use layout::{check_memory, strided_pair, StridedPair, Strides};

/// Scans `input` into `output` along `axis` (in range, non-negative) as the strided
/// form of the pair says; `desc` is unsegmented.
pub(crate) fn scan(
    ctx: &Context,
    stream: &Stream,
    input: &ArrayView,
    output: &ArrayView,
    axis: usize,
    desc: &ScanDesc,
    carries: &CarryViews,
) -> Result<ScanInfo> {
    let types = desc.types(input.dtype(), output.dtype());
    types.check(desc.op)?;
    if desc.segments != Segments::None {
        bail!(
            UnsupportedCombination,
            "segments apply to 1-D arrays; a scan along an axis of a strided array restarts per sequence already"
        );
    }
    if desc.algorithm == Algorithm::Matrix {
        bail!(
            UnsupportedCombination,
            "the matrix scan runs on contiguous arrays; a strided array is scanned by the single pass \
             (deterministic = true for a fixed association order)"
        );
    }
    let (algorithm, reason) = choose_algorithm(
        desc.algorithm,
        desc.deterministic,
        desc.order_sensitive(types.accumulator),
    );
    let init_bits = desc.init_bits(types.accumulator)?;
    let pair = strided_pair(input, output, axis)?;
    check_memory(&pair, input, output)?;
    for (view, what) in [(input, "input"), (output, "output")] {
        if !view.addr().is_multiple_of(view.dtype().size() as u64) {
            bail!(
                InvalidArgument,
                "the {what} at {:#x} is not aligned to its {}-byte elements",
                view.addr(),
                view.dtype().size()
            );
        }
    }
    let sequence_carries = carry_addresses(ctx, carries, &pair, types.accumulator)?;
    let addresses = Carries {
        carry_in: sequence_carries.carry_in,
        carry_out: sequence_carries.carry_out,
    };
    check_carries(
        &BuiltinOperator::new(desc.op, types),
        addresses,
        &desc.shape(types.accumulator)?,
    )?;
    match ctx.engine() {
        Engine::Host => {
            // SAFETY: the views hold every element their strides reach (their
            // constructors' contracts), the output writes each once and shares no memory
            // with the input unless it is the input (checked), the carries hold their
            // checked counts.
            unsafe {
                host::scan(
                    &pair,
                    (input.addr(), input.dtype()),
                    (output.addr(), output.dtype()),
                    desc,
                    types.accumulator,
                    sequence_carries,
                )?
            };
            Ok(ScanInfo {
                backend: Backend::Host,
                algorithm: Algorithm::Host,
                reason: ChoiceReason::HostBackend,
            })
        }
        Engine::Gpu(engine) => {
            let arrays = Arrays {
                pair,
                input: input.addr(),
                output: output.addr(),
                types,
                known: input.known_to(ctx.id())? && output.known_to(ctx.id())?,
                carries: sequence_carries,
            };
            launch(engine, stream, &arrays, desc, init_bits, algorithm)?;
            Ok(ScanInfo {
                backend: Backend::Gpu,
                algorithm,
                reason,
            })
        }
    }
}

/// The carries' addresses: a carry in of one value (for every sequence) or one per
/// sequence, a carry out of one per sequence, both of the accumulator's type.
fn carry_addresses(
    ctx: &Context,
    carries: &CarryViews,
    pair: &StridedPair,
    accumulator: DType,
) -> Result<SequenceCarries> {
    let sequences = pair.form.sequences();
    let [carry_in, carry_out] = carries.checked(accumulator, ctx.id())?;
    let count = |carry: CheckedCarry, what: &str, counts: &[u64]| -> Result<()> {
        if counts.contains(&carry.len) {
            return Ok(());
        }
        let takes = if counts.len() > 1 {
            "1 or one per sequence"
        } else {
            "one per sequence"
        };
        bail!(
            BufferTooSmall,
            "the {what} holds {} values; this scan of {sequences} sequences takes {takes}",
            carry.len
        )
    };
    let mut out = SequenceCarries {
        carry_in: carry_in.addr,
        carry_out: carry_out.addr,
        per_sequence_in: false,
        strides: Strides {
            batch: 0,
            row: 0,
            column: 0,
        },
    };
    if carries.carry_in.is_some() {
        count(carry_in, "carry in", &[1, sequences])?;
        out.per_sequence_in = carry_in.len == sequences && sequences > 1;
    }
    if carries.carry_out.is_some() {
        count(carry_out, "carry out", &[sequences])?;
    }
    let per_sequence = out.per_sequence_in || (out.carry_out != 0 && sequences > 1);
    match pair.carries {
        Some(strides) => out.strides = strides,
        None if per_sequence => bail!(
            UnsupportedCombination,
            "per-sequence carries follow the row-major order of the other axes, which this array's strides do not \
             map onto; scan a contiguous copy"
        ),
        None => {}
    }
    Ok(out)
}

/// A scan of sequences of nothing still hands each sequence's carry on: its initial
/// value (its carry in, the descriptor's initial value or the identity).
///
/// # Safety
/// The carries hold their checked counts of device memory; `stream` is checked.
unsafe fn carry_empty_scan(a: &Arrays, desc: &ScanDesc, init_bits: Option<u64>, stream: CUstream) -> Result<()> {
    let c = a.carries;
    let (sequences, acc) = (a.pair.form.sequences(), a.types.accumulator.size());
    if c.carry_out == 0 || sequences == 0 {
        return Ok(());
    }
    if c.carry_in == 0 {
        let bits = init_bits.unwrap_or_else(|| crate::scan::host::identity_bits(a.types, desc.op));
        return driver::fill_repeated_async(c.carry_out, &bits.to_ne_bytes()[..acc], sequences, stream);
    }
    if c.per_sequence_in {
        return driver::copy_async(c.carry_out, c.carry_in, sequences as usize * acc, stream);
    }
    for s in 0..sequences {
        driver::copy_async(c.carry_out + s * acc as u64, c.carry_in, acc, stream)?;
    }
    Ok(())
}

/// A checked strided scan's arrays on a GPU.
struct Arrays {
    pair: StridedPair,
    input: u64,
    output: u64,
    types: ScanTypes,
    /// Both views are buffers of the context (of checked length).
    known: bool,
    carries: SequenceCarries,
}

/// Queues a checked strided scan on a GPU.
fn launch(
    engine: &GpuEngine,
    stream: &Stream,
    a: &Arrays,
    desc: &ScanDesc,
    init_bits: Option<u64>,
    algorithm: Algorithm,
) -> Result<()> {
    let dev = &engine.device;
    let raw_stream = stream.raw() as CUstream;
    let _current = dev.prepare_launch(raw_stream, stream.verified())?;
    let form = a.pair.form;
    let acc = a.types.accumulator.size() as u64;
    if form.elements() > 0 && !a.known {
        for (addr, strides, dtype, what) in [
            (a.input, &a.pair.input, a.types.input, "input"),
            (a.output, &a.pair.output, a.types.output, "output"),
        ] {
            let (start, bytes) = strides.byte_range(&form, addr, dtype.size());
            dev.check_device_range(start, bytes, what)?;
        }
    }
    let sequences = form.sequences();
    let c = a.carries;
    if c.carry_in != 0 {
        let count = if c.per_sequence_in { sequences } else { 1 };
        dev.check_device_range(c.carry_in, count * acc, "carry in")?;
    }
    if c.carry_out != 0 {
        dev.check_device_range(c.carry_out, sequences * acc, "carry out")?;
    }
    if form.elements() == 0 {
        // SAFETY: the carries were checked to hold their counts; the stream is checked.
        return unsafe { carry_empty_scan(a, desc, init_bits, raw_stream) };
    }
    let width = kernels::width_for(form.columns);
    let tile_rows = kernels::tile_rows(a.types, width);
    let strips = form.columns.div_ceil(width as u64);
    let tiles = form.batches * strips * form.len.div_ceil(tile_rows);
    let slots = tiles * width as u64;
    if tiles > i32::MAX as u64 || slots > u32::MAX as u64 {
        bail!(
            LengthOverflow,
            "{} sequences of {} elements need {tiles} tiles, more than one launch can address",
            sequences,
            form.len
        );
    }
    let spec = StridedSpec {
        types: a.types,
        op: desc.op,
        direction: desc.direction,
    };
    let set = engine.algorithms.get::<StridedKernels>().get(dev, &spec)?;
    let workspace = launch_workspace::acquire(dev, raw_stream, None, acc as usize, slots, set.clone() as Arc<_>)?;
    let mut flags = 0;
    if desc.inclusive {
        flags |= FLAG_INCLUSIVE;
    }
    if algorithm == Algorithm::DeterministicSinglePass {
        flags |= FLAG_DETERMINISTIC;
    }
    if a.pair.input.rows_fast(&form) {
        flags |= FLAG_STRIDED_IN_ROWS_FAST;
    }
    if a.pair.output.rows_fast(&form) {
        flags |= FLAG_STRIDED_OUT_ROWS_FAST;
    }
    let init = if c.carry_in != 0 {
        flags |= FLAG_HAS_INIT | FLAG_INIT_IN_MEMORY;
        if c.per_sequence_in {
            flags |= FLAG_PER_SEQUENCE_CARRIES;
        }
        c.carry_in
    } else if let Some(bits) = init_bits {
        flags |= FLAG_HAS_INIT;
        bits
    } else {
        0
    };
    let params = StridedParams {
        input: a.input,
        output: a.output,
        workspace: workspace.ptr,
        report: dev.faults.device,
        in_batch_stride: a.pair.input.batch,
        in_row_stride: a.pair.input.row,
        out_batch_stride: a.pair.output.batch,
        out_row_stride: a.pair.output.row,
        in_column_stride: a.pair.input.column,
        out_column_stride: a.pair.output.column,
        batches: form.batches as i64,
        len: form.len as i64,
        columns: form.columns as i64,
        status_capacity: workspace.slots as i64,
        init_bits: init,
        carry_out: c.carry_out,
        carry_batch_stride: c.strides.batch,
        carry_column_stride: c.strides.column,
        flags,
        call: dev.calls.record(
            CallLabel::Builtin {
                op: desc.op.c_name(),
                input: a.types.input.describe(),
                output: a.types.output.describe(),
            },
            form.elements(),
            raw_stream as usize,
        ),
    };
    // SAFETY: the parameters are what the kernel was compiled for; every address was
    // checked (ranges, overlaps, carries); one block per tile.
    unsafe { set.kernel(width).launch(tiles as u32, raw_stream, &params) }
}
