//! How a strided scan walks its views: every non-contiguous layout a scan along one axis
//! can meet (columns of a matrix, rows with a pitch, an inner axis of an N-D array, a
//! transposed array, a 1-D array with a stride) reduced to the strided kernel's one form,
//! `[batches][len][columns]` with the columns adjacent in memory; and a checked scan's
//! arrays and per-sequence carries in that form.

use crate::array::ArrayView;
use crate::error::{bail, Result};
use crate::scan::checks::overlaps;

/// The shape of a strided scan: `batches * columns` independent sequences of `len`
/// elements each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct StridedForm {
    pub batches: u64,
    pub len: u64,
    pub columns: u64,
}

impl StridedForm {
    /// The number of independent sequences.
    pub fn sequences(&self) -> u64 {
        self.batches * self.columns
    }
    /// The number of elements.
    pub fn elements(&self) -> u64 {
        self.sequences() * self.len
    }
}

/// Where one view's elements lie in the form: element `(b, i, c)` at
/// `b * batch + i * row + c * column` elements from the view's address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Strides {
    pub batch: i64,
    pub row: i64,
    pub column: i64,
}

impl Strides {
    /// Whether a tile is read (or written) along its rows: they lie closer in memory than
    /// its columns.
    pub fn rows_fast(&self, form: &StridedForm) -> bool {
        form.columns > 1 && form.len > 1 && self.row.unsigned_abs() < self.column.unsigned_abs()
    }

    /// The memory a view at `addr` of `size`-byte elements reaches in `form`: its first
    /// byte's address and its length.
    pub fn byte_range(&self, form: &StridedForm, addr: u64, size: usize) -> (u64, u64) {
        let (low, high) = self.extent(form);
        let size = size as i64;
        (addr.wrapping_add((low * size) as u64), ((high - low) * size) as u64)
    }

    /// The lowest and one past the highest element offset the view reaches in `form`.
    fn extent(&self, form: &StridedForm) -> (i64, i64) {
        let (mut low, mut high) = (0i64, 0i64);
        for (stride, count) in [
            (self.batch, form.batches),
            (self.row, form.len),
            (self.column, form.columns),
        ] {
            let reach = stride.saturating_mul(count as i64 - 1);
            if reach < 0 {
                low = low.saturating_add(reach);
            } else {
                high = high.saturating_add(reach);
            }
        }
        (low, high.saturating_add(1))
    }
}

/// A view pair in the strided form: the form, each view's strides, and where sequence
/// `(b, c)` lies among per-sequence carries, which follow the row-major order of the
/// other axes: index `b * carries.batch + c * carries.column` (`None` where the groups do
/// not map onto that order with one stride each).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct StridedPair {
    pub form: StridedForm,
    pub input: Strides,
    pub output: Strides,
    pub carries: Option<Strides>,
}

/// The stride of a group of axes that nest in `strides` (each axis's stride the previous
/// one's times its extent), or `None`; 0 for no axes.
fn group_stride(shape: &[u64], strides: &[i64], axes: &[usize]) -> Option<i64> {
    let Some(&first) = axes.first() else { return Some(0) };
    let mut next = strides[first];
    for &d in axes {
        if strides[d] != next {
            return None;
        }
        next = next.checked_mul(shape[d] as i64)?;
    }
    Some(strides[first])
}

