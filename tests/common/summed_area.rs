//! Summed-area tables against nested loops, shared by the host and GPU suites: every
//! layout (padded rows, transposed, in place), type pair (one type throughout, and a wider
//! output), operator, direction, inclusive/exclusive form and determinism (so both the
//! GPU's single pass and its two scans), at the column and row counts the caller sweeps
//! (the GPU suite's lie around the strided kernel's strips of 32 columns and its tiles).

use scanrt::{ArrayView, Buffer, Context, DType, Op, ScanDesc, Stream};

use super::strided::padded_strides;
use super::{Rng, Tally};

/// How a case lays its input out, and where its output goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// Rows `pad` elements apart; a separate output.
    Padded(u64),
    /// Column-major within each table; a separate output.
    Transposed,
    /// Contiguous, the output the input.
    InPlace,
}

/// Type pairs (input, output): one type throughout and a widening pair. f32 data are small
/// integers, so every sum is exact whatever the association order.
const TYPE_PAIRS: [(DType, DType); 4] = [
    (DType::U32, DType::U32),
    (DType::U64, DType::U64),
    (DType::F32, DType::F32),
    (DType::U32, DType::U64),
];

/// Summed-area tables of random `[batches, rows, cols]` data, every type pair, layout,
/// and (operator, inclusive, backward, deterministic) form, against nested loops; returns
/// the failures.
pub fn summed_area_tables(ctx: &Context, stream: &Stream, seed: u64, shapes: &[(u64, u64, u64)]) -> Vec<String> {
    let mut rng = Rng(seed);
    let mut tally = Tally::default();
    for &(batches, rows, cols) in shapes {
        for (input, output) in TYPE_PAIRS {
            // Inclusive tables that may vary their association order take the GPU's single
            // pass, in either direction (so do deterministic integer ones); the rest two
            // scans.
            for (op, inclusive, backward, deterministic) in [
                (Op::Sum, true, false, false),
                (Op::Max, true, false, false),
                (Op::Sum, true, false, true),
                (Op::Sum, false, true, false),
                (Op::Max, true, true, false),
                (Op::Sum, false, false, true),
                (Op::Max, false, false, false),
            ] {
                let layouts = [Layout::Padded(rng.below(5)), Layout::Transposed, Layout::InPlace];
                for layout in layouts {
                    if layout == Layout::InPlace && input != output {
                        continue;
                    }
                    let mut desc = if inclusive {
                        ScanDesc::inclusive(op)
                    } else {
                        ScanDesc::exclusive(op)
                    };
                    if backward {
                        desc = desc.backward();
                    }
                    desc.deterministic = deterministic;
                    let shape = [batches, rows, cols];
                    tally.record(
                        summed_area_case(ctx, stream, &mut rng, shape, (input, output), layout, &desc),
                        || format!("{batches}x{rows}x{cols} {input:?}->{output:?} {layout:?} {desc:?}"),
                    );
                }
            }
        }
    }
    tally.into_failures("summed-area tables", seed)
}

/// `values` (small enough for every type) as an array of `dtype`.
fn upload(ctx: &Context, stream: &Stream, dtype: DType, values: &[u64]) -> scanrt::Result<Buffer> {
    match dtype {
        DType::U32 => Buffer::from_slice(ctx, stream, &values.iter().map(|&v| v as u32).collect::<Vec<_>>()),
        DType::U64 => Buffer::from_slice(ctx, stream, values),
        DType::F32 => Buffer::from_slice(ctx, stream, &values.iter().map(|&v| v as f32).collect::<Vec<_>>()),
        _ => unreachable!("the sweep's types"),
    }
}

/// `n` elements of `dtype` from `buffer`, as u64 (f32 results are exact integers).
fn download(buffer: &Buffer, stream: &Stream, dtype: DType, n: usize) -> scanrt::Result<Vec<u64>> {
    Ok(match dtype {
        DType::U32 => buffer.download::<u32>(stream, n)?.into_iter().map(u64::from).collect(),
        DType::U64 => buffer.download::<u64>(stream, n)?,
        DType::F32 => buffer
            .download::<f32>(stream, n)?
            .into_iter()
            .map(|v| v as u64)
            .collect(),
        _ => unreachable!("the sweep's types"),
    })
}

