//! Embedding safety on the GPU: how real applications call scanrt. Per-thread and legacy
//! default streams from many threads, streams destroyed with scans queued, graphs
//! replayed on other streams beside plain calls and after the pool was trimmed or the
//! context dropped, the bounded workspace pool, and garbage, stale and undersized caller
//! workspaces. Every test runs under a timeout, so a hang fails it; every result is
//! checked against the sequential reference. Without a GPU each test reports "ignored".

mod common;

use std::sync::mpsc;
use std::time::Duration;

use common::harness::{self, tests};
use common::*;
use std::sync::Arc;

use cudarc::driver::{sys, CudaContext};
use scanrt::{
    Backend, Buffer, Context, DType, Op, RawScan, ScanDesc, ScanrtStatus, Stream, Workspace, MAX_POOLED_STREAMS,
};

/// Runs `body` on its own thread and fails the test when it does not finish in `secs`.
fn within(secs: u64, what: &str, body: impl FnOnce() + Send + 'static) {
    let (done, wait) = mpsc::channel();
    let worker = std::thread::spawn(move || {
        body();
        let _ = done.send(());
    });
    match wait.recv_timeout(Duration::from_secs(secs)) {
        Ok(()) => worker.join().unwrap(),
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            if let Err(panic) = worker.join() {
                std::panic::resume_unwind(panic)
            }
        }
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("{what}: no result after {secs} s (a hang)"),
    }
}

/// The stream handles the CUDA driver API gives the two default streams.
const LEGACY_DEFAULT_STREAM: usize = 0x0;
const PER_THREAD_DEFAULT_STREAM: usize = 0x2;

fn borrow(ctx: &Context, raw: usize) -> Stream {
    // SAFETY: the default streams, and the streams the tests create, outlive the wrapper.
    unsafe { ctx.borrow_stream(raw as *mut _) }.unwrap()
}

/// `calls` u32 inclusive sums of 1-4 Mi elements on `stream`, checking every 8th.
fn scan_and_check(ctx: &Context, stream: &Stream, seed: u64, calls: usize) -> usize {
    let mut rng = Rng(seed);
    let desc = ScanDesc::inclusive(Op::Sum);
    let mut mismatches = 0;
    let max = 4usize << 20;
    let src = Buffer::new(ctx, DType::U32, max as u64).unwrap();
    let dst = Buffer::new(ctx, DType::U32, max as u64).unwrap();
    let mut src_host = src;
    for call in 0..calls {
        let n = (1 << 20) + rng.below(3 << 20) as usize;
        if call % 8 == 0 {
            let input: Vec<u32> = random_vec(&mut rng, Op::Sum, n);
            src_host.upload(stream, &input).unwrap();
            ctx.scan(stream, &view(ctx, &src_host, n), &view(ctx, &dst, n), &desc)
                .unwrap();
            let got: Vec<u32> = dst.download(stream, n).unwrap();
            mismatches += compare(&input, &desc, &got, 0.0).is_err() as usize;
        } else {
            ctx.scan(stream, &view(ctx, &src_host, n), &view(ctx, &dst, n), &desc)
                .unwrap();
        }
    }
    mismatches
}

/// The first `n` elements of a u32 buffer.
fn view(ctx: &Context, base: &Buffer, n: usize) -> Buffer {
    // SAFETY: `base` holds at least n elements and outlives the view.
    unsafe { Buffer::wrap_device(ctx, base.addr() as *mut _, DType::U32, n as u64) }.unwrap()
}

/// `threads` threads, each making `calls` checked scans on the stream handle `raw`
/// (`scan_and_check`); the total mismatches.
fn threads_on_stream(ctx: &'static Context, raw: usize, threads: u64, calls: usize, seed: u64) -> usize {
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|t| s.spawn(move || scan_and_check(ctx, &borrow(ctx, raw), seed + t, calls)))
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).sum()
    })
}

