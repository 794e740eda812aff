//! Plain scans: every dtype pair, operator and mode through every algorithm against the
//! sequential reference, edge sizes, misaligned and in-place buffers, large and more than
//! 2^32 elements, zero length, and the seeds' worked examples.

use scanrt::{
    check_types, Algorithm, Buffer, DType, Direction, Op, RawScan, ScanDesc, ScanrtStatus, Segments, TYPE_PAIRS,
};

use crate::common::*;
use crate::support::*;

pub(crate) fn randomized_every_pair_operator_mode_and_algorithm() {
    let ctx = gpu();
    let stream = ctx.new_stream().unwrap();
    let mut rng = Rng(0x5CA9);
    let mut tally = Tally::default();
    for pair in TYPE_PAIRS {
        let (tile, bulk_tile, wave_tile) = tile_lengths(ctx, pair.0, pair.1);
        let sizes = edge_sizes(tile, bulk_tile, wave_tile);
        for op in Op::ALL {
            if check_types(pair.0, pair.1, op).is_err() {
                continue;
            }
            for algorithm in [
                Algorithm::SinglePass,
                Algorithm::DeterministicSinglePass,
                Algorithm::Matrix,
            ] {
                for inclusive in [true, false] {
                    for with_init in [false, true] {
                        // Every size for the plain variant, three sampled sizes for the others.
                        let picks: Vec<usize> = if inclusive && !with_init {
                            sizes.to_vec()
                        } else {
                            (0..3).map(|_| sizes[rng.below(sizes.len() as u64) as usize]).collect()
                        };
                        for n in picks {
                            let c = Case {
                                inclusive,
                                with_init,
                                ..Case::plain(op, algorithm, n)
                            };
                            tally.record(with_pair!(pair, run_case(ctx, &stream, &mut rng, c)), || {
                                format!("{pair:?} {c:?}")
                            });
                        }
                    }
                }
            }
        }
    }
    tally.assert_no_failures("randomized");
}

pub(crate) fn random_sizes_misaligned_and_in_place() {
    let ctx = gpu();
    let stream = ctx.new_stream().unwrap();
    let mut rng = Rng(0xA11E);
    let mut tally = Tally::default();
    for round in 0..600 {
        let pair = TYPE_PAIRS[rng.below(TYPE_PAIRS.len() as u64) as usize];
        let op = Op::ALL[rng.below(7) as usize];
        if check_types(pair.0, pair.1, op).is_err() {
            continue;
        }
        let n = match round % 3 {
            0 => 1 + rng.below(5000) as usize,
            1 => 1 + rng.below(1 << 18) as usize,
            _ => (1usize << (10 + rng.below(12))) + rng.below(3) as usize - 1, // 2^k - 1, 2^k, 2^k + 1
        };
        let in_place = pair.0 == pair.1 && rng.below(3) == 0;
        let c = Case {
            op,
            inclusive: rng.below(2) == 0,
            with_init: rng.below(2) == 0,
            algorithm: if rng.below(2) == 0 {
                Algorithm::SinglePass
            } else {
                Algorithm::Matrix
            },
            n,
            in_offset: rng.below(4),
            out_offset: rng.below(4),
            in_place,
            direction: Direction::Forward,
            segments: Segments::None,
            pattern: SegmentPattern::NoneSet,
        };
        tally.record(with_pair!(pair, run_case(ctx, &stream, &mut rng, c)), || {
            format!("{pair:?} {c:?}")
        });
    }
    tally.assert_no_failures("misaligned/in-place");
}

