//! Selections against a sequential loop, shared by the host and GPU suites: every element
//! type, rule (byte and bit flags, the six comparisons, nonzero, not-NaN, run heads, a user
//! predicate), output form (values, U32 and U64 indices, both partitions), flag density
//! (none, all, half, sparse), capacity, in place, the shape of the elements and their
//! byte flags (1-D, or C-contiguous 2-D and 3-D arrays read in memory order), their
//! alignment (starting a few elements into their buffers), and the sizes the caller names
//! (the kernels' tile boundaries). Outputs past what a call may write must keep their
//! poison.

use scanrt::{
    ArrayView, Buffer, Comparison, Context, DType, InitValue, Predicate, Scalar, SelectArrays, SelectDesc,
    SelectOutput, Selection, Stream,
};

use super::{sweep_each_type, Rng};

/// One case.
#[derive(Debug, Clone)]
pub struct SelectCase {
    pub dtype: DType,
    pub selection: Selection,
    pub output: SelectOutput,
    pub index_type: DType,
    /// The count's type: U32, U64 or I64.
    pub count_type: DType,
    pub n: usize,
    /// Flags set with probability 1 / density (0: none, 1: all).
    pub density: u64,
    pub capacity: Option<u64>,
    pub in_place: bool,
    /// The shape of the elements and their byte flags (`n` elements).
    pub shape: Vec<u64>,
    /// Elements before the first one: the elements (and their byte flags) start `lead`
    /// elements into their buffers, off the 16-byte vectors the kernels read at once.
    pub lead: usize,
}

/// A shape of `n` elements: 1-D, 2-D or 3-D (by the smallest factor of `n` up to 7).
fn shape_of(rng: &mut Rng, n: usize) -> Vec<u64> {
    let n = n as u64;
    let d = [2, 3, 5, 7].into_iter().find(|d| n % d == 0).unwrap_or(1);
    match rng.below(3) {
        0 => vec![n],
        1 => vec![d, n / d],
        _ => vec![n / d, 1, d],
    }
}

/// Element values: few distinct ones (runs and equalities), floats with NaN and signed
/// zeros, as the bits of `dtype`.
fn random_bits(rng: &mut Rng, dtype: DType) -> u64 {
    let small = rng.below(6);
    match dtype {
        DType::F32 => match rng.below(16) {
            0 => f32::NAN.to_bits() as u64,
            1 => (-0.0f32).to_bits() as u64,
            _ => (small as f32 - 2.0).to_bits() as u64,
        },
        DType::F64 => match rng.below(16) {
            0 => f64::NAN.to_bits(),
            1 => (-0.0f64).to_bits(),
            _ => (small as f64 - 2.0).to_bits(),
        },
        DType::F16 => match rng.below(16) {
            0 => half::f16::NAN.to_bits() as u64,
            1 => half::f16::NEG_ZERO.to_bits() as u64,
            _ => half::f16::from_f64(small as f64 - 2.0).to_bits() as u64,
        },
        DType::BF16 => match rng.below(16) {
            0 => half::bf16::NAN.to_bits() as u64,
            1 => half::bf16::NEG_ZERO.to_bits() as u64,
            _ => half::bf16::from_f64(small as f64 - 2.0).to_bits() as u64,
        },
        DType::I8 => (small as i8 - 2) as u8 as u64,
        DType::I16 => (small as i16 - 2) as u16 as u64,
        DType::I32 => (small as i32 - 2) as u32 as u64,
        DType::I64 => (small as i64 - 2) as u64,
        _ => small,
    }
}

