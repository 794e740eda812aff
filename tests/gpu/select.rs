//! Selections on the GPU: the shared sweep (every type, rule, output form, flag density,
//! capacity, in place) at every tile boundary of the select kernels and past 2^20; more
//! than 2^32 elements; a subset for compute-sanitizer; and graph capture.

use scanrt::{ArrayView, Buffer, DType, SelectArrays, SelectDesc, SelectOutput, Selection};

use crate::common::select::{run_select_case, sweep_selections, SelectCase};
use crate::common::*;
use crate::support::capture_after_warm_up;

pub(crate) fn selections_at_every_tile_boundary() {
    let ctx = gpu();
    // Tiles of 4096 elements (2048 for 8-byte ones; 1536 for their run-length encodings;
    // 3072 for partitions of 4-byte ones, 3840 for their run-length encodings).
    let sizes = [
        1,
        2,
        33,
        1535,
        1536,
        1537,
        2047,
        2048,
        2049,
        3071,
        3072,
        3073,
        3839,
        3840,
        3841,
        4095,
        4096,
        4097,
        3 * 4096 + 5,
        (1 << 16) + 1,
        (1 << 20) + 3,
    ];
    let failures = sweep_selections(ctx, 0x5E1E_C76A, &sizes);
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The indices of the nonzero bytes of 2^32 + 2^20 + 7 bytes, checked in full.
pub(crate) fn select_more_than_2_pow_32_elements() {
    let ctx = gpu();
    let stream = ctx.new_stream().unwrap();
    let n: u64 = (1 << 32) + (1 << 20) + 7;
    let bytes: Vec<u8> = (0..n)
        .map(|i| ((i.wrapping_mul(2654435761) >> 9) & 3 == 0) as u8 * 7)
        .collect();
    let kept: u64 = bytes.iter().map(|&b| (b != 0) as u64).sum();
    let input = Buffer::from_slice(ctx, &stream, &bytes).unwrap();
    let mut out = Buffer::new(ctx, DType::U64, kept + 1).unwrap();
    // The output holds only `kept + 1` indices: the capacity says so.
    let desc = SelectDesc::new(Selection::NonZero).indices().with_capacity(kept + 1);
    // A U32 count could not hold every count of this many elements: refused, unwritten.
    let mut count32 = Buffer::from_slice(ctx, &stream, &[0xA5A5_A5A5u32]).unwrap();
    let refused = selection_of(&input, &mut out, ArrayView::of_buffer_mut(&mut count32));
    let err = ctx.select(&stream, &refused, &desc).unwrap_err();
    assert_eq!(err.status, scanrt::ScanrtStatus::InvalidArgument, "{}", err.message);
    assert_eq!(count32.download::<u32>(&stream, 1).unwrap(), [0xA5A5_A5A5]);
    let mut count = Buffer::new(ctx, DType::U64, 1).unwrap();
    let arrays = selection_of(&input, &mut out, ArrayView::of_buffer_mut(&mut count));
    ctx.select(&stream, &arrays, &desc).unwrap();
    assert_eq!(ctx.selected_count(&stream, &count).unwrap(), kept);
    let got: Vec<u64> = out.download(&stream, kept as usize).unwrap();
    let mut k = 0usize;
    for (i, &b) in bytes.iter().enumerate() {
        if b != 0 {
            assert_eq!(got[k], i as u64, "selected index {k}");
            k += 1;
        }
    }
    eprintln!("selected {kept} of {n} elements");
}

/// A few selections of each form, small and large, for compute-sanitizer.
pub(crate) fn select_sanitizer_subset() {
    let ctx = gpu();
    let stream = ctx.new_stream().unwrap();
    let mut rng = Rng(0x5A5E);
    for (dtype, n) in [(DType::U32, 5000usize), (DType::F64, 70_001), (DType::U8, 300_001)] {
        for (selection, output) in [
            (Selection::ByteFlags, SelectOutput::Values),
            (Selection::RunHeads, SelectOutput::Indices),
            (Selection::NotNan, SelectOutput::Values),
            (Selection::ByteFlags, SelectOutput::PartitionReversed),
            (Selection::BitFlags, SelectOutput::PartitionTwo),
        ] {
            let c = SelectCase {
                dtype,
                selection,
                output,
                index_type: DType::U64,
                count_type: if dtype == DType::F64 { DType::U32 } else { DType::I64 },
                n,
                density: 2,
                capacity: None,
                in_place: output == SelectOutput::Values,
                shape: vec![n as u64],
                // The partitions read elements off the 16-byte vectors.
                lead: usize::from(output != SelectOutput::Values),
            };
            run_select_case(ctx, &stream, &mut rng, &c).unwrap_or_else(|e| panic!("{c:?}: {e}"));
        }
    }
}

/// Selections captured in a CUDA graph and replayed (each replay with new data), and
/// selections from several threads on streams of their own at once.
pub(crate) fn select_in_graphs_and_threads() {
    let ctx = gpu();
    let cuda = ctx.cuda_context().unwrap();
    let cu_stream = cuda.new_stream().unwrap();
    // SAFETY: the stream outlives `stream`.
    let stream = unsafe { ctx.borrow_stream(cu_stream.cu_stream() as *mut _) }.unwrap();
    let n = (1usize << 20) + 17;
    let mut rng = Rng(0x6AF5);
    let data = |rng: &mut Rng| -> Vec<u32> { (0..n).map(|_| rng.below(4) as u32).collect() };
    let mut input = Buffer::new(ctx, DType::U32, n as u64).unwrap();
    let mut out = Buffer::new(ctx, DType::U32, n as u64).unwrap();
    let mut count = Buffer::new(ctx, DType::U64, 1).unwrap();
    let desc = SelectDesc::new(Selection::RunHeads);
    let arrays = selection_of(&input, &mut out, ArrayView::of_buffer_mut(&mut count));
    let graph = capture_after_warm_up(&cu_stream, &stream, || ctx.select(&stream, &arrays, &desc).unwrap());
    for replay in 0..200 {
        if replay % 20 == 0 {
            let x = data(&mut rng);
            input.upload(&stream, &x).unwrap();
            graph.launch().unwrap();
            let heads: Vec<u32> = (0..n).filter(|&i| i == 0 || x[i] != x[i - 1]).map(|i| x[i]).collect();
            assert_eq!(
                ctx.selected_count(&stream, &count).unwrap(),
                heads.len() as u64,
                "replay {replay}"
            );
            assert_eq!(
                out.download::<u32>(&stream, heads.len()).unwrap(),
                heads,
                "replay {replay}"
            );
        } else {
            graph.launch().unwrap();
        }
    }
    std::thread::scope(|scope| {
        for t in 0..4u64 {
            scope.spawn(move || {
                let stream = ctx.new_stream().unwrap();
                let mut rng = Rng(0x7A + t);
                for _ in 0..20 {
                    let n = 1 + rng.below(300_000) as usize;
                    let c = SelectCase {
                        dtype: DType::F32,
                        selection: Selection::ByteFlags,
                        output: SelectOutput::Values,
                        index_type: DType::U64,
                        count_type: DType::U64,
                        n,
                        density: 3,
                        capacity: None,
                        in_place: false,
                        shape: vec![n as u64],
                        lead: 0,
                    };
                    run_select_case(ctx, &stream, &mut rng, &c).unwrap_or_else(|e| panic!("thread {t}: {c:?}: {e}"));
                }
            });
        }
    });
}

/// Counts written to page-locked host memory (as U32, U64 and I64), read on the host
/// after the stream is synchronised; a count in pageable host memory is refused with
/// `NotDeviceMemory` and left as it was.
pub(crate) fn select_counts_into_page_locked_host_memory() {
    use cudarc::driver::sys;
    let ctx = gpu();
    let stream = ctx.new_stream().unwrap();
    let cuda = ctx.cuda_context().unwrap();
    cuda.bind_to_thread().unwrap();
    let n = 300_001usize;
    let values: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(2654435761) % 5).collect();
    let kept = values.iter().filter(|&&v| v != 0).count() as u64;
    let input = Buffer::from_slice(ctx, &stream, &values).unwrap();
    let mut out = Buffer::new(ctx, DType::U32, n as u64).unwrap();
    let mut host: *mut std::ffi::c_void = std::ptr::null_mut();
    // SAFETY: an out-pointer to a local; 16 bytes of page-locked memory, freed below.
    assert_eq!(
        unsafe { sys::cuMemAllocHost_v2(&mut host, 16) },
        sys::CUresult::CUDA_SUCCESS
    );
    for count_type in [DType::U32, DType::U64, DType::I64] {
        // SAFETY: `host` holds 16 bytes, written by nothing else while the stream runs.
        unsafe { std::ptr::write_bytes(host as *mut u8, 0xA5, 16) };
        let count = unsafe { ArrayView::contiguous(host as u64, count_type, &[1]) }.unwrap();
        let arrays = selection_of(&input, &mut out, count);
        ctx.select(&stream, &arrays, &SelectDesc::new(Selection::NonZero))
            .unwrap();
        stream.synchronize().unwrap();
        // SAFETY: the stream is synchronised; `host` holds 16 bytes.
        let (got, after) = unsafe {
            match count_type {
                DType::U32 => (*(host as *const u32) as u64, *(host as *const u32).add(1) as u64),
                _ => (*(host as *const u64), *(host as *const u64).add(1)),
            }
        };
        assert_eq!(got, kept, "{count_type:?} count");
        let poison = if count_type == DType::U32 {
            0xA5A5_A5A5
        } else {
            0xA5A5_A5A5_A5A5_A5A5
        };
        assert_eq!(after, poison, "{count_type:?}: the word after the count was written");
    }
    // SAFETY: from cuMemAllocHost above, no longer used.
    unsafe { sys::cuMemFreeHost(host) };
    let mut pageable = vec![7u64; 1];
    let count = unsafe { ArrayView::contiguous(pageable.as_mut_ptr() as u64, DType::U64, &[1]) }.unwrap();
    let arrays = selection_of(&input, &mut out, count);
    let err = ctx
        .select(&stream, &arrays, &SelectDesc::new(Selection::NonZero))
        .unwrap_err();
    assert_eq!(err.status, scanrt::ScanrtStatus::NotDeviceMemory, "{}", err.message);
    stream.synchronize().unwrap();
    assert_eq!(pageable, [7]);
}

/// The arrays of a selection of `input` into `out` by a rule that reads the elements.
fn selection_of<'a>(input: &'a Buffer, out: &'a mut Buffer, count: ArrayView<'a>) -> SelectArrays<'a> {
    SelectArrays {
        input: ArrayView::of_buffer(input),
        flags: None,
        output: ArrayView::of_buffer_mut(out),
        rejected: None,
        lengths: None,
        num_selected: count,
    }
}
