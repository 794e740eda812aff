//! The host backend: the same scans on the CPU, as a parallel reduce-then-scan over
//! std threads (chunk reductions, a sequential scan of the chunk totals, chunk scans
//! seeded with their carry). Used when there is no CUDA driver or device, or on request.
//!
//! Chunks are runs of the traversal (logical) order; for a segmented scan a chunk's
//! total is a (head seen, value) pair, the flag-pair operator of the GPU kernels.

use crate::error::Result;
use crate::ops::{dispatch_pair, Accumulator, Widen};
use crate::scan::RawScan;
use crate::types::{DType, Direction, Op, ScanDesc, Segments};

/// Below this many elements a single thread is faster than spawning workers.
const PARALLEL_THRESHOLD: u64 = 1 << 16;

/// Runs a validated request whose pointers are host addresses.
///
/// # Safety
/// `req.input` must point to `req.n` readable input elements, `req.output` to `req.n`
/// writable output elements (the same range for an in-place scan), and `req.segments`
/// to the segment data `desc.segments` describes, with no other access to the output
/// while the call runs.
pub(crate) unsafe fn scan(req: &RawScan, desc: &ScanDesc) -> Result<()> {
    if req.n == 0 {
        return Ok(());
    }
    let walk = Walk {
        n: req.n as usize,
        backward: desc.direction == Direction::Backward,
        heads: Heads {
            data: req.segments as usize,
            kind: desc.segments,
        },
    };
    dispatch_pair!(req.input_dtype, req.output_dtype, |I, O| {
        scan_typed::<I, O>(req.input as *const I, req.output as *mut O, walk, desc)
    });
    Ok(())
}

/// Segment data in host memory: where segments start, in memory order.
#[derive(Clone, Copy)]
struct Heads {
    data: usize,
    kind: Segments,
}

impl Heads {
    /// Whether element p starts a segment in memory order.
    ///
    /// # Safety
    /// `p` (and `p - 1` for keys) must index the segment data validated for this scan.
    unsafe fn starts(&self, p: usize) -> bool {
        unsafe fn key<K: Copy + PartialEq>(data: usize, p: usize) -> bool {
            let k = data as *const K;
            p > 0 && *k.add(p) != *k.add(p - 1)
        }
        match self.kind {
            Segments::None => false,
            Segments::ByteFlags => *(self.data as *const u8).add(p) != 0,
            Segments::BitFlags => (*(self.data as *const u32).add(p / 32) >> (p % 32)) & 1 == 1,
            Segments::Keys(DType::I32 | DType::U32) => key::<u32>(self.data, p),
            Segments::Keys(_) => key::<u64>(self.data, p),
        }
    }
}

/// The traversal: logical index i visits physical element `physical(i)`.
#[derive(Clone, Copy)]
struct Walk {
    n: usize,
    backward: bool,
    heads: Heads,
}

impl Walk {
    fn physical(&self, i: usize) -> usize {
        if self.backward {
            self.n - 1 - i
        } else {
            i
        }
    }
    /// Whether logical element i restarts the running value (always false unsegmented).
    unsafe fn head(&self, i: usize) -> bool {
        if self.heads.kind == Segments::None {
            return false;
        }
        let p = self.physical(i);
        if self.backward {
            p == self.n - 1 || self.heads.starts(p + 1)
        } else {
            p == 0 || self.heads.starts(p)
        }
    }
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
    walk: Walk,
    desc: &ScanDesc,
) {
    let n = walk.n;
    let init = desc.init_bits.map(O::from_bits).unwrap_or_else(|| O::identity(desc.op));
    let workers = std::thread::available_parallelism().map_or(1, |p| p.get()).min(64);
    if (n as u64) < PARALLEL_THRESHOLD || workers == 1 {
        scan_chunk(input, output, 0..n, init, init, walk, desc);
        return;
    }
    let chunk = n.div_ceil(workers);
    let ranges: Vec<_> = (0..workers)
        .map(|w| (w * chunk).min(n)..((w + 1) * chunk).min(n))
        .collect();
    let shared = Shared(input, output);
    let op = desc.op;
    // Phase 1: reduce each chunk to (head seen, value after its last element).
    let totals: Vec<(bool, O)> = std::thread::scope(|s| {
        let handles: Vec<_> = ranges
            .iter()
            .cloned()
            .map(|r| {
                s.spawn(move || {
                    let sh = shared;
                    // SAFETY: reads only, within [0, n).
                    r.fold((false, O::identity(op)), |(seen, acc), i| unsafe {
                        let x = (*sh.0.add(walk.physical(i))).widen();
                        if walk.head(i) {
                            (true, O::combine(op, init, x))
                        } else {
                            (seen, O::combine(op, acc, x))
                        }
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
    for (seen, value) in totals {
        carries.push(running);
        running = if seen { value } else { O::combine(op, running, value) };
    }
    std::thread::scope(|s| {
        for (r, carry) in ranges.into_iter().zip(carries) {
            s.spawn(move || {
                let sh = shared;
                // SAFETY: the chunks are disjoint, so each output element has one writer,
                // and element i is read before it is written (in-place is fine).
                unsafe { scan_chunk(sh.0, sh.1, r, carry, init, walk, desc) }
            });
        }
    });
}

#[allow(clippy::too_many_arguments)]
unsafe fn scan_chunk<I: Widen<O> + Copy, O: Accumulator>(
    input: *const I,
    output: *mut O,
    range: std::ops::Range<usize>,
    carry: O,
    init: O,
    walk: Walk,
    desc: &ScanDesc,
) {
    let op: Op = desc.op;
    let mut running = carry;
    for i in range {
        if walk.head(i) {
            running = init;
        }
        let p = walk.physical(i);
        let next = O::combine(op, running, (*input.add(p)).widen());
        *output.add(p) = if desc.inclusive { next } else { running };
        running = next;
    }
}
