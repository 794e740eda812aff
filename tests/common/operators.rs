//! Randomized checks of user-defined operators and the recipes against plain sequential
//! loops written here (independent of the library's host functions), on any context:
//! the GPU suite runs them large, the host suite small.

use scanrt::{recipes, Buffer, Context, DType, OperatorDesc, OperatorScan, Segments, Stream};

use super::{encode_segments, Rng};

/// The examples' operators (examples/line_of_sight.rs, examples/fibonacci.rs).
#[path = "../../examples/operators/mod.rs"]
pub mod examples;

/// One randomized shape: length, direction, inclusive or exclusive, segments (byte flags
/// or rows) and offsets into larger buffers (misaligned starts).
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    pub n: usize,
    pub backward: bool,
    /// Element i's output leaves input i out.
    pub exclusive: bool,
    /// 0: unsegmented; 1: random byte flags; 2: rows of `row` elements; 3: random bit
    /// flags; 4: random runs of u32 keys.
    pub segments: u8,
    pub row: u64,
    pub offset: u64,
    pub deterministic: bool,
}

impl Shape {
    /// A forward, inclusive, unsegmented scan of `n` aligned elements.
    pub fn plain(n: usize) -> Shape {
        Shape {
            n,
            backward: false,
            exclusive: false,
            segments: 0,
            row: 1,
            offset: 0,
            deterministic: false,
        }
    }
    pub fn random(rng: &mut Rng, sizes: &[usize]) -> Shape {
        let n = sizes[rng.below(sizes.len() as u64) as usize];
        Shape {
            n,
            backward: rng.below(2) == 1,
            exclusive: rng.below(3) == 0,
            segments: rng.below(5) as u8,
            row: 1 + rng.below(n.max(1) as u64 / 3 + 2),
            offset: if rng.below(3) == 0 { 1 + rng.below(3) } else { 0 },
            deterministic: rng.below(4) == 0,
        }
    }
    /// Whether element p starts a segment in memory order, and the scan description.
    pub fn starts(&self, rng: &mut Rng) -> Vec<bool> {
        (0..self.n as u64)
            .map(|p| match self.segments {
                1 | 3 | 4 => rng.below(50) == 0,
                2 => p % self.row == 0,
                _ => false,
            })
            .collect()
    }
    pub fn scan(&self) -> OperatorScan {
        let mut s = if self.exclusive {
            OperatorScan::exclusive()
        } else {
            OperatorScan::inclusive()
        };
        if self.backward {
            s = s.backward();
        }
        if self.deterministic {
            s = s.deterministic();
        }
        match self.segments {
            1 => s.segmented(Segments::ByteFlags),
            2 => s.segmented(Segments::Rows(self.row)),
            3 => s.segmented(Segments::BitFlags),
            4 => s.segmented(Segments::Keys(DType::U32)),
            _ => s,
        }
    }
    /// What element p's output holds: the running state after its own input, or before
    /// it (exclusive).
    pub fn output<S: Copy>(&self, before: S, after: S) -> S {
        if self.exclusive {
            before
        } else {
            after
        }
    }
    /// The traversal order of physical indices, and whether each restarts.
    pub fn walk(&self, starts: &[bool]) -> Vec<(usize, bool)> {
        let n = self.n;
        (0..n)
            .map(|i| {
                if self.backward {
                    let p = n - 1 - i;
                    (p, i == 0 || (self.segments != 0 && (p + 1 < n && starts[p + 1])))
                } else {
                    (i, i == 0 || (self.segments != 0 && starts[i]))
                }
            })
            .collect()
    }
}

/// An array `offset` elements into a buffer of its own (a misaligned start when offset
/// is not a multiple of 16 bytes).
pub struct Array {
    buffer: Buffer,
    offset: usize,
    pub addr: u64,
}

impl Array {
    pub fn new<T: scanrt::Scalar>(ctx: &Context, stream: &Stream, data: &[T], offset: u64) -> Array {
        let mut padded = vec![data.first().copied().unwrap_or_else(|| T::from_bits(0)); data.len() + offset as usize];
        padded[offset as usize..].copy_from_slice(data);
        let buffer = Buffer::from_slice(ctx, stream, &padded).unwrap();
        let addr = buffer.addr() + offset * T::DTYPE.size() as u64;
        Array {
            buffer,
            offset: offset as usize,
            addr,
        }
    }
    pub fn read<T: scanrt::Scalar>(&self, stream: &Stream, n: usize) -> Result<Vec<T>, String> {
        let all = self
            .buffer
            .download::<T>(stream, n + self.offset)
            .map_err(|e| e.to_string())?;
        Ok(all[self.offset..].to_vec())
    }
}

