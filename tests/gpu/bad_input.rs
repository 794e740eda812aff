//! Bad input gets a specific status, nothing is written, and the context stays usable.

use scanrt::{
    Algorithm, ArrayView, Backend, Buffer, CarryViews, Context, DType, Op, RawScan, ScanDesc, ScanrtStatus, Segments,
};

use crate::common::*;
use crate::support::*;

pub(crate) fn bad_input_is_rejected_without_writing_and_context_stays_usable() {
    let ctx = gpu();
    let stream = ctx.new_stream().unwrap();
    // Large enough that allocations have their own address ranges (the driver rounds
    // small ones up, so a too-short allocation under ~2 MiB can go unnoticed).
    let n = 1u64 << 22;
    let input: Vec<u32> = (0..n as u32).collect();
    let src = Buffer::from_slice(ctx, &stream, &input).unwrap();
    let mut dst = Buffer::new(ctx, DType::U32, n).unwrap();
    let sentinel = vec![0xDEADBEEFu32; n as usize];
    dst.upload(&stream, &sentinel).unwrap();
    let raw = |input: u64, output: u64, n: u64| RawScan {
        input,
        input_dtype: DType::U32,
        output,
        output_dtype: DType::U32,
        n,
        segments: 0,
    };
    let sum = ScanDesc::inclusive(Op::Sum);
    unsafe {
        // Host memory passed as device memory.
        let host = vec![0u32; n as usize];
        expect_status(
            ctx.scan_raw(&stream, &raw(host.as_ptr() as u64, dst.addr(), n), &sum, None),
            ScanrtStatus::NotDeviceMemory,
        );
        expect_status(
            ctx.scan_raw(&stream, &raw(src.addr(), host.as_ptr() as u64, n), &sum, None),
            ScanrtStatus::NotDeviceMemory,
        );
        // Output allocation too small for n.
        let small = Buffer::new(ctx, DType::U32, n / 2).unwrap();
        expect_status(
            ctx.scan_raw(&stream, &raw(src.addr(), small.addr(), n), &sum, None),
            ScanrtStatus::BufferTooSmall,
        );
        // Partial overlap.
        expect_status(
            ctx.scan_raw(&stream, &raw(src.addr(), src.addr() + 4, n - 1), &sum, None),
            ScanrtStatus::PartialOverlap,
        );
        // NULL pointers, overflow, bad combinations.
        expect_status(
            ctx.scan_raw(&stream, &raw(0, dst.addr(), n), &sum, None),
            ScanrtStatus::NullArgument,
        );
        expect_status(
            ctx.scan_raw(&stream, &raw(src.addr(), dst.addr(), u64::MAX / 2), &sum, None),
            ScanrtStatus::LengthOverflow,
        );
        let f = RawScan {
            input: src.addr(),
            input_dtype: DType::F32,
            output: dst.addr(),
            output_dtype: DType::F32,
            n,
            segments: 0,
        };
        expect_status(
            ctx.scan_raw(&stream, &f, &ScanDesc::inclusive(Op::BitXor), None),
            ScanrtStatus::UnsupportedCombination,
        );
        let narrowing = RawScan {
            input: src.addr(),
            input_dtype: DType::U64,
            output: dst.addr(),
            output_dtype: DType::U32,
            n: n / 2,
            segments: 0,
        };
        expect_status(
            ctx.scan_raw(&stream, &narrowing, &sum, None),
            ScanrtStatus::UnsupportedCombination,
        );
        // Too-small caller workspace.
        let ws = scanrt::Workspace {
            ptr: small.addr(),
            bytes: 64,
        };
        expect_status(
            ctx.scan_raw(&stream, &raw(src.addr(), dst.addr(), n), &sum, Some(ws)),
            ScanrtStatus::BufferTooSmall,
        );
    }
    // Buffers and streams of another context.
    let other = Context::new(Backend::Gpu, 0).unwrap();
    let foreign = Buffer::new(&other, DType::U32, n).unwrap();
    expect_status(ctx.scan(&stream, &foreign, &dst, &sum), ScanrtStatus::ContextMismatch);
    let foreign_stream = other.new_stream().unwrap();
    expect_status(
        ctx.scan(&foreign_stream, &src, &dst, &sum),
        ScanrtStatus::ContextMismatch,
    );
    // Carries in host memory beside buffer arrays: the buffers need no word from the
    // driver, the carries still do.
    let mut host_total = [0xDEADBEEFu32];
    let host_init = [5u32];
    {
        let (input, output) = (ArrayView::of_buffer(&src), ArrayView::of_buffer_mut(&mut dst));
        let total = ArrayView::of_slice_mut(&mut host_total);
        let init = ArrayView::of_slice(&host_init);
        for carries in [
            CarryViews {
                carry_in: None,
                carry_out: Some(&total),
            },
            CarryViews {
                carry_in: Some(&init),
                carry_out: None,
            },
        ] {
            expect_status(
                ctx.scan_array_carried(&stream, &input, &output, -1, &sum, &carries),
                ScanrtStatus::NotDeviceMemory,
            );
        }
    }
    assert_eq!(host_total, [0xDEADBEEF]);
    // Nothing was written, and the context still works.
    assert_eq!(dst.download::<u32>(&stream, n as usize).unwrap(), sentinel);
    ctx.scan(&stream, &src, &dst, &sum).unwrap();
    let want: Vec<u32> = input
        .iter()
        .scan(0u32, |s, &x| {
            *s = s.wrapping_add(x);
            Some(*s)
        })
        .collect();
    assert_eq!(dst.download::<u32>(&stream, n as usize).unwrap(), want);
}

