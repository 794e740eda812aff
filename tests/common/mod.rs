//! Shared test support: random data per type and operator, the reference scan, and
//! result comparison (exact for integers and min/max, a derived bound for float sums
//! and products).
#![allow(dead_code)]

use once_cell::sync::Lazy;
use scanrt::{reference_scan_segmented, Accumulator, Backend, Context, Direction, Op, Scalar, ScanDesc, Widen};

pub mod accumulators;
pub mod carries;
pub mod half_types;
pub mod harness;
pub mod operator_space;
pub mod operators;
pub mod segment_carries;
pub mod segments;
pub mod select;
pub mod small_integers;
pub mod sort;
pub mod strided;
pub mod strided_operators;
pub mod summed_area;

// Each suite uses some of these (as `dead_code` allows above for items).
#[allow(unused_imports)]
pub use segments::{
    encode_offsets, encode_segments, pack_bits, scan_one_type, segment_starts, with_count, SegmentPattern,
};

/// The GPU context the GPU suites share, or why there is none.
pub static GPU: Lazy<Result<Context, String>> = Lazy::new(|| {
    let ctx = Context::new(Backend::Gpu, 0).map_err(|e| e.to_string())?;
    eprintln!("GPU suite on {}", ctx.describe());
    Ok(ctx)
});

/// The shared GPU context (the harness runs GPU tests only where there is one).
pub fn gpu() -> &'static Context {
    GPU.as_ref()
        .expect("GPU tests run only with a CUDA device (common::harness)")
}

/// Why GPU tests cannot run here, if they cannot: their harness reports them ignored.
pub fn no_gpu() -> Option<String> {
    GPU.as_ref().err().map(|e| format!("no CUDA device ({e})"))
}

/// A small deterministic PRNG (splitmix64), so failures reproduce from the printed seed.
pub struct Rng(pub u64);
impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E3779B97F4A7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58476D1CE4E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D049BB133111EB);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
}

/// Runs `sweep` once per element type of `DType::ALL`, each on a thread and a stream of its
/// own with a generator of its own drawn from `seed` (the sweep takes the time of its
/// slowest type, and a failure still reproduces from the state it prints); returns the
/// cases run and the failures, in type order.
pub fn sweep_each_type<F>(ctx: &Context, seed: u64, sweep: F) -> (usize, Vec<String>)
where
    F: Fn(scanrt::DType, &scanrt::Stream, &mut Rng) -> (usize, Vec<String>) + Sync,
{
    let mut seeds = Rng(seed);
    let type_seeds: Vec<u64> = scanrt::DType::ALL.iter().map(|_| seeds.next_u64()).collect();
    std::thread::scope(|scope| {
        let sweeps: Vec<_> = scanrt::DType::ALL
            .into_iter()
            .zip(type_seeds)
            .map(|(dtype, type_seed)| {
                let sweep = &sweep;
                scope.spawn(move || {
                    let stream = ctx.new_stream().expect("a stream per type");
                    sweep(dtype, &stream, &mut Rng(type_seed))
                })
            })
            .collect();
        sweeps
            .into_iter()
            .fold((0, Vec::new()), |(cases, mut failures), sweep| {
                let (more, failed) = sweep.join().expect("a type's sweep panicked");
                failures.extend(failed);
                (cases + more, failures)
            })
    })
}

/// Input element types with operator-aware random data.
pub trait TestInput: Scalar + Copy {
    fn random(rng: &mut Rng, op: Op) -> Self;
    fn as_f64(self) -> f64;
}

fn int_bits(rng: &mut Rng, op: Op, bits: u32) -> u64 {
    let mask = if bits == 64 { !0 } else { (1u64 << bits) - 1 };
    let r = rng.next_u64();
    (match op {
        Op::Product => r | 1,                                 // odd: products stay nonzero
        Op::BitAnd => !(1u64 << (r % bits as u64)),           // clears one bit at a time
        Op::BitOr => 1u64 << (r % (bits as u64 * 4)).min(63), // sets a bit now and then
        _ => r,
    }) & mask
}

