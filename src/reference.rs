//! The reference: a plain sequential scan, the definition every backend is tested against.

use crate::ops::{Accumulator, Widen};
use crate::types::ScanDesc;

/// Sequential scan of `input` as described by `desc` (forward direction).
pub fn reference_scan<I: Widen<O> + Copy, O: Accumulator>(input: &[I], desc: &ScanDesc) -> Vec<O> {
    let mut running = desc.init_bits.map(O::from_bits).unwrap_or_else(|| O::identity(desc.op));
    let mut out = Vec::with_capacity(input.len());
    for &x in input {
        let next = O::combine(desc.op, running, x.widen());
        out.push(if desc.inclusive { next } else { running });
        running = next;
    }
    out
}