/// The strided form of a scan of `input` into `output` (the same shape) along `axis`
/// (in range, non-negative). The other axes split into columns and one batch axis on the
/// input's strides: the columns are the axis of the smallest stride and the axes that
/// continue it compactly (a tile holds up to 32 columns, read along whichever of its rows
/// and columns lie closer in memory); the batches are the rest. In each view each group
/// must nest (one stride per group).
pub(crate) fn strided_pair(input: &ArrayView, output: &ArrayView, axis: usize) -> Result<StridedPair> {
    let shape = input.shape();
    let len = shape.get(axis).copied().unwrap_or(1);
    if shape.contains(&0) {
        // Nothing to read or write; only the sequences count (their carries).
        let batches = (0..shape.len()).filter(|&d| d != axis).map(|d| shape[d]).product();
        let none = Strides {
            batch: 0,
            row: 0,
            column: 0,
        };
        return Ok(StridedPair {
            form: StridedForm {
                batches,
                len,
                columns: 1,
            },
            input: none,
            output: none,
            carries: Some(Strides {
                batch: 1,
                row: 0,
                column: 0,
            }),
        });
    }
    let strides = input.strides();
    let row = |view: &ArrayView| if len > 1 { view.strides()[axis] } else { 0 };
    // The other axes that matter (extent > 1), smallest input stride first.
    let mut others: Vec<usize> = (0..shape.len()).filter(|&d| d != axis && shape[d] > 1).collect();
    others.sort_by_key(|&d| (strides[d].unsigned_abs(), std::cmp::Reverse(d)));
    // The column group grows while its axes nest in both views.
    let mut column_axes: Vec<usize> = others.first().map(|&d| vec![d]).unwrap_or_default();
    for &d in others.iter().skip(1) {
        let mut grown = column_axes.clone();
        grown.push(d);
        let nests = |view: &ArrayView| group_stride(shape, view.strides(), &grown).is_some();
        if !(nests(input) && nests(output)) {
            break;
        }
        column_axes = grown;
    }
    let batch_axes = others[column_axes.len()..].to_vec();
    let strides_of = |view: &ArrayView| -> Option<Strides> {
        Some(Strides {
            batch: group_stride(shape, view.strides(), &batch_axes)?,
            row: row(view),
            column: group_stride(shape, view.strides(), &column_axes)?,
        })
    };
    let (Some(in_strides), Some(out_strides)) = (strides_of(input), strides_of(output)) else {
        bail!(
            UnsupportedCombination,
            "a scan along axis {axis} of an array of shape {:?} with strides {:?} (input) and {:?} (output): the \
             other axes do not nest into one stride of columns and one of batches in both views; copy it into a \
             contiguous array first",
            shape,
            input.strides(),
            output.strides()
        );
    };
    let extent = |axes: &[usize]| axes.iter().map(|&d| shape[d]).product::<u64>();
    // Each other axis's stride in the row-major order of the other axes (the carries').
    let mut logical = vec![0i64; shape.len()];
    let mut step = 1i64;
    for d in (0..shape.len()).rev().filter(|&d| d != axis) {
        logical[d] = step;
        step = step.saturating_mul(shape[d] as i64);
    }
    let carries = match (
        group_stride(shape, &logical, &batch_axes),
        group_stride(shape, &logical, &column_axes),
    ) {
        (Some(batch), Some(column)) => Some(Strides { batch, row: 0, column }),
        _ => None,
    };
    Ok(StridedPair {
        form: StridedForm {
            batches: extent(&batch_axes),
            len,
            columns: extent(&column_axes),
        },
        input: in_strides,
        output: out_strides,
        carries,
    })
}

/// Checks that the output view writes each element once (no two elements share an
/// address), so sequences never race, and that the input, where it shares memory with
/// the output, is the output itself (an in-place scan).
pub(crate) fn check_memory(pair: &StridedPair, input: &ArrayView, output: &ArrayView) -> Result<()> {
    let form = &pair.form;
    if form.elements() == 0 {
        return Ok(());
    }
    // The output's axes (extent > 1) nest: sorted by stride, each stride reaches past
    // everything the smaller ones span.
    let out = pair.output;
    let mut axes: Vec<(u64, u64)> = [
        (out.column.unsigned_abs(), form.columns),
        (out.row.unsigned_abs(), form.len),
        (out.batch.unsigned_abs(), form.batches),
    ]
    .into_iter()
    .filter(|&(_, count)| count > 1)
    .collect();
    axes.sort();
    let mut span = 1u64;
    for (stride, count) in axes {
        if stride < span {
            bail!(
                InvalidArgument,
                "the output view (strides {:?}) reaches some elements twice; a scan writes each element once",
                output.strides()
            );
        }
        span = stride.saturating_mul(count - 1).saturating_add(span);
    }
    let (in_start, in_bytes) = pair.input.byte_range(form, input.addr(), input.dtype().size());
    let (out_start, out_bytes) = pair.output.byte_range(form, output.addr(), output.dtype().size());
    let same =
        input.addr() == output.addr() && pair.input == pair.output && input.dtype().size() == output.dtype().size();
    if overlaps(in_start, in_bytes, out_start, out_bytes) && !same {
        bail!(
            InvalidArgument,
            "the input and the output overlap without being the same view; scan in place with the same address, \
             strides and element size, or into separate memory"
        );
    }
    Ok(())
}

