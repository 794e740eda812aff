//! The examples' operators and a non-commutative matrix product against sequential
//! loops written here.

use scanrt::{Context, OperatorDesc, Stream};

use super::*;
use crate::common::Rng;

/// A 16-byte state that does not commute: 2x2 matrices of u32 (mod 2^32), combined as
/// `then * first`, read and written as plain arrays of states.
pub fn matrix_product() -> OperatorDesc {
    let source = "struct M2 { uint32_t a, b, c, d; };  // [[a, b], [c, d]]\n\
__device__ M2 mul(M2 first, M2 then) {  // then * first\n\
    return M2{then.a * first.a + then.b * first.c, then.a * first.b + then.b * first.d,\n\
              then.c * first.a + then.d * first.c, then.c * first.b + then.d * first.d};\n\
}\n";
    let identity: Vec<u8> = [1u32, 0, 0, 1].iter().flat_map(|v| v.to_ne_bytes()).collect();
    OperatorDesc::new("matrix_product", source, "M2", 16, 4, "mul", &identity)
}

fn mat_mul(then: [u32; 4], first: [u32; 4]) -> [u32; 4] {
    let m = |x: u32, y: u32| x.wrapping_mul(y);
    [
        m(then[0], first[0]).wrapping_add(m(then[1], first[2])),
        m(then[0], first[1]).wrapping_add(m(then[1], first[3])),
        m(then[2], first[0]).wrapping_add(m(then[3], first[2])),
        m(then[2], first[1]).wrapping_add(m(then[3], first[3])),
    ]
}

/// Random matrices (order matters) through the wide-state path, exact.
pub fn check_matrix_product(
    ctx: &Context,
    stream: &Stream,
    op: &scanrt::Operator,
    rng: &mut Rng,
    shape: Shape,
    algorithm: scanrt::Algorithm,
) -> Result<(), String> {
    let n = shape.n;
    let mats: Vec<[u32; 4]> = (0..n).map(|_| [0, 1, 2, 3].map(|_| rng.next_u64() as u32)).collect();
    let starts = shape.starts(rng);
    let mut expect = vec![[0u32; 4]; n];
    let mut acc = [1, 0, 0, 1];
    for (p, restart) in shape.walk(&starts) {
        if restart {
            acc = [1, 0, 0, 1];
        }
        let before = acc;
        acc = mat_mul(mats[p], acc);
        expect[p] = shape.output(before, acc);
    }
    let flat: Vec<u32> = mats.iter().flatten().copied().collect();
    // States travel as their bytes; a misaligned offset is whole states (16 bytes).
    let iv = Array::new(ctx, stream, &flat, 4 * shape.offset);
    let ov = Array::new(ctx, stream, &vec![0u32; 4 * n], 0);
    run(
        ctx,
        stream,
        op,
        &[iv.addr],
        &[ov.addr],
        &shape,
        &starts,
        &shape.scan().with_algorithm(algorithm),
    )?;
    let got = ov.read::<u32>(stream, 4 * n)?;
    exactly_equal(
        &format!("{shape:?} {algorithm:?}"),
        got.chunks_exact(4).map(|m| [m[0], m[1], m[2], m[3]]),
        &expect,
    )
}

/// The line-of-sight example: visible flags and horizons against a sequential sweep
/// (ties, points at distance 0, segments restarting the observer).
pub fn check_line_of_sight(
    ctx: &Context,
    stream: &Stream,
    op: &scanrt::Operator,
    rng: &mut Rng,
    shape: Shape,
) -> Result<(), String> {
    // Its outputs are defined for inclusive scans (the horizon before each point is part
    // of the state).
    let shape = Shape {
        exclusive: false,
        ..shape
    };
    let n = shape.n;
    let rise: Vec<f32> = (0..n).map(|_| rng.below(201) as f32 - 100.0).collect();
    let distance: Vec<f32> = (0..n).map(|_| rng.below(20) as f32).collect();
    let starts = shape.starts(rng);
    let mut expect = vec![(0u32, 0f32); n];
    let mut horizon = f32::NEG_INFINITY;
    for (p, restart) in shape.walk(&starts) {
        if restart {
            horizon = f32::NEG_INFINITY;
        }
        let angle = if distance[p] > 0.0 {
            rise[p] / distance[p]
        } else {
            f32::NEG_INFINITY
        };
        expect[p] = (u32::from(angle >= horizon), horizon);
        horizon = horizon.max(angle);
    }
    let (rv, dv) = (
        Array::new(ctx, stream, &rise, shape.offset),
        Array::new(ctx, stream, &distance, shape.offset),
    );
    let (vv, hv) = (
        Array::new(ctx, stream, &vec![7u32; n], shape.offset),
        Array::new(ctx, stream, &vec![7f32; n], 0),
    );
    run(
        ctx,
        stream,
        op,
        &[rv.addr, dv.addr],
        &[vv.addr, hv.addr],
        &shape,
        &starts,
        &shape.scan(),
    )?;
    let (visible, horizons) = (vv.read::<u32>(stream, n)?, hv.read::<f32>(stream, n)?);
    exactly_equal(&format!("{shape:?}"), visible.into_iter().zip(horizons), &expect)
}

