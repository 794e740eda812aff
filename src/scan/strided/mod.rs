//! Scans along any axis of a strided array: columns of a matrix (a scan along dim 0),
//! rows with a pitch, an inner axis of an N-D array, transposed arrays, 1-D arrays with a
//! stride. `layout` reduces a view pair to the `[batches][len][columns]` form, the GPU
//! scans it in one pass over the data (`kernels`, kernels/device/strided_scan.cuh: one
//! decoupled look-back per column), the host backend one sequence at a time (`host`).
//! Each sequence may start from its own carry and hand its total on (`CarryViews` of one
//! value per sequence).

pub(crate) mod host;
pub(crate) mod kernels;
pub(crate) mod lanes;
pub(crate) mod layout;
mod pitched_rows;

use std::sync::Arc;

use crate::array::ArrayView;
use crate::context::Context;
use crate::contract::{
    OperatorParams, StridedParams, FLAG_DETERMINISTIC, FLAG_HAS_INIT, FLAG_INCLUSIVE, FLAG_INIT_IN_MEMORY,
    FLAG_PER_SEQUENCE_CARRIES, FLAG_STRIDED_IN_ROWS_FAST, FLAG_STRIDED_OUT_ROWS_FAST,
};
use crate::engine::{Engine, GpuEngine};
use crate::error::{bail, Result};
use crate::runtime::cu::{self, CUstream};
use crate::runtime::launch_workspace;
use crate::scan::carry_views::{CarryViews, CheckedCarry};
use crate::scan::checks::check_carries;
use crate::scan::desc::{ScanDesc, ScanShape, Segments};
use crate::scan::operator_model::{BuiltinOperator, Carries, OperatorModel};
use crate::scan::plan::choose_algorithm;
use crate::scan::ScanInfo;
use crate::stream::Stream;
use crate::tables::{Algorithm, Backend, ChoiceReason, Direction};
use crate::types::DType;
pub(crate) use layout::StridedArrays;
use layout::{check_memory, strided_pair, SequenceCarries, StridedPair, Strides};

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
    let pair = check_layout(input, output, axis)?;
    let model = BuiltinOperator::new(desc.op, types);
    let shape = desc.shape(types)?;
    let sequence_carries = carry_addresses(ctx, carries, &pair, types.accumulator)?;
    check_carries(
        &model,
        Carries {
            carry_in: sequence_carries.carry_in,
            carry_out: sequence_carries.carry_out,
        },
        &shape,
    )?;
    let arrays = StridedArrays::of_views(
        pair,
        &[*input],
        &[*output],
        ctx.id(),
        sequence_carries,
        model.state_bytes(),
    )?;
    if let Some(rows) = lanes::scan(ctx, stream, &arrays, input, output, desc)? {
        return Ok(rows);
    }
    if let Some(rows) = pitched_rows::scan(ctx, stream, &arrays, input, output, desc)? {
        return Ok(rows);
    }
    run(ctx, stream, &model, &arrays, &shape, (algorithm, reason))
}

/// The layout of a strided scan of `input` into `output` along `axis`, checked as
/// [`scan`] checks it before writing anything: a caller that runs another pass first (a
/// summed-area table's) asks before that pass.
pub(crate) fn check_layout(input: &ArrayView, output: &ArrayView, axis: usize) -> Result<StridedPair> {
    let pair = strided_pair(input, output, axis)?;
    check_memory(&pair, input, output)?;
    input.check_aligned("input")?;
    output.check_aligned("output")?;
    Ok(pair)
}

/// Runs a checked strided scan of `model` on the context's backend.
pub(crate) fn run(
    ctx: &Context,
    stream: &Stream,
    model: &dyn OperatorModel,
    a: &StridedArrays,
    shape: &ScanShape,
    (algorithm, reason): (Algorithm, ChoiceReason),
) -> Result<ScanInfo> {
    match ctx.engine() {
        Engine::Host => {
            // SAFETY: the views hold every element their strides reach (their
            // constructors' contracts), the outputs write each once and share no memory
            // with the inputs unless they are one (checked), the carries hold their
            // checked counts.
            unsafe { host::scan(model, a, shape)? };
            Ok(ScanInfo {
                backend: Backend::Host,
                algorithm: Algorithm::Host,
                reason: ChoiceReason::HostBackend,
            })
        }
        Engine::Gpu(engine) => {
            launch(engine, stream, model, a, shape, algorithm, false)?;
            Ok(ScanInfo {
                backend: Backend::Gpu,
                algorithm,
                reason,
            })
        }
    }
}

