//! The host backend: the same scans on the CPU, at memory speed.
//!
//! The traversal (logical order: forward, or from the last element) is cut into chunks
//! of `CHUNK` elements. Workers of rayon's pool draw chunks in order from a ticket; for
//! each chunk a worker folds it from the identity (its aggregate, read from memory),
//! waits for the previous chunk's inclusive value, publishes its own (prefix . aggregate)
//! and scans the chunk from its prefix while the chunk is still in its cache. Memory sees
//! one read and one write per element, as on the GPU, and the chain between chunks costs
//! one operation per chunk. A chunk's ticket is only drawn by a running worker after it
//! finished its previous chunk, so every wait points to a chunk already being worked on:
//! no deadlock, however busy the pool.
//!
//! Association order: within a chunk left to right from its prefix, across chunks the
//! fixed chain above. It depends on n and CHUNK alone, never on the number of threads or
//! their timing, so float results are the same on every run and every machine; integer,
//! min, max and bitwise results do not depend on the order at all, so a lone thread runs
//! those as one plain loop.
//!
//! Operators are dispatched once per call: every inner loop is monomorphised for its
//! (input, output, operator, direction, inclusive) combination.

use std::sync::atomic::{AtomicUsize, Ordering};

use crate::dispatch_scan_types;
use crate::error::Result;
use crate::ops::{dispatch_op, op_at, Accumulator};
use crate::scalar::Scalar;
use crate::scan::desc::{ScanDesc, Segments};
use crate::scan::RawScan;
use crate::tables::{DType, Direction};
use crate::types::{Narrow, ScanTypes, Widen};

/// Elements per chunk: the unit of parallel work and of the association order. Input and
/// output of a chunk (at most 2 x 8 x 2^15 bytes) stay in a core's L2 between its two
/// passes.
const CHUNK: usize = 1 << 15;

/// Runs a validated request whose pointers are host addresses; returns the total (the
/// initial value combined with every element, in traversal order) as the accumulator's
/// bits, the carry a chunked scan hands on (for segmented scans, the last segment's).
///
/// # Safety
/// `req.input` must point to `req.n` readable input elements, `req.output` to `req.n`
/// writable output elements (the same range for an in-place scan), and `req.segments`
/// to the segment data `desc.segments` describes, with no other access to the output
/// while the call runs.
pub(crate) unsafe fn scan(req: &RawScan, desc: &ScanDesc) -> Result<u64> {
    let types = desc.types(req.input_dtype, req.output_dtype);
    let init_bits = desc.init_bits(types)?;
    let heads = HostHeads::new(req.segments, desc.segments, req.n as usize);
    let walk = Walk {
        n: req.n as usize,
        backward: desc.direction == Direction::Backward,
        heads: heads.heads,
    };
    let inclusive = desc.inclusive;
    dispatch_scan_types!(types, |I, A, O| {
        dispatch_op!(desc.op, |K| {
            let init = <A as Scalar>::from_bits(init_bits.unwrap_or_else(|| identity_bits(types, desc.op)));
            if walk.n == 0 {
                return Ok(<A as Scalar>::to_bits(init));
            }
            let arrays = Arrays(req.input as *const I, req.output as *mut O);
            let total = match (walk.backward, inclusive) {
                (false, true) => run::<I, A, O, K, false, true>(arrays, walk, init),
                (false, false) => run::<I, A, O, K, false, false>(arrays, walk, init),
                (true, true) => run::<I, A, O, K, true, true>(arrays, walk, init),
                (true, false) => run::<I, A, O, K, true, false>(arrays, walk, init),
            };
            Ok(<A as Scalar>::to_bits(total))
        })
    })
}

/// The identity of `op` in the accumulator type of `types`, as its bits.
pub(crate) fn identity_bits(types: ScanTypes, op: crate::tables::Op) -> u64 {
    dispatch_scan_types!(types, |I, A, O| {
        match types.narrowed_identity(op) {
            // The accumulator is a 32-bit integer: its bits, sign-extended no further.
            Some(value) => value as u64 & (u64::MAX >> (64 - 8 * std::mem::size_of::<A>())),
            None => dispatch_op!(op, |K| <A as Scalar>::to_bits(A::identity(op_at::<K>()))),
        }
    })
}

#[inline(always)]
fn combine<O: Accumulator, const K: usize>(a: O, b: O) -> O {
    O::combine(op_at::<K>(), a, b)
}

