//! Typed array views (`ArrayView`) on the host backend: 1-D slices, rows of row-major
//! arrays along the last axis, DLPack tensors, segment data, and every refusal (layouts
//! no kernel scans yet, shapes, axes, read-only outputs) with nothing written.

use scanrt::{
    reference_scan, reference_scan_segmented, ArrayView, Backend, Buffer, Context, DType, Direction, Op, ScanDesc,
    ScanrtStatus, Segments,
};

use crate::common::Rng;

fn host() -> (Context, scanrt::Stream) {
    let ctx = Context::new(Backend::Host, 0).unwrap();
    let stream = ctx.new_stream().unwrap();
    (ctx, stream)
}

fn random_u32(rng: &mut Rng, n: usize) -> Vec<u32> {
    (0..n).map(|_| rng.below(1000) as u32).collect()
}

#[test]
fn slices_and_rows_along_the_last_axis_match_the_reference() {
    let (ctx, stream) = host();
    let mut rng = Rng(0xA77A);
    for (rows, len) in [
        (1u64, 1u64),
        (1, 1000),
        (7, 1),
        (3, 33),
        (64, 1000),
        (1000, 3),
        (0, 5),
        (5, 0),
    ] {
        for direction in [Direction::Forward, Direction::Backward] {
            for inclusive in [true, false] {
                let n = (rows * len) as usize;
                let input = random_u32(&mut rng, n);
                let mut got = vec![0xDEAD_BEEFu32; n];
                let desc = ScanDesc {
                    inclusive,
                    direction,
                    ..ScanDesc::inclusive(Op::Sum)
                };
                // SAFETY: both vectors hold rows * len elements and outlive the scan.
                let (i, o) = unsafe {
                    (
                        ArrayView::contiguous(input.as_ptr() as u64, DType::U32, &[rows, len]).unwrap(),
                        ArrayView::contiguous(got.as_mut_ptr() as u64, DType::U32, &[rows, len]).unwrap(),
                    )
                };
                for axis in [-1isize, 1] {
                    ctx.scan_array(&stream, &i, &o, axis, &desc).unwrap();
                    let starts: Vec<bool> = (0..n).map(|p| (p as u64).is_multiple_of(len.max(1))).collect();
                    let want: Vec<u32> = reference_scan_segmented(&input, Some(&starts), &desc);
                    assert_eq!(
                        got, want,
                        "{rows}x{len} {direction:?} inclusive={inclusive} axis {axis}"
                    );
                }
            }
        }
    }
    // 1-D slices, the output written through a mutable borrow.
    let input = random_u32(&mut rng, 100_001);
    let mut out = vec![0u64; input.len()];
    let desc = ScanDesc::exclusive(Op::Sum).with_init(5u64);
    ctx.scan_array(
        &stream,
        &ArrayView::of_slice(&input),
        &ArrayView::of_slice_mut(&mut out),
        0,
        &desc,
    )
    .unwrap();
    assert_eq!(out, reference_scan::<u32, u64>(&input, &desc));
}