/// Per-sequence carries (0: none): `batches * columns` states each, or one carry in for all.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SequenceCarries {
    pub carry_in: u64,
    pub carry_out: u64,
    /// `carry_in` holds one value for every sequence (else one for all).
    pub per_sequence_in: bool,
    /// Where sequence `(b, c)` lies among them: `b * strides.batch + c * strides.column`.
    pub strides: Strides,
}

/// A checked strided scan's arrays: every input at the pair's input strides, every output
/// at its output strides (a user-defined operator's arrays share one layout each).
pub(crate) struct StridedArrays {
    pub pair: StridedPair,
    pub inputs: Vec<u64>,
    pub outputs: Vec<u64>,
    /// The views are buffers of the context (of checked length).
    pub known: bool,
    pub carries: SequenceCarries,
}

impl StridedArrays {
    /// The arrays of the checked views `inputs` and `outputs` (laid out as `pair` says),
    /// known when every one is a buffer of context `ctx_id` (a view of another context's
    /// buffer is an error), with carries of `state_bytes` per state
    /// (`check_carry_overlaps`).
    pub(crate) fn of_views(
        pair: StridedPair,
        inputs: &[ArrayView],
        outputs: &[ArrayView],
        ctx_id: usize,
        carries: SequenceCarries,
        state_bytes: usize,
    ) -> Result<StridedArrays> {
        let mut known = true;
        for view in inputs.iter().chain(outputs) {
            known &= view.known_to(ctx_id)?;
        }
        if carries.carry_in != 0 || carries.carry_out != 0 {
            check_carry_overlaps(&pair, inputs, outputs, &carries, state_bytes as u64)?;
        }
        Ok(StridedArrays {
            pair,
            inputs: inputs.iter().map(|v| v.addr()).collect(),
            outputs: outputs.iter().map(|v| v.addr()).collect(),
            known,
            carries,
        })
    }
}

/// A strided scan's carries follow the flat scan's overlap rules
/// (`checks::check_overlaps`): neither overlaps an output, the carry out overlaps no
/// input, and the carry in is the carry out itself (each sequence reads its own state
/// before it writes its total) or lies apart from it.
fn check_carry_overlaps(
    pair: &StridedPair,
    inputs: &[ArrayView],
    outputs: &[ArrayView],
    carries: &SequenceCarries,
    state: u64,
) -> Result<()> {
    let form = &pair.form;
    let count_in = if carries.per_sequence_in { form.sequences() } else { 1 };
    let carry_in = (carries.carry_in, count_in * state);
    let carry_out = (carries.carry_out, form.sequences() * state);
    let hits = |(carry, bytes): (u64, u64), view: &ArrayView, strides: &Strides| {
        let (start, len) = strides.byte_range(form, view.addr(), view.dtype().size());
        carry != 0 && form.elements() > 0 && overlaps(carry, bytes, start, len)
    };
    for output in outputs {
        for (carry, what) in [(carry_in, "carry in"), (carry_out, "carry out")] {
            if hits(carry, output, &pair.output) {
                bail!(PartialOverlap, "the {what} overlaps the output");
            }
        }
    }
    if inputs.iter().any(|input| hits(carry_out, input, &pair.input)) {
        bail!(PartialOverlap, "the carry out overlaps an input");
    }
    let same = carry_in.0 == carry_out.0 && carries.per_sequence_in;
    if carry_in.0 != 0 && carry_out.0 != 0 && !same && overlaps(carry_in.0, carry_in.1, carry_out.0, carry_out.1) {
        bail!(
            PartialOverlap,
            "the carry out overlaps the carry in without being the same states, one per sequence"
        );
    }
    Ok(())
}