/// Segment data in host memory: where segments start, in memory order.
#[derive(Clone, Copy)]
pub(crate) struct Heads {
    pub data: usize,
    pub kind: Segments,
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
            Segments::Rows(len) => (p as u64).is_multiple_of(len),
            Segments::Offsets { .. } => unreachable!("offsets are read as bit flags (HostHeads)"),
        }
    }
}

/// A scan's segment data as the host walks it: offsets become bit flags first, which
/// this keeps alive.
pub(crate) struct HostHeads {
    pub heads: Heads,
    _bits: Vec<u32>,
}

impl HostHeads {
    /// # Safety
    /// `data` is the validated segment data of `kind` for `n` elements.
    pub unsafe fn new(data: u64, kind: Segments, n: usize) -> HostHeads {
        let Segments::Offsets { dtype, count } = kind else {
            return HostHeads {
                heads: Heads {
                    data: data as usize,
                    kind,
                },
                _bits: Vec::new(),
            };
        };
        let mut bits = vec![0u32; n.div_ceil(32)];
        for i in 0..count as usize {
            // As the kernels read them: negative offsets start nothing.
            let at = match dtype {
                DType::U32 => *(data as *const u32).add(i) as u64,
                DType::I32 => u64::try_from(*(data as *const i32).add(i)).unwrap_or(u64::MAX),
                _ => *(data as *const u64).add(i),
            };
            if at < n as u64 {
                bits[at as usize / 32] |= 1 << (at % 32);
            }
        }
        HostHeads {
            heads: Heads {
                data: bits.as_ptr() as usize,
                kind: Segments::BitFlags,
            },
            _bits: bits,
        }
    }
}

/// The traversal: logical index i visits physical element `physical(i)`.
#[derive(Clone, Copy)]
pub(crate) struct Walk {
    pub n: usize,
    pub backward: bool,
    pub heads: Heads,
}

impl Walk {
    pub fn segmented(&self) -> bool {
        self.heads.kind != Segments::None
    }
    /// Whether logical element i (physical p) restarts the running value.
    ///
    /// # Safety
    /// As [`Heads::starts`], for p and its neighbour in traversal order.
    #[inline]
    pub unsafe fn head<const BACKWARD: bool>(&self, p: usize) -> bool {
        if BACKWARD {
            p == self.n - 1 || self.heads.starts(p + 1)
        } else {
            p == 0 || self.heads.starts(p)
        }
    }
}

/// The raw arrays, shared by the workers; each output element has one writer.
#[derive(Clone, Copy)]
struct Arrays<I, O>(*const I, *mut O);
// SAFETY: workers read the input and write disjoint chunks of the output (see `run`).
unsafe impl<I, O> Send for Arrays<I, O> {}
unsafe impl<I, O> Sync for Arrays<I, O> {}

/// The physical index range of logical chunk c, in increasing physical order.
fn chunk_range<const BACKWARD: bool>(n: usize, c: usize) -> std::ops::Range<usize> {
    let (lo, hi) = (c * CHUNK, ((c + 1) * CHUNK).min(n));
    if BACKWARD {
        n - hi..n - lo
    } else {
        lo..hi
    }
}

/// A chunk's fold from the identity: (whether it holds a segment head, the value since
/// its last head, or since its start).
#[inline]
unsafe fn reduce<I: Widen<A> + Copy, A: Accumulator, O, const K: usize, const BACKWARD: bool>(
    a: Arrays<I, O>,
    walk: &Walk,
    range: std::ops::Range<usize>,
    init: A,
) -> (bool, A) {
    let mut acc = A::identity(op_at::<K>());
    if !walk.segmented() {
        if BACKWARD {
            for p in range.rev() {
                acc = combine::<A, K>(acc, (*a.0.add(p)).widen());
            }
        } else {
            for p in range {
                acc = combine::<A, K>(acc, (*a.0.add(p)).widen());
            }
        }
        return (false, acc);
    }
    let mut seen = false;
    let mut visit = |p: usize| {
        if walk.head::<BACKWARD>(p) {
            seen = true;
            acc = init;
        }
        acc = combine::<A, K>(acc, (*a.0.add(p)).widen());
    };
    if BACKWARD {
        range.rev().for_each(&mut visit);
    } else {
        range.for_each(&mut visit);
    }
    (seen, acc)
}

