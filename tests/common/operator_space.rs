//! The space of user-defined operators, swept rather than sampled: a family of operators
//! whose state is `width` bytes (4 to 64 in steps of 4) of u32 lanes, read through a
//! `load` from one u32 array or as an array of states, written through a `store` to one
//! or two u32 arrays or as states; and the cases that cross every axis of an operator
//! scan with each of them (sizes around every kernel's tile boundaries, algorithms,
//! directions, inclusive and exclusive, segment forms, initial states, misaligned and
//! in-place arrays), checked against a sequential loop written here.
//!
//! The CUDA functions are named `combine`, `load` and `store`, as the operator glue's
//! own members are (the glue must call the user's). The combine is exact and
//! order-sensitive: lanes pair up as affine maps modulo 2^32
//! (`x -> a * x + b`, composed in sequence order; an odd last lane adds), so a tile
//! combined out of order, a lost carry or a lane dropped anywhere changes the result.

use std::sync::Arc;

use scanrt::{Algorithm, Buffer, Context, DType, HostOperator, OperatorDesc, OperatorScan, Segments, Stream};

use super::{encode_segments, with_count, Rng};

/// One operator of the family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaneOp {
    /// State bytes: `width / 4` u32 lanes.
    pub width: usize,
    /// Built by `load` from one u32 array (else read as an array of states).
    pub load: bool,
    /// u32 arrays written by `store` (0: written as an array of states).
    pub outputs: usize,
}

impl LaneOp {
    /// Every width from 4 to 64 bytes, each with a load and one output, a load and two
    /// outputs, states in and out, and states in with two outputs.
    pub fn all() -> Vec<LaneOp> {
        (4..=64)
            .step_by(4)
            .flat_map(|width| {
                [(true, 1), (true, 2), (false, 0), (false, 2)].map(|(load, outputs)| LaneOp { width, load, outputs })
            })
            .collect()
    }

    pub fn lanes(&self) -> usize {
        self.width / 4
    }

    /// Words each element's output holds in the comparison: the stored u32 values, or
    /// the state's lanes.
    fn output_words(&self) -> usize {
        if self.outputs == 0 {
            self.lanes()
        } else {
            self.outputs
        }
    }

    pub fn name(&self) -> String {
        format!("lanes{}_load{}_out{}", self.lanes(), self.load as u8, self.outputs)
    }

