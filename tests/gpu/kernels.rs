//! Each single-pass kernel at every size (the suites rerun with one kernel forced), the
//! look-back's tag wrap-around, and the compute-sanitizer subset.

use scanrt::{recipes, Algorithm, Buffer, DType, Direction, Op, RawScan, ScanDesc, Segments};

use crate::common::operators::*;
use crate::common::*;
use crate::support::*;

/// The suites that reach the single-pass kernels at every size, alignment, direction and
/// mode, rerun in a child process by the tests that force one kernel everywhere.
const SINGLE_PASS_SUITES: [&str; 17] = [
    "scans::randomized_every_pair_operator_mode_and_algorithm",
    "scans::random_sizes_misaligned_and_in_place",
    "backward_segmented::randomized_backward_segmented_and_deterministic",
    "determinism::deterministic_float_scans_are_bitwise_reproducible",
    "scans::large_inputs_up_to_2_pow_28",
    "scans::more_than_2_pow_32_elements",
    "applications::stress_threads_and_streams",
    "applications::graph_capture_and_replay",
    "applications::caller_workspace_back_to_back",
    "kernels::tag_wraparound_clears_stale_slots",
    "scans::seed_examples_on_the_gpu",
    "operators::recipes_match_sequential_loops",
    "operators::examples_match_sequential_loops",
    "operator_space::operator_space_states_of_4_to_16_bytes",
    "scans::half_types_every_algorithm_and_tile_boundary",
    "scans::wide_accumulators_every_algorithm_and_tile_boundary",
    // Rows with a pitch, which only the bulk-copy kernel reads.
    "strided::strided_layouts_at_tile_boundaries",
];

/// Whether this process already forces one single-pass kernel (a child of the tests
/// below, or a caller who set the variables), so those tests must not rerun the suites.
fn forcing_a_kernel() -> bool {
    [
        "SCANRT_BULK_MIN_TILES",
        "SCANRT_WAVE_MAX_TILES",
        "SCANRT_CLUSTER_MAX_BLOCKS",
    ]
    .iter()
    .any(|v| std::env::var_os(v).is_some())
}

/// Reruns `suites` with `env` set, each in a child process of its own, all at once (the
/// longest suite, not their sum, sets the time).
fn rerun_suites(suites: &[&str], env: &[(&str, &str)], what: &str) {
    let children: Vec<_> = suites
        .iter()
        .map(|suite| {
            let child = std::process::Command::new(std::env::current_exe().unwrap())
                .args(["--exact", "--test-threads=1", suite])
                .envs(env.iter().copied())
                .spawn()
                .unwrap();
            (suite, child)
        })
        .collect();
    let failed: Vec<_> = children
        .into_iter()
        .filter_map(|(suite, mut child)| (!child.wait().unwrap().success()).then_some(*suite))
        .collect();
    assert!(failed.is_empty(), "with {what}, these suites failed: {failed:?}");
}

/// The bulk-copy single pass (sm_90+, input type = output type, or an operator's
/// transforms) serves only scans of at least `bulk_min_tiles` tiles (512, segmented 4096)
/// that the one-wave kernel does not take. This test reruns the suites that reach it in a
/// child process with `SCANRT_BULK_MIN_TILES=2` (and the one-wave kernel off), so that it
/// also meets every edge size, partial and misaligned tile, in-place buffer, backward and
/// deterministic scan, graph replay, caller workspace, tag wrap-around, and the recipes'
/// transforms (logcumsumexp's rescanned rows).
pub(crate) fn bulk_copy_single_pass_at_every_size() {
    let ctx = gpu();
    if forcing_a_kernel() {
        return; // this is a child (or the caller forces a kernel already)
    }
    let report = ctx.kernel_report(DType::U32, DType::U32, Op::Sum).unwrap();
    if !report.contains("bulk-copy") {
        eprintln!("skipped: no bulk-copy kernel on this device ({report})");
        return;
    }
    rerun_suites(
        &SINGLE_PASS_SUITES,
        &[
            ("SCANRT_BULK_MIN_TILES", "2"),
            ("SCANRT_WAVE_MAX_TILES", "0"),
            ("SCANRT_CLUSTER_MAX_BLOCKS", "0"),
        ],
        "the bulk-copy kernel at every size",
    );
}

