//! Where the time of small scans goes: host time per call against an empty launch, and
//! device time queued behind a spin kernel.

use std::sync::Arc;
use std::time::Instant;

use cudarc::driver::{sys, CudaContext, CudaFunction};
use scanrt::{Algorithm, Buffer, Context, DType, Op, RawScan, ScanDesc, Segments, Stream};

use crate::{fill, Timer};

/// A call to time, by the name its line prints.
type NamedCall<'a> = (&'static str, Box<dyn FnMut() + 'a>);

/// `--latency`: where the time of small scans goes. An event pair around one call (the
/// sweep's and the anchors' method) times the host's launch too: the start event fires
/// at once on an idle stream, the kernel only once the host has submitted it. Queued
/// behind a 50 µs spin kernel instead, the same call is already submitted when the start
/// event fires, so the pair times the device's work alone. Prints, per size, both times
/// for scanrt, memcpy and an empty kernel, and their host time per call.
pub fn run(ctx: &Context, cuda: &Arc<CudaContext>, stream: &Stream, timer: &Timer) {
    let helpers = HelperKernels::new(cuda);
    let raw = stream.raw() as sys::CUstream;
    let reps = 200;
    let device_us = |call: &mut dyn FnMut()| {
        let mut t: Vec<f64> = (0..reps)
            .map(|_| {
                helpers.launch_spin(stream, 50_000);
                timer.span_us(stream, &mut *call)
            })
            .collect();
        t.sort_by(f64::total_cmp);
        t[t.len() / 2]
    };
    println!("what,dtype,n,event_pair_us,device_only_us,host_us");
    for (name, dtype) in [("u32", DType::U32), ("u64", DType::U64)] {
        let n_max = 1u64 << 22;
        let input = Buffer::new(ctx, dtype, n_max).unwrap();
        let output = Buffer::new(ctx, dtype, n_max).unwrap();
        fill(&input, dtype, n_max);
        for k in [16u32, 18, 20, 21, 22] {
            let n = 1u64 << k;
            let req = RawScan::new(input.addr(), dtype, output.addr(), dtype, n);
            let desc = ScanDesc::inclusive(Op::Sum);
            let bytes = (n * dtype.size() as u64) as usize;
            let mut calls: [NamedCall; 3] = [
                (
                    "scanrt",
                    Box::new(|| {
                        unsafe { ctx.scan_raw(stream, &req, &desc, None) }.unwrap();
                    }),
                ),
                (
                    "memcpy",
                    Box::new(|| unsafe {
                        sys::cuMemcpyDtoDAsync_v2(output.addr(), input.addr(), bytes, raw);
                    }),
                ),
                ("empty_kernel", Box::new(|| helpers.launch_empty(stream))),
            ];
            for (what, call) in calls.iter_mut() {
                let pair = timer.median_us(stream, reps, &mut **call);
                let device = device_us(&mut **call);
                let host = host_time_us(stream, &mut **call);
                println!("{what},{name},{n},{pair:.2},{device:.2},{host:.2}");
            }
        }
    }
    // The host's share of a call at n = 2^16, step by step: the plan alone (types,
    // kernel set, tile counts), a planned scan's execution (checks, launch), the whole
    // call, and the empty launch they all contain.
    {
        let n = 1u64 << 16;
        let input = Buffer::new(ctx, DType::U32, n).unwrap();
        let output = Buffer::new(ctx, DType::U32, n).unwrap();
        let desc = ScanDesc::inclusive(Op::Sum);
        let req = RawScan::new(input.addr(), DType::U32, output.addr(), DType::U32, n);
        let plan = ctx.plan(DType::U32, DType::U32, n, &desc).unwrap();
        let io = scanrt::ScanIo::new(input.addr(), output.addr());
        let steps: [NamedCall; 4] = [
            (
                "plan",
                Box::new(|| drop(ctx.plan(DType::U32, DType::U32, n, &desc).unwrap())),
            ),
            (
                "execute_planned",
                Box::new(|| {
                    unsafe { plan.execute(stream, &io, None) }.unwrap();
                }),
            ),
            (
                "scan_raw",
                Box::new(|| {
                    unsafe { ctx.scan_raw(stream, &req, &desc, None) }.unwrap();
                }),
            ),
            ("empty_kernel", Box::new(|| helpers.launch_empty(stream))),
        ];
        for (what, mut call) in steps {
            println!("host_step,{what},u32,{n},{:.3}", host_time_us(stream, &mut call));
        }
    }
    // The other scans of the feature table at small sizes, device time alone.
    let n_max = 1u64 << 20;
    let input = Buffer::new(ctx, DType::U32, n_max).unwrap();
    let output = Buffer::new(ctx, DType::U32, n_max).unwrap();
    fill(&input, DType::U32, n_max);
    let flags: Vec<u8> = (0..n_max).map(|i| (i % 1024 == 0) as u8).collect();
    let bits: Vec<u32> = (0..n_max.div_ceil(32)).map(|w| (w % 32 == 0) as u32).collect();
    let keys: Vec<u32> = (0..n_max).map(|i| (i / 1024) as u32).collect();
    let flags = Buffer::from_slice(ctx, stream, &flags).unwrap();
    let bits = Buffer::from_slice(ctx, stream, &bits).unwrap();
    let keys = Buffer::from_slice(ctx, stream, &keys).unwrap();
    let sum = ScanDesc::inclusive(Op::Sum);
    for k in [16u32, 20] {
        let n = 1u64 << k;
        for (what, segments, desc) in [
            ("scanrt_matrix", 0, sum.with_algorithm(Algorithm::Matrix)),
            ("scanrt_backward", 0, sum.backward()),
            ("scanrt_exclusive", 0, ScanDesc::exclusive(Op::Sum)),
            ("scanrt_seg_bytes", flags.addr(), sum.segmented(Segments::ByteFlags)),
            (
                "scanrt_seg_bytes_backward",
                flags.addr(),
                sum.segmented(Segments::ByteFlags).backward(),
            ),
            ("scanrt_seg_bits", bits.addr(), sum.segmented(Segments::BitFlags)),
            ("scanrt_by_key", keys.addr(), sum.segmented(Segments::Keys(DType::U32))),
        ] {
            let req = RawScan {
                segments,
                ..RawScan::new(input.addr(), DType::U32, output.addr(), DType::U32, n)
            };
            let mut call = || {
                unsafe { ctx.scan_raw(stream, &req, &desc, None) }.unwrap();
            };
            let pair = timer.median_us(stream, reps, &mut call);
            let device = device_us(&mut call);
            let host = host_time_us(stream, &mut call);
            println!("{what},u32,{n},{pair:.2},{device:.2},{host:.2}");
        }
    }
}

