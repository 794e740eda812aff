//! What a plan decides before it launches: the algorithm (and why), and the launch flags
//! that follow from the shape, the carries and the addresses.

use crate::contract;
use crate::scan::desc::{ScanShape, Segments};
use crate::scan::operator_model::{ArrayLayout, Carries, OperatorModel, ScanArrays};
use crate::tables::{Algorithm, ChoiceReason, Direction};

/// The algorithm a GPU scan runs, and why: the one `requested` unless a determinism
/// promise on an operator whose result depends on association order (`order_sensitive`)
/// needs the fixed-order look-back.
pub(crate) fn choose_algorithm(
    requested: Algorithm,
    deterministic: bool,
    order_sensitive: bool,
) -> (Algorithm, ChoiceReason) {
    let fixed_order_needed = deterministic && order_sensitive;
    match requested {
        // An explicit single pass with `deterministic` still has to keep its promise.
        Algorithm::SinglePass | Algorithm::Auto | Algorithm::Host if fixed_order_needed => {
            (Algorithm::DeterministicSinglePass, ChoiceReason::Deterministic)
        }
        Algorithm::Auto | Algorithm::Host if deterministic => (Algorithm::SinglePass, ChoiceReason::OrderIndependent),
        Algorithm::Auto | Algorithm::Host => (Algorithm::SinglePass, ChoiceReason::Fastest),
        requested => (requested, ChoiceReason::Requested),
    }
}

/// Launch flags that follow from the shape.
pub(crate) fn shape_flags(desc: &ScanShape, algorithm: Algorithm) -> u32 {
    let mut flags = 0;
    if desc.inclusive {
        flags |= contract::FLAG_INCLUSIVE;
    }
    if desc.init.is_some() {
        flags |= contract::FLAG_HAS_INIT;
    }
    if algorithm == Algorithm::DeterministicSinglePass {
        flags |= contract::FLAG_DETERMINISTIC;
    }
    let kind = match desc.segments {
        Segments::None | Segments::ByteFlags => contract::HEADS_BYTES,
        // Offsets become bit flags before the scan (`plan/segment_offsets.rs`).
        Segments::BitFlags | Segments::Offsets { .. } => contract::HEADS_BITS,
        Segments::Keys(k) if k.size() == 4 => contract::HEADS_KEYS4,
        Segments::Keys(_) => contract::HEADS_KEYS8,
        Segments::Rows(_) => contract::HEADS_ROWS,
    };
    flags | kind << contract::HEADS_KIND_SHIFT
}

/// Whether a scan's carries are one per segment: those of a scan by offsets.
pub(crate) fn per_segment_carries(shape: &ScanShape, carries: Carries) -> bool {
    matches!(shape.segments, Segments::Offsets { .. }) && carries.any()
}

/// The kernels' `heads` parameter: the segment data's address, or the row length.
pub(crate) fn segment_param(segments: &Segments, data: u64) -> u64 {
    match segments {
        Segments::Rows(len) => *len,
        _ => data,
    }
}

/// Launch flags that follow from the addresses: whole tiles are 16-byte aligned when
/// every array's start (forward) or end (backward: tiles are counted from the end) is.
pub(super) fn address_flags(arrays: &ScanArrays, model: &dyn OperatorModel, n: u64, shape: &ScanShape) -> u32 {
    let row = match shape.segments {
        Segments::Rows(len) => len,
        _ => 0,
    };
    // Pitched rows are copied in runs of whole rows: every row start and tile edge must
    // be a 16-byte boundary (tiles are whole vectors). `pitch` is 0 for arrays without.
    let aligned_rows = |ptr: u64, elem_bytes: u64, pitch: u64| match shape.direction {
        _ if arrays.pitches.any() => {
            ptr.is_multiple_of(16) && (row * elem_bytes).is_multiple_of(16) && (pitch * elem_bytes).is_multiple_of(16)
        }
        Direction::Forward => ptr.is_multiple_of(16),
        Direction::Backward => (ptr + n * elem_bytes).is_multiple_of(16),
    };
    let aligned = |ptr: u64, elem_bytes: u64| aligned_rows(ptr, elem_bytes, 0);
    let all_aligned = |addrs: &[u64], layouts: &[ArrayLayout], pitch: u64| {
        addrs
            .iter()
            .zip(layouts)
            .all(|(&a, layout)| aligned_rows(a, layout.size as u64, pitch))
    };
    let mut flags = 0;
    if all_aligned(arrays.inputs, model.inputs(), arrays.pitches.input) {
        flags |= contract::FLAG_VECTOR_IN;
    }
    if all_aligned(arrays.outputs, model.outputs(), arrays.pitches.output) {
        flags |= contract::FLAG_VECTOR_OUT;
    }
    // Rows of byte flags or keys are read as 16-byte vectors when the tiles' spans are aligned.
    let vector_heads = match shape.segments {
        Segments::ByteFlags => aligned(arrays.segments, 1),
        Segments::Keys(k) => aligned(arrays.segments, k.size() as u64),
        Segments::None | Segments::BitFlags | Segments::Rows(_) | Segments::Offsets { .. } => false,
    };
    if vector_heads {
        flags |= contract::FLAG_VECTOR_HEADS;
    }
    flags
}
