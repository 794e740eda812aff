//! Radix sorts beside CUB (bench/cub_sort.cu, merged by bench/run_primitives_bench.sh) and
//! memcpy: u32 keys (ascending and descending), u32 keys with u32 values, i32, u64 and f32
//! keys, uniform random bits (the CUB harness's generator). Prints CSV lines
//!   impl,dtype,n,microseconds
//! and, per case, `memcpy_<case>`: a copy of half the bytes an ideal onesweep sort moves
//! (one read of the keys for the histogram, then a read and a write of keys and values
//! per 8-bit pass), so memcpy time / scanrt time is the fraction of memcpy speed.
//! `SCANRT_BENCH_SORT_N` (a count) runs that size alone, and `SCANRT_BENCH_SORT_TYPE`
//! (u32, i32, u64 or f32) that key type alone.

use cudarc::driver::sys;
use scanrt::{ArrayView, Buffer, Context, DType, Scalar, SortArrays, SortDesc, Stream};

use crate::Timer;

pub fn run(ctx: &Context, stream: &Stream, timer: &Timer) {
    let sizes = match std::env::var("SCANRT_BENCH_SORT_N") {
        Ok(n) => vec![n.parse().expect("SCANRT_BENCH_SORT_N: a count")],
        Err(_) => vec![1u64 << 20, 1 << 24, 1 << 28],
    };
    let only = std::env::var("SCANRT_BENCH_SORT_TYPE").ok();
    let wanted = |name: &str| only.as_deref().is_none_or(|t| t == name);
    for n in sizes {
        if wanted("u32") {
            typed::<u32>(ctx, stream, timer, "u32", n, false, false);
            typed::<u32>(ctx, stream, timer, "u32", n, true, false);
            typed::<u32>(ctx, stream, timer, "u32", n, false, true);
        }
        if wanted("i32") {
            typed::<i32>(ctx, stream, timer, "i32", n, false, false);
        }
        if wanted("u64") {
            typed::<u64>(ctx, stream, timer, "u64", n, false, false);
        }
        if wanted("f32") {
            typed::<f32>(ctx, stream, timer, "f32", n, false, false);
        }
    }
}

fn typed<K: Scalar>(ctx: &Context, stream: &Stream, timer: &Timer, name: &str, n: u64, pairs: bool, descending: bool) {
    let size = K::DTYPE.size() as u64;
    let mut state: u64 = 12345;
    let keys: Vec<K> = (0..n)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            K::from_bits(state ^ (state >> 29))
        })
        .collect();
    let input = Buffer::from_slice(ctx, stream, &keys).unwrap();
    let mut out = Buffer::new(ctx, K::DTYPE, n).unwrap();
    let values = Buffer::new(ctx, DType::U32, if pairs { n } else { 1 }).unwrap();
    let mut values_out = Buffer::new(ctx, DType::U32, if pairs { n } else { 1 }).unwrap();
    let passes = 8 * size / 8;
    let value_bytes = if pairs { 4 } else { 0 };
    let moved = n * size + passes * 2 * n * (size + value_bytes);
    // The copy: half the moved bytes (a copy reads and writes), at most 1 GiB of it timed
    // and scaled (copies that large run at the copy's full rate), in whole 256-byte lines
    // (an odd size takes the driver's slow path and would flatter every ratio).
    let copied = (moved / 2).min(1 << 30) / 256 * 256;
    let scale = (moved / 2) as f64 / copied as f64;
    let scratch = Buffer::new(ctx, DType::U8, 2 * copied).unwrap();
    let reps = if n >= 1 << 26 { 10 } else { 50 };
    let arrays = SortArrays {
        keys_in: ArrayView::of_buffer(&input),
        keys_out: ArrayView::of_buffer_mut(&mut out),
        values_in: pairs.then(|| ArrayView::of_buffer(&values)),
        values_out: pairs.then(|| ArrayView::of_buffer_mut(&mut values_out)),
        temp: None,
    };
    let desc = if descending {
        SortDesc::descending()
    } else {
        SortDesc::ascending()
    };
    let us = timer.median_us(stream, reps, || ctx.sort(stream, &arrays, &desc).unwrap());
    let label = match (pairs, descending) {
        (true, _) => "sort_pairs",
        (false, true) => "sort_keys_descending",
        (false, false) => "sort_keys",
    };
    println!("scanrt_{label},{name},{n},{us:.3}");
    if K::DTYPE == DType::U32 {
        check_sorted_u32(&keys, &out.download::<K>(stream, n as usize).unwrap(), descending);
    }
    let copy_us = timer.median_us(stream, reps, || unsafe {
        sys::cuMemcpyDtoDAsync_v2(
            scratch.addr() + copied,
            scratch.addr(),
            copied as usize,
            stream.raw() as sys::CUstream,
        );
    });
    println!("memcpy_{label},{name},{n},{:.3}", scale * copy_us);
    eprintln!("{label} {name} n={n}: {:.1} GB/s", moved as f64 / us / 1e3);
}

/// The timed sort's output, checked where the key order is the bits' order: in order, and
/// the same keys (their sum), so that no timing stands for a wrong result.
fn check_sorted_u32<K: Scalar>(input: &[K], output: &[K], descending: bool) {
    let bits = |k: &K| k.to_bits() as u32;
    let in_order = output.windows(2).all(|w| {
        let (a, b) = (bits(&w[0]), bits(&w[1]));
        if descending {
            a >= b
        } else {
            a <= b
        }
    });
    let sum = |keys: &[K]| keys.iter().fold(0u64, |s, k| s.wrapping_add(bits(k) as u64));
    assert!(in_order && sum(input) == sum(output), "the sort's output is wrong");
}