    /// The operator's description, with host functions that compute the same as the
    /// CUDA source (through this file's functions, not the library's).
    pub fn desc(&self) -> OperatorDesc {
        let k = self.lanes();
        let mut source = format!(
            "struct Lanes {{ uint32_t v[{k}]; }};\n\
             // Pairs of lanes are affine maps x -> a * x + b composed in sequence order; an\n\
             // odd last lane adds.\n\
             __device__ Lanes combine(Lanes p, Lanes q) {{\n\
                 Lanes r;\n\
             #pragma unroll\n\
                 for (int j = 0; j + 1 < {k}; j += 2) {{\n\
                     r.v[j] = p.v[j] * q.v[j];\n\
                     r.v[j + 1] = p.v[j + 1] * q.v[j] + q.v[j + 1];\n\
                 }}\n\
                 if ({k} % 2) r.v[{k} - 1] = p.v[{k} - 1] + q.v[{k} - 1];\n\
                 return r;\n\
             }}\n"
        );
        if self.load {
            source.push_str(&format!(
                "__device__ Lanes load(int64_t i, uint32_t x) {{\n\
                     Lanes s;\n\
                 #pragma unroll\n\
                     for (uint32_t j = 0; j < {k}; ++j)\n\
                         s.v[j] = j % 2 == 0 && j + 1 < {k} ? (x ^ (uint32_t)i * (j + 1)) | 1u : x + (uint32_t)i * (j + 3);\n\
                     return s;\n\
                 }}\n"
            ));
        }
        let folds = "uint32_t y0 = 0, y1 = 0;\n\
                     #pragma unroll\n\
                     for (uint32_t l = 0; l < K; ++l) {\n\
                         y0 += s.v[l] * (2 * l + 1);\n\
                         y1 ^= s.v[l] << (l + 1) | s.v[l] >> (31 - l);\n\
                     }\n"
        .replace('K', &k.to_string());
        match self.outputs {
            1 => source.push_str(&format!(
                "__device__ void store(const Lanes& s, uint32_t& out0) {{\n{folds} out0 = y0;\n}}\n"
            )),
            2 => source.push_str(&format!(
                "__device__ void store(const Lanes& s, uint32_t& out0, uint32_t& out1) {{\n{folds} out0 = y0; out1 = y1;\n}}\n"
            )),
            _ => {}
        }
        let identity: Vec<u8> = identity(k).iter().flat_map(|w| w.to_ne_bytes()).collect();
        let mut desc = OperatorDesc::new(&self.name(), &source, "Lanes", self.width, 4, "combine", &identity);
        let words = |bytes: &[u8]| -> Vec<u32> {
            bytes
                .chunks(4)
                .map(|c| u32::from_ne_bytes(c.try_into().unwrap()))
                .collect()
        };
        let put_words = |out: &mut [u8], lanes: &[u32]| {
            for (chunk, w) in out.chunks_mut(4).zip(lanes) {
                chunk.copy_from_slice(&w.to_ne_bytes());
            }
        };
        let mut host = HostOperator {
            combine: Arc::new(move |l, r, out| put_words(out, &combine(&words(l), &words(r)))),
            load: None,
            store: None,
        };
        if self.load {
            desc = desc.with_load("load", &[DType::U32]);
            host.load = Some(Arc::new(move |i, x, out| {
                let x = u32::from_ne_bytes(x[0][..4].try_into().unwrap());
                put_words(out, &make(k, i, x));
            }));
        }
        if self.outputs > 0 {
            desc = desc.with_store("store", &vec![DType::U32; self.outputs]);
            host.store = Some(Arc::new(move |s, y| {
                let folded = fold(&words(s));
                for (o, y) in y.iter_mut().enumerate() {
                    y[..4].copy_from_slice(&folded[o].to_ne_bytes());
                }
            }));
        }
        desc.with_host(host)
    }
}

fn identity(k: usize) -> Vec<u32> {
    (0..k).map(|j| u32::from(j % 2 == 0 && j + 1 < k)).collect()
}

/// `p` then `q`.
fn combine(p: &[u32], q: &[u32]) -> Vec<u32> {
    let mut r = vec![0; p.len()];
    combine_into(p, q, &mut r);
    r
}

fn combine_into(p: &[u32], q: &[u32], r: &mut [u32]) {
    let k = p.len();
    let mut j = 0;
    while j + 1 < k {
        r[j] = p[j].wrapping_mul(q[j]);
        r[j + 1] = p[j + 1].wrapping_mul(q[j]).wrapping_add(q[j + 1]);
        j += 2;
    }
    if k % 2 == 1 {
        r[k - 1] = p[k - 1].wrapping_add(q[k - 1]);
    }
}

/// The state element `i` of input value `x` loads.
fn make(k: usize, i: u64, x: u32) -> Vec<u32> {
    let mut s = vec![0; k];
    make_into(i, x, &mut s);
    s
}

fn make_into(i: u64, x: u32, s: &mut [u32]) {
    let k = s.len() as u32;
    for (j, lane) in (0..k).zip(s.iter_mut()) {
        *lane = if j % 2 == 0 && j + 1 < k {
            (x ^ (i as u32).wrapping_mul(j + 1)) | 1
        } else {
            x.wrapping_add((i as u32).wrapping_mul(j + 3))
        };
    }
}

/// The two values `store` writes.
fn fold(s: &[u32]) -> [u32; 2] {
    let (mut y0, mut y1) = (0u32, 0u32);
    for (l, &v) in s.iter().enumerate() {
        y0 = y0.wrapping_add(v.wrapping_mul(2 * l as u32 + 1));
        y1 ^= v.rotate_left(l as u32 + 1);
    }
    [y0, y1]
}

