//! The host backend against the sequential reference (runs everywhere, CI included),
//! plus the validation rules every backend shares.

mod common;

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
    let seg = Buffer::from_slice(
        ctx,
        &stream,
        &starts
            .as_ref()
            .map(|s| encode_segments(rng, desc.segments, s))
            .unwrap_or_default(),
    )
    .unwrap();
    let src = Buffer::from_slice(ctx, &stream, &input).unwrap();
    let dst = if in_place {
        None
    } else {
        Some(Buffer::new(ctx, O::DTYPE, n as u64).unwrap())
    };
    let out = dst.as_ref().unwrap_or(&src);
    let req = RawScan {
        segments: if starts.is_some() && n > 0 { seg.addr() } else { 0 },
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

#[test]
fn validation_rules() {
    let ctx = Context::new(Backend::Host, 0).unwrap();
    let stream = ctx.new_stream().unwrap();
    let a = vec![1u32; 100];
    let mut b = vec![7u32; 100];
    let req = |i: u64, o: u64, n: u64| RawScan {
        input: i,
        input_dtype: DType::U32,
        output: o,
        output_dtype: DType::U32,
        n,
        segments: 0,
    };
    let (pa, pb) = (a.as_ptr() as u64, b.as_mut_ptr() as u64);
    let sum = ScanDesc::default();
    let status = |r: scanrt::Result<scanrt::ScanInfo>| r.err().map(|e| e.status);
    unsafe {
        assert_eq!(
            status(ctx.scan_raw(&stream, &req(pa, pa + 4, 99), &sum, None)),
            Some(ScanrtStatus::PartialOverlap)
        );
        assert_eq!(
            status(ctx.scan_raw(&stream, &req(0, pb, 5), &sum, None)),
            Some(ScanrtStatus::NullArgument)
        );
        assert_eq!(
            status(ctx.scan_raw(&stream, &req(pa, pb, u64::MAX / 2), &sum, None)),
            Some(ScanrtStatus::LengthOverflow)
        );
        assert_eq!(status(ctx.scan_raw(&stream, &req(pa, pb, 0), &sum, None)), None);
        let f = RawScan {
            input: pa,
            input_dtype: DType::F32,
            output: pb,
            output_dtype: DType::F32,
            n: 10,
            segments: 0,
        };
        assert_eq!(
            status(ctx.scan_raw(&stream, &f, &ScanDesc::inclusive(Op::BitXor), None)),
            Some(ScanrtStatus::UnsupportedCombination)
        );
        let wide_to_narrow = RawScan {
            input: pa,
            input_dtype: DType::U64,
            output: pb,
            output_dtype: DType::U32,
            n: 10,
            segments: 0,
        };
        assert_eq!(
            status(ctx.scan_raw(&stream, &wide_to_narrow, &sum, None)),
            Some(ScanrtStatus::UnsupportedCombination)
        );
        // Segment data: missing, unasked for, misaligned, float keys, overlapping the output.
        let flags = [0u8; 16];
        let seg = |segments: u64| RawScan {
            segments,
            ..req(pa, pb, 10)
        };
        let bytes = sum.segmented(Segments::ByteFlags);
        assert_eq!(
            status(ctx.scan_raw(&stream, &seg(0), &bytes, None)),
            Some(ScanrtStatus::NullArgument)
        );
        assert_eq!(
            status(ctx.scan_raw(&stream, &seg(flags.as_ptr() as u64), &sum, None)),
            Some(ScanrtStatus::InvalidArgument)
        );
        let words = [0u32; 4];
        assert_eq!(
            status(ctx.scan_raw(
                &stream,
                &seg(words.as_ptr() as u64 + 1),
                &sum.segmented(Segments::BitFlags),
                None
            )),
            Some(ScanrtStatus::InvalidArgument)
        );
        assert_eq!(
            status(ctx.scan_raw(
                &stream,
                &seg(flags.as_ptr() as u64),
                &sum.segmented(Segments::Keys(DType::F64)),
                None
            )),
            Some(ScanrtStatus::UnsupportedCombination)
        );
        assert_eq!(
            status(ctx.scan_raw(&stream, &seg(pb + 8), &bytes, None)),
            Some(ScanrtStatus::PartialOverlap)
        );
        // Misaligned element pointer.
        assert_eq!(
            status(ctx.scan_raw(&stream, &req(pa + 1, pb, 10), &sum, None)),
            Some(ScanrtStatus::InvalidArgument)
        );
    }
    assert!(b.iter().all(|&x| x == 7), "rejected calls must not write the output");
    // GPU-only operations report the wrong backend.
    assert_eq!(ctx.prepare(DType::U32, DType::U32, Op::Sum).err(), None);
    let e = unsafe { ctx.borrow_stream(std::ptr::null_mut()) }.err().unwrap();
    assert_eq!(e.status, ScanrtStatus::WrongBackend);
}

#[test]
fn huge_host_buffers_fail_with_a_status_instead_of_aborting() {
    let ctx = Context::new(Backend::Host, 0).unwrap();
    let too_big = Buffer::new(&ctx, DType::U8, 1 << 62)
        .err()
        .expect("4 EiB cannot be allocated");
    assert_eq!(too_big.status, ScanrtStatus::OutOfMemory, "{}", too_big.message);
    let at_limit = Buffer::new(&ctx, DType::U8, (1u64 << 63) - 1)
        .err()
        .expect("isize::MAX bytes");
    assert_eq!(at_limit.status, ScanrtStatus::OutOfMemory, "{}", at_limit.message);
    let overflow = Buffer::new(&ctx, DType::U64, 1u64 << 62)
        .err()
        .expect("length overflow");
    assert_eq!(overflow.status, ScanrtStatus::LengthOverflow, "{}", overflow.message);
}

/// The initial value is typed: a value of another type than the output is an error,
/// never reinterpreted bits (i32 -1 into an i64 scan, f32 0.5 into an f64 scan, a u64
/// into a u32 scan).
#[test]
fn initial_values_must_have_the_output_type() {
    let ctx = Context::new(Backend::Host, 0).unwrap();
    let stream = ctx.new_stream().unwrap();
    let i32s = Buffer::from_slice(&ctx, &stream, &[1i32, 2, 3]).unwrap();
    let i64s = Buffer::new(&ctx, DType::I64, 3).unwrap();
    let f32s = Buffer::from_slice(&ctx, &stream, &[1.0f32, 2.0, 3.0]).unwrap();
    let f64s = Buffer::new(&ctx, DType::F64, 3).unwrap();
    let u32s = Buffer::from_slice(&ctx, &stream, &[1u32, 2, 3]).unwrap();
    let cases = [
        (&i32s, &i64s, ScanDesc::exclusive(Op::Sum).with_init(-1i32)),
        (&f32s, &f64s, ScanDesc::exclusive(Op::Sum).with_init(0.5f32)),
        (&u32s, &u32s, ScanDesc::exclusive(Op::Sum).with_init(1u64 << 40)),
    ];
    for (input, output, desc) in cases {
        let e = ctx.scan(&stream, input, output, &desc).unwrap_err();
        assert_eq!(e.status, ScanrtStatus::InvalidArgument, "{}", e.message);
        assert!(e.message.contains("initial value"), "{}", e.message);
    }
    ctx.scan(&stream, &i32s, &i64s, &ScanDesc::exclusive(Op::Sum).with_init(-1i64))
        .unwrap();
    assert_eq!(i64s.download::<i64>(&stream, 3).unwrap(), vec![-1, 0, 2]);
    ctx.scan(&stream, &f32s, &f64s, &ScanDesc::exclusive(Op::Sum).with_init(0.5f64))
        .unwrap();
    assert_eq!(f64s.download::<f64>(&stream, 3).unwrap(), vec![0.5, 1.5, 3.5]);
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

/// Messages name types and operators as the C header does.
#[test]
fn messages_speak_c() {
    let e = check_types(DType::F32, DType::F32, Op::BitXor).unwrap_err();
    assert!(
        e.message.contains("SCANRT_OP_BIT_XOR") && e.message.contains("SCANRT_DTYPE_F32"),
        "{}",
        e.message
    );
    let e = check_types(DType::F64, DType::F32, Op::Sum).unwrap_err();
    assert!(
        e.message.contains("SCANRT_DTYPE_F64") && e.message.contains("SCANRT_DTYPE_F32"),
        "{}",
        e.message
    );
}

#[test]
fn recipes_and_user_operators_on_the_host_backend() {
    use common::operators::*;
    let ctx = Context::new(Backend::Host, 0).unwrap();
    let stream = ctx.new_stream().unwrap();
    let mut rng = Rng(0x4057);
    let sizes = [1, 2, 3, 100, 1000, 4097];
    for dtype in [DType::F32, DType::F64] {
        let op = ctx
            .create_operator(scanrt::recipes::linear_recurrence(dtype).unwrap())
            .unwrap();
        for _ in 0..40 {
            let shape = Shape::random(&mut rng, &sizes);
            check_recurrence(&ctx, &stream, &op, dtype, &mut rng, shape).unwrap();
        }
        check_recurrence_in_chunks(&ctx, &stream, &op, dtype, &mut rng, 5000).unwrap();
    }
    for dtype in EXTREME_TYPES {
        for max in [true, false] {
            let op = ctx
                .create_operator(scanrt::recipes::cumulative_extreme(dtype, max).unwrap())
                .unwrap();
            for _ in 0..40 {
                let shape = Shape::random(&mut rng, &sizes);
                check_extreme_of(dtype, &ctx, &stream, &op, max, &mut rng, shape).unwrap();
            }
        }
    }
    for dtype in [DType::F32, DType::F64] {
        let op = ctx
            .create_operator(scanrt::recipes::logcumsumexp(dtype).unwrap())
            .unwrap();
        for _ in 0..40 {
            let shape = Shape::random(&mut rng, &sizes);
            check_logcumsumexp(&ctx, &stream, &op, &mut rng, shape).unwrap();
        }
    }
    let sight = ctx.create_operator(examples::line_of_sight()).unwrap();
    let fibonacci = ctx.create_operator(examples::fibonacci_matrix()).unwrap();
    let recurrence = ctx
        .create_operator(scanrt::recipes::linear_recurrence(DType::F64).unwrap())
        .unwrap();
    for _ in 0..40 {
        let shape = Shape::random(&mut rng, &sizes);
        check_line_of_sight(&ctx, &stream, &sight, &mut rng, shape).unwrap();
        let shape = Shape::random(&mut rng, &sizes);
        check_fibonacci_matrix(&ctx, &stream, &fibonacci, &mut rng, shape).unwrap();
        let (rows, terms) = (1 + rng.below(50) as usize, 1 + rng.below(100) as usize);
        check_polynomials(&ctx, &stream, &recurrence, &mut rng, rows, terms).unwrap();
    }
    // Without host functions the host backend refuses with a specific status.
    let op = ctx.create_operator(matrix_product()).unwrap();
    let shape = Shape::plain(10);
    let e = check_matrix_product(&ctx, &stream, &op, &mut rng, shape, scanrt::Algorithm::Auto).unwrap_err();
    assert!(e.contains("no host functions"), "{e}");
}

/// The operator space (tests/common/operator_space.rs) on the host backend: every state
/// width, load and output form, crossed with every combination of direction,
/// inclusive/exclusive, segment form and initial state, at small lengths.
#[test]
fn operator_space_on_the_host_backend() {
    use common::operator_space::*;
    let ctx = Context::new(Backend::Host, 0).unwrap();
    let stream = ctx.new_stream().unwrap();
    let seed = 0x5eed_0057;
    let mut rng = Rng(seed);
    let small = [1, 2, 3, 31, 33, 127, 128, 129, 1000, 4097];
    for lane_op in LaneOp::all() {
        let op = ctx.create_operator(lane_op.desc()).unwrap();
        for i in 0..sweep_length(&small) {
            let case = Case::nth(&lane_op, &small, i, &mut rng);
            check_case(&ctx, &stream, &op, &lane_op, &case).unwrap_or_else(|e| panic!("seed {seed:#x}: {e}"));
        }
    }
}
