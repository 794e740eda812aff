//! Scans across GPUs (`--across`): u32 sums of 2^30 and 2^16 elements per GPU over every
//! GPU of the machine (`MultiGpu`), beside the single-GPU scan of one chunk and a copy of
//! it in the same run. Host wall time from the call to every stream's completion (a scan
//! across GPUs spans several streams), medians. Prints CSV lines
//!   impl,dtype,n per GPU,microseconds
//! then the targets: aggregate throughput >= 0.6 x GPUs x the single-GPU scan's at 2^30,
//! and the whole call within 3x the single-GPU scan's time at 2^16. At 2^16 it also times
//! the exchange of one value per rank alone, both ways NCCL offers it (a ring all-gather,
//! and sends and receives between every pair of ranks), which bound the scan from below.

use std::time::Instant;

use cudarc::driver::sys;
use cudarc::nccl::sys as nccl;

use scanrt::{ArrayView, Backend, Buffer, Communicator, Context, DType, GpuPart, MultiGpu, Op, ScanDesc};

fn median_us(reps: usize, mut call: impl FnMut()) -> f64 {
    for _ in 0..3 {
        call();
    }
    let mut t: Vec<f64> = (0..reps)
        .map(|_| {
            let start = Instant::now();
            call();
            start.elapsed().as_secs_f64() * 1e6
        })
        .collect();
    t.sort_by(f64::total_cmp);
    t[t.len() / 2]
}

