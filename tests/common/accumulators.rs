//! Scans whose accumulator is wider than their output (`ScanDesc::accumulate_in`, the
//! rows of `NARROWING_TYPES`): f32 data combined in f64 and written as f32. One sweep
//! that the host suite and the GPU suite both run: operators, algorithms, directions,
//! inclusive and exclusive, initial values, segment forms, in place, and the sizes the
//! caller names (every tile boundary of the backend's kernels).

use scanrt::{reference_scan_segmented, Algorithm, Context, DType, Direction, Op, ScanDesc, Segments, Stream};

use super::{random_vec, scan_one_type, segment_starts, Rng, SegmentPattern, Tally};

/// One case of the sweep.
#[derive(Debug, Clone, Copy)]
pub struct WideCase {
    pub op: Op,
    pub algorithm: Algorithm,
    pub direction: Direction,
    pub inclusive: bool,
    pub init: Option<f64>,
    pub segments: Segments,
    pub in_place: bool,
    pub n: usize,
}

/// Every case over `sizes`, for `algorithms`; returns the failures (each naming its case
/// and seed).
pub fn sweep_wide_accumulators(
    ctx: &Context,
    stream: &Stream,
    seed: u64,
    sizes: &[usize],
    algorithms: &[Algorithm],
) -> Vec<String> {
    let mut rng = Rng(seed);
    let mut tally = Tally::default();
    for &n in sizes {
        for op in [Op::Sum, Op::Product, Op::Min, Op::Max] {
            for &algorithm in algorithms {
                for direction in [Direction::Forward, Direction::Backward] {
                    for segments in [Segments::None, Segments::ByteFlags, Segments::Rows(1 + n as u64 / 3)] {
                        let case = WideCase {
                            op,
                            algorithm,
                            direction,
                            inclusive: rng.below(2) == 0,
                            init: (rng.below(2) == 0).then_some(0.375),
                            segments,
                            in_place: rng.below(2) == 0,
                            n,
                        };
                        let case_seed = rng.0;
                        let result = run_wide_case(ctx, stream, &mut rng, case);
                        tally.record(result, || format!("{case:?} (rng state {case_seed:#x})"));
                    }
                }
            }
        }
    }
    tally.into_failures("wide accumulators", seed)
}

/// Values whose f32 running sums lose bits that f64 keeps: a spread of magnitudes with
/// fractions, so accumulating in the output type would fail the comparison below.
fn wide_input(rng: &mut Rng, op: Op, n: usize) -> Vec<f32> {
    match op {
        Op::Sum => (0..n)
            .map(|_| {
                let mantissa = rng.below(1 << 20) as f32 / (1 << 20) as f32 + 0.5;
                let scale = [1.0e-3f32, 1.0, 1.0e3][rng.below(3) as usize];
                if rng.below(2) == 0 {
                    mantissa * scale
                } else {
                    -mantissa * scale
                }
            })
            .collect(),
        _ => random_vec::<f32>(rng, op, n),
    }
}

fn run_wide_case(ctx: &Context, stream: &Stream, rng: &mut Rng, c: WideCase) -> Result<(), String> {
    let input = wide_input(rng, c.op, c.n);
    let mut desc = ScanDesc {
        op: c.op,
        inclusive: c.inclusive,
        algorithm: c.algorithm,
        direction: c.direction,
        segments: c.segments,
        ..ScanDesc::default()
    }
    .accumulate_in(DType::F64);
    if let Some(init) = c.init {
        desc = desc.with_init(init);
    }
    let starts = match c.segments {
        Segments::ByteFlags => Some(segment_starts(rng, SegmentPattern::Random { mean_len: 97 }, c.n)),
        Segments::Rows(len) => Some((0..c.n).map(|p| (p as u64).is_multiple_of(len)).collect()),
        _ => None,
    };
    let wide: Vec<f64> = input.iter().map(|&x| x as f64).collect();
    let want: Vec<f64> = reference_scan_segmented::<f64, f64>(&wide, starts.as_deref(), &desc);

    let got: Vec<f32> = scan_one_type(ctx, stream, rng, &input, starts.as_deref(), &desc, c.in_place)?;
    compare_narrowed(&input, starts.as_deref(), &desc, &want, &got)
}

/// `got` must be `want` (the sequential f64 scan) rounded to f32, up to the reordering
/// error of an f64 sum (Higham's gamma_n over the absolute sum of its segment so far);
/// products of powers of two, minima and maxima are exact.
fn compare_narrowed(
    input: &[f32],
    starts: Option<&[bool]>,
    desc: &ScanDesc,
    want: &[f64],
    got: &[f32],
) -> Result<(), String> {
    let n = input.len();
    let backward = desc.direction == Direction::Backward;
    let gamma = n as f64 * f64::EPSILON;
    let init = desc.init.and_then(|v| v.value::<f64>()).unwrap_or(0.0).abs();
    let mut abs_sum = init;
    for step in 0..n {
        let p = if backward { n - 1 - step } else { step };
        let head = match starts {
            Some(s) if backward => p == n - 1 || s[p + 1],
            Some(s) => p == 0 || s[p],
            None => false,
        };
        if head {
            abs_sum = init;
        }
        let (w, g) = (want[p], got[p] as f64);
        let ok = if desc.op == Op::Sum {
            let rounded = want[p] as f32 as f64;
            let ulp = (w.abs().max(f32::MIN_POSITIVE as f64)) * f32::EPSILON as f64;
            (g - rounded).abs() <= ulp + gamma * (abs_sum + (input[p] as f64).abs())
        } else {
            (w as f32).to_bits() == got[p].to_bits() || (w.is_nan() && g.is_nan())
        };
        if !ok {
            return Err(format!(
                "mismatch at {p} of {n}: want {w:e} (as f32 {:e}), got {g:e}",
                w as f32
            ));
        }
        abs_sum += (input[p] as f64).abs();
    }
    Ok(())
}

/// The same data summed in f32 differs from the f64 reference by more than the
/// comparison allows: the sweep could tell a wrong accumulator from the right one.
pub fn narrow_accumulation_would_fail(n: usize) -> bool {
    let mut rng = Rng(0xACC);
    let input = wide_input(&mut rng, Op::Sum, n);
    let desc = ScanDesc::inclusive(Op::Sum).accumulate_in(DType::F64);
    let wide: Vec<f64> = input.iter().map(|&x| x as f64).collect();
    let want = reference_scan_segmented::<f64, f64>(&wide, None, &desc);
    let mut running = 0f32;
    let narrow: Vec<f32> = input
        .iter()
        .map(|&x| {
            running += x;
            running
        })
        .collect();
    compare_narrowed(&input, None, &desc, &want, &narrow).is_err()
}
