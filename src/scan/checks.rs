//! The checks every scan passes, whatever its operator: its shape when it is planned,
//! its addresses (and their overlaps) when it runs.

use crate::array::{ArrayView, AxisLayout};
use crate::error::{bail, Result};
use crate::scan::desc::{ScanShape, Segments};
use crate::scan::operator_model::{ArrayLayout, Carries, OperatorModel, ScanArrays};
use crate::tables::Algorithm;
use crate::types::DType;

/// The checks of a scan's shape, at plan time: the segment form, and lengths that fit
/// the address space. The operator's own (its types, the initial state's type or size)
/// were made when the shape was (`ScanDesc::shape`, `OperatorScan::shape`).
pub(crate) fn validate_shape(model: &dyn OperatorModel, n: u64, shape: &ScanShape) -> Result<()> {
    shape.segments.check()?;
    let max_bytes = isize::MAX as u64;
    let fits = |layout: &ArrayLayout| n.checked_mul(layout.size as u64).is_some_and(|b| b <= max_bytes);
    if !model.inputs().iter().chain(model.outputs()).all(fits) {
        bail!(LengthOverflow, "n = {n} elements overflows the address space");
    }
    if shape.segments.data_bytes(n).is_none_or(|b| b > max_bytes) {
        bail!(LengthOverflow, "segment data for n = {n} elements overflows");
    }
    Ok(())
}

/// The checks of a scan's addresses that need no device, at run time (after
/// [`validate_shape`]): one address per array of the operator, no NULLs, no ranges that
/// wrap around, aligned elements, segment data exactly when the shape asks for it. On
/// success the ranges are well formed.
pub(crate) fn validate_addresses(
    model: &dyn OperatorModel,
    arrays: &ScanArrays,
    n: u64,
    shape: &ScanShape,
) -> Result<()> {
    let (inputs, outputs) = (model.inputs(), model.outputs());
    if arrays.inputs.len() != inputs.len() || arrays.outputs.len() != outputs.len() {
        bail!(
            InvalidArgument,
            "{} reads {} and writes {} arrays; the call passed {} and {}",
            model.subject(),
            inputs.len(),
            outputs.len(),
            arrays.inputs.len(),
            arrays.outputs.len()
        );
    }
    let segmented = shape.segments.has_data();
    if !segmented && arrays.segments != 0 {
        bail!(
            InvalidArgument,
            "segment data was passed but the segments ({}) have none",
            shape.segments.c_name()
        );
    }
    check_carries(model, arrays.carries, shape)?;
    // Offsets are read whatever n is (the totals of empty segments): count entries.
    if matches!(shape.segments, Segments::Offsets { count, .. } if count > 0) && arrays.segments == 0 {
        bail!(NullArgument, "segments by offsets need their offsets (NULL given)");
    }
    if n == 0 {
        return Ok(());
    }
    for (&addr, layout) in arrays
        .inputs
        .iter()
        .chain(arrays.outputs)
        .zip(inputs.iter().chain(outputs))
    {
        if addr == 0 {
            bail!(
                NullArgument,
                "{}: array addresses must not be NULL when n > 0",
                model.subject()
            );
        }
        if n.checked_mul(layout.size as u64)
            .and_then(|b| addr.checked_add(b))
            .is_none()
        {
            bail!(
                LengthOverflow,
                "an array of n = {n} elements wraps around the address space"
            );
        }
        if addr % layout.align as u64 != 0 {
            bail!(
                InvalidArgument,
                "{}: arrays must be aligned to their elements ({} bytes)",
                model.subject(),
                layout.align
            );
        }
    }
    if segmented {
        if arrays.segments == 0 {
            bail!(
                NullArgument,
                "a segmented scan needs its segment flags or keys (NULL given)"
            );
        }
        if arrays
            .segments
            .checked_add(shape.segments.data_bytes(n).unwrap_or(u64::MAX))
            .is_none()
        {
            bail!(LengthOverflow, "segment data for n = {n} elements overflows");
        }
        if !arrays.segments.is_multiple_of(shape.segments.alignment()) {
            bail!(
                InvalidArgument,
                "segment data must be aligned to {} bytes for {}",
                shape.segments.alignment(),
                shape.segments.c_name()
            );
        }
    }
    Ok(())
}

/// The states each carry array holds: one per segment for a scan by offsets (one fewer
/// than the offsets), else one.
pub(crate) fn carry_states(shape: &ScanShape) -> u64 {
    match shape.segments {
        Segments::Offsets { count, .. } => count.saturating_sub(1),
        _ => 1,
    }
}

/// Carries in memory: for unsegmented scans, and one per segment for scans by offsets
/// (not the matrix scan's), instead of an initial value, aligned to the state.
pub(crate) fn check_carries(model: &dyn OperatorModel, carries: Carries, shape: &ScanShape) -> Result<()> {
    if !carries.any() {
        return Ok(());
    }
    match shape.segments {
        Segments::None => {}
        Segments::Offsets { .. } if shape.algorithm == Algorithm::Matrix => bail!(
            UnsupportedCombination,
            "carries per segment run on the single pass; the matrix scan takes none"
        ),
        Segments::Offsets { .. } => {}
        other => bail!(
            UnsupportedCombination,
            "carries in memory are for unsegmented scans and, one per segment, for segments by offsets; \
             this scan is segmented by {}",
            other.c_name()
        ),
    }
    if carries.carry_in != 0 && shape.init.is_some() {
        bail!(
            InvalidArgument,
            "both an initial value and a carry in were given: pass one"
        );
    }
    let align = model.state_align() as u64;
    for (addr, what) in [(carries.carry_in, "carry in"), (carries.carry_out, "carry out")] {
        if addr % align != 0 {
            bail!(
                InvalidArgument,
                "{}: the {what} must be aligned to the state ({align} bytes)",
                model.subject()
            );
        }
    }
    Ok(())
}