/// One thread per rank, as an NCCL application runs: each times its `call` to the end of
/// its stream's work; an iteration lasts as long as its slowest rank. The median.
fn rank_threads_us(ranks: usize, reps: usize, call: impl Fn(usize) + Sync) -> f64 {
    let barrier = std::sync::Barrier::new(ranks);
    let times: Vec<Vec<f64>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..ranks)
            .map(|r| {
                let (barrier, call) = (&barrier, &call);
                s.spawn(move || {
                    (0..reps + 3)
                        .map(|_| {
                            barrier.wait();
                            let start = Instant::now();
                            call(r);
                            start.elapsed().as_secs_f64() * 1e6
                        })
                        .collect::<Vec<f64>>()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut slowest: Vec<f64> = (3..reps + 3)
        .map(|i| times.iter().map(|t| t[i]).fold(0.0, f64::max))
        .collect();
    slowest.sort_by(f64::total_cmp);
    slowest[slowest.len() / 2]
}

/// The two ways to give every rank one 4-byte value of every other rank, in place in
/// `buffer` (ranks x 4 bytes), on `stream`.
#[derive(Clone, Copy)]
enum Exchange {
    Ring,
    Pairwise,
}

fn exchange(how: Exchange, comm: &Communicator, buffer: u64, stream: sys::CUstream) {
    let (rank, ranks, raw) = (comm.rank(), comm.ranks(), comm.raw() as nccl::ncclComm_t);
    let u8 = nccl::ncclDataType_t::ncclUint8;
    let stream = stream as nccl::cudaStream_t;
    let at = |r: usize| buffer + 4 * r as u64;
    // SAFETY: `buffer` holds `ranks` values on the communicator's device.
    let ok = unsafe {
        match how {
            Exchange::Ring => nccl::ncclAllGather(at(rank) as _, buffer as _, 4, u8, raw, stream),
            Exchange::Pairwise => {
                nccl::ncclGroupStart();
                for peer in (0..ranks).filter(|&p| p != rank) {
                    nccl::ncclSend(at(rank) as _, 4, u8, peer as i32, raw, stream);
                    nccl::ncclRecv(at(peer) as _, 4, u8, peer as i32, raw, stream);
                }
                nccl::ncclGroupEnd()
            }
        }
    };
    assert_eq!(ok, nccl::ncclResult_t::ncclSuccess);
}

pub(crate) fn run(ctx: &Context) {
    let count = cudarc::driver::CudaContext::device_count().unwrap() as usize;
    let contexts: Vec<Context> = (0..count)
        .map(|d| {
            if d == 0 {
                ctx.clone()
            } else {
                Context::new(Backend::Gpu, d).unwrap()
            }
        })
        .collect();
    let multi = MultiGpu::new(&contexts).expect("NCCL");
    let one = MultiGpu::new(&contexts[..1]).expect("NCCL");
    let desc = ScanDesc::inclusive(Op::Sum);
    let streams: Vec<_> = contexts.iter().map(|c| c.new_stream().unwrap()).collect();
    let mut verdicts = Vec::new();
    for (k, reps) in [(30u32, 10usize), (16, 200)] {
        let n = 1u64 << k;
        let inputs: Vec<Buffer> = contexts
            .iter()
            .map(|c| Buffer::new(c, DType::U32, n).unwrap())
            .collect();
        let outputs: Vec<Buffer> = contexts
            .iter()
            .map(|c| Buffer::new(c, DType::U32, n).unwrap())
            .collect();
        let parts = |ranks: usize| -> Vec<GpuPart> {
            (0..ranks)
                .map(|r| GpuPart {
                    stream: &streams[r],
                    input: ArrayView::of_buffer(&inputs[r]),
                    // SAFETY: the buffers outlive the parts.
                    output: unsafe { ArrayView::contiguous(outputs[r].addr(), DType::U32, &[n]).unwrap() },
                    total: None,
                })
                .collect()
        };
        let sync = |ranks: usize| (0..ranks).for_each(|r| streams[r].synchronize().unwrap());
        let single = median_us(reps, || {
            ctx.scan(&streams[0], &inputs[0], &outputs[0], &desc).unwrap();
            sync(1);
        });
        let copy = median_us(reps, || {
            // SAFETY: both buffers hold n elements of the current context.
            unsafe {
                sys::cuMemcpyDtoDAsync_v2(
                    outputs[0].addr(),
                    inputs[0].addr(),
                    4 * n as usize,
                    streams[0].raw() as _,
                );
            }
            sync(1);
        });
        let (all, p1) = (parts(count), parts(1));
        let across_one = median_us(reps, || {
            one.scan(&p1, &desc).unwrap();
            sync(1);
        });
        let across = median_us(reps, || {
            multi.scan(&all, &desc).unwrap();
            sync(count);
        });
        // The host's share: the call alone (the streams drained between calls).
        let mut host = Vec::with_capacity(reps);
        for _ in 0..reps {
            let start = Instant::now();
            multi.scan(&all, &desc).unwrap();
            host.push(start.elapsed().as_secs_f64() * 1e6);
            sync(count);
        }
        host.sort_by(f64::total_cmp);
        let host = host[reps / 2];
        // The rank form as an NCCL application runs it: one thread per rank.
        let comms = multi.communicators();
        let rank_form = rank_threads_us(count, reps, |r| {
            let input = ArrayView::of_buffer(&inputs[r]);
            // SAFETY: the buffer outlives the view.
            let output = unsafe { ArrayView::contiguous(outputs[r].addr(), DType::U32, &[n]).unwrap() };
            contexts[r]
                .scan_across(&comms[r], &streams[r], &input, &output, &desc, None)
                .unwrap();
            streams[r].synchronize().unwrap();
        });
        // The exchanges alone, into the first `count` values of each rank's output.
        let exchange_us = |how: Exchange| {
            rank_threads_us(count, reps, |r| {
                exchange(how, &comms[r], outputs[r].addr(), streams[r].raw() as _);
                streams[r].synchronize().unwrap();
            })
        };
        let (ring, pairwise) = (exchange_us(Exchange::Ring), exchange_us(Exchange::Pairwise));
        println!("single_gpu_scan,u32,{n},{single:.1}");
        println!("single_gpu_copy,u32,{n},{copy:.1}");
        println!("across_1_gpu,u32,{n},{across_one:.1}");
        println!("across_{count}_gpus,u32,{n},{across:.1}");
        println!("across_{count}_gpus_host_call,u32,{n},{host:.1}");
        println!("across_{count}_gpus_rank_threads,u32,{n},{rank_form:.1}");
        println!("exchange_ring_all_gather_{count}_gpus,u32,{count},{ring:.1}");
        println!("exchange_pairwise_{count}_gpus,u32,{count},{pairwise:.1}");
        if k == 30 {
            let ratio = (count as f64 * n as f64 / across) / (n as f64 / single) / count as f64;
            verdicts.push(format!(
                "2^30 per GPU: aggregate {:.1} GB/s over {count} GPUs = {ratio:.2} x {count} x the single-GPU scan's \
                 ({:.1} GB/s; copy {:.1} GB/s): target >= 0.6, {}",
                8.0 * count as f64 * n as f64 / across / 1e3,
                8.0 * n as f64 / single / 1e3,
                8.0 * n as f64 / copy / 1e3,
                if ratio >= 0.6 { "met" } else { "NOT MET" }
            ));
        } else {
            let ratio = rank_form / single;
            verdicts.push(format!(
                "2^16 per GPU: {rank_form:.1} us across {count} GPUs (rank form, a thread per rank) = {ratio:.2} x \
                 the single-GPU scan's {single:.1} us: target <= 3, {}; from one thread (MultiGpu) {across:.1} us = \
                 {:.2} x, {host:.1} us of it the host's; one GPU through the same path: {across_one:.1} us; \
                 the exchange alone (rank threads): ring all-gather {ring:.1} us, pairwise sends {pairwise:.1} us",
                if ratio <= 3.0 { "met" } else { "NOT MET" },
                across / single
            ));
        }
    }
    for v in verdicts {
        eprintln!("{v}");
    }
}