/// One-warp kernels beside the scans: an empty one (the driver's floor for a launch) and
/// one that spins for a given time (to queue calls behind).
pub(crate) struct HelperKernels {
    empty: CudaFunction,
    spin: CudaFunction,
}

impl HelperKernels {
    pub fn new(cuda: &Arc<CudaContext>) -> HelperKernels {
        let src = r#"
extern "C" __global__ void empty(unsigned long long) {}
extern "C" __global__ void spin(unsigned long long ns) {
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now)); } while (now - start < ns);
}"#;
        let module = cuda.load_module(cudarc::nvrtc::compile_ptx(src).unwrap()).unwrap();
        HelperKernels {
            empty: module.load_function("empty").unwrap(),
            spin: module.load_function("spin").unwrap(),
        }
    }

    pub fn launch_empty(&self, stream: &Stream) {
        Self::launch(&self.empty, stream, 0);
    }

    pub fn launch_spin(&self, stream: &Stream, ns: u64) {
        Self::launch(&self.spin, stream, ns);
    }

    fn launch(f: &CudaFunction, stream: &Stream, mut arg: u64) {
        let mut params = [&mut arg as *mut u64 as *mut std::ffi::c_void];
        // SAFETY: both kernels take one 8-byte argument; the stream belongs to the
        // context the module was loaded into.
        unsafe {
            sys::cuLaunchKernel(
                f.cu_function(),
                1,
                1,
                1,
                32,
                1,
                1,
                0,
                stream.raw() as sys::CUstream,
                params.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        };
    }
}

/// Median host microseconds of `call` (the GPU drains between batches of 100 so the
/// launch queue never blocks the caller).
pub(crate) fn host_time_us(stream: &Stream, mut call: impl FnMut()) -> f64 {
    let mut host = Vec::with_capacity(1000);
    for _ in 0..10 {
        for _ in 0..100 {
            let t = Instant::now();
            call();
            host.push(t.elapsed().as_secs_f64() * 1e6);
        }
        stream.synchronize().unwrap();
    }
    host.sort_by(f64::total_cmp);
    host[host.len() / 2]
}
