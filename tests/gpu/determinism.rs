//! Deterministic scans: the matrix scan and the deterministic single pass are bitwise
//! reproducible, within the rigorous error bound, and independent of alignment.

use scanrt::{Algorithm, ArrayView, Buffer, ChoiceReason, Context, DType, Op, RawScan, ScanDesc, Stream};

use cudarc::driver::sys;

use crate::common::*;
use crate::support::differing_words;

/// The matrix scan fixes its association order: float results are bitwise identical
/// across runs.
pub(crate) fn matrix_scan_is_run_to_run_deterministic() {
    let ctx = gpu();
    let stream = ctx.new_stream().unwrap();
    let mut rng = Rng(0xDE7);
    let n = 1usize << 24;
    let input: Vec<f32> = (0..n)
        .map(|_| ((rng.next_u64() as i64) as f64 / 9.2e18 * 10f64.powi((rng.below(12) as i32) - 6)) as f32)
        .collect();
    let src = Buffer::from_slice(ctx, &stream, &input).unwrap();
    let dst = Buffer::new(ctx, DType::F32, n as u64).unwrap();
    let desc = ScanDesc::inclusive(Op::Sum).with_algorithm(Algorithm::Matrix);
    let mut first: Option<Vec<u32>> = None;
    for _ in 0..10 {
        ctx.scan(&stream, &src, &dst, &desc).unwrap();
        let bits: Vec<u32> = dst
            .download::<f32>(&stream, n)
            .unwrap()
            .iter()
            .map(|x| x.to_bits())
            .collect();
        match &first {
            None => first = Some(bits),
            Some(f) => assert!(f == &bits, "matrix scan results differ between runs"),
        }
    }
}

/// Mixed magnitudes and signs: association order changes the last bits of sums and
/// products.
fn mixed_magnitudes(rng: &mut Rng, op: Op, n: usize) -> Vec<f64> {
    (0..n)
        .map(|_| {
            let unit = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64; // [0, 1)
            let sign = if rng.below(2) == 0 { 1.0 } else { -1.0 };
            match op {
                Op::Product => sign * (1.0 + (unit - 0.5) * 2e-3),
                _ => sign * unit * 10f64.powi(rng.below(13) as i32 - 6),
            }
        })
        .collect()
}

/// The largest error of `got` against the prefix computed in f64, divided by the
/// rigorous bound for any association order (Higham 3.1 and 4.2): gamma_k * |prefix| for
/// a product of k factors (checked while k·u < 1/2, beyond which the bound says nothing),
/// gamma_h * sum |x| for sums with h the GPU's tree height. Above 1 is a wrong result.
///
/// These data cannot catch a lost or repeated tile (products of factors near ±1 even
/// round with a small bias that any tree accumulates, so f32 products drift from the
/// exact value by up to ~1e-2 at 2^24 while staying inside the bound); the exact-data
/// tests above check that.
fn float_prefix_error(data: &[f64], got: &[f64], dtype: DType, op: Op) -> f64 {
    prefix_error_within(data, got, dtype, op, gpu_depth(data.len()))
}

/// As [`float_prefix_error`], for a combination tree at most `h` deep.
fn prefix_error_within(data: &[f64], got: &[f64], dtype: DType, op: Op, h: f64) -> f64 {
    let u = if dtype == DType::F32 {
        f32::EPSILON as f64 / 2.0
    } else {
        f64::EPSILON / 2.0
    };
    let gamma = |k: f64| k * u / (1.0 - k * u);
    let mut running = if op == Op::Product { 1.0 } else { 0.0 };
    let (mut abs, mut worst) = (0.0f64, 0.0f64);
    for (i, &x) in data.iter().enumerate() {
        let x = if dtype == DType::F32 { x as f32 as f64 } else { x };
        running = if op == Op::Product { running * x } else { running + x };
        abs += x.abs();
        let bound = match op {
            Op::Product if (i + 1) as f64 * u < 0.5 => gamma((i + 1) as f64) * running.abs(),
            Op::Product => continue,
            _ => gamma(h) * abs,
        };
        worst = worst.max((got[i] - running).abs() / bound);
    }
    worst
}

/// `data` in a new buffer of `dtype` (F32, rounded once, or F64).
fn upload_floats(ctx: &Context, stream: &Stream, dtype: DType, data: &[f64]) -> Buffer {
    match dtype {
        DType::F32 => Buffer::from_slice(ctx, stream, &data.iter().map(|&x| x as f32).collect::<Vec<_>>()),
        _ => Buffer::from_slice(ctx, stream, data),
    }
    .unwrap()
}

/// The first `n` elements of an F32 or F64 buffer, as f64.
fn download_floats(buf: &Buffer, stream: &Stream, n: usize) -> Vec<f64> {
    match buf.dtype() {
        DType::F32 => buf
            .download::<f32>(stream, n)
            .unwrap()
            .iter()
            .map(|&x| x as f64)
            .collect(),
        _ => buf.download::<f64>(stream, n).unwrap(),
    }
}

