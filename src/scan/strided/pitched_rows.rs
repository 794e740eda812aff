//! Rows with a pitch (a strided form: the scanned axis contiguous, the rows a pitch apart)
//! handed to the flat scan of rows, whose bulk-copy kernel reads a tile as one run per row
//! it spans (kernels/block/bulk_io.cuh, `Pitched`).

use super::layout::Strides;
use super::StridedArrays;
use crate::array::ArrayView;
use crate::context::Context;
use crate::engine::Engine;
use crate::error::Result;
use crate::scan::desc::{ScanDesc, Segments};
use crate::scan::kernels::Specialization;
use crate::scan::operator_model::RowPitches;
use crate::scan::plan::ScanIo;
use crate::scan::translation_unit::KernelKind;
use crate::scan::ScanInfo;
use crate::stream::Stream;

/// Rows with a pitch on a GPU, scanned by the bulk-copy single pass where it takes them
/// (it copies a tile as one run per row it spans): one type throughout (no widening), rows
/// a pitch of at least their length apart, every row and pitch whole 16-byte vectors, no
/// per-sequence carries, in place or
/// into memory apart from the input's, scans large enough for that kernel and not
/// deterministic (whose kernel must not depend on the alignment). About the speed of rows
/// that follow each other. None where the strided kernel scans them.
pub(super) fn scan(
    ctx: &Context,
    stream: &Stream,
    a: &StridedArrays,
    input: &ArrayView,
    output: &ArrayView,
    desc: &ScanDesc,
) -> Result<Option<ScanInfo>> {
    let (form, pair) = (a.pair.form, &a.pair);
    let pitch_of = |s: &Strides, size: u64| -> Option<u64> {
        let pitch = match (form.batches, form.columns) {
            (_, 1) => s.batch,
            (1, _) => s.column,
            _ if s.batch == s.column * form.columns as i64 => s.column,
            _ => return None,
        };
        let whole = |elements: u64| (elements * size).is_multiple_of(16);
        (s.row == 1 && pitch >= form.len as i64 && whole(pitch as u64) && whole(form.len)).then_some(pitch as u64)
    };
    let (in_size, out_size) = (input.dtype().size() as u64, output.dtype().size() as u64);
    let (Some(in_pitch), Some(out_pitch)) = (pitch_of(&pair.input, in_size), pitch_of(&pair.output, out_size)) else {
        return Ok(None);
    };
    let rows = form.sequences();
    let extent = |addr: u64, pitch: u64, size: u64| addr..addr + ((rows - 1) * pitch + form.len) * size;
    let (reads, writes) = (
        extent(input.addr(), in_pitch, in_size),
        extent(output.addr(), out_pitch, out_size),
    );
    let in_place = input.addr() == output.addr() && in_pitch == out_pitch && in_size == out_size;
    let apart = reads.end <= writes.start || writes.end <= reads.start;
    let carried = a.carries.carry_in != 0 || a.carries.carry_out != 0;
    let aligned = input.addr().is_multiple_of(16) && output.addr().is_multiple_of(16);
    if rows < 2 || carried || !aligned || !(in_place || apart) || desc.deterministic {
        return Ok(None);
    }
    // Whether the bulk-copy kernel would take the scan, before its kernels load (a
    // scan too small for it would compile kernels it does not run).
    let desc = desc.segmented(Segments::Rows(form.len));
    let n = rows * form.len;
    let types = desc.types(input.dtype(), output.dtype());
    if !types.one_type() {
        return Ok(None); // a transform's sources and destinations take no pitch
    }
    let Engine::Gpu(engine) = ctx.engine() else {
        return Ok(None);
    };
    let (regular, _) = Specialization::all_for(engine.device.arch, types, &desc);
    let shape = regular.shape;
    if !regular.has(KernelKind::SinglePassBulk) || n.div_ceil(shape.tile_elems()) < shape.bulk_min_tiles {
        return Ok(None);
    }
    let plan = ctx.plan(input.dtype(), output.dtype(), n, &desc)?;
    if !plan.takes_pitched_rows() {
        return Ok(None);
    }
    let io = ScanIo {
        pitches: RowPitches {
            input: in_pitch,
            output: out_pitch,
        },
        known_buffers: a.known,
        ..ScanIo::new(input.addr(), output.addr())
    };
    // SAFETY: the views hold every element of their rows (their constructors' contracts,
    // checked against the driver by `check_memory`), and the output is the input or lies
    // apart from it; the plan's own checks cover the first `rows * len` elements of each.
    unsafe { plan.execute(stream, &io, None) }.map(Some)
}
