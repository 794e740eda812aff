//! Strided scans on the GPU (kernels/device/strided_scan.cuh): the shared sweep of
//! `common::strided` at lengths around every strip width's tile rows (128 and 64 rows of
//! 4- and 8-byte values at 32 columns, 4096 and 2048 at one column) and column counts
//! around each strip width, large columns, pitched rows and strided 1-D arrays past 2^24
//! elements, and a compute-sanitizer subset.

use scanrt::{ArrayView, Buffer, Op, ScanDesc};

use crate::common::strided::sweep;
use crate::common::*;

pub(crate) fn strided_layouts_at_tile_boundaries() {
    let ctx = gpu();
    let stream = ctx.new_stream().unwrap();
    let mut rng = Rng(0x5791_DE01);
    let lengths = [
        1u64, 2, 31, 32, 33, 63, 64, 65, 127, 129, 1023, 1025, 2047, 2048, 2049, 4097, 20_000,
    ];
    let columns = [1u64, 2, 3, 4, 5, 8, 9, 16, 17, 31, 32, 33, 64, 65, 100];
    // Many strips (35 and 3 x 13): the lane-wise look-back's chains.
    let mut shapes = vec![(2u64, 0u64, 3u64), (1, 5, 0), (1, 129, 1100), (3, 65, 400)];
    for _ in 0..28 {
        let len = lengths[rng.below(lengths.len() as u64) as usize];
        let cols = columns[rng.below(columns.len() as u64) as usize];
        let batches = 1 + rng.below(3);
        if batches * len * cols <= 400_000 {
            shapes.push((batches, len, cols));
        }
    }
    let failures = sweep(ctx, &stream, 0x5791_DE02, &shapes);
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Narrow columns, which the GPU scans as rows of lanes (rows of 8 and 16 bytes: two or
/// four 4-byte columns, two 8-byte ones) through the flat kernels, at row counts around
/// each of their tiles (8-byte rows: 2048 rows per register-staged and cluster block, 4096
/// per one-wave block; 16-byte rows: 1024 and 2048), past the cluster kernel's 16 blocks,
/// and in batches (rows of rows); the sweep's other layouts and types take the strided
/// kernel at the same shapes.
pub(crate) fn narrow_columns_at_tile_boundaries() {
    let ctx = gpu();
    let stream = ctx.new_stream().unwrap();
    let lengths = [
        1u64, 2, 511, 512, 513, 1023, 1024, 1025, 2047, 2048, 2049, 4095, 4097, 40_001, 70_000,
    ];
    let mut shapes = Vec::new();
    for (k, &len) in lengths.iter().enumerate() {
        for columns in [2u64, 4] {
            shapes.push((1 + (k as u64 + columns) % 3, len, columns));
        }
    }
    let failures = sweep(ctx, &stream, 0x1A2E_5001, &shapes);
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

pub(crate) fn strided_sanitizer_subset() {
    let ctx = gpu();
    let stream = ctx.new_stream().unwrap();
    // (1, 2048, 5): pitched rows of whole vectors, which take the bulk-copy kernel when
    // SCANRT_BULK_MIN_TILES=2 forces it at this size; (1, 4097, 2) and (2, 1025, 4): rows
    // of lanes (the flat kernels), one matrix and a batch; (2, 33, 530): 34 chains, a
    // lane per column looking back.
    let shapes = [
        (2, 65, 33),
        (1, 2049, 3),
        (1, 2048, 5),
        (1, 4097, 2),
        (2, 1025, 4),
        (2, 33, 530),
    ];
    let failures = sweep(ctx, &stream, 0x5A5E, &shapes);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    let failures = crate::common::strided_operators::sweep(ctx, &stream, 0x5A5F, &[(2, 65, 33), (1, 700, 3)]);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // Summed-area tables (one pass, and two strided scans): several strips, one strip, a
    // batch.
    let failures =
        crate::common::summed_area::summed_area_tables(ctx, &stream, 0x5A60, &[(1, 65, 70), (1, 33, 9), (2, 5, 40)]);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// User-defined operators along an axis (a 16-byte recurrence state with carries per
/// sequence; a maximum with its index, two outputs) at lengths around the tile rows of
/// 16-byte states (4 rows per thread: 32 rows at 32 columns, 1024 at one) and 8-byte ones,
/// and column counts around each strip width.
pub(crate) fn user_operators_along_an_axis() {
    let ctx = gpu();
    let stream = ctx.new_stream().unwrap();
    let mut rng = Rng(0x0957_81DE);
    let lengths = [1u64, 2, 31, 32, 33, 63, 65, 255, 257, 1023, 1025, 2049, 20_000];
    let columns = [1u64, 2, 3, 4, 5, 8, 9, 16, 17, 31, 32, 33, 64, 65, 100];
    let mut shapes = vec![(2u64, 0u64, 3u64), (1, 5, 0), (1, 100_003, 2), (1, 4099, 64)];
    for _ in 0..24 {
        let len = lengths[rng.below(lengths.len() as u64) as usize];
        let cols = columns[rng.below(columns.len() as u64) as usize];
        let batches = 1 + rng.below(3);
        if batches * len * cols <= 400_000 {
            shapes.push((batches, len, cols));
        }
    }
    let failures = crate::common::strided_operators::sweep(ctx, &stream, 0x0957_81DF, &shapes);
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// `rows x columns` of `T` scanned along `axis` through views with `in_strides` and
/// `out_strides` over buffers of `in_len` and `out_len` elements; checks every element
/// against a sequential loop over the same strides.
#[allow(clippy::too_many_arguments)]
fn large_case<T: TestInput + TestOutput>(
    label: &str,
    shape: &[u64],
    in_strides: &[i64],
    out_strides: &[i64],
    axis: usize,
    in_len: usize,
    out_len: usize,
    desc: &ScanDesc,
) {
    let ctx = gpu();
    let stream = ctx.new_stream().unwrap();
    let mut rng = Rng(0x1A26E ^ in_len as u64);
    let input: Vec<T> = random_vec(&mut rng, desc.op, in_len);
    let in_buf = Buffer::from_slice(ctx, &stream, &input).unwrap();
    let out_buf = Buffer::new(ctx, T::DTYPE, out_len as u64).unwrap();
    // SAFETY: the strides reach no element past the buffers' lengths (checked by the
    // caller's arithmetic); both live until the download.
    let (i, o) = unsafe {
        (
            ArrayView::strided(in_buf.addr(), T::DTYPE, shape, in_strides).unwrap(),
            ArrayView::strided(out_buf.addr(), T::DTYPE, shape, out_strides).unwrap(),
        )
    };
    let started = std::time::Instant::now();
    ctx.scan_array(&stream, &i, &o, axis as isize, desc).unwrap();
    let got: Vec<T> = out_buf.download(&stream, out_len).unwrap();
    let elapsed = started.elapsed();
    // The other axis (2-D shapes): each sequence walked with a sequential loop.
    let other = 1 - axis;
    let mut bad = 0;
    for s in 0..shape[other] {
        let mut running = T::identity(desc.op);
        let len = shape[axis];
        for k in 0..len {
            let step = if desc.direction == scanrt::Direction::Backward {
                len - 1 - k
            } else {
                k
            };
            let at = |strides: &[i64]| (s as i64 * strides[other] + step as i64 * strides[axis]) as usize;
            running = T::combine(desc.op, running, input[at(in_strides)]);
            if got[at(out_strides)].to_bits() != running.to_bits() {
                let (g, w) = (TestOutput::as_f64(got[at(out_strides)]), TestOutput::as_f64(running));
                if T::UNIT_ROUNDOFF.is_none() || (g - w).abs() > 1e-4 * w.abs().max(1.0) {
                    bad += 1;
                    if bad < 5 {
                        eprintln!("{label}: sequence {s} element {step}: got {g}, want {w}");
                    }
                }
            }
        }
    }
    eprintln!("{label}: {elapsed:?} with the download");
    assert_eq!(bad, 0, "{label}: {bad} elements differ");
}

pub(crate) fn large_strided_scans() {
    let sum = ScanDesc::inclusive(Op::Sum);
    // Columns of [8192, 8192] f32 (multiples of 1/8: exact), along dim 0.
    let n = 8192usize;
    large_case::<f32>(
        "columns 8192x8192 f32",
        &[8192, 8192],
        &[8192, 1],
        &[8192, 1],
        0,
        n * n,
        n * n,
        &sum,
    );
    // Narrow strips whose chains of tiles (hundreds to thousands) are in flight at once, so
    // that each look-back walks far: one column (a 1-D array with a stride), two and four
    // columns, both directions.
    let len = (1usize << 21) + 3;
    large_case::<u32>(
        "strided 1-D 2^21+3 u32, stride 2",
        &[1, len as u64],
        &[2 * len as i64, 2],
        &[len as i64, 1],
        1,
        2 * len,
        len,
        &sum,
    );
    let rows = (1usize << 20) + 7;
    large_case::<u32>(
        "columns (2^20+7)x2 u32",
        &[rows as u64, 2],
        &[2, 1],
        &[2, 1],
        0,
        2 * rows,
        2 * rows,
        &sum,
    );
    let rows = (1usize << 19) + 5;
    large_case::<u64>(
        "columns (2^19+5)x4 u64, backward",
        &[rows as u64, 4],
        &[4, 1],
        &[4, 1],
        0,
        4 * rows,
        4 * rows,
        &sum.backward(),
    );
    // Two columns of 2^22 + 5 rows, backward max.
    let rows = (1usize << 22) + 5;
    let max = ScanDesc::inclusive(Op::Max).backward();
    large_case::<u32>(
        "columns (2^22+5)x2 u32",
        &[rows as u64, 2],
        &[2, 1],
        &[2, 1],
        0,
        2 * rows,
        2 * rows,
        &max,
    );
    // Three rows of 2^23 + 1 with a pitch of 2^23 + 16, into a contiguous output.
    let len = (1usize << 23) + 1;
    let pitch = (1usize << 23) + 16;
    large_case::<u64>(
        "pitched rows 3x(2^23+1) u64",
        &[3, len as u64],
        &[pitch as i64, 1],
        &[len as i64, 1],
        1,
        3 * pitch,
        3 * len,
        &sum,
    );
    // 2^10 rows of 2^16 u32 a pitch of 2^16 + 32 apart into rows 2^16 + 64 apart (the
    // bulk-copy kernel), forward and backward.
    let (rows, len) = (1usize << 10, 1usize << 16);
    for desc in [sum, ScanDesc::inclusive(Op::Max).backward()] {
        large_case::<u32>(
            "pitched rows 1024x65536 u32",
            &[rows as u64, len as u64],
            &[len as i64 + 32, 1],
            &[len as i64 + 64, 1],
            1,
            rows * (len + 32),
            rows * (len + 64),
            &desc,
        );
    }
    // Rows of 16-byte lanes past the bulk-copy kernel's threshold (512 register-staged
    // tiles of 1024 rows): four f32 columns, two f64 columns backward.
    let rows = (1usize << 21) + 3;
    large_case::<f32>(
        "columns (2^21+3)x4 f32",
        &[rows as u64, 4],
        &[4, 1],
        &[4, 1],
        0,
        4 * rows,
        4 * rows,
        &sum,
    );
    let rows = (1usize << 20) + 1;
    large_case::<f64>(
        "columns (2^20+1)x2 f64, backward",
        &[rows as u64, 2],
        &[2, 1],
        &[2, 1],
        0,
        2 * rows,
        2 * rows,
        &sum.backward(),
    );
    // A column-major [2^24 + 3, 2] i64 along dim 0: contiguous sequences, batched.
    let rows = (1usize << 24) + 3;
    large_case::<i64>(
        "column-major (2^24+3)x2 i64",
        &[rows as u64, 2],
        &[1, rows as i64],
        &[1, rows as i64],
        0,
        2 * rows,
        2 * rows,
        &ScanDesc::inclusive(Op::Min),
    );
}

/// Summed-area tables in one pass past the sweep's sizes: 8192 x 8192 u32 sums (64 bands
/// of 256 tiles: both look-backs walk far) and a batch of two 3001 x 4099 u64 maxima
/// read through rows padded to 4104, into partial last bands and strips; every element
/// against nested loops.
pub(crate) fn large_summed_area_tables() {
    large_table::<u32>("8192x8192 u32 sum", [1, 8192, 8192], 8192, Op::Sum);
    large_table::<u64>("2x3001x4099 u64 max, padded rows", [2, 3001, 4099], 4104, Op::Max);
}

fn large_table<T: TestInput + TestOutput>(label: &str, shape: [u64; 3], pitch: u64, op: Op) {
    let ctx = gpu();
    let stream = ctx.new_stream().unwrap();
    let [b_, r, c] = shape.map(|v| v as usize);
    let in_len = b_ * r * pitch as usize;
    let mut rng = Rng(0x5A7_B16 ^ in_len as u64);
    let input: Vec<T> = random_vec(&mut rng, op, in_len);
    let in_buf = Buffer::from_slice(ctx, &stream, &input).unwrap();
    let out_buf = Buffer::new(ctx, T::DTYPE, (b_ * r * c) as u64).unwrap();
    let in_strides = [(r as u64 * pitch) as i64, pitch as i64, 1];
    // SAFETY: the strides reach no element past either buffer; both live until the download.
    let (i, o) = unsafe {
        (
            ArrayView::strided(in_buf.addr(), T::DTYPE, &shape, &in_strides).unwrap(),
            ArrayView::contiguous(out_buf.addr(), T::DTYPE, &shape).unwrap(),
        )
    };
    let info = ctx
        .summed_area_table(&stream, &i, &o, &ScanDesc::inclusive(op))
        .unwrap();
    let got: Vec<T> = out_buf.download(&stream, b_ * r * c).unwrap();
    // Each row's running value, combined down each column.
    let mut bad = 0;
    for b in 0..b_ {
        let mut above = vec![T::identity(op); c];
        for y in 0..r {
            let mut running = T::identity(op);
            for x in 0..c {
                running = T::combine(op, running, input[b * r * pitch as usize + y * pitch as usize + x]);
                above[x] = T::combine(op, above[x], running);
                if got[(b * r + y) * c + x].to_bits() != above[x].to_bits() {
                    bad += 1;
                }
            }
        }
    }
    assert_eq!(bad, 0, "{label}: {bad} wrong elements ({info:?})");
}

pub(crate) fn summed_area_tables_on_the_gpu() {
    let ctx = gpu();
    let stream = ctx.new_stream().unwrap();
    // Columns around the strided kernel's strips of 32 (one strip, a partial last strip,
    // many strips), rows around its tiles of 128 (4-byte) and 64 (8-byte) rows of 32
    // columns, and batches of tables.
    let shapes = [
        (1, 1, 1),
        (1, 300, 300),
        (2, 129, 70),
        (1, 4097, 3),
        (1, 2000, 2000),
        (1, 0, 5),
        (1, 5, 0),
        (1, 129, 32),
        (1, 127, 33),
        (1, 65, 64),
        (1, 1000, 65),
        (1, 257, 255),
        (1, 63, 257),
        (1, 3, 1000),
        (1, 1, 300),
        (3, 64, 100),
        (2, 700, 1100),
    ];
    let failures = crate::common::summed_area::summed_area_tables(ctx, &stream, 0x5A7E, &shapes);
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