/// A random state whose multiplier lanes are odd (products of even numbers would reach 0
/// modulo 2^32 within a few dozen elements and hide errors).
fn random_state(rng: &mut Rng, k: usize) -> Vec<u32> {
    let mut s: Vec<u32> = (0..k).map(|_| rng.next_u64() as u32).collect();
    let mut j = 0;
    while j + 1 < k {
        s[j] |= 1;
        j += 2;
    }
    s
}

/// How a case's segments are given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SegmentForm {
    None,
    ByteFlags,
    BitFlags,
    Keys,
    /// Rows of a random length.
    Rows,
    /// Offsets (u32), with empty segments and ignored entries now and then.
    Offsets,
}

/// One scan of a [`LaneOp`].
#[derive(Debug, Clone, Copy)]
pub struct Case {
    pub n: usize,
    pub algorithm: Algorithm,
    pub deterministic: bool,
    pub backward: bool,
    pub exclusive: bool,
    pub segments: SegmentForm,
    pub init: bool,
    /// Elements every array starts after the start of its allocation (misaligned).
    pub offset: u64,
    /// The output array is the input array (states in and out only).
    pub in_place: bool,
    /// Seeds the case's data: printed with a failure, it reproduces it.
    pub seed: u64,
}

/// The algorithm axis: the single pass, the deterministic single pass, the matrix scan.
const ALGORITHMS: [(Algorithm, bool); 3] = [
    (Algorithm::Auto, false),
    (Algorithm::Auto, true),
    (Algorithm::Matrix, false),
];
const SEGMENT_FORMS: [SegmentForm; 6] = [
    SegmentForm::None,
    SegmentForm::ByteFlags,
    SegmentForm::BitFlags,
    SegmentForm::Keys,
    SegmentForm::Rows,
    SegmentForm::Offsets,
];

/// Every combination of the discrete axes (algorithm, direction, inclusive, segment
/// form, initial state): 144 of them.
pub fn axis_combinations() -> Vec<(usize, bool, bool, SegmentForm, bool)> {
    let mut all = Vec::new();
    for a in 0..ALGORITHMS.len() {
        for backward in [false, true] {
            for exclusive in [false, true] {
                for segments in SEGMENT_FORMS {
                    for init in [false, true] {
                        all.push((a, backward, exclusive, segments, init));
                    }
                }
            }
        }
    }
    all
}

impl Case {
    /// The `i`-th case of a sweep over `sizes` for `op`: size i (cycling through them),
    /// with the discrete axes running through every combination (from a random starting
    /// point) as i grows, so that a sweep of `sweep_length(sizes)` cases meets every
    /// size and every combination; alignment and in place drawn at random.
    pub fn nth(op: &LaneOp, sizes: &[usize], i: usize, rng: &mut Rng) -> Case {
        let combos = axis_combinations();
        let start = rng.below(combos.len() as u64) as usize;
        let (a, backward, exclusive, segments, init) = combos[(start + i * 37) % combos.len()];
        let (algorithm, deterministic) = ALGORITHMS[a];
        let in_place = op.outputs == 0 && !op.load && rng.below(4) == 0;
        Case {
            n: sizes[i % sizes.len()],
            algorithm,
            deterministic,
            backward,
            exclusive,
            segments,
            init,
            offset: if rng.below(3) == 0 { 1 + rng.below(3) } else { 0 },
            in_place,
            seed: rng.next_u64(),
        }
    }
}

/// Cases of a sweep over `sizes`: every size, and at least every combination of the axes.
pub fn sweep_length(sizes: &[usize]) -> usize {
    sizes.len().max(axis_combinations().len())
}

