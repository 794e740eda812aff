//! Tuning experiments (`SCANRT_TILE_OVERRIDE`, cargo feature `experiments`): the
//! single-pass inclusive sum of ones against memcpy, u32 (or u64 with
//! `SCANRT_VARIANT_U64=1`), then a check of the result.

use cudarc::driver::sys;
use scanrt::{Buffer, Context, DType, Op, RawScan, ScanDesc, Stream};

use crate::Timer;

pub fn run(ctx: &Context, stream: &Stream, timer: &Timer) {
    let wide = std::env::var("SCANRT_VARIANT_U64").is_ok_and(|v| v == "1");
    let (dtype, size) = if wide { (DType::U64, 8) } else { (DType::U32, 4) };
    let n_max = 1u64 << 28;
    let src = if wide {
        Buffer::from_slice(ctx, stream, &vec![1u64; n_max as usize]).unwrap()
    } else {
        Buffer::from_slice(ctx, stream, &vec![1u32; n_max as usize]).unwrap()
    };
    let dst = Buffer::new(ctx, dtype, n_max).unwrap();
    let req = |n| RawScan {
        input: src.addr(),
        input_dtype: dtype,
        output: dst.addr(),
        output_dtype: dtype,
        n,
        segments: 0,
    };
    let desc = ScanDesc::inclusive(Op::Sum);
    let mut line = std::env::var("SCANRT_TILE_OVERRIDE").unwrap_or_else(|_| "default".into());
    line += if wide { " u64" } else { " u32" };
    for k in [16u32, 20, 22, 24, 28] {
        let n = 1u64 << k;
        let reps = if k < 28 { 100 } else { 20 };
        let scan = timer.median_us(stream, reps, || {
            unsafe { ctx.scan_raw(stream, &req(n), &desc, None) }.unwrap();
        });
        let copy = timer.median_us(stream, reps, || unsafe {
            sys::cuMemcpyDtoDAsync_v2(
                dst.addr(),
                src.addr(),
                (n * size) as usize,
                stream.raw() as sys::CUstream,
            );
        });
        line += &format!("  2^{k}: {scan:.1}us {:.3}", copy / scan);
    }
    println!("{line}");
    println!("  {}", ctx.kernel_report(dtype, dtype, Op::Sum).unwrap());
    let n = (1u64 << 24) + 3;
    unsafe { ctx.scan_raw(stream, &req(n), &desc, None) }.unwrap();
    let ok = if wide {
        dst.download::<u64>(stream, n as usize)
            .unwrap()
            .iter()
            .enumerate()
            .all(|(i, &v)| v == i as u64 + 1)
    } else {
        dst.download::<u32>(stream, n as usize)
            .unwrap()
            .iter()
            .enumerate()
            .all(|(i, &v)| v == i as u32 + 1)
    };
    assert!(ok, "variant produced wrong results");
}
