//! Backward and segmented scans (byte flags, bit flags, keys, offsets) in randomized and
//! large cases.

use scanrt::{check_types, Algorithm, DType, Direction, Op, Segments, TYPE_PAIRS};

use crate::common::*;
use crate::support::*;

/// The segment layouts the issue asks for: none set, every one set, random densities
/// (first element flagged or not), segments spanning many tiles, and segments that end
/// exactly on tile boundaries (or one element off).
fn patterns(tile: u64) -> Vec<SegmentPattern> {
    vec![
        SegmentPattern::NoneSet,
        SegmentPattern::AllSet,
        SegmentPattern::Random { mean_len: 3 },
        SegmentPattern::Random { mean_len: 100 },
        SegmentPattern::Random { mean_len: 5 * tile },
        SegmentPattern::Every { len: tile, offset: 0 },
        SegmentPattern::Every { len: tile, offset: 1 },
        SegmentPattern::Every {
            len: 3 * tile - 1,
            offset: 7,
        },
        SegmentPattern::Every {
            len: 2 * tile + 1,
            offset: tile,
        },
    ]
}

/// A row length for a batch of `n` elements: single elements, short rows, rows about a
/// tile long, a few rows, one row.
fn row_length(rng: &mut Rng, n: usize, tile: usize) -> u64 {
    let lengths = [1, 3, 17, tile - 1, tile, tile + 1, n / 3 + 1, n];
    lengths[rng.below(lengths.len() as u64) as usize].max(1) as u64
}

/// Backward, segmented (byte flags, bit flags, keys and offsets of every key type, rows)
/// and deterministic
/// scans of every pair and operator through every algorithm, with misaligned and
/// in-place buffers, against the sequential reference.
pub(crate) fn randomized_backward_segmented_and_deterministic() {
    let ctx = gpu();
    let stream = ctx.new_stream().unwrap();
    let mut rng = Rng(0xBAC5);
    let mut tally = Tally::default();
    let kinds = [
        Segments::None,
        Segments::ByteFlags,
        Segments::BitFlags,
        Segments::Keys(DType::U32),
        Segments::Keys(DType::I32),
        Segments::Keys(DType::U64),
        Segments::Keys(DType::I64),
        Segments::Offsets {
            dtype: DType::U32,
            count: 0,
        },
        Segments::Offsets {
            dtype: DType::I32,
            count: 0,
        },
        Segments::Offsets {
            dtype: DType::U64,
            count: 0,
        },
        Segments::Offsets {
            dtype: DType::I64,
            count: 0,
        },
        Segments::Rows(1), // a length drawn per case
    ];
    for pair in TYPE_PAIRS {
        let (tile, bulk_tile, wave_tile) = tile_lengths(ctx, pair.0, pair.1);
        let sizes = edge_sizes(tile, bulk_tile, wave_tile);
        let patterns = patterns(tile as u64);
        for op in Op::ALL {
            if check_types(pair.0, pair.1, op).is_err() {
                continue;
            }
            for algorithm in [
                Algorithm::SinglePass,
                Algorithm::DeterministicSinglePass,
                Algorithm::Matrix,
            ] {
                for direction in [Direction::Forward, Direction::Backward] {
                    for segments in kinds {
                        if direction == Direction::Forward && segments == Segments::None {
                            continue; // the plain forward scans have their own test
                        }
                        // Keys of the narrow types on a sample of the combinations only.
                        if matches!(
                            segments,
                            Segments::Keys(DType::I32 | DType::I64)
                                | Segments::Offsets {
                                    dtype: DType::I32 | DType::U64,
                                    ..
                                }
                        ) && rng.below(3) != 0
                        {
                            continue;
                        }
                        for _ in 0..2 {
                            let in_place = pair.0 == pair.1 && rng.below(4) == 0;
                            let n = sizes[rng.below(sizes.len() as u64) as usize];
                            let segments = match segments {
                                Segments::Rows(_) => Segments::Rows(row_length(&mut rng, n, tile)),
                                other => other,
                            };
                            let c = Case {
                                op,
                                inclusive: rng.below(2) == 0,
                                with_init: rng.below(2) == 0,
                                algorithm,
                                n,
                                in_offset: if rng.below(3) == 0 { rng.below(4) } else { 0 },
                                out_offset: if rng.below(3) == 0 { rng.below(4) } else { 0 },
                                in_place,
                                direction,
                                segments,
                                pattern: patterns[rng.below(patterns.len() as u64) as usize],
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
    tally.assert_no_failures("backward/segmented/deterministic");
}

/// Large segmented and backward scans: 2^28 u32 elements with byte flags (segments much
/// longer than a tile, and short ones) and by offsets, 2^27+1 backward f64, u64 by key.
pub(crate) fn large_backward_and_segmented() {
    let ctx = gpu();
    let stream = ctx.new_stream().unwrap();
    let mut rng = Rng(0x1A7);
    for algorithm in [Algorithm::SinglePass, Algorithm::Matrix] {
        for (pair, n, direction, segments, pattern) in [
            (
                (DType::U32, DType::U32),
                1usize << 28,
                Direction::Forward,
                Segments::ByteFlags,
                SegmentPattern::Random { mean_len: 1 << 20 },
            ),
            (
                (DType::U32, DType::U32),
                (1 << 28) - 1,
                Direction::Backward,
                Segments::ByteFlags,
                SegmentPattern::Random { mean_len: 1000 },
            ),
            (
                (DType::U32, DType::U32),
                1usize << 28,
                Direction::Backward,
                Segments::Offsets {
                    dtype: DType::U64,
                    count: 0,
                },
                SegmentPattern::Random { mean_len: 5000 },
            ),
            (
                (DType::F64, DType::F64),
                (1 << 27) + 1,
                Direction::Backward,
                Segments::None,
                SegmentPattern::NoneSet,
            ),
            (
                (DType::U64, DType::U64),
                (1 << 26) + 5,
                Direction::Backward,
                Segments::Keys(DType::U64),
                SegmentPattern::Random { mean_len: 50_000 },
            ),
        ] {
            let c = Case {
                with_init: true,
                direction,
                segments,
                pattern,
                ..Case::plain(Op::Sum, algorithm, n)
            };
            with_pair!(pair, run_case(ctx, &stream, &mut rng, c)).unwrap_or_else(|e| panic!("{pair:?} {c:?}: {e}"));
            eprintln!("large: {pair:?} n={n} {direction:?} {segments:?} {algorithm:?} ok");
        }
    }
}
