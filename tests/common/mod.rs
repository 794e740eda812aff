//! Shared test support: random data per type and operator, the reference scan, and
//! result comparison (exact for integers and min/max, a derived bound for float sums
//! and products).
#![allow(dead_code)]

use scanrt::{reference_scan, Accumulator, Op, Scalar, ScanDesc, Widen};

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
int_input!(i32, 32);
int_input!(u32, 32);
int_input!(i64, 64);
int_input!(u64, 64);

/// Float data: sums use multiples of 1/8 in [-8, 8] (exact while partial sums stay
/// below 2^20 in magnitude, see `compare`); products use +-1 and, rarely, 2 or 1/2
/// (exact powers of two); min/max use arbitrary values.
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
        _ => (rng.next_u64() as i64 as f64) / 1e15,
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

/// Compares a backend's result with the sequential reference.
///
/// Integers, min and max: exact. Float sum: any summation order of the same terms has
/// error at most gamma_h * sum|x_j| (Higham, Accuracy and Stability, 4.2), h the height
/// of the combination tree. Our test data are multiples of 1/8; every intermediate of
/// any order is a sum of a contiguous run, bounded by 2 * max_i |prefix_i|, so when that
/// stays below 2^20 (f32: 2^20 * 8 < 2^24) every order is exact and we require bitwise
/// equality. Otherwise we allow gamma_h * S_i, with h = `depth` (the caller passes a
/// bound on the backend's tree height). Float product of powers of two: exact while no
/// prefix overflows, which our data guarantees for the sizes tested.
pub fn compare<I: TestInput + Widen<O>, O: TestOutput>(
    input: &[I],
    desc: &ScanDesc,
    got: &[O],
    depth: f64,
) -> Result<(), String> {
    let want: Vec<O> = reference_scan::<I, O>(input, desc);
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
    let init_abs = desc.init_bits.map(|b| O::from_bits(b).as_f64().abs()).unwrap_or(0.0);
    let mut abs_sum = init_abs;
    for i in 0..want.len() {
        let (w, g) = (want[i], got[i]);
        let ok = if exact {
            w.to_bits() == g.to_bits() || (w.as_f64() == g.as_f64()) // +0 == -0
                || (w.as_f64().is_nan() && g.as_f64().is_nan())
        } else {
            let bound = gamma * (abs_sum + input[i].as_f64().abs());
            (w.as_f64() - g.as_f64()).abs() <= bound
        };
        if !ok {
            return Err(format!("mismatch at {i} of {}: want {w:?}, got {g:?}", want.len()));
        }
        abs_sum += input[i].as_f64().abs();
    }
    Ok(())
}

/// Calls `$f::<I, O>($args)` for the Rust types of a dtype pair.
#[macro_export]
macro_rules! with_pair {
    ($pair:expr, $f:ident ( $($args:expr),* )) => {{
        use scanrt::DType::*;
        match $pair {
            (U8, I32) => $f::<u8, i32>($($args),*),
            (U8, U32) => $f::<u8, u32>($($args),*),
            (U8, I64) => $f::<u8, i64>($($args),*),
            (U8, U64) => $f::<u8, u64>($($args),*),
            (I32, I32) => $f::<i32, i32>($($args),*),
            (I32, I64) => $f::<i32, i64>($($args),*),
            (U32, U32) => $f::<u32, u32>($($args),*),
            (U32, U64) => $f::<u32, u64>($($args),*),
            (U32, I64) => $f::<u32, i64>($($args),*),
            (I64, I64) => $f::<i64, i64>($($args),*),
            (U64, U64) => $f::<u64, u64>($($args),*),
            (F32, F32) => $f::<f32, f32>($($args),*),
            (F32, F64) => $f::<f32, f64>($($args),*),
            (F64, F64) => $f::<f64, f64>($($args),*),
            p => panic!("unexpected pair {p:?}"),
        }
    }};
}

/// Builds a descriptor, drawing a typed random initial value when asked.
pub fn make_desc<O: TestOutput>(rng: &mut Rng, op: Op, inclusive: bool, with_init: bool) -> ScanDesc {
    let mut d = if inclusive {
        ScanDesc::inclusive(op)
    } else {
        ScanDesc::exclusive(op)
    };
    if with_init {
        d.init_bits = Some(O::random_init(rng, op).to_bits());
    }
    d
}

/// A bound on the height of the GPU's combination tree for n elements (rows, warp,
/// block and tile levels, plus one link per tile in the look-back chain), for `compare`.
pub fn gpu_depth(n: usize) -> f64 {
    (64 + 8 * n.div_ceil(2048)) as f64
}