#[test]
fn buffers_seen_as_arrays_and_segment_data() {
    let (ctx, stream) = host();
    let mut rng = Rng(0xB0F);
    let input: Vec<f64> = (0..12).map(|i| i as f64 * 0.5).collect();
    let a = Buffer::from_slice(&ctx, &stream, &input).unwrap();
    let mut b = Buffer::new(&ctx, DType::F64, 12).unwrap();
    let desc = ScanDesc::inclusive(Op::Max);
    ctx.scan_array(
        &stream,
        &ArrayView::of_buffer_shaped(&a, &[3, 4]).unwrap(),
        &ArrayView::of_buffer_shaped_mut(&mut b, &[3, 4]).unwrap(),
        -1,
        &desc,
    )
    .unwrap();
    let got: Vec<f64> = b.download(&stream, 12).unwrap();
    assert_eq!(got, input, "a row-wise running max of increasing rows is the rows");
    // A view past the buffer's end is refused.
    let e = ArrayView::of_buffer_shaped(&a, &[4, 4]).unwrap_err();
    assert_eq!(e.status, ScanrtStatus::BufferTooSmall);

    // Byte-flag segments as a view; too few flags are refused.
    let values = random_u32(&mut rng, 5000);
    let flags: Vec<u8> = (0..5000).map(|_| (rng.below(50) == 0) as u8).collect();
    let mut out = vec![0u32; 5000];
    let desc = ScanDesc::inclusive(Op::Sum).segmented(Segments::ByteFlags);
    let e = ctx
        .scan_array_segmented(
            &stream,
            &ArrayView::of_slice(&values),
            &ArrayView::of_slice(&flags[..4999]),
            &ArrayView::of_slice_mut(&mut out),
            &desc,
        )
        .unwrap_err();
    assert_eq!(e.status, ScanrtStatus::BufferTooSmall, "{}", e.message);
    assert!(out.iter().all(|&x| x == 0), "nothing is written on error");
    ctx.scan_array_segmented(
        &stream,
        &ArrayView::of_slice(&values),
        &ArrayView::of_slice(&flags),
        &ArrayView::of_slice_mut(&mut out),
        &desc,
    )
    .unwrap();
    let starts: Vec<bool> = flags.iter().map(|&f| f != 0).collect();
    assert_eq!(out, reference_scan_segmented::<u32, u32>(&values, Some(&starts), &desc));
}

#[test]
fn dlpack_tensors_map_onto_views() {
    use dlpark::ffi::{DLDataType, DLDataTypeCode, DLDevice, DLDeviceType, DLTensor};
    let (ctx, stream) = host();
    let input: Vec<i64> = (0..24).map(|i| i - 7).collect();
    let mut out = vec![0i64; 24];
    let mut shape = [4i64, 6];
    let tensor = |data: *mut std::ffi::c_void, shape: &mut [i64; 2], strides: *mut i64, byte_offset: u64| DLTensor {
        data,
        device: DLDevice {
            device_type: DLDeviceType::CPU,
            device_id: 0,
        },
        ndim: 2,
        dtype: DLDataType {
            code: DLDataTypeCode::INT,
            bits: 64,
            lanes: 1,
        },
        shape: shape.as_mut_ptr(),
        strides,
        byte_offset,
    };
    let mut compact = [6i64, 1];
    // SAFETY: the tensors describe live vectors of 24 elements.
    unsafe {
        let i = ArrayView::from_dlpack(&tensor(input.as_ptr() as *mut _, &mut shape, std::ptr::null_mut(), 0)).unwrap();
        let o =
            ArrayView::from_dlpack(&tensor(out.as_mut_ptr() as *mut _, &mut shape, compact.as_mut_ptr(), 0)).unwrap();
        assert_eq!(i.shape(), &[4, 6]);
        assert_eq!(o.strides(), &[6, 1]);
        ctx.scan_array(&stream, &i, &o, 1, &ScanDesc::inclusive(Op::Min))
            .unwrap();
        // Transposed strides: element [r, c] is input[r + 4 c], scanned along its rows.
        let mut transposed = [1i64, 4];
        let t = ArrayView::from_dlpack(&tensor(
            input.as_ptr() as *mut _,
            &mut shape,
            transposed.as_mut_ptr(),
            0,
        ))
        .unwrap();
        let mut t_out = vec![0i64; 24];
        let t_view = ArrayView::contiguous(t_out.as_mut_ptr() as u64, DType::I64, &[4, 6]).unwrap();
        ctx.scan_array(&stream, &t, &t_view, 1, &ScanDesc::inclusive(Op::Min))
            .unwrap();
        for r in 0..4 {
            let mut running = i64::MAX;
            for c in 0..6 {
                running = running.min(input[r + 4 * c]);
                assert_eq!(t_out[r * 6 + c], running, "transposed [{r}, {c}]");
            }
        }
        // byte_offset moves the first element.
        let mut one = [1i64, 6];
        let shifted =
            ArrayView::from_dlpack(&tensor(input.as_ptr() as *mut _, &mut one, std::ptr::null_mut(), 48)).unwrap();
        assert_eq!(shifted.addr(), input.as_ptr() as u64 + 48);
        // The half types are scanrt's; types scanrt does not have are refused by name.
        let mut half = tensor(input.as_ptr() as *mut _, &mut shape, std::ptr::null_mut(), 0);
        for (code, bits, dtype) in [
            (DLDataTypeCode::FLOAT, 16, Some(DType::F16)),
            (DLDataTypeCode::BFLOAT, 16, Some(DType::BF16)),
            (DLDataTypeCode::FLOAT, 8, None),
            (DLDataTypeCode::COMPLEX, 64, None),
        ] {
            half.dtype = DLDataType { code, bits, lanes: 1 };
            match ArrayView::from_dlpack(&half) {
                Ok(view) => assert_eq!(Some(view.dtype()), dtype),
                Err(e) => {
                    assert_eq!(dtype, None);
                    assert_eq!(e.status, ScanrtStatus::UnsupportedCombination);
                }
            }
        }
    }
    for r in 0..4 {
        let mut running = i64::MAX;
        for c in 0..6 {
            running = running.min(input[r * 6 + c]);
            assert_eq!(out[r * 6 + c], running);
        }
    }
}

