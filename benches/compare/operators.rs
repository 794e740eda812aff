//! User-defined operators and recipes beside memcpy and the built-in sum.

use cudarc::driver::sys;
use scanrt::{Buffer, Context, DType, Op, RawScan, ScanDesc, Segments, Stream};

use crate::Timer;

/// User-defined operators and recipes beside memcpy and the built-in sum, in one run
/// (with the targets the operators were built to). Throughput counts the bytes a scan moves (its reads and writes):
/// the memcpy control copies half as many bytes, so the ratio is memcpy time / scan time.
pub fn run(ctx: &Context, stream: &Stream, timer: &Timer) {
    use scanrt::{recipes, OperatorDesc, OperatorScan};
    let max_n = 1usize << 28;
    let x = Buffer::from_slice(ctx, stream, &vec![1u32; max_n]).unwrap();
    let y = Buffer::new(ctx, DType::U32, max_n as u64).unwrap();
    let z = Buffer::new(ctx, DType::U32, max_n as u64).unwrap();
    let scratch = Buffer::new(ctx, DType::U8, 12 * max_n as u64 / 2).unwrap();
    let scratch2 = Buffer::new(ctx, DType::U8, 12 * max_n as u64 / 2).unwrap();
    let memcpy_us = |bytes_moved: u64| {
        timer.median_us(stream, 20, || unsafe {
            sys::cuMemcpyDtoDAsync_v2(
                scratch2.addr(),
                scratch.addr(),
                (bytes_moved / 2) as usize,
                stream.raw() as sys::CUstream,
            );
        })
    };
    let report = |label: &str, n: u64, bytes_per_elem: u64, us: f64, target: f64| {
        let copy = memcpy_us(n * bytes_per_elem);
        let ratio = copy / us;
        println!(
            "{label:44} {us:9.1} us  {:7.1} GB/s  memcpy {copy:9.1} us  ratio {ratio:.3}  target {target:.2} {}",
            (n * bytes_per_elem) as f64 / us / 1e3,
            if ratio >= target { "met" } else { "NOT MET" }
        );
    };

    // JIT: a source no cache has seen (cold), then the same operator again (disk cache).
    // A source no cache has seen: a u32 sum with a term of its own that only the optimizer
    // removes (NVRTC 13 keeps a cache of its own, which a new comment or a constant the
    // front end folds does not miss).
    let unique = |salt: u32| {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos();
        format!("__device__ uint32_t add(uint32_t a, uint32_t b) {{ return a + b + ((a ^ {salt}{nanos}u) & 0u); }}\n")
    };
    // Each in a new process with its own context: cold (NVRTC compiles), then from the disk
    // cache (nothing in memory). A first compile of another source warms the machine's
    // file cache with the NVRTC library, as in any process that compiled before.
    // SCANRT_BENCH_VERBOSE=1 prints the children's timelines.
    let create_in_child = |source: &str| {
        let child = std::process::Command::new(std::env::current_exe().unwrap())
            .env("SCANRT_BENCH_OPERATOR_SOURCE", source)
            .output()
            .unwrap();
        eprint!("{}", String::from_utf8_lossy(&child.stderr));
        String::from_utf8_lossy(&child.stdout).trim().to_string()
    };
    let warm_up = create_in_child(&unique(1));
    let unique = unique(2);
    let cold = create_in_child(&unique);
    let cached = create_in_child(&unique);
    println!(
        "JIT of a new operator in a new process: cold {cold} ms (target 1000; the first compile on this machine: {warm_up} ms), from the disk cache {cached} ms (target 10)"
    );
    let sum_desc = OperatorDesc::new("user_sum", &unique, "uint32_t", 4, 4, "add", &[0; 4]);
    let user_sum = ctx.create_operator(sum_desc).unwrap();

    let plain = OperatorScan::inclusive();
    for k in [24u32, 28] {
        let n = 1u64 << k;
        let builtin = timer.median_us(stream, 20, || {
            let req = RawScan::new(x.addr(), DType::U32, y.addr(), DType::U32, n);
            unsafe { ctx.scan_raw(stream, &req, &ScanDesc::inclusive(Op::Sum), None) }.unwrap();
        });
        let user = timer.median_us(stream, 20, || {
            unsafe { user_sum.scan_raw(stream, &[x.addr()], &[y.addr()], n, 0, &plain, None) }.unwrap();
        });
        println!(
            "user u32 sum 2^{k}: {user:.1} us, built-in {builtin:.1} us: user/built-in time {:.3} (target <= 1.03) {}",
            user / builtin,
            if user / builtin <= 1.03 { "met" } else { "NOT MET" }
        );
        report(&format!("user u32 sum 2^{k}"), n, 8, user, 0.90);
    }

    let f = |v: f32| vec![v; max_n];
    let a = Buffer::from_slice(ctx, stream, &f(0.999)).unwrap();
    let b = Buffer::from_slice(ctx, stream, &f(0.5)).unwrap();
    let h = Buffer::new(ctx, DType::F32, max_n as u64).unwrap();
    let recurrence = ctx
        .create_operator(recipes::linear_recurrence(DType::F32).unwrap())
        .unwrap();
    for (label, n, segments) in [
        ("linear recurrence f32 2^26", 1u64 << 26, Segments::None),
        ("linear recurrence f32 2^28", 1u64 << 28, Segments::None),
        (
            "linear recurrence f32 batched 64 x 2^20",
            64u64 << 20,
            Segments::Rows(1 << 20),
        ),
    ] {
        let scan = OperatorScan::inclusive().segmented(segments);
        let us = timer.median_us(stream, 20, || {
            unsafe { recurrence.scan_raw(stream, &[a.addr(), b.addr()], &[h.addr()], n, 0, &scan, None) }.unwrap();
        });
        report(label, n, 12, us, 0.90);
    }
    // The recurrence's gradient: its adjoint, backward (a and g read, lambda written).
    let adjoint = ctx
        .create_operator(recipes::linear_recurrence_adjoint(DType::F32).unwrap())
        .unwrap();
    for k in [26, 28] {
        let n = 1u64 << k;
        let scan = OperatorScan::inclusive().backward();
        let us = timer.median_us(stream, 20, || {
            unsafe { adjoint.scan_raw(stream, &[a.addr(), b.addr()], &[h.addr()], n, 0, &scan, None) }.unwrap();
        });
        report(
            &format!("linear recurrence adjoint f32 2^{k}, backward"),
            n,
            12,
            us,
            0.85,
        );
    }
    let cummax = ctx
        .create_operator(recipes::cumulative_extreme(DType::U32, true).unwrap())
        .unwrap();
    let n = 1u64 << 28;
    let us = timer.median_us(stream, 20, || {
        unsafe { cummax.scan_raw(stream, &[x.addr()], &[y.addr(), z.addr()], n, 0, &plain, None) }.unwrap();
    });
    report("cummax with index u32 2^28", n, 12, us, 0.85);
    let lse = ctx.create_operator(recipes::logcumsumexp(DType::F32).unwrap()).unwrap();
    let us = timer.median_us(stream, 20, || {
        unsafe { lse.scan_raw(stream, &[b.addr()], &[h.addr()], n, 0, &plain, None) }.unwrap();
    });
    report("logcumsumexp f32 2^28", n, 8, us, 0.85);
}