/// The reproduction of the hang: 8 threads, each on its per-thread default stream (what
/// `cudaStreamPerThread`, or NULL under `--default-stream per-thread`, names), 200 scans
/// each. The streams share one handle value; each must get its own workspace.
fn eight_threads_on_per_thread_default_streams() {
    let ctx = gpu();
    within(120, "8 threads x 200 scans on per-thread default streams", move || {
        let mismatches = threads_on_stream(ctx, PER_THREAD_DEFAULT_STREAM, 8, 200, 0x9700);
        eprintln!("per-thread default streams: 8 threads x 200 scans, {mismatches} mismatches in 200 checks");
        assert_eq!(mismatches, 0);
    });
}

/// Several threads on the one legacy default stream: one stream, one workspace, calls
/// ordered by the stream.
fn threads_sharing_the_legacy_default_stream() {
    let ctx = gpu();
    within(120, "4 threads x 100 scans on the legacy default stream", move || {
        let mismatches = threads_on_stream(ctx, LEGACY_DEFAULT_STREAM, 4, 100, 0x1E6);
        eprintln!("legacy default stream: 4 threads x 100 scans, {mismatches} mismatches");
        assert_eq!(mismatches, 0);
    });
}

/// Streams destroyed with scans still queued, and new streams created at once (the
/// driver hands the same handle values out again) queuing their own scans: the queued
/// scans of the destroyed stream and those of its successor must not share a workspace.
fn streams_destroyed_and_recreated_with_scans_queued() {
    let ctx = gpu();
    within(180, "streams destroyed with scans queued", move || {
        let cuda = ctx.cuda_context().unwrap().clone();
        let mut rng = Rng(0xDE57);
        let desc = ScanDesc::inclusive(Op::Sum);
        let n = 3 << 20;
        let mut checks = Vec::new();
        for round in 0..40 {
            let cu_stream = cuda.new_stream().unwrap();
            let stream = borrow(ctx, cu_stream.cu_stream() as usize);
            for _ in 0..3 {
                let input: Vec<u32> = random_vec(&mut rng, Op::Sum, n);
                let src = Buffer::new(ctx, DType::U32, n as u64).unwrap();
                // Synchronous copy on a stream of scanrt's own, so the scans stay queued.
                let mut src = src;
                src.upload(&ctx.new_stream().unwrap(), &input).unwrap();
                let dst = Buffer::new(ctx, DType::U32, n as u64).unwrap();
                ctx.scan(&stream, &src, &dst, &desc).unwrap();
                checks.push((round, input, src, dst));
            }
            drop(stream);
            drop(cu_stream); // destroyed while its three scans may still run
        }
        let check_stream = ctx.new_stream().unwrap();
        ctx.cuda_context().unwrap().synchronize().unwrap();
        let mut mismatches = 0;
        for (round, input, _src, dst) in &checks {
            let got: Vec<u32> = dst.download(&check_stream, n).unwrap();
            if let Err(e) = compare(input, &desc, &got, 0.0) {
                eprintln!("round {round}: {e}");
                mismatches += 1;
            }
        }
        eprintln!("destroyed streams: 40 rounds x 3 queued scans, {mismatches} mismatches");
        assert_eq!(mismatches, 0);
        ctx.trim().unwrap(); // frees the dead streams' workspaces
        assert!(ctx.check_faults().is_ok());
    });
}

/// Raw device memory of the current context, outside scanrt and cudarc's tracking.
fn device_alloc(elements: usize) -> u64 {
    let mut ptr = 0;
    // SAFETY: out-pointer to a local.
    assert_eq!(
        unsafe { sys::cuMemAlloc_v2(&mut ptr, elements * 4) },
        sys::CUresult::CUDA_SUCCESS
    );
    ptr
}

fn upload_raw(stream: sys::CUstream, dst: u64, data: &[u32]) {
    // SAFETY: `dst` is a device allocation of at least data.len() elements; waited for.
    unsafe {
        assert_eq!(
            sys::cuMemcpyHtoDAsync_v2(dst, data.as_ptr() as *const _, data.len() * 4, stream),
            sys::CUresult::CUDA_SUCCESS
        );
        assert_eq!(sys::cuStreamSynchronize(stream), sys::CUresult::CUDA_SUCCESS);
    }
}

