//! The device side of a plan's arrays: the checks that ask the driver (ranges, the
//! stream, the carries) and the carries' launch flags and empty-scan case.

use crate::contract;
use crate::error::Result;
use crate::runtime::cu::{self, CUstream};
use crate::runtime::device::GpuDevice;
use crate::scan::checks::{carry_states, check_overlaps};
use crate::scan::desc::ScanShape;
use crate::scan::operator_model::{Carries, OperatorModel, ScanArrays};
use crate::tables::Direction;

/// Launch flags of a carry in device memory at `carry_in` (0: none), the fold of `states`
/// states there when more than one (see `ScanArrays::carry_in_states`).
pub(super) fn carry_flags(carry_in: u64, states: u32, direction: Direction) -> u32 {
    if carry_in == 0 {
        return 0;
    }
    let one = contract::FLAG_HAS_INIT | contract::FLAG_INIT_IN_MEMORY;
    if states <= 1 {
        return one;
    }
    debug_assert!(states <= contract::INIT_FOLD_MAX_STATES);
    let descending = match direction {
        Direction::Forward => 0,
        Direction::Backward => contract::FLAG_INIT_FOLD_DESCENDING,
    };
    one | contract::FLAG_INIT_FOLD | descending | states << contract::INIT_FOLD_COUNT_SHIFT
}

/// A scan of nothing still hands its carry on: the total is the initial state (the carry
/// in, the descriptor's initial value or the identity).
pub(super) unsafe fn carry_empty_scan(
    model: &dyn OperatorModel,
    shape: &ScanShape,
    carries: Carries,
    stream: CUstream,
) -> Result<()> {
    let Carries { carry_in, carry_out } = carries;
    let bytes = model.state_bytes();
    if carry_out == 0 || carry_out == carry_in {
        return Ok(());
    }
    if carry_in != 0 {
        return cu::copy_async(carry_out, carry_in, bytes, stream);
    }
    let state: Vec<u8> = match shape.init {
        Some(init) => init.words.iter().flat_map(|w| w.to_ne_bytes()).take(bytes).collect(),
        None => model.identity_bytes(),
    };
    cu::fill_async(carry_out, &state, stream)
}

/// The checks of a GPU scan's arrays that ask the driver: every range (unless the arrays
/// are buffers of known length), the carries, and the overlap rules. The caller has
/// checked the stream.
pub(super) unsafe fn check_device_arrays(
    dev: &GpuDevice,
    model: &dyn OperatorModel,
    arrays: &ScanArrays,
    n: u64,
    shape: &ScanShape,
) -> Result<()> {
    // A scan of nothing reads and writes no array (they may be NULL), only its carries
    // (and, for carries per segment, the offsets).
    let per_segment = super::flags::per_segment_carries(shape, arrays.carries);
    if n > 0 || per_segment {
        if !arrays.known_arrays && n > 0 {
            for (&addr, layout) in arrays.inputs.iter().zip(model.inputs()) {
                dev.check_device_range(addr, n * layout.size as u64, "input")?;
            }
            for (&addr, layout) in arrays.outputs.iter().zip(model.outputs()) {
                dev.check_device_range(addr, n * layout.size as u64, "output")?;
            }
        }
        if shape.segments.has_data() && !arrays.known_segments {
            let bytes = shape.segments.data_bytes(n).unwrap_or(0);
            dev.check_device_range(arrays.segments, bytes, "segment data")?;
        }
    }
    let Carries { carry_in, carry_out } = arrays.carries;
    let state = model.state_bytes() as u64;
    let states = carry_states(shape);
    if carry_in != 0 && !arrays.known_carries && states > 0 {
        let states = states.max(arrays.carry_in_states as u64);
        dev.check_device_range(carry_in, states * state, "carry in")?;
    }
    if carry_out != 0 && !arrays.known_carries && states > 0 {
        dev.check_device_range(carry_out, states * state, "carry out")?;
    }
    check_overlaps(model, arrays, n, shape)
}
