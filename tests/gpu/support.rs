//! Helpers the GPU topics share: buffer views, one randomized case and its run, the edge sizes,
//! a tally of failures, and the kernels' tile lengths.

use scanrt::{
    Algorithm, Buffer, ChoiceReason, Context, DType, Direction, Op, RawScan, ScanDesc, ScanrtStatus, Segments, Stream,
    Widen,
};

use crate::common::*;

/// A view of `len` elements starting `offset` elements into `base`.
pub(crate) fn view(ctx: &Context, base: &Buffer, dtype: DType, offset: u64, len: u64) -> Buffer {
    // SAFETY: base holds at least offset + len elements and outlives the view.
    unsafe { Buffer::wrap_device(ctx, (base.addr() + offset * dtype.size() as u64) as *mut _, dtype, len).unwrap() }
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct Case {
    pub op: Op,
    pub inclusive: bool,
    pub with_init: bool,
    pub algorithm: Algorithm,
    pub n: usize,
    pub in_offset: u64,
    pub out_offset: u64,
    pub in_place: bool,
    pub direction: Direction,
    pub segments: Segments,
    pub pattern: SegmentPattern,
}

impl Case {
    pub fn plain(op: Op, algorithm: Algorithm, n: usize) -> Case {
        Case {
            op,
            inclusive: true,
            with_init: false,
            algorithm,
            n,
            in_offset: 0,
            out_offset: 0,
            in_place: false,
            direction: Direction::Forward,
            segments: Segments::None,
            pattern: SegmentPattern::NoneSet,
        }
    }
}

/// Runs one case; the output buffer has a guard element after the result that must
/// keep its poison value.
pub(crate) fn run_case<I: TestInput + Widen<O>, O: TestOutput>(
    ctx: &Context,
    stream: &Stream,
    rng: &mut Rng,
    c: Case,
) -> Result<(), String> {
    let input: Vec<I> = random_vec(rng, c.op, c.n);
    let mut desc = make_desc::<O>(rng, c.op, c.inclusive, c.with_init);
    desc.algorithm = c.algorithm;
    desc.direction = c.direction;
    desc.segments = c.segments;
    let n = c.n as u64;
    let starts = match c.segments {
        Segments::None => None,
        Segments::Rows(len) => Some((0..n).map(|p| p.is_multiple_of(len)).collect()),
        _ => Some(segment_starts(rng, c.pattern, c.n)),
    };
    let seg_bytes = starts
        .as_ref()
        .map(|s| encode_segments(rng, c.segments, s))
        .unwrap_or_default();
    // Misaligned cases misalign the segment data too, by one unit of its format.
    let seg_shift = match c.segments {
        _ if c.in_offset == 0 => 0,
        Segments::None | Segments::Rows(_) => 0,
        Segments::ByteFlags => 1,
        Segments::BitFlags => 4,
        Segments::Keys(k) | Segments::Offsets { dtype: k, .. } => k.size(),
    };
    desc.segments = with_count(c.segments, &seg_bytes);
    let seg_buf = Buffer::from_slice(ctx, stream, &[vec![0u8; seg_shift], seg_bytes.clone()].concat()).unwrap();
    let segments = if seg_bytes.is_empty() {
        0
    } else {
        seg_buf.addr() + seg_shift as u64
    };
    let poison = O::from_bits(0xA5A5_A5A5_A5A5_A5A5);
    let run = |input: &Buffer, output: &Buffer| {
        let req = RawScan {
            segments,
            ..RawScan::new(input.addr(), I::DTYPE, output.addr(), O::DTYPE, n)
        };
        // SAFETY: the views and the segment buffer are live and long enough.
        unsafe { ctx.scan_raw(stream, &req, &desc, None) }.map_err(|e| e.to_string())
    };
    let got: Vec<O> = if c.in_place {
        assert_eq!(I::DTYPE, O::DTYPE);
        let base = Buffer::new(ctx, I::DTYPE, n + c.in_offset).unwrap();
        let mut data = view(ctx, &base, I::DTYPE, c.in_offset, n);
        data.upload(stream, &input).unwrap();
        run(&data, &data)?;
        data.download(stream, c.n).unwrap()
    } else {
        let in_base = Buffer::new(ctx, I::DTYPE, n + c.in_offset).unwrap();
        let mut in_view = view(ctx, &in_base, I::DTYPE, c.in_offset, n);
        in_view.upload(stream, &input).unwrap();
        let mut out_base = Buffer::new(ctx, O::DTYPE, n + c.out_offset + 1).unwrap();
        out_base
            .upload(stream, &vec![poison; c.n + c.out_offset as usize + 1])
            .unwrap();
        let out_view = view(ctx, &out_base, O::DTYPE, c.out_offset, n);
        let info = run(&in_view, &out_view)?;
        if info.algorithm != c.algorithm || info.reason != ChoiceReason::Requested {
            return Err(format!(
                "ran {:?} ({:?}), asked {:?}",
                info.algorithm, info.reason, c.algorithm
            ));
        }
        let all: Vec<O> = out_base.download(stream, c.n + c.out_offset as usize + 1).unwrap();
        let guard = all[c.n + c.out_offset as usize];
        if guard.to_bits() != poison.to_bits() || (c.out_offset > 0 && all[0].to_bits() != poison.to_bits()) {
            return Err("wrote outside the output range".into());
        }
        all[c.out_offset as usize..c.out_offset as usize + c.n].to_vec()
    };
    compare_segmented(&input, starts.as_deref(), &desc, &got, gpu_depth(c.n))
}

/// The sizes every randomized test draws from: 1, 2, 33, around one tile of the
/// register-staged kernel and one of the bulk-copy kernel (`bulk_tile`, the sizes where
/// its first tile ends when it runs at every size), around 2^16 (2^16 + 1 also leaves the
/// one-wave kernel a last tile of one element), nine one-wave tiles less one (a last
/// tile one element short), and past 2^20 (up to 384 tiles, fewer than the resident
/// blocks: the multi-round path is exercised by the large tests).
pub(crate) fn edge_sizes(tile: usize, bulk_tile: usize, wave_tile: usize) -> [usize; 12] {
    [
        1,
        2,
        33,
        tile - 1,
        tile,
        tile + 1,
        bulk_tile - 1,
        bulk_tile + 1,
        (1 << 16) - 1,
        (1 << 16) + 1,
        9 * if wave_tile > 0 { wave_tile } else { tile } - 1, // sets without a one-wave kernel: 9 tiles
        3 * (1 << 19) + 1,
    ]
}

/// The tile lengths of the kernels for a type pair, from the context's tuning:
/// (register-staged, bulk-copy, one-wave). Pairs without a bulk-copy kernel get a length
/// between one and two regular tiles in its place.
pub(crate) fn tile_lengths(ctx: &Context, input: DType, output: DType) -> (usize, usize, usize) {
    let t = ctx.tile_lengths(input, output, &ScanDesc::inclusive(Op::Sum)).unwrap();
    let bulk = if t.bulk > 0 {
        t.bulk
    } else {
        t.register_staged * 7 / 4 + 3
    };
    (t.register_staged as usize, bulk as usize, t.wave as usize)
}

/// Asserts that a call failed with `status`.
pub(crate) fn expect_status(r: scanrt::Result<scanrt::ScanInfo>, status: ScanrtStatus) {
    match r {
        Ok(_) => panic!("expected {status:?}, got success"),
        Err(e) => {
            assert_eq!(e.status, status, "{}", e.message);
            assert!(!e.message.is_empty());
        }
    }
}

/// Counts the 32-bit words in which two device buffers of `bytes` bytes differ, on the
/// device (so that repeated runs at 2^28 elements are compared without downloading them).
pub(crate) fn differing_words(ctx: &Context, stream: &Stream, a: &Buffer, b: &Buffer, bytes: u64) -> u64 {
    use cudarc::driver::{sys, CudaFunction};
    static KERNEL: once_cell::sync::OnceCell<CudaFunction> = once_cell::sync::OnceCell::new();
    let kernel = KERNEL.get_or_init(|| {
        let src = r#"
extern "C" __global__ void differing_words(const unsigned* a, const unsigned* b, unsigned long long words,
                                          unsigned long long* count) {
    unsigned long long differing = 0;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < words;
         i += (unsigned long long)gridDim.x * blockDim.x)
        differing += a[i] != b[i];
    if (differing) atomicAdd(count, differing);
}"#;
        let cuda = ctx.cuda_context().unwrap();
        let module = cuda.load_module(cudarc::nvrtc::compile_ptx(src).unwrap()).unwrap();
        module.load_function("differing_words").unwrap()
    });
    assert!(
        bytes.is_multiple_of(4)
            && bytes <= a.len() * a.dtype().size() as u64
            && bytes <= b.len() * b.dtype().size() as u64
    );
    let count = Buffer::new(ctx, DType::U64, 1).unwrap();
    let raw = stream.raw() as sys::CUstream;
    let (mut pa, mut pb, mut words, mut pc) = (a.addr(), b.addr(), bytes / 4, count.addr());
    let mut params = [
        &mut pa as *mut u64 as *mut std::ffi::c_void,
        &mut pb as *mut u64 as *mut _,
        &mut words as *mut u64 as *mut _,
        &mut pc as *mut u64 as *mut _,
    ];
    // SAFETY: the four parameters match the kernel's; both buffers hold `bytes` bytes and
    // `count` one u64 (zeroed first), all live until the download below.
    unsafe {
        assert_eq!(
            sys::cuMemsetD8Async(count.addr(), 0, 8, raw),
            sys::CUresult::CUDA_SUCCESS
        );
        let launched = sys::cuLaunchKernel(
            kernel.cu_function(),
            1024,
            1,
            1,
            256,
            1,
            1,
            0,
            raw,
            params.as_mut_ptr(),
            std::ptr::null_mut(),
        );
        assert_eq!(launched, sys::CUresult::CUDA_SUCCESS);
    }
    count.download::<u64>(stream, 1).unwrap()[0]
}

/// Runs `call` once on `cu_stream` to compile its kernels outside the capture, then
/// captures it into a graph (thread-local capture mode) and instantiates it.
pub(crate) fn capture_after_warm_up(
    cu_stream: &std::sync::Arc<cudarc::driver::CudaStream>,
    stream: &Stream,
    call: impl Fn(),
) -> cudarc::driver::CudaGraph {
    use cudarc::driver::sys;
    call();
    stream.synchronize().unwrap();
    cu_stream
        .begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
        .unwrap();
    call();
    cu_stream
        .end_capture(sys::CUgraphInstantiate_flags_enum::CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH)
        .unwrap()
        .expect("a graph")
}
