//! Lexical analysis by a scan (the seeds' finite-state machine): 16 MiB of program-like
//! text lexed at once by composing each character's transition function of a small
//! lexer (identifiers, numbers, strings with escapes, punctuation), so every character
//! learns the lexer's state after it without a pass from the start; tokens start where
//! the state says so. Checked against the sequential lexer loop and timed beside it. Runs
//! on the GPU when one is usable, else on the host backend.
//!
//!     cargo run --release --example lexer

mod operators;

use std::time::Instant;

use operators::{lex_class, lex_step, starts_token};
use scanrt::{Backend, Buffer, Context, DType, OperatorScan};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let ctx = Context::new(Backend::Auto, 0)?;
    println!("backend: {:?} - {}", ctx.backend(), ctx.describe());
    let stream = ctx.new_stream()?;
    let op = ctx.create_operator(operators::lexer())?;

    let pieces: [&[u8]; 8] = [
        b"count",
        b" = ",
        b"42",
        b"; ",
        b"\"a \\\"quoted\\\" word\"",
        b"\n",
        b"x_1(y)",
        b" + 7",
    ];
    let mut seed = 0x1e8_u64;
    let mut text = Vec::with_capacity(1 << 24);
    while text.len() < 1 << 24 {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        text.extend_from_slice(pieces[(seed >> 61) as usize]);
    }
    text.truncate(1 << 24);
    let n = text.len();
    let input = Buffer::from_slice(&ctx, &stream, &text)?;
    let states = Buffer::new(&ctx, DType::U32, n as u64)?;
    let scan_s = operators::seconds_per_call(&stream, || {
        op.scan(&stream, &[&input], &[&states], &OperatorScan::inclusive())
    })?;
    let got: Vec<u32> = states.download(&stream, n)?;

    let started = Instant::now();
    let mut state = 0u8;
    let want: Vec<u32> = text
        .iter()
        .map(|&c| {
            state = lex_step(state, lex_class(c));
            u32::from(state)
        })
        .collect();
    let loop_s = started.elapsed().as_secs_f64();
    let mut tokens = [0usize; 8];
    let mut before = 0;
    for &after in &got {
        if starts_token(before, after) {
            tokens[after as usize] += 1;
        }
        before = after;
    }
    println!(
        "{n} characters: scan {:.3} ms ({:.1} GB/s), sequential lexer on the host {:.3} ms",
        scan_s * 1e3,
        (5 * n) as f64 / scan_s / 1e9, // a byte read, a state written
        loop_s * 1e3
    );
    println!(
        "tokens: {} identifiers, {} numbers, {} strings, {} punctuation",
        tokens[1], tokens[2], tokens[3], tokens[5]
    );
    if got != want {
        return Err("the scan differs from the sequential lexer".into());
    }
    println!("verification: OK (equal to the sequential lexer)");
    Ok(())
}