fn download_raw(stream: sys::CUstream, src: u64, n: usize) -> Vec<u32> {
    let mut out = vec![0u32; n];
    // SAFETY: `src` is a device allocation of at least n elements; waited for.
    unsafe {
        assert_eq!(
            sys::cuMemcpyDtoHAsync_v2(out.as_mut_ptr() as *mut _, src, n * 4, stream),
            sys::CUresult::CUDA_SUCCESS
        );
        assert_eq!(sys::cuStreamSynchronize(stream), sys::CUresult::CUDA_SUCCESS);
    }
    out
}

/// A graph captured from plain scan calls, replayed on other streams while plain calls
/// run on the capture stream, after `trim`, and after the scanrt context that captured
/// it is gone: scans through the look-back (the graph's own workspace), one cluster and
/// one block (no workspace; the graph keeps their kernels). The data lives in raw
/// allocations of the primary context, so that dropping the scanrt context really
/// releases it.
fn graph_replays_on_other_streams_after_trim_and_after_the_context() {
    within(180, "graph replays", || {
        for n in [(2 << 20) + 5, 9 * 4096 + 5, 1000] {
            graph_replays_case(n);
        }
    });
}

fn graph_replays_case(n: usize) {
    let cuda: Arc<CudaContext> = CudaContext::new(0).unwrap(); // binds the primary context
    let desc = ScanDesc::exclusive(Op::Sum).with_init(7u32);
    let mut rng = Rng(0x6A4);
    let [gs, gd, ps, pd] = [0; 4].map(|_| device_alloc(n));
    let ctx = Context::new(Backend::Gpu, 0).unwrap();
    let capture = cuda.new_stream().unwrap();
    let others = [cuda.new_stream().unwrap(), cuda.new_stream().unwrap()];
    let capture_raw = capture.cu_stream();
    let capture_stream = borrow(&ctx, capture_raw as usize);
    let graph_req = RawScan::new(gs, DType::U32, gd, DType::U32, n as u64);
    let plain_req = RawScan::new(ps, DType::U32, pd, DType::U32, n as u64);
    // SAFETY (every scan_raw here): the allocations hold n elements and outlive the test.
    unsafe { ctx.scan_raw(&capture_stream, &graph_req, &desc, None) }.unwrap(); // compiles, outside the capture
    capture_stream.synchronize().unwrap();
    capture
        .begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
        .unwrap();
    for _ in 0..2 {
        unsafe { ctx.scan_raw(&capture_stream, &graph_req, &desc, None) }.unwrap();
    }
    let graph = capture
        .end_capture(sys::CUgraphInstantiate_flags_enum::CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH)
        .unwrap()
        .expect("a graph");

    let mut mismatches = 0;
    let mut ctx = Some(ctx);
    let mut capture_stream = Some(capture_stream);
    for (step, launch_on) in [&others[0], &others[1], &others[0], &others[1], &capture]
        .into_iter()
        .enumerate()
    {
        if step == 2 {
            ctx.as_ref().unwrap().trim().unwrap();
            assert_eq!(
                ctx.as_ref().unwrap().pooled_workspaces(),
                0,
                "trim released every idle workspace"
            );
        }
        if step == 3 {
            drop(capture_stream.take());
            drop(ctx.take()); // the graph keeps its workspace, kernels and fault report
        }
        let on = launch_on.cu_stream();
        let input: Vec<u32> = random_vec(&mut rng, Op::Sum, n);
        upload_raw(on, gs, &input);
        let plain_input: Vec<u32> = random_vec(&mut rng, Op::Sum, n);
        upload_raw(capture_raw, ps, &plain_input);
        for _ in 0..10 {
            // SAFETY: the graph's nodes use memory that outlives it.
            assert_eq!(
                unsafe { sys::cuGraphLaunch(graph.cu_graph_exec(), on) },
                sys::CUresult::CUDA_SUCCESS
            );
            if let (Some(ctx), Some(stream)) = (&ctx, &capture_stream) {
                // Plain calls on the capture stream, concurrent with the replays.
                unsafe { ctx.scan_raw(stream, &plain_req, &desc, None) }.unwrap();
            }
        }
        mismatches += compare(&input, &desc, &download_raw(on, gd, n), 0.0).is_err() as usize;
        if ctx.is_some() {
            mismatches += compare(&plain_input, &desc, &download_raw(capture_raw, pd, n), 0.0).is_err() as usize;
        }
    }
    eprintln!("graph, n = {n}: replays on three streams, beside plain calls, after trim and after the context: {mismatches} mismatches");
    assert_eq!(mismatches, 0);
    drop(graph); // its resources are released on a thread of scanrt's
    cuda.synchronize().unwrap();
    for ptr in [gs, gd, ps, pd] {
        // SAFETY: allocated above; the device is idle.
        unsafe { sys::cuMemFree_v2(ptr) };
    }
}

