//! The recipes (linear recurrence, cumulative extreme, logcumsumexp) against sequential
//! loops written here.

use scanrt::{recipes, Context, DType, OperatorScan, Stream};

use super::*;
use crate::common::select::{download_bits, upload_bits};
use crate::common::Rng;

/// Random recurrence inputs: a in [-1, 1] (a stable recurrence: errors stay near the
/// rounding of each step), b, and an initial state.
fn recurrence_inputs(rng: &mut Rng, n: usize) -> (Vec<f64>, Vec<f64>, f64) {
    let a: Vec<f64> = (0..n).map(|_| (rng.below(2001) as f64 - 1000.0) / 1000.0).collect();
    let b: Vec<f64> = (0..n).map(|_| (rng.below(2001) as f64 - 1000.0) / 500.0).collect();
    (a, b, (rng.below(100) as f64 - 50.0) / 10.0)
}

/// Runs a recurrence scan of `a` and `b` in `dtype` (f32 or f64) into one output array,
/// read back as f64.
#[allow(clippy::too_many_arguments)]
fn scan_recurrence(
    ctx: &Context,
    stream: &Stream,
    op: &scanrt::Operator,
    dtype: DType,
    shape: &Shape,
    starts: &[bool],
    scan: &OperatorScan,
    (a, b): (&[f64], &[f64]),
    in_place: bool,
) -> Result<Vec<f64>, String> {
    if dtype == DType::F32 {
        let narrow = |x: &[f64]| -> Vec<f32> { x.iter().map(|&v| v as f32).collect() };
        let (af, bf) = (narrow(a), narrow(b));
        Ok(
            scan_to_one_array(ctx, stream, op, shape, starts, scan, &[&af, &bf], in_place)?
                .into_iter()
                .map(f64::from)
                .collect(),
        )
    } else {
        scan_to_one_array(ctx, stream, op, shape, starts, scan, &[a, b], in_place)
    }
}

/// The first element where a recurrence's `got` is not within `dtype`'s tolerance of
/// `expect`.
fn recurrence_mismatch(dtype: DType, got: &[f64], expect: &[f64]) -> Option<usize> {
    let tolerance = if dtype == DType::F32 { 2e-4 } else { 1e-11 };
    (0..expect.len()).find(|&p| !((got[p] - expect[p]).abs() <= tolerance * (1.0 + expect[p].abs()) * 8.0))
}

/// Linear recurrence `h = a h_prev + b` (f32 or f64) with an initial state; in place over
/// b now and then.
pub fn check_recurrence(
    ctx: &Context,
    stream: &Stream,
    op: &scanrt::Operator,
    dtype: DType,
    rng: &mut Rng,
    shape: Shape,
) -> Result<(), String> {
    check_recurrence_recipe(ctx, stream, op, dtype, rng, shape, false)
}

/// The recurrence's adjoint `lam[i] = g[i] + a[j] lam[j]` (`j` the element before `i` in
/// traversal order) from the initial state that passes `u` to each segment's first
/// element; in place over `g` now and then.
pub fn check_recurrence_adjoint(
    ctx: &Context,
    stream: &Stream,
    op: &scanrt::Operator,
    dtype: DType,
    rng: &mut Rng,
    shape: Shape,
) -> Result<(), String> {
    check_recurrence_recipe(ctx, stream, op, dtype, rng, shape, true)
}