#[test]
fn layouts_and_arguments_that_are_refused_write_nothing() {
    let (ctx, stream) = host();
    let input = vec![1u32; 64];
    let mut out = vec![9u32; 64];
    let o_addr = out.as_mut_ptr() as u64;
    let sum = ScanDesc::default();
    let status = |r: scanrt::Result<scanrt::ScanInfo>| r.unwrap_err().status;
    // SAFETY: every view covers at most the 64 elements of its vector.
    unsafe {
        let i = |shape: &[u64]| ArrayView::contiguous(input.as_ptr() as u64, DType::U32, shape).unwrap();
        let o = |shape: &[u64]| ArrayView::contiguous(o_addr, DType::U32, shape).unwrap();
        // Strided layouts no single form holds: batch axes that do not nest.
        let unnested = ArrayView::strided(input.as_ptr() as u64, DType::U32, &[2, 2, 2, 4], &[4, 9, 20, 1]).unwrap();
        let unnested_out = ArrayView::contiguous(o_addr, DType::U32, &[2, 2, 2, 4]).unwrap();
        assert_eq!(
            status(ctx.scan_array(&stream, &unnested, &unnested_out, 3, &sum)),
            ScanrtStatus::UnsupportedCombination
        );
        // An output that reaches an element twice, and one that overlaps the input
        // without being it.
        let twice = ArrayView::strided(o_addr, DType::U32, &[8, 8], &[1, 1]).unwrap();
        assert_eq!(
            status(ctx.scan_array(&stream, &i(&[8, 8]), &twice, 0, &sum)),
            ScanrtStatus::InvalidArgument
        );
        let shifted = ArrayView::strided(input.as_ptr() as u64 + 4, DType::U32, &[8, 7], &[8, 1]).unwrap();
        let columns_in = ArrayView::strided(input.as_ptr() as u64, DType::U32, &[8, 7], &[8, 1]).unwrap();
        assert_eq!(
            status(ctx.scan_array(&stream, &columns_in, &shifted, 0, &sum)),
            ScanrtStatus::InvalidArgument
        );
        // Segments and the matrix scan take 1-D contiguous arrays.
        assert_eq!(
            status(ctx.scan_array(
                &stream,
                &i(&[8, 8]),
                &o(&[8, 8]),
                0,
                &ScanDesc::default().with_algorithm(scanrt::Algorithm::Matrix)
            )),
            ScanrtStatus::UnsupportedCombination
        );
        // Axes out of range.
        for axis in [2isize, -3] {
            assert_eq!(
                status(ctx.scan_array(&stream, &i(&[8, 8]), &o(&[8, 8]), axis, &sum)),
                ScanrtStatus::InvalidArgument
            );
        }
        // Shapes that differ.
        assert_eq!(
            status(ctx.scan_array(&stream, &i(&[8, 8]), &o(&[64]), -1, &sum)),
            ScanrtStatus::InvalidArgument
        );
        // Rows with segments besides.
        let seg = ScanDesc::default().segmented(Segments::Rows(4));
        assert_eq!(
            status(ctx.scan_array(&stream, &i(&[8, 8]), &o(&[8, 8]), -1, &seg)),
            ScanrtStatus::InvalidArgument
        );
        // Flags without their data.
        let flags = ScanDesc::default().segmented(Segments::ByteFlags);
        assert_eq!(
            status(ctx.scan_array(&stream, &i(&[64]), &o(&[64]), 0, &flags)),
            ScanrtStatus::InvalidArgument
        );
        // More than 8 dimensions, and a NULL address with elements.
        assert_eq!(
            ArrayView::contiguous(o_addr, DType::U32, &[1; 9]).unwrap_err().status,
            ScanrtStatus::InvalidArgument
        );
        assert_eq!(
            ArrayView::contiguous(0, DType::U32, &[3]).unwrap_err().status,
            ScanrtStatus::NullArgument
        );
        // Extent-1 dimensions take any stride; the scan runs along the only long axis.
        let column = ArrayView::strided(input.as_ptr() as u64, DType::U32, &[64, 1], &[1, 999]).unwrap();
        let column_out = ArrayView::strided(o_addr, DType::U32, &[64, 1], &[1, 7]).unwrap();
        assert!(out.iter().all(|&x| x == 9), "nothing was written by a refused call");
        ctx.scan_array(&stream, &column, &column_out, 0, &sum).unwrap();
    }
    assert_eq!(out, (1..=64).collect::<Vec<u32>>());
    // A read-only output.
    let mut fresh = vec![0u32; 64];
    let e = ctx
        .scan_array(
            &stream,
            &ArrayView::of_slice(&input),
            &ArrayView::of_slice(&fresh),
            0,
            &sum,
        )
        .unwrap_err();
    assert_eq!(e.status, ScanrtStatus::InvalidArgument);
    fresh[0] = 1;
    assert_eq!(fresh[0], 1);
}