/// The pool keeps at most MAX_POOLED_STREAMS streams' workspaces, whatever number of streams an
/// application uses, and `trim` releases them all.
fn the_workspace_pool_is_bounded_and_trimmed() {
    within(120, "pool bound", || {
        let ctx = Context::new(Backend::Gpu, 0).unwrap();
        let n = 1usize << 20;
        let input: Vec<u32> = (0..n as u32).map(|i| i % 7).collect();
        let desc = ScanDesc::inclusive(Op::Sum);
        for round in 0..MAX_POOLED_STREAMS + 40 {
            let stream = ctx.new_stream().unwrap();
            let src = Buffer::from_slice(&ctx, &stream, &input).unwrap();
            let dst = Buffer::new(&ctx, DType::U32, n as u64).unwrap();
            ctx.scan(&stream, &src, &dst, &desc).unwrap();
            if round % 16 == 0 {
                let got: Vec<u32> = dst.download(&stream, n).unwrap();
                compare(&input, &desc, &got, 0.0).unwrap();
            }
            assert!(
                ctx.pooled_workspaces() <= MAX_POOLED_STREAMS,
                "round {round}: {} pooled",
                ctx.pooled_workspaces()
            );
        }
        ctx.trim().unwrap();
        assert_eq!(ctx.pooled_workspaces(), 0);
        assert!(ctx.check_faults().is_ok());
    });
}

fn workspace_of(ctx: &Context, n: usize) -> (Buffer, Workspace) {
    let req = RawScan::new(16, DType::U32, 1 << 40, DType::U32, n as u64);
    let bytes = ctx.workspace_size(&req, &ScanDesc::default()).unwrap();
    let buf = Buffer::new(ctx, DType::U8, bytes as u64).unwrap();
    let ws = Workspace { ptr: buf.addr(), bytes };
    (buf, ws)
}

const POISON: u32 = 0xDEAD_BEEF;

/// Scans `input` through `ws` into an output poisoned first, `offset` elements into its
/// allocation (1: misaligned, which keeps the one-wave kernel out); returns what the
/// output holds afterwards and what the next call on the context says.
fn scan_through(
    ctx: &Context,
    stream: &Stream,
    input: &[u32],
    offset: usize,
    ws: Workspace,
) -> (Vec<u32>, scanrt::Result<()>) {
    let n = input.len();
    let src = Buffer::from_slice(ctx, stream, input).unwrap();
    let dst = Buffer::from_slice(ctx, stream, &vec![POISON; n + offset]).unwrap();
    let out = dst.addr() + 4 * offset as u64;
    let req = RawScan::new(src.addr(), DType::U32, out, DType::U32, n as u64);
    // SAFETY: both buffers hold n elements from where they are used; the workspace is a
    // live allocation.
    unsafe { ctx.scan_raw(stream, &req, &ScanDesc::inclusive(Op::Sum), Some(ws)) }.unwrap();
    let got = dst.download::<u32>(stream, n + offset).unwrap();
    (got[offset..].to_vec(), ctx.check_faults())
}