/// A user predicate on every type: "greater than 1", with its host twin.
pub fn greater_than_one(dtype: DType) -> Predicate {
    let t = dtype.info().cuda;
    let host: std::sync::Arc<dyn Fn(u64) -> bool + Send + Sync> = match dtype {
        DType::F32 => std::sync::Arc::new(|b| f32::from_bits(b as u32) > 1.0),
        DType::F64 => std::sync::Arc::new(|b| f64::from_bits(b) > 1.0),
        DType::F16 | DType::BF16 => std::sync::Arc::new(move |b| value_of(dtype, b) > 1.0),
        DType::I8 => std::sync::Arc::new(|b| (b as u8 as i8) > 1),
        DType::I16 => std::sync::Arc::new(|b| (b as u16 as i16) > 1),
        DType::I32 => std::sync::Arc::new(|b| (b as u32 as i32) > 1),
        DType::I64 => std::sync::Arc::new(|b| (b as i64) > 1),
        _ => std::sync::Arc::new(|b| b > 1),
    };
    Predicate {
        source: format!("__device__ bool greater_than_one({t} x) {{ return x > ({t})1; }}"),
        function: "greater_than_one".into(),
        host: Some(host),
    }
}

/// The rules of the sweep for `dtype` (comparisons with a random operand).
pub fn rules(rng: &mut Rng, dtype: DType) -> Vec<Selection> {
    let operand = value_with_bits(dtype, random_bits(rng, dtype));
    let mut all = vec![Selection::ByteFlags, Selection::BitFlags];
    for c in [
        Comparison::Equal,
        Comparison::NotEqual,
        Comparison::Less,
        Comparison::LessEqual,
        Comparison::Greater,
        Comparison::GreaterEqual,
    ] {
        all.push(Selection::Compare(c, operand));
    }
    all.extend([
        Selection::NonZero,
        Selection::NotNan,
        Selection::RunHeads,
        Selection::Predicate(greater_than_one(dtype)),
    ]);
    all
}

fn value_of(dtype: DType, bits: u64) -> f64 {
    match dtype {
        DType::F32 => f32::from_bits(bits as u32) as f64,
        DType::F64 => f64::from_bits(bits),
        DType::F16 => half::f16::from_bits(bits as u16).to_f64(),
        DType::BF16 => half::bf16::from_bits(bits as u16).to_f64(),
        DType::I8 => bits as u8 as i8 as f64,
        DType::I16 => bits as u16 as i16 as f64,
        DType::I32 => bits as u32 as i32 as f64,
        DType::I64 => bits as i64 as f64,
        _ => bits as f64,
    }
}