/// Builds the summed-area table of `input`'s last two axes (earlier ones a batch) into
/// `output` in one pass over the data, where the GPU's strided kernels can
/// (kernels/device/summed_area_rows.cuh): an inclusive table of a built-in operator whose
/// association order may vary (no fixed-order float table), at least two columns, which
/// the layout takes as its tiles' columns. A backward table is the forward one of both
/// views with their last two axes reversed. `None` where they cannot; the caller then
/// scans twice.
pub(crate) fn summed_area_table(
    ctx: &Context,
    stream: &Stream,
    input: &ArrayView,
    output: &ArrayView,
    desc: &ScanDesc,
) -> Result<Option<ScanInfo>> {
    let Engine::Gpu(engine) = ctx.engine() else {
        return Ok(None);
    };
    let types = desc.types(input.dtype(), output.dtype());
    types.check(desc.op)?;
    let (algorithm, reason) = choose_algorithm(
        desc.algorithm,
        desc.deterministic,
        desc.order_sensitive(types.accumulator),
    );
    let shape = input.shape();
    let (rows, columns) = (shape.len() - 2, shape.len() - 1);
    if !desc.inclusive || algorithm != Algorithm::SinglePass || shape[columns] < 2 || shape.contains(&0) {
        return Ok(None);
    }
    let (input, output) = match desc.direction {
        Direction::Forward => (*input, *output),
        Direction::Backward => (input.flipped_last_two(), output.flipped_last_two()),
    };
    let (input, output) = (&input, &output);
    let pair = check_layout(input, output, rows)?;
    let (in_columns, out_columns) = (input.strides()[columns], output.strides()[columns]);
    if pair.form.columns != shape[columns] || pair.input.column != in_columns || pair.output.column != out_columns {
        return Ok(None);
    }
    let model = BuiltinOperator::new(desc.op, types);
    let carries = carry_addresses(ctx, &CarryViews::default(), &pair, types.accumulator)?;
    let arrays = StridedArrays::of_views(pair, &[*input], &[*output], ctx.id(), carries, model.state_bytes())?;
    let forward = ScanDesc {
        direction: Direction::Forward,
        ..*desc
    };
    launch(engine, stream, &model, &arrays, &forward.shape(types)?, algorithm, true)?;
    Ok(Some(ScanInfo {
        backend: Backend::Gpu,
        algorithm,
        reason,
    }))
}

/// The carries' addresses: a carry in of one value (for every sequence) or one per
/// sequence, a carry out of one per sequence, both of the accumulator's type.
fn carry_addresses(
    ctx: &Context,
    carries: &CarryViews,
    pair: &StridedPair,
    accumulator: DType,
) -> Result<SequenceCarries> {
    let [carry_in, carry_out] = carries.checked(accumulator, ctx.id())?;
    sequence_carries(
        pair,
        carries.carry_in.is_some().then_some(carry_in),
        carries.carry_out.is_some().then_some(carry_out),
        "values",
    )
}