fn expect_fault(result: scanrt::Result<()>, words: &str) {
    let e = result.expect_err("a workspace fault");
    assert_eq!(e.status, ScanrtStatus::WorkspaceFault, "{}", e.message);
    assert!(e.message.contains(words), "{}", e.message);
    // The message names the call whose kernel found the fault, not only the call that
    // reports it.
    assert!(
        e.message.contains("scan call #") && e.message.contains("(sum of "),
        "{}",
        e.message
    );
}

/// Garbage, zeroed-but-uninitialised, stale, undersized, poisoned and overflowing caller
/// workspaces: never a hang, never a write outside the workspace, no output written when
/// refused, a specific status, and the context stays usable.
/// Each of the three single-pass kernels meets them: the bulk-copy kernel (3 M
/// elements), the one-wave kernel (1 M, aligned) and the register-staged one (600 011,
/// misaligned; an eighth of it still needs a workspace, which cluster scans do not).
fn garbage_stale_and_undersized_caller_workspaces() {
    within(120, "bad caller workspaces", || {
        for (n, offset) in [(3_000_017, 0), (1_000_000, 0), (600_011, 1)] {
            bad_workspaces(n, offset);
        }
    });
}

fn bad_workspaces(n: usize, offset: usize) {
    {
        let ctx = Context::new(Backend::Gpu, 0).unwrap();
        let stream = ctx.new_stream().unwrap();
        let mut rng = Rng(0xBAD);
        let input: Vec<u32> = random_vec(&mut rng, Op::Sum, n);
        let desc = ScanDesc::inclusive(Op::Sum);
        let (mut ws_buf, ws) = workspace_of(&ctx, n);

        // Never initialised, full of garbage: refused, nothing written.
        let garbage: Vec<u8> = (0..ws.bytes).map(|_| rng.next_u64() as u8).collect();
        ws_buf.upload(&stream, &garbage).unwrap();
        let (got, fault) = scan_through(&ctx, &stream, &input, offset, ws);
        expect_fault(fault, "uninitialised");
        assert!(got.iter().all(|&v| v == POISON), "a refused scan wrote output");

        // Zero-filled by the application but not initialised by scanrt: refused too.
        ws_buf.upload(&stream, &vec![0u8; ws.bytes]).unwrap();
        let (got, fault) = scan_through(&ctx, &stream, &input, offset, ws);
        expect_fault(fault, "uninitialised");
        assert!(got.iter().all(|&v| v == POISON));

        // Initialised for a smaller scan, then passed with the full length: refused.
        let (_, small) = workspace_of(&ctx, n / 4);
        ctx.init_workspace(
            &stream,
            Workspace {
                ptr: ws.ptr,
                bytes: small.bytes,
            },
        )
        .unwrap();
        let (got, fault) = scan_through(&ctx, &stream, &input, offset, ws);
        expect_fault(fault, "fewer tiles");
        assert!(got.iter().all(|&v| v == POISON));

        // Poisoned by that fault: refused until initialised again.
        let (got, fault) = scan_through(&ctx, &stream, &input, offset, ws);
        expect_fault(fault, "poisoned");
        assert!(got.iter().all(|&v| v == POISON));

        // Initialised properly: correct.
        ctx.init_workspace(&stream, ws).unwrap();
        let (got, fault) = scan_through(&ctx, &stream, &input, offset, ws);
        fault.unwrap();
        compare(&input, &desc, &got, 0.0).unwrap();

        // Passed with fewer bytes than it was initialised with: its slots are not all
        // in the range the call vouches for, so it is refused too.
        let fewer_bytes = Workspace {
            ptr: ws.ptr,
            bytes: small.bytes,
        };
        let (_, fault) = scan_through(&ctx, &stream, &input[..n / 8], offset, fewer_bytes);
        expect_fault(fault, "more bytes than the call passed");
        ctx.init_workspace(&stream, ws).unwrap();

        // Stale: the ticket left in the middle (as by a launch that never finished).
        // The tiles before it never come, so the look-back would wait forever; the
        // watchdog gives up after 1 s and the next call says so.
        let ticket = [(5u64 << 32) | 7];
        let mut header = unsafe { Buffer::wrap_device(&ctx, ws.ptr as *mut _, DType::U64, 1) }.unwrap();
        header.upload(&stream, &ticket).unwrap();
        let started = std::time::Instant::now();
        let (_, fault) = scan_through(&ctx, &stream, &input, offset, ws);
        expect_fault(fault, "waited more than 1 s");
        eprintln!(
            "stale ticket: the watchdog ended the scan after {:?}",
            started.elapsed()
        );
        ctx.init_workspace(&stream, ws).unwrap();
        let (got, fault) = scan_through(&ctx, &stream, &input, offset, ws);
        fault.unwrap();
        compare(&input, &desc, &got, 0.0).unwrap();

        // Shorter than the size query says, or a length that wraps: refused by the host.
        let src = Buffer::from_slice(&ctx, &stream, &input).unwrap();
        let req = RawScan::new(src.addr(), DType::U32, src.addr(), DType::U32, n as u64);
        for (bytes, status) in [
            (ws.bytes - 16, ScanrtStatus::BufferTooSmall),
            (usize::MAX, ScanrtStatus::BufferTooSmall),
        ] {
            let e = unsafe { ctx.scan_raw(&stream, &req, &desc, Some(Workspace { ptr: ws.ptr, bytes })) }.unwrap_err();
            assert_eq!(e.status, status, "{bytes} bytes: {}", e.message);
        }
        let e = ctx
            .init_workspace(
                &stream,
                Workspace {
                    ptr: ws.ptr,
                    bytes: usize::MAX,
                },
            )
            .unwrap_err();
        assert_eq!(e.status, ScanrtStatus::BufferTooSmall, "{}", e.message);

        // The context's own pool is untouched by all of this.
        let dst = Buffer::new(&ctx, DType::U32, n as u64).unwrap();
        ctx.scan(&stream, &src, &dst, &desc).unwrap();
        compare(&input, &desc, &dst.download::<u32>(&stream, n).unwrap(), 0.0).unwrap();
        ctx.check_faults().unwrap();
        eprintln!("bad workspaces: n = {n}, output offset {offset}: refused or ended, context usable");
    }
}