/// Runs one case against the sequential loop.
pub fn run_select_case(ctx: &Context, stream: &Stream, rng: &mut Rng, c: &SelectCase) -> Result<(), String> {
    let bits: Vec<u64> = (0..c.n).map(|_| random_bits(rng, c.dtype)).collect();
    let flags: Vec<u8> = (0..c.n)
        .map(|_| (c.density != 0 && rng.below(c.density) == 0) as u8)
        .collect();
    let packed: Vec<u32> = (0..c.n.div_ceil(32))
        .map(|w| {
            (0..32)
                .filter(|&b| w * 32 + b < c.n && flags[w * 32 + b] != 0)
                .fold(0u32, |a, b| a | 1 << b)
        })
        .collect();
    // The reference: which elements are kept, by the rule's plain definition.
    let x = |i: usize| value_of(c.dtype, bits[i]);
    let keep: Vec<bool> = (0..c.n)
        .map(|i| match &c.selection {
            Selection::ByteFlags | Selection::BitFlags => flags[i] != 0,
            Selection::Compare(cmp, operand) => {
                let o = value_of(c.dtype, operand_bits(operand));
                match cmp {
                    Comparison::Equal => x(i) == o,
                    Comparison::NotEqual => x(i) != o,
                    Comparison::Less => x(i) < o,
                    Comparison::LessEqual => x(i) <= o,
                    Comparison::Greater => x(i) > o,
                    Comparison::GreaterEqual => x(i) >= o,
                }
            }
            Selection::NonZero => x(i) != 0.0,
            Selection::NotNan => !x(i).is_nan(),
            Selection::RunHeads => i == 0 || x(i) != x(i - 1),
            Selection::Predicate(_) => x(i) > 1.0,
        })
        .collect();
    let kept: Vec<usize> = (0..c.n).filter(|&i| keep[i]).collect();
    let rejected: Vec<usize> = (0..c.n).filter(|&i| !keep[i]).collect();

    let e = |e: scanrt::Error| format!("{}: {}", e.status.c_name(), e.message);
    // The buffers hold `lead` elements (and flags) of other values before the case's.
    let lead_bits: Vec<u64> = (0..c.lead).map(|_| random_bits(rng, c.dtype)).collect();
    let input = upload_bits(ctx, stream, c.dtype, &[&lead_bits[..], &bits].concat()).map_err(e)?;
    let lead_flags = vec![1u8; c.lead];
    let flag_buf = match c.selection {
        Selection::ByteFlags => Some(Buffer::from_slice(ctx, stream, &[&lead_flags[..], &flags].concat()).map_err(e)?),
        Selection::BitFlags => Some(Buffer::from_slice(ctx, stream, &packed).map_err(e)?),
        _ => None,
    };
    let out_type = if c.output == SelectOutput::Indices {
        c.index_type
    } else {
        c.dtype
    };
    let poison = |dtype: DType| 0xA5A5_A5A5_A5A5_A5A5u64 >> (64 - 8 * dtype.size());
    let mut out_buf = upload_bits(ctx, stream, out_type, &vec![poison(out_type); c.n + 3]).map_err(e)?;
    let mut rejected_buf = upload_bits(ctx, stream, c.dtype, &vec![poison(c.dtype); c.n + 3]).map_err(e)?;
    let runs = c.output == SelectOutput::RunLengths;
    let mut lengths_buf = upload_bits(ctx, stream, c.index_type, &vec![poison(c.index_type); c.n + 3]).map_err(e)?;
    // Two elements: the second must keep its poison (a 32-bit count writes 4 bytes).
    let mut count = upload_bits(ctx, stream, c.count_type, &[poison(c.count_type); 2]).map_err(e)?;
    let read_count = |count: &Buffer| -> Result<u64, String> {
        let got = download_bits(count, stream, 2).map_err(e)?;
        if got[1] != poison(c.count_type) {
            return Err(format!("the word after the count was written: {:#x}", got[1]));
        }
        Ok(got[0])
    };
    let desc = SelectDesc {
        selection: c.selection.clone(),
        output: c.output,
        capacity: c.capacity,
    };
    // SAFETY (each view_past_lead): the buffers hold `lead` elements (and flags) before
    // the case's `n`, and outlive the call and the downloads that wait for it.
    // In place, the input view is the output view too.
    let (input_view, output_view) = if c.in_place {
        let v = unsafe { view_past_lead(&input, c.lead, &[c.n as u64]) }.map_err(e)?;
        (v, v)
    } else {
        (
            unsafe { view_past_lead(&input, c.lead, &c.shape) }
                .map_err(e)?
                .read_only(),
            ArrayView::of_buffer_shaped_mut(&mut out_buf, &[c.n as u64]).map_err(e)?,
        )
    };
    let flags_view = match (&c.selection, &flag_buf) {
        (Selection::ByteFlags, Some(f)) => Some(unsafe { view_past_lead(f, c.lead, &c.shape) }.map_err(e)?.read_only()),
        (_, f) => f.as_ref().map(ArrayView::of_buffer),
    };
    let arrays = SelectArrays {
        input: input_view,
        flags: flags_view,
        output: output_view,
        rejected: (c.output == SelectOutput::PartitionTwo)
            .then(|| ArrayView::of_buffer_shaped_mut(&mut rejected_buf, &[c.n as u64]))
            .transpose()
            .map_err(e)?,
        lengths: runs
            .then(|| ArrayView::of_buffer_shaped_mut(&mut lengths_buf, &[c.n as u64]))
            .transpose()
            .map_err(e)?,
        num_selected: ArrayView::of_buffer_shaped_mut(&mut count, &[1]).map_err(e)?,
    };
    ctx.select(stream, &arrays, &desc).map_err(e)?;
    if runs {
        // Each run: its first element's bits and its length.
        let heads: Vec<usize> = (0..c.n).filter(|&i| i == 0 || x(i) != x(i - 1)).collect();
        let got_count = read_count(&count)?;
        if got_count != heads.len() as u64 {
            return Err(format!("{got_count} runs, want {}", heads.len()));
        }
        let values = download_bits(&out_buf, stream, c.n + 3).map_err(e)?;
        let lengths = download_bits(&lengths_buf, stream, c.n + 3).map_err(e)?;
        for (k, &h) in heads.iter().enumerate() {
            let end = heads.get(k + 1).copied().unwrap_or(c.n);
            if values[k] != bits[h] || lengths[k] != (end - h) as u64 {
                return Err(format!(
                    "run {k} at {h}: got value {:#x} length {}, want {:#x} and {}",
                    values[k],
                    lengths[k],
                    bits[h],
                    end - h
                ));
            }
        }
        if values[heads.len()..].iter().any(|&b| b != poison(c.dtype))
            || lengths[heads.len()..].iter().any(|&b| b != poison(c.index_type))
        {
            return Err("a slot past the runs was written".into());
        }
        return Ok(());
    }
    let got_count = read_count(&count)?;
    if got_count != kept.len() as u64 {
        return Err(format!("count {got_count}, want {}", kept.len()));
    }
    let got = if c.in_place {
        download_past_lead(&input, stream, &lead_bits, c.n)?
    } else {
        download_bits(&out_buf, stream, c.n + 3).map_err(e)?
    };
    let written = kept.len().min(c.capacity.map_or(usize::MAX, |cap| cap as usize));
    for (k, &i) in kept.iter().take(written).enumerate() {
        let want = if c.output == SelectOutput::Indices {
            i as u64
        } else {
            bits[i]
        };
        if got[k] != want {
            return Err(format!(
                "selected element {k} (index {i}): got {:#x}, want {want:#x}",
                got[k]
            ));
        }
    }
    match c.output {
        SelectOutput::PartitionReversed => {
            for (r, &i) in rejected.iter().enumerate() {
                if got[c.n - 1 - r] != bits[i] {
                    return Err(format!(
                        "rejected element {r} (index {i}) at the end: got {:#x}, want {:#x}",
                        got[c.n - 1 - r],
                        bits[i]
                    ));
                }
            }
        }
        SelectOutput::PartitionTwo => {
            let rej = download_bits(&rejected_buf, stream, c.n + 3).map_err(e)?;
            for (r, &i) in rejected.iter().enumerate() {
                if rej[r] != bits[i] {
                    return Err(format!("rejected element {r} (index {i}) differs"));
                }
            }
            if rej[rejected.len()..].iter().any(|&b| b != poison(c.dtype)) {
                return Err("a rejected slot past the rejected elements was written".into());
            }
        }
        _ if !c.in_place && got[written..].iter().any(|&b| b != poison(out_type)) => {
            return Err(format!("an output slot past the {written} written ones was written"));
        }
        _ => {}
    }
    Ok(())
}

