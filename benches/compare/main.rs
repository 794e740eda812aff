//! scanrt's side of the comparison benchmark (bench/run_gpu_bench.sh runs it beside the
//! CUB harness and merges both into one table and plot). Prints CSV lines
//!   impl,dtype,n,microseconds
//! timed like the CUB harness: the median of CUDA-event pairs around single calls.
//!
//!     bench_compare [--quick]
//!     bench_compare --latency      (where the time of small scans goes: latency.rs)
//!     bench_compare --first-call   (a new process's first scan: first_call.rs)
//!     bench_compare --operators    (user-defined operators and recipes: operators.rs)
//!     bench_compare --variant      (tuning experiments: variant.rs)
//!     bench_compare --select       (selections beside CUB: select.rs, bench/run_primitives_bench.sh)
//!     bench_compare --sort         (radix sorts beside CUB: sort.rs, bench/run_primitives_bench.sh)
//!     bench_compare --across       (scans across every GPU of the machine: across.rs)
//!     bench_compare --out-of-core  (a host array scanned through the GPU: out_of_core.rs)
//!     bench_compare --shapes       (columns and pitched rows beside memcpy: shapes.rs)
//!
//! Built as the cargo bench `compare` (`cargo bench --bench compare -- --quick`);
//! scripts/stage.sh stages it as stage/bin/bench_compare.
//!
//! At n = 2^16 it measures back-to-back calls, calls in a replayed graph and host time
//! per call; for the last two also an empty kernel's launch (the driver's floor: every
//! scanrt call is one launch).
//!
//! After the inclusive-sum sweep it measures the other scans at n = 2^20, 2^24, 2^28:
//! backward (both algorithms), deterministic float sums, and segmented u32 sums (byte
//! flags forward and backward, bit flags, u32 keys, and the matrix algorithm), with
//! segments of 1024 elements like the CUB InclusiveSumByKey runs of bench/cub_bench.cu.

mod across;
mod features;
mod first_call;
mod latency;
mod operators;
mod out_of_core;
mod select;
mod shapes;
mod sort;
mod variant;

use cudarc::driver::sys;
use scanrt::{Algorithm, Backend, Buffer, Context, DType, Op, RawScan, ScanDesc, Stream};

use latency::{host_time_us, HelperKernels};

fn sizes(quick: bool) -> Vec<u64> {
    let mut v: Vec<u64> = (10..=30).map(|k| 1u64 << k).collect();
    for k in [16u32, 20, 24, 28] {
        v.extend([(1u64 << k) - 1, (1u64 << k) + 1, 3 * (1u64 << (k - 1)) + 1]);
    }
    if quick {
        v.retain(|&n| n == 1 << 20 || n == 1 << 24 || n == 1 << 28);
    }
    v.sort();
    v
}

pub(crate) struct Timer {
    start: sys::CUevent,
    stop: sys::CUevent,
}

impl Timer {
    fn new() -> Timer {
        let mut t = Timer {
            start: std::ptr::null_mut(),
            stop: std::ptr::null_mut(),
        };
        unsafe {
            sys::cuEventCreate(&mut t.start, 0);
            sys::cuEventCreate(&mut t.stop, 0);
        }
        t
    }
    /// Median microseconds of `reps` calls, each between its own event pair.
    fn median_us(&self, stream: &Stream, reps: usize, mut call: impl FnMut()) -> f64 {
        for _ in 0..3 {
            call();
        }
        let mut t: Vec<f64> = (0..reps).map(|_| self.span_us(stream, &mut call)).collect();
        t.sort_by(f64::total_cmp);
        t[t.len() / 2]
    }

    /// Microseconds of device time between events recorded before and after `call`.
    fn span_us(&self, stream: &Stream, call: impl FnOnce()) -> f64 {
        let raw = stream.raw() as sys::CUstream;
        // SAFETY: both events and the stream belong to the current context.
        unsafe {
            sys::cuEventRecord(self.start, raw);
            call();
            sys::cuEventRecord(self.stop, raw);
            sys::cuEventSynchronize(self.stop);
            let mut ms = 0f32;
            sys::cuEventElapsedTime_v2(&mut ms, self.start, self.stop);
            ms as f64 * 1000.0
        }
    }
}

