//! Narrow columns (a strided form: each row 8 or 16 bytes, its columns adjacent, the rows
//! one after another) handed to the flat scan with a row as one element: `op` applied lane
//! by lane (`Lanes`, `LanesOp` of kernels/device/lanes.cuh), each lane a column. The flat
//! kernels then read and write the rows as plain consecutive elements, in 16-byte vectors,
//! where the strided kernel would move one element per thread and access through shared
//! memory and wait with its whole block for a look-back per column: a matrix of two f32
//! columns scans as 8-byte elements do.

use super::layout::Strides;
use super::StridedArrays;
use crate::array::ArrayView;
use crate::context::Context;
use crate::engine::Engine;
use crate::error::Result;
use crate::scan::desc::{ScanDesc, Segments};
use crate::scan::kernels::lane_counts;
use crate::scan::operator_model::{BuiltinOperator, Carries};
use crate::scan::plan::{PlanOperator, ScanIo, ScanPlan};
use crate::scan::ScanInfo;
use crate::stream::Stream;

/// Scans narrow columns on a GPU as rows of lanes where the views take that form: one
/// type throughout (the half types widen as they are read, which rows of lanes do not),
/// rows of 8 or 16 bytes whose columns are adjacent and which follow each other in both
/// views (batches one after another: the flat scan's rows of rows); carries of one
/// matrix only, one per column, adjacent. The association order of each column then
/// depends on the shape alone, as the flat scan's does, whatever the alignment (a
/// deterministic scan stays reproducible; batches given carries take the strided kernel,
/// and its order). None where the strided kernel scans them.
pub(super) fn scan(
    ctx: &Context,
    stream: &Stream,
    a: &StridedArrays,
    input: &ArrayView,
    output: &ArrayView,
    desc: &ScanDesc,
) -> Result<Option<ScanInfo>> {
    let Engine::Gpu(_) = ctx.engine() else {
        return Ok(None);
    };
    // Benchmarks (feature `experiments`): SCANRT_NO_LANES leaves every layout to the
    // strided kernel, for a comparison in one process.
    #[cfg(feature = "experiments")]
    if std::env::var_os("SCANRT_NO_LANES").is_some() {
        return Ok(None);
    }
    let types = desc.types(input.dtype(), output.dtype());
    let form = a.pair.form;
    let rows_follow = |s: &Strides| {
        let row = form.columns as i64;
        s.column == 1 && s.row == row && (form.batches == 1 || s.batch == row * form.len as i64)
    };
    let carries = &a.carries;
    let carries_fit = (carries.carry_in == 0 || carries.per_sequence_in) && carries.strides.column == 1;
    let carried = carries.carry_in != 0 || carries.carry_out != 0;
    if !lane_counts(types).any(|lanes| lanes as u64 == form.columns)
        || form.elements() == 0
        || !rows_follow(&a.pair.input)
        || !rows_follow(&a.pair.output)
        || (carried && (form.batches > 1 || !carries_fit))
    {
        return Ok(None);
    }
    let desc = match form.batches {
        1 => *desc,
        _ => desc.segmented(Segments::Rows(form.len)),
    };
    let model = BuiltinOperator::on_lanes(desc.op, types, form.columns as u32);
    let plan = ScanPlan::new(
        ctx,
        PlanOperator::Builtin(model),
        form.batches * form.len,
        desc.shape(types)?,
    )?;
    let io = ScanIo {
        known_buffers: a.known,
        carries: Carries {
            carry_in: carries.carry_in,
            carry_out: carries.carry_out,
        },
        ..ScanIo::new(input.addr(), output.addr())
    };
    // SAFETY: the views hold their rows one after another (checked above; their
    // constructors' contracts, checked against the driver by `check_memory`), so each
    // holds the plan's `batches * len` rows; the output is the input or lies apart from it
    // (`check_memory`), and the carries hold one state of `columns` values each.
    unsafe { plan.execute(stream, &io, None) }.map(Some)
}