/// The recurrence (or with `adjoint` its adjoint) against a sequential loop: `a` and a
/// second array (`b`, or `g`), a start (`h0`, or `u`).
fn check_recurrence_recipe(
    ctx: &Context,
    stream: &Stream,
    op: &scanrt::Operator,
    dtype: DType,
    rng: &mut Rng,
    shape: Shape,
    adjoint: bool,
) -> Result<(), String> {
    let n = shape.n;
    let (a, b, start) = recurrence_inputs(rng, n);
    let starts = shape.starts(rng);
    let mut expect = vec![0.0f64; n];
    // The adjoint's coefficient is what the element before passes on: `coefficient * h`.
    let (mut h, mut coefficient) = (start, 1.0);
    for (p, restart) in shape.walk(&starts) {
        if restart {
            (h, coefficient) = (start, 1.0);
        }
        let before = h;
        if adjoint {
            h = b[p] + coefficient * h;
            coefficient = a[p];
        } else {
            h = a[p] * h + b[p];
        }
        expect[p] = shape.output(before, h);
    }
    let in_place = rng.below(4) == 0;
    let init = if adjoint {
        recipes::recurrence_adjoint_init(dtype, start)
    } else {
        recipes::recurrence_init(dtype, start)
    };
    let scan = shape.scan().with_init(init.unwrap());
    let got = scan_recurrence(ctx, stream, op, dtype, &shape, &starts, &scan, (&a, &b), in_place)?;
    match recurrence_mismatch(dtype, &got, &expect) {
        Some(p) => Err(format!(
            "{shape:?} adjoint={adjoint} in_place={in_place}: [{p}] = {} expected {}",
            got[p], expect[p]
        )),
        None => Ok(()),
    }
}

/// A linear recurrence (f32 or f64) scanned in chunks of random lengths, each starting
/// from the last state the chunk before it wrote (carry in and out, as for a sequence
/// streamed through in pieces), against one sequential loop over the whole.
pub fn check_recurrence_in_chunks(
    ctx: &Context,
    stream: &Stream,
    op: &scanrt::Operator,
    dtype: DType,
    rng: &mut Rng,
    n: usize,
) -> Result<(), String> {
    let (a, b, h0) = recurrence_inputs(rng, n);
    let mut expect = Vec::with_capacity(n);
    let mut h = h0;
    for p in 0..n {
        h = a[p] * h + b[p];
        expect.push(h);
    }
    let mut got: Vec<f64> = Vec::with_capacity(n);
    while got.len() < n {
        let (start, len) = (got.len(), (1 + rng.below(n as u64 / 3 + 1) as usize).min(n - got.len()));
        let carry = got.last().copied().unwrap_or(h0);
        let scan = OperatorScan::inclusive().with_init(recipes::recurrence_init(dtype, carry).unwrap());
        let chunk = (&a[start..start + len], &b[start..start + len]);
        got.extend(scan_recurrence(
            ctx,
            stream,
            op,
            dtype,
            &Shape::plain(len),
            &vec![false; len],
            &scan,
            chunk,
            false,
        )?);
    }
    match recurrence_mismatch(dtype, &got, &expect) {
        Some(p) => Err(format!("{n} in chunks: h[{p}] = {} expected {}", got[p], expect[p])),
        None => Ok(()),
    }
}

/// A linear recurrence (or with `adjoint` its adjoint) over f16 or bf16 arrays (`dtype`)
/// with f32 states, `n` steps in `direction`, from `h0` (passing `h0`): against a
/// sequential f32 loop over the same half inputs, each result rounded once (to within a
/// few of the half type's ulps: the association order of the f32 combines differs from
/// the loop's).
pub fn check_half_recurrence(
    ctx: &Context,
    stream: &Stream,
    dtype: DType,
    rng: &mut Rng,
    n: usize,
    backward: bool,
    adjoint: bool,
) -> Result<(), String> {
    let e = |e: scanrt::Error| e.to_string();
    let recipe = if adjoint {
        recipes::linear_recurrence_adjoint(dtype)
    } else {
        recipes::linear_recurrence(dtype)
    };
    let op = ctx.create_operator(recipe.unwrap()).map_err(e)?;
    let (a, b, h0) = recurrence_inputs(rng, n);
    let (to_bits, of_bits): (fn(f64) -> u16, fn(u16) -> f32) = match dtype {
        DType::F16 => (
            |v| half::f16::from_f64(v).to_bits(),
            |b| half::f16::from_bits(b).to_f32(),
        ),
        _ => (
            |v| half::bf16::from_f64(v).to_bits(),
            |b| half::bf16::from_bits(b).to_f32(),
        ),
    };
    let (a16, b16): (Vec<u16>, Vec<u16>) = (
        a.iter().map(|&v| to_bits(v)).collect(),
        b.iter().map(|&v| to_bits(v)).collect(),
    );
    let mut expect = vec![0f32; n];
    let (mut h, mut coefficient) = (h0 as f32, 1.0f32);
    for k in 0..n {
        let p = if backward { n - 1 - k } else { k };
        if adjoint {
            h = coefficient.mul_add(h, of_bits(b16[p]));
            coefficient = of_bits(a16[p]);
        } else {
            h = of_bits(a16[p]).mul_add(h, of_bits(b16[p]));
        }
        expect[p] = h;
    }
    let upload = |v: &[u16]| upload_bits(ctx, stream, dtype, &v.iter().map(|&x| x as u64).collect::<Vec<_>>());
    let (a_buf, b_buf) = (upload(&a16).map_err(e)?, upload(&b16).map_err(e)?);
    let h_buf = scanrt::Buffer::new(ctx, dtype, n as u64).map_err(e)?;
    let init = if adjoint {
        recipes::recurrence_adjoint_init(dtype, h0)
    } else {
        recipes::recurrence_init(dtype, h0)
    };
    let mut scan = OperatorScan::inclusive().with_init(init.unwrap());
    if backward {
        scan.direction = scanrt::Direction::Backward;
    }
    op.scan(stream, &[&a_buf, &b_buf], &[&h_buf], &scan).map_err(e)?;
    let got = download_bits(&h_buf, stream, n).map_err(e)?;
    let ulp = if dtype == DType::F16 { 1.0 / 1024.0 } else { 1.0 / 128.0 };
    match (0..n).find(|&p| (of_bits(got[p] as u16) - expect[p]).abs() > 4.0 * ulp * (1.0 + expect[p].abs())) {
        Some(p) => Err(format!(
            "{dtype:?} n={n} backward={backward} adjoint={adjoint}: [{p}] = {} expected {}",
            of_bits(got[p] as u16),
            expect[p]
        )),
        None => Ok(()),
    }
}