macro_rules! int_input {
    ($t:ty, $bits:expr) => {
        impl TestInput for $t {
            fn random(rng: &mut Rng, op: Op) -> Self {
                int_bits(rng, op, $bits) as $t
            }
            fn as_f64(self) -> f64 {
                self as f64
            }
        }
    };
}
int_input!(u8, 8);
int_input!(i8, 8);
int_input!(u16, 16);
int_input!(i16, 16);
int_input!(i32, 32);
int_input!(u32, 32);
int_input!(i64, 64);
int_input!(u64, 64);

/// Float data: sums use multiples of 1/8 in [-8, 8] (exact while partial sums stay
/// below 2^20 in magnitude, see `compare`); products use +-1 and, rarely, 2 or 1/2
/// (exact powers of two); min/max use arbitrary values with NaN, infinities and signed
/// zeros now and then (min and max propagate NaN and keep the first of equal values).
fn float_value(rng: &mut Rng, op: Op) -> f64 {
    match op {
        Op::Sum => (rng.below(129) as f64 - 64.0) / 8.0,
        Op::Product => {
            let sign = if rng.below(2) == 0 { 1.0 } else { -1.0 };
            sign * match rng.below(4096) {
                0 => 2.0,
                1 => 0.5,
                _ => 1.0,
            }
        }
        _ => match rng.below(200) {
            0 => f64::NAN,
            1 => f64::INFINITY,
            2 => f64::NEG_INFINITY,
            3 => -0.0,
            4 => 0.0,
            _ => (rng.next_u64() as i64 as f64) / 1e15,
        },
    }
}
impl TestInput for f32 {
    fn random(rng: &mut Rng, op: Op) -> Self {
        float_value(rng, op) as f32
    }
    fn as_f64(self) -> f64 {
        self as f64
    }
}
impl TestInput for f64 {
    fn random(rng: &mut Rng, op: Op) -> Self {
        float_value(rng, op)
    }
    fn as_f64(self) -> f64 {
        self
    }
}

/// The half types take the same values, rounded (exactly, for sums and products).
macro_rules! half_input {
    ($($t:ty),*) => {$(
        impl TestInput for $t {
            fn random(rng: &mut Rng, op: Op) -> Self {
                <$t>::from_f64(float_value(rng, op))
            }
            fn as_f64(self) -> f64 {
                self.to_f64()
            }
        }
    )*};
}
half_input!(scanrt::half::f16, scanrt::half::bf16);

pub trait TestOutput: Accumulator {
    fn as_f64(self) -> f64;
    /// Unit roundoff for floats, None for integers (compared exactly).
    const UNIT_ROUNDOFF: Option<f64>;
    fn random_init(rng: &mut Rng, op: Op) -> Self;
}
macro_rules! int_output {
    ($($t:ty),*) => {$(
        impl TestOutput for $t {
            fn as_f64(self) -> f64 { self as f64 }
            const UNIT_ROUNDOFF: Option<f64> = None;
            fn random_init(rng: &mut Rng, op: Op) -> Self {
                match op {
                    Op::Product => (rng.next_u64() | 1) as $t,
                    _ => rng.next_u64() as $t,
                }
            }
        }
    )*};
}
int_output!(i32, u32, i64, u64);
impl TestOutput for f32 {
    fn as_f64(self) -> f64 {
        self as f64
    }
    const UNIT_ROUNDOFF: Option<f64> = Some(f32::EPSILON as f64 / 2.0);
    fn random_init(rng: &mut Rng, op: Op) -> Self {
        float_value(rng, op) as f32
    }
}
impl TestOutput for f64 {
    fn as_f64(self) -> f64 {
        self
    }
    const UNIT_ROUNDOFF: Option<f64> = Some(f64::EPSILON / 2.0);
    fn random_init(rng: &mut Rng, op: Op) -> Self {
        float_value(rng, op)
    }
}

pub fn random_vec<I: TestInput>(rng: &mut Rng, op: Op, n: usize) -> Vec<I> {
    (0..n).map(|_| I::random(rng, op)).collect()
}

/// Compares a backend's result with the sequential reference (unsegmented).
pub fn compare<I: TestInput + Widen<O>, O: TestOutput>(
    input: &[I],
    desc: &ScanDesc,
    got: &[O],
    depth: f64,
) -> Result<(), String> {
    compare_segmented(input, None, desc, got, depth)
}

