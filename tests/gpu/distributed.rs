//! Scans across every GPU of the machine (one rank on a single-GPU machine: NCCL loaded,
//! a communicator of one rank), against the sequential scan of the whole logical array:
//! the single-process form (`MultiGpu::scan`) over built-in operators, types, directions,
//! inclusive and exclusive, initial values, the total, the deterministic mode and chunks
//! of unequal and zero length; the rank form from one thread per rank, built-in
//! (`Context::scan_across`) and user-defined (`Operator::scan_across_raw`, a 16-byte
//! linear-recurrence state); and refusals before any collective.

use scanrt::{
    recipes, ArrayView, Backend, Buffer, Context, DType, Direction, GpuPart, MultiGpu, Op, OperatorScan, ScanDesc,
    ScanrtStatus,
};

use crate::common::*;

/// A `MultiGpu` over every device (device 0 is the suite's shared context).
fn all_gpus() -> MultiGpu {
    let count = cudarc::driver::CudaContext::device_count().unwrap() as usize;
    let contexts: Vec<Context> = (0..count)
        .map(|d| {
            if d == 0 {
                gpu().clone()
            } else {
                Context::new(Backend::Gpu, d).unwrap()
            }
        })
        .collect();
    let multi = MultiGpu::new(&contexts).unwrap_or_else(|e| panic!("NCCL across {count} GPUs: {e}"));
    eprintln!("scans across {count} GPUs");
    multi
}

/// Chunk lengths summing to about `per_rank * ranks`, some unequal, one empty when
/// `with_empty` (and there are two or more ranks).
fn chunk_lengths(rng: &mut Rng, ranks: usize, per_rank: usize, with_empty: bool) -> Vec<usize> {
    (0..ranks)
        .map(|r| {
            if with_empty && ranks > 1 && r == ranks / 2 {
                0
            } else {
                per_rank / 2 + rng.below(per_rank as u64 + 1) as usize
            }
        })
        .collect()
}

/// One built-in scan across the GPUs of `multi`, checked against the whole array's
/// sequential scan and total.
fn across_case<T: TestInput + TestOutput + scanrt::Widen<T>>(
    multi: &MultiGpu,
    rng: &mut Rng,
    lengths: &[usize],
    desc: ScanDesc,
    init: Option<T>,
) -> Result<(), String> {
    let desc = ScanDesc {
        init: init.map(scanrt::InitValue::of),
        ..desc
    };
    let e = |e: scanrt::Error| e.to_string();
    let streams: Vec<_> = multi.contexts().iter().map(|c| c.new_stream().unwrap()).collect();
    let data: Vec<Vec<T>> = lengths.iter().map(|&n| random_vec(rng, desc.op, n)).collect();
    let mut inputs = Vec::new();
    let mut outputs = Vec::new();
    let mut totals = Vec::new();
    for ((ctx, stream), chunk) in multi.contexts().iter().zip(&streams).zip(&data) {
        inputs.push(Buffer::from_slice(ctx, stream, chunk).map_err(e)?);
        outputs.push(Buffer::new(ctx, T::DTYPE, chunk.len() as u64).map_err(e)?);
        totals.push(Buffer::new(ctx, T::DTYPE, 1).map_err(e)?);
    }
    let parts: Vec<GpuPart> = (0..lengths.len())
        .map(|r| GpuPart {
            stream: &streams[r],
            input: ArrayView::of_buffer(&inputs[r]),
            // SAFETY: the buffers outlive the parts.
            output: unsafe { ArrayView::contiguous(outputs[r].addr(), T::DTYPE, &[lengths[r] as u64]).unwrap() },
            total: Some(unsafe { ArrayView::contiguous(totals[r].addr(), T::DTYPE, &[1]).unwrap() }),
        })
        .collect();
    multi.scan(&parts, &desc).map_err(e)?;
    let whole: Vec<T> = data.concat();
    let mut got = Vec::new();
    for (r, stream) in streams.iter().enumerate() {
        got.extend(outputs[r].download::<T>(stream, lengths[r]).map_err(e)?);
    }
    compare(
        &whole,
        &desc,
        &got,
        gpu_depth(whole.len().max(1)) + lengths.len() as f64,
    )?;
    let init = init.unwrap_or_else(|| T::identity(desc.op));
    let fold = |a: T, x: &T| T::combine(desc.op, a, *x);
    let want_total = if desc.direction == Direction::Backward {
        whole.iter().rev().fold(init, fold)
    } else {
        whole.iter().fold(init, fold)
    };
    for (r, stream) in streams.iter().enumerate() {
        let t = totals[r].download::<T>(stream, 1).map_err(e)?[0];
        // Every partial sum of the test data is exact: totals match bit for bit.
        let close = t.to_bits() == want_total.to_bits();
        if !close {
            return Err(format!("rank {r}'s total {t:?}, want {want_total:?}"));
        }
    }
    Ok(())
}

