//! The backend-independent part of a scan call: the request and its validation.

use crate::error::{bail, Result};
use crate::types::{check_types, DType, ScanDesc, Segments};

/// One scan over raw addresses: host addresses on the host backend, device addresses on
/// a GPU. `output` may equal `input` (in place) when both types have the same size.
#[derive(Debug, Clone, Copy)]
pub struct RawScan {
    pub input: u64,
    pub input_dtype: DType,
    pub output: u64,
    pub output_dtype: DType,
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
    pub fn input_bytes(&self) -> u64 {
        self.n * self.input_dtype.size() as u64
    }
    pub fn output_bytes(&self) -> u64 {
        self.n * self.output_dtype.size() as u64
    }
    /// Bytes of segment data this scan reads (0 when unsegmented).
    pub fn segment_bytes(&self, desc: &ScanDesc) -> u64 {
        desc.segments.data_bytes(self.n).unwrap_or(0)
    }
}

/// Everything that can be checked without touching a device, except the overlap rules
/// ([`check_overlaps`], which backends apply after their own range checks). On success
/// lengths do not overflow and pointers are aligned.
pub(crate) fn validate(req: &RawScan, desc: &ScanDesc) -> Result<()> {
    check_types(req.input_dtype, req.output_dtype, desc.op)?;
    desc.init_bits(req.output_dtype)?;
    desc.segments.check()?;
    if desc.segments == Segments::None && req.segments != 0 {
        bail!(
            InvalidArgument,
            "segment data was passed but the descriptor asks for an unsegmented scan"
        );
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
    if desc.segments != Segments::None {
        if req.segments == 0 {
            bail!(
                NullArgument,
                "a segmented scan needs its segment flags or keys (NULL given)"
            );
        }
        let seg_bytes = desc.segments.data_bytes(req.n).filter(|&b| b <= max_bytes);
        if !seg_bytes.is_some_and(|b| req.segments.checked_add(b).is_some()) {
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
    if desc.segments != Segments::None && overlaps(req.segments, req.segment_bytes(desc), req.output, out_bytes) {
        bail!(PartialOverlap, "the segment flags or keys overlap the output");
    }
    Ok(())
}

fn overlaps(a: u64, a_bytes: u64, b: u64, b_bytes: u64) -> bool {
    a < b + b_bytes && b < a + a_bytes
}
