//! User-defined operators along an axis of strided views (`Operator::scan_arrays_along`)
//! against sequential loops, shared by the host and GPU suites: an f64 linear recurrence
//! (two inputs, a 16-byte state; exact steps, compared bit for bit) with carries per
//! sequence (one carry in for all or one each, a total each), and a running f32 maximum
//! with its index (two outputs; the index is the element's index along the axis), in
//! every layout of the built-in strided sweep, both directions, inclusive and exclusive,
//! and the f64 recurrence's adjoint (a 32-byte state).
//! Memory the output views do not reach must keep its bytes.

use scanrt::{recipes, ArrayView, Buffer, CarryViews, Context, DType, Direction, OperatorScan, Stream};

use super::select::{download_bits, upload_bits};
use super::strided::{layouts, offsets, sequences, Layout};
use super::{Rng, Tally};

/// Which carries a recurrence case passes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Carried {
    None,
    /// One carry in for every sequence, a total each.
    Shared,
    /// One carry in and one total per sequence.
    PerSequence,
}

/// Memory for a view of `layout` with `strides`: its element offsets, the lowest, the span.
struct Memory {
    offsets: Vec<i64>,
    low: i64,
    span: usize,
}

impl Memory {
    fn of(layout: &Layout, strides: &[i64]) -> Memory {
        let (offsets, low, span) = offsets(&layout.shape, strides);
        Memory {
            offsets,
            low,
            span: span.max(1),
        }
    }
    /// Where logical element k lies in the buffer.
    fn at(&self, k: usize) -> usize {
        (self.offsets[k] - self.low) as usize
    }
    /// A view of `buf` (holding the span) in `layout` with `strides`.
    fn view(&self, buf: &Buffer, dtype: DType, layout: &Layout, strides: &[i64]) -> scanrt::Result<ArrayView<'static>> {
        // SAFETY: every element the strides reach lies in the live buffer: the base is the
        // lowest offset's distance before the buffer's start.
        unsafe {
            ArrayView::strided(
                (buf.addr() as i64 - self.low * dtype.size() as i64) as u64,
                dtype,
                &layout.shape,
                strides,
            )
        }
    }
}

/// Exact f64 data for the recurrence recipes: coefficients of +-1 and small integer
/// terms over the inputs' span, and a sentinel over the output's (steps stay exact).
fn exact_pair(rng: &mut Rng, in_span: usize, out_span: usize) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let coefficients: Vec<f64> = (0..in_span)
        .map(|_| if rng.below(2) == 0 { 1.0 } else { -1.0 })
        .collect();
    let terms: Vec<f64> = (0..in_span).map(|_| rng.below(17) as f64 - 8.0).collect();
    let sentinel: Vec<f64> = (0..out_span).map(|_| rng.below(1000) as f64 + 0.5).collect();
    (coefficients, terms, sentinel)
}

/// `got` and `want` bit for bit, or where `what` first differs.
fn bitwise_equal(what: &str, got: &[f64], want: &[f64]) -> Result<(), String> {
    match (0..want.len()).find(|&i| got[i].to_bits() != want[i].to_bits()) {
        Some(i) => Err(format!(
            "{what} at offset {i} of {}: got {}, want {}",
            want.len(),
            got[i],
            want[i]
        )),
        None => Ok(()),
    }
}

