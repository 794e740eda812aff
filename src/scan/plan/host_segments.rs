//! Carries per segment on the host backend: each segment given by offsets is scanned as
//! an unsegmented scan of its own elements from its own initial state, and its total
//! written to its own slot. The elements no segment holds (before the first offset and
//! from the last) are scanned from the descriptor's initial value, with no total, as
//! on the GPU (`kernels/block/segment_carries.cuh`).

use crate::contract::StateBytes;
use crate::error::{bail, Result};
use crate::scan::desc::{ScanShape, Segments};
use crate::scan::operator_model::{Carries, OperatorModel, ScanArrays};
use crate::tables::DType;

/// The offsets at `data` as positions: a negative one reads as past every element.
///
/// # Safety
/// `data` holds `count` offsets of `dtype`.
unsafe fn read_offsets(data: u64, dtype: DType, count: u64) -> Vec<u64> {
    (0..count as usize)
        .map(|i| match dtype {
            DType::U32 => *(data as *const u32).add(i) as u64,
            DType::I32 => u64::try_from(*(data as *const i32).add(i)).unwrap_or(u64::MAX),
            _ => *(data as *const u64).add(i),
        })
        .collect()
}

/// Runs a scan by offsets with carries per segment on host arrays.
///
/// # Safety
/// As `OperatorModel::scan_on_host`, and the carries hold one state per segment.
pub(super) unsafe fn scan_segments(
    model: &dyn OperatorModel,
    arrays: &ScanArrays,
    n: u64,
    shape: &ScanShape,
) -> Result<()> {
    let Segments::Offsets { dtype, count } = shape.segments else {
        unreachable!("carries per segment come with offsets")
    };
    let offsets = read_offsets(arrays.segments, dtype, count);
    if let Some(i) = (1..offsets.len()).find(|&i| offsets[i] < offsets[i - 1]) {
        bail!(
            InvalidArgument,
            "carries per segment need offsets that do not decrease; offset {i} ({}) is below offset {} ({})",
            offsets[i],
            i - 1,
            offsets[i - 1]
        );
    }
    let size = model.state_bytes();
    let Carries { carry_in, carry_out } = arrays.carries;
    let state_at = |base: u64, s: usize| (base as usize + s * size) as *mut u8;
    // Scans elements [lo, hi) from `init`; returns their total.
    let scan_piece = |lo: u64, hi: u64, init: Option<StateBytes>| -> Result<StateBytes> {
        let shift = |addrs: &[u64], sizes: Vec<usize>| -> Vec<u64> {
            addrs.iter().zip(sizes).map(|(&a, size)| a + lo * size as u64).collect()
        };
        let inputs = shift(arrays.inputs, model.inputs().iter().map(|l| l.size).collect());
        let outputs = shift(arrays.outputs, model.outputs().iter().map(|l| l.size).collect());
        let piece = ScanArrays {
            inputs: &inputs,
            outputs: &outputs,
            index_base: arrays.index_base + lo,
            segments: 0,
            carries: Carries::default(),
            carry_in_states: 0,
            ..*arrays
        };
        let shape = ScanShape {
            init,
            segments: Segments::None,
            ..*shape
        };
        model.scan_on_host(&piece, hi - lo, &shape)
    };
    let held = |s: usize| (offsets[s].min(n), offsets[s + 1].min(n));
    let segments = offsets.len().saturating_sub(1);
    for s in 0..segments {
        let (lo, hi) = held(s);
        let init = if carry_in != 0 {
            // SAFETY: the caller's contract: one state per segment.
            Some(StateBytes::from_bytes(std::slice::from_raw_parts(
                state_at(carry_in, s),
                size,
            )))
        } else {
            shape.init
        };
        let total = if lo < hi {
            scan_piece(lo, hi, init)?
        } else {
            init.unwrap_or_else(|| StateBytes::from_bytes(&model.identity_bytes()))
        };
        if carry_out != 0 {
            // SAFETY: as above; checked not to overlap the arrays or the carry in.
            std::ptr::copy_nonoverlapping(total.bytes().as_ptr(), state_at(carry_out, s), size);
        }
    }
    // The elements outside the table's segments.
    let (first, last) = match (offsets.first(), offsets.last()) {
        (Some(&first), Some(&last)) => (first.min(n), last.min(n)),
        _ => (n, n),
    };
    scan_piece(0, first, shape.init)?;
    scan_piece(last.max(first), n, shape.init)?;
    Ok(())
}
