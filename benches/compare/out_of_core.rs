//! Out-of-core scans (`--out-of-core`): a u32 inclusive sum of 2^31 elements (8 GiB;
//! `SCANRT_BENCH_OUT_OF_CORE_N` sets another count) in page-locked host memory into as
//! much page-locked host memory through the GPU (`Context::scan_host_array`), beside the
//! link's rate in the same run: the same bytes uploaded and downloaded at once on two
//! streams. Target: >= 0.90 of that rate. Then the same array in device memory scanned
//! into host memory (`Context::scan_host_raw`), beside its download alone.

use std::time::Instant;

use cudarc::driver::sys;
use scanrt::{Buffer, Context, DType, HostScanOptions, Op, RawScan, ScanDesc};

pub(crate) fn run(ctx: &Context) {
    let n: usize = std::env::var("SCANRT_BENCH_OUT_OF_CORE_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1 << 31);
    let cuda = ctx.cuda_context().unwrap();
    // SAFETY: plain page-locked allocations of u32, filled before use.
    let (mut input, mut output) = unsafe {
        (
            cuda.alloc_pinned::<u32>(n).unwrap(),
            cuda.alloc_pinned::<u32>(n).unwrap(),
        )
    };
    for (i, x) in input.as_mut_slice().unwrap().iter_mut().enumerate() {
        *x = (i as u32).wrapping_mul(2654435761) >> 28;
    }
    let desc = ScanDesc::inclusive(Op::Sum);
    let mut scan_ms = Vec::new();
    for _ in 0..3 {
        let start = Instant::now();
        ctx.scan_host_array(
            input.as_slice().unwrap(),
            output.as_mut_slice().unwrap(),
            &desc,
            HostScanOptions::default(),
        )
        .unwrap();
        scan_ms.push(start.elapsed().as_secs_f64() * 1e3);
    }
    let (got, inp) = (output.as_slice().unwrap(), input.as_slice().unwrap());
    let mut running = 0u32;
    for (i, (&x, &y)) in inp.iter().zip(got).enumerate() {
        running = running.wrapping_add(x);
        assert_eq!(y, running, "element {i}");
    }

    // The link: 8 GiB up and 8 GiB down at once, in chunks of the scan's size (2^26).
    let chunk = 1usize << 26;
    let (dev_in, dev_out) = (
        Buffer::new(ctx, DType::U32, chunk as u64).unwrap(),
        Buffer::new(ctx, DType::U32, chunk as u64).unwrap(),
    );
    let (s1, s2) = (ctx.new_stream().unwrap(), ctx.new_stream().unwrap());
    let mut copy_ms = Vec::new();
    for _ in 0..3 {
        let start = Instant::now();
        for lo in (0..n).step_by(chunk) {
            let len = chunk.min(n - lo);
            // SAFETY: both ranges lie in live allocations; the streams are this context's.
            unsafe {
                sys::cuMemcpyHtoDAsync_v2(dev_in.addr(), inp.as_ptr().add(lo) as *const _, 4 * len, s1.raw() as _);
                sys::cuMemcpyDtoHAsync_v2(got.as_ptr().add(lo) as *mut _, dev_out.addr(), 4 * len, s2.raw() as _);
            }
        }
        s1.synchronize().unwrap();
        s2.synchronize().unwrap();
        copy_ms.push(start.elapsed().as_secs_f64() * 1e3);
    }
    scan_ms.sort_by(f64::total_cmp);
    copy_ms.sort_by(f64::total_cmp);
    let (scan, copy) = (scan_ms[1], copy_ms[1]);
    drop((dev_in, dev_out));

    // The same array in device memory, scanned into host memory; its download alone.
    let device = Buffer::new(ctx, DType::U32, n as u64).unwrap();
    let req = RawScan::new(device.addr(), DType::U32, got.as_ptr() as u64, DType::U32, n as u64);
    let median = |mut f: Box<dyn FnMut() + '_>| {
        let mut t: Vec<f64> = (0..3)
            .map(|_| {
                let start = Instant::now();
                f();
                start.elapsed().as_secs_f64() * 1e3
            })
            .collect();
        t.sort_by(f64::total_cmp);
        t[1]
    };
    // SAFETY: live allocations of n u32 each; the streams are this context's.
    let download = unsafe {
        sys::cuMemcpyHtoD_v2(device.addr(), inp.as_ptr() as *const _, 4 * n);
        median(Box::new(|| {
            for lo in (0..n).step_by(chunk) {
                let len = chunk.min(n - lo);
                sys::cuMemcpyDtoHAsync_v2(
                    got.as_ptr().add(lo) as *mut _,
                    device.addr() + 4 * lo as u64,
                    4 * len,
                    s2.raw() as _,
                );
            }
            s2.synchronize().unwrap();
        }))
    };
    // SAFETY: as above; nothing else touches the arrays during the scan.
    let device_scan = median(Box::new(|| unsafe {
        ctx.scan_host_raw(&req, &desc, HostScanOptions::default()).unwrap();
    }));
    let mut running = 0u32;
    for (i, (&x, &y)) in inp.iter().zip(got).enumerate() {
        running = running.wrapping_add(x);
        assert_eq!(y, running, "element {i} of the device array's scan");
    }
    let gib = 4.0 * n as f64 / (1u64 << 30) as f64;
    println!("out_of_core_scan,u32,{n},{:.1}", scan * 1e3);
    println!("pinned_upload_and_download,u32,{n},{:.1}", copy * 1e3);
    eprintln!(
        "out of core: {gib:.0} GiB scanned host to host in {scan:.1} ms ({:.1} GB/s each way); upload + download \
         at once {copy:.1} ms ({:.1} GB/s each way): {:.2} of the link (target >= 0.90, {})",
        4.0 * n as f64 / scan / 1e6,
        4.0 * n as f64 / copy / 1e6,
        copy / scan,
        if copy / scan >= 0.9 { "met" } else { "NOT MET" }
    );
    println!("out_of_core_device_to_host_scan,u32,{n},{:.1}", device_scan * 1e3);
    println!("pinned_download,u32,{n},{:.1}", download * 1e3);
    eprintln!(
        "out of core from device memory: {gib:.0} GiB scanned into host memory in {device_scan:.1} ms ({:.1} GB/s); \
         the download alone {download:.1} ms ({:.1} GB/s): {:.2} of it",
        4.0 * n as f64 / device_scan / 1e6,
        4.0 * n as f64 / download / 1e6,
        download / device_scan
    );
}