/// The one-wave single pass (plain and segmented scans, both pointers aligned for the
/// direction, or deterministic ones up to a constant count of tiles) serves only scans whose tiles are
/// all resident at once. This test reruns the suites in a child process with
/// `SCANRT_WAVE_MAX_TILES` unbounded (and the bulk-copy and cluster kernels off), so it
/// also meets every size up to more than 2^32 elements, many blocks per SM, graph replay,
/// caller workspaces and tag wrap-around. (Tickets keep it correct beyond one wave.)
pub(crate) fn one_wave_single_pass_at_every_size() {
    let _ctx = gpu();
    if forcing_a_kernel() {
        return; // this is a child (or the caller forces a kernel already)
    }
    let max = u64::MAX.to_string();
    rerun_suites(
        &SINGLE_PASS_SUITES,
        &[
            ("SCANRT_WAVE_MAX_TILES", &max),
            ("SCANRT_BULK_MIN_TILES", &max),
            ("SCANRT_CLUSTER_MAX_BLOCKS", "0"),
        ],
        "the one-wave kernel at every size",
    );
}

/// The cluster kernel (scans of at most one thread-block cluster of tiles, sm_90+) at
/// every cluster size, one tile past the largest (where the other kernels take over),
/// whole and partial last tiles: 1-, 4- and 8-byte inputs, every operator and algorithm
/// (fixed-order scans stop at the portable 8 tiles), both directions, inclusive and
/// exclusive, initial values, misaligned and in-place buffers, plain and segmented (every
/// form of segments, heads at tile and group edges).
pub(crate) fn cluster_kernel_at_every_cluster_size() {
    let ctx = gpu();
    let stream = ctx.new_stream().unwrap();
    let mut rng = Rng(0xC1A5);
    eprintln!("cluster kernel sweep, seed {:#x}", rng.0);
    let mut tally = Tally::default();
    for pair in [
        (DType::U32, DType::U32),
        (DType::F32, DType::F32),
        (DType::F64, DType::F64),
        (DType::U8, DType::U64),
        (DType::I32, DType::I64),
    ] {
        let lengths = ctx.tile_lengths(pair.0, pair.1, &ScanDesc::inclusive(Op::Sum)).unwrap();
        if lengths.cluster == 0 {
            eprintln!("skipped {pair:?}: no cluster kernel on this device");
            continue;
        }
        let tile = lengths.cluster as usize;
        let ops: Vec<Op> = Op::ALL
            .into_iter()
            .filter(|&op| scanrt::check_types(pair.0, pair.1, op).is_ok())
            .collect();
        for blocks in 1..=lengths.cluster_blocks as usize + 1 {
            for short in [0, 1, tile / 2 + 1] {
                let algorithm = [
                    Algorithm::SinglePass,
                    Algorithm::DeterministicSinglePass,
                    Algorithm::Matrix,
                ][rng.below(3) as usize];
                let in_place = pair.0 == pair.1 && rng.below(3) == 0;
                let offset = rng.below(3);
                let n = blocks * tile - short;
                let segments = [
                    Segments::None,
                    Segments::ByteFlags,
                    Segments::BitFlags,
                    Segments::Keys(DType::U32),
                    Segments::Keys(DType::U64),
                    Segments::Offsets {
                        dtype: DType::U32,
                        count: 0,
                    },
                    Segments::Rows([1, 5, tile as u64, 1 + n as u64 / 3][rng.below(4) as usize]),
                ][rng.below(7) as usize];
                let pattern = [
                    SegmentPattern::Random { mean_len: 3 },
                    SegmentPattern::Random { mean_len: 700 },
                    SegmentPattern::Every { len: 4, offset: 1 },
                    SegmentPattern::Every {
                        len: tile as u64,
                        offset: 0,
                    },
                ][rng.below(4) as usize];
                let c = Case {
                    inclusive: rng.below(2) == 0,
                    with_init: rng.below(2) == 0,
                    in_offset: offset,
                    out_offset: if in_place { offset } else { rng.below(3) },
                    in_place,
                    direction: if rng.below(2) == 0 {
                        Direction::Forward
                    } else {
                        Direction::Backward
                    },
                    segments,
                    pattern,
                    ..Case::plain(ops[rng.below(ops.len() as u64) as usize], algorithm, n)
                };
                tally.record(with_pair!(pair, run_case(ctx, &stream, &mut rng, c)), || {
                    format!("{pair:?} {c:?}")
                });
            }
        }
    }
    tally.assert_no_failures("cluster kernel");
}

