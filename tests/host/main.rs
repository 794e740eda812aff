//! The host backend against the sequential reference (runs everywhere, CI included),
//! plus the validation rules every backend shares (`validation`) and user-defined
//! operators on the host (`operators`).

mod arrays;
mod carries;
#[path = "../common/mod.rs"]
mod common;
mod operators;
mod sort;
mod strided;
mod validation;

use common::*;
use scanrt::{
    check_types, reference_scan, Algorithm, Backend, Buffer, ChoiceReason, Context, DType, Direction, Op, RawScan,
    ScanDesc, ScanrtStatus, Segments, Widen, TYPE_PAIRS,
};

fn host_case<I: TestInput + Widen<O>, O: TestOutput>(
    ctx: &Context,
    rng: &mut Rng,
    op: Op,
    inclusive: bool,
    with_init: bool,
    n: usize,
    in_place: bool,
) -> Result<(), String> {
    let stream = ctx.new_stream().unwrap();
    let input: Vec<I> = random_vec(rng, op, n);
    let desc = make_desc::<O>(rng, op, inclusive, with_init);
    let src = Buffer::from_slice(ctx, &stream, &input).unwrap();
    let got: Vec<O> = if in_place {
        ctx.scan(&stream, &src, &src, &desc).map_err(|e| e.to_string())?;
        src.download(&stream, n).unwrap()
    } else {
        let dst = Buffer::new(ctx, O::DTYPE, n as u64).unwrap();
        let info = ctx.scan(&stream, &src, &dst, &desc).map_err(|e| e.to_string())?;
        assert_eq!(info.backend, Backend::Host);
        dst.download(&stream, n).unwrap()
    };
    // The host backend folds per-thread chunks: tree height <= chunk length + threads.
    compare(&input, &desc, &got, (n + 64) as f64)
}

#[test]
fn host_backend_matches_reference_for_every_pair_operator_and_mode() {
    let ctx = Context::new(Backend::Host, 0).unwrap();
    let mut rng = Rng(7);
    let mut cases = 0;
    for pair in TYPE_PAIRS {
        for op in Op::ALL {
            if check_types(pair.0, pair.1, op).is_err() {
                continue;
            }
            for inclusive in [true, false] {
                for with_init in [false, true] {
                    for n in [0usize, 1, 2, 4095, 4096, 4097, (1 << 16) - 1, (1 << 16) + 1, 300_001] {
                        let in_place = pair.0 == pair.1 && n % 2 == 1;
                        with_pair!(pair, host_case(&ctx, &mut rng, op, inclusive, with_init, n, in_place))
                            .unwrap_or_else(|e| panic!("{pair:?} {op:?} incl={inclusive} init={with_init} n={n}: {e}"));
                        cases += 1;
                    }
                }
            }
        }
    }
    eprintln!("host backend: {cases} cases match the reference");
}

/// A backward and/or segmented case on the host backend, in place or not.
fn host_segmented_case<I: TestInput + Widen<O>, O: TestOutput>(
    ctx: &Context,
    rng: &mut Rng,
    desc: ScanDesc,
    pattern: SegmentPattern,
    n: usize,
    in_place: bool,
) -> Result<(), String> {
    let stream = ctx.new_stream().unwrap();
    let input: Vec<I> = random_vec(rng, desc.op, n);
    let mut desc = desc;
    let with_init = rng.below(2) == 0;
    desc.init = make_desc::<O>(rng, desc.op, desc.inclusive, with_init).init;
    let starts = (desc.segments != Segments::None).then(|| segment_starts(rng, pattern, n));
    let data = starts
        .as_ref()
        .map(|s| encode_segments(rng, desc.segments, s))
        .unwrap_or_default();
    desc.segments = with_count(desc.segments, &data);
    let seg = Buffer::from_slice(ctx, &stream, &data).unwrap();
    let src = Buffer::from_slice(ctx, &stream, &input).unwrap();
    let dst = if in_place {
        None
    } else {
        Some(Buffer::new(ctx, O::DTYPE, n as u64).unwrap())
    };
    let out = dst.as_ref().unwrap_or(&src);
    let req = RawScan {
        segments: if data.is_empty() { 0 } else { seg.addr() },
        ..RawScan::new(src.addr(), I::DTYPE, out.addr(), O::DTYPE, n as u64)
    };
    // SAFETY: host buffers of the right lengths.
    let info = unsafe { ctx.scan_raw(&stream, &req, &desc, None) }.map_err(|e| e.to_string())?;
    assert_eq!(
        (info.algorithm, info.reason),
        (Algorithm::Host, ChoiceReason::HostBackend)
    );
    let got: Vec<O> = out.download(&stream, n).unwrap();
    compare_segmented(&input, starts.as_deref(), &desc, &got, (n + 64) as f64)
}

