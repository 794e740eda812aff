//! The validation rules every backend shares, checked on the host backend.

use scanrt::{check_types, Backend, Buffer, Context, DType, Op, RawScan, ScanDesc, ScanrtStatus, Segments};

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

/// Empty arrays may sit at NULL, except what is read whatever the length (offsets);
/// selections refuse elements that are not C-contiguous, and selections and sorts
/// misaligned arrays, with a status, as scans do (the host backend reads typed elements,
/// a GPU whole ones), writing nothing.
#[test]
fn empty_and_misaligned_arrays_get_a_status() {
    use scanrt::{ArrayView, SelectArrays, SelectDesc, Selection, SortArrays, SortDesc};
    let ctx = Context::new(Backend::Host, 0).unwrap();
    let stream = ctx.new_stream().unwrap();
    let words = vec![0x3F80_0000u32; 9];
    let mut out = vec![7u32; 9];
    let mut count = vec![7u64; 2];
    // SAFETY: NULL views hold no element; the others lie within their vectors.
    unsafe {
        let empty = ArrayView::contiguous(0, DType::U32, &[0]).unwrap();
        let sort = SortArrays {
            keys_in: empty,
            keys_out: empty,
            values_in: None,
            values_out: None,
            temp: None,
        };
        ctx.sort(&stream, &sort, &SortDesc::ascending()).unwrap();

        // Offsets are read even for an empty array (the totals of empty segments).
        let empty_scan = |offsets: u64| {
            let req = scanrt::RawScan {
                input: 0,
                input_dtype: DType::U32,
                output: 0,
                output_dtype: DType::U32,
                n: 0,
                segments: offsets,
            };
            let desc = ScanDesc::default().segmented(Segments::Offsets {
                dtype: DType::U32,
                count: 2,
            });
            ctx.scan_raw(&stream, &req, &desc, None).err().map(|e| e.status)
        };
        assert_eq!(empty_scan(0), Some(ScanrtStatus::NullArgument));
        let offsets = [0u32, 0];
        assert_eq!(empty_scan(offsets.as_ptr() as u64), None);

        let base = words.as_ptr() as u64;
        let misaligned = ArrayView::contiguous(base + 2, DType::F32, &[4]).unwrap();
        let aligned = ArrayView::contiguous(base, DType::F32, &[4]).unwrap();
        let out_view = ArrayView::contiguous(out.as_mut_ptr() as u64, DType::F32, &[4]).unwrap();
        let odd_out = ArrayView::contiguous(out.as_mut_ptr() as u64 + 1, DType::F32, &[4]).unwrap();
        let count_view = ArrayView::contiguous(count.as_mut_ptr() as u64, DType::U64, &[1]).unwrap();
        let odd_count = ArrayView::contiguous(count.as_mut_ptr() as u64 + 4, DType::U64, &[1]).unwrap();
        let select = |input, output, num_selected| {
            let arrays = SelectArrays {
                input,
                flags: None,
                output,
                rejected: None,
                lengths: None,
                num_selected,
            };
            ctx.select(&stream, &arrays, &SelectDesc::new(Selection::NonZero))
                .unwrap_err()
                .status
        };
        // Elements of any shape are read in memory order when C-contiguous, not otherwise.
        let transposed = ArrayView::strided(base, DType::F32, &[2, 2], &[1, 2]).unwrap();
        assert_eq!(
            select(transposed, out_view, count_view),
            ScanrtStatus::UnsupportedCombination
        );
        assert_eq!(select(misaligned, out_view, count_view), ScanrtStatus::InvalidArgument);
        assert_eq!(select(aligned, odd_out, count_view), ScanrtStatus::InvalidArgument);
        assert_eq!(select(aligned, out_view, odd_count), ScanrtStatus::InvalidArgument);
        let sort = SortArrays {
            keys_in: misaligned,
            keys_out: out_view,
            values_in: None,
            values_out: None,
            temp: None,
        };
        let e = ctx.sort(&stream, &sort, &SortDesc::ascending()).unwrap_err();
        assert_eq!(e.status, ScanrtStatus::InvalidArgument, "{e}");
    }
    assert!(out.iter().all(|&x| x == 7) && count.iter().all(|&c| c == 7));

    // Lengths no array can have: a status or a size no allocation grants, never a wrap.
    assert_eq!(ctx.sort_temp_bytes(u64::MAX, DType::U64, Some(DType::U64)), u64::MAX);
    let huge = scanrt::RawScan {
        input: words.as_ptr() as u64,
        input_dtype: DType::U32,
        output: out.as_mut_ptr() as u64,
        output_dtype: DType::U64,
        n: u64::MAX / 4,
        segments: 0,
    };
    // SAFETY: refused before any access (the lengths overflow).
    let e = unsafe { ctx.scan_host_raw(&huge, &ScanDesc::default(), Default::default()) }.unwrap_err();
    assert_eq!(e.status, ScanrtStatus::LengthOverflow, "{e}");
}
