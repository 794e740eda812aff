//! The host backend: the same scans on the CPU, as a parallel reduce-then-scan over
//! std threads (chunk reductions, a sequential scan of the chunk totals, chunk scans
//! seeded with their carry). Used when there is no CUDA driver or device, or on request.

use crate::error::Result;
use crate::ops::{dispatch_pair, Accumulator, Widen};
use crate::scan::RawScan;
use crate::types::ScanDesc;

/// Below this many elements a single thread is faster than spawning workers.
const PARALLEL_THRESHOLD: u64 = 1 << 16;

/// Runs a validated request whose pointers are host addresses.
///
/// # Safety
/// `req.input` must point to `req.n` readable input elements and `req.output` to `req.n`
/// writable output elements (the same range for an in-place scan), with no other access
/// to the output while the call runs.
pub(crate) unsafe fn scan(req: &RawScan, desc: &ScanDesc) -> Result<()> {
    if req.n == 0 {
        return Ok(());
    }
    dispatch_pair!(req.input_dtype, req.output_dtype, |I, O| {
        scan_typed::<I, O>(req.input as *const I, req.output as *mut O, req.n as usize, desc)
    });
    Ok(())
}

/// Raw pointers moved into worker threads; each worker touches a disjoint index range.
#[derive(Clone, Copy)]
struct Shared<I, O>(*const I, *mut O);
// SAFETY: workers access disjoint ranges of the arrays (see scan_typed).
unsafe impl<I, O> Send for Shared<I, O> {}
unsafe impl<I, O> Sync for Shared<I, O> {}

unsafe fn scan_typed<I: Widen<O> + Copy + Send + Sync, O: Accumulator>(
    input: *const I,
    output: *mut O,
    n: usize,
    desc: &ScanDesc,
) {
    let init = desc.init_bits.map(O::from_bits).unwrap_or_else(|| O::identity(desc.op));
    let workers = std::thread::available_parallelism().map_or(1, |p| p.get()).min(64);
    if (n as u64) < PARALLEL_THRESHOLD || workers == 1 {
        scan_chunk(input, output, 0..n, init, desc);
        return;
    }
    let chunk = n.div_ceil(workers);
    let ranges: Vec<_> = (0..workers)
        .map(|w| (w * chunk).min(n)..((w + 1) * chunk).min(n))
        .collect();
    let shared = Shared(input, output);
    let op = desc.op;
    // Phase 1: reduce each chunk.
    let totals: Vec<O> = std::thread::scope(|s| {
        let handles: Vec<_> = ranges
            .iter()
            .cloned()
            .map(|r| {
                s.spawn(move || {
                    let sh = shared;
                    // SAFETY: reads only, within [0, n).
                    r.fold(O::identity(op), |acc, i| {
                        O::combine(op, acc, unsafe { *sh.0.add(i) }.widen())
                    })
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("host scan worker panicked"))
            .collect()
    });
    // Phase 2: carries; Phase 3: scan each chunk with its carry.
    let mut carries = Vec::with_capacity(workers);
    let mut running = init;
    for t in totals {
        carries.push(running);
        running = O::combine(op, running, t);
    }
    std::thread::scope(|s| {
        for (r, carry) in ranges.into_iter().zip(carries) {
            s.spawn(move || {
                let sh = shared;
                // SAFETY: the chunks are disjoint, so each output element has one writer,
                // and element i is read before it is written (in-place is fine).
                unsafe { scan_chunk(sh.0, sh.1, r, carry, desc) }
            });
        }
    });
}

unsafe fn scan_chunk<I: Widen<O> + Copy, O: Accumulator>(
    input: *const I,
    output: *mut O,
    range: std::ops::Range<usize>,
    carry: O,
    desc: &ScanDesc,
) {
    let mut running = carry;
    for i in range {
        let next = O::combine(desc.op, running, (*input.add(i)).widen());
        *output.add(i) = if desc.inclusive { next } else { running };
        running = next;
    }
}
