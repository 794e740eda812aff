//! The reference: a plain sequential scan, the definition every backend is tested against.

use crate::ops::Accumulator;
use crate::scan::desc::ScanDesc;
use crate::tables::Direction;
use crate::types::{ScanTypes, Widen};

/// Sequential scan of `input` as described by `desc` (direction, inclusive, initial
/// value; unsegmented).
///
/// # Panics
/// When `desc` has an initial value of another type than `O`.
pub fn reference_scan<I: Widen<O> + Copy, O: Accumulator>(input: &[I], desc: &ScanDesc) -> Vec<O> {
    reference_scan_segmented(input, None, desc)
}

/// Sequential scan with optional segments, given as start flags in memory order
/// (`starts[p]`: element p begins a segment). Traversal visits elements from the first
/// (forward) or the last (backward); the running value restarts from the initial value
/// at each segment's first element in traversal order: element p forward when p == 0 or
/// `starts[p]`, backward when p == n-1 or `starts[p+1]`.
///
/// # Panics
/// When `desc` has an initial value of another type than `O`.
pub fn reference_scan_segmented<I: Widen<O> + Copy, O: Accumulator>(
    input: &[I],
    starts: Option<&[bool]>,
    desc: &ScanDesc,
) -> Vec<O> {
    let n = input.len();
    let init = desc
        .init_bits(ScanTypes::new(O::DTYPE, O::DTYPE, Some(O::DTYPE)))
        .expect("the initial value has the output type")
        .map(O::from_bits)
        .unwrap_or_else(|| O::identity(desc.op));
    let backward = desc.direction == Direction::Backward;
    let mut out = vec![init; n];
    let mut running = init;
    for i in 0..n {
        let p = if backward { n - 1 - i } else { i };
        if let Some(starts) = starts {
            let head = if backward {
                p == n - 1 || starts[p + 1]
            } else {
                p == 0 || starts[p]
            };
            if head {
                running = init;
            }
        }
        let next = O::combine(desc.op, running, input[p].widen());
        out[p] = if desc.inclusive { next } else { running };
        running = next;
    }
    out
}