/// An f64 recurrence h = a h + b along `layout`'s axis with `carried` carries.
fn recurrence_case(
    ctx: &Context,
    stream: &Stream,
    rng: &mut Rng,
    layout: &Layout,
    scan: &OperatorScan,
    carried: Carried,
) -> Result<(), String> {
    let e = |e: scanrt::Error| e.to_string();
    let op = ctx
        .create_operator(recipes::linear_recurrence(DType::F64).unwrap())
        .map_err(e)?;
    let (inm, outm) = (Memory::of(layout, &layout.input), Memory::of(layout, &layout.output));
    let (a, b, sentinel) = exact_pair(rng, inm.span, outm.span);
    let seqs = sequences(&layout.shape, layout.axis);
    let states: Vec<[f64; 2]> = (0..seqs.len().max(1))
        .map(|_| [if rng.below(2) == 0 { 1.0 } else { -1.0 }, rng.below(50) as f64])
        .collect();
    let (a_buf, b_buf) = (
        Buffer::from_slice(ctx, stream, &a).map_err(e)?,
        Buffer::from_slice(ctx, stream, &b).map_err(e)?,
    );
    let h_buf = Buffer::from_slice(ctx, stream, &sentinel).map_err(e)?;
    let bits: Vec<u64> = states.iter().flatten().map(|v| v.to_bits()).collect();
    let carry_in_buf = upload_bits(ctx, stream, DType::U64, &bits).map_err(e)?;
    let carry_out_buf = Buffer::new(ctx, DType::U64, 2 * seqs.len().max(1) as u64).map_err(e)?;
    let in_states = if carried == Carried::PerSequence { seqs.len() } else { 1 };
    // SAFETY: both carry buffers hold at least these states.
    let (carry_in, carry_out) = unsafe {
        (
            ArrayView::contiguous(carry_in_buf.addr(), DType::U8, &[16 * in_states as u64]).map_err(e)?,
            ArrayView::contiguous(carry_out_buf.addr(), DType::U8, &[16 * seqs.len() as u64]).map_err(e)?,
        )
    };
    let carries = CarryViews {
        carry_in: (carried != Carried::None).then_some(&carry_in),
        carry_out: (carried != Carried::None).then_some(&carry_out),
    };
    let inputs = [
        inm.view(&a_buf, DType::F64, layout, &layout.input).map_err(e)?,
        inm.view(&b_buf, DType::F64, layout, &layout.input).map_err(e)?,
    ];
    let outputs = [outm.view(&h_buf, DType::F64, layout, &layout.output).map_err(e)?];
    op.scan_arrays_along(stream, &inputs, &outputs, layout.axis as isize, scan, &carries)
        .map_err(e)?;
    let got: Vec<f64> = h_buf.download(stream, outm.span).map_err(e)?;
    let totals: Vec<f64> = download_bits(&carry_out_buf, stream, 2 * seqs.len().max(1))
        .map_err(e)?
        .into_iter()
        .map(f64::from_bits)
        .collect();
    let mut want = sentinel.clone();
    let backward = scan.direction == Direction::Backward;
    for (s, seq) in seqs.iter().enumerate() {
        let [mut big_a, mut big_b] = match carried {
            Carried::None => [1.0, 0.0],
            Carried::Shared => states[0],
            Carried::PerSequence => states[s],
        };
        for k in 0..seq.len() {
            let element = seq[if backward { seq.len() - 1 - k } else { k }];
            let (x, y) = (a[inm.at(element)], b[inm.at(element)]);
            let before = big_b;
            (big_a, big_b) = (big_a * x, x * big_b + y);
            want[outm.at(element)] = if scan.inclusive { big_b } else { before };
        }
        if carried != Carried::None && (totals[2 * s] != big_a || totals[2 * s + 1] != big_b) {
            return Err(format!(
                "sequence {s}: total ({}, {}), want ({big_a}, {big_b})",
                totals[2 * s],
                totals[2 * s + 1]
            ));
        }
    }
    bitwise_equal("h", &got, &want)
}

/// A running f32 maximum and its index along `layout`'s axis (ties keep the first in
/// traversal order).
fn extreme_case(
    ctx: &Context,
    stream: &Stream,
    rng: &mut Rng,
    layout: &Layout,
    scan: &OperatorScan,
) -> Result<(), String> {
    let e = |e: scanrt::Error| e.to_string();
    let op = ctx
        .create_operator(recipes::cumulative_extreme(DType::F32, true).unwrap())
        .map_err(e)?;
    let (inm, outm) = (Memory::of(layout, &layout.input), Memory::of(layout, &layout.output));
    let x: Vec<f32> = (0..inm.span).map(|_| rng.below(20) as f32).collect();
    let x_buf = Buffer::from_slice(ctx, stream, &x).map_err(e)?;
    let v_buf = Buffer::from_slice(ctx, stream, &vec![-7.0f32; outm.span]).map_err(e)?;
    let i_buf = Buffer::from_slice(ctx, stream, &vec![7u32; outm.span]).map_err(e)?;
    let outputs = [
        outm.view(&v_buf, DType::F32, layout, &layout.output).map_err(e)?,
        outm.view(&i_buf, DType::U32, layout, &layout.output).map_err(e)?,
    ];
    let input = [inm.view(&x_buf, DType::F32, layout, &layout.input).map_err(e)?];
    op.scan_arrays_along(
        stream,
        &input,
        &outputs,
        layout.axis as isize,
        scan,
        &CarryViews::default(),
    )
    .map_err(e)?;
    let (got_v, got_i): (Vec<f32>, Vec<u32>) = (
        v_buf.download(stream, outm.span).map_err(e)?,
        i_buf.download(stream, outm.span).map_err(e)?,
    );
    let (mut want_v, mut want_i) = (vec![-7.0f32; outm.span], vec![7u32; outm.span]);
    let backward = scan.direction == Direction::Backward;
    for seq in sequences(&layout.shape, layout.axis) {
        let mut best: Option<(f32, u32)> = None;
        for k in 0..seq.len() {
            let i = if backward { seq.len() - 1 - k } else { k };
            let before = best;
            let v = x[inm.at(seq[i])];
            if best.is_none_or(|(b, _)| v > b) {
                best = Some((v, i as u32));
            }
            let result = if scan.inclusive { best } else { before };
            // An exclusive scan's first result is the identity: -inf and index u32::MAX.
            let (v, index) = result.unwrap_or((f32::NEG_INFINITY, u32::MAX));
            (want_v[outm.at(seq[i])], want_i[outm.at(seq[i])]) = (v, index);
        }
    }
    match (0..outm.span).find(|&i| got_v[i].to_bits() != want_v[i].to_bits() || got_i[i] != want_i[i]) {
        Some(i) => Err(format!(
            "offset {i}: got ({}, {}), want ({}, {})",
            got_v[i], got_i[i], want_v[i], want_i[i]
        )),
        None => Ok(()),
    }
}