/// A user-defined operator over views: the linear recurrence h = a * h + b on host
/// slices, with byte-flag segments, against a sequential loop; refusals for views an
/// operator cannot scan.
#[test]
fn operator_scans_take_array_views() {
    use scanrt::{OperatorScan, Segments};
    let (ctx, stream) = host();
    let op = ctx
        .create_operator(scanrt::recipes::linear_recurrence(DType::F64).unwrap())
        .unwrap();
    let mut rng = Rng(0x0BE7);
    let n = 10_007;
    let a: Vec<f64> = (0..n).map(|_| 0.5 + rng.below(100) as f64 / 200.0).collect();
    let b: Vec<f64> = (0..n).map(|_| rng.below(100) as f64 / 10.0 - 5.0).collect();
    let flags: Vec<u8> = (0..n).map(|_| (rng.below(300) == 0) as u8).collect();
    let mut h = vec![0f64; n];
    let scan = OperatorScan {
        segments: Segments::ByteFlags,
        ..OperatorScan::default()
    };
    op.scan_arrays(
        &stream,
        &[ArrayView::of_slice(&a), ArrayView::of_slice(&b)],
        &[ArrayView::of_slice_mut(&mut h)],
        Some(&ArrayView::of_slice(&flags)),
        &scan,
    )
    .unwrap();
    let mut running = 0.0;
    for i in 0..n {
        if i == 0 || flags[i] != 0 {
            running = 0.0;
        }
        running = a[i] * running + b[i];
        assert!(
            (h[i] - running).abs() <= 1e-9 * running.abs().max(1.0),
            "element {i}: {} vs {running}",
            h[i]
        );
    }
    // Wrong types, 2-D views, missing segment data and read-only outputs are refused.
    let ints = vec![0u32; n];
    let status = |r: scanrt::Result<scanrt::ScanInfo>| r.unwrap_err().status;
    let ro = [ArrayView::of_slice(&h)];
    assert_eq!(
        status(op.scan_arrays(
            &stream,
            &[ArrayView::of_slice(&a), ArrayView::of_slice(&b)],
            &ro,
            Some(&ArrayView::of_slice(&flags)),
            &scan
        )),
        ScanrtStatus::InvalidArgument
    );
    let mut h2 = vec![0f64; n];
    assert_eq!(
        status(op.scan_arrays(
            &stream,
            &[ArrayView::of_slice(&ints), ArrayView::of_slice(&b)],
            &[ArrayView::of_slice_mut(&mut h2)],
            Some(&ArrayView::of_slice(&flags)),
            &scan
        )),
        ScanrtStatus::InvalidArgument
    );
    assert_eq!(
        status(op.scan_arrays(
            &stream,
            &[ArrayView::of_slice(&a), ArrayView::of_slice(&b)],
            &[ArrayView::of_slice_mut(&mut h2)],
            None,
            &scan
        )),
        ScanrtStatus::InvalidArgument
    );
    // SAFETY: a 2-D view of h2's n elements.
    let square = unsafe { ArrayView::contiguous(h2.as_mut_ptr() as u64, DType::F64, &[1, n as u64]).unwrap() };
    assert_eq!(
        status(op.scan_arrays(
            &stream,
            &[ArrayView::of_slice(&a), ArrayView::of_slice(&b)],
            &[square],
            Some(&ArrayView::of_slice(&flags)),
            &scan
        )),
        ScanrtStatus::UnsupportedCombination
    );
    assert!(h2.iter().all(|&x| x == 0.0), "nothing is written on error");
}