pub(crate) fn large_inputs_up_to_2_pow_28() {
    let ctx = gpu();
    let stream = ctx.new_stream().unwrap();
    let mut rng = Rng(0xB16);
    // Many more tiles than resident blocks: every block runs many rounds.
    for algorithm in [
        Algorithm::SinglePass,
        Algorithm::DeterministicSinglePass,
        Algorithm::Matrix,
    ] {
        for (pair, n, op) in [
            ((DType::U32, DType::U32), 1usize << 28, Op::Sum),
            ((DType::F32, DType::F32), (1 << 28) - 1, Op::Sum),
            ((DType::U64, DType::U64), (1 << 27) + 1, Op::Sum),
            ((DType::F64, DType::F64), 1 << 27, Op::Sum),
            ((DType::I32, DType::I64), (1 << 26) + 3, Op::Sum),
            // Exact powers of two: a lost or repeated tile changes the sign or the exponent.
            ((DType::F64, DType::F64), (1 << 26) + 1, Op::Product),
        ] {
            let c = Case {
                with_init: true,
                ..Case::plain(op, algorithm, n)
            };
            with_pair!(pair, run_case(ctx, &stream, &mut rng, c)).unwrap_or_else(|e| panic!("{pair:?} {c:?}: {e}"));
            eprintln!("large: {pair:?} n={n} {op:?} {algorithm:?} ok");
        }
    }
}

/// More than 2^32 u8 elements summed into u32 offsets, checked at sampled positions.
pub(crate) fn more_than_2_pow_32_elements() {
    let ctx = gpu();
    let stream = ctx.new_stream().unwrap();
    let n: u64 = (1 << 32) + (1 << 20) + 7;
    let mut rng = Rng(0xF00D);
    let input: Vec<u8> = (0..n)
        .map(|i| (i.wrapping_mul(0x9E3779B97F4A7C15) >> 59) as u8)
        .collect();
    let prefix: Vec<u32> = input
        .iter()
        .scan(0u32, |s, &x| {
            *s = s.wrapping_add(x as u32);
            Some(*s)
        })
        .collect();
    let src = Buffer::from_slice(ctx, &stream, &input).unwrap();
    drop(input);
    let out = Buffer::new(ctx, DType::U32, n).unwrap();
    let mut samples: Vec<u64> = (0..2000).map(|_| rng.below(n)).collect();
    samples.extend([0, 1, (1 << 32) - 1, 1 << 32, (1 << 32) + 1, n - 1]);
    for algorithm in [Algorithm::SinglePass, Algorithm::Matrix] {
        let desc = ScanDesc::inclusive(Op::Sum).with_algorithm(algorithm);
        ctx.scan(&stream, &src, &out, &desc).unwrap();
        for &i in &samples {
            let got: Vec<u32> = view(ctx, &out, DType::U32, i, 1).download(&stream, 1).unwrap();
            assert_eq!(got[0], prefix[i as usize], "{algorithm:?} at {i}");
        }
        eprintln!(
            "n = {n} u8 -> u32 {algorithm:?}: {} sampled positions match",
            samples.len()
        );
    }
}

pub(crate) fn zero_length_is_a_no_op() {
    let ctx = gpu();
    let stream = ctx.new_stream().unwrap();
    let a = Buffer::new(ctx, DType::U32, 0).unwrap();
    let b = Buffer::new(ctx, DType::U32, 0).unwrap();
    ctx.scan(&stream, &a, &b, &ScanDesc::default()).unwrap();
    // SAFETY: n = 0 touches no memory, even through NULL.
    unsafe {
        ctx.scan_raw(
            &stream,
            &RawScan {
                input: 0,
                input_dtype: DType::U32,
                output: 0,
                output_dtype: DType::U32,
                n: 0,
                segments: 0,
            },
            &ScanDesc::default(),
            None,
        )
    }
    .unwrap();
}

/// The worked examples of seeds 001, 002 and 004, exactly, through the typed segmented
/// API (byte and bit flags) on every GPU algorithm.
pub(crate) fn seed_examples_on_the_gpu() {
    let ctx = gpu();
    let stream = ctx.new_stream().unwrap();
    for algorithm in [
        Algorithm::SinglePass,
        Algorithm::DeterministicSinglePass,
        Algorithm::Matrix,
    ] {
        for example in seed_examples() {
            let desc = example.desc.with_algorithm(algorithm);
            let input = Buffer::from_slice(ctx, &stream, &example.input).unwrap();
            let output = Buffer::new(ctx, DType::I32, example.input.len() as u64).unwrap();
            match &example.flags {
                None => {
                    ctx.scan(&stream, &input, &output, &desc).unwrap();
                }
                Some(flags) => {
                    let bytes = Buffer::from_slice(ctx, &stream, flags).unwrap();
                    let bits = Buffer::from_slice(ctx, &stream, &pack_bits(flags)).unwrap();
                    for (kind, data) in [(Segments::ByteFlags, &bytes), (Segments::BitFlags, &bits)] {
                        ctx.scan_segmented(&stream, &input, data, &output, &desc.segmented(kind))
                            .unwrap();
                        let got: Vec<i32> = output.download(&stream, example.input.len()).unwrap();
                        assert_eq!(got, example.expected, "{} ({kind:?}, {algorithm:?})", example.name);
                    }
                    continue;
                }
            }
            let got: Vec<i32> = output.download(&stream, example.input.len()).unwrap();
            assert_eq!(got, example.expected, "{} ({algorithm:?})", example.name);
            eprintln!("seed example ok: {} ({algorithm:?})", example.name);
        }
    }
}