/// The overlap rules of arrays that passed [`validate_addresses`]: every output is
/// exactly one input (same start and element size: in place) or disjoint from all of
/// them, outputs are disjoint, and segment data never overlaps an output (the scan reads
/// flags or neighbouring keys after other tiles were written). Checked after the
/// backend's own range checks, so that an output shorter than `n` elements is reported
/// as too small, not as overlapping whatever the allocator placed behind it.
pub(crate) fn check_overlaps(model: &dyn OperatorModel, arrays: &ScanArrays, n: u64, shape: &ScanShape) -> Result<()> {
    let bytes = |layout: &ArrayLayout| n * layout.size as u64;
    let (inputs, outputs) = (model.inputs(), model.outputs());
    for (o, (&out, out_layout)) in arrays.outputs.iter().zip(outputs).enumerate() {
        let out_bytes = bytes(out_layout);
        for (&input, in_layout) in arrays.inputs.iter().zip(inputs) {
            let exact = input == out && in_layout.size == out_layout.size;
            if !exact && overlaps(input, bytes(in_layout), out, out_bytes) {
                bail!(
                    PartialOverlap,
                    "{}: output {o} overlaps an input without being the same range (only exact in-place scans are allowed)",
                    model.subject()
                );
            }
        }
        for (&other, other_layout) in arrays.outputs.iter().zip(outputs).skip(o + 1) {
            if overlaps(other, bytes(other_layout), out, out_bytes) {
                bail!(PartialOverlap, "{}: the outputs overlap", model.subject());
            }
        }
        let state = model.state_bytes() as u64 * carry_states(shape);
        for (carry, what) in [
            (arrays.carries.carry_in, "carry in"),
            (arrays.carries.carry_out, "carry out"),
        ] {
            if carry != 0 && overlaps(carry, state, out, out_bytes) {
                bail!(PartialOverlap, "{}: the {what} overlaps output {o}", model.subject());
            }
        }
        if shape.segments.has_data()
            && overlaps(
                arrays.segments,
                shape.segments.data_bytes(n).unwrap_or(0),
                out,
                out_bytes,
            )
        {
            bail!(PartialOverlap, "the segment flags or keys overlap output {o}");
        }
    }
    // The total is written while other tiles still read their inputs; the carry in may be
    // the carry out itself (read before the total is known), but no other part of it.
    // Carries per segment are read at segments' heads while other tiles write totals:
    // they share nothing with each other or with the offsets.
    let Carries { carry_in, carry_out } = arrays.carries;
    let per_segment = matches!(shape.segments, Segments::Offsets { .. });
    let state = model.state_bytes() as u64 * carry_states(shape);
    if carry_out != 0 {
        for (&input, in_layout) in arrays.inputs.iter().zip(inputs) {
            if overlaps(input, bytes(in_layout), carry_out, state) {
                bail!(PartialOverlap, "{}: the carry out overlaps an input", model.subject());
            }
        }
        if carry_in != 0 && (carry_in != carry_out || per_segment) && overlaps(carry_in, state, carry_out, state) {
            bail!(
                PartialOverlap,
                "{}: the carry out {}overlaps the carry in",
                model.subject(),
                if per_segment { "" } else { "partly " }
            );
        }
        if per_segment
            && overlaps(
                arrays.segments,
                shape.segments.data_bytes(n).unwrap_or(0),
                carry_out,
                state,
            )
        {
            bail!(
                PartialOverlap,
                "{}: the carry out overlaps the offsets",
                model.subject()
            );
        }
    }
    Ok(())
}

/// Whether the byte ranges `[a, a + a_bytes)` and `[b, b + b_bytes)` share a byte.
pub(crate) fn overlaps(a: u64, a_bytes: u64, b: u64, b_bytes: u64) -> bool {
    a < b + b_bytes && b < a + a_bytes
}

/// Checks the segment data of a scan of `n` elements: a 1-D contiguous view of the type
/// `kind` reads, holding at least the entries `n` elements need.
pub(crate) fn check_segment_view(segments: &ArrayView, kind: Segments, n: u64) -> Result<()> {
    let (want, needed) = match kind {
        Segments::None => bail!(
            InvalidArgument,
            "segment data was given but the descriptor has no segments (ByteFlags, BitFlags or Keys)"
        ),
        Segments::ByteFlags => (DType::U8, n),
        Segments::BitFlags => (DType::U32, n.div_ceil(32)),
        Segments::Keys(k) => (k, n),
        Segments::Offsets { dtype, count } => (dtype, count),
        Segments::Rows(_) => bail!(
            InvalidArgument,
            "rows have no segment data: scan them with a descriptor with Segments::Rows alone"
        ),
    };
    if segments.dtype() != want {
        bail!(
            InvalidArgument,
            "{} segments need {} data, not {}",
            kind.c_name(),
            want.c_name(),
            segments.dtype().c_name()
        );
    }
    if !matches!(segments.axis_layout(-1)?, AxisLayout::Flat { .. }) {
        bail!(InvalidArgument, "segment data is a 1-D array");
    }
    let len = segments.len().unwrap_or(u64::MAX);
    if len < needed {
        bail!(
            BufferTooSmall,
            "{} of {n} elements need {needed} entries but the segment data holds {len}",
            kind.c_name()
        );
    }
    Ok(())
}
