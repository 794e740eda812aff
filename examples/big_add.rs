//! Multi-precision addition by a carry scan (the seeds' generate/propagate carries): two
//! numbers of 2^24 u32 limbs (512 Mbit each) added limb by limb, the carries found by a
//! scan instead of the sequential carry loop, which this checks it against and times
//! beside it (the loop is what a CPU library such as GMP's `mpn_add_n` runs). Runs on the
//! GPU when one is usable, else on the host backend.
//!
//!     cargo run --release --example big_add

mod operators;

use std::time::Instant;

use scanrt::{Backend, Buffer, Context, DType, OperatorScan};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let ctx = Context::new(Backend::Auto, 0)?;
    println!("backend: {:?} - {}", ctx.backend(), ctx.describe());
    let stream = ctx.new_stream()?;
    let op = ctx.create_operator(operators::carry_chain())?;

    let n = 1usize << 24;
    // Limbs of all ones in long runs, so that carries travel far.
    let mut seed = 0x5eed_u64;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let a: Vec<u32> = (0..n)
        .map(|i| if (i >> 12) % 3 == 0 { u32::MAX } else { next() as u32 })
        .collect();
    let b: Vec<u32> = (0..n)
        .map(|i| {
            if (i >> 12) % 3 == 0 {
                (i % 2) as u32
            } else {
                next() as u32
            }
        })
        .collect();
    let (da, db) = (
        Buffer::from_slice(&ctx, &stream, &a)?,
        Buffer::from_slice(&ctx, &stream, &b)?,
    );
    let (sum, carry) = (
        Buffer::new(&ctx, DType::U32, n as u64)?,
        Buffer::new(&ctx, DType::U32, n as u64)?,
    );
    let scan_s = operators::seconds_per_call(&stream, || {
        op.scan(&stream, &[&da, &db], &[&sum, &carry], &OperatorScan::inclusive())
    })?;
    let got: Vec<u32> = sum.download(&stream, n)?;
    let carry_out = carry.download::<u32>(&stream, n)?[n - 1];

    let started = Instant::now();
    let (mut want, mut c) = (vec![0u32; n], false);
    for i in 0..n {
        let (s, c1) = a[i].overflowing_add(b[i]);
        let (s, c2) = s.overflowing_add(u32::from(c));
        want[i] = s;
        c = c1 || c2;
    }
    let loop_s = started.elapsed().as_secs_f64();
    let bytes = (4 * 4 * n) as f64; // two limbs read, a limb and a carry written
    println!(
        "{n} limbs: scan {:.3} ms ({:.1} GB/s), sequential carry loop on the host {:.3} ms; carry out {carry_out}",
        scan_s * 1e3,
        bytes / scan_s / 1e9,
        loop_s * 1e3
    );
    if got != want || carry_out != u32::from(c) {
        return Err("the scan differs from the sequential carry loop".into());
    }
    println!("verification: OK (equal to the sequential carry loop)");
    Ok(())
}
