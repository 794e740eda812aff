//! Stream compaction, partition and unique: the single-pass primitives built on the
//! look-back, beside `scan` over the same engine. `desc` says what a selection computes,
//! `kernels` holds its GPU kernels, `host` runs it on the host backend; this file checks
//! a call's arrays and launches it.

pub(crate) mod desc;
pub(crate) mod host;
pub(crate) mod kernels;

use std::sync::Arc;

use cudarc::driver::sys::CUstream;

use crate::array::{ArrayView, AxisLayout};
use crate::context::Context;
use crate::contract::{SelectParams, FLAG_VECTOR_HEADS, FLAG_VECTOR_IN};
use crate::engine::{Engine, GpuEngine};
use crate::error::{bail, Result};
use crate::runtime::calls::CallLabel;
use crate::runtime::{driver, launch_workspace};
use crate::stream::Stream;
use crate::types::DType;
use desc::{SelectDesc, SelectOutput, Selection};
use kernels::{RuleKey, SelectKernels, SelectSpec};

/// The arrays of a selection: 1-D views, device memory on a GPU context (host memory on
/// the host backend).
#[derive(Debug, Clone, Copy)]
pub struct SelectArrays<'a> {
    /// The elements.
    pub input: ArrayView<'a>,
    /// The selection's flags (`Selection::ByteFlags`: `U8`; `BitFlags`: `U32` words),
    /// `None` for the other selections.
    pub flags: Option<ArrayView<'a>>,
    /// The selected elements (or indices, or the whole partition).
    pub output: ArrayView<'a>,
    /// A two-array partition's rejected elements.
    pub rejected: Option<ArrayView<'a>>,
    /// A run-length encoding's run lengths (`U32` or `U64`).
    pub lengths: Option<ArrayView<'a>>,
    /// One `U64`: the number of selected elements, written by the call (stream-ordered).
    pub num_selected: ArrayView<'a>,
}

/// A checked selection: its length and what its kernel is specialised on.
struct Checked {
    n: u64,
    capacity: u64,
    spec: SelectSpec,
}

impl Context {
    /// Selects elements of `arrays.input` as `desc` says, in order, into `arrays.output`
    /// (a partition also writes the rejected ones), and writes how many were selected to
    /// `arrays.num_selected`, all asynchronously on `stream` for a GPU: the count stays
    /// on the device, so the caller never waits for it. The output holds `n` elements
    /// (or the capacity's), the count counts every selected element. Values may be
    /// selected in place (output = input). Bad input returns an error before anything is
    /// written.
    pub fn select(&self, stream: &Stream, arrays: &SelectArrays, desc: &SelectDesc) -> Result<()> {
        self.check_stream_owner(stream)?;
        let checked = check(arrays, desc)?;
        match self.engine() {
            // SAFETY: the views are valid for their checked lengths (by their
            // constructors' contracts), and checked not to overlap where they must not.
            Engine::Host => unsafe { host::select(arrays, desc, checked.n, checked.capacity) },
            Engine::Gpu(engine) => launch(engine, stream, arrays, desc, &checked),
        }
    }

    /// Run-length encodes `input`: the value of each run of equal elements into `values`,
    /// its length into `lengths` (`U32` or `U64`), the number of runs into `num_runs` (one
    /// `U64`), in one pass, asynchronously on `stream` for a GPU. Both outputs hold `n`.
    pub fn run_length_encode(
        &self,
        stream: &Stream,
        input: &ArrayView,
        values: &ArrayView,
        lengths: &ArrayView,
        num_runs: &ArrayView,
    ) -> Result<()> {
        let arrays = SelectArrays {
            input: *input,
            flags: None,
            output: *values,
            rejected: None,
            lengths: Some(*lengths),
            num_selected: *num_runs,
        };
        let desc = SelectDesc {
            selection: Selection::RunHeads,
            output: SelectOutput::RunLengths,
            capacity: None,
        };
        self.select(stream, &arrays, &desc)
    }

    /// The number of selected elements `num_selected` holds, after waiting for `stream`
    /// (a convenience for callers that need it on the host).
    pub fn selected_count(&self, stream: &Stream, num_selected: &crate::Buffer) -> Result<u64> {
        Ok(num_selected.download::<u64>(stream, 1)?[0])
    }
}

