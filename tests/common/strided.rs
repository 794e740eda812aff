//! Scans along any axis of strided views, against the sequential reference of every
//! sequence, shared by the host and GPU suites: columns (dim 0 of a matrix), rows with a
//! pitch, inner axes of 3-D arrays, transposed (column-major) arrays, 1-D arrays with a
//! stride, negative strides, outputs laid out unlike their inputs, in place, and
//! per-sequence carries. Memory the output view does not reach must keep its bytes.

use scanrt::{ArrayView, Buffer, CarryViews, Context, DType, Direction, Op, ScanDesc, Stream, Widen};

use super::{compare, gpu_depth, make_desc, random_vec, with_pair, Rng, Tally, TestInput, TestOutput};

/// One layout: the logical shape, each view's strides (elements), the scanned axis.
#[derive(Debug, Clone)]
pub struct Layout {
    pub shape: Vec<u64>,
    pub input: Vec<i64>,
    pub output: Vec<i64>,
    pub axis: usize,
    /// The output is the input (same memory and strides).
    pub in_place: bool,
}

/// Row-major strides of `shape`, each dimension padded to `pad[d]` extra elements
/// (a pitch).
pub fn padded_strides(shape: &[u64], pad: &[u64]) -> Vec<i64> {
    let mut strides = vec![0i64; shape.len()];
    let mut step = 1i64;
    for d in (0..shape.len()).rev() {
        strides[d] = step;
        step *= (shape[d] + pad.get(d).copied().unwrap_or(0)) as i64;
    }
    strides
}

/// Column-major (Fortran) strides of `shape`.
pub fn column_major(shape: &[u64]) -> Vec<i64> {
    let mut strides = vec![0i64; shape.len()];
    let mut step = 1i64;
    for d in 0..shape.len() {
        strides[d] = step;
        step *= shape[d] as i64;
    }
    strides
}

/// Each logical element's offset (row-major order of the index), the lowest offset and
/// the span of memory from it.
pub fn offsets(shape: &[u64], strides: &[i64]) -> (Vec<i64>, i64, usize) {
    let n: u64 = shape.iter().product();
    let mut out = Vec::with_capacity(n as usize);
    let mut index = vec![0u64; shape.len()];
    for _ in 0..n {
        out.push(index.iter().zip(strides).map(|(&i, &s)| i as i64 * s).sum());
        for d in (0..shape.len()).rev() {
            index[d] += 1;
            if index[d] < shape[d] {
                break;
            }
            index[d] = 0;
        }
    }
    let low = out.iter().copied().min().unwrap_or(0);
    let high = out.iter().copied().max().map_or(0, |h| h + 1);
    (out, low, (high - low) as usize)
}

/// The logical indices of each sequence along `axis`, sequences in row-major order of
/// the other axes.
pub fn sequences(shape: &[u64], axis: usize) -> Vec<Vec<usize>> {
    let len = shape[axis] as usize;
    let inner: u64 = shape[axis + 1..].iter().product();
    let count = shape
        .iter()
        .enumerate()
        .filter(|&(d, _)| d != axis)
        .map(|(_, &e)| e as usize)
        .product();
    (0..count)
        .map(|s| {
            let (outer, c) = (s / inner as usize, s % inner as usize);
            (0..len).map(|i| (outer * len + i) * inner as usize + c).collect()
        })
        .collect()
}

/// Whether a case passes per-sequence carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SequenceCarries {
    None,
    /// One carry in for every sequence, one carry out per sequence.
    Shared,
    /// One carry in and one carry out per sequence.
    PerSequence,
}