pub(crate) fn scans_across_every_gpu() {
    let multi = all_gpus();
    let ranks = multi.ranks();
    let mut rng = Rng(0xD157);
    eprintln!("across: seed {:#x}", rng.0);
    let mut failures = Vec::new();
    for per_rank in [1usize, 4097, (1 << 20) + 3, 1 << 24] {
        for with_empty in [false, true] {
            for backward in [false, true] {
                for inclusive in [true, false] {
                    let lengths = chunk_lengths(&mut rng, ranks, per_rank, with_empty);
                    let mut desc = ScanDesc {
                        inclusive,
                        ..ScanDesc::inclusive(Op::Sum)
                    };
                    if backward {
                        desc = desc.backward();
                    }
                    let runs: Vec<(&str, Result<(), String>)> = vec![
                        ("u32 sum", across_case::<u32>(&multi, &mut rng, &lengths, desc, Some(7))),
                        (
                            "i64 max",
                            across_case::<i64>(&multi, &mut rng, &lengths, ScanDesc { op: Op::Max, ..desc }, None),
                        ),
                        (
                            "f64 sum, deterministic",
                            across_case::<f64>(&multi, &mut rng, &lengths, desc.deterministic(), Some(0.5)),
                        ),
                    ];
                    for (what, r) in runs {
                        if let Err(msg) = r {
                            failures.push(format!(
                                "{what} {lengths:?} backward={backward} inclusive={inclusive}: {msg}"
                            ));
                        }
                    }
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The rank form, one thread per rank as an NCCL application calls it: built-in u64 sums
/// and a user-defined linear recurrence (f64, 16-byte states, an initial state, the total).
pub(crate) fn rank_form_from_a_thread_per_rank() {
    let multi = all_gpus();
    let ranks = multi.ranks();
    let mut rng = Rng(0x7A4C);
    let lengths = chunk_lengths(&mut rng, ranks, 300_001, false);
    let a: Vec<Vec<f64>> = lengths
        .iter()
        .map(|&n| (0..n).map(|i| if (i * 7 + n) % 5 == 0 { -1.0 } else { 1.0 }).collect())
        .collect();
    let b: Vec<Vec<f64>> = lengths
        .iter()
        .map(|&n| (0..n).map(|_| rng.below(17) as f64 - 8.0).collect())
        .collect();
    let h0 = 3.0;
    let results: Vec<(Vec<u64>, Vec<f64>, Vec<f64>)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..ranks)
            .map(|r| {
                let (ctx, comm) = (&multi.contexts()[r], &multi.communicators()[r]);
                let (a, b, n) = (&a[r], &b[r], lengths[r]);
                s.spawn(move || {
                    let stream = ctx.new_stream().unwrap();
                    let x: Vec<u64> = (0..n as u64).map(|i| i * 3 + r as u64).collect();
                    let input = Buffer::from_slice(ctx, &stream, &x).unwrap();
                    let mut sums = Buffer::new(ctx, DType::U64, n as u64).unwrap();
                    let desc = ScanDesc::exclusive(Op::Sum);
                    ctx.scan_across(
                        comm,
                        &stream,
                        &ArrayView::of_buffer(&input),
                        &ArrayView::of_buffer_mut(&mut sums),
                        &desc,
                        None,
                    )
                    .unwrap();
                    let op = ctx
                        .create_operator(recipes::linear_recurrence(DType::F64).unwrap())
                        .unwrap();
                    let (a_buf, b_buf) = (
                        Buffer::from_slice(ctx, &stream, a).unwrap(),
                        Buffer::from_slice(ctx, &stream, b).unwrap(),
                    );
                    let h = Buffer::new(ctx, DType::F64, n as u64).unwrap();
                    let total = Buffer::new(ctx, DType::F64, 2).unwrap();
                    let scan = OperatorScan {
                        init: Some(recipes::recurrence_init(DType::F64, h0).unwrap()),
                        ..Default::default()
                    };
                    // SAFETY: live buffers of n elements and one 16-byte state.
                    unsafe {
                        op.scan_across_raw(
                            comm,
                            &stream,
                            &[a_buf.addr(), b_buf.addr()],
                            &[h.addr()],
                            n as u64,
                            &scan,
                            total.addr(),
                        )
                        .unwrap();
                    }
                    (
                        sums.download::<u64>(&stream, n).unwrap(),
                        h.download::<f64>(&stream, n).unwrap(),
                        total.download::<f64>(&stream, 2).unwrap(),
                    )
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let (mut running, mut state) = (0u64, h0);
    for (r, (sums, h, _)) in results.iter().enumerate() {
        for i in 0..lengths[r] {
            assert_eq!(sums[i], running, "rank {r} sum {i}");
            running += i as u64 * 3 + r as u64;
            state = a[r][i] * state + b[r][i];
            assert_eq!(h[i], state, "rank {r} h[{i}]");
        }
    }
    let product: f64 = a.iter().flatten().product();
    for (r, (_, _, total)) in results.iter().enumerate() {
        assert_eq!(total, &vec![product, state], "rank {r}'s total state");
    }
}

/// Bad parts are refused before anything is queued, with nothing written.
pub(crate) fn bad_parts_are_refused_before_any_collective() {
    let multi = all_gpus();
    let ctx = &multi.contexts()[0];
    let stream = ctx.new_stream().unwrap();
    let input = Buffer::from_slice(ctx, &stream, &[1u32, 2, 3]).unwrap();
    let output = Buffer::from_slice(ctx, &stream, &[9u32; 3]).unwrap();
    let host = [9u32; 3]; // not device memory
    let view = |b: &Buffer, len: u64| unsafe { ArrayView::contiguous(b.addr(), DType::U32, &[len]).unwrap() };
    let streams: Vec<_> = multi.contexts().iter().map(|c| c.new_stream().unwrap()).collect();
    let empty: Vec<Buffer> = multi
        .contexts()
        .iter()
        .map(|c| Buffer::new(c, DType::U32, 1).unwrap())
        .collect();
    let parts = |first_output: ArrayView<'static>| -> Vec<GpuPart<'_>> {
        (0..multi.ranks())
            .map(|r| GpuPart {
                stream: &streams[r],
                input: if r == 0 { view(&input, 3) } else { view(&empty[r], 0) },
                output: if r == 0 { first_output } else { view(&empty[r], 0) },
                total: None,
            })
            .collect()
    };
    let sum = ScanDesc::inclusive(Op::Sum);
    let host_view = unsafe { ArrayView::contiguous(host.as_ptr() as u64, DType::U32, &[3]).unwrap() };
    let err = multi.scan(&parts(host_view), &sum).unwrap_err();
    assert_eq!(err.status, ScanrtStatus::NotDeviceMemory, "{err}");
    let err = multi
        .scan(&parts(view(&output, 3)), &sum.segmented(scanrt::Segments::ByteFlags))
        .unwrap_err();
    assert_eq!(err.status, ScanrtStatus::UnsupportedCombination, "{err}");
    let err = multi.scan(&parts(view(&output, 3))[..0], &sum).unwrap_err();
    assert_eq!(err.status, ScanrtStatus::InvalidArgument, "{err}");
    assert_eq!(output.download::<u32>(&stream, 3).unwrap(), vec![9; 3]);
}
