//! The main job: one real scan on the GPU when one is usable, else on the host backend,
//! timed and verified against the sequential reference.
//!
//!     cargo run --release --bin scanrt-demo [n]

use std::time::Instant;

use scanrt::{reference_scan, Backend, Buffer, Context, DType, Op, ScanDesc};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: usize = std::env::args()
        .nth(1)
        .map(|a| a.parse())
        .transpose()?
        .unwrap_or(1 << 26);
    let ctx = Context::new(Backend::Auto, 0)?;
    let backend = match ctx.backend() {
        Backend::Gpu => "gpu",
        _ => "host",
    };
    println!("backend: {backend} - {} ({})", ctx.describe(), ctx.backend_reason());
    if backend == "gpu" {
        match scanrt::kernel_cache_status() {
            Ok(dir) => println!("kernel cache: {}", dir.display()),
            Err(why) => println!("kernel cache: none ({why})"),
        }
    }
    let stream = ctx.new_stream()?;
    let input: Vec<u32> = (0..n as u64)
        .map(|i| (i.wrapping_mul(0x9E3779B97F4A7C15) >> 40) as u32 & 0xffff)
        .collect();
    let src = Buffer::from_slice(&ctx, &stream, &input)?;
    let dst = Buffer::new(&ctx, DType::U32, n as u64)?;
    let desc = ScanDesc::inclusive(Op::Sum);

    let info = ctx.scan(&stream, &src, &dst, &desc)?; // warm-up: JIT compile or disk-cache load
    stream.synchronize()?;
    let reps = 20;
    let start = Instant::now();
    for _ in 0..reps {
        ctx.scan(&stream, &src, &dst, &desc)?;
    }
    stream.synchronize()?;
    let seconds = start.elapsed().as_secs_f64() / reps as f64;

    let got: Vec<u32> = dst.download(&stream, n)?;
    let want: Vec<u32> = reference_scan(&input, &desc);
    let mismatches = got.iter().zip(&want).filter(|(g, w)| g != w).count();
    println!("scan: inclusive sum of {n} u32, algorithm {:?}", info.algorithm);
    println!("time: {:.3} ms per scan (mean of {reps})", seconds * 1e3);
    println!(
        "throughput: {:.1} GB/s (2*n*4 bytes / time)",
        2.0 * n as f64 * 4.0 / seconds / 1e9
    );
    println!(
        "verification: {} ({mismatches} mismatches against the sequential reference)",
        if mismatches == 0 { "OK" } else { "FAILED" }
    );
    if mismatches != 0 {
        std::process::exit(1);
    }
    Ok(())
}