#[test]
fn host_backward_and_segmented_match_reference() {
    let ctx = Context::new(Backend::Host, 0).unwrap();
    let mut rng = Rng(11);
    let mut cases = 0;
    let kinds = [
        Segments::None,
        Segments::ByteFlags,
        Segments::BitFlags,
        Segments::Keys(DType::U32),
        Segments::Keys(DType::I64),
        Segments::Offsets {
            dtype: DType::U32,
            count: 0,
        },
        Segments::Offsets {
            dtype: DType::I64,
            count: 0,
        },
    ];
    let patterns = [
        SegmentPattern::NoneSet,
        SegmentPattern::AllSet,
        SegmentPattern::Random { mean_len: 7 },
        SegmentPattern::Random { mean_len: 40_000 },
        SegmentPattern::Every { len: 4096, offset: 1 },
    ];
    for pair in TYPE_PAIRS {
        for op in Op::ALL {
            if check_types(pair.0, pair.1, op).is_err() {
                continue;
            }
            for direction in [Direction::Forward, Direction::Backward] {
                for segments in kinds {
                    for n in [0usize, 1, 33, 4097, 300_001] {
                        let mut desc = if rng.below(2) == 0 {
                            ScanDesc::inclusive(op)
                        } else {
                            ScanDesc::exclusive(op)
                        };
                        desc.direction = direction;
                        desc.segments = segments;
                        let pattern = patterns[rng.below(patterns.len() as u64) as usize];
                        let in_place = pair.0 == pair.1 && rng.below(2) == 0;
                        with_pair!(pair, host_segmented_case(&ctx, &mut rng, desc, pattern, n, in_place))
                            .unwrap_or_else(|e| panic!("{pair:?} {desc:?} {pattern:?} n={n}: {e}"));
                        cases += 1;
                    }
                }
            }
        }
    }
    eprintln!("host backend: {cases} backward/segmented cases match the reference");
}

/// The seeds' worked examples, exactly, through the reference and the host backend.
#[test]
fn seed_examples_on_the_host() {
    let ctx = Context::new(Backend::Host, 0).unwrap();
    let stream = ctx.new_stream().unwrap();
    for example in seed_examples() {
        let input = Buffer::from_slice(&ctx, &stream, &example.input).unwrap();
        let output = Buffer::new(&ctx, DType::I32, example.input.len() as u64).unwrap();
        match &example.flags {
            None => {
                assert_eq!(
                    reference_scan::<i32, i32>(&example.input, &example.desc),
                    example.expected
                );
                ctx.scan(&stream, &input, &output, &example.desc).unwrap();
                assert_eq!(
                    output.download::<i32>(&stream, example.input.len()).unwrap(),
                    example.expected
                );
            }
            Some(flags) => {
                let starts: Vec<bool> = flags.iter().map(|&f| f != 0).collect();
                let want = scanrt::reference_scan_segmented::<i32, i32>(&example.input, Some(&starts), &example.desc);
                assert_eq!(want, example.expected, "{}", example.name);
                let bytes = Buffer::from_slice(&ctx, &stream, flags).unwrap();
                let bits = Buffer::from_slice(&ctx, &stream, &pack_bits(flags)).unwrap();
                for (kind, data) in [(Segments::ByteFlags, &bytes), (Segments::BitFlags, &bits)] {
                    ctx.scan_segmented(&stream, &input, data, &output, &example.desc.segmented(kind))
                        .unwrap();
                    let got = output.download::<i32>(&stream, example.input.len()).unwrap();
                    assert_eq!(got, example.expected, "{} ({kind:?})", example.name);
                }
            }
        }
        eprintln!("seed example ok: {}", example.name);
    }
}