/// Values for the cumulative extreme checks: few distinct ones (many ties) and, for
/// floats, NaN (one in 50), infinities and signed zeros now and then.
pub trait ExtremeInput: scanrt::Scalar + PartialOrd {
    fn draw(rng: &mut Rng) -> Self;
    /// The identity of max (`max`) or min: the type's extreme, which loses every tie.
    fn identity(max: bool) -> Self;
}

macro_rules! integer_extreme {
    ($($t:ty),*) => {$(
        impl ExtremeInput for $t {
            fn draw(rng: &mut Rng) -> $t {
                match rng.below(100) {
                    0 => <$t>::MAX,
                    1 => <$t>::MIN,
                    // Few distinct values (many ties), negative ones for signed types.
                    _ => (rng.below(100) as i64 - if <$t>::MIN == 0 { 0 } else { 50 }) as $t,
                }
            }
            fn identity(max: bool) -> $t {
                if max {
                    <$t>::MIN
                } else {
                    <$t>::MAX
                }
            }
        }
    )*};
}
integer_extreme!(u8, i8, u16, i16, u32, i64);

/// A float value drawn for the extreme checks (as f64).
fn draw_float(rng: &mut Rng) -> f64 {
    match rng.below(100) {
        0 | 1 => f64::NAN,
        2 => f64::INFINITY,
        3 => f64::NEG_INFINITY,
        4 => -0.0,
        5 => 0.0,
        _ => (rng.below(1000) as f64 - 500.0) / 4.0,
    }
}

macro_rules! float_extreme {
    ($($t:ty: $from:expr),*) => {$(
        impl ExtremeInput for $t {
            fn draw(rng: &mut Rng) -> $t {
                $from(draw_float(rng))
            }
            fn identity(max: bool) -> $t {
                $from(if max { f64::NEG_INFINITY } else { f64::INFINITY })
            }
        }
    )*};
}
float_extreme!(f32: |v| v as f32, f64: |v| v, half::f16: half::f16::from_f64, half::bf16: half::bf16::from_f64);

/// The types the cumulative extreme checks run: `check_extreme` of each (1- and 2-byte
/// types are held as 4-byte values in the state).
pub const EXTREME_TYPES: [DType; 10] = [
    DType::U8,
    DType::I8,
    DType::U16,
    DType::I16,
    DType::F16,
    DType::BF16,
    DType::U32,
    DType::I64,
    DType::F32,
    DType::F64,
];

