//! Carries in memory on the host backend: the shared sweep against sequential loops, and
//! every refusal (segmented scans, an initial value beside a carry in, wrong types,
//! misalignment, overlaps, a read-only carry out) with nothing written.

use scanrt::{ArrayView, Backend, Buffer, CarryViews, Context, Op, ScanDesc, ScanrtStatus};

#[test]
fn host_carries_match_sequential_loops() {
    let ctx = Context::new(Backend::Host, 0).unwrap();
    let stream = ctx.new_stream().unwrap();
    // The host scans chunks of 2^15 elements: sizes around one and two chunks.
    let sizes = [0, 1, 2, 33, 32767, 32768, 65537];
    let failures = crate::common::carries::sweep_carries(&ctx, &stream, 0xCA77, &sizes);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn bad_carries_are_refused_and_write_nothing() {
    let ctx = Context::new(Backend::Host, 0).unwrap();
    let stream = ctx.new_stream().unwrap();
    let input = Buffer::from_slice(&ctx, &stream, &[1u32, 2, 3, 4]).unwrap();
    let output = Buffer::from_slice(&ctx, &stream, &[7u32; 4]).unwrap();
    let carries = Buffer::from_slice(&ctx, &stream, &[5u32, 6, 8]).unwrap();
    let wide = Buffer::from_slice(&ctx, &stream, &[5u64]).unwrap();
    let view = |buf: &Buffer, at: u64, len: u64| unsafe {
        ArrayView::contiguous(buf.addr() + at * buf.dtype().size() as u64, buf.dtype(), &[len]).unwrap()
    };
    let in_view = ArrayView::of_buffer(&input);
    let out_view = view(&output, 0, 4);
    let sum = ScanDesc::inclusive(Op::Sum);
    let run = |desc: &ScanDesc, carry_in: Option<&ArrayView>, carry_out: Option<&ArrayView>, output: &ArrayView| {
        let carries = CarryViews { carry_in, carry_out };
        ctx.scan_array_carried(&stream, &in_view, output, -1, desc, &carries)
            .unwrap_err()
            .status
    };
    let c0 = view(&carries, 0, 1);
    let c1 = view(&carries, 1, 1);
    // Rows of a 2-D array take one carry out per row (tests/common/strided.rs checks
    // their values): a single one for two rows is too small.
    let rows_in = ArrayView::of_buffer_shaped(&input, &[2, 2]).unwrap();
    let rows_out = unsafe { ArrayView::contiguous(output.addr(), scanrt::DType::U32, &[2, 2]).unwrap() };
    let carries_out = CarryViews {
        carry_in: None,
        carry_out: Some(&c1),
    };
    let err = ctx
        .scan_array_carried(&stream, &rows_in, &rows_out, -1, &sum, &carries_out)
        .unwrap_err();
    assert_eq!(err.status, ScanrtStatus::BufferTooSmall, "{err}");
    let cases: Vec<(&str, ScanrtStatus, ScanrtStatus)> = vec![
        (
            "initial value and carry in",
            run(&sum.with_init(3u32), Some(&c0), None, &out_view),
            ScanrtStatus::InvalidArgument,
        ),
        (
            "carry of another type",
            run(&sum, Some(&view(&wide, 0, 1)), None, &out_view),
            ScanrtStatus::InvalidArgument,
        ),
        (
            "empty carry",
            run(&sum, None, Some(&view(&carries, 0, 0)), &out_view),
            ScanrtStatus::BufferTooSmall,
        ),
        (
            "carry out inside the output",
            run(&sum, None, Some(&view(&output, 2, 1)), &out_view),
            ScanrtStatus::PartialOverlap,
        ),
        (
            "carry out inside the input",
            run(&sum, None, Some(&view(&input, 3, 1)), &out_view),
            ScanrtStatus::PartialOverlap,
        ),
        (
            "carry in inside the output",
            run(&sum, Some(&view(&output, 0, 1)), Some(&c1), &out_view),
            ScanrtStatus::PartialOverlap,
        ),
        (
            "read-only carry out",
            run(&sum, None, Some(&c1.read_only()), &out_view),
            ScanrtStatus::InvalidArgument,
        ),
    ];
    for (what, got, want) in cases {
        assert_eq!(got, want, "{what}");
    }
    // A misaligned carry (raw addresses: views would refuse it first).
    let plan = ctx.plan(scanrt::DType::U32, scanrt::DType::U32, 4, &sum).unwrap();
    let misaligned = scanrt::Carries {
        carry_in: 0,
        carry_out: carries.addr() + 1,
    };
    let err =
        unsafe { plan.execute_carried(&stream, &[input.addr()], &[output.addr()], 0, misaligned, None) }.unwrap_err();
    assert_eq!(err.status, ScanrtStatus::InvalidArgument);
    assert_eq!(output.download::<u32>(&stream, 4).unwrap(), vec![7; 4]);
    assert_eq!(carries.download::<u32>(&stream, 3).unwrap(), vec![5, 6, 8]);
}

#[test]
fn host_arrays_scan_on_the_host_backend() {
    let ctx = Context::new(Backend::Host, 0).unwrap();
    let input: Vec<u32> = (0..100_003u32).map(|i| i % 97).collect();
    let mut output = vec![0u64; input.len()];
    let desc = ScanDesc::exclusive(Op::Sum).with_init(5u64).backward();
    let mut calls = 0;
    let mut progress = |done: u64, total: u64| {
        calls += 1;
        assert_eq!(done, total);
    };
    let options = scanrt::HostScanOptions {
        chunk: 1000,
        progress: Some(&mut progress),
    };
    ctx.scan_host_array(&input, &mut output, &desc, options).unwrap();
    assert_eq!(output, scanrt::reference_scan::<u32, u64>(&input, &desc));
    assert_eq!(calls, 1);
    let short = &mut output[..10];
    let err = ctx
        .scan_host_array(&input, short, &desc, Default::default())
        .unwrap_err();
    assert_eq!(err.status, ScanrtStatus::BufferTooSmall);
}

#[test]
fn host_segment_carries_match_sequential_loops() {
    let ctx = Context::new(Backend::Host, 0).unwrap();
    let stream = ctx.new_stream().unwrap();
    let sizes = [0, 1, 2, 33, 4097, 32768, 65537];
    let failures = crate::common::segment_carries::sweep_segment_carries(&ctx, &stream, 0x5E6C, &sizes, 4096);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn bad_carries_per_segment_are_refused_and_write_nothing() {
    use scanrt::{recipes, DType, OperatorScan, Segments};
    let ctx = Context::new(Backend::Host, 0).unwrap();
    let stream = ctx.new_stream().unwrap();
    let op = ctx
        .create_operator(recipes::linear_recurrence(DType::F64).unwrap())
        .unwrap();
    let a = Buffer::from_slice(&ctx, &stream, &[1.0f64; 6]).unwrap();
    let b = Buffer::from_slice(&ctx, &stream, &[2.0f64; 6]).unwrap();
    let h = Buffer::from_slice(&ctx, &stream, &[7.0f64; 6]).unwrap();
    let offsets = Buffer::from_slice(&ctx, &stream, &[0u32, 2, 6]).unwrap();
    let states = Buffer::from_slice(&ctx, &stream, &[0u8; 64]).unwrap();
    let wrong_type = Buffer::from_slice(&ctx, &stream, &[0u32; 16]).unwrap();
    let scan = OperatorScan {
        segments: Segments::Offsets {
            dtype: DType::U32,
            count: 3,
        },
        ..OperatorScan::default()
    };
    let bytes =
        |buf: &Buffer, at: u64, len: u64| unsafe { ArrayView::contiguous(buf.addr() + at, DType::U8, &[len]).unwrap() };
    let (ins, outs) = (
        [ArrayView::of_buffer(&a), ArrayView::of_buffer(&b)],
        [unsafe { ArrayView::contiguous(h.addr(), DType::F64, &[6]).unwrap() }],
    );
    let run = |carry_in: Option<&ArrayView>, carry_out: Option<&ArrayView>| {
        let carries = CarryViews { carry_in, carry_out };
        op.scan_arrays_carried(
            &stream,
            &ins,
            &outs,
            Some(&ArrayView::of_buffer(&offsets)),
            &scan,
            &carries,
        )
        .unwrap_err()
        .status
    };
    let one_state = bytes(&states, 0, 16);
    let typed = unsafe { ArrayView::contiguous(wrong_type.addr(), DType::U32, &[8]).unwrap() };
    let (first, overlapping) = (bytes(&states, 0, 32), bytes(&states, 16, 32));
    assert_eq!(
        run(None, Some(&one_state)),
        ScanrtStatus::BufferTooSmall,
        "one state for two segments"
    );
    assert_eq!(
        run(Some(&typed), None),
        ScanrtStatus::InvalidArgument,
        "a u32 array of states"
    );
    assert_eq!(
        run(Some(&first), Some(&overlapping)),
        ScanrtStatus::PartialOverlap,
        "overlapping carries"
    );
    assert_eq!(
        run(Some(&first), Some(&first)),
        ScanrtStatus::PartialOverlap,
        "one array for both"
    );
    assert_eq!(h.download::<f64>(&stream, 6).unwrap(), vec![7.0; 6]);
    assert_eq!(states.download::<u8>(&stream, 64).unwrap(), vec![0; 64]);
}

/// A scan with carries per segment runs segment by segment on the host; a load still sees
/// each element's position in the whole array (the GPU's index), not in its segment.
#[test]
fn host_segment_carries_keep_absolute_indices() {
    use scanrt::{recipes, DType, OperatorScan, Segments};
    let ctx = Context::new(Backend::Host, 0).unwrap();
    let stream = ctx.new_stream().unwrap();
    let op = ctx
        .create_operator(recipes::cumulative_extreme(DType::U32, true).unwrap())
        .unwrap();
    let x = [5u32, 1, 7, 2, 9, 3];
    let input = Buffer::from_slice(&ctx, &stream, &x).unwrap();
    let mut values = Buffer::from_slice(&ctx, &stream, &[0u32; 6]).unwrap();
    let mut indices = Buffer::from_slice(&ctx, &stream, &[0u32; 6]).unwrap();
    let offsets = Buffer::from_slice(&ctx, &stream, &[0u32, 3, 5, 6]).unwrap();
    let state = op.desc().state_size;
    let mut totals = Buffer::new(&ctx, DType::U8, 3 * state as u64).unwrap();
    let scan = OperatorScan {
        segments: Segments::Offsets {
            dtype: DType::U32,
            count: 4,
        },
        ..OperatorScan::default()
    };
    let total_view = ArrayView::of_buffer_mut(&mut totals);
    op.scan_arrays_carried(
        &stream,
        &[ArrayView::of_buffer(&input)],
        &[
            ArrayView::of_buffer_mut(&mut values),
            ArrayView::of_buffer_mut(&mut indices),
        ],
        Some(&ArrayView::of_buffer(&offsets)),
        &scan,
        &CarryViews {
            carry_in: None,
            carry_out: Some(&total_view),
        },
    )
    .unwrap();
    // The running maximum of each segment and where it lies in the whole array.
    assert_eq!(values.download::<u32>(&stream, 6).unwrap(), [5, 5, 7, 2, 9, 3]);
    assert_eq!(indices.download::<u32>(&stream, 6).unwrap(), [0, 0, 2, 3, 4, 5]);
}