#[test]
fn auto_falls_back_to_host_or_uses_gpu() {
    let ctx = Context::new(Backend::Auto, 0).unwrap();
    eprintln!(
        "Auto chose {:?}: {} ({})",
        ctx.backend(),
        ctx.describe(),
        ctx.backend_reason()
    );
    match ctx.backend() {
        // Only a missing driver, device or NVRTC sends Auto to the host, and it says which.
        Backend::Host => assert!(
            ["CUDA driver", "no device", "NVRTC"]
                .iter()
                .any(|w| ctx.backend_reason().contains(w)),
            "{}",
            ctx.backend_reason()
        ),
        _ => {
            assert!(ctx.backend_reason().contains("usable"), "{}", ctx.backend_reason());
            // With a GPU present, a wrong ordinal is an error, not a silent host context.
            let e = Context::new(Backend::Auto, 999).err().expect("ordinal 999 is an error");
            assert_eq!(e.status, ScanrtStatus::NoDevice, "{}", e.message);
        }
    }
    let stream = ctx.new_stream().unwrap();
    let src = Buffer::from_slice(&ctx, &stream, &[3i32, -1, 4, -1, 5]).unwrap();
    let dst = Buffer::new(&ctx, DType::I32, 5).unwrap();
    ctx.scan(&stream, &src, &dst, &ScanDesc::inclusive(Op::Max)).unwrap();
    assert_eq!(dst.download::<i32>(&stream, 5).unwrap(), vec![3, 3, 4, 4, 5]);
}

/// The host backend's float results are a function of n alone: bitwise the same with 1,
/// 2, 3 or 8 worker threads, deterministic or not, forward, backward and segmented.
#[test]
fn host_float_results_do_not_depend_on_the_number_of_threads() {
    let ctx = Context::new(Backend::Host, 0).unwrap();
    let stream = ctx.new_stream().unwrap();
    let mut rng = Rng(0x7EAD);
    let n = (1usize << 20) + 4321;
    let input: Vec<f32> = (0..n)
        .map(|_| ((rng.next_u64() as i64) as f64 / 9.2e18 * 10f64.powi(rng.below(9) as i32 - 4)) as f32)
        .collect();
    let flags: Vec<u8> = (0..n).map(|_| (rng.below(5000) == 0) as u8).collect();
    let src = Buffer::from_slice(&ctx, &stream, &input).unwrap();
    let seg = Buffer::from_slice(&ctx, &stream, &flags).unwrap();
    let descs = [
        ScanDesc::inclusive(Op::Sum),
        ScanDesc::exclusive(Op::Sum).deterministic().with_init(0.25f32),
        ScanDesc::inclusive(Op::Sum).backward(),
        ScanDesc::inclusive(Op::Product),
        ScanDesc::inclusive(Op::Sum).segmented(Segments::ByteFlags),
    ];
    for desc in descs {
        let run = |threads: usize| -> Vec<u32> {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            let dst = Buffer::new(&ctx, DType::F32, n as u64).unwrap();
            pool.install(|| {
                if desc.segments == Segments::None {
                    ctx.scan(&stream, &src, &dst, &desc).unwrap()
                } else {
                    ctx.scan_segmented(&stream, &src, &seg, &dst, &desc).unwrap()
                }
            });
            dst.download::<f32>(&stream, n)
                .unwrap()
                .iter()
                .map(|v| v.to_bits())
                .collect()
        };
        let one = run(1);
        for threads in [2, 3, 8] {
            assert!(one == run(threads), "{desc:?}: {threads} threads differ from one");
        }
    }
}

/// A -0.0 initial value (and -0.0 inputs) keep their sign, as in the sequential loop.
#[test]
fn host_keeps_negative_zero() {
    let ctx = Context::new(Backend::Host, 0).unwrap();
    let stream = ctx.new_stream().unwrap();
    for n in [5usize, 100_000, 1 << 20] {
        let src = Buffer::from_slice(&ctx, &stream, &vec![-0.0f32; n]).unwrap();
        let dst = Buffer::new(&ctx, DType::F32, n as u64).unwrap();
        for desc in [
            ScanDesc::exclusive(Op::Sum).with_init(-0.0f32),
            ScanDesc::inclusive(Op::Sum).with_init(-0.0f32),
            ScanDesc::inclusive(Op::Sum),
        ] {
            ctx.scan(&stream, &src, &dst, &desc).unwrap();
            let got = dst.download::<f32>(&stream, n).unwrap();
            assert!(got.iter().all(|v| v.to_bits() == (-0.0f32).to_bits()), "{desc:?} n={n}");
        }
    }
}