/// The look-back tags slots with a 29-bit tag derived from the workspace header's
/// generation (kernels/device/lookback.cuh). Tags repeat every 2^29 - 1
/// launches; the launch before they repeat clears every slot. This test sets the
/// generation directly to cross that point: a large scan leaves slots tagged 5, the
/// clearing launch runs, and a scan whose tag is 5 again must not see the stale slots
/// (without the clear, its look-back would fold the first scan's values).
pub(crate) fn tag_wraparound_clears_stale_slots() {
    const TAG_PERIOD: u64 = scanrt::contract::TAG_PERIOD as u64;
    let ctx = gpu();
    let stream = ctx.new_stream().unwrap();
    let n = 5_000_003usize;
    let desc = ScanDesc::inclusive(Op::Sum).with_algorithm(Algorithm::SinglePass);
    let src0 = Buffer::new(ctx, DType::U32, n as u64).unwrap();
    let bytes = ctx
        .workspace_size(
            &RawScan::new(src0.addr(), DType::U32, src0.addr(), DType::U32, n as u64),
            &desc,
        )
        .unwrap();
    let ws_buf = Buffer::new(ctx, DType::U8, bytes as u64).unwrap();
    let ws = scanrt::Workspace {
        ptr: ws_buf.addr(),
        bytes,
    };
    ctx.init_workspace(&stream, ws).unwrap();
    // The header's ticket word: [generation:32 | ticket:32].
    let ticket = std::mem::offset_of!(scanrt::contract::LookbackHeader, ticket) as u64 / 8;
    let mut header = view(ctx, &ws_buf, DType::U64, ticket, 1);
    let mut scan_with_generation = |generation: u64, n: usize, fill: u32| {
        header.upload(&stream, &[generation << 32]).unwrap();
        let input = vec![fill; n];
        let src = Buffer::from_slice(ctx, &stream, &input).unwrap();
        let dst = Buffer::new(ctx, DType::U32, n as u64).unwrap();
        let req = RawScan::new(src.addr(), DType::U32, dst.addr(), DType::U32, n as u64);
        unsafe { ctx.scan_raw(&stream, &req, &desc, Some(ws)) }.unwrap();
        let got: Vec<u32> = dst.download(&stream, n).unwrap();
        compare(&input, &desc, &got, 0.0).unwrap_or_else(|e| panic!("generation {generation}: {e}"));
        let after: Vec<u64> = header.download(&stream, 1).unwrap();
        assert_eq!(
            after[0],
            (generation + 1) << 32,
            "the header after generation {generation}"
        );
    };
    scan_with_generation(4, n, 7); // tag 5 in every slot of the first 5M / tile tiles
                                   // The clearing scan takes the look-back kernel: past what one cluster scans (the
                                   // cluster kernel has no workspace).
    let t = ctx.tile_lengths(DType::U32, DType::U32, &desc).unwrap();
    let past_cluster = (t.cluster * t.cluster_blocks as u64).max(2 * t.register_staged) as usize + 1;
    scan_with_generation(TAG_PERIOD - 1, past_cluster, 1); // clears
    scan_with_generation(TAG_PERIOD + 4, n, 3); // tag 5 again
}

