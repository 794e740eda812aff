//! Scans along any axis of strided arrays (`--shapes`): the column, pitched-row and
//! summed-area-table targets of the data-shapes issue, each beside a device copy of the
//! same bytes in the same run (a scan reads and writes each element once, as the copy
//! does; a summed-area table is counted the same, 2n bytes, though it moves 4n). CUB has no
//! strided scan; torch's cumsum along dim 0 is in python/bench/bench_peers.py. Also a
//! user-defined operator (the f32 linear recurrence) down the columns of a matrix.
//! Prints `case,dtype,elements,scanrt_us,memcpy_us,of_memcpy,host_us,back_to_back_us`:
//! one call between two events on an idle stream (its host time included, as the copy's
//! launch is), scanrt's host time per call, and the time per call of 20 calls queued back
//! to back (the larger of the host's and the GPU's).

use cudarc::driver::sys;
use scanrt::{ArrayView, Buffer, CarryViews, Context, DType, Op, OperatorScan, ScanDesc, Stream};

use crate::latency::host_time_us;
use crate::{fill, Timer};

/// One layout: the view's shape and strides (the output has the input's), the axis.
struct Case {
    label: &'static str,
    dtype: DType,
    shape: [u64; 2],
    strides: [i64; 2],
    axis: isize,
    /// Elements of memory the strides span.
    span: u64,
}

/// Prints the strided kernels' registers and spills as they load (scanrt's debug log).
struct KernelLog;
impl log::Log for KernelLog {
    fn enabled(&self, m: &log::Metadata) -> bool {
        m.level() <= log::Level::Debug
    }
    fn log(&self, r: &log::Record) {
        let line = r.args().to_string();
        if line.starts_with("strided kernel") {
            eprintln!("{line}");
        }
    }
    fn flush(&self) {}
}