/// `check_extreme` of the Rust type of `dtype` (one of `EXTREME_TYPES`).
pub fn check_extreme_of(
    dtype: DType,
    ctx: &Context,
    stream: &Stream,
    op: &scanrt::Operator,
    max: bool,
    rng: &mut Rng,
    shape: Shape,
) -> Result<(), String> {
    match dtype {
        DType::U8 => check_extreme::<u8>(ctx, stream, op, max, rng, shape),
        DType::I8 => check_extreme::<i8>(ctx, stream, op, max, rng, shape),
        DType::U16 => check_extreme::<u16>(ctx, stream, op, max, rng, shape),
        DType::I16 => check_extreme::<i16>(ctx, stream, op, max, rng, shape),
        DType::F16 => check_extreme::<half::f16>(ctx, stream, op, max, rng, shape),
        DType::BF16 => check_extreme::<half::bf16>(ctx, stream, op, max, rng, shape),
        DType::U32 => check_extreme::<u32>(ctx, stream, op, max, rng, shape),
        DType::I64 => check_extreme::<i64>(ctx, stream, op, max, rng, shape),
        DType::F32 => check_extreme::<f32>(ctx, stream, op, max, rng, shape),
        DType::F64 => check_extreme::<f64>(ctx, stream, op, max, rng, shape),
        other => panic!("no extreme check for {other:?}"),
    }
}

/// Running max or min with the index of the extreme, against the documented rule: the
/// first extreme in traversal order wins ties; NaN propagates (from the first NaN of a
/// segment on, the extreme is that NaN and its index); an initial value, when drawn, is
/// where every segment starts, with index `EXTREME_INITIAL_INDEX`. Values are compared bit
/// for bit (-0.0 and +0.0 differ).
pub fn check_extreme<T: ExtremeInput>(
    ctx: &Context,
    stream: &Stream,
    op: &scanrt::Operator,
    max: bool,
    rng: &mut Rng,
    shape: Shape,
) -> Result<(), String> {
    let n = shape.n;
    let x: Vec<T> = (0..n).map(|_| T::draw(rng)).collect();
    let starts = shape.starts(rng);
    // The identity has index 0xffffffff and loses every comparison, ties included.
    let identity = (T::identity(max), u32::MAX);
    let init = (rng.below(3) == 0).then(|| (T::draw(rng), recipes::EXTREME_INITIAL_INDEX));
    let start = init.unwrap_or(identity);
    #[allow(clippy::eq_op)]
    let is_nan = |v: T| v != v;
    let mut expect = vec![(T::from_bits(0), 0u32); n];
    let mut best = start;
    for (p, restart) in shape.walk(&starts) {
        if restart {
            best = start;
        }
        let before = best;
        let wins =
            best.1 == u32::MAX || !is_nan(best.0) && (is_nan(x[p]) || if max { x[p] > best.0 } else { x[p] < best.0 });
        if wins {
            best = (x[p], p as u32);
        }
        expect[p] = shape.output(before, best);
    }
    let mut scan = shape.scan();
    if let Some((value, _)) = init {
        scan = scan.with_init(recipes::cumulative_extreme_init(T::DTYPE, scanrt::InitValue::of(value)).unwrap());
    }
    let xv = Array::new(ctx, stream, &x, shape.offset);
    let vv = Array::new(ctx, stream, &vec![T::from_bits(7); n], shape.offset);
    let iv = Array::new(ctx, stream, &vec![7u32; n], 0);
    run(ctx, stream, op, &[xv.addr], &[vv.addr, iv.addr], &shape, &starts, &scan)?;
    let values = vv.read::<T>(stream, n)?;
    let indices = iv.read::<u32>(stream, n)?;
    exactly_equal(
        &format!("{:?} {shape:?} max={max} init={init:?}", T::DTYPE),
        values.into_iter().map(|v| v.to_bits()).zip(indices),
        &expect.iter().map(|&(v, i)| (v.to_bits(), i)).collect::<Vec<_>>(),
    )
}