/// f32 data summed (and multiplied, min, max) in f64 on the host backend, every
/// direction, segment form and mode, around the backend's chunk boundaries.
#[test]
fn host_backend_wide_accumulators_match_the_f64_reference() {
    let ctx = Context::new(Backend::Host, 0).unwrap();
    let stream = ctx.new_stream().unwrap();
    assert!(
        common::accumulators::narrow_accumulation_would_fail(100_000),
        "the comparison must tell an f32 accumulator from an f64 one"
    );
    let chunk = 1 << 15;
    let sizes = [0, 1, 2, 31, chunk - 1, chunk, chunk + 1, 3 * chunk + 17];
    let failures = common::accumulators::sweep_wide_accumulators(&ctx, &stream, 0xF64, &sizes, &[Algorithm::Auto]);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Scans written as 8- and 16-bit integers on the host backend: every type, operator,
/// direction, segment form and mode, around the backend's chunk boundaries.
#[test]
fn host_backend_small_integers_match_a_sequential_loop() {
    let ctx = Context::new(Backend::Host, 0).unwrap();
    let stream = ctx.new_stream().unwrap();
    let chunk = 1 << 15;
    let sizes = [0, 1, 2, 31, chunk - 1, chunk, chunk + 1, 3 * chunk + 17];
    let (cases, failures) =
        common::small_integers::sweep_small_integers(&ctx, &stream, 0x5A11, &sizes, &[Algorithm::Auto]);
    eprintln!("small integers on the host: {cases} cases, {} failed", failures.len());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// An initial value of a scan written as an 8- or 16-bit integer is a value of that type:
/// one outside it is refused, with nothing written (the extremes' identities are the
/// type's own, an identity only of its values).
#[test]
fn small_integer_initial_values_outside_the_type_are_refused() {
    let ctx = Context::new(Backend::Host, 0).unwrap();
    let stream = ctx.new_stream().unwrap();
    let input = Buffer::from_slice(&ctx, &stream, &[1i8, -2, 3]).unwrap();
    let output = Buffer::from_slice(&ctx, &stream, &[7i8; 3]).unwrap();
    for (op, init, fits) in [
        (Op::Min, 1000i32, false),
        (Op::Max, -129, false),
        (Op::Sum, 127, true),
        (Op::Max, -128, true),
    ] {
        let desc = ScanDesc::exclusive(op).with_init(init);
        match ctx.scan(&stream, &input, &output, &desc) {
            Ok(_) => {
                assert!(fits, "{op:?} from {init} was taken");
                assert_eq!(output.download::<i8>(&stream, 1).unwrap()[0], init as i8);
            }
            Err(e) => {
                assert!(
                    !fits && e.status == ScanrtStatus::InvalidArgument,
                    "{op:?} from {init}: {e}"
                );
                assert!(e.message.contains("does not fit"), "{}", e.message);
                assert_eq!(output.download::<i8>(&stream, 3).unwrap(), [7i8; 3]);
            }
        }
    }
}

#[test]
fn accumulators_outside_the_table_are_refused() {
    let ctx = Context::new(Backend::Host, 0).unwrap();
    let stream = ctx.new_stream().unwrap();
    let input = Buffer::from_slice(&ctx, &stream, &[1u32, 2, 3]).unwrap();
    let output = Buffer::new(&ctx, DType::U32, 3).unwrap();
    for (acc, status) in [
        (DType::U8, ScanrtStatus::UnsupportedCombination),
        (DType::F32, ScanrtStatus::UnsupportedCombination),
    ] {
        let desc = ScanDesc::inclusive(Op::Sum).accumulate_in(acc);
        let e = ctx.scan(&stream, &input, &output, &desc).unwrap_err();
        assert_eq!(e.status, status, "{}", e.message);
        assert!(e.message.contains("accumulated in"), "{}", e.message);
    }
    // The initial value has the accumulator's type.
    let input = Buffer::from_slice(&ctx, &stream, &[1f32, 2.0]).unwrap();
    let output = Buffer::new(&ctx, DType::F32, 2).unwrap();
    let desc = ScanDesc::inclusive(Op::Sum).accumulate_in(DType::F64).with_init(1f32);
    let e = ctx.scan(&stream, &input, &output, &desc).unwrap_err();
    assert_eq!(e.status, ScanrtStatus::InvalidArgument);
    let desc = ScanDesc::inclusive(Op::Sum).accumulate_in(DType::F64).with_init(1f64);
    ctx.scan(&stream, &input, &output, &desc).unwrap();
    assert_eq!(output.download::<f32>(&stream, 2).unwrap(), vec![2.0, 4.0]);
}

/// f16 and bf16 data read into f32 and written as their type or as f32 on the host
/// backend: every operator, direction, segment form and mode, around the chunk
/// boundaries, NaN and infinities included.
#[test]
fn host_backend_half_types_match_the_f32_reference() {
    let ctx = Context::new(Backend::Host, 0).unwrap();
    let stream = ctx.new_stream().unwrap();
    let chunk = 1 << 15;
    let sizes = [0, 1, 2, 31, chunk - 1, chunk, chunk + 1, 3 * chunk + 17];
    let failures = common::half_types::sweep_half_types(&ctx, &stream, 0xF16, &sizes, &[Algorithm::Auto]);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The half types are storage types: accumulating in them is refused with a status that
/// says so; an f32 initial value is theirs; selections and sorts take them.
#[test]
fn half_types_accumulate_in_f32_and_sort_and_select_as_stored() {
    use scanrt::half::f16;
    let ctx = Context::new(Backend::Host, 0).unwrap();
    let stream = ctx.new_stream().unwrap();
    let input = Buffer::from_slice(&ctx, &stream, &[f16::ONE; 4]).unwrap();
    let output = Buffer::new(&ctx, DType::F16, 4).unwrap();
    let desc = ScanDesc::inclusive(Op::Sum).accumulate_in(DType::F16);
    let e = ctx.scan(&stream, &input, &output, &desc).unwrap_err();
    assert_eq!(e.status, ScanrtStatus::UnsupportedCombination, "{}", e.message);
    assert!(e.message.contains("storage type"), "{}", e.message);
    // The initial value is an f32, the accumulator's type.
    let e = ctx
        .scan(
            &stream,
            &input,
            &output,
            &ScanDesc::inclusive(Op::Sum).with_init(f16::ONE),
        )
        .unwrap_err();
    assert_eq!(e.status, ScanrtStatus::InvalidArgument, "{}", e.message);
    ctx.scan(
        &stream,
        &input,
        &output,
        &ScanDesc::inclusive(Op::Sum).with_init(0.5f32),
    )
    .unwrap();
    assert_eq!(
        output.download::<f16>(&stream, 4).unwrap(),
        [1.5f32, 2.5, 3.5, 4.5].map(f16::from_f32).to_vec()
    );
    let mut count = Buffer::new(&ctx, DType::U64, 1).unwrap();
    let mut written = Buffer::new(&ctx, DType::F16, 4).unwrap();
    let select = scanrt::SelectArrays {
        input: scanrt::ArrayView::of_buffer(&input),
        flags: None,
        output: scanrt::ArrayView::of_buffer_mut(&mut written),
        rejected: None,
        lengths: None,
        num_selected: scanrt::ArrayView::of_buffer_mut(&mut count),
    };
    // Selections and sorts move halves as they are (the sweeps cover their values).
    ctx.select(&stream, &select, &scanrt::SelectDesc::new(scanrt::Selection::NonZero))
        .unwrap();
    assert_eq!(count.download::<u64>(&stream, 1).unwrap(), [4]);
    let sort = scanrt::SortArrays {
        keys_in: scanrt::ArrayView::of_buffer(&input),
        keys_out: scanrt::ArrayView::of_buffer_mut(&mut written),
        values_in: None,
        values_out: None,
        temp: None,
    };
    ctx.sort(&stream, &sort, &scanrt::SortDesc::ascending()).unwrap();
    assert_eq!(written.download::<f16>(&stream, 4).unwrap(), [f16::ONE; 4].to_vec());
}

/// Selections, partitions and unique on the host backend against the sequential loop.
#[test]
fn host_selections_match_the_sequential_loop() {
    let ctx = Context::new(Backend::Host, 0).unwrap();
    let failures = common::select::sweep_selections(&ctx, 0x5E1EC7, &[0, 1, 2, 33, 1000, 4097]);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
