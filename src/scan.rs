//! The backend-independent part of a scan call: the request and its validation.

use crate::error::{bail, Result};
use crate::types::{check_types, DType, Direction, ScanDesc};

/// One scan over raw addresses: host addresses on the host backend, device addresses on
/// a GPU. `output` may equal `input` (in place) when both types have the same size.
#[derive(Debug, Clone, Copy)]
pub struct RawScan {
    pub input: u64,
    pub input_dtype: DType,
    pub output: u64,
    pub output_dtype: DType,
    pub n: u64,
}

impl RawScan {
    pub fn input_bytes(&self) -> u64 {
        self.n * self.input_dtype.size() as u64
    }
    pub fn output_bytes(&self) -> u64 {
        self.n * self.output_dtype.size() as u64
    }
}

/// Everything that can be checked without touching a device. On success the request is
/// safe to hand to a backend (lengths do not overflow, ranges do not partially overlap).
pub(crate) fn validate(req: &RawScan, desc: &ScanDesc) -> Result<()> {
    check_types(req.input_dtype, req.output_dtype, desc.op)?;
    if desc.direction != Direction::Forward {
        bail!(InvalidArgument, "backward scans are not implemented yet");
    }
    if req.n == 0 {
        return Ok(());
    }
    if req.input == 0 || req.output == 0 {
        bail!(NullArgument, "input and output pointers must not be NULL when n > 0");
    }
    let max_bytes = isize::MAX as u64;
    let in_bytes = req
        .n
        .checked_mul(req.input_dtype.size() as u64)
        .filter(|&b| b <= max_bytes);
    let out_bytes = req
        .n
        .checked_mul(req.output_dtype.size() as u64)
        .filter(|&b| b <= max_bytes);
    let (Some(in_bytes), Some(out_bytes)) = (in_bytes, out_bytes) else {
        bail!(LengthOverflow, "n = {} elements overflows the address space", req.n);
    };
    if req.input.checked_add(in_bytes).is_none() || req.output.checked_add(out_bytes).is_none() {
        bail!(
            LengthOverflow,
            "buffer of n = {} elements wraps around the address space",
            req.n
        );
    }
    if req.input % req.input_dtype.size() as u64 != 0 || req.output % req.output_dtype.size() as u64 != 0 {
        bail!(InvalidArgument, "pointers must be aligned to their element size");
    }
    let exact_in_place = req.input == req.output && in_bytes == out_bytes;
    let disjoint = req.input + in_bytes <= req.output || req.output + out_bytes <= req.input;
    if !exact_in_place && !disjoint {
        bail!(
            PartialOverlap,
            "input and output overlap without being the same range (only exact in-place scans are allowed)"
        );
    }
    Ok(())
}