/// Compares a backend's result with the sequential reference; `starts[p]` says whether
/// element p starts a segment (memory order), for segmented scans.
///
/// Integers, min and max: exact. Float sum: any summation order of the same terms has
/// error at most gamma_h * sum|x_j| (Higham, Accuracy and Stability, 4.2), h the height
/// of the combination tree. Our test data are multiples of 1/8; every intermediate of
/// any order is a sum of a contiguous run, bounded by 2 * max_i |prefix_i|, so when that
/// stays below 2^20 (f32: 2^20 * 8 < 2^24) every order is exact and we require bitwise
/// equality. Otherwise we allow gamma_h * S_i, with h = `depth` (the caller passes a
/// bound on the backend's tree height) and S_i the absolute sum of everything traversed
/// so far. Float product of powers of two: exact while no prefix overflows, which our
/// data guarantees for the sizes tested.
pub fn compare_segmented<I: TestInput + Widen<O>, O: TestOutput>(
    input: &[I],
    starts: Option<&[bool]>,
    desc: &ScanDesc,
    got: &[O],
    depth: f64,
) -> Result<(), String> {
    let want: Vec<O> = reference_scan_segmented::<I, O>(input, starts, desc);
    assert_eq!(want.len(), got.len());
    let exact = match O::UNIT_ROUNDOFF {
        None => true,
        Some(_) if desc.op != Op::Sum => true,
        Some(_) => {
            let max_abs = want.iter().map(|w| w.as_f64().abs()).fold(0.0, f64::max);
            2.0 * max_abs < (1u64 << 20) as f64
        }
    };
    let u = O::UNIT_ROUNDOFF.unwrap_or(0.0);
    let gamma = depth * u / (1.0 - depth * u);
    let init_abs = desc
        .init
        .and_then(|v| v.value::<O>())
        .map(|v| v.as_f64().abs())
        .unwrap_or(0.0);
    let mut abs_sum = init_abs;
    let n = want.len();
    for step in 0..n {
        let i = if desc.direction == Direction::Backward {
            n - 1 - step
        } else {
            step
        };
        let (w, g) = (want[i], got[i]);
        // Min and max pick an element: its bits, -0.0 and +0.0 told apart.
        let signed_zeros_equal = !matches!(desc.op, Op::Min | Op::Max);
        let ok = if exact {
            w.to_bits() == g.to_bits()
                || (signed_zeros_equal && w.as_f64() == g.as_f64())
                || (w.as_f64().is_nan() && g.as_f64().is_nan())
        } else {
            let bound = gamma * (abs_sum + input[i].as_f64().abs());
            (w.as_f64() - g.as_f64()).abs() <= bound
        };
        if !ok {
            return Err(format!("mismatch at {i} of {n}: want {w:?}, got {g:?}"));
        }
        abs_sum += input[i].as_f64().abs();
    }
    Ok(())
}

/// Counts the cases of a randomised test and keeps the failures, so one run reports all of them.
#[derive(Default)]
pub struct Tally {
    pub cases: usize,
    pub failures: Vec<String>,
}

impl Tally {
    pub fn record(&mut self, result: Result<(), String>, case: impl FnOnce() -> String) {
        self.cases += 1;
        if let Err(e) = result {
            self.failures.push(format!("{}: {e}", case()));
        }
    }

    /// Prints the case count and fails with the first 30 failures, if any.
    pub fn assert_no_failures(&self, label: &str) {
        let (cases, failures) = (self.cases, &self.failures);
        eprintln!("{label}: {cases} cases, {} failures", failures.len());
        assert!(
            failures.is_empty(),
            "{} of {cases} cases failed:\n{}",
            failures.len(),
            failures.iter().take(30).cloned().collect::<Vec<_>>().join("\n")
        );
    }
}

impl Tally {
    /// Prints the case count (with the sweep's seed) and hands the failures to the caller.
    pub fn into_failures(self, label: &str, seed: u64) -> Vec<String> {
        eprintln!(
            "{label}: {} cases, {} failed (seed {seed:#x})",
            self.cases,
            self.failures.len()
        );
        self.failures
    }
}