fn main() {
    if std::env::args().any(|a| a == "--first-call-child") {
        return first_call::child();
    }
    if std::env::args().any(|a| a == "--first-call") {
        return first_call::run();
    }
    if let Ok(source) = std::env::var("SCANRT_BENCH_OPERATOR_SOURCE") {
        return first_call::create_operator_child(&source);
    }
    let quick = std::env::args().any(|a| a == "--quick");
    let variant = std::env::args().any(|a| a == "--variant");
    let ctx = match Context::new(Backend::Gpu, 0) {
        Ok(ctx) => ctx,
        Err(e) => {
            // `cargo bench` runs every bench, GPU or not.
            eprintln!("bench_compare: skipped, it needs a GPU ({e})");
            return;
        }
    };
    eprintln!("device: {}", ctx.describe());
    let cuda = ctx.cuda_context().unwrap().clone();
    let cu_stream = cuda.new_stream().unwrap();
    let stream = unsafe { ctx.borrow_stream(cu_stream.cu_stream() as *mut _) }.unwrap();
    let timer = Timer::new();
    eprintln!(
        "u32 sum kernels: {}",
        ctx.kernel_report(DType::U32, DType::U32, Op::Sum).unwrap()
    );
    if std::env::args().any(|a| a == "--latency") {
        latency::run(&ctx, &cuda, &stream, &timer);
        return;
    }
    if std::env::args().any(|a| a == "--operators") {
        operators::run(&ctx, &stream, &timer);
        return;
    }
    if variant {
        return variant::run(&ctx, &stream, &timer);
    }
    if std::env::args().any(|a| a == "--select") {
        return select::run(&ctx, &stream, &timer);
    }
    if std::env::args().any(|a| a == "--sort") {
        return sort::run(&ctx, &stream, &timer);
    }
    if std::env::args().any(|a| a == "--across") {
        return across::run(&ctx);
    }
    if std::env::args().any(|a| a == "--out-of-core") {
        return out_of_core::run(&ctx);
    }
    if std::env::args().any(|a| a == "--shapes") {
        return shapes::run(&ctx, &stream, &timer);
    }
    let sizes = sizes(quick);
    let max_n = *sizes.iter().max().unwrap();
    let only_types = std::env::var("SCANRT_BENCH_TYPES").ok();
    for (name, dtype) in [
        ("u32", DType::U32),
        ("f32", DType::F32),
        ("u64", DType::U64),
        ("f64", DType::F64),
        ("f16", DType::F16),
        ("bf16", DType::BF16),
    ] {
        // The quick sweep: the 4-byte types and the half types (f32 accumulators).
        if quick && matches!(dtype, DType::U64 | DType::F64) {
            continue;
        }
        // SCANRT_BENCH_TYPES=f16,bf16: those types alone (tuning experiments).
        if only_types.as_ref().is_some_and(|t| !t.split(',').any(|t| t == name)) {
            continue;
        }
        let src = Buffer::new(&ctx, dtype, max_n).unwrap();
        let dst = Buffer::new(&ctx, dtype, max_n).unwrap();
        fill(&src, dtype, max_n);
        for &n in &sizes {
            let reps = if n <= 1 << 22 {
                200
            } else if n <= 1 << 27 {
                30
            } else {
                10
            };
            let req = RawScan {
                input: src.addr(),
                input_dtype: dtype,
                output: dst.addr(),
                output_dtype: dtype,
                n,
                segments: 0,
            };
            for (label, algorithm) in [
                ("scanrt_single_pass", Algorithm::SinglePass),
                ("scanrt_matrix", Algorithm::Matrix),
                ("scanrt_auto", Algorithm::Auto),
            ] {
                if algorithm == Algorithm::Auto && n != 1 << 28 {
                    continue;
                }
                let desc = ScanDesc::inclusive(Op::Sum).with_algorithm(algorithm);
                let mut ran = Algorithm::Auto;
                let us = timer.median_us(&stream, reps, || {
                    ran = unsafe { ctx.scan_raw(&stream, &req, &desc, None) }.unwrap().algorithm;
                });
                println!("{label},{name},{n},{us:.3}");
                if algorithm == Algorithm::Auto {
                    eprintln!("auto at n = {n} {name}: ran {ran:?} (the single-pass look-back is the fastest path at every size)");
                }
            }
            let bytes = (n * dtype.size() as u64) as usize;
            let us = timer.median_us(&stream, reps, || unsafe {
                sys::cuMemcpyDtoDAsync_v2(dst.addr(), src.addr(), bytes, stream.raw() as sys::CUstream);
            });
            println!("scanrt_memcpy,{name},{n},{us:.3}");
        }
    }

    if only_types.is_some() {
        return;
    }
    features::run(&ctx, &stream, &timer);

    // Small inputs: n = 2^16 u32, back to back, in a replayed graph, and host time.
    let n = 1u64 << 16;
    let src = Buffer::new(&ctx, DType::U32, n).unwrap();
    let dst = Buffer::new(&ctx, DType::U32, n).unwrap();
    let req = RawScan {
        input: src.addr(),
        input_dtype: DType::U32,
        output: dst.addr(),
        output_dtype: DType::U32,
        n,
        segments: 0,
    };
    let desc = ScanDesc::inclusive(Op::Sum);
    let scan = || unsafe { ctx.scan_raw(&stream, &req, &desc, None) }.unwrap();
    scan();
    stream.synchronize().unwrap();
    let calls = 1000;
    let us = timer.span_us(&stream, || {
        for _ in 0..calls {
            scan();
        }
    });
    println!("scanrt_back_to_back,u32,{n},{:.3}", us / calls as f64);

    // Beside scanrt, the driver's own floor for one launch: an empty kernel.
    let helpers = HelperKernels::new(&cuda);
    let launch_empty = || helpers.launch_empty(&stream);
    let graph_us = |call: &dyn Fn()| {
        cu_stream
            .begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
            .unwrap();
        for _ in 0..100 {
            call();
        }
        let graph = cu_stream
            .end_capture(sys::CUgraphInstantiate_flags_enum::CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH)
            .unwrap()
            .unwrap();
        graph.launch().unwrap();
        stream.synchronize().unwrap();
        let us = timer.span_us(&stream, || {
            for _ in 0..10 {
                graph.launch().unwrap();
            }
        });
        us / 1000.0
    };
    println!(
        "scanrt_graph,u32,{n},{:.3}",
        graph_us(&|| {
            scan();
        })
    );
    println!("empty_kernel_graph,u32,{n},{:.3}", graph_us(&launch_empty));
    // Host time inside scanrt per call, and the same for the empty launch.
    println!(
        "scanrt_host_time,u32,{n},{:.3}",
        host_time_us(&stream, || {
            scan();
        })
    );
    println!(
        "empty_launch_host_time,u32,{n},{:.3}",
        host_time_us(&stream, launch_empty)
    );
}

/// Fills a device buffer with small integers of `dtype` (float sums stay exact enough).
pub(crate) fn fill(src: &Buffer, dtype: DType, n: u64) {
    let chunk: Vec<u8> = (0..(1u64 << 24))
        .flat_map(|i| {
            let v = (i * 2654435761) as u32 >> 28;
            match dtype {
                DType::U32 => v.to_le_bytes().to_vec(),
                DType::F32 => (v as f32).to_le_bytes().to_vec(),
                DType::U64 => (v as u64).to_le_bytes().to_vec(),
                DType::F16 => scanrt::half::f16::from_f32(v as f32).to_le_bytes().to_vec(),
                DType::BF16 => scanrt::half::bf16::from_f32(v as f32).to_le_bytes().to_vec(),
                _ => (v as f64).to_le_bytes().to_vec(),
            }
        })
        .collect();
    let total = n * dtype.size() as u64;
    let mut off = 0u64;
    while off < total {
        let bytes = (chunk.len() as u64).min(total - off);
        unsafe { sys::cuMemcpyHtoD_v2(src.addr() + off, chunk.as_ptr() as *const _, bytes as usize) };
        off += bytes;
    }
}
