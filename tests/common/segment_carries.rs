//! Carries per segment (segments by offsets, `Context::scan_array_segmented_carried`,
//! `Operator::scan_arrays_carried`) against sequential loops, shared by the host and GPU
//! suites: u32 sums, i64 maxima and f64 sums (exact values), and an f64 linear
//! recurrence (a 16-byte user-defined state); both directions, inclusive and exclusive;
//! carry in only, carry out only, both, and a scalar initial value beside a carry out;
//! every offset type; random segment lengths, one element each, one segment, segments
//! of a tile's length, empty segments (repeated offsets, offsets at and past the end),
//! and elements before the first offset and after the last.

use scanrt::{
    recipes, ArrayView, Buffer, CarryViews, Context, DType, Direction, InitValue, Op, OperatorScan, ScanDesc, Segments,
    Stream,
};

use super::select::{download_bits, upload_bits};
use super::{Rng, SegmentPattern, TestInput, TestOutput};

/// Which carries a case passes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    InOnly,
    OutOnly,
    Both,
    /// The descriptor's initial value for every segment, and a carry out.
    ScalarInitOut,
}

const FORMS: [Form; 4] = [Form::InOnly, Form::OutOnly, Form::Both, Form::ScalarInitOut];
const OFFSET_TYPES: [DType; 4] = [DType::U32, DType::I32, DType::U64, DType::I64];

/// Non-decreasing offsets of `n` elements with segments starting where `pattern` says:
/// now and then a first offset above 0 (elements before it), repeated offsets (empty
/// segments), a last offset below n (elements after it) or offsets at and past n.
pub fn random_offsets(rng: &mut Rng, pattern: SegmentPattern, n: usize) -> Vec<u64> {
    let starts = super::segment_starts(rng, pattern, n);
    let first = if n > 0 && rng.below(4) == 0 {
        rng.below(n as u64)
    } else {
        0
    };
    let mut offsets = vec![first];
    for (p, &s) in starts.iter().enumerate() {
        if s && p as u64 > first {
            offsets.push(p as u64);
            if rng.below(8) == 0 {
                offsets.push(p as u64);
            }
        }
    }
    let last = *offsets.last().unwrap();
    match rng.below(4) {
        0 if (last as usize) < n => {} // the last segment is left out
        1 => offsets.extend([n as u64, n as u64, n as u64 + 1 + rng.below(100)]),
        _ => offsets.push(n as u64),
    }
    offsets
}

/// The segments' element ranges (clipped to n) and the elements no segment holds.
fn ranges(offsets: &[u64], n: usize) -> (Vec<(usize, usize)>, Vec<(usize, usize)>) {
    let clip = |o: u64| o.min(n as u64) as usize;
    let segments: Vec<(usize, usize)> = offsets.windows(2).map(|w| (clip(w[0]), clip(w[1]))).collect();
    let outside = match (offsets.first(), offsets.last()) {
        (Some(&f), Some(&l)) => vec![(0, clip(f)), (clip(l), n)],
        _ => vec![(0, n)],
    };
    (segments, outside)
}

/// Scans element range `r` of `x` into `out` from `init` as a plain loop; returns the total.
fn scan_range<T: Copy>(
    x: &[T],
    out: &mut [T],
    r: (usize, usize),
    init: T,
    inclusive: bool,
    backward: bool,
    combine: impl Fn(T, T) -> T,
) -> T {
    let mut running = init;
    for k in 0..r.1.saturating_sub(r.0) {
        let p = if backward { r.1 - 1 - k } else { r.0 + k };
        let next = combine(running, x[p]);
        out[p] = if inclusive { next } else { running };
        running = next;
    }
    running
}

/// A view of `len` elements of `dtype` at byte `at` of `buf`.
fn view(buf: &Buffer, at: u64, dtype: DType, len: u64) -> scanrt::Result<ArrayView<'static>> {
    // SAFETY: callers stay inside live buffers of the test.
    unsafe { ArrayView::contiguous(buf.addr() + at, dtype, &[len]) }
}

