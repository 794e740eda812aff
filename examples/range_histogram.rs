//! Range histograms by a scan (the seeds' histogram of every prefix): 2^22 values, each a
//! one-bin histogram, summed bin by bin by a scan of 32-byte states, so the histogram of
//! any range [i, j) is the prefix histogram before j minus the one before i. Answers
//! 10,000 random ranges that way, each checked against counting the range directly, and
//! every prefix against the sequential loop. Runs on the GPU when one is usable, else on
//! the host backend.
//!
//!     cargo run --release --example range_histogram

mod operators;

use std::time::Instant;

use operators::{histogram, histogram_bin, HISTOGRAM_BINS};
use scanrt::{Backend, Buffer, Context, DType, OperatorScan};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let ctx = Context::new(Backend::Auto, 0)?;
    println!("backend: {:?} - {}", ctx.backend(), ctx.describe());
    let stream = ctx.new_stream()?;
    let op = ctx.create_operator(operators::range_histogram())?;

    let n = 1usize << 22;
    let mut seed = 0x415_u64;
    let mut next = move || {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        seed >> 33
    };
    // Skewed values, some outside [0, 1).
    let values: Vec<f32> = (0..n)
        .map(|_| ((next() % 1200) as f32 / 1000.0 - 0.1).powi(2))
        .collect();
    let input = Buffer::from_slice(&ctx, &stream, &values)?;
    let prefix = Buffer::new(&ctx, DType::U8, (n * 4 * HISTOGRAM_BINS) as u64)?;
    let started = Instant::now();
    op.scan(&stream, &[&input], &[&prefix], &OperatorScan::inclusive())?;
    stream.synchronize()?;
    let first_s = started.elapsed().as_secs_f64();
    let bytes: Vec<u8> = prefix.download(&stream, n * 4 * HISTOGRAM_BINS)?;
    let at = |i: usize| histogram(&bytes[4 * HISTOGRAM_BINS * i..4 * HISTOGRAM_BINS * (i + 1)]);

    let mut running = [0u32; HISTOGRAM_BINS];
    for (i, &x) in values.iter().enumerate() {
        running[histogram_bin(x)] += 1;
        if at(i) != running {
            return Err(format!("prefix {i}: {:?}, the loop counts {running:?}", at(i)).into());
        }
    }
    for _ in 0..10_000 {
        let (a, b) = ((next() as usize) % (n + 1), (next() as usize) % (n + 1));
        let (i, j) = (a.min(b), a.max(b));
        let before = if i == 0 { [0; HISTOGRAM_BINS] } else { at(i - 1) };
        let upto = if j == 0 { [0; HISTOGRAM_BINS] } else { at(j - 1) };
        let range: [u32; HISTOGRAM_BINS] = std::array::from_fn(|k| upto[k] - before[k]);
        let mut direct = [0u32; HISTOGRAM_BINS];
        values[i..j].iter().for_each(|&x| direct[histogram_bin(x)] += 1);
        if range != direct {
            return Err(format!("range {i}..{j}: {range:?}, counted {direct:?}").into());
        }
    }
    println!(
        "{n} values: prefix histograms in {:.3} ms (first call, kernels loading included); whole array {:?}",
        first_s * 1e3,
        at(n - 1)
    );
    println!("verification: OK (every prefix equal to the sequential loop, 10000 ranges to direct counts)");
    Ok(())
}