/// Per-sequence carries from checked views whose `len` counts states (`unit` names them
/// in messages): a carry in of one (for every sequence) or one per sequence, a carry out
/// of one per sequence.
pub(crate) fn sequence_carries(
    pair: &StridedPair,
    carry_in: Option<CheckedCarry>,
    carry_out: Option<CheckedCarry>,
    unit: &str,
) -> Result<SequenceCarries> {
    let sequences = pair.form.sequences();
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
            "the {what} holds {} {unit}; this scan of {sequences} sequences takes {takes}",
            carry.len
        )
    };
    let mut out = SequenceCarries {
        carry_in: carry_in.map_or(0, |c| c.addr),
        carry_out: carry_out.map_or(0, |c| c.addr),
        per_sequence_in: false,
        strides: Strides {
            batch: 0,
            row: 0,
            column: 0,
        },
    };
    if let Some(carry_in) = carry_in {
        count(carry_in, "carry in", &[1, sequences])?;
        out.per_sequence_in = carry_in.len == sequences && sequences > 1;
    }
    if let Some(carry_out) = carry_out {
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
/// state (its carry in, the initial value or the identity).
///
/// # Safety
/// The carries hold their checked counts of device memory; `stream` is checked.
unsafe fn carry_empty_scan(
    model: &dyn OperatorModel,
    a: &StridedArrays,
    shape: &ScanShape,
    stream: CUstream,
) -> Result<()> {
    let c = a.carries;
    let (sequences, state) = (a.pair.form.sequences(), model.state_bytes());
    if c.carry_out == 0 || sequences == 0 {
        return Ok(());
    }
    if c.carry_in == 0 {
        let init = match shape.init {
            Some(init) => init.bytes()[..state].to_vec(),
            None => model.identity_bytes(),
        };
        return cu::fill_repeated_async(c.carry_out, &init, sequences, stream);
    }
    if c.per_sequence_in {
        return cu::copy_async(c.carry_out, c.carry_in, sequences as usize * state, stream);
    }
    for s in 0..sequences {
        cu::copy_async(c.carry_out + s * state as u64, c.carry_in, state, stream)?;
    }
    Ok(())
}

/// The parameter buffer of a user-defined operator's strided kernels.
#[repr(C)]
#[derive(Clone, Copy)]
struct StridedOperatorLaunch {
    strided: StridedParams,
    operator: OperatorParams,
}

/// Queues a checked strided scan on a GPU (with `summed_area`, the summed-area table of
/// each batch's `[len][columns]` matrix: `summed_area_table` checked that it may).
fn launch(
    engine: &GpuEngine,
    stream: &Stream,
    model: &dyn OperatorModel,
    a: &StridedArrays,
    shape: &ScanShape,
    algorithm: Algorithm,
    summed_area: bool,
) -> Result<()> {
    let dev = &engine.device;
    let (_current, target) = dev.prepare_launch(stream.raw() as CUstream, stream.verified())?;
    let raw_stream = target.stream;
    let form = a.pair.form;
    let state = model.state_bytes() as u64;
    if form.elements() > 0 && !a.known {
        let views = (a.inputs.iter().zip(model.inputs()))
            .map(|(&addr, layout)| (addr, &a.pair.input, layout.size, "input"))
            .chain(
                (a.outputs.iter().zip(model.outputs()))
                    .map(|(&addr, layout)| (addr, &a.pair.output, layout.size, "output")),
            );
        for (addr, strides, size, what) in views {
            let (start, bytes) = strides.byte_range(&form, addr, size);
            dev.check_device_range(start, bytes, what)?;
        }
    }
    let sequences = form.sequences();
    let c = a.carries;
    if c.carry_in != 0 {
        let count = if c.per_sequence_in { sequences } else { 1 };
        dev.check_device_range(c.carry_in, count * state, "carry in")?;
    }
    if c.carry_out != 0 {
        dev.check_device_range(c.carry_out, sequences * state, "carry out")?;
    }
    if form.elements() == 0 {
        // SAFETY: the carries were checked to hold their counts; the stream is checked.
        return unsafe { carry_empty_scan(model, a, shape, raw_stream) };
    }
    let width = kernels::width_for(form.columns);
    let tile_rows = kernels::tile_rows(state as usize, width);
    let strips = form.columns.div_ceil(width as u64);
    let tiles = form.batches * strips * form.len.div_ceil(tile_rows);
    // A table's strips of 32 columns carry their rows too: a slot per tile row.
    let row_slots = if summed_area && width == 32 { tile_rows } else { 0 };
    let slots = tiles * (width as u64 + row_slots);
    if tiles > i32::MAX as u64 || slots > u32::MAX as u64 {
        bail!(
            LengthOverflow,
            "{} sequences of {} elements need {tiles} tiles, more than one launch can address",
            sequences,
            form.len
        );
    }
    let set = if summed_area {
        model.summed_area_kernels(engine)?
    } else {
        model.strided_kernels(engine, shape.direction)?
    };
    let workspace = launch_workspace::acquire(dev, &target, None, state as usize, slots, set.clone() as Arc<_>)?;
    let mut flags = 0;
    if shape.inclusive {
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
    } else if let Some(init) = shape.init {
        flags |= FLAG_HAS_INIT;
        init.words[0]
    } else {
        0
    };
    let params = StridedParams {
        input: a.inputs[0],
        output: a.outputs[0],
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
        call: dev.calls.record(model.label(), form.elements(), raw_stream as usize),
    };
    let kernel = set.kernel(width);
    // SAFETY: the parameters are what the kernel was compiled for; every address was
    // checked (ranges, overlaps, carries); one block per tile.
    unsafe {
        if model.takes_operator_params() {
            let at = |v: &[u64], i: usize| v.get(i).copied().unwrap_or(0);
            let params = StridedOperatorLaunch {
                strided: params,
                operator: OperatorParams {
                    input1: at(&a.inputs, 1),
                    input2: at(&a.inputs, 2),
                    input3: at(&a.inputs, 3),
                    output1: at(&a.outputs, 1),
                    init: shape.init.unwrap_or_default(),
                },
            };
            kernel.launch(tiles as u32, raw_stream, &params)
        } else {
            kernel.launch(tiles as u32, raw_stream, &params)
        }
    }
}