/// logcumsumexp of `dtype` arrays (f32, f64; f16 and bf16 with f32 states), with values
/// near the type's maximum now and then and, in one case of eight, infinities and NaN:
/// -inf adds nothing, +inf makes the rest of its segment +inf, NaN makes it NaN.
pub fn check_logcumsumexp(
    ctx: &Context,
    stream: &Stream,
    op: &scanrt::Operator,
    dtype: DType,
    rng: &mut Rng,
    shape: Shape,
) -> Result<(), String> {
    let n = shape.n;
    // Values of the array type, as f64 (exact), and results rounded to it.
    let round = |v: f64| match dtype {
        DType::F16 => half::f16::from_f64(v).to_f64(),
        DType::BF16 => half::bf16::from_f64(v).to_f64(),
        DType::F32 => v as f32 as f64,
        _ => v,
    };
    // Half the largest value for 2-byte types, whose results must not round past it.
    let near_max = match dtype {
        DType::F16 => 32768.0,
        DType::BF16 => round(f32::MAX as f64 * 0.5),
        DType::F32 => f32::MAX as f64 * 0.99,
        _ => f64::MAX * 0.99,
    };
    let (huge, specials) = (rng.below(2) == 0, rng.below(8) == 0);
    let x: Vec<f64> = (0..n)
        .map(|_| match rng.below(400) {
            0..=39 if huge => near_max,
            40..=47 if specials => f64::NEG_INFINITY,
            48..=49 if specials => f64::INFINITY,
            50 if specials => f64::NAN,
            _ => round((rng.below(4001) as f64 - 2000.0) / 100.0),
        })
        .collect();
    let starts = shape.starts(rng);
    // Now and then an initial value: one more term before every segment.
    let init = (rng.below(2) == 0).then(|| (rng.below(2001) as f64 - 1000.0) / 64.0); // exact in f32
    let start = init.map_or((f64::NEG_INFINITY, 0f64), |v| (v, 1.0));
    let mut expect = vec![0f64; n];
    let (mut m, mut s) = start;
    for (p, restart) in shape.walk(&starts) {
        if restart {
            (m, s) = start;
        }
        let before = m + s.ln();
        let v = x[p];
        if v.is_nan() || m.is_nan() {
            m = f64::NAN;
        } else if v > m {
            s = s * (m - v).exp() + 1.0;
            m = v;
        } else if v == m {
            s += 1.0; // infinities included
        } else {
            s += (v - m).exp();
        }
        expect[p] = shape.output(before, m + s.ln());
    }
    let mut scan = shape.scan();
    if let Some(v) = init {
        scan = scan.with_init(recipes::logcumsumexp_init(dtype, v).unwrap());
    }
    let got: Vec<f64> = match dtype {
        DType::F16 => {
            let x: Vec<half::f16> = x.iter().map(|&v| half::f16::from_f64(v)).collect();
            let y = scan_to_one_array(ctx, stream, op, &shape, &starts, &scan, &[&x], false)?;
            y.into_iter().map(f64::from).collect()
        }
        DType::BF16 => {
            let x: Vec<half::bf16> = x.iter().map(|&v| half::bf16::from_f64(v)).collect();
            let y = scan_to_one_array(ctx, stream, op, &shape, &starts, &scan, &[&x], false)?;
            y.into_iter().map(f64::from).collect()
        }
        DType::F32 => {
            let x: Vec<f32> = x.iter().map(|&v| v as f32).collect();
            let y = scan_to_one_array(ctx, stream, op, &shape, &starts, &scan, &[&x], false)?;
            y.into_iter().map(f64::from).collect()
        }
        _ => scan_to_one_array(ctx, stream, op, &shape, &starts, &scan, &[&x], false)?,
    };
    // f32 states take the hardware's approximate exp2 and log2; 2-byte results round once
    // (half an ulp: 2^-11 and 2^-8 of the value).
    let tolerance = match dtype {
        DType::F16 => 1e-3,
        DType::BF16 => 8e-3,
        DType::F32 => 4e-5,
        _ => 1e-10,
    };
    for p in 0..n {
        let (g, e) = (got[p], expect[p]);
        let agree = if e.is_finite() {
            (g - e).abs() <= tolerance * e.abs().max(1.0)
        } else {
            g == e || g.is_nan() && e.is_nan()
        };
        if !agree {
            return Err(format!("{dtype:?} {shape:?}: y[{p}] = {g} expected {e}"));
        }
    }
    Ok(())
}
