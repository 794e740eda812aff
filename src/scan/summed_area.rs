//! Summed-area tables (integral images): the inclusive scan of a 2-D array along both of
//! its axes.
//!
//! On a GPU, a forward table of one array (no batch) whose input, accumulator and output
//! types are one reads its input twice and writes its output once (three moves of each
//! element): the strip-totals kernel (kernels/device/strip_totals.cuh) folds every row's
//! strips of 32 columns, a scan of rows turns those totals into each strip's carry, and
//! the strided scan down the columns first scans each tile row across its strip from that
//! carry (`StridedParams::row_carries`). Everything else (the host backend, batches of
//! tables, backward tables, wider accumulators) runs two strided scans: along the rows
//! into the output, then along the output's columns in place, four moves of each element.
//! A single pass would move each element twice but needs a look-back in two dimensions:
//! each tile waits for the row prefixes of the tile to its left and, once its rows are
//! scanned, for the column prefixes of the tile above (two decoupled chains per tile,
//! with tickets that number tiles row-major so both predecessors come first). Not built.

use cudarc::driver::sys::CUstream;

use crate::array::ArrayView;
use crate::context::Context;
use crate::contract::StridedParams;
use crate::engine::{Engine, GpuEngine};
use crate::error::{bail, Result};
use crate::scan::carry_views::CarryViews;
use crate::scan::desc::{ScanDesc, Segments};
use crate::scan::operator_model::{BuiltinOperator, OperatorModel};
use crate::scan::strided::{self, kernels::STRIP_TOTALS_THREADS, layout::strided_pair};
use crate::scan::ScanInfo;
use crate::stream::Stream;
use crate::tables::{Algorithm, Direction};

/// Columns of a strip of the strip-totals kernel (the strided kernel's widest strip).
const STRIP: u64 = 32;

impl Context {
    /// The summed-area table of `input` over its last two axes (earlier axes are a batch
    /// of tables) into `output` (the same shape; any strides, as
    /// [`Context::scan_array`]): element `[.., i, j]` of the output combines every input
    /// element `[.., i', j']` with `i' <= i` and `j' <= j` (`<` for exclusive scans;
    /// backward scans combine from the last row and column). Any built-in operator; where
    /// the accumulator is wider than the output, the row scan's results are rounded to
    /// the output type before the column scan combines them. No initial value (it would
    /// enter along both axes).
    pub fn summed_area_table(
        &self,
        stream: &Stream,
        input: &ArrayView,
        output: &ArrayView,
        desc: &ScanDesc,
    ) -> Result<ScanInfo> {
        let ndim = input.shape().len();
        if ndim < 2 {
            bail!(
                InvalidArgument,
                "a summed-area table takes an array of at least 2 dimensions (shape {:?})",
                input.shape()
            );
        }
        if desc.init.is_some() || desc.segments != Segments::None {
            bail!(
                InvalidArgument,
                "a summed-area table takes no initial value and no segments"
            );
        }
        input.check_output(output)?;
        if let Engine::Gpu(engine) = self.engine() {
            if reads_input_twice(input, output, desc) {
                return table_in_three_moves(self, engine, stream, input, output, desc);
            }
        }
        self.scan_array(stream, input, output, ndim as isize - 1, desc)?;
        self.scan_array(stream, &output.read_only(), output, ndim as isize - 2, desc)
    }
}

/// Whether the three-move table applies: a forward table of one array (every axis before
/// the last two of extent 1, so that its columns are the strided scan's columns) of one
/// type throughout, with elements, not asking for the matrix algorithm (which refuses
/// strided views either way).
fn reads_input_twice(input: &ArrayView, output: &ArrayView, desc: &ScanDesc) -> bool {
    let shape = input.shape();
    let types = desc.types(input.dtype(), output.dtype());
    desc.direction == Direction::Forward
        && desc.algorithm != Algorithm::Matrix
        && types.input == types.accumulator
        && types.accumulator == types.output
        && shape[..shape.len() - 2].iter().all(|&d| d == 1)
        && !shape.contains(&0)
}

/// The three-move table (module docs) of a checked pair: the strips' totals and their
/// scan into stream-ordered scratch memory, then the column scan that reads them.
fn table_in_three_moves(
    ctx: &Context,
    engine: &GpuEngine,
    stream: &Stream,
    input: &ArrayView,
    output: &ArrayView,
    desc: &ScanDesc,
) -> Result<ScanInfo> {
    let ndim = input.shape().len();
    let (rows, columns) = (input.shape()[ndim - 2], input.shape()[ndim - 1]);
    let column_pass = |row_carries: u64| {
        strided::scan_with_row_carries(
            ctx,
            stream,
            input,
            output,
            ndim - 2,
            desc,
            &CarryViews::default(),
            row_carries,
        )
    };
    let strips = columns.div_ceil(STRIP);
    if strips == 1 {
        // One strip: every row starts from the identity, and the carries are not read
        // (any address but 0 asks for the row scan).
        return column_pass(output.addr());
    }
    let types = desc.types(input.dtype(), output.dtype());
    types.check(desc.op)?;
    let pair = strided_pair(input, output, ndim - 2)?;
    let size = input.dtype().size();
    if !input.addr().is_multiple_of(size as u64) {
        bail!(
            InvalidArgument,
            "the input at {:#x} is not aligned to its {size}-byte elements",
            input.addr()
        );
    }
    let dev = &engine.device;
    let raw_stream = stream.raw() as CUstream;
    let _current = dev.prepare_launch(raw_stream, stream.verified())?;
    if !input.known_to(ctx.id())? {
        let (start, bytes) = pair.input.byte_range(&pair.form, input.addr(), size);
        dev.check_device_range(start, bytes, "input")?;
    }
    let model = BuiltinOperator::new(desc.op, types);
    let set = model.strided_kernels(engine, Direction::Forward)?;
    let kernel = set
        .strip_totals()
        .expect("built-in strided sets have the strip-totals kernel");
    let acc = types.accumulator;
    // SAFETY: the context is current and the stream checked; the memory is freed below,
    // in stream order after the column scan that reads it last.
    let totals = unsafe { dev.scratch.alloc((rows * strips) as usize * acc.size(), raw_stream)? };
    let table = (|| {
        let params = StridedParams {
            input: input.addr(),
            output: totals,
            in_batch_stride: pair.input.batch,
            in_row_stride: pair.input.row,
            in_column_stride: pair.input.column,
            batches: 1,
            len: rows as i64,
            columns: columns as i64,
            ..StridedParams::default()
        };
        // A warp per 8 strips of a row; the kernel strides over the rest.
        let warps = rows * strips.div_ceil(8);
        let grid = warps.div_ceil((STRIP_TOTALS_THREADS / 32) as u64).min(1 << 20) as u32;
        // SAFETY: the parameters are the kernel's; the input's range was checked and the
        // totals hold rows * strips accumulators.
        unsafe { kernel.launch(grid, raw_stream, &params)? };
        // SAFETY: the scratch memory holds rows * strips accumulators until it is freed.
        let carries = unsafe { ArrayView::contiguous(totals, acc, &[rows, strips])? };
        let exclusive = ScanDesc {
            inclusive: false,
            accumulator: None,
            ..*desc
        };
        ctx.scan_array(stream, &carries, &carries, 1, &exclusive)?;
        column_pass(totals)
    })();
    // SAFETY: queued after every use of the totals on this stream.
    let freed = unsafe { dev.scratch.free(totals, raw_stream) };
    let info = table?;
    freed.map(|_| info)
}
