//! Criterion benchmark of scanrt on the GPU: single-pass and matrix inclusive sums of
//! u32 at 2^20, 2^24 and 2^28, and a device-to-device copy of the same bytes, all timed
//! with CUDA events (criterion's iter_custom). Skips where there is no GPU.
//! The full comparison with CUB is bench/run_gpu_bench.sh.

use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use cudarc::driver::sys;
use scanrt::{Algorithm, Backend, Buffer, Context, DType, Op, RawScan, ScanDesc};

fn gpu_scans(c: &mut Criterion) {
    let Ok(ctx) = Context::new(Backend::Gpu, 0) else {
        eprintln!("skipped: no CUDA device");
        return;
    };
    let stream = ctx.new_stream().unwrap();
    let raw = stream.raw() as sys::CUstream;
    // The timing events below are made with the raw driver API, which needs a current context.
    ctx.cuda_context().unwrap().bind_to_thread().unwrap();
    let (mut start, mut stop) = (std::ptr::null_mut(), std::ptr::null_mut());
    unsafe {
        sys::cuEventCreate(&mut start, 0);
        sys::cuEventCreate(&mut stop, 0);
    }
    let mut group = c.benchmark_group("inclusive_sum_u32");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(2))
        .warm_up_time(Duration::from_millis(300));
    for k in [20u32, 24, 28] {
        let n = 1u64 << k;
        let src = Buffer::from_slice(&ctx, &stream, &vec![1u32; n as usize]).unwrap();
        let dst = Buffer::new(&ctx, DType::U32, n).unwrap();
        let req = RawScan {
            input: src.addr(),
            input_dtype: DType::U32,
            output: dst.addr(),
            output_dtype: DType::U32,
            n,
            segments: 0,
        };
        group.throughput(Throughput::Bytes(2 * n * 4));
        let mut timed = |name: &str, f: &dyn Fn()| {
            group.bench_function(format!("{name}/2^{k}"), |b| {
                b.iter_custom(|iters| unsafe {
                    sys::cuEventRecord(start, raw);
                    for _ in 0..iters {
                        f();
                    }
                    sys::cuEventRecord(stop, raw);
                    sys::cuEventSynchronize(stop);
                    let mut ms = 0f32;
                    sys::cuEventElapsedTime_v2(&mut ms, start, stop);
                    Duration::from_secs_f64(ms as f64 / 1e3)
                })
            });
        };
        for (name, algorithm) in [("single_pass", Algorithm::SinglePass), ("matrix", Algorithm::Matrix)] {
            let desc = ScanDesc::inclusive(Op::Sum).with_algorithm(algorithm);
            timed(name, &|| {
                unsafe { ctx.scan_raw(&stream, &req, &desc, None) }.unwrap();
            });
        }
        timed("memcpy", &|| unsafe {
            sys::cuMemcpyDtoDAsync_v2(dst.addr(), src.addr(), (n * 4) as usize, raw);
        });
    }
    group.finish();
}

criterion_group!(benches, gpu_scans);
criterion_main!(benches);