/// Checks a call's arrays against its description.
fn check(a: &SelectArrays, desc: &SelectDesc) -> Result<Checked> {
    let dtype = a.input.dtype();
    desc.selection.check(dtype)?;
    let one_d = |v: &ArrayView, what: &str| -> Result<u64> {
        match v.axis_layout(-1)? {
            AxisLayout::Flat { n } if v.shape().len() <= 1 => Ok(n),
            _ => bail!(
                UnsupportedCombination,
                "the {what} of a selection is a 1-D contiguous array (shape {:?})",
                v.shape()
            ),
        }
    };
    let n = one_d(&a.input, "input")?;
    let out_len = one_d(&a.output, "output")?;
    if !a.output.writable || !a.num_selected.writable {
        bail!(
            InvalidArgument,
            "the output and the count are written: pass mutable views"
        );
    }
    // The selection's data.
    match (desc.selection.data_type(), &a.flags) {
        (Some(want), Some(f)) => {
            let len = one_d(f, "flag array")?;
            if f.dtype() != want {
                bail!(
                    InvalidArgument,
                    "{:?} selections read {} flags, not {}",
                    desc.selection,
                    want.c_name(),
                    f.dtype().c_name()
                );
            }
            let needed = desc.selection.data_entries(n);
            if len < needed {
                bail!(
                    BufferTooSmall,
                    "{n} elements need {needed} flag entries; the array holds {len}"
                );
            }
        }
        (Some(_), None) => bail!(InvalidArgument, "a {:?} selection needs its flag array", desc.selection),
        (None, Some(_)) => bail!(InvalidArgument, "a {:?} selection takes no flag array", desc.selection),
        (None, None) => {}
    }
    // The outputs.
    let partition = matches!(
        desc.output,
        SelectOutput::PartitionReversed | SelectOutput::PartitionTwo
    );
    let runs = desc.output == SelectOutput::RunLengths;
    if (partition || runs) && desc.capacity.is_some() {
        bail!(InvalidArgument, "a partition or run-length encoding takes no capacity");
    }
    if runs && !matches!(desc.selection, Selection::RunHeads) {
        bail!(
            InvalidArgument,
            "a run-length encoding selects runs: Selection::RunHeads"
        );
    }
    match (runs, &a.lengths) {
        (true, Some(l)) => {
            if one_d(l, "lengths")? < n || !matches!(l.dtype(), DType::U32 | DType::U64) || !l.writable {
                bail!(
                    InvalidArgument,
                    "run lengths are a writable U32 or U64 array of at least {n} elements"
                );
            }
            if l.dtype() == DType::U32 && n > u32::MAX as u64 {
                bail!(LengthOverflow, "a run of {n} elements may not fit U32 lengths: use U64");
            }
        }
        (true, None) => bail!(InvalidArgument, "a run-length encoding needs its lengths array"),
        (false, Some(_)) => bail!(InvalidArgument, "only a run-length encoding takes a lengths array"),
        (false, None) => {}
    }
    let output = a.output.dtype();
    match desc.output {
        SelectOutput::Indices => {
            if !matches!(output, DType::U32 | DType::U64) {
                bail!(
                    InvalidArgument,
                    "indices are written as U32 or U64, not {}",
                    output.c_name()
                );
            }
            if output == DType::U32 && n > u32::MAX as u64 + 1 {
                bail!(LengthOverflow, "{n} elements have indices past U32: write U64 indices");
            }
        }
        _ if output != dtype => bail!(
            InvalidArgument,
            "the output holds {} but the elements are {}",
            output.c_name(),
            dtype.c_name()
        ),
        _ => {}
    }
    let capacity = desc.capacity.unwrap_or(n).min(n);
    if out_len < capacity {
        bail!(
            BufferTooSmall,
            "the output holds {out_len} elements; {} needs {capacity} (n, or the capacity)",
            if partition { "a partition" } else { "a selection" }
        );
    }
    match (desc.output, &a.rejected) {
        (SelectOutput::PartitionTwo, Some(r)) => {
            if one_d(r, "rejected array")? < n || r.dtype() != dtype || !r.writable {
                bail!(
                    BufferTooSmall,
                    "the rejected array must be a writable {} array of at least {n} elements",
                    dtype.c_name()
                );
            }
        }
        (SelectOutput::PartitionTwo, None) => {
            bail!(InvalidArgument, "a two-array partition needs its rejected array")
        }
        (_, Some(_)) => bail!(InvalidArgument, "only a two-array partition takes a rejected array"),
        _ => {}
    }
    if a.num_selected.dtype() != DType::U64 || one_d(&a.num_selected, "count")? < 1 {
        bail!(InvalidArgument, "the count is one U64 element");
    }
    // Overlaps: values may be selected in place (the look-back orders every tile's load
    // before any write over it); nothing else may share memory.
    let in_place_ok = matches!(desc.output, SelectOutput::Values | SelectOutput::PartitionTwo);
    let outputs: Vec<(&str, &ArrayView)> = [
        ("output", Some(&a.output)),
        ("rejected array", a.rejected.as_ref()),
        ("lengths", a.lengths.as_ref()),
    ]
    .into_iter()
    .filter_map(|(w, v)| v.map(|v| (w, v)))
    .chain(std::iter::once(("count", &a.num_selected)))
    .collect();
    for (i, (what, out)) in outputs.iter().enumerate() {
        let exact = out.addr() == a.input.addr() && *what == "output" && in_place_ok;
        if !exact && out.overlaps(&a.input) {
            bail!(PartialOverlap, "the {what} overlaps the input");
        }
        if a.flags.as_ref().is_some_and(|f| f.overlaps(out)) {
            bail!(PartialOverlap, "the {what} overlaps the flags");
        }
        for (other, o) in &outputs[i + 1..] {
            if o.overlaps(out) {
                bail!(PartialOverlap, "the {what} overlaps the {other}");
            }
        }
    }
    Ok(Checked {
        n,
        capacity,
        spec: SelectSpec {
            dtype,
            // A run-length encoding's kernel is specialised on its lengths' type.
            output: a.lengths.map_or(output, |l| l.dtype()),
            rule: RuleKey::of(&desc.selection, desc.output),
            form: desc.output,
        },
    })
}