/// Scans a chunk from `carry`; returns the running value after it.
#[inline]
unsafe fn scan_chunk<
    I: Widen<A> + Copy,
    A: Accumulator + Narrow<O>,
    O,
    const K: usize,
    const BACKWARD: bool,
    const INCLUSIVE: bool,
>(
    a: Arrays<I, O>,
    walk: &Walk,
    range: std::ops::Range<usize>,
    carry: A,
    init: A,
) -> A {
    let mut running = carry;
    if !walk.segmented() {
        // The hot loop: no head test, nothing but the operator between load and store.
        let (input, output) = (a.0, a.1);
        if BACKWARD {
            for p in range.rev() {
                let next = combine::<A, K>(running, (*input.add(p)).widen());
                *output.add(p) = if INCLUSIVE { next } else { running }.narrow();
                running = next;
            }
        } else {
            for p in range {
                let next = combine::<A, K>(running, (*input.add(p)).widen());
                *output.add(p) = if INCLUSIVE { next } else { running }.narrow();
                running = next;
            }
        }
        return running;
    }
    let mut visit = |p: usize| {
        if walk.head::<BACKWARD>(p) {
            running = init;
        }
        let next = combine::<A, K>(running, (*a.0.add(p)).widen());
        *a.1.add(p) = if INCLUSIVE { next } else { running }.narrow();
        running = next;
    };
    if BACKWARD {
        range.rev().for_each(&mut visit);
    } else {
        range.for_each(&mut visit);
    }
    running
}

/// The chain's frontier: how many chunks have published their inclusive value, and the
/// last one's value. Chunk c waits for `done == c`, reads the value, writes its own and
/// releases `done = c + 1`: one writer at a time, in chunk order, no memory per chunk.
struct Frontier<O> {
    done: AtomicUsize,
    value: std::cell::UnsafeCell<O>,
}
// SAFETY: `value` is written only by the chunk whose turn `done` says it is, before it
// releases `done`, and read only after acquiring it.
unsafe impl<O: Send> Sync for Frontier<O> {}

/// Runs `work` on `workers` threads of rayon's pool (the caller's among them) through
/// nested joins, which allocate nothing.
fn fork(workers: usize, work: &(impl Fn() + Sync)) {
    if workers <= 1 {
        work();
    } else {
        rayon::join(|| fork(workers / 2, work), || fork(workers - workers / 2, work));
    }
}

/// Scans the whole traversal; returns the running value after it.
unsafe fn run<I, A, O, const K: usize, const BACKWARD: bool, const INCLUSIVE: bool>(
    a: Arrays<I, O>,
    walk: Walk,
    init: A,
) -> A
where
    I: Widen<A> + Copy + Send + Sync,
    A: Accumulator + Narrow<O>,
    O: Copy + Send + Sync,
{
    let n = walk.n;
    let chunks = n.div_ceil(CHUNK);
    let order_free = !(A::DTYPE.is_float() && op_at::<K>().definition().float_order_sensitive);
    if chunks == 1 || (order_free && rayon::current_num_threads() == 1) {
        return scan_chunk::<I, A, O, K, BACKWARD, INCLUSIVE>(a, &walk, 0..n, init, init);
    }
    let threads = rayon::current_num_threads().min(chunks);
    let frontier = Frontier {
        done: AtomicUsize::new(0),
        value: std::cell::UnsafeCell::new(init),
    };
    let frontier = &frontier; // shared whole: its Sync covers the cell
    let ticket = AtomicUsize::new(0);
    let work = || loop {
        let c = ticket.fetch_add(1, Ordering::Relaxed);
        if c >= chunks {
            return;
        }
        let range = chunk_range::<BACKWARD>(n, c);
        let (seen, aggregate) = reduce::<I, A, O, K, BACKWARD>(a, &walk, range.clone(), init);
        while frontier.done.load(Ordering::Acquire) != c {
            std::hint::spin_loop();
        }
        // SAFETY: it is chunk c's turn (see Frontier).
        let prefix = unsafe { *frontier.value.get() };
        let inclusive = if seen {
            aggregate
        } else {
            combine::<A, K>(prefix, aggregate)
        };
        unsafe { *frontier.value.get() = inclusive };
        frontier.done.store(c + 1, Ordering::Release);
        scan_chunk::<I, A, O, K, BACKWARD, INCLUSIVE>(a, &walk, range, prefix, init);
    };
    fork(threads, &work);
    // SAFETY: every worker has returned; the last chunk published the running value.
    unsafe { *frontier.value.get() }
}
