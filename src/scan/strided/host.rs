//! The strided scan on the host backend: each sequence gathered into a contiguous
//! buffer, scanned by the host backend's scan (the same semantics and association order
//! as a 1-D scan of that sequence), and scattered back.

use crate::error::Result;
use crate::scalar::InitValue;
use crate::scan::desc::ScanDesc;
use crate::scan::host as host_scan;
use crate::scan::strided::layout::{StridedPair, Strides};
use crate::scan::RawScan;
use crate::types::DType;

/// Per-sequence carries in host memory (0: none): `batches * columns` accumulators each.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SequenceCarries {
    pub carry_in: u64,
    pub carry_out: u64,
    /// `carry_in` holds one value for every sequence (else one for all).
    pub per_sequence_in: bool,
    /// Where sequence `(b, c)` lies among them: `b * strides.batch + c * strides.column`.
    pub strides: Strides,
}

/// Scans every sequence of the pair.
///
/// # Safety
/// The views `pair` describes hold every element their strides reach from `input` and
/// `output` (host memory), nothing else accesses the output meanwhile, and the carries
/// hold the accumulators `carries` says.
pub(crate) unsafe fn scan(
    pair: &StridedPair,
    input: (u64, DType),
    output: (u64, DType),
    desc: &ScanDesc,
    accumulator: DType,
    carries: SequenceCarries,
) -> Result<()> {
    let form = pair.form;
    let len = form.len as usize;
    let (in_size, out_size, acc_size) = (input.1.size(), output.1.size(), accumulator.size());
    let mut staged_in = vec![0u8; len * in_size];
    let mut staged_out = vec![0u8; len * out_size];
    let element = |base: u64, strides: &Strides, b: u64, i: u64, c: u64, size: usize| -> u64 {
        let offset = b as i64 * strides.batch + i as i64 * strides.row + c as i64 * strides.column;
        base.wrapping_add((offset * size as i64) as u64)
    };
    for b in 0..form.batches {
        for c in 0..form.columns {
            let sequence = (b as i64 * carries.strides.batch + c as i64 * carries.strides.column) as u64;
            for i in 0..form.len {
                let from = element(input.0, &pair.input, b, i, c, in_size) as *const u8;
                std::ptr::copy_nonoverlapping(from, staged_in.as_mut_ptr().add(i as usize * in_size), in_size);
            }
            let mut sequence_desc = *desc;
            if carries.carry_in != 0 {
                let index = if carries.per_sequence_in { sequence } else { 0 };
                let bits = read_bits((carries.carry_in + index * acc_size as u64) as *const u8, acc_size);
                sequence_desc.init = Some(InitValue::from_bits(accumulator, bits));
            }
            let req = RawScan::new(
                staged_in.as_ptr() as u64,
                input.1,
                staged_out.as_mut_ptr() as u64,
                output.1,
                form.len,
            );
            let total = host_scan::scan(&req, &sequence_desc)?;
            if carries.carry_out != 0 {
                let to = (carries.carry_out + sequence * acc_size as u64) as *mut u8;
                std::ptr::copy_nonoverlapping(total.to_ne_bytes().as_ptr(), to, acc_size);
            }
            for i in 0..form.len {
                let to = element(output.0, &pair.output, b, i, c, out_size) as *mut u8;
                std::ptr::copy_nonoverlapping(staged_out.as_ptr().add(i as usize * out_size), to, out_size);
            }
        }
    }
    Ok(())
}

/// The low `size` bytes (4 or 8) at `p` as bits, zero-extended.
unsafe fn read_bits(p: *const u8, size: usize) -> u64 {
    let mut bytes = [0u8; 8];
    std::ptr::copy_nonoverlapping(p, bytes.as_mut_ptr(), size);
    u64::from_ne_bytes(bytes)
}
