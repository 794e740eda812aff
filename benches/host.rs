//! Criterion benchmark of the host backend: u32 inclusive sums at 2^20, 2^24 and 2^26
//! beside a naive sequential loop and a memcpy of the same bytes, in the same run, with
//! scanrt on one thread and on every core. After criterion's table it prints the two
//! ratios the host backend is held to (medians over 15 interleaved rounds):
//!   one thread / naive loop      (throughput; target >= 0.9)
//!   all cores  / memcpy          (bytes moved: 2n; target >= 0.6 at n >= 2^24)
//!
//!     cargo bench --bench host

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{criterion_group, Criterion, Throughput};
use scanrt::{Backend, Buffer, Context, DType, Op, ScanDesc, Stream};

struct Case {
    ctx: Context,
    stream: Stream,
    src: Buffer,
    dst: Buffer,
    input: Vec<u32>,
    output: Vec<u32>,
}

fn case(n: usize) -> Case {
    let ctx = Context::new(Backend::Host, 0).unwrap();
    let stream = ctx.new_stream().unwrap();
    let input: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(2654435761) >> 28).collect();
    let src = Buffer::from_slice(&ctx, &stream, &input).unwrap();
    let dst = Buffer::new(&ctx, DType::U32, n as u64).unwrap();
    Case {
        ctx,
        stream,
        src,
        dst,
        output: vec![0; n],
        input,
    }
}

impl Case {
    fn src_slice(&self) -> &[u32] {
        // SAFETY: a host buffer of input.len() u32s.
        unsafe { std::slice::from_raw_parts(self.src.addr() as *const u32, self.input.len()) }
    }
    #[allow(clippy::mut_from_ref)]
    fn dst_slice(&self) -> &mut [u32] {
        // SAFETY: a host buffer of input.len() u32s, used by nothing else meanwhile.
        unsafe { std::slice::from_raw_parts_mut(self.dst.addr() as *mut u32, self.input.len()) }
    }
}

/// The loop anyone would write first.
fn naive(input: &[u32], output: &mut [u32]) {
    let mut running = 0u32;
    for (o, &x) in output.iter_mut().zip(input) {
        running = running.wrapping_add(x);
        *o = running;
    }
}

fn one_thread() -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap()
}

fn host_scans(c: &mut Criterion) {
    let mut group = c.benchmark_group("host_inclusive_sum_u32");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(2))
        .warm_up_time(Duration::from_millis(300));
    let single = one_thread();
    let desc = ScanDesc::inclusive(Op::Sum);
    for k in [20u32, 24, 26] {
        let mut t = case(1 << k);
        group.throughput(Throughput::Bytes((2 * 4) << k));
        group.bench_function(format!("naive_loop/2^{k}"), |b| {
            b.iter(|| naive(black_box(t.src_slice()), t.dst_slice()))
        });
        group.bench_function(format!("memcpy/2^{k}"), |b| {
            b.iter(|| t.output.copy_from_slice(black_box(&t.input)))
        });
        group.bench_function(format!("scanrt_one_thread/2^{k}"), |b| {
            b.iter(|| single.install(|| t.ctx.scan(&t.stream, &t.src, &t.dst, &desc).unwrap()))
        });
        group.bench_function(format!("scanrt_all_cores/2^{k}"), |b| {
            b.iter(|| t.ctx.scan(&t.stream, &t.src, &t.dst, &desc).unwrap())
        });
    }
    group.finish();
}

fn secs(f: impl FnOnce()) -> f64 {
    let start = Instant::now();
    f();
    start.elapsed().as_secs_f64()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

/// The two ratios, from 15 rounds that time all four in turn (so that the machine's
/// drift hits them alike): medians of the per-round ratios.
fn ratios() {
    let single = one_thread();
    let desc = ScanDesc::inclusive(Op::Sum);
    println!(
        "host ratios ({} cores): n, naive loop GB/s, memcpy GB/s, one thread / naive, all cores / memcpy",
        rayon::current_num_threads()
    );
    for k in [20u32, 24, 26] {
        let mut t = case(1 << k);
        let bytes = ((2 * 4u64) << k) as f64;
        let (mut naive_s, mut memcpy_s, mut one_ratio, mut all_ratio) = (vec![], vec![], vec![], vec![]);
        for round in 0..16 {
            // The naive loop runs on the pool's thread and over the same memory as
            // scanrt's one-thread run.
            let n = secs(|| single.install(|| naive(black_box(t.src_slice()), t.dst_slice())));
            let one = secs(|| {
                single.install(|| t.ctx.scan(&t.stream, &t.src, &t.dst, &desc).unwrap());
            });
            let m = secs(|| t.output.copy_from_slice(black_box(&t.input)));
            let all = secs(|| {
                t.ctx.scan(&t.stream, &t.src, &t.dst, &desc).unwrap();
            });
            if round > 0 {
                naive_s.push(n);
                memcpy_s.push(m);
                one_ratio.push(n / one);
                all_ratio.push(m / all);
            }
        }
        println!(
            "2^{k}, {:.1}, {:.1}, {:.2}, {:.2}",
            bytes / median(naive_s) / 1e9,
            bytes / median(memcpy_s) / 1e9,
            median(one_ratio),
            median(all_ratio)
        );
    }
}

criterion_group!(benches, host_scans);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    ratios();
}