/// Queues a checked selection on a GPU.
fn launch(engine: &GpuEngine, stream: &Stream, a: &SelectArrays, desc: &SelectDesc, c: &Checked) -> Result<()> {
    let dev = &engine.device;
    let _current = dev.enter()?;
    dev.take_fault()?;
    let raw_stream = stream.raw() as CUstream;
    if !stream.verified() {
        dev.check_stream(raw_stream)?;
    }
    // Memory scanrt did not allocate is range-checked with the driver.
    let views = [
        Some(&a.input),
        a.flags.as_ref(),
        Some(&a.output),
        a.rejected.as_ref(),
        a.lengths.as_ref(),
        Some(&a.num_selected),
    ];
    for (v, what) in views
        .iter()
        .zip(["input", "flags", "output", "rejected array", "lengths", "count"])
    {
        if let Some(v) = v.filter(|v| !v.known && !v.is_empty()) {
            let bytes = if what == "output" {
                c.capacity.max(1).min(v.len().unwrap_or(0)) * v.dtype().size() as u64
            } else {
                v.bytes()
            };
            dev.check_device_range(v.addr(), bytes, what)?;
        }
    }
    if c.n == 0 {
        // SAFETY: the count is one checked U64 of device memory; the stream is checked.
        return unsafe { driver::zero_async(a.num_selected.addr(), 8, raw_stream) };
    }
    let kernel = engine.algorithms.get::<SelectKernels>().get(dev, &c.spec)?;
    let tiles = c.n.div_ceil(kernels::tile_elems(c.spec.dtype));
    if tiles > i32::MAX as u64 {
        bail!(
            LengthOverflow,
            "n = {} needs {tiles} tiles, more than one launch can address",
            c.n
        );
    }
    // The carry: a count (8 bytes), or a run-length encoding's count and last end (16).
    let carry_bytes = if c.spec.form == SelectOutput::RunLengths { 16 } else { 8 };
    let workspace = launch_workspace::acquire(dev, raw_stream, None, carry_bytes, tiles, kernel.clone() as Arc<_>)?;
    let aligned = |v: &ArrayView, bytes: u64| v.addr() % bytes == 0;
    let mut flags = 0;
    if aligned(&a.input, 16) {
        flags |= FLAG_VECTOR_IN;
    }
    if a.flags.as_ref().is_some_and(|f| aligned(f, 4)) {
        flags |= FLAG_VECTOR_HEADS;
    }
    let operand_bits = match &desc.selection {
        Selection::Compare(_, v) => v.bits(),
        _ => 0,
    };
    let params = SelectParams {
        input: a.input.addr(),
        selection: a.flags.map_or(0, |f| f.addr()),
        output: a.output.addr(),
        second: a.rejected.or(a.lengths).map_or(0, |v| v.addr()),
        num_selected: a.num_selected.addr(),
        workspace: workspace.ptr,
        report: dev.faults.device,
        n: c.n as i64,
        status_capacity: workspace.slots as i64,
        capacity: c.capacity,
        operand_bits,
        flags,
        call: dev.calls.record(
            CallLabel::Builtin {
                op: "select",
                input: c.spec.dtype.describe(),
                output: c.spec.output.describe(),
            },
            c.n,
            raw_stream as usize,
        ),
    };
    // SAFETY: the parameters are what the kernel was compiled for, the addresses checked.
    // Persistent blocks: as many as are resident at once, at most one per tile.
    let grid = tiles.min(kernel.kernel.resident_blocks as u64) as u32;
    unsafe { kernel.kernel.launch(grid, raw_stream, &params) }
}