/// Runs `scan` of `op` with the segment data `starts` asks for.
#[allow(clippy::too_many_arguments)]
fn run(
    ctx: &Context,
    stream: &Stream,
    op: &scanrt::Operator,
    inputs: &[u64],
    outputs: &[u64],
    shape: &Shape,
    starts: &[bool],
    scan: &OperatorScan,
) -> Result<(), String> {
    // Flags or keys as the segment form reads them (byte values and keys drawn from n).
    let data = encode_segments(&mut Rng(shape.n as u64), scan.segments, starts);
    let data_buffer = Buffer::from_slice(ctx, stream, &data).map_err(|e| e.to_string())?;
    let segments = if scan.segments.has_data() {
        data_buffer.addr()
    } else {
        0
    };
    // SAFETY: all addresses are in live allocations of this context holding n elements.
    unsafe { op.scan_raw(stream, inputs, outputs, shape.n as u64, segments, scan, None) }.map_err(|e| e.to_string())?;
    stream.synchronize().map_err(|e| e.to_string())
}

/// Runs `scan` of `op` from the input arrays `inputs` to one output array of the same
/// type (all bits set until written; with `in_place`, the last input itself), and reads
/// the output.
#[allow(clippy::too_many_arguments)]
fn scan_to_one_array<T: scanrt::Scalar>(
    ctx: &Context,
    stream: &Stream,
    op: &scanrt::Operator,
    shape: &Shape,
    starts: &[bool],
    scan: &OperatorScan,
    inputs: &[&[T]],
    in_place: bool,
) -> Result<Vec<T>, String> {
    let arrays: Vec<Array> = inputs
        .iter()
        .map(|x| Array::new(ctx, stream, x, shape.offset))
        .collect();
    let fresh;
    let out = if in_place {
        arrays.last().unwrap()
    } else {
        fresh = Array::new(ctx, stream, &vec![T::from_bits(u64::MAX); shape.n], shape.offset);
        &fresh
    };
    let addresses: Vec<u64> = arrays.iter().map(|a| a.addr).collect();
    run(ctx, stream, op, &addresses, &[out.addr], shape, starts, scan)?;
    out.read::<T>(stream, shape.n)
}

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
    let n = shape.n;
    let (a, b, h0) = recurrence_inputs(rng, n);
    let starts = shape.starts(rng);
    let mut expect = vec![0.0f64; n];
    let mut h = h0;
    for (p, restart) in shape.walk(&starts) {
        if restart {
            h = h0;
        }
        let before = h;
        h = a[p] * h + b[p];
        expect[p] = shape.output(before, h);
    }
    let in_place = rng.below(4) == 0;
    let scan = shape.scan().with_init(recipes::recurrence_init(dtype, h0).unwrap());
    let got = scan_recurrence(ctx, stream, op, dtype, &shape, &starts, &scan, (&a, &b), in_place)?;
    match recurrence_mismatch(dtype, &got, &expect) {
        Some(p) => Err(format!(
            "{shape:?} in_place={in_place}: h[{p}] = {} expected {}",
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

/// Values for the cumulative extreme checks: few distinct ones (many ties) and, for
/// floats, NaN (one in 50), infinities and signed zeros now and then.
pub trait ExtremeInput: scanrt::Scalar + PartialOrd {
    fn draw(rng: &mut Rng) -> Self;
    /// The identity of max (`max`) or min: the type's extreme, which loses every tie.
    fn identity(max: bool) -> Self;
}

impl ExtremeInput for u32 {
    fn draw(rng: &mut Rng) -> u32 {
        match rng.below(100) {
            0 => u32::MAX,
            1 => 0,
            _ => rng.below(1000) as u32,
        }
    }
    fn identity(max: bool) -> u32 {
        if max {
            u32::MIN
        } else {
            u32::MAX
        }
    }
}

impl ExtremeInput for i64 {
    fn draw(rng: &mut Rng) -> i64 {
        match rng.below(100) {
            0 => i64::MAX,
            1 => i64::MIN,
            _ => rng.below(1000) as i64 - 500,
        }
    }
    fn identity(max: bool) -> i64 {
        if max {
            i64::MIN
        } else {
            i64::MAX
        }
    }
}

macro_rules! float_extreme {
    ($t:ty) => {
        impl ExtremeInput for $t {
            fn draw(rng: &mut Rng) -> $t {
                match rng.below(100) {
                    0 | 1 => <$t>::NAN,
                    2 => <$t>::INFINITY,
                    3 => <$t>::NEG_INFINITY,
                    4 => -0.0,
                    5 => 0.0,
                    _ => (rng.below(1000) as $t - 500.0) / 4.0,
                }
            }
            fn identity(max: bool) -> $t {
                if max {
                    <$t>::NEG_INFINITY
                } else {
                    <$t>::INFINITY
                }
            }
        }
    };
}
float_extreme!(f32);
float_extreme!(f64);

/// The types the cumulative extreme checks run: `check_extreme` of each.
pub const EXTREME_TYPES: [DType; 4] = [DType::U32, DType::I64, DType::F32, DType::F64];

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
        DType::U32 => check_extreme::<u32>(ctx, stream, op, max, rng, shape),
        DType::I64 => check_extreme::<i64>(ctx, stream, op, max, rng, shape),
        DType::F32 => check_extreme::<f32>(ctx, stream, op, max, rng, shape),
        DType::F64 => check_extreme::<f64>(ctx, stream, op, max, rng, shape),
        other => panic!("no extreme check for {other:?}"),
    }
}

/// Running max or min with the index of the extreme, against the documented rule: the
/// first extreme in traversal order wins ties; NaN propagates (from the first NaN of a
/// segment on, the extreme is that NaN and its index); an initial state, when drawn, is
/// where every segment starts. Values are compared bit for bit (-0.0 and +0.0 differ).
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
    let init = (rng.below(3) == 0).then(|| (T::draw(rng), rng.below(1 << 20) as u32));
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
    if let Some((value, index)) = init {
        let size = op.desc().state_size;
        let mut bytes = vec![0u8; size];
        let vs = T::DTYPE.size();
        bytes[..vs].copy_from_slice(&value.to_bits().to_ne_bytes()[..vs]);
        bytes[vs..vs + 4].copy_from_slice(&index.to_ne_bytes());
        scan = scan.with_init(bytes);
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

/// logcumsumexp of `op.desc()`'s type (f32 or f64), with values near the type's maximum
/// now and then and, in one case of eight, infinities and NaN: -inf adds nothing, +inf
/// makes the rest of its segment +inf, NaN makes it NaN.
pub fn check_logcumsumexp(
    ctx: &Context,
    stream: &Stream,
    op: &scanrt::Operator,
    rng: &mut Rng,
    shape: Shape,
) -> Result<(), String> {
    let n = shape.n;
    let f32 = op.desc().state_size == 8;
    let near_max = if f32 { f32::MAX as f64 * 0.99 } else { f64::MAX * 0.99 };
    let (huge, specials) = (rng.below(2) == 0, rng.below(8) == 0);
    let mut x: Vec<f64> = (0..n)
        .map(|_| match rng.below(400) {
            0..=39 if huge => near_max,
            40..=47 if specials => f64::NEG_INFINITY,
            48..=49 if specials => f64::INFINITY,
            50 if specials => f64::NAN,
            _ => (rng.below(4001) as f64 - 2000.0) / 100.0,
        })
        .collect();
    if f32 {
        x.iter_mut().for_each(|v| *v = *v as f32 as f64);
    }
    let starts = shape.starts(rng);
    // Now and then an initial state: one more term before every segment.
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
        let state: Vec<u8> = if f32 {
            [v as f32, 1.0].iter().flat_map(|x| x.to_ne_bytes()).collect()
        } else {
            [v, 1.0].iter().flat_map(|x| x.to_ne_bytes()).collect()
        };
        scan = scan.with_init(state);
    }
    let got: Vec<f64> = if f32 {
        let x: Vec<f32> = x.iter().map(|&v| v as f32).collect();
        scan_to_one_array(ctx, stream, op, &shape, &starts, &scan, &[&x], false)?
            .into_iter()
            .map(f64::from)
            .collect()
    } else {
        scan_to_one_array(ctx, stream, op, &shape, &starts, &scan, &[&x], false)?
    };
    // f32 takes the hardware's approximate exp2 and log2.
    let tolerance = if f32 { 4e-5 } else { 1e-10 };
    for p in 0..n {
        let (g, e) = (got[p], expect[p]);
        let agree = if e.is_finite() {
            (g - e).abs() <= tolerance * e.abs().max(1.0)
        } else {
            g == e || g.is_nan() && e.is_nan()
        };
        if !agree {
            return Err(format!("{shape:?}: y[{p}] = {g} expected {e}"));
        }
    }
    Ok(())
}

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

/// The first element where `got` differs from `expect` (bitwise-exact results), named
/// with `case`.
fn exactly_equal<T: PartialEq + std::fmt::Debug>(
    case: &str,
    got: impl Iterator<Item = T>,
    expect: &[T],
) -> Result<(), String> {
    for (p, (g, e)) in got.zip(expect).enumerate() {
        if g != *e {
            return Err(format!("{case}: element {p} = {g:?} expected {e:?}"));
        }
    }
    Ok(())
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
    let a: Vec<f64> = x.iter().flat_map(|&x| std::iter::repeat(x).take(terms)).collect();
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