/// Segment data that is missing, short, misaligned, of the wrong kind, or overlapping the
/// output is rejected with a specific status and nothing is written.
pub(crate) fn bad_segment_input_is_rejected_without_writing() {
    let ctx = gpu();
    let stream = ctx.new_stream().unwrap();
    let n = 100_000u64;
    let src = Buffer::from_slice(ctx, &stream, &vec![1u32; n as usize]).unwrap();
    let mut dst = Buffer::new(ctx, DType::U32, n).unwrap();
    dst.upload(&stream, &vec![7u32; n as usize]).unwrap();
    let flags = Buffer::from_slice(ctx, &stream, &vec![0u8; n as usize]).unwrap();
    let short_flags = Buffer::from_slice(ctx, &stream, &vec![0u8; (n / 2) as usize]).unwrap();
    let big_short = Buffer::new(ctx, DType::U8, 4 << 20).unwrap(); // range checks need > 2 MiB allocations
    let desc = ScanDesc::inclusive(Op::Sum).segmented(Segments::ByteFlags);
    let raw = |segments: u64, desc: &ScanDesc, n: u64| {
        let req = RawScan {
            segments,
            ..RawScan::new(src.addr(), DType::U32, dst.addr(), DType::U32, n)
        };
        unsafe { ctx.scan_raw(&stream, &req, desc, None) }
    };
    expect_status(raw(0, &desc, n), ScanrtStatus::NullArgument);
    expect_status(
        ctx.scan_segmented(&stream, &src, &short_flags, &dst, &desc),
        ScanrtStatus::BufferTooSmall,
    );
    // A raw pointer whose allocation ends before n flags: the driver-reported extent.
    let big_n = 5u64 << 20;
    let big_src = Buffer::new(ctx, DType::U32, big_n).unwrap();
    let big_dst = Buffer::new(ctx, DType::U32, big_n).unwrap();
    let req = RawScan {
        segments: big_short.addr(),
        ..RawScan::new(big_src.addr(), DType::U32, big_dst.addr(), DType::U32, big_n)
    };
    expect_status(
        unsafe { ctx.scan_raw(&stream, &req, &desc, None) },
        ScanrtStatus::BufferTooSmall,
    );
    // The wrong buffer type for the format, a format without data, data without a format.
    expect_status(
        ctx.scan_segmented(&stream, &src, &flags, &dst, &desc.segmented(Segments::BitFlags)),
        ScanrtStatus::InvalidArgument,
    );
    expect_status(
        ctx.scan_segmented(&stream, &src, &flags, &dst, &ScanDesc::inclusive(Op::Sum)),
        ScanrtStatus::InvalidArgument,
    );
    expect_status(
        raw(flags.addr(), &ScanDesc::inclusive(Op::Sum), n),
        ScanrtStatus::InvalidArgument,
    );
    // Float keys, misaligned bit words, host memory, flags overlapping the output.
    expect_status(
        raw(flags.addr(), &desc.segmented(Segments::Keys(DType::F32)), n),
        ScanrtStatus::UnsupportedCombination,
    );
    expect_status(
        raw(flags.addr() + 2, &desc.segmented(Segments::BitFlags), n),
        ScanrtStatus::InvalidArgument,
    );
    let host_flags = vec![0u8; n as usize];
    expect_status(raw(host_flags.as_ptr() as u64, &desc, n), ScanrtStatus::NotDeviceMemory);
    expect_status(raw(dst.addr() + 16, &desc, n), ScanrtStatus::PartialOverlap);
    let got: Vec<u32> = dst.download(&stream, n as usize).unwrap();
    assert!(got.iter().all(|&v| v == 7), "a rejected call wrote to the output");
    // The context still works.
    let info = ctx.scan_segmented(&stream, &src, &flags, &dst, &desc).unwrap();
    assert_eq!(info.algorithm, Algorithm::SinglePass);
    let got: Vec<u32> = dst.download(&stream, n as usize).unwrap();
    assert!(got.iter().enumerate().all(|(i, &v)| v == i as u32 + 1));
}