/// The multi-precision addition example's carry scan against the sequential carry loop
/// along the scan's order (each segment a number of its own): each limb's sum with its
/// carry in, and its carry out; exclusive scans give the limb before's (zeros first).
/// Limbs are often all ones or sum to all ones, so that carries travel far.
pub fn check_carry_chain(
    ctx: &Context,
    stream: &Stream,
    op: &scanrt::Operator,
    rng: &mut Rng,
    shape: Shape,
) -> Result<(), String> {
    let n = shape.n;
    let limb = |rng: &mut Rng| match rng.below(4) {
        0 => u32::MAX,
        1 => 0,
        _ => rng.next_u64() as u32,
    };
    let a: Vec<u32> = (0..n).map(|_| limb(rng)).collect();
    let b: Vec<u32> = (0..n)
        .map(|p| if rng.below(2) == 0 { u32::MAX - a[p] } else { limb(rng) })
        .collect();
    let starts = shape.starts(rng);
    let mut expect = vec![(0u32, 0u32); n];
    let (mut carry, mut last) = (false, (0u32, 0u32));
    for (p, restart) in shape.walk(&starts) {
        if restart {
            (carry, last) = (false, (0, 0));
        }
        let (s, c1) = a[p].overflowing_add(b[p]);
        let (s, c2) = s.overflowing_add(u32::from(carry));
        carry = c1 || c2;
        let digits = (s, u32::from(carry));
        expect[p] = shape.output(last, digits);
        last = digits;
    }
    let (av, bv) = (
        Array::new(ctx, stream, &a, shape.offset),
        Array::new(ctx, stream, &b, shape.offset),
    );
    let (sv, cv) = (
        Array::new(ctx, stream, &vec![7u32; n], shape.offset),
        Array::new(ctx, stream, &vec![7u32; n], 0),
    );
    run(
        ctx,
        stream,
        op,
        &[av.addr, bv.addr],
        &[sv.addr, cv.addr],
        &shape,
        &starts,
        &shape.scan(),
    )?;
    let (sums, carries) = (sv.read::<u32>(stream, n)?, cv.read::<u32>(stream, n)?);
    exactly_equal(&format!("{shape:?}"), sums.into_iter().zip(carries), &expect)
}

/// The lexer example's composition of transition functions against the sequential lexer
/// along the scan's order (each segment a text of its own, lexed from blank): the state
/// after each character, or before it for exclusive scans. Texts of the characters that
/// matter (quotes, backslashes, letters, digits, blanks, punctuation).
pub fn check_lexer(
    ctx: &Context,
    stream: &Stream,
    op: &scanrt::Operator,
    rng: &mut Rng,
    shape: Shape,
) -> Result<(), String> {
    let n = shape.n;
    let alphabet = b"ab_Z09\"\\ \n(;";
    let text: Vec<u8> = (0..n)
        .map(|_| alphabet[rng.below(alphabet.len() as u64) as usize])
        .collect();
    let starts = shape.starts(rng);
    let mut expect = vec![0u32; n];
    let mut state = 0u8;
    for (p, restart) in shape.walk(&starts) {
        if restart {
            state = 0;
        }
        let before = u32::from(state);
        state = examples::lex_step(state, examples::lex_class(text[p]));
        expect[p] = shape.output(before, u32::from(state));
    }
    let iv = Array::new(ctx, stream, &text, shape.offset);
    let ov = Array::new(ctx, stream, &vec![9u32; n], shape.offset);
    run(ctx, stream, op, &[iv.addr], &[ov.addr], &shape, &starts, &shape.scan())?;
    let got = ov.read::<u32>(stream, n)?;
    match (0..n).find(|&p| got[p] != expect[p]) {
        Some(p) => Err(format!(
            "{shape:?}: character {p}: state {} expected {}",
            got[p], expect[p]
        )),
        None => Ok(()),
    }
}