/// Evaluates `$body` with `$T` the Rust type of `$dtype`.
macro_rules! with_scalar {
    ($dtype:expr, |$T:ident| $body:expr) => {
        scanrt::dispatch_dtype!($dtype, |$T| $body)
    };
}

fn operand_bits(v: &InitValue) -> u64 {
    with_scalar!(v.dtype(), |T| Scalar::to_bits(v.value::<T>().unwrap()))
}

/// A buffer of `dtype` elements with the given bits.
pub fn upload_bits(ctx: &Context, stream: &Stream, dtype: DType, bits: &[u64]) -> scanrt::Result<Buffer> {
    with_scalar!(dtype, |T| {
        let values: Vec<T> = bits.iter().map(|&b| <T as Scalar>::from_bits(b)).collect();
        Buffer::from_slice(ctx, stream, &values)
    })
}

/// The bits of a buffer's first `n` elements.
pub fn download_bits(buf: &Buffer, stream: &Stream, n: usize) -> scanrt::Result<Vec<u64>> {
    with_scalar!(buf.dtype(), |T| Ok(buf
        .download::<T>(stream, n)?
        .into_iter()
        .map(Scalar::to_bits)
        .collect()))
}

/// A view of `shape` over a buffer's elements past its first `lead` (an array off the
/// kernels' 16-byte vectors); in-place calls write through it.
///
/// # Safety
/// The buffer holds `lead` elements before the view's, and outlives every use of the view.
pub unsafe fn view_past_lead<'b>(buf: &'b Buffer, lead: usize, shape: &[u64]) -> scanrt::Result<ArrayView<'b>> {
    ArrayView::contiguous(buf.addr() + (lead * buf.dtype().size()) as u64, buf.dtype(), shape)
}