/// 50 runs of deterministic f32 and f64 sum and product are bitwise identical, up to
/// n = 2^28; the non-deterministic single pass is shown to differ where it can.
pub(crate) fn deterministic_float_scans_are_bitwise_reproducible() {
    let ctx = gpu();
    let stream = ctx.new_stream().unwrap();
    let mut rng = Rng(0xDE7E);
    let runs = 50;
    let mut failures = Vec::new();
    let cases: [(DType, Op, usize); 9] = [
        (DType::F32, Op::Sum, 5 * 4096 + 3), // the cluster kernel
        (DType::F64, Op::Product, 1 << 16),  // the one-wave kernel
        (DType::F32, Op::Sum, (1 << 20) + 1),
        (DType::F32, Op::Sum, (1 << 24) + 3),
        (DType::F32, Op::Sum, 1 << 28),
        (DType::F32, Op::Product, (1 << 24) + 3),
        (DType::F64, Op::Sum, (1 << 20) + 1),
        (DType::F64, Op::Sum, (1 << 26) + 7),
        (DType::F64, Op::Product, (1 << 24) + 3),
    ];
    for (dtype, op, n) in cases {
        let data = mixed_magnitudes(&mut rng, op, n);
        let input = upload_floats(ctx, &stream, dtype, &data);
        let output = Buffer::new(ctx, dtype, n as u64).unwrap();
        // Each run's bits are compared on the device with the first run's.
        let first_run = Buffer::new(ctx, dtype, n as u64).unwrap();
        let bytes = n as u64 * dtype.size() as u64;
        let mut report = String::new();
        for (label, desc) in [
            ("deterministic", ScanDesc::inclusive(op).deterministic()),
            ("non-deterministic", ScanDesc::inclusive(op)),
        ] {
            let mut differing = 0;
            for run in 0..runs {
                let info = ctx.scan(&stream, &input, &output, &desc).unwrap();
                let expected = if desc.deterministic {
                    (Algorithm::DeterministicSinglePass, ChoiceReason::Deterministic)
                } else {
                    (Algorithm::SinglePass, ChoiceReason::Fastest)
                };
                assert_eq!((info.algorithm, info.reason), expected);
                if run == 0 {
                    // SAFETY: both buffers hold `bytes` bytes and outlive the copy.
                    let copied = unsafe {
                        sys::cuMemcpyDtoDAsync_v2(first_run.addr(), output.addr(), bytes as usize, stream.raw() as _)
                    };
                    assert_eq!(copied, sys::CUresult::CUDA_SUCCESS);
                } else {
                    differing += (differing_words(ctx, &stream, &output, &first_run, bytes) > 0) as usize;
                }
            }
            if desc.deterministic {
                assert_eq!(differing, 0, "{dtype:?} {op:?} n={n}: deterministic runs differ");
            } else if n > 1 << 22 {
                // Where many tiles race, the look-back order (and so the bits) varies.
                assert!(
                    differing > 0,
                    "{dtype:?} {op:?} n={n}: non-deterministic runs never differed"
                );
            }
            // Either order is still a correct scan: compare with the prefix computed in f64.
            let got = download_floats(&output, &stream, n);
            let worst = float_prefix_error(&data, &got, dtype, op);
            if worst > 1.0 {
                failures.push(format!(
                    "{label} {dtype:?} {op:?} n={n}: error {worst:.2e} x the rounding bound"
                ));
            }
            report += &format!(
                "  {label}: {differing} of {} repeat runs differ from the first (error {worst:.1e} x bound)",
                runs - 1
            );
        }
        eprintln!("determinism {dtype:?} {op:?} n={n}:{report}");
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A deterministic scan's bits depend on n, not on where its buffers start: the one-wave
/// kernel (other tiles, so another association order) takes plain scans only where
/// their buffers are aligned for vectors, but deterministic ones by their count of tiles
/// alone, and the cluster kernel takes both by n. Same data, aligned and one element
/// off, in the cluster kernel's range (up to 8 of its tiles), just past it, and in the
/// one-wave kernel's.
pub(crate) fn deterministic_scans_are_alignment_independent() {
    let ctx = gpu();
    let stream = ctx.new_stream().unwrap();
    let mut rng = Rng(0xA119);
    for n in [
        5 * 4096 + 3,
        8 * 4096,
        8 * 4096 + 1,
        16 * 4096,
        (1usize << 20) + 1,
        3 << 18,
    ] {
        let data: Vec<f32> = mixed_magnitudes(&mut rng, Op::Sum, n)
            .iter()
            .map(|&x| x as f32)
            .collect();
        let shifted: Vec<f32> = std::iter::once(0.0).chain(data.iter().copied()).collect();
        let (aligned_in, shifted_in) = (
            Buffer::from_slice(ctx, &stream, &data).unwrap(),
            Buffer::from_slice(ctx, &stream, &shifted).unwrap(),
        );
        let (aligned_out, shifted_out) = (
            Buffer::new(ctx, DType::F32, n as u64).unwrap(),
            Buffer::new(ctx, DType::F32, n as u64 + 1).unwrap(),
        );
        let bits = |input: u64, output: &Buffer, offset: usize, desc: &ScanDesc| -> Vec<u32> {
            let req = RawScan::new(
                input,
                DType::F32,
                output.addr() + 4 * offset as u64,
                DType::F32,
                n as u64,
            );
            // SAFETY: both buffers hold offset + n elements and outlive the synchronous download.
            unsafe { ctx.scan_raw(&stream, &req, desc, None) }.unwrap();
            let all = output.download::<f32>(&stream, offset + n).unwrap();
            all[offset..].iter().map(|x| x.to_bits()).collect()
        };
        for desc in [
            ScanDesc::inclusive(Op::Sum).deterministic(),
            ScanDesc::exclusive(Op::Sum).deterministic(),
        ] {
            let a = bits(aligned_in.addr(), &aligned_out, 0, &desc);
            let b = bits(shifted_in.addr() + 4, &shifted_out, 1, &desc);
            let differing = a.iter().zip(&b).filter(|(x, y)| x != y).count();
            assert_eq!(
                differing, 0,
                "n={n} {desc:?}: aligned and misaligned deterministic scans differ"
            );
        }
    }
}

/// Deterministic float scans along an axis are bitwise reproducible too: the strided
/// kernels' look-back anchors every few tiles of a column's chain. Columns narrow (long
/// chains in flight at once), mid and wide, both directions, f32 and f64, 20 runs each.
pub(crate) fn deterministic_strided_scans_are_bitwise_reproducible() {
    let ctx = gpu();
    let stream = ctx.new_stream().unwrap();
    let mut rng = Rng(0x57D7);
    let runs = 20;
    let sum = ScanDesc::inclusive(Op::Sum).deterministic();
    // Two and four f32 columns, two f64 ones: rows of lanes (the flat kernels).
    let cases: [(DType, [u64; 2], ScanDesc); 8] = [
        (DType::F32, [(1 << 20) + 7, 2], sum),
        (DType::F32, [(1 << 19) + 3, 4], sum.backward()),
        (DType::F64, [(1 << 19) + 1, 2], sum),
        (DType::F32, [(1 << 16) + 3, 64], sum),
        (DType::F32, [4099, 4096], sum.backward()),
        (DType::F64, [(1 << 18) + 1, 8], sum),
        (DType::F64, [(1 << 16) + 5, 33], sum.backward()),
        (
            DType::F32,
            [(1 << 15) + 1, 100],
            ScanDesc::inclusive(Op::Product).deterministic(),
        ),
    ];
    for (dtype, shape, desc) in cases {
        let n = (shape[0] * shape[1]) as usize;
        let data = mixed_magnitudes(&mut rng, desc.op, n);
        let input = upload_floats(ctx, &stream, dtype, &data);
        let output = Buffer::new(ctx, dtype, n as u64).unwrap();
        let first_run = Buffer::new(ctx, dtype, n as u64).unwrap();
        let bytes = n as u64 * dtype.size() as u64;
        let strides = [shape[1] as i64, 1];
        // SAFETY: row-major views of exactly the buffers' elements; the buffers outlive
        // every scan and comparison below.
        let (i, o, first) = unsafe {
            (
                ArrayView::strided(input.addr(), dtype, &shape, &strides).unwrap(),
                ArrayView::strided(output.addr(), dtype, &shape, &strides).unwrap(),
                ArrayView::strided(first_run.addr(), dtype, &shape, &strides).unwrap(),
            )
        };
        let info = ctx.scan_array(&stream, &i, &first, 0, &desc).unwrap();
        assert_eq!(
            (info.algorithm, info.reason),
            (Algorithm::DeterministicSinglePass, ChoiceReason::Deterministic)
        );
        // Each column against its prefix in f64, within the bound of a tree as deep as the
        // column is long (any association order's).
        let got = download_floats(&first_run, &stream, n);
        let (rows, cols) = (shape[0] as usize, shape[1] as usize);
        let mut worst = 0.0f64;
        for c in 0..cols {
            let order: Vec<usize> = match desc.direction {
                scanrt::Direction::Forward => (0..rows).collect(),
                scanrt::Direction::Backward => (0..rows).rev().collect(),
            };
            let column: Vec<f64> = order.iter().map(|&r| data[r * cols + c]).collect();
            let results: Vec<f64> = order.iter().map(|&r| got[r * cols + c]).collect();
            worst = worst.max(prefix_error_within(&column, &results, dtype, desc.op, rows as f64));
        }
        assert!(
            worst <= 1.0,
            "{dtype:?} {shape:?} {desc:?}: error {worst:.2e} x the rounding bound"
        );
        let mut differing = 0;
        for _ in 1..runs {
            ctx.scan_array(&stream, &i, &o, 0, &desc).unwrap();
            differing += (differing_words(ctx, &stream, &output, &first_run, bytes) > 0) as usize;
        }
        eprintln!(
            "strided determinism {dtype:?} {shape:?} {:?} {:?}: {differing} of {} runs differ",
            desc.op,
            desc.direction,
            runs - 1
        );
        assert_eq!(differing, 0, "{dtype:?} {shape:?} {desc:?}: deterministic runs differ");
    }
}
