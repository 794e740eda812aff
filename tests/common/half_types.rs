//! Scans of the half types (f16, bf16): elements read into f32, combined in f32 and
//! written as the half type (rounded to nearest even) or as f32. One sweep that the host
//! suite and the GPU suite both run: both types, both output types, operators,
//! algorithms, directions, inclusive and exclusive, initial values, segment forms, in
//! place, NaN and infinities, and the sizes the caller names.
//!
//! The data make every f32 result exact (sums of multiples of 1/8 below 2^20, products of
//! powers of two, minima and maxima), so the expected output is the sequential f32 scan
//! rounded once to the output type, compared bit for bit (NaN by class). An f16 or bf16
//! accumulator would lose the fractions of sums past 2^8 or 2^11 and fail.

use scanrt::half::{bf16, f16};
use scanrt::{
    reference_scan_segmented, Algorithm, Buffer, Context, DType, Direction, Narrow, Op, Scalar, ScanDesc, Segments,
    Stream,
};

use super::{encode_segments, random_vec, segment_starts, Rng, SegmentPattern, Tally};

/// One case of the sweep.
#[derive(Debug, Clone, Copy)]
pub struct HalfCase {
    pub input: DType,
    pub output: DType,
    pub op: Op,
    pub algorithm: Algorithm,
    pub direction: Direction,
    pub inclusive: bool,
    pub init: Option<f32>,
    pub segments: Segments,
    /// Sums see NaN and infinities now and then.
    pub special_values: bool,
    pub in_place: bool,
    pub n: usize,
}

/// Every case over `sizes`, for `algorithms`; returns the failures (each naming its case
/// and seed).
pub fn sweep_half_types(
    ctx: &Context,
    stream: &Stream,
    seed: u64,
    sizes: &[usize],
    algorithms: &[Algorithm],
) -> Vec<String> {
    let mut rng = Rng(seed);
    let mut tally = Tally::default();
    for &n in sizes {
        for input in [DType::F16, DType::BF16] {
            for output in [input, DType::F32] {
                for op in [Op::Sum, Op::Product, Op::Min, Op::Max] {
                    for &algorithm in algorithms {
                        for direction in [Direction::Forward, Direction::Backward] {
                            for segments in [
                                Segments::None,
                                Segments::ByteFlags,
                                Segments::Keys(DType::U32),
                                Segments::Rows(1 + n as u64 / 3),
                            ] {
                                let case = HalfCase {
                                    input,
                                    output,
                                    op,
                                    algorithm,
                                    direction,
                                    inclusive: rng.below(2) == 0,
                                    init: (rng.below(2) == 0).then_some(0.375),
                                    segments,
                                    special_values: op == Op::Sum && rng.below(3) == 0,
                                    in_place: output == input && rng.below(2) == 0,
                                    n,
                                };
                                let case_seed = rng.0;
                                let result = match input {
                                    DType::F16 => run_half_case::<f16>(ctx, stream, &mut rng, case),
                                    _ => run_half_case::<bf16>(ctx, stream, &mut rng, case),
                                };
                                tally.record(result, || format!("{case:?} (rng state {case_seed:#x})"));
                            }
                        }
                    }
                }
            }
        }
    }
    tally.into_failures("half types", seed)
}

/// A half type's host side: rounding from f32, widening to f32.
trait Half: Scalar + Into<f32> {
    fn round(x: f32) -> Self;
}
impl Half for f16 {
    fn round(x: f32) -> Self {
        x.narrow()
    }
}
impl Half for bf16 {
    fn round(x: f32) -> Self {
        x.narrow()
    }
}