/// Lengths that cross every tile boundary of every operator kernel: one, two, a look-back
/// window (32) and a window and one of tiles of every length the kernels use (128 to
/// 8192 elements: register-staged tiles of 128 x 1 to 256 x 16, the one-wave kernel's 512
/// x 8 and 512 x 16, the bulk-copy kernel's 256 x 14 and 256 x 28), each one less, exact
/// and one more; the lengths where a persistent grid of 1 to 4 blocks per SM wraps; and
/// a few small lengths.
pub fn boundary_sizes(sm_count: usize) -> Vec<usize> {
    let tiles = [128usize, 256, 512, 1024, 2048, 3584, 4096, 7168, 8192];
    let mut sizes = vec![1, 2, 3, 5, 31, 32, 33, 100, 127];
    for t in tiles {
        for m in [1, 2, 32, 33] {
            sizes.extend([m * t - 1, m * t, m * t + 1]);
        }
    }
    // The persistent kernels' grids: every block's second tile starts here.
    for t in [128usize, 512, 1024] {
        for blocks_per_sm in [1, 2, 4] {
            let wave = sm_count * blocks_per_sm * t;
            sizes.extend([wave, wave + 1]);
        }
    }
    sizes.sort_unstable();
    sizes.dedup();
    sizes
}

/// Lengths from 2^20 to past 2^24 (the wide states' earlier failures were at 2^20 - 1,
/// 2^20 and 2^22 + 3).
pub const LARGE_SIZES: [usize; 5] = [(1 << 20) - 1, 1 << 20, (1 << 22) + 3, (1 << 24) - 1, (1 << 24) + 5];

/// Runs `case` of `op` (the operator `lane_op` describes) on `ctx` and compares every
/// output word with the sequential loop's. The error names the case and its seed.
pub fn check_case(
    ctx: &Context,
    stream: &Stream,
    op: &scanrt::Operator,
    lane_op: &LaneOp,
    case: &Case,
) -> Result<(), String> {
    let context = format!("{} {case:?}", lane_op.name());
    run_case(ctx, stream, op, lane_op, case).map_err(|e| format!("{context}: {e}"))
}

