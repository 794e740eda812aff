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

/// Which ranks ask for the whole array's total: a rank that does not (with no initial
/// value) folds its carry in the chunk's kernel, one that does scans the totals first.
#[derive(Clone, Copy, Debug)]
enum TotalsOn {
    Every,
    No,
    First,
}

/// One built-in scan across the GPUs of `multi`, checked against the whole array's
/// sequential scan and total.
fn across_case<T: TestInput + TestOutput + scanrt::Widen<T>>(
    multi: &MultiGpu,
    rng: &mut Rng,
    lengths: &[usize],
    desc: ScanDesc,
    init: Option<T>,
    totals_on: TotalsOn,
) -> Result<(), String> {
    let asks_total = |r: usize| match totals_on {
        TotalsOn::Every => true,
        TotalsOn::No => false,
        TotalsOn::First => r == 0,
    };
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
            total: asks_total(r).then(|| unsafe { ArrayView::contiguous(totals[r].addr(), T::DTYPE, &[1]).unwrap() }),
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
    for (r, stream) in streams.iter().enumerate().filter(|(r, _)| asks_total(*r)) {
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
                    let max = ScanDesc { op: Op::Max, ..desc };
                    let (every, no, first) = (TotalsOn::Every, TotalsOn::No, TotalsOn::First);
                    let runs: Vec<(&str, Result<(), String>)> = vec![
                        (
                            "u32 sum",
                            across_case::<u32>(&multi, &mut rng, &lengths, desc, Some(7), every),
                        ),
                        (
                            "u32 sum, folded carries",
                            across_case::<u32>(&multi, &mut rng, &lengths, desc, None, no),
                        ),
                        (
                            "u32 sum, total on rank 0",
                            across_case::<u32>(&multi, &mut rng, &lengths, desc, None, first),
                        ),
                        (
                            "i64 max",
                            across_case::<i64>(&multi, &mut rng, &lengths, max, None, every),
                        ),
                        (
                            "i64 max, folded carries",
                            across_case::<i64>(&multi, &mut rng, &lengths, max, None, no),
                        ),
                        (
                            "f64 sum, deterministic",
                            across_case::<f64>(&multi, &mut rng, &lengths, desc.deterministic(), Some(0.5), every),
                        ),
                        (
                            "f64 sum, deterministic, folded carries",
                            across_case::<f64>(&multi, &mut rng, &lengths, desc.deterministic(), None, no),
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
/// and a user-defined linear recurrence (f64, 16-byte states), forward from an initial
/// state with the total, and backward from the identity with neither (its carries folded
/// in the chunk's kernel in reverse rank order: the operator does not commute).
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
    type RankResult = (Vec<u64>, Vec<f64>, Vec<f64>, Vec<f64>);
    let results: Vec<RankResult> = std::thread::scope(|s| {
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
                    let h_backward = Buffer::new(ctx, DType::F64, n as u64).unwrap();
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
                        let backward = OperatorScan {
                            direction: Direction::Backward,
                            ..Default::default()
                        };
                        op.scan_across_raw(
                            comm,
                            &stream,
                            &[a_buf.addr(), b_buf.addr()],
                            &[h_backward.addr()],
                            n as u64,
                            &backward,
                            0,
                        )
                        .unwrap();
                    }
                    (
                        sums.download::<u64>(&stream, n).unwrap(),
                        h.download::<f64>(&stream, n).unwrap(),
                        total.download::<f64>(&stream, 2).unwrap(),
                        h_backward.download::<f64>(&stream, n).unwrap(),
                    )
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let (mut running, mut state) = (0u64, h0);
    for (r, (sums, h, _, _)) in results.iter().enumerate() {
        for i in 0..lengths[r] {
            assert_eq!(sums[i], running, "rank {r} sum {i}");
            running += i as u64 * 3 + r as u64;
            state = a[r][i] * state + b[r][i];
            assert_eq!(h[i], state, "rank {r} h[{i}]");
        }
    }
    let product: f64 = a.iter().flatten().product();
    for (r, (_, _, total, _)) in results.iter().enumerate() {
        assert_eq!(total, &vec![product, state], "rank {r}'s total state");
    }
    let mut state = 0.0;
    for (r, (_, _, _, h)) in results.iter().enumerate().rev() {
        for i in (0..lengths[r]).rev() {
            state = a[r][i] * state + b[r][i];
            assert_eq!(h[i], state, "rank {r} backward h[{i}]");
        }
    }
}

/// The single-process form with a user-defined operator (`MultiGpu::scan_operator`): a
/// linear recurrence (f64, 16-byte states) forward from an initial state with every
/// rank's total, and backward from the identity with none; operators of different
/// definitions are refused.
pub(crate) fn single_process_form_with_a_user_operator() {
    let multi = all_gpus();
    let ranks = multi.ranks();
    let mut rng = Rng(0x5E1F);
    eprintln!("across, user operator: seed {:#x}", rng.0);
    let lengths = chunk_lengths(&mut rng, ranks, 200_003, true);
    let a: Vec<Vec<f64>> = lengths
        .iter()
        .map(|&n| (0..n).map(|_| if rng.below(3) == 0 { -1.0 } else { 1.0 }).collect())
        .collect();
    let b: Vec<Vec<f64>> = lengths
        .iter()
        .map(|&n| (0..n).map(|_| rng.below(9) as f64 - 4.0).collect())
        .collect();
    let streams: Vec<_> = multi.contexts().iter().map(|c| c.new_stream().unwrap()).collect();
    let ops: Vec<_> = multi
        .contexts()
        .iter()
        .map(|c| {
            c.create_operator(recipes::linear_recurrence(DType::F64).unwrap())
                .unwrap()
        })
        .collect();
    let upload = |r: usize, v: &[f64]| Buffer::from_slice(&multi.contexts()[r], &streams[r], v).unwrap();
    let inputs: Vec<[Buffer; 2]> = (0..ranks).map(|r| [upload(r, &a[r]), upload(r, &b[r])]).collect();
    let addrs: Vec<[u64; 2]> = inputs.iter().map(|[x, y]| [x.addr(), y.addr()]).collect();
    let new = |r: usize, n: usize| Buffer::new(&multi.contexts()[r], DType::F64, n as u64).unwrap();
    let h: Vec<Buffer> = (0..ranks).map(|r| new(r, lengths[r])).collect();
    let h_backward: Vec<Buffer> = (0..ranks).map(|r| new(r, lengths[r])).collect();
    let totals: Vec<Buffer> = (0..ranks).map(|r| new(r, 2)).collect();
    let outs: Vec<[u64; 1]> = h.iter().map(|b| [b.addr()]).collect();
    let outs_backward: Vec<[u64; 1]> = h_backward.iter().map(|b| [b.addr()]).collect();
    let parts = |into_backward: bool, with_totals: bool| -> Vec<scanrt::OperatorPart> {
        let outputs = if into_backward { &outs_backward } else { &outs };
        (0..ranks)
            .map(|r| scanrt::OperatorPart {
                op: &ops[r],
                stream: &streams[r],
                inputs: &addrs[r],
                outputs: &outputs[r],
                n: lengths[r] as u64,
                total: if with_totals { totals[r].addr() } else { 0 },
            })
            .collect()
    };
    let h0 = -2.0;
    let forward = OperatorScan {
        init: Some(recipes::recurrence_init(DType::F64, h0).unwrap()),
        ..Default::default()
    };
    let backward = OperatorScan {
        direction: Direction::Backward,
        ..Default::default()
    };
    // SAFETY: live buffers of each part's length, and a 16-byte total per rank.
    unsafe {
        multi.scan_operator(&parts(false, true), &forward).unwrap();
        multi.scan_operator(&parts(true, false), &backward).unwrap();
    }
    let download = |bufs: &[Buffer]| -> Vec<f64> {
        (0..ranks)
            .flat_map(|r| bufs[r].download::<f64>(&streams[r], lengths[r]).unwrap())
            .collect()
    };
    let (got, got_backward) = (download(&h), download(&h_backward));
    let (a, b) = (a.concat(), b.concat());
    let mut state = h0;
    for i in 0..a.len() {
        state = a[i] * state + b[i];
        assert_eq!(got[i], state, "h[{i}] of {lengths:?}");
    }
    let product: f64 = a.iter().product();
    for (r, t) in totals.iter().enumerate() {
        assert_eq!(
            t.download::<f64>(&streams[r], 2).unwrap(),
            vec![product, state],
            "rank {r}'s total"
        );
    }
    let mut state = 0.0;
    for i in (0..a.len()).rev() {
        state = a[i] * state + b[i];
        assert_eq!(got_backward[i], state, "backward h[{i}] of {lengths:?}");
    }
    if ranks > 1 {
        let other = multi.contexts()[1]
            .create_operator(recipes::linear_recurrence(DType::F32).unwrap())
            .unwrap();
        let mut mixed = parts(false, false);
        mixed[1].op = &other;
        // SAFETY: refused before anything is queued.
        let err = unsafe { multi.scan_operator(&mixed, &backward) }.unwrap_err();
        assert_eq!(err.status, ScanrtStatus::InvalidArgument, "{err}");
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