/// The bits of the `n` elements past a buffer's first `lead_bits.len()`, once those are
/// checked unchanged (nothing is written before an array).
pub fn download_past_lead(buf: &Buffer, stream: &Stream, lead_bits: &[u64], n: usize) -> Result<Vec<u64>, String> {
    let lead = lead_bits.len();
    let all = download_bits(buf, stream, lead + n).map_err(|e| e.to_string())?;
    if all[..lead] != *lead_bits {
        return Err("an element before the array was written".into());
    }
    Ok(all[lead..].to_vec())
}

/// A typed value of `dtype` with the given bits.
fn value_with_bits(dtype: DType, bits: u64) -> InitValue {
    with_scalar!(dtype, |T| InitValue::of(<T as Scalar>::from_bits(bits)))
}

/// Every case over `sizes`, each element type on a thread and stream of its own; returns
/// the failures, each naming its case.
pub fn sweep_selections(ctx: &Context, seed: u64, sizes: &[usize]) -> Vec<String> {
    let (cases, failures) = sweep_each_type(ctx, seed, |dtype, stream, rng| {
        let mut failures = Vec::new();
        let mut cases = 0;
        for selection in rules(rng, dtype) {
            for &n in sizes {
                let forms: &[SelectOutput] = match selection {
                    Selection::RunHeads => &[
                        SelectOutput::Values,
                        SelectOutput::Indices,
                        SelectOutput::PartitionReversed,
                        SelectOutput::PartitionTwo,
                        SelectOutput::RunLengths,
                    ],
                    Selection::ByteFlags | Selection::Compare(Comparison::Less, _) => &[
                        SelectOutput::Values,
                        SelectOutput::Indices,
                        SelectOutput::PartitionReversed,
                        SelectOutput::PartitionTwo,
                    ],
                    _ => &[SelectOutput::Values, SelectOutput::Indices],
                };
                for &output in forms {
                    let in_place = output == SelectOutput::Values && rng.below(3) == 0;
                    let c = SelectCase {
                        dtype,
                        selection: selection.clone(),
                        output,
                        index_type: if rng.below(2) == 0 { DType::U32 } else { DType::U64 },
                        count_type: [DType::U32, DType::U64, DType::I64][rng.below(3) as usize],
                        n,
                        density: [0, 1, 2, 97][rng.below(4) as usize],
                        capacity: (output == SelectOutput::Values || output == SelectOutput::Indices)
                            .then(|| rng.below(4) == 0)
                            .filter(|&b| b)
                            .map(|_| rng.below(n as u64 + 1)),
                        in_place,
                        // In place, the output view is the input's: a sequence.
                        shape: if in_place { vec![n as u64] } else { shape_of(rng, n) },
                        lead: [0, 0, 1, 3][rng.below(4) as usize],
                    };
                    cases += 1;
                    let state = rng.0;
                    if let Err(e) = run_select_case(ctx, stream, rng, &c) {
                        failures.push(format!("{c:?} (rng state {state:#x}): {e}"));
                    }
                }
            }
        }
        (cases, failures)
    });
    eprintln!("selections: {cases} cases, {} failed (seed {seed:#x})", failures.len());
    failures
}
