//! Polynomial evaluation by a linear recurrence: Horner's rule p = c[k] + x * p, run from
//! the highest coefficient down, is the backward recurrence h[k] = x * h[k+1] + c[k], and
//! h[0] = p(x). Many polynomials at once are rows of one batched scan (each row its own
//! x). Runs on the GPU when one is usable, else on the host backend.
//!
//!     cargo run --release --example polynomial

use scanrt::{recipes, Backend, Buffer, Context, DType, OperatorScan, Segments};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let ctx = Context::new(Backend::Auto, 0)?;
    println!("backend: {:?} - {}", ctx.backend(), ctx.describe());
    let stream = ctx.new_stream()?;
    let op = ctx.create_operator(recipes::linear_recurrence(DType::F64)?)?;

    // 4096 polynomials of degree 1023, row r evaluated at x_r in [-1, 1].
    let (rows, terms) = (4096usize, 1024usize);
    let x: Vec<f64> = (0..rows).map(|r| -1.0 + 2.0 * r as f64 / (rows - 1) as f64).collect();
    let coefficients: Vec<f64> = (0..rows * terms)
        .map(|i| ((i * 7919) % 1000) as f64 / 1000.0 - 0.5)
        .collect();
    let a: Vec<f64> = x.iter().flat_map(|&x| std::iter::repeat_n(x, terms)).collect();
    let (a, c) = (
        Buffer::from_slice(&ctx, &stream, &a)?,
        Buffer::from_slice(&ctx, &stream, &coefficients)?,
    );
    let h = Buffer::new(&ctx, DType::F64, (rows * terms) as u64)?;
    let scan = OperatorScan::inclusive()
        .backward()
        .segmented(Segments::Rows(terms as u64));
    op.scan(&stream, &[&a, &c], &[&h], &scan)?;
    let h: Vec<f64> = h.download(&stream, rows * terms)?;

    let mut worst = 0.0f64;
    for r in 0..rows {
        let row = &coefficients[r * terms..(r + 1) * terms];
        let horner = row.iter().rev().fold(0.0, |p, &c| c + x[r] * p);
        worst = worst.max((h[r * terms] - horner).abs() / (1.0 + horner.abs()));
    }
    println!(
        "p_0({}) = {:.12}, p_{}({}) = {:.12}",
        x[0],
        h[0],
        rows - 1,
        x[rows - 1],
        h[(rows - 1) * terms]
    );
    println!("largest relative difference from Horner's loop: {worst:.2e}");
    if worst > 1e-9 {
        return Err("the scan differs from Horner's loop".into());
    }
    println!("verification: OK");
    Ok(())
}