/// The range-histogram example's prefix histograms against counting along the scan's
/// order (each segment from empty): values in and out of [0, 1), NaN among them; the
/// outputs are whole 32-byte states.
pub fn check_range_histogram(
    ctx: &Context,
    stream: &Stream,
    op: &scanrt::Operator,
    rng: &mut Rng,
    shape: Shape,
) -> Result<(), String> {
    const BINS: usize = examples::HISTOGRAM_BINS;
    let n = shape.n;
    let values: Vec<f32> = (0..n)
        .map(|_| match rng.below(20) {
            0 => f32::NAN,
            1 => -0.5,
            2 => 1.5,
            _ => rng.below(1000) as f32 / 1000.0,
        })
        .collect();
    let starts = shape.starts(rng);
    let mut expect = vec![[0u32; BINS]; n];
    let mut counts = [0u32; BINS];
    for (p, restart) in shape.walk(&starts) {
        if restart {
            counts = [0; BINS];
        }
        let before = counts;
        counts[examples::histogram_bin(values[p])] += 1;
        expect[p] = shape.output(before, counts);
    }
    let iv = Array::new(ctx, stream, &values, shape.offset);
    // States travel as their bytes; a misaligned offset is whole states.
    let ov = Array::new(ctx, stream, &vec![7u32; BINS * n], BINS as u64 * shape.offset);
    run(ctx, stream, op, &[iv.addr], &[ov.addr], &shape, &starts, &shape.scan())?;
    let got = ov.read::<u32>(stream, BINS * n)?;
    match (0..n).find(|&p| got[BINS * p..BINS * (p + 1)] != expect[p]) {
        Some(p) => Err(format!(
            "{shape:?}: element {p}: {:?} expected {:?}",
            &got[BINS * p..BINS * (p + 1)],
            expect[p]
        )),
        None => Ok(()),
    }
}

/// The Fibonacci example's operator on random matrices: element (0, 1) of each running
/// product `first * then`, exact.
pub fn check_fibonacci_matrix(
    ctx: &Context,
    stream: &Stream,
    op: &scanrt::Operator,
    rng: &mut Rng,
    shape: Shape,
) -> Result<(), String> {
    let n = shape.n;
    let mats: Vec<[u32; 4]> = (0..n).map(|_| [0, 1, 2, 3].map(|_| rng.next_u64() as u32)).collect();
    let starts = shape.starts(rng);
    let mut expect = vec![0u32; n];
    let mut acc = [1, 0, 0, 1];
    for (p, restart) in shape.walk(&starts) {
        if restart {
            acc = [1, 0, 0, 1];
        }
        let before = acc[1];
        acc = examples::mat_mul(acc, mats[p]);
        expect[p] = shape.output(before, acc[1]);
    }
    let flat: Vec<u32> = mats.iter().flatten().copied().collect();
    let iv = Array::new(ctx, stream, &flat, 4 * shape.offset);
    let ov = Array::new(ctx, stream, &vec![7u32; n], shape.offset);
    run(ctx, stream, op, &[iv.addr], &[ov.addr], &shape, &starts, &shape.scan())?;
    let got = ov.read::<u32>(stream, n)?;
    match (0..n).find(|&p| got[p] != expect[p]) {
        Some(p) => Err(format!("{shape:?}: element {p} = {} expected {}", got[p], expect[p])),
        None => Ok(()),
    }
}

/// The polynomial example: `rows` polynomials of `terms` coefficients, each at its own x,
/// as a backward batched recurrence (f64), against Horner's loop.
pub fn check_polynomials(
    ctx: &Context,
    stream: &Stream,
    op: &scanrt::Operator,
    rng: &mut Rng,
    rows: usize,
    terms: usize,
) -> Result<(), String> {
    let n = rows * terms;
    let x: Vec<f64> = (0..rows).map(|_| (rng.below(2001) as f64 - 1000.0) / 1000.0).collect();
    let c: Vec<f64> = (0..n).map(|_| (rng.below(2001) as f64 - 1000.0) / 1000.0).collect();
    let a: Vec<f64> = x.iter().flat_map(|&x| std::iter::repeat_n(x, terms)).collect();
    let (av, cv) = (Array::new(ctx, stream, &a, 0), Array::new(ctx, stream, &c, 0));
    let hv = Array::new(ctx, stream, &vec![f64::NAN; n], 0);
    let shape = Shape {
        n,
        backward: true,
        exclusive: false,
        segments: 2,
        row: terms as u64,
        offset: 0,
        deterministic: false,
    };
    let starts = shape.starts(rng);
    run(
        ctx,
        stream,
        op,
        &[av.addr, cv.addr],
        &[hv.addr],
        &shape,
        &starts,
        &shape.scan(),
    )?;
    let h = hv.read::<f64>(stream, n)?;
    for r in 0..rows {
        let horner = c[r * terms..(r + 1) * terms]
            .iter()
            .rev()
            .fold(0.0, |p, &c| c + x[r] * p);
        if !((h[r * terms] - horner).abs() <= 1e-11 * (1.0 + horner.abs())) {
            return Err(format!(
                "{rows} x {terms}: p_{r}({}) = {} expected {horner}",
                x[r],
                h[r * terms]
            ));
        }
    }
    Ok(())
}
