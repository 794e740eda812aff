//! How applications call the library: the current context left alone, many threads and
//! streams, graphs captured and replayed, caller workspaces.

use std::sync::Arc;

use cudarc::driver::sys;
use scanrt::{Algorithm, Backend, Buffer, Context, DType, Op, RawScan, ScanDesc, ScanrtStatus, Segments, Stream};

use crate::common::*;
use crate::support::*;

pub(crate) fn calls_leave_the_current_context_unchanged() {
    let ctx = gpu();
    let current = || {
        let mut c: sys::CUcontext = std::ptr::null_mut();
        unsafe { sys::cuCtxGetCurrent(&mut c) };
        c
    };
    // A non-primary context of the application is current.
    let mut app_ctx: sys::CUcontext = std::ptr::null_mut();
    let mut dev: sys::CUdevice = 0;
    unsafe {
        assert_eq!(sys::cuDeviceGet(&mut dev, 0), sys::CUresult::CUDA_SUCCESS);
        let mut params: sys::CUctxCreateParams = std::mem::zeroed();
        assert_eq!(
            sys::cuCtxCreate_v4(&mut app_ctx, &mut params, 0, dev),
            sys::CUresult::CUDA_SUCCESS
        );
    }
    assert_eq!(current(), app_ctx);
    let stream = ctx.new_stream().unwrap();
    assert_eq!(current(), app_ctx, "new_stream changed the current context");
    let src = Buffer::from_slice(ctx, &stream, &[1u32, 2, 3]).unwrap();
    let dst = Buffer::new(ctx, DType::U32, 3).unwrap();
    ctx.scan(&stream, &src, &dst, &ScanDesc::default()).unwrap();
    assert_eq!(dst.download::<u32>(&stream, 3).unwrap(), vec![1, 3, 6]);
    assert_eq!(current(), app_ctx, "scan changed the current context");
    let fresh = Context::new(Backend::Gpu, 0).unwrap();
    assert_eq!(current(), app_ctx, "Context::new changed the current context");
    drop(fresh);
    unsafe {
        sys::cuCtxDestroy_v2(app_ctx);
        // None current afterwards: scanrt must restore "no context" as well.
        sys::cuCtxSetCurrent(std::ptr::null_mut());
    }
    ctx.scan(&stream, &src, &dst, &ScanDesc::default()).unwrap();
    assert!(current().is_null(), "scan left a context current where there was none");
}

