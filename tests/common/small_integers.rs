//! Scans written as 8- and 16-bit integers (the integer rows of `NARROWING_TYPES`: u8,
//! i8, u16 and i16 combined in 32 bits and narrowed as written). One sweep that the host
//! suite and the GPU suite both run: every operator, the algorithms the caller names,
//! both directions, inclusive and exclusive, with and without an initial value, segment
//! forms, in place, and the sizes the caller names; each result against a sequential
//! loop in the element type itself (wrapping), which shares no code with scanrt's.

use scanrt::{Algorithm, Context, DType, Direction, Op, ScanDesc, Segments, Stream, NARROWING_TYPES};

use super::{scan_one_type, segment_starts, Rng, SegmentPattern, Tally, TestInput};

/// An 8- or 16-bit element type, its values carried as i64.
pub trait SmallInt: TestInput + Into<i64> + std::fmt::Debug {
    const BITS: u32;
    const SIGNED: bool;
    fn wrap(v: i64) -> Self;
}
macro_rules! small_int {
    ($($t:ty: $signed:expr),*) => {$(
        impl SmallInt for $t {
            const BITS: u32 = <$t>::BITS;
            const SIGNED: bool = $signed;
            fn wrap(v: i64) -> Self {
                v as $t
            }
        }
    )*};
}
small_int!(u8: false, i8: true, u16: false, i16: true);

/// One case of the sweep.
#[derive(Debug, Clone, Copy)]
pub struct SmallCase {
    pub dtype: DType,
    pub op: Op,
    pub algorithm: Algorithm,
    pub direction: Direction,
    pub inclusive: bool,
    /// Its low bits are the initial value, a value of the element type.
    pub init: Option<i64>,
    pub segments: Segments,
    pub in_place: bool,
    pub n: usize,
}

/// Every case over `sizes`, for `algorithms`; returns the cases run and the failures
/// (each naming its case and seed).
pub fn sweep_small_integers(
    ctx: &Context,
    stream: &Stream,
    seed: u64,
    sizes: &[usize],
    algorithms: &[Algorithm],
) -> (usize, Vec<String>) {
    let mut rng = Rng(seed);
    let mut tally = Tally::default();
    let mut cases = 0;
    let dtypes = NARROWING_TYPES
        .iter()
        .filter(|t| !t.output.is_float())
        .map(|t| t.output);
    for dtype in dtypes {
        for &n in sizes {
            for op in Op::ALL {
                for &algorithm in algorithms {
                    for direction in [Direction::Forward, Direction::Backward] {
                        for segments in [Segments::None, Segments::ByteFlags, Segments::Rows(1 + n as u64 / 3)] {
                            let case = SmallCase {
                                dtype,
                                op,
                                algorithm,
                                direction,
                                inclusive: rng.below(2) == 0,
                                init: (rng.below(2) == 0).then(|| rng.next_u64() as i64),
                                segments,
                                in_place: rng.below(2) == 0,
                                n,
                            };
                            let case_seed = rng.0;
                            let result = match dtype {
                                DType::U8 => run_case::<u8>(ctx, stream, &mut rng, case),
                                DType::I8 => run_case::<i8>(ctx, stream, &mut rng, case),
                                DType::U16 => run_case::<u16>(ctx, stream, &mut rng, case),
                                DType::I16 => run_case::<i16>(ctx, stream, &mut rng, case),
                                other => panic!("{other:?} is no small integer row"),
                            };
                            cases += 1;
                            tally.record(result, || format!("{case:?} (rng state {case_seed:#x})"));
                        }
                    }
                }
            }
        }
    }
    (cases, tally.into_failures("small integers", seed))
}

/// The sequential loop in i64: the exact running result (sums and products wrap, which
/// keeps their low bits), each written as `T` keeps its low bits. The initial value is a
/// value of `T` (the case's bits, wrapped).
fn reference<T: SmallInt>(input: &[T], starts: Option<&[bool]>, c: &SmallCase) -> Vec<T> {
    let (lowest, highest) = if T::SIGNED {
        (-(1i64 << (T::BITS - 1)), (1i64 << (T::BITS - 1)) - 1)
    } else {
        (0, (1i64 << T::BITS) - 1)
    };
    let identity = match c.op {
        Op::Sum | Op::BitOr | Op::BitXor => 0,
        Op::Product => 1,
        Op::Min => highest,
        Op::Max => lowest,
        Op::BitAnd => -1,
    };
    let init = c.init.map(|v| T::wrap(v).into()).unwrap_or(identity);
    let combine = |a: i64, b: i64| match c.op {
        Op::Sum => a.wrapping_add(b),
        Op::Product => a.wrapping_mul(b),
        Op::Min => a.min(b),
        Op::Max => a.max(b),
        Op::BitAnd => a & b,
        Op::BitOr => a | b,
        Op::BitXor => a ^ b,
    };
    let n = input.len();
    let mut out = vec![T::wrap(0); n];
    let mut acc = init;
    for step in 0..n {
        let p = if c.direction == Direction::Backward {
            n - 1 - step
        } else {
            step
        };
        let head = match starts {
            Some(s) if c.direction == Direction::Backward => p == n - 1 || s[p + 1],
            Some(s) => p == 0 || s[p],
            None => false,
        };
        if head {
            acc = init;
        }
        let next = combine(acc, input[p].into());
        out[p] = T::wrap(if c.inclusive { next } else { acc });
        acc = next;
    }
    out
}

fn run_case<T: SmallInt>(ctx: &Context, stream: &Stream, rng: &mut Rng, c: SmallCase) -> Result<(), String> {
    let input: Vec<T> = (0..c.n).map(|_| T::random(rng, c.op)).collect();
    let mut desc = ScanDesc {
        op: c.op,
        inclusive: c.inclusive,
        algorithm: c.algorithm,
        direction: c.direction,
        segments: c.segments,
        ..ScanDesc::default()
    };
    // The initial value is a value of the element type, given as the 32-bit accumulator.
    if let Some(init) = c.init.map(|v| -> i64 { T::wrap(v).into() }) {
        desc = if T::SIGNED {
            desc.with_init(init as i32)
        } else {
            desc.with_init(init as u32)
        };
    }
    let starts = match c.segments {
        Segments::ByteFlags => Some(segment_starts(rng, SegmentPattern::Random { mean_len: 97 }, c.n)),
        Segments::Rows(len) => Some((0..c.n).map(|p| (p as u64).is_multiple_of(len)).collect()),
        _ => None,
    };
    let want = reference(&input, starts.as_deref(), &c);

    let got: Vec<T> = scan_one_type(ctx, stream, rng, &input, starts.as_deref(), &desc, c.in_place)?;
    match (0..c.n).find(|&p| got[p].to_bits() != want[p].to_bits()) {
        Some(p) => Err(format!(
            "mismatch at {p} of {}: want {:?}, got {:?}",
            c.n, want[p], got[p]
        )),
        None => Ok(()),
    }
}