fn run_half_case<H: Half>(ctx: &Context, stream: &Stream, rng: &mut Rng, c: HalfCase) -> Result<(), String> {
    let mut values: Vec<f32> = random_vec::<f32>(rng, c.op, c.n);
    if c.op == Op::Product {
        // Factors of 2 and 1/2 alternate, so no product of a run of elements leaves
        // [1/2, 2] in magnitude: every association order is exact (a random walk of
        // exponents over 2^24 elements would overflow in some orders and not others).
        let mut up = true;
        for v in values.iter_mut().filter(|v| v.abs() != 1.0) {
            *v = v.signum() * if up { 2.0 } else { 0.5 };
            up = !up;
        }
    }
    if c.special_values {
        for v in values.iter_mut() {
            match rng.below(4000) {
                0 => *v = f32::NAN,
                1 => *v = f32::INFINITY,
                2 => *v = f32::NEG_INFINITY,
                _ => {}
            }
        }
    }
    // Every input value is a half value (the data's are exactly representable).
    let input: Vec<H> = values.iter().map(|&x| H::round(x)).collect();
    let widened: Vec<f32> = input.iter().map(|&h| h.into()).collect();
    let mut desc = ScanDesc {
        op: c.op,
        inclusive: c.inclusive,
        algorithm: c.algorithm,
        direction: c.direction,
        segments: c.segments,
        ..ScanDesc::default()
    };
    if let Some(init) = c.init {
        desc = desc.with_init(init);
    }
    let starts = match c.segments {
        Segments::None => None,
        Segments::Rows(len) => Some((0..c.n).map(|p| (p as u64).is_multiple_of(len)).collect::<Vec<_>>()),
        _ => Some(segment_starts(rng, SegmentPattern::Random { mean_len: 97 }, c.n)),
    };
    let want: Vec<f32> = reference_scan_segmented::<f32, f32>(&widened, starts.as_deref(), &desc);

    let e = |e: scanrt::Error| format!("{}: {}", e.status.c_name(), e.message);
    let in_buf = Buffer::from_slice(ctx, stream, &input).map_err(e)?;
    let out_buf = if c.in_place {
        None
    } else {
        Some(Buffer::new(ctx, c.output, c.n as u64).map_err(e)?)
    };
    let out = out_buf.as_ref().unwrap_or(&in_buf);
    match (c.segments, &starts) {
        (Segments::ByteFlags | Segments::Keys(_), Some(starts)) => {
            let data = encode_segments(rng, c.segments, starts);
            let seg = match c.segments {
                Segments::Keys(_) => {
                    let keys: Vec<u32> = data
                        .chunks(4)
                        .map(|k| u32::from_le_bytes(k.try_into().unwrap()))
                        .collect();
                    Buffer::from_slice(ctx, stream, &keys)
                }
                _ => Buffer::from_slice(ctx, stream, &data),
            }
            .map_err(e)?;
            ctx.scan_segmented(stream, &in_buf, &seg, out, &desc.segmented(c.segments))
                .map_err(e)?;
        }
        _ => {
            ctx.scan(stream, &in_buf, out, &desc).map_err(e)?;
        }
    }
    let mismatch = |p: usize, w: String, g: String| Err(format!("mismatch at {p} of {}: want {w}, got {g}", c.n));
    if c.output == DType::F32 {
        let got: Vec<f32> = out.download(stream, c.n).map_err(e)?;
        for p in 0..c.n {
            if !same(want[p], got[p]) {
                return mismatch(p, format!("{:e}", want[p]), format!("{:e}", got[p]));
            }
        }
    } else {
        let got: Vec<H> = out.download(stream, c.n).map_err(e)?;
        for p in 0..c.n {
            let w = H::round(want[p]);
            if !same(w.into(), got[p].into()) || (!want[p].is_nan() && w.to_bits() != got[p].to_bits()) {
                return mismatch(p, format!("{w:?} (f32 {:e})", want[p]), format!("{:?}", got[p]));
            }
        }
    }
    Ok(())
}

/// Bitwise equal, or both NaN.
fn same(want: f32, got: f32) -> bool {
    want.to_bits() == got.to_bits() || want.is_nan() && got.is_nan()
}