/// A small representative set for compute-sanitizer (memcheck, racecheck, synccheck):
/// every algorithm, 4- and 8-byte accumulators, multi-tile, partial tiles, misaligned
/// and in-place, backward, every segment format, and operators' transforms.
pub(crate) fn sanitizer_subset() {
    let ctx = gpu();
    let stream = ctx.new_stream().unwrap();
    let mut rng = Rng(0x5A);
    for pair in [
        (DType::U32, DType::U32),
        (DType::F64, DType::F64),
        (DType::U8, DType::U64),
    ] {
        for algorithm in [
            Algorithm::SinglePass,
            Algorithm::DeterministicSinglePass,
            Algorithm::Matrix,
        ] {
            for (n, off, in_place) in [
                (1usize, 0u64, false),
                (5000, 0, false),
                (70_001, 1, false),
                (40_000, 0, pair.0 == pair.1),
                (300_001, 0, false), // aligned, beyond the small shape: the one-wave kernel
            ] {
                let c = Case {
                    inclusive: n % 2 == 0,
                    with_init: true,
                    in_offset: off,
                    out_offset: off,
                    in_place,
                    ..Case::plain(Op::Sum, algorithm, n)
                };
                with_pair!(pair, run_case(ctx, &stream, &mut rng, c)).unwrap_or_else(|e| panic!("{pair:?} {c:?}: {e}"));
            }
        }
    }
    // Backward and segmented: every segment format, whole and partial tiles, misaligned,
    // in one cluster (40 000) and on the one-wave kernel (70 001).
    for (pair, n) in [
        ((DType::U32, DType::U32), 70_001),
        ((DType::F64, DType::F64), 70_001),
        ((DType::U32, DType::U32), 40_000),
    ] {
        for (segments, direction) in [
            (Segments::None, Direction::Backward),
            (Segments::ByteFlags, Direction::Forward),
            (Segments::ByteFlags, Direction::Backward),
            (Segments::BitFlags, Direction::Backward),
            (Segments::Keys(DType::U32), Direction::Forward),
            (Segments::Keys(DType::U64), Direction::Backward),
            (
                Segments::Offsets {
                    dtype: DType::I32,
                    count: 0,
                },
                Direction::Forward,
            ),
            (
                Segments::Offsets {
                    dtype: DType::U64,
                    count: 0,
                },
                Direction::Backward,
            ),
        ] {
            for algorithm in [
                Algorithm::SinglePass,
                Algorithm::DeterministicSinglePass,
                Algorithm::Matrix,
            ] {
                // Aligned (vector rows of flags and keys) for the single pass, misaligned otherwise.
                let off = (algorithm != Algorithm::SinglePass) as u64;
                let c = Case {
                    in_offset: off,
                    out_offset: off,
                    direction,
                    segments,
                    pattern: SegmentPattern::Random { mean_len: 100 },
                    ..Case::plain(Op::Sum, algorithm, n)
                };
                with_pair!(pair, run_case(ctx, &stream, &mut rng, c)).unwrap_or_else(|e| panic!("{pair:?} {c:?}: {e}"));
            }
        }
    }
    // Operators' transforms: states parked in shared memory (the recurrence) and rows
    // rescanned from their inputs (logcumsumexp), on one tile, the register-staged kernel
    // and (from 512 tiles) the bulk-copy one; inclusive and exclusive, both directions,
    // segmented, misaligned.
    let recurrence = ctx
        .create_operator(recipes::linear_recurrence(DType::F32).unwrap())
        .unwrap();
    let logcumsumexp = ctx.create_operator(recipes::logcumsumexp(DType::F32).unwrap()).unwrap();
    for (i, n) in [3000usize, 70_001, (1 << 20) + 17].into_iter().enumerate() {
        for (backward, segments) in [(false, 0u8), (true, 1), (false, 2)] {
            let shape = Shape {
                n,
                backward,
                exclusive: segments != 2,
                segments,
                row: 1000,
                offset: i as u64 % 2,
                deterministic: false,
            };
            check_recurrence(ctx, &stream, &recurrence, DType::F32, &mut rng, shape).unwrap();
            check_logcumsumexp(ctx, &stream, &logcumsumexp, DType::F32, &mut rng, shape).unwrap();
        }
    }
    // The operator space's widest states (64 bytes: flag-and-payload status slots, a
    // pooled workspace grown for them at 2^20 + 3 elements) with every algorithm, and its
    // narrowest transform on the bulk-copy kernel (from 512 tiles of 4096).
    use crate::common::operator_space::{self as space, check_case, LaneOp, SegmentForm};
    let widest = [true, false].map(|load| LaneOp {
        width: 64,
        load,
        outputs: if load { 2 } else { 0 },
    });
    let narrowest = LaneOp {
        width: 4,
        load: true,
        outputs: 1,
    };
    let plan = widest
        .iter()
        .flat_map(|op| [129usize, 70_001, (1 << 20) + 3].map(|n| (*op, n)))
        .chain([(narrowest, (1 << 21) + 5)]);
    for (i, (lane_op, n)) in plan.enumerate() {
        let op = ctx.create_operator(lane_op.desc()).unwrap();
        let (algorithm, deterministic) = [
            (Algorithm::Auto, false),
            (Algorithm::Auto, true),
            (Algorithm::Matrix, false),
        ][i % 3];
        let case = space::Case {
            n,
            algorithm,
            deterministic,
            backward: i % 2 == 1,
            exclusive: i % 4 < 2,
            segments: [SegmentForm::None, SegmentForm::ByteFlags, SegmentForm::Rows][i % 3],
            init: true,
            offset: (i % 2) as u64,
            in_place: !lane_op.load && i % 2 == 0,
            seed: rng.next_u64(),
        };
        check_case(ctx, &stream, &op, &lane_op, &case).unwrap();
    }
}