/// 16 host threads x 4 streams x 1000 scans of random sizes on one context.
pub(crate) fn stress_threads_and_streams() {
    let ctx = gpu();
    let failures = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    std::thread::scope(|s| {
        for t in 0..16u64 {
            let failures = failures.clone();
            s.spawn(move || {
                let streams: Vec<Stream> = (0..4).map(|_| ctx.new_stream().unwrap()).collect();
                let mut rng = Rng(1000 + t);
                let mut pending = Vec::new();
                for i in 0..1000 {
                    let stream = &streams[i % 4];
                    let max = if rng.below(8) == 0 { 1 << 20 } else { 1 << 14 };
                    let n = 1 + rng.below(max) as usize;
                    let input: Vec<u32> = random_vec(&mut rng, Op::Sum, n);
                    let src = Buffer::from_slice(ctx, stream, &input).unwrap();
                    let dst = Buffer::new(ctx, DType::U32, n as u64).unwrap();
                    let desc = ScanDesc::inclusive(Op::Sum).with_algorithm(if i % 5 == 0 {
                        Algorithm::Matrix
                    } else {
                        Algorithm::Auto
                    });
                    ctx.scan(stream, &src, &dst, &desc).unwrap();
                    pending.push((i % 4, input, src, dst, desc));
                    if pending.len() == 8 {
                        for (s, input, _src, dst, desc) in pending.drain(..) {
                            let got: Vec<u32> = dst.download(&streams[s], input.len()).unwrap();
                            if compare(&input, &desc, &got, 0.0).is_err() {
                                failures.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            }
                        }
                    }
                }
                for (s, input, _src, dst, desc) in pending.drain(..) {
                    let got: Vec<u32> = dst.download(&streams[s], input.len()).unwrap();
                    if compare(&input, &desc, &got, 0.0).is_err() {
                        failures.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                }
            });
        }
    });
    let f = failures.load(std::sync::atomic::Ordering::Relaxed);
    eprintln!("stress: 16 threads x 4 streams x 1000 scans, {f} mismatches");
    assert_eq!(f, 0);
}

/// A single-pass scan captured into a CUDA graph and replayed 1000 times, with the
/// input changing between replays: a scan through the look-back (the graph's own
/// workspace) and two of the cluster kernel (none).
pub(crate) fn graph_capture_and_replay() {
    let ctx = gpu();
    let cuda = ctx.cuda_context().unwrap();
    let cu_stream = cuda.new_stream().unwrap();
    // SAFETY: the stream outlives `stream`.
    let stream = unsafe { ctx.borrow_stream(cu_stream.cu_stream() as *mut _) }.unwrap();
    let mut rng = Rng(0x6AF);
    for n in [(1usize << 20) + 17, 9 * 4096 + 5, 100] {
        let mut src = Buffer::new(ctx, DType::U32, n as u64).unwrap();
        let dst = Buffer::new(ctx, DType::U32, n as u64).unwrap();
        let desc = ScanDesc::exclusive(Op::Sum).with_init(5u32);
        // Warm up outside the capture: compiles the kernel and creates the stream's workspace.
        src.upload(&stream, &random_vec::<u32>(&mut rng, Op::Sum, n)).unwrap();
        ctx.scan(&stream, &src, &dst, &desc).unwrap();
        stream.synchronize().unwrap();

        cu_stream
            .begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
            .unwrap();
        for _ in 0..3 {
            ctx.scan(&stream, &src, &dst, &desc).unwrap(); // three scans per replay
        }
        let graph = cu_stream
            .end_capture(sys::CUgraphInstantiate_flags_enum::CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH)
            .unwrap()
            .expect("a graph");
        let mut mismatches = 0;
        for replay in 0..1000 {
            if replay % 50 == 0 {
                let input: Vec<u32> = random_vec(&mut rng, Op::Sum, n);
                src.upload(&stream, &input).unwrap();
                graph.launch().unwrap();
                let got: Vec<u32> = dst.download(&stream, n).unwrap();
                if compare(&input, &desc, &got, 0.0).is_err() {
                    mismatches += 1;
                }
            } else {
                graph.launch().unwrap();
            }
        }
        stream.synchronize().unwrap();
        eprintln!("graph, n = {n}: 1000 replays x 3 scans, {mismatches} mismatches in 20 checked replays");
        assert_eq!(mismatches, 0);
    }
}

pub(crate) fn caller_workspace_back_to_back() {
    let ctx = gpu();
    let stream = ctx.new_stream().unwrap();
    let mut rng = Rng(0x3C);
    let n = 3_000_001usize;
    let req_for = |src: &Buffer, dst: &Buffer| RawScan {
        input: src.addr(),
        input_dtype: DType::U32,
        output: dst.addr(),
        output_dtype: DType::U32,
        n: n as u64,
        segments: 0,
    };
    let src0 = Buffer::new(ctx, DType::U32, n as u64).unwrap();
    let bytes = ctx
        .workspace_size(&req_for(&src0, &src0), &ScanDesc::default())
        .unwrap();
    assert!(bytes > 0);
    let ws_buf = Buffer::new(ctx, DType::U8, bytes as u64).unwrap();
    let ws = scanrt::Workspace {
        ptr: ws_buf.addr(),
        bytes,
    };
    ctx.init_workspace(&stream, ws).unwrap();
    // Status slots are read as 16-byte words: a workspace off that alignment is refused.
    let misaligned = scanrt::Workspace {
        ptr: ws.ptr + 8,
        bytes: ws.bytes - 8,
    };
    expect_status(
        unsafe { ctx.scan_raw(&stream, &req_for(&src0, &src0), &ScanDesc::default(), Some(misaligned)) },
        ScanrtStatus::InvalidArgument,
    );
    for round in 0..50 {
        let input: Vec<u32> = random_vec(&mut rng, Op::Sum, n);
        let src = Buffer::from_slice(ctx, &stream, &input).unwrap();
        let dst = Buffer::new(ctx, DType::U32, n as u64).unwrap();
        let desc = ScanDesc::inclusive(Op::Sum).with_algorithm(if round % 3 == 0 {
            Algorithm::Matrix
        } else {
            Algorithm::SinglePass
        });
        unsafe { ctx.scan_raw(&stream, &req_for(&src, &dst), &desc, Some(ws)) }.unwrap();
        let got: Vec<u32> = dst.download(&stream, n).unwrap();
        compare(&input, &desc, &got, 0.0).unwrap_or_else(|e| panic!("round {round}: {e}"));
    }
}

/// Backward and segmented scans captured in a CUDA graph and replayed, deterministic too:
/// byte flags, and offsets (whose bit flags live in memory each replay allocates and frees).
pub(crate) fn graph_replay_of_backward_segmented_scans() {
    let ctx = gpu();
    let cuda = ctx.cuda_context().unwrap();
    let cu_stream = cuda.new_stream().unwrap();
    // SAFETY: the stream outlives `stream`.
    let stream = unsafe { ctx.borrow_stream(cu_stream.cu_stream() as *mut _) }.unwrap();
    let n = (1usize << 20) + 33;
    let mut rng = Rng(0x9AF);
    let offsets = Segments::Offsets {
        dtype: DType::I64,
        count: 0,
    };
    for kind in [Segments::ByteFlags, offsets] {
        let starts = segment_starts(&mut rng, SegmentPattern::Random { mean_len: 5000 }, n);
        let data = encode_segments(&mut rng, kind, &starts);
        let segments = match kind {
            Segments::ByteFlags => Buffer::from_slice(ctx, &stream, &data),
            _ => {
                let offsets: Vec<i64> = data
                    .chunks(8)
                    .map(|o| i64::from_le_bytes(o.try_into().unwrap()))
                    .collect();
                Buffer::from_slice(ctx, &stream, &offsets)
            }
        }
        .unwrap();
        let mut src = Buffer::new(ctx, DType::F32, n as u64).unwrap();
        let dst = Buffer::new(ctx, DType::F32, n as u64).unwrap();
        let desc = ScanDesc::exclusive(Op::Sum)
            .with_init(0.5f32)
            .backward()
            .deterministic()
            .segmented(with_count(kind, &data));
        src.upload(&stream, &random_vec::<f32>(&mut rng, Op::Sum, n)).unwrap();
        ctx.scan_segmented(&stream, &src, &segments, &dst, &desc).unwrap();
        stream.synchronize().unwrap();
        cu_stream
            .begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
            .unwrap();
        for _ in 0..3 {
            ctx.scan_segmented(&stream, &src, &segments, &dst, &desc).unwrap();
        }
        let graph = cu_stream
            .end_capture(sys::CUgraphInstantiate_flags_enum::CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH)
            .unwrap()
            .expect("a graph");
        let mut mismatches = 0;
        for replay in 0..200 {
            graph.launch().unwrap();
            if replay % 40 == 0 {
                let input: Vec<f32> = random_vec(&mut rng, Op::Sum, n);
                src.upload(&stream, &input).unwrap();
                graph.launch().unwrap();
                let got: Vec<f32> = dst.download(&stream, n).unwrap();
                if compare_segmented(&input, Some(&starts), &desc, &got, gpu_depth(n)).is_err() {
                    mismatches += 1;
                }
            }
        }
        stream.synchronize().unwrap();
        eprintln!(
            "graph (backward segmented deterministic, {}): 200 replays, {mismatches} mismatches in 5 checks",
            kind.c_name()
        );
        assert_eq!(mismatches, 0);
    }
}