/// Destroying scanrt objects (buffers, streams, contexts) leaves the thread's current
/// CUDA context as it was, whether that was none or another context.
fn destroys_leave_the_current_context_unchanged() {
    let current = || {
        let mut c: sys::CUcontext = std::ptr::null_mut();
        unsafe { sys::cuCtxGetCurrent(&mut c) };
        c
    };
    // SAFETY: unbinding is always allowed.
    unsafe { sys::cuCtxSetCurrent(std::ptr::null_mut()) };
    let ctx = Context::new(Backend::Gpu, 0).unwrap();
    let stream = ctx.new_stream().unwrap();
    let buf = Buffer::from_slice(&ctx, &stream, &[1u32, 2, 3]).unwrap();
    ctx.scan(&stream, &buf, &buf, &ScanDesc::default()).unwrap();
    assert!(current().is_null());
    drop(buf);
    assert!(current().is_null(), "buffer destroy changed the current context");
    drop(stream);
    assert!(current().is_null(), "stream destroy changed the current context");
    ctx.trim().unwrap();
    drop(ctx);
    assert!(current().is_null(), "context destroy changed the current context");
}

fn main() {
    harness::run(
        tests![
            eight_threads_on_per_thread_default_streams,
            threads_sharing_the_legacy_default_stream,
            streams_destroyed_and_recreated_with_scans_queued,
            graph_replays_on_other_streams_after_trim_and_after_the_context,
            the_workspace_pool_is_bounded_and_trimmed,
            garbage_stale_and_undersized_caller_workspaces,
            destroys_leave_the_current_context_unchanged,
        ],
        no_gpu,
    )
}
