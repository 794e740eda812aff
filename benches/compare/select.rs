//! Selections beside CUB (bench/cub_select.cu, merged by bench/run_primitives_bench.sh select) and
//! memcpy: byte-flag selection, a comparison selection, a partition, unique and run-length
//! encoding, on the
//! same data as the CUB harness (flags set with probability 1/2; values 0..99 in runs
//! of mean length 2; the comparison keeps x < 50). Prints CSV lines
//!   impl,dtype,n,microseconds
//! and, per case, `memcpy_<case>`: a copy of half the bytes the case moves (its reads
//! plus its writes), so memcpy time / scanrt time is the fraction of memcpy speed.
//! `SCANRT_BENCH_SELECT_N` (a count) runs that size alone, and `SCANRT_BENCH_SELECT_TYPE`
//! (u32, f32 or u64) that type alone.

use cudarc::driver::sys;
use scanrt::{
    ArrayView, Buffer, Comparison, Context, DType, InitValue, Scalar, SelectArrays, SelectDesc, SelectOutput,
    Selection, Stream,
};

use crate::Timer;

pub fn run(ctx: &Context, stream: &Stream, timer: &Timer) {
    let sizes = match std::env::var("SCANRT_BENCH_SELECT_N") {
        Ok(n) => vec![n.parse().expect("SCANRT_BENCH_SELECT_N: a count")],
        Err(_) => vec![1u64 << 20, 1 << 24, 1 << 28],
    };
    let only = std::env::var("SCANRT_BENCH_SELECT_TYPE").ok();
    let wanted = |name: &str| only.as_deref().is_none_or(|t| t == name);
    for n in sizes {
        if wanted("u32") {
            typed::<u32>(ctx, stream, timer, "u32", n);
        }
        if wanted("f32") {
            typed::<f32>(ctx, stream, timer, "f32", n);
        }
        if wanted("u64") {
            typed::<u64>(ctx, stream, timer, "u64", n);
        }
    }
}

fn typed<T: Scalar>(ctx: &Context, stream: &Stream, timer: &Timer, name: &str, n: u64) {
    let size = T::DTYPE.size() as u64;
    let (mut values, mut flags) = (Vec::with_capacity(n as usize), Vec::with_capacity(n as usize));
    let mut state: u64 = 12345;
    let mut run_value = 0u64;
    for _ in 0..n {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        flags.push(((state >> 33) & 1) as u8);
        if (state >> 40) & 1 == 1 {
            run_value = (state >> 45) % 100;
        }
        values.push(value_of::<T>(run_value));
    }
    let input = Buffer::from_slice(ctx, stream, &values).unwrap();
    let flag_buf = Buffer::from_slice(ctx, stream, &flags).unwrap();
    let mut out = Buffer::new(ctx, T::DTYPE, n).unwrap();
    let mut count = Buffer::new(ctx, DType::U64, 1).unwrap();
    let scratch = Buffer::new(ctx, DType::U8, 2 * n * size + n).unwrap();
    let reps = if n >= 1 << 26 { 10 } else { 50 };
    // A device copy of half the bytes a case moves (reads plus writes), rounded to whole
    // 256-byte lines: a copy of an odd size takes the driver's slow path and would flatter
    // every ratio.
    let memcpy_us = |moved: u64| {
        let half = moved / 2 / 256 * 256;
        timer.median_us(stream, reps, || unsafe {
            sys::cuMemcpyDtoDAsync_v2(
                scratch.addr() + half,
                scratch.addr(),
                half as usize,
                stream.raw() as sys::CUstream,
            );
        })
    };
    let fifty = InitValue::of(value_of::<T>(50));
    for (label, selection, output) in [
        ("select_flagged", Selection::ByteFlags, SelectOutput::Values),
        (
            "select_if",
            Selection::Compare(Comparison::Less, fifty),
            SelectOutput::Values,
        ),
        (
            "partition_flagged",
            Selection::ByteFlags,
            SelectOutput::PartitionReversed,
        ),
        ("unique", Selection::RunHeads, SelectOutput::Values),
    ] {
        let uses_flags = selection.data_type().is_some();
        let desc = SelectDesc {
            selection,
            output,
            capacity: None,
        };
        let arrays = SelectArrays {
            input: ArrayView::of_buffer(&input),
            flags: uses_flags.then(|| ArrayView::of_buffer(&flag_buf)),
            output: ArrayView::of_buffer_mut(&mut out),
            rejected: None,
            lengths: None,
            num_selected: ArrayView::of_buffer_mut(&mut count),
        };
        let us = timer.median_us(stream, reps, || ctx.select(stream, &arrays, &desc).unwrap());
        println!("scanrt_{label},{name},{n},{us:.3}");
        let kept = ctx.selected_count(stream, &count).unwrap();
        let written = if output == SelectOutput::PartitionReversed {
            n
        } else {
            kept
        };
        let moved = n * size + if uses_flags { n } else { 0 } + written * size;
        println!("memcpy_{label},{name},{n},{:.3}", memcpy_us(moved));
        eprintln!("{label} {name} n={n}: kept {kept}, {:.1} GB/s", moved as f64 / us / 1e3);
    }
    // Run-length encoding: the runs' values and u32 lengths (as CUB's Encode).
    let mut lengths = Buffer::new(ctx, DType::U32, n).unwrap();
    let (i, v, l, c) = (
        ArrayView::of_buffer(&input),
        ArrayView::of_buffer_mut(&mut out),
        ArrayView::of_buffer_mut(&mut lengths),
        ArrayView::of_buffer_mut(&mut count),
    );
    let us = timer.median_us(stream, reps, || ctx.run_length_encode(stream, &i, &v, &l, &c).unwrap());
    println!("scanrt_run_length_encode,{name},{n},{us:.3}");
    let runs = ctx.selected_count(stream, &count).unwrap();
    let moved = n * size + runs * (size + 4);
    println!("memcpy_run_length_encode,{name},{n},{:.3}", memcpy_us(moved));
}

fn value_of<T: Scalar>(v: u64) -> T {
    match T::DTYPE {
        DType::F32 => T::from_bits((v as f32).to_bits() as u64),
        DType::F64 => T::from_bits((v as f64).to_bits()),
        _ => T::from_bits(v),
    }
}