/// One built-in scan of `n` random `T` with carries per segment as `form` says.
#[allow(clippy::too_many_arguments)]
fn builtin_case<T: TestInput + TestOutput>(
    ctx: &Context,
    stream: &Stream,
    rng: &mut Rng,
    op: Op,
    n: usize,
    offsets: &[u64],
    offset_type: DType,
    desc: ScanDesc,
    form: Form,
) -> Result<(), String> {
    let e = |e: scanrt::Error| e.to_string();
    let input: Vec<T> = super::random_vec(rng, op, n);
    let segments = offsets.len().saturating_sub(1);
    let inits: Vec<T> = (0..segments).map(|_| T::random_init(rng, op)).collect();
    let sentinel = T::random_init(rng, op);
    let scalar = T::random_init(rng, op);
    let desc = ScanDesc {
        segments: Segments::Offsets {
            dtype: offset_type,
            count: offsets.len() as u64,
        },
        init: (form == Form::ScalarInitOut).then(|| InitValue::of(scalar)),
        ..desc
    };
    let (has_in, has_out) = (form == Form::InOnly || form == Form::Both, form != Form::InOnly);
    let size = T::DTYPE.size() as u64;
    // Carries in, then the carries out and one sentinel past them.
    let mut carries_host = inits.clone();
    carries_host.extend(std::iter::repeat_n(sentinel, segments + 1));
    let carry_buf = Buffer::from_slice(ctx, stream, &carries_host).map_err(e)?;
    let offsets_buf = upload_bits(ctx, stream, offset_type, offsets).map_err(e)?;
    let in_buf = Buffer::from_slice(ctx, stream, &input).map_err(e)?;
    let out_buf = Buffer::from_slice(ctx, stream, &vec![sentinel; n]).map_err(e)?;
    let carry_in = view(&carry_buf, 0, T::DTYPE, segments as u64).map_err(e)?;
    let carry_out = view(&carry_buf, segments as u64 * size, T::DTYPE, segments as u64).map_err(e)?;
    let carries = CarryViews {
        carry_in: has_in.then_some(&carry_in),
        carry_out: has_out.then_some(&carry_out),
    };
    ctx.scan_array_segmented_carried(
        stream,
        &view(&in_buf, 0, T::DTYPE, n as u64).map_err(e)?,
        &view(&offsets_buf, 0, offset_type, offsets.len() as u64).map_err(e)?,
        &view(&out_buf, 0, T::DTYPE, n as u64).map_err(e)?,
        &desc,
        &carries,
    )
    .map_err(e)?;
    let got: Vec<T> = out_buf.download(stream, n).map_err(e)?;
    let got_carries: Vec<T> = carry_buf.download(stream, 2 * segments + 1).map_err(e)?;

    let backward = desc.direction == Direction::Backward;
    let combine = |a: T, b: T| T::combine(op, a, b);
    let scalar_init = if form == Form::ScalarInitOut {
        scalar
    } else {
        T::identity(op)
    };
    let mut want = vec![sentinel; n];
    let mut want_carries = carries_host.clone();
    let (segment_ranges, outside) = ranges(offsets, n);
    for (s, &r) in segment_ranges.iter().enumerate() {
        let init = if has_in { inits[s] } else { scalar_init };
        let total = scan_range(&input, &mut want, r, init, desc.inclusive, backward, combine);
        if has_out {
            want_carries[segments + s] = total;
        }
    }
    for r in outside {
        scan_range(&input, &mut want, r, scalar_init, desc.inclusive, backward, combine);
    }
    if let Some(p) = (0..n).find(|&p| got[p].to_bits() != want[p].to_bits()) {
        return Err(format!("element {p} of {n}: got {:?}, want {:?}", got[p], want[p]));
    }
    if let Some(i) = (0..want_carries.len()).find(|&i| got_carries[i].to_bits() != want_carries[i].to_bits()) {
        return Err(format!(
            "carry slot {i} of {segments} in + {segments} out + sentinel: got {:?}, want {:?}",
            got_carries[i], want_carries[i]
        ));
    }
    Ok(())
}

