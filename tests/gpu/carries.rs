//! Carries in device memory on the GPU: the shared sweep at every kernel's tile
//! boundary (register-staged, one-wave and bulk-copy single passes, the matrix scan),
//! chained chunks up to 2^24 + 5 elements, a compute-sanitizer subset, and chained
//! chunks captured in a CUDA graph and replayed; host arrays scanned through the GPU in
//! chunks (out of core); carries per segment of scans by offsets.

use scanrt::{ArrayView, Buffer, CarryViews, DType, Op, RawScan, ScanDesc};

use crate::common::carries::sweep_carries;
use crate::common::segment_carries::sweep_segment_carries;
use crate::common::*;
use crate::support::capture_after_warm_up;

pub(crate) fn carries_at_every_tile_boundary() {
    let ctx = gpu();
    let stream = ctx.new_stream().unwrap();
    // Tiles of 4096 (register-staged), 8192 (one wave), 7168 (bulk copy, from 512 tiles
    // on), sums of tile totals in rows of 4096; one tile is scanned without the protocol.
    let sizes = [
        0,
        1,
        2,
        4095,
        4096,
        4097,
        8191,
        8193,
        65537,
        (1 << 20) + 3,
        3_700_000,
        (1 << 24) + 5,
    ];
    let failures = sweep_carries(ctx, &stream, 0x00CA_771E, &sizes);
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

pub(crate) fn carries_sanitizer_subset() {
    let ctx = gpu();
    let stream = ctx.new_stream().unwrap();
    let failures = sweep_carries(ctx, &stream, 0x5A41, &[1, 4097, 70000]);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Carries per segment (segments by offsets), which run on the register-staged kernel
/// (tiles of 4096 elements of 4 bytes, 2048 of 8): every tile boundary, one tile (no
/// protocol), and sizes where every segment pattern spans many tiles.
pub(crate) fn segment_carries_at_every_tile_boundary() {
    let ctx = gpu();
    let stream = ctx.new_stream().unwrap();
    let sizes = [
        0,
        1,
        2,
        31,
        2047,
        2049,
        4095,
        4096,
        4097,
        3 * 4096 + 5,
        100_003,
        (1 << 20) + 3,
        (1 << 22) + 5,
    ];
    let failures = sweep_segment_carries(ctx, &stream, 0x5E6C_A771, &sizes, 4096);
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

pub(crate) fn segment_carries_sanitizer_subset() {
    let ctx = gpu();
    let stream = ctx.new_stream().unwrap();
    let failures = sweep_segment_carries(ctx, &stream, 0x5A42, &[1, 4097, 20000], 4096);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Four chunks of a u32 sum chained through one carry element, captured once and
/// replayed twice: each replay continues from the total the last one left.
pub(crate) fn chained_carries_in_a_graph() {
    let ctx = gpu();
    let cuda = ctx.cuda_context().unwrap();
    let cu_stream = cuda.new_stream().unwrap();
    // SAFETY: the stream outlives `stream`.
    let stream = unsafe { ctx.borrow_stream(cu_stream.cu_stream() as *mut _) }.unwrap();
    let n = 4 * 100_000usize;
    let input: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(2654435761) >> 20).collect();
    let in_buf = Buffer::from_slice(ctx, &stream, &input).unwrap();
    let out_buf = Buffer::new(ctx, DType::U32, n as u64).unwrap();
    let mut carry = Buffer::from_slice(ctx, &stream, &[5u32]).unwrap();
    let desc = ScanDesc::exclusive(Op::Sum);
    let chunk = |i: usize| unsafe {
        let at = 4 * (i * n / 4) as u64;
        (
            ArrayView::contiguous(in_buf.addr() + at, DType::U32, &[n as u64 / 4]).unwrap(),
            ArrayView::contiguous(out_buf.addr() + at, DType::U32, &[n as u64 / 4]).unwrap(),
        )
    };
    let carry_view = unsafe { ArrayView::contiguous(carry.addr(), DType::U32, &[1]).unwrap() };
    let carries = CarryViews {
        carry_in: Some(&carry_view),
        carry_out: Some(&carry_view),
    };
    let graph = capture_after_warm_up(&cu_stream, &stream, || {
        for i in 0..4 {
            let (input, output) = chunk(i);
            ctx.scan_array_carried(&stream, &input, &output, -1, &desc, &carries)
                .unwrap();
        }
    });
    carry.upload(&stream, &[5u32]).unwrap(); // the warm-up call moved it on
    let total: u32 = input.iter().fold(0u32, |a, &x| a.wrapping_add(x));
    for replay in 0..2u32 {
        graph.launch().unwrap();
        let start = 5u32.wrapping_add(total.wrapping_mul(replay));
        let want = scanrt::reference_scan::<u32, u32>(&input, &desc.with_init(start));
        assert_eq!(out_buf.download::<u32>(&stream, n).unwrap(), want, "replay {replay}");
        assert_eq!(
            carry.download::<u32>(&stream, 1).unwrap(),
            vec![start.wrapping_add(total)]
        );
    }
}

/// Host arrays scanned through the GPU in chunks (`Context::scan_host_array`): u32 into
/// u64 with an initial value, both directions, inclusive and exclusive, chunk lengths
/// that leave a partial last chunk or divide the array, and the progress callback.
pub(crate) fn out_of_core_scans_of_host_arrays() {
    let ctx = gpu();
    let mut rng = Rng(0x00C0);
    eprintln!("out of core: seed {:#x}", rng.0);
    let n = 10_000_019usize;
    let input: Vec<u32> = (0..n).map(|_| rng.below(1 << 20) as u32).collect();
    for chunk in [1_000_003u64, 1 << 20, n as u64, 0] {
        for backward in [false, true] {
            for inclusive in [true, false] {
                let mut desc = ScanDesc {
                    inclusive,
                    ..ScanDesc::inclusive(Op::Sum)
                }
                .with_init(11u64);
                if backward {
                    desc = desc.backward();
                }
                let mut output = vec![0u64; n];
                let mut seen = Vec::new();
                let mut progress = |done: u64, total: u64| seen.push((done, total));
                let options = scanrt::HostScanOptions {
                    chunk,
                    progress: Some(&mut progress),
                };
                ctx.scan_host_array(&input, &mut output, &desc, options).unwrap();
                let want = scanrt::reference_scan::<u32, u64>(&input, &desc);
                let first_bad = (0..n).find(|&i| output[i] != want[i]);
                assert!(
                    first_bad.is_none(),
                    "chunk {chunk} backward={backward} inclusive={inclusive}: element {first_bad:?}"
                );
                assert!(
                    seen.windows(2).all(|w| w[0].0 <= w[1].0),
                    "progress goes forward: {seen:?}"
                );
                assert_eq!(seen.last(), Some(&(n as u64, n as u64)));
            }
        }
    }
}

/// Out-of-core scans with one side in device memory (`Context::scan_host_raw`): a device
/// array scanned into host memory, and a host array into device memory, u32 into u64 with
/// an initial value, both directions, partial and whole chunks, against the sequential
/// scan; the device side is read or written in place.
pub(crate) fn out_of_core_scans_with_a_device_side() {
    let ctx = gpu();
    let stream = ctx.new_stream().unwrap();
    let mut rng = Rng(0xD0C0);
    eprintln!("out of core, device side: seed {:#x}", rng.0);
    let n = 5_000_011usize;
    let input: Vec<u32> = (0..n).map(|_| rng.below(1 << 20) as u32).collect();
    let device_input = scanrt::Buffer::from_slice(ctx, &stream, &input).unwrap();
    let device_output = scanrt::Buffer::new(ctx, DType::U64, n as u64).unwrap();
    let mut calls = 0;
    for chunk in [999_983u64, 1 << 20, 0] {
        for backward in [false, true] {
            let mut desc = ScanDesc::inclusive(Op::Sum).with_init(5u64);
            if backward {
                desc = desc.backward();
            }
            let want = scanrt::reference_scan::<u32, u64>(&input, &desc);
            let what = format!("chunk {chunk} backward={backward}");
            let mut progress = |_: u64, _: u64| calls += 1;
            let options = |progress| scanrt::HostScanOptions { chunk, progress };

            let mut host_output = vec![0u64; n];
            let req = RawScan::new(
                device_input.addr(),
                DType::U32,
                host_output.as_mut_ptr() as u64,
                DType::U64,
                n as u64,
            );
            // SAFETY: a live device buffer and a host vector of n elements each.
            unsafe { ctx.scan_host_raw(&req, &desc, options(Some(&mut progress))) }.unwrap();
            let bad = (0..n).find(|&i| host_output[i] != want[i]);
            assert!(bad.is_none(), "device into host, {what}: element {bad:?}");

            let req = RawScan::new(
                input.as_ptr() as u64,
                DType::U32,
                device_output.addr(),
                DType::U64,
                n as u64,
            );
            // SAFETY: as above.
            unsafe { ctx.scan_host_raw(&req, &desc, options(None)) }.unwrap();
            let got = device_output.download::<u64>(&stream, n).unwrap();
            let bad = (0..n).find(|&i| got[i] != want[i]);
            assert!(bad.is_none(), "host into device, {what}: element {bad:?}");
        }
    }
    assert!(calls > 0, "progress was reported");
}