/// f32 data combined in f64 (`ScanDesc::accumulate_in`) through every algorithm, both
/// directions, flags and rows, in place, at every tile boundary of the kernels that
/// run it and past 2^24.
pub(crate) fn wide_accumulators_every_algorithm_and_tile_boundary() {
    let ctx = gpu();
    let stream = ctx.new_stream().unwrap();
    assert!(crate::common::accumulators::narrow_accumulation_would_fail(100_000));
    let desc = ScanDesc::inclusive(Op::Sum).accumulate_in(DType::F64);
    let lengths = ctx.tile_lengths(DType::F32, DType::F32, &desc).unwrap();
    let tile = lengths.register_staged as usize;
    let mut sizes = vec![1, 2, 33, tile - 1, tile, tile + 1, 2 * tile + 1, (1 << 16) + 1, 1 << 20];
    sizes.extend(striped_kernel_sizes(&lengths));
    sizes.extend([(1 << 24) + 3]);
    let failures = crate::common::accumulators::sweep_wide_accumulators(
        ctx,
        &stream,
        0x05CA_9F64,
        &sizes,
        &[
            Algorithm::SinglePass,
            Algorithm::DeterministicSinglePass,
            Algorithm::Matrix,
        ],
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Scans written as 8- and 16-bit integers (combined in 32 bits, narrowed as written):
/// every type, operator, algorithm, direction and segment form, in place, at every tile
/// boundary of the kernels that run them and past 2^24.
pub(crate) fn small_integers_every_algorithm_and_tile_boundary() {
    let ctx = gpu();
    let stream = ctx.new_stream().unwrap();
    let mut sizes = vec![1, 2, 33, (1 << 16) + 1, (1 << 24) + 3];
    for dtype in [DType::U8, DType::I8, DType::U16, DType::I16] {
        let lengths = ctx.tile_lengths(dtype, dtype, &ScanDesc::inclusive(Op::Sum)).unwrap();
        let tile = lengths.register_staged as usize;
        sizes.extend([tile - 1, tile, tile + 1, 2 * tile + 1]);
        sizes.extend(striped_kernel_sizes(&lengths));
    }
    sizes.sort_unstable();
    sizes.dedup();
    let (cases, failures) = crate::common::small_integers::sweep_small_integers(
        ctx,
        &stream,
        0x5_11A1_1E27,
        &sizes,
        &[
            Algorithm::SinglePass,
            Algorithm::DeterministicSinglePass,
            Algorithm::Matrix,
        ],
    );
    eprintln!("small integers: {cases} cases, {} failed", failures.len());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The sizes around the edges of the one-wave and cluster kernels, which convert as they
/// read and narrow as they store (where the device has them): one cluster tile, a whole
/// cluster and one element past it, nine one-wave tiles less one.
fn striped_kernel_sizes(lengths: &scanrt::TileLengths) -> Vec<usize> {
    eprintln!(
        "one-wave tile {}, cluster tile {} x {}",
        lengths.wave, lengths.cluster, lengths.cluster_blocks
    );
    let cluster = (lengths.cluster * lengths.cluster_blocks as u64) as usize;
    let mut sizes = Vec::new();
    if cluster > 0 {
        sizes.extend([lengths.cluster as usize + 3, cluster - 1, cluster + 1]);
    }
    if lengths.wave > 0 {
        sizes.push(9 * lengths.wave as usize - 1);
    }
    sizes
}

/// f16 and bf16 data read into f32 and written as their type or f32: both types and
/// outputs, every operator, algorithm, direction and segment form, in place, NaN and
/// infinities, at every tile boundary of the kernels that run them (the cluster, one-wave,
/// register-staged and bulk-copy tiles) and past 2^24.
pub(crate) fn half_types_every_algorithm_and_tile_boundary() {
    let ctx = gpu();
    let stream = ctx.new_stream().unwrap();
    let desc = ScanDesc::inclusive(Op::Sum);
    let lengths = ctx.tile_lengths(DType::F16, DType::F16, &desc).unwrap();
    assert!(lengths.bulk > 0, "half types take the bulk-copy kernel (sm_90)");
    let (tile, bulk) = (lengths.register_staged as usize, lengths.bulk as usize);
    let mut sizes = vec![
        1,
        33,
        3 * tile / 2 + 5, // the small-scan shape's tiles
        tile - 1,
        tile,
        tile + 1,
        2 * tile + 1,
        (1 << 16) + 1,
        1 << 20,
        600 * bulk + 7, // the bulk-copy kernel's
    ];
    sizes.extend(striped_kernel_sizes(&lengths));
    let algorithms = [
        Algorithm::SinglePass,
        Algorithm::DeterministicSinglePass,
        Algorithm::Matrix,
    ];
    let sweep = crate::common::half_types::sweep_half_types;
    let mut failures = sweep(ctx, &stream, 0x05CA_9F16, &sizes, &algorithms);
    failures.extend(sweep(ctx, &stream, 0x5CA9_BF16, &[(1 << 24) + 3], &[Algorithm::Auto]));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Typed array views on the GPU: rows of row-major arrays along the last axis (every
/// row length around the tile boundaries, both directions), device addresses of memory
/// scanrt did not allocate, and host memory refused with a status.
pub(crate) fn array_views_rows_and_foreign_memory() {
    use scanrt::ArrayView;
    let ctx = gpu();
    let stream = ctx.new_stream().unwrap();
    let mut rng = Rng(0x00A7_7A6A);
    let (tile, _, _) = tile_lengths(ctx, DType::F32, DType::F32);
    let mut tally = Tally::default();
    for (rows, len) in [
        (1usize, tile + 1),
        (3, tile - 1),
        (1000, 33),
        (7, 3 * tile + 5),
        (1 << 12, 1 << 10),
    ] {
        for direction in [Direction::Forward, Direction::Backward] {
            let n = rows * len;
            let input: Vec<f32> = random_vec(&mut rng, Op::Sum, n);
            let a = Buffer::from_slice(ctx, &stream, &input).unwrap();
            let b = Buffer::new(ctx, DType::F32, n as u64).unwrap();
            let desc = ScanDesc {
                direction,
                ..ScanDesc::inclusive(Op::Sum)
            };
            let shape = [rows as u64, len as u64];
            // The output as a raw device address: the driver checks it.
            let out = unsafe { ArrayView::contiguous(b.addr(), DType::F32, &shape).unwrap() };
            ctx.scan_array(
                &stream,
                &ArrayView::of_buffer_shaped(&a, &shape).unwrap(),
                &out,
                -1,
                &desc,
            )
            .unwrap();
            let got: Vec<f32> = b.download(&stream, n).unwrap();
            let starts: Vec<bool> = (0..n).map(|p| p % len == 0).collect();
            tally.record(
                compare_segmented(&input, Some(&starts), &desc, &got, gpu_depth(len)),
                || format!("{rows}x{len} {direction:?}"),
            );
        }
    }
    tally.assert_no_failures("array views");
    let host = vec![1u32; 1024];
    let mut out = Buffer::new(ctx, DType::U32, 1024).unwrap();
    let e = ctx
        .scan_array(
            &stream,
            &ArrayView::of_slice(&host),
            &ArrayView::of_buffer_mut(&mut out),
            0,
            &ScanDesc::default(),
        )
        .unwrap_err();
    assert_eq!(e.status, ScanrtStatus::NotDeviceMemory, "{}", e.message);
}
