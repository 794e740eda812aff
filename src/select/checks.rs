//! The checks of a selection's arrays against its description: types, shapes and
//! lengths of every array, the forms that take a second array, and overlaps. Nothing is
//! launched or written before they pass.

use crate::array::ArrayView;
use crate::error::{bail, Result};
use crate::select::desc::{SelectDesc, SelectOutput, Selection};
use crate::select::kernels::{RuleKey, SelectSpec};
use crate::select::SelectArrays;
use crate::types::DType;

/// A checked selection: its length and what its kernel is specialised on.
pub(crate) struct Checked {
    pub n: u64,
    pub capacity: u64,
    pub spec: SelectSpec,
}

/// Checks a call's arrays against its description.
pub(crate) fn check(a: &SelectArrays, desc: &SelectDesc) -> Result<Checked> {
    let dtype = a.input.dtype();
    desc.selection.check(dtype)?;
    // Elements and flags of any shape are read in memory order, as NumPy's `x[mask]`
    // and `unique` flatten them; what is written is a sequence.
    let n = a.input.compact_len("input of a selection")?;
    let out_len = one_d(&a.output, "output")?;
    if !a.output.writable || !a.num_selected.writable {
        bail!(
            InvalidArgument,
            "the output and the count are written: pass mutable views"
        );
    }
    check_flags(a, &desc.selection, n)?;
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
    // Not a guard on the first arm: a two-array partition's unfit rejected array would then
    // fall to the third arm's message.
    #[allow(clippy::collapsible_match)]
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
    if !matches!(a.num_selected.dtype(), DType::U32 | DType::U64 | DType::I64) || one_d(&a.num_selected, "count")? < 1 {
        bail!(InvalidArgument, "the count is one U32, U64 or I64 element");
    }
    if a.num_selected.dtype() == DType::U32 && n > u32::MAX as u64 {
        bail!(
            InvalidArgument,
            "a U32 count holds at most {} elements; n = {n} needs a U64 or I64 count",
            u32::MAX
        );
    }
    ArrayView::check_all_aligned(&[
        (Some(&a.input), "input"),
        (a.flags.as_ref(), "flag array"),
        (Some(&a.output), "output"),
        (a.rejected.as_ref(), "rejected array"),
        (a.lengths.as_ref(), "lengths"),
        (Some(&a.num_selected), "count"),
    ])?;
    check_overlaps(a, desc.output)?;
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

/// The length of a 1-D contiguous view (an output; `what` names it in the error otherwise).
fn one_d(v: &ArrayView, what: &str) -> Result<u64> {
    v.flat_len(&format!("{what} of a selection"))
}

/// The flags of a flag selection: their type and length.
fn check_flags(a: &SelectArrays, selection: &Selection, n: u64) -> Result<()> {
    match (selection.data_type(), &a.flags) {
        (Some(want), Some(f)) => {
            let len = f.compact_len("flag array of a selection")?;
            if f.dtype() != want {
                bail!(
                    InvalidArgument,
                    "{:?} selections read {} flags, not {}",
                    selection,
                    want.c_name(),
                    f.dtype().c_name()
                );
            }
            let needed = selection.data_entries(n);
            if len < needed {
                bail!(
                    BufferTooSmall,
                    "{n} elements need {needed} flag entries; the array holds {len}"
                );
            }
        }
        (Some(_), None) => bail!(InvalidArgument, "a {:?} selection needs its flag array", selection),
        (None, Some(_)) => bail!(InvalidArgument, "a {:?} selection takes no flag array", selection),
        (None, None) => {}
    }
    Ok(())
}

/// Overlaps: values may be selected in place (the look-back orders every tile's load
/// before any write over it); nothing else may share memory.
fn check_overlaps(a: &SelectArrays, form: SelectOutput) -> Result<()> {
    let in_place_ok = matches!(form, SelectOutput::Values | SelectOutput::PartitionTwo);
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
    Ok(())
}