fn summed_area_case(
    ctx: &Context,
    stream: &Stream,
    rng: &mut Rng,
    shape: [u64; 3],
    (in_type, out_type): (DType, DType),
    layout: Layout,
    desc: &ScanDesc,
) -> Result<(), String> {
    let e = |e: scanrt::Error| e.to_string();
    let [batches, rows, cols] = shape;
    let (b_, r, c) = (batches as usize, rows as usize, cols as usize);
    let (in_strides, pad) = match layout {
        Layout::Padded(pad) => (padded_strides(&shape, &[0, 0, pad]), pad as usize),
        Layout::Transposed => (vec![(rows * cols) as i64, 1, rows as i64], 0),
        Layout::InPlace => (padded_strides(&shape, &[]), 0),
    };
    let span = b_ * r * (c + pad);
    // Element (b, i, j) of the input at b * s0 + i * s1 + j * s2.
    let at = |b: usize, i: usize, j: usize| {
        (b as i64 * in_strides[0] + i as i64 * in_strides[1] + j as i64 * in_strides[2]) as usize
    };
    let limit = if in_type == DType::F32 { 4 } else { 1 << 20 };
    let input: Vec<u64> = (0..span.max(1)).map(|_| rng.below(limit)).collect();
    let n = b_ * r * c;
    let in_buf = upload(ctx, stream, in_type, &input).map_err(e)?;
    let out_buf = match layout {
        Layout::InPlace => None,
        _ => Some(Buffer::new(ctx, out_type, n.max(1) as u64).map_err(e)?),
    };
    let out_addr = out_buf.as_ref().map_or(in_buf.addr(), |b| b.addr());
    // SAFETY: the strides reach no element past `span`; the output holds n elements.
    let (in_view, out_view) = unsafe {
        (
            ArrayView::strided(in_buf.addr(), in_type, &shape, &in_strides).map_err(e)?,
            ArrayView::contiguous(out_addr, out_type, &shape).map_err(e)?,
        )
    };
    ctx.summed_area_table(stream, &in_view, &out_view, desc).map_err(e)?;
    let got = download(out_buf.as_ref().unwrap_or(&in_buf), stream, out_type, n).map_err(e)?;
    let op = desc.op;
    let combine = |a: u64, b: u64| <u64 as scanrt::Accumulator>::combine(op, a, b);
    let identity = <u64 as scanrt::Accumulator>::identity(op);
    let narrow = |v: u64| if out_type == DType::U32 { v as u32 as u64 } else { v };
    let (inclusive, backward) = (desc.inclusive, desc.direction == scanrt::Direction::Backward);
    // Sequential loops: each row's running value (before or through each element, in
    // traversal order), then each column's over those. Small tables also check every
    // element against the block it covers, element by element.
    let order = |len: usize| -> Vec<usize> {
        if backward {
            (0..len).rev().collect()
        } else {
            (0..len).collect()
        }
    };
    for b in 0..b_ {
        let x = |i: usize, j: usize| input[at(b, i, j)];
        let mut rows_done = vec![identity; r * c];
        for i in 0..r {
            let mut running = identity;
            for j in order(c) {
                let next = combine(running, x(i, j));
                rows_done[i * c + j] = if inclusive { next } else { running };
                running = next;
            }
        }
        let mut want = vec![identity; r * c];
        for j in 0..c {
            let mut running = identity;
            for i in order(r) {
                let next = combine(running, rows_done[i * c + j]);
                want[i * c + j] = if inclusive { next } else { running };
                running = next;
            }
        }
        for i in 0..r {
            for j in 0..c {
                let (value, expected) = (got[(b * r + i) * c + j], narrow(want[i * c + j]));
                if value != expected {
                    return Err(format!("[{b}, {i}, {j}]: got {value}, want {expected}"));
                }
            }
        }
        if r * c <= 400 {
            let covers = |k: usize, at: usize| {
                if backward {
                    k > at || (inclusive && k == at)
                } else {
                    k < at || (inclusive && k == at)
                }
            };
            for i in 0..r {
                for j in 0..c {
                    let mut block = identity;
                    for k in (0..r).filter(|&k| covers(k, i)) {
                        for l in (0..c).filter(|&l| covers(l, j)) {
                            block = combine(block, x(k, l));
                        }
                    }
                    if narrow(block) != narrow(want[i * c + j]) {
                        return Err(format!(
                            "[{b}, {i}, {j}]: the loops give {}, the block {block}",
                            want[i * c + j]
                        ));
                    }
                }
            }
        }
    }
    Ok(())
}
