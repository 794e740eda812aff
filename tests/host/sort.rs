//! The radix sort on the host backend: the shared sweep against the sequential stable
//! sort, and every refusal (types, lengths, bit ranges, overlaps, read-only outputs) with
//! nothing written.

use scanrt::{ArrayView, Backend, Buffer, Context, DType, ScanrtStatus, SortArrays, SortDesc};

#[test]
fn host_sorts_match_the_sequential_stable_sort() {
    let ctx = Context::new(Backend::Host, 0).unwrap();
    let failures = crate::common::sort::sweep_sorts(&ctx, 0x5027, &[0, 1, 2, 33, 1000, 4097]);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn bad_sorts_are_refused_and_write_nothing() {
    let ctx = Context::new(Backend::Host, 0).unwrap();
    let stream = ctx.new_stream().unwrap();
    let keys = Buffer::from_slice(&ctx, &stream, &[3u32, 1, 2, 0]).unwrap();
    let mut out = Buffer::from_slice(&ctx, &stream, &[7u32; 4]).unwrap();
    let mut short = Buffer::from_slice(&ctx, &stream, &[7u32; 3]).unwrap();
    let mut wrong_type = Buffer::from_slice(&ctx, &stream, &[7u64; 4]).unwrap();
    let mut indices8 = Buffer::from_slice(&ctx, &stream, &[7u8; 4]).unwrap();
    let values = Buffer::from_slice(&ctx, &stream, &[9u32; 4]).unwrap();
    let plain = |keys_out| SortArrays {
        keys_in: ArrayView::of_buffer(&keys),
        keys_out,
        values_in: None,
        values_out: None,
        temp: None,
    };
    let out_view = ArrayView::of_buffer_mut(&mut out);
    let refused = |arrays: SortArrays, desc: SortDesc, status: ScanrtStatus| {
        let e = ctx.sort(&stream, &arrays, &desc).unwrap_err();
        assert_eq!(e.status, status, "{e}");
    };
    refused(
        plain(ArrayView::of_buffer_mut(&mut short)),
        SortDesc::ascending(),
        ScanrtStatus::BufferTooSmall,
    );
    refused(
        plain(ArrayView::of_buffer_mut(&mut wrong_type)),
        SortDesc::ascending(),
        ScanrtStatus::InvalidArgument,
    );
    refused(
        plain(ArrayView::of_buffer(&keys)),
        SortDesc::ascending(),
        ScanrtStatus::InvalidArgument,
    );
    let bad_bits = SortDesc {
        begin_bit: 8,
        end_bit: Some(33),
        ..SortDesc::ascending()
    };
    refused(plain(out_view), bad_bits, ScanrtStatus::InvalidArgument);
    let backwards = SortDesc {
        begin_bit: 9,
        end_bit: Some(8),
        ..SortDesc::ascending()
    };
    refused(plain(out_view), backwards, ScanrtStatus::InvalidArgument);
    // Values without an output; indices of a type that is not U32 or U64.
    let mut a = plain(out_view);
    a.values_in = Some(ArrayView::of_buffer(&values));
    refused(a, SortDesc::ascending(), ScanrtStatus::InvalidArgument);
    let mut a = plain(out_view);
    a.values_out = Some(ArrayView::of_buffer_mut(&mut indices8));
    refused(a, SortDesc::ascending(), ScanrtStatus::InvalidArgument);
    // Temporary memory that is read-only, or not one contiguous run.
    let temp = Buffer::new(&ctx, DType::U8, ctx.sort_temp_bytes(4, DType::U32, None) * 2).unwrap();
    let mut a = plain(out_view);
    a.temp = Some(ArrayView::of_buffer(&temp));
    refused(a, SortDesc::ascending(), ScanrtStatus::InvalidArgument);
    let mut a = plain(out_view);
    let half = temp.len() / 2;
    // SAFETY: every second byte of the buffer, within its length.
    a.temp = Some(unsafe { ArrayView::strided(temp.addr(), DType::U8, &[half], &[2]).unwrap() });
    refused(a, SortDesc::ascending(), ScanrtStatus::UnsupportedCombination);
    assert_eq!(out.download::<u32>(&stream, 4).unwrap(), vec![7; 4]);
    assert_eq!(indices8.download::<u8>(&stream, 4).unwrap(), vec![7; 4]);

    // Overlaps: output keys over the values, or partly over the keys.
    let mut both = Buffer::from_slice(&ctx, &stream, &[5u32, 4, 3, 2, 1, 0, 0, 0]).unwrap();
    let whole = ArrayView::of_buffer_mut(&mut both);
    // SAFETY: views of the buffer's own elements, within its length.
    let (front, shifted) = unsafe {
        (
            ArrayView::contiguous(whole.addr(), DType::U32, &[4]).unwrap(),
            ArrayView::contiguous(whole.addr() + 8, DType::U32, &[4]).unwrap(),
        )
    };
    let a = SortArrays {
        keys_in: front,
        keys_out: shifted,
        values_in: None,
        values_out: None,
        temp: None,
    };
    refused(a, SortDesc::ascending(), ScanrtStatus::PartialOverlap);
    assert_eq!(both.download::<u32>(&stream, 8).unwrap(), vec![5, 4, 3, 2, 1, 0, 0, 0]);
}

/// Each primitive's plan, made once and run twice on other data, gives what the
/// primitive's call gives: a sequential loop's result.
#[test]
fn plans_run_each_primitive_as_its_call_does() {
    use scanrt::{Op, RunLengthArrays, ScanDesc, SelectArrays, SelectDesc, SelectOutput, Selection};
    let ctx = Context::new(Backend::Host, 0).unwrap();
    let stream = ctx.new_stream().unwrap();
    let sort = ctx.sort_plan(&SortDesc::ascending()).unwrap();
    let select = ctx
        .select_plan(&SelectDesc {
            selection: Selection::NonZero,
            output: SelectOutput::Values,
            capacity: None,
        })
        .unwrap();
    let runs = ctx.run_length_plan().unwrap();
    let sat = ctx.summed_area_plan(&ScanDesc::inclusive(Op::Sum)).unwrap();
    for seed in [3u32, 11] {
        let x: Vec<u32> = (0..1000u32).map(|i| (i * seed / 7 + i % seed) % 5).collect();
        let n = x.len() as u64;
        let keys = Buffer::from_slice(&ctx, &stream, &x).unwrap();
        let mut out = Buffer::new(&ctx, DType::U32, n).unwrap();
        let mut lengths = Buffer::new(&ctx, DType::U32, n).unwrap();
        let mut count = Buffer::new(&ctx, DType::I64, 1).unwrap();
        assert!(sort.workspace_bytes(n, DType::U32, None) > 0);
        let arrays = SortArrays {
            keys_in: ArrayView::of_buffer(&keys),
            keys_out: ArrayView::of_buffer_mut(&mut out),
            values_in: None,
            values_out: None,
            temp: None,
        };
        sort.execute(&stream, &arrays).unwrap();
        let mut want = x.clone();
        want.sort();
        assert_eq!(out.download::<u32>(&stream, x.len()).unwrap(), want);

        let arrays = SelectArrays {
            input: ArrayView::of_buffer(&keys),
            flags: None,
            output: ArrayView::of_buffer_mut(&mut out),
            rejected: None,
            lengths: None,
            num_selected: ArrayView::of_buffer_mut(&mut count),
        };
        select.execute(&stream, &arrays).unwrap();
        let kept: Vec<u32> = x.iter().copied().filter(|&v| v != 0).collect();
        assert_eq!(count.download::<i64>(&stream, 1).unwrap()[0], kept.len() as i64);
        assert_eq!(out.download::<u32>(&stream, kept.len()).unwrap(), kept);

        let arrays = RunLengthArrays {
            input: ArrayView::of_buffer(&keys),
            values: ArrayView::of_buffer_mut(&mut out),
            lengths: ArrayView::of_buffer_mut(&mut lengths),
            num_runs: ArrayView::of_buffer_mut(&mut count),
        };
        runs.execute(&stream, &arrays).unwrap();
        let mut want: Vec<(u32, u32)> = Vec::new();
        for &v in &x {
            match want.last_mut() {
                Some((last, len)) if *last == v => *len += 1,
                _ => want.push((v, 1)),
            }
        }
        let r = count.download::<i64>(&stream, 1).unwrap()[0] as usize;
        let got_values = out.download::<u32>(&stream, r).unwrap();
        let got_lengths = lengths.download::<u32>(&stream, r).unwrap();
        assert_eq!(got_values.into_iter().zip(got_lengths).collect::<Vec<_>>(), want);

        let grid = ArrayView::of_buffer_shaped(&keys, &[25, 40]).unwrap();
        let table = ArrayView::of_buffer_shaped_mut(&mut out, &[25, 40]).unwrap();
        sat.execute(&stream, &grid, &table).unwrap();
        let got = out.download::<u32>(&stream, x.len()).unwrap();
        let mut want = vec![0u32; x.len()];
        for r in 0..25 {
            for c in 0..40 {
                let up = if r > 0 { want[(r - 1) * 40 + c] } else { 0 };
                let left = if c > 0 { want[r * 40 + c - 1] } else { 0 };
                let corner = if r > 0 && c > 0 { want[(r - 1) * 40 + c - 1] } else { 0 };
                want[r * 40 + c] = x[r * 40 + c] + up + left - corner;
            }
        }
        assert_eq!(got, want);
    }
}