/// The f64 recurrence's adjoint (a 32-byte state: tiles of 2 rows per thread) along
/// `layout`'s axis: lam_t = g_t + a_s lam_s, s the element before t in the scan's order
/// (exact: coefficients of +-1, small integer g).
fn adjoint_case(
    ctx: &Context,
    stream: &Stream,
    rng: &mut Rng,
    layout: &Layout,
    scan: &OperatorScan,
) -> Result<(), String> {
    let e = |e: scanrt::Error| e.to_string();
    let op = ctx
        .create_operator(recipes::linear_recurrence_adjoint(DType::F64).unwrap())
        .map_err(e)?;
    let (inm, outm) = (Memory::of(layout, &layout.input), Memory::of(layout, &layout.output));
    let (a, g, sentinel) = exact_pair(rng, inm.span, outm.span);
    let (a_buf, g_buf) = (
        Buffer::from_slice(ctx, stream, &a).map_err(e)?,
        Buffer::from_slice(ctx, stream, &g).map_err(e)?,
    );
    let lam_buf = Buffer::from_slice(ctx, stream, &sentinel).map_err(e)?;
    let inputs = [
        inm.view(&a_buf, DType::F64, layout, &layout.input).map_err(e)?,
        inm.view(&g_buf, DType::F64, layout, &layout.input).map_err(e)?,
    ];
    let outputs = [outm.view(&lam_buf, DType::F64, layout, &layout.output).map_err(e)?];
    op.scan_arrays_along(
        stream,
        &inputs,
        &outputs,
        layout.axis as isize,
        scan,
        &CarryViews::default(),
    )
    .map_err(e)?;
    let got: Vec<f64> = lam_buf.download(stream, outm.span).map_err(e)?;
    let mut want = sentinel;
    let backward = scan.direction == Direction::Backward;
    for seq in sequences(&layout.shape, layout.axis) {
        // What the element before passes on (a_s lam_s), and its lam (an exclusive
        // scan's result; 0 before the first).
        let (mut passed, mut lam) = (0.0, 0.0);
        for k in 0..seq.len() {
            let element = seq[if backward { seq.len() - 1 - k } else { k }];
            let before = lam;
            lam = g[inm.at(element)] + passed;
            passed = a[inm.at(element)] * lam;
            want[outm.at(element)] = if scan.inclusive { lam } else { before };
        }
    }
    bitwise_equal("adjoint lam", &got, &want)
}

/// Every layout at each `(batches, len, columns)` of `shapes`, both directions, inclusive
/// and exclusive, each carry form for the recurrence; returns the failures.
pub fn sweep(ctx: &Context, stream: &Stream, seed: u64, shapes: &[(u64, u64, u64)]) -> Vec<String> {
    let mut rng = Rng(seed);
    let mut tally = Tally::default();
    for &(batches, len, columns) in shapes {
        for layout in layouts(&mut rng, batches, len, columns) {
            let layout = Layout {
                in_place: false,
                ..layout
            };
            for direction in [Direction::Forward, Direction::Backward] {
                for inclusive in [true, false] {
                    let scan = OperatorScan {
                        inclusive,
                        direction,
                        deterministic: rng.below(4) == 0,
                        ..OperatorScan::default()
                    };
                    let carried = [Carried::None, Carried::Shared, Carried::PerSequence][rng.below(3) as usize];
                    let describe = || format!("{layout:?} {scan:?} {carried:?}");
                    let result = recurrence_case(ctx, stream, &mut rng, &layout, &scan, carried);
                    tally.record(result, describe);
                    let result = extreme_case(ctx, stream, &mut rng, &layout, &scan);
                    tally.record(result, || format!("extreme {layout:?} {scan:?}"));
                    let result = adjoint_case(ctx, stream, &mut rng, &layout, &scan);
                    tally.record(result, || format!("adjoint {layout:?} {scan:?}"));
                }
            }
        }
    }
    tally.into_failures("operators along an axis", seed)
}
