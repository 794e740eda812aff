//! Radix sorts on the GPU: the shared sweep (every key type, order, value form, bit range,
//! in place, temporary memory) at every tile and histogram-chunk boundary; argsorts past
//! one portion (2^28 keys) checked in full; more than 2^32 keys; a subset for
//! compute-sanitizer; graph capture and several threads.

use scanrt::{ArrayView, Buffer, DType, SortArrays, SortDesc, SortOrder};

use crate::common::sort::{run_sort_case, sweep_sorts, Data, SortCase, Values};
use crate::common::*;
use crate::support::capture_after_warm_up;

pub(crate) fn sorts_at_every_tile_boundary() {
    let ctx = gpu();
    // Tiles of 12544 keys (unsigned keys of at most 4 bytes alone), 12288 (other keys of
    // at most 4 bytes alone) or 8192; histogram chunks of 16384.
    let sizes = [
        1,
        2,
        255,
        2049,
        8191,
        8192,
        8193,
        3 * 8192 + 5,
        12287,
        12288,
        12289,
        12543,
        12544,
        12545,
        3 * 12288 + 5,
        3 * 12544 + 5,
        16385,
        65537,
        (1 << 20) + 3,
    ];
    let failures = sweep_sorts(ctx, 0x0050_276A, &sizes);
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Checks an argsort in full without a reference sort: the keys come out in order, the
/// indices are a permutation whose keys are the output keys, and equal keys keep their
/// input order.
fn check_argsort(keys: &[u32], sorted: &[u32], indices: &[u32], descending: bool) {
    let mut seen = vec![false; keys.len()];
    for (slot, (&k, &i)) in sorted.iter().zip(indices).enumerate() {
        assert!(!std::mem::replace(&mut seen[i as usize], true), "index {i} twice");
        assert_eq!(keys[i as usize], k, "slot {slot}");
        if slot > 0 {
            let (before, before_index) = (sorted[slot - 1], indices[slot - 1]);
            let in_order = if descending { before >= k } else { before <= k };
            assert!(in_order, "slot {slot}: {before} then {k}");
            assert!(
                before != k || before_index < i,
                "slot {slot}: equal keys out of input order"
            );
        }
    }
}

/// u32 argsorts at 2^24 + 7 and past one portion (2^28 + 12345 keys: two launches per
/// pass chained by their carries), both orders, checked in full.
pub(crate) fn argsorts_past_one_portion() {
    let ctx = gpu();
    let stream = ctx.new_stream().unwrap();
    let mut rng = Rng(0xA5_0127);
    for (n, descending, distinct) in [((1usize << 24) + 7, false, 1u64 << 32), ((1 << 28) + 12345, true, 1000)] {
        let keys: Vec<u32> = (0..n).map(|_| rng.below(distinct) as u32).collect();
        let input = Buffer::from_slice(ctx, &stream, &keys).unwrap();
        let mut out = Buffer::new(ctx, DType::U32, n as u64).unwrap();
        let mut indices = Buffer::new(ctx, DType::U32, n as u64).unwrap();
        let arrays = SortArrays {
            keys_in: ArrayView::of_buffer(&input),
            keys_out: ArrayView::of_buffer_mut(&mut out),
            values_in: None,
            values_out: Some(ArrayView::of_buffer_mut(&mut indices)),
            temp: None,
        };
        let desc = if descending {
            SortDesc::descending()
        } else {
            SortDesc::ascending()
        };
        ctx.sort(&stream, &arrays, &desc).unwrap();
        let sorted: Vec<u32> = out.download(&stream, n).unwrap();
        let order: Vec<u32> = indices.download(&stream, n).unwrap();
        check_argsort(&keys, &sorted, &order, descending);
        eprintln!("argsort of {n} keys checked");
    }
}

/// 2^32 + 2^16 + 3 u8 keys, in place: the counts of each key and the order.
pub(crate) fn sort_more_than_2_pow_32_keys() {
    let ctx = gpu();
    let stream = ctx.new_stream().unwrap();
    let n: u64 = (1 << 32) + (1 << 16) + 3;
    let keys: Vec<u8> = (0..n).map(|i| (i.wrapping_mul(2654435761) >> 11) as u8).collect();
    let mut counts = [0u64; 256];
    for &k in &keys {
        counts[k as usize] += 1;
    }
    let mut buf = Buffer::from_slice(ctx, &stream, &keys).unwrap();
    drop(keys);
    let view = ArrayView::of_buffer_mut(&mut buf);
    let arrays = SortArrays {
        keys_in: view,
        keys_out: view,
        values_in: None,
        values_out: None,
        temp: None,
    };
    ctx.sort(&stream, &arrays, &SortDesc::descending()).unwrap();
    let sorted: Vec<u8> = buf.download(&stream, n as usize).unwrap();
    let mut at = 0usize;
    for k in (0..256).rev() {
        let run = counts[k] as usize;
        assert!(sorted[at..at + run].iter().all(|&x| x as usize == k), "key {k} at {at}");
        at += run;
    }
    eprintln!("sorted {n} keys");
}

/// A few sorts of each form for compute-sanitizer.
pub(crate) fn sort_sanitizer_subset() {
    let ctx = gpu();
    let stream = ctx.new_stream().unwrap();
    let mut rng = Rng(0x5A50);
    for (key, values, n) in [
        (DType::U32, Values::Indices(DType::U32), 5000usize),
        (DType::F64, Values::Of(DType::U8), 70_001),
        (DType::I16, Values::None, 300_001),
        (DType::F32, Values::Of(DType::U64), 4097),
    ] {
        for order in [SortOrder::Ascending, SortOrder::Descending] {
            let c = SortCase {
                key,
                order,
                values,
                bits: None,
                n,
                data: Data::Special,
                in_place: n == 4097,
                caller_temp: n == 5000,
                // Keys off the histogram's 16-byte vectors.
                lead: usize::from(n == 70_001),
            };
            run_sort_case(ctx, &stream, &mut rng, &c).unwrap_or_else(|e| panic!("{c:?}: {e}"));
        }
    }
}

/// Sorts captured in a CUDA graph and replayed with new data each time (the temporary
/// memory becomes the graph's), and sorts from several threads on streams of their own.
pub(crate) fn sort_in_graphs_and_threads() {
    let ctx = gpu();
    let cuda = ctx.cuda_context().unwrap();
    let cu_stream = cuda.new_stream().unwrap();
    // SAFETY: the stream outlives `stream`.
    let stream = unsafe { ctx.borrow_stream(cu_stream.cu_stream() as *mut _) }.unwrap();
    let n = (1usize << 20) + 17;
    let mut rng = Rng(0x6AF6);
    let mut input = Buffer::new(ctx, DType::F32, n as u64).unwrap();
    let mut out = Buffer::new(ctx, DType::F32, n as u64).unwrap();
    let mut indices = Buffer::new(ctx, DType::U64, n as u64).unwrap();
    let arrays = SortArrays {
        keys_in: ArrayView::of_buffer(&input),
        keys_out: ArrayView::of_buffer_mut(&mut out),
        values_in: None,
        values_out: Some(ArrayView::of_buffer_mut(&mut indices)),
        temp: None,
    };
    let desc = SortDesc::ascending();
    let graph = capture_after_warm_up(&cu_stream, &stream, || ctx.sort(&stream, &arrays, &desc).unwrap());
    for replay in 0..50 {
        let x: Vec<f32> = (0..n).map(|_| rng.below(5000) as f32 - 2500.0).collect();
        if replay % 10 == 0 {
            input.upload(&stream, &x).unwrap();
            graph.launch().unwrap();
            let mut want: Vec<(f32, u64)> = x.iter().copied().zip(0..).collect();
            want.sort_by(|a, b| a.0.total_cmp(&b.0));
            let got_keys: Vec<f32> = out.download(&stream, n).unwrap();
            let got_indices: Vec<u64> = indices.download(&stream, n).unwrap();
            for (slot, &(k, i)) in want.iter().enumerate() {
                assert_eq!(
                    (got_keys[slot], got_indices[slot]),
                    (k, i),
                    "replay {replay}, slot {slot}"
                );
            }
        } else {
            graph.launch().unwrap();
        }
    }
    std::thread::scope(|scope| {
        for t in 0..4u64 {
            scope.spawn(move || {
                let stream = ctx.new_stream().unwrap();
                let mut rng = Rng(0x7B + t);
                for _ in 0..10 {
                    let c = SortCase {
                        key: DType::U64,
                        order: SortOrder::Ascending,
                        values: Values::Of(DType::U32),
                        bits: None,
                        n: 1 + rng.below(300_000) as usize,
                        data: Data::Few,
                        in_place: false,
                        caller_temp: false,
                        lead: 0,
                    };
                    run_sort_case(ctx, &stream, &mut rng, &c).unwrap_or_else(|e| panic!("thread {t}: {c:?}: {e}"));
                }
            });
        }
    });
}