/// Calls `$f::<I, O>($args)` for the Rust types of a dtype pair (the library's table).
#[allow(unused_macros)]
macro_rules! with_pair {
    ($pair:expr, $f:ident ( $($args:expr),* )) => {{
        let (input, output): (scanrt::DType, scanrt::DType) = $pair;
        scanrt::dispatch_pair!(input, output, |I, O| $f::<I, O>($($args),*))
    }};
}
#[allow(unused_imports)]
pub(crate) use with_pair;

/// Builds a descriptor, drawing a typed random initial value when asked.
pub fn make_desc<O: TestOutput>(rng: &mut Rng, op: Op, inclusive: bool, with_init: bool) -> ScanDesc {
    let mut d = if inclusive {
        ScanDesc::inclusive(op)
    } else {
        ScanDesc::exclusive(op)
    };
    if with_init {
        d = d.with_init(O::random_init(rng, op));
    }
    d
}

/// A bound on the height of the GPU's combination tree for n elements (rows, warp,
/// block and tile levels, plus one link per tile in the look-back chain), for `compare`.
pub fn gpu_depth(n: usize) -> f64 {
    (64 + 8 * n.div_ceil(2048)) as f64
}

/// A worked example from the seeds, with its exact expected output (in memory order).
pub struct SeedExample {
    pub name: &'static str,
    pub input: Vec<i32>,
    /// Byte head flags (1 = starts a segment), for segmented examples.
    pub flags: Option<Vec<u8>>,
    /// Direction and inclusive/exclusive; the segment kind is set by the caller.
    pub desc: ScanDesc,
    pub expected: Vec<i32>,
}

/// Seeds 001, 002 and 004. Seed 004 prints backward results in traversal order (from the
/// last element to the first); they are reversed here into memory order.
pub fn seed_examples() -> Vec<SeedExample> {
    let a = vec![1, 7, -4, 2, 2, -1, 5];
    let reversed = |v: &[i32]| v.iter().rev().copied().collect::<Vec<_>>();
    vec![
        SeedExample {
            name: "seed 001: segmented inclusive +-scan of 16 values",
            input: vec![1, 2, 3, 4, 5, 6, 7, 1, 3, 9, 10, 12, 1, 1, 1, 2],
            flags: Some(vec![0, 0, 0, 1, 0, 0, 0, 1, 0, 1, 1, 0, 0, 0, 1, 0]),
            desc: ScanDesc::inclusive(Op::Sum),
            expected: vec![1, 3, 6, 4, 9, 15, 22, 1, 4, 9, 10, 22, 23, 24, 1, 3],
        },
        SeedExample {
            name: "seed 002: exclusive segmented scan",
            input: vec![4, 2, 1, 3, 0, 2, 1, 5],
            flags: Some(vec![1, 0, 0, 1, 0, 0, 1, 0]),
            desc: ScanDesc::exclusive(Op::Sum),
            expected: vec![0, 4, 6, 0, 3, 3, 0, 1],
        },
        SeedExample {
            name: "seed 004: B, exclusive forward",
            input: a.clone(),
            flags: None,
            desc: ScanDesc::exclusive(Op::Sum),
            expected: vec![0, 1, 8, 4, 6, 8, 7],
        },
        SeedExample {
            name: "seed 004: C, exclusive backward",
            input: a.clone(),
            flags: None,
            desc: ScanDesc::exclusive(Op::Sum).backward(),
            expected: reversed(&[0, 5, 4, 6, 8, 4, 11]),
        },
        SeedExample {
            name: "seed 004: segmented B, exclusive forward",
            input: a.clone(),
            flags: Some(vec![1, 0, 1, 1, 0, 0, 0]),
            desc: ScanDesc::exclusive(Op::Sum),
            expected: vec![0, 1, 0, 0, 2, 4, 3],
        },
        SeedExample {
            name: "seed 004: segmented C, exclusive backward",
            input: a,
            flags: Some(vec![1, 0, 1, 1, 0, 0, 0]),
            desc: ScanDesc::exclusive(Op::Sum).backward(),
            expected: reversed(&[0, 5, 4, 6, 0, 0, 7]),
        },
    ]
}