/// An f64 linear recurrence (16-byte states (A, B): h -> A h + B) of `n` exact steps
/// (a = +-1, b a small integer) with carries per segment as `form` says (the scalar form
/// starts every segment from one state).
#[allow(clippy::too_many_arguments)]
fn recurrence_case(
    ctx: &Context,
    stream: &Stream,
    rng: &mut Rng,
    n: usize,
    offsets: &[u64],
    offset_type: DType,
    scan: OperatorScan,
    form: Form,
) -> Result<(), String> {
    let e = |e: scanrt::Error| e.to_string();
    let op = ctx
        .create_operator(recipes::linear_recurrence(DType::F64).unwrap())
        .map_err(e)?;
    let a: Vec<f64> = (0..n).map(|_| if rng.below(2) == 0 { 1.0 } else { -1.0 }).collect();
    let b: Vec<f64> = (0..n).map(|_| rng.below(17) as f64 - 8.0).collect();
    let segments = offsets.len().saturating_sub(1);
    let state = |rng: &mut Rng| [if rng.below(2) == 0 { 1.0 } else { -1.0 }, rng.below(100) as f64];
    let inits: Vec<[f64; 2]> = (0..segments).map(|_| state(rng)).collect();
    let scalar = state(rng);
    let sentinel = [7.0, 7.0];
    let scan = OperatorScan {
        segments: Segments::Offsets {
            dtype: offset_type,
            count: offsets.len() as u64,
        },
        init: (form == Form::ScalarInitOut).then(|| scalar.iter().flat_map(|v| v.to_ne_bytes()).collect()),
        ..scan
    };
    let (has_in, has_out) = (form == Form::InOnly || form == Form::Both, form != Form::InOnly);
    let mut carries_host = inits.clone();
    carries_host.extend(std::iter::repeat_n(sentinel, segments + 1));
    let bits: Vec<u64> = carries_host.iter().flatten().map(|v| v.to_bits()).collect();
    let carry_buf = upload_bits(ctx, stream, DType::U64, &bits).map_err(e)?;
    let offsets_buf = upload_bits(ctx, stream, offset_type, offsets).map_err(e)?;
    let a_buf = Buffer::from_slice(ctx, stream, &a).map_err(e)?;
    let b_buf = Buffer::from_slice(ctx, stream, &b).map_err(e)?;
    let h_buf = Buffer::from_slice(ctx, stream, &vec![7.0f64; n]).map_err(e)?;
    let states = segments as u64 * 16;
    let carry_in = view(&carry_buf, 0, DType::U8, states).map_err(e)?;
    let carry_out = view(&carry_buf, states, DType::U8, states).map_err(e)?;
    let carries = CarryViews {
        carry_in: has_in.then_some(&carry_in),
        carry_out: has_out.then_some(&carry_out),
    };
    let f64_view = |buf: &Buffer| view(buf, 0, DType::F64, n as u64);
    op.scan_arrays_carried(
        stream,
        &[f64_view(&a_buf).map_err(e)?, f64_view(&b_buf).map_err(e)?],
        &[f64_view(&h_buf).map_err(e)?],
        Some(&view(&offsets_buf, 0, offset_type, offsets.len() as u64).map_err(e)?),
        &scan,
        &carries,
    )
    .map_err(e)?;
    let got: Vec<f64> = h_buf.download(stream, n).map_err(e)?;
    let got_carries: Vec<f64> = download_bits(&carry_buf, stream, bits.len())
        .map_err(e)?
        .into_iter()
        .map(f64::from_bits)
        .collect();

    let backward = scan.direction == Direction::Backward;
    // States as (A, B) pairs, outputs the B of each result.
    let steps: Vec<[f64; 2]> = a.iter().zip(&b).map(|(&a, &b)| [a, b]).collect();
    let compose = |s: [f64; 2], t: [f64; 2]| [s[0] * t[0], t[0] * s[1] + t[1]];
    let identity = [1.0, 0.0];
    let scalar_init = if form == Form::ScalarInitOut { scalar } else { identity };
    let mut want = vec![sentinel; n];
    let mut want_carries = carries_host.clone();
    let (segment_ranges, outside) = ranges(offsets, n);
    for (s, &r) in segment_ranges.iter().enumerate() {
        let init = if has_in { inits[s] } else { scalar_init };
        let total = scan_range(&steps, &mut want, r, init, scan.inclusive, backward, compose);
        if has_out {
            want_carries[segments + s] = total;
        }
    }
    for r in outside {
        scan_range(&steps, &mut want, r, scalar_init, scan.inclusive, backward, compose);
    }
    if let Some(p) = (0..n).find(|&p| got[p].to_bits() != want[p][1].to_bits()) {
        return Err(format!("h[{p}] of {n}: got {}, want {}", got[p], want[p][1]));
    }
    let want_bits: Vec<f64> = want_carries.iter().flatten().copied().collect();
    if let Some(i) = (0..want_bits.len()).find(|&i| got_carries[i].to_bits() != want_bits[i].to_bits()) {
        return Err(format!(
            "carry word {i} ({segments} states in, {segments} out, a sentinel): got {}, want {}",
            got_carries[i], want_bits[i]
        ));
    }
    Ok(())
}

