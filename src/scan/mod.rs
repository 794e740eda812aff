//! The scan algorithm: what a scan computes (`desc`), its plan (`plan`: validated once,
//! algorithm, kernel set, workspace and launch chosen once), the context's scan entry
//! points (`api`), its GPU kernel sets (`kernels`) and their tuning (`tuning`), the host
//! backend (`host`) and the sequential reference (`reference`). This file holds the
//! request, what a call reports, and their validation.

pub(crate) mod api;
pub(crate) mod desc;
pub(crate) mod host;
pub(crate) mod kernels;
pub(crate) mod plan;
pub(crate) mod reference;
pub(crate) mod tuning;

use crate::error::{bail, Result};
use crate::tables::{Algorithm, Backend, ChoiceReason};
use crate::types::{check_types, DType};
use desc::ScanDesc;

/// What a scan call did: where it ran, which algorithm, and why that one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScanInfo {
    /// Where the scan ran.
    pub backend: Backend,
    /// The algorithm that ran.
    pub algorithm: Algorithm,
    /// Why that algorithm.
    pub reason: ChoiceReason,
}

/// One scan over raw addresses: host addresses on the host backend, device addresses on
/// a GPU. `output` may equal `input` (in place) when both types have the same size.
#[derive(Debug, Clone, Copy)]
pub struct RawScan {
    /// Address of the input elements.
    pub input: u64,
    /// Their type.
    pub input_dtype: DType,
    /// Address of the output elements (may equal `input`).
    pub output: u64,
    /// Their type (the accumulator type).
    pub output_dtype: DType,
    /// Elements to scan.
    pub n: u64,
    /// The segment flags or keys of a segmented scan (see [`ScanDesc::segments`]); 0 otherwise.
    pub segments: u64,
}

impl RawScan {
    /// An unsegmented scan of `n` elements.
    pub fn new(input: u64, input_dtype: DType, output: u64, output_dtype: DType, n: u64) -> RawScan {
        RawScan {
            input,
            input_dtype,
            output,
            output_dtype,
            n,
            segments: 0,
        }
    }
    /// Bytes of input read.
    pub fn input_bytes(&self) -> u64 {
        self.n * self.input_dtype.size() as u64
    }
    /// Bytes of output written.
    pub fn output_bytes(&self) -> u64 {
        self.n * self.output_dtype.size() as u64
    }
    /// Bytes of segment data this scan reads (0 when unsegmented).
    pub fn segment_bytes(&self, desc: &ScanDesc) -> u64 {
        desc.segments.data_bytes(self.n).unwrap_or(0)
    }
}

/// The checks of a scan's shape, at plan time: the types and operator, the initial value,
/// the segment form, and lengths that fit the address space.
pub(crate) fn validate_shape(input: DType, output: DType, n: u64, desc: &ScanDesc) -> Result<()> {
    check_types(input, output, desc.op)?;
    desc.init_bits(output)?;
    desc.segments.check()?;
    let max_bytes = isize::MAX as u64;
    let fits = |size: usize| n.checked_mul(size as u64).is_some_and(|b| b <= max_bytes);
    if !fits(input.size()) || !fits(output.size()) {
        bail!(LengthOverflow, "n = {n} elements overflows the address space");
    }
    if !desc.segments.data_bytes(n).is_some_and(|b| b <= max_bytes) {
        bail!(LengthOverflow, "segment data for n = {n} elements overflows");
    }
    Ok(())
}

/// The checks of a scan's addresses that need no device, at run time (after
/// [`validate_shape`]): no NULLs, no ranges that wrap around, aligned elements, segment
/// data exactly when the descriptor asks for it. On success the ranges are well formed.
pub(crate) fn validate_addresses(req: &RawScan, desc: &ScanDesc) -> Result<()> {
    let segmented = desc.segments.has_data();
    if !segmented && req.segments != 0 {
        bail!(
            InvalidArgument,
            "segment data was passed but the descriptor's segments ({}) have none",
            desc.segments.c_name()
        );
    }
    if req.n == 0 {
        return Ok(());
    }
    if req.input == 0 || req.output == 0 {
        bail!(NullArgument, "input and output pointers must not be NULL when n > 0");
    }
    if req.input.checked_add(req.input_bytes()).is_none() || req.output.checked_add(req.output_bytes()).is_none() {
        bail!(
            LengthOverflow,
            "buffer of n = {} elements wraps around the address space",
            req.n
        );
    }
    if req.input % req.input_dtype.size() as u64 != 0 || req.output % req.output_dtype.size() as u64 != 0 {
        bail!(InvalidArgument, "pointers must be aligned to their element size");
    }
    if segmented {
        if req.segments == 0 {
            bail!(
                NullArgument,
                "a segmented scan needs its segment flags or keys (NULL given)"
            );
        }
        if req.segments.checked_add(req.segment_bytes(desc)).is_none() {
            bail!(LengthOverflow, "segment data for n = {} elements overflows", req.n);
        }
        if req.segments % desc.segments.alignment() != 0 {
            bail!(
                InvalidArgument,
                "segment data must be aligned to {} bytes for {}",
                desc.segments.alignment(),
                desc.segments.c_name()
            );
        }
    }
    Ok(())
}

/// The overlap rules of a request that passed [`validate`]: input and output are the same
/// range or disjoint, and segment data never overlaps the output. Checked after the
/// backend's own range checks, so that an output shorter than `n` elements is reported
/// as too small, not as overlapping whatever the allocator placed behind it.
pub(crate) fn check_overlaps(req: &RawScan, desc: &ScanDesc) -> Result<()> {
    let (in_bytes, out_bytes) = (req.input_bytes(), req.output_bytes());
    let exact_in_place = req.input == req.output && in_bytes == out_bytes;
    if !exact_in_place && overlaps(req.input, in_bytes, req.output, out_bytes) {
        bail!(
            PartialOverlap,
            "input and output overlap without being the same range (only exact in-place scans are allowed)"
        );
    }
    // The scan reads flags (or neighbouring keys) after other tiles were written.
    if desc.segments.has_data() && overlaps(req.segments, req.segment_bytes(desc), req.output, out_bytes) {
        bail!(PartialOverlap, "the segment flags or keys overlap the output");
    }
    Ok(())
}

/// Whether the byte ranges `[a, a + a_bytes)` and `[b, b + b_bytes)` share a byte.
pub(crate) fn overlaps(a: u64, a_bytes: u64, b: u64, b_bytes: u64) -> bool {
    a < b + b_bytes && b < a + a_bytes
}