fn run_case(
    ctx: &Context,
    stream: &Stream,
    op: &scanrt::Operator,
    lane_op: &LaneOp,
    case: &Case,
) -> Result<(), String> {
    let (n, k) = (case.n, lane_op.lanes());
    let mut rng = Rng(case.seed);
    // Inputs: u32 values for a load, else states (flat lanes).
    let input: Vec<u32> = if lane_op.load {
        (0..n).map(|_| rng.next_u64() as u32).collect()
    } else {
        (0..n).flat_map(|_| random_state(&mut rng, k)).collect()
    };
    let row = 1 + rng.below(n as u64 / 3 + 2);
    let starts: Vec<bool> = match case.segments {
        SegmentForm::None => vec![false; n],
        SegmentForm::Rows => (0..n as u64).map(|p| p % row == 0).collect(),
        _ => (0..n).map(|_| rng.below(97) == 0).collect(),
    };
    let segments = match case.segments {
        SegmentForm::None => Segments::None,
        SegmentForm::ByteFlags => Segments::ByteFlags,
        SegmentForm::BitFlags => Segments::BitFlags,
        SegmentForm::Keys => Segments::Keys(DType::U32),
        SegmentForm::Rows => Segments::Rows(row),
        SegmentForm::Offsets => Segments::Offsets {
            dtype: DType::U32,
            count: 0,
        },
    };
    let init = case.init.then(|| random_state(&mut rng, k));

    // The sequential loop.
    let words = lane_op.output_words();
    let mut expect = vec![0u32; n * words];
    let identity = identity(k);
    let start_state = init.clone().unwrap_or_else(|| identity.clone());
    let mut running = start_state.clone();
    let mut next = vec![0u32; k];
    let mut loaded = vec![0u32; k];
    for step in 0..n {
        let p = if case.backward { n - 1 - step } else { step };
        let restart =
            step == 0 || case.segments != SegmentForm::None && if case.backward { starts[p + 1] } else { starts[p] };
        if restart {
            running.copy_from_slice(&start_state);
        }
        let element = if lane_op.load {
            make_into(p as u64, input[p], &mut loaded);
            &loaded[..]
        } else {
            &input[p * k..(p + 1) * k]
        };
        combine_into(&running, element, &mut next);
        let out = if case.exclusive { &running } else { &next };
        if lane_op.outputs == 0 {
            expect[p * k..(p + 1) * k].copy_from_slice(out);
        } else {
            let folded = fold(out);
            for o in 0..words {
                expect[o * n + p] = folded[o];
            }
        }
        std::mem::swap(&mut running, &mut next);
    }

    // The scan: every array `offset` elements into its allocation, outputs poisoned.
    let err = |e: scanrt::Error| e.to_string();
    let elem_words = if lane_op.load { 1 } else { k };
    let off = case.offset as usize;
    let upload = |data: &[u32], words_per_elem: usize| -> Result<Buffer, String> {
        let mut padded = vec![0xdead_beefu32; data.len() + off * words_per_elem];
        padded[off * words_per_elem..].copy_from_slice(data);
        Buffer::from_slice(ctx, stream, &padded).map_err(err)
    };
    let addr = |b: &Buffer, words_per_elem: usize| b.addr() + (off * words_per_elem * 4) as u64;
    let input_buffer = upload(&input, elem_words)?;
    let output_buffers: Vec<Buffer> = if case.in_place {
        Vec::new()
    } else if lane_op.outputs == 0 {
        vec![upload(&vec![0x5a5a_5a5a; n * k], k)?]
    } else {
        (0..lane_op.outputs)
            .map(|_| upload(&vec![0x5a5a_5a5a; n], 1))
            .collect::<Result<_, _>>()?
    };
    let outputs: Vec<u64> = if case.in_place {
        vec![addr(&input_buffer, k)]
    } else {
        output_buffers
            .iter()
            .map(|b| addr(b, if lane_op.outputs == 0 { k } else { 1 }))
            .collect()
    };
    let segment_bytes = encode_segments(&mut rng, segments, &starts);
    let segments = with_count(segments, &segment_bytes);
    let segment_buffer = Buffer::from_slice(ctx, stream, &segment_bytes).map_err(err)?;
    let segment_addr = if segments.has_data() { segment_buffer.addr() } else { 0 };
    let mut scan = if case.exclusive {
        OperatorScan::exclusive()
    } else {
        OperatorScan::inclusive()
    }
    .with_algorithm(case.algorithm)
    .segmented(segments);
    if case.backward {
        scan = scan.backward();
    }
    if case.deterministic {
        scan = scan.deterministic();
    }
    if let Some(init) = &init {
        scan = scan.with_init(init.iter().flat_map(|w| w.to_ne_bytes()).collect());
    }
    // SAFETY: every address lies in a live buffer of this context holding n elements of
    // its array after the offset; the segment data covers n elements.
    unsafe {
        op.scan_raw(
            stream,
            &[addr(&input_buffer, elem_words)],
            &outputs,
            n as u64,
            segment_addr,
            &scan,
            None,
        )
    }
    .map_err(err)?;
    stream.synchronize().map_err(err)?;
    // The call after it on the same context must not see a fault of this one.
    ctx.check_faults().map_err(|e| format!("fault after the scan: {e}"))?;

    let read = |b: &Buffer, words_per_elem: usize| -> Result<Vec<u32>, String> {
        let all = b.download::<u32>(stream, (n + off) * words_per_elem).map_err(err)?;
        Ok(all[off * words_per_elem..].to_vec())
    };
    let got: Vec<u32> = if case.in_place {
        read(&input_buffer, k)?
    } else {
        let mut got = Vec::with_capacity(n * words);
        for b in &output_buffers {
            got.extend(read(b, if lane_op.outputs == 0 { k } else { 1 })?);
        }
        got
    };
    let wrong: Vec<usize> = (0..got.len()).filter(|&w| got[w] != expect[w]).collect();
    if let Some(&first) = wrong.first() {
        let (element, word) = if lane_op.outputs == 0 {
            (first / k, first % k)
        } else {
            (first % n, first / n)
        };
        return Err(format!(
            "{} of {} words wrong; first: element {element} word {word}: got {:#x}, expected {:#x}",
            wrong.len(),
            got.len(),
            got[first],
            expect[first]
        ));
    }
    Ok(())
}
