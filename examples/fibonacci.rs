//! Fibonacci numbers mod 2^32 by a scan of 2x2 matrix products, a user-defined operator
//! on 16-byte states that does not commute: the running product of n copies of
//! Q = [[1, 1], [1, 0]] holds F(i+1) at (0, 1). Runs on the GPU when one is usable, else
//! on the host backend.
//!
//!     cargo run --release --example fibonacci

mod operators;

use scanrt::{Backend, Buffer, Context, DType, OperatorScan};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let ctx = Context::new(Backend::Auto, 0)?;
    println!("backend: {:?} - {}", ctx.backend(), ctx.describe());
    let stream = ctx.new_stream()?;
    let op = ctx.create_operator(operators::fibonacci_matrix())?;

    let n = 1usize << 22;
    // States travel as their bytes.
    let q: Vec<u8> = [1u32, 1, 1, 0].iter().flat_map(|v| v.to_ne_bytes()).collect();
    let states = Buffer::from_slice(&ctx, &stream, &q.repeat(n))?;
    let fibonacci = Buffer::new(&ctx, DType::U32, n as u64)?;
    op.scan(&stream, &[&states], &[&fibonacci], &OperatorScan::inclusive())?;
    let got: Vec<u32> = fibonacci.download(&stream, n)?;

    let (mut f, mut next) = (1u32, 1u32); // F(1), F(2)
    let want: Vec<u32> = (0..n)
        .map(|_| {
            let value = f;
            (f, next) = (next, f.wrapping_add(next));
            value
        })
        .collect();
    println!("F(1..=12) = {:?}", &got[..12]);
    println!("F({n}) mod 2^32 = {}", got[n - 1]);
    if got != want {
        return Err("the scan differs from the sequential loop".into());
    }
    println!("verification: OK (equal to the sequential loop)");
    Ok(())
}
