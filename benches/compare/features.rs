//! The scans beside the inclusive sum at 2^20, 2^24 and 2^28: backward, deterministic and
//! segmented (byte and bit flags, keys, offsets, the matrix algorithm).

use scanrt::{Algorithm, Buffer, Carries, Context, DType, Op, RawScan, ScanDesc, ScanIo, Segments, Stream};

use crate::{fill, Timer};

/// Backward, deterministic and segmented scans (CSV lines as in the sweep; the
/// algorithm Auto picked goes to stderr).
pub fn run(ctx: &Context, stream: &Stream, timer: &Timer) {
    let sizes = [1u64 << 20, 1 << 24, 1 << 28];
    let max_n = 1u64 << 28;
    let reps = |n: u64| {
        if n <= 1 << 22 {
            200
        } else if n <= 1 << 27 {
            30
        } else {
            10
        }
    };
    let time = |label: &str, name: &str, n: u64, req: &RawScan, desc: &ScanDesc| {
        let mut info = None;
        let us = timer.median_us(stream, reps(n), || {
            info = Some(unsafe { ctx.scan_raw(stream, req, desc, None) }.unwrap());
        });
        println!("{label},{name},{n},{us:.3}");
        if n == max_n {
            let info = info.unwrap();
            eprintln!("{label} {name} n={n}: ran {:?} ({:?})", info.algorithm, info.reason);
        }
    };
    for (name, dtype) in [
        ("u32", DType::U32),
        ("f32", DType::F32),
        ("u64", DType::U64),
        ("f64", DType::F64),
    ] {
        let src = Buffer::new(ctx, dtype, max_n).unwrap();
        let dst = Buffer::new(ctx, dtype, max_n).unwrap();
        fill(&src, dtype, max_n);
        for &n in &sizes {
            let req = RawScan::new(src.addr(), dtype, dst.addr(), dtype, n);
            for (label, algorithm) in [
                ("scanrt_backward_single_pass", Algorithm::SinglePass),
                ("scanrt_backward_matrix", Algorithm::Matrix),
            ] {
                time(
                    label,
                    name,
                    n,
                    &req,
                    &ScanDesc::inclusive(Op::Sum).backward().with_algorithm(algorithm),
                );
            }
            if dtype.is_float() {
                time(
                    "scanrt_deterministic",
                    name,
                    n,
                    &req,
                    &ScanDesc::inclusive(Op::Sum).deterministic(),
                );
            }
        }
    }
    // Segmented u32 sums: segments of 1024 elements as flags, packed bits and keys; and
    // segments of 1 to 10^4 elements by offsets.
    let src = Buffer::new(ctx, DType::U32, max_n).unwrap();
    let dst = Buffer::new(ctx, DType::U32, max_n).unwrap();
    fill(&src, DType::U32, max_n);
    let flags: Vec<u8> = (0..max_n).map(|i| (i % 1024 == 0) as u8).collect();
    let bits: Vec<u32> = (0..max_n.div_ceil(32)).map(|w| (w % 32 == 0) as u32).collect();
    let keys: Vec<u32> = (0..max_n).map(|i| (i / 1024) as u32).collect();
    let flags = Buffer::from_slice(ctx, stream, &flags).unwrap();
    let bits = Buffer::from_slice(ctx, stream, &bits).unwrap();
    let keys = Buffer::from_slice(ctx, stream, &keys).unwrap();
    let sum = ScanDesc::inclusive(Op::Sum);
    for &n in &sizes {
        let seg = |data: &Buffer| RawScan {
            segments: data.addr(),
            ..RawScan::new(src.addr(), DType::U32, dst.addr(), DType::U32, n)
        };
        for (label, data, desc) in [
            ("scanrt_seg_bytes", &flags, sum.segmented(Segments::ByteFlags)),
            (
                "scanrt_seg_bytes_backward",
                &flags,
                sum.segmented(Segments::ByteFlags).backward(),
            ),
            (
                "scanrt_seg_bytes_matrix",
                &flags,
                sum.segmented(Segments::ByteFlags).with_algorithm(Algorithm::Matrix),
            ),
            ("scanrt_seg_bits", &bits, sum.segmented(Segments::BitFlags)),
            ("scanrt_by_key", &keys, sum.segmented(Segments::Keys(DType::U32))),
        ] {
            time(label, "u32", n, &seg(data), &desc);
        }
        // Offsets (CSR) of segments whose lengths are drawn from 1 to 10^4.
        let mut offsets = vec![0u32];
        let mut state = 0x0FF5E7u64;
        while *offsets.last().unwrap() < n as u32 {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let len = 1 + (state >> 33) % 10_000;
            offsets.push((*offsets.last().unwrap() as u64 + len).min(n) as u32);
        }
        let count = offsets.len() as u64;
        let offsets = Buffer::from_slice(ctx, stream, &offsets).unwrap();
        let desc = sum.segmented(Segments::Offsets {
            dtype: DType::U32,
            count,
        });
        time("scanrt_seg_offsets", "u32", n, &seg(&offsets), &desc);
        // The same with carries per segment: an initial value read and a total written for
        // each (the register-staged kernel, whatever n).
        let segments = count - 1;
        let carry_in = Buffer::from_slice(ctx, stream, &vec![1u32; segments as usize]).unwrap();
        let carry_out = Buffer::new(ctx, DType::U32, segments).unwrap();
        let plan = ctx.plan(DType::U32, DType::U32, n, &desc).unwrap();
        let io = ScanIo::new(src.addr(), dst.addr())
            .with_segments(offsets.addr())
            .with_carries(Carries {
                carry_in: carry_in.addr(),
                carry_out: carry_out.addr(),
            });
        let us = timer.median_us(stream, reps(n), || {
            unsafe { plan.execute(stream, &io, None) }.unwrap();
        });
        println!("scanrt_seg_offsets_carried,u32,{n},{us:.3}");
    }
}