pub(crate) fn run(ctx: &Context, stream: &Stream, timer: &Timer) {
    if log::set_logger(&KernelLog).is_ok() {
        log::set_max_level(log::LevelFilter::Debug);
    }
    // pad 0: the same rows contiguous, the pitched case's reference in the same run.
    let pitched = |rows: u64, len: u64, pad: u64| Case {
        label: if pad == 0 { "contiguous_rows" } else { "pitched_rows" },
        dtype: DType::U32,
        shape: [rows, len],
        strides: [(len + pad) as i64, 1],
        axis: 1,
        span: rows * (len + pad),
    };
    let columns_of = |dtype: DType, rows: u64, cols: u64| Case {
        label: "columns",
        dtype,
        shape: [rows, cols],
        strides: [cols as i64, 1],
        axis: 0,
        span: rows * cols,
    };
    let columns = |rows: u64, cols: u64| columns_of(DType::F32, rows, cols);
    let cases = [
        columns(1 << 20, 2),
        columns(1 << 16, 64),
        columns(8192, 8192),
        // 32 strips of 512 tiles each: between few chains and many.
        columns(1 << 14, 1024),
        // 8-byte accumulators: tiles of half the rows, polled as deep.
        columns_of(DType::F64, 1 << 20, 2),
        // Three columns (12-byte rows: x, y, z), one strip: a single long chain of tiles.
        columns(1 << 20, 3),
        columns_of(DType::F64, 1 << 16, 64),
        columns_of(DType::F64, 8192, 8192),
        pitched(1 << 14, 1 << 10, 32),
        pitched(1 << 14, 1 << 10, 0),
        pitched(1 << 10, 1 << 16, 32),
        pitched(1 << 10, 1 << 16, 0),
        Case {
            label: "summed_area_table",
            ..columns(8192, 8192)
        },
        // Fixed association order: the look-back's anchors every few tiles of a chain.
        Case {
            label: "deterministic_columns",
            ..columns(1 << 20, 2)
        },
        Case {
            label: "deterministic_columns",
            ..columns(8192, 8192)
        },
    ];
    let sum = ScanDesc::inclusive(Op::Sum);
    println!("case,dtype,elements,scanrt_us,memcpy_us,of_memcpy,host_us,back_to_back_us");
    // SCANRT_SHAPES_CASE=label: that case alone (profiling).
    let only = std::env::var("SCANRT_SHAPES_CASE").ok();
    for case in cases {
        let n = case.shape[0] * case.shape[1];
        let name = match case.dtype {
            DType::F32 | DType::U32 => format!("{}_{}x{}", case.label, case.shape[0], case.shape[1]),
            other => format!("{}_{}_{}x{}", case.label, other.c_name(), case.shape[0], case.shape[1]),
        };
        if only.as_ref().is_some_and(|o| *o != name) {
            continue;
        }
        let src = Buffer::new(ctx, case.dtype, case.span).unwrap();
        let dst = Buffer::new(ctx, case.dtype, case.span).unwrap();
        fill(&src, case.dtype, case.span);
        // SAFETY: the strides reach no element past `span`, and both buffers outlive the
        // timed calls.
        let (input, output) = unsafe {
            (
                ArrayView::strided(src.addr(), case.dtype, &case.shape, &case.strides).unwrap(),
                ArrayView::strided(dst.addr(), case.dtype, &case.shape, &case.strides).unwrap(),
            )
        };
        let desc = if case.label == "deterministic_columns" {
            sum.deterministic()
        } else {
            sum
        };
        let reps = if n <= 1 << 22 { 200 } else { 30 };
        let mut call = || {
            if case.label == "summed_area_table" {
                ctx.summed_area_table(stream, &input, &output, &desc).unwrap();
            } else {
                ctx.scan_array(stream, &input, &output, case.axis, &desc).unwrap();
            }
        };
        let us = timer.median_us(stream, reps, &mut call);
        let host_us = host_time_us(stream, &mut call);
        let back_to_back_us = timer.median_us(stream, reps / 10, || (0..20).for_each(|_| call())) / 20.0;
        let bytes = (n * case.dtype.size() as u64) as usize;
        let copy_us = timer.median_us(stream, reps, || unsafe {
            sys::cuMemcpyDtoDAsync_v2(dst.addr(), src.addr(), bytes, stream.raw() as sys::CUstream);
        });
        println!(
            "{name},{},{n},{us:.3},{copy_us:.3},{:.3},{host_us:.3},{back_to_back_us:.3}",
            case.dtype.c_name(),
            copy_us / us
        );
    }
    // A user-defined operator along dim 0: the recipes' f32 linear recurrence down the
    // columns (reads a and b, writes h: 3n elements moved, against the copy's 2n).
    let op = ctx
        .create_operator(scanrt::recipes::linear_recurrence(DType::F32).unwrap())
        .unwrap();
    for (rows, cols) in [(1u64 << 16, 64u64), (8192, 8192)] {
        let (n, name) = (rows * cols, format!("recurrence_columns_{rows}x{cols}"));
        if only.as_ref().is_some_and(|o| *o != name) {
            continue;
        }
        let arrays: Vec<Buffer> = (0..3).map(|_| Buffer::new(ctx, DType::F32, n).unwrap()).collect();
        fill(&arrays[0], DType::F32, n);
        fill(&arrays[1], DType::F32, n);
        // SAFETY: each buffer holds the rows x cols elements and outlives the timed calls.
        let views: Vec<ArrayView> = arrays
            .iter()
            .map(|b| unsafe { ArrayView::contiguous(b.addr(), DType::F32, &[rows, cols]) }.unwrap())
            .collect();
        let reps = if n <= 1 << 22 { 200 } else { 30 };
        let scan = OperatorScan::inclusive();
        let us = timer.median_us(stream, reps, || {
            op.scan_arrays_along(stream, &views[..2], &views[2..], 0, &scan, &CarryViews::default())
                .unwrap();
        });
        let bytes = (n * 4) as usize;
        let copy_us = timer.median_us(stream, reps, || unsafe {
            sys::cuMemcpyDtoDAsync_v2(arrays[2].addr(), arrays[0].addr(), bytes, stream.raw() as sys::CUstream);
        });
        println!("{name},f32,{n},{us:.3},{copy_us:.3},{:.3}", 1.5 * copy_us / us);
    }
}