/// Scans `layout` of random `I` into `O` as `desc` says, with `carries`; checks every
/// sequence (and its total) against the sequential reference and the untouched memory.
pub fn case<I: TestInput + Widen<O>, O: TestOutput + TestInput>(
    ctx: &Context,
    stream: &Stream,
    rng: &mut Rng,
    layout: &Layout,
    desc: &ScanDesc,
    carries: SequenceCarries,
) -> Result<(), String> {
    let e = |e: scanrt::Error| e.to_string();
    // In place needs one element type.
    let in_place = layout.in_place && I::DTYPE == O::DTYPE;
    let layout = &Layout {
        in_place,
        output: if in_place {
            layout.input.clone()
        } else {
            layout.output.clone()
        },
        ..layout.clone()
    };
    let (in_offsets, in_low, in_span) = offsets(&layout.shape, &layout.input);
    let (out_offsets, out_low, out_span) = offsets(&layout.shape, &layout.output);
    let op = desc.op;
    let input_memory: Vec<I> = random_vec(rng, op, in_span.max(1));
    let output_memory: Vec<O> = random_vec(rng, op, out_span.max(1));
    let in_buf = Buffer::from_slice(ctx, stream, &input_memory).map_err(e)?;
    let out_buf = Buffer::from_slice(ctx, stream, &output_memory).map_err(e)?;
    let seqs = sequences(&layout.shape, layout.axis);
    let inits: Vec<O> = (0..seqs.len().max(1)).map(|_| O::random_init(rng, op)).collect();
    let carry_in_buf = Buffer::from_slice(ctx, stream, &inits).map_err(e)?;
    let carry_out_buf = Buffer::new(ctx, O::DTYPE, seqs.len().max(1) as u64).map_err(e)?;
    let (isize_, osize) = (I::DTYPE.size() as i64, O::DTYPE.size() as i64);
    // SAFETY: every element the strides reach lies in the live buffers (the base is the
    // lowest offset's distance from the buffer's start).
    let views = unsafe {
        let input = ArrayView::strided(
            (in_buf.addr() as i64 - in_low * isize_) as u64,
            I::DTYPE,
            &layout.shape,
            &layout.input,
        )
        .map_err(e)?;
        let output = if layout.in_place {
            input
        } else {
            ArrayView::strided(
                (out_buf.addr() as i64 - out_low * osize) as u64,
                O::DTYPE,
                &layout.shape,
                &layout.output,
            )
            .map_err(e)?
        };
        let carry_in = match carries {
            SequenceCarries::None => None,
            SequenceCarries::Shared => Some(ArrayView::contiguous(carry_in_buf.addr(), O::DTYPE, &[1]).map_err(e)?),
            SequenceCarries::PerSequence => {
                Some(ArrayView::contiguous(carry_in_buf.addr(), O::DTYPE, &[seqs.len() as u64]).map_err(e)?)
            }
        };
        let carry_out = (carries != SequenceCarries::None)
            .then(|| ArrayView::contiguous(carry_out_buf.addr(), O::DTYPE, &[seqs.len() as u64]))
            .transpose()
            .map_err(e)?;
        (input, output, carry_in, carry_out)
    };
    let (input, output, carry_in, carry_out) = views;
    let carry_views = CarryViews {
        carry_in: carry_in.as_ref(),
        carry_out: carry_out.as_ref(),
    };
    ctx.scan_array_carried(stream, &input, &output, layout.axis as isize, desc, &carry_views)
        .map_err(e)?;

    let got_memory: Vec<O> = if layout.in_place {
        let bits: Vec<I> = in_buf.download(stream, in_span.max(1)).map_err(e)?;
        bits.iter().map(|&x| O::from_bits(x.to_bits())).collect()
    } else {
        out_buf.download(stream, out_span.max(1)).map_err(e)?
    };
    let (got_offsets, got_low) = if layout.in_place {
        (&in_offsets, in_low)
    } else {
        (&out_offsets, out_low)
    };
    let totals: Vec<O> = carry_out_buf.download(stream, seqs.len().max(1)).map_err(e)?;
    let mut reached = vec![false; got_memory.len()];
    for (s, seq) in seqs.iter().enumerate() {
        let values: Vec<I> = seq
            .iter()
            .map(|&k| input_memory[(in_offsets[k] - in_low) as usize])
            .collect();
        let got: Vec<O> = seq
            .iter()
            .map(|&k| {
                let at = (got_offsets[k] - got_low) as usize;
                reached[at] = true;
                got_memory[at]
            })
            .collect();
        let init = match carries {
            SequenceCarries::None => desc.init.and_then(|v| v.value::<O>()),
            SequenceCarries::Shared => Some(inits[0]),
            SequenceCarries::PerSequence => Some(inits[s]),
        };
        let seq_desc = ScanDesc {
            init: init.map(scanrt::InitValue::of),
            ..*desc
        };
        compare(&values, &seq_desc, &got, gpu_depth(values.len().max(1)))
            .map_err(|m| format!("sequence {s} of {}: {m}", seqs.len()))?;
        if carries != SequenceCarries::None {
            let start = init.unwrap_or_else(|| O::identity(op));
            let fold = |acc: O, x: &I| O::combine(op, acc, x.widen());
            let want = if desc.direction == scanrt::Direction::Backward {
                values.iter().rev().fold(start, fold)
            } else {
                values.iter().fold(start, fold)
            };
            let same = want.to_bits() == totals[s].to_bits()
                || (O::UNIT_ROUNDOFF.is_some() && {
                    let (w, t) = (TestOutput::as_f64(want), TestOutput::as_f64(totals[s]));
                    (w - t).abs() <= 1e-3 * w.abs() || (w.is_nan() && t.is_nan())
                });
            if !same {
                return Err(format!("sequence {s}: total {:?}, want {want:?}", totals[s]));
            }
        }
    }
    if !layout.in_place {
        if let Some(at) =
            (0..got_memory.len()).find(|&at| !reached[at] && got_memory[at].to_bits() != output_memory[at].to_bits())
        {
            return Err(format!("memory the output view does not reach changed at offset {at}"));
        }
    }
    Ok(())
}

