//! The host backend against the sequential reference (runs everywhere, CI included),
//! plus the validation rules every backend shares.

mod common;

use common::*;
use scanrt::{check_types, Backend, Buffer, Context, DType, Op, RawScan, ScanDesc, ScanrtStatus, Widen, TYPE_PAIRS};

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

#[test]
fn auto_falls_back_to_host_or_uses_gpu() {
    let ctx = Context::new(Backend::Auto, 0).unwrap();
    eprintln!("Auto chose {:?}: {}", ctx.backend(), ctx.describe());
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
        let mut backward = sum;
        backward.direction = scanrt::Direction::Backward;
        assert_eq!(
            status(ctx.scan_raw(&stream, &req(pa, pb, 10), &backward, None)),
            Some(ScanrtStatus::InvalidArgument)
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
