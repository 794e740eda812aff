//! Stream compaction, partition and unique: the single-pass primitives built on the
//! look-back, beside `scan` over the same engine. `desc` says what a selection computes,
//! `checks` validates a call's arrays, `kernels` holds its GPU kernels, `host` runs it on
//! the host backend; this file holds the entry points and the launch.

pub(crate) mod checks;
pub(crate) mod desc;
pub(crate) mod host;
pub(crate) mod kernels;

use std::sync::Arc;

use crate::array::ArrayView;
use crate::context::Context;
use crate::contract::{SelectParams, FLAG_VECTOR_HEADS, FLAG_VECTOR_IN, SELECT_FLAG_COUNT_U32};
use crate::engine::{Engine, GpuEngine};
use crate::error::{bail, Result};
use crate::kernels::LoadedSets;
use crate::runtime::calls::CallLabel;
use crate::runtime::cu::{self, CUstream};
use crate::runtime::launch_workspace;
use crate::stream::Stream;
use crate::types::DType;
use desc::{SelectDesc, SelectOutput, Selection};
use kernels::SelectFamily;

/// The arrays of a selection, device memory on a GPU context (host memory on the host
/// backend). The elements and their flags are C-contiguous views of any shape, read in
/// memory order (as NumPy's `x[mask]` and `unique` flatten them); the outputs are 1-D.
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
        // Views of buffers: of this context only.
        let views = [Some(&arrays.input), arrays.flags.as_ref(), Some(&arrays.output)];
        let more = [
            arrays.rejected.as_ref(),
            arrays.lengths.as_ref(),
            Some(&arrays.num_selected),
        ];
        for v in views.into_iter().chain(more).flatten() {
            v.known_to(self.id())?;
        }
        let checked = checks::check(arrays, desc)?;
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

/// Queues a checked selection on a GPU.
fn launch(engine: &GpuEngine, stream: &Stream, a: &SelectArrays, desc: &SelectDesc, c: &checks::Checked) -> Result<()> {
    let dev = &engine.device;
    let (_current, target) = dev.prepare_launch(stream.raw() as CUstream, stream.verified())?;
    let raw_stream = target.stream;
    // Memory scanrt did not allocate is range-checked with the driver.
    let views = [
        Some(&a.input),
        a.flags.as_ref(),
        Some(&a.output),
        a.rejected.as_ref(),
        a.lengths.as_ref(),
    ];
    for (v, what) in views
        .iter()
        .zip(["input", "flags", "output", "rejected array", "lengths"])
    {
        if let Some(v) = v.filter(|v| v.owner.is_none() && !v.is_empty()) {
            let bytes = if what == "output" {
                c.capacity.max(1).min(v.len().unwrap_or(0)) * v.dtype().size() as u64
            } else {
                v.bytes()
            };
            dev.check_device_range(v.addr(), bytes, what)?;
        }
    }
    // The count may also be in page-locked host memory, which the host reads without a copy.
    let count_bytes = a.num_selected.dtype().size();
    if a.num_selected.owner.is_none() {
        dev.check_kernel_writable(a.num_selected.addr(), count_bytes as u64, "count")?;
    }
    if c.n == 0 {
        // SAFETY: the count is one checked element kernels may write; the stream is checked.
        return unsafe { cu::zero_async(a.num_selected.addr(), count_bytes, raw_stream) };
    }
    let kernel = engine.algorithms.get::<LoadedSets<SelectFamily>>().get(dev, &c.spec)?;
    let tiles = c.n.div_ceil(c.spec.tile_elems());
    if tiles > i32::MAX as u64 {
        bail!(
            LengthOverflow,
            "n = {} needs {tiles} tiles, more than one launch can address",
            c.n
        );
    }
    // The carry: a count (8 bytes), or a run-length encoding's count and last end (16).
    let carry_bytes = if c.spec.form == SelectOutput::RunLengths { 16 } else { 8 };
    let workspace = launch_workspace::acquire(dev, &target, None, carry_bytes, tiles, kernel.clone() as Arc<_>)?;
    let aligned = |v: &ArrayView, bytes: u64| v.addr().is_multiple_of(bytes);
    let mut flags = 0;
    if a.num_selected.dtype() == DType::U32 {
        flags |= SELECT_FLAG_COUNT_U32;
    }
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
