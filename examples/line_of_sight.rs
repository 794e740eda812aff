//! Seed 001's line of sight: which points of a terrain profile an observer at its first
//! point sees, by a scan of a user-defined operator (a max-scan of view angles that also
//! remembers each point's own angle). Runs on the GPU when one is usable, else on the
//! host backend.
//!
//!     cargo run --release --example line_of_sight

mod operators;

use scanrt::{Backend, Buffer, Context, DType, OperatorScan};

/// Visible flags and horizons of a profile (rise above the observer, distance), scanned.
fn scan(ctx: &Context, op: &scanrt::Operator, rise: &[f32], distance: &[f32]) -> scanrt::Result<(Vec<u32>, Vec<f32>)> {
    let stream = ctx.new_stream()?;
    let n = rise.len();
    let (rise, distance) = (
        Buffer::from_slice(ctx, &stream, rise)?,
        Buffer::from_slice(ctx, &stream, distance)?,
    );
    let (visible, horizon) = (
        Buffer::new(ctx, DType::U32, n as u64)?,
        Buffer::new(ctx, DType::F32, n as u64)?,
    );
    op.scan(
        &stream,
        &[&rise, &distance],
        &[&visible, &horizon],
        &OperatorScan::inclusive(),
    )?;
    Ok((visible.download(&stream, n)?, horizon.download(&stream, n)?))
}

/// The same, one point after the other.
fn sequential(rise: &[f32], distance: &[f32]) -> (Vec<u32>, Vec<f32>) {
    let mut horizon = f32::NEG_INFINITY;
    rise.iter()
        .zip(distance)
        .map(|(&r, &d)| {
            let angle = if d > 0.0 { r / d } else { f32::NEG_INFINITY };
            let seen = (u32::from(angle >= horizon), horizon);
            horizon = horizon.max(angle);
            seen
        })
        .unzip()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let ctx = Context::new(Backend::Auto, 0)?;
    println!("backend: {:?} - {}", ctx.backend(), ctx.describe());
    let op = ctx.create_operator(operators::line_of_sight())?;

    // The seed's profile: altitudes every 100 m from the observer.
    let altitude = [
        100., 150., 200., 300., 400., 350., 400., 500., 600., 700., 650., 600., 500.,
    ];
    let rise: Vec<f32> = altitude.iter().map(|a| a - altitude[0]).collect();
    let distance: Vec<f32> = (0..altitude.len()).map(|i| 100.0 * i as f32).collect();
    let (visible, _) = scan(&ctx, &op, &rise, &distance)?;
    println!("altitude: {altitude:?}");
    println!("visible:  {visible:?}");
    assert_eq!(visible, sequential(&rise, &distance).0);

    // A long random walk of a terrain, checked against the sequential loop.
    let n = 1 << 22;
    let mut height = 0.0f32;
    let mut state = 0x2545F4914F6CDD1Du64;
    let rise: Vec<f32> = (0..n)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            height += (state % 2001) as f32 / 100.0 - 9.0; // rising on average
            height
        })
        .collect();
    let distance: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let got = scan(&ctx, &op, &rise, &distance)?;
    let want = sequential(&rise, &distance);
    let seen = got.0.iter().filter(|&&v| v == 1).count();
    println!("random terrain of {n} points: {seen} visible");
    if got != want {
        return Err("the scan differs from the sequential loop".into());
    }
    println!("verification: OK (equal to the sequential loop)");
    Ok(())
}