/// The segment patterns of a sweep at `n` elements: random lengths (mean 2, 37 and
/// 5000), one element each, one segment, and segments of `tile` elements from 0 and
/// from `tile - 1` (every tile boundary a segment boundary, or one element off).
fn patterns(tile: u64) -> [SegmentPattern; 7] {
    [
        SegmentPattern::Random { mean_len: 2 },
        SegmentPattern::Random { mean_len: 37 },
        SegmentPattern::Random { mean_len: 5000 },
        SegmentPattern::AllSet,
        SegmentPattern::NoneSet,
        SegmentPattern::Every { len: tile, offset: 0 },
        SegmentPattern::Every {
            len: tile,
            offset: tile - 1,
        },
    ]
}

/// Every case over `sizes` (`tile`: the scan's tile length, for the tile-boundary
/// patterns); returns the failures, each naming its case.
pub fn sweep_segment_carries(ctx: &Context, stream: &Stream, seed: u64, sizes: &[usize], tile: u64) -> Vec<String> {
    eprintln!("segment carries: seed {seed:#x}");
    let mut rng = Rng(seed);
    let mut failures = Vec::new();
    let mut cases = 0usize;
    for &n in sizes {
        for pattern in patterns(tile) {
            for backward in [false, true] {
                for inclusive in [true, false] {
                    for form in FORMS {
                        let offset_type = OFFSET_TYPES[cases % OFFSET_TYPES.len()];
                        let offsets = random_offsets(&mut rng, pattern, n);
                        let direction = if backward {
                            Direction::Backward
                        } else {
                            Direction::Forward
                        };
                        let desc = ScanDesc {
                            inclusive,
                            direction,
                            ..ScanDesc::inclusive(Op::Sum)
                        };
                        // One built-in type and operator per case, in turn, and the recurrence.
                        let builtin = match cases % 3 {
                            0 => builtin_case::<u32>(
                                ctx,
                                stream,
                                &mut rng,
                                Op::Sum,
                                n,
                                &offsets,
                                offset_type,
                                desc,
                                form,
                            ),
                            1 => builtin_case::<i64>(
                                ctx,
                                stream,
                                &mut rng,
                                Op::Max,
                                n,
                                &offsets,
                                offset_type,
                                ScanDesc { op: Op::Max, ..desc },
                                form,
                            ),
                            _ => builtin_case::<f64>(
                                ctx,
                                stream,
                                &mut rng,
                                Op::Sum,
                                n,
                                &offsets,
                                offset_type,
                                desc,
                                form,
                            ),
                        };
                        let scan = OperatorScan {
                            inclusive,
                            direction,
                            ..Default::default()
                        };
                        let recurrence = recurrence_case(ctx, stream, &mut rng, n, &offsets, offset_type, scan, form);
                        cases += 1;
                        for (what, r) in [("built-in", builtin), ("recurrence", recurrence)] {
                            if let Err(msg) = r {
                                failures.push(format!(
                                    "{what} n={n} {pattern:?} backward={backward} inclusive={inclusive} {form:?} \
                                     {offset_type:?} offsets ({}): {msg}",
                                    offsets.len()
                                ));
                            }
                        }
                    }
                }
            }
        }
    }
    eprintln!("segment carries: {} cases, {} failures", 2 * cases, failures.len());
    failures
}