/// Views of buffers belong to their context: another context's call refuses them, and a
/// view through a shared borrow is read only.
#[test]
fn buffer_views_keep_their_context_and_borrow() {
    use scanrt::{SelectArrays, SelectDesc, Selection};
    let (ctx, stream) = host();
    let (other, other_stream) = host();
    let input = Buffer::from_slice(&other, &other_stream, &[1u32, 0, 2]).unwrap();
    let mut out = Buffer::new(&ctx, DType::U32, 3).unwrap();
    let mut count = Buffer::new(&ctx, DType::U64, 1).unwrap();
    let e = ctx
        .select(
            &stream,
            &SelectArrays {
                input: ArrayView::of_buffer(&input),
                flags: None,
                output: ArrayView::of_buffer_mut(&mut out),
                rejected: None,
                lengths: None,
                num_selected: ArrayView::of_buffer_mut(&mut count),
            },
            &SelectDesc::new(Selection::NonZero),
        )
        .unwrap_err();
    assert_eq!(e.status, ScanrtStatus::ContextMismatch, "{}", e.message);
    let e = ctx
        .scan_array(
            &stream,
            &ArrayView::of_buffer(&input),
            &ArrayView::of_buffer_mut(&mut out),
            0,
            &ScanDesc::default(),
        )
        .unwrap_err();
    assert_eq!(e.status, ScanrtStatus::ContextMismatch, "{}", e.message);
    let mine = Buffer::from_slice(&ctx, &stream, &[1u32, 0, 2]).unwrap();
    let e = ctx
        .scan_array(
            &stream,
            &ArrayView::of_buffer(&mine),
            &ArrayView::of_buffer(&out),
            0,
            &ScanDesc::default(),
        )
        .unwrap_err();
    assert_eq!(
        e.status,
        ScanrtStatus::InvalidArgument,
        "a view through &Buffer is read only"
    );
    ctx.scan_array(
        &stream,
        &ArrayView::of_buffer(&mine),
        &ArrayView::of_buffer_mut(&mut out),
        0,
        &ScanDesc::default(),
    )
    .unwrap();
    assert_eq!(out.download::<u32>(&stream, 3).unwrap(), vec![1, 1, 3]);
    // Another context's buffer as the output of a raw input: refused, nothing written.
    let mut foreign = Buffer::from_slice(&other, &other_stream, &[9u32; 3]).unwrap();
    let raw = [4u32, 5, 6];
    // SAFETY: a view of the three elements of `raw`, alive until the end.
    let raw_view = unsafe { ArrayView::contiguous(raw.as_ptr() as u64, DType::U32, &[3]).unwrap() };
    let e = ctx
        .scan_array(
            &stream,
            &raw_view,
            &ArrayView::of_buffer_mut(&mut foreign),
            0,
            &ScanDesc::default(),
        )
        .unwrap_err();
    assert_eq!(e.status, ScanrtStatus::ContextMismatch, "{}", e.message);
    assert_eq!(foreign.download::<u32>(&other_stream, 3).unwrap(), vec![9; 3]);
}