/// The layouts of a sweep: `len` elements along the scanned axis, `columns` across it,
/// `batches` of them, in every form a strided scan meets.
pub fn layouts(rng: &mut Rng, batches: u64, len: u64, columns: u64) -> Vec<Layout> {
    let pad = 1 + rng.below(7);
    let matrix = [len, columns];
    let cube = [batches, len, columns];
    let contiguous = padded_strides(&matrix, &[]);
    let mut all = vec![
        // Columns of a matrix: a scan along dim 0.
        Layout {
            shape: matrix.to_vec(),
            input: contiguous.clone(),
            output: contiguous.clone(),
            axis: 0,
            in_place: false,
        },
        // Columns with a row pitch, into a contiguous output.
        Layout {
            shape: matrix.to_vec(),
            input: padded_strides(&matrix, &[0, pad]),
            output: contiguous.clone(),
            axis: 0,
            in_place: false,
        },
        // The inner axis of a 3-D array, in place.
        Layout {
            shape: cube.to_vec(),
            input: padded_strides(&cube, &[0, 0, pad]),
            output: padded_strides(&cube, &[0, 0, pad]),
            axis: 1,
            in_place: true,
        },
        // Rows with a pitch: the last axis, each row `pad` elements apart.
        Layout {
            shape: vec![columns, len],
            input: padded_strides(&[columns, len], &[0, pad]),
            output: padded_strides(&[columns, len], &[0, pad + 1]),
            axis: 1,
            in_place: false,
        },
        // Rows a pitch of whole 16-byte vectors apart (where the rows are too, large
        // scans of these take the bulk-copy kernel), and the same in place.
        Layout {
            shape: vec![columns, len],
            input: padded_strides(&[columns, len], &[0, 16]),
            output: padded_strides(&[columns, len], &[0, 32]),
            axis: 1,
            in_place: false,
        },
        Layout {
            shape: vec![columns, len],
            input: padded_strides(&[columns, len], &[0, 16]),
            output: padded_strides(&[columns, len], &[0, 16]),
            axis: 1,
            in_place: true,
        },
        // A column-major (transposed) matrix along dim 0: contiguous sequences.
        Layout {
            shape: matrix.to_vec(),
            input: column_major(&matrix),
            output: column_major(&matrix),
            axis: 0,
            in_place: false,
        },
        // A 1-D array with a stride, read backwards in memory.
        Layout {
            shape: vec![len],
            input: vec![-(pad as i64)],
            output: vec![1],
            axis: 0,
            in_place: false,
        },
    ];
    // A 3-D array with its axes reversed (a transpose), into a contiguous output.
    all.push(Layout {
        shape: cube.to_vec(),
        input: column_major(&cube),
        output: padded_strides(&cube, &[]),
        axis: 1,
        in_place: false,
    });
    // A contiguous 3-D array along its middle axis.
    all.push(Layout {
        shape: cube.to_vec(),
        input: padded_strides(&cube, &[]),
        output: padded_strides(&cube, &[]),
        axis: 1,
        in_place: false,
    });
    all
}

/// The built-in operators a sweep draws from.
const OPS: [Op; 4] = [Op::Sum, Op::Max, Op::Min, Op::Product];

/// The type pairs of a sweep: 4- and 8-byte accumulators, a widening pair, half inputs.
const PAIRS: [(DType, DType); 7] = [
    (DType::U32, DType::U32),
    (DType::I64, DType::I64),
    (DType::F32, DType::F32),
    (DType::F64, DType::F64),
    (DType::U32, DType::U64),
    (DType::F16, DType::F32),
    (DType::BF16, DType::F32),
];

/// Every layout of `layouts` at each `(batches, len, columns)` of `shapes`, for every
/// type pair, with a random operator, direction, inclusive or exclusive, initial value
/// or carries, and deterministic or not per case; returns the failures.
pub fn sweep(ctx: &Context, stream: &Stream, seed: u64, shapes: &[(u64, u64, u64)]) -> Vec<String> {
    let mut rng = Rng(seed);
    let mut tally = Tally::default();
    for pair in PAIRS {
        with_pair!(pair, sweep_pair(ctx, stream, &mut rng, &mut tally, shapes));
    }
    tally.into_failures("strided scans", seed)
}

fn sweep_pair<I: TestInput + Widen<O>, O: TestOutput + TestInput>(
    ctx: &Context,
    stream: &Stream,
    rng: &mut Rng,
    tally: &mut Tally,
    shapes: &[(u64, u64, u64)],
) {
    for &(batches, len, columns) in shapes {
        for (l, layout) in layouts(rng, batches, len, columns).into_iter().enumerate() {
            let op = OPS[rng.below(OPS.len() as u64) as usize];
            let inclusive = rng.below(2) == 0;
            let carries = [
                SequenceCarries::None,
                SequenceCarries::Shared,
                SequenceCarries::PerSequence,
            ][rng.below(3) as usize];
            // An initial value, or carries in memory (a call takes one of them).
            let with_init = carries == SequenceCarries::None && rng.below(2) == 0;
            let mut desc = make_desc::<O>(rng, op, inclusive, with_init);
            if rng.below(2) == 0 {
                desc.direction = Direction::Backward;
            }
            desc.deterministic = rng.below(3) == 0;
            tally.record(case::<I, O>(ctx, stream, rng, &layout, &desc, carries), || {
                format!(
                    "{:?}->{:?} {batches}x{len}x{columns} layout {l} {layout:?} {op:?} {:?} inclusive={inclusive} \
                     deterministic={} {carries:?}",
                    I::DTYPE,
                    O::DTYPE,
                    desc.direction,
                    desc.deterministic
                )
            });
        }
    }
}
